/* fuzz_model_load.c - fuzz target: any bytes as a model file.
 *
 * The input is copied into a heap buffer of exactly its size (so AddressSanitizer catches a read
 * one byte past the end) and loaded with fwm_model_load_from_buffer, in place and without the
 * checksum check (so mutated files get past it to the schema and the runtime). A refusal must
 * come with a status and a message. A model that loads is then used the way a client would: info,
 * every token's text and id, the tokenizer, sessions stepped one token, a sequence and a batch at
 * a time (which must agree), top-k, fork, state export and import (which must round-trip), reset,
 * the primed start (the prime tokens stepped from zero give the model's start scores);
 * finally the same bytes are loaded again as a copy with the checksum (and fingerprint) verified.
 * Any registered architecture (the corpus has FWM, LSTM, MNM and GFW files).
 *
 * Sessions are skipped for models whose state exceeds FUZZ_MAX_STATE_FLOATS: the loader allows up
 * to 2^26 fast weights, which is correct but would make each execution take seconds.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_target.h"
#include "fwm/fwm.h"

#define FUZZ_MAX_STATE_FLOATS (1u << 16)
#define FUZZ_STEPS 4

unsigned long fuzz_inputs_accepted;

static void check_refusal(fwm_status status, const fwm_error *err) {
    FUZZ_CHECK(status != FWM_OK);
    FUZZ_CHECK(err->status == status);
    FUZZ_CHECK(memchr(err->message, '\0', sizeof err->message) != NULL);
    FUZZ_CHECK(err->message[0] != '\0');
    FUZZ_CHECK(strcmp(fwm_status_str(status), "unknown status") != 0);
}

/* Equal, counting two NaNs as equal (their payloads may differ between code paths). */
static int same_floats(const float *a, const float *b, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!(a[i] == b[i] || (isnan(a[i]) && isnan(b[i])) ||
              memcmp(&a[i], &b[i], sizeof(float)) == 0))
            return 0;
    return 1;
}

static void check_vocabulary(const fwm_model *model, const fwm_model_info *info) {
    for (uint32_t id = 0; id < info->vocab_size; id++) {
        const char *text = fwm_model_token_text(model, id);
        FUZZ_CHECK(text != NULL);
        uint32_t found = UINT32_MAX;
        FUZZ_CHECK(fwm_model_token_id(model, text, strlen(text), &found) == FWM_OK);
        FUZZ_CHECK(found == id); /* tokens are distinct */
    }
    FUZZ_CHECK(fwm_model_token_text(model, info->vocab_size) == NULL);

    uint32_t tokens[8];
    size_t count = 0;
    fwm_error err;
    const char *text = fwm_model_token_text(model, info->vocab_size - 1);
    fwm_status status = fwm_tokenize(model, text, strlen(text), tokens, 8, &count, &err);
    if (status == FWM_OK)
        for (size_t i = 0; i < count; i++) FUZZ_CHECK(tokens[i] < info->vocab_size);
    else
        check_refusal(status, &err);
}

/* Export `session`, import the blob into a new session, export that: the two blobs must match. */
static void check_state_round_trip(const fwm_model *model, const fwm_session *session,
                                   const fwm_model_info *info) {
    fwm_error err;
    size_t need = 0;
    fwm_status status = fwm_session_export(session, NULL, 0, &need, &err);
    FUZZ_CHECK_STATUS(status, FWM_ERR_BUFFER_TOO_SMALL, err);
    FUZZ_CHECK(need == info->state_blob_bytes);
    unsigned char *blob = malloc(need), *again = malloc(need);
    fwm_session *copy = NULL;
    FUZZ_CHECK(blob && again);
    size_t written = 0;
    status = fwm_session_export(session, blob, need, &written, &err);
    FUZZ_CHECK_STATUS(status, FWM_OK, err);
    FUZZ_CHECK(written == need);
    status = fwm_session_create(model, &copy, &err);
    FUZZ_CHECK_STATUS(status, FWM_OK, err);
    status = fwm_session_import(copy, blob, need, &err);
    if (status == FWM_OK) {
        FUZZ_CHECK(fwm_session_position(copy) == fwm_session_position(session));
        status = fwm_session_export(copy, again, need, &written, &err);
        FUZZ_CHECK_STATUS(status, FWM_OK, err);
        FUZZ_CHECK(memcmp(blob, again, need) == 0);
    } else {
        /* Weights from the file may be infinite or NaN, and then so is the state, which import
         * refuses by design. */
        FUZZ_CHECK_STATUS(status, FWM_ERR_STATE_CORRUPT, err);
    }
    fwm_session_free(copy);
    free(blob);
    free(again);
}

