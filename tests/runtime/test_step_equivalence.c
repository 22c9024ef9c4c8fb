/* test_step_equivalence.c - fwm_session_step, fwm_session_step_sequence and fwm_batch_step give
 * bit-identical logits and states, for batches of mixed sizes (1, 3, 8, 17, 64) whose sessions sit
 * at different positions, over several model variants (N_r 1..3, residual on/off, both read
 * policies, R != S, odd sizes that exercise every kernel tail, with and without the input-gate
 * table), stacked FWMs (fwm.block_count 2 and 4, with and without the table, E != H), with some
 * steps asking for no logits. */
#include <stdlib.h>

#include "fwm_rng.h"
#include "runtime_test_util.h"
#include "session_internal.h"

#define SESSIONS 64
#define TOKENS_PER_SESSION 120

typedef struct variant {
    const char *name;
    fwm_hparams hp;
    bool prepare;
    size_t tokens_per_session;
} variant;

/* Everything one path produced: logits[s][k] (V floats, or untouched when not asked), final blobs. */
typedef struct outcome {
    float *logits;          /* [SESSIONS][L][V] */
    unsigned char *blobs;   /* [SESSIONS][blob_size] */
} outcome;

static size_t V_of(const struct fwm_model *m) { return m->hp.vocab_size; }

static void outcome_init(outcome *o, const struct fwm_model *m, size_t L) {
    o->logits = calloc((size_t)SESSIONS * L * V_of(m), sizeof(float));
    o->blobs = calloc(SESSIONS, fwm__state_blob_size(m));
}
static void outcome_free(outcome *o) {
    free(o->logits);
    free(o->blobs);
}

static void save_blobs(outcome *o, fwm_session **sessions, const struct fwm_model *m) {
    size_t bs = fwm__state_blob_size(m);
    for (int s = 0; s < SESSIONS; s++) {
        size_t written = 0;
        fwm_error err;
        CHECK_STATUS(fwm_session_export(sessions[s], o->blobs + s * bs, bs, &written, &err), FWM_OK, &err);
    }
}

static void create_sessions(const struct fwm_model *m, fwm_session **sessions) {
    for (int s = 0; s < SESSIONS; s++) {
        fwm_error err;
        CHECK_STATUS(fwm_session_create(m, &sessions[s], &err), FWM_OK, &err);
    }
}
static void free_sessions(fwm_session **sessions) {
    for (int s = 0; s < SESSIONS; s++) fwm_session_free(sessions[s]);
}

