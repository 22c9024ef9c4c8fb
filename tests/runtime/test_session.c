/* test_session.c - session lifetime and argument checking: create, reset, fork (parent and child
 * evolve independently), position, free(NULL); every step entry point refusing bad input (NULL,
 * token out of range, repeated session, sessions of two models) and failing allocations without
 * touching any session. */
#include <stdlib.h>

#include "fwm_alloc.h"
#include "runtime_test_util.h"
#include "session_internal.h"

static struct fwm_model *model, *other_model;

/* Step a fresh session through tokens[0..n) and return its blob (malloc'd). */
static unsigned char *fresh_blob(const uint32_t *tokens, size_t n, float *last_logits, size_t *size) {
    fwm_session *s = NULL;
    fwm_error err;
    CHECK_STATUS(fwm_session_create(model, &s, &err), FWM_OK, &err);
    for (size_t i = 0; i < n; i++)
        CHECK_STATUS(fwm_session_step(s, tokens[i], i + 1 == n ? last_logits : NULL, &err), FWM_OK, &err);
    unsigned char *blob = rt_export(s, size);
    fwm_session_free(s);
    return blob;
}

static void test_create_reset_position(void) {
    fwm_session *s = NULL;
    fwm_error err;
    CHECK_STATUS(fwm_session_create(model, &s, &err), FWM_OK, &err);
    CHECK(fwm_session_model(s) == model);
    CHECK_INT(fwm_session_position(s), 0);
    /* a new session's state is all zero */
    size_t size = 0;
    unsigned char *zero = rt_export(s, &size);
    uint32_t tokens[5] = {1, 2, 3, 4, 0};
    CHECK_STATUS(fwm_session_step_sequence(s, tokens, 5, NULL, &err), FWM_OK, &err);
    CHECK_INT(fwm_session_position(s), 5);
    size_t nonzero = 0;
    for (size_t i = 0; i < model->hp.hidden_size; i++) nonzero += s->h[i] != 0.0f;
    CHECK(nonzero > 0);
    fwm_session_reset(s);
    CHECK_INT(fwm_session_position(s), 0);
    unsigned char *after = rt_export(s, &size);
    if (zero && after) CHECK_BYTES_EQUAL(after, zero, size, "state after reset vs a new session");
    for (size_t i = 0; i < model->hp.hidden_size; i++) CHECK(s->h[i] == 0.0f && s->c[i] == 0.0f);
    /* the state arrays are 64-byte aligned */
    CHECK(((uintptr_t)s->h & 63) == 0);
    CHECK(((uintptr_t)s->c & 63) == 0);
    CHECK(((uintptr_t)s->F & 63) == 0);
    free(zero);
    free(after);
    fwm_session_free(s);
    fwm_session_free(NULL); /* no-op */
    fwm_session_reset(NULL);
    CHECK(fwm_session_model(NULL) == NULL);
    CHECK_INT(fwm_session_position(NULL), 0);
}

