/* model_common.h - what every architecture's trainer model shares: which target positions carry
 * loss (the one rule of every forward pass), the AWD dropouts' probabilities and the random
 * streams of their masks. */
#ifndef FWM_TRAIN_MODEL_COMMON_H
#define FWM_TRAIN_MODEL_COMMON_H

#include <stdint.h>

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

#endif
