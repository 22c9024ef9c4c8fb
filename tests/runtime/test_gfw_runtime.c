/* test_gfw_runtime.c - what only the Gated Fast Weights model does in the runtime, through the
 * public API on files written by fwm__gfw_model_write: loading and model info; the step against a
 * double-precision evaluation of docs/MODEL.md's equations written out here; the zero reset state
 * (the first logits are the output bias); single, sequence and batched steps bit-identical (several
 * sizes, more sessions than a chunk); its blob's layout, and its dims, values and version refused
 * by name; allocation failures while stepping and writing. What every architecture shares (prime,
 * fork, refusals, export / import and its refusals, allocation failures while loading, creating and
 * forking) is runtime_gfw (test_arch_runtime.c). */
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "fwm/fwm.h"
#include "fwm_alloc.h"
#include "fwm_rng.h"
#include "gfw/gfw_init.h"
#include "gfw/gfw_runtime.h"
#include "gfw/gfw_schema.h"
#include "runtime_test_util.h"

static const char *const vocabulary[] = {"<pad>", "<eos>", ".", "?", "john", "mary", "garden",
                                         "kitchen", "went", "to", "the", "where", "is"};
#define V_TEST 13u

typedef struct gfw_file {
    fwm_gfw_hparams hp;
    float *data;
    const float *tensors[FWM_GFW_MAX_TENSORS];
} gfw_file;

typedef struct shape {
    uint32_t E, m, N, P;
} shape;

static const shape SHAPES[] = {
    {3, 2, 1, 1},     /* the smallest: m = 2, one slow unit */
    {5, 4, 3, 6},
    {7, 9, 5, 11},
    {15, 40, 40, 100}, /* the paper's sizes */
};

/* Write a GFW model (the spec's Glorot initialisation, then every tensor nudged so that the biases
 * are not zero) to `name`; keeps the weights in *f for the reference. */
static fwm_model *write_gfw(const char *name, shape sh, uint64_t seed, gfw_file *f) {
    fwm_gfw_hparams hp;
    fwm__gfw_hparams_defaults(&hp);
    hp.vocab_size = V_TEST, hp.embedding_length = sh.E, hp.fast_hidden = sh.m;
    hp.slow_hidden = sh.N, hp.slow_inner = sh.P, hp.eos_token_id = 1;
    size_t n = fwm__gfw_tensor_count(&hp), total = (size_t)fwm__gfw_parameter_count(&hp);
    f->hp = hp;
    f->data = malloc(total * sizeof(float));
    float *t[FWM_GFW_MAX_TENSORS];
    float *p = f->data;
    for (size_t i = 0; i < n; i++) {
        char tn[48];
        uint64_t rows, cols;
        fwm__gfw_tensor_at(&hp, i, tn, &rows, &cols);
        t[i] = p, f->tensors[i] = p, p += rows * cols;
    }
    fwm__gfw_init_weights(&hp, seed, t);
    fwm__rng rng;
    fwm__rng_seed(&rng, seed, 99);
    for (size_t k = 0; k < total; k++) f->data[k] += (float)fwm__rng_uniform(&rng, -0.2, 0.2);
    fwm_gfw_write_spec spec = {.hp = hp, .head.name = "test gfw", .head.tokens = vocabulary};
    for (size_t i = 0; i < n; i++) spec.tensors[i] = t[i];
    fwm_error err;
    CHECK_OK(fwm__gfw_model_write(rt_path(name), &spec, &err), err);
    fwm_model *model = NULL;
    CHECK_OK(fwm_model_load(rt_path(name), NULL, &model, &err), err);
    return model;
}

/* ---- the reference: docs/MODEL.md's equations in double precision ------------------------------ */

#define RMAX 128 /* every size in these tests is at most this */

typedef struct ref_state {
    double hF[RMAX], hS[RMAX];
    double F1[RMAX][RMAX], F2[RMAX][RMAX];
} ref_state;

