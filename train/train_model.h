/* train_model.h - the FWM as the trainer sees it: flat parameters and gradients, B lanes of
 * carried state, and the forward and backward pass over one window of tokens.
 *
 * Declared in two precisions from one template (train_model_decl.h): fwm__tm_f32 (float, single
 * precision BLAS: training and evaluation) and fwm__tm_f64 (double: the gradient check). Both
 * compute exactly the model of docs/MODEL.md, step for step what the runtime computes.
 * Not for: data, optimisation, files (see catbabi_stream.h, adam.h, checkpoint.h).
 */
#ifndef FWM_TRAIN_TRAIN_MODEL_H
#define FWM_TRAIN_TRAIN_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "fwm/fwm.h"
#include "fwm_hparams.h"
#include "param_layout.h"
#include "thread_pool.h"

/* Which target positions carry loss. */
typedef enum fwm__loss_mode {
    FWM__LOSS_LM = 0, /* every position whose target is not <pad> */
    FWM__LOSS_QM = 1, /* only positions whose input is the read token ("?"), target not <pad> */
    FWM__LOSS_INPUT = 2 /* every position whose input is not <pad> (a sequence-to-sequence task
                           whose padding id is also a target, ar_task.h: its targets all count) */
} fwm__loss_mode;

/* Dropout probabilities, each in [0, 1); 0 = off. */
typedef struct fwm__dropout {
    float token;     /* --dropout-token: whole words of the input */
    float embedding; /* --dropout-embedding: embedding elements, locked per lane */
    float recurrent; /* --dropout-recurrent: DropConnect on W_hh */
    float layer;     /* --dropout-layer: between layers, locked per lane */
} fwm__dropout;

/* Whether any probability is nonzero. */
static inline int fwm__dropout_any(const fwm__dropout *d)
{
    return d->token > 0 || d->embedding > 0 || d->recurrent > 0 || d->layer > 0;
}

/* Random number stream of a dropout mask: (kind, layer, lane, step) packed into fwm__rng's
 * stream number with the top bit set (the initialiser and the shuffling use small streams). */
static inline uint64_t fwm__lstm_dropout_stream(unsigned kind, unsigned layer, uint64_t lane,
                                                uint64_t step)
{
    return (1ull << 63) | ((uint64_t)(kind & 7u) << 60) | ((uint64_t)(layer & 15u) << 56) |
           ((lane & 0xffffull) << 40) | (step & 0xffffffffffull);
}

/* Sizes fixed at creation. */
typedef struct fwm__tm_config {
    fwm_hparams hp;     /* model; hp.read_policy decides where the memory is read */
    int lanes;          /* B >= 1: independent streams stepped together */
    int window;         /* maximum tokens per lane per forward call (truncated-BPTT length) */
    int segment;        /* F is stored every `segment` steps and recomputed in between in the
                           backward pass; 0 picks about sqrt(window) */
    fwm__loss_mode loss_mode;
    uint32_t loss_token_id; /* QM mode: the input token at which loss is taken (usually "?") */
    int keep_logits;        /* also keep the loss rows' logits in tm->logits (tests) */
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

/* Whether the target y of input x carries loss: y is not <pad> and, in QM mode, x is the loss
 * token; in INPUT mode, x is not <pad> (whatever y is). The one rule of every architecture's
 * forward pass, also used to count a step's loss rows in advance. */
static inline int fwm__is_loss_position(fwm__loss_mode mode, uint32_t loss_token_id,
                                        uint32_t padding_token_id, uint32_t x, uint32_t y)
{
    if (mode == FWM__LOSS_INPUT)
        return x != padding_token_id;
    return y != padding_token_id && (mode == FWM__LOSS_LM || x == loss_token_id);
}

static inline int fwm__tm_is_loss_position(const fwm__tm_config *config, uint32_t x, uint32_t y)
{
    return fwm__is_loss_position(config->loss_mode, config->loss_token_id,
                                 config->hp.padding_token_id, x, y);
}

#define FWM_REAL_DOUBLE 0
#include "real_template.h"
#include "train_model_decl.h"
#undef FWM_REAL_DOUBLE
#define FWM_REAL_DOUBLE 1
#include "real_template.h"
#include "train_model_decl.h"
#undef FWM_REAL_DOUBLE

#endif
