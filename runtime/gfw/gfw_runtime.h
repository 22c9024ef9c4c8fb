/* gfw_runtime.h - the Gated Fast Weights model in the runtime (runtime/gfw/): a loaded model's own
 * data and the functions behind its ops table (gfw_ops.c). The model (docs/MODEL.md, "The Gated
 * Fast Weights model"): a small fast net whose two weight matrices F1 and F2 are session state,
 * and a slow net with trained weights that writes a gated outer-product update of both for the
 * next step. A session's state block is h_F [m] (in session->h), h_S [N] (in session->c), and F1
 * [m, m+E+1] then F2 [m, m+1] (row-major, in session->F; F2 starts on an aligned boundary), each
 * padded to FWM_SESSION_ALIGNMENT; a reset zeroes all of it. Internal to libfwm. */
#ifndef FWM_RUNTIME_GFW_RUNTIME_H
#define FWM_RUNTIME_GFW_RUNTIME_H

#include "arch_ops.h"
#include "gfw/gfw_hparams.h"
#include "session_internal.h"

typedef struct fwm_gfw_model {
    fwm_gfw_hparams hp;
    const float *token_embd;    /* [V, E] */
    const float *slow0_weight;  /* W_1 [P, N + E]: columns h_S, then e */
    const float *slow0_bias;    /* [P] */
    const float *slow1_weight;  /* W_2 [N + U1 + U2, P] */
    const float *slow1_bias;    /* [N + U1 + U2] */
    const float *output_weight; /* [V, m] */
    const float *output_bias;   /* [V] */
    size_t f2_offset;           /* where F2 starts in a session's F, in floats */
} fwm_gfw_model;

static inline const fwm_gfw_model *fwm__gfw_of(const struct fwm_model *model) {
    return (const fwm_gfw_model *)model->arch_data;
}

/* gfw_model.c */
fwm_status fwm__gfw_load(struct fwm_model *model, const void *buf, size_t size,
                         const fwm_model_params *params, fwm_error *err);
void fwm__gfw_unload(struct fwm_model *model);
void fwm__gfw_fill_info(const struct fwm_model *model, fwm_model_info *info);
size_t fwm__gfw_block_floats(const struct fwm_model *model);
void fwm__gfw_lay_out(struct fwm_session *session, float *base);
size_t fwm__gfw_state_floats(const struct fwm_model *model);

/* gfw_step.c: the step maths behind the shared entry points (step_driver.h) */
extern const fwm__step_kernel fwm__gfw_step_kernel;

/* gfw_state.c: the version-2 state blob's dims and body (state_blob_v2.h) */
extern const struct fwm_blob_v2_layout fwm__gfw_blob_v2;

#endif
