/* gfw_model.h - the Gated Fast Weights model (`--arch gfw`) as the trainer sees it: flat parameters
 * and gradients, B lanes of carried state (h_F, h_S, F1, F2), and the forward and backward pass
 * over one window of tokens.
 *
 * The model is docs/MODEL.md's "The Gated Fast Weights model" (gfw/gfw_hparams.h): e = Emb[x];
 * the fast net a = LN(tanh(F1 [h_F; e; 1])), h_F = LN(tanh(F2 [a; 1])), logits = W_o h_F + b_o,
 * with the fast matrices the slow net generated at the previous step; the slow net
 * s = tanh(W_1 [h_S; e] + b_1), o = W_2 s + b_2 = [z; D1; D2], h_S = tanh(z); and the gated update
 * F <- T*H + (1 - T)*F of both fast matrices from D1 and D2 for the next step.
 *
 * The slow net does not read the fast net, so a window runs it first: the recurrence of h_S over
 * time (lanes split across threads, one [lanes, .] x [., .] product per step for z), then the
 * update vectors D of every position as one product. The fast net and the update are per lane
 * (every lane has its own matrices): lanes split across threads, each walks its steps. Training
 * keeps the fast matrices of every step of the window (lanes x window x fast elements floats) for
 * the backward pass, which walks each lane back through the fast net, both layer norms and the
 * blend, then the slow net back through time with batched products. Parameter gradients come only
 * from batched matrix products and fixed-order column sums, so results depend on the thread count
 * only. Declared in two precisions from one template (gfw_model_decl.h): fwm__gfw_tm_f32 (training,
 * evaluation) and fwm__gfw_tm_f64 (the gradient check).
 * Not for: data, optimisation, files.
 */
#ifndef FWM_TRAIN_GFW_MODEL_H
#define FWM_TRAIN_GFW_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "fwm/fwm.h"
#include "gfw/gfw_hparams.h"
#include "param_layout.h"
#include "thread_pool.h"
#include "tm_shell.h" /* the shell every model begins with */
#include "model_common.h" /* fwm__loss_mode, fwm__is_loss_position */

typedef struct fwm__gfw_config {
    fwm_gfw_hparams hp;
    int lanes;              /* B >= 1 */
    int window;             /* maximum tokens per lane per forward call */
    fwm__loss_mode loss_mode;
    uint32_t loss_token_id; /* QM mode: the input token at which loss is taken ("?") */
    int keep_logits;        /* also keep the loss rows' logits in tm->shell.logits (tests) */
    int forward_only;       /* no gradients, no backward buffers, no stored fast matrices */
} fwm__gfw_config;

#define FWM_REAL_DOUBLE 0
#include "real_template.h"
#include "gfw_model_decl.h"
#undef FWM_REAL_DOUBLE
#define FWM_REAL_DOUBLE 1
#include "real_template.h"
#include "gfw_model_decl.h"
#undef FWM_REAL_DOUBLE

#endif
