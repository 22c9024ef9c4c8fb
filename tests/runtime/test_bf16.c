/* test_bf16.c - BF16 matrix products (runtime/bf16_kernels.h, fwm.matmul_type "bf16"): the rounding
 * of vectors to BF16, the kernel's documented arithmetic on hand-made cases, the AVX512-BF16 kernel
 * against the portable one bit for bit (where the CPU has it), and BF16 models of the fwm and lstm
 * architectures made by fwm__convert_bf16: their own fingerprint, matrices kept BF16, logits near
 * the F32 model's but not equal, single / sequence / batched steps bit-identical, export / import,
 * and the converter's refusals. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bf16_kernels.h"
#include "convert_bf16.h"
#include "fwm/fwm.h"
#include "fwm_alloc.h"
#include "fwm_model_init.h"
#include "fwm_model_shape.h"
#include "fwm_rng.h"
#include "lstm/lstm_init.h"
#include "lstm/lstm_schema.h"
#include "mnm/mnm_hparams.h"
#include "model_internal.h"
#include "runtime_test_util.h"
#include "writer_common.h"

static float from_bits(uint32_t b) {
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

/* ---- the rounding ---------------------------------------------------------------------------- */

static void rounding(void) {
    CHECK_INT(fwm__bf16_from_float(1.0f), 0x3f80);
    CHECK_INT(fwm__bf16_from_float(-2.0f), 0xc000);
    CHECK_INT(fwm__bf16_from_float(from_bits(0x3f808000u)), 0x3f80); /* tie: to even (down) */
    CHECK_INT(fwm__bf16_from_float(from_bits(0x3f818000u)), 0x3f82); /* tie: to even (up) */
    CHECK_INT(fwm__bf16_from_float(from_bits(0x3f808001u)), 0x3f81); /* above the tie */
    CHECK_INT(fwm__bf16_from_float(from_bits(0x3f807fffu)), 0x3f80); /* below it */
    CHECK_INT(fwm__bf16_from_float(from_bits(0x00400000u)), 0x0000); /* subnormal: zero */
    CHECK_INT(fwm__bf16_from_float(from_bits(0x80400000u)), 0x8000); /* of its sign */
    CHECK_INT(fwm__bf16_from_float(from_bits(0x7f7fffffu)), 0x7f80); /* FLT_MAX rounds to inf */
    uint16_t nan = fwm__bf16_from_float(from_bits(0x7f800001u));      /* NaN stays NaN */
    CHECK((nan & 0x7f80) == 0x7f80 && (nan & 0x7f) != 0);
    float x[3] = {1.0f, 0.5f, -3.0f};
    uint16_t out[8];
    memset(out, 0xff, sizeof out);
    fwm__bf16_round(x, 3, out, 8);
    CHECK_INT(out[0], 0x3f80);
    CHECK_INT(out[1], 0x3f00);
    CHECK_INT(out[2], 0xc040);
    for (int i = 3; i < 8; i++) CHECK_INT(out[i], 0);
}

/* ---- the kernel's arithmetic ----------------------------------------------------------------- */

typedef void kernel_fn(const uint16_t *, size_t, size_t, size_t, const float *const *,
                       const float *const *, float *const *);

static void native_kernel(const uint16_t *W, size_t rows, size_t cols, size_t count,
                          const float *const *x, const float *const *bias, float *const *y) {
    CHECK(fwm__matvec_bf16_native(W, rows, cols, count, x, bias, y));
}

/* Hand-made rows whose bits show the definition: lane 0 of chunk 0 holds 1 (element 1), lane 0 of
 * chunk 1 two products of 2^-24 (elements 32, 33): each added on its own to 1 rounds back to 1
 * (ties to even), where a pair summed first (2^-23) or an exact dot product gives 1 + 2^-23. A
 * subnormal weight reads as zero. */
