/* test_mnm_runtime.c - what only the Metalearned Neural Memory baseline does in the runtime,
 * through the public API on files written by fwm__mnm_model_write: loading and model info; the step against a
 * double-precision evaluation of docs/MODEL.md's equations written out here; single, sequence and
 * batched steps bit-identical (with and without the input-gate table, one to three memory layers,
 * one to three heads); reset and create restore the fixed initial memory (not zero); its blob's
 * size, dims and values refused by name; allocation failures while stepping and writing. What every
 * architecture shares (prime, fork, refusals, export / import and its refusals, allocation failures
 * while loading, creating and forking) is runtime_mnm (test_arch_runtime.c). */
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "fwm/fwm.h"
#include "fwm_alloc.h"
#include "fwm_rng.h"
#include "mnm/mnm_init.h"
#include "mnm/mnm_runtime.h"
#include "mnm/mnm_schema.h"
#include "runtime_test_util.h"

static const char *const vocabulary[] = {"<pad>", "<eos>", ".", "?", "john", "mary", "garden",
                                         "kitchen", "went", "to", "the", "where", "is"};
#define V_TEST 13u

typedef struct mnm_file {
    fwm_mnm_hparams hp;
    float *data;
    const float *tensors[FWM_MNM_MAX_TENSORS];
} mnm_file;

typedef struct shape {
    uint32_t E, H, Nh, dk, dv, D, Lm, dout;
} shape;

/* Write an MNM model (the contract's initialisation, then every tensor nudged, and the rate bias
 * raised so that writes are strong) to `name`; keeps the weights in *f for the reference. */
static fwm_model *write_mnm(const char *name, shape sh, uint64_t seed, mnm_file *f) {
    fwm_mnm_hparams hp;
    fwm__mnm_hparams_defaults(&hp);
    hp.vocab_size = V_TEST, hp.embedding_length = sh.E, hp.hidden_size = sh.H;
    hp.head_count = sh.Nh, hp.key_length = sh.dk, hp.value_length = sh.dv;
    hp.memory_hidden = sh.D, hp.memory_layers = sh.Lm, hp.output_length = sh.dout;
    hp.forget_bias = 0.5f;
    size_t n = fwm__mnm_tensor_count(&hp), total = 0, counts[FWM_MNM_MAX_TENSORS];
    for (size_t i = 0; i < n; i++) {
        char tn[48];
        uint64_t rows, cols;
        fwm__mnm_tensor_at(&hp, i, tn, &rows, &cols);
        counts[i] = (size_t)(rows * cols);
        total += counts[i];
    }
    f->hp = hp;
    f->data = malloc(total * sizeof(float));
    float *t[FWM_MNM_MAX_TENSORS];
    float *p = f->data;
    for (size_t i = 0; i < n; i++) t[i] = p, f->tensors[i] = p, p += counts[i];
    fwm__mnm_init_weights(&hp, seed, t);
    fwm__rng rng;
    fwm__rng_seed(&rng, seed, 99);
    for (size_t k = 0; k < total; k++) f->data[k] += (float)fwm__rng_uniform(&rng, -0.3, 0.3);
    t[7][0] = 1.0f; /* mnm.rate.bias */
    fwm_mnm_write_spec spec = {.hp = hp, .head.name = "test mnm", .head.tokens = vocabulary};
    for (size_t i = 0; i < n; i++) spec.tensors[i] = t[i];
    fwm_error err;
    CHECK_OK(fwm__mnm_model_write(rt_path(name), &spec, &err), err);
    fwm_model *model = NULL;
    CHECK_OK(fwm_model_load(rt_path(name), NULL, &model, &err), err);
    return model;
}

/* ---- the reference: docs/MODEL.md's equations in double precision ------------------------------ */

#define RMAX 64 /* every size in these tests is at most this */

typedef struct ref_state {
    double h[RMAX], c[RMAX], r[RMAX];
    double M[3][RMAX][RMAX];
} ref_state;

