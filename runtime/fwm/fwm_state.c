/* state_blob.c - export and import of an FWM session's state as a versioned, checksummed blob (the
 * FWM's ops; dispatch.c refuses another architecture's blob before it comes here).
 *
 * Blob layout, version 1 (all integers and floats little-endian, no padding):
 *
 *   offset  size        field
 *   0       4           magic "FWMS"
 *   4       4   u32     version = 1
 *   8       8   u64     model fingerprint (fwm_model_info.fingerprint)
 *   16      4   u32     H  hidden size
 *   20      4   u32     S  \
 *   24      4   u32     R   } fast-weight dims
 *   28      4   u32     T  /
 *   32      8   u64     position (tokens stepped)
 *   40      4*H f32     h
 *   40+4H   4*H f32     c
 *   40+8H   4*SRT f32   F, [S][R][T], T fastest, with the session's pending write applied
 *                       (session_internal.h), i.e. the fast weights the model means
 *   end-8   8   u64     XXH64 (seed 0) of every byte before it
 *
 * Total: 48 + 4 * (2H + S*R*T) bytes (fwm__fwm_blob_size).
 *
 * Version 3, a stacked FWM's (fwm.block_count L > 1; an FWM with L = 1 always writes version 1):
 * the same header with version = 3, then
 *   40      4   u32     L  the model's layer count (2 .. 8)
 *   44      4   u32     0  (reserved)
 *   48      4*H f32     h, c, F as in version 1 (the FWM's own LSTM and memory)
 *   ...     4*(L-1)H    the lower layers' h, layer 0 first
 *   ...     4*(L-1)H    their c
 *   end-8   8   u64     XXH64 (seed 0) of every byte before it
 * Total: 56 + 4 * (2LH + S*R*T) bytes.
 *
 * Import checks, in this order: the minimum size, magic, version (1 or 3), for version 3 the layer
 * count's range, the size the header's dims imply (overflow-checked), the checksum (each
 * FWM_ERR_STATE_CORRUPT); the fingerprint (FWM_ERR_STATE_MODEL_MISMATCH); the dims against the
 * model's (a version-1 blob has L = 1) and that every float is finite (FWM_ERR_STATE_CORRUPT). Only
 * then is the session overwritten.
 */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "fwm_error.h"
#include "fwm_ops.h"
#include "kernels.h"
#include "session_internal.h"
#include "state_blob_common.h"
#include "xxhash64.h"

#define BLOB_VERSION 1u
#define BLOB_VERSION_STACKED 3u
#define BLOB_HEADER_BYTES 40u
#define BLOB_STACKED_HEADER_BYTES 48u
#define BLOB_TRAILER_BYTES 8u

static size_t header_bytes_of(const fwm_hparams *hp) {
    return fwm__lower_blocks(hp) ? BLOB_STACKED_HEADER_BYTES : BLOB_HEADER_BYTES;
}

size_t fwm__fwm_blob_size(const struct fwm_model *model) {
    const fwm_hparams *hp = &model->hp;
    size_t floats = 2 * (size_t)hp->hidden_size * (1 + fwm__lower_blocks(hp)) +
                    (size_t)hp->memory_s * hp->memory_r * hp->memory_t;
    return header_bytes_of(hp) + floats * sizeof(float) + BLOB_TRAILER_BYTES;
}

