/* fuzz_fixture.c - builds the fixed small models of fuzz_fixture.h (the FWM's, the LSTM's, the MNM's,
 * the GFW's, the STM's).
 * Weights follow a formula with exactly representable values, w(t, i) = ((7 i + 3 t) mod 13 - 6) / 32
 * for element i of tensor t (tensor-list order), so make_corpus.py can recompute the FWM's checksum
 * and fingerprint. */
#include "fuzz_fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fwm_hparams.h"
#include "fwm_schema.h"
#include "gfw/gfw_hparams.h"
#include "lstm/lstm_hparams.h"
#include "mnm/mnm_hparams.h"
#include "stm/stm_hparams.h"

/* Lower-case and without white space, so that tokenizing the token texts joined by spaces gives
 * the same ids back (fuzz_tokenize.c relies on it). Ids are positions. */
static const char *const fixture_vocabulary[] = {
    "<pad>", "<eos>", ".",   "?",  "mary", "john", "went", "to",    "the",  "kitchen", "garden",
    "where", "is",    "n,w", "s,e", "mr.", "...",  "a",    "a.",    "?.",   "caf\xc3\xa9", "x",
    "yes",   "no",
};
#define FIXTURE_V (sizeof fixture_vocabulary / sizeof fixture_vocabulary[0])

static fwm_hparams fixture_hparams(void) {
    fwm_hparams hp = {0};
    hp.vocab_size = (uint32_t)FIXTURE_V;
    hp.embedding_length = 5;
    hp.hidden_size = 6;
    hp.memory_s = 4;
    hp.memory_r = 3;
    hp.memory_t = 4;
    hp.read_count = 2; /* N_r > 1 needs S == T */
    hp.residual = true;
    hp.read_policy = FWM_READ_ALWAYS;
    hp.read_token_id = 3; /* "?" */
    hp.forget_bias = 1.0f;
    hp.beta_bias = 1.0f;
    hp.write_scale = 0.25f;                /* 1/T */
    hp.layer_norm_eps = 1.0f / 65536.0f;   /* exact in binary, unlike 1e-5 */
    hp.padding_token_id = 0;
    hp.eos_token_id = 1;
    return hp;
}

static void fail(const char *what, const fwm_error *err) {
    fprintf(stderr, "fuzz fixture: %s: %s\n", what, err ? err->message : "");
    abort();
}

/* w(t, i) of the header comment, for `count` elements of tensor t. */
static float *formula_tensor(uint64_t count, uint64_t t) {
    float *x = malloc((count ? count : 1) * sizeof(float));
    if (!x) fail("out of memory", NULL);
    for (uint64_t i = 0; i < count; i++) x[i] = (float)((int)((7 * i + 3 * t) % 13) - 6) / 32.0f;
    return x;
}

typedef fwm_status (*writer)(const char *path, const void *spec, fwm_error *err);

static fwm_status write_fwm(const char *path, const void *spec, fwm_error *err) {
    return fwm__model_write(path, spec, err);
}

static fwm_status write_lstm(const char *path, const void *spec, fwm_error *err) {
    return fwm__lstm_model_write(path, spec, err);
}

static fwm_status write_mnm(const char *path, const void *spec, fwm_error *err) {
    return fwm__mnm_model_write(path, spec, err);
}

static fwm_status write_gfw(const char *path, const void *spec, fwm_error *err) {
    return fwm__gfw_model_write(path, spec, err);
}

static fwm_status write_stm(const char *path, const void *spec, fwm_error *err) {
    return fwm__stm_model_write(path, spec, err);
}

