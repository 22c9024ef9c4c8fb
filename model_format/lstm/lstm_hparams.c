/* lstm_hparams.c - the LSTM's hyperparameter defaults and checks, generated from
 * FWM_LSTM_HPARAM_LIST with the per-kind checks every architecture shares (fwm_model_shape.h). */
#include "lstm/lstm_hparams.h"

#include <string.h>

#include "fwm_error.h"
#include "fwm_model_shape.h"

void fwm__lstm_hparams_defaults(fwm_lstm_hparams *hp) {
    memset(hp, 0, sizeof *hp);
#define FWM_LSTM_DEFAULT_(field, key, kind, def, low, high) hp->field = def;
    FWM_LSTM_HPARAM_LIST(FWM_LSTM_DEFAULT_)
#undef FWM_LSTM_DEFAULT_
}

/* The kinds the LSTM's list uses. */
#define LSTM_CHECK_U32(key, value, low, high) fwm__check_range(key, value, low, high, failure, err)
#define LSTM_CHECK_BOOL(key, value, low, high) FWM_OK
#define LSTM_CHECK_TOKEN(key, value, low, high) \
    fwm__check_token_id(key, value, "lstm.vocab_size", hp->vocab_size, failure, err)
#define LSTM_CHECK_F32(key, value, low, high) fwm__check_finite(key, value, failure, err)

fwm_status fwm__lstm_hparams_check(const fwm_lstm_hparams *hp, fwm_status failure, fwm_error *err) {
    if (!hp) return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "fwm__lstm_hparams_valid: hp is NULL");
    fwm_status st;
#define FWM_LSTM_CHECK_(field, key, kind, def, low, high) \
    if ((st = LSTM_CHECK_##kind(key, hp->field, low, high))) return st;
    FWM_LSTM_HPARAM_LIST(FWM_LSTM_CHECK_)
#undef FWM_LSTM_CHECK_
    return FWM_OK;
}

fwm_status fwm__lstm_hparams_valid(const fwm_lstm_hparams *hp, fwm_error *err) {
    return fwm__lstm_hparams_check(hp, FWM_ERR_INVALID_ARGUMENT, err);
}
