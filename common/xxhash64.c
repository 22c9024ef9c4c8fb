/* xxhash64.c - XXH64 from the published specification (see xxhash64.h). Reads input bytes as
 * little-endian words whatever the host's byte order, so results match every other XXH64. */
#include "xxhash64.h"

#include <string.h>

#define PRIME64_1 0x9E3779B185EBCA87ULL
#define PRIME64_2 0xC2B2AE3D27D4EB4FULL
#define PRIME64_3 0x165667B19E3779F9ULL
#define PRIME64_4 0x85EBCA77C2B2AE63ULL
#define PRIME64_5 0x27D4EB2F165667C5ULL

static uint64_t rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

static uint64_t read64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

static uint32_t read32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t round64(uint64_t acc, uint64_t lane) {
    acc += lane * PRIME64_2;
    acc = rotl64(acc, 31);
    return acc * PRIME64_1;
}

static uint64_t merge_accumulator(uint64_t acc, uint64_t lane_acc) {
    acc ^= round64(0, lane_acc);
    return acc * PRIME64_1 + PRIME64_4;
}

/* Consume one 32-byte stripe into the four accumulators. */
static void consume_stripe(uint64_t v[4], const uint8_t *p) {
    v[0] = round64(v[0], read64(p));
    v[1] = round64(v[1], read64(p + 8));
    v[2] = round64(v[2], read64(p + 16));
    v[3] = round64(v[3], read64(p + 24));
}

void fwm__xxh64_init(fwm__xxh64_state *state, uint64_t seed) {
    memset(state, 0, sizeof *state);
    state->seed = seed;
    state->v[0] = seed + PRIME64_1 + PRIME64_2;
    state->v[1] = seed + PRIME64_2;
    state->v[2] = seed;
    state->v[3] = seed - PRIME64_1;
}

void fwm__xxh64_update(fwm__xxh64_state *state, const void *data, size_t length) {
    const uint8_t *p = data;
    if (length == 0) return;
    state->total_length += length;
    if (state->buffered + length < 32) {
        memcpy(state->buffer + state->buffered, p, length);
        state->buffered += (uint32_t)length;
        return;
    }
    if (state->buffered > 0) {
        size_t fill = 32 - state->buffered;
        memcpy(state->buffer + state->buffered, p, fill);
        consume_stripe(state->v, state->buffer);
        p += fill;
        length -= fill;
        state->buffered = 0;
    }
    while (length >= 32) {
        consume_stripe(state->v, p);
        p += 32;
        length -= 32;
    }
    if (length > 0) {
        memcpy(state->buffer, p, length);
        state->buffered = (uint32_t)length;
    }
}

uint64_t fwm__xxh64_digest(const fwm__xxh64_state *state) {
    uint64_t acc;
    if (state->total_length >= 32) {
        const uint64_t *v = state->v;
        acc = rotl64(v[0], 1) + rotl64(v[1], 7) + rotl64(v[2], 12) + rotl64(v[3], 18);
        for (int i = 0; i < 4; i++) acc = merge_accumulator(acc, v[i]);
    } else {
        acc = state->seed + PRIME64_5;
    }
    acc += state->total_length;

    const uint8_t *p = state->buffer;
    size_t remaining = state->buffered;
    while (remaining >= 8) {
        acc ^= round64(0, read64(p));
        acc = rotl64(acc, 27) * PRIME64_1 + PRIME64_4;
        p += 8;
        remaining -= 8;
    }
    if (remaining >= 4) {
        acc ^= (uint64_t)read32(p) * PRIME64_1;
        acc = rotl64(acc, 23) * PRIME64_2 + PRIME64_3;
        p += 4;
        remaining -= 4;
    }
    while (remaining > 0) {
        acc ^= (uint64_t)(*p) * PRIME64_5;
        acc = rotl64(acc, 11) * PRIME64_1;
        p++;
        remaining--;
    }
    acc ^= acc >> 33;
    acc *= PRIME64_2;
    acc ^= acc >> 29;
    acc *= PRIME64_3;
    acc ^= acc >> 32;
    return acc;
}

uint64_t fwm__xxh64(const void *data, size_t length, uint64_t seed) {
    fwm__xxh64_state state;
    fwm__xxh64_init(&state, seed);
    fwm__xxh64_update(&state, data, length);
    return fwm__xxh64_digest(&state);
}
