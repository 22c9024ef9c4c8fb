/* gfw_hparams.c - the Gated Fast Weights model's hyperparameter defaults and checks, generated from
 * FWM_GFW_HPARAM_LIST with the per-kind checks every architecture shares (fwm_model_shape.h), plus
 * the bound on a session's fast matrices. */
#include <inttypes.h>
#include <string.h>

#include "fwm_error.h"
#include "fwm_model_shape.h"
#include "gfw/gfw_schema.h"

void fwm__gfw_hparams_defaults(fwm_gfw_hparams *hp) {
    memset(hp, 0, sizeof *hp);
#define FWM_GFW_DEFAULT_(field, key, kind, def, low, high) hp->field = def;
    FWM_GFW_HPARAM_LIST(FWM_GFW_DEFAULT_)
#undef FWM_GFW_DEFAULT_
}

/* A finite float above zero (the layer norm's epsilon). */
static fwm_status check_positive(const char *key, float value, fwm_status failure, fwm_error *err) {
    fwm_status st = fwm__check_finite(key, value, failure, err);
    if (st) return st;
    if (!(value > 0.0f))
        return fwm__error(err, failure, "key '%s': expected > 0, found %g", key, (double)value);
    return FWM_OK;
}

/* The kinds the GFW's list uses. */
#define GFW_CHECK_U32(key, value, low, high) fwm__check_range(key, value, low, high, failure, err)
#define GFW_CHECK_TOKEN(key, value, low, high) \
    fwm__check_token_id(key, value, "gfw.vocab_size", hp->vocab_size, failure, err)
#define GFW_CHECK_F32_POS(key, value, low, high) check_positive(key, value, failure, err)

fwm_status fwm__gfw_hparams_check(const fwm_gfw_hparams *hp, fwm_status failure, fwm_error *err) {
    if (!hp) return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "fwm__gfw_hparams_valid: hp is NULL");
    fwm_status st;
#define FWM_GFW_CHECK_(field, key, kind, def, low, high) \
    if ((st = GFW_CHECK_##kind(key, hp->field, low, high))) return st;
    FWM_GFW_HPARAM_LIST(FWM_GFW_CHECK_)
#undef FWM_GFW_CHECK_
    uint64_t elements = fwm__gfw_fast_elements(hp);
    if (elements > FWM_GFW_MAX_FAST_ELEMENTS)
        return fwm__error(err, failure,
                          "key 'gfw.fast.hidden_size': the fast matrices F1 and F2 hold %" PRIu64
                          " floats, more than %u (gfw.fast.hidden_size, gfw.embedding_length)",
                          elements, (unsigned)FWM_GFW_MAX_FAST_ELEMENTS);
    return FWM_OK;
}

fwm_status fwm__gfw_hparams_valid(const fwm_gfw_hparams *hp, fwm_error *err) {
    return fwm__gfw_hparams_check(hp, FWM_ERR_INVALID_ARGUMENT, err);
}
