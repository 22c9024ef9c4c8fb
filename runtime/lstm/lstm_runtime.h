/* lstm_runtime.h - the LSTM baseline in the runtime (runtime/lstm/): a loaded model's own data and
 * the functions behind its ops table (lstm_ops.c). The model (docs/MODEL.md, "The LSTM baseline"):
 * L stacked LSTM layers over the embedding, an optional residual connection from layer 2 on, and
 * an output layer with a bias. A session's state block is h[L][H] then c[L][H] (each padded to
 * FWM_SESSION_ALIGNMENT), zero at reset. Internal to libfwm.
 */
#ifndef FWM_RUNTIME_LSTM_RUNTIME_H
#define FWM_RUNTIME_LSTM_RUNTIME_H

#include "arch_ops.h"
#include "lstm/lstm_hparams.h"
#include "session_internal.h"

typedef struct fwm_lstm_model {
    fwm_lstm_hparams hp;
    const float *token_embd;                     /* [V, E] */
    const float *weight_ih[FWM_LSTM_MAX_LAYERS]; /* [4H, E] for layer 0, [4H, H] above */
    const float *weight_hh[FWM_LSTM_MAX_LAYERS]; /* [4H, H] */
    const float *bias[FWM_LSTM_MAX_LAYERS];      /* [4H] */
    const float *output_weight;                  /* [V, H] */
    const float *output_bias;                    /* [V] */
    /* The same matrices in BF16 where the file's fwm.matmul_type is "bf16" and it stores them so
     * (then the F32 pointer is NULL; bf16_kernels.h); NULL otherwise. */
    const uint16_t *weight_ih16[FWM_LSTM_MAX_LAYERS];
    const uint16_t *weight_hh16[FWM_LSTM_MAX_LAYERS];
    const uint16_t *output_weight16;
    /* [V, 4H]: layer 0's W_ih Emb[x] + b for every token x, or NULL when too large (then the step
     * computes it); the same bits either way. */
    float *input_gates;
} fwm_lstm_model;

static inline const fwm_lstm_model *fwm__lstm_of(const struct fwm_model *model) {
    return (const fwm_lstm_model *)model->arch_data;
}

/* lstm_model.c */
fwm_status fwm__lstm_load(struct fwm_model *model, const void *buf, size_t size,
                          const fwm_model_params *params, fwm_error *err);
void fwm__lstm_unload(struct fwm_model *model);
void fwm__lstm_fill_info(const struct fwm_model *model, fwm_model_info *info);
size_t fwm__lstm_block_floats(const struct fwm_model *model);
void fwm__lstm_lay_out(struct fwm_session *session, float *base);
size_t fwm__lstm_state_floats(const struct fwm_model *model);

/* lstm_step.c: the step maths behind the shared entry points (step_driver.h) */
extern const fwm__step_kernel fwm__lstm_step_kernel;
/* fwm_session_predict: the output layer over the state (lstm_step.c) */
fwm_status fwm__lstm_predict(const fwm_session *session, float *logits, fwm_error *err);

/* lstm_state.c: the version-2 state blob's dims and body (state_blob_v2.h) */
extern const struct fwm_blob_v2_layout fwm__lstm_blob_v2;

#endif
