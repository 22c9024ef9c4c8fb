/* test_arch_runtime.c - the session properties every architecture shares, through the public API
 * on model files: the program takes an architecture's name (fwm, lstm, mnm, gfw, stm) and runs each
 * property on a small model of it from the table at the end. Priming is stepping the prime tokens
 * (and reset then prime gives the primed state again); fork: the child continues as the parent
 * would, and the parent is untouched by it; refusals (tokens out of range, a session twice in one
 * batch, batches mixing architectures, the FWM-only functions and fwm_session_predict where the
 * architecture has none), each leaving every session as it was; export / import round trip, damaged
 * and truncated blobs, another model's blob, and every other architecture's blob both ways (the
 * sessions untouched); allocation failures while loading, creating and forking. What only one
 * architecture does (its reference step, its blob's layout, its state) is tested in
 * test_<arch>_runtime.c and, for the FWM, test_session.c and test_state_blob.c. */
#include <stdlib.h>

#include "arch_list.h"
#include "fwm/fwm.h"
#include "fwm_model_init.h"
#include "fwm_model_shape.h"
#include "fwm_rng.h"
#include "fwm_schema.h"
#include "gfw/gfw_init.h"
#include "gfw/gfw_schema.h"
#include "lstm/lstm_init.h"
#include "lstm/lstm_schema.h"
#include "mnm/mnm_init.h"
#include "mnm/mnm_schema.h"
#include "runtime_test_util.h"
#include "session_internal.h"
#include "stm/stm_init.h"
#include "stm/stm_schema.h"

static const char *const vocabulary[] = {"<pad>", "<eos>", ".", "?", "john", "mary", "garden",
                                         "kitchen", "went", "to", "the", "where", "is"};
#define V_TEST 13u
enum { EOS = 1, DOT = 2, JOHN = 4, MARY = 5, WENT = 8, WHERE = 11, IS = 12 };
static const uint32_t prime_tokens[3] = {EOS, WHERE, IS};

/* The head of every test model's write spec: its name, the vocabulary, and with `prime` the prime
 * tokens above (else the default, one <eos>). */
static fwm__write_head test_head(const char *name, bool prime) {
    return rt_write_head(name, vocabulary, prime ? prime_tokens : NULL, 3);
}

/* An architecture's row. */
typedef struct arch_row {
    const char *name;
    fwm_arch arch;
    /* write a small model of the architecture (its initialisation at `seed`, every tensor nudged
     * so biases are not zero; with the prime tokens when `prime`) to `path` and load it */
    fwm_model *(*write)(const char *path, uint64_t seed, bool prime);
    bool start_logits;  /* the model keeps the primed session's last logits */
    bool predicts;      /* fwm_session_predict answers */
    bool named_blob;    /* a version-2 blob: the architecture's name at byte 16 */
} arch_row;

static const arch_row *arch; /* the row under test */
extern const arch_row rows[];
extern const size_t row_count;

typedef void (*tensor_at_fn)(const void *hp, size_t i, char name[48], uint64_t *rows, uint64_t *cols);

/* The tensors `at` lists, count of them, in one new buffer (t[i] pointing into it, *total floats). */
static float *tensor_buffer(const void *hp, size_t count, tensor_at_fn at, float **t, size_t *total) {
    size_t sum = 0;
    for (size_t i = 0; i < count; i++) {
        char name[48];
        uint64_t r, c;
        at(hp, i, name, &r, &c);
        sum += (size_t)(r * c);
    }
    float *data = malloc(sum * sizeof(float)), *p = data;
    for (size_t i = 0; i < count; i++) {
        char name[48];
        uint64_t r, c;
        at(hp, i, name, &r, &c);
        t[i] = p, p += r * c;
    }
    *total = sum;
    return data;
}

