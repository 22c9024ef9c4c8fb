/* metrics.h - the server's counters and latency histograms, reported by `stats` and /metrics through
 * the one metric list (stats/metric_list.h).
 *
 * A histogram has log-spaced buckets (8 per power of two, from 1 microsecond to about 70 minutes), so a
 * percentile is exact to within 9%. Not thread-safe by itself: each histogram is owned by one
 * thread or guarded by its owner's mutex.
 */
#ifndef FWM_SERVER_METRICS_H
#define FWM_SERVER_METRICS_H

#include <stdint.h>

#define FWM_HISTOGRAM_BUCKETS 256
#define FWM_ERROR_CODES 17 /* server error codes 0..16 of fwm_protocol.h: errors_by_code's size */

typedef struct fwm__histogram {
    uint64_t counts[FWM_HISTOGRAM_BUCKETS];
    uint64_t total;
    uint64_t max_us;
    uint64_t sum_us; /* of every sample: Prometheus' _sum */
} fwm__histogram;

void fwm__histogram_add(fwm__histogram *histogram, uint64_t microseconds);
void fwm__histogram_merge(fwm__histogram *into, const fwm__histogram *from);
/* Samples below 2^power microseconds (exact: a bucket edge), for Prometheus' cumulative buckets. */
uint64_t fwm__histogram_count_below_power(const fwm__histogram *histogram, unsigned power);
/* The value (microseconds) below which `fraction` (0..1) of the samples lie; 0 when empty. */
double fwm__histogram_percentile(const fwm__histogram *histogram, double fraction);

/* Monotonic clock, nanoseconds. Thread-safe. */
uint64_t fwm__now_ns(void);

/* Loop-thread counters (the scheduler keeps its own). */
typedef struct fwm__metrics {
    uint64_t start_ns;
    uint64_t connections_total, connections_open, connections_refused;
    uint64_t connections_timed_out; /* closed by --message-timeout or --connection-idle-timeout */
    uint64_t accept_errors;         /* connections not accepted, or refused for want of descriptors */
    uint64_t accept_errors_unlogged, accept_log_ns; /* the rate-limited log line */
    uint64_t requests, errors, protocol_errors;
    uint64_t sessions_opened, sessions_closed, sessions_expired;
    uint64_t session_memory_bytes; /* resident bytes of all sessions */
    uint64_t reserved_memory_bytes; /* forks and restores under way: their sessions and restore blobs; feeds
                                     * under way: their logprobs and unknown spans */
    uint64_t output_queued_bytes;  /* encoded output not yet written, all connections */
    uint64_t input_buffer_bytes;   /* the connections' input buffers (their capacity) */
    uint64_t memory_refusals;      /* requests and connections refused by --max-memory-bytes */
    uint64_t auth_failures;        /* wrong tokens and requests before authentication */
    uint64_t errors_by_code[FWM_ERROR_CODES]; /* every error response and error notification sent */
    /* the HTTP port (net/http.c) */
    uint64_t http_connections_open, http_connections_total, http_connections_refused;
    uint64_t websocket_connections_open;  /* of connections_open, those over WebSocket */
    uint64_t http_responses[6];           /* by status class: [2] 2xx ... [5] 5xx; [0] unused */
    fwm__histogram request_latency; /* request in -> response queued, microseconds */
    /* durable mode */
    uint64_t evictions, loads, load_failures, storage_refusals;
    uint64_t sessions_taken_over, moved_replies, fenced_writes; /* cluster mode */
    fwm__histogram load_latency; /* LOAD submitted -> session rebuilt, microseconds */
    /* tokens/s over the last housekeeping interval */
    uint64_t rate_tokens, rate_ns;
    double tokens_per_second;
} fwm__metrics;

/* Count an error sent with `code` (codes outside the table are not counted). */
void fwm__metrics_count_error(fwm__metrics *metrics, int code);

#endif
