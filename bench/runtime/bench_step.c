/* bench_step.c - bench-step: how fast the FWM step runs on this machine.
 *
 * Prints the median over several repetitions of: microseconds per single-session step (with and
 * without logits), and tokens per second for batched steps of 1, 8, 64 and 256 sessions on one
 * thread and on two (each thread steps its half of the batch with fwm_batch_step). The model has the
 * paper's sizes (V=180, E=H=256, S=R=T=32, N_r=3) with random weights from a fixed seed, built in
 * memory, or is loaded from the file named on the command line (of any architecture; the parts
 * are the FWM's; the torch comparison is made for FWM and LSTM models). Where /usr/bin/python3 has
 * torch, it also runs torch_step.py (the same step in PyTorch on the CPU) and prints the ratios,
 * and the machine's float32 matrix-product rate (torch.mm) with the batched step's FLOP bound: the
 * tokens/s that rate allows for the step's multiply-adds, beside what fwm reaches.
 * A benchmark prints figures; it never fails on time.
 *
 * With --bf16 FILE (the same model converted by fwm-convert --weights bf16) it also measures that
 * model's single step and batch 64 and prints them beside the first model's and torch's.
 *
 * Usage: bench-step [--quick] [--bf16 model-bf16.gguf] [model.gguf]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fwm/fwm.h"
#include "bf16_kernels.h"
#include "kernels.h"
#include "fwm_model_shape.h"
#include "model_internal.h"
#include "bench_timing.h"
#include "runtime_test_util.h"

#ifndef FWM_TORCH_STEP_SCRIPT
#define FWM_TORCH_STEP_SCRIPT "bench/runtime/torch_step.py"
#endif

static int repetitions = 11;
static double target_seconds = 0.15; /* per repetition */

/* A figure over the repetitions: the median, and the best repetition (what an unloaded machine
 * gives; on a shared machine the median also counts other processes' time slices). */
typedef struct figure {
    double median, best;
} figure;

static figure summarize(double *v, int n, bool higher_is_better) {
    figure f;
    f.median = bench_median(v, (size_t)n); /* sorts v */
    f.best = higher_is_better ? v[n - 1] : v[0];
    return f;
}

static void die(const char *what, fwm_status status, const fwm_error *err) {
    fprintf(stderr, "bench-step: %s: %s (%s)\n", what, fwm_status_str(status), err ? err->message : "");
    exit(1);
}

/* ---- one group of sessions stepped by one thread ---------------------------------------------- */

typedef struct lane {
    fwm_session **sessions;
    size_t count;
    uint32_t *tokens; /* [steps][count] */
    float *logits;    /* [count][V] */
    size_t steps;
    double seconds;
} lane;

static void *run_lane(void *arg) {
    lane *l = arg;
    fwm_error err;
    double t0 = bench_now();
    for (size_t s = 0; s < l->steps; s++) {
        fwm_status st = fwm_batch_step(l->sessions, l->tokens + s * l->count, l->count, l->logits, &err);
        if (st != FWM_OK) die("fwm_batch_step", st, &err);
    }
    l->seconds = bench_now() - t0;
    return NULL;
}

