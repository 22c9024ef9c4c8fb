/* test_lstm_format.c - the `lstm` architecture in the model format: fwm_lstm_model_write round
 * trip (hyperparameters, vocabulary, prime tokens, tensors bit-exact, checksum), the FWMFP2
 * fingerprint recomputed here from its definition in docs/FORMAT.md, the hyperparameter checks,
 * F16/BF16 tensors, the registry's refusal of an unknown architecture, and the schema's refusals by
 * name (missing keys, wrong key types, wrong shapes, wrong tensor types, extra tensors). */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "arch_list.h"
#include "format_test_util.h"
#include "fwm_alloc.h"
#include "gguf_writer.h"
#include "lstm/lstm_schema.h"
#include "xxhash64.h"

static const char *const vocabulary[] = {"<pad>", "<eos>", ".", "?", "john", "garden", "n,w"};

static fwm_lstm_hparams small_hparams(void) {
    fwm_lstm_hparams hp;
    fwm_lstm_hparams_defaults(&hp);
    hp.vocab_size = 7;
    hp.embedding_length = 5;
    hp.hidden_size = 3;
    hp.layer_count = 2;
    hp.forget_bias = 0.5f;
    return hp;
}

static void tensor_at(const void *hp, size_t i, char name[48], uint64_t *rows, uint64_t *cols) {
    fwm_lstm_tensor_at(hp, i, name, rows, cols);
}

static int tensor_is_matrix(const void *hp, size_t i) { return fwm__lstm_tensor_is_matrix(hp, i); }

/* Tensors filled with distinct values (owned by the caller: free data). */
static float *fill_tensors(const fwm_lstm_hparams *hp, fwm_lstm_write_spec *spec) {
    return fill_tensors_at(hp, fwm_lstm_tensor_count(hp), tensor_at, spec->tensors);
}

/* FWMFP2 of `hp` with the test vocabulary (format_test_util.h writes it out from docs/FORMAT.md). */
static uint64_t expected_fingerprint(const fwm_lstm_hparams *hp, uint64_t checksum) {
    uint32_t fb;
    memcpy(&fb, &hp->forget_bias, 4);
    uint32_t fields[8] = {hp->vocab_size, hp->embedding_length, hp->hidden_size, hp->layer_count,
                          hp->residual ? 1u : 0u, fb, hp->padding_token_id, hp->eos_token_id};
    return expected_fwmfp2("lstm", fields, 8, vocabulary, hp->vocab_size, checksum);
}

static void round_trip(void) {
    fwm_lstm_hparams hp = small_hparams();
    fwm_lstm_write_spec spec = {.hp = hp, .name = "tiny lstm", .tokens = vocabulary};
    float *data = fill_tensors(&hp, &spec);
    const uint32_t prime[2] = {1, 4};
    spec.has_prime_tokens = true, spec.prime_tokens = prime, spec.prime_count = 2;
    const fwm_write_kv extra[1] = {{.key = "fwm.training.steps", .kind = FWM_WRITE_KV_U32, .value.u32 = 9}};
    spec.extra = extra, spec.extra_count = 1;
    fwm_error err;
    CHECK_OK(fwm_lstm_model_write(test_dir_path("a.gguf"), &spec, &err), err);
    size_t size = 0;
    uint8_t *file = read_back(test_dir_path("a.gguf"), FWM_ARCH_LSTM, &size);
    fwm_lstm_schema s;
    CHECK_OK(fwm_lstm_schema_parse(file, size, &s, &err), err);
    CHECK(memcmp(&s.hp, &hp, sizeof hp) == 0);
    CHECK_STR(s.head.name, "tiny lstm");
    for (uint32_t i = 0; i < hp.vocab_size; i++) CHECK_STR(s.head.tokens[i], vocabulary[i]);
    CHECK_INT(s.head.prime_count, 2);
    CHECK_INT(s.head.prime_tokens[1], 4);
    CHECK_INT(s.tensor_count, 9);
    check_stored_tensors(s.tensors, s.tensor_count, &hp, tensor_at, spec.tensors);
    /* layer 1 reads H inputs, layer 0 E */
    CHECK_U64(s.tensors[1].cols, 5);
    CHECK_U64(s.tensors[4].cols, 3);
    CHECK(s.head.has_checksum && s.head.checksum == fwm_lstm_schema_checksum(&s));
    CHECK(s.head.has_fingerprint);
    CHECK_U64(s.head.fingerprint, expected_fingerprint(&hp, s.head.checksum));
    CHECK_U64(fwm_lstm_fingerprint(&hp, (const char *const *)s.head.tokens, s.head.token_lengths, s.head.checksum),
              s.head.fingerprint);
    /* a changed hyperparameter changes the fingerprint */
    fwm_lstm_hparams other = hp;
    other.residual = !hp.residual;
    CHECK(fwm_lstm_fingerprint(&other, (const char *const *)s.head.tokens, s.head.token_lengths, s.head.checksum) !=
          s.head.fingerprint);
    /* the FWM's schema refuses it by its architecture, as before */
    check_fwm_schema_refuses(file, size, "lstm");
    fwm_lstm_schema_release(&s);
    free(file);
    free(data);
    unlink(test_dir_path("a.gguf"));
}

