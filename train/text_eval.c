/* text_eval.c - a text model's perplexity on a file through the runtime (see text_eval.h). */
#include "text_eval.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fast_math.h"
#include "fwm_error.h"
#include "whole_file.h"

double fwm__temperature_at(int k)
{
    return 0.80 + 0.01 * k;
}

double fwm__text_perplexity(double nll, size_t tokens)
{
    return tokens ? exp(nll / (double)tokens) : 0.0;
}

/* -log p(id) at the grid's temperatures k in [from, to): logsumexp of logits / T, with the
 * exponentials vectorised (fast_math.h, within 2 ulp) and summed in double per block of 8. */
static void grid_nll(const float *logits, size_t V, uint32_t id, int from, int to, double *nll_at)
{
    float max = logits[0];
    for (size_t j = 1; j < V; j++)
        if (logits[j] > max)
            max = logits[j];
    for (int k = from; k < to; k++) {
        float inv = (float)(1.0 / fwm__temperature_at(k));
        double sum = 0;
        size_t j = 0;
        for (; j + 8 <= V; j += 8) {
            fwm__v8f x;
            memcpy(&x, logits + j, sizeof x);
            fwm__v8f e = fwm__v8_exp((x - max) * inv);
            float lanes[8];
            memcpy(lanes, &e, sizeof lanes);
            double block = 0;
            for (int l = 0; l < 8; l++)
                block += lanes[l];
            sum += block;
        }
        for (; j < V; j++)
            sum += exp(((double)logits[j] - max) * inv);
        nll_at[k] += log(sum) - ((double)logits[id] - max) * inv;
    }
}

fwm_status fwm__text_score_file(const fwm_model *model, const char *path, int grid_from,
                                int grid_to, size_t max_tokens, fwm__text_score *out, fwm_error *err)
{
    memset(out, 0, sizeof *out);
    fwm_model_info info;
    fwm_model_get_info(model, &info);
    if (strcmp(info.tokenizer, "text") != 0)
        return fwm__error(err, FWM_ERR_INVALID_ARGUMENT,
                          "--task text needs a text model (tokenizer \"text\"); this one's "
                          "tokenizer is \"%s\"",
                          info.tokenizer);
    if (info.prime_token_count == 0)
        return fwm__error(err, FWM_ERR_INVALID_ARGUMENT,
                          "the model has no prime tokens: nothing scores the first word");
    char *text;
    size_t length;
    fwm_status st = fwm__read_whole_file(path, &text, &length, err);
    if (st != FWM_OK)
        return st;
    size_t n = 0, n_unknown = 0;
    uint32_t *ids = NULL;
    fwm_error local;
    st = fwm_tokenize_spans(model, text, length, NULL, 0, &n, NULL, 0, &n_unknown, &local);
    if (st == FWM_ERR_BUFFER_TOO_SMALL) {
        ids = malloc((n ? n : 1) * sizeof *ids);
        st = ids ? fwm_tokenize_spans(model, text, length, ids, n, &n, NULL, 0, &n_unknown, &local)
                 : FWM_ERR_OUT_OF_MEMORY;
    }
    free(text);
    if (st != FWM_OK) {
        free(ids);
        return fwm__error(err, st, "%s: %s", path,
                          st == FWM_ERR_OUT_OF_MEMORY ? "out of memory" : local.message);
    }
    if (n == 0) {
        free(ids);
        return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "%s has no words", path);
    }
    if (max_tokens && n > max_tokens)
        n = max_tokens;
    float *logits = malloc((size_t)info.vocab_size * sizeof *logits);
    fwm_session *session = NULL;
    st = logits ? fwm_session_create(model, &session, err)
                : fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "out of memory for %u scores",
                             info.vocab_size);
    if (st != FWM_OK) {
        free(ids);
        free(logits);
        return st;
    }
    /* the primed start, and the logits it gives the first word: the prime tokens stepped from
     * the reset state (the same bits as fwm_session_prime, docs/ARCHITECTURE.md) */
    fwm_session_reset(session);
    uint32_t last_prime = info.prime_tokens[info.prime_token_count - 1];
    st = fwm_session_step_sequence(session, info.prime_tokens, info.prime_token_count - 1, NULL,
                                   err);
    if (st == FWM_OK)
        st = fwm_session_step(session, last_prime, logits, err);
    for (size_t i = 0; i < n && st == FWM_OK; i++) {
        double lp = fwm_logprob(logits, info.vocab_size, ids[i], 1.0);
        out->nll -= lp;
        if (grid_from < grid_to)
            grid_nll(logits, info.vocab_size, ids[i], grid_from, grid_to, out->nll_at);
        if (i + 1 < n)
            st = fwm_session_step(session, ids[i], logits, err);
    }
    for (size_t i = 0; i < n; i++)
        out->unknown += info.unknown_token_id != FWM_NO_TOKEN && ids[i] == info.unknown_token_id;
    out->tokens = n;
    fwm_session_free(session);
    free(logits);
    free(ids);
    return st;
}
