/* catbabi_stream.c - catbAbI vocabulary, samples, shuffling and lanes (see catbabi_stream.h). */
#include "catbabi_stream.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "babi_reader.h"
#include "fwm_error.h"
#include "fwm_rng.h"

const char *const fwm__split_names[FWM__SPLIT_COUNT] = {"train", "valid", "test"};

static int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Append the corpus's stories to the split, mapping words to ids. */
static fwm_status add_corpus(fwm__catbabi_split *split, const fwm__babi_corpus *corpus,
                             fwm__train_vocab *vocab, const fwm__train_vocab *fixed, const char *path,
                             fwm_error *err)
{
    size_t n_words = split->n_words + corpus->n_tokens;
    size_t n_samples = split->n_samples + corpus->n_stories;
    uint32_t *words = realloc(split->words, (n_words ? n_words : 1) * sizeof *words);
    if (words)
        split->words = words;
    size_t *starts = realloc(split->starts, n_samples * sizeof *starts);
    if (starts)
        split->starts = starts;
    uint32_t *lengths = realloc(split->lengths, n_samples * sizeof *lengths);
    if (lengths)
        split->lengths = lengths;
    uint8_t *tasks = realloc(split->tasks, n_samples);
    if (tasks)
        split->tasks = tasks;
    if (!words || !starts || !lengths || !tasks)
        return fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    for (size_t s = 0; s < corpus->n_stories; s++) {
        const fwm__babi_story *story = &corpus->stories[s];
        split->starts[split->n_samples] = split->n_words;
        split->lengths[split->n_samples] = story->n_tokens;
        split->tasks[split->n_samples] = story->task;
        split->n_samples++;
        split->n_questions += story->n_questions;
        for (uint32_t i = 0; i < story->n_tokens; i++) {
            const char *word = fwm__babi_token(corpus, story->first_token + i);
            uint32_t id = fixed ? fwm__train_vocab_find(fixed, word) : fwm__train_vocab_add(vocab, word);
            if (id == FWM__TRAIN_VOCAB_NONE) {
                if (fixed)
                    return fwm__error(err, FWM_ERR_UNKNOWN_WORD,
                                      "%s: word '%s' is not in the model's vocabulary", path,
                                      word);
                return fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
            }
            split->words[split->n_words++] = id;
        }
    }
    return FWM_OK;
}

fwm_status fwm__catbabi_load(fwm__catbabi *out, const char *data_dir, const char *folder,
                             const fwm__train_vocab *fixed, fwm__message_fn message, void *user,
                             fwm_error *err)
{
    memset(out, 0, sizeof *out);
    fwm_status status = FWM_OK;
    fwm__babi_corpus corpus = {0};
    if (!fixed) {
        if (fwm__train_vocab_add(&out->vocab, "<pad>") != 0 || fwm__train_vocab_add(&out->vocab, "<eos>") != 1)
            return fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "vocabulary: out of memory");
    }
    const fwm__train_vocab *vocab = fixed ? fixed : &out->vocab;
    char path[4096], fallback[4096];
    for (int split = 0; split < FWM__SPLIT_COUNT; split++)
        for (int task = 1; task <= FWM__TASK_COUNT; task++) {
            snprintf(path, sizeof path, "%s/%s/qa%d_%s.txt", data_dir, folder, task,
                     fwm__split_names[split]);
            const char *use = path;
            if (!file_exists(path)) {
                size_t n = strlen(folder);
                int is_10k = n > 4 && strcmp(folder + n - 4, "-10k") == 0;
                snprintf(fallback, sizeof fallback, "%s/%.*s/qa%d_%s.txt", data_dir,
                         (int)(is_10k ? n - 4 : n), folder, task, fwm__split_names[split]);
                if (split != FWM__SPLIT_TRAIN || !is_10k || !file_exists(fallback)) {
                    status = fwm__error(err, FWM_ERR_IO,
                                        "missing bAbI file %s (expected the 20 tasks x "
                                        "train/valid/test of bAbI v1.2 under %s/%s; see "
                                        "scripts/fetch_babi.sh)",
                                        path, data_dir, folder);
                    goto fail;
                }
                if (message) {
                    char text[9000];
                    snprintf(text, sizeof text,
                             "%s is missing: using %s (the 1k training split of task %d) "
                             "instead",
                             path, fallback, task);
                    message(user, text);
                }
                use = fallback;
            }
            corpus.n_tokens = corpus.n_stories = corpus.text_size = 0;
            status = fwm__babi_read_file(&corpus, use, task, err);
            if (status != FWM_OK)
                goto fail;
            status = add_corpus(&out->splits[split], &corpus, &out->vocab, fixed, use, err);
            if (status != FWM_OK)
                goto fail;
        }
    out->pad_id = fwm__train_vocab_find(vocab, "<pad>");
    out->eos_id = fwm__train_vocab_find(vocab, "<eos>");
    out->qmark_id = fwm__train_vocab_find(vocab, "?");
    if (out->pad_id == FWM__TRAIN_VOCAB_NONE || out->eos_id == FWM__TRAIN_VOCAB_NONE ||
        out->qmark_id == FWM__TRAIN_VOCAB_NONE) {
        status = fwm__error(err, FWM_ERR_UNKNOWN_WORD,
                            "the vocabulary lacks one of \"<pad>\", \"<eos>\", \"?\"");
        goto fail;
    }
    fwm__babi_corpus_release(&corpus);
    return FWM_OK;