fwm_status fwm__fwm_export(const fwm_session *session, void *buffer, size_t capacity,
                          size_t *written, fwm_error *err) {
    fwm__error_clear(err);
    if (!session) return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "fwm_session_export: session is NULL");
    const struct fwm_model *model = session->model;
    const fwm_hparams *hp = &model->hp;
    size_t need = fwm__fwm_blob_size(model);
    if (written) *written = need;
    if (!buffer || capacity < need)
        return fwm__error(err, FWM_ERR_BUFFER_TOO_SMALL,
                          "state blob needs %zu bytes, the buffer holds %zu", need,
                          buffer ? capacity : (size_t)0);
    size_t H = hp->hidden_size, SRT = (size_t)hp->memory_s * hp->memory_r * hp->memory_t;
    unsigned char *p = buffer;
    const size_t lower = fwm__lower_blocks(hp);
    memcpy(p, fwm__blob_magic, 4);
    fwm__put_u32(p + 4, lower ? BLOB_VERSION_STACKED : BLOB_VERSION);
    fwm__put_u64(p + 8, model->fingerprint);
    fwm__put_u32(p + 16, hp->hidden_size);
    fwm__put_u32(p + 20, hp->memory_s);
    fwm__put_u32(p + 24, hp->memory_r);
    fwm__put_u32(p + 28, hp->memory_t);
    fwm__put_u64(p + 32, session->position);
    if (lower) {
        fwm__put_u32(p + 40, hp->block_count);
        fwm__put_u32(p + 44, 0);
        /* the lower layers' h and c after F */
        unsigned char *o = p + BLOB_STACKED_HEADER_BYTES + 4 * (2 * H + SRT);
        size_t stride = fwm__aligned_floats(H);
        for (size_t l = 0; l < lower; l++)
            fwm__put_floats(o + 4 * l * H, session->lower_h + l * stride, H);
        o += 4 * lower * H;
        for (size_t l = 0; l < lower; l++)
            fwm__put_floats(o + 4 * l * H, session->lower_c + l * stride, H);
    }
    unsigned char *q = p + header_bytes_of(hp);
    fwm__put_floats(q, session->h, H);
    fwm__put_floats(q + 4 * H, session->c, H);
    if (session->has_pending) {
        /* F as the model means it: the pending write applied, element by element exactly as the
         * next step's pass over F would (so an importing session continues bit-identically) */
        const fwm__fw_pending p = {session->pending_k1, session->pending_k2, session->pending_d,
                                   session->pending_s};
        size_t R = hp->memory_r, T = hp->memory_t;
        unsigned char *out = q + 8 * H;
        for (size_t i = 0; i < hp->memory_s; i++) {
            for (size_t j = 0; j < R; j++) {
                float kk = p.k1[i] * p.k2[j];
                const float *row = session->F + (i * R + j) * T;
                for (size_t t = 0; t < T; t++, out += 4) {
                    float f = fwm__fw_apply(row[t], kk, p.d[t], p.s);
                    fwm__put_floats(out, &f, 1);
                }
            }
        }
    } else {
        fwm__put_floats(q + 8 * H, session->F, SRT);
    }
    fwm__put_u64(p + need - BLOB_TRAILER_BYTES, fwm__xxh64(p, need - BLOB_TRAILER_BYTES, 0));
    return FWM_OK;
}