/* tokens/s for `batch` sessions split over `threads` threads. */
static figure batched_rate(const fwm_model *model, size_t batch, int threads) {
    fwm_model_info info;
    info.vocab_size = ((const struct fwm_model *)model)->hp.vocab_size;
    size_t V = info.vocab_size;
    fwm_session **sessions = calloc(batch, sizeof *sessions);
    fwm_error err;
    for (size_t i = 0; i < batch; i++) {
        fwm_status st = fwm_session_create(model, &sessions[i], &err);
        if (st != FWM_OK) die("fwm_session_create", st, &err);
    }
    /* steps per repetition so one repetition takes about target_seconds (estimate 40 us/token) */
    size_t steps = (size_t)(target_seconds / (40e-6 * (double)batch / threads));
    if (steps < 8) steps = 8;
    lane lanes[2];
    size_t start = 0;
    for (int t = 0; t < threads; t++) {
        size_t n = batch / threads + ((size_t)t < batch % threads);
        lanes[t].sessions = sessions + start;
        lanes[t].count = n;
        lanes[t].steps = steps;
        lanes[t].tokens = malloc(steps * n * sizeof(uint32_t));
        lanes[t].logits = malloc(n * V * sizeof(float));
        rt_random_tokens(lanes[t].tokens, steps * n, (uint32_t)V, 100 + (uint64_t)t);
        start += n;
    }
    double rates[16];
    for (int r = -1; r < repetitions; r++) { /* r = -1: warm-up */
        pthread_t tid[2];
        double t0 = bench_now();
        for (int t = 0; t < threads; t++) pthread_create(&tid[t], NULL, run_lane, &lanes[t]);
        for (int t = 0; t < threads; t++) pthread_join(tid[t], NULL);
        double wall = bench_now() - t0;
        if (r >= 0) rates[r] = (double)batch * (double)steps / wall;
    }
    for (int t = 0; t < threads; t++) {
        free(lanes[t].tokens);
        free(lanes[t].logits);
    }
    for (size_t i = 0; i < batch; i++) fwm_session_free(sessions[i]);
    free(sessions);
    return summarize(rates, repetitions, true);
}

/* microseconds per fwm_session_step on one session. */
static figure single_step_us(const fwm_model *model, bool with_logits) {
    size_t V = ((const struct fwm_model *)model)->hp.vocab_size;
    fwm_session *s = NULL;
    fwm_error err;
    fwm_status st = fwm_session_create(model, &s, &err);
    if (st != FWM_OK) die("fwm_session_create", st, &err);
    size_t steps = (size_t)(target_seconds / 30e-6);
    uint32_t *tokens = malloc(steps * sizeof *tokens);
    float *logits = malloc(V * sizeof(float));
    rt_random_tokens(tokens, steps, (uint32_t)V, 5);
    double us[16];
    for (int r = -1; r < repetitions; r++) {
        double t0 = bench_now();
        for (size_t i = 0; i < steps; i++) {
            st = fwm_session_step(s, tokens[i], with_logits ? logits : NULL, &err);
            if (st != FWM_OK) die("fwm_session_step", st, &err);
        }
        double t = bench_now() - t0;
        if (r >= 0) us[r] = t / (double)steps * 1e6;
    }
    free(tokens);
    free(logits);
    fwm_session_free(s);
    return summarize(us, repetitions, false);
}

/* ---- the step's parts on their own (best of several runs: what each costs without contention) -- */

/* Best time of `calls` back-to-back calls of one kernel configuration, over a few rounds. */
#define TIME_PART(result, calls, code)                                   \
    do {                                                                 \
        double best_ = 1e30;                                             \
        for (int round_ = 0; round_ < 9; round_++) {                     \
            double t0_ = bench_now();                                          \
            for (int call_ = 0; call_ < (calls); call_++) { code; }      \
            double t_ = (bench_now() - t0_) / (calls);                         \
            if (t_ < best_) best_ = t_;                                  \
        }                                                                \
        (result) = best_;                                                \
    } while (0)

