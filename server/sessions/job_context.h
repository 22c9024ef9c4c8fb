/* job_context.h - what a worker runs jobs with: the models, scratch buffers, the store (durable
 * mode), and the outbox being filled, handed on when the worker's batch is done.
 *
 * One per worker (scheduler.c); used by jobs.c, durable_session.c and trace_job.c on that worker.
 */
#ifndef FWM_SERVER_SESSIONS_JOB_CONTEXT_H
#define FWM_SERVER_SESSIONS_JOB_CONTEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fwm/fwm.h"
#include "job.h"

struct fwm__store;

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

#endif
