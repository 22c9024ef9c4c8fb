/* state_blob_common.h - what every architecture's session state blob shares: little-endian byte
 * helpers, the magic, the trailing XXH64, and the header of the blobs of architectures other than
 * the FWM (version 2), which names the architecture so that an import can refuse another
 * architecture's blob by name (dispatch.c).
 *
 * Versions 1 and 3 are the FWM's own (fwm/fwm_state.c; 3 for a stacked FWM). Version 2
 * (docs/FORMAT.md, "Session state blobs"):
 *
 *   offset  size     field
 *   0       4        magic "FWMS"
 *   4       4   u32  version = 2
 *   8       8   u64  model fingerprint
 *   16      8        architecture name, ASCII, NUL-padded ("lstm")
 *   24      8   u64  position (tokens stepped)
 *   32      ...      the architecture's dims and floats (runtime/<arch>/)
 *   end-8   8   u64  XXH64 (seed 0) of every byte before it
 *
 * Internal to libfwm.
 */
#ifndef FWM_RUNTIME_STATE_BLOB_COMMON_H
#define FWM_RUNTIME_STATE_BLOB_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fwm/fwm.h"

#define FWM_BLOB_V2 2u
#define FWM_BLOB_V2_HEADER_BYTES 32u /* through the position */
#define FWM_BLOB_ARCH_BYTES 8u
#define FWM_BLOB_TRAILER_BYTES 8u

static const unsigned char fwm__blob_magic[4] = {'F', 'W', 'M', 'S'};

static inline void fwm__put_u32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static inline void fwm__put_u64(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static inline uint32_t fwm__get_u32(const unsigned char *p) {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) v |= (uint32_t)p[i] << (8 * i);
    return v;
}
static inline uint64_t fwm__get_u64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
static inline void fwm__put_floats(unsigned char *p, const float *x, size_t n) { memcpy(p, x, n * sizeof *x); }
static inline void fwm__get_floats(float *x, const unsigned char *p, size_t n) { memcpy(x, p, n * sizeof *x); }
#else
static inline void fwm__put_floats(unsigned char *p, const float *x, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint32_t bits;
        memcpy(&bits, &x[i], 4);
        fwm__put_u32(p + 4 * i, bits);
    }
}
static inline void fwm__get_floats(float *x, const unsigned char *p, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint32_t bits = fwm__get_u32(p + 4 * i);
        memcpy(&x[i], &bits, 4);
    }
}
#endif

/* Index of the first non-finite float among n little-endian floats at p, or n. */
size_t fwm__blob_first_non_finite(const unsigned char *p, size_t n);

/* The architecture a blob says it holds, into name[FWM_BLOB_ARCH_BYTES + 1], and its fingerprint:
 * "fwm" for a version-1 blob, the header's name for a version-2 one (printable ASCII only). False
 * when the blob is too short, has another magic or version, or a garbled name: then the session's
 * own architecture judges it. */
int fwm__blob_architecture(const void *blob, size_t size, char name[FWM_BLOB_ARCH_BYTES + 1],
                           uint64_t *fingerprint);

/* Write a version-2 header (magic .. position) at p. */
void fwm__blob_put_v2_header(unsigned char *p, uint64_t fingerprint, const char *arch,
                             uint64_t position);

/* The trailing XXH64 of blob[0..size) verifies (size >= 8). */
int fwm__blob_checksum_ok(const void *blob, size_t size, uint64_t *stored, uint64_t *computed);

#endif
