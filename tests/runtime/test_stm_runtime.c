/* test_stm_runtime.c - the STM in the runtime, through the public API on files written by
 * fwm__stm_model_write, in both input modes: model info (the fields of its reading of tokens); which
 * positions predict (fwm_session_has_prediction, NaN rows, the start
 * scores); single, sequence and batched steps bit-identical (chunks of sessions, with and without
 * the relational transfer); reset, create, <eos> and prime restore the file's initial memories,
 * an empty buffer and a closed slot; sentences beyond P words; fork; export / import round trip
 * (the buffer and the slot included), inconsistent blobs and the other mode's refused (the session
 * untouched); a refused sequence buffers nothing; the prime tokens buffered. What every
 * architecture shares (prime, fork, refusals, export / import and its refusals, allocation failures)
 * is runtime_stm (test_arch_runtime.c). The numbers themselves are the golden suite's (tests/golden,
 * against stm_reference.py). */
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "fwm_alloc.h"
#include "fwm_rng.h"
#include "runtime_test_util.h"
#include "stm/stm_init.h"
#include "stm/stm_runtime.h"
#include "stm/stm_schema.h"

static const char *const vocabulary[] = {"<pad>", "<eos>", ".", "?", "john", "mary", "garden",
                                         "kitchen", "went", "to", "the", "where", "is"};
#define V_TEST 13u
enum { PAD = 0, EOS = 1, DOT = 2, QM = 3, JOHN = 4, MARY = 5, GARDEN = 6, KITCHEN = 7, WENT = 8,
       TO = 9, THE = 10, WHERE = 11, IS = 12 };

typedef struct shape {
    uint32_t mode, E, P, d, nq, nr, Ha;
    bool reset_on_eos;
    float alpha3;
} shape;

/* Write an STM model (the spec's initialisation, every tensor nudged, α = (0.9, 0.6, alpha3)) to
 * `name` and load it; `prime` gives it the prime tokens <eos> where is. */
static fwm_model *write_stm(const char *name, shape sh, uint64_t seed, bool prime) {
    fwm_stm_hparams hp;
    fwm__stm_hparams_defaults(&hp);
    hp.vocab_size = V_TEST, hp.input_mode = sh.mode, hp.embedding_length = sh.E;
    hp.sentence_length = sh.P, hp.memory_size = sh.d, hp.query_count = sh.nq;
    hp.relation_length = sh.nr, hp.answer_hidden = sh.Ha, hp.reset_on_eos = sh.reset_on_eos;
    hp.statement_end_token_id = DOT, hp.question_end_token_id = QM;
    size_t n = fwm__stm_tensor_count(&hp), total = 0, counts[FWM_STM_MAX_TENSORS];
    for (size_t i = 0; i < n; i++) {
        char tn[48];
        uint64_t rows, cols;
        fwm__stm_tensor_at(&hp, i, tn, &rows, &cols);
        counts[i] = (size_t)(rows * cols);
        total += counts[i];
    }
    float *data = malloc(total * sizeof(float)), *t[FWM_STM_MAX_TENSORS], *p = data;
    const uint32_t prime_tokens[3] = {EOS, WHERE, IS};
    fwm_stm_write_spec spec = {.hp = hp,
                               .head = rt_write_head("test stm", vocabulary,
                                                     prime ? prime_tokens : NULL, 3)};
    for (size_t i = 0; i < n; i++) t[i] = p, spec.tensors[i] = p, p += counts[i];
    fwm__stm_init_weights(&hp, seed, t);
    fwm__rng rng;
    fwm__rng_seed(&rng, seed, 99);
    for (size_t k = 0; k < total; k++) data[k] += (float)fwm__rng_uniform(&rng, -0.2, 0.2);
    float *alpha = t[sh.mode == FWM_STM_INPUT_SENTENCE ? 15 : 14];
    alpha[0] = 0.9f, alpha[1] = 0.6f, alpha[2] = sh.alpha3;
    fwm_error err;
    fwm_model *model = NULL;
    fwm_status st = fwm__stm_model_write(rt_path(name), &spec, &err);
    CHECK_OK(st, err);
    free(data);
    if (st == FWM_OK) CHECK_OK(fwm_model_load(rt_path(name), NULL, &model, &err), err);
    return model;
}

