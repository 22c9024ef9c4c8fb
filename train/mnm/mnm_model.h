/* mnm_model.h - the Metalearned Neural Memory baseline (`--arch mnm`) as the trainer sees it: flat
 * parameters and gradients, B lanes of carried state (h, c, r and the memory weights M^1..M^Lm),
 * and the forward and backward pass over one window of tokens, meta-objective included.
 *
 * The model is docs/MODEL.md's MNM section (mnm/mnm_hparams.h): an LSTM controller reading [e; r],
 * interaction vectors u = tanh(W_u h + b_u), one rate beta, the learned local write of every
 * memory layer, the read of the updated memory, y = W_o [h; r] + b_o, logits = W_s y + b_s. The
 * training objective of a window is
 *     loss_sum / loss_denominator + meta_weight * meta_sum / meta_denominator,
 * with loss_sum the cross entropy of the loss rows (as every architecture's) and meta_sum the sum
 * of the meta terms m_t = (1/(Nh d_v)) sum_i |f_M_t(kw_i) - vw_i|^2 over the lane positions whose
 * input is not padding. The initial memory mnm.memory.N.init is not trained: it gets no gradient.
 *
 * Unlike the FWM's memory the controller reads the memory (r), so a window is one recurrence:
 * per lane and step, the LSTM, u, the write, the read and the meta term, with the lanes split
 * across threads (a fixed partition) and the products with the slow weights one [lanes, .] x
 * [., .] product per step for each thread's lanes. The backward pass needs every step's memory:
 * the forward pass keeps M every `segment` steps and the backward pass replays each segment's
 * writes (the same function, so the same bits) before walking it backwards. Parameter gradients
 * come only from batched matrix products and fixed-order column sums, so results depend on the
 * thread count only. Declared in two precisions from one template (mnm_model_decl.h):
 * fwm__mnm_tm_f32 (training, evaluation) and fwm__mnm_tm_f64 (the gradient check).
 * Not for: data, optimisation, files.
 */
#ifndef FWM_TRAIN_MNM_MODEL_H
#define FWM_TRAIN_MNM_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "fwm/fwm.h"
#include "mnm/mnm_hparams.h"
#include "param_layout.h"
#include "thread_pool.h"
#include "tm_shell.h" /* the shell every model begins with */
#include "model_common.h" /* fwm__loss_mode, fwm__is_loss_position */

typedef struct fwm__mnm_config {
    fwm_mnm_hparams hp;
    int lanes;              /* B >= 1 */
    int window;             /* maximum tokens per lane per forward call */
    int segment;            /* M is stored every `segment` steps (0: about sqrt(window)) */
    fwm__loss_mode loss_mode;
    uint32_t loss_token_id; /* QM mode: the input token at which loss is taken ("?") */
    double meta_weight;     /* lambda of the meta-objective (>= 0, finite) */
    int keep_logits;        /* also keep the loss rows' logits in tm->shell.logits (tests) */
    int forward_only;       /* no gradients, no backward buffers, no meta terms */
} fwm__mnm_config;

#define FWM_REAL_DOUBLE 0
#include "real_template.h"
#include "mnm_model_decl.h"
#undef FWM_REAL_DOUBLE
#define FWM_REAL_DOUBLE 1
#include "real_template.h"
#include "mnm_model_decl.h"
#undef FWM_REAL_DOUBLE

#endif
