/* fuzz_state_import.c - fuzz target: any bytes as a session state blob for a valid model.
 *
 * The models are the fixed fixtures (fuzz_fixture.h), the FWM's, the LSTM's, the MNM's, the GFW's
 * and the STM's: each input goes to a session of each (a client's `restore` may send any bytes to
 * any model), twice, into a session that already holds some state:
 *   1. as it is;
 *   2. "repaired": the fingerprint field set to the model's and the trailing XXH64 recomputed, so
 *      that mutations reach the checks behind the checksum (dims, finiteness) instead of all
 *      stopping at it.
 * A refusal must leave the session exactly as it was and name one of the documented statuses. An
 * accepted blob must export back byte for byte, and the session must then step normally.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz_fixture.h"
#include "fuzz_target.h"
#include "fwm/fwm.h"
#include "xxhash64.h"

#define BLOB_MIN_BYTES 48 /* 40-byte header + 8-byte checksum trailer */

unsigned long fuzz_inputs_accepted;

static unsigned char *export_blob(const fwm_session *session, size_t size) {
    unsigned char *blob = malloc(size);
    FUZZ_CHECK(blob != NULL);
    size_t written = 0;
    fwm_error err;
    fwm_status status = fwm_session_export(session, blob, size, &written, &err);
    FUZZ_CHECK_STATUS(status, FWM_OK, err);
    FUZZ_CHECK(written == size);
    return blob;
}

/* Import data[0..size) into a session holding a known state; returns 1 when accepted. */
static int try_import(const fwm_model *model, const fwm_model_info *info, const uint8_t *data,
                      size_t size) {
    fwm_error err;
    fwm_session *session = NULL;
    fwm_status status = fwm_session_create(model, &session, &err);
    FUZZ_CHECK_STATUS(status, FWM_OK, err);
    const uint32_t warm_up[3] = {4, 6, 3}; /* mary went ? */
    status = fwm_session_step_sequence(session, warm_up, 3, NULL, &err);
    FUZZ_CHECK_STATUS(status, FWM_OK, err);
    unsigned char *before = export_blob(session, info->state_blob_bytes);

    status = fwm_session_import(session, data, size, &err);
    int accepted = status == FWM_OK;
    if (!accepted) {
        FUZZ_CHECK(status == FWM_ERR_STATE_CORRUPT || status == FWM_ERR_STATE_MODEL_MISMATCH);
        FUZZ_CHECK(err.status == status && err.message[0] != '\0');
        unsigned char *after = export_blob(session, info->state_blob_bytes);
        FUZZ_CHECK(memcmp(before, after, info->state_blob_bytes) == 0); /* untouched */
        free(after);
    } else {
        FUZZ_CHECK(size == info->state_blob_bytes);
        unsigned char *after = export_blob(session, info->state_blob_bytes);
        FUZZ_CHECK(memcmp(after, data, size) == 0);
        free(after);
        float *logits = malloc(info->vocab_size * sizeof(float));
        FUZZ_CHECK(logits != NULL);
        uint64_t position = fwm_session_position(session);
        for (uint32_t i = 0; i < 3; i++) {
            status = fwm_session_step(session, (i * 5 + (uint32_t)size) % info->vocab_size, logits,
                                      &err);
            FUZZ_CHECK_STATUS(status, FWM_OK, err);
        }
        FUZZ_CHECK(fwm_session_position(session) == position + 3);
        fwm_prediction top[2]; /* also for a position that predicts nothing (stm): a NaN row */
        FUZZ_CHECK(fwm_top_k(logits, info->vocab_size, 2, top) == 2);
        free(logits);
    }
    free(before);
    fwm_session_free(session);
    return accepted;
}

/* The input, as it is and repaired for `model`, into a session of `model`; 1 when accepted as it is. */
static int import_both_ways(const fwm_model *model, const uint8_t *data, size_t size) {
    fwm_model_info info;
    fwm_model_get_info(model, &info);
    uint8_t *copy = malloc(size ? size : 1); /* exact size: overreads are caught */
    FUZZ_CHECK(copy != NULL);
    if (size) memcpy(copy, data, size);
    int accepted = try_import(model, &info, copy, size);
    if (size >= BLOB_MIN_BYTES) {
        for (int i = 0; i < 8; i++) copy[8 + i] = (uint8_t)(info.fingerprint >> (8 * i));
        uint64_t sum = fwm__xxh64(copy, size - 8, 0);
        for (int i = 0; i < 8; i++) copy[size - 8 + i] = (uint8_t)(sum >> (8 * i));
        try_import(model, &info, copy, size);
    }
    free(copy);
    return accepted;
}

/* Every input goes to a session of each architecture: a client's `restore` may send any bytes to
 * any model. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (import_both_ways(fuzz_fixture_model(), data, size)) fuzz_inputs_accepted++;
    if (import_both_ways(fuzz_fixture_lstm_model(), data, size)) fuzz_inputs_accepted++;
    if (import_both_ways(fuzz_fixture_mnm_model(), data, size)) fuzz_inputs_accepted++;
    if (import_both_ways(fuzz_fixture_gfw_model(), data, size)) fuzz_inputs_accepted++;
    if (import_both_ways(fuzz_fixture_stm_model(), data, size)) fuzz_inputs_accepted++;
    return 0;
}