static const shape SENTENCE = {FWM_STM_INPUT_SENTENCE, 5, 4, 4, 3, 2, 6, true, 0.4f};
static const shape WORD = {FWM_STM_INPUT_WORD, 6, 4, 3, 2, 5, 4, true, 0.3f};

/* A catbAbI-like stream: sentences of 1 to 6 words ended by "." or by "?" and an answer, now and
 * then an <eos>. */
static void story_tokens(uint32_t *t, size_t n, uint64_t seed) {
    fwm__rng rng;
    fwm__rng_seed(&rng, seed, 1);
    size_t i = 0;
    while (i < n) {
        size_t words = 1 + (size_t)fwm__rng_below(&rng, 6);
        for (size_t w = 0; w < words && i < n; w++) t[i++] = 4 + (uint32_t)fwm__rng_below(&rng, V_TEST - 4);
        uint64_t kind = fwm__rng_below(&rng, 8);
        if (i < n) t[i++] = kind < 5 ? DOT : kind < 7 ? QM : EOS;
        if (kind >= 5 && kind < 7 && i < n) t[i++] = 4 + (uint32_t)fwm__rng_below(&rng, V_TEST - 4);
    }
}

static void random_tokens(uint32_t *t, size_t n, uint64_t seed) { rt_random_tokens(t, n, V_TEST, seed); }

static void info(void) {
    fwm_model *s = write_stm("info_s.gguf", SENTENCE, 1, false), *w = write_stm("info_w.gguf", WORD, 2, false);
    if (!s || !w) return;
    fwm_model_info i;
    fwm_model_get_info(s, &i);
    CHECK_STR(i.architecture, "stm");
    CHECK(!i.predicts_every_token && i.sentence_input && i.reset_on_eos);
    CHECK_INT(i.statement_end_token_id, DOT);
    CHECK_INT(i.question_end_token_id, QM);
    CHECK_INT(i.max_sentence_words, 4);
    CHECK_INT(i.layer_count, 1);
    CHECK_INT(i.session_state_floats, 16 * 4);
    CHECK_INT(i.state_blob_bytes, 64 + 4 * (16 * 4 + 4 + 2));
    CHECK_STR(i.name, "test stm");
    fwm_model_get_info(w, &i);
    CHECK(i.predicts_every_token && !i.sentence_input && i.max_sentence_words == 0);
    CHECK_INT(i.session_state_floats, 9 * 3);
    CHECK_INT(i.state_blob_bytes, 64 + 4 * 9 * 3);
    /* the FWM's info says it predicts every token and is not an STM */
    fwm_model *f = rt_write_fwm_file(rt_path("info_f.gguf"), vocabulary, V_TEST, 5);
    if (f) {
        fwm_model_get_info(f, &i);
        CHECK(i.predicts_every_token && !i.sentence_input && !i.reset_on_eos && i.question_end_token_id == 0);
        fwm_session *fs = NULL;
        fwm_error err;
        CHECK_OK(fwm_session_create(f, &fs, &err), err);
        CHECK(fwm_session_has_prediction(fs));
        fwm_session_free(fs);
    }
    CHECK(!fwm_session_has_prediction(NULL));
    fwm_model_free(f);
    fwm_model_free(s);
    fwm_model_free(w);
}

static bool row_is_nan(const float *row) {
    for (uint32_t v = 0; v < V_TEST; v++)
        if (!isnan(row[v])) return false;
    return true;
}

static bool row_is_finite(const float *row) {
    for (uint32_t v = 0; v < V_TEST; v++)
        if (!isfinite(row[v])) return false;
    return true;
}