static void nudge(float *data, size_t total, uint64_t seed) {
    fwm__rng rng;
    fwm__rng_seed(&rng, seed, 99);
    for (size_t k = 0; k < total; k++) data[k] += (float)fwm__rng_uniform(&rng, -0.2, 0.2);
}

static fwm_model *load(const char *path, fwm_status written, const fwm_error *err) {
    CHECK_OK(written, *err);
    fwm_model *model = NULL;
    fwm_error e;
    if (written == FWM_OK) CHECK_OK(fwm_model_load(path, NULL, &model, &e), e);
    return model;
}

/* ---- the small models ---- */

static fwm_model *write_fwm(const char *path, uint64_t seed, bool prime) {
    fwm_hparams hp;
    fwm__hparams_defaults(&hp);
    hp.vocab_size = V_TEST, hp.embedding_length = 6, hp.hidden_size = 8;
    hp.memory_s = hp.memory_r = hp.memory_t = 3;
    hp.write_scale = 1.0f / 3;
    uint64_t offsets[FWM_MAX_TENSORS + 1];
    fwm__tensor_offsets(&hp, offsets);
    float *data = malloc(offsets[FWM_TENSOR_COUNT] * sizeof(float)), *t[FWM_MAX_TENSORS];
    fwm_write_spec spec = {.hp = hp, .head = test_head("test fwm", prime)};
    for (int i = 0; i < FWM_TENSOR_COUNT; i++) t[i] = data + offsets[i], spec.tensors[i] = t[i];
    fwm__model_init_weights(&hp, seed, t);
    nudge(data, offsets[FWM_TENSOR_COUNT], seed);
    fwm_error err;
    fwm_status st = fwm__model_write(path, &spec, &err);
    free(data);
    return load(path, st, &err);
}

static void lstm_at(const void *hp, size_t i, char name[48], uint64_t *r, uint64_t *c) {
    fwm__lstm_tensor_at(hp, i, name, r, c);
}

static fwm_model *write_lstm(const char *path, uint64_t seed, bool prime) {
    fwm_lstm_hparams hp;
    fwm__lstm_hparams_defaults(&hp);
    hp.vocab_size = V_TEST, hp.embedding_length = 5, hp.hidden_size = 6, hp.layer_count = 2;
    hp.residual = true, hp.forget_bias = 0.75f;
    float *t[FWM_LSTM_MAX_TENSORS];
    size_t n = fwm__lstm_tensor_count(&hp), total;
    float *data = tensor_buffer(&hp, n, lstm_at, t, &total);
    fwm__lstm_init_weights(&hp, seed, t);
    nudge(data, total, seed);
    fwm_lstm_write_spec spec = {.hp = hp, .head = test_head("test lstm", prime)};
    for (size_t i = 0; i < n; i++) spec.tensors[i] = t[i];
    fwm_error err;
    fwm_status st = fwm__lstm_model_write(path, &spec, &err);
    free(data);
    return load(path, st, &err);
}

static void mnm_at(const void *hp, size_t i, char name[48], uint64_t *r, uint64_t *c) {
    fwm__mnm_tensor_at(hp, i, name, r, c);
}

static fwm_model *write_mnm(const char *path, uint64_t seed, bool prime) {
    fwm_mnm_hparams hp;
    fwm__mnm_hparams_defaults(&hp);
    hp.vocab_size = V_TEST, hp.embedding_length = 5, hp.hidden_size = 7, hp.head_count = 2;
    hp.key_length = 4, hp.value_length = 3, hp.memory_hidden = 6, hp.memory_layers = 3;
    hp.output_length = 5, hp.forget_bias = 0.5f;
    float *t[FWM_MNM_MAX_TENSORS];
    size_t n = fwm__mnm_tensor_count(&hp), total;
    float *data = tensor_buffer(&hp, n, mnm_at, t, &total);
    fwm__mnm_init_weights(&hp, seed, t);
    nudge(data, total, seed);
    t[7][0] = 1.0f; /* mnm.rate.bias: strong writes */
    fwm_mnm_write_spec spec = {.hp = hp, .head = test_head("test mnm", prime)};
    for (size_t i = 0; i < n; i++) spec.tensors[i] = t[i];
    fwm_error err;
    fwm_status st = fwm__mnm_model_write(path, &spec, &err);
    free(data);
    return load(path, st, &err);
}

