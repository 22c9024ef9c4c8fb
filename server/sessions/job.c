/* job.c - making and freeing jobs and outboxes (job.h). */
#include "job.h"

#include "fwm_alloc.h"

fwm__job *fwm__job_new(fwm__job_kind kind) {
    fwm__job *job = fwm__calloc(1, sizeof *job);
    if (job) job->kind = kind;
    return job;
}

void fwm__job_free(fwm__job *job) {
    if (!job) return;
    fwm__free(job->tokens);
    fwm__free(job->answer_topk);
    fwm__free(job->logprob);
    fwm__free(job->unknown);
    fwm__free(job->blob);
    fwm__session_entry_free(job->child); /* only still owned if it was never posted */
    fwm__free(job);
}

void fwm__outbox_free(fwm__outbox *outbox) {
    if (!outbox) return;
    msgpack_sbuffer_destroy(&outbox->buffer);
    for (size_t i = 0; i < outbox->record_count; i++) fwm__session_entry_free(outbox->records[i].insert);
    fwm__free(outbox->records);
    fwm__free(outbox->store_bytes);
    fwm__free(outbox->ops);
    fwm__free(outbox);
}
