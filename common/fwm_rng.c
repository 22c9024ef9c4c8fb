/* fwm_rng.c - xoshiro256** (Blackman & Vigna) seeded through splitmix64; see fwm_rng.h. */
#include "fwm_rng.h"

#include <math.h>

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

void fwm__rng_seed(fwm__rng *rng, uint64_t seed, uint64_t stream) {
    uint64_t x = seed ^ (stream * 0xD1B54A32D192ED03ULL);
    x = splitmix64(&x) ^ stream;
    for (int i = 0; i < 4; i++) rng->s[i] = splitmix64(&x);
    rng->has_spare = 0;
    rng->spare_normal = 0;
}

uint64_t fwm__rng_next(fwm__rng *rng) {
    uint64_t *s = rng->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double fwm__rng_uniform01(fwm__rng *rng) { return (double)(fwm__rng_next(rng) >> 11) * 0x1.0p-53; }

double fwm__rng_uniform(fwm__rng *rng, double low, double high) {
    return low + (high - low) * fwm__rng_uniform01(rng);
}

double fwm__rng_normal(fwm__rng *rng) {
    if (rng->has_spare) {
        rng->has_spare = 0;
        return rng->spare_normal;
    }
    double u1 = 1.0 - fwm__rng_uniform01(rng); /* (0, 1]: log is finite */
    double u2 = fwm__rng_uniform01(rng);
    double radius = sqrt(-2.0 * log(u1));
    double angle = 6.283185307179586476925286766559 * u2;
    rng->spare_normal = radius * sin(angle);
    rng->has_spare = 1;
    return radius * cos(angle);
}

uint64_t fwm__rng_below(fwm__rng *rng, uint64_t n) {
    uint64_t limit = UINT64_MAX - UINT64_MAX % n; /* accept draws below a multiple of n */
    uint64_t x;
    do x = fwm__rng_next(rng);
    while (x >= limit);
    return x % n;
}