static void gfw_at(const void *hp, size_t i, char name[48], uint64_t *r, uint64_t *c) {
    fwm__gfw_tensor_at(hp, i, name, r, c);
}

static fwm_model *write_gfw(const char *path, uint64_t seed, bool prime) {
    fwm_gfw_hparams hp;
    fwm__gfw_hparams_defaults(&hp);
    hp.vocab_size = V_TEST, hp.embedding_length = 5, hp.fast_hidden = 4, hp.slow_hidden = 3;
    hp.slow_inner = 6, hp.eos_token_id = EOS;
    float *t[FWM_GFW_MAX_TENSORS];
    size_t n = fwm__gfw_tensor_count(&hp), total;
    float *data = tensor_buffer(&hp, n, gfw_at, t, &total);
    fwm__gfw_init_weights(&hp, seed, t);
    nudge(data, total, seed);
    fwm_gfw_write_spec spec = {.hp = hp, .head = test_head("test gfw", prime)};
    for (size_t i = 0; i < n; i++) spec.tensors[i] = t[i];
    fwm_error err;
    fwm_status st = fwm__gfw_model_write(path, &spec, &err);
    free(data);
    return load(path, st, &err);
}

static void stm_at(const void *hp, size_t i, char name[48], uint64_t *r, uint64_t *c) {
    fwm__stm_tensor_at(hp, i, name, r, c);
}

/* Sentence mode, the mode with the sentence buffer in its state. */
static fwm_model *write_stm(const char *path, uint64_t seed, bool prime) {
    fwm_stm_hparams hp;
    fwm__stm_hparams_defaults(&hp);
    hp.vocab_size = V_TEST, hp.input_mode = FWM_STM_INPUT_SENTENCE, hp.embedding_length = 5;
    hp.sentence_length = 4, hp.memory_size = 4, hp.query_count = 3, hp.relation_length = 2;
    hp.answer_hidden = 6, hp.statement_end_token_id = DOT, hp.question_end_token_id = 3;
    float *t[FWM_STM_MAX_TENSORS];
    size_t n = fwm__stm_tensor_count(&hp), total;
    float *data = tensor_buffer(&hp, n, stm_at, t, &total);
    fwm__stm_init_weights(&hp, seed, t);
    nudge(data, total, seed);
    t[15][0] = 0.9f, t[15][1] = 0.6f, t[15][2] = 0.4f; /* alpha */
    fwm_stm_write_spec spec = {.hp = hp, .head = test_head("test stm", prime)};
    for (size_t i = 0; i < n; i++) spec.tensors[i] = t[i];
    fwm_error err;
    fwm_status st = fwm__stm_model_write(path, &spec, &err);
    free(data);
    return load(path, st, &err);
}

/* ---- helpers ---- */

/* Whether two sessions' exported blobs are equal byte for byte. */
static bool same_blob(const fwm_session *a, const fwm_session *b) {
    size_t sa = 0, sb = 0;
    unsigned char *x = rt_export(a, &sa), *y = rt_export(b, &sb);
    bool same = x && y && sa == sb && memcmp(x, y, sa) == 0;
    free(x), free(y);
    return same;
}

/* One session of every other architecture's small model (NULL at this one's index); models in
 * `models`, freed by free_others. */
static void make_others(fwm_model **models, fwm_session **sessions) {
    fwm_error err;
    for (size_t r = 0; r < row_count; r++) {
        models[r] = NULL, sessions[r] = NULL;
        if (&rows[r] == arch) continue;
        char name[32];
        snprintf(name, sizeof name, "other-%s.gguf", rows[r].name);
        models[r] = rows[r].write(rt_path(name), 60 + r, false);
        if (models[r]) CHECK_OK(fwm_session_create(models[r], &sessions[r], &err), err);
    }
}

