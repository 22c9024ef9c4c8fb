/* text_corpus.c - a folder of plain text as the trainer's splits (see text_corpus.h). */
#include "text_corpus.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fwm_error.h"
#include "fwm_text.h"
#include "whole_file.h"

static const char *const split_files[FWM__SPLIT_COUNT] = {"train.txt", "valid.txt", "test.txt"};

/* What the splitter's tokens become: ids of the training words by first appearance (+ 3, below
 * them the specials) while counting, or ids of the final vocabulary. */
typedef struct collector {
    fwm__train_vocab *words; /* counting: first appearance; else the final vocabulary */
    int counting;
    uint32_t *counts;        /* counting: [words->count] */
    uint32_t counts_cap;
    uint32_t *ids;
    size_t n, cap;
    size_t unknown;
} collector;

static fwm_status push(collector *c, uint32_t id)
{
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 1 << 16;
        uint32_t *ids = realloc(c->ids, cap * sizeof *ids);
        if (!ids)
            return FWM_ERR_OUT_OF_MEMORY;
        c->ids = ids;
        c->cap = cap;
    }
    c->ids[c->n++] = id;
    return FWM_OK;
}

static fwm_status on_token(void *user, const fwm__text_token *t)
{
    collector *c = user;
    if (t->is_eos)
        return push(c, FWM__TEXT_EOS_ID);
    if (t->too_long || strcmp(t->text, FWM__TEXT_UNK) == 0) {
        c->unknown++;
        return push(c, FWM__TEXT_UNK_ID);
    }
    if (!c->counting) {
        uint32_t id = fwm__train_vocab_find(c->words, t->text);
        if (id == FWM__TRAIN_VOCAB_NONE) {
            c->unknown++;
            id = FWM__TEXT_UNK_ID;
        }
        return push(c, id);
    }
    uint32_t id = fwm__train_vocab_add(c->words, t->text);
    if (id == FWM__TRAIN_VOCAB_NONE)
        return FWM_ERR_OUT_OF_MEMORY;
    if (id >= c->counts_cap) {
        uint32_t cap = c->counts_cap ? 2 * c->counts_cap : 4096;
        uint32_t *counts = realloc(c->counts, cap * sizeof *counts);
        if (!counts)
            return FWM_ERR_OUT_OF_MEMORY;
        memset(counts + c->counts_cap, 0, (cap - c->counts_cap) * sizeof *counts);
        c->counts = counts;
        c->counts_cap = cap;
    }
    c->counts[id]++;
    return push(c, id + 3);
}

/* Split one file into c's ids. */
static fwm_status read_split(const char *dir, int s, collector *c, fwm_error *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, split_files[s]);
    char *text;
    size_t length;
    fwm_status st = fwm__read_whole_file(path, &text, &length, err);
    if (st != FWM_OK)
        return st;
    fwm_error split_err;
    st = fwm__text_split(text, length, on_token, c, &split_err);
    free(text);
    if (st == FWM_ERR_OUT_OF_MEMORY)
        return fwm__error(err, st, "reading %s: out of memory", path);
    if (st != FWM_OK)
        return fwm__error(err, st, "%s: %s", path, split_err.message);
    size_t words = 0;
    for (size_t i = 0; i < c->n; i++)
        words += c->ids[i] != FWM__TEXT_EOS_ID;
    if (words == 0)
        return fwm__error(err, FWM_ERR_FORMAT, "%s has no words (an empty or blank %s split)", path,
                          fwm__split_names[s]);
    return FWM_OK;
}

/* The split's sample from its tokens t_1..t_n (ids, taken over). */
static fwm_status make_split(fwm__catbabi_split *split, uint32_t *ids, size_t n, fwm_error *err)
{
    split->targets = ids;
    split->words = malloc(n * sizeof *split->words);
    split->starts = calloc(1, sizeof *split->starts);
    split->lengths = malloc(sizeof *split->lengths);
    split->tasks = calloc(1, 1);
    if (!split->words || !split->starts || !split->lengths || !split->tasks || n > UINT32_MAX)
        return fwm__error(err, FWM_ERR_OUT_OF_MEMORY,
                          "text: out of memory (or a split of %zu tokens, more than a sample holds)",
                          n);
    split->words[0] = FWM__TEXT_EOS_ID;
    memcpy(split->words + 1, ids, (n - 1) * sizeof *ids);
    split->n_words = n;
    split->lengths[0] = (uint32_t)n;
    split->n_samples = 1;
    return FWM_OK;
}