static void definition_on(kernel_fn *kernel) {
    uint16_t W[2 * 34];
    memset(W, 0, sizeof W);
    float x[34];
    for (int k = 0; k < 34; k++) x[k] = 0.0f;
    x[1] = 1.0f, x[32] = x[33] = 1.0f;
    W[1] = 0x3f80;                    /* 1 */
    W[32] = W[33] = 0x3380;           /* 2^-24 */
    W[34 + 1] = 0x3f80, W[34 + 5] = 0x0001; /* row 1: 1 and a subnormal weight */
    x[5] = 1e30f;
    const float *xs[1] = {x};
    float y[2];
    float *ys[1] = {y};
    kernel(W, 2, 34, 1, xs, NULL, ys);
    CHECK(y[0] == 1.0f);
    CHECK(y[1] == 1.0f); /* 1 + 1e30 * 2^-133 if the subnormal were read as itself */
    float bias[2] = {0.5f, -1.0f};
    const float *bs[1] = {bias};
    kernel(W, 2, 34, 1, xs, bs, ys);
    CHECK(y[0] == 1.5f);
    CHECK(y[1] == 0.0f);
}

static void kernel_definition(void) {
    definition_on(fwm__matvec_bf16_portable);
    if (fwm__bf16_native_available()) definition_on(native_kernel);
}

/* Random moderate weights and vectors (products and sums far from the subnormal range), the
 * kernel within float rounding of the dot product of the rounded values in double, and the native kernel
 * equal to the portable one bit for bit, with and without a bias, for every batch size. */
static void random_shapes(void) {
    static const size_t cols_list[] = {1, 5, 31, 32, 33, 64, 200, 257};
    static const size_t rows_list[] = {1, 3, 8, 13, 37};
    fwm__rng rng;
    fwm__rng_seed(&rng, 2024, 1);
    bool native = fwm__bf16_native_available();
    if (!native) printf("test_bf16: this CPU has no AVX512-BF16; the native kernel is not compared\n");
    for (size_t ci = 0; ci < sizeof cols_list / sizeof cols_list[0]; ci++)
        for (size_t ri = 0; ri < sizeof rows_list / sizeof rows_list[0]; ri++) {
            size_t rows = rows_list[ri], cols = cols_list[ci], count = 9;
            uint16_t *W = malloc(rows * cols * sizeof *W);
            float *x = malloc(count * cols * sizeof *x), *b = malloc(count * rows * sizeof *b);
            float *y1 = malloc(count * rows * sizeof *y1), *y2 = malloc(count * rows * sizeof *y2);
            float *y3 = malloc(count * rows * sizeof *y3);
            for (size_t k = 0; k < rows * cols; k++)
                W[k] = fwm__bf16_from_float((float)fwm__rng_uniform(&rng, -1, 1));
            for (size_t k = 0; k < count * cols; k++) x[k] = (float)fwm__rng_uniform(&rng, -2, 2);
            for (size_t k = 0; k < count * rows; k++) b[k] = (float)fwm__rng_uniform(&rng, -1, 1);
            const float *xs[9], *bs[9];
            float *p1[9], *p2[9], *p3[9];
            for (size_t j = 0; j < count; j++)
                xs[j] = x + j * cols, bs[j] = b + j * rows, p1[j] = y1 + j * rows,
                p2[j] = y2 + j * rows, p3[j] = y3 + j * rows;
            for (int with_bias = 0; with_bias < 2; with_bias++) {
                const float *const *bias = with_bias ? bs : NULL;
                fwm__matvec_bf16_portable(W, rows, cols, count, xs, bias, p1);
                for (size_t j = 0; j < count; j++)
                    for (size_t r = 0; r < rows; r++) {
                        double want = with_bias ? b[j * rows + r] : 0.0, size = fabs(want);
                        for (size_t k = 0; k < cols; k++) {
                            uint32_t wb = (uint32_t)W[r * cols + k] << 16;
                            uint32_t xb = (uint32_t)fwm__bf16_from_float(x[j * cols + k]) << 16;
                            double term = (double)from_bits(wb) * from_bits(xb);
                            want += term, size += fabs(term);
                        }
                        /* float rounding: at most one half ulp per addition */
                        CHECK_LE(fabs(y1[j * rows + r] - want), (double)(cols + 4) * 6e-8 * size);
                    }
                /* one vector at a time gives the same bits as the batch */
                for (size_t j = 0; j < count; j++)
                    fwm__matvec_bf16_portable(W, rows, cols, 1, xs + j, bias ? bias + j : NULL, p3 + j);
                CHECK_FLOATS_EQUAL(y3, y1, count * rows, "portable: one at a time vs batch");
                if (!native) continue;
                for (size_t n = 1; n <= count; n++) {
                    memset(y2, 0, count * rows * sizeof *y2);
                    CHECK(fwm__matvec_bf16_native(W, rows, cols, n, xs, bias, p2));
                    CHECK_FLOATS_EQUAL(y2, y1, n * rows, "native vs portable");
                }
            }
            free(W), free(x), free(b), free(y1), free(y2), free(y3);
        }
}