/* Sentence mode predicts at a question's end only; word mode at every token. */
static void predictions(void) {
    fwm_model *model = write_stm("pred.gguf", SENTENCE, 3, false);
    if (!model) return;
    fwm_session *s = NULL;
    fwm_error err;
    CHECK_OK(fwm_session_create(model, &s, &err), err);
    CHECK(!fwm_session_has_prediction(s));
    const uint32_t story[] = {MARY, WENT, TO, THE, GARDEN, DOT, WHERE, IS, MARY, QM, GARDEN, JOHN, DOT};
    float rows[13 * V_TEST];
    fwm_prediction top[3];
    for (size_t i = 0; i < 13; i++) {
        CHECK_OK(fwm_session_step(s, story[i], rows + i * V_TEST, &err), err);
        bool answer = i == 9;
        CHECK(fwm_session_has_prediction(s) == answer);
        CHECK(answer ? row_is_finite(rows + i * V_TEST) : row_is_nan(rows + i * V_TEST));
        if (answer) CHECK_INT(fwm_top_k(rows + i * V_TEST, V_TEST, 3, top), 3);
    }
    CHECK_INT(fwm_session_position(s), 13);
    /* the sequence step gives the same rows, NaN rows included */
    float seq[13 * V_TEST];
    fwm_session_reset(s);
    CHECK_OK(fwm_session_step_sequence(s, story, 13, seq, &err), err);
    CHECK(memcmp(rows, seq, sizeof rows) == 0);
    /* a question answers from Mr and changes neither memory; the answer token changes nothing */
    fwm_session_reset(s);
    CHECK_OK(fwm_session_step_sequence(s, story, 6, NULL, &err), err);
    fwm_session *f = NULL;
    CHECK_OK(fwm_session_fork(s, &f, &err), err);
    CHECK_OK(fwm_session_step_sequence(s, story + 6, 5, NULL, &err), err);
    CHECK(memcmp(s->F, f->F, 16 * 4 * sizeof(float)) == 0);
    CHECK(!fwm_session_has_prediction(s));
    /* a question asked twice gives the same answer; the same question after another statement not */
    float q1[V_TEST], q2[V_TEST], q3[V_TEST];
    CHECK_OK(fwm_session_step_sequence(f, story + 6, 3, NULL, &err), err);
    CHECK_OK(fwm_session_step(f, QM, q1, &err), err);
    CHECK_OK(fwm_session_step(f, KITCHEN, NULL, &err), err);
    CHECK_OK(fwm_session_step_sequence(f, story + 6, 3, NULL, &err), err);
    CHECK_OK(fwm_session_step(f, QM, q2, &err), err);
    CHECK(memcmp(q1, q2, sizeof q1) == 0);
    const uint32_t more[] = {PAD, JOHN, WENT, TO, THE, KITCHEN, DOT, WHERE, IS, MARY};
    CHECK_OK(fwm_session_step_sequence(f, more, 10, NULL, &err), err);
    CHECK_OK(fwm_session_step(f, QM, q3, &err), err);
    CHECK(memcmp(q1, q3, sizeof q1) != 0);
    fwm_session_free(f);
    fwm_session_free(s);
    /* the start state after <eos> predicts nothing: no start scores */
    CHECK(fwm_model_start_logits(model) == NULL);
    fwm_model_free(model);
    /* word mode: every step predicts */
    model = write_stm("predw.gguf", WORD, 4, false);
    if (!model) return;
    CHECK(fwm_model_start_logits(model) != NULL);
    CHECK_OK(fwm_session_create(model, &s, &err), err);
    CHECK(fwm_session_has_prediction(s));
    for (size_t i = 0; i < 13; i++) {
        CHECK_OK(fwm_session_step(s, story[i], rows, &err), err);
        CHECK(fwm_session_has_prediction(s) && row_is_finite(rows));
    }
    rt_check_no_predict(s, "stm", V_TEST); /* neither mode predicts without a step */
    fwm_session_free(s);
    fwm_model_free(model);
}

static void step_modes_bit_identical(void) {
    const shape shapes[] = {SENTENCE, WORD,
                            {FWM_STM_INPUT_SENTENCE, 4, 3, 5, 2, 2, 3, false, 0.0f},
                            {FWM_STM_INPUT_WORD, 4, 4, 5, 3, 2, 4, false, 0.0f}};
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        fwm_model *model = write_stm("eq.gguf", shapes[k], 20 + k, false);
        if (!model) continue;
        uint32_t tokens[19 * 30];
        bool sentence = shapes[k].mode == FWM_STM_INPUT_SENTENCE;
        if (sentence) story_tokens(tokens, 19 * 30, k); else random_tokens(tokens, 19 * 30, k);
        rt_check_step_modes(model, tokens, 19, 30); /* 19 sessions: two full chunks of 8 and 3 */
        rt_check_step_modes(model, tokens, 3, 60);
        fwm_model_free(model);
    }
}

/* Reset, create, a resetting <eos> and prime all give the file's initial memories, an empty buffer
 * and a closed slot. */
