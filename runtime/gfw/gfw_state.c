/* gfw_state.c - export and import of a GFW session's state: a version-2 blob
 * (state_blob_common.h) whose body is
 *
 *   offset  size       field
 *   32      4   u32    m    the fast net's size
 *   36      4   u32    N    the slow net's state size
 *   40      4   u32    E    the embedding (F1 has m + E + 1 columns)
 *   44      4   u32    0    reserved
 *   48      4*m  f32   h_F
 *           4*N  f32   h_S
 *           4*m(m+E+1) f32  F1, row-major
 *           4*m(m+1)   f32  F2, row-major
 *   end-8   8   u64    XXH64 (seed 0) of every byte before it
 *
 * Total 56 + 4 (m + N + m (2m + E + 2)) bytes. Import checks, in this order: the minimum size,
 * magic, version, the architecture name, the size the dims imply, the checksum (each
 * FWM_ERR_STATE_CORRUPT); the fingerprint (FWM_ERR_STATE_MODEL_MISMATCH); the dims against the
 * model's and that every float is finite (FWM_ERR_STATE_CORRUPT). Only then is the session
 * overwritten. */
#include <inttypes.h>
#include <string.h>

#include "fwm_error.h"
#include "gfw_runtime.h"
#include "state_blob_common.h"
#include "xxhash64.h"

#define DIMS_OFFSET FWM_BLOB_V2_HEADER_BYTES
#define BODY_OFFSET (FWM_BLOB_V2_HEADER_BYTES + 16u)

size_t fwm__gfw_blob_size(const struct fwm_model *model) {
    return BODY_OFFSET + 4 * fwm__gfw_state_floats(model) + FWM_BLOB_TRAILER_BYTES;
}

fwm_status fwm__gfw_export(const fwm_session *session, void *buffer, size_t capacity,
                           size_t *written, fwm_error *err) {
    fwm__error_clear(err);
    if (!session) return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "fwm_session_export: session is NULL");
    const struct fwm_model *model = session->model;
    const fwm_gfw_model *gm = fwm__gfw_of(model);
    const fwm_gfw_hparams *hp = &gm->hp;
    size_t need = fwm__gfw_blob_size(model);
    if (written) *written = need;
    if (!buffer || capacity < need)
        return fwm__error(err, FWM_ERR_BUFFER_TOO_SMALL, "state blob needs %zu bytes, the buffer holds %zu",
                          need, buffer ? capacity : (size_t)0);
    size_t m = hp->fast_hidden, N = hp->slow_hidden;
    size_t n1 = m * (size_t)fwm_gfw_f1_cols(hp), n2 = m * (size_t)fwm_gfw_f2_cols(hp);
    unsigned char *p = buffer;
    fwm__blob_put_v2_header(p, model->fingerprint, "gfw", session->position);
    const uint32_t dims[4] = {hp->fast_hidden, hp->slow_hidden, hp->embedding_length, 0};
    for (int i = 0; i < 4; i++) fwm__put_u32(p + DIMS_OFFSET + 4 * i, dims[i]);
    unsigned char *q = p + BODY_OFFSET;
    fwm__put_floats(q, session->h, m), q += 4 * m;
    fwm__put_floats(q, session->c, N), q += 4 * N;
    fwm__put_floats(q, session->F, n1), q += 4 * n1;
    fwm__put_floats(q, session->F + gm->f2_offset, n2);
    fwm__put_u64(p + need - FWM_BLOB_TRAILER_BYTES, fwm__xxh64(p, need - FWM_BLOB_TRAILER_BYTES, 0));
    return FWM_OK;
}

/* The floats a blob's dims imply, or 0 when they are out of range (the size check then refuses the
 * blob). Each dim below 2^32, so m (2m + E + 2) < 2^66 could overflow: bound m first. */
static uint64_t implied_floats(const uint32_t dims[4]) {
    uint64_t m = dims[0], N = dims[1], E = dims[2];
    if (m == 0 || dims[3] != 0 || m > FWM_MAX_DIM || E > FWM_MAX_DIM) return 0;
    return m + N + m * (2 * m + E + 2);
}

fwm_status fwm__gfw_import(fwm_session *session, const void *blob, size_t size, fwm_error *err) {
    fwm__error_clear(err);
    if (!session) return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "fwm_session_import: session is NULL");
    if (!blob) return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "fwm_session_import: blob is NULL");
    const struct fwm_model *model = session->model;
    const fwm_gfw_model *gm = fwm__gfw_of(model);
    const fwm_gfw_hparams *hp = &gm->hp;
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
                          "state blob version is %" PRIu32 ", expected %u (a 'gfw' session's state)",
                          version, FWM_BLOB_V2);
    static const unsigned char arch[FWM_BLOB_ARCH_BYTES] = {'g', 'f', 'w'};
    if (memcmp(p + 16, arch, FWM_BLOB_ARCH_BYTES) != 0)
        return fwm__error(err, FWM_ERR_STATE_CORRUPT, "state blob architecture is not \"gfw\"");
    uint32_t dims[4];
    for (int i = 0; i < 4; i++) dims[i] = fwm__get_u32(p + DIMS_OFFSET + 4 * i);
    uint64_t floats = implied_floats(dims);
    uint64_t expected = floats == 0 || floats > (UINT64_MAX - 128) / 4
                            ? 0
                            : BODY_OFFSET + 4 * floats + FWM_BLOB_TRAILER_BYTES;
    if (expected != (uint64_t)size)
        return fwm__error(err, FWM_ERR_STATE_CORRUPT,
                          "state blob is %zu bytes, its header (m=%" PRIu32 " N=%" PRIu32 " E=%" PRIu32
                          ") implies %" PRIu64 " bytes",
                          size, dims[0], dims[1], dims[2], expected);
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
    if (dims[0] != hp->fast_hidden || dims[1] != hp->slow_hidden || dims[2] != hp->embedding_length)
        return fwm__error(err, FWM_ERR_STATE_CORRUPT,
                          "state blob dims m=%" PRIu32 " N=%" PRIu32 " E=%" PRIu32
                          " differ from the model's m=%" PRIu32 " N=%" PRIu32 " E=%" PRIu32,
                          dims[0], dims[1], dims[2], hp->fast_hidden, hp->slow_hidden, hp->embedding_length);
    size_t m = hp->fast_hidden, N = hp->slow_hidden;
    size_t n1 = m * (size_t)fwm_gfw_f1_cols(hp), n2 = m * (size_t)fwm_gfw_f2_cols(hp);
    size_t n = m + N + n1 + n2;
    size_t bad = fwm__blob_first_non_finite(p + BODY_OFFSET, n);
    if (bad < n) {
        if (bad < m) return fwm__error(err, FWM_ERR_STATE_CORRUPT, "state blob h_F[%zu] is not finite", bad);
        if (bad < m + N)
            return fwm__error(err, FWM_ERR_STATE_CORRUPT, "state blob h_S[%zu] is not finite", bad - m);
        size_t k = bad - m - N;
        return fwm__error(err, FWM_ERR_STATE_CORRUPT, "state blob %s element %zu is not finite",
                          k < n1 ? "F1" : "F2", k < n1 ? k : k - n1);
    }
    session->position = fwm__get_u64(p + 24);
    const unsigned char *q = p + BODY_OFFSET;
    fwm__get_floats(session->h, q, m), q += 4 * m;
    fwm__get_floats(session->c, q, N), q += 4 * N;
    fwm__get_floats(session->F, q, n1), q += 4 * n1;
    fwm__get_floats(session->F + gm->f2_offset, q, n2);
    return FWM_OK;
}
