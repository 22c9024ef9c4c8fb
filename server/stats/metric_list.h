/* metric_list.h - every scalar metric and latency histogram of fwm-serve, once: the `stats` method
 * (stats_reply.c) and the Prometheus page (prometheus.c) are both made from these lists, so a new
 * metric is one line here.
 *
 *   X(KIND, FIELD, STATS_KEY, PROMETHEUS_NAME, HELP, VALUE)
 *
 * KIND     COUNTER, GAUGE (uint64_t), REAL (double), HISTOGRAM (fwm__histogram: `stats` gives its
 *          count and percentiles in ms, Prometheus its buckets in seconds), FLAG (bool: Prometheus
 *          1 or 0), TEXT (a string, NULL: nil; `stats` only), BY_CODE (a count per error code),
 *          INFO (Prometheus only: one sample of value 1 whose labels are the string VALUE).
 * FIELD    its member of fwm__metric_values.
 * STATS_KEY its key in the `stats` reply (or its section), NULL: only on /metrics.
 * PROMETHEUS_NAME, HELP: NULL: only in `stats`.
 * VALUE    an expression read by fwm__metric_values_read (metric_values.c), where `s` is the server,
 *          `m` its loop counters, `st` the scheduler's stats, `uptime` seconds since the start and,
 *          in the durability list only, `js` the journal's stats, `info` the store's figures,
 *          `healthy` and `v->why` whether the store takes writes and why not.
 *
 * The order is `stats`' (docs/PROTOCOL.md); /metrics gives the top list, then the labelled list
 * (FWM_METRICS_LABELLED, below), then memory, then durability (a server with a store only).
 * Loop thread only.
 */
#ifndef FWM_SERVER_STATS_METRIC_LIST_H
#define FWM_SERVER_STATS_METRIC_LIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/metrics.h"

#define FWM_METRIC_STRING_(x) #x
#define FWM_METRIC_STRING(x) FWM_METRIC_STRING_(x)

