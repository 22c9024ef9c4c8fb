/* runtime_test_util.c - in-memory random models for the runtime tests and the step benchmark, and
 * what the tests of the other architectures share (small model files, the step-mode check). */
#include "runtime_test_util.h"

#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "fwm_alloc.h"

#include "fwm_model_init.h"
#include "fwm_model_shape.h"
#include "fwm_rng.h"
#include "lstm/lstm_schema.h"
#include "lstm/lstm_init.h"
#include "session_internal.h"
#include "xxhash64.h"

fwm_hparams rt_hparams(uint32_t V, uint32_t E, uint32_t H, uint32_t S, uint32_t R, uint32_t T,
                       uint32_t read_count, bool residual, uint32_t read_policy,
                       uint32_t read_token_id) {
    fwm_hparams hp;
    memset(&hp, 0, sizeof hp);
    hp.vocab_size = V;
    hp.embedding_length = E;
    hp.hidden_size = H;
    hp.memory_s = S;
    hp.memory_r = R;
    hp.memory_t = T;
    hp.read_count = read_count;
    hp.residual = residual;
    hp.read_policy = read_policy;
    hp.read_token_id = read_token_id;
    hp.forget_bias = 1.0f;
    hp.beta_bias = 1.0f;
    hp.write_scale = 1.0f / (float)T;
    hp.layer_norm_eps = 1e-5f;
    hp.padding_token_id = 0;
    hp.eos_token_id = V > 1 ? 1 : 0;
    hp.block_count = 1;
    return hp;
}

static void fill_uniform(float *x, size_t n, double a, fwm__rng *rng) {
    for (size_t i = 0; i < n; i++) x[i] = (float)fwm__rng_uniform(rng, -a, a);
}
static void fill_normal(float *x, size_t n, double sd, fwm__rng *rng) {
    for (size_t i = 0; i < n; i++) x[i] = (float)(sd * fwm__rng_normal(rng));
}

struct fwm_model *rt_model_create(const fwm_hparams *hp, uint64_t seed, bool prepare) {
    struct fwm_model *model = calloc(1, sizeof *model);
    if (!model) return NULL;
    model->hp = *hp;
    size_t counts[FWM_MAX_TENSORS], total = 0;
    const int n_tensors = fwm__tensor_count(hp);
    for (int i = 0; i < n_tensors; i++) {
        uint64_t rows, cols;
        fwm__tensor_shape(hp, i, &rows, &cols, NULL);
        counts[i] = (size_t)(rows * cols);
        total += counts[i];
    }
    float *block = malloc(total * sizeof(float));
    if (!block) {
        free(model);
        return NULL;
    }
    model->converted = block; /* owned by the helper: rt_model_free releases it */
    float *t[FWM_MAX_TENSORS];
    float *p = block;
    for (int i = 0; i < n_tensors; i++) {
        t[i] = p;
        p += counts[i];
    }
    fwm__rng rng;
    fwm__rng_seed(&rng, seed, 0);
    double H = hp->hidden_size, S = hp->memory_s, T = hp->memory_t, V = hp->vocab_size;
    double a = sqrt(6.0 / (H + S));
    fill_normal(t[FWM_TENSOR_token_embd], counts[FWM_TENSOR_token_embd], 1.0, &rng);
    fill_uniform(t[FWM_TENSOR_lstm_weight_ih], counts[FWM_TENSOR_lstm_weight_ih], 1 / sqrt(H), &rng);
    fill_uniform(t[FWM_TENSOR_lstm_weight_hh], counts[FWM_TENSOR_lstm_weight_hh], 1 / sqrt(H), &rng);
    fill_uniform(t[FWM_TENSOR_lstm_bias], counts[FWM_TENSOR_lstm_bias], 0.5, &rng);
    fill_uniform(t[FWM_TENSOR_write_weight], counts[FWM_TENSOR_write_weight], a, &rng);
    fill_uniform(t[FWM_TENSOR_write_bias], counts[FWM_TENSOR_write_bias], 1 / sqrt(H), &rng);
    fill_uniform(t[FWM_TENSOR_read_weight], counts[FWM_TENSOR_read_weight], a, &rng);
    fill_uniform(t[FWM_TENSOR_read_bias], counts[FWM_TENSOR_read_bias], 1 / sqrt(H), &rng);
    fill_uniform(t[FWM_TENSOR_out_weight], counts[FWM_TENSOR_out_weight], 1 / sqrt(T), &rng);
    fill_uniform(t[FWM_TENSOR_out_bias], counts[FWM_TENSOR_out_bias], 1 / sqrt(T), &rng);
    fill_normal(t[FWM_TENSOR_output_weight], counts[FWM_TENSOR_output_weight], sqrt(2.0 / (V + H)),
                &rng);
#define RT_POINT_(field, name, rows, cols) model->w.field = t[FWM_TENSOR_##field];
    FWM_TENSOR_LIST(RT_POINT_)
#undef RT_POINT_
    /* a stacked FWM's lower layers, drawn after the rest (so one-layer models are as they were) */
    for (int i = FWM_TENSOR_COUNT; i < n_tensors; i++) {
        int l = (i - FWM_TENSOR_COUNT) / (int)FWM_BLOCK_TENSORS;
        int k = (i - FWM_TENSOR_COUNT) % (int)FWM_BLOCK_TENSORS;
        fill_uniform(t[i], counts[i], k == FWM_BLOCK_bias ? 0.5 : 1 / sqrt(H), &rng);
        model->w.lower[l][k] = t[i];
    }
    model->fingerprint = 0x5eed000000000000ull ^ fwm__rng_next(&rng);
    model->parameter_count = total;
    if (prepare && fwm__model_prepare(model, NULL) != FWM_OK) {
        rt_model_free(model);
        return NULL;
    }
    return model;
}

