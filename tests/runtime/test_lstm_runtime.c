/* test_lstm_runtime.c - what only the LSTM baseline does in the runtime, through the public API on
 * files written by fwm__lstm_model_write: loading and model info; the step against a
 * double-precision evaluation of docs/MODEL.md's equations written out here; single, sequence and
 * batched steps bit-identical (with and without the input-gate table, residual or not, one layer or
 * several); reset; the prediction from the state; its blob's dims and values refused; allocation
 * failures while stepping and writing. What every architecture shares (prime, fork, refusals,
 * export / import and its refusals, allocation failures while loading) is runtime_lstm
 * (test_arch_runtime.c). */
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "fwm/fwm.h"
#include "fwm_alloc.h"
#include "fwm_rng.h"
#include "lstm/lstm_init.h"
#include "lstm/lstm_runtime.h"
#include "lstm/lstm_schema.h"
#include "runtime_test_util.h"

static const char *const vocabulary[] = {"<pad>", "<eos>", ".", "?", "john", "mary", "garden",
                                         "kitchen", "went", "to", "the", "where", "is"};
#define V_TEST 13u

typedef struct lstm_file {
    fwm_lstm_hparams hp;
    float *data;
    const float *tensors[FWM_LSTM_MAX_TENSORS];
} lstm_file;

/* Write an LSTM model (the contract's initialisation, then every tensor nudged so biases are
 * non-zero) to `name`; keeps the weights in *f for the reference. */
static fwm_model *write_lstm(const char *name, uint32_t L, uint32_t E, uint32_t H, bool residual,
                             uint64_t seed, bool prime, lstm_file *f) {
    fwm_lstm_hparams hp;
    fwm__lstm_hparams_defaults(&hp);
    hp.vocab_size = V_TEST, hp.embedding_length = E, hp.hidden_size = H, hp.layer_count = L;
    hp.residual = residual, hp.forget_bias = 0.75f;
    size_t n = fwm__lstm_tensor_count(&hp), total = 0, counts[FWM_LSTM_MAX_TENSORS];
    for (size_t i = 0; i < n; i++) {
        char tn[48];
        uint64_t rows, cols;
        fwm__lstm_tensor_at(&hp, i, tn, &rows, &cols);
        counts[i] = (size_t)(rows * cols);
        total += counts[i];
    }
    f->hp = hp;
    f->data = malloc(total * sizeof(float));
    float *t[FWM_LSTM_MAX_TENSORS];
    float *p = f->data;
    for (size_t i = 0; i < n; i++) t[i] = p, f->tensors[i] = p, p += counts[i];
    fwm__lstm_init_weights(&hp, seed, t);
    fwm__rng rng;
    fwm__rng_seed(&rng, seed, 99);
    for (size_t k = 0; k < total; k++) f->data[k] += (float)fwm__rng_uniform(&rng, -0.3, 0.3);
    const uint32_t prime_tokens[3] = {1, 11, 12};
    fwm_lstm_write_spec spec = {.hp = hp,
                                .head = rt_write_head("test lstm", vocabulary,
                                                      prime ? prime_tokens : NULL, 3)};
    for (size_t i = 0; i < n; i++) spec.tensors[i] = t[i];
    fwm_error err;
    CHECK_OK(fwm__lstm_model_write(rt_path(name), &spec, &err), err);
    fwm_model *model = NULL;
    CHECK_OK(fwm_model_load(rt_path(name), NULL, &model, &err), err);
    return model;
}

/* ---- the reference: docs/MODEL.md's equations in double precision ------------------------------ */

typedef struct ref_state {
    double h[4][16], c[4][16];
} ref_state;

static double sig(double x) { return 1.0 / (1.0 + exp(-x)); }

