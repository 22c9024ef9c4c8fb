/* fwm_model.h - the FWM as the trainer sees it: flat parameters and gradients, B lanes of
 * carried state, and the forward and backward pass over one window of tokens.
 *
 * Declared in two precisions from one template (fwm_model_decl.h): fwm__tm_f32 (float, single
 * precision BLAS: training and evaluation) and fwm__tm_f64 (double: the gradient check). Both
 * compute exactly the model of docs/MODEL.md, step for step what the runtime computes.
 * Not for: data, optimisation, files (see catbabi_stream.h, adam.h, checkpoint.h).
 */
#ifndef FWM_TRAIN_FWM_MODEL_H
#define FWM_TRAIN_FWM_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "fwm/fwm.h"
#include "fwm_hparams.h"
#include "model_common.h"
#include "param_layout.h"
#include "thread_pool.h"
#include "tm_shell.h" /* the shell every model begins with */

/* Sizes fixed at creation. */
typedef struct fwm__tm_config {
    fwm_hparams hp;     /* model; hp.read_policy decides where the memory is read */
    int lanes;          /* B >= 1: independent streams stepped together */
    int window;         /* maximum tokens per lane per forward call (truncated-BPTT length) */
    int segment;        /* F is stored every `segment` steps and recomputed in between in the
                           backward pass; 0 picks about sqrt(window) */
    fwm__loss_mode loss_mode;
    uint32_t loss_token_id; /* QM mode: the input token at which loss is taken (usually "?") */
    int keep_logits;        /* also keep the loss rows' logits in tm->shell.logits (tests) */
    int forward_only;       /* evaluation: no gradients, no backward buffers, no F checkpoints
                               (fwm__tm_backward must not be called) */
    fwm__dropout dropout;   /* the LSTM baseline's AWD dropouts on every LSTM layer of the FWM
                               (a stacked FWM's lower layers and its own): token and embedding
                               on the embedding, DropConnect on every W_hh, layer on the input of
                               every layer above the lowest; masks from fwm__tm_set_dropout. All 0
                               for evaluation */
    int tie_embeddings;     /* the output matrix W_s is Emb (needs H == E): logits = Emb y; Emb
                               takes both gradients and output.weight none (the trainer keeps it
                               a copy of Emb, so the file stores both) */
} fwm__tm_config;

static inline int fwm__tm_is_loss_position(const fwm__tm_config *config, uint32_t x, uint32_t y)
{
    return fwm__is_loss_position(config->loss_mode, config->loss_token_id,
                                 config->hp.padding_token_id, x, y);
}

#define FWM_REAL_DOUBLE 0
#include "real_template.h"
#include "fwm_model_decl.h"
#undef FWM_REAL_DOUBLE
#define FWM_REAL_DOUBLE 1
#include "real_template.h"
#include "fwm_model_decl.h"
#undef FWM_REAL_DOUBLE

#endif