static void test_fork(void) {
    uint32_t prefix[40], a[30], b[30], pa[70], pb[70];
    rt_random_tokens(prefix, 40, model->hp.vocab_size, 11);
    rt_random_tokens(a, 30, model->hp.vocab_size, 12);
    rt_random_tokens(b, 30, model->hp.vocab_size, 13);
    memcpy(pa, prefix, sizeof prefix);
    memcpy(pa + 40, a, sizeof a);
    memcpy(pb, prefix, sizeof prefix);
    memcpy(pb + 40, b, sizeof b);
    size_t V = model->hp.vocab_size;
    float *lp = malloc(V * sizeof(float)), *lc = malloc(V * sizeof(float));
    float *fa = malloc(V * sizeof(float)), *fb = malloc(V * sizeof(float));

    fwm_session *parent = NULL, *child = NULL;
    fwm_error err;
    CHECK_STATUS(fwm_session_create(model, &parent, &err), FWM_OK, &err);
    CHECK_STATUS(fwm_session_step_sequence(parent, prefix, 40, NULL, &err), FWM_OK, &err);
    CHECK_STATUS(fwm_session_fork(parent, &child, &err), FWM_OK, &err);
    CHECK(child != parent);
    CHECK(fwm_session_model(child) == model);
    CHECK_INT(fwm_session_position(child), 40);
    size_t size = 0, size2 = 0;
    unsigned char *pblob = rt_export(parent, &size), *cblob = rt_export(child, &size2);
    if (pblob && cblob) CHECK_BYTES_EQUAL(cblob, pblob, size, "forked state vs parent");
    free(pblob);
    free(cblob);
    /* interleave: each step of one must not disturb the other */
    for (int i = 0; i < 30; i++) {
        CHECK_STATUS(fwm_session_step(parent, a[i], lp, &err), FWM_OK, &err);
        CHECK_STATUS(fwm_session_step(child, b[i], lc, &err), FWM_OK, &err);
    }
    unsigned char *want_a = fresh_blob(pa, 70, fa, &size);
    unsigned char *want_b = fresh_blob(pb, 70, fb, &size);
    pblob = rt_export(parent, &size);
    cblob = rt_export(child, &size);
    if (want_a && pblob) CHECK_BYTES_EQUAL(pblob, want_a, size, "parent after fork vs a fresh session");
    if (want_b && cblob) CHECK_BYTES_EQUAL(cblob, want_b, size, "child vs a fresh session");
    CHECK_FLOATS_EQUAL(lp, fa, V, "parent's last logits vs a fresh session's");
    CHECK_FLOATS_EQUAL(lc, fb, V, "child's last logits vs a fresh session's");
    CHECK(memcmp(lp, lc, V * sizeof(float)) != 0); /* they did diverge */
    free(want_a), free(want_b), free(pblob), free(cblob);
    fwm_session_free(parent);
    fwm_session_free(child);
    free(lp), free(lc), free(fa), free(fb);
}

/* Blobs of every session, to compare before and after a refused call. */
static unsigned char *snapshot(fwm_session **s, size_t n) {
    size_t bs = fwm__state_blob_size(model);
    unsigned char *all = malloc(n * bs);
    for (size_t i = 0; i < n; i++) {
        size_t written;
        fwm_session_export(s[i], all + i * bs, bs, &written, NULL);
    }
    return all;
}

