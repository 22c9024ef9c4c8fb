/* stm_state.c - export and import of an STM session's state: a version-2 blob
 * (state_blob_common.h) whose body is
 *
 *   offset  size         field
 *   32      4    u32     d    the memory size
 *   36      4    u32     n_q  the relational memory's slots
 *   40      4    u32     input mode (0 sentence, 1 word)
 *   44      4    u32     P    the sentence buffer's capacity (0 in word mode)
 *   48      8            0    reserved
 *   56      4*d^2 f32    Mi, row-major
 *           4*n_q d^2    Mr, [n_q d, d] row-major (slot s's row e at s d + e)
 *           4*P  u32     sentence mode: the buffered word ids, unused entries 0
 *           4    u32     sentence mode: the buffer's length (at most P)
 *           4    u32     sentence mode: the answer slot (0 closed, 1 open)
 *   end-8   8    u64     XXH64 (seed 0) of every byte before it
 *
 * Total 64 + 4 d^2 (1 + n_q) (+ 4 (P + 2)) bytes. Import checks, in this order: the minimum size,
 * magic, version, the architecture name, the size the dims imply, the checksum (each
 * FWM_ERR_STATE_CORRUPT); the fingerprint (FWM_ERR_STATE_MODEL_MISMATCH); the dims against the
 * model's, every float finite, and the buffer consistent: length at most P, words below V, unused
 * entries 0, the slot 0 or 1 and open only with an empty buffer (FWM_ERR_STATE_CORRUPT). Only then
 * is the session overwritten. */
#include <inttypes.h>
#include <string.h>

#include "fwm_error.h"
#include "state_blob_common.h"
#include "stm_runtime.h"
#include "xxhash64.h"

#define DIMS_OFFSET FWM_BLOB_V2_HEADER_BYTES
#define BODY_OFFSET (FWM_BLOB_V2_HEADER_BYTES + 24u)

size_t fwm__stm_blob_size(const struct fwm_model *model) {
    const fwm_stm_hparams *hp = &fwm__stm_of(model)->hp;
    return BODY_OFFSET + (size_t)fwm_stm_state_bytes(hp) + FWM_BLOB_TRAILER_BYTES;
}

fwm_status fwm__stm_export(const fwm_session *session, void *buffer, size_t capacity,
                           size_t *written, fwm_error *err) {
    fwm__error_clear(err);
    if (!session) return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "fwm_session_export: session is NULL");
    const struct fwm_model *model = session->model;
    const fwm_stm_model *sm = fwm__stm_of(model);
    const fwm_stm_hparams *hp = &sm->hp;
    size_t need = fwm__stm_blob_size(model);
    if (written) *written = need;
    if (!buffer || capacity < need)
        return fwm__error(err, FWM_ERR_BUFFER_TOO_SMALL, "state blob needs %zu bytes, the buffer holds %zu",
                          need, buffer ? capacity : (size_t)0);
    unsigned char *p = buffer;
    fwm__blob_put_v2_header(p, model->fingerprint, "stm", session->position);
    const uint32_t dims[6] = {hp->memory_size, hp->query_count, hp->input_mode,
                              sm->sentence ? hp->sentence_length : 0, 0, 0};
    for (int i = 0; i < 6; i++) fwm__put_u32(p + DIMS_OFFSET + 4 * i, dims[i]);
    size_t mi = (size_t)fwm_stm_item_floats(hp), mr = (size_t)fwm_stm_relational_floats(hp);
    unsigned char *q = p + BODY_OFFSET;
    fwm__put_floats(q, session->F, mi), q += 4 * mi;
    fwm__put_floats(q, session->Mr, mr), q += 4 * mr;
    size_t nw = (size_t)fwm_stm_state_words(hp);
    for (size_t i = 0; i < nw; i++) fwm__put_u32(q + 4 * i, session->words[i]);
    fwm__put_u64(p + need - FWM_BLOB_TRAILER_BYTES, fwm__xxh64(p, need - FWM_BLOB_TRAILER_BYTES, 0));
    return FWM_OK;
}

/* The bytes of state the dims imply, or 0 when they are out of range (the size check then refuses
 * the blob). */
static uint64_t implied_bytes(const uint32_t dims[6]) {
    uint64_t d = dims[0], nq = dims[1], mode = dims[2], P = dims[3];
    if (d == 0 || d > FWM_MAX_DIM || nq == 0 || nq > FWM_STM_MAX_QUERIES || mode > 1 || dims[4] || dims[5])
        return 0;
    if ((mode == FWM_STM_INPUT_SENTENCE) != (P != 0) || P > FWM_STM_MAX_SENTENCE_LENGTH) return 0;
    uint64_t floats = d * d * (1 + nq); /* < 2^41 */
    return 4 * (floats + (P ? P + 2 : 0));
}

