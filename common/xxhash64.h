/* xxhash64.h - XXH64, the 64-bit xxHash of Yann Collet, written from the published algorithm
 * (https://github.com/Cyan4973/xxHash/blob/dev/doc/xxhash_spec.md).
 *
 * Used for the model file's tensor-data checksum and fingerprint (docs/FORMAT.md) and for session
 * state blobs. Streaming (init / update / digest) and one-shot forms give identical results for
 * any split of the input. Internal to libfwm and its tools; thread-safe (no global state).
 */
#ifndef FWM_COMMON_XXHASH64_H
#define FWM_COMMON_XXHASH64_H

#include <stddef.h>
#include <stdint.h>

typedef struct fwm__xxh64_state {
    uint64_t total_length; /* bytes fed so far */
    uint64_t v[4];         /* the four lane accumulators */
    uint8_t buffer[32];    /* bytes not yet consumed as a full 32-byte stripe */
    uint32_t buffered;     /* 0..31 bytes in buffer */
    uint64_t seed;
} fwm__xxh64_state;

void fwm__xxh64_init(fwm__xxh64_state *state, uint64_t seed);
/* Feed `length` bytes (data may be NULL when length is 0). */
void fwm__xxh64_update(fwm__xxh64_state *state, const void *data, size_t length);
/* The hash of everything fed so far; the state is not modified (more updates may follow). */
uint64_t fwm__xxh64_digest(const fwm__xxh64_state *state);

/* One-shot XXH64 of data[0..length). */
uint64_t fwm__xxh64(const void *data, size_t length, uint64_t seed);

#endif
