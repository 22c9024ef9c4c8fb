/* state_blob.c - export and import of a session's state as a versioned, checksummed blob.
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
 * Total: 48 + 4 * (2H + S*R*T) bytes (fwm__state_blob_size). Import checks, in this order: the
 * minimum size, magic, version, the size the header's dims imply (overflow-checked), the checksum
 * (each FWM_ERR_STATE_CORRUPT); the fingerprint (FWM_ERR_STATE_MODEL_MISMATCH); the dims against
 * the model's and that every float is finite (FWM_ERR_STATE_CORRUPT). Only then is the session
 * overwritten.
 */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "fwm_error.h"
#include "kernels.h"
#include "session_internal.h"
#include "xxhash64.h"

#define BLOB_VERSION 1u
#define BLOB_HEADER_BYTES 40u
#define BLOB_TRAILER_BYTES 8u

static const unsigned char blob_magic[4] = {'F', 'W', 'M', 'S'};

size_t fwm__state_blob_size(const struct fwm_model *model) {
    const fwm_hparams *hp = &model->hp;
    size_t floats = 2 * (size_t)hp->hidden_size + (size_t)hp->memory_s * hp->memory_r * hp->memory_t;
    return BLOB_HEADER_BYTES + floats * sizeof(float) + BLOB_TRAILER_BYTES;
}

static void put_u32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static void put_u64(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static uint32_t get_u32(const unsigned char *p) {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) v |= (uint32_t)p[i] << (8 * i);
    return v;
}
static uint64_t get_u64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
static void put_floats(unsigned char *p, const float *x, size_t n) { memcpy(p, x, n * sizeof *x); }
static void get_floats(float *x, const unsigned char *p, size_t n) { memcpy(x, p, n * sizeof *x); }
#else
static void put_floats(unsigned char *p, const float *x, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint32_t bits;
        memcpy(&bits, &x[i], 4);
        put_u32(p + 4 * i, bits);
    }
}
static void get_floats(float *x, const unsigned char *p, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint32_t bits = get_u32(p + 4 * i);
        memcpy(&x[i], &bits, 4);
    }
}
#endif

fwm_status fwm_session_export(const fwm_session *session, void *buffer, size_t capacity,
                              size_t *written, fwm_error *err) {
    fwm__error_clear(err);
    if (!session) return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "fwm_session_export: session is NULL");
    const struct fwm_model *model = session->model;
    const fwm_hparams *hp = &model->hp;
    size_t need = fwm__state_blob_size(model);
    if (written) *written = need;
    if (!buffer || capacity < need)
        return fwm__error(err, FWM_ERR_BUFFER_TOO_SMALL,
                          "state blob needs %zu bytes, the buffer holds %zu", need,
                          buffer ? capacity : (size_t)0);
    size_t H = hp->hidden_size, SRT = (size_t)hp->memory_s * hp->memory_r * hp->memory_t;
    unsigned char *p = buffer;
    memcpy(p, blob_magic, 4);
    put_u32(p + 4, BLOB_VERSION);
    put_u64(p + 8, model->fingerprint);
    put_u32(p + 16, hp->hidden_size);
    put_u32(p + 20, hp->memory_s);
    put_u32(p + 24, hp->memory_r);
    put_u32(p + 28, hp->memory_t);
    put_u64(p + 32, session->position);
    unsigned char *q = p + BLOB_HEADER_BYTES;
    put_floats(q, session->h, H);
    put_floats(q + 4 * H, session->c, H);
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
                    put_floats(out, &f, 1);
                }
            }
        }
    } else {
        put_floats(q + 8 * H, session->F, SRT);
    }
    put_u64(p + need - BLOB_TRAILER_BYTES, fwm__xxh64(p, need - BLOB_TRAILER_BYTES, 0));
    return FWM_OK;
}

/* Index of the first non-finite float among n little-endian floats at p, or n. */
static size_t first_non_finite(const unsigned char *p, size_t n) {
    for (size_t i = 0; i < n; i++) {
        /* exponent bits all ones: infinity or NaN */
        if ((get_u32(p + 4 * i) & 0x7f800000u) == 0x7f800000u) return i;
    }
    return n;
}