static const uint32_t *sort_counts; /* qsort's comparison reads it (one load at a time) */

static int by_count(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    if (sort_counts[x] != sort_counts[y])
        return sort_counts[x] > sort_counts[y] ? -1 : 1;
    return x < y ? -1 : x > y;
}

fwm_status fwm__text_load(fwm__catbabi *out, const char *dir, uint32_t vocab_size,
                          fwm__text_stats *stats, fwm_error *err)
{
    memset(out, 0, sizeof *out);
    memset(stats, 0, sizeof *stats);
    fwm__train_vocab seen;
    memset(&seen, 0, sizeof seen);
    collector c;
    memset(&c, 0, sizeof c);
    c.words = &seen;
    c.counting = 1;
    uint32_t *order = NULL, *rank = NULL;
    fwm_status st = read_split(dir, FWM__SPLIT_TRAIN, &c, err);
    if (st != FWM_OK)
        goto fail;
    stats->distinct_train = seen.count;
    if (vocab_size > seen.count) {
        st = fwm__error(err, FWM_ERR_INVALID_ARGUMENT,
                        "--vocab-size %u is more than the %u distinct words of %s/train.txt",
                        vocab_size, seen.count, dir);
        goto fail;
    }
    uint32_t kept = vocab_size ? vocab_size : seen.count;
    order = malloc((seen.count + 1) * sizeof *order);
    rank = malloc((seen.count + 1) * sizeof *rank);
    if (!order || !rank) {
        st = fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "text vocabulary: out of memory");
        goto fail;
    }
    for (uint32_t i = 0; i < seen.count; i++)
        order[i] = i;
    sort_counts = c.counts;
    qsort(order, seen.count, sizeof *order, by_count);
    static const char *const specials[] = {"<pad>", FWM__TEXT_EOS, FWM__TEXT_UNK};
    for (uint32_t i = 0; i < 3; i++)
        if (fwm__train_vocab_add(&out->vocab, specials[i]) != i)
            goto oom;
    for (uint32_t i = 0; i < seen.count; i++)
        rank[order[i]] = i < kept ? 3 + i : FWM__TEXT_UNK_ID;
    for (uint32_t i = 0; i < kept; i++)
        if (fwm__train_vocab_add(&out->vocab, seen.words[order[i]]) != 3 + i)
            goto oom;
    for (size_t i = 0; i < c.n; i++)
        if (c.ids[i] >= 3) {
            c.ids[i] = rank[c.ids[i] - 3];
            c.unknown += c.ids[i] == FWM__TEXT_UNK_ID;
        }
    stats->tokens[FWM__SPLIT_TRAIN] = c.n;
    stats->unknown[FWM__SPLIT_TRAIN] = c.unknown;
    st = make_split(&out->splits[FWM__SPLIT_TRAIN], c.ids, c.n, err);
    c.ids = NULL;
    if (st != FWM_OK)
        goto fail;
    for (int s = FWM__SPLIT_VALID; s < FWM__SPLIT_COUNT; s++) {
        collector v;
        memset(&v, 0, sizeof v);
        v.words = &out->vocab;
        st = read_split(dir, s, &v, err);
        if (st == FWM_OK)
            st = make_split(&out->splits[s], v.ids, v.n, err);
        else
            free(v.ids);
        if (st != FWM_OK)
            goto fail;
        stats->tokens[s] = v.n;
        stats->unknown[s] = v.unknown;
    }
    out->pad_id = FWM__TEXT_PAD_ID;
    out->eos_id = FWM__TEXT_EOS_ID;
    out->qmark_id = FWM__TEXT_PAD_ID; /* no questions: the loss is at every target */
    goto done;
oom:
    st = fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "text vocabulary: out of memory");
fail:
    fwm__catbabi_release(out);
done:
    free(c.ids);
    free(c.counts);
    free(order);
    free(rank);
    fwm__train_vocab_release(&seen);
    return st;
}