static double sig(double x) { return 1.0 / (1.0 + exp(-x)); }

static void ref_reset(const mnm_file *f, ref_state *s) {
    memset(s, 0, sizeof *s);
    for (uint32_t l = 0; l < f->hp.memory_layers; l++) {
        uint64_t rows, cols;
        fwm__mnm_memory_shape(&f->hp, l, &rows, &cols);
        for (uint64_t i = 0; i < rows; i++)
            for (uint64_t k = 0; k < cols; k++) s->M[l][i][k] = f->tensors[10 + l][i * cols + k];
    }
}

/* y = W x + b for W [rows, cols] (b may be NULL). */
static void ref_affine(const float *W, const float *b, size_t rows, size_t cols, const double *x, double *y) {
    for (size_t i = 0; i < rows; i++) {
        double a = b ? b[i] : 0.0;
        for (size_t k = 0; k < cols; k++) a += (double)W[i * cols + k] * x[k];
        y[i] = a;
    }
}

/* f_M(k), keeping every layer's output in z[l + 1] (z[0] = k). */
static void ref_memory(const mnm_file *f, const ref_state *s, const double *key, double z[4][RMAX]) {
    uint32_t L = f->hp.memory_layers;
    memcpy(z[0], key, sizeof z[0]);
    for (uint32_t l = 0; l < L; l++) {
        uint64_t rows, cols;
        fwm__mnm_memory_shape(&f->hp, l, &rows, &cols);
        for (uint64_t i = 0; i < rows; i++) {
            double a = 0;
            for (uint64_t k = 0; k < cols; k++) a += s->M[l][i][k] * z[l][k];
            z[l + 1][i] = l + 1 < L ? tanh(a) : a;
        }
    }
}

static void ref_step(const mnm_file *f, ref_state *s, uint32_t x, double *logits) {
    const fwm_mnm_hparams *hp = &f->hp;
    size_t E = hp->embedding_length, H = hp->hidden_size, Nh = hp->head_count, dk = hp->key_length,
           dv = hp->value_length, L = hp->memory_layers, nt = (size_t)fwm__mnm_target_rows(hp),
           nu = (size_t)fwm__mnm_interact_rows(hp), Lt = FWM_MNM_HEAD_TENSORS + L;
    double in[2 * RMAX], g[4 * RMAX], u[16 * RMAX], t[3][4 * RMAX], z[3][4][RMAX], out[4][RMAX];
    for (size_t k = 0; k < E; k++) in[k] = f->tensors[0][x * E + k];
    for (size_t k = 0; k < dv; k++) in[E + k] = s->r[k];
    ref_affine(f->tensors[1], f->tensors[3], 4 * H, E + dv, in, g);
    for (size_t r = 0; r < 4 * H; r++)
        for (size_t k = 0; k < H; k++) g[r] += (double)f->tensors[2][r * H + k] * s->h[k];
    for (size_t k = 0; k < H; k++) {
        double i = sig(g[k]), fg = sig(g[H + k] + hp->forget_bias), zz = tanh(g[2 * H + k]),
               o = sig(g[3 * H + k]);
        s->c[k] = fg * s->c[k] + i * zz;
        s->h[k] = o * tanh(s->c[k]);
    }
    ref_affine(f->tensors[4], f->tensors[5], nu, H, s->h, u);
    for (size_t k = 0; k < nu; k++) u[k] = tanh(u[k]);
    double b;
    ref_affine(f->tensors[6], f->tensors[7], 1, dk, u + Nh * (2 * dk + dv), &b);
    double beta = sig(b);
    for (size_t i = 0; i < Nh; i++) {
        ref_affine(f->tensors[8], f->tensors[9], nt, dv, u + 2 * Nh * dk + i * dv, t[i]);
        ref_memory(f, s, u + Nh * dk + i * dk, z[i]);
    }
    size_t at = 0;
    for (uint32_t l = 0; l < L; l++) {
        uint64_t rows, cols;
        fwm__mnm_memory_shape(hp, l, &rows, &cols);
        for (uint64_t r = 0; r < rows; r++)
            for (uint64_t k = 0; k < cols; k++) {
                double sum = 0;
                for (size_t i = 0; i < Nh; i++) sum += (z[i][l + 1][r] - t[i][at + r]) * z[i][l][k];
                s->M[l][r][k] -= beta * 2.0 / (double)(Nh * rows) * sum;
            }
        at += rows;
    }
    for (size_t k = 0; k < dv; k++) s->r[k] = 0;
    for (size_t i = 0; i < Nh; i++) {
        double zr[4][RMAX];
        ref_memory(f, s, u + i * dk, zr);
        for (size_t k = 0; k < dv; k++) s->r[k] += zr[L][k] / (double)Nh;
    }
    (void)out;
    double hr[2 * RMAX], y[RMAX];
    for (size_t k = 0; k < H; k++) hr[k] = s->h[k];
    for (size_t k = 0; k < dv; k++) hr[H + k] = s->r[k];
    ref_affine(f->tensors[Lt], f->tensors[Lt + 1], hp->output_length, H + dv, hr, y);
    ref_affine(f->tensors[Lt + 2], f->tensors[Lt + 3], V_TEST, hp->output_length, y, logits);
}

