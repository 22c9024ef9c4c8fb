/* mnm_state.c - export and import of an MNM session's state: a version-2 blob
 * (state_blob_common.h) whose body is
 *
 *   offset  size       field
 *   32      4   u32    H    the controller's size
 *   36      4   u32    d_k  key length (the memory's first layer reads d_k)
 *   40      4   u32    d_v  value length
 *   44      4   u32    D    the memory's hidden size
 *   48      4   u32    Lm   the memory's layers
 *   52      4   u32    0    reserved
 *   56      4*H  f32   h
 *           4*H  f32   c
 *           4*d_v f32  r
 *           4*M  f32   M^1 .. M^Lm, row-major, in layer order (M floats in all)
 *   end-8   8   u64    XXH64 (seed 0) of every byte before it
 *
 * Total 64 + 4 (2 H + d_v + M) bytes. Import checks, in this order: the minimum size, magic,
 * version, the architecture name, the size the dims imply, the checksum (each
 * FWM_ERR_STATE_CORRUPT); the fingerprint (FWM_ERR_STATE_MODEL_MISMATCH); the dims against the
 * model's and that every float is finite (FWM_ERR_STATE_CORRUPT). Only then is the session
 * overwritten. */
#include <inttypes.h>
#include <string.h>

#include "fwm_error.h"
#include "mnm_runtime.h"
#include "state_blob_common.h"
#include "xxhash64.h"

#define DIMS_OFFSET FWM_BLOB_V2_HEADER_BYTES
#define BODY_OFFSET (FWM_BLOB_V2_HEADER_BYTES + 24u)

size_t fwm__mnm_blob_size(const struct fwm_model *model) {
    return BODY_OFFSET + 4 * fwm__mnm_state_floats(model) + FWM_BLOB_TRAILER_BYTES;
}

fwm_status fwm__mnm_export(const fwm_session *session, void *buffer, size_t capacity,
                           size_t *written, fwm_error *err) {
    fwm__error_clear(err);
    if (!session) return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "fwm_session_export: session is NULL");
    const struct fwm_model *model = session->model;
    const fwm_mnm_model *mm = fwm__mnm_of(model);
    const fwm_mnm_hparams *hp = &mm->hp;
    size_t need = fwm__mnm_blob_size(model);
    if (written) *written = need;
    if (!buffer || capacity < need)
        return fwm__error(err, FWM_ERR_BUFFER_TOO_SMALL, "state blob needs %zu bytes, the buffer holds %zu",
                          need, buffer ? capacity : (size_t)0);
    size_t H = hp->hidden_size, dv = hp->value_length, M = mm->memory_offset[hp->memory_layers];
    unsigned char *p = buffer;
    fwm__blob_put_v2_header(p, model->fingerprint, "mnm", session->position);
    const uint32_t dims[6] = {hp->hidden_size, hp->key_length, hp->value_length, hp->memory_hidden,
                              hp->memory_layers, 0};
    for (int i = 0; i < 6; i++) fwm__put_u32(p + DIMS_OFFSET + 4 * i, dims[i]);
    unsigned char *q = p + BODY_OFFSET;
    fwm__put_floats(q, session->h, H), q += 4 * H;
    fwm__put_floats(q, session->c, H), q += 4 * H;
    fwm__put_floats(q, session->r, dv), q += 4 * dv;
    fwm__put_floats(q, session->F, M);
    fwm__put_u64(p + need - FWM_BLOB_TRAILER_BYTES, fwm__xxh64(p, need - FWM_BLOB_TRAILER_BYTES, 0));
    return FWM_OK;
}

/* The floats a blob's dims imply (2 H + d_v + the memory), or 0 when they are out of range (the
 * size check then refuses the blob). */
static uint64_t implied_floats(const uint32_t dims[6]) {
    uint64_t H = dims[0], dk = dims[1], dv = dims[2], D = dims[3], L = dims[4];
    if (L == 0 || L > FWM_MNM_MAX_MEMORY_LAYERS || dims[5] != 0) return 0;
    /* each factor < 2^32, each product < 2^64; at most 16 layers keep the sum below 2^64 / 2^4 */
    uint64_t first = (L == 1 ? dv : D) * dk, middle = L > 2 ? (L - 2) * (D * D) : 0;
    uint64_t last = L > 1 ? dv * D : 0;
    if (D * D > (UINT64_MAX >> 8) || first > (UINT64_MAX >> 8) || last > (UINT64_MAX >> 8) ||
        middle > (UINT64_MAX >> 8))
        return 0;
    return 2 * H + dv + first + middle + last;
}

