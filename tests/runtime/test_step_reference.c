/* test_step_reference.c - the optimised step against a plain double-precision implementation of the
 * model spec written here from docs/MODEL.md (libm tanh/exp, one loop per equation), for
 * several model variants; plus two equalities the step promises: stepping without logits leaves
 * the same state (bit for bit) as stepping with them, and a model without the input-gate table
 * steps bit-identically to one with it. (The golden tests compare against the independent numpy
 * reference; this is the in-C sanity check.) */
#include <math.h>
#include <stdlib.h>

#include "fwm_rng.h"
#include "runtime_test_util.h"
#include "session_internal.h"

#define STEPS 80
/* Bounds (relative; see check_close). The state (h, c, F) stays within 1e-5 of the double
 * reference, element by element (measured: 2e-6 at worst). The logits come after up to three
 * chained layer norms, which amplify float32 rounding: measured at paper sizes about 2.4e-5
 * norm-wise and 6e-5 in the worst element, whether tanh/exp are ours or libm's, so the logits get
 * 1e-4. A real mistake (gate order, a missing scale) is off by 1e-1 or more. */
#define STATE_NORM_BOUND 1e-5
#define STATE_ELEMENT_BOUND 1e-5
#define LOGITS_NORM_BOUND 1e-4
#define LOGITS_ELEMENT_BOUND 2e-4

/* ---- the reference: the spec, literally, in double -------------------------------------------- */

typedef struct ref_state {
    double *h, *c, *F;
} ref_state;

static double sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

/* y = W x (+ b), W [rows, cols] floats */
static void ref_matvec(const float *W, const float *b, size_t rows, size_t cols, const double *x,
                       double *y) {
    for (size_t r = 0; r < rows; r++) {
        double s = b ? b[r] : 0.0;
        for (size_t k = 0; k < cols; k++) s += (double)W[r * cols + k] * x[k];
        y[r] = s;
    }
}

static void ref_step(const struct fwm_model *m, ref_state *st, uint32_t x, double *logits) {
    const fwm_hparams *hp = &m->hp;
    const fwm_weights *w = &m->w;
    size_t E = hp->embedding_length, H = hp->hidden_size, S = hp->memory_s, R = hp->memory_r,
           T = hp->memory_t, V = hp->vocab_size, Nr = hp->read_count;
    double *e = calloc(E, sizeof *e), *g = calloc(4 * H, sizeof *g), *g2 = calloc(4 * H, sizeof *g2);
    for (size_t k = 0; k < E; k++) e[k] = w->token_embd[(size_t)x * E + k];
    /* LSTM */
    ref_matvec(w->lstm_weight_ih, w->lstm_bias, 4 * H, E, e, g);
    ref_matvec(w->lstm_weight_hh, NULL, 4 * H, H, st->h, g2);
    for (size_t j = 0; j < H; j++) {
        double i = sigmoid(g[j] + g2[j]), f = sigmoid(g[H + j] + g2[H + j] + hp->forget_bias);
        double z = tanh(g[2 * H + j] + g2[2 * H + j]), o = sigmoid(g[3 * H + j] + g2[3 * H + j]);
        st->c[j] = f * st->c[j] + i * z;
        st->h[j] = o * tanh(st->c[j]);
    }
    /* write */
    size_t WL = S + R + T + 1;
    double *wv = calloc(WL, sizeof *wv), *K = calloc(S * R, sizeof *K), *vold = calloc(T, sizeof *vold);
    ref_matvec(w->write_weight, w->write_bias, WL, H, st->h, wv);
    double beta = sigmoid(wv[S + R + T] + hp->beta_bias);
    for (size_t i = 0; i < S; i++)
        for (size_t j = 0; j < R; j++) K[i * R + j] = tanh(wv[i]) * tanh(wv[S + j]);
    for (size_t t = 0; t < T; t++)
        for (size_t k = 0; k < S * R; k++) vold[t] += K[k] * st->F[k * T + t];
    double norm2 = 0;
    for (size_t k = 0; k < S * R; k++)
        for (size_t t = 0; t < T; t++) {
            double v = tanh(wv[S + R + t]);
            st->F[k * T + t] += K[k] * (beta * (v - vold[t]) * hp->write_scale);
            norm2 += st->F[k * T + t] * st->F[k * T + t];
        }
    double div = sqrt(norm2) > 1 ? sqrt(norm2) : 1;
    for (size_t k = 0; k < S * R * T; k++) st->F[k] /= div;
    /* read and output */
    if (logits) {
        double *y = calloc(H, sizeof *y);
        if (hp->read_policy == FWM_READ_ALWAYS || x == hp->read_token_id) {
            size_t RL = S + Nr * R;
            double *u = calloc(RL, sizeof *u), *q = calloc(S > T ? S : T, sizeof *q);
            double *xv = calloc(S * R, sizeof *xv), *z = calloc(T, sizeof *z);
            ref_matvec(w->read_weight, w->read_bias, RL, H, st->h, u);
            for (size_t i = 0; i < S; i++) q[i] = u[i];
            for (size_t r = 0; r < Nr; r++) {
                for (size_t i = 0; i < S; i++)
                    for (size_t j = 0; j < R; j++) xv[i * R + j] = q[i] * tanh(u[S + r * R + j]);
                double mean = 0, var = 0;
                for (size_t t = 0; t < T; t++) {
                    z[t] = 0;
                    for (size_t k = 0; k < S * R; k++) z[t] += xv[k] * st->F[k * T + t];
                    mean += z[t] / T;
                }
                for (size_t t = 0; t < T; t++) var += (z[t] - mean) * (z[t] - mean) / T;
                for (size_t t = 0; t < T; t++) q[t] = (z[t] - mean) / sqrt(var + hp->layer_norm_eps);
            }
            ref_matvec(w->out_weight, w->out_bias, H, T, q, y);
            free(u), free(q), free(xv), free(z);
        }
        if (hp->residual)
            for (size_t j = 0; j < H; j++) y[j] += st->h[j];
        ref_matvec(w->output_weight, NULL, V, H, y, logits);
        free(y);
    }
    free(e), free(g), free(g2), free(wv), free(K), free(vold);
}