static void ref_step(const lstm_file *f, ref_state *s, uint32_t x, double *logits) {
    const fwm_lstm_hparams *hp = &f->hp;
    size_t E = hp->embedding_length, H = hp->hidden_size, L = hp->layer_count;
    double in[16], y[16], g[64];
    for (size_t k = 0; k < E; k++) in[k] = f->tensors[0][x * E + k];
    size_t in_len = E;
    for (size_t l = 0; l < L; l++) {
        const float *wih = f->tensors[1 + 3 * l], *whh = f->tensors[2 + 3 * l], *b = f->tensors[3 + 3 * l];
        for (size_t r = 0; r < 4 * H; r++) {
            double a = b[r];
            for (size_t k = 0; k < in_len; k++) a += (double)wih[r * in_len + k] * in[k];
            for (size_t k = 0; k < H; k++) a += (double)whh[r * H + k] * s->h[l][k];
            g[r] = a;
        }
        for (size_t k = 0; k < H; k++) {
            double i = sig(g[k]), fg = sig(g[H + k] + hp->forget_bias), z = tanh(g[2 * H + k]),
                   o = sig(g[3 * H + k]);
            s->c[l][k] = fg * s->c[l][k] + i * z;
            s->h[l][k] = o * tanh(s->c[l][k]);
        }
        for (size_t k = 0; k < H; k++) y[k] = s->h[l][k] + (hp->residual && l >= 1 ? in[k] : 0.0);
        memcpy(in, y, sizeof y);
        in_len = H;
    }
    const float *ws = f->tensors[1 + 3 * L], *bs = f->tensors[2 + 3 * L];
    for (size_t v = 0; v < hp->vocab_size; v++) {
        double a = bs[v];
        for (size_t k = 0; k < H; k++) a += (double)ws[v * H + k] * in[k];
        logits[v] = a;
    }
}

static void random_tokens(uint32_t *t, size_t n, uint64_t seed) {
    fwm__rng rng;
    fwm__rng_seed(&rng, seed, 7);
    for (size_t i = 0; i < n; i++) t[i] = (uint32_t)fwm__rng_below(&rng, V_TEST);
}

static void info_and_reference(void) {
    lstm_file f;
    fwm_model *model = write_lstm("ref.gguf", 3, 5, 7, true, 11, false, &f);
    if (!model) return;
    fwm_model_info info;
    fwm_model_get_info(model, &info);
    CHECK_STR(info.architecture, "lstm");
    CHECK_INT(info.layer_count, 3);
    CHECK_INT(info.vocab_size, V_TEST);
    CHECK_INT(info.embedding_length, 5);
    CHECK_INT(info.hidden_size, 7);
    CHECK(info.residual);
    CHECK(info.forget_bias == 0.75f);
    CHECK_INT(info.memory_s, 0);
    CHECK_INT(info.session_state_floats, 2 * 3 * 7);
    CHECK_INT(info.state_blob_bytes, 48 + 8 * 3 * 7);
    /* V E + (4H E + 4H H + 4H) + 2 (4H H + 4H H + 4H) + V H + V */
    CHECK_U64(info.parameter_count, 13 * 5 + (28 * 5 + 28 * 7 + 28) + 2 * (28 * 7 + 28 * 7 + 28) + 13 * 7 + 13);
    CHECK(info.has_checksum && info.checksum_verified);
    CHECK_STR(info.name, "test lstm");
    CHECK_INT(info.prime_token_count, 1); /* the default: <eos> */
    CHECK_INT(info.prime_tokens[0], 1);
    CHECK(info.session_state_bytes >= info.session_state_floats * sizeof(float));

    fwm_session *s = NULL;
    fwm_error err;
    CHECK_OK(fwm_session_create(model, &s, &err), err);
    ref_state rs;
    memset(&rs, 0, sizeof rs);
    uint32_t tokens[40];
    random_tokens(tokens, 40, 3);
    double worst = 0;
    for (size_t i = 0; i < 40; i++) {
        float logits[V_TEST];
        double want[V_TEST];
        CHECK_OK(fwm_session_step(s, tokens[i], logits, &err), err);
        ref_step(&f, &rs, tokens[i], want);
        for (size_t v = 0; v < V_TEST; v++) {
            double d = fabs(logits[v] - want[v]) / (1.0 + fabs(want[v]));
            if (d > worst) worst = d;
        }
    }
    CHECK_LE(worst, 2e-5);
    CHECK_INT(fwm_session_position(s), 40);
    /* reset: zero state, as a new session */
    fwm_session_reset(s);
    CHECK_INT(fwm_session_position(s), 0);
    for (size_t k = 0; k < 21; k++) CHECK(s->h[k] == 0.0f && s->c[k] == 0.0f);
    fwm_session_free(s);
    fwm_model_free(model);
    free(f.data);
}

