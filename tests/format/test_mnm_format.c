/* test_mnm_format.c - the `mnm` architecture in the model format: fwm_mnm_model_write round
 * trip (hyperparameters, vocabulary, prime tokens, tensors bit-exact, checksum, the fixed initial
 * memory stored like any tensor), the FWMFP2 fingerprint recomputed here from its definition in
 * docs/FORMAT.md, the hyperparameter checks, the initialisation's ranges, F16/BF16 tensors, and the
 * schema's refusals by name (missing keys, wrong key types, wrong shapes, extra tensors). */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "arch_list.h"
#include "format_test_util.h"
#include "fwm_alloc.h"
#include "gguf_writer.h"
#include "mnm/mnm_init.h"
#include "mnm/mnm_schema.h"
#include "xxhash64.h"

static const char *const vocabulary[] = {"<pad>", "<eos>", ".", "?", "john", "garden", "n,w"};

static fwm_mnm_hparams small_hparams(void) {
    fwm_mnm_hparams hp;
    fwm_mnm_hparams_defaults(&hp);
    hp.vocab_size = 7;
    hp.embedding_length = 5;
    hp.hidden_size = 3;
    hp.head_count = 2;
    hp.key_length = 4;
    hp.value_length = 2;
    hp.memory_hidden = 6;
    hp.memory_layers = 2;
    hp.output_length = 3;
    hp.forget_bias = 0.5f;
    return hp;
}

static void tensor_at(const void *hp, size_t i, char name[48], uint64_t *rows, uint64_t *cols) {
    fwm_mnm_tensor_at(hp, i, name, rows, cols);
}

static int tensor_is_matrix(const void *hp, size_t i) { return fwm__mnm_tensor_is_matrix(hp, i); }

/* Tensors filled with distinct values (owned by the caller: free data). */
static float *fill_tensors(const fwm_mnm_hparams *hp, fwm_mnm_write_spec *spec) {
    return fill_tensors_at(hp, fwm_mnm_tensor_count(hp), tensor_at, spec->tensors);
}

/* FWMFP2 of `hp` with the test vocabulary (format_test_util.h writes it out from docs/FORMAT.md). */
static uint64_t expected_fingerprint(const fwm_mnm_hparams *hp, uint64_t checksum) {
    uint32_t fb;
    memcpy(&fb, &hp->forget_bias, 4);
    uint32_t fields[12] = {hp->vocab_size,    hp->embedding_length, hp->hidden_size,
                           hp->head_count,    hp->key_length,       hp->value_length,
                           hp->memory_hidden, hp->memory_layers,    hp->output_length,
                           fb,                hp->padding_token_id, hp->eos_token_id};
    return expected_fwmfp2("mnm", fields, 12, vocabulary, hp->vocab_size, checksum);
}

