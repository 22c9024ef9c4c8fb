/* top_k.c - the k most probable next words of a row of logits, with softmax probabilities. */
#include <math.h>

#include "fwm/fwm.h"

/* NaN sorts below everything so a damaged row still yields an order. */
static int ranks_above(float a, uint32_t a_id, float b, uint32_t b_id) {
    if (isnan(a)) return 0;
    if (isnan(b)) return 1;
    return a > b || (a == b && a_id < b_id);
}

size_t fwm_top_k(const float *logits, uint32_t vocab_size, size_t k, fwm_prediction *out) {
    if (!logits || !out || vocab_size == 0 || k == 0) return 0;
    if (k > vocab_size) k = vocab_size;

    float max = -INFINITY;
    for (uint32_t i = 0; i < vocab_size; i++)
        if (logits[i] > max) max = logits[i];
    double sum = 0.0;
    for (uint32_t i = 0; i < vocab_size; i++)
        if (!isnan(logits[i])) sum += exp((double)logits[i] - max);

    /* insertion into the sorted prefix out[0..kept) */
    size_t kept = 0;
    for (uint32_t i = 0; i < vocab_size; i++) {
        if (kept == k && !ranks_above(logits[i], i, logits[out[k - 1].token], out[k - 1].token))
            continue;
        size_t pos = kept < k ? kept++ : k - 1;
        while (pos > 0 && ranks_above(logits[i], i, logits[out[pos - 1].token], out[pos - 1].token)) {
            out[pos] = out[pos - 1];
            pos--;
        }
        out[pos].token = i;
    }
    for (size_t j = 0; j < kept; j++) {
        float l = logits[out[j].token];
        out[j].probability =
            (isnan(l) || sum <= 0.0 || !isfinite(max)) ? 0.0f : (float)(exp((double)l - max) / sum);
    }
    return kept;
}