static double sig(double x) { return 1.0 / (1.0 + exp(-x)); }

/* y = LN(tanh(W x)) for a fast matrix W [m, cols] (doubles). */
static void ref_fast_layer(double W[RMAX][RMAX], size_t m, size_t cols, const double *x, double eps,
                           double *y) {
    double mean = 0, var = 0;
    for (size_t i = 0; i < m; i++) {
        double a = 0;
        for (size_t k = 0; k < cols; k++) a += W[i][k] * x[k];
        y[i] = tanh(a);
        mean += y[i];
    }
    mean /= (double)m;
    for (size_t i = 0; i < m; i++) var += (y[i] - mean) * (y[i] - mean);
    var /= (double)m;
    for (size_t i = 0; i < m; i++) y[i] = (y[i] - mean) / sqrt(var + eps);
}

static void ref_gate(double F[RMAX][RMAX], size_t rows, size_t cols, const double *u) {
    const double *alpha = u, *beta = u + rows, *gamma = beta + cols, *delta = gamma + rows;
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++) {
            double T = sig(gamma[r]) * sig(delta[c]), H = tanh(alpha[r]) * tanh(beta[c]);
            F[r][c] = T * H + (1 - T) * F[r][c];
        }
}

static void ref_step(const gfw_file *f, ref_state *s, uint32_t x, double *logits) {
    const fwm_gfw_hparams *hp = &f->hp;
    size_t E = hp->embedding_length, m = hp->fast_hidden, N = hp->slow_hidden, P = hp->slow_inner;
    size_t c1 = m + E + 1, c2 = m + 1, out = (size_t)fwm__gfw_slow_out_rows(hp);
    double eps = hp->layer_norm_epsilon;
    static double x1[RMAX], a[RMAX + 1], xs[2 * RMAX], sv[RMAX], o[8 * RMAX];
    const float *e = f->tensors[0] + (size_t)x * E;
    for (size_t k = 0; k < m; k++) x1[k] = s->hF[k];
    for (size_t k = 0; k < E; k++) x1[m + k] = e[k];
    x1[c1 - 1] = 1;
    ref_fast_layer(s->F1, m, c1, x1, eps, a);
    a[m] = 1;
    ref_fast_layer(s->F2, m, c2, a, eps, s->hF);
    for (size_t v = 0; v < V_TEST; v++) {
        double acc = f->tensors[6][v];
        for (size_t k = 0; k < m; k++) acc += (double)f->tensors[5][v * m + k] * s->hF[k];
        logits[v] = acc;
    }
    for (size_t k = 0; k < N; k++) xs[k] = s->hS[k];
    for (size_t k = 0; k < E; k++) xs[N + k] = e[k];
    for (size_t i = 0; i < P; i++) {
        double acc = f->tensors[2][i];
        for (size_t k = 0; k < N + E; k++) acc += (double)f->tensors[1][i * (N + E) + k] * xs[k];
        sv[i] = tanh(acc);
    }
    for (size_t i = 0; i < out; i++) {
        double acc = f->tensors[4][i];
        for (size_t k = 0; k < P; k++) acc += (double)f->tensors[3][i * P + k] * sv[k];
        o[i] = acc;
    }
    for (size_t k = 0; k < N; k++) s->hS[k] = tanh(o[k]);
    ref_gate(s->F1, m, c1, o + N);
    ref_gate(s->F2, m, c2, o + N + 2 * (m + c1));
}

/* Every float of the session's state zero (h_F, h_S, F1, F2). */
static int state_is_zero(const fwm_session *s) {
    const unsigned char *p = (const unsigned char *)s->h;
    for (size_t i = 0; i < s->state_bytes; i++)
        if (p[i]) return 0;
    return 1;
}