static void reset_state(void) {
    for (int mode = 0; mode < 2; mode++) {
        shape sh = mode == 0 ? SENTENCE : WORD;
        fwm_model *model = write_stm("reset.gguf", sh, 30 + mode, false);
        if (!model) continue;
        const fwm_stm_model *sm = fwm__stm_of(model);
        size_t mi = (size_t)fwm__stm_item_floats(&sm->hp), mr = (size_t)fwm__stm_relational_floats(&sm->hp);
        fwm_session *s = NULL, *fresh = NULL, *primed = NULL;
        fwm_error err;
        CHECK_OK(fwm_session_create(model, &s, &err), err);
        CHECK_OK(fwm_session_create(model, &fresh, &err), err);
        CHECK_OK(fwm_session_create(model, &primed, &err), err);
        CHECK(memcmp(s->F, sm->item_init, mi * sizeof(float)) == 0);
        CHECK(memcmp(s->Mr, sm->relation_init, mr * sizeof(float)) == 0);
        CHECK(sm->item_init[0] != 0.0f);
        uint32_t tokens[40];
        story_tokens(tokens, 40, 7);
        tokens[38] = WENT, tokens[39] = MARY; /* leave a sentence half read */
        CHECK_OK(fwm_session_step_sequence(s, tokens, 40, NULL, &err), err);
        CHECK(memcmp(s->F, sm->item_init, mi * sizeof(float)) != 0);
        fwm_session_reset(s);
        CHECK(memcmp(s->h, fresh->h, s->state_bytes) == 0);
        CHECK_INT(fwm_session_position(s), 0);
        /* <eos> with reset_on_eos: the reset state, in word mode then stepped like any word */
        CHECK_OK(fwm_session_step_sequence(s, tokens, 40, NULL, &err), err);
        float a[V_TEST], b[V_TEST];
        CHECK_OK(fwm_session_step(s, EOS, a, &err), err);
        CHECK_OK(fwm_session_step(fresh, EOS, b, &err), err);
        CHECK(memcmp(s->h, fresh->h, s->state_bytes) == 0);
        CHECK(memcmp(a, b, sizeof a) == 0);
        CHECK_INT(fwm_session_position(s), 41);
        /* the start state (prime <eos>) */
        fwm_session_prime(primed);
        CHECK(memcmp(primed->h, fresh->h, s->state_bytes) == 0);
        CHECK_INT(fwm_session_position(primed), 1);
        if (mode == 0) { /* sentence mode: the state is the reset state itself */
            fwm_session_reset(fresh);
            CHECK(memcmp(primed->h, fresh->h, s->state_bytes) == 0);
        }
        fwm_session_free(s), fwm_session_free(fresh), fwm_session_free(primed);
        fwm_model_free(model);
    }
    /* without reset_on_eos, <eos> is a word like any other */
    shape sh = SENTENCE;
    sh.reset_on_eos = false;
    fwm_model *model = write_stm("noreset.gguf", sh, 33, false);
    if (!model) return;
    fwm_session *s = NULL, *fresh = NULL;
    fwm_error err;
    CHECK_OK(fwm_session_create(model, &s, &err), err);
    CHECK_OK(fwm_session_create(model, &fresh, &err), err);
    const uint32_t story[] = {MARY, WENT, TO, THE, GARDEN, DOT, EOS};
    CHECK_OK(fwm_session_step_sequence(s, story, 7, NULL, &err), err);
    CHECK(memcmp(s->F, fresh->F, 16 * sizeof(float)) != 0);
    CHECK_INT(s->words[4], 1);  /* one word buffered */
    CHECK_INT(s->words[0], EOS);
    fwm_session_free(s), fwm_session_free(fresh);
    fwm_model_free(model);
}