void rt_model_free(struct fwm_model *model) {
    if (!model) return;
    fwm_session_free(model->start);
    fwm__free(model->start_logits);
    fwm__model_unprepare(model);
    free(model->converted);
    free(model);
}

void rt_random_tokens(uint32_t *tokens, size_t count, uint32_t V, uint64_t seed) {
    fwm__rng rng;
    fwm__rng_seed(&rng, seed, 1);
    for (size_t i = 0; i < count; i++) tokens[i] = (uint32_t)fwm__rng_below(&rng, V);
}

unsigned char *rt_export(const fwm_session *session, size_t *size) {
    size_t need = fwm__state_blob_size(fwm_session_model(session));
    unsigned char *blob = malloc(need);
    fwm_error err;
    size_t written = 0;
    /* asked without a buffer, it says how much it needs */
    CHECK_STATUS(fwm_session_export(session, NULL, 0, &written, &err), FWM_ERR_BUFFER_TOO_SMALL, &err);
    CHECK_INT(written, need);
    written = 0;
    if (!blob) {
        CHECK(blob != NULL);
        return NULL;
    }
    fwm_status status = fwm_session_export(session, blob, need, &written, &err);
    CHECK_STATUS(status, FWM_OK, &err);
    CHECK_INT(written, need);
    if (status != FWM_OK) {
        free(blob);
        return NULL;
    }
    *size = written;
    return blob;
}

bool rt_state(const fwm_session *session, float **h, float **c, float **F) {
    const fwm_hparams *hp = &fwm_session_model(session)->hp;
    size_t H = hp->hidden_size, SRT = (size_t)hp->memory_s * hp->memory_r * hp->memory_t, size = 0;
    unsigned char *blob = rt_export(session, &size);
    *h = malloc(H * sizeof(float));
    *c = malloc(H * sizeof(float));
    *F = malloc(SRT * sizeof(float));
    if (!blob || !*h || !*c || !*F) {
        free(blob);
        return false;
    }
    /* the blob is little-endian, as is every machine this runs on (checked by test_state_blob) */
    memcpy(*h, blob + 40, H * sizeof(float));
    memcpy(*c, blob + 40 + 4 * H, H * sizeof(float));
    memcpy(*F, blob + 40 + 8 * H, SRT * sizeof(float));
    free(blob);
    return true;
}