static void step_modes_bit_identical(void) {
    static const struct {
        uint32_t L, E, H;
        bool residual;
    } shapes[] = {{1, 4, 5, false}, {3, 6, 9, true}, {2, 16, 16, false}, {4, 3, 12, true}};
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        lstm_file f;
        fwm_model *model = write_lstm("eq.gguf", shapes[k].L, shapes[k].E, shapes[k].H,
                                      shapes[k].residual, 20 + k, false, &f);
        if (!model) continue;
        rt_check_step_modes_random(model, 40, 6, 46); /* 40 > the 32-session chunk */
        rt_check_step_modes_random(model, 3, 25, 28);
        /* without the input-gate table the step computes W_ih Emb[x] + b itself: same bits */
        float with[V_TEST], without[V_TEST];
        uint32_t tokens[12];
        random_tokens(tokens, 12, 77);
        fwm_session *s = NULL;
        fwm_error err;
        CHECK_OK(fwm_session_create(model, &s, &err), err);
        CHECK_OK(fwm_session_step_sequence(s, tokens, 12, NULL, &err), err);
        CHECK_OK(fwm_session_step(s, 4, with, &err), err);
        fwm_lstm_model *lm = model->arch_data;
        float *table = lm->input_gates;
        CHECK(table != NULL);
        lm->input_gates = NULL;
        fwm_session_reset(s);
        CHECK_OK(fwm_session_step_sequence(s, tokens, 12, NULL, &err), err);
        CHECK_OK(fwm_session_step(s, 4, without, &err), err);
        lm->input_gates = table;
        CHECK(memcmp(with, without, sizeof with) == 0);
        fwm_session_free(s);
        fwm_model_free(model);
        free(f.data);
    }
}

/* The prediction from the state: the start scores for a primed session, the step's bits after
 * every step (two layers, residual), the output bias for a zero state; nothing changes. */
static void predictions(void) {
    lstm_file f;
    fwm_model *model = write_lstm("prime.gguf", 2, 5, 6, true, 31, true, &f);
    if (!model) return;
    const float *start = fwm_model_start_logits(model);
    float predicted[V_TEST], stepped[V_TEST];
    fwm_session *fresh = NULL;
    fwm_error err;
    CHECK_OK(fwm_session_create(model, &fresh, &err), err);
    fwm_session_prime(fresh);
    CHECK_OK(fwm_session_predict(fresh, predicted, &err), err);
    CHECK(start && memcmp(predicted, start, sizeof predicted) == 0);
    uint32_t text[20];
    random_tokens(text, 20, 61);
    for (size_t i = 0; i < 20; i++) {
        CHECK_OK(fwm_session_step(fresh, text[i], stepped, &err), err);
        float h_before[12];
        memcpy(h_before, fresh->h, sizeof h_before);
        CHECK_OK(fwm_session_predict(fresh, predicted, &err), err);
        CHECK(memcmp(predicted, stepped, sizeof predicted) == 0);
        CHECK(memcmp(h_before, fresh->h, sizeof h_before) == 0);
        CHECK_INT(fwm_session_position(fresh), 4 + i);
    }
    fwm_session_reset(fresh);
    CHECK_OK(fwm_session_predict(fresh, predicted, &err), err);
    for (uint32_t v = 0; v < V_TEST; v++) CHECK(predicted[v] == f.tensors[fwm__lstm_tensor_count(&f.hp) - 1][v]);
    fwm_session_free(fresh);
    fwm_model_free(model);
    free(f.data);
}