static void exercise_sessions(const fwm_model *model, const fwm_model_info *info,
                              const uint8_t *data, size_t size) {
    const size_t V = info->vocab_size;
    uint32_t tokens[FUZZ_STEPS];
    for (size_t i = 0; i < FUZZ_STEPS; i++)
        tokens[i] = size > i ? (uint32_t)(data[size - 1 - i] % V) : (uint32_t)i % V;
    tokens[FUZZ_STEPS - 1] = info->read_token_id; /* reads under the "token" policy too */

    float *single = malloc(FUZZ_STEPS * V * sizeof(float));
    float *sequence = malloc(FUZZ_STEPS * V * sizeof(float));
    float *batch = malloc(2 * V * sizeof(float));
    FUZZ_CHECK(single && sequence && batch);
    fwm_session *a = NULL, *b = NULL, *c = NULL;
    fwm_error err;
    fwm_status status = fwm_session_create(model, &a, &err);
    FUZZ_CHECK_STATUS(status, FWM_OK, err);
    status = fwm_session_create(model, &b, &err);
    FUZZ_CHECK_STATUS(status, FWM_OK, err);

    /* a: one token at a time; b: the whole sequence at once. */
    for (size_t i = 0; i < FUZZ_STEPS; i++) {
        status = fwm_session_step(a, tokens[i], single + i * V, &err);
        FUZZ_CHECK_STATUS(status, FWM_OK, err);
    }
    status = fwm_session_step_sequence(b, tokens, FUZZ_STEPS, sequence, &err);
    FUZZ_CHECK_STATUS(status, FWM_OK, err);
    FUZZ_CHECK(same_floats(single, sequence, FUZZ_STEPS * V));
    FUZZ_CHECK(fwm_session_position(a) == FUZZ_STEPS && fwm_session_position(b) == FUZZ_STEPS);

    status = fwm_session_step(a, (uint32_t)V, NULL, &err);
    FUZZ_CHECK_STATUS(status, FWM_ERR_TOKEN_OUT_OF_RANGE, err);

    fwm_prediction top[3];
    size_t n = fwm_top_k(single + (FUZZ_STEPS - 1) * V, (uint32_t)V, 3, top);
    FUZZ_CHECK(n == (V < 3 ? V : 3));
    for (size_t i = 0; i < n; i++) FUZZ_CHECK(top[i].token < V);

    /* A fork of a, then a and the fork stepped together in a batch: both rows equal a's own
     * next step, computed on b (same state as a). */
    status = fwm_session_fork(a, &c, &err);
    FUZZ_CHECK_STATUS(status, FWM_OK, err);
    fwm_session *pair[2] = {a, c};
    uint32_t next[2] = {tokens[0], tokens[0]};
    status = fwm_batch_step(pair, next, 2, batch, &err);
    FUZZ_CHECK_STATUS(status, FWM_OK, err);
    status = fwm_session_step(b, tokens[0], single, &err);
    FUZZ_CHECK_STATUS(status, FWM_OK, err);
    FUZZ_CHECK(same_floats(batch, single, V));
    FUZZ_CHECK(same_floats(batch + V, single, V));

    check_state_round_trip(model, c, info);
    fwm_session_reset(c);
    FUZZ_CHECK(fwm_session_position(c) == 0);
    check_state_round_trip(model, c, info);

    /* The primed start: the model's prime tokens stepped from zero (on b, reset), the same position
     * and, when there are prime tokens, the same scores as the model's start scores. */
    fwm_session_prime(a);
    FUZZ_CHECK(fwm_session_position(a) == info->prime_token_count);
    FUZZ_CHECK(info->prime_token_count <= 64);
    fwm_session_reset(b);
    for (uint32_t i = 0; i < info->prime_token_count; i++) {
        FUZZ_CHECK(info->prime_tokens[i] < V);
        status = fwm_session_step(b, info->prime_tokens[i], single, &err);
        FUZZ_CHECK_STATUS(status, FWM_OK, err);
    }
    const float *start = fwm_model_start_logits(model);
    FUZZ_CHECK((start != NULL) == (info->prime_token_count > 0));
    if (start) FUZZ_CHECK(same_floats(start, single, V));
    check_state_round_trip(model, a, info);

    fwm_session_free(a);
    fwm_session_free(b);
    fwm_session_free(c);
    free(single);
    free(sequence);
    free(batch);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint8_t *copy = malloc(size ? size : 1);
    FUZZ_CHECK(copy != NULL);
    if (size) memcpy(copy, data, size);

    fwm_model_params params = fwm_model_default_params();
    params.use_mmap = true; /* tensors in place when aligned: the model borrows `copy` */
    params.verify_checksum = false;
    fwm_model *model = NULL;
    fwm_error err;
    fwm_status status = fwm_model_load_from_buffer(copy, size, &params, &model, &err);
    if (status != FWM_OK) {
        FUZZ_CHECK(model == NULL);
        check_refusal(status, &err);
        free(copy);
        return 0;
    }
    fuzz_inputs_accepted++;

    fwm_model_info info;
    fwm_model_get_info(model, &info);
    FUZZ_CHECK(info.vocab_size >= 2 && info.hidden_size >= 1 && info.name != NULL);
    FUZZ_CHECK(info.architecture != NULL && info.layer_count >= 1);
    if (info.architecture && strcmp(info.architecture, "lstm") == 0) /* h and c of every layer */
        FUZZ_CHECK(info.session_state_floats == 2 * (size_t)info.layer_count * info.hidden_size);
    else if (info.architecture && strcmp(info.architecture, "mnm") == 0) /* h, c, r, the memory */
        FUZZ_CHECK(info.session_state_floats > 2 * (size_t)info.hidden_size &&
                   info.state_blob_bytes == 64 + 4 * info.session_state_floats);
    else if (info.architecture && strcmp(info.architecture, "gfw") == 0) /* h_F, h_S, F1, F2 (m = H) */
        FUZZ_CHECK(info.session_state_floats > (size_t)info.hidden_size * (2 * (size_t)info.hidden_size +
                                                                        info.embedding_length + 3) &&
                   info.state_blob_bytes == 56 + 4 * info.session_state_floats);
    else
        FUZZ_CHECK(info.session_state_floats ==
                   2 * (size_t)info.hidden_size +
                       (size_t)info.memory_s * info.memory_r * info.memory_t);
    check_vocabulary(model, &info);
    if (info.session_state_floats <= FUZZ_MAX_STATE_FLOATS) exercise_sessions(model, &info, data, size);

    /* Again as a private copy, checksum verified: loads the same model or refuses the checksum. */
    fwm_model *second = NULL;
    params.use_mmap = false;
    params.verify_checksum = true;
    status = fwm_model_load_from_buffer(copy, size, &params, &second, &err);
    if (status == FWM_OK) {
        fwm_model_info info2;
        fwm_model_get_info(second, &info2);
        FUZZ_CHECK(info2.fingerprint == info.fingerprint);
        FUZZ_CHECK(info2.checksum_verified == info2.has_checksum);
    } else {
        FUZZ_CHECK_STATUS(status, FWM_ERR_CHECKSUM, err); /* checksum or fingerprint key wrong */
    }
    fwm_model_free(second);
    fwm_model_free(model);
    free(copy);
    return 0;
}