/* Write a model into a fresh temporary directory, load it fully into memory, remove both. */
static fwm_model *write_and_load(writer write, const void *spec) {
    const char *tmp = getenv("TMPDIR");
    char dir[512], path[600];
    snprintf(dir, sizeof dir, "%s/fwm-fuzz-fixture-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (!mkdtemp(dir)) fail("cannot create a temporary directory", NULL);
    snprintf(path, sizeof path, "%s/fixture.gguf", dir);
    fwm_error err;
    fwm_model *model = NULL;
    fwm_status status = write(path, spec, &err);
    if (status == FWM_OK) {
        fwm_model_params params = fwm_model_default_params();
        params.use_mmap = false;
        status = fwm_model_load(path, &params, &model, &err);
    }
    unlink(path);
    rmdir(dir);
    if (status != FWM_OK) fail(path, &err);
    return model;
}

/* formula_model_<prefix>: `spec` (all but its tensors filled) with every tensor by the formula, in
 * the architecture's tensor order (fwm_<prefix>_tensor_at), written and loaded. */
#define FIXTURE_FORMULA_MODEL_(prefix, PREFIX)                                              \
    static fwm_model *formula_model_##prefix(fwm_##prefix##_write_spec *spec) {             \
        size_t count = fwm__##prefix##_tensor_count(&spec->hp);                              \
        float *tensors[FWM_##PREFIX##_MAX_TENSORS] = {0};                                   \
        for (size_t t = 0; t < count; t++) {                                                \
            char name[48];                                                                  \
            uint64_t rows, cols;                                                            \
            fwm__##prefix##_tensor_at(&spec->hp, t, name, &rows, &cols);                     \
            spec->tensors[t] = tensors[t] = formula_tensor(rows * cols, (uint64_t)t);       \
        }                                                                                   \
        fwm_model *model = write_and_load(write_##prefix, spec);                            \
        for (size_t t = 0; t < count; t++) free(tensors[t]);                                \
        return model;                                                                       \
    }
FIXTURE_FORMULA_MODEL_(lstm, LSTM)
FIXTURE_FORMULA_MODEL_(mnm, MNM)
FIXTURE_FORMULA_MODEL_(gfw, GFW)
FIXTURE_FORMULA_MODEL_(stm, STM)
#undef FIXTURE_FORMULA_MODEL_

static fwm_model *build(void) {
    fwm_hparams hparams = fixture_hparams();
    const fwm_hparams *hp = &hparams;
    uint64_t elements[FWM_TENSOR_COUNT] = {
#define FIXTURE_ELEMENTS_(field, name, rows, cols) (uint64_t)(rows) * (uint64_t)(cols),
        FWM_TENSOR_LIST(FIXTURE_ELEMENTS_)
#undef FIXTURE_ELEMENTS_
    };
    fwm_write_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.hp = hparams;
    spec.head.name = "fuzz fixture";
    spec.head.tokens = fixture_vocabulary;
    float *tensors[FWM_TENSOR_COUNT] = {0};
    for (int t = 0; t < FWM_TENSOR_COUNT; t++) spec.tensors[t] = tensors[t] = formula_tensor(elements[t], (uint64_t)t);
    fwm_model *model = write_and_load(write_fwm, &spec);
    for (int t = 0; t < FWM_TENSOR_COUNT; t++) free(tensors[t]);
    return model;
}

static fwm_model *build_lstm(void) {
    fwm_lstm_write_spec spec;
    memset(&spec, 0, sizeof spec);
    fwm__lstm_hparams_defaults(&spec.hp);
    spec.hp.vocab_size = (uint32_t)FIXTURE_V;
    spec.hp.embedding_length = 5;
    spec.hp.hidden_size = 4;
    spec.hp.layer_count = 2;
    spec.hp.residual = true;
    spec.hp.padding_token_id = 0;
    spec.hp.eos_token_id = 1;
    spec.head.name = "fuzz fixture (lstm)";
    spec.head.tokens = fixture_vocabulary;
    return formula_model_lstm(&spec);
}

static fwm_model *build_mnm(void) {
    fwm_mnm_write_spec spec;
    memset(&spec, 0, sizeof spec);
    fwm__mnm_hparams_defaults(&spec.hp);
    spec.hp.vocab_size = (uint32_t)FIXTURE_V;
    spec.hp.embedding_length = 5;
    spec.hp.hidden_size = 2;
    spec.hp.head_count = 1;
    spec.hp.key_length = 2;
    spec.hp.value_length = 1;
    spec.hp.memory_hidden = 2;
    spec.hp.memory_layers = 1;
    spec.hp.output_length = 3;
    spec.hp.padding_token_id = 0;
    spec.hp.eos_token_id = 1;
    spec.head.name = "fuzz fixture (mnm)";
    spec.head.tokens = fixture_vocabulary;
    return formula_model_mnm(&spec);
}

static fwm_model *build_gfw(void) {
    fwm_gfw_write_spec spec;
    memset(&spec, 0, sizeof spec);
    fwm__gfw_hparams_defaults(&spec.hp);
    spec.hp.vocab_size = (uint32_t)FIXTURE_V;
    spec.hp.embedding_length = 5;
    spec.hp.fast_hidden = 2;
    spec.hp.slow_hidden = 2;
    spec.hp.slow_inner = 3;
    spec.hp.layer_norm_epsilon = 1.0f / 65536.0f;
    spec.hp.padding_token_id = 0;
    spec.hp.eos_token_id = 1;
    spec.head.name = "fuzz fixture (gfw)";
    spec.head.tokens = fixture_vocabulary;
    return formula_model_gfw(&spec);
}

static fwm_model *build_stm(void) {
    fwm_stm_write_spec spec;
    memset(&spec, 0, sizeof spec);
    fwm__stm_hparams_defaults(&spec.hp);
    spec.hp.vocab_size = (uint32_t)FIXTURE_V;
    spec.hp.input_mode = FWM_STM_INPUT_SENTENCE;
    spec.hp.embedding_length = 5;
    spec.hp.sentence_length = 3;
    spec.hp.memory_size = 2;
    spec.hp.query_count = 2;
    spec.hp.relation_length = 2;
    spec.hp.answer_hidden = 2;
    spec.hp.sam_norm_eps = 1.0f / 65536.0f;
    spec.hp.answer_norm_eps = 1.0f / 65536.0f;
    spec.hp.reset_on_eos = true;
    spec.hp.statement_end_token_id = 2; /* "." */
    spec.hp.question_end_token_id = 3;  /* "?" */
    spec.hp.padding_token_id = 0;
    spec.hp.eos_token_id = 1;
    spec.head.name = "fuzz fixture (stm)";
    spec.head.tokens = fixture_vocabulary;
    return formula_model_stm(&spec);
}

/* The getters of fuzz_fixture.h: each builds its model on first use and keeps it. */
#define FIXTURE_GETTER_(getter, builder)                                                    \
    const fwm_model *getter(void) {                                                         \
        static fwm_model *model;                                                            \
        if (!model) model = builder();                                                      \
        return model;                                                                       \
    }
FIXTURE_GETTER_(fuzz_fixture_model, build)
FIXTURE_GETTER_(fuzz_fixture_lstm_model, build_lstm)
FIXTURE_GETTER_(fuzz_fixture_mnm_model, build_mnm)
FIXTURE_GETTER_(fuzz_fixture_gfw_model, build_gfw)
FIXTURE_GETTER_(fuzz_fixture_stm_model, build_stm)
#undef FIXTURE_GETTER_