static void free_others(fwm_model **models, fwm_session **sessions) {
    for (size_t r = 0; r < row_count; r++) fwm_session_free(sessions[r]), fwm_model_free(models[r]);
}

/* ---- the properties ---- */

/* Priming is stepping the prime tokens; reset then prime gives it again; the start scores. */
static void prime_and_reset(void) {
    fwm_model *model = arch->write(rt_path("prime.gguf"), 31, true);
    if (!model) return;
    fwm_model_info info;
    fwm_model_get_info(model, &info);
    CHECK_INT(info.prime_token_count, 3);
    CHECK_STR(info.architecture, arch->name);
    fwm_session *primed = NULL, *by_hand = NULL, *fresh = NULL;
    fwm_error err;
    CHECK_OK(fwm_session_create(model, &primed, &err), err);
    CHECK_OK(fwm_session_create(model, &by_hand, &err), err);
    CHECK_OK(fwm_session_create(model, &fresh, &err), err);
    if (!primed || !by_hand || !fresh) return;
    fwm_session_prime(primed);
    float last[3 * V_TEST];
    CHECK_OK(fwm_session_step_sequence(by_hand, prime_tokens, 3, last, &err), err);
    CHECK_INT(fwm_session_position(primed), 3);
    CHECK(same_blob(primed, by_hand));
    const float *start = fwm_model_start_logits(model);
    if (arch->start_logits)
        CHECK(start && memcmp(start, last + 2 * V_TEST, V_TEST * sizeof(float)) == 0);
    else
        CHECK(start == NULL);
    /* reset: the state of a new session; prime again: the primed state */
    uint32_t tokens[20];
    rt_random_tokens(tokens, 20, V_TEST, 3);
    CHECK_OK(fwm_session_step_sequence(by_hand, tokens, 20, NULL, &err), err);
    CHECK(!same_blob(by_hand, primed));
    fwm_session_reset(by_hand);
    CHECK_INT(fwm_session_position(by_hand), 0);
    CHECK(same_blob(by_hand, fresh));
    fwm_session_prime(by_hand);
    CHECK(same_blob(by_hand, primed));
    /* and a reset session steps as a new one */
    fwm_session_reset(by_hand);
    float a[V_TEST], b[V_TEST];
    CHECK_OK(fwm_session_step(by_hand, JOHN, a, &err), err);
    CHECK_OK(fwm_session_step(fresh, JOHN, b, &err), err);
    CHECK(memcmp(a, b, sizeof a) == 0);
    CHECK(same_blob(by_hand, fresh));
    fwm_session_free(primed), fwm_session_free(by_hand), fwm_session_free(fresh);
    fwm_model_free(model);
}

/* The child continues as the parent would; the parent is untouched by the child. */
static void fork_continues(void) {
    fwm_model *model = arch->write(rt_path("fork.gguf"), 32, true);
    if (!model) return;
    fwm_session *parent = NULL, *child = NULL;
    fwm_error err;
    CHECK_OK(fwm_session_create(model, &parent, &err), err);
    if (!parent) return;
    fwm_session_prime(parent);
    CHECK_OK(fwm_session_fork(parent, &child, &err), err);
    if (!child) return;
    CHECK_INT(fwm_session_position(child), 3);
    CHECK(same_blob(parent, child));
    const uint32_t story[4] = {MARY, WENT, JOHN, DOT};
    float a[4 * V_TEST], b[4 * V_TEST];
    CHECK_OK(fwm_session_step_sequence(parent, story, 4, a, &err), err);
    CHECK_OK(fwm_session_step_sequence(child, story, 4, b, &err), err);
    CHECK(memcmp(a, b, sizeof a) == 0);
    CHECK(same_blob(parent, child));
    size_t size = 0;
    unsigned char *before = rt_export(parent, &size);
    const uint32_t more[4] = {JOHN, WENT, MARY, DOT};
    CHECK_OK(fwm_session_step_sequence(child, more, 4, NULL, &err), err);
    CHECK(memcmp(parent->h, child->h, parent->state_bytes) != 0);
    size_t after_size = 0;
    unsigned char *after = rt_export(parent, &after_size);
    CHECK(before && after && after_size == size && memcmp(before, after, size) == 0);
    CHECK_INT(fwm_session_position(parent), 7);
    CHECK_INT(fwm_session_position(child), 11);
    free(before), free(after);
    fwm_session_free(parent), fwm_session_free(child);
    fwm_model_free(model);
}