/* ---- the other architectures, on model files ---------------------------------------------------- */

fwm_model *rt_write_fwm_file(const char *path, const char *const *vocab, uint32_t V, uint64_t seed) {
    fwm_hparams hp;
    fwm__hparams_defaults(&hp);
    hp.vocab_size = V, hp.embedding_length = 6, hp.hidden_size = 8;
    hp.memory_s = hp.memory_r = hp.memory_t = 3;
    hp.write_scale = 1.0f / 3;
    uint64_t offsets[FWM_MAX_TENSORS + 1];
    fwm__tensor_offsets(&hp, offsets);
    float *data = malloc(offsets[FWM_TENSOR_COUNT] * sizeof(float));
    if (!data) {
        CHECK(data != NULL);
        return NULL;
    }
    float *t[FWM_MAX_TENSORS];
    fwm_write_spec spec = {.hp = hp, .head.tokens = vocab};
    for (int i = 0; i < FWM_TENSOR_COUNT; i++) t[i] = data + offsets[i], spec.tensors[i] = t[i];
    fwm__model_init_weights(&hp, seed, t);
    fwm_error err;
    fwm_status st = fwm__model_write(path, &spec, &err);
    CHECK_OK(st, err);
    free(data);
    fwm_model *model = NULL;
    if (st == FWM_OK) CHECK_OK(fwm_model_load(path, NULL, &model, &err), err);
    return model;
}

void rt_check_step_modes(const fwm_model *model, const uint32_t *tokens, size_t n_sessions,
                         size_t steps) {
    fwm_model_info info;
    fwm_model_get_info(model, &info);
    const size_t V = info.vocab_size, total = n_sessions * steps;
    uint32_t *column = malloc(n_sessions * sizeof *column);
    float *a = malloc(total * V * sizeof(float)), *b = malloc(total * V * sizeof(float));
    float *c = malloc(total * V * sizeof(float)), *row = malloc(n_sessions * V * sizeof(float));
    fwm_session **single = calloc(n_sessions, sizeof *single), **seq = calloc(n_sessions, sizeof *seq),
                **batch = calloc(n_sessions, sizeof *batch);
    if (!column || !a || !b || !c || !row || !single || !seq || !batch) {
        CHECK(!"out of memory");
        goto done;
    }
    fwm_error err;
    for (size_t j = 0; j < n_sessions; j++) {
        CHECK_OK(fwm_session_create(model, &single[j], &err), err);
        CHECK_OK(fwm_session_create(model, &seq[j], &err), err);
        CHECK_OK(fwm_session_create(model, &batch[j], &err), err);
        if (!single[j] || !seq[j] || !batch[j]) goto done;
    }
    for (size_t j = 0; j < n_sessions; j++) {
        for (size_t i = 0; i < steps; i++)
            CHECK_OK(fwm_session_step(single[j], tokens[j * steps + i], a + (j * steps + i) * V, &err), err);
        CHECK_OK(fwm_session_step_sequence(seq[j], tokens + j * steps, steps, b + j * steps * V, &err), err);
    }
    for (size_t i = 0; i < steps; i++) {
        for (size_t j = 0; j < n_sessions; j++) column[j] = tokens[j * steps + i];
        CHECK_OK(fwm_batch_step(batch, column, n_sessions, row, &err), err);
        for (size_t j = 0; j < n_sessions; j++)
            memcpy(c + (j * steps + i) * V, row + j * V, V * sizeof(float));
    }
    /* bit for bit, NaN rows of positions that predict nothing included */
    CHECK(memcmp(a, b, total * V * sizeof(float)) == 0);
    CHECK(memcmp(a, c, total * V * sizeof(float)) == 0);
    size_t bytes = single[0]->state_bytes; /* the whole state block, padding included */
    for (size_t j = 0; j < n_sessions; j++) {
        CHECK(memcmp(single[j]->h, seq[j]->h, bytes) == 0);
        CHECK(memcmp(single[j]->h, batch[j]->h, bytes) == 0);
        CHECK_U64(fwm_session_position(batch[j]), steps);
    }
done:
    for (size_t j = 0; j < n_sessions && single && seq && batch; j++)
        fwm_session_free(single[j]), fwm_session_free(seq[j]), fwm_session_free(batch[j]);
    free(single), free(seq), free(batch), free(column), free(row), free(a), free(b), free(c);
}