static void random_tokens(uint32_t *t, size_t n, uint64_t seed) {
    fwm__rng rng;
    fwm__rng_seed(&rng, seed, 7);
    for (size_t i = 0; i < n; i++) t[i] = (uint32_t)fwm__rng_below(&rng, V_TEST);
}

static const shape SHAPES[] = {
    {5, 7, 2, 4, 3, 6, 3, 5},   /* three layers, two heads */
    {4, 5, 1, 3, 6, 2, 1, 4},   /* one layer [d_v, d_k], one head */
    {6, 8, 3, 5, 4, 7, 2, 9},   /* two layers, three heads */
    {16, 16, 3, 12, 12, 12, 3, 16},
};

/* The initial memory of `model`, as a flat copy of its tensors in layer order. */
static int memory_is_initial(const fwm_session *s, const mnm_file *f) {
    size_t at = 0;
    for (uint32_t l = 0; l < f->hp.memory_layers; l++) {
        uint64_t rows, cols;
        fwm__mnm_memory_shape(&f->hp, l, &rows, &cols);
        if (memcmp(s->F + at, f->tensors[10 + l], rows * cols * sizeof(float)) != 0) return 0;
        at += rows * cols;
    }
    return 1;
}

static void info_and_reference(void) {
    for (size_t k = 0; k < sizeof SHAPES / sizeof SHAPES[0]; k++) {
        mnm_file f;
        fwm_model *model = write_mnm("ref.gguf", SHAPES[k], 11 + k, &f);
        if (!model) continue;
        const fwm_mnm_hparams *hp = &f.hp;
        fwm_model_info info;
        fwm_model_get_info(model, &info);
        CHECK_STR(info.architecture, "mnm");
        CHECK_INT(info.layer_count, 1);
        CHECK_INT(info.vocab_size, V_TEST);
        CHECK_INT(info.embedding_length, hp->embedding_length);
        CHECK_INT(info.hidden_size, hp->hidden_size);
        CHECK(info.forget_bias == 0.5f);
        CHECK_INT(info.memory_s, 0);
        uint64_t memory = fwm__mnm_memory_elements(hp);
        CHECK_INT(info.session_state_floats, 2 * hp->hidden_size + hp->value_length + memory);
        CHECK_INT(info.state_blob_bytes, 64 + 4 * info.session_state_floats);
        uint64_t params = 0;
        for (size_t i = 0; i < fwm__mnm_tensor_count(hp); i++) {
            char tn[48];
            uint64_t rows, cols;
            fwm__mnm_tensor_at(hp, i, tn, &rows, &cols);
            params += rows * cols;
        }
        CHECK_U64(info.parameter_count, params);
        CHECK(info.has_checksum && info.checksum_verified);
        CHECK_STR(info.name, "test mnm");
        CHECK(info.session_state_bytes >= info.session_state_floats * sizeof(float));

        fwm_session *s = NULL;
        fwm_error err;
        CHECK_OK(fwm_session_create(model, &s, &err), err);
        /* create: h = c = r = 0, the memory the model's initial memory */
        CHECK(memory_is_initial(s, &f));
        for (size_t i = 0; i < hp->hidden_size; i++) CHECK(s->h[i] == 0.0f && s->c[i] == 0.0f);
        for (size_t i = 0; i < hp->value_length; i++) CHECK(s->r[i] == 0.0f);
        ref_state rs;
        ref_reset(&f, &rs);
        uint32_t tokens[40];
        random_tokens(tokens, 40, 3 + k);
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
        /* the memory moved */
        CHECK(!memory_is_initial(s, &f));
        CHECK_INT(fwm_session_position(s), 40);
        /* reset: h, c, r zero and the initial memory back, as a new session */
        fwm_session_reset(s);
        CHECK_INT(fwm_session_position(s), 0);
        CHECK(memory_is_initial(s, &f));
        for (size_t i = 0; i < hp->hidden_size; i++) CHECK(s->h[i] == 0.0f && s->c[i] == 0.0f);
        for (size_t i = 0; i < hp->value_length; i++) CHECK(s->r[i] == 0.0f);
        fwm_session *fresh = NULL;
        CHECK_OK(fwm_session_create(model, &fresh, &err), err);
        float a[V_TEST], b[V_TEST];
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
        mnm_file f;
        fwm_model *model = write_mnm("eq.gguf", SHAPES[k], 20 + k, &f);
        if (!model) continue;
        rt_check_step_modes_random(model, 40, 6, 46); /* 40 > the 32-session chunk */
        rt_check_step_modes_random(model, 3, 25, 28);
        /* without the input-gate table the step computes W_ie Emb[x] + b itself: same bits */
        float with[V_TEST], without[V_TEST];
        uint32_t tokens[12];
        random_tokens(tokens, 12, 77);
        fwm_session *s = NULL;
        fwm_error err;
        CHECK_OK(fwm_session_create(model, &s, &err), err);
        CHECK_OK(fwm_session_step_sequence(s, tokens, 12, NULL, &err), err);
        CHECK_OK(fwm_session_step(s, 4, with, &err), err);
        fwm_mnm_model *mm = model->arch_data;
        float *table = mm->input_gates;
        CHECK(table != NULL);
        mm->input_gates = NULL;
        fwm_session_reset(s);
        CHECK_OK(fwm_session_step_sequence(s, tokens, 12, NULL, &err), err);
        CHECK_OK(fwm_session_step(s, 4, without, &err), err);
        mm->input_gates = table;
        CHECK(memcmp(with, without, sizeof with) == 0);
        fwm_session_free(s);
        fwm_model_free(model);
        free(f.data);
    }
}

