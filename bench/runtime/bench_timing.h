/* bench_timing.h - what the runtime benchmarks (bench-step, bench-arch, step-profile) share for
 * timing: a monotonic clock in seconds, an ascending sort of the per-round figures (best = [0])
 * and their median. */
#ifndef FWM_BENCH_TIMING_H
#define FWM_BENCH_TIMING_H

#include <stdlib.h>
#include <time.h>

static inline double bench_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static inline int bench_compare_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Sort v[0..n) ascending. */
static inline void bench_sort(double *v, size_t n) {
    qsort(v, n, sizeof *v, bench_compare_double);
}

/* The median of v[0..n), n >= 1 (the mean of the middle two for even n); sorts v. */
static inline double bench_median(double *v, size_t n) {
    bench_sort(v, n);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#endif
