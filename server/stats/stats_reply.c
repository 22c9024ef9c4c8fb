/* stats_reply.c - the `stats` response from the metric lists (stats_reply.h). */
#include "stats_reply.h"

#include "fwm/fwm_protocol.h"
#include "metric_list.h"
#include "rpc_codec.h"
#include "tiering/cluster_node.h"

static void pack_histogram(msgpack_packer *pk, const fwm__histogram *h) {
    msgpack_pack_map(pk, 5);
    fwm__rpc_pack_cstr(pk, "count");
    msgpack_pack_uint64(pk, h->total);
    fwm__rpc_pack_cstr(pk, "p50");
    msgpack_pack_double(pk, fwm__histogram_percentile(h, 0.50) / 1000.0);
    fwm__rpc_pack_cstr(pk, "p90");
    msgpack_pack_double(pk, fwm__histogram_percentile(h, 0.90) / 1000.0);
    fwm__rpc_pack_cstr(pk, "p99");
    msgpack_pack_double(pk, fwm__histogram_percentile(h, 0.99) / 1000.0);
    fwm__rpc_pack_cstr(pk, "max");
    msgpack_pack_double(pk, (double)h->max_us / 1000.0);
}

/* The list's `stats` rows as keys and values of the map being packed. */
static void pack_rows(msgpack_packer *pk, const fwm__metric_list *list, const fwm__metric_values *v) {
    for (size_t i = 0; i < list->count; i++) {
        const fwm__metric *row = &list->rows[i];
        if (!row->stats_key) continue;
        const void *value = (const char *)v + row->offset;
        fwm__rpc_pack_cstr(pk, row->stats_key);
        switch (row->kind) {
        case FWM_METRIC_COUNTER:
        case FWM_METRIC_GAUGE:
            msgpack_pack_uint64(pk, *(const uint64_t *)value);
            break;
        case FWM_METRIC_REAL:
            msgpack_pack_double(pk, *(const double *)value);
            break;
        case FWM_METRIC_HISTOGRAM:
            pack_histogram(pk, value);
            break;
        case FWM_METRIC_FLAG:
            fwm__rpc_pack_bool(pk, *(const bool *)value);
            break;
        case FWM_METRIC_TEXT: {
            const char *text = *(const char *const *)value;
            if (text) fwm__rpc_pack_cstr(pk, text);
            else msgpack_pack_nil(pk);
            break;
        }
        case FWM_METRIC_INFO: /* /metrics only (nil, should a row give it a `stats` key) */
            msgpack_pack_nil(pk);
            break;
        case FWM_METRIC_BY_CODE: { /* by code name */
            const uint64_t *counts = *(const uint64_t *const *)value;
            msgpack_pack_map(pk, FWM_ERROR_CODES - 1);
            for (int code = 1; code < FWM_ERROR_CODES; code++) {
                fwm__rpc_pack_cstr(pk, fwm_rpc_code_name(code));
                msgpack_pack_uint64(pk, counts[code]);
            }
            break;
        }
        }
    }
}

void fwm__stats_pack(msgpack_packer *pk, fwm__server *s, const fwm__lookup_node *nodes, size_t node_count) {
    fwm__metric_values v;
    fwm__metric_values_read(&v, s);
    msgpack_pack_map(pk, fwm__metric_list_stats_count(&fwm__metrics_top) + 3);
    pack_rows(pk, &fwm__metrics_top, &v);
    fwm__rpc_pack_cstr(pk, "memory");
    msgpack_pack_map(pk, fwm__metric_list_stats_count(&fwm__metrics_memory));
    pack_rows(pk, &fwm__metrics_memory, &v);
    fwm__rpc_pack_cstr(pk, "durability"); /* nil: sessions live in memory only */
    if (v.durable) {
        msgpack_pack_map(pk, fwm__metric_list_stats_count(&fwm__metrics_durability));
        pack_rows(pk, &fwm__metrics_durability, &v);
    } else {
        msgpack_pack_nil(pk);
    }
    fwm__cluster_node_pack_stats(pk, s, nodes, node_count);
}
