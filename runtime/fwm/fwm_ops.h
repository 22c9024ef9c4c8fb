/* fwm_ops.h - the FWM's runtime functions behind its ops table (fwm_ops.c): they live in the FWM's
 * files (fwm_model.c, fwm_step.c, fwm_state.c, fwm_trace.c here, and runtime/session.c) and keep their behaviour. Internal to libfwm. */
#ifndef FWM_RUNTIME_FWM_OPS_H
#define FWM_RUNTIME_FWM_OPS_H

#include "arch_ops.h"
#include "session_internal.h"

fwm_status fwm__fwm_load(struct fwm_model *model, const void *buf, size_t size,
                         const fwm_model_params *params, fwm_error *err);
void fwm__fwm_fill_info(const struct fwm_model *model, fwm_model_info *info);
size_t fwm__fwm_block_floats(const struct fwm_model *model);
void fwm__fwm_lay_out(struct fwm_session *session, float *base);
size_t fwm__fwm_blob_size(const struct fwm_model *model);
fwm_status fwm__fwm_step(fwm_session *session, uint32_t token, float *logits, fwm_error *err);
fwm_status fwm__fwm_step_sequence(fwm_session *session, const uint32_t *tokens, size_t count,
                                  float *logits, fwm_error *err);
fwm_status fwm__fwm_batch_step(fwm_session *const *sessions, const uint32_t *tokens, size_t count,
                               float *logits, fwm_error *err);
fwm_status fwm__fwm_predict(const fwm_session *session, float *logits, fwm_error *err);
fwm_status fwm__fwm_export(const fwm_session *session, void *buffer, size_t capacity,
                           size_t *written, fwm_error *err);
fwm_status fwm__fwm_import(fwm_session *session, const void *blob, size_t size, fwm_error *err);

#endif
