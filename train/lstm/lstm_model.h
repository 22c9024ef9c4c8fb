/* lstm_model.h - the LSTM baseline (`--arch lstm`) as the trainer sees it: flat parameters and
 * gradients, B lanes of carried state (h and c of every layer), AWD-style dropout, and the forward
 * and backward pass over one window of tokens.
 *
 * The model is model_format/lstm/lstm_hparams.h's (docs/MODEL.md, "The LSTM baseline"): e = Emb[x];
 * L stacked LSTM layers (gate order i, f, z, o, forget_bias on f); y_l = h_l, plus the layer's
 * input when residual and l >= 1; logits = W_s y_{L-1} + b_s. Declared in two precisions from one
 * template (lstm_model_decl.h): fwm__lstm_tm_f32 (training, evaluation) and fwm__lstm_tm_f64 (the
 * gradient check). Losses and loss positions as every architecture's (model_common.h).
 *
 * Dropout (training only; evaluation creates its model without it), after AWD-LSTM (Merity et al.
 * 2018) as the FWM paper's appendix F.4 uses it, every mask scaled by 1/(1-p) where it keeps:
 *   token      a word's whole embedding is zeroed, for every occurrence in the window (one mask over
 *              the vocabulary per window, AWD's "embedding dropout");
 *   embedding  elements of the embedding, one mask per lane per window (locked over time);
 *   recurrent  DropConnect on every layer's W_hh, one mask per layer per window;
 *   layer      between layers (on the input of layer l >= 1), one mask per lane per layer per window.
 * The masks are a function of (seed, step, lane) only (fwm__lstm_tm_set_dropout), so lane groups,
 * processes and a resumed run draw the same ones; the backward pass uses the masks of its forward
 * pass.
 * Not for: data, optimisation, files.
 */
#ifndef FWM_TRAIN_LSTM_MODEL_H
#define FWM_TRAIN_LSTM_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "fwm/fwm.h"
#include "lstm/lstm_init.h" /* fwm__lstm_init_weights: the initial weights */
#include "param_layout.h"
#include "thread_pool.h"
#include "tm_shell.h" /* the shell every model begins with */
#include "model_common.h" /* fwm__loss_mode, fwm__is_loss_position */

/* fwm__dropout and fwm__dropout_any: model_common.h (the stacked FWM has the same dropouts). */

typedef struct fwm__lstm_config {
    fwm_lstm_hparams hp;
    int lanes;              /* B >= 1 */
    int window;             /* maximum tokens per lane per forward call */
    fwm__loss_mode loss_mode;
    uint32_t loss_token_id; /* QM mode: the input token at which loss is taken ("?") */
    fwm__dropout dropout;   /* all 0 for evaluation */
    int tie_embeddings;     /* W_s is Emb (needs H == E), as fwm__tm_config's */
    int keep_logits;        /* also keep the loss rows' logits in tm->shell.logits (tests) */
    int forward_only;       /* no gradients and no backward buffers */
} fwm__lstm_config;

/* fwm__lstm_dropout_stream: model_common.h. */

#define FWM_REAL_DOUBLE 0
#include "real_template.h"
#include "lstm_model_decl.h"
#undef FWM_REAL_DOUBLE
#define FWM_REAL_DOUBLE 1
#include "real_template.h"
#include "lstm_model_decl.h"
#undef FWM_REAL_DOUBLE

#endif
