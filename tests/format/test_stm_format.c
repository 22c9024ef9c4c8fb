/* test_stm_format.c - the `stm` architecture in the model format: fwm_stm_model_write round trip
 * in both input modes (hyperparameters, vocabulary, prime tokens, tensors bit-exact, the mode's
 * tensor list, checksum), the FWMFP2 fingerprint recomputed here from its definition in
 * docs/FORMAT.md (bool as a u32, f32 as its bits), the hyperparameter checks (end tokens, the
 * memory's bound, docs/MODEL.md's counts), the initialisation's table, and the schema's refusals
 * by name (missing and retyped keys, wrong shapes, the other mode's tensors). */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "arch_list.h"
#include "format_test_util.h"
#include "fwm_alloc.h"
#include "gguf_writer.h"
#include "stm/stm_init.h"
#include "stm/stm_schema.h"
#include "writer_common.h"
#include "xxhash64.h"

static const char *const vocabulary[] = {"<pad>", "<eos>", ".", "?", "john", "garden", "n,w", "is"};

static fwm_stm_hparams small_hparams(uint32_t mode) {
    fwm_stm_hparams hp;
    fwm_stm_hparams_defaults(&hp);
    hp.vocab_size = 8;
    hp.input_mode = mode;
    hp.embedding_length = 5;
    hp.sentence_length = 4;
    hp.memory_size = 3;
    hp.query_count = 2;
    hp.relation_length = 4;
    hp.answer_hidden = 6;
    hp.statement_end_token_id = 2;
    hp.question_end_token_id = 3;
    return hp;
}

static void tensor_at(const void *hp, size_t i, char name[48], uint64_t *rows, uint64_t *cols) {
    fwm_stm_tensor_at(hp, i, name, rows, cols);
}

static int tensor_is_matrix(const void *hp, size_t i) { return fwm__stm_tensor_is_matrix(hp, i); }

/* Tensors filled with distinct values (owned by the caller: free data). */
static float *fill_tensors(const fwm_stm_hparams *hp, fwm_stm_write_spec *spec) {
    return fill_tensors_at(hp, fwm_stm_tensor_count(hp), tensor_at, spec->tensors);
}

/* FWMFP2 of `hp` with the test vocabulary (format_test_util.h writes it out from docs/FORMAT.md). */
static uint64_t expected_fingerprint(const fwm_stm_hparams *hp, uint64_t checksum) {
    uint32_t es, ea;
    memcpy(&es, &hp->sam_norm_eps, 4);
    memcpy(&ea, &hp->answer_norm_eps, 4);
    uint32_t fields[15] = {hp->vocab_size,     hp->input_mode,    hp->embedding_length,
                           hp->sentence_length, hp->memory_size,  hp->query_count,
                           hp->relation_length, hp->answer_hidden, es,
                           ea,                 hp->reset_on_eos ? 1u : 0u, hp->statement_end_token_id,
                           hp->question_end_token_id, hp->padding_token_id, hp->eos_token_id};
    return expected_fwmfp2("stm", fields, 15, vocabulary, hp->vocab_size, checksum);
}