static void hparams_checks(void) {
    fwm_lstm_hparams hp;
    fwm_lstm_hparams_defaults(&hp);
    CHECK_INT(hp.vocab_size, 180);
    CHECK_INT(hp.embedding_length, 256);
    CHECK_INT(hp.hidden_size, 512);
    CHECK_INT(hp.layer_count, 4);
    CHECK(hp.residual);
    CHECK(hp.forget_bias == 1.0f);
    fwm_error err;
    CHECK_OK(fwm_lstm_hparams_check(&hp, &err), err);
    fwm_lstm_hparams bad = hp;
    bad.layer_count = 0;
    CHECK_STATUS(fwm_lstm_hparams_check(&bad, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    CHECK_CONTAINS(err.message, "key 'lstm.block_count': expected 1 to 16, found 0");
    bad = hp, bad.layer_count = 17;
    CHECK_STATUS(fwm_lstm_hparams_check(&bad, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    bad = hp, bad.hidden_size = 0;
    CHECK_STATUS(fwm_lstm_hparams_check(&bad, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    CHECK_CONTAINS(err.message, "lstm.hidden_size");
    bad = hp, bad.eos_token_id = 180;
    CHECK_STATUS(fwm_lstm_hparams_check(&bad, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    CHECK_CONTAINS(err.message,
                   "key 'tokenizer.ggml.eos_token_id': expected a token id below lstm.vocab_size = 180");
    bad = hp, bad.forget_bias = NAN;
    CHECK_STATUS(fwm_lstm_hparams_check(&bad, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    CHECK_CONTAINS(err.message, "lstm.forget_bias");
}

static void writer_refusals(void) {
    fwm_lstm_hparams hp = small_hparams();
    fwm_lstm_write_spec spec = {.hp = hp, .tokens = vocabulary};
    float *data = fill_tensors(&hp, &spec);
    fwm_error err;
    fwm_lstm_write_spec bad = spec;
    bad.tensors[4] = NULL;
    CHECK_STATUS(fwm_lstm_model_write(test_dir_path("b.gguf"), &bad, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    CHECK_CONTAINS(err.message, "tensor 'blk.1.lstm.weight_ih' has no data");
    bad = spec;
    const char *dup[7] = {"<pad>", "<eos>", ".", "?", "john", "john", "n,w"};
    bad.tokens = dup;
    CHECK_STATUS(fwm_lstm_model_write(test_dir_path("b.gguf"), &bad, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    CHECK_CONTAINS(err.message, "duplicate token 'john'");
    bad = spec;
    const fwm_write_kv extra[1] = {{.key = "lstm.hidden_size", .kind = FWM_WRITE_KV_U32}};
    bad.extra = extra, bad.extra_count = 1;
    CHECK_STATUS(fwm_lstm_model_write(test_dir_path("b.gguf"), &bad, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    CHECK_CONTAINS(err.message, "extra key 'lstm.hidden_size' is written by fwm_lstm_model_write itself");
    bad = spec;
    const uint32_t prime[1] = {7};
    bad.has_prime_tokens = true, bad.prime_tokens = prime, bad.prime_count = 1;
    CHECK_STATUS(fwm_lstm_model_write(test_dir_path("b.gguf"), &bad, &err), FWM_ERR_INVALID_ARGUMENT, &err);
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
    bool extra_tensor;         /* one more tensor, "blk.9.lstm.bias" */
} variant;

static void put_key(fwm_gguf_writer *w, const variant *v, const char *key, uint32_t type,
                    uint32_t u, float f, const char *s) {
    put_damaged_key(w, v->omit_key, v->retype_key, key, type, u, f, s);
}

/* A small LSTM file built key by key (not by fwm_lstm_model_write), with `v`'s damage. */
static uint8_t *build(const variant *v, size_t *size) {
    fwm_lstm_hparams hp = small_hparams();
    fwm_gguf_writer w;
    fwm__gguf_writer_init(&w, 32);
    put_key(&w, v, "general.architecture", FWM_GGUF_TYPE_STRING, 0, 0, v->architecture ? v->architecture : "lstm");
    put_key(&w, v, "lstm.vocab_size", FWM_GGUF_TYPE_UINT32, hp.vocab_size, 0, NULL);
    put_key(&w, v, "lstm.embedding_length", FWM_GGUF_TYPE_UINT32, hp.embedding_length, 0, NULL);
    put_key(&w, v, "lstm.hidden_size", FWM_GGUF_TYPE_UINT32, hp.hidden_size, 0, NULL);
    put_key(&w, v, "lstm.block_count", FWM_GGUF_TYPE_UINT32, hp.layer_count, 0, NULL);
    put_key(&w, v, "lstm.residual", FWM_GGUF_TYPE_BOOL, 1, 0, NULL);
    put_key(&w, v, "lstm.forget_bias", FWM_GGUF_TYPE_FLOAT32, 0, 1.0f, NULL);
    put_tokenizer_keys(&w, v->omit_key, v->retype_key, 1, vocabulary, 7);
    tensor_damage d = {.omit_tensor = v->omit_tensor,
                      .reshape_tensor = v->reshape_tensor,
                      .f16_tensor = v->f16_tensor,
                      .type_tensor = v->type_tensor,
                      .tensor_type = v->tensor_type,
                      .extra_name = v->extra_tensor ? "blk.9.lstm.bias" : NULL,
                      .extra_rows = 12,
                      .extra_cols = 1,
                      .extra_matrix = 0};
    return finish_damaged_file(&w, &hp, fwm_lstm_tensor_count(&hp), tensor_at, tensor_is_matrix, &d, size);
}

/* Parse `v`'s file: expect `status` and `needle` in the message (FWM_OK: expect success). */
static void expect(const variant *v, fwm_status status, const char *needle) {
    size_t size = 0;
    uint8_t *file = build(v, &size);
    fwm_lstm_schema s;
    fwm_error err;
    fwm_status st = fwm_lstm_schema_parse(file, size, &s, &err);
    expect_parse(st, &err, status, needle);
    if (!st) fwm_lstm_schema_release(&s);
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
        "general.architecture", "lstm.vocab_size", "lstm.embedding_length", "lstm.hidden_size",
        "lstm.block_count", "lstm.residual", "lstm.forget_bias", "tokenizer.ggml.padding_token_id",
        "tokenizer.ggml.eos_token_id", "tokenizer.ggml.model", "tokenizer.ggml.tokens"};
    expect_missing_keys(keys, sizeof keys / sizeof keys[0], try_key);
    static const retyped_key retyped[] = {
        {"lstm.vocab_size", "expected type u32, found i32"},
        {"lstm.block_count", "expected type u32, found i32"},
        {"lstm.residual", "expected type bool, found i32"},
        {"lstm.forget_bias", "expected type f32, found i32"},
        {"tokenizer.ggml.eos_token_id", "expected type u32, found i32"},
        {"tokenizer.ggml.model", "expected type string, found u32"},
        {"general.architecture", "expected type string, found u32"},
    };
    expect_retyped_keys(retyped, sizeof retyped / sizeof retyped[0], try_key);
    variant v = {.architecture = "fwm"};
    expect(&v, FWM_ERR_FORMAT, "key 'general.architecture': expected \"lstm\", found \"fwm\"");
    v = (variant){.omit_tensor = "blk.1.lstm.weight_hh"};
    expect(&v, FWM_ERR_FORMAT, "missing tensor 'blk.1.lstm.weight_hh'");
    v = (variant){.omit_tensor = "output.bias"};
    expect(&v, FWM_ERR_FORMAT, "missing tensor 'output.bias'");
    v = (variant){.reshape_tensor = "blk.0.lstm.weight_ih"};
    expect(&v, FWM_ERR_FORMAT, "tensor 'blk.0.lstm.weight_ih': expected shape [12, 5], found [13, 5]");
    v = (variant){.reshape_tensor = "blk.1.lstm.weight_ih"};
    expect(&v, FWM_ERR_FORMAT, "tensor 'blk.1.lstm.weight_ih': expected shape [12, 3], found [13, 3]");
    v = (variant){.reshape_tensor = "blk.1.lstm.bias"};
    expect(&v, FWM_ERR_FORMAT, "tensor 'blk.1.lstm.bias': expected shape [12], found [13]");
    v = (variant){.reshape_tensor = "output.weight"};
    expect(&v, FWM_ERR_FORMAT, "tensor 'output.weight': expected shape [7, 3], found [8, 3]");
    v = (variant){.extra_tensor = true};
    expect(&v, FWM_ERR_FORMAT, "unexpected tensor 'blk.9.lstm.bias': not part of the lstm schema");
    v = (variant){.f16_tensor = "blk.1.lstm.weight_hh"};
    expect(&v, FWM_OK, NULL);
    v = (variant){.type_tensor = "blk.0.lstm.bias", .tensor_type = FWM_GGML_TYPE_BF16};
    v.f16_tensor = "blk.0.lstm.bias"; /* 2 bytes an element */
    expect(&v, FWM_OK, NULL);
    /* the registry: unknown architectures by name, with the known ones */
    v = (variant){.architecture = "ntm"};
    size_t size = 0;
    uint8_t *file = build(&v, &size);
    fwm_arch arch;
    fwm_error err;
    CHECK_STATUS(fwm__arch_detect(file, size, &arch, &err), FWM_ERR_UNSUPPORTED, &err);
    CHECK_CONTAINS(err.message,
                   "key 'general.architecture': unknown architecture \"ntm\" (known: fwm, lstm, mnm, gfw, stm)");
    fwm__free(file);
    CHECK_STR(fwm__arch_name(FWM_ARCH_FWM), "fwm");
    CHECK_STR(fwm__arch_name(FWM_ARCH_LSTM), "lstm");
    CHECK(fwm__arch_name(FWM_ARCH_COUNT) == NULL);
}

int main(void) {
    if (!test_dir_make("test-lstm-format")) return 1;
    static const check_case cases[] = {
        {"round_trip", round_trip},
        {"hparams_checks", hparams_checks},
        {"writer_refusals", writer_refusals},
        {"schema_refusals", schema_refusals},
    };
    int status = check_run_cases("test_lstm_format", cases, sizeof cases / sizeof cases[0]);
    test_dir_remove();
    return status;
}