static void round_trip(void) {
    fwm_mnm_hparams hp = small_hparams();
    fwm_mnm_write_spec spec = {.hp = hp, .name = "tiny mnm", .tokens = vocabulary};
    float *data = fill_tensors(&hp, &spec);
    const uint32_t prime[2] = {1, 4};
    spec.has_prime_tokens = true, spec.prime_tokens = prime, spec.prime_count = 2;
    const fwm_write_kv extra[1] = {{.key = "fwm.training.steps", .kind = FWM_WRITE_KV_U32, .value.u32 = 9}};
    spec.extra = extra, spec.extra_count = 1;
    fwm_error err;
    CHECK_OK(fwm_mnm_model_write(test_dir_path("a.gguf"), &spec, &err), err);
    size_t size = 0;
    uint8_t *file = read_back(test_dir_path("a.gguf"), FWM_ARCH_MNM, &size);
    fwm_mnm_schema s;
    CHECK_OK(fwm_mnm_schema_parse(file, size, &s, &err), err);
    CHECK(memcmp(&s.hp, &hp, sizeof hp) == 0);
    CHECK_STR(s.head.name, "tiny mnm");
    for (uint32_t i = 0; i < hp.vocab_size; i++) CHECK_STR(s.head.tokens[i], vocabulary[i]);
    CHECK_INT(s.head.prime_count, 2);
    CHECK_INT(s.head.prime_tokens[1], 4);
    CHECK_INT(s.tensor_count, 16);
    check_stored_tensors(s.tensors, s.tensor_count, &hp, tensor_at, spec.tensors);
    /* W_ih reads [e; r] (E + d_v), W_u has Nh (2 d_k + d_v) + d_k rows, the targets (Lm-1) D + d_v;
     * the memory is [D, d_k] then [d_v, D] */
    CHECK_U64(s.tensors[1].cols, 7);
    CHECK_U64(s.tensors[4].rows, 24);
    CHECK_U64(s.tensors[8].rows, 8);
    CHECK_U64(s.tensors[10].rows, 6);
    CHECK_U64(s.tensors[10].cols, 4);
    CHECK_U64(s.tensors[11].rows, 2);
    CHECK_U64(s.tensors[11].cols, 6);
    CHECK(!fwm_mnm_tensor_trained(&hp, 10) && !fwm_mnm_tensor_trained(&hp, 11));
    CHECK(fwm_mnm_tensor_trained(&hp, 9) && fwm_mnm_tensor_trained(&hp, 12));
    CHECK_U64(fwm_mnm_state_floats(&hp), 2 * 3 + 2 + 24 + 12);
    CHECK(s.head.has_checksum && s.head.checksum == fwm_mnm_schema_checksum(&s));
    CHECK(s.head.has_fingerprint);
    CHECK_U64(s.head.fingerprint, expected_fingerprint(&hp, s.head.checksum));
    CHECK_U64(fwm_mnm_fingerprint(&hp, (const char *const *)s.head.tokens, s.head.token_lengths, s.head.checksum),
              s.head.fingerprint);
    /* a changed hyperparameter changes the fingerprint */
    fwm_mnm_hparams other = hp;
    other.head_count = 3;
    CHECK(fwm_mnm_fingerprint(&other, (const char *const *)s.head.tokens, s.head.token_lengths, s.head.checksum) !=
          s.head.fingerprint);
    /* the FWM's schema refuses it by its architecture, as before */
    check_fwm_schema_refuses(file, size, "mnm");
    fwm_mnm_schema_release(&s);
    free(file);
    free(data);
    unlink(test_dir_path("a.gguf"));
}