/* The LSTM's blob: dims whose size overflows and a non-finite value, each refused by name. */
static void export_import(void) {
    lstm_file f;
    fwm_model *model = write_lstm("blob.gguf", 2, 4, 5, true, 41, false, &f);
    if (!model) return;
    fwm_error err;
    fwm_session *s = NULL, *t = NULL;
    CHECK_OK(fwm_session_create(model, &s, &err), err);
    CHECK_OK(fwm_session_create(model, &t, &err), err);
    uint32_t tokens[17];
    random_tokens(tokens, 17, 5);
    CHECK_OK(fwm_session_step_sequence(s, tokens, 17, NULL, &err), err);
    size_t size = 0;
    unsigned char *blob = rt_export(s, &size);
    if (!blob) return;
    CHECK_INT(size, 48 + 8 * 2 * 5);
    unsigned char *copy = malloc(size);
    /* dims whose size overflows, with a checksum that holds */
    memcpy(copy, blob, size);
    for (int i = 32; i < 40; i++) copy[i] = 0xff;
    rt_reseal(copy, size);
    CHECK_STATUS(fwm_session_import(t, copy, size, &err), FWM_ERR_STATE_CORRUPT, &err);
    CHECK_CONTAINS(err.message, "L=4294967295 H=4294967295");
    /* a non-finite value */
    memcpy(copy, blob, size);
    const float inf = INFINITY;
    memcpy(copy + 40 + 4 * 3, &inf, 4);
    rt_reseal(copy, size);
    CHECK_STATUS(fwm_session_import(t, copy, size, &err), FWM_ERR_STATE_CORRUPT, &err);
    CHECK_CONTAINS(err.message, "h[0][3] is not finite");
    CHECK_INT(fwm_session_position(t), 0);
    free(copy), free(blob);
    fwm_session_free(s), fwm_session_free(t);
    fwm_model_free(model);
    free(f.data);
}

static fwm_status model_write(const char *path, const void *spec, fwm_error *err) {
    return fwm__lstm_model_write(path, spec, err);
}

static void allocation_failures(void) {
    lstm_file big;
    fwm_model *m = write_lstm("allocb.gguf", 1, 4, 32, false, 52, false, &big); /* H = 32: heap scratch */
    free(big.data);
    uint32_t tokens[40];
    random_tokens(tokens, 40, 8);
    rt_check_batch_oom(m, tokens, 0);
    fwm_model_free(m);
    /* writing */
    fwm_lstm_hparams hp;
    fwm__lstm_hparams_defaults(&hp);
    hp.vocab_size = V_TEST, hp.embedding_length = 3, hp.hidden_size = 2, hp.layer_count = 1;
    float zeros[256] = {0};
    fwm_lstm_write_spec spec = {.hp = hp, .head.tokens = vocabulary};
    for (size_t i = 0; i < fwm__lstm_tensor_count(&hp); i++) spec.tensors[i] = zeros;
    rt_check_write_oom(model_write, &spec, rt_path("w.gguf"));
}

int main(void) {
    if (!rt_dir_make("test-lstm-runtime")) return 1;
    static const check_case cases[] = {
        {"info_and_reference", info_and_reference},
        {"step_modes_bit_identical", step_modes_bit_identical},
        {"predictions", predictions},
        {"export_import", export_import},
        {"allocation_failures", allocation_failures},
    };
    int status = check_run_cases("test_lstm_runtime", cases, sizeof cases / sizeof cases[0]);
    static const char *const files[] = {"ref.gguf", "eq.gguf", "prime.gguf", "blob.gguf", "allocb.gguf"};
    rt_dir_remove(files, sizeof files / sizeof files[0]);
    return status;
}
