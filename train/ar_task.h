/* ar_task.h - the sequence-to-sequence Associative Retrieval task of the Gated Fast Weights paper
 * (docs/AR_TASK.md): its 15-symbol vocabulary and a generator equal, character for character, to
 * the reference generator tests/reference/ar_task.py (SplitMix64, per-split seeds, the same order
 * of draws).
 *
 * The task's streams are loaded into the trainer's data structure (fwm__catbabi): each split is one
 * sample holding the whole input stream, with its target stream beside it (split->targets), so the
 * trainer and the evaluator lay it into lanes and walk it in windows exactly as a catbAbI stream,
 * but without <eos> markers and with the targets as given instead of the next input.
 */
#ifndef FWM_TRAIN_AR_TASK_H
#define FWM_TRAIN_AR_TASK_H

#include <stddef.h>
#include <stdint.h>

#include "catbabi_stream.h"

#define FWM__AR_VOCAB_SIZE 15
#define FWM__AR_SPACE_ID 0   /* the default target; never an input; the padding id */
#define FWM__AR_CLOSE_ID 12  /* ")": the input at which a query's answer is the target */
#define FWM__AR_EOS_ID 14    /* ".": ends a query group (the model file's end-of-sequence id) */
#define FWM__AR_MAX_STORAGES 10
#define FWM__AR_MAX_KEY 16

/* The symbols by id: " abcdefghSQ(),." (the space is id 0). */
extern const char fwm__ar_symbols[FWM__AR_VOCAB_SIZE + 1];
/* The token texts a model file carries: the symbols, except the space, written "<space>". */
extern const char *const fwm__ar_tokens[FWM__AR_VOCAB_SIZE];

/* SplitMix64 (Steele, Lea & Flood 2014). */
typedef struct fwm__splitmix64 {
    uint64_t state;
} fwm__splitmix64;
uint64_t fwm__splitmix64_next(fwm__splitmix64 *rng);

/* What to generate. Defaults (fwm__ar_config_default): the paper's, 100,000 / 5,000 / 5,000
 * queries, 1..10 storages per query, keys of 2..4 characters, seed 1. */
typedef struct fwm__ar_config {
    uint64_t seed;
    size_t queries[FWM__SPLIT_COUNT];
    int min_storages, max_storages; /* 1 <= min <= max */
    int min_key, max_key;           /* 1 <= min <= max */
} fwm__ar_config;
void fwm__ar_config_default(fwm__ar_config *config);

/* One split's streams: x[n] inputs, y[n] targets (ids of the 15 symbols), from the state
 * 4 * seed + split. Owned by the caller (free). FWM_ERR_INVALID_ARGUMENT, FWM_ERR_OUT_OF_MEMORY. */
fwm_status fwm__ar_generate(const fwm__ar_config *config, int split, uint32_t **x, uint32_t **y,
                            size_t *n, fwm_error *err);

/* All three splits into `out` (vocabulary fwm__ar_tokens; pad_id = the space, eos_id = ".",
 * qmark_id = ")"), each split one sample (task 0) with its targets. Release with
 * fwm__catbabi_release. */
fwm_status fwm__ar_load(fwm__catbabi *out, const fwm__ar_config *config, fwm_error *err);

/* Whether a model's vocabulary is the task's (the same tokens in the same order); when not, a
 * message naming the first difference goes into err. */
int fwm__ar_vocab_matches(const fwm__train_vocab *vocab, fwm_error *err);

#endif