/* The MNM's blob: its size, dims that overflow or disagree, non-finite values, each refused by name,
 * the session untouched. */
static void export_import(void) {
    mnm_file f;
    shape sh = {4, 5, 2, 3, 2, 4, 2, 3};
    fwm_model *model = write_mnm("blob.gguf", sh, 41, &f);
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
    /* H 5, r 2, the memory [4, 3] and [2, 4] */
    CHECK_INT(size, 64 + 4 * (10 + 2 + 12 + 8));
    CHECK_OK(fwm_session_import(t, blob, size, &err), err);
    CHECK(memcmp(s->h, t->h, s->state_bytes) == 0);
    size_t t_size = 0;
    unsigned char *t_before = rt_export(t, &t_size);
    unsigned char *copy = malloc(size);
    /* dims whose size overflows, with a checksum that holds */
    memcpy(copy, blob, size);
    for (int i = 32; i < 48; i++) copy[i] = 0xff;
    rt_reseal(copy, size);
    CHECK_STATUS(fwm_session_import(t, copy, size, &err), FWM_ERR_STATE_CORRUPT, &err);
    CHECK_CONTAINS(err.message, "H=4294967295 d_k=4294967295 d_v=4294967295 D=4294967295");
    /* zero or too many memory layers, a reserved field set */
    static const struct {
        int at;
        uint32_t value;
    } edits[] = {{48, 0}, {48, 17}, {52, 1}};
    for (size_t e = 0; e < 3; e++) {
        memcpy(copy, blob, size);
        for (int i = 0; i < 4; i++) copy[edits[e].at + i] = (unsigned char)(edits[e].value >> (8 * i));
        rt_reseal(copy, size);
        CHECK_STATUS(fwm_session_import(t, copy, size, &err), FWM_ERR_STATE_CORRUPT, &err);
        CHECK_CONTAINS(err.message, "implies 0 bytes");
    }
    /* H 4 and d_v 4: the same 2 H + d_v, but a larger memory ([4, 3] and [4, 4]): refused by size */
    memcpy(copy, blob, size);
    copy[32] = 4;
    copy[40] = 4;
    rt_reseal(copy, size);
    CHECK_STATUS(fwm_session_import(t, copy, size, &err), FWM_ERR_STATE_CORRUPT, &err);
    /* non-finite values, named by where they are */
    static const struct {
        size_t index;
        const char *name;
    } places[] = {{3, "h[3]"}, {7, "c[2]"}, {11, "r[1]"}, {12 + 5, "memory layer 0 element 5"},
                  {12 + 12 + 1, "memory layer 1 element 1"}};
    for (size_t e = 0; e < 5; e++) {
        memcpy(copy, blob, size);
        const float nan = NAN;
        memcpy(copy + 56 + 4 * places[e].index, &nan, 4);
        rt_reseal(copy, size);
        CHECK_STATUS(fwm_session_import(t, copy, size, &err), FWM_ERR_STATE_CORRUPT, &err);
        CHECK_CONTAINS(err.message, places[e].name);
    }
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
    return fwm__mnm_model_write(path, spec, err);
}

