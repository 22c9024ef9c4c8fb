/* bench_train.c - training throughput of the trainer's forward + backward + Adam at the paper's
 * sizes (V=180, E=H=256, S=R=T=32, N_r=3, batch 32, window 200) on random tokens, in tokens/s
 * (lane positions per second). Prints a figure, never fails on time.
 *   bench_train [--threads N] [--steps N] [--lanes B] [--window W] [--mode lm|qm]
 *               [--arch fwm|lstm|mnm|gfw] [--layers L] [--hidden H] [--embedding E] [--dropout P]
 * --arch lstm measures the LSTM baseline instead, at the paper's sizes by default (E=256, H=512,
 * L=4, residual; FWM_LSTM_HPARAM_LIST); --dropout P turns on all four of its dropouts at P.
 * --arch mnm measures the MNM baseline at the FWM paper's catbAbI sizes (FWM_MNM_HPARAM_LIST:
 * E=H=d_o=256, 3 heads, d_k=d_v=100, memory 3 x 100), meta weight 1; --hidden and --embedding
 * apply. --arch gfw measures the Gated Fast Weights model at the paper's sizes
 * (FWM_GFW_HPARAM_LIST: V=E=15, fast m=40, slow N=40, P=100); --hidden (m) and --embedding apply;
 * its paper's batch is --lanes 256 --window 32. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "adam.h"
#include "blas_kernels.h"
#include "cli_common.h"
#include "fwm_model_shape.h"
#include "net.h"
#include "fwm_model.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The LSTM or MNM baseline or the gfw model through the trainer's model handle (as fwm-train
 * --arch lstm|mnm|gfw runs it). */
