/* ar_task.c - the Associative Retrieval task's vocabulary and generator (see ar_task.h and
 * docs/AR_TASK.md "The generator"). */
#include "ar_task.h"

#include <stdlib.h>
#include <string.h>

#include "fwm_error.h"

const char fwm__ar_symbols[FWM__AR_VOCAB_SIZE + 1] = " abcdefghSQ(),.";
const char *const fwm__ar_tokens[FWM__AR_VOCAB_SIZE] = {
    "<space>", "a", "b", "c", "d", "e", "f", "g", "h", "S", "Q", "(", ")", ",", "."};

enum { ID_VALUE0 = 1, ID_S = 9, ID_Q = 10, ID_OPEN = 11, ID_COMMA = 13 };

uint64_t fwm__splitmix64_next(fwm__splitmix64 *rng)
{
    rng->state += 0x9E3779B97F4A7C15ull;
    uint64_t z = rng->state;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint32_t below(fwm__splitmix64 *rng, uint32_t k)
{
    return (uint32_t)(fwm__splitmix64_next(rng) % k);
}

void fwm__ar_config_default(fwm__ar_config *c)
{
    memset(c, 0, sizeof *c);
    c->seed = 1;
    c->queries[FWM__SPLIT_TRAIN] = 100000;
    c->queries[FWM__SPLIT_VALID] = 5000;
    c->queries[FWM__SPLIT_TEST] = 5000;
    c->min_storages = 1;
    c->max_storages = FWM__AR_MAX_STORAGES;
    c->min_key = 2;
    c->max_key = 4;
}

typedef struct storage {
    uint32_t key[FWM__AR_MAX_KEY];
    int key_length;
    uint32_t value;
} storage;

fwm_status fwm__ar_generate(const fwm__ar_config *c, int split, uint32_t **x_out,
                            uint32_t **y_out, size_t *n_out, fwm_error *err)
{
    *x_out = *y_out = NULL;
    *n_out = 0;
    if (split < 0 || split >= FWM__SPLIT_COUNT || c->min_storages < 1 ||
        c->max_storages < c->min_storages || c->max_storages > FWM__AR_MAX_STORAGES ||
        c->min_key < 1 || c->max_key < c->min_key || c->max_key > FWM__AR_MAX_KEY ||
        c->queries[split] == 0)
        return fwm__error(err, FWM_ERR_INVALID_ARGUMENT,
                          "associative retrieval: need storages 1 <= %d <= %d <= %d, key lengths "
                          "1 <= %d <= %d <= %d and queries (got %zu for split %d)",
                          c->min_storages, c->max_storages, FWM__AR_MAX_STORAGES, c->min_key,
                          c->max_key, FWM__AR_MAX_KEY, split >= 0 && split < FWM__SPLIT_COUNT
                                                                ? c->queries[split] : 0,
                          split);
    /* the longest group: max storages of S(key,v), (5 + key characters) and Q(key)v. */
    size_t group_max = (size_t)c->max_storages * (size_t)(6 + c->max_key) + (size_t)(5 + c->max_key);
    if (c->queries[split] > ((size_t)1 << 40) / group_max)
        return fwm__error(err, FWM_ERR_INVALID_ARGUMENT,
                          "associative retrieval: %zu queries is too many", c->queries[split]);
    size_t capacity = c->queries[split] * group_max;
    uint32_t *x = malloc(capacity * sizeof *x), *y = malloc(capacity * sizeof *y);
    if (!x || !y) {
        free(x);
        free(y);
        return fwm__error(err, FWM_ERR_OUT_OF_MEMORY,
                          "associative retrieval: out of memory for %zu queries", c->queries[split]);
    }
    fwm__splitmix64 rng = {4 * c->seed + (uint64_t)split};
    storage stored[FWM__AR_MAX_STORAGES];
    size_t n = 0;
    for (size_t q = 0; q < c->queries[split]; q++) {
        int count = c->min_storages + (int)below(&rng, (uint32_t)(c->max_storages - c->min_storages + 1));
        for (int s = 0; s < count; s++) {
            storage *st = &stored[s];
            st->key_length = c->min_key + (int)below(&rng, (uint32_t)(c->max_key - c->min_key + 1));
            for (int k = 0; k < st->key_length; k++)
                st->key[k] = ID_VALUE0 + below(&rng, 8);
            st->value = ID_VALUE0 + below(&rng, 8);
            size_t at = n;
            x[n++] = ID_S;
            x[n++] = ID_OPEN;
            for (int k = 0; k < st->key_length; k++)
                x[n++] = st->key[k];
            x[n++] = ID_COMMA;
            x[n++] = st->value;
            x[n++] = FWM__AR_CLOSE_ID;
            x[n++] = ID_COMMA;
            for (size_t i = at; i < n; i++)
                y[i] = FWM__AR_SPACE_ID;
        }
        const storage *asked = &stored[below(&rng, (uint32_t)count)];
        uint32_t answer = 0; /* the latest storage of the key wins */
        for (int s = 0; s < count; s++)
            if (stored[s].key_length == asked->key_length &&
                memcmp(stored[s].key, asked->key, (size_t)asked->key_length * sizeof(uint32_t)) == 0)
                answer = stored[s].value;
        size_t at = n;
        x[n++] = ID_Q;
        x[n++] = ID_OPEN;
        for (int k = 0; k < asked->key_length; k++)
            x[n++] = asked->key[k];
        x[n++] = FWM__AR_CLOSE_ID;
        x[n++] = answer;
        x[n++] = FWM__AR_EOS_ID;
        for (size_t i = at; i < n; i++)
            y[i] = i == n - 3 ? answer : FWM__AR_SPACE_ID; /* the answer is the target at ')' */
    }
    *x_out = x;
    *y_out = y;
    *n_out = n;
    return FWM_OK;
}

fwm_status fwm__ar_load(fwm__catbabi *out, const fwm__ar_config *config, fwm_error *err)
{
    memset(out, 0, sizeof *out);
    fwm_status status = FWM_OK;
    for (uint32_t i = 0; i < FWM__AR_VOCAB_SIZE; i++)
        if (fwm__train_vocab_add(&out->vocab, fwm__ar_tokens[i]) != i) {
            status = fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "vocabulary: out of memory");
            goto fail;
        }
    for (int s = 0; s < FWM__SPLIT_COUNT; s++) {
        fwm__catbabi_split *split = &out->splits[s];
        status = fwm__ar_generate(config, s, &split->words, &split->targets, &split->n_words, err);
        if (status != FWM_OK)
            goto fail;
        split->starts = calloc(1, sizeof *split->starts);
        split->lengths = malloc(sizeof *split->lengths);
        split->tasks = calloc(1, 1);
        if (!split->starts || !split->lengths || !split->tasks || split->n_words > UINT32_MAX) {
            status = fwm__error(err, FWM_ERR_OUT_OF_MEMORY,
                                "associative retrieval: out of memory (or a stream of %zu "
                                "characters, more than a sample holds)",
                                split->n_words);
            goto fail;
        }
        split->lengths[0] = (uint32_t)split->n_words;
        split->n_samples = 1;
        split->n_questions = config->queries[s];
    }
    out->pad_id = FWM__AR_SPACE_ID;
    out->eos_id = FWM__AR_EOS_ID;
    out->qmark_id = FWM__AR_CLOSE_ID;
    return FWM_OK;
fail:
    fwm__catbabi_release(out);
    return status;
}

int fwm__ar_vocab_matches(const fwm__train_vocab *vocab, fwm_error *err)
{
    if (vocab->count != FWM__AR_VOCAB_SIZE) {
        fwm__error(err, FWM_ERR_INVALID_ARGUMENT,
                   "the model has %u tokens; the associative retrieval task has %d", vocab->count,
                   FWM__AR_VOCAB_SIZE);
        return 0;
    }
    for (uint32_t i = 0; i < FWM__AR_VOCAB_SIZE; i++)
        if (strcmp(vocab->words[i], fwm__ar_tokens[i]) != 0) {
            fwm__error(err, FWM_ERR_INVALID_ARGUMENT,
                       "the model's token %u is '%s'; the associative retrieval task's is '%s'",
                       i, vocab->words[i], fwm__ar_tokens[i]);
            return 0;
        }
    return 1;
}
