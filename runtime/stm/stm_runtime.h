/* stm_runtime.h - the STM (self-attentive associative memory) in the runtime (runtime/stm/): a
 * loaded model's own data and the functions behind its ops table (stm_ops.c). The model
 * (docs/MODEL.md, "The STM (self-attentive associative memory)"): an item memory Mi [d, d] written
 * with gated outer products, a relational memory Mr [n_q, d, d] built by the SAM operator, and,
 * by input mode, an answer module at question ends (sentence mode) or the eq. 14 output at every
 * word (word mode). A session's state block is Mi (in `F`, which is also the block's start `h`),
 * Mr (in `Mr`), and in sentence mode the word buffer: P word ids, the buffer's length and the
 * answer-slot flag (in `words`), each padded to FWM_SESSION_ALIGNMENT. A reset sets Mi and Mr to
 * the model's initial memories, empties the buffer and closes the slot. Internal to libfwm.
 */
#ifndef FWM_RUNTIME_STM_RUNTIME_H
#define FWM_RUNTIME_STM_RUNTIME_H

#include <stdbool.h>

#include "arch_ops.h"
#include "session_internal.h"
#include "stm/stm_hparams.h"

typedef struct fwm_stm_mlp {
    const float *weight1, *bias1, *weight2, *bias2; /* [H_a, E], [H_a], [out, H_a], [out] */
} fwm_stm_mlp;

typedef struct fwm_stm_model {
    fwm_stm_hparams hp;
    bool sentence;              /* input_mode == FWM_STM_INPUT_SENTENCE */
    const float *token_embd;    /* [V, E] */
    const float *position;      /* [P, E] (sentence mode) */
    const float *write_weight, *write_bias;   /* W1 [d, E], b1 */
    const float *value_weight, *value_bias;   /* W2 [d, E], b2 */
    const float *select_weight, *select_bias; /* W3 [n_q, E], b3 */
    const float *gate_input, *gate_memory, *gate_bias; /* Wg, Ug [2d, d], bg [2d] */
    const float *sam_weight, *sam_bias;       /* Wqkv [3 n_q, d], bqkv */
    const float *sam_gain, *sam_shift;        /* the layer norm's [3 n_q, d] gain and bias */
    const float *alpha;                       /* [3] */
    const float *transfer_weight, *transfer_bias; /* G1 [d, n_q d], g1 [d] */
    const float *item_init, *relation_init;   /* Mi [d, d] and Mr [n_q d, d] at reset */
    /* sentence mode: the answer module */
    fwm_stm_mlp entity, role[3];
    const float *answer_norm;                 /* [6, d]: gain1, bias1, gain2, bias2, gain3, bias3 */
    const float *answer_output;               /* Z [V, d] */
    /* word mode: eq. 14 */
    const float *distill_weight, *distill_bias; /* G2 [n_r, d^2], g2 */
    const float *output_weight, *output_bias;   /* G3 [V, n_q n_r], g3 */
} fwm_stm_model;

static inline const fwm_stm_model *fwm__stm_of(const struct fwm_model *model) {
    return (const fwm_stm_model *)model->arch_data;
}

/* The sentence buffer's words in a session (sentence mode): P ids, then the length, then the
 * answer-slot flag. */
#define FWM_STM_WORD_LENGTH(sm) ((sm)->hp.sentence_length)
#define FWM_STM_WORD_SLOT(sm) ((sm)->hp.sentence_length + 1)

/* stm_model.c */
fwm_status fwm__stm_load(struct fwm_model *model, const void *buf, size_t size,
                         const fwm_model_params *params, fwm_error *err);
void fwm__stm_unload(struct fwm_model *model);
void fwm__stm_fill_info(const struct fwm_model *model, fwm_model_info *info);
size_t fwm__stm_block_floats(const struct fwm_model *model);
void fwm__stm_lay_out(struct fwm_session *session, float *base);
size_t fwm__stm_state_floats(const struct fwm_model *model);
void fwm__stm_reset_state(struct fwm_session *session);
bool fwm__stm_has_prediction(const struct fwm_session *session);
bool fwm__stm_skip_answer(struct fwm_session *session);

/* stm_step.c: the step maths behind the shared entry points (step_driver.h) */
extern const fwm__step_kernel fwm__stm_step_kernel;

/* stm_state.c: the version-2 state blob's dims and body (state_blob_v2.h) */
extern const struct fwm_blob_v2_layout fwm__stm_blob_v2;

#endif