void rt_check_step_modes_random(const fwm_model *model, size_t n_sessions, size_t steps,
                                uint64_t seed) {
    fwm_model_info info;
    fwm_model_get_info(model, &info);
    uint32_t *tokens = malloc(n_sessions * steps * sizeof *tokens);
    if (!tokens) {
        CHECK(!"out of memory");
        return;
    }
    rt_random_tokens(tokens, n_sessions * steps, info.vocab_size, seed);
    rt_check_step_modes(model, tokens, n_sessions, steps);
    free(tokens);
}

void rt_reseal(unsigned char *blob, size_t size) {
    uint64_t sum = fwm__xxh64(blob, size - 8, 0);
    for (int i = 0; i < 8; i++) blob[size - 8 + i] = (unsigned char)(sum >> (8 * i));
}

static char rt_dir[256];

int rt_dir_make(const char *test) {
    const char *base = getenv("TMPDIR");
    snprintf(rt_dir, sizeof rt_dir, "%s/fwm-%s-XXXXXX", base && base[0] ? base : "/tmp", test);
    if (!mkdtemp(rt_dir)) {
        perror("mkdtemp");
        return 0;
    }
    return 1;
}

const char *rt_path(const char *name) {
    static char path[4][512];
    static int next;
    char *p = path[next++ % 4];
    snprintf(p, 512, "%s/%s", rt_dir, name);
    return p;
}

void rt_dir_remove(const char *const *names, size_t count) {
    for (size_t i = 0; i < count; i++) unlink(rt_path(names[i]));
    rmdir(rt_dir);
}

void rt_check_load_and_session_oom(const char *path) {
    int failures_seen = 0;
    for (long n = 1; n < 10000; n++) {
        fwm_model *lm = NULL;
        fwm_error lerr;
        fwm__alloc_fail_after(n);
        fwm_status s = fwm_model_load(path, NULL, &lm, &lerr);
        long calls = fwm__alloc_calls();
        fwm__alloc_fail_reset();
        if (s == FWM_OK) {
            CHECK(calls < n);
            fwm_model_free(lm);
            break;
        }
        failures_seen++;
        CHECK_INT(s, FWM_ERR_OUT_OF_MEMORY);
        CHECK(lm == NULL);
    }
    CHECK(failures_seen >= 5);
    fwm_model *m = NULL;
    fwm_error err;
    CHECK_OK(fwm_model_load(path, NULL, &m, &err), err);
    for (long n = 1; m && n < 100; n++) {
        fwm_session *s = NULL, *fork = NULL;
        fwm__alloc_fail_after(n);
        fwm_status st = fwm_session_create(m, &s, &err);
        fwm_status ft = st == FWM_OK ? fwm_session_fork(s, &fork, &err) : FWM_ERR_OUT_OF_MEMORY;
        fwm__alloc_fail_reset();
        CHECK(st == FWM_OK || (st == FWM_ERR_OUT_OF_MEMORY && s == NULL));
        CHECK(ft == FWM_OK || (ft == FWM_ERR_OUT_OF_MEMORY && fork == NULL));
        fwm_session_free(fork);
        fwm_session_free(s);
        if (ft == FWM_OK) break;
    }
    fwm_model_free(m);
}

