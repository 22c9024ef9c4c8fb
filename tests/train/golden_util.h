/* golden_util.h - the trainer-against-golden-logits driver the per-architecture golden tests share
 * (test_lstm_golden.c, test_mnm_golden.c, test_gfw_golden.c, test_stm_golden.c): every model of the golden manifest
 * (tests/golden/data/manifest.txt) whose line has the test's `arch=` tag is read with
 * fwm__model_read, the test's function runs its manifest tokens through the trainer from the reset
 * state (one lane, in float and in double, in one window and in two with the state carried), and
 * every logit must agree with the independent reference's within the golden tolerance
 * (|got - want| <= 1e-5 * max(max_j |want_j|, 1e-3) per row): float within 1x the tolerance,
 * double within 0.1x (the reference's float64 values are stored rounded to float32). A row of NaNs
 * in the golden file (a position that predicts nothing: the STM's sentence mode) must be NaN in the
 * trainer's logits too.
 * Header only; include after check.h. */
#ifndef FWM_TESTS_TRAIN_GOLDEN_UTIL_H
#define FWM_TESTS_TRAIN_GOLDEN_UTIL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "model_io.h"

#define ATU_GOLDEN_MAX_TOKENS 256

/* The trainer's logits of tokens[0..n) in `windows` windows (one lane, from the reset state), in
 * both precisions, into out32 and out64 ([n][V]). */
typedef void (*atu_golden_logits_fn)(const fwm__loaded_model *m, const uint32_t *tokens, size_t n,
                                     int windows, double *out32, double *out64);

static inline float *atu_read_floats(const char *path, size_t n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    float *p = malloc(n * sizeof *p);
    size_t got = p ? fread(p, sizeof *p, n, f) : 0;
    fclose(f);
    if (got != n) {
        free(p);
        return NULL;
    }
    return p;
}

/* Worst |got - want| / tolerance over the rows of `logits` ([n][V], row i = token i); a NaN row of
 * want must be NaN in logits (else the result is infinite). */
static inline double atu_golden_worst(const double *logits, const float *want, size_t n, size_t V)
{
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(want[i * V])) {
            for (size_t j = 0; j < V; j++)
                if (!isnan(logits[i * V + j]))
                    worst = INFINITY;
            continue;
        }
        double scale = 1e-3;
        for (size_t j = 0; j < V; j++)
            if (fabs(want[i * V + j]) > scale)
                scale = fabs(want[i * V + j]);
        for (size_t j = 0; j < V; j++) {
            double r = fabs(logits[i * V + j] - want[i * V + j]) / (1e-5 * scale);
            if (!(r <= worst))
                worst = r;
        }
    }
    return worst;
}

/* Runs the check over the manifest in data_dir for `arch_tag` ("arch=gfw"); returns the number of
 * models checked. */
static inline int atu_golden_run(const char *data_dir, const char *arch_tag,
                                 atu_golden_logits_fn logits_of)
{
    char path[4096], line[8192];
    snprintf(path, sizeof path, "%s/manifest.txt", data_dir);
    FILE *manifest = fopen(path, "r");
    CHECK(manifest != NULL);
    if (!manifest)
        return 0;
    int checked = 0;
    while (fgets(line, sizeof line, manifest)) {
        if (line[0] == '#' || !strstr(line, arch_tag))
            continue;
        char model_name[256], expected_name[256];
        if (sscanf(line, "%255s %255s", model_name, expected_name) != 2)
            continue;
        const char *t = strstr(line, "tokens=");
        uint32_t tokens[ATU_GOLDEN_MAX_TOKENS];
        size_t n = 0;
        for (t = t ? t + 7 : ""; *t >= '0' && *t <= '9' && n < ATU_GOLDEN_MAX_TOKENS;) {
            char *end;
            tokens[n++] = (uint32_t)strtoul(t, &end, 10);
            t = *end == ',' ? end + 1 : end;
        }
        snprintf(path, sizeof path, "%s/%s", data_dir, model_name);
        fwm__loaded_model m;
        fwm_error err;
        fwm_status status = fwm__model_read(path, &m, &err);
        CHECK_INT(status, FWM_OK);
        if (status != FWM_OK) {
            fprintf(stderr, "%s: %s\n", model_name, err.message);
            continue;
        }
        size_t V = fwm__spec_vocab_size(&m.spec);
        snprintf(path, sizeof path, "%s/%s", data_dir, expected_name);
        float *want = atu_read_floats(path, n * V);
        CHECK(want != NULL);
        double *l32 = malloc(n * V * sizeof *l32), *l64 = malloc(n * V * sizeof *l64);
        if (want && l32 && l64 && n >= 2) {
            for (int windows = 1; windows <= 2; windows++) {
                logits_of(&m, tokens, n, windows, l32, l64);
                double w32 = atu_golden_worst(l32, want, n, V);
                double w64 = atu_golden_worst(l64, want, n, V);
                printf("%s (%zu tokens, %d window(s)): worst error %.3f (float), %.3f (double) of "
                       "the tolerance\n",
                       model_name, n, windows, w32, w64);
                CHECK_LE(w32, 1.0);
                CHECK_LE(w64, 0.1);
            }
            checked++;
        }
        free(want);
        free(l32);
        free(l64);
        fwm__loaded_model_release(&m);
    }
    fclose(manifest);
    return checked;
}

#endif