static void hparams_checks(void) {
    fwm_mnm_hparams hp;
    fwm_mnm_hparams_defaults(&hp);
    CHECK_INT(hp.vocab_size, 180);
    CHECK_INT(hp.embedding_length, 256);
    CHECK_INT(hp.hidden_size, 256);
    CHECK_INT(hp.head_count, 3);
    CHECK_INT(hp.key_length, 100);
    CHECK_INT(hp.value_length, 100);
    CHECK_INT(hp.memory_hidden, 100);
    CHECK_INT(hp.memory_layers, 3);
    CHECK_INT(hp.output_length, 256);
    CHECK(hp.forget_bias == 0.0f);
    /* docs/MODEL.md's counts at the defaults */
    uint64_t trained = 0, total = 0;
    for (size_t i = 0; i < fwm_mnm_tensor_count(&hp); i++) {
        char name[48];
        uint64_t rows, cols;
        fwm_mnm_tensor_at(&hp, i, name, &rows, &cols);
        total += rows * cols;
        if (fwm_mnm_tensor_trained(&hp, i)) trained += rows * cols;
    }
    CHECK_U64(trained, 1098845);
    CHECK_U64(total, 1128845);
    CHECK_U64(fwm_mnm_state_floats(&hp), 30612);
    fwm_error err;
    CHECK_OK(fwm_mnm_hparams_check(&hp, &err), err);
    fwm_mnm_hparams bad = hp;
    bad.memory_layers = 0;
    CHECK_STATUS(fwm_mnm_hparams_check(&bad, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    CHECK_CONTAINS(err.message, "key 'mnm.memory.block_count': expected 1 to 16, found 0");
    bad = hp, bad.memory_layers = 17;
    CHECK_STATUS(fwm_mnm_hparams_check(&bad, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    bad = hp, bad.head_count = 65;
    CHECK_STATUS(fwm_mnm_hparams_check(&bad, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    CHECK_CONTAINS(err.message, "key 'mnm.head_count': expected 1 to 64, found 65");
    /* the memory's bound: 16 layers of 65536 x 65536 */
    bad = hp, bad.memory_layers = 16, bad.memory_hidden = 65536;
    CHECK_STATUS(fwm_mnm_hparams_check(&bad, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    CHECK_CONTAINS(err.message, "the memory holds");
    bad = hp, bad.hidden_size = 0;
    CHECK_STATUS(fwm_mnm_hparams_check(&bad, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    CHECK_CONTAINS(err.message, "mnm.hidden_size");
    bad = hp, bad.eos_token_id = 180;
    CHECK_STATUS(fwm_mnm_hparams_check(&bad, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    CHECK_CONTAINS(err.message,
                   "key 'tokenizer.ggml.eos_token_id': expected a token id below mnm.vocab_size = 180");
    bad = hp, bad.forget_bias = NAN;
    CHECK_STATUS(fwm_mnm_hparams_check(&bad, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    CHECK_CONTAINS(err.message, "mnm.forget_bias");
}

static void writer_refusals(void) {
    fwm_mnm_hparams hp = small_hparams();
    fwm_mnm_write_spec spec = {.hp = hp, .tokens = vocabulary};
    float *data = fill_tensors(&hp, &spec);
    fwm_error err;
    fwm_mnm_write_spec bad = spec;
    bad.tensors[4] = NULL;
    CHECK_STATUS(fwm_mnm_model_write(test_dir_path("b.gguf"), &bad, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    CHECK_CONTAINS(err.message, "tensor 'mnm.interact.weight' has no data");
    bad = spec;
    const char *dup[7] = {"<pad>", "<eos>", ".", "?", "john", "john", "n,w"};
    bad.tokens = dup;
    CHECK_STATUS(fwm_mnm_model_write(test_dir_path("b.gguf"), &bad, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    CHECK_CONTAINS(err.message, "duplicate token 'john'");
    bad = spec;
    const fwm_write_kv extra[1] = {{.key = "mnm.hidden_size", .kind = FWM_WRITE_KV_U32}};
    bad.extra = extra, bad.extra_count = 1;
    CHECK_STATUS(fwm_mnm_model_write(test_dir_path("b.gguf"), &bad, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    CHECK_CONTAINS(err.message, "extra key 'mnm.hidden_size' is written by fwm_mnm_model_write itself");
    bad = spec;
    const uint32_t prime[1] = {7};
    bad.has_prime_tokens = true, bad.prime_tokens = prime, bad.prime_count = 1;
    CHECK_STATUS(fwm_mnm_model_write(test_dir_path("b.gguf"), &bad, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    CHECK_CONTAINS(err.message, "prime token 0 is 7");
    CHECK(access(test_dir_path("b.gguf"), F_OK) != 0);
    free(data);
}

/* ---- hand-built files for the schema's refusals ------------------------------------------------ */

typedef struct variant {
    const char *architecture;  /* general.architecture's value */
    const char *omit_key;      /* a key left out */
    const char *retype_key;    /* a key written as an i32 (or u32 for strings) instead */
    const char *omit_tensor;   /* a tensor left out */
    const char *reshape_tensor; /* a tensor written with one more row */
    const char *f16_tensor;    /* a tensor stored as F16 (halves of the same values) */
    uint32_t tensor_type;      /* with type_tensor: that tensor's GGML type as stored */
    const char *type_tensor;
    bool extra_tensor;         /* one more tensor, "mnm.memory.9.init" */
} variant;

static void put_key(fwm_gguf_writer *w, const variant *v, const char *key, uint32_t type,
                    uint32_t u, float f, const char *s) {
    put_damaged_key(w, v->omit_key, v->retype_key, key, type, u, f, s);
}

/* A small MNM file built key by key (not by fwm_mnm_model_write), with `v`'s damage. */
static uint8_t *build(const variant *v, size_t *size) {
    fwm_mnm_hparams hp = small_hparams();
    fwm_gguf_writer w;
    fwm__gguf_writer_init(&w, 32);
    put_key(&w, v, "general.architecture", FWM_GGUF_TYPE_STRING, 0, 0, v->architecture ? v->architecture : "mnm");
    put_key(&w, v, "mnm.vocab_size", FWM_GGUF_TYPE_UINT32, hp.vocab_size, 0, NULL);
    put_key(&w, v, "mnm.embedding_length", FWM_GGUF_TYPE_UINT32, hp.embedding_length, 0, NULL);
    put_key(&w, v, "mnm.hidden_size", FWM_GGUF_TYPE_UINT32, hp.hidden_size, 0, NULL);
    put_key(&w, v, "mnm.head_count", FWM_GGUF_TYPE_UINT32, hp.head_count, 0, NULL);
    put_key(&w, v, "mnm.memory.key_length", FWM_GGUF_TYPE_UINT32, hp.key_length, 0, NULL);
    put_key(&w, v, "mnm.memory.value_length", FWM_GGUF_TYPE_UINT32, hp.value_length, 0, NULL);
    put_key(&w, v, "mnm.memory.hidden_size", FWM_GGUF_TYPE_UINT32, hp.memory_hidden, 0, NULL);
    put_key(&w, v, "mnm.memory.block_count", FWM_GGUF_TYPE_UINT32, hp.memory_layers, 0, NULL);
    put_key(&w, v, "mnm.output_length", FWM_GGUF_TYPE_UINT32, hp.output_length, 0, NULL);
    put_key(&w, v, "mnm.forget_bias", FWM_GGUF_TYPE_FLOAT32, 0, 0.5f, NULL);
    put_tokenizer_keys(&w, v->omit_key, v->retype_key, 1, vocabulary, 7);
    tensor_damage d = {.omit_tensor = v->omit_tensor,
                      .reshape_tensor = v->reshape_tensor,
                      .f16_tensor = v->f16_tensor,
                      .type_tensor = v->type_tensor,
                      .tensor_type = v->tensor_type,
                      .extra_name = v->extra_tensor ? "mnm.memory.9.init" : NULL,
                      .extra_rows = 6,
                      .extra_cols = 6,
                      .extra_matrix = 1};
    return finish_damaged_file(&w, &hp, fwm_mnm_tensor_count(&hp), tensor_at, tensor_is_matrix, &d, size);
}

/* Parse `v`'s file: expect `status` and `needle` in the message (FWM_OK: expect success). */
static void expect(const variant *v, fwm_status status, const char *needle) {
    size_t size = 0;
    uint8_t *file = build(v, &size);
    fwm_mnm_schema s;
    fwm_error err;
    fwm_status st = fwm_mnm_schema_parse(file, size, &s, &err);
    expect_parse(st, &err, status, needle);
    if (!st) fwm_mnm_schema_release(&s);
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
        "general.architecture", "mnm.vocab_size", "mnm.embedding_length", "mnm.hidden_size",
        "mnm.head_count", "mnm.memory.key_length", "mnm.memory.value_length",
        "mnm.memory.hidden_size", "mnm.memory.block_count", "mnm.output_length",
        "mnm.forget_bias", "tokenizer.ggml.padding_token_id",
        "tokenizer.ggml.eos_token_id", "tokenizer.ggml.model", "tokenizer.ggml.tokens"};
    expect_missing_keys(keys, sizeof keys / sizeof keys[0], try_key);
    static const retyped_key retyped[] = {
        {"mnm.vocab_size", "expected type u32, found i32"},
        {"mnm.memory.block_count", "expected type u32, found i32"},
        {"mnm.head_count", "expected type u32, found i32"},
        {"mnm.forget_bias", "expected type f32, found i32"},
        {"tokenizer.ggml.eos_token_id", "expected type u32, found i32"},
        {"tokenizer.ggml.model", "expected type string, found u32"},
        {"general.architecture", "expected type string, found u32"},
    };
    expect_retyped_keys(retyped, sizeof retyped / sizeof retyped[0], try_key);
    variant v = {.architecture = "fwm"};
    expect(&v, FWM_ERR_FORMAT, "key 'general.architecture': expected \"mnm\", found \"fwm\"");
    v = (variant){.omit_tensor = "mnm.memory.1.init"};
    expect(&v, FWM_ERR_FORMAT, "missing tensor 'mnm.memory.1.init'");
    v = (variant){.omit_tensor = "output.bias"};
    expect(&v, FWM_ERR_FORMAT, "missing tensor 'output.bias'");
    v = (variant){.reshape_tensor = "lstm.weight_ih"};
    expect(&v, FWM_ERR_FORMAT, "tensor 'lstm.weight_ih': expected shape [12, 7], found [13, 7]");
    v = (variant){.reshape_tensor = "mnm.interact.weight"};
    expect(&v, FWM_ERR_FORMAT, "tensor 'mnm.interact.weight': expected shape [24, 3], found [25, 3]");
    v = (variant){.reshape_tensor = "mnm.rate.bias"};
    expect(&v, FWM_ERR_FORMAT, "tensor 'mnm.rate.bias': expected shape [1], found [2]");
    v = (variant){.reshape_tensor = "mnm.memory.0.init"};
    expect(&v, FWM_ERR_FORMAT, "tensor 'mnm.memory.0.init': expected shape [6, 4], found [7, 4]");
    v = (variant){.reshape_tensor = "mnm.target.weight"};
    expect(&v, FWM_ERR_FORMAT, "tensor 'mnm.target.weight': expected shape [8, 2], found [9, 2]");
    v = (variant){.reshape_tensor = "mnm.out.weight"};
    expect(&v, FWM_ERR_FORMAT, "tensor 'mnm.out.weight': expected shape [3, 5], found [4, 5]");
    v = (variant){.extra_tensor = true};
    expect(&v, FWM_ERR_FORMAT, "unexpected tensor 'mnm.memory.9.init': not part of the mnm schema");
    v = (variant){.f16_tensor = "mnm.memory.1.init"};
    expect(&v, FWM_OK, NULL);
    v = (variant){.type_tensor = "mnm.target.bias", .tensor_type = FWM_GGML_TYPE_BF16};
    v.f16_tensor = "mnm.target.bias"; /* 2 bytes an element */
    expect(&v, FWM_OK, NULL);
}

/* fwm__mnm_init_weights: each tensor within its documented range, deterministic per seed, the
 * embedding normal. */
static void init_ranges(void) {
    fwm_mnm_hparams hp = small_hparams();
    size_t n = fwm_mnm_tensor_count(&hp), total = 0;
    uint64_t rows, cols, offsets[FWM_MNM_MAX_TENSORS + 1];
    char name[48];
    for (size_t i = 0; i < n; i++) {
        fwm_mnm_tensor_at(&hp, i, name, &rows, &cols);
        offsets[i] = total;
        total += rows * cols;
    }
    offsets[n] = total;
    float *a = malloc(total * sizeof *a), *b = malloc(total * sizeof *b);
    float *ta[FWM_MNM_MAX_TENSORS], *tb[FWM_MNM_MAX_TENSORS];
    for (size_t i = 0; i < n; i++) ta[i] = a + offsets[i], tb[i] = b + offsets[i];
    fwm__mnm_init_weights(&hp, 7, ta);
    fwm__mnm_init_weights(&hp, 7, tb);
    CHECK(memcmp(a, b, total * sizeof *a) == 0);
    fwm__mnm_init_weights(&hp, 8, tb);
    CHECK(memcmp(a, b, total * sizeof *a) != 0);
    /* bounds: H = 3 (controller, interaction), d_k = 4 (rate), d_v = 2 (targets), the memory's
     * columns (4, then 6), H + d_v = 5 (W_o), d_o = 3 (W_s) */
    const double bound[16] = {0, 1 / sqrt(3.0), 1 / sqrt(3.0), 1 / sqrt(3.0), 1 / sqrt(3.0),
                              1 / sqrt(3.0), 0.5, 0.5, 1 / sqrt(2.0), 1 / sqrt(2.0), 0.5,
                              1 / sqrt(6.0), 1 / sqrt(5.0), 1 / sqrt(5.0), 1 / sqrt(3.0), 1 / sqrt(3.0)};
    double emb_max = 0;
    for (size_t i = 0; i < n; i++) {
        for (uint64_t e = offsets[i]; e < offsets[i + 1]; e++) {
            CHECK(isfinite(a[e]));
            if (i == 0) {
                if (fabs(a[e]) > emb_max) emb_max = fabs(a[e]);
            } else if (fabs(a[e]) > bound[i]) {
                fprintf(stderr, "tensor %zu element %" PRIu64 " is %g, beyond %g\n", i, e - offsets[i],
                        (double)a[e], bound[i]);
                check_failures++;
            }
        }
    }
    CHECK(emb_max > 0.5); /* 35 normal draws: not a narrow uniform */
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
    CHECK_STR(fwm__arch_name(FWM_ARCH_MNM), "mnm");
    fwm__free(file);
}
int main(void) {
    if (!test_dir_make("test-mnm-format")) return 1;
    static const check_case cases[] = {
        {"round_trip", round_trip},
        {"hparams_checks", hparams_checks},
        {"writer_refusals", writer_refusals},
        {"schema_refusals", schema_refusals},
        {"init_ranges", init_ranges},
        {"registry", registry},
    };
    int status = check_run_cases("test_mnm_format", cases, sizeof cases / sizeof cases[0]);
    test_dir_remove();
    return status;
}