/* ---- comparison --------------------------------------------------------------------------------- */

/* Largest errors seen, [0] state, [1] logits: norm-wise and per element. */
static double worst_norm[2], worst_element[2];

/* Norm-wise ||got - want|| <= norm_bound ||want||, and every element within element_bound of
 * max(|want|, rms(want)) (the rms floor keeps near-zero entries from being held to a relative
 * bound their magnitude cannot support). */
static void check_close(const float *got, const double *want, size_t n, const char *what, int step,
                        int kind, double norm_bound, double element_bound) {
    double rms = 0, diff = 0;
    for (size_t i = 0; i < n; i++) {
        rms += want[i] * want[i];
        diff += ((double)got[i] - want[i]) * ((double)got[i] - want[i]);
    }
    double norm_err = rms > 0 ? sqrt(diff / rms) : sqrt(diff);
    rms = sqrt(rms / (double)n);
    if (norm_err > worst_norm[kind]) worst_norm[kind] = norm_err;
    if (!(norm_err <= norm_bound)) {
        fprintf(stderr, "%s at step %d: relative error %.3g over %zu elements exceeds %.0e\n", what, step,
                norm_err, n, norm_bound);
        check_failures++;
    }
    for (size_t i = 0; i < n; i++) {
        double scale = fabs(want[i]) > rms ? fabs(want[i]) : rms;
        double err = fabs((double)got[i] - want[i]) / (scale > 0 ? scale : 1);
        if (err > worst_element[kind]) worst_element[kind] = err;
        if (!(err <= element_bound)) {
            fprintf(stderr, "%s at step %d, [%zu] of %zu: got %.9g, reference %.9g (error %.3g of scale %.3g)\n",
                    what, step, i, n, (double)got[i], want[i], err, scale);
            check_failures++;
            return;
        }
    }
}