static void run_variant(const variant *var) {
    const size_t L = var->tokens_per_session;
    struct fwm_model *m = rt_model_create(&var->hp, 1000 + var->hp.hidden_size, var->prepare);
    CHECK(m != NULL);
    if (!m) return;
    const size_t V = V_of(m);
    uint32_t *tokens = malloc((size_t)SESSIONS * L * sizeof *tokens);
    bool *want = calloc((size_t)SESSIONS * L, sizeof *want); /* logits asked at (s, k) */
    rt_random_tokens(tokens, (size_t)SESSIONS * L, (uint32_t)V, 7);
    fwm__rng rng;
    fwm__rng_seed(&rng, 99, 0);
    /* Under the "token" policy make the trigger token frequent so reads happen often. */
    if (var->hp.read_policy == FWM_READ_ON_TOKEN)
        for (size_t i = 0; i < (size_t)SESSIONS * L; i++)
            if (fwm__rng_below(&rng, 4) == 0) tokens[i] = var->hp.read_token_id;

    /* Path C: batches of mixed sizes, random membership and order, sessions at different
     * positions. Records which (s, k) asked for logits. */
    outcome batch;
    outcome_init(&batch, m, L);
    fwm_session *sessions[SESSIONS];
    create_sessions(m, sessions);
    size_t next[SESSIONS] = {0};
    static const size_t sizes[] = {1, 3, 8, 17, 64};
    size_t done = 0, round = 0;
    float *row_logits = malloc((size_t)SESSIONS * V * sizeof(float));
    while (done < (size_t)SESSIONS * L) {
        size_t want_n = sizes[round % 5];
        fwm_session *members[SESSIONS];
        uint32_t member_tokens[SESSIONS];
        int member_index[SESSIONS];
        size_t n = 0;
        /* random start, random stride through the sessions that still have tokens */
        size_t start = (size_t)fwm__rng_below(&rng, SESSIONS);
        for (size_t i = 0; i < SESSIONS && n < want_n; i++) {
            size_t s = (start + i * 37) % SESSIONS;
            /* early rounds: skip some sessions so positions diverge */
            if (next[s] >= L || (round < 40 && fwm__rng_below(&rng, 3) == 0)) continue;
            members[n] = sessions[s];
            member_tokens[n] = tokens[s * L + next[s]];
            member_index[n++] = (int)s;
        }
        if (n == 0) {
            round++;
            continue;
        }
        bool with_logits = (round % 7) != 3;
        fwm_error err;
        CHECK_STATUS(fwm_batch_step(members, member_tokens, n, with_logits ? row_logits : NULL, &err),
                     FWM_OK, &err);
        for (size_t i = 0; i < n; i++) {
            size_t s = (size_t)member_index[i], k = next[s]++;
            want[s * L + k] = with_logits;
            if (with_logits)
                memcpy(batch.logits + (s * L + k) * V, row_logits + i * V, V * sizeof(float));
        }
        done += n;
        round++;
    }
    for (int s = 0; s < SESSIONS; s++) CHECK_INT(fwm_session_position(sessions[s]), L);
    save_blobs(&batch, sessions, m);
    free_sessions(sessions);

    /* Path A: one fwm_session_step per token. */
    outcome single;
    outcome_init(&single, m, L);
    create_sessions(m, sessions);
    for (int s = 0; s < SESSIONS; s++) {
        for (size_t k = 0; k < L; k++) {
            fwm_error err;
            float *out = want[s * L + k] ? single.logits + (s * L + k) * V : NULL;
            CHECK_STATUS(fwm_session_step(sessions[s], tokens[s * L + k], out, &err), FWM_OK, &err);
        }
    }
    save_blobs(&single, sessions, m);
    free_sessions(sessions);

    /* Path B: fwm_session_step_sequence over runs of equal `want`, cut further at random. */
    outcome seq;
    outcome_init(&seq, m, L);
    create_sessions(m, sessions);
    for (int s = 0; s < SESSIONS; s++) {
        size_t k = 0;
        while (k < L) {
            size_t end = k + 1;
            size_t cap = k + 1 + (size_t)fwm__rng_below(&rng, 40);
            while (end < L && end < cap && want[s * L + end] == want[s * L + k]) end++;
            fwm_error err;
            float *out = want[s * L + k] ? seq.logits + (s * L + k) * V : NULL;
            CHECK_STATUS(fwm_session_step_sequence(sessions[s], tokens + s * L + k, end - k, out, &err),
                         FWM_OK, &err);
            k = end;
        }
    }
    save_blobs(&seq, sessions, m);
    free_sessions(sessions);

    char what[128];
    snprintf(what, sizeof what, "%s: batched vs single-step logits", var->name);
    CHECK_FLOATS_EQUAL(batch.logits, single.logits, (size_t)SESSIONS * L * V, what);
    snprintf(what, sizeof what, "%s: sequence vs single-step logits", var->name);
    CHECK_FLOATS_EQUAL(seq.logits, single.logits, (size_t)SESSIONS * L * V, what);
    size_t bs = fwm__state_blob_size(m);
    snprintf(what, sizeof what, "%s: batched vs single-step states", var->name);
    CHECK_BYTES_EQUAL(batch.blobs, single.blobs, SESSIONS * bs, what);
    snprintf(what, sizeof what, "%s: sequence vs single-step states", var->name);
    CHECK_BYTES_EQUAL(seq.blobs, single.blobs, SESSIONS * bs, what);

    /* The logits are real numbers (not all zero, all finite) where they were asked for. */
    size_t asked = 0, finite = 0, nonzero = 0;
    for (size_t i = 0; i < (size_t)SESSIONS * L; i++) {
        if (!want[i]) continue;
        asked++;
        const float *row = single.logits + i * V;
        bool all_finite = true, any_nonzero = false;
        for (size_t v = 0; v < V; v++) {
            all_finite &= row[v] == row[v] && row[v] - row[v] == 0.0f;
            any_nonzero |= row[v] != 0.0f;
        }
        finite += all_finite;
        nonzero += any_nonzero;
    }
    CHECK_INT(finite, asked);
    if (var->hp.residual || var->hp.read_policy == FWM_READ_ALWAYS) CHECK_INT(nonzero, asked);
    CHECK(asked > 0 && asked < (size_t)SESSIONS * L);

    outcome_free(&batch);
    outcome_free(&single);
    outcome_free(&seq);
    free(row_logits);
    free(tokens);
    free(want);
    rt_model_free(m);
}

static variant stacked(const char *name, fwm_hparams hp, unsigned layers, bool prepare) {
    hp.block_count = (uint16_t)layers;
    return (variant){name, hp, prepare, TOKENS_PER_SESSION};
}

int main(void) {
    const variant variants[] = {
        stacked("stacked L=2, odd sizes, N_r=3, always", rt_hparams(29, 13, 37, 6, 9, 6, 3, false,
                FWM_READ_ALWAYS, 0), 2, true),
        stacked("stacked L=4, token policy, residual", rt_hparams(31, 24, 20, 8, 5, 11, 1, true,
                FWM_READ_ON_TOKEN, 3), 4, true),
        stacked("stacked L=3, no input-gate table", rt_hparams(17, 9, 33, 9, 12, 9, 2, true,
                FWM_READ_ALWAYS, 0), 3, false),
        {"odd sizes, N_r=3, always, no residual",
         rt_hparams(29, 13, 37, 6, 9, 6, 3, false, FWM_READ_ALWAYS, 0), true, TOKENS_PER_SESSION},
        {"R!=S!=T, N_r=1, token policy, residual",
         rt_hparams(31, 24, 40, 8, 5, 11, 1, true, FWM_READ_ON_TOKEN, 3), true, TOKENS_PER_SESSION},
        {"no input-gate table, N_r=2, always, residual",
         rt_hparams(17, 32, 64, 16, 16, 16, 2, true, FWM_READ_ALWAYS, 0), false, TOKENS_PER_SESSION},
        {"N_r=2, token policy, no residual, odd",
         rt_hparams(19, 9, 33, 9, 12, 9, 2, false, FWM_READ_ON_TOKEN, 2), true, TOKENS_PER_SESSION},
        {"tiny (every size below one vector), N_r=1",
         rt_hparams(5, 3, 4, 2, 3, 2, 1, true, FWM_READ_ALWAYS, 0), true, TOKENS_PER_SESSION},
        {"paper sizes, N_r=3",
         rt_hparams(180, 256, 256, 32, 32, 32, 3, false, FWM_READ_ALWAYS, 0), true, 12},
    };
    for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++) run_variant(&variants[i]);
    return check_finish("test_step_equivalence");
}
