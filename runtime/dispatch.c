/* dispatch.c - the runtime's registry of architectures and the public entry points that depend on
 * a session's architecture: stepping (single, sequence, batch) and state export / import. Each
 * looks the session's model up in the registry (arch_ops.h) and calls its architecture's function;
 * so do the question whether a session's last step predicted anything and the scores of a
 * session's current state (fwm_session_predict, NULL in the table: unsupported). A NULL session goes to
 * the FWM's, which refuses it with its usual message. An import first
 * refuses a blob of another architecture, naming both (the architectures' own imports then judge
 * blobs of their own kind). Also the checks every blob version shares (state_blob_common.h). */
#include <inttypes.h>
#include <string.h>

#include "arch_ops.h"
#include "fwm_error.h"
#include "session_internal.h"
#include "state_blob_common.h"
#include "xxhash64.h"

const fwm__arch_ops_table *const fwm__arch_table[FWM_ARCH_COUNT] = {
#define FWM_ARCH_TABLE_(id, name, prefix) &fwm__##prefix##_ops,
    FWM_ARCH_LIST(FWM_ARCH_TABLE_)
#undef FWM_ARCH_TABLE_
};

static const fwm__arch_ops_table *ops_of(const fwm_session *session) {
    return session ? fwm__arch_ops(session->model->arch) : &fwm__fwm_ops;
}

fwm_status fwm_session_step(fwm_session *session, uint32_t token, float *logits, fwm_error *err) {
    return ops_of(session)->step(session, token, logits, err);
}

fwm_status fwm_session_step_sequence(fwm_session *session, const uint32_t *tokens, size_t count,
                                     float *logits, fwm_error *err) {
    return ops_of(session)->step_sequence(session, tokens, count, logits, err);
}

fwm_status fwm_batch_step(fwm_session *const *sessions, const uint32_t *tokens, size_t count,
                          float *logits, fwm_error *err) {
    const fwm_session *first = count && sessions ? sessions[0] : NULL;
    return ops_of(first)->batch_step(sessions, tokens, count, logits, err);
}

fwm_status fwm_session_predict(const fwm_session *session, float *logits, fwm_error *err) {
    fwm__error_clear(err);
    if (!session || !logits)
        return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "fwm_session_predict: %s is NULL",
                          !session ? "session" : "logits");
    const fwm__arch_ops_table *ops = ops_of(session);
    if (!ops->predict)
        return fwm__error(err, FWM_ERR_UNSUPPORTED,
                          "fwm_session_predict: the model's architecture is '%s', whose next-token scores "
                          "the runtime computes only by a step (only 'fwm' and 'lstm' sessions predict "
                          "from their state)",
                          ops->name);
    return ops->predict(session, logits, err);
}

bool fwm_session_has_prediction(const fwm_session *session) {
    if (!session) return false;
    const fwm__arch_ops_table *ops = ops_of(session);
    return ops->has_prediction ? ops->has_prediction(session) : true;
}

bool fwm_session_skip_answer(fwm_session *session) {
    if (!session) return false;
    const fwm__arch_ops_table *ops = ops_of(session);
    return ops->skip_answer ? ops->skip_answer(session) : false;
}

size_t fwm__state_blob_size(const struct fwm_model *model) {
    return fwm__arch_ops(model->arch)->blob_size(model);
}

fwm_status fwm_session_export(const fwm_session *session, void *buffer, size_t capacity,
                              size_t *written, fwm_error *err) {
    return ops_of(session)->export_state(session, buffer, capacity, written, err);
}

fwm_status fwm_session_import(fwm_session *session, const void *blob, size_t size, fwm_error *err) {
    const fwm__arch_ops_table *ops = ops_of(session);
    char arch[FWM_BLOB_ARCH_BYTES + 1];
    uint64_t fingerprint;
    if (session && blob && fwm__blob_architecture(blob, size, arch, &fingerprint) &&
        strcmp(arch, ops->name) != 0) {
        fwm__error_clear(err);
        uint64_t stored, computed;
        if (!fwm__blob_checksum_ok(blob, size, &stored, &computed))
            return fwm__error(err, FWM_ERR_STATE_CORRUPT,
                              "state blob checksum mismatch: stored %016" PRIx64 ", computed %016" PRIx64,
                              stored, computed);
        return fwm__error(err, FWM_ERR_STATE_MODEL_MISMATCH,
                          "state blob holds a session of architecture '%s' (model %016" PRIx64
                          "), this session's model is of architecture '%s' (model %016" PRIx64 ")",
                          arch, fingerprint, ops->name, session->model->fingerprint);
    }
    return ops->import_state(session, blob, size, err);
}

/* ---- what every blob version shares -------------------------------------------------------------- */

size_t fwm__blob_first_non_finite(const unsigned char *p, size_t n) {
    for (size_t i = 0; i < n; i++) {
        /* exponent bits all ones: infinity or NaN */
        if ((fwm__get_u32(p + 4 * i) & 0x7f800000u) == 0x7f800000u) return i;
    }
    return n;
}

int fwm__blob_architecture(const void *blob, size_t size, char name[FWM_BLOB_ARCH_BYTES + 1],
                           uint64_t *fingerprint) {
    const unsigned char *p = blob;
    if (size < 16 + FWM_BLOB_TRAILER_BYTES || memcmp(p, fwm__blob_magic, 4) != 0) return 0;
    uint32_t version = fwm__get_u32(p + 4);
    *fingerprint = fwm__get_u64(p + 8);
    if (version == 1 || version == 3) { /* the FWM's own, the stacked FWM's */
        memcpy(name, "fwm", 4);
        return 1;
    }
    if (version != FWM_BLOB_V2 || size < FWM_BLOB_V2_HEADER_BYTES + FWM_BLOB_TRAILER_BYTES) return 0;
    size_t n = 0;
    while (n < FWM_BLOB_ARCH_BYTES && p[16 + n]) n++;
    if (n == 0) return 0;
    for (size_t i = 0; i < FWM_BLOB_ARCH_BYTES; i++) {
        unsigned char c = p[16 + i];
        if (i < n ? (c < 0x21 || c > 0x7e) : c != 0) return 0;
    }
    memcpy(name, p + 16, n);
    name[n] = '\0';
    return 1;
}

void fwm__blob_put_v2_header(unsigned char *p, uint64_t fingerprint, const char *arch,
                             uint64_t position) {
    memcpy(p, fwm__blob_magic, 4);
    fwm__put_u32(p + 4, FWM_BLOB_V2);
    fwm__put_u64(p + 8, fingerprint);
    memset(p + 16, 0, FWM_BLOB_ARCH_BYTES);
    size_t n = strlen(arch);
    memcpy(p + 16, arch, n < FWM_BLOB_ARCH_BYTES ? n : FWM_BLOB_ARCH_BYTES);
    fwm__put_u64(p + 24, position);
}

int fwm__blob_checksum_ok(const void *blob, size_t size, uint64_t *stored, uint64_t *computed) {
    const unsigned char *p = blob;
    *stored = fwm__get_u64(p + size - FWM_BLOB_TRAILER_BYTES);
    *computed = fwm__xxh64(p, size - FWM_BLOB_TRAILER_BYTES, 0);
    return *stored == *computed;
}