/* Refused calls change nothing. */
static void refusals(void) {
    fwm_model *model = arch->write(rt_path("refuse.gguf"), 33, false);
    if (!model) return;
    fwm_session *s = NULL, *t = NULL;
    fwm_error err;
    CHECK_OK(fwm_session_create(model, &s, &err), err);
    CHECK_OK(fwm_session_create(model, &t, &err), err);
    if (!s || !t) return;
    const uint32_t story[3] = {MARY, WENT, DOT};
    CHECK_OK(fwm_session_step_sequence(s, story, 3, NULL, &err), err);
    size_t size = 0;
    unsigned char *before = rt_export(s, &size);
    if (arch->arch != FWM_ARCH_FWM) {
        rt_check_non_fwm_refusals(s, arch->name, V_TEST);
    } else {
        CHECK_STATUS(fwm_session_step(s, V_TEST, NULL, &err), FWM_ERR_TOKEN_OUT_OF_RANGE, &err);
        const uint32_t bad[3] = {MARY, 99, DOT};
        CHECK_STATUS(fwm_session_step_sequence(s, bad, 3, NULL, &err), FWM_ERR_TOKEN_OUT_OF_RANGE, &err);
    }
    if (!arch->predicts) rt_check_no_predict(s, arch->name, V_TEST);
    fwm_session *pair[2] = {s, t};
    const uint32_t bad2[2] = {3, V_TEST};
    CHECK_STATUS(fwm_batch_step(pair, bad2, 2, NULL, &err), FWM_ERR_TOKEN_OUT_OF_RANGE, &err);
    fwm_session *twice[2] = {s, s};
    CHECK_STATUS(fwm_batch_step(twice, story, 2, NULL, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    /* batches mixing architectures, this one first and last */
    fwm_model *models[FWM_ARCH_COUNT];
    fwm_session *others[FWM_ARCH_COUNT];
    make_others(models, others);
    for (size_t r = 0; r < row_count; r++) {
        if (!others[r]) continue;
        const uint32_t t2[2] = {1, 1};
        fwm_session *mixed[2] = {s, others[r]}, *mixed2[2] = {others[r], s};
        CHECK_STATUS(fwm_batch_step(mixed, t2, 2, NULL, &err), FWM_ERR_MODEL_MISMATCH, &err);
        CHECK_STATUS(fwm_batch_step(mixed2, t2, 2, NULL, &err), FWM_ERR_MODEL_MISMATCH, &err);
        CHECK_INT(fwm_session_position(others[r]), 0);
    }
    free_others(models, others);
    CHECK_INT(fwm_session_position(s), 3);
    CHECK_INT(fwm_session_position(t), 0);
    size_t after_size = 0;
    unsigned char *after = rt_export(s, &after_size);
    CHECK(before && after && after_size == size && memcmp(before, after, size) == 0);
    free(before), free(after);
    fwm_session_free(s), fwm_session_free(t);
    fwm_model_free(model);
}

/* Export / import round trip and the refusals shared by every architecture's blobs. */
static void export_import(void) {
    fwm_model *model = arch->write(rt_path("blob.gguf"), 41, false);
    fwm_model *sibling = arch->write(rt_path("blob2.gguf"), 42, false);
    if (!model || !sibling) return;
    fwm_error err;
    fwm_session *s = NULL, *t = NULL, *u = NULL;
    CHECK_OK(fwm_session_create(model, &s, &err), err);
    CHECK_OK(fwm_session_create(model, &t, &err), err);
    CHECK_OK(fwm_session_create(sibling, &u, &err), err);
    if (!s || !t || !u) return;
    uint32_t tokens[30];
    rt_random_tokens(tokens, 30, V_TEST, 5);
    CHECK_OK(fwm_session_step_sequence(s, tokens, 17, NULL, &err), err);
    size_t size = 0;
    unsigned char *blob = rt_export(s, &size);
    if (!blob) return;
    fwm_model_info info;
    fwm_model_get_info(model, &info);
    CHECK_INT(size, info.state_blob_bytes);
    CHECK(memcmp(blob, "FWMS", 4) == 0);
    if (arch->named_blob) {
        char name[8] = {0};
        memcpy(name, arch->name, strlen(arch->name));
        CHECK(memcmp(blob + 16, name, 8) == 0);
    }
    CHECK_OK(fwm_session_import(t, blob, size, &err), err);
    CHECK_INT(fwm_session_position(t), 17);
    float a[13 * V_TEST], b[13 * V_TEST];
    CHECK_OK(fwm_session_step_sequence(s, tokens + 17, 13, a, &err), err);
    CHECK_OK(fwm_session_step_sequence(t, tokens + 17, 13, b, &err), err);
    CHECK(memcmp(a, b, sizeof a) == 0);
    CHECK(same_blob(s, t));

    /* refusals leave the session as it was */
    size_t t_size = 0;
    unsigned char *t_before = rt_export(t, &t_size);
    unsigned char *damaged = malloc(size);
    memcpy(damaged, blob, size);
    damaged[60] ^= 1;
    CHECK_STATUS(fwm_session_import(t, damaged, size, &err), FWM_ERR_STATE_CORRUPT, &err);
    CHECK_CONTAINS(err.message, "checksum mismatch");
    CHECK_STATUS(fwm_session_import(t, blob, size - 1, &err), FWM_ERR_STATE_CORRUPT, &err);
    CHECK_STATUS(fwm_session_import(t, blob, 10, &err), FWM_ERR_STATE_CORRUPT, &err);
    CHECK_STATUS(fwm_session_import(t, NULL, size, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    /* another model of the same architecture and sizes */
    size_t u_size = 0;
    unsigned char *u_blob = rt_export(u, &u_size);
    CHECK_STATUS(fwm_session_import(t, u_blob, u_size, &err), FWM_ERR_STATE_MODEL_MISMATCH, &err);
    CHECK_CONTAINS(err.message, "belongs to model");
    /* every other architecture's blob into this session, this blob into theirs */
    fwm_model *models[FWM_ARCH_COUNT];
    fwm_session *others[FWM_ARCH_COUNT];
    make_others(models, others);
    char own[96], holds[96];
    snprintf(own, sizeof own, "this session's model is of architecture '%s'", arch->name);
    snprintf(holds, sizeof holds, "state blob holds a session of architecture '%s'", arch->name);
    for (size_t r = 0; r < row_count; r++) {
        if (!others[r]) continue;
        char their_own[96], their_holds[96];
        snprintf(their_own, sizeof their_own, "this session's model is of architecture '%s'", rows[r].name);
        snprintf(their_holds, sizeof their_holds, "state blob holds a session of architecture '%s'",
                 rows[r].name);
        const uint32_t few[3] = {MARY, WENT, DOT};
        CHECK_OK(fwm_session_step_sequence(others[r], few, 3, NULL, &err), err);
        size_t o_size = 0, o_after_size = 0;
        unsigned char *o_blob = rt_export(others[r], &o_size);
        CHECK_STATUS(fwm_session_import(t, o_blob, o_size, &err), FWM_ERR_STATE_MODEL_MISMATCH, &err);
        CHECK_CONTAINS(err.message, their_holds);
        CHECK_CONTAINS(err.message, own);
        CHECK_STATUS(fwm_session_import(others[r], blob, size, &err), FWM_ERR_STATE_MODEL_MISMATCH, &err);
        CHECK_CONTAINS(err.message, holds);
        CHECK_CONTAINS(err.message, their_own);
        /* a damaged blob of another architecture is damaged, not another architecture's */
        CHECK_STATUS(fwm_session_import(others[r], damaged, size, &err), FWM_ERR_STATE_CORRUPT, &err);
        unsigned char *o_after = rt_export(others[r], &o_after_size);
        CHECK(o_blob && o_after && o_size == o_after_size && memcmp(o_blob, o_after, o_size) == 0);
        free(o_blob), free(o_after);
    }
    free_others(models, others);
    size_t after_size = 0;
    unsigned char *t_after = rt_export(t, &after_size);
    CHECK(t_before && t_after && t_size == after_size && memcmp(t_before, t_after, t_size) == 0);
    free(t_after), free(t_before), free(u_blob), free(damaged), free(blob);
    fwm_session_free(s), fwm_session_free(t), fwm_session_free(u);
    fwm_model_free(model), fwm_model_free(sibling);
}

/* fwm_model_load, fwm_session_create and fwm_session_fork failing at each allocation in turn. */
static void allocation_failures(void) {
    fwm_model *model = arch->write(rt_path("alloc.gguf"), 51, true);
    fwm_model_free(model);
    rt_check_load_and_session_oom(rt_path("alloc.gguf"));
}

/* ---- the table ---- */

const arch_row rows[] = {
    {"fwm", FWM_ARCH_FWM, write_fwm, .start_logits = true, .predicts = true, .named_blob = false},
    {"lstm", FWM_ARCH_LSTM, write_lstm, .start_logits = true, .predicts = true, .named_blob = true},
    {"mnm", FWM_ARCH_MNM, write_mnm, .start_logits = true, .predicts = false, .named_blob = true},
    {"gfw", FWM_ARCH_GFW, write_gfw, .start_logits = true, .predicts = false, .named_blob = true},
    /* sentence mode: the last prime token "is" leaves a sentence open, so no start scores */
    {"stm", FWM_ARCH_STM, write_stm, .start_logits = false, .predicts = false, .named_blob = true},
};
const size_t row_count = sizeof rows / sizeof rows[0];

int main(int argc, char **argv) {
    for (size_t r = 0; argc == 2 && r < row_count; r++)
        if (strcmp(argv[1], rows[r].name) == 0) arch = &rows[r];
    if (!arch) {
        fprintf(stderr, "usage: test_arch_runtime fwm|lstm|mnm|gfw|stm\n");
        return 2;
    }
    char program[32], dir[48];
    snprintf(program, sizeof program, "runtime_%s", arch->name);
    snprintf(dir, sizeof dir, "test-%s-arch-runtime", arch->name);
    if (!rt_dir_make(dir)) return 1;
    static const check_case cases[] = {
        {"prime_and_reset", prime_and_reset}, {"fork", fork_continues},
        {"refusals", refusals},               {"export_import", export_import},
        {"allocation_failures", allocation_failures},
    };
    int status = check_run_cases(program, cases, sizeof cases / sizeof cases[0]);
    static const char *const files[] = {"prime.gguf", "fork.gguf", "refuse.gguf", "blob.gguf", "blob2.gguf",
                                        "alloc.gguf", "w.gguf", "other-fwm.gguf", "other-lstm.gguf",
                                        "other-mnm.gguf", "other-gfw.gguf", "other-stm.gguf"};
    rt_dir_remove(files, sizeof files / sizeof files[0]);
    return status;
}