/* A sentence of more than P words is encoded by its first P: the end mark does not fit either. */
static void long_sentences(void) {
    fwm_model *model = write_stm("long.gguf", SENTENCE, 40, false); /* P = 4 */
    if (!model) return;
    fwm_session *a = NULL, *b = NULL;
    fwm_error err;
    CHECK_OK(fwm_session_create(model, &a, &err), err);
    CHECK_OK(fwm_session_create(model, &b, &err), err);
    const uint32_t longer[] = {MARY, WENT, TO, THE, GARDEN, KITCHEN, JOHN, DOT};
    const uint32_t cut[] = {MARY, WENT, TO, THE, DOT};
    const uint32_t with_end[] = {MARY, WENT, TO, DOT};
    CHECK_OK(fwm_session_step_sequence(a, longer, 8, NULL, &err), err);
    CHECK_OK(fwm_session_step_sequence(b, cut, 5, NULL, &err), err);
    CHECK(memcmp(a->F, b->F, (16 + 48) * sizeof(float)) == 0);
    CHECK_INT(a->words[4], 0); /* the buffer is empty again */
    fwm_session_reset(b);
    CHECK_OK(fwm_session_step_sequence(b, with_end, 4, NULL, &err), err);
    fwm_session_reset(a);
    CHECK_OK(fwm_session_step_sequence(a, cut, 3, NULL, &err), err);
    CHECK_OK(fwm_session_step(a, DOT, NULL, &err), err); /* "." is the fourth word: it counts */
    CHECK(memcmp(a->F, b->F, (16 + 48) * sizeof(float)) == 0);
    fwm_session_free(a), fwm_session_free(b);
    fwm_model_free(model);
}

static void export_import(void) {
    fwm_model *model = write_stm("blob.gguf", SENTENCE, 41, false);
    fwm_model *word = write_stm("blobw.gguf", WORD, 43, false);
    if (!model || !word) return;
    fwm_error err;
    fwm_session *s = NULL, *t = NULL, *x = NULL;
    CHECK_OK(fwm_session_create(model, &s, &err), err);
    CHECK_OK(fwm_session_create(model, &t, &err), err);
    CHECK_OK(fwm_session_create(word, &x, &err), err);
    const uint32_t story[] = {MARY, WENT, TO, THE, GARDEN, DOT, JOHN, WENT, TO, DOT, WHERE, IS, MARY, QM,
                              GARDEN, JOHN, IS};
    const size_t d2 = 16, floats = 16 * 4, P = 4;
    for (int stop = 0; stop < 2; stop++) {
        /* mid-sentence (two words buffered), then with the answer slot open */
        size_t n = stop == 0 ? 8 : 14;
        fwm_session_reset(s);
        CHECK_OK(fwm_session_step_sequence(s, story, n, NULL, &err), err);
        size_t size = 0;
        unsigned char *blob = rt_export(s, &size);
        CHECK_INT(size, 64 + 4 * (floats + P + 2));
        CHECK(memcmp(blob, "FWMS", 4) == 0 && memcmp(blob + 16, "stm\0\0\0\0\0", 8) == 0);
        const unsigned char *words = blob + 56 + 4 * floats;
        if (stop == 0) CHECK(words[0] == JOHN && words[4] == WENT && words[16] == 2 && words[20] == 0);
        else CHECK(words[0] == 0 && words[16] == 0 && words[20] == 1);
        CHECK_OK(fwm_session_import(t, blob, size, &err), err);
        CHECK_INT(fwm_session_position(t), n);
        CHECK(memcmp(s->h, t->h, s->state_bytes) == 0);
        CHECK(fwm_session_has_prediction(t) == (stop == 1));
        float a[4 * V_TEST], b[4 * V_TEST];
        CHECK_OK(fwm_session_step_sequence(s, story + 13, 4, a, &err), err);
        CHECK_OK(fwm_session_step_sequence(t, story + 13, 4, b, &err), err);
        CHECK(memcmp(a, b, sizeof a) == 0);
        /* damage: each refused, the session untouched */
        fwm_session_reset(t);
        unsigned char *bad = malloc(size);
        struct {
            size_t at;
            uint32_t value;
            fwm_status status;
            const char *needle;
        } edits[] = {
            {56 + 4 * floats + 4 * P, 5, FWM_ERR_STATE_CORRUPT, "holds 5 words, more than P = 4"},
            {56 + 4 * floats + 4 * (P + 1), 2, FWM_ERR_STATE_CORRUPT, "answer slot is 2"},
            {56 + 4 * floats, 13, FWM_ERR_STATE_CORRUPT, stop == 0 ? "word 0 is 13 (not a token id)"
                                                                   : "word 0 is 13 (past the buffer's length"},
            {56 + 4 * floats + 12, 7, FWM_ERR_STATE_CORRUPT, "word 3 is 7 (past the buffer's length, expected 0)"},
            {56 + 4 * (d2 + 5), 0x7fc00000u, FWM_ERR_STATE_CORRUPT, "state blob Mr[0][1][1] is not finite"},
            {32, 5, FWM_ERR_STATE_CORRUPT, "implies"},
            {40, 1, FWM_ERR_STATE_CORRUPT, "implies"},
            {8, 12345, FWM_ERR_STATE_MODEL_MISMATCH, "state blob belongs to model"},
        };
        for (size_t e = 0; e < sizeof edits / sizeof edits[0]; e++) {
            memcpy(bad, blob, size);
            for (int k = 0; k < 4; k++) bad[edits[e].at + k] = (unsigned char)(edits[e].value >> (8 * k));
            rt_reseal(bad, size);
            CHECK_STATUS(fwm_session_import(t, bad, size, &err), edits[e].status, &err);
            CHECK_CONTAINS(err.message, edits[e].needle);
            CHECK_INT(fwm_session_position(t), 0);
        }
        if (stop == 0) { /* the slot open with words in the buffer */
            memcpy(bad, blob, size);
            bad[56 + 4 * floats + 4 * (P + 1)] = 1;
            rt_reseal(bad, size);
            CHECK_STATUS(fwm_session_import(t, bad, size, &err), FWM_ERR_STATE_CORRUPT, &err);
            CHECK_CONTAINS(err.message, "answer slot is 1 with 2 buffered words");
        }
        /* the other mode */
        CHECK_STATUS(fwm_session_import(x, blob, size, &err), FWM_ERR_STATE_MODEL_MISMATCH, &err);
        CHECK_INT(fwm_session_position(x), 0);
        free(bad);
        free(blob);
    }
    size_t size = 0;
    /* word mode: the memories only */
    const uint32_t words[] = {MARY, WENT, EOS, JOHN};
    CHECK_OK(fwm_session_step_sequence(x, words, 4, NULL, &err), err);
    unsigned char *wblob = rt_export(x, &size);
    CHECK_INT(size, 64 + 4 * 27);
    fwm_session *y = NULL;
    CHECK_OK(fwm_session_create(word, &y, &err), err);
    CHECK_OK(fwm_session_import(y, wblob, size, &err), err);
    CHECK(memcmp(x->h, y->h, x->state_bytes) == 0);
    free(wblob);
    fwm_session_free(y);
    fwm_session_free(s), fwm_session_free(t), fwm_session_free(x);
    fwm_model_free(model), fwm_model_free(word);
}

