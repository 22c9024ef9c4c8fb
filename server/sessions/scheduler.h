/* scheduler.h - continuous batching of session steps over a pool of worker threads.
 *
 * Every request that touches a session's state becomes a job on that session's queue, so a
 * session's requests run strictly in the order they arrived. Sessions with pending jobs wait on one
 * ready list (FIFO). A worker takes a share of the ready sessions (at most max_batch, about
 * ready/workers so all workers get work), gives each one step of its head job, and runs the steps of
 * all of them in one fwm_batch_step per model: one token per session per batch. Sessions with more
 * work go back to the tail of the ready list, so new sessions join the next batch (continuous
 * batching) and no session starves. The cheap jobs (predict, reset, fork, snapshot, restore, close)
 * run on the worker when they reach the head of their session's queue.
 *
 * Results leave as an outbox: one buffer of encoded msgpack messages plus records saying which
 * connection ("sink") each slice is for, handed to the `post` callback (the server wakes its loop).
 * The scheduler knows nothing of sockets: a sink is the scheduler-visible part of a connection.
 *
 * Backpressure: a job whose sink is blocked (congested, or holding more than max_unsent bytes the
 * loop has not taken yet) is not stepped; its session is parked until the sink is unblocked
 * (fwm__scheduler_set_congested, fwm__scheduler_delivered). Output is thus bounded per connection
 * even when the loop lags behind the workers.
 *
 * Threading: all functions may be called from any thread; the post callback runs on a worker thread.
 */
#ifndef FWM_SERVER_SCHEDULER_H
#define FWM_SERVER_SCHEDULER_H

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/metrics.h"
#include "fwm/fwm.h"
#include "job.h"
#include "session_table.h"

struct fwm__store;

typedef struct fwm__scheduler_params {
    const fwm_model *const *models; /* borrowed, `model_count` of them */
    const char *const *model_names; /* borrowed: the served names (recorded with durable sessions) */
    size_t model_count;
    struct fwm__store *store;       /* durable mode: where sessions are loaded from; NULL: memory only */
    size_t snapshot_tokens;         /* durable mode: snapshot a session after this many logged tokens */
    size_t workers;   /* >= 1 */
    size_t max_batch; /* >= 1: sessions stepped in one batch by one worker */
    size_t max_unsent; /* a sink with more posted-but-undelivered bytes is not stepped; 0: no limit */
    const char *advertise; /* cluster: this node's address (the `moved` of a dropped entry's jobs); or NULL */
    void (*post)(void *user, fwm__outbox *outbox); /* takes ownership of outbox */
    void *user;
} fwm__scheduler_params;

typedef struct fwm__scheduler fwm__scheduler;

/* Start the workers. NULL when out of memory or threads cannot start. */
fwm__scheduler *fwm__scheduler_start(const fwm__scheduler_params *params);
/* Finish every queued job (or cancel them when fwm__scheduler_cancel was called), stop and join
 * the workers, free the scheduler. NULL is a no-op. Entries still in the table are not freed. */
void fwm__scheduler_stop(fwm__scheduler *scheduler);

/* Append a job to `entry`'s queue (ownership passes); the session becomes ready if it was idle. */
void fwm__scheduler_submit(fwm__scheduler *scheduler, fwm__session_entry *entry, fwm__job *job);
/* Cluster: `entry` was dropped because this node no longer owns its session (loop thread): every job
 * still queued for it, except the CLOSE that frees it, is answered `moved` instead of running. */
void fwm__scheduler_move_away(fwm__scheduler *scheduler, fwm__session_entry *entry);
/* Mark a sink (un)congested; uncongesting makes its parked sessions ready again. */
void fwm__scheduler_set_congested(fwm__scheduler *scheduler, fwm__sink *sink, bool congested);
/* The loop handed `bytes` of a sink's posted output to its connection (see max_unsent). */
void fwm__scheduler_delivered(fwm__scheduler *scheduler, fwm__sink *sink, size_t bytes);
/* From now on, jobs end without stepping, answering FWM_RPC_SHUTTING_DOWN. */
void fwm__scheduler_cancel(fwm__scheduler *scheduler);

/* How many jobs were ever submitted to the entry. */
uint64_t fwm__scheduler_entry_jobs(fwm__scheduler *scheduler, const fwm__session_entry *entry);
/* Whether the entry has jobs queued or running. */
bool fwm__scheduler_entry_busy(fwm__scheduler *scheduler, const fwm__session_entry *entry);

#define FWM_BATCH_SIZE_BUCKETS 18 /* batch sizes up to 2^17 sessions (max-batch is at most 65536) */

typedef struct fwm__scheduler_stats {
    uint64_t tokens;           /* stepped since start */
    uint64_t batches;          /* fwm_batch_step calls */
    uint64_t batch_sessions;   /* sum of their sizes */
    uint64_t batch_max;
    uint64_t batch_sizes[FWM_BATCH_SIZE_BUCKETS]; /* [k]: batches of more than 2^(k-1) and at most 2^k sessions */
    uint64_t jobs_pending;     /* queued or running */
    uint64_t tokens_queued;    /* not yet stepped */
    uint64_t ready_sessions;   /* queue depth: sessions waiting for a worker */
    uint64_t parked_sessions;  /* waiting for a congested connection */
    fwm__histogram token_latency; /* per token: ready -> stepped, microseconds */
} fwm__scheduler_stats;

void fwm__scheduler_get_stats(fwm__scheduler *scheduler, fwm__scheduler_stats *out);
/* Tokens stepped for model `model` (an index of params.models) since start. */
uint64_t fwm__scheduler_model_tokens(fwm__scheduler *scheduler, size_t model);
uint64_t fwm__scheduler_tokens_queued(fwm__scheduler *scheduler);

#endif
