/* test_mnm_golden.c - the trainer's MNM baseline against the independent numpy reference
 * (tests/reference/mnm_reference.py): every `arch=mnm` model of the golden manifest (one to three
 * memory layers and heads; F32, F16, BF16 and mixed tensors, widened to F32) is read with
 * fwm__model_read and its manifest tokens run through the trainer's forward pass from the reset
 * state (the initial memory), one lane, in float and in double (training mode, so the meta terms
 * are computed too and must not change the logits); every
 * logit must agree with the reference's within the golden tolerance
 * (|got - want| <= 1e-5 * max(max_j |want_j|, 1e-3) per row), in two windows with the state
 * carried between them as well as in one.
 * usage: test_mnm_golden GOLDEN_DATA_DIR */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "model_io.h"
#include "net.h"

#define MAX_TOKENS 256

static float *read_floats(const char *path, size_t n)
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

/* Worst |got - want| / tolerance over the rows of `logits` ([n][V], row i = token i). */
static double worst_ratio(const double *logits, const float *want, size_t n, size_t V)
{
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
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

/* The trainer's logits of tokens[0..n) in `windows` windows (one lane, from zero), both
 * precisions, into out32 and out64 ([n][V]). */
static void trainer_logits(const fwm__loaded_model *m, const uint32_t *tokens, size_t n,
                           int windows, double *out32, double *out64)
{
    const fwm_mnm_hparams *hp = &m->spec.mnm;
    size_t V = hp->vocab_size, per = (n + (size_t)windows - 1) / (size_t)windows;
    uint32_t y[MAX_TOKENS];
    for (size_t i = 0; i < n; i++) /* any target that is not <pad>: every row has a logit */
        y[i] = (hp->padding_token_id + 1) % hp->vocab_size;
    fwm__mnm_config config;
    memset(&config, 0, sizeof config);
    config.hp = *hp;
    config.lanes = 1;
    config.window = (int)per;
    config.loss_mode = FWM__LOSS_LM;
    config.meta_weight = 1;
    config.keep_logits = 1;
    fwm__mnm_tm_f32 *tf = NULL;
    fwm__mnm_tm_f64 *td = NULL;
    fwm_error err;
    CHECK_INT(fwm__mnm_tm_create_f32(&config, NULL, &tf, &err), FWM_OK);
    CHECK_INT(fwm__mnm_tm_create_f64(&config, NULL, &td, &err), FWM_OK);
    if (!tf || !td)
        goto done;
    memcpy(tf->params, m->params, m->layout.total * sizeof(float));
    for (size_t i = 0; i < m->layout.total; i++)
        td->params[i] = m->params[i];
    fwm__mnm_tm_reset_state_f32(tf);
    fwm__mnm_tm_reset_state_f64(td);
    for (size_t at = 0; at < n; at += per) {
        int len = (int)(n - at < per ? n - at : per);
        fwm__mnm_tm_forward_f32(tf, tokens + at, y + at, len);
        fwm__mnm_tm_forward_f64(td, tokens + at, y + at, len);
        CHECK_INT(tf->n_loss_rows, len);
        for (size_t k = 0; k < (size_t)len * V; k++) {
            out32[at * V + k] = tf->logits[k];
            out64[at * V + k] = td->logits[k];
        }
    }
done:
    fwm__mnm_tm_free_f32(tf);
    fwm__mnm_tm_free_f64(td);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_mnm_golden GOLDEN_DATA_DIR\n");
        return 2;
    }
    char path[4096], line[8192];
    snprintf(path, sizeof path, "%s/manifest.txt", argv[1]);
    FILE *manifest = fopen(path, "r");
    CHECK(manifest != NULL);
    if (!manifest)
        return check_finish("test_mnm_golden");
    int checked = 0;
    while (fgets(line, sizeof line, manifest)) {
        if (line[0] == '#' || !strstr(line, "arch=mnm"))
            continue;
        char model_name[256], expected_name[256];
        if (sscanf(line, "%255s %255s", model_name, expected_name) != 2)
            continue;
        const char *t = strstr(line, "tokens=");
        uint32_t tokens[MAX_TOKENS];
        size_t n = 0;
        for (t = t ? t + 7 : ""; *t >= '0' && *t <= '9' && n < MAX_TOKENS;) {
            char *end;
            tokens[n++] = (uint32_t)strtoul(t, &end, 10);
            t = *end == ',' ? end + 1 : end;
        }
        snprintf(path, sizeof path, "%s/%s", argv[1], model_name);
        fwm__loaded_model m;
        fwm_error err;
        fwm_status status = fwm__model_read(path, &m, &err);
        CHECK_INT(status, FWM_OK);
        if (status != FWM_OK)
            continue;
        CHECK_INT(m.spec.arch, FWM_ARCH_MNM);
        size_t V = m.spec.mnm.vocab_size;
        snprintf(path, sizeof path, "%s/%s", argv[1], expected_name);
        float *want = read_floats(path, n * V);
        CHECK(want != NULL);
        double *l32 = malloc(n * V * sizeof *l32), *l64 = malloc(n * V * sizeof *l64);
        if (want && l32 && l64 && n >= 2) {
            for (int windows = 1; windows <= 2; windows++) {
                trainer_logits(&m, tokens, n, windows, l32, l64);
                double w32 = worst_ratio(l32, want, n, V), w64 = worst_ratio(l64, want, n, V);
                printf("%s (Lm=%u, %u heads, %zu tokens, %d window(s)): worst error %.3f (float), "
                       "%.3f (double) of the tolerance\n",
                       model_name, m.spec.mnm.memory_layers, m.spec.mnm.head_count, n, windows,
                       w32, w64);
                CHECK_LE(w32, 1.0);
                CHECK_LE(w64, 0.1); /* the reference's float64 values rounded to float32 */
            }
            checked++;
        }
        free(want);
        free(l32);
        free(l64);
        fwm__loaded_model_release(&m);
    }
    fclose(manifest);
    printf("%d mnm models checked\n", checked);
    CHECK_GE(checked, 4);
    return check_finish("test_mnm_golden");
}