static void run(const char *name, fwm_hparams hp) {
    struct fwm_model *m = rt_model_create(&hp, 42 + hp.hidden_size, true);
    struct fwm_model *plain = rt_model_create(&hp, 42 + hp.hidden_size, false); /* no table */
    CHECK(m && plain);
    if (!m || !plain) return;
    CHECK(m->input_gates != NULL);
    CHECK(plain->input_gates == NULL);
    size_t H = hp.hidden_size, V = hp.vocab_size, F_n = (size_t)hp.memory_s * hp.memory_r * hp.memory_t;
    ref_state st = {calloc(H, sizeof(double)), calloc(H, sizeof(double)), calloc(F_n, sizeof(double))};
    double *ref_logits = calloc(V, sizeof *ref_logits);
    float *logits = calloc(V, sizeof *logits), *plain_logits = calloc(V, sizeof *logits);
    uint32_t tokens[STEPS];
    rt_random_tokens(tokens, STEPS, hp.vocab_size, 5);
    for (int k = 0; k < STEPS; k += 3) tokens[k] = hp.read_token_id;

    fwm_session *s = NULL, *quiet = NULL, *p = NULL;
    fwm_error err;
    CHECK_STATUS(fwm_session_create(m, &s, &err), FWM_OK, &err);
    CHECK_STATUS(fwm_session_create(m, &quiet, &err), FWM_OK, &err);
    CHECK_STATUS(fwm_session_create(plain, &p, &err), FWM_OK, &err);
    char what[160];
    memset(worst_norm, 0, sizeof worst_norm);
    memset(worst_element, 0, sizeof worst_element);
    for (int k = 0; k < STEPS; k++) {
        ref_step(m, &st, tokens[k], ref_logits);
        CHECK_STATUS(fwm_session_step(s, tokens[k], logits, &err), FWM_OK, &err);
        CHECK_STATUS(fwm_session_step(quiet, tokens[k], NULL, &err), FWM_OK, &err);
        CHECK_STATUS(fwm_session_step(p, tokens[k], plain_logits, &err), FWM_OK, &err);
        snprintf(what, sizeof what, "%s: logits", name);
        check_close(logits, ref_logits, V, what, k, 1, LOGITS_NORM_BOUND, LOGITS_ELEMENT_BOUND);
        float *h = NULL, *c = NULL, *F = NULL;
        if (rt_state(s, &h, &c, &F)) {
            snprintf(what, sizeof what, "%s: h", name);
            check_close(h, st.h, H, what, k, 0, STATE_NORM_BOUND, STATE_ELEMENT_BOUND);
            snprintf(what, sizeof what, "%s: c", name);
            check_close(c, st.c, H, what, k, 0, STATE_NORM_BOUND, STATE_ELEMENT_BOUND);
            snprintf(what, sizeof what, "%s: F", name);
            check_close(F, st.F, F_n, what, k, 0, STATE_NORM_BOUND, STATE_ELEMENT_BOUND);
        }
        free(h), free(c), free(F);
        snprintf(what, sizeof what, "%s: logits without vs with the input-gate table", name);
        CHECK_FLOATS_EQUAL(plain_logits, logits, V, what);
    }
    printf("%s: largest relative errors against the reference: state %.2g norm-wise, %.2g element; "
           "logits %.2g norm-wise, %.2g element\n",
           name, worst_norm[0], worst_element[0], worst_norm[1], worst_element[1]);
    /* logits == NULL steps leave exactly the state of steps with logits */
    size_t blob_a = 0, blob_b = 0, blob_c = 0;
    unsigned char *a = rt_export(s, &blob_a), *b = rt_export(quiet, &blob_b), *c = rt_export(p, &blob_c);
    if (a && b && c) {
        snprintf(what, sizeof what, "%s: state after steps without logits", name);
        CHECK_BYTES_EQUAL(b, a, blob_a, what);
        /* the blobs differ only in... nothing: same fingerprint (same seed), same state */
        snprintf(what, sizeof what, "%s: state without the input-gate table", name);
        CHECK_BYTES_EQUAL(c, a, blob_a, what);
    }
    free(a), free(b), free(c);
    fwm_session_free(s);
    fwm_session_free(quiet);
    fwm_session_free(p);
    free(st.h), free(st.c), free(st.F), free(ref_logits), free(logits), free(plain_logits);
    rt_model_free(m);
    rt_model_free(plain);
}

int main(void) {
    run("paper sizes, N_r=3", rt_hparams(180, 256, 256, 32, 32, 32, 3, false, FWM_READ_ALWAYS, 0));
    run("odd sizes, N_r=3, residual", rt_hparams(29, 13, 37, 6, 9, 6, 3, true, FWM_READ_ALWAYS, 0));
    run("R!=S!=T, N_r=1, token policy", rt_hparams(31, 24, 40, 8, 5, 11, 1, false, FWM_READ_ON_TOKEN, 3));
    run("N_r=2, token policy, residual", rt_hparams(19, 9, 33, 9, 12, 9, 2, true, FWM_READ_ON_TOKEN, 2));
    run("tiny", rt_hparams(5, 3, 4, 2, 3, 2, 1, true, FWM_READ_ALWAYS, 0));
    return check_finish("test_step_reference");
}
