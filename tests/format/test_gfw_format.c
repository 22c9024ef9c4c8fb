/* test_gfw_format.c - the `gfw` architecture in the model format: fwm_gfw_model_write round trip
 * (hyperparameters, vocabulary, prime tokens, tensors bit-exact, checksum), the FWMFP2 fingerprint
 * recomputed here from its definition in docs/FORMAT.md, the counts of docs/MODEL.md at the paper's
 * sizes, the hyperparameter checks, the Glorot-uniform initialisation's ranges, F16 tensors, and
 * the schema's refusals by name (missing keys, wrong key types, wrong shapes, extra tensors). */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "arch_list.h"
#include "format_test_util.h"
#include "fwm_alloc.h"
#include "gfw/gfw_init.h"
#include "gfw/gfw_schema.h"
#include "gguf_writer.h"
#include "xxhash64.h"

static const char *const vocabulary[] = {" ", "a", "b", "1", "2", "?", "."};

/* V 7, E 3, m 4, N 3, P 5: F1 [4, 8], F2 [4, 5], U1 24, U2 18, the slow output 45. */
static fwm_gfw_hparams small_hparams(void) {
    fwm_gfw_hparams hp;
    fwm_gfw_hparams_defaults(&hp);
    hp.vocab_size = 7;
    hp.embedding_length = 3;
    hp.fast_hidden = 4;
    hp.slow_hidden = 3;
    hp.slow_inner = 5;
    hp.layer_norm_epsilon = 1e-3f;
    hp.eos_token_id = 6;
    return hp;
}

static void tensor_at(const void *hp, size_t i, char name[48], uint64_t *rows, uint64_t *cols) {
    fwm_gfw_tensor_at(hp, i, name, rows, cols);
}

static int tensor_is_matrix(const void *hp, size_t i) { return fwm__gfw_tensor_is_matrix(hp, i); }

/* Tensors filled with distinct values (owned by the caller: free data). */
static float *fill_tensors(const fwm_gfw_hparams *hp, fwm_gfw_write_spec *spec) {
    return fill_tensors_at(hp, fwm_gfw_tensor_count(hp), tensor_at, spec->tensors);
}

/* FWMFP2 of `hp` with the test vocabulary (format_test_util.h writes it out from docs/FORMAT.md). */
static uint64_t expected_fingerprint(const fwm_gfw_hparams *hp, uint64_t checksum) {
    uint32_t eps;
    memcpy(&eps, &hp->layer_norm_epsilon, 4);
    uint32_t fields[8] = {hp->vocab_size, hp->embedding_length, hp->fast_hidden,      hp->slow_hidden,
                          hp->slow_inner, eps,                  hp->padding_token_id, hp->eos_token_id};
    return expected_fwmfp2("gfw", fields, 8, vocabulary, hp->vocab_size, checksum);
}

