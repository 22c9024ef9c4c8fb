/* jobs.h - what each kind of job does on a worker, and the messages it emits into the outbox.
 *
 * The scheduler decides when a session's head job runs and batches the steps; this file decides
 * what a step or a cheap job means for the client: `token` notifications, responses, error
 * responses, and the bookkeeping records (table insertions for fork/restore, closed sessions).
 * Runs on a worker thread, on a session that worker alone holds. Not for: queueing (scheduler.c).
 */
#ifndef FWM_SERVER_JOBS_H
#define FWM_SERVER_JOBS_H

#include <stdbool.h>
#include <stddef.h>

#include "scheduler.h"

typedef struct fwm__job_context {
    const fwm_model *const *models; /* borrowed */
    size_t model_count;
    fwm_model_info *infos;          /* owned, one per model */
    fwm_prediction *predictions;    /* owned, max vocabulary entries */
    float *scores;                  /* owned, max vocabulary floats: a feed's scores before its first token */
    void *blob;                     /* owned scratch for snapshots */
    size_t blob_capacity;
    fwm__outbox *outbox;            /* being filled; handed over by fwm__job_context_post */
    fwm__outbox *spare;             /* taken when an outbox cannot be allocated (fwm__job_context_outbox) */
    size_t record_reserve;          /* records an outbox is made with and token notifications leave free:
                                       a job's end (its response, its connection's release) always has one */
    /* durable mode: */
    struct fwm__store *store;       /* borrowed; NULL: memory only */
    const char *advertise;          /* borrowed: cluster: this node's address; NULL outside a cluster */
    const char *const *model_names; /* borrowed */
    size_t snapshot_tokens;
    void *load_buffer;              /* owned scratch for snapshots read back */
    size_t load_capacity;
    uint32_t *replay_tokens;        /* owned scratch for log replay */
    size_t replay_capacity;
} fwm__job_context;

bool fwm__job_context_init(fwm__job_context *ctx, const fwm_model *const *models, size_t count);
/* Make every outbox with room for `records` records (the ends of the jobs of one batch, at most),
 * the spare too; false when out of memory (the spare is then missing, as after its use). */
bool fwm__job_context_reserve(fwm__job_context *ctx, size_t records);
/* The outbox being filled, created on first use. Out of memory, the context's spare is taken instead,
 * marked failed in durable mode (its requests are then refused with `storage` and their sessions
 * rebuilt from the store, so nothing applied in memory goes unrecorded); NULL only when the spare is
 * gone too. */
fwm__outbox *fwm__job_context_outbox(fwm__job_context *ctx);
void fwm__job_context_release(fwm__job_context *ctx);
uint32_t fwm__job_context_vocab(const fwm__job_context *ctx, size_t model_index);
/* Hand the outbox (if it holds anything) to `post`. */
void fwm__job_context_post(fwm__job_context *ctx, void (*post)(void *user, fwm__outbox *outbox),
                           void *user);

/* Tokens the job still has to step (an ASK with commit counts its answer before it is known). */
size_t fwm__job_tokens_left(const fwm__job *job);

/* Before `job` (FEED or ASK) steps its first token: a FEED with logprobs scores that token from the
 * session's state (its cached prediction, else fwm_session_predict). False when the job has ended
 * (failed) instead. */
bool fwm__job_before_first_step(fwm__job_context *ctx, fwm__session_entry *entry, fwm__job *job);
/* After `job` (FEED or ASK) stepped one token (entry->last_logits holds the new prediction): emit
 * its notification and, when it is complete, its response. True when the job has ended. */
bool fwm__job_after_step(fwm__job_context *ctx, fwm__session_entry *entry, fwm__job *job);
/* Run a job that needs no step (PREDICT, RESET, FORK, SNAPSHOT, RESTORE, CLOSE, or a FEED/ASK
 * with nothing left to step) and emit its response. Always ends the job: returns true. */
bool fwm__job_run(fwm__job_context *ctx, fwm__session_entry *entry, fwm__job *job);
/* End the job with an error response. Returns true. */
bool fwm__job_fail(fwm__job_context *ctx, fwm__session_entry *entry, fwm__job *job, int code,
                   const char *message);
/* End the job with `moved` (cluster: this node no longer owns the session; ask it again, it claims
 * the session anew or names its owner). Returns true. */
bool fwm__job_fail_moved(fwm__job_context *ctx, fwm__session_entry *entry, fwm__job *job);

#endif