static int bench_net(fwm_arch arch, int threads, int steps, int lanes, int window, int qm, int layers,
                     int hidden, int embedding, double dropout)
{
    fwm__net_config config;
    memset(&config, 0, sizeof config);
    int mnm = arch == FWM_ARCH_MNM, gfw = arch == FWM_ARCH_GFW;
    config.model.arch = arch;
    fwm_lstm_hparams *hp = &config.model.lstm;
    fwm__lstm_hparams_defaults(hp); /* the paper's sizes */
    fwm_mnm_hparams *mp = &config.model.mnm;
    fwm__mnm_hparams_defaults(mp); /* the FWM paper's catbAbI MNM */
    config.meta_weight = FWM_MNM_DEFAULT_META_WEIGHT;
    fwm_gfw_hparams *gp = &config.model.gfw;
    fwm__gfw_hparams_defaults(gp); /* the paper's associative-retrieval model */
    if (gfw && hidden > 0)
        gp->fast_hidden = (uint32_t)hidden;
    if (gfw && embedding > 0)
        gp->embedding_length = (uint32_t)embedding;
    if (layers > 0)
        hp->layer_count = (uint32_t)layers;
    if (hidden > 0)
        hp->hidden_size = mp->hidden_size = (uint32_t)hidden;
    if (embedding > 0)
        hp->embedding_length = mp->embedding_length = (uint32_t)embedding;
    config.lanes = lanes;
    config.window = window;
    config.loss_mode = qm ? FWM__LOSS_QM : FWM__LOSS_LM;
    config.loss_token_id = 3;
    config.dropout.token = config.dropout.embedding = config.dropout.recurrent =
        config.dropout.layer = (float)dropout;
    fwm__blas_use_one_thread();
    fwm__pool *pool = threads > 1 ? fwm__pool_create(threads) : NULL;
    fwm__net *net = NULL;
    fwm_error err;
    if (fwm__net_create(&config, pool, &net, &err) != FWM_OK) {
        fprintf(stderr, "error: %s\n", err.message);
        return 1;
    }
    fwm__net_init_weights(net, 1);
    fwm__net_reset_state(net);
    size_t n = net->layout.total, cells = (size_t)lanes * (size_t)window;
    float *m = calloc(n, sizeof *m), *v = calloc(n, sizeof *v);
    uint32_t *x = malloc(cells * sizeof *x), *y = malloc(cells * sizeof *y);
    uint64_t r = 88172645463325252ull;
    for (size_t i = 0; i < cells; i++) {
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        uint32_t others = gfw ? gp->vocab_size - 1 : 179; /* every id but the padding 0 */
        x[i] = 1 + (uint32_t)(r % others);
        y[i] = 1 + (uint32_t)((r >> 20) % others);
        if (r % 13 == 0)
            x[i] = 3;
    }
    fwm__adam_params ap = fwm__adam_default_params();
    double t_fwd = 0, t_bwd = 0, t_opt = 0, cpu = 0;
    for (int s = -1; s < steps; s++) {
        double c0 = cpu_now(), t0 = now();
        fwm__net_zero_grads(net);
        fwm__net_set_dropout(net, 1, (uint64_t)(s + 1), 0);
        fwm__net_forward(net, x, y, window);
        double t1 = now();
        fwm__net_backward(net, 0);
        double t2 = now();
        fwm__adam_update(&ap, s + 2, 0, net->params, net->grads, m, v, n);
        double t3 = now();
        if (s >= 0) {
            cpu += cpu_now() - c0;
            t_fwd += t1 - t0;
            t_bwd += t2 - t1;
            t_opt += t3 - t2;
        }
    }
    double total = t_fwd + t_bwd + t_opt;
    if (gfw)
        printf("gfw step (V=%u E=%u fast m=%u slow N=%u P=%u, %zu parameters, %s mode, B=%d, "
               "W=%d, %d thread(s)): %.3f steps/s, %.0f tokens/s (forward %.0f ms, backward %.0f "
               "ms, Adam %.1f ms per step); CPU %.0f ms per step\n",
               gp->vocab_size, gp->embedding_length, gp->fast_hidden, gp->slow_hidden,
               gp->slow_inner, net->layout.parameter_count, qm ? "QM" : "LM", lanes, window,
               threads, steps / total, (double)steps * (double)cells / total, 1e3 * t_fwd / steps,
               1e3 * t_bwd / steps, 1e3 * t_opt / steps, 1e3 * cpu / steps);
    else if (mnm)
        printf("MNM baseline step (E=%u H=%u heads=%u d_k=%u d_v=%u memory %u x %u d_o=%u, %zu "
               "parameters, %s mode, B=%d, W=%d, %d thread(s)): %.3f steps/s, %.0f tokens/s "
               "(forward %.0f ms, backward %.0f ms, Adam %.1f ms per step); CPU %.0f ms per "
               "step\n",
               mp->embedding_length, mp->hidden_size, mp->head_count, mp->key_length,
               mp->value_length, mp->memory_layers, mp->memory_hidden, mp->output_length,
               net->layout.parameter_count, qm ? "QM" : "LM", lanes, window, threads,
               steps / total, (double)steps * (double)cells / total, 1e3 * t_fwd / steps,
               1e3 * t_bwd / steps, 1e3 * t_opt / steps, 1e3 * cpu / steps);
    else
        printf("LSTM baseline step (E=%u H=%u L=%u%s, %zu parameters, dropout %g, %s mode, B=%d, W=%d, "
               "%d thread(s)): %.3f steps/s, %.0f tokens/s (forward %.0f ms, backward %.0f ms, Adam "
               "%.1f ms per step); CPU %.0f ms per step\n",
               hp->embedding_length, hp->hidden_size, hp->layer_count, hp->residual ? " residual" : "",
               net->layout.parameter_count, dropout, qm ? "QM" : "LM", lanes, window, threads,
               steps / total, (double)steps * (double)cells / total, 1e3 * t_fwd / steps,
               1e3 * t_bwd / steps, 1e3 * t_opt / steps, 1e3 * cpu / steps);
    printf("tokens_per_second %.0f\n", (double)steps * (double)cells / total);
    free(m);
    free(v);
    free(x);
    free(y);
    fwm__net_free(net);
    fwm__pool_free(pool);
    return 0;
}

