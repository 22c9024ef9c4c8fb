/* prometheus.c - the metrics as Prometheus text (prometheus.h): the lists of metric_list.h, each kind
 * of row written by one function here. */
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

#define LABEL_BYTES 600 /* a model's name as a label value */

/* A BY_MODEL_* row: the sample of each model, `labels[i]` its name as a label value. */
#define BY_MODEL_FAMILY(type, name, help, value)                                                                    \
    do {                                                                                                           \
        family(t, name, type, help);                                                                               \
        for (size_t i = 0; i < s->model_count; i++)                                                                \
            add(t, "%s{model=\"%s\"} %llu\n", name, labels + i * LABEL_BYTES, (unsigned long long)(value));          \
    } while (0)
#define LABELLED_BY_MODEL_GAUGE(name, help, value) BY_MODEL_FAMILY("gauge", name, help, value)
#define LABELLED_BY_MODEL_COUNTER(name, help, value) BY_MODEL_FAMILY("counter", name, help, value)
#define LABELLED_MODEL_INFO(name, help, value) model_info(t, s, labels, name, help)
#define LABELLED_BUCKETS(name, help, value) buckets(t, name, help, value)
#define LABELLED_BY_CLASS(name, help, value) by_class(t, name, help, value)

static void model_info(text *t, const fwm__server *s, const char *labels, const char *name, const char *help) {
    family(t, name, "gauge", help);
    for (size_t i = 0; i < s->model_count; i++)
        add(t, "%s{model=\"%s\",fingerprint=\"%s\",default=\"%s\"} 1\n", name, labels + i * LABEL_BYTES,
            s->models[i].fingerprint, i == 0 ? "true" : "false");
}

static void buckets(text *t, const char *name, const char *help, fwm__metric_buckets b) {
    family(t, name, "histogram", help);
    uint64_t cumulative = 0;
    for (unsigned k = 0; k < b.count; k++) {
        cumulative += b.counts[k];
        add(t, "%s_bucket{le=\"%llu\"} %llu\n", name, 1ull << k, (unsigned long long)cumulative);
    }
    add(t, "%s_bucket{le=\"+Inf\"} %llu\n", name, (unsigned long long)b.total);
    add(t, "%s_sum %llu\n%s_count %llu\n", name, (unsigned long long)b.sum, name, (unsigned long long)b.total);
}

static void by_class(text *t, const char *name, const char *help, const uint64_t *counts) {
    family(t, name, "counter", help);
    for (int c = 2; c <= 5; c++) add(t, "%s{class=\"%dxx\"} %llu\n", name, c, (unsigned long long)counts[c]);
}

/* The labelled list's families (metric_list.h), its VALUE expressions read here. */
static void labelled(text *t, fwm__server *s) {
    const fwm__metrics *m = &s->metrics;
    fwm__scheduler_stats st;
    fwm__scheduler_get_stats(s->scheduler, &st);
    per_model pm = {fwm__calloc(s->model_count, sizeof *pm.resident), s->model_count};
    char *labels = fwm__malloc(s->model_count * LABEL_BYTES);
    if (!pm.resident || !labels) {
        fwm__free(pm.resident);
        fwm__free(labels);
        t->failed = true;
        return;
    }
    const uint64_t *resident = pm.resident;
    fwm__session_table_each(&s->sessions, count_model, &pm);
    for (size_t i = 0; i < s->model_count; i++) label_value(s->models[i].name, labels + i * LABEL_BYTES, LABEL_BYTES);
#define FWM_LABELLED_FAMILY(kind, name, help, value) LABELLED_##kind(name, help, value);
    FWM_METRICS_LABELLED(FWM_LABELLED_FAMILY)
#undef FWM_LABELLED_FAMILY
    fwm__free(pm.resident);
    fwm__free(labels);
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
        case FWM_METRIC_INFO:
            family(t, row->prometheus, "gauge", row->help);
            add(t, "%s{%s} 1\n", row->prometheus, *(const char *const *)value);
            break;
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
    fwm__metric_values v;
    fwm__metric_values_read(&v, s);
    rows(&t, &fwm__metrics_top, &v);
    labelled(&t, s);
    rows(&t, &fwm__metrics_memory, &v);
    if (v.durable) rows(&t, &fwm__metrics_durability, &v);

    if (t.failed) {
        fwm__free(t.data - t.headroom);
        return NULL;
    }
    *length = t.length;
    return t.data - t.headroom;
}