static void info_and_reference(void) {
    for (size_t k = 0; k < sizeof SHAPES / sizeof SHAPES[0]; k++) {
        gfw_file f;
        fwm_model *model = write_gfw("ref.gguf", SHAPES[k], 11 + k, &f);
        if (!model) continue;
        const fwm_gfw_hparams *hp = &f.hp;
        fwm_model_info info;
        fwm_model_get_info(model, &info);
        CHECK_STR(info.architecture, "gfw");
        CHECK_INT(info.layer_count, 1);
        CHECK_INT(info.vocab_size, V_TEST);
        CHECK_INT(info.embedding_length, hp->embedding_length);
        CHECK_INT(info.hidden_size, hp->fast_hidden);
        CHECK(info.layer_norm_eps == hp->layer_norm_epsilon);
        CHECK_INT(info.memory_s, 0);
        size_t m = hp->fast_hidden, E = hp->embedding_length;
        CHECK_INT(info.session_state_floats, m + hp->slow_hidden + m * (m + E + 1) + m * (m + 1));
        CHECK_INT(info.state_blob_bytes, 56 + 4 * info.session_state_floats);
        CHECK_U64(info.parameter_count, fwm__gfw_parameter_count(hp));
        CHECK(info.has_checksum && info.checksum_verified);
        CHECK_STR(info.name, "test gfw");
        CHECK_INT(info.eos_token_id, 1);
        CHECK(info.session_state_bytes >= info.session_state_floats * sizeof(float));

        fwm_session *s = NULL;
        fwm_error err;
        CHECK_OK(fwm_session_create(model, &s, &err), err);
        CHECK(state_is_zero(s));
        /* from the zero state h_F = LN(0) = 0: the first logits are the output bias, exactly */
        float first[V_TEST];
        CHECK_OK(fwm_session_step(s, 4, first, &err), err);
        CHECK(memcmp(first, f.tensors[6], sizeof first) == 0);
        fwm_session_reset(s);
        CHECK(state_is_zero(s));
        ref_state *rs = calloc(1, sizeof *rs);
        uint32_t tokens[40];
        rt_random_tokens(tokens, 40, V_TEST, 3 + k);
        double worst = 0;
        for (size_t i = 0; i < 40; i++) {
            float logits[V_TEST];
            double want[V_TEST];
            CHECK_OK(fwm_session_step(s, tokens[i], logits, &err), err);
            ref_step(&f, rs, tokens[i], want);
            for (size_t v = 0; v < V_TEST; v++) {
                double d = fabs(logits[v] - want[v]) / (1.0 + fabs(want[v]));
                if (d > worst) worst = d;
            }
        }
        CHECK_LE(worst, 1e-4); /* 4e-5 seen: the layer norms amplify rounding */
        /* the final state against the reference's: h_S and F2 element by element */
        double state_worst = 0;
        for (size_t i = 0; i < hp->slow_hidden; i++)
            state_worst = fmax(state_worst, fabs(s->c[i] - rs->hS[i]));
        const float *F2 = s->F + fwm__gfw_of(model)->f2_offset;
        for (size_t r = 0; r < m; r++)
            for (size_t c = 0; c <= m; c++)
                state_worst = fmax(state_worst, fabs(F2[r * (m + 1) + c] - rs->F2[r][c]));
        CHECK_LE(state_worst, 1e-4);
        free(rs);
        CHECK(!state_is_zero(s));
        CHECK_INT(fwm_session_position(s), 41 - 1);
        /* reset: all zero again, as a new session */
        fwm_session_reset(s);
        CHECK_INT(fwm_session_position(s), 0);
        CHECK(state_is_zero(s));
        fwm_session *fresh = NULL;
        CHECK_OK(fwm_session_create(model, &fresh, &err), err);
        float a[V_TEST], b[V_TEST];
        CHECK_OK(fwm_session_step_sequence(s, tokens, 5, NULL, &err), err);
        CHECK_OK(fwm_session_step_sequence(fresh, tokens, 5, NULL, &err), err);
        CHECK_OK(fwm_session_step(s, 4, a, &err), err);
        CHECK_OK(fwm_session_step(fresh, 4, b, &err), err);
        CHECK(memcmp(a, b, sizeof a) == 0);
        fwm_session_free(fresh);
        fwm_session_free(s);
        fwm_model_free(model);
        free(f.data);
    }
}