fwm_status fwm__mnm_import(fwm_session *session, const void *blob, size_t size, fwm_error *err) {
    fwm__error_clear(err);
    if (!session) return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "fwm_session_import: session is NULL");
    if (!blob) return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "fwm_session_import: blob is NULL");
    const struct fwm_model *model = session->model;
    const fwm_mnm_model *mm = fwm__mnm_of(model);
    const fwm_mnm_hparams *hp = &mm->hp;
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
                          "state blob version is %" PRIu32 ", expected %u (an 'mnm' session's state)",
                          version, FWM_BLOB_V2);
    static const unsigned char arch[FWM_BLOB_ARCH_BYTES] = {'m', 'n', 'm'};
    if (memcmp(p + 16, arch, FWM_BLOB_ARCH_BYTES) != 0)
        return fwm__error(err, FWM_ERR_STATE_CORRUPT, "state blob architecture is not \"mnm\"");
    uint32_t dims[6];
    for (int i = 0; i < 6; i++) dims[i] = fwm__get_u32(p + DIMS_OFFSET + 4 * i);
    uint64_t floats = implied_floats(dims);
    uint64_t expected = floats == 0 || floats > (UINT64_MAX - 128) / 4
                            ? 0
                            : BODY_OFFSET + 4 * floats + FWM_BLOB_TRAILER_BYTES;
    if (expected != (uint64_t)size)
        return fwm__error(err, FWM_ERR_STATE_CORRUPT,
                          "state blob is %zu bytes, its header (H=%" PRIu32 " d_k=%" PRIu32 " d_v=%" PRIu32
                          " D=%" PRIu32 " Lm=%" PRIu32 ") implies %" PRIu64 " bytes",
                          size, dims[0], dims[1], dims[2], dims[3], dims[4], expected);
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
    if (dims[0] != hp->hidden_size || dims[1] != hp->key_length || dims[2] != hp->value_length ||
        dims[3] != hp->memory_hidden || dims[4] != hp->memory_layers)
        return fwm__error(err, FWM_ERR_STATE_CORRUPT,
                          "state blob dims H=%" PRIu32 " d_k=%" PRIu32 " d_v=%" PRIu32 " D=%" PRIu32
                          " Lm=%" PRIu32 " differ from the model's H=%" PRIu32 " d_k=%" PRIu32
                          " d_v=%" PRIu32 " D=%" PRIu32 " Lm=%" PRIu32,
                          dims[0], dims[1], dims[2], dims[3], dims[4], hp->hidden_size, hp->key_length,
                          hp->value_length, hp->memory_hidden, hp->memory_layers);
    size_t H = hp->hidden_size, dv = hp->value_length, M = mm->memory_offset[hp->memory_layers];
    size_t n = 2 * H + dv + M;
    size_t bad = fwm__blob_first_non_finite(p + BODY_OFFSET, n);
    if (bad < n) {
        if (bad < 2 * H)
            return fwm__error(err, FWM_ERR_STATE_CORRUPT, "state blob %s[%zu] is not finite",
                              bad < H ? "h" : "c", bad % H);
        if (bad < 2 * H + dv)
            return fwm__error(err, FWM_ERR_STATE_CORRUPT, "state blob r[%zu] is not finite", bad - 2 * H);
        size_t m = bad - 2 * H - dv, l = 0;
        while (l + 1 < hp->memory_layers && m >= mm->memory_offset[l + 1]) l++;
        return fwm__error(err, FWM_ERR_STATE_CORRUPT, "state blob memory layer %zu element %zu is not finite",
                          l, m - mm->memory_offset[l]);
    }
    session->position = fwm__get_u64(p + 24);
    const unsigned char *q = p + BODY_OFFSET;
    fwm__get_floats(session->h, q, H), q += 4 * H;
    fwm__get_floats(session->c, q, H), q += 4 * H;
    fwm__get_floats(session->r, q, dv), q += 4 * dv;
    fwm__get_floats(session->F, q, M);
    return FWM_OK;
}
