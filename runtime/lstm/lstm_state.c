/* lstm_state.c - export and import of an LSTM session's state: a version-2 blob
 * (state_blob_common.h) whose body is
 *
 *   offset  size       field
 *   32      4   u32    L  layers
 *   36      4   u32    H  hidden size
 *   40      4*L*H f32  h, layer 0 first
 *   40+4LH  4*L*H f32  c, layer 0 first
 *   end-8   8   u64    XXH64 (seed 0) of every byte before it
 *
 * Total 48 + 8 L H bytes. Import checks, in this order: the minimum size, magic, version, the
 * architecture name, the size L and H imply, the checksum (each FWM_ERR_STATE_CORRUPT); the
 * fingerprint (FWM_ERR_STATE_MODEL_MISMATCH); L and H against the model's and that every float is
 * finite (FWM_ERR_STATE_CORRUPT). Only then is the session overwritten. */
#include <inttypes.h>
#include <string.h>

#include "fwm_error.h"
#include "lstm_runtime.h"
#include "state_blob_common.h"
#include "xxhash64.h"

#define BODY_OFFSET (FWM_BLOB_V2_HEADER_BYTES + 8u)

size_t fwm__lstm_blob_size(const struct fwm_model *model) {
    const fwm_lstm_hparams *hp = &fwm__lstm_of(model)->hp;
    return BODY_OFFSET + 8 * (size_t)hp->layer_count * hp->hidden_size + FWM_BLOB_TRAILER_BYTES;
}

fwm_status fwm__lstm_export(const fwm_session *session, void *buffer, size_t capacity,
                            size_t *written, fwm_error *err) {
    fwm__error_clear(err);
    if (!session) return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "fwm_session_export: session is NULL");
    const struct fwm_model *model = session->model;
    const fwm_lstm_hparams *hp = &fwm__lstm_of(model)->hp;
    size_t need = fwm__lstm_blob_size(model);
    if (written) *written = need;
    if (!buffer || capacity < need)
        return fwm__error(err, FWM_ERR_BUFFER_TOO_SMALL, "state blob needs %zu bytes, the buffer holds %zu",
                          need, buffer ? capacity : (size_t)0);
    size_t LH = (size_t)hp->layer_count * hp->hidden_size;
    unsigned char *p = buffer;
    fwm__blob_put_v2_header(p, model->fingerprint, "lstm", session->position);
    fwm__put_u32(p + 32, hp->layer_count);
    fwm__put_u32(p + 36, hp->hidden_size);
    fwm__put_floats(p + BODY_OFFSET, session->h, LH);
    fwm__put_floats(p + BODY_OFFSET + 4 * LH, session->c, LH);
    fwm__put_u64(p + need - FWM_BLOB_TRAILER_BYTES, fwm__xxh64(p, need - FWM_BLOB_TRAILER_BYTES, 0));
    return FWM_OK;
}

fwm_status fwm__lstm_import(fwm_session *session, const void *blob, size_t size, fwm_error *err) {
    fwm__error_clear(err);
    if (!session) return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "fwm_session_import: session is NULL");
    if (!blob) return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "fwm_session_import: blob is NULL");
    const struct fwm_model *model = session->model;
    const fwm_lstm_hparams *hp = &fwm__lstm_of(model)->hp;
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
                          "state blob version is %" PRIu32 ", expected %u (an 'lstm' session's state)",
                          version, FWM_BLOB_V2);
    static const unsigned char arch[FWM_BLOB_ARCH_BYTES] = {'l', 's', 't', 'm'};
    if (memcmp(p + 16, arch, FWM_BLOB_ARCH_BYTES) != 0)
        return fwm__error(err, FWM_ERR_STATE_CORRUPT, "state blob architecture is not \"lstm\"");
    uint32_t L = fwm__get_u32(p + 32), H = fwm__get_u32(p + 36);
    /* 2 L H floats, checked against overflow (L H alone fits: each factor < 2^32) */
    uint64_t lh = (uint64_t)L * H;
    int overflow = lh > (UINT64_MAX - 64) / 8;
    uint64_t expected = overflow ? 0 : BODY_OFFSET + 8 * lh + FWM_BLOB_TRAILER_BYTES;
    if (overflow || expected != (uint64_t)size)
        return fwm__error(err, FWM_ERR_STATE_CORRUPT,
                          "state blob is %zu bytes, its header (L=%" PRIu32 " H=%" PRIu32
                          ") implies %" PRIu64 " bytes",
                          size, L, H, expected);
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
    if (L != hp->layer_count || H != hp->hidden_size)
        return fwm__error(err, FWM_ERR_STATE_CORRUPT,
                          "state blob dims L=%" PRIu32 " H=%" PRIu32 " differ from the model's L=%" PRIu32
                          " H=%" PRIu32,
                          L, H, hp->layer_count, hp->hidden_size);
    size_t LH = (size_t)L * H;
    size_t bad = fwm__blob_first_non_finite(p + BODY_OFFSET, 2 * LH);
    if (bad < 2 * LH)
        return fwm__error(err, FWM_ERR_STATE_CORRUPT, "state blob %s[%zu][%zu] is not finite",
                          bad < LH ? "h" : "c", (bad % LH) / H, (bad % LH) % H);
    session->position = fwm__get_u64(p + 24);
    fwm__get_floats(session->h, p + BODY_OFFSET, LH);
    fwm__get_floats(session->c, p + BODY_OFFSET + 4 * LH, LH);
    return FWM_OK;
}
