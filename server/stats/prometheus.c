/* prometheus.c - the metrics as Prometheus text (prometheus.h). */
#include "prometheus.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fwm/fwm_protocol.h"
#include "fwm_alloc.h"
#include "fwm_utf8.h"

/* Histogram buckets: powers of two from 2^4 microseconds (16 us) to 2^26 (67 s), exact edges of the
 * server's log-spaced histograms (metrics.h). */
#define FIRST_POWER 4
#define LAST_POWER 26

typedef struct text {
    char *data;
    size_t length, capacity, headroom;
    bool failed;
} text;

static void add(text *t, const char *format, ...) __attribute__((format(printf, 2, 3)));
static void add(text *t, const char *format, ...) {
    if (t->failed) return;
    for (;;) {
        va_list args;
        va_start(args, format);
        size_t room = t->capacity - t->length;
        int n = vsnprintf(t->data + t->length, room, format, args);
        va_end(args);
        if (n < 0) {
            t->failed = true;
            return;
        }
        if ((size_t)n < room) {
            t->length += (size_t)n;
            return;
        }
        size_t capacity = t->capacity * 2 + (size_t)n;
        char *grown = fwm__realloc(t->data - t->headroom, t->headroom + capacity);
        if (!grown) {
            t->failed = true;
            return;
        }
        t->data = grown + t->headroom;
        t->capacity = capacity;
    }
}

