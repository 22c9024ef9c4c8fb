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

#include "job_context.h"

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