fwm_status fwm_session_import(fwm_session *session, const void *blob, size_t size, fwm_error *err) {
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
    if (memcmp(p, blob_magic, 4) != 0)
        return fwm__error(err, FWM_ERR_STATE_CORRUPT,
                          "state blob magic is %02x %02x %02x %02x, expected \"FWMS\"", p[0], p[1],
                          p[2], p[3]);
    uint32_t version = get_u32(p + 4);
    if (version != BLOB_VERSION)
        return fwm__error(err, FWM_ERR_STATE_CORRUPT, "state blob version is %" PRIu32 ", expected %u",
                          version, BLOB_VERSION);
    uint32_t H = get_u32(p + 16), S = get_u32(p + 20), R = get_u32(p + 24), T = get_u32(p + 28);
    /* 2H + S*R*T floats, checked against overflow: each factor < 2^32, so compute in steps. */
    uint64_t srt = (uint64_t)S * R;
    uint64_t floats = 0;
    int overflow = (T != 0 && srt > UINT64_MAX / T);
    if (!overflow) {
        srt *= T;
        floats = srt + 2 * (uint64_t)H;
        overflow = floats < srt || floats > (UINT64_MAX - 48) / 4;
    }
    uint64_t expected = overflow ? 0 : 48 + 4 * floats;
    if (overflow || expected != (uint64_t)size)
        return fwm__error(err, FWM_ERR_STATE_CORRUPT,
                          "state blob is %zu bytes, its header (H=%" PRIu32 " S=%" PRIu32 " R=%" PRIu32
                          " T=%" PRIu32 ") implies %" PRIu64 " bytes",
                          size, H, S, R, T, expected);
    uint64_t stored_sum = get_u64(p + size - BLOB_TRAILER_BYTES);
    uint64_t actual_sum = fwm__xxh64(p, size - BLOB_TRAILER_BYTES, 0);
    if (stored_sum != actual_sum)
        return fwm__error(err, FWM_ERR_STATE_CORRUPT,
                          "state blob checksum mismatch: stored %016" PRIx64 ", computed %016" PRIx64,
                          stored_sum, actual_sum);
    uint64_t fingerprint = get_u64(p + 8);
    if (fingerprint != model->fingerprint)
        return fwm__error(err, FWM_ERR_STATE_MODEL_MISMATCH,
                          "state blob belongs to model %016" PRIx64 ", this session's model is %016" PRIx64,
                          fingerprint, model->fingerprint);
    if (H != hp->hidden_size || S != hp->memory_s || R != hp->memory_r || T != hp->memory_t)
        return fwm__error(err, FWM_ERR_STATE_CORRUPT,
                          "state blob dims H=%" PRIu32 " S=%" PRIu32 " R=%" PRIu32 " T=%" PRIu32
                          " differ from the model's H=%" PRIu32 " S=%" PRIu32 " R=%" PRIu32 " T=%" PRIu32,
                          H, S, R, T, hp->hidden_size, hp->memory_s, hp->memory_r, hp->memory_t);
    const unsigned char *q = p + BLOB_HEADER_BYTES;
    size_t bad = first_non_finite(q, (size_t)floats);
    if (bad < floats) {
        const char *array = bad < H ? "h" : bad < 2 * (size_t)H ? "c" : "F";
        size_t index = bad < H ? bad : bad < 2 * (size_t)H ? bad - H : bad - 2 * (size_t)H;
        return fwm__error(err, FWM_ERR_STATE_CORRUPT, "state blob %s[%zu] is not finite", array, index);
    }
    session->position = get_u64(p + 32);
    session->has_pending = false;
    session->pending_s = 1.0f;
    get_floats(session->h, q, H);
    get_floats(session->c, q + 4 * (size_t)H, H);
    get_floats(session->F, q + 8 * (size_t)H, (size_t)srt);
    return FWM_OK;
}
