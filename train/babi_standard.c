/* babi_standard.c - the standard bAbI protocol's samples and aligned lanes (see babi_standard.h). */
#include "babi_standard.h"

#include <stdlib.h>
#include <string.h>

#include "fwm_error.h"

fwm_status fwm__catbabi_standard_split(fwm__catbabi_split *out, const fwm__catbabi_split *stories,
                                       uint32_t period_id, uint32_t qmark_id, fwm_error *err)
{
    memset(out, 0, sizeof *out);
    size_t n_samples = 0, n_words = 0;
    /* first pass: sizes; second: copies */
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) {
            out->words = malloc((n_words ? n_words : 1) * sizeof *out->words);
            out->starts = malloc((n_samples ? n_samples : 1) * sizeof *out->starts);
            out->lengths = malloc((n_samples ? n_samples : 1) * sizeof *out->lengths);
            out->tasks = malloc(n_samples ? n_samples : 1);
            if (!out->words || !out->starts || !out->lengths || !out->tasks) {
                fwm__catbabi_split_release(out);
                return fwm__error(err, FWM_ERR_OUT_OF_MEMORY,
                                  "standard protocol: out of memory for %zu samples of %zu words",
                                  n_samples, n_words);
            }
        }
        size_t samples = 0, words = 0;
        for (size_t s = 0; s < stories->n_samples; s++) {
            const uint32_t *w = stories->words + stories->starts[s];
            uint32_t len = stories->lengths[s];
            /* kept: the words of the statements so far (the story's words before `segment`
             * without its questions and answers); segment: where the current sentence starts */
            size_t kept = 0, segment = 0;
            for (uint32_t i = 0; i < len; i++) {
                if (w[i] == period_id) {
                    kept += i + 1 - segment;
                    segment = i + 1;
                } else if (w[i] == qmark_id) {
                    if (i + 1 >= len) {
                        fwm__catbabi_split_release(out);
                        return fwm__error(err, FWM_ERR_FORMAT,
                                          "standard protocol: sample %zu (task %d) ends with a "
                                          "\"?\" without an answer",
                                          s, stories->tasks[s]);
                    }
                    size_t question = i + 2 - segment; /* the question, "?" and the answer */
                    if (pass == 1) {
                        out->starts[samples] = words;
                        out->lengths[samples] = (uint32_t)(kept + question);
                        out->tasks[samples] = stories->tasks[s];
                        /* the statements: every period-ended segment before `segment` */
                        size_t at = words, from = 0;
                        for (uint32_t j = 0; j < segment; j++) {
                            if (w[j] == qmark_id) { /* skip a question and its answer */
                                from = j + 2;
                                j++;
                            } else if (w[j] == period_id) {
                                memcpy(out->words + at, w + from, (j + 1 - from) * sizeof *w);
                                at += j + 1 - from;
                                from = j + 1;
                            }
                        }
                        memcpy(out->words + at, w + segment, question * sizeof *w);
                    }
                    samples++;
                    words += kept + question;
                    segment = i + 2;
                    i++;
                }
            }
        }
        n_samples = samples;
        n_words = words;
    }
    out->n_samples = out->n_questions = n_samples;
    out->n_words = n_words;
    return FWM_OK;
}

fwm_status fwm__catbabi_to_standard(fwm__catbabi *data, const fwm__train_vocab *vocab,
                                    fwm_error *err)
{
    uint32_t period = fwm__train_vocab_find(vocab, ".");
    if (period == FWM__TRAIN_VOCAB_NONE)
        return fwm__error(err, FWM_ERR_UNKNOWN_WORD,
                          "standard protocol: the vocabulary has no \".\" to end statements");
    for (int s = 0; s < FWM__SPLIT_COUNT; s++) {
        fwm__catbabi_split standard;
        fwm_status status =
            fwm__catbabi_standard_split(&standard, &data->splits[s], period, data->qmark_id, err);
        if (status != FWM_OK)
            return status;
        fwm__catbabi_split_release(&data->splits[s]);
        data->splits[s] = standard;
    }
    return FWM_OK;
}

fwm_status fwm__catbabi_stream_build_aligned(fwm__catbabi_stream *out,
                                             const fwm__catbabi_split *split,
                                             const uint32_t *order, uint32_t eos_id,
                                             uint32_t pad_id, int lanes, int window,
                                             fwm_error *err)
{
    memset(out, 0, sizeof *out);
    if (lanes < 1 || window < 1 || split->n_samples == 0 || split->targets)
        return fwm__error(err, FWM_ERR_INVALID_ARGUMENT,
                          "aligned stream: need lanes >= 1 (got %d), window >= 1 (got %d) and "
                          "samples of a catbAbI split (got %zu)",
                          lanes, window, split->n_samples);
    size_t W = (size_t)window, B = (size_t)lanes, n_samples = split->n_samples;
    size_t *used = calloc(B, sizeof *used);           /* windows per lane so far */
    size_t *place = malloc(n_samples * sizeof *place); /* first window of each sample */
    uint32_t *lane_of = malloc(n_samples * sizeof *lane_of);
    if (!used || !place || !lane_of) {
        free(used);
        free(place);
        free(lane_of);
        return fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "aligned stream: out of memory");
    }
    for (size_t k = 0; k < n_samples; k++) {
        size_t s = order ? order[k] : k;
        size_t best = 0;
        for (size_t b = 1; b < B; b++)
            if (used[b] < used[best])
                best = b;
        lane_of[k] = (uint32_t)best;
        place[k] = used[best];
        used[best] += ((size_t)split->lengths[s] + 1 + W - 1) / W;
    }
    size_t longest = 0;
    for (size_t b = 0; b < B; b++)
        if (used[b] > longest)
            longest = used[b];
    size_t L = longest * W, n = B * L;
    out->tokens = malloc((n + 1) * sizeof *out->tokens);
    out->targets = malloc(n * sizeof *out->targets);
    out->tasks = calloc(n, 1);
    out->sample_starts = calloc(n, 1);
    if (!out->tokens || !out->targets || !out->tasks || !out->sample_starts) {
        free(used);
        free(place);
        free(lane_of);
        fwm__catbabi_stream_release(out);
        return fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "aligned stream of %zu positions: out of "
                          "memory", n);
    }
    for (size_t p = 0; p <= n; p++)
        out->tokens[p] = pad_id;
    for (size_t p = 0; p < n; p++)
        out->targets[p] = pad_id;
    for (size_t k = 0; k < n_samples; k++) {
        size_t s = order ? order[k] : k;
        size_t p = (size_t)lane_of[k] * L + place[k] * W, len = split->lengths[s];
        const uint32_t *w = split->words + split->starts[s];
        out->sample_starts[p] = 1;
        out->tokens[p] = eos_id;
        memcpy(out->tokens + p + 1, w, len * sizeof *w);
        memcpy(out->targets + p, w, len * sizeof *w);
        out->targets[p + len] = eos_id;
        memset(out->tasks + p, split->tasks[s], len + 1);
    }
    free(used);
    free(place);
    free(lane_of);
    out->n = n;
    out->lanes = lanes;
    out->lane_length = L;
    return FWM_OK;
}

void fwm__catbabi_sample_starts(const fwm__catbabi_stream *stream, size_t start, uint8_t *flags)
{
    for (int b = 0; b < stream->lanes; b++) {
        size_t p = (size_t)b * stream->lane_length + start;
        flags[b] = stream->sample_starts && start < stream->lane_length && p < stream->n
                       ? stream->sample_starts[p]
                       : 0;
    }
}
