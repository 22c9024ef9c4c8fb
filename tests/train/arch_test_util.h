/* arch_test_util.h - pieces the trainer's per-architecture tests share instead of copying them:
 * a small deterministic random number source, the finite-difference check of every entry of every
 * tensor of a double-precision model, the comparison of float gradients with double ones, and the
 * bit-for-bit comparison of float arrays (resumed runs).
 * Header only (static functions); include after check.h. */
#ifndef FWM_TESTS_TRAIN_ARCH_TEST_UTIL_H
#define FWM_TESTS_TRAIN_ARCH_TEST_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "param_layout.h"

/* xorshift64: a fixed sequence, the same on every platform. */
static uint64_t atu_rng_state = 0x9e3779b97f4a7c15ull;

static inline double atu_uniform(double low, double high)
{
    atu_rng_state ^= atu_rng_state << 13;
    atu_rng_state ^= atu_rng_state >> 7;
    atu_rng_state ^= atu_rng_state << 17;
    return low + (high - low) * (double)(atu_rng_state >> 11) / 9007199254740992.0;
}

/* The objective of the model whose parameters the check moves, evaluated from scratch (the
 * callee restores any carried state it needs). */
typedef double (*atu_objective_fn)(void *ctx);

/* Central differences with step h against `analytic` for every entry of every tensor of `layout`
 * in `params` (restored after each probe). Each tensor must take part (a nonzero gradient) and
 * agree within relative error `tolerance` (|a - n| / max(|a| + |n|, 1e-5)); `trained` (NULL: all)
 * says which tensors are trained: an untrained one must have a zero gradient both ways. Prints a
 * line per tensor; GRADCHECK_VERBOSE=1 prints each new worst entry. Returns the worst error. */
static inline double atu_gradcheck(const char *name, const fwm__tensor_layout *layout,
                                   double *params, const double *analytic, atu_objective_fn f,
                                   void *ctx, double h, double tolerance, const int *trained)
{
    double worst_all = 0;
    for (size_t k = 0; k < layout->count; k++) {
        int is_trained = trained ? trained[k] : 1;
        double worst = 0, biggest = 0, biggest_numeric = 0;
        for (size_t i = 0; i < layout->size[k]; i++) {
            size_t at = layout->offset[k] + i;
            double keep = params[at];
            params[at] = keep + h;
            double plus = f(ctx);
            params[at] = keep - h;
            double minus = f(ctx);
            params[at] = keep;
            double numeric = (plus - minus) / (2 * h), a = analytic[at];
            double denom = fabs(a) + fabs(numeric);
            double rel = fabs(a - numeric) / (denom > 1e-5 ? denom : 1e-5);
            if (!(rel <= worst)) {
                worst = rel;
                if (getenv("GRADCHECK_VERBOSE"))
                    printf("  %s[%zu]: analytic %.10g numeric %.10g\n", layout->names[k], i, a,
                           numeric);
            }
            if (fabs(a) > biggest)
                biggest = fabs(a);
            if (fabs(numeric) > biggest_numeric)
                biggest_numeric = fabs(numeric);
        }
        printf("%s: %-22s %5zu entries, largest |grad| %.3g, worst relative error %.3g%s\n", name,
               layout->names[k], layout->size[k], biggest, worst,
               is_trained ? "" : " (not trained)");
        if (is_trained) {
            CHECK(biggest > 0); /* every trained tensor takes part */
            CHECK_LE(worst, tolerance);
        } else {
            CHECK(biggest == 0);
            CHECK(biggest_numeric == 0);
        }
        if (worst > worst_all)
            worst_all = worst;
    }
    printf("%s: worst relative error over all tensors %.3g\n", name, worst_all);
    return worst_all;
}

/* The largest |g32 - g64| over n entries, as a fraction of the largest |g64|. */
static inline double atu_float_vs_double(const float *g32, const double *g64, size_t n)
{
    double worst = 0, scale = 0;
    for (size_t i = 0; i < n; i++)
        if (fabs(g64[i]) > scale)
            scale = fabs(g64[i]);
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)g32[i] - g64[i]);
        if (!(e <= worst))
            worst = e;
    }
    return scale > 0 ? worst / scale : worst;
}

/* Whether a and b hold the same bits (n floats); the first difference is printed. */
static inline int atu_same_floats(const char *what, const float *a, const float *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], sizeof(float)) != 0) {
            fprintf(stderr, "%s differs at %zu: %.9g vs %.9g\n", what, i, (double)a[i],
                    (double)b[i]);
            return 0;
        }
    return 1;
}

#endif
