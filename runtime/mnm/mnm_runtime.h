/* mnm_runtime.h - the Metalearned Neural Memory baseline in the runtime (runtime/mnm/): a loaded
 * model's own data and the functions behind its ops table (mnm_ops.c). The model (docs/MODEL.md,
 * "The Metalearned Neural Memory baseline"): an LSTM controller over [Emb[x]; r], interaction
 * vectors, a learned local write into a small feed-forward memory net, a read from the updated
 * memory, and two linear output maps. A session's state block is h[H], c[H], r[d_v] and the memory
 * M^1..M^Lm (row-major, packed in layer order), each of the four padded to FWM_SESSION_ALIGNMENT;
 * a reset sets h = c = r = 0 and the memory to the model's fixed initial memory. Internal to libfwm.
 */
#ifndef FWM_RUNTIME_MNM_RUNTIME_H
#define FWM_RUNTIME_MNM_RUNTIME_H

#include "arch_ops.h"
#include "mnm/mnm_hparams.h"
#include "session_internal.h"

typedef struct fwm_mnm_model {
    fwm_mnm_hparams hp;
    const float *token_embd;      /* [V, E] */
    const float *weight_hh;       /* [4H, H] */
    const float *bias;            /* [4H] */
    const float *interact_weight; /* [Nh (2 d_k + d_v) + d_k, H] */
    const float *interact_bias;
    const float *rate_weight;     /* [1, d_k] */
    const float *rate_bias;       /* [1] */
    const float *target_weight;   /* [(Lm - 1) D + d_v, d_v] */
    const float *target_bias;
    const float *memory_init[FWM_MNM_MAX_MEMORY_LAYERS]; /* M^l at reset */
    const float *out_weight;      /* [d_o, H + d_v] */
    const float *out_bias;        /* [d_o] */
    const float *output_weight;   /* [V, d_o] */
    const float *output_bias;     /* [V] */
    /* W_ih [4H, E + d_v] split by columns (owned copies): the embedding part [4H, E] and the
     * read-out part [4H, d_v], so that the embedding part can be tabled per token. */
    float *weight_ie;
    float *weight_ir;
    /* [V, 4H]: W_ie Emb[x] + b for every token x, or NULL when too large (then the step computes
     * it); the same bits either way. */
    float *input_gates;
    /* Where each M^l starts in a session's memory, in floats; [Lm] is the total. */
    size_t memory_offset[FWM_MNM_MAX_MEMORY_LAYERS + 1];
} fwm_mnm_model;

static inline const fwm_mnm_model *fwm__mnm_of(const struct fwm_model *model) {
    return (const fwm_mnm_model *)model->arch_data;
}

/* mnm_model.c */
fwm_status fwm__mnm_load(struct fwm_model *model, const void *buf, size_t size,
                         const fwm_model_params *params, fwm_error *err);
void fwm__mnm_unload(struct fwm_model *model);
void fwm__mnm_fill_info(const struct fwm_model *model, fwm_model_info *info);
size_t fwm__mnm_block_floats(const struct fwm_model *model);
void fwm__mnm_lay_out(struct fwm_session *session, float *base);
size_t fwm__mnm_state_floats(const struct fwm_model *model);
void fwm__mnm_reset_state(struct fwm_session *session);

/* mnm_step.c: the step maths behind the shared entry points (step_driver.h) */
extern const fwm__step_kernel fwm__mnm_step_kernel;

/* mnm_state.c: the version-2 state blob's dims and body (state_blob_v2.h) */
extern const struct fwm_blob_v2_layout fwm__mnm_blob_v2;

#endif