static void step_modes_bit_identical(void) {
    for (size_t k = 0; k < sizeof SHAPES / sizeof SHAPES[0]; k++) {
        gfw_file f;
        fwm_model *model = write_gfw("eq.gguf", SHAPES[k], 20 + k, &f);
        if (!model) continue;
        rt_check_step_modes_random(model, 40, 6, 1 + k); /* 40 > the 32-session chunk */
        rt_check_step_modes_random(model, 3, 25, 2 + k);
        fwm_model_free(model);
        free(f.data);
    }
}

/* The GFW's blob: its size and layout, dims that overflow or disagree, non-finite values and an
 * unknown version, each refused by name, the session untouched. */
static void export_import(void) {
    gfw_file f;
    shape sh = {3, 4, 2, 5}; /* F1 [4, 8], F2 [4, 5] */
    fwm_model *model = write_gfw("blob.gguf", sh, 41, &f);
    if (!model) return;
    fwm_error err;
    fwm_session *s = NULL, *t = NULL;
    CHECK_OK(fwm_session_create(model, &s, &err), err);
    CHECK_OK(fwm_session_create(model, &t, &err), err);
    uint32_t tokens[17];
    rt_random_tokens(tokens, 17, V_TEST, 5);
    CHECK_OK(fwm_session_step_sequence(s, tokens, 17, NULL, &err), err);
    size_t size = 0;
    unsigned char *blob = rt_export(s, &size);
    if (!blob) return;
    /* h_F 4, h_S 2, F1 32, F2 20 */
    CHECK_INT(size, 56 + 4 * (4 + 2 + 32 + 20));
    /* the body is h_F, h_S, F1, F2 as the session holds them */
    CHECK(memcmp(blob + 48, s->h, 16) == 0);
    CHECK(memcmp(blob + 64, s->c, 8) == 0);
    CHECK(memcmp(blob + 72, s->F, 128) == 0);
    CHECK(memcmp(blob + 200, s->F + fwm__gfw_of(model)->f2_offset, 80) == 0);
    CHECK_OK(fwm_session_import(t, blob, size, &err), err);
    CHECK(memcmp(s->h, t->h, s->state_bytes) == 0);
    size_t t_size = 0;
    unsigned char *t_before = rt_export(t, &t_size);
    unsigned char *copy = malloc(size);
    /* dims whose size overflows, with a checksum that holds */
    memcpy(copy, blob, size);
    for (int i = 32; i < 44; i++) copy[i] = 0xff;
    rt_reseal(copy, size);
    CHECK_STATUS(fwm_session_import(t, copy, size, &err), FWM_ERR_STATE_CORRUPT, &err);
    CHECK_CONTAINS(err.message, "m=4294967295 N=4294967295 E=4294967295) implies 0 bytes");
    /* m zero, a reserved field set */
    static const struct {
        int at;
        uint32_t value;
    } edits[] = {{32, 0}, {44, 1}};
    for (size_t e = 0; e < 2; e++) {
        memcpy(copy, blob, size);
        for (int i = 0; i < 4; i++) copy[edits[e].at + i] = (unsigned char)(edits[e].value >> (8 * i));
        rt_reseal(copy, size);
        CHECK_STATUS(fwm_session_import(t, copy, size, &err), FWM_ERR_STATE_CORRUPT, &err);
        CHECK_CONTAINS(err.message, "implies 0 bytes");
    }
    /* N 2 and E 3 swapped with m kept: N + m E differs, refused by size; N 3, E 2: the same total
     * would need m (2m + E + 2) + N equal, which here it is not either */
    memcpy(copy, blob, size);
    copy[36] = 3, copy[40] = 2;
    rt_reseal(copy, size);
    CHECK_STATUS(fwm_session_import(t, copy, size, &err), FWM_ERR_STATE_CORRUPT, &err);
    CHECK_CONTAINS(err.message, "implies");
    /* dims of the same size that differ from the model's: N 6 and E 2 (6 + 4 * 12 = 2 + 4 * 13) */
    memcpy(copy, blob, size);
    copy[36] = 6, copy[40] = 2;
    rt_reseal(copy, size);
    CHECK_STATUS(fwm_session_import(t, copy, size, &err), FWM_ERR_STATE_CORRUPT, &err);
    CHECK_CONTAINS(err.message, "state blob dims m=4 N=6 E=2 differ from the model's m=4 N=2 E=3");
    /* non-finite values, named by where they are */
    static const struct {
        size_t index;
        const char *name;
    } places[] = {{3, "h_F[3]"}, {5, "h_S[1]"}, {6 + 9, "F1 element 9"}, {6 + 32 + 19, "F2 element 19"}};
    for (size_t e = 0; e < 4; e++) {
        memcpy(copy, blob, size);
        const float nan = NAN;
        memcpy(copy + 48 + 4 * places[e].index, &nan, 4);
        rt_reseal(copy, size);
        CHECK_STATUS(fwm_session_import(t, copy, size, &err), FWM_ERR_STATE_CORRUPT, &err);
        CHECK_CONTAINS(err.message, places[e].name);
    }
    /* an unknown version (3 is the stacked FWM's: that blob would be another architecture's) */
    memcpy(copy, blob, size);
    copy[4] = 4;
    rt_reseal(copy, size);
    CHECK_STATUS(fwm_session_import(t, copy, size, &err), FWM_ERR_STATE_CORRUPT, &err);
    CHECK_CONTAINS(err.message, "state blob version is 4, expected 2 (a 'gfw' session's state)");
    size_t after_size = 0;
    unsigned char *t_after = rt_export(t, &after_size);
    CHECK(memcmp(t_before, t_after, t_size) == 0);

    free(t_after), free(t_before);
    free(copy), free(blob);
    fwm_session_free(s), fwm_session_free(t);
    fwm_model_free(model);
    free(f.data);
}