/* Per-token microseconds of each weight product at 1 and 32 vectors, and of the pass over F. */
static void print_parts(const struct fwm_model *m) {
    const fwm_hparams *hp = &m->hp;
    size_t H = hp->hidden_size, S = hp->memory_s, R = hp->memory_r, T = hp->memory_t, V = hp->vocab_size;
    enum { N = 32 };
    size_t in_max = H > T ? H : T, out_max = 4 * H > V ? 4 * H : V;
    float *x = calloc(N * in_max, sizeof(float)), *y = calloc(N * out_max, sizeof(float));
    const float *px[N], *pb[N];
    float *py[N];
    for (int i = 0; i < N; i++) {
        for (size_t k = 0; k < in_max; k++) x[i * in_max + k] = 0.01f * (float)((k + i) % 7);
        px[i] = x + i * in_max;
        py[i] = y + i * out_max;
    }
    struct {
        const char *name;
        const float *W, *b;
        size_t rows, cols;
    } mats[] = {
        {"W_hh h (LSTM)", m->w.lstm_weight_hh, m->input_gates ? m->input_gates : m->w.lstm_bias, 4 * H, H},
        {"W_write h", m->w.write_weight, m->w.write_bias, S + R + T + 1, H},
        {"W_read h", m->w.read_weight, m->w.read_bias, S + hp->read_count * R, H},
        {"W_o q", m->w.out_weight, m->w.out_bias, H, T},
        {"W_s y (logits)", m->w.output_weight, NULL, V, H},
    };
    printf("parts (best of 9 rounds, us per token):\n");
    for (size_t k = 0; k < sizeof mats / sizeof mats[0]; k++) {
        for (int i = 0; i < N; i++) pb[i] = mats[k].b;
        double one, many;
        TIME_PART(one, 200, fwm__matvec_batch(mats[k].W, mats[k].rows, mats[k].cols, 1, px, mats[k].b ? pb : NULL, py));
        TIME_PART(many, 10, fwm__matvec_batch(mats[k].W, mats[k].rows, mats[k].cols, N, px, mats[k].b ? pb : NULL, py));
        printf("  %-16s %4zux%-4zu  1 vector %7.2f   %d vectors %7.2f\n", mats[k].name, mats[k].rows,
               mats[k].cols, one * 1e6, N, many * 1e6 / N);
    }
    /* the pass over F: 64 distinct F (as in a batch) with the pending write, k2 only / k2 + reads */
    enum { NF = 64 };
    size_t n = S * R * T;
    float *Fs = calloc(NF * n, sizeof(float)), *vec = calloc((1 + hp->read_count) * R, sizeof(float));
    float *out = calloc((1 + hp->read_count) * S * T, sizeof(float)), *k = calloc(S + R + T, sizeof(float));
    for (size_t i = 0; i < NF * n; i++) Fs[i] = 1e-3f * (float)(i % 11);
    for (size_t i = 0; i < (1 + hp->read_count) * R; i++) vec[i] = 0.1f;
    for (size_t i = 0; i < S + R + T; i++) k[i] = 0.01f;
    const float *pv[1 + FWM_MAX_READ_COUNT];
    float *po[1 + FWM_MAX_READ_COUNT];
    for (size_t v = 0; v <= hp->read_count; v++) pv[v] = vec + v * R, po[v] = out + v * S * T;
    fwm__fw_pending pending = {k, k + S, k + S + R, 0.999f};
    volatile float sink = 0;
    for (size_t count = 1; count <= 1 + hp->read_count; count += hp->read_count) {
        double t;
        TIME_PART(t, NF, sink += fwm__fw_contract(Fs + (size_t)call_ * n, S, R, T, &pending, pv, count, po));
        printf("  pass over F, %zu vector%s %s %7.2f\n", count, count > 1 ? "s" : " ",
               count > 1 ? "(with reads)   " : "(no read)      ", t * 1e6);
    }
    (void)sink;
    free(Fs), free(vec), free(out), free(k), free(x), free(y);
}

static void print_machine(void) {
    char model_name[256] = "unknown";
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        char line[512];
        while (fgets(line, sizeof line, f)) {
            if (strncmp(line, "model name", 10) == 0) {
                char *colon = strchr(line, ':');
                if (colon) {
                    snprintf(model_name, sizeof model_name, "%s", colon + 2);
                    model_name[strcspn(model_name, "\n")] = '\0';
                }
                break;
            }
        }
        fclose(f);
    }
    printf("machine: %s, %ld online cores\n", model_name, sysconf(_SC_NPROCESSORS_ONLN));
}

/* Run torch_step.py (the FWM's step, or with `lstm_layers` > 0 the LSTM's); fills its medians and
 * the sgemm rates, false when torch is not there. */
static bool run_torch(const fwm_hparams *hp, uint32_t lstm_layers, double *b1_us, double *b64_rate,
                      double *b64_rate2, double *gflops1, double *gflops2) {
    if (system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0) return false;
    char command[1024];
    snprintf(command, sizeof command,
             "/usr/bin/python3 %s --vocab %u --embedding %u --hidden %u --s %u --r %u --t %u "
             "--reads %u --repetitions %d --arch %s --layers %u",
             FWM_TORCH_STEP_SCRIPT, hp->vocab_size, hp->embedding_length, hp->hidden_size,
             hp->memory_s, hp->memory_r, hp->memory_t, hp->read_count, repetitions,
             lstm_layers ? "lstm" : "fwm", lstm_layers ? lstm_layers : 1);
    FILE *p = popen(command, "r");
    if (!p) return false;
    char line[512];
    bool found = false;
    while (fgets(line, sizeof line, p)) {
        fputs(line, stdout);
        if (sscanf(line, "torch_step: batch1_us_per_step=%lf batch64_tokens_per_s=%lf "
                         "batch64_2threads_tokens_per_s=%lf",
                   b1_us, b64_rate, b64_rate2) == 3)
            found = true;
        sscanf(line, "torch_sgemm: gflops_1thread=%lf gflops_2threads=%lf", gflops1, gflops2);
    }
    pclose(p);
    return found;
}

