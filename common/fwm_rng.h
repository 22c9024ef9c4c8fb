/* fwm_rng.h - a small deterministic random number generator: xoshiro256** seeded through
 * splitmix64, with uniform and normal (Box-Muller) draws. Same seed, same numbers, on every
 * platform. Used by the weight initialiser (fwm-init, the trainer) and the trainer's shuffling.
 * Not for cryptography. A generator is a value owned by its user; no global state.
 */
#ifndef FWM_COMMON_RNG_H
#define FWM_COMMON_RNG_H

#include <stdint.h>

typedef struct fwm__rng {
    uint64_t s[4];
    double spare_normal; /* second Box-Muller value, valid when has_spare */
    int has_spare;
} fwm__rng;

/* Seed from (seed, stream): distinct streams of one seed are independent sequences. */
void fwm__rng_seed(fwm__rng *rng, uint64_t seed, uint64_t stream);
uint64_t fwm__rng_next(fwm__rng *rng);
/* Uniform in [0, 1) with 53 random bits. */
double fwm__rng_uniform01(fwm__rng *rng);
/* Uniform in [low, high). */
double fwm__rng_uniform(fwm__rng *rng, double low, double high);
/* Standard normal N(0, 1) (Box-Muller, pairs cached). */
double fwm__rng_normal(fwm__rng *rng);
/* Uniform integer in [0, n), n >= 1, without modulo bias. */
uint64_t fwm__rng_below(fwm__rng *rng, uint64_t n);

#endif