/* A refused sequence buffers nothing; priming buffers the prime tokens' words. */
static void refusals(void) {
    fwm_model *model = write_stm("ref.gguf", SENTENCE, 50, true);
    if (!model) return;
    fwm_error err;
    fwm_session *s = NULL;
    CHECK_OK(fwm_session_create(model, &s, &err), err);
    const uint32_t bad[3] = {MARY, 99, DOT};
    CHECK_STATUS(fwm_session_step_sequence(s, bad, 3, NULL, &err), FWM_ERR_TOKEN_OUT_OF_RANGE, &err);
    CHECK_INT(fwm_session_position(s), 0);
    CHECK_INT(s->words[4], 0);
    /* primed with <eos> where is: two words buffered, no prediction */
    fwm_session_prime(s);
    CHECK_INT(fwm_session_position(s), 3);
    CHECK(s->words[0] == WHERE && s->words[1] == IS && s->words[4] == 2);
    CHECK(fwm_model_start_logits(model) == NULL);
    fwm_session_free(s);
    fwm_model_free(model);
}

int main(void) {
    if (!rt_dir_make("test-stm-runtime")) return 1;
    static const check_case cases[] = {
        {"info", info},
        {"predictions", predictions},
        {"step_modes_bit_identical", step_modes_bit_identical},
        {"reset_state", reset_state},
        {"long_sentences", long_sentences},
        {"export_import", export_import},
        {"refusals", refusals},
    };
    int status = check_run_cases("test_stm_runtime", cases, sizeof cases / sizeof cases[0]);
    const char *names[] = {"info_s.gguf", "info_w.gguf", "info_f.gguf", "pred.gguf", "predw.gguf",
                           "eq.gguf", "reset.gguf", "noreset.gguf", "long.gguf", "blob.gguf",
                           "blobw.gguf", "ref.gguf"};
    rt_dir_remove(names, sizeof names / sizeof names[0]);
    return status;
}