fwm_status fwm__stm_import(fwm_session *session, const void *blob, size_t size, fwm_error *err) {
    fwm__error_clear(err);
    if (!session) return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "fwm_session_import: session is NULL");
    if (!blob) return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "fwm_session_import: blob is NULL");
    const struct fwm_model *model = session->model;
    const fwm_stm_model *sm = fwm__stm_of(model);
    const fwm_stm_hparams *hp = &sm->hp;
    const unsigned char *p = blob;
    if (size < BODY_OFFSET + FWM_BLOB_TRAILER_BYTES)
        return fwm__error(err, FWM_ERR_STATE_CORRUPT,
                          "state blob is %zu bytes, shorter than its %u-byte header and trailer", size,
                          BODY_OFFSET + FWM_BLOB_TRAILER_BYTES);
    if (memcmp(p, fwm__blob_magic, 4) != 0)
        return fwm__error(err, FWM_ERR_STATE_CORRUPT,
                          "state blob magic is %02x %02x %02x %02x, expected \"FWMS\"", p[0], p[1], p[2],
                          p[3]);
    uint32_t version = fwm__get_u32(p + 4);
    if (version != FWM_BLOB_V2)
        return fwm__error(err, FWM_ERR_STATE_CORRUPT,
                          "state blob version is %" PRIu32 ", expected %u (an 'stm' session's state)",
                          version, FWM_BLOB_V2);
    static const unsigned char arch[FWM_BLOB_ARCH_BYTES] = {'s', 't', 'm'};
    if (memcmp(p + 16, arch, FWM_BLOB_ARCH_BYTES) != 0)
        return fwm__error(err, FWM_ERR_STATE_CORRUPT, "state blob architecture is not \"stm\"");
    uint32_t dims[6];
    for (int i = 0; i < 6; i++) dims[i] = fwm__get_u32(p + DIMS_OFFSET + 4 * i);
    uint64_t body = implied_bytes(dims);
    uint64_t expected = body == 0 ? 0 : BODY_OFFSET + body + FWM_BLOB_TRAILER_BYTES;
    if (expected != (uint64_t)size)
        return fwm__error(err, FWM_ERR_STATE_CORRUPT,
                          "state blob is %zu bytes, its header (d=%" PRIu32 " n_q=%" PRIu32 " mode=%" PRIu32
                          " P=%" PRIu32 ") implies %" PRIu64 " bytes",
                          size, dims[0], dims[1], dims[2], dims[3], expected);
    uint64_t stored, computed;
    if (!fwm__blob_checksum_ok(blob, size, &stored, &computed))
        return fwm__error(err, FWM_ERR_STATE_CORRUPT,
                          "state blob checksum mismatch: stored %016" PRIx64 ", computed %016" PRIx64,
                          stored, computed);
    uint64_t fingerprint = fwm__get_u64(p + 8);
    if (fingerprint != model->fingerprint)
        return fwm__error(err, FWM_ERR_STATE_MODEL_MISMATCH,
                          "state blob belongs to model %016" PRIx64 ", this session's model is %016" PRIx64,
                          fingerprint, model->fingerprint);
    uint32_t P = sm->sentence ? hp->sentence_length : 0;
    if (dims[0] != hp->memory_size || dims[1] != hp->query_count || dims[2] != hp->input_mode || dims[3] != P)
        return fwm__error(err, FWM_ERR_STATE_CORRUPT,
                          "state blob dims d=%" PRIu32 " n_q=%" PRIu32 " mode=%" PRIu32 " P=%" PRIu32
                          " differ from the model's d=%" PRIu32 " n_q=%" PRIu32 " mode=%" PRIu32 " P=%" PRIu32,
                          dims[0], dims[1], dims[2], dims[3], hp->memory_size, hp->query_count,
                          hp->input_mode, P);
    size_t mi = (size_t)fwm_stm_item_floats(hp), mr = (size_t)fwm_stm_relational_floats(hp);
    size_t bad = fwm__blob_first_non_finite(p + BODY_OFFSET, mi + mr);
    if (bad < mi + mr) {
        if (bad < mi)
            return fwm__error(err, FWM_ERR_STATE_CORRUPT, "state blob Mi[%zu][%zu] is not finite",
                              bad / hp->memory_size, bad % hp->memory_size);
        bad -= mi;
        return fwm__error(err, FWM_ERR_STATE_CORRUPT, "state blob Mr[%zu][%zu][%zu] is not finite",
                          bad / mi, bad % mi / hp->memory_size, bad % hp->memory_size);
    }
    const unsigned char *w = p + BODY_OFFSET + 4 * (mi + mr);
    if (P) {
        uint32_t length = fwm__get_u32(w + 4 * P), slot = fwm__get_u32(w + 4 * (P + 1));
        if (length > P)
            return fwm__error(err, FWM_ERR_STATE_CORRUPT,
                              "state blob sentence buffer holds %" PRIu32 " words, more than P = %" PRIu32,
                              length, P);
        if (slot > 1 || (slot && length))
            return fwm__error(err, FWM_ERR_STATE_CORRUPT,
                              "state blob answer slot is %" PRIu32 " with %" PRIu32
                              " buffered words (expected 0, or 1 with an empty buffer)",
                              slot, length);
        for (uint32_t i = 0; i < P; i++) {
            uint32_t id = fwm__get_u32(w + 4 * i);
            if (i < length ? id >= hp->vocab_size : id != 0)
                return fwm__error(err, FWM_ERR_STATE_CORRUPT,
                                  "state blob sentence buffer word %" PRIu32 " is %" PRIu32 " (%s)", i, id,
                                  i < length ? "not a token id" : "past the buffer's length, expected 0");
        }
    }
    session->position = fwm__get_u64(p + 24);
    const unsigned char *q = p + BODY_OFFSET;
    fwm__get_floats(session->F, q, mi), q += 4 * mi;
    fwm__get_floats(session->Mr, q, mr);
    for (uint32_t i = 0; i < (P ? P + 2 : 0); i++) session->words[i] = fwm__get_u32(w + 4 * i);
    return FWM_OK;
}
