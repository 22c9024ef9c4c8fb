/* metric_values.c - the lists of metric_list.h as rows, and their values read from the server. */
#include "metric_list.h"

#include <stdio.h>
#include <unistd.h>

#include "fwm/fwm_protocol.h"
#include "fwm/fwm_version.h"
#include "server.h"

#define FWM_METRIC_ROW(kind, field, key, name, help, value) \
    {FWM_METRIC_##kind, key, name, help, offsetof(fwm__metric_values, field)},

static const fwm__metric top_rows[] = {FWM_METRICS_TOP(FWM_METRIC_ROW)};
static const fwm__metric memory_rows[] = {FWM_METRICS_MEMORY(FWM_METRIC_ROW)};
static const fwm__metric durability_rows[] = {FWM_METRICS_DURABILITY(FWM_METRIC_ROW)};

const fwm__metric_list fwm__metrics_top = {top_rows, sizeof top_rows / sizeof *top_rows};
const fwm__metric_list fwm__metrics_memory = {memory_rows, sizeof memory_rows / sizeof *memory_rows};
const fwm__metric_list fwm__metrics_durability = {durability_rows, sizeof durability_rows / sizeof *durability_rows};

size_t fwm__metric_list_stats_count(const fwm__metric_list *list) {
    size_t count = 0;
    for (size_t i = 0; i < list->count; i++) count += list->rows[i].stats_key != NULL;
    return count;
}

static uint64_t model_weights_bytes(const fwm__server *s) {
    uint64_t weights = 0;
    for (size_t i = 0; i < s->model_count; i++) weights += s->models[i].info.parameter_count * sizeof(float);
    return weights;
}

static uint64_t process_resident_bytes(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long long size = 0, resident = 0;
    if (f) {
        if (fscanf(f, "%llu %llu", &size, &resident) != 2) resident = 0;
        fclose(f);
    }
    long page = sysconf(_SC_PAGE_SIZE);
    return resident * (uint64_t)(page > 0 ? page : 4096);
}

#define FWM_METRIC_READ(kind, field, key, name, help, value) v->field = (value);

static void read_durability(fwm__metric_values *v, fwm__server *s) {
    const fwm__metrics *m = &s->metrics;
    fwm__store_info info;
    fwm__journal_store_info(s->journal, &info);
    fwm__journal_stats js;
    fwm__journal_get_stats(s->journal, &js);
    v->why[0] = '\0';
    bool healthy = fwm__journal_healthy(s->journal, v->why, sizeof v->why);
    FWM_METRICS_DURABILITY(FWM_METRIC_READ)
    v->durable = true;
}

void fwm__metric_values_read(fwm__metric_values *v, fwm__server *s) {
    const fwm__metrics *m = &s->metrics;
    fwm__scheduler_stats st;
    fwm__scheduler_get_stats(s->scheduler, &st);
    double uptime = (double)(fwm__now_ns() - m->start_ns) / 1e9;
    FWM_METRICS_TOP(FWM_METRIC_READ)
    FWM_METRICS_MEMORY(FWM_METRIC_READ)
    v->durable = false;
    if (s->store) read_durability(v, s);
}