fail:
    fwm__babi_corpus_release(&corpus);
    fwm__catbabi_release(out);
    return status;
}

void fwm__catbabi_split_release(fwm__catbabi_split *split)
{
    free(split->words);
    free(split->starts);
    free(split->lengths);
    free(split->tasks);
    free(split->targets);
    memset(split, 0, sizeof *split);
}

void fwm__catbabi_release(fwm__catbabi *data)
{
    if (!data)
        return;
    fwm__train_vocab_release(&data->vocab);
    for (int s = 0; s < FWM__SPLIT_COUNT; s++)
        fwm__catbabi_split_release(&data->splits[s]);
}

void fwm__catbabi_split_keep_tasks(fwm__catbabi_split *split, const uint8_t *keep,
                                   uint32_t qmark_id)
{
    size_t kept = 0, questions = 0, words = 0;
    for (size_t s = 0; s < split->n_samples; s++) { /* samples are stored in order: moved down */
        if (split->tasks[s] > FWM__TASK_COUNT || !keep[split->tasks[s]])
            continue;
        uint32_t len = split->lengths[s];
        memmove(split->words + words, split->words + split->starts[s], len * sizeof(uint32_t));
        if (split->targets)
            memmove(split->targets + words, split->targets + split->starts[s],
                    len * sizeof(uint32_t));
        split->starts[kept] = words;
        split->lengths[kept] = len;
        split->tasks[kept] = split->tasks[s];
        for (uint32_t i = 0; i < len; i++)
            questions += split->words[words + i] == qmark_id;
        words += len;
        kept++;
    }
    split->n_samples = kept;
    split->n_words = words;
    split->n_questions = questions;
}

void fwm__shuffle_order(uint32_t *order, size_t n, uint64_t seed, uint64_t stream)
{
    fwm__rng rng;
    fwm__rng_seed(&rng, seed, stream);
    for (size_t i = 0; i < n; i++)
        order[i] = (uint32_t)i;
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)fwm__rng_below(&rng, i);
        uint32_t t = order[i - 1];
        order[i - 1] = order[j];
        order[j] = t;
    }
}

fwm_status fwm__catbabi_stream_build(fwm__catbabi_stream *out, const fwm__catbabi_split *split,
                                     const uint32_t *order, uint32_t eos_id, int lanes,
                                     fwm_error *err)
{
    memset(out, 0, sizeof *out);
    if (lanes < 1 || split->n_samples == 0)
        return fwm__error(err, FWM_ERR_INVALID_ARGUMENT,
                          "stream: need lanes >= 1 (got %d) and samples (got %zu)", lanes,
                          split->n_samples);
    int seq = split->targets != NULL; /* no <eos> markers; the targets as given */
    size_t n = split->n_words + (seq ? 0 : split->n_samples);
    out->tokens = malloc((n + 1) * sizeof *out->tokens);
    out->tasks = malloc(n ? n : 1);
    if (seq)
        out->targets = malloc((n ? n : 1) * sizeof *out->targets);
    if (!out->tokens || !out->tasks || (seq && !out->targets)) {
        fwm__catbabi_stream_release(out);
        return fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "stream of %zu tokens: out of memory", n);
    }
    size_t p = 0;
    for (size_t k = 0; k < split->n_samples; k++) {
        size_t s = order ? order[k] : k;
        if (seq) {
            memcpy(out->targets + p, split->targets + split->starts[s],
                   split->lengths[s] * sizeof(uint32_t));
        } else {
            out->tasks[p] = split->tasks[s];
            out->tokens[p++] = eos_id;
        }
        memcpy(out->tokens + p, split->words + split->starts[s],
               split->lengths[s] * sizeof(uint32_t));
        memset(out->tasks + p, split->tasks[s], split->lengths[s]);
        p += split->lengths[s];
    }
    out->tokens[p] = eos_id;
    out->n = n;
    out->lanes = lanes;
    out->lane_length = (n + (size_t)lanes - 1) / (size_t)lanes;
    return FWM_OK;
}

void fwm__catbabi_stream_release(fwm__catbabi_stream *stream)
{
    if (!stream)
        return;
    free(stream->tokens);
    free(stream->tasks);
    free(stream->targets);
    free(stream->sample_starts);
    memset(stream, 0, sizeof *stream);
}

size_t fwm__catbabi_window_count(const fwm__catbabi_stream *stream, int window)
{
    return (stream->lane_length + (size_t)window - 1) / (size_t)window;
}

void fwm__catbabi_window(const fwm__catbabi_stream *stream, size_t start, int len,
                         uint32_t pad_id, uint32_t *x, uint32_t *y, uint8_t *tasks)
{
    for (int b = 0; b < stream->lanes; b++)
        for (int t = 0; t < len; t++) {
            size_t lane_pos = start + (size_t)t;
            size_t p = (size_t)b * stream->lane_length + lane_pos;
            size_t i = (size_t)b * (size_t)len + (size_t)t;
            int inside = lane_pos < stream->lane_length && p < stream->n;
            x[i] = inside ? stream->tokens[p] : pad_id;
            y[i] = !inside ? pad_id : stream->targets ? stream->targets[p] : stream->tokens[p + 1];
            if (tasks)
                tasks[i] = inside ? stream->tasks[p] : 0;
        }
}