static void allocation_failures(void) {
    mnm_file big;
    const shape wide = {8, 64, 2, 8, 8, 8, 2, 8}; /* 4H = 256 gates a session: heap scratch */
    fwm_model *m = write_mnm("allocb.gguf", wide, 52, &big);
    free(big.data);
    uint32_t tokens[40];
    random_tokens(tokens, 40, 8);
    rt_check_batch_oom(m, tokens, 0);
    fwm_model_free(m);
    /* writing */
    fwm_mnm_hparams hp;
    fwm__mnm_hparams_defaults(&hp);
    hp.vocab_size = V_TEST, hp.embedding_length = 3, hp.hidden_size = 2, hp.head_count = 1;
    hp.key_length = hp.value_length = hp.memory_hidden = 2, hp.memory_layers = 2, hp.output_length = 2;
    float zeros[256] = {0};
    fwm_mnm_write_spec spec = {.hp = hp, .head.tokens = vocabulary};
    for (size_t i = 0; i < fwm__mnm_tensor_count(&hp); i++) spec.tensors[i] = zeros;
    rt_check_write_oom(model_write, &spec, rt_path("w.gguf"));
}

int main(void) {
    if (!rt_dir_make("test-mnm-runtime")) return 1;
    static const check_case cases[] = {
        {"info_and_reference", info_and_reference},
        {"step_modes_bit_identical", step_modes_bit_identical},
        {"export_import", export_import},
        {"allocation_failures", allocation_failures},
    };
    int status = check_run_cases("test_mnm_runtime", cases, sizeof cases / sizeof cases[0]);
    static const char *const files[] = {"ref.gguf", "eq.gguf", "blob.gguf", "allocb.gguf"};
    rt_dir_remove(files, sizeof files / sizeof files[0]);
    return status;
}
