/* step_checks.h - the checks every architecture's step entry points make before stepping anything:
 * the session (non-NULL), token ids against V, and a batch's sessions (non-NULL, one model,
 * distinct), with the messages the FWM has always given. Each clears `err` first. Internal to
 * libfwm. */
#ifndef FWM_RUNTIME_STEP_CHECKS_H
#define FWM_RUNTIME_STEP_CHECKS_H

#include <stddef.h>
#include <stdint.h>

#include "fwm_error.h"
#include "model_internal.h"
#include "session_internal.h"

/* FWM_ERR_TOKEN_OUT_OF_RANGE naming the token, where it was (`where`, e.g. "at sequence position",
 * followed by `index`; "" for nothing) and V. */
fwm_status fwm__token_out_of_range(const struct fwm_model *model, uint32_t token, const char *where,
                                   size_t index, fwm_error *err);

static inline fwm_status fwm__check_token(const struct fwm_model *model, uint32_t token,
                                          const char *where, size_t index, fwm_error *err) {
    if (token < model->hp.vocab_size) return FWM_OK;
    return fwm__token_out_of_range(model, token, where, index, err);
}

/* fwm_session_step's checks: the session non-NULL (FWM_ERR_INVALID_ARGUMENT), the token in range. */
static inline fwm_status fwm__check_step(const struct fwm_session *session, uint32_t token, fwm_error *err) {
    fwm__error_clear(err);
    if (!session) return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "fwm_session_step: session is NULL");
    return fwm__check_token(session->model, token, "", 0, err);
}

/* fwm_session_step_sequence's checks: the session non-NULL, then (count > 0) tokens non-NULL
 * (FWM_ERR_INVALID_ARGUMENT) and every token in range. FWM_OK with count 0 means nothing to do. */
fwm_status fwm__check_sequence(const struct fwm_session *session, const uint32_t *tokens, size_t count,
                               fwm_error *err);

/* fwm_batch_step's checks, in this order: sessions and tokens non-NULL, each session non-NULL
 * (FWM_ERR_INVALID_ARGUMENT), one model (FWM_ERR_MODEL_MISMATCH), every token in range, no session
 * twice (FWM_ERR_INVALID_ARGUMENT). count > 0. */
fwm_status fwm__check_batch(struct fwm_session *const *sessions, const uint32_t *tokens, size_t count,
                            fwm_error *err);

#endif