/* The top level of `stats`. */
#define FWM_METRICS_TOP(X)                                                                                          \
    X(INFO, build_info, NULL, "fwm_build_info", "The server's version and protocol (value 1).",                      \
      "version=\"" FWM_VERSION_STRING "\",protocol=\"" FWM_METRIC_STRING(FWM_PROTOCOL_VERSION) "\"")                \
    X(GAUGE, sessions, "sessions", NULL, NULL, s->sessions.count)                                                    \
    X(GAUGE, sessions_max, NULL, "fwm_sessions_max", "The most sessions the server holds (max-sessions).",            \
      s->config->max_sessions)                                                                                       \
    X(COUNTER, sessions_opened, "sessions_opened", "fwm_sessions_opened_total",                                      \
      "Sessions created (open, fork, restore).", m->sessions_opened)                                                 \
    X(COUNTER, sessions_closed, "sessions_closed", "fwm_sessions_closed_total", "Sessions closed by clients.",       \
      m->sessions_closed)                                                                                            \
    X(COUNTER, sessions_expired, "sessions_expired", "fwm_sessions_expired_total", "Sessions closed by idle-timeout.", \
      m->sessions_expired)                                                                                           \
    X(GAUGE, connections, "connections", "fwm_connections", "Open msgpack-RPC connections (TCP, Unix socket, WebSocket).", \
      m->connections_open)                                                                                           \
    X(GAUGE, websocket_connections, NULL, "fwm_websocket_connections", "Of fwm_connections, those over WebSocket.",  \
      m->websocket_connections_open)                                                                                 \
    X(GAUGE, connections_max, NULL, "fwm_connections_max", "The most connections served (max-connections).",         \
      s->config->max_connections)                                                                                    \
    X(COUNTER, connections_total, "connections_total", "fwm_connections_accepted_total",                             \
      "msgpack-RPC connections accepted.", m->connections_total)                                                     \
    X(COUNTER, connections_refused, "connections_refused", "fwm_connections_refused_total",                          \
      "Connections refused (limits, memory, descriptors).", m->connections_refused)                                  \
    X(COUNTER, connections_timed_out, "connections_timed_out", "fwm_connections_timed_out_total",                    \
      "Connections closed by a timeout.", m->connections_timed_out)                                                  \
    X(COUNTER, accept_errors, "accept_errors", "fwm_accept_errors_total", "Connections that could not be accepted.", \
      m->accept_errors)                                                                                              \
    X(GAUGE, http_connections, NULL, "fwm_http_connections", "Open connections on the HTTP port (WebSockets included).", \
      m->http_connections_open)                                                                                      \
    X(COUNTER, http_connections_total, NULL, "fwm_http_connections_accepted_total",                                  \
      "Connections accepted on the HTTP port.", m->http_connections_total)                                           \
    X(COUNTER, auth_failures, "auth_failures", "fwm_auth_failures_total",                                            \
      "Wrong tokens and requests before authentication.", m->auth_failures)                                          \
    X(COUNTER, requests, "requests", "fwm_requests_total", "msgpack-RPC requests and notifications received.",       \
      m->requests)                                                                                                   \
    X(COUNTER, errors, "errors", NULL, NULL, m->errors)                                                              \
    X(COUNTER, protocol_errors, "protocol_errors", "fwm_protocol_errors_total",                                      \
      "Connections failed for a malformed or over-limit byte stream.", m->protocol_errors)                           \
    X(BY_CODE, errors_by_code, "errors_by_code", "fwm_errors_total",                                                 \
      "Errors sent to clients (responses and notifications), by code.", m->errors_by_code)                           \
    X(COUNTER, tokens, "tokens", "fwm_tokens_total", "Tokens stepped through the models.", st.tokens)               \
    X(REAL, tokens_per_second, "tokens_per_second", NULL, NULL, m->tokens_per_second)                                \
    X(REAL, tokens_per_second_avg, "tokens_per_second_avg", NULL, NULL, uptime > 0 ? (double)st.tokens / uptime : 0.0) \
    X(REAL, uptime, "uptime_s", "fwm_uptime_seconds", "Seconds since the server started.", uptime)                  \
    X(COUNTER, batches, "batches", NULL, NULL, st.batches)                                                           \
    X(REAL, batch_size_mean, "batch_size_mean", NULL, NULL,                                                          \
      st.batches ? (double)st.batch_sessions / (double)st.batches : 0.0)                                             \
    X(GAUGE, batch_size_max, "batch_size_max", "fwm_batch_size_max", "The largest batch so far.", st.batch_max)     \
    X(GAUGE, queue_depth, "queue_depth", "fwm_queue_depth", "Sessions with work waiting for a worker.",              \
      st.ready_sessions)                                                                                             \
    X(GAUGE, parked_sessions, "parked_sessions", "fwm_parked_sessions",                                              \
      "Sessions waiting for a slow reader to take its output.", st.parked_sessions)                                  \
    X(GAUGE, jobs_pending, "jobs_pending", "fwm_jobs_pending", "Requests queued or running.", st.jobs_pending)       \
    X(GAUGE, tokens_queued, "tokens_queued", "fwm_tokens_queued", "Tokens waiting to be stepped.", st.tokens_queued) \
    X(GAUGE, tokens_queued_max, NULL, "fwm_tokens_queued_max",                                                       \
      "Queued tokens beyond which requests are refused (max-queued-tokens).", s->config->max_queued_tokens)          \
    X(HISTOGRAM, token_latency, "token_latency_ms", "fwm_token_latency_seconds",                                     \
      "Time from a token being ready to its step.", st.token_latency)                                                \
    X(HISTOGRAM, request_latency, "request_latency_ms", "fwm_request_latency_seconds",                               \
      "Time from a request's arrival to its response.", m->request_latency)                                          \
    X(GAUGE, workers, "workers", "fwm_workers", "Compute threads.", s->workers)                                      \
    X(GAUGE, sessions_resident, "sessions_resident", NULL, NULL, s->sessions.count)

/* `stats`' "memory" section. */
#define FWM_METRICS_MEMORY(X)                                                                                       \
    X(GAUGE, memory_sessions, "sessions_bytes", "fwm_memory_sessions_bytes", "Memory of the resident sessions.",     \
      m->session_memory_bytes)                                                                                       \
    X(GAUGE, memory_per_session, "per_session_bytes", NULL, NULL, s->models[0].session_bytes)                        \
    X(GAUGE, memory_output_queued, "output_queued_bytes", "fwm_memory_output_queued_bytes",                          \
      "Encoded output not yet taken by clients.", m->output_queued_bytes)                                            \
    X(GAUGE, memory_input_buffers, "input_buffer_bytes", "fwm_memory_input_buffer_bytes",                            \
      "The connections' input buffers.", m->input_buffer_bytes)                                                      \
    X(GAUGE, memory_used, "used_bytes", "fwm_memory_used_bytes",                                                     \
      "Memory the budget counts: sessions, buffers and weights.", fwm__server_memory_used(s))                        \
    X(GAUGE, memory_budget, "budget_bytes", "fwm_memory_budget_bytes", "The memory budget (max-memory-bytes).",      \
      s->config->max_memory_bytes)                                                                                   \
    X(COUNTER, memory_refusals, "refusals", "fwm_memory_refusals_total",                                             \
      "Requests and connections refused by the memory budget.", m->memory_refusals)                                  \
    X(GAUGE, memory_model_weights, "model_weights_bytes", NULL, NULL, model_weights_bytes(s))                        \
    X(GAUGE, memory_process_resident, NULL, "process_resident_memory_bytes", "Resident memory of the server process.", \
      process_resident_bytes())

