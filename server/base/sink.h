/* sink.h - where a job's output goes: the part of a connection the scheduler sees.
 *
 * Embedded in the connection (net/connection.h); the scheduler (sessions/scheduler.c) stops stepping
 * a sink's jobs while it is congested or holds too much unsent output. Fields guarded by the
 * scheduler's mutex.
 */
#ifndef FWM_SERVER_BASE_SINK_H
#define FWM_SERVER_BASE_SINK_H

#include <stdbool.h>
#include <stddef.h>

/* The scheduler's view of a connection. Embedded in the connection; fields guarded by the
 * scheduler's mutex. */
typedef struct fwm__sink {
    bool congested; /* the connection has more unsent output than it may hold */
    size_t unsent;  /* bytes posted by workers and not yet delivered to the connection */
    size_t reserved; /* an upper bound of what running batches will post (see take_batch) */
} fwm__sink;


#endif
