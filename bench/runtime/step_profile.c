/* step_profile.c - step-profile: a small fixed workload of FWM steps for instruction-count profiles
 * (valgrind --tool=callgrind) and low-noise timing (the best of many short rounds).
 *
 * Usage: step-profile single|quiet|batch|fpass|mv [batch_size] [steps] [rounds]
 *   single: fwm_session_step with logits; quiet: without logits; batch: fwm_batch_step with logits
 *   of batch_size sessions (default 32); fpass: the pass over F alone (pending write, k2 and three
 *   reads) on batch_size distinct F in turn; mv: the W_hh product (1024 x 256) of batch_size
 *   vectors. Prints the best and the median round in us per token.
 * Paper sizes (V=180, E=H=256, S=R=T=32, N_r=3), random weights (seed 2021), built in memory.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fwm/fwm.h"
#include "kernels.h"
#include "model_internal.h"
#include "bench_timing.h"
#include "runtime_test_util.h"


/* The pass over F alone on `nf` distinct F, like the step's (pending write with s < 1, 4 vectors). */
static int fpass(size_t nf, size_t steps, int rounds, double *t) {
    const size_t S = 32, R = 32, T = 32, n = S * R * T;
    float *Fs = calloc(nf * n, sizeof(float)), *vec = calloc(4 * R, sizeof(float));
    float *out = calloc(4 * S * T, sizeof(float)), *k = calloc(S + R + T, sizeof(float));
    if (!Fs || !vec || !out || !k) return 1;
    for (size_t i = 0; i < nf * n; i++) Fs[i] = 1e-3f * (float)(i % 11);
    for (size_t i = 0; i < 4 * R; i++) vec[i] = 0.1f;
    for (size_t i = 0; i < S + R + T; i++) k[i] = 0.01f;
    const float *pv[4] = {vec, vec + R, vec + 2 * R, vec + 3 * R};
    float *po[4] = {out, out + S * T, out + 2 * S * T, out + 3 * S * T};
    fwm__fw_pending pending = {k, k + S, k + S + R, 0.999f};
    volatile float sink = 0;
    for (int r = 0; r < rounds; r++) {
        double t0 = bench_now();
        for (size_t s = 0; s < steps; s++)
            for (size_t f = 0; f < nf; f++)
                sink += fwm__fw_contract(Fs + f * n, S, R, T, &pending, pv, 4, po);
        t[r] = (bench_now() - t0) / (double)(steps * nf) * 1e6;
    }
    free(Fs), free(vec), free(out), free(k);
    return 0;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "single";
    size_t batch = argc > 2 ? (size_t)atol(argv[2]) : 32;
    size_t steps = argc > 3 ? (size_t)atol(argv[3]) : 200;
    int rounds = argc > 4 ? atoi(argv[4]) : 1;
    bool is_batch = strcmp(mode, "batch") == 0 || strcmp(mode, "fpass") == 0 || strcmp(mode, "mv") == 0;
    bool logits_on = strcmp(mode, "quiet") != 0;
    if (!is_batch) batch = 1;
    if (batch < 1 || steps < 1 || rounds < 1 || rounds > 100000) {
        fprintf(stderr, "step-profile: bad arguments\n");
        return 2;
    }
    if (strcmp(mode, "fpass") == 0) {
        double *tf = malloc((size_t)rounds * sizeof *tf);
        if (!tf || fpass(batch, steps, rounds, tf)) return 1;
        bench_sort(tf, (size_t)rounds);
        printf("step-profile fpass over %zu F: best %.3f us/pass, median %.3f\n", batch, tf[0], tf[rounds / 2]);
        free(tf);
        return 0;
    }
    fwm_hparams hp = rt_hparams(180, 256, 256, 32, 32, 32, 3, false, FWM_READ_ALWAYS, 0);
    struct fwm_model *model = rt_model_create(&hp, 2021, true);
    if (!model) return 1;
    if (strcmp(mode, "mv") == 0) {
        size_t H = hp.hidden_size, G = 4 * H;
        float *x = calloc(batch * H, sizeof(float)), *y = calloc(batch * G, sizeof(float));
        const float **px = calloc(batch, sizeof *px), **pb = calloc(batch, sizeof *pb);
        float **py = calloc(batch, sizeof *py);
        double *tm = malloc((size_t)rounds * sizeof *tm);
        if (!x || !y || !px || !pb || !py || !tm) return 1;
        for (size_t i = 0; i < batch; i++) {
            for (size_t k = 0; k < H; k++) x[i * H + k] = 0.01f * (float)((k + i) % 7);
            px[i] = x + i * H, pb[i] = model->w.lstm_bias, py[i] = y + i * G;
        }
        for (int r = 0; r < rounds; r++) {
            double t0 = bench_now();
            for (size_t s = 0; s < steps; s++)
                fwm__matvec_batch(model->w.lstm_weight_hh, G, H, batch, px, pb, py);
            tm[r] = (bench_now() - t0) / (double)(steps * batch) * 1e6;
        }
        bench_sort(tm, (size_t)rounds);
        printf("step-profile mv W_hh x %zu: best %.3f us/vector, median %.3f (checksum %.9g)\n", batch,
               tm[0], tm[rounds / 2], (double)y[G - 1]);
        free(x), free(y), free(px), free(pb), free(py), free(tm);
        rt_model_free(model);
        return 0;
    }
    fwm_session **sessions = calloc(batch, sizeof *sessions);
    uint32_t *tokens = malloc(steps * batch * sizeof *tokens);
    float *logits = calloc(batch * hp.vocab_size, sizeof(float));
    double *t = malloc((size_t)rounds * sizeof *t);
    fwm_error err;
    for (size_t i = 0; i < batch; i++)
        if (fwm_session_create(model, &sessions[i], &err) != FWM_OK) return 1;
    rt_random_tokens(tokens, steps * batch, hp.vocab_size, 7);
    for (int r = 0; r < rounds; r++) {
        double t0 = bench_now();
        for (size_t s = 0; s < steps; s++) {
            fwm_status st = is_batch
                                ? fwm_batch_step(sessions, tokens + s * batch, batch, logits, &err)
                                : fwm_session_step(sessions[0], tokens[s], logits_on ? logits : NULL, &err);
            if (st != FWM_OK) {
                fprintf(stderr, "step-profile: %s\n", err.message);
                return 1;
            }
        }
        t[r] = (bench_now() - t0) / (double)(steps * batch) * 1e6;
    }
    bench_sort(t, (size_t)rounds);
    double checksum = 0;
    for (size_t i = 0; i < hp.vocab_size; i++) checksum += logits[i];
    printf("step-profile %s batch %zu: best %.3f us/token, median %.3f (%d rounds of %zu steps) "
           "checksum %.9g\n",
           mode, batch, t[0], t[rounds / 2], rounds, steps, checksum);
    for (size_t i = 0; i < batch; i++) fwm_session_free(sessions[i]);
    free(sessions), free(tokens), free(logits), free(t);
    rt_model_free(model);
    return 0;
}
