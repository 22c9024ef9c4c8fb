/* metrics.c - log-bucket latency histograms and the monotonic clock (metrics.h). */
#include "metrics.h"

#include <math.h>
#include <time.h>

/* Bucket b covers [2^(b/8), 2^((b+1)/8)) microseconds; bucket 0 also holds 0. */
static unsigned bucket_of(uint64_t us) {
    if (us <= 1) return 0;
    double b = floor(log2((double)us) * 8.0);
    if (b >= FWM_HISTOGRAM_BUCKETS - 1) return FWM_HISTOGRAM_BUCKETS - 1;
    return (unsigned)b;
}

void fwm__histogram_add(fwm__histogram *histogram, uint64_t microseconds) {
    histogram->counts[bucket_of(microseconds)]++;
    histogram->total++;
    histogram->sum_us += microseconds;
    if (microseconds > histogram->max_us) histogram->max_us = microseconds;
}

void fwm__histogram_merge(fwm__histogram *into, const fwm__histogram *from) {
    for (unsigned b = 0; b < FWM_HISTOGRAM_BUCKETS; b++) into->counts[b] += from->counts[b];
    into->total += from->total;
    into->sum_us += from->sum_us;
    if (from->max_us > into->max_us) into->max_us = from->max_us;
}

uint64_t fwm__histogram_count_below_power(const fwm__histogram *histogram, unsigned power) {
    unsigned end = power * 8 < FWM_HISTOGRAM_BUCKETS ? power * 8 : FWM_HISTOGRAM_BUCKETS;
    uint64_t count = 0;
    for (unsigned b = 0; b < end; b++) count += histogram->counts[b];
    return count;
}

double fwm__histogram_percentile(const fwm__histogram *histogram, double fraction) {
    if (histogram->total == 0) return 0.0;
    uint64_t rank = (uint64_t)ceil(fraction * (double)histogram->total);
    if (rank < 1) rank = 1;
    uint64_t seen = 0;
    for (unsigned b = 0; b < FWM_HISTOGRAM_BUCKETS; b++) {
        seen += histogram->counts[b];
        if (seen >= rank) {
            double upper = exp2((b + 1) / 8.0); /* report the bucket's upper edge, capped by the max */
            return upper < (double)histogram->max_us ? upper : (double)histogram->max_us;
        }
    }
    return (double)histogram->max_us;
}

void fwm__metrics_count_error(fwm__metrics *metrics, int code) {
    if (code >= 0 && code < FWM_ERROR_CODES) metrics->errors_by_code[code]++;
}

uint64_t fwm__now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