/* ---- BF16 models --------------------------------------------------------------------------- */

static const char *const words[] = {"<pad>", "<eos>", ".", "?", "a", "b", "c", "d", "e", "f",
                                    "g", "h", "i", "j", "k", "l", "m", "n", "o", "p"};
#define V_TEST 20u

static uint8_t *read_all(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) free(buf), buf = NULL;
    fclose(f);
    *size = (size_t)n;
    return buf;
}

/* An fwm model (E 40, H 45: a partial last chunk; S = R = T = 4, 2 reads) at `path`. */
static void write_fwm(const char *path) {
    fwm_hparams hp;
    fwm__hparams_defaults(&hp);
    hp.vocab_size = V_TEST, hp.embedding_length = 40, hp.hidden_size = 45;
    hp.memory_s = hp.memory_r = hp.memory_t = 4, hp.read_count = 2, hp.write_scale = 0.25f;
    hp.residual = true;
    uint64_t offsets[FWM_MAX_TENSORS + 1];
    fwm__tensor_offsets(&hp, offsets);
    float *data = malloc(offsets[FWM_TENSOR_COUNT] * sizeof(float));
    float *t[FWM_MAX_TENSORS];
    fwm_write_spec spec = {.hp = hp, .head.tokens = words};
    for (int i = 0; i < FWM_TENSOR_COUNT; i++) t[i] = data + offsets[i], spec.tensors[i] = t[i];
    fwm__model_init_weights(&hp, 7, t);
    fwm_error err;
    CHECK_OK(fwm__model_write(path, &spec, &err), err);
    free(data);
}

/* An lstm model (2 layers, E 33, H 37) at `path`. */
static void write_lstm(const char *path) {
    fwm_lstm_hparams hp;
    fwm__lstm_hparams_defaults(&hp);
    hp.vocab_size = V_TEST, hp.embedding_length = 33, hp.hidden_size = 37, hp.layer_count = 2;
    size_t n = fwm__lstm_tensor_count(&hp), total = 0, counts[FWM_LSTM_MAX_TENSORS];
    for (size_t i = 0; i < n; i++) {
        char tn[48];
        uint64_t rows, cols;
        fwm__lstm_tensor_at(&hp, i, tn, &rows, &cols);
        counts[i] = (size_t)(rows * cols), total += counts[i];
    }
    float *data = malloc(total * sizeof(float)), *t[FWM_LSTM_MAX_TENSORS], *p = data;
    fwm_lstm_write_spec spec = {.hp = hp, .head.tokens = words};
    for (size_t i = 0; i < n; i++) t[i] = p, spec.tensors[i] = p, p += counts[i];
    fwm__lstm_init_weights(&hp, 11, t);
    fwm_error err;
    CHECK_OK(fwm__lstm_model_write(path, &spec, &err), err);
    free(data);
}