static void round_trip_mode(uint32_t mode) {
    fwm_stm_hparams hp = small_hparams(mode);
    hp.reset_on_eos = mode == FWM_STM_INPUT_SENTENCE;
    fwm_stm_write_spec spec = {.hp = hp, .name = "tiny stm", .tokens = vocabulary};
    float *data = fill_tensors(&hp, &spec);
    const uint32_t prime[2] = {1, 4};
    spec.has_prime_tokens = true, spec.prime_tokens = prime, spec.prime_count = 2;
    fwm_error err;
    CHECK_OK(fwm_stm_model_write(test_dir_path("a.gguf"), &spec, &err), err);
    size_t size = 0;
    uint8_t *file = read_back(test_dir_path("a.gguf"), FWM_ARCH_STM, &size);
    fwm_stm_schema s;
    CHECK_OK(fwm_stm_schema_parse(file, size, &s, &err), err);
    CHECK(memcmp(&s.hp, &hp, sizeof hp) == 0);
    CHECK_STR(s.head.name, "tiny stm");
    for (uint32_t i = 0; i < hp.vocab_size; i++) CHECK_STR(s.head.tokens[i], vocabulary[i]);
    CHECK_INT(s.head.prime_count, 2);
    CHECK_INT(s.tensor_count, mode == FWM_STM_INPUT_SENTENCE ? 38 : 23);
    check_stored_tensors(s.tensors, s.tensor_count, &hp, tensor_at, spec.tensors);
    char name[48];
    uint64_t rows, cols;
    fwm_stm_tensor_at(&hp, s.tensor_count - 2, name, &rows, &cols);
    if (mode == FWM_STM_INPUT_SENTENCE) {
        CHECK_STR(name, "stm.answer.norm");
        CHECK_U64(rows, 6);
        fwm_stm_tensor_at(&hp, 1, name, &rows, &cols);
        CHECK_STR(name, "stm.position.weight");
        CHECK_U64(fwm_stm_state_bytes(&hp), 4 * (9 * 3 + 4 + 2));
    } else {
        CHECK_STR(name, "output.weight"); /* G3 [V, n_q n_r] */
        CHECK_U64(cols, 8);
        CHECK_U64(fwm_stm_state_bytes(&hp), 4 * 27);
    }
    CHECK(s.head.has_checksum && s.head.checksum == fwm_stm_schema_checksum(&s));
    CHECK(s.head.has_fingerprint);
    CHECK_U64(s.head.fingerprint, expected_fingerprint(&hp, s.head.checksum));
    fwm_stm_hparams other = hp;
    other.reset_on_eos = !hp.reset_on_eos;
    CHECK(fwm_stm_fingerprint(&other, (const char *const *)s.head.tokens, s.head.token_lengths, s.head.checksum) !=
          s.head.fingerprint);
    fwm_schema fs;
    CHECK_STATUS(fwm_schema_parse(file, size, &fs, &err), FWM_ERR_FORMAT, &err);
    CHECK_CONTAINS(err.message, "key 'general.architecture': expected \"fwm\", found \"stm\"");
    fwm_stm_schema_release(&s);
    free(file);
    free(data);
    unlink(test_dir_path("a.gguf"));
}

static void round_trip(void) {
    round_trip_mode(FWM_STM_INPUT_SENTENCE);
    round_trip_mode(FWM_STM_INPUT_WORD);
}

static uint64_t total_floats(const fwm_stm_hparams *hp) {
    uint64_t total = 0;
    for (size_t i = 0; i < fwm_stm_tensor_count(hp); i++) {
        char name[48];
        uint64_t rows, cols;
        fwm_stm_tensor_at(hp, i, name, &rows, &cols);
        total += rows * cols;
    }
    return total;
}