static void test_refusals(void) {
    enum { N = 80 }; /* above the pairwise-check limit, so the sorted repeat check runs too */
    fwm_session *s[N];
    uint32_t tokens[N];
    fwm_error err;
    for (int i = 0; i < N; i++) CHECK_STATUS(fwm_session_create(model, &s[i], &err), FWM_OK, &err);
    rt_random_tokens(tokens, N, model->hp.vocab_size, 3);
    CHECK_STATUS(fwm_batch_step(s, tokens, N, NULL, &err), FWM_OK, &err); /* non-zero states */
    size_t bs = fwm__state_blob_size(model);
    unsigned char *before = snapshot(s, N);
    float *logits = malloc((size_t)N * model->hp.vocab_size * sizeof(float));
    uint32_t V = model->hp.vocab_size;

    CHECK_STATUS(fwm_session_step(NULL, 0, logits, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    CHECK_STATUS(fwm_session_step(s[0], V, logits, &err), FWM_ERR_TOKEN_OUT_OF_RANGE, &err);
    char want[64];
    snprintf(want, sizeof want, "token %u", V);
    CHECK_CONTAINS(err.message, want);
    snprintf(want, sizeof want, "V = %u", V);
    CHECK_CONTAINS(err.message, want);
    CHECK_INT(err.status, FWM_ERR_TOKEN_OUT_OF_RANGE);

    uint32_t seq[6] = {1, 2, 3, 4, 0xffffffffu, 5};
    CHECK_STATUS(fwm_session_step_sequence(s[1], seq, 6, logits, &err), FWM_ERR_TOKEN_OUT_OF_RANGE, &err);
    CHECK_CONTAINS(err.message, "4294967295");
    CHECK_CONTAINS(err.message, "position 4");
    CHECK_STATUS(fwm_session_step_sequence(s[1], NULL, 3, logits, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    CHECK_STATUS(fwm_session_step_sequence(NULL, seq, 3, logits, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    CHECK_STATUS(fwm_session_step_sequence(s[1], seq, 0, logits, &err), FWM_OK, &err);

    uint32_t bad_tokens[N];
    memcpy(bad_tokens, tokens, sizeof tokens);
    bad_tokens[N - 1] = V + 7;
    CHECK_STATUS(fwm_batch_step(s, bad_tokens, N, logits, &err), FWM_ERR_TOKEN_OUT_OF_RANGE, &err);
    snprintf(want, sizeof want, "batch session %d", N - 1);
    CHECK_CONTAINS(err.message, want);

    fwm_session *repeated[N];
    memcpy(repeated, s, sizeof s);
    repeated[N - 2] = s[5];
    CHECK_STATUS(fwm_batch_step(repeated, tokens, N, logits, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    snprintf(want, sizeof want, "sessions 5 and %d", N - 2);
    CHECK_CONTAINS(err.message, want);
    CHECK_STATUS(fwm_batch_step(repeated + 3, tokens, 10, logits, &err), FWM_OK, &err); /* no repeat there */
    /* that one stepped sessions 3..12: refresh their reference state */
    free(before);
    before = snapshot(s, N);
    fwm_session *pair[2] = {s[2], s[2]};
    CHECK_STATUS(fwm_batch_step(pair, tokens, 2, logits, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    CHECK_CONTAINS(err.message, "sessions 0 and 1");
    fwm_session *with_null[3] = {s[0], NULL, s[1]};
    CHECK_STATUS(fwm_batch_step(with_null, tokens, 3, logits, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    CHECK_CONTAINS(err.message, "session 1");
    CHECK_STATUS(fwm_batch_step(NULL, tokens, 3, logits, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    CHECK_STATUS(fwm_batch_step(s, NULL, 3, logits, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    CHECK_STATUS(fwm_batch_step(s, tokens, 0, logits, &err), FWM_OK, &err);

    fwm_session *foreign = NULL;
    CHECK_STATUS(fwm_session_create(other_model, &foreign, &err), FWM_OK, &err);
    fwm_session *mixed[3] = {s[0], s[1], foreign};
    CHECK_STATUS(fwm_batch_step(mixed, tokens, 3, logits, &err), FWM_ERR_MODEL_MISMATCH, &err);
    CHECK_CONTAINS(err.message, "session 2");
    CHECK_INT(fwm_session_position(foreign), 0);

    /* Allocation failures: the batch's scratch (heap for 80 sessions), the repeat check, and a
     * session create/fork fail cleanly. */
    for (long n = 1;; n++) {
        fwm__alloc_fail_after(n);
        fwm_status st = fwm_batch_step(s, tokens, N, logits, &err);
        fwm__alloc_fail_reset();
        if (st == FWM_OK) { /* n - 1 allocations were all it needed */
            CHECK(n > 2);
            free(before);
            before = snapshot(s, N);
            break;
        }
        CHECK_STATUS(st, FWM_ERR_OUT_OF_MEMORY, &err);
        unsigned char *now = snapshot(s, N);
        CHECK_BYTES_EQUAL(now, before, N * bs, "session states after an allocation failure");
        free(now);
    }
    fwm_session *nothing = (fwm_session *)&nothing;
    fwm__alloc_fail_after(1);
    CHECK_STATUS(fwm_session_create(model, &nothing, &err), FWM_ERR_OUT_OF_MEMORY, &err);
    CHECK(nothing == NULL);
    nothing = (fwm_session *)&nothing;
    fwm__alloc_fail_after(1);
    CHECK_STATUS(fwm_session_fork(s[0], &nothing, &err), FWM_ERR_OUT_OF_MEMORY, &err);
    fwm__alloc_fail_reset();
    CHECK(nothing == NULL);
    CHECK_STATUS(fwm_session_create(NULL, &nothing, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    CHECK_STATUS(fwm_session_create(model, NULL, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    CHECK_STATUS(fwm_session_fork(NULL, &nothing, &err), FWM_ERR_INVALID_ARGUMENT, &err);

    unsigned char *after = snapshot(s, N);
    CHECK_BYTES_EQUAL(after, before, N * bs, "session states after refused calls");
    free(after);
    free(before);
    free(logits);
    fwm_session_free(foreign);
    for (int i = 0; i < N; i++) fwm_session_free(s[i]);
}

/* fwm_session_prime: the same bits as a reset followed by stepping the prime tokens, from any
 * state; the model's start scores are what the last of those steps returned. No prime tokens: a
 * plain reset and no start scores. */
static void test_prime(void) {
    static const uint32_t primes[][3] = {{1, 0, 0}, {7, 3, 7}};
    static const uint32_t counts[] = {1, 3};
    uint32_t V = model->hp.vocab_size;
    float *logits = malloc(V * sizeof *logits);
    for (int k = 0; k < 2; k++) {
        model->prime_count = counts[k];
        memcpy(model->prime_tokens, primes[k], sizeof primes[k]);
        fwm_error err;
        CHECK_STATUS(fwm__model_build_start(model, &err), FWM_OK, &err);
        fwm_session *used = NULL, *fresh = NULL;
        CHECK_STATUS(fwm_session_create(model, &used, &err), FWM_OK, &err);
        CHECK_STATUS(fwm_session_create(model, &fresh, &err), FWM_OK, &err);
        if (!used || !fresh) break;
        uint32_t tokens[9];
        rt_random_tokens(tokens, 9, V, 40 + (uint64_t)k);
        CHECK_STATUS(fwm_session_step_sequence(used, tokens, 9, NULL, &err), FWM_OK, &err);
        fwm_session_prime(used);
        CHECK_INT(fwm_session_position(used), counts[k]);
        for (uint32_t i = 0; i < counts[k]; i++)
            CHECK_STATUS(fwm_session_step(fresh, primes[k][i], logits, &err), FWM_OK, &err);
        size_t a_size = 0, b_size = 0;
        unsigned char *a = rt_export(used, &a_size), *b = rt_export(fresh, &b_size);
        if (a && b && a_size == b_size) CHECK_BYTES_EQUAL(a, b, a_size, "primed vs stepped from zero");
        const float *start = fwm_model_start_logits(model);
        CHECK(start != NULL);
        if (start) CHECK_BYTES_EQUAL(start, logits, V * sizeof *logits, "start scores vs the last prime step");
        fwm_model_info info;
        fwm_model_get_info(model, &info);
        CHECK_INT(info.prime_token_count, counts[k]);
        CHECK(info.prime_tokens && info.prime_tokens[counts[k] - 1] == primes[k][counts[k] - 1]);
        /* the primed session then steps exactly as the stepped one */
        CHECK_STATUS(fwm_session_step_sequence(used, tokens, 9, NULL, &err), FWM_OK, &err);
        CHECK_STATUS(fwm_session_step_sequence(fresh, tokens, 9, NULL, &err), FWM_OK, &err);
        free(a);
        free(b);
        a = rt_export(used, &a_size);
        b = rt_export(fresh, &b_size);
        if (a && b && a_size == b_size) CHECK_BYTES_EQUAL(a, b, a_size, "primed then stepped");
        free(a);
        free(b);
        fwm_session_free(used);
        fwm_session_free(fresh);
    }
    model->prime_count = 0;
    fwm_error err;
    CHECK_STATUS(fwm__model_build_start(model, &err), FWM_OK, &err);
    CHECK(fwm_model_start_logits(model) == NULL);
    fwm_session *s = NULL;
    CHECK_STATUS(fwm_session_create(model, &s, &err), FWM_OK, &err);
    uint32_t token = 4;
    CHECK_STATUS(fwm_session_step(s, token, NULL, &err), FWM_OK, &err);
    fwm_session_prime(s);
    CHECK_INT(fwm_session_position(s), 0);
    for (size_t i = 0; s && i < model->hp.hidden_size; i++) CHECK(s->h[i] == 0.0f && s->c[i] == 0.0f);
    fwm_session_free(s);
    fwm_session_prime(NULL); /* no-op */
    CHECK(fwm_model_start_logits(NULL) == NULL);
    free(logits);
}

int main(void) {
    fwm_hparams hp = rt_hparams(23, 10, 21, 5, 6, 5, 2, true, FWM_READ_ALWAYS, 0);
    model = rt_model_create(&hp, 1, true);
    other_model = rt_model_create(&hp, 2, true);
    CHECK(model && other_model);
    if (!model || !other_model) return check_finish("test_session");
    test_create_reset_position();
    test_fork();
    test_refusals();
    test_prime();
    rt_model_free(model);
    rt_model_free(other_model);
    return check_finish("test_session");
}