static void family(text *t, const char *name, const char *type, const char *help) {
    add(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void scalar(text *t, const char *name, const char *type, const char *help, double value) {
    family(t, name, type, help);
    add(t, "%s %.17g\n", name, value);
}

/* A label value: \, " and newlines escaped, invalid UTF-8 replaced. */
static void label_value(const char *value, char *out, size_t size) {
    char clean[512];
    fwm__utf8_sanitize(clean, sizeof clean, value, strlen(value));
    size_t used = 0;
    for (const char *p = clean; *p && used + 3 < size; p++) {
        if (*p == '\\' || *p == '"') out[used++] = '\\';
        if (*p == '\n') {
            out[used++] = '\\';
            out[used++] = 'n';
            continue;
        }
        out[used++] = *p;
    }
    out[used] = '\0';
}

static void histogram(text *t, const char *name, const char *help, const fwm__histogram *h) {
    family(t, name, "histogram", help);
    for (unsigned p = FIRST_POWER; p <= LAST_POWER; p++)
        add(t, "%s_bucket{le=\"%.6f\"} %llu\n", name, (double)(1ull << p) * 1e-6, /* whole microseconds, exact */
            (unsigned long long)fwm__histogram_count_below_power(h, p));
    add(t, "%s_bucket{le=\"+Inf\"} %llu\n", name, (unsigned long long)h->total);
    add(t, "%s_sum %.17g\n", name, (double)h->sum_us * 1e-6);
    add(t, "%s_count %llu\n", name, (unsigned long long)h->total);
}

typedef struct per_model {
    uint64_t *resident;
    size_t count;
} per_model;

static void count_model(fwm__session_entry *e, void *user) {
    per_model *pm = user;
    if (e->model_index < pm->count) pm->resident[e->model_index]++;
}

static uint64_t resident_memory_bytes(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long long size = 0, resident = 0;
    if (f) {
        if (fscanf(f, "%llu %llu", &size, &resident) != 2) resident = 0;
        fclose(f);
    }
    long page = sysconf(_SC_PAGE_SIZE);
    return resident * (uint64_t)(page > 0 ? page : 4096);
}

static void models(text *t, fwm__server *s) {
    per_model pm = {fwm__calloc(s->model_count, sizeof *pm.resident), s->model_count};
    if (!pm.resident) {
        t->failed = true;
        return;
    }
    uint64_t *resident = pm.resident;
    fwm__session_table_each(&s->sessions, count_model, &pm);
    char name[600];
    family(t, "fwm_model_info", "gauge", "The models served (value 1), with their fingerprints.");
    for (size_t m = 0; m < pm.count; m++) {
        label_value(s->models[m].name, name, sizeof name);
        add(t, "fwm_model_info{model=\"%s\",fingerprint=\"%s\",default=\"%s\"} 1\n", name, s->models[m].fingerprint,
            m == 0 ? "true" : "false");
    }
    family(t, "fwm_sessions_resident", "gauge", "Sessions in memory, by model.");
    for (size_t m = 0; m < pm.count; m++) {
        label_value(s->models[m].name, name, sizeof name);
        add(t, "fwm_sessions_resident{model=\"%s\"} %llu\n", name, (unsigned long long)resident[m]);
    }
    family(t, "fwm_model_tokens_total", "counter", "Tokens stepped through each model.");
    for (size_t m = 0; m < pm.count; m++) {
        label_value(s->models[m].name, name, sizeof name);
        add(t, "fwm_model_tokens_total{model=\"%s\"} %llu\n", name,
            (unsigned long long)fwm__scheduler_model_tokens(s->scheduler, m));
    }
    family(t, "fwm_model_weights_bytes", "gauge", "Bytes of each model's weights.");
    for (size_t m = 0; m < pm.count; m++) {
        label_value(s->models[m].name, name, sizeof name);
        add(t, "fwm_model_weights_bytes{model=\"%s\"} %llu\n", name,
            (unsigned long long)(s->models[m].info.parameter_count * sizeof(float)));
    }
    family(t, "fwm_session_bytes", "gauge", "Bytes one session of each model accounts for.");
    for (size_t m = 0; m < pm.count; m++) {
        label_value(s->models[m].name, name, sizeof name);
        add(t, "fwm_session_bytes{model=\"%s\"} %llu\n", name, (unsigned long long)s->models[m].session_bytes);
    }
    fwm__free(resident);
}

static void durability(text *t, fwm__server *s) {
    if (!s->store) return;
    fwm__store_info info;
    fwm__journal_store_info(s->journal, &info);
    fwm__journal_stats js;
    fwm__journal_get_stats(s->journal, &js);
    char why[300];
    const fwm__metrics *m = &s->metrics;
    scalar(t, "fwm_sessions_stored", "gauge", "Sessions in the durable store.", (double)info.sessions);
    scalar(t, "fwm_evictions_total", "counter", "Sessions written out of memory to the store.", (double)m->evictions);
    scalar(t, "fwm_loads_total", "counter", "Stored sessions brought back into memory.", (double)m->loads);
    scalar(t, "fwm_load_failures_total", "counter", "Stored sessions that could not be rebuilt.",
           (double)m->load_failures);
    histogram(t, "fwm_load_latency_seconds", "Time to bring a stored session back into memory.", &m->load_latency);
    scalar(t, "fwm_store_commits_total", "counter", "Store write transactions.", (double)js.commits);
    scalar(t, "fwm_store_fsyncs_total", "counter", "Store syncs to disk.", (double)js.fsyncs);
    histogram(t, "fwm_store_commit_latency_seconds", "Time of one store write transaction.", &js.commit_latency);
    scalar(t, "fwm_store_written_bytes_total", "counter", "Bytes written to the store.", (double)js.bytes_written);
    scalar(t, "fwm_store_write_failures_total", "counter", "Store writes that failed.", (double)js.failures);
    scalar(t, "fwm_storage_refusals_total", "counter", "Requests refused while the store could not write.",
           (double)m->storage_refusals);
    scalar(t, "fwm_store_file_bytes", "gauge", "Size of the store's file.", (double)info.file_bytes);
    scalar(t, "fwm_store_used_bytes", "gauge", "Bytes of the store in use.", (double)info.used_bytes);
    scalar(t, "fwm_store_max_bytes", "gauge", "The largest the store may grow.", (double)info.map_bytes);
    scalar(t, "fwm_store_healthy", "gauge", "1 while the store takes writes, 0 while they fail.",
           fwm__journal_healthy(s->journal, why, sizeof why) ? 1.0 : 0.0);
}

char *fwm__prometheus_render(fwm__server *s, size_t headroom, size_t *length) {
    text t = {.headroom = headroom, .capacity = 16384};
    char *block = fwm__malloc(headroom + t.capacity);
    if (!block) return NULL;
    t.data = block + headroom;
    const fwm__metrics *m = &s->metrics;
    fwm__scheduler_stats st;
    fwm__scheduler_get_stats(s->scheduler, &st);

    family(&t, "fwm_build_info", "gauge", "The server's version and protocol (value 1).");
    add(&t, "fwm_build_info{version=\"%s\",protocol=\"%d\"} 1\n", FWM_VERSION_STRING, FWM_PROTOCOL_VERSION);
    scalar(&t, "fwm_uptime_seconds", "gauge", "Seconds since the server started.",
           (double)(fwm__now_ns() - m->start_ns) / 1e9);
    scalar(&t, "fwm_workers", "gauge", "Compute threads.", (double)s->workers);
    models(&t, s);
    scalar(&t, "fwm_sessions_max", "gauge", "The most sessions the server holds (max-sessions).",
           (double)s->config->max_sessions);
    scalar(&t, "fwm_sessions_opened_total", "counter", "Sessions created (open, fork, restore).",
           (double)m->sessions_opened);
    scalar(&t, "fwm_sessions_closed_total", "counter", "Sessions closed by clients.", (double)m->sessions_closed);
    scalar(&t, "fwm_sessions_expired_total", "counter", "Sessions closed by idle-timeout.",
           (double)m->sessions_expired);
    scalar(&t, "fwm_tokens_total", "counter", "Tokens stepped through the models.", (double)st.tokens);
    scalar(&t, "fwm_tokens_queued", "gauge", "Tokens waiting to be stepped.", (double)st.tokens_queued);
    scalar(&t, "fwm_tokens_queued_max", "gauge", "Queued tokens beyond which requests are refused (max-queued-tokens).",
           (double)s->config->max_queued_tokens);
    family(&t, "fwm_batch_size", "histogram", "Sessions stepped together in one batched step (_count: the batches).");
    uint64_t cumulative = 0;
    for (unsigned k = 0; k < FWM_BATCH_SIZE_BUCKETS; k++) {
        cumulative += st.batch_sizes[k];
        add(&t, "fwm_batch_size_bucket{le=\"%llu\"} %llu\n", 1ull << k, (unsigned long long)cumulative);
    }
    add(&t, "fwm_batch_size_bucket{le=\"+Inf\"} %llu\n", (unsigned long long)st.batches);
    add(&t, "fwm_batch_size_sum %llu\nfwm_batch_size_count %llu\n", (unsigned long long)st.batch_sessions,
        (unsigned long long)st.batches);
    scalar(&t, "fwm_batch_size_max", "gauge", "The largest batch so far.", (double)st.batch_max);
    scalar(&t, "fwm_queue_depth", "gauge", "Sessions with work waiting for a worker.", (double)st.ready_sessions);
    scalar(&t, "fwm_parked_sessions", "gauge", "Sessions waiting for a slow reader to take its output.",
           (double)st.parked_sessions);
    scalar(&t, "fwm_jobs_pending", "gauge", "Requests queued or running.", (double)st.jobs_pending);
    histogram(&t, "fwm_token_latency_seconds", "Time from a token being ready to its step.", &st.token_latency);
    histogram(&t, "fwm_request_latency_seconds", "Time from a request's arrival to its response.",
              &m->request_latency);

    scalar(&t, "fwm_requests_total", "counter", "msgpack-RPC requests and notifications received.",
           (double)m->requests);
    family(&t, "fwm_errors_total", "counter", "Errors sent to clients (responses and notifications), by code.");
    for (int code = 1; code < FWM_ERROR_CODES; code++)
        add(&t, "fwm_errors_total{code=\"%s\"} %llu\n", fwm_rpc_code_name(code),
            (unsigned long long)m->errors_by_code[code]);
    scalar(&t, "fwm_protocol_errors_total", "counter", "Connections failed for a malformed or over-limit byte stream.",
           (double)m->protocol_errors);
    scalar(&t, "fwm_auth_failures_total", "counter", "Wrong tokens and requests before authentication.",
           (double)m->auth_failures);

    scalar(&t, "fwm_connections", "gauge", "Open msgpack-RPC connections (TCP, Unix socket, WebSocket).",
           (double)m->connections_open);
    scalar(&t, "fwm_websocket_connections", "gauge", "Of fwm_connections, those over WebSocket.",
           (double)m->websocket_connections_open);
    scalar(&t, "fwm_connections_max", "gauge", "The most connections served (max-connections).",
           (double)s->config->max_connections);
    scalar(&t, "fwm_connections_accepted_total", "counter", "msgpack-RPC connections accepted.",
           (double)m->connections_total);
    scalar(&t, "fwm_connections_refused_total", "counter", "Connections refused (limits, memory, descriptors).",
           (double)m->connections_refused);
    scalar(&t, "fwm_connections_timed_out_total", "counter", "Connections closed by a timeout.",
           (double)m->connections_timed_out);
    scalar(&t, "fwm_accept_errors_total", "counter", "Connections that could not be accepted.",
           (double)m->accept_errors);
    scalar(&t, "fwm_http_connections", "gauge", "Open connections on the HTTP port (WebSockets included).",
           (double)m->http_connections_open);
    scalar(&t, "fwm_http_connections_accepted_total", "counter", "Connections accepted on the HTTP port.",
           (double)m->http_connections_total);
    family(&t, "fwm_http_responses_total", "counter", "HTTP responses, by status class.");
    for (int c = 2; c <= 5; c++)
        add(&t, "fwm_http_responses_total{class=\"%dxx\"} %llu\n", c, (unsigned long long)m->http_responses[c]);

    scalar(&t, "fwm_memory_used_bytes", "gauge", "Memory the budget counts: sessions, buffers and weights.",
           (double)fwm__server_memory_used(s));
    scalar(&t, "fwm_memory_budget_bytes", "gauge", "The memory budget (max-memory-bytes).",
           (double)s->config->max_memory_bytes);
    scalar(&t, "fwm_memory_sessions_bytes", "gauge", "Memory of the resident sessions.",
           (double)m->session_memory_bytes);
    scalar(&t, "fwm_memory_output_queued_bytes", "gauge", "Encoded output not yet taken by clients.",
           (double)m->output_queued_bytes);
    scalar(&t, "fwm_memory_input_buffer_bytes", "gauge", "The connections' input buffers.",
           (double)m->input_buffer_bytes);
    scalar(&t, "fwm_memory_refusals_total", "counter", "Requests and connections refused by the memory budget.",
           (double)m->memory_refusals);
    scalar(&t, "process_resident_memory_bytes", "gauge", "Resident memory of the server process.",
           (double)resident_memory_bytes());
    durability(&t, s);

    if (t.failed) {
        fwm__free(t.data - t.headroom);
        return NULL;
    }
    *length = t.length;
    return t.data - t.headroom;
}