/* `stats`' "durability" section (nil without a store; nothing on /metrics either). */
#define FWM_METRICS_DURABILITY(X)                                                                                   \
    X(TEXT, fsync, "fsync", NULL, NULL, fwm__fsync_mode_name((fwm__fsync_mode)s->config->fsync_mode))               \
    X(TEXT, data_dir, "data_dir", NULL, NULL, s->config->data_dir)                                                   \
    X(GAUGE, sessions_stored, "sessions_stored", "fwm_sessions_stored", "Sessions in the durable store.",            \
      info.sessions)                                                                                                 \
    X(GAUGE, durable_sessions_resident, "sessions_resident", NULL, NULL, s->sessions.count)                          \
    X(GAUGE, max_resident, "max_resident", NULL, NULL, s->config->max_resident)                                      \
    X(COUNTER, evictions, "evictions", "fwm_evictions_total", "Sessions written out of memory to the store.",        \
      m->evictions)                                                                                                  \
    X(GAUGE, evicting, "evicting", NULL, NULL, s->evicting)                                                          \
    X(COUNTER, loads, "loads", "fwm_loads_total", "Stored sessions brought back into memory.", m->loads)            \
    X(COUNTER, load_failures, "load_failures", "fwm_load_failures_total", "Stored sessions that could not be rebuilt.", \
      m->load_failures)                                                                                              \
    X(HISTOGRAM, load_latency, "load_latency_ms", "fwm_load_latency_seconds",                                        \
      "Time to bring a stored session back into memory.", m->load_latency)                                           \
    X(COUNTER, commits, "commits", "fwm_store_commits_total", "Store write transactions.", js.commits)               \
    X(COUNTER, fsyncs, "fsyncs", "fwm_store_fsyncs_total", "Store syncs to disk.", js.fsyncs)                        \
    X(HISTOGRAM, commit_latency, "commit_latency_ms", "fwm_store_commit_latency_seconds",                            \
      "Time of one store write transaction.", js.commit_latency)                                                     \
    X(COUNTER, log_bytes, "log_bytes", NULL, NULL, js.log_bytes)                                                     \
    X(COUNTER, bytes_written, "bytes_written", "fwm_store_written_bytes_total", "Bytes written to the store.",       \
      js.bytes_written)                                                                                              \
    X(COUNTER, write_failures, "write_failures", "fwm_store_write_failures_total", "Store writes that failed.",     \
      js.failures)                                                                                                   \
    X(COUNTER, storage_refusals, "storage_refusals", "fwm_storage_refusals_total",                                   \
      "Requests refused while the store could not write.", m->storage_refusals)                                      \
    X(GAUGE, store_file, "store_file_bytes", "fwm_store_file_bytes", "Size of the store's file.", info.file_bytes)  \
    X(GAUGE, store_used, "store_used_bytes", "fwm_store_used_bytes", "Bytes of the store in use.", info.used_bytes) \
    X(GAUGE, store_max, "store_max_bytes", "fwm_store_max_bytes", "The largest the store may grow.", info.map_bytes) \
    X(FLAG, store_healthy, "healthy", "fwm_store_healthy", "1 while the store takes writes, 0 while they fail.",     \
      healthy)                                                                                                       \
    X(TEXT, store_error, "error", NULL, NULL, healthy ? NULL : v->why) /* why writes fail, while they do */

/* The Prometheus families whose samples carry a label with many values (/metrics only, between the
 * top list and memory): one line each,
 *
 *   X(KIND, PROMETHEUS_NAME, HELP, VALUE)
 *
 * KIND     BY_MODEL_GAUGE, BY_MODEL_COUNTER: a sample per served model, labelled model="NAME", VALUE
 *          its value for model `i`; MODEL_INFO: a sample of value 1 per model, labelled with its
 *          name, fingerprint and whether it is the default (VALUE unused); BUCKETS: a histogram of
 *          sizes in power-of-two buckets, le="1", "2", "4" ... (VALUE a fwm__metric_buckets);
 *          BY_CLASS: a count per HTTP status class, class="2xx" to "5xx" (VALUE the counts by class).
 * VALUE    an expression read by prometheus.c as it writes the family, where `s` is the server, `m`
 *          its loop counters, `st` the scheduler's stats and, for the BY_MODEL kinds, `i` the model's
 *          index and `resident` the resident sessions of each model. Its values are not in
 *          fwm__metric_values: `stats` does not report them (hello has the models, stats the totals).
 */