/* Convert `in` to `out`; the model loaded from it. */
static fwm_model *convert(const char *in, const char *out, size_t *converted) {
    size_t size, out_size;
    uint8_t *buf = read_all(rt_path(in), &size), *twin = NULL;
    CHECK(buf != NULL);
    if (!buf) return NULL;
    fwm_error err;
    CHECK_OK(fwm__convert_bf16(buf, size, NULL, &twin, &out_size, converted, &err), err);
    free(buf);
    if (!twin) return NULL;
    CHECK_OK(fwm__write_atomically(rt_path(out), twin, out_size, &err), err);
    fwm__free(twin);
    fwm_model *model = NULL;
    CHECK_OK(fwm_model_load(rt_path(out), NULL, &model, &err), err);
    return model;
}

/* Session A stepped token by token, B as one sequence, C in batches beside two other sessions
 * (at other positions); their logits and exported states equal bit for bit; then A's state
 * imported into a fresh session steps as A does. */
static void check_modes(fwm_model *model, size_t steps) {
    fwm_model_info info;
    fwm_model_get_info(model, &info);
    size_t V = info.vocab_size;
    uint32_t tokens[64], other[128];
    rt_random_tokens(tokens, steps, (uint32_t)V, 5);
    rt_random_tokens(other, 2 * steps, (uint32_t)V, 6);
    float *la = malloc(steps * V * sizeof(float)), *lb = malloc(steps * V * sizeof(float));
    float *lc = malloc(3 * V * sizeof(float)), *lcs = malloc(steps * V * sizeof(float));
    fwm_session *a, *b, *c, *d, *e, *f;
    fwm_error err;
    CHECK_OK(fwm_session_create(model, &a, &err), err);
    CHECK_OK(fwm_session_create(model, &b, &err), err);
    CHECK_OK(fwm_session_create(model, &c, &err), err);
    CHECK_OK(fwm_session_create(model, &d, &err), err);
    CHECK_OK(fwm_session_create(model, &e, &err), err);
    CHECK_OK(fwm_session_step(e, 4, NULL, &err), err); /* e is one token ahead */
    for (size_t i = 0; i < steps; i++) CHECK_OK(fwm_session_step(a, tokens[i], la + i * V, &err), err);
    CHECK_OK(fwm_session_step_sequence(b, tokens, steps, lb, &err), err);
    for (size_t i = 0; i < steps; i++) {
        fwm_session *batch[3] = {d, c, e};
        uint32_t bt[3] = {other[2 * i], tokens[i], other[2 * i + 1]};
        CHECK_OK(fwm_batch_step(batch, bt, 3, lc, &err), err);
        memcpy(lcs + i * V, lc + V, V * sizeof(float));
    }
    CHECK_FLOATS_EQUAL(lb, la, steps * V, "sequence vs single");
    CHECK_FLOATS_EQUAL(lcs, la, steps * V, "batch vs single");
    size_t sa, sb, sc;
    unsigned char *ba = rt_export(a, &sa), *bb = rt_export(b, &sb), *bc = rt_export(c, &sc);
    CHECK(ba && bb && bc && sa == sb && sa == sc);
    if (ba && bb && bc) {
        CHECK_BYTES_EQUAL(bb, ba, sa, "states: sequence vs single");
        CHECK_BYTES_EQUAL(bc, ba, sa, "states: batch vs single");
        CHECK_OK(fwm_session_create(model, &f, &err), err);
        CHECK_OK(fwm_session_import(f, ba, sa, &err), err);
        CHECK_OK(fwm_session_step(a, 7, la, &err), err);
        CHECK_OK(fwm_session_step(f, 7, lb, &err), err);
        CHECK_FLOATS_EQUAL(lb, la, V, "imported vs original, one more step");
        fwm_session_free(f);
    }
    free(ba), free(bb), free(bc);
    fwm_session_free(a), fwm_session_free(b), fwm_session_free(c), fwm_session_free(d);
    fwm_session_free(e);
    free(la), free(lb), free(lc), free(lcs);
}

