/* test_state_blob.c - session state blobs: the documented layout, export -> import mid-stream
 * continuing bit-identically, and import refusing another model's blob, truncation, every single
 * flipped byte, a wrong version, wrong dims and non-finite values (re-checksummed so only that
 * check can catch them), each leaving the session untouched; a stacked FWM's version-3 blob (its
 * layout, continuation, and the refusals particular to it). */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>

#include "runtime_test_util.h"
#include "session_internal.h"
#include "xxhash64.h"

static struct fwm_model *model, *other_model;

static uint32_t rd32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t rd64(const unsigned char *p) { return rd32(p) | (uint64_t)rd32(p + 4) << 32; }
static void wr32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static void wr64(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static void reseal(unsigned char *blob, size_t size) {
    wr64(blob + size - 8, fwm__xxh64(blob, size - 8, 0));
}
static float rdf(const unsigned char *p) {
    uint32_t bits = rd32(p);
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

static void test_layout(void) {
    const fwm_hparams *hp = &model->hp;
    fwm_session *s = NULL;
    fwm_error err;
    CHECK_STATUS(fwm_session_create(model, &s, &err), FWM_OK, &err);
    uint32_t tokens[9];
    rt_random_tokens(tokens, 9, hp->vocab_size, 4);
    CHECK_STATUS(fwm_session_step_sequence(s, tokens, 9, NULL, &err), FWM_OK, &err);
    size_t H = hp->hidden_size, SRT = (size_t)hp->memory_s * hp->memory_r * hp->memory_t;
    size_t expected = 48 + 4 * (2 * H + SRT);
    CHECK_INT(fwm__state_blob_size(model), expected);
    size_t size = 0;
    unsigned char *b = rt_export(s, &size);
    if (!b) return;
    CHECK_INT(size, expected);
    CHECK(memcmp(b, "FWMS", 4) == 0);
    CHECK_INT(rd32(b + 4), 1);
    CHECK(rd64(b + 8) == model->fingerprint);
    CHECK_INT(rd32(b + 16), hp->hidden_size);
    CHECK_INT(rd32(b + 20), hp->memory_s);
    CHECK_INT(rd32(b + 24), hp->memory_r);
    CHECK_INT(rd32(b + 28), hp->memory_t);
    CHECK_INT(rd64(b + 32), 9);
    size_t bad = 0;
    for (size_t i = 0; i < H; i++) bad += rdf(b + 40 + 4 * i) != s->h[i];
    for (size_t i = 0; i < H; i++) bad += rdf(b + 40 + 4 * H + 4 * i) != s->c[i];
    CHECK_INT(bad, 0);
    /* F in the blob is F with the last write applied (session_internal.h) */
    CHECK(s->has_pending);
    size_t R = hp->memory_r, T = hp->memory_t;
    for (size_t i = 0; i < SRT; i++) {
        size_t si = i / (R * T), sj = i / T % R, st = i % T;
        double want = ((double)s->F[i] + (double)s->pending_k1[si] * s->pending_k2[sj] * s->pending_d[st]) *
                      s->pending_s;
        bad += fabs(rdf(b + 40 + 8 * H + 4 * i) - want) > 1e-6 * (1 + fabs(want));
    }
    CHECK_INT(bad, 0);
    CHECK(rd64(b + size - 8) == fwm__xxh64(b, size - 8, 0));

    /* buffer too small: the size needed comes back */
    size_t written = 0;
    CHECK_STATUS(fwm_session_export(s, b, size - 1, &written, &err), FWM_ERR_BUFFER_TOO_SMALL, &err);
    CHECK_INT(written, expected);
    written = 0;
    CHECK_STATUS(fwm_session_export(s, NULL, 0, &written, &err), FWM_ERR_BUFFER_TOO_SMALL, &err);
    CHECK_INT(written, expected);
    CHECK_STATUS(fwm_session_export(NULL, b, size, &written, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    free(b);
    fwm_session_free(s);
}

static void test_continuation(void) {
    const size_t V = model->hp.vocab_size, N = 60;
    uint32_t tokens[120];
    rt_random_tokens(tokens, 120, (uint32_t)V, 8);
    fwm_session *a = NULL, *b = NULL;
    fwm_error err;
    CHECK_STATUS(fwm_session_create(model, &a, &err), FWM_OK, &err);
    CHECK_STATUS(fwm_session_create(model, &b, &err), FWM_OK, &err);
    CHECK_STATUS(fwm_session_step_sequence(a, tokens, N, NULL, &err), FWM_OK, &err);
    CHECK_STATUS(fwm_session_step_sequence(b, tokens + 7, 13, NULL, &err), FWM_OK, &err); /* elsewhere */
    size_t size = 0;
    unsigned char *blob = rt_export(a, &size);
    if (!blob) return;
    CHECK_STATUS(fwm_session_import(b, blob, size, &err), FWM_OK, &err);
    CHECK_INT(fwm_session_position(b), N);
    float *la = malloc(N * V * sizeof(float)), *lb = malloc(N * V * sizeof(float));
    CHECK_STATUS(fwm_session_step_sequence(a, tokens + N, N, la, &err), FWM_OK, &err);
    for (size_t i = 0; i < N; i++)
        CHECK_STATUS(fwm_session_step(b, tokens[N + i], lb + i * V, &err), FWM_OK, &err);
    CHECK_FLOATS_EQUAL(lb, la, N * V, "logits after import vs the exporting session's");
    size_t s1, s2;
    unsigned char *ea = rt_export(a, &s1), *eb = rt_export(b, &s2);
    if (ea && eb) CHECK_BYTES_EQUAL(eb, ea, s1, "states after import and 60 more steps");
    free(ea), free(eb), free(la), free(lb), free(blob);
    fwm_session_free(a);
    fwm_session_free(b);
}

/* Import `blob` into a stepped session, expect `want`, and check the session is untouched. */
static void expect_refused(const unsigned char *blob, size_t size, fwm_status want, const char *needle,
                           const char *what) {
    fwm_session *s = NULL;
    fwm_error err;
    CHECK_STATUS(fwm_session_create(model, &s, &err), FWM_OK, &err);
    uint32_t tokens[5] = {1, 4, 2, 0, 3};
    CHECK_STATUS(fwm_session_step_sequence(s, tokens, 5, NULL, &err), FWM_OK, &err);
    size_t n1, n2;
    unsigned char *before = rt_export(s, &n1);
    fwm_status st = fwm_session_import(s, blob, size, &err);
    if (st != want) {
        fprintf(stderr, "%s: import returned %s (\"%s\"), expected %s\n", what, fwm_status_str(st),
                err.message, fwm_status_str(want));
        check_failures++;
    } else if (needle) {
        CHECK_CONTAINS(err.message, needle);
    }
    unsigned char *after = rt_export(s, &n2);
    if (before && after) CHECK_BYTES_EQUAL(after, before, n1, what);
    free(before), free(after);
    fwm_session_free(s);
}

static void test_refusals(void) {
    fwm_session *s = NULL, *o = NULL;
    fwm_error err;
    CHECK_STATUS(fwm_session_create(model, &s, &err), FWM_OK, &err);
    CHECK_STATUS(fwm_session_create(other_model, &o, &err), FWM_OK, &err);
    uint32_t tokens[20];
    rt_random_tokens(tokens, 20, model->hp.vocab_size, 9);
    CHECK_STATUS(fwm_session_step_sequence(s, tokens, 20, NULL, &err), FWM_OK, &err);
    CHECK_STATUS(fwm_session_step_sequence(o, tokens, 20, NULL, &err), FWM_OK, &err);
    size_t size = 0, osize = 0;
    unsigned char *good = rt_export(s, &size), *foreign = rt_export(o, &osize);
    if (!good || !foreign) return;
    CHECK_INT(osize, size);

    char hex[40];
    snprintf(hex, sizeof hex, "%016" PRIx64, other_model->fingerprint);
    expect_refused(foreign, osize, FWM_ERR_STATE_MODEL_MISMATCH, hex, "another model's blob");
    snprintf(hex, sizeof hex, "%016" PRIx64, model->fingerprint);
    expect_refused(foreign, osize, FWM_ERR_STATE_MODEL_MISMATCH, hex, "another model's blob (own print)");

    expect_refused(good, size - 1, FWM_ERR_STATE_CORRUPT, "bytes", "blob short by one byte");
    expect_refused(good, size - 8, FWM_ERR_STATE_CORRUPT, NULL, "blob without its checksum");
    expect_refused(good, 47, FWM_ERR_STATE_CORRUPT, NULL, "header only");
    expect_refused(good, 0, FWM_ERR_STATE_CORRUPT, NULL, "empty blob");
    unsigned char *longer = calloc(size + 4, 1);
    memcpy(longer, good, size);
    expect_refused(longer, size + 4, FWM_ERR_STATE_CORRUPT, NULL, "blob with trailing bytes");
    free(longer);

    /* every single flipped byte is caught (magic, version, dims, sum, or the checksum) */
    unsigned char *copy = malloc(size);
    size_t caught = 0;
    fwm_session *t = NULL;
    CHECK_STATUS(fwm_session_create(model, &t, &err), FWM_OK, &err);
    for (size_t i = 0; i < size; i++) {
        memcpy(copy, good, size);
        copy[i] ^= 0x10;
        caught += fwm_session_import(t, copy, size, &err) == FWM_ERR_STATE_CORRUPT;
    }
    CHECK_INT(caught, size);
    CHECK_INT(fwm_session_position(t), 0);
    fwm_session_free(t);
    memcpy(copy, good, size);
    copy[size / 2] ^= 1;
    expect_refused(copy, size, FWM_ERR_STATE_CORRUPT, "checksum", "one flipped bit");

    /* damage that passes the checksum (re-sealed): each later check on its own */
    memcpy(copy, good, size);
    copy[0] = 'X';
    reseal(copy, size);
    expect_refused(copy, size, FWM_ERR_STATE_CORRUPT, "magic", "bad magic");
    memcpy(copy, good, size);
    wr32(copy + 4, 2);
    reseal(copy, size);
    expect_refused(copy, size, FWM_ERR_STATE_CORRUPT, "version is 2", "version 2");
    memcpy(copy, good, size);
    wr32(copy + 20, rd32(copy + 20) + 1); /* S+1, and the size no longer fits */
    reseal(copy, size);
    expect_refused(copy, size, FWM_ERR_STATE_CORRUPT, "implies", "dims that do not fit the size");
    memcpy(copy, good, size);
    wr32(copy + 20, 0xffffffffu);
    wr32(copy + 24, 0xffffffffu);
    wr32(copy + 28, 0xffffffffu);
    reseal(copy, size);
    expect_refused(copy, size, FWM_ERR_STATE_CORRUPT, NULL, "dims that overflow");
    memcpy(copy, good, size);
    /* swap S and T's sizes so the total matches but the dims are not the model's */
    wr32(copy + 20, model->hp.memory_t);
    wr32(copy + 28, model->hp.memory_s);
    reseal(copy, size);
    if (model->hp.memory_s != model->hp.memory_t)
        expect_refused(copy, size, FWM_ERR_STATE_CORRUPT, "differ", "dims of another shape");
    size_t H = model->hp.hidden_size;
    float nan = NAN, inf = INFINITY;
    memcpy(copy, good, size);
    memcpy(copy + 40 + 4 * 3, &nan, 4);
    reseal(copy, size);
    expect_refused(copy, size, FWM_ERR_STATE_CORRUPT, "h[3]", "NaN in h");
    memcpy(copy, good, size);
    memcpy(copy + 40 + 4 * H + 4, &inf, 4);
    reseal(copy, size);
    expect_refused(copy, size, FWM_ERR_STATE_CORRUPT, "c[1]", "infinity in c");
    memcpy(copy, good, size);
    memcpy(copy + size - 12, &inf, 4);
    reseal(copy, size);
    expect_refused(copy, size, FWM_ERR_STATE_CORRUPT, "F[", "infinity in F");

    CHECK_STATUS(fwm_session_import(NULL, good, size, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    CHECK_STATUS(fwm_session_import(s, NULL, size, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    /* the intact blob still imports */
    CHECK_STATUS(fwm_session_import(s, good, size, &err), FWM_OK, &err);
    free(copy), free(good), free(foreign);
    fwm_session_free(s);
    fwm_session_free(o);
}

/* A stacked FWM (fwm.block_count 3): version 3, L and the lower layers' h and c after F. */
static void test_stacked(void) {
    fwm_hparams hp = rt_hparams(13, 8, 19, 4, 5, 6, 2, true, FWM_READ_ALWAYS, 0);
    hp.block_count = 3;
    struct fwm_model *stacked = rt_model_create(&hp, 23, true);
    CHECK(stacked != NULL);
    if (!stacked) return;
    fwm_session *s = NULL;
    fwm_error err;
    CHECK_STATUS(fwm_session_create(stacked, &s, &err), FWM_OK, &err);
    uint32_t tokens[11];
    rt_random_tokens(tokens, 11, hp.vocab_size, 5);
    CHECK_STATUS(fwm_session_step_sequence(s, tokens, 11, NULL, &err), FWM_OK, &err);
    size_t H = hp.hidden_size, SRT = (size_t)hp.memory_s * hp.memory_r * hp.memory_t;
    size_t expected = 56 + 4 * (2 * 3 * H + SRT);
    CHECK_INT(fwm__state_blob_size(stacked), expected);
    size_t size = 0;
    unsigned char *b = rt_export(s, &size);
    if (!b) return;
    CHECK_INT(size, expected);
    CHECK_INT(rd32(b + 4), 3);
    CHECK_INT(rd32(b + 16), H);
    CHECK_INT(rd64(b + 32), 11);
    CHECK_INT(rd32(b + 40), 3);
    CHECK_INT(rd32(b + 44), 0);
    size_t bad = 0, stride = fwm__aligned_floats(H);
    for (size_t i = 0; i < H; i++) bad += rdf(b + 48 + 4 * i) != s->h[i];
    for (size_t i = 0; i < H; i++) bad += rdf(b + 48 + 4 * H + 4 * i) != s->c[i];
    const unsigned char *lower = b + 48 + 4 * (2 * H + SRT);
    for (size_t l = 0; l < 2; l++)
        for (size_t i = 0; i < H; i++) {
            bad += rdf(lower + 4 * (l * H + i)) != s->lower_h[l * stride + i];
            bad += rdf(lower + 4 * (2 * H + l * H + i)) != s->lower_c[l * stride + i];
        }
    CHECK_INT(bad, 0);
    float zero = 0;
    size_t nonzero = 0;
    for (size_t i = 0; i < 4 * H; i++) nonzero += memcmp(lower + 4 * i, &zero, 4) != 0;
    CHECK(nonzero > 2 * H); /* the lower layers' state is there, not zeros */
    fwm_session_free(s);

    /* export -> import continues bit-identically (the one-layer test over the stacked model) */
    struct fwm_model *one = model;
    model = stacked;
    test_continuation();

    /* refusals particular to version 3 (each re-checksummed), the session untouched */
    unsigned char *copy = malloc(size);
    memcpy(copy, b, size);
    wr32(copy + 40, 9), reseal(copy, size);
    expect_refused(copy, size, FWM_ERR_STATE_CORRUPT, "layer count L=9 is outside 2 .. 8", "L=9");
    memcpy(copy, b, size);
    wr32(copy + 40, 2), reseal(copy, size);
    expect_refused(copy, size, FWM_ERR_STATE_CORRUPT, "implies", "L=2 in an L=3 blob");
    memcpy(copy, b, size);
    wr32(copy + 4, 1), reseal(copy, size);
    expect_refused(copy, size, FWM_ERR_STATE_CORRUPT, "implies", "version 1 on a stacked blob");
    memcpy(copy, b, size);
    wr32(copy + size - 8 - 4, 0x7fc00000u), reseal(copy, size);
    expect_refused(copy, size, FWM_ERR_STATE_CORRUPT, "lower c[", "NaN in the last lower c");
    memcpy(copy, b, size);
    wr32(copy + 48 + 4 * (2 * H + SRT), 0x7f800000u), reseal(copy, size);
    expect_refused(copy, size, FWM_ERR_STATE_CORRUPT, "lower h[0] is not finite", "inf in lower h");
    /* a one-layer blob of a model with the same fingerprint: L=1 differs from the model's */
    fwm_session *o = NULL;
    CHECK_STATUS(fwm_session_create(one, &o, &err), FWM_OK, &err);
    size_t one_size = 0;
    unsigned char *one_blob = rt_export(o, &one_size);
    uint64_t saved = stacked->fingerprint;
    stacked->fingerprint = one->fingerprint;
    if (one_blob)
        expect_refused(one_blob, one_size, FWM_ERR_STATE_CORRUPT,
                       "layer count L=1 differs from the model's L=3", "a one-layer blob");
    stacked->fingerprint = saved;
    free(one_blob);
    fwm_session_free(o);
    /* and another model's stacked blob is another model's */
    memcpy(copy, b, size);
    wr64(copy + 8, saved ^ 1), reseal(copy, size);
    expect_refused(copy, size, FWM_ERR_STATE_MODEL_MISMATCH, "belongs to model",
                   "foreign stacked blob");
    model = one;
    free(copy);
    free(b);
    rt_model_free(stacked);
}

int main(void) {
    fwm_hparams hp = rt_hparams(13, 8, 19, 4, 5, 6, 1, false, FWM_READ_ALWAYS, 0);
    model = rt_model_create(&hp, 21, true);
    other_model = rt_model_create(&hp, 22, true);
    CHECK(model && other_model);
    if (!model || !other_model) return check_finish("test_state_blob");
    CHECK(model->fingerprint != other_model->fingerprint);
    test_layout();
    test_continuation();
    test_refusals();
    test_stacked();
    rt_model_free(model);
    rt_model_free(other_model);
    return check_finish("test_state_blob");
}