#define FWM_METRICS_LABELLED(X)                                                                                     \
    X(MODEL_INFO, "fwm_model_info", "The models served (value 1), with their fingerprints.", 1)                      \
    X(BY_MODEL_GAUGE, "fwm_sessions_resident", "Sessions in memory, by model.", resident[i])                         \
    X(BY_MODEL_COUNTER, "fwm_model_tokens_total", "Tokens stepped through each model.",                             \
      fwm__scheduler_model_tokens(s->scheduler, i))                                                                  \
    X(BY_MODEL_GAUGE, "fwm_model_weights_bytes", "Bytes of each model's weights.",                                  \
      s->models[i].info.parameter_count * sizeof(float))                                                             \
    X(BY_MODEL_GAUGE, "fwm_session_bytes", "Bytes one session of each model accounts for.",                         \
      s->models[i].session_bytes)                                                                                    \
    X(BUCKETS, "fwm_batch_size", "Sessions stepped together in one batched step (_count: the batches).",           \
      ((fwm__metric_buckets){st.batch_sizes, FWM_BATCH_SIZE_BUCKETS, st.batch_sessions, st.batches}))               \
    X(BY_CLASS, "fwm_http_responses_total", "HTTP responses, by status class.", m->http_responses)

/* A BUCKETS value: counts[k] of the sizes in (2^(k-1), 2^k], their sum and how many there are. */
typedef struct fwm__metric_buckets {
    const uint64_t *counts;
    unsigned count;
    uint64_t sum, total;
} fwm__metric_buckets;

/* The C type of each kind. */
#define FWM_METRIC_TYPE_COUNTER uint64_t
#define FWM_METRIC_TYPE_GAUGE uint64_t
#define FWM_METRIC_TYPE_REAL double
#define FWM_METRIC_TYPE_HISTOGRAM fwm__histogram
#define FWM_METRIC_TYPE_FLAG bool
#define FWM_METRIC_TYPE_TEXT const char *
#define FWM_METRIC_TYPE_BY_CODE const uint64_t * /* FWM_ERROR_CODES counts, [0] unused */
#define FWM_METRIC_TYPE_INFO const char *        /* the labels */

/* Every value of the lists, read at once. */
typedef struct fwm__metric_values {
#define FWM_METRIC_FIELD(kind, field, key, name, help, value) FWM_METRIC_TYPE_##kind field;
    FWM_METRICS_TOP(FWM_METRIC_FIELD)
    FWM_METRICS_MEMORY(FWM_METRIC_FIELD)
    FWM_METRICS_DURABILITY(FWM_METRIC_FIELD)
#undef FWM_METRIC_FIELD
    bool durable; /* the durability list was read (the server has a store) */
    char why[300];
} fwm__metric_values;

typedef enum fwm__metric_kind {
    FWM_METRIC_COUNTER,
    FWM_METRIC_GAUGE,
    FWM_METRIC_REAL,
    FWM_METRIC_HISTOGRAM,
    FWM_METRIC_FLAG,
    FWM_METRIC_TEXT,
    FWM_METRIC_BY_CODE,
    FWM_METRIC_INFO,
} fwm__metric_kind;

/* One row of a list, for the renderers: its value is at `offset` in fwm__metric_values. */
typedef struct fwm__metric {
    fwm__metric_kind kind;
    const char *stats_key;  /* NULL: only on /metrics */
    const char *prometheus; /* NULL: only in `stats` */
    const char *help;
    size_t offset;
} fwm__metric;

typedef struct fwm__metric_list {
    const fwm__metric *rows;
    size_t count;
} fwm__metric_list;

extern const fwm__metric_list fwm__metrics_top, fwm__metrics_memory, fwm__metrics_durability;

struct fwm__server;
/* Read every value now (the durability list only when the server has a store). */
void fwm__metric_values_read(fwm__metric_values *v, struct fwm__server *server);
/* Rows of `list` that `stats` reports. */
size_t fwm__metric_list_stats_count(const fwm__metric_list *list);

#endif