/* The first `steps` logits of a fresh session. */
static float *logits_of(fwm_model *model, const uint32_t *tokens, size_t steps) {
    fwm_model_info info;
    fwm_model_get_info(model, &info);
    float *l = malloc(steps * info.vocab_size * sizeof(float));
    fwm_session *s;
    fwm_error err;
    CHECK_OK(fwm_session_create(model, &s, &err), err);
    CHECK_OK(fwm_session_step_sequence(s, tokens, steps, l, &err), err);
    fwm_session_free(s);
    return l;
}

static void model_of(const char *f32_name, const char *bf16_name, size_t want_converted) {
    fwm_model *m32 = NULL;
    fwm_error err;
    CHECK_OK(fwm_model_load(rt_path(f32_name), NULL, &m32, &err), err);
    size_t converted = 0;
    fwm_model *m16 = convert(f32_name, bf16_name, &converted);
    if (!m32 || !m16) return;
    CHECK_INT(converted, want_converted);
    CHECK_INT(((struct fwm_model *)m16)->bf16_tensors, want_converted);
    CHECK(((struct fwm_model *)m16)->bf16_matmul);
    CHECK_INT(((struct fwm_model *)m32)->bf16_tensors, 0);
    fwm_model_info i32, i16;
    fwm_model_get_info(m32, &i32);
    fwm_model_get_info(m16, &i16);
    CHECK(i32.fingerprint != i16.fingerprint);
    CHECK(i16.checksum_verified);
    /* near the F32 model, but computed differently */
    uint32_t tokens[24];
    rt_random_tokens(tokens, 24, V_TEST, 3);
    float *a = logits_of(m32, tokens, 24), *b = logits_of(m16, tokens, 24);
    double worst = 0, scale = 0;
    size_t equal = 0;
    for (size_t k = 0; k < 24 * V_TEST; k++) {
        worst = fmax(worst, fabs((double)a[k] - b[k]));
        scale = fmax(scale, fabs((double)a[k]));
        equal += a[k] == b[k];
    }
    printf("test_bf16: %s: largest logit difference from F32 %.3g (largest |logit| %.3g)\n",
           bf16_name, worst, scale);
    CHECK_LE(worst, 0.05 * scale);
    CHECK(equal < 24 * V_TEST / 2);
    free(a), free(b);
    check_modes(m16, 24);
    /* a state blob of the F32 model is another model's */
    fwm_session *s32, *s16;
    CHECK_OK(fwm_session_create(m32, &s32, &err), err);
    CHECK_OK(fwm_session_create(m16, &s16, &err), err);
    size_t n;
    unsigned char *blob = rt_export(s32, &n);
    if (blob) CHECK_STATUS(fwm_session_import(s16, blob, n, &err), FWM_ERR_STATE_MODEL_MISMATCH, &err);
    free(blob);
    fwm_session_free(s32), fwm_session_free(s16);
    fwm_model_free(m32), fwm_model_free(m16);
}

static void fwm_model_bf16(void) {
    write_fwm(rt_path("f.gguf"));
    model_of("f.gguf", "fb.gguf", 6);
}

static void lstm_model_bf16(void) {
    write_lstm(rt_path("l.gguf"));
    model_of("l.gguf", "lb.gguf", 5);
}

/* ---- the converter's refusals ---------------------------------------------------------------- */

static void refuse(const uint8_t *buf, size_t size, const fwm_bf16_convert_options *o,
                   fwm_status want, const char *needle) {
    uint8_t *out = (uint8_t *)1;
    size_t out_size = 7, converted = 7;
    fwm_error err;
    CHECK_STATUS(fwm__convert_bf16(buf, size, o, &out, &out_size, &converted, &err), want, &err);
    CHECK_CONTAINS(err.message, needle);
    CHECK(out == NULL && out_size == 0 && converted == 0);
}

