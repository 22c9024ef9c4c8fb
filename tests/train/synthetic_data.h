/* synthetic_data.h - a small associative-retrieval task (after Schlag & Schmidhuber 2017) in the
 * trainer's split format, for tests that must train in seconds.
 *
 * Vocabulary: 0 <pad>, 1 <eos>, 2 "?", 3 "S", 4 "Q", then KEYS keys, then VALUES values. An
 * episode (one sample) is a sequence of stores "S k v" and queries "Q k ? v", where v after "?"
 * is the value stored last for key k in this episode (queries ask only about stored keys).
 */
#ifndef FWM_TESTS_TRAIN_SYNTHETIC_DATA_H
#define FWM_TESTS_TRAIN_SYNTHETIC_DATA_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "catbabi_stream.h"
#include "fwm_hparams.h"
#include "fwm_rng.h"

enum { SYN_PAD = 0, SYN_EOS = 1, SYN_QMARK = 2, SYN_STORE = 3, SYN_QUERY = 4, SYN_KEYS = 6,
       SYN_VALUES = 6, SYN_VOCAB = 5 + SYN_KEYS + SYN_VALUES, SYN_OPS = 10 };

/* `episodes` episodes drawn from fwm__rng(seed, 99). Returns 0 or -1 (out of memory). */
static inline int synthetic_split(fwm__catbabi_split *split, size_t episodes, uint64_t seed)
{
    memset(split, 0, sizeof *split);
    size_t max_words = episodes * SYN_OPS * 4;
    split->words = malloc(max_words * sizeof *split->words);
    split->starts = malloc(episodes * sizeof *split->starts);
    split->lengths = malloc(episodes * sizeof *split->lengths);
    split->tasks = malloc(episodes);
    if (!split->words || !split->starts || !split->lengths || !split->tasks)
        return -1;
    fwm__rng rng;
    fwm__rng_seed(&rng, seed, 99);
    for (size_t e = 0; e < episodes; e++) {
        int value_of[SYN_KEYS];
        for (int k = 0; k < SYN_KEYS; k++)
            value_of[k] = -1;
        int stored = 0;
        split->starts[e] = split->n_words;
        split->tasks[e] = 1;
        for (int op = 0; op < SYN_OPS; op++) {
            int query = stored > 0 && fwm__rng_uniform01(&rng) < 0.5;
            uint32_t *w = split->words + split->n_words;
            if (!query) {
                int k = (int)fwm__rng_below(&rng, SYN_KEYS);
                int v = (int)fwm__rng_below(&rng, SYN_VALUES);
                if (value_of[k] < 0)
                    stored++;
                value_of[k] = v;
                w[0] = SYN_STORE;
                w[1] = 5 + (uint32_t)k;
                w[2] = 5 + SYN_KEYS + (uint32_t)v;
                split->n_words += 3;
            } else {
                int k;
                do
                    k = (int)fwm__rng_below(&rng, SYN_KEYS);
                while (value_of[k] < 0);
                w[0] = SYN_QUERY;
                w[1] = 5 + (uint32_t)k;
                w[2] = SYN_QMARK;
                w[3] = 5 + SYN_KEYS + (uint32_t)value_of[k];
                split->n_words += 4;
                split->n_questions++;
            }
        }
        split->lengths[e] = (uint32_t)(split->n_words - split->starts[e]);
        split->n_samples++;
    }
    return 0;
}

/* A small model for the task. */
static inline fwm_hparams synthetic_hparams(int qm)
{
    fwm_hparams hp;
    memset(&hp, 0, sizeof hp);
    hp.vocab_size = SYN_VOCAB;
    hp.embedding_length = 32;
    hp.hidden_size = 64;
    hp.memory_s = hp.memory_r = hp.memory_t = 16;
    hp.read_count = 2;
    hp.read_policy = qm ? FWM_READ_ON_TOKEN : FWM_READ_ALWAYS;
    hp.read_token_id = qm ? SYN_QMARK : 0;
    hp.forget_bias = 1;
    hp.beta_bias = 1;
    hp.write_scale = 1.0f / 16;
    hp.layer_norm_eps = 1e-5f;
    hp.padding_token_id = SYN_PAD;
    hp.eos_token_id = SYN_EOS;
    return hp;
}

#endif
