/* test_top_k.c - top-k selection and softmax probabilities against a brute-force computation in the
 * test: order, ties (lower id first), k larger than V, NaN rows. */
#include <math.h>
#include <stdlib.h>

#include "test_util.h"

static void check_against_brute_force(const float *logits, uint32_t v, size_t k) {
    fwm_prediction out[64];
    size_t n = fwm_top_k(logits, v, k, out);
    CHECK_INT(n, k < v ? k : v);
    double max = -INFINITY, sum = 0;
    for (uint32_t i = 0; i < v; i++) max = logits[i] > max ? logits[i] : max;
    for (uint32_t i = 0; i < v; i++) sum += exp(logits[i] - max);
    int used[64] = {0};
    for (size_t j = 0; j < n; j++) {
        /* brute force: best unused index, ties to the lower id */
        int best = -1;
        for (uint32_t i = 0; i < v; i++)
            if (!used[i] && (best < 0 || logits[i] > logits[best])) best = (int)i;
        used[best] = 1;
        CHECK_INT(out[j].token, best);
        double p = exp(logits[best] - max) / sum;
        if (fabs(out[j].probability - p) > 1e-6) {
            fprintf(stderr, "rank %zu: probability %.9g, expected %.9g\n", j, out[j].probability, p);
            check_failures++;
        }
    }
}

int main(void) {
    float logits[40];
    uint64_t state = 12345;
    for (int trial = 0; trial < 200; trial++) {
        uint32_t v = 1 + (uint32_t)(trial % 40);
        for (uint32_t i = 0; i < v; i++) {
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            logits[i] = (float)((int)(state >> 59) - 16) * 0.5f; /* few distinct values: many ties */
        }
        check_against_brute_force(logits, v, 1 + (size_t)(trial % 7));
        check_against_brute_force(logits, v, 50);
    }
    /* NaN never ranks above a number; probabilities stay finite. */
    float with_nan[4] = {NAN, 1.0f, 3.0f, NAN};
    fwm_prediction out[4];
    CHECK_INT(fwm_top_k(with_nan, 4, 4, out), 4);
    CHECK_INT(out[0].token, 2);
    CHECK_INT(out[1].token, 1);
    CHECK(out[2].probability == 0.0f && out[3].probability == 0.0f);
    /* Degenerate arguments. */
    CHECK_INT(fwm_top_k(NULL, 4, 4, out), 0);
    CHECK_INT(fwm_top_k(with_nan, 0, 4, out), 0);
    CHECK_INT(fwm_top_k(with_nan, 4, 0, out), 0);
    CHECK_STR(fwm_status_str(FWM_ERR_UNKNOWN_WORD), "unknown word");
    CHECK_STR(fwm_status_str((fwm_status)999), "unknown status");
    return check_finish("test_top_k");
}
