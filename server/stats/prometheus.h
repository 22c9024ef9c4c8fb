/* prometheus.h - the server's metrics in the Prometheus text exposition format (GET /metrics).
 *
 * Names follow Prometheus' conventions: the fwm_ prefix, base units (seconds, bytes), _total for
 * counters, histograms for token and request latency, and no session ids in labels (only `model`,
 * `code` and `class`, whose values are few). The values are those `stats` reports, read at once.
 */
#ifndef FWM_SERVER_PROMETHEUS_H
#define FWM_SERVER_PROMETHEUS_H

#include <stddef.h>

#include "server.h"

/* The exposition text in an owned, NUL-terminated buffer with `headroom` spare bytes before it
 * (returned pointer is the allocation; the text begins at +headroom), or NULL when out of memory. */
char *fwm__prometheus_render(fwm__server *server, size_t headroom, size_t *length);

#endif