fwm_status fwm__fwm_import(fwm_session *session, const void *blob, size_t size, fwm_error *err) {
    fwm__error_clear(err);
    if (!session) return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "fwm_session_import: session is NULL");
    if (!blob) return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "fwm_session_import: blob is NULL");
    const struct fwm_model *model = session->model;
    const fwm_hparams *hp = &model->hp;
    const unsigned char *p = blob;

    if (size < BLOB_HEADER_BYTES + BLOB_TRAILER_BYTES)
        return fwm__error(err, FWM_ERR_STATE_CORRUPT,
                          "state blob is %zu bytes, shorter than its %u-byte header and trailer", size,
                          BLOB_HEADER_BYTES + BLOB_TRAILER_BYTES);
    if (memcmp(p, fwm__blob_magic, 4) != 0)
        return fwm__error(err, FWM_ERR_STATE_CORRUPT,
                          "state blob magic is %02x %02x %02x %02x, expected \"FWMS\"", p[0], p[1],
                          p[2], p[3]);
    uint32_t version = fwm__get_u32(p + 4);
    if (version != BLOB_VERSION && version != BLOB_VERSION_STACKED)
        return fwm__error(err, FWM_ERR_STATE_CORRUPT,
                          "state blob version is %" PRIu32 ", expected %u (or %u, a stacked FWM's)",
                          version, BLOB_VERSION, BLOB_VERSION_STACKED);
    uint32_t L = 1;
    size_t header = BLOB_HEADER_BYTES;
    if (version == BLOB_VERSION_STACKED) {
        if (size < BLOB_STACKED_HEADER_BYTES + BLOB_TRAILER_BYTES)
            return fwm__error(err, FWM_ERR_STATE_CORRUPT,
                              "state blob is %zu bytes, shorter than its %u-byte header and "
                              "trailer",
                              size, BLOB_STACKED_HEADER_BYTES + BLOB_TRAILER_BYTES);
        L = fwm__get_u32(p + 40);
        if (L < 2 || L > FWM_MAX_BLOCKS)
            return fwm__error(err, FWM_ERR_STATE_CORRUPT,
                              "state blob layer count L=%" PRIu32 " is outside 2 .. %u", L,
                              FWM_MAX_BLOCKS);
        header = BLOB_STACKED_HEADER_BYTES;
    }
    uint32_t H = fwm__get_u32(p + 16), S = fwm__get_u32(p + 20), R = fwm__get_u32(p + 24), T = fwm__get_u32(p + 28);
    /* 2H + S*R*T floats, checked against overflow: each factor < 2^32, so compute in steps. */
    uint64_t srt = (uint64_t)S * R;
    uint64_t floats = 0;
    int overflow = (T != 0 && srt > UINT64_MAX / T);
    if (!overflow) {
        srt *= T;
        floats = srt + 2 * (uint64_t)L * H;
        overflow = floats < srt || floats > (UINT64_MAX - 64) / 4;
    }
    uint64_t expected = overflow ? 0 : header + BLOB_TRAILER_BYTES + 4 * floats;
    if (overflow || expected != (uint64_t)size)
        return fwm__error(err, FWM_ERR_STATE_CORRUPT,
                          "state blob is %zu bytes, its header (H=%" PRIu32 " S=%" PRIu32 " R=%" PRIu32
                          " T=%" PRIu32 ") implies %" PRIu64 " bytes",
                          size, H, S, R, T, expected);
    uint64_t stored_sum = fwm__get_u64(p + size - BLOB_TRAILER_BYTES);
    uint64_t actual_sum = fwm__xxh64(p, size - BLOB_TRAILER_BYTES, 0);
    if (stored_sum != actual_sum)
        return fwm__error(err, FWM_ERR_STATE_CORRUPT,
                          "state blob checksum mismatch: stored %016" PRIx64 ", computed %016" PRIx64,
                          stored_sum, actual_sum);
    uint64_t fingerprint = fwm__get_u64(p + 8);
    if (fingerprint != model->fingerprint)
        return fwm__error(err, FWM_ERR_STATE_MODEL_MISMATCH,
                          "state blob belongs to model %016" PRIx64 ", this session's model is %016" PRIx64,
                          fingerprint, model->fingerprint);
    uint32_t model_L = hp->block_count > 1 ? hp->block_count : 1;
    if (L != model_L)
        return fwm__error(err, FWM_ERR_STATE_CORRUPT,
                          "state blob layer count L=%" PRIu32
                          " differs from the model's L=%" PRIu32,
                          L, model_L);
    if (H != hp->hidden_size || S != hp->memory_s || R != hp->memory_r || T != hp->memory_t)
        return fwm__error(err, FWM_ERR_STATE_CORRUPT,
                          "state blob dims H=%" PRIu32 " S=%" PRIu32 " R=%" PRIu32 " T=%" PRIu32
                          " differ from the model's H=%" PRIu32 " S=%" PRIu32 " R=%" PRIu32 " T=%" PRIu32,
                          H, S, R, T, hp->hidden_size, hp->memory_s, hp->memory_r, hp->memory_t);
    const unsigned char *q = p + header;
    size_t bad = fwm__blob_first_non_finite(q, (size_t)floats);
    if (bad < floats) {
        size_t own = 2 * (size_t)H + (size_t)srt, lower = (size_t)(L - 1) * H;
        const char *array = bad < H                ? "h"
                            : bad < 2 * (size_t)H  ? "c"
                            : bad < own            ? "F"
                            : bad < own + lower    ? "lower h"
                                                   : "lower c";
        size_t index = bad < H                ? bad
                       : bad < 2 * (size_t)H  ? bad - H
                       : bad < own            ? bad - 2 * (size_t)H
                       : bad < own + lower    ? bad - own
                                              : bad - own - lower;
        return fwm__error(err, FWM_ERR_STATE_CORRUPT, "state blob %s[%zu] is not finite", array, index);
    }
    session->position = fwm__get_u64(p + 32);
    session->has_pending = false;
    session->last_token = FWM_NO_TOKEN; /* not in the blob */
    session->pending_s = 1.0f;
    fwm__get_floats(session->h, q, H);
    fwm__get_floats(session->c, q + 4 * (size_t)H, H);
    fwm__get_floats(session->F, q + 8 * (size_t)H, (size_t)srt);
    const unsigned char *o = q + 4 * (2 * (size_t)H + (size_t)srt);
    size_t stride = fwm__aligned_floats(H);
    for (size_t l = 0; l + 1 < L; l++)
        fwm__get_floats(session->lower_h + l * stride, o + 4 * l * H, H);
    o += 4 * (size_t)(L - 1) * H;
    for (size_t l = 0; l + 1 < L; l++)
        fwm__get_floats(session->lower_c + l * stride, o + 4 * l * H, H);
    return FWM_OK;
}