int main(int argc, char **argv)
{
    fwm__blas_choose_kernels(argv);
    int threads = fwm__cpu_count(), steps = 10, lanes = 32, window = 200, qm = 0;
    int lstm = 0, mnm = 0, gfw = 0, layers = 0, hidden = 0, embedding = 0;
    double dropout = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--threads") == 0)
            threads = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--steps") == 0)
            steps = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--lanes") == 0)
            lanes = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--window") == 0)
            window = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--mode") == 0)
            qm = strcmp(argv[i + 1], "qm") == 0;
        else if (strcmp(argv[i], "--arch") == 0)
            lstm = strcmp(argv[i + 1], "lstm") == 0, mnm = strcmp(argv[i + 1], "mnm") == 0,
            gfw = strcmp(argv[i + 1], "gfw") == 0;
        else if (strcmp(argv[i], "--layers") == 0)
            layers = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--hidden") == 0)
            hidden = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--embedding") == 0)
            embedding = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--dropout") == 0)
            dropout = atof(argv[i + 1]);
        else {
            fprintf(stderr, "unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (lstm || mnm || gfw)
        return bench_net(gfw ? FWM_ARCH_GFW : mnm ? FWM_ARCH_MNM : FWM_ARCH_LSTM, threads, steps, lanes,
                         window, qm, layers, hidden, embedding,
                         dropout);
    fwm__tm_config config = {0};
    fwm_hparams *hp = &config.hp;
    fwm__hparams_defaults(hp); /* the paper's sizes: the one definition (FWM_HPARAM_LIST) */
    hp->read_policy = qm ? FWM_READ_ON_TOKEN : FWM_READ_ALWAYS;
    hp->read_token_id = 3;
    config.lanes = lanes;
    config.window = window;
    config.loss_mode = qm ? FWM__LOSS_QM : FWM__LOSS_LM;
    config.loss_token_id = 3;
    fwm__blas_use_one_thread();
    fwm__pool *pool = threads > 1 ? fwm__pool_create(threads) : NULL;
    fwm__tm_f32 *tm = NULL;
    fwm_error err;
    if (fwm__tm_create_f32(&config, pool, &tm, &err) != FWM_OK) {
        fprintf(stderr, "error: %s\n", err.message);
        return 1;
    }
    size_t n = tm->layout.total, cells = (size_t)lanes * (size_t)window;
    float *m = calloc(n, sizeof *m), *v = calloc(n, sizeof *v);
    uint32_t *x = malloc(cells * sizeof *x), *y = malloc(cells * sizeof *y);
    uint64_t r = 88172645463325252ull;
    for (size_t i = 0; i < n; i++) {
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        tm->shell.params[i] = ((float)(r >> 40) / 16777216.0f - 0.5f) * 0.1f;
    }
    for (size_t i = 0; i < cells; i++) {
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        x[i] = 1 + (uint32_t)(r % 179);
        y[i] = 1 + (uint32_t)((r >> 20) % 179);
        if (r % 13 == 0)
            x[i] = 3; /* a "?" now and then */
    }
    fwm__adam_params ap = fwm__adam_default_params();
    double t_fwd = 0, t_bwd = 0, t_opt = 0, cpu = 0, cpu_fwd = 0;
    for (int s = -1; s < steps; s++) { /* step -1 warms up */
        double c0 = cpu_now();
        double t0 = now();
        fwm__tm_shell_zero_grads_f32(&tm->shell);
        fwm__tm_forward_f32(tm, x, y, window);
        double t1 = now();
        double c1 = cpu_now();
        fwm__tm_backward_f32(tm);
        double t2 = now();
        fwm__adam_update(&ap, s + 2, 0, tm->shell.params, tm->shell.grads, m, v, n);
        double t3 = now();
        if (s >= 0) {
            cpu += cpu_now() - c0;
            cpu_fwd += c1 - c0;
            t_fwd += t1 - t0;
            t_bwd += t2 - t1;
            t_opt += t3 - t2;
        }
    }
    double total = t_fwd + t_bwd + t_opt;
    double rate = (double)steps * (double)cells / total;
    printf("fwm-train step (%s mode, B=%d, W=%d, %d thread(s)): %.0f tokens/s "
           "(forward %.1f ms, backward %.1f ms, Adam %.1f ms per step)\n",
           qm ? "QM" : "LM", lanes, window, threads, rate, 1e3 * t_fwd / steps,
           1e3 * t_bwd / steps, 1e3 * t_opt / steps);
    printf("CPU time %.0f ms per step (forward %.0f ms): %.0f tokens per CPU-second (what %d idle cores would give: "
           "%.0f tokens/s; the wall-clock figure is lower when other processes share the CPUs)\n",
           1e3 * cpu / steps, 1e3 * cpu_fwd / steps, (double)steps * (double)cells / cpu, threads,
           (double)steps * (double)cells / cpu * threads);
    printf("tokens_per_second %.0f\n", rate);
    free(m);
    free(v);
    free(x);
    free(y);
    fwm__tm_free_f32(tm);
    fwm__pool_free(pool);
    return 0;
}
