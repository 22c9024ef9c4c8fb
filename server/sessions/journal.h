/* journal.h - the write-ahead journal of a durable fwm-serve: one thread between the workers and
 * the loop that writes every outbox's store operations before the loop may send its messages.
 *
 * Workers hand their outboxes here instead of to the loop. The journal thread takes everything
 * queued, applies the operations of all of it in one store batch (group commit), commits, forces
 * the batch to disk when the fsync mode says so, and only then passes the outboxes on, in the order
 * they came, to the loop (`post`). So a response never leaves before the records of its operations
 * are committed (a killed process loses nothing acknowledged), and with `--fsync always` before
 * they are on disk; one fsync serves every session stepped in that interval. With `--fsync interval`
 * a second thread forces the commits to disk every interval, beside the writes (never in their way).
 *
 * Failures: when a batch cannot be written (disk or map full, I/O error), the outboxes of that batch
 * are retried one by one; each that still fails is passed on marked store_failed (nothing of it was
 * written) and its sessions are fenced: later operations on them are refused too, until the loop
 * has rebuilt them from the store (an FWM_OP_LOAD marker passes). While writes fail the journal is
 * `degraded` (the loop refuses state-changing requests with `storage`); it probes for space once a
 * second and recovers by itself.
 *
 * Threading: submit, health and stats from any thread; post runs on the journal thread (or, inline,
 * on the caller's).
 */
#ifndef FWM_SERVER_JOURNAL_H
#define FWM_SERVER_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/metrics.h"
#include "job.h"
#include "store/store.h"

typedef enum fwm__fsync_mode {
    FWM_FSYNC_ALWAYS,   /* a response leaves only after its records are on disk */
    FWM_FSYNC_INTERVAL, /* records are committed before the response, forced to disk every interval */
    FWM_FSYNC_NEVER,    /* committed before the response; the operating system writes them when it likes */
} fwm__fsync_mode;

typedef struct fwm__journal_params {
    fwm__store *store; /* borrowed */
    fwm__fsync_mode mode;
    uint64_t interval_ms; /* FWM_FSYNC_INTERVAL */
    void (*post)(void *user, fwm__outbox *outbox); /* takes ownership */
    void *user;
    bool remote_store; /* the store answers over a network (Redis): never written from the loop */
} fwm__journal_params;

typedef struct fwm__journal fwm__journal;

typedef struct fwm__journal_stats {
    uint64_t commits;        /* store batches committed */
    uint64_t fsyncs;
    uint64_t failures;       /* outboxes passed on as store_failed */
    uint64_t log_bytes;      /* log record bytes written */
    uint64_t bytes_written;  /* every record byte written */
    uint64_t queued;         /* outboxes waiting */
    fwm__histogram commit_latency; /* submit -> passed on, microseconds */
} fwm__journal_stats;

fwm__journal *fwm__journal_start(const fwm__journal_params *params);
/* Write and pass on everything queued, sync, stop the thread, free. NULL is a no-op. */
void fwm__journal_stop(fwm__journal *journal);

void fwm__journal_submit(fwm__journal *journal, fwm__outbox *outbox);

/* --fsync interval and never with a local store (LMDB) need no thread between the workers and the
 * loop: the loop writes each list of outboxes itself, in one batch, right before it delivers them (a
 * commit without fsync takes tens of microseconds; a thread hand-off more per batch cost more than
 * that). The journal thread then only probes a failing store; the syncer thread still forces
 * commits to disk (interval). With --fsync always the fsync must not stall the loop, nor, in every
 * mode, a remote store's round trips (a Redis that stalls for its whole command timeout): outboxes
 * go through the journal thread. */
bool fwm__journal_inline(const fwm__journal *journal);

/* The store's figures (sessions stored, bytes) for stats, /metrics and --max-sessions: asked of a
 * local store there and then; a remote store's as the journal thread last read them (once a
 * second), so the loop never waits for Redis to count. false (and zeros) when they could not be
 * read. Loop thread. */
bool fwm__journal_store_info(fwm__journal *journal, fwm__store_info *out);
/* A new session's first records were committed (loop thread, as it delivers them): a remote
 * store's count then includes it before the next reading, so --max-sessions never counts too few
 * (it may count a closed session for up to a second). */
void fwm__journal_count_recorded_open(fwm__journal *journal);
/* Inline mode, loop thread only: write the operations of the outboxes of the list `batch`, marking
 * those that could not be written (store_failed); the caller then delivers them, in order. */
void fwm__journal_write_inline(fwm__journal *journal, fwm__outbox *batch);
/* Whether nothing is queued or being written. */
bool fwm__journal_idle(fwm__journal *journal);
/* Whether writes currently succeed; when not, `why` (may be NULL) names the problem. */
bool fwm__journal_healthy(fwm__journal *journal, char *why, size_t why_size);
void fwm__journal_get_stats(fwm__journal *journal, fwm__journal_stats *out);

const char *fwm__fsync_mode_name(fwm__fsync_mode mode);

#endif