static void hparams_checks(void) {
    fwm_stm_hparams hp;
    fwm_stm_hparams_defaults(&hp);
    CHECK_INT(hp.vocab_size, 180);
    CHECK_INT(hp.input_mode, FWM_STM_INPUT_SENTENCE);
    CHECK_INT(hp.memory_size, 90);
    CHECK_INT(hp.query_count, 20);
    CHECK(hp.reset_on_eos);
    /* docs/MODEL.md's counts: the bAbI size, and the catbAbI size in word mode */
    CHECK_U64(total_floats(&hp), 456267);
    CHECK_U64(fwm_stm_state_bytes(&hp), 680472);
    fwm_stm_hparams word = hp;
    word.input_mode = FWM_STM_INPUT_WORD, word.embedding_length = 256, word.memory_size = 56;
    word.query_count = 12, word.relation_length = 96, word.reset_on_eos = false;
    CHECK_U64(total_floats(&word), 683839);
    CHECK_U64(fwm_stm_state_bytes(&word), 163072);
    fwm_error err;
    CHECK_OK(fwm_stm_hparams_check(&hp, &err), err);
    CHECK_OK(fwm_stm_hparams_check(&word, &err), err);
    fwm_stm_hparams bad = hp;
    bad.input_mode = 2;
    CHECK_STATUS(fwm_stm_hparams_check(&bad, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    CHECK_CONTAINS(err.message, "key 'stm.input_mode': expected 0 to 1, found 2");
    bad = hp, bad.question_end_token_id = bad.statement_end_token_id;
    CHECK_STATUS(fwm_stm_hparams_check(&bad, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    CHECK_CONTAINS(err.message, "also stm.statement_end_token_id");
    word.question_end_token_id = word.statement_end_token_id; /* word mode does not use them */
    CHECK_OK(fwm_stm_hparams_check(&word, &err), err);
    bad = hp, bad.statement_end_token_id = bad.eos_token_id;
    CHECK_STATUS(fwm_stm_hparams_check(&bad, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    CHECK_CONTAINS(err.message, "key 'tokenizer.ggml.eos_token_id': equals an end token");
    bad = hp, bad.question_end_token_id = bad.padding_token_id;
    CHECK_STATUS(fwm_stm_hparams_check(&bad, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    CHECK_CONTAINS(err.message, "tokenizer.ggml.padding_token_id");
    bad = hp, bad.question_end_token_id = 180;
    CHECK_STATUS(fwm_stm_hparams_check(&bad, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    CHECK_CONTAINS(err.message, "key 'stm.question_end_token_id': expected a token id below stm.vocab_size = 180");
    bad = hp, bad.sam_norm_eps = 0.0f;
    CHECK_STATUS(fwm_stm_hparams_check(&bad, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    CHECK_CONTAINS(err.message, "key 'stm.sam.layer_norm_epsilon': expected > 0");
    bad = hp, bad.answer_norm_eps = NAN;
    CHECK_STATUS(fwm_stm_hparams_check(&bad, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    CHECK_CONTAINS(err.message, "stm.answer.layer_norm_epsilon");
    bad = hp, bad.sentence_length = 257;
    CHECK_STATUS(fwm_stm_hparams_check(&bad, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    CHECK_CONTAINS(err.message, "key 'stm.sentence.max_length': expected 1 to 256, found 257");
    bad = hp, bad.memory_size = 2048, bad.query_count = 16; /* 2048^2 * 17 > 2^26 */
    CHECK_STATUS(fwm_stm_hparams_check(&bad, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    CHECK_CONTAINS(err.message, "the memories hold");
    bad = word, bad.memory_size = 2048, bad.query_count = 1, bad.relation_length = 65536;
    CHECK_STATUS(fwm_stm_hparams_check(&bad, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    CHECK_CONTAINS(err.message, "tensor 'stm.distill.weight' would hold");
}

static void writer_refusals(void) {
    fwm_stm_hparams hp = small_hparams(FWM_STM_INPUT_SENTENCE);
    fwm_stm_write_spec spec = {.hp = hp, .tokens = vocabulary};
    float *data = fill_tensors(&hp, &spec);
    fwm_error err;
    fwm_stm_write_spec bad = spec;
    bad.tensors[37] = NULL;
    CHECK_STATUS(fwm_stm_model_write(test_dir_path("b.gguf"), &bad, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    CHECK_CONTAINS(err.message, "tensor 'output.weight' has no data");
    bad = spec;
    bad.hp.statement_end_token_id = 3;
    CHECK_STATUS(fwm_stm_model_write(test_dir_path("b.gguf"), &bad, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    CHECK_CONTAINS(err.message, "stm.question_end_token_id");
    bad = spec;
    const fwm_write_kv extra[1] = {{.key = "stm.reset_on_eos", .kind = FWM_WRITE_KV_U32}};
    bad.extra = extra, bad.extra_count = 1;
    CHECK_STATUS(fwm_stm_model_write(test_dir_path("b.gguf"), &bad, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    CHECK_CONTAINS(err.message, "extra key 'stm.reset_on_eos' is written by fwm_stm_model_write itself");
    CHECK(access(test_dir_path("b.gguf"), F_OK) != 0);
    free(data);
}

/* ---- hand-built files for the schema's refusals ------------------------------------------------ */

typedef struct variant {
    uint32_t mode;             /* the keys' and tensors' input mode */
    uint32_t key_mode;         /* stm.input_mode as written (mode unless other_mode_key) */
    bool other_mode_key;
    const char *omit_key;      /* a key left out */
    const char *retype_key;    /* a key written as an i32 instead */
    const char *omit_tensor;
    const char *reshape_tensor; /* one more row */
    const char *extra_tensor;  /* one more vector of 3 floats with this name */
} variant;

static uint8_t *build(const variant *v, size_t *size) {
    fwm_stm_hparams hp = small_hparams(v->mode);
    fwm_gguf_writer w;
    fwm__gguf_writer_init(&w, 32);
    fwm__gguf_writer_add_string(&w, "general.architecture", "stm");
#define PUT_(field, key, kind, def, low, high)                                                    \
    if (!(v->omit_key && !strcmp(v->omit_key, key))) {                                            \
        if (v->retype_key && !strcmp(v->retype_key, key))                                         \
            fwm__gguf_writer_add_i32(&w, key, 1);                                                 \
        else if (!strcmp(key, "stm.input_mode"))                                                  \
            fwm__gguf_writer_add_u32(&w, key, v->other_mode_key ? 1 - v->mode : v->mode);         \
        else                                                                                      \
            FWM_WRITER_PUT_##kind(&w, key, hp.field);                                             \
    }
    FWM_STM_HPARAM_LIST(PUT_)
#undef PUT_
    fwm__gguf_writer_add_string(&w, "tokenizer.ggml.model", "word");
    fwm__gguf_writer_add_string_array(&w, "tokenizer.ggml.tokens", vocabulary, NULL, 8);
    tensor_damage d = {.omit_tensor = v->omit_tensor,
                      .reshape_tensor = v->reshape_tensor,
                      .extra_name = v->extra_tensor,
                      .extra_rows = 3,
                      .extra_cols = 1,
                      .extra_matrix = 0};
    return finish_damaged_file(&w, &hp, fwm_stm_tensor_count(&hp), tensor_at, tensor_is_matrix, &d, size);
}

static void expect(const variant *v, fwm_status status, const char *needle) {
    size_t size = 0;
    uint8_t *file = build(v, &size);
    fwm_stm_schema s;
    fwm_error err;
    fwm_status st = fwm_stm_schema_parse(file, size, &s, &err);
    expect_parse(st, &err, status, needle);
    if (!st) fwm_stm_schema_release(&s);
    fwm__free(file);
}

static void schema_refusals(void) {
    for (uint32_t mode = 0; mode < 2; mode++) {
        variant ok = {.mode = mode};
        expect(&ok, FWM_OK, NULL);
    }
#define OMIT_(field, key, kind, def, low, high)                                     \
    {                                                                               \
        variant v = {.omit_key = key};                                              \
        expect(&v, FWM_ERR_FORMAT, "missing key '" key "'");                        \
        v.retype_key = key, v.omit_key = NULL;                                      \
        expect(&v, FWM_ERR_FORMAT, "key '" key "': expected type");                 \
    }
    FWM_STM_HPARAM_LIST(OMIT_)
#undef OMIT_
    variant v = {.omit_tensor = "stm.relation.init"};
    expect(&v, FWM_ERR_FORMAT, "missing tensor 'stm.relation.init'");
    v = (variant){.omit_tensor = "stm.answer.role.2.bias2"};
    expect(&v, FWM_ERR_FORMAT, "missing tensor 'stm.answer.role.2.bias2'");
    v = (variant){.mode = FWM_STM_INPUT_WORD, .omit_tensor = "stm.distill.bias"};
    expect(&v, FWM_ERR_FORMAT, "missing tensor 'stm.distill.bias'");
    v = (variant){.reshape_tensor = "stm.sam.weight"};
    expect(&v, FWM_ERR_FORMAT, "tensor 'stm.sam.weight': expected shape [6, 3], found [7, 3]");
    v = (variant){.reshape_tensor = "stm.alpha"};
    expect(&v, FWM_ERR_FORMAT, "tensor 'stm.alpha': expected shape [3], found [4]");
    v = (variant){.reshape_tensor = "stm.relation.init"};
    expect(&v, FWM_ERR_FORMAT, "tensor 'stm.relation.init': expected shape [6, 3], found [7, 3]");
    /* a word-mode file's keys with a sentence-mode tensor list, and the other way round */
    v = (variant){.mode = FWM_STM_INPUT_SENTENCE, .other_mode_key = true};
    expect(&v, FWM_ERR_FORMAT, "missing tensor 'stm.distill.weight'");
    v = (variant){.mode = FWM_STM_INPUT_WORD, .other_mode_key = true};
    expect(&v, FWM_ERR_FORMAT, "missing tensor 'stm.position.weight'");
    v = (variant){.mode = FWM_STM_INPUT_WORD, .extra_tensor = "stm.position.weight"};
    expect(&v, FWM_ERR_FORMAT, "unexpected tensor 'stm.position.weight': not part of the stm schema");
}

/* fwm__stm_init_weights: the spec's table (constants exact, draws within their bounds),
 * deterministic per seed. */
static void init_table(void) {
    fwm_stm_hparams hp = small_hparams(FWM_STM_INPUT_SENTENCE);
    size_t n = fwm_stm_tensor_count(&hp), total = 0;
    uint64_t rows, cols, offsets[FWM_STM_MAX_TENSORS + 1];
    char name[48];
    for (size_t i = 0; i < n; i++) {
        fwm_stm_tensor_at(&hp, i, name, &rows, &cols);
        offsets[i] = total;
        total += rows * cols;
    }
    offsets[n] = total;
    float *a = malloc(total * sizeof *a), *b = malloc(total * sizeof *b);
    float *ta[FWM_STM_MAX_TENSORS], *tb[FWM_STM_MAX_TENSORS];
    for (size_t i = 0; i < n; i++) ta[i] = a + offsets[i], tb[i] = b + offsets[i];
    fwm__stm_init_weights(&hp, 7, ta);
    fwm__stm_init_weights(&hp, 7, tb);
    CHECK(memcmp(a, b, total * sizeof *a) == 0);
    fwm__stm_init_weights(&hp, 8, tb);
    CHECK(memcmp(a, b, total * sizeof *a) != 0);
    CHECK(ta[1][0] == 0.25f && ta[1][19] == 0.25f);              /* Pos: 1/P */
    CHECK(ta[15][0] == 1.0f && ta[15][1] == 0.0f && ta[15][2] == 0.0f); /* alpha (1, 0, 0) in sentence mode */
    CHECK(ta[13][0] == 1.0f && ta[14][5] == 0.0f);               /* SAM's layer norm */
    CHECK(ta[36][0] == 1.0f && ta[36][3] == 0.0f && ta[36][6] == 1.0f); /* answer norms */
    CHECK(ta[21][0] == 0.0f && ta[23][1] == 0.0f);               /* entity MLP biases */
    /* the gate bias: U(-1/sqrt(d), 1/sqrt(d)) on the input half, + 1 on the forget half */
    for (size_t e = 0; e < 6; e++) {
        double x = ta[10][e], centre = e < 3 ? 0.0 : 1.0;
        CHECK(fabs(x - centre) <= 1 / sqrt(3.0));
    }
    double limit_emb = 0, limit_item = 0;
    for (uint64_t e = 0; e < 8 * 5; e++) limit_emb = fmax(limit_emb, fabs(ta[0][e]));
    for (uint64_t e = 0; e < 9; e++) limit_item = fmax(limit_item, fabs(ta[18][e]));
    CHECK(limit_emb <= 0.1 && limit_emb > 0.05);
    CHECK(limit_item <= 1 / sqrt(6.0) && limit_item > 0);
    free(a);
    free(b);

    /* word mode draws alpha (0, 0, 0): its relational memory starts without carrying itself over */
    fwm_stm_hparams word = small_hparams(FWM_STM_INPUT_WORD);
    n = fwm_stm_tensor_count(&word), total = 0;
    size_t alpha_at = 0;
    for (size_t i = 0; i < n; i++) {
        fwm_stm_tensor_at(&word, i, name, &rows, &cols);
        if (strcmp(name, "stm.alpha") == 0) alpha_at = total;
        total += rows * cols;
    }
    float *w = malloc(total * sizeof *w), *tw[FWM_STM_MAX_TENSORS];
    for (size_t i = 0, at = 0; i < n; i++) {
        fwm_stm_tensor_at(&word, i, name, &rows, &cols);
        tw[i] = w + at;
        at += rows * cols;
    }
    fwm__stm_init_weights(&word, 7, tw);
    CHECK(alpha_at > 0 && w[alpha_at] == 0.0f && w[alpha_at + 1] == 0.0f && w[alpha_at + 2] == 0.0f);
    free(w);
}

static void registry(void) {
    CHECK_STR(fwm__arch_name(FWM_ARCH_STM), "stm");
}

int main(void) {
    if (!test_dir_make("test-stm-format")) return 1;
    static const check_case cases[] = {
        {"round_trip", round_trip},
        {"hparams_checks", hparams_checks},
        {"writer_refusals", writer_refusals},
        {"schema_refusals", schema_refusals},
        {"init_table", init_table},
        {"registry", registry},
    };
    int status = check_run_cases("test_stm_format", cases, sizeof cases / sizeof cases[0]);
    test_dir_remove();
    return status;
}