void rt_check_batch_oom(fwm_model *model, const uint32_t *tokens, int steps_before) {
    fwm_session *batch[40] = {0};
    fwm_error err;
    for (size_t j = 0; model && j < 40; j++) CHECK_OK(fwm_session_create(model, &batch[j], &err), err);
    if (model && batch[39]) {
        for (int k = 0; k < steps_before; k++) CHECK_OK(fwm_batch_step(batch, tokens, 40, NULL, &err), err);
        size_t bytes = batch[0]->state_bytes;
        unsigned char *before = malloc(bytes);
        memcpy(before, batch[0]->h, bytes);
        fwm__alloc_fail_after(1);
        CHECK_STATUS(fwm_batch_step(batch, tokens, 40, NULL, &err), FWM_ERR_OUT_OF_MEMORY, &err);
        fwm__alloc_fail_reset();
        for (size_t j = 0; j < 40; j++) CHECK_INT(fwm_session_position(batch[j]), steps_before);
        CHECK(memcmp(before, batch[0]->h, bytes) == 0);
        CHECK_OK(fwm_batch_step(batch, tokens, 40, NULL, &err), err);
        free(before);
    }
    for (size_t j = 0; j < 40; j++) fwm_session_free(batch[j]);
}

void rt_check_write_oom(rt_write_fn write, const void *spec, const char *path) {
    fwm_error err;
    int failures_seen = 0;
    for (long n = 1; n < 1000; n++) {
        fwm__alloc_fail_after(n);
        fwm_status s = write(path, spec, &err);
        fwm__alloc_fail_reset();
        if (s == FWM_OK) break;
        failures_seen++;
        CHECK_INT(s, FWM_ERR_OUT_OF_MEMORY);
    }
    CHECK(failures_seen >= 3);
    unlink(path);
}

void rt_check_no_predict(const fwm_session *s, const char *arch, uint32_t V) {
    fwm_error err;
    char own[64];
    snprintf(own, sizeof own, "architecture is '%s'", arch);
    uint64_t before = fwm_session_position(s);
    float *logits = malloc((V ? V : 1) * sizeof *logits);
    for (uint32_t v = 0; v < V; v++) logits[v] = 7.0f;
    CHECK_STATUS(fwm_session_predict(s, logits, &err), FWM_ERR_UNSUPPORTED, &err);
    CHECK_CONTAINS(err.message, "fwm_session_predict");
    CHECK_CONTAINS(err.message, own);
    for (uint32_t v = 0; v < V; v++) CHECK(logits[v] == 7.0f);
    CHECK_INT(fwm_session_position(s), before);
    free(logits);
}

void rt_check_non_fwm_refusals(fwm_session *s, const char *arch, uint32_t V) {
    fwm_error err;
    char own[64];
    snprintf(own, sizeof own, "architecture is '%s'", arch);
    uint64_t before = fwm_session_position(s);
    float memory[64];
    CHECK_STATUS(fwm_session_memory(s, memory, 64, &err), FWM_ERR_UNSUPPORTED, &err);
    CHECK_CONTAINS(err.message, own);
    float k1[4], k2[4], v[4], q[16], k[16], rv[16];
    fwm_trace trace = {.k1 = k1, .k2 = k2, .v = v, .read_queries = q, .read_keys = k, .read_values = rv};
    CHECK_STATUS(fwm_session_trace(s, &trace, &err), FWM_ERR_UNSUPPORTED, &err);
    CHECK_CONTAINS(err.message, "fwm_session_trace");
    float *logits = malloc((V ? V : 1) * sizeof *logits);
    CHECK_STATUS(fwm_session_step(s, V, logits, &err), FWM_ERR_TOKEN_OUT_OF_RANGE, &err);
    free(logits);
    const uint32_t bad[2] = {3, 99};
    CHECK_STATUS(fwm_session_step_sequence(s, bad, 2, NULL, &err), FWM_ERR_TOKEN_OUT_OF_RANGE, &err);
    CHECK_CONTAINS(err.message, "token 99 at sequence position 1 is out of range");
    CHECK_INT(fwm_session_position(s), before);
}

fwm__write_head rt_write_head(const char *name, const char *const *vocabulary, const uint32_t *prime,
                              size_t count) {
    fwm__write_head head = {.name = name, .tokens = vocabulary};
    if (prime) head.has_prime_tokens = true, head.prime_tokens = prime, head.prime_count = count;
    return head;
}
