/* prometheus.c - the metrics as Prometheus text (prometheus.h): the lists of metric_list.h, and the
 * families with labels (build, models, batch sizes, HTTP status classes). */
#include "prometheus.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fwm/fwm_protocol.h"
#include "fwm_alloc.h"
#include "fwm_utf8.h"
#include "metric_list.h"

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

/* The list's /metrics rows. */
static void rows(text *t, const fwm__metric_list *list, const fwm__metric_values *v) {
    for (size_t i = 0; i < list->count; i++) {
        const fwm__metric *row = &list->rows[i];
        if (!row->prometheus) continue;
        const void *value = (const char *)v + row->offset;
        switch (row->kind) {
        case FWM_METRIC_COUNTER:
            scalar(t, row->prometheus, "counter", row->help, (double)*(const uint64_t *)value);
            break;
        case FWM_METRIC_GAUGE:
            scalar(t, row->prometheus, "gauge", row->help, (double)*(const uint64_t *)value);
            break;
        case FWM_METRIC_REAL:
            scalar(t, row->prometheus, "gauge", row->help, *(const double *)value);
            break;
        case FWM_METRIC_FLAG:
            scalar(t, row->prometheus, "gauge", row->help, *(const bool *)value ? 1.0 : 0.0);
            break;
        case FWM_METRIC_HISTOGRAM:
            histogram(t, row->prometheus, row->help, value);
            break;
        case FWM_METRIC_BY_CODE: {
            const uint64_t *counts = *(const uint64_t *const *)value;
            family(t, row->prometheus, "counter", row->help);
            for (int code = 1; code < FWM_ERROR_CODES; code++)
                add(t, "%s{code=\"%s\"} %llu\n", row->prometheus, fwm_rpc_code_name(code),
                    (unsigned long long)counts[code]);
            break;
        }
        case FWM_METRIC_TEXT: /* `stats` only */
            break;
        }
    }
}

char *fwm__prometheus_render(fwm__server *s, size_t headroom, size_t *length) {
    text t = {.headroom = headroom, .capacity = 16384};
    char *block = fwm__malloc(headroom + t.capacity);
    if (!block) return NULL;
    t.data = block + headroom;
    const fwm__metrics *m = &s->metrics;
    fwm__metric_values v;
    fwm__metric_values_read(&v, s);
    fwm__scheduler_stats st;
    fwm__scheduler_get_stats(s->scheduler, &st);
    family(&t, "fwm_build_info", "gauge", "The server's version and protocol (value 1).");
    add(&t, "fwm_build_info{version=\"%s\",protocol=\"%d\"} 1\n", FWM_VERSION_STRING, FWM_PROTOCOL_VERSION);
    rows(&t, &fwm__metrics_top, &v);
    models(&t, s);
    family(&t, "fwm_batch_size", "histogram", "Sessions stepped together in one batched step (_count: the batches).");
    uint64_t cumulative = 0;
    for (unsigned k = 0; k < FWM_BATCH_SIZE_BUCKETS; k++) {
        cumulative += st.batch_sizes[k];
        add(&t, "fwm_batch_size_bucket{le=\"%llu\"} %llu\n", 1ull << k, (unsigned long long)cumulative);
    }
    add(&t, "fwm_batch_size_bucket{le=\"+Inf\"} %llu\n", (unsigned long long)st.batches);
    add(&t, "fwm_batch_size_sum %llu\nfwm_batch_size_count %llu\n", (unsigned long long)st.batch_sessions,
        (unsigned long long)st.batches);
    family(&t, "fwm_http_responses_total", "counter", "HTTP responses, by status class.");
    for (int c = 2; c <= 5; c++)
        add(&t, "fwm_http_responses_total{class=\"%dxx\"} %llu\n", c, (unsigned long long)m->http_responses[c]);
    rows(&t, &fwm__metrics_memory, &v);
    if (v.durable) rows(&t, &fwm__metrics_durability, &v);

    if (t.failed) {
        fwm__free(t.data - t.headroom);
        return NULL;
    }
    *length = t.length;
    return t.data - t.headroom;
}