int main(int argc, char **argv) {
    const char *path = NULL, *bf16_path = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--bf16") == 0 && i + 1 < argc) {
            bf16_path = argv[++i];
        } else if (strcmp(argv[i], "--quick") == 0) {
            repetitions = 3;
            target_seconds = 0.05;
        } else {
            path = argv[i];
        }
    }
    fwm_model *model = NULL;
    struct fwm_model *built = NULL;
    fwm_error err;
    if (path) {
        fwm_status st = fwm_model_load(path, NULL, &model, &err);
        if (st != FWM_OK) die(path, st, &err);
    } else {
        fwm_hparams hp; /* the paper's sizes: the one definition (FWM_HPARAM_LIST) */
        fwm__hparams_defaults(&hp);
        built = rt_model_create(&hp, 2021, true);
        if (!built) die("building the model", FWM_ERR_OUT_OF_MEMORY, NULL);
        model = built;
    }
    const fwm_hparams *hp = &((const struct fwm_model *)model)->hp;
    fwm_model_info info;
    fwm_model_get_info(model, &info);
    bool is_fwm = strcmp(info.architecture, "fwm") == 0; /* the parts and torch are the FWM's */
    print_machine();
    if (is_fwm) {
        printf("model: %s, V=%u E=%u H=%u S=%u R=%u T=%u N_r=%u residual=%d read_policy=%s, input-gate table %s\n",
               path ? path : "in-memory random (seed 2021)", hp->vocab_size, hp->embedding_length,
               hp->hidden_size, hp->memory_s, hp->memory_r, hp->memory_t, hp->read_count, hp->residual,
               hp->read_policy ? "token" : "always",
               ((const struct fwm_model *)model)->input_gates ? "on" : "off");
        print_parts(model);
    } else {
        printf("model: %s, architecture %s, V=%u E=%u H=%u layers=%u residual=%d, %zu state floats\n", path,
               info.architecture, info.vocab_size, info.embedding_length, info.hidden_size, info.layer_count,
               info.residual, info.session_state_floats);
    }
    printf("medians of %d repetitions of about %.2f s each\n", repetitions, target_seconds);

    figure single = single_step_us(model, true);
    figure single_quiet = single_step_us(model, false);
    printf("single-session step, with logits:    %8.2f us/step (best repetition %.2f)\n", single.median,
           single.best);
    printf("single-session step, without logits: %8.2f us/step (best repetition %.2f)\n",
           single_quiet.median, single_quiet.best);
    static const size_t batches[] = {1, 8, 64, 256};
    figure rate64[3];
    memset(rate64, 0, sizeof rate64);
    for (int b = 0; b < 4; b++) {
        figure r1 = batched_rate(model, batches[b], 1);
        printf("batch %3zu, 1 thread:  %9.0f tokens/s (best repetition %.0f)\n", batches[b], r1.median,
               r1.best);
        if (batches[b] == 64) rate64[1] = r1;
        if (batches[b] < 2) continue;
        figure r2 = batched_rate(model, batches[b], 2);
        printf("batch %3zu, 2 threads: %9.0f tokens/s (best repetition %.0f)\n", batches[b], r2.median,
               r2.best);
        if (batches[b] == 64) rate64[2] = r2;
    }
    /* the BF16 twin, measured the same way */
    fwm_model *bf16 = NULL;
    figure b_single = {0, 0}, b_rate64[3];
    memset(b_rate64, 0, sizeof b_rate64);
    if (bf16_path) {
        fwm_status st = fwm_model_load(bf16_path, NULL, &bf16, &err);
        if (st != FWM_OK) die(bf16_path, st, &err);
        printf("bf16 model: %s, %u matrices multiplied in BF16 with the %s kernel\n", bf16_path,
               (unsigned)((const struct fwm_model *)bf16)->bf16_tensors, fwm__bf16_kernel_name());
        b_single = single_step_us(bf16, true);
        printf("bf16 single-session step, with logits: %8.2f us/step (best repetition %.2f)\n",
               b_single.median, b_single.best);
        for (int threads = 1; threads <= 2; threads++) {
            b_rate64[threads] = batched_rate(bf16, 64, threads);
            printf("bf16 batch  64, %d thread%s %9.0f tokens/s (best repetition %.0f)\n", threads,
                   threads == 1 ? ": " : "s:", b_rate64[threads].median, b_rate64[threads].best);
        }
        printf("bf16 / f32 (same run): single step %.2fx faster; batch 64 %.2fx the tokens/s on 1 "
               "thread, %.2fx on 2\n",
               single.median / b_single.median, b_rate64[1].median / rate64[1].median,
               b_rate64[2].median / rate64[2].median);
    }
    double t_b1 = 0, t_b64 = 0, t_b64_2 = 0, gflops1 = 0, gflops2 = 0;
    bool is_lstm = strcmp(info.architecture, "lstm") == 0;
    fwm_hparams lstm_sizes; /* the LSTM's sizes in the FWM's fields torch_step.py takes */
    memset(&lstm_sizes, 0, sizeof lstm_sizes);
    lstm_sizes.vocab_size = info.vocab_size;
    lstm_sizes.embedding_length = info.embedding_length;
    lstm_sizes.hidden_size = info.hidden_size;
    if (!is_fwm && !is_lstm) {
        printf("torch: the comparison is made for the FWM and the LSTM only\n");
    } else if (run_torch(is_lstm ? &lstm_sizes : hp, is_lstm ? info.layer_count : 0, &t_b1, &t_b64,
                         &t_b64_2, &gflops1, &gflops2)) {
        printf("ratios of medians (fwm / torch): single step %.1fx faster; batch 64 %.1fx the tokens/s on "
               "1 thread, %.1fx on 2 threads\n",
               t_b1 / single.median, rate64[1].median / t_b64, rate64[2].median / t_b64_2);
        if (bf16)
            printf("ratios of medians (fwm bf16 / torch f32): single step %.1fx faster; batch 64 %.1fx "
                   "the tokens/s on 1 thread, %.1fx on 2 threads\n",
                   t_b1 / b_single.median, b_rate64[1].median / t_b64, b_rate64[2].median / t_b64_2);
        /* multiply-adds of one token's step: the output layer and the recurrent layers (the
         * first layer's input product is a table lookup when the model keeps one) */
        double H = info.hidden_size, E = info.embedding_length, V = info.vocab_size;
        double macs = V * H + 4 * H * (H + E) + (info.layer_count - 1) * 8 * H * H;
        if (is_fwm)
            macs += H * (hp->memory_s + hp->memory_r + hp->memory_t + 1) +
                    H * (hp->memory_s + hp->read_count * hp->memory_r) + H * hp->memory_t +
                    (1.0 + hp->read_count) * hp->memory_s * hp->memory_r * hp->memory_t * 2;
        if (gflops1 > 0 && gflops2 > 0)
            printf("FLOP bound: %.2f MFLOP per token; torch.mm sgemm %.1f GFLOP/s on 1 thread, %.1f "
                   "on 2: at most %.0f and %.0f tokens/s; batch 64 reaches %.2fx and %.2fx of it\n",
                   2 * macs / 1e6, gflops1, gflops2, gflops1 * 1e9 / (2 * macs),
                   gflops2 * 1e9 / (2 * macs), rate64[1].median / (gflops1 * 1e9 / (2 * macs)),
                   rate64[2].median / (gflops2 * 1e9 / (2 * macs)));
    } else {
        printf("torch: not available to /usr/bin/python3, no comparison\n");
    }
    fwm_model_free(bf16);
    if (built)
        rt_model_free(built);
    else
        fwm_model_free(model);
    return 0;
}