static fwm_status model_write(const char *path, const void *spec, fwm_error *err) {
    return fwm__gfw_model_write(path, spec, err);
}

static void allocation_failures(void) {
    /* a batch step large enough to need heap scratch: the paper's sizes, 40 sessions */
    gfw_file big;
    fwm_model *m = write_gfw("allocb.gguf", SHAPES[3], 52, &big);
    free(big.data);
    uint32_t tokens[40];
    rt_random_tokens(tokens, 40, V_TEST, 8);
    rt_check_batch_oom(m, tokens, 1);
    fwm_model_free(m);
    /* writing */
    fwm_gfw_hparams hp;
    fwm__gfw_hparams_defaults(&hp);
    hp.vocab_size = V_TEST, hp.embedding_length = 2, hp.fast_hidden = 2, hp.slow_hidden = 2;
    hp.slow_inner = 2, hp.eos_token_id = 1;
    float zeros[512] = {0};
    fwm_gfw_write_spec spec = {.hp = hp, .head.tokens = vocabulary};
    for (size_t i = 0; i < fwm__gfw_tensor_count(&hp); i++) spec.tensors[i] = zeros;
    rt_check_write_oom(model_write, &spec, rt_path("w.gguf"));
}

int main(void) {
    if (!rt_dir_make("test-gfw-runtime")) return 1;
    static const check_case cases[] = {
        {"info_and_reference", info_and_reference},
        {"step_modes_bit_identical", step_modes_bit_identical},
        {"export_import", export_import},
        {"allocation_failures", allocation_failures},
    };
    int status = check_run_cases("test_gfw_runtime", cases, sizeof cases / sizeof cases[0]);
    static const char *const files[] = {"ref.gguf", "eq.gguf", "blob.gguf", "allocb.gguf"};
    rt_dir_remove(files, sizeof files / sizeof files[0]);
    return status;
}
