/* mnm_hparams.c - the MNM's hyperparameter defaults and checks, generated from
 * FWM_MNM_HPARAM_LIST with the per-kind checks every architecture shares (fwm_model_shape.h), plus
 * the bound on a session's memory. */
#include <inttypes.h>
#include <string.h>

#include "fwm_error.h"
#include "fwm_model_shape.h"
#include "mnm/mnm_schema.h"

void fwm__mnm_hparams_defaults(fwm_mnm_hparams *hp) {
    memset(hp, 0, sizeof *hp);
#define FWM_MNM_DEFAULT_(field, key, kind, def, low, high) hp->field = def;
    FWM_MNM_HPARAM_LIST(FWM_MNM_DEFAULT_)
#undef FWM_MNM_DEFAULT_
}

/* The kinds the MNM's list uses. */
#define MNM_CHECK_U32(key, value, low, high) fwm__check_range(key, value, low, high, failure, err)
#define MNM_CHECK_TOKEN(key, value, low, high) \
    fwm__check_token_id(key, value, "mnm.vocab_size", hp->vocab_size, failure, err)
#define MNM_CHECK_F32(key, value, low, high) fwm__check_finite(key, value, failure, err)

fwm_status fwm__mnm_hparams_check(const fwm_mnm_hparams *hp, fwm_status failure, fwm_error *err) {
    if (!hp) return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "fwm__mnm_hparams_valid: hp is NULL");
    fwm_status st;
#define FWM_MNM_CHECK_(field, key, kind, def, low, high) \
    if ((st = MNM_CHECK_##kind(key, hp->field, low, high))) return st;
    FWM_MNM_HPARAM_LIST(FWM_MNM_CHECK_)
#undef FWM_MNM_CHECK_
    uint64_t elements = fwm__mnm_memory_elements(hp);
    if (elements > FWM_MNM_MAX_MEMORY_ELEMENTS)
        return fwm__error(err, failure,
                          "key 'mnm.memory.block_count': the memory holds %" PRIu64
                          " floats, more than %u (mnm.memory.key_length, .hidden_size, .value_length)",
                          elements, (unsigned)FWM_MNM_MAX_MEMORY_ELEMENTS);
    return FWM_OK;
}

fwm_status fwm__mnm_hparams_valid(const fwm_mnm_hparams *hp, fwm_error *err) {
    return fwm__mnm_hparams_check(hp, FWM_ERR_INVALID_ARGUMENT, err);
}
