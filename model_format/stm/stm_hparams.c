/* stm_hparams.c - the STM's hyperparameter defaults and checks, generated from
 * FWM_STM_HPARAM_LIST with the per-kind checks every architecture shares (fwm_model_shape.h), plus
 * the end tokens of sentence mode, the bound on a session's memories and on each tensor's size. */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "fwm_error.h"
#include "fwm_model_shape.h"
#include "stm/stm_schema.h"

void fwm__stm_hparams_defaults(fwm_stm_hparams *hp) {
    memset(hp, 0, sizeof *hp);
#define FWM_STM_DEFAULT_(field, key, kind, def, low, high) hp->field = def;
    FWM_STM_HPARAM_LIST(FWM_STM_DEFAULT_)
#undef FWM_STM_DEFAULT_
}

static fwm_status check_positive(const char *key, float value, fwm_status failure, fwm_error *err) {
    fwm_status st = fwm__check_finite(key, value, failure, err);
    if (st) return st;
    if (!(value > 0)) return fwm__error(err, failure, "key '%s': expected > 0, found %g", key, (double)value);
    return FWM_OK;
}

/* The kinds the STM's list uses. */
#define STM_CHECK_U32(key, value, low, high) fwm__check_range(key, value, low, high, failure, err)
#define STM_CHECK_TOKEN(key, value, low, high) \
    fwm__check_token_id(key, value, "stm.vocab_size", hp->vocab_size, failure, err)
#define STM_CHECK_F32_POS(key, value, low, high) check_positive(key, value, failure, err)
#define STM_CHECK_BOOL(key, value, low, high) FWM_OK

fwm_status fwm__stm_hparams_check(const fwm_stm_hparams *hp, fwm_status failure, fwm_error *err) {
    if (!hp) return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "fwm__stm_hparams_valid: hp is NULL");
    fwm_status st;
#define FWM_STM_CHECK_(field, key, kind, def, low, high) \
    if ((st = STM_CHECK_##kind(key, hp->field, low, high))) return st;
    FWM_STM_HPARAM_LIST(FWM_STM_CHECK_)
#undef FWM_STM_CHECK_
    if (hp->input_mode == FWM_STM_INPUT_SENTENCE) {
        uint32_t s = hp->statement_end_token_id, q = hp->question_end_token_id;
        if (s == q)
            return fwm__error(err, failure,
                              "key 'stm.question_end_token_id': %" PRIu32
                              " is also stm.statement_end_token_id (sentence mode needs two end tokens)",
                              q);
        const char *clash = s == hp->padding_token_id || q == hp->padding_token_id
                                ? "tokenizer.ggml.padding_token_id"
                            : s == hp->eos_token_id || q == hp->eos_token_id ? "tokenizer.ggml.eos_token_id"
                                                                             : NULL;
        if (clash)
            return fwm__error(err, failure,
                              "key '%s': equals an end token (stm.statement_end_token_id %" PRIu32
                              ", stm.question_end_token_id %" PRIu32 ")",
                              clash, s, q);
    }
    uint64_t elements = fwm__stm_hparams_state_floats(hp);
    if (elements > FWM_STM_MAX_MEMORY_ELEMENTS)
        return fwm__error(err, failure,
                          "key 'stm.memory.size': the memories hold d^2 (1 + n_q) = %" PRIu64
                          " floats, more than %u (stm.memory.size, stm.memory.query_count)",
                          elements, (unsigned)FWM_STM_MAX_MEMORY_ELEMENTS);
    size_t n = fwm__stm_tensor_count(hp);
    for (size_t i = 0; i < n; i++) {
        char name[48];
        uint64_t rows, cols;
        fwm__stm_tensor_at(hp, i, name, &rows, &cols);
        /* rows, cols < 2^33 here (every size is bounded), so the product cannot wrap */
        if (rows * cols >= ((uint64_t)1 << 32))
            return fwm__error(err, failure, "tensor '%s' would hold %" PRIu64 " floats, 2^32 or more",
                              name, rows * cols);
    }
    return FWM_OK;
}

fwm_status fwm__stm_hparams_valid(const fwm_stm_hparams *hp, fwm_error *err) {
    return fwm__stm_hparams_check(hp, FWM_ERR_INVALID_ARGUMENT, err);
}