static void round_trip(void) {
    fwm_gfw_hparams hp = small_hparams();
    fwm_gfw_write_spec spec = {.hp = hp, .name = "tiny gfw", .tokens = vocabulary};
    float *data = fill_tensors(&hp, &spec);
    const uint32_t prime[2] = {6, 1};
    spec.has_prime_tokens = true, spec.prime_tokens = prime, spec.prime_count = 2;
    const fwm_write_kv extra[1] = {{.key = "fwm.training.steps", .kind = FWM_WRITE_KV_U32, .value.u32 = 9}};
    spec.extra = extra, spec.extra_count = 1;
    fwm_error err;
    CHECK_OK(fwm_gfw_model_write(test_dir_path("a.gguf"), &spec, &err), err);
    size_t size = 0;
    uint8_t *file = read_back(test_dir_path("a.gguf"), FWM_ARCH_GFW, &size);
    fwm_gfw_schema s;
    CHECK_OK(fwm_gfw_schema_parse(file, size, &s, &err), err);
    CHECK(memcmp(&s.hp, &hp, sizeof hp) == 0);
    CHECK_STR(s.head.name, "tiny gfw");
    for (uint32_t i = 0; i < hp.vocab_size; i++) CHECK_STR(s.head.tokens[i], vocabulary[i]);
    CHECK_INT(s.head.prime_count, 2);
    CHECK_INT(s.head.prime_tokens[0], 6);
    CHECK_INT(s.tensor_count, 7);
    check_stored_tensors(s.tensors, s.tensor_count, &hp, tensor_at, spec.tensors);
    /* W_1 reads [h_S; e] (N + E = 6), W_2 writes z, the F1 update (2 (4 + 8)) and the F2 update
     * (2 (4 + 5)): 3 + 24 + 18 = 45 rows */
    CHECK_U64(s.tensors[1].rows, 5);
    CHECK_U64(s.tensors[1].cols, 6);
    CHECK_U64(s.tensors[3].rows, 45);
    CHECK_U64(s.tensors[3].cols, 5);
    CHECK_U64(s.tensors[4].rows, 45);
    CHECK_U64(s.tensors[5].cols, 4);
    CHECK_U64(fwm_gfw_f1_cols(&hp), 8);
    CHECK_U64(fwm_gfw_f2_cols(&hp), 5);
    CHECK_U64(fwm_gfw_state_floats(&hp), 4 + 3 + 4 * 8 + 4 * 5);
    CHECK_U64(fwm_gfw_parameter_count(&hp), 21 + 30 + 5 + 225 + 45 + 28 + 7);
    CHECK(s.head.has_checksum && s.head.checksum == fwm_gfw_schema_checksum(&s));
    CHECK(s.head.has_fingerprint);
    CHECK_U64(s.head.fingerprint, expected_fingerprint(&hp, s.head.checksum));
    CHECK_U64(fwm_gfw_fingerprint(&hp, (const char *const *)s.head.tokens, s.head.token_lengths, s.head.checksum),
              s.head.fingerprint);
    /* a changed hyperparameter changes the fingerprint, the epsilon's bits included */
    fwm_gfw_hparams other = hp;
    other.slow_inner = 6;
    CHECK(fwm_gfw_fingerprint(&other, (const char *const *)s.head.tokens, s.head.token_lengths, s.head.checksum) !=
          s.head.fingerprint);
    other = hp, other.layer_norm_epsilon = 1e-5f;
    CHECK(fwm_gfw_fingerprint(&other, (const char *const *)s.head.tokens, s.head.token_lengths, s.head.checksum) !=
          s.head.fingerprint);
    /* the FWM's schema refuses it by its architecture, as before */
    check_fwm_schema_refuses(file, size, "gfw");
    fwm_gfw_schema_release(&s);
    free(file);
    free(data);
    unlink(test_dir_path("a.gguf"));
}