static void converter_refusals(void) {
    write_lstm(rt_path("l.gguf"));
    size_t size = 0, converted;
    uint8_t *buf = read_all(rt_path("l.gguf"), &size);
    CHECK(buf != NULL);
    if (!buf) return;
    refuse(buf, 10, NULL, FWM_ERR_FORMAT, "truncated");
    const char *only[1] = {"token_embd.weight"};
    fwm_bf16_convert_options o = {only, 1};
    refuse(buf, size, &o, FWM_ERR_INVALID_ARGUMENT, "'token_embd.weight' is not a matrix");
    only[0] = "blk.0.lstm.bias";
    refuse(buf, size, &o, FWM_ERR_INVALID_ARGUMENT, "'blk.0.lstm.bias' is not a matrix");
    only[0] = "output.weight";
    uint8_t *twin = NULL;
    size_t twin_size = 0;
    fwm_error err;
    CHECK_OK(fwm__convert_bf16(buf, size, &o, &twin, &twin_size, &converted, &err), err);
    CHECK_INT(converted, 1);
    if (twin) refuse(twin, twin_size, NULL, FWM_ERR_UNSUPPORTED, "already a BF16 model");
    fwm__free(twin);
    /* a weight that is not finite, or too large for BF16: patch output.weight's first element
     * (found through the parsed schema) */
    fwm_lstm_schema schema;
    CHECK_OK(fwm__lstm_schema_parse(buf, size, &schema, &err), err);
    size_t at = (size_t)schema.tensors[schema.tensor_count - 2].file_offset;
    fwm__lstm_schema_release(&schema);
    float bad = NAN;
    memcpy(buf + at, &bad, 4);
    refuse(buf, size, NULL, FWM_ERR_INVALID_ARGUMENT, "tensor 'output.weight' element 0 is not finite");
    bad = 3.4e38f;
    memcpy(buf + at, &bad, 4);
    refuse(buf, size, NULL, FWM_ERR_INVALID_ARGUMENT, "tensor 'output.weight' element 0 (3.4e+38) overflows BF16");
    free(buf);
    /* another architecture */
    fwm_mnm_hparams mhp;
    fwm__mnm_hparams_defaults(&mhp);
    mhp.vocab_size = V_TEST, mhp.embedding_length = 3, mhp.hidden_size = 2, mhp.head_count = 1;
    mhp.key_length = mhp.value_length = mhp.memory_hidden = 2, mhp.memory_layers = 1, mhp.output_length = 2;
    fwm_mnm_write_spec mspec = {.hp = mhp, .head.tokens = words};
    float *store = calloc(4096, sizeof(float));
    for (size_t i = 0; i < fwm__mnm_tensor_count(&mhp); i++) mspec.tensors[i] = store;
    CHECK_OK(fwm__mnm_model_write(rt_path("m.gguf"), &mspec, &err), err);
    free(store);
    buf = read_all(rt_path("m.gguf"), &size);
    if (buf) refuse(buf, size, NULL, FWM_ERR_UNSUPPORTED, "architecture 'mnm' is not converted");
    free(buf);
}

int main(void) {
    if (!rt_dir_make("test-bf16")) return 1;
    printf("test_bf16: the BF16 kernel here: %s\n", fwm__bf16_kernel_name());
    static const check_case cases[] = {
        {"rounding", rounding},
        {"kernel_definition", kernel_definition},
        {"random_shapes", random_shapes},
        {"fwm_model_bf16", fwm_model_bf16},
        {"lstm_model_bf16", lstm_model_bf16},
        {"converter_refusals", converter_refusals},
    };
    int status = check_run_cases("test_bf16", cases, sizeof cases / sizeof cases[0]);
    static const char *const files[] = {"f.gguf", "fb.gguf", "l.gguf", "lb.gguf", "m.gguf"};
    rt_dir_remove(files, sizeof files / sizeof files[0]);
    return status;
}