static void hparams_checks(void) {
    fwm_gfw_hparams hp;
    fwm_gfw_hparams_defaults(&hp);
    CHECK_INT(hp.vocab_size, 15);
    CHECK_INT(hp.embedding_length, 15);
    CHECK_INT(hp.fast_hidden, 40);
    CHECK_INT(hp.slow_hidden, 40);
    CHECK_INT(hp.slow_inner, 100);
    CHECK(hp.layer_norm_epsilon == 1e-5f);
    CHECK_INT(hp.padding_token_id, 0);
    CHECK_INT(hp.eos_token_id, 14);
    /* docs/MODEL.md's counts at the paper's sizes */
    CHECK_U64(fwm_gfw_update1_length(&hp), 192);
    CHECK_U64(fwm_gfw_update2_length(&hp), 162);
    CHECK_U64(fwm_gfw_slow_out_rows(&hp), 394);
    CHECK_U64(fwm_gfw_parameter_count(&hp), 46234);
    CHECK_U64(fwm_gfw_state_floats(&hp), 3960);
    fwm_error err;
    CHECK_OK(fwm_gfw_hparams_check(&hp, &err), err);
    fwm_gfw_hparams bad = hp;
    bad.fast_hidden = 1;
    CHECK_STATUS(fwm_gfw_hparams_check(&bad, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    CHECK_CONTAINS(err.message, "key 'gfw.fast.hidden_size': expected 2 to 65536, found 1");
    bad = hp, bad.slow_inner = 0;
    CHECK_STATUS(fwm_gfw_hparams_check(&bad, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    CHECK_CONTAINS(err.message, "key 'gfw.slow.inner_size': expected 1 to 65536, found 0");
    bad = hp, bad.vocab_size = 1;
    CHECK_STATUS(fwm_gfw_hparams_check(&bad, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    CHECK_CONTAINS(err.message, "gfw.vocab_size");
    /* the fast matrices' bound: m = 8192 gives 2 * 8192^2 + ... > 2^26 floats */
    bad = hp, bad.fast_hidden = 8192;
    CHECK_STATUS(fwm_gfw_hparams_check(&bad, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    CHECK_CONTAINS(err.message, "the fast matrices F1 and F2 hold");
    bad = hp, bad.eos_token_id = 15;
    CHECK_STATUS(fwm_gfw_hparams_check(&bad, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    CHECK_CONTAINS(err.message,
                   "key 'tokenizer.ggml.eos_token_id': expected a token id below gfw.vocab_size = 15");
    bad = hp, bad.padding_token_id = 99;
    CHECK_STATUS(fwm_gfw_hparams_check(&bad, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    CHECK_CONTAINS(err.message, "tokenizer.ggml.padding_token_id");
    bad = hp, bad.layer_norm_epsilon = 0.0f;
    CHECK_STATUS(fwm_gfw_hparams_check(&bad, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    CHECK_CONTAINS(err.message, "key 'gfw.layer_norm_epsilon': expected > 0, found 0");
    bad = hp, bad.layer_norm_epsilon = NAN;
    CHECK_STATUS(fwm_gfw_hparams_check(&bad, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    CHECK_CONTAINS(err.message, "gfw.layer_norm_epsilon");
    CHECK_STATUS(fwm_gfw_hparams_check(NULL, &err), FWM_ERR_INVALID_ARGUMENT, &err);
}

static void writer_refusals(void) {
    fwm_gfw_hparams hp = small_hparams();
    fwm_gfw_write_spec spec = {.hp = hp, .tokens = vocabulary};
    float *data = fill_tensors(&hp, &spec);
    fwm_error err;
    fwm_gfw_write_spec bad = spec;
    bad.tensors[3] = NULL;
    CHECK_STATUS(fwm_gfw_model_write(test_dir_path("b.gguf"), &bad, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    CHECK_CONTAINS(err.message, "tensor 'gfw.slow.1.weight' has no data");
    bad = spec;
    const char *dup[7] = {" ", "a", "b", "1", "1", "?", "."};
    bad.tokens = dup;
    CHECK_STATUS(fwm_gfw_model_write(test_dir_path("b.gguf"), &bad, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    CHECK_CONTAINS(err.message, "duplicate token '1'");
    bad = spec;
    const fwm_write_kv extra[1] = {{.key = "gfw.slow.inner_size", .kind = FWM_WRITE_KV_U32}};
    bad.extra = extra, bad.extra_count = 1;
    CHECK_STATUS(fwm_gfw_model_write(test_dir_path("b.gguf"), &bad, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    CHECK_CONTAINS(err.message, "extra key 'gfw.slow.inner_size' is written by fwm_gfw_model_write itself");
    bad = spec;
    bad.hp.fast_hidden = 1;
    CHECK_STATUS(fwm_gfw_model_write(test_dir_path("b.gguf"), &bad, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    CHECK_CONTAINS(err.message, "key 'gfw.fast.hidden_size'");
    bad = spec;
    const uint32_t prime[1] = {7};
    bad.has_prime_tokens = true, bad.prime_tokens = prime, bad.prime_count = 1;
    CHECK_STATUS(fwm_gfw_model_write(test_dir_path("b.gguf"), &bad, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    CHECK_CONTAINS(err.message, "prime token 0 is 7");
    CHECK(access(test_dir_path("b.gguf"), F_OK) != 0);
    free(data);
}

/* ---- hand-built files for the schema's refusals ------------------------------------------------ */

typedef struct variant {
    const char *architecture;   /* general.architecture's value */
    const char *omit_key;       /* a key left out */
    const char *retype_key;     /* a key written as an i32 (or u32 for strings) instead */
    const char *omit_tensor;    /* a tensor left out */
    const char *reshape_tensor; /* a tensor written with one more row */
    const char *f16_tensor;     /* a tensor stored as F16 (halves of the same values) */
    float epsilon;              /* gfw.layer_norm_epsilon when nonzero (else 1e-3) */
    bool extra_tensor;          /* one more tensor, "gfw.slow.2.weight" */
} variant;

static void put_key(fwm_gguf_writer *w, const variant *v, const char *key, uint32_t type,
                    uint32_t u, float f, const char *s) {
    put_damaged_key(w, v->omit_key, v->retype_key, key, type, u, f, s);
}

/* A small GFW file built key by key (not by fwm_gfw_model_write), with `v`'s damage. */
static uint8_t *build(const variant *v, size_t *size) {
    fwm_gfw_hparams hp = small_hparams();
    fwm_gguf_writer w;
    fwm__gguf_writer_init(&w, 32);
    put_key(&w, v, "general.architecture", FWM_GGUF_TYPE_STRING, 0, 0,
            v->architecture ? v->architecture : "gfw");
    put_key(&w, v, "gfw.vocab_size", FWM_GGUF_TYPE_UINT32, hp.vocab_size, 0, NULL);
    put_key(&w, v, "gfw.embedding_length", FWM_GGUF_TYPE_UINT32, hp.embedding_length, 0, NULL);
    put_key(&w, v, "gfw.fast.hidden_size", FWM_GGUF_TYPE_UINT32, hp.fast_hidden, 0, NULL);
    put_key(&w, v, "gfw.slow.hidden_size", FWM_GGUF_TYPE_UINT32, hp.slow_hidden, 0, NULL);
    put_key(&w, v, "gfw.slow.inner_size", FWM_GGUF_TYPE_UINT32, hp.slow_inner, 0, NULL);
    put_key(&w, v, "gfw.layer_norm_epsilon", FWM_GGUF_TYPE_FLOAT32, 0, v->epsilon != 0 ? v->epsilon : 1e-3f,
            NULL);
    put_tokenizer_keys(&w, v->omit_key, v->retype_key, 6, vocabulary, 7);
    tensor_damage d = {.omit_tensor = v->omit_tensor,
                      .reshape_tensor = v->reshape_tensor,
                      .f16_tensor = v->f16_tensor,
                      .extra_name = v->extra_tensor ? "gfw.slow.2.weight" : NULL,
                      .extra_rows = 4,
                      .extra_cols = 4,
                      .extra_matrix = 1};
    return finish_damaged_file(&w, &hp, fwm_gfw_tensor_count(&hp), tensor_at, tensor_is_matrix, &d, size);
}

/* Parse `v`'s file: expect `status` and `needle` in the message (FWM_OK: expect success). */
static void expect(const variant *v, fwm_status status, const char *needle) {
    size_t size = 0;
    uint8_t *file = build(v, &size);
    fwm_gfw_schema s;
    fwm_error err;
    fwm_status st = fwm_gfw_schema_parse(file, size, &s, &err);
    expect_parse(st, &err, status, needle);
    if (!st) fwm_gfw_schema_release(&s);
    fwm__free(file);
}

/* A file with `omit_key` left out or `retype_key` retyped, parsed (for expect_missing_keys and
 * expect_retyped_keys). */
static void try_key(const char *omit_key, const char *retype_key, fwm_status status, const char *needle) {
    variant v = {.omit_key = omit_key, .retype_key = retype_key};
    expect(&v, status, needle);
}

static void schema_refusals(void) {
    variant ok = {0};
    expect(&ok, FWM_OK, NULL);
    static const char *const keys[] = {
        "general.architecture", "gfw.vocab_size", "gfw.embedding_length", "gfw.fast.hidden_size",
        "gfw.slow.hidden_size", "gfw.slow.inner_size", "gfw.layer_norm_epsilon",
        "tokenizer.ggml.padding_token_id", "tokenizer.ggml.eos_token_id", "tokenizer.ggml.model",
        "tokenizer.ggml.tokens"};
    expect_missing_keys(keys, sizeof keys / sizeof keys[0], try_key);
    static const retyped_key retyped[] = {
        {"gfw.vocab_size", "expected type u32, found i32"},
        {"gfw.fast.hidden_size", "expected type u32, found i32"},
        {"gfw.slow.inner_size", "expected type u32, found i32"},
        {"gfw.layer_norm_epsilon", "expected type f32, found i32"},
        {"tokenizer.ggml.eos_token_id", "expected type u32, found i32"},
        {"tokenizer.ggml.model", "expected type string, found u32"},
        {"general.architecture", "expected type string, found u32"},
    };
    expect_retyped_keys(retyped, sizeof retyped / sizeof retyped[0], try_key);
    variant v = {.architecture = "mnm"};
    expect(&v, FWM_ERR_FORMAT, "key 'general.architecture': expected \"gfw\", found \"mnm\"");
    v = (variant){.epsilon = -1.0f};
    expect(&v, FWM_ERR_FORMAT, "key 'gfw.layer_norm_epsilon': expected > 0, found -1");
    v = (variant){.omit_tensor = "gfw.slow.0.bias"};
    expect(&v, FWM_ERR_FORMAT, "missing tensor 'gfw.slow.0.bias'");
    v = (variant){.omit_tensor = "output.weight"};
    expect(&v, FWM_ERR_FORMAT, "missing tensor 'output.weight'");
    v = (variant){.reshape_tensor = "gfw.slow.0.weight"};
    expect(&v, FWM_ERR_FORMAT, "tensor 'gfw.slow.0.weight': expected shape [5, 6], found [6, 6]");
    v = (variant){.reshape_tensor = "gfw.slow.1.weight"};
    expect(&v, FWM_ERR_FORMAT, "tensor 'gfw.slow.1.weight': expected shape [45, 5], found [46, 5]");
    v = (variant){.reshape_tensor = "gfw.slow.1.bias"};
    expect(&v, FWM_ERR_FORMAT, "tensor 'gfw.slow.1.bias': expected shape [45], found [46]");
    v = (variant){.reshape_tensor = "token_embd.weight"};
    expect(&v, FWM_ERR_FORMAT, "tensor 'token_embd.weight': expected shape [7, 3], found [8, 3]");
    v = (variant){.extra_tensor = true};
    expect(&v, FWM_ERR_FORMAT, "unexpected tensor 'gfw.slow.2.weight': not part of the gfw schema");
    v = (variant){.f16_tensor = "gfw.slow.1.weight"};
    expect(&v, FWM_OK, NULL);
}

/* fwm__gfw_init_weights: every matrix within its Glorot bound and spread over it, the biases zero,
 * deterministic per seed. */
static void init_ranges(void) {
    fwm_gfw_hparams hp;
    fwm_gfw_hparams_defaults(&hp);
    size_t n = fwm_gfw_tensor_count(&hp), total = 0;
    uint64_t rows, cols, offsets[FWM_GFW_MAX_TENSORS + 1];
    char name[48];
    for (size_t i = 0; i < n; i++) {
        fwm_gfw_tensor_at(&hp, i, name, &rows, &cols);
        offsets[i] = total;
        total += rows * cols;
    }
    offsets[n] = total;
    float *a = malloc(total * sizeof *a), *b = malloc(total * sizeof *b);
    float *ta[FWM_GFW_MAX_TENSORS], *tb[FWM_GFW_MAX_TENSORS];
    for (size_t i = 0; i < n; i++) ta[i] = a + offsets[i], tb[i] = b + offsets[i];
    fwm__gfw_init_weights(&hp, 7, ta);
    fwm__gfw_init_weights(&hp, 7, tb);
    CHECK(memcmp(a, b, total * sizeof *a) == 0);
    fwm__gfw_init_weights(&hp, 8, tb);
    CHECK(memcmp(a, b, total * sizeof *a) != 0);
    /* sqrt(6 / (rows + cols)): Emb 15 + 15, W_1 100 + 55, W_2 394 + 100, W_o 15 + 40 */
    const double bound[7] = {sqrt(6.0 / 30), sqrt(6.0 / 155), 0, sqrt(6.0 / 494), 0, sqrt(6.0 / 55), 0};
    for (size_t i = 0; i < n; i++) {
        double largest = 0;
        for (uint64_t e = offsets[i]; e < offsets[i + 1]; e++) {
            CHECK(isfinite(a[e]));
            if (fabs(a[e]) > largest) largest = fabs(a[e]);
        }
        if (bound[i] == 0) {
            CHECK(largest == 0); /* biases start at zero */
        } else if (largest > bound[i] || largest < 0.9 * bound[i]) {
            fprintf(stderr, "tensor %zu: largest |w| %g, bound %g\n", i, largest, bound[i]);
            check_failures++;
        }
    }
    free(a);
    free(b);
}

static void registry(void) {
    variant v = {.architecture = "ntm"};
    size_t size = 0;
    uint8_t *file = build(&v, &size);
    fwm_arch arch;
    fwm_error err;
    CHECK_STATUS(fwm__arch_detect(file, size, &arch, &err), FWM_ERR_UNSUPPORTED, &err);
    CHECK_CONTAINS(err.message, "unknown architecture \"ntm\" (known: fwm, lstm, mnm, gfw, stm)");
    CHECK_STR(fwm__arch_name(FWM_ARCH_GFW), "gfw");
    fwm__free(file);
}

int main(void) {
    if (!test_dir_make("test-gfw-format")) return 1;
    static const check_case cases[] = {
        {"round_trip", round_trip},
        {"hparams_checks", hparams_checks},
        {"writer_refusals", writer_refusals},
        {"schema_refusals", schema_refusals},
        {"init_ranges", init_ranges},
        {"registry", registry},
    };
    int status = check_run_cases("test_gfw_format", cases, sizeof cases / sizeof cases[0]);
    test_dir_remove();
    return status;
}
