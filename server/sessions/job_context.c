/* job_context.c - a worker's scratch for running jobs, and the outbox it fills (job_context.h). */
#include "job_context.h"

#include <stdio.h>
#include <string.h>

#include "fwm_alloc.h"

/* An empty outbox with room for the context's reserve of records; NULL when out of memory. */
static fwm__outbox *new_outbox(const fwm__job_context *ctx) {
    fwm__outbox *o = fwm__calloc(1, sizeof *o);
    if (!o) return NULL;
    o->records = fwm__calloc(ctx->record_reserve ? ctx->record_reserve : 1, sizeof *o->records);
    if (!o->records) {
        fwm__free(o);
        return NULL;
    }
    o->record_capacity = ctx->record_reserve ? ctx->record_reserve : 1;
    msgpack_sbuffer_init(&o->buffer);
    return o;
}

bool fwm__job_context_reserve(fwm__job_context *ctx, size_t records) {
    ctx->record_reserve = records;
    fwm__outbox_free(ctx->spare);
    ctx->spare = new_outbox(ctx);
    return ctx->spare != NULL;
}

bool fwm__job_context_init(fwm__job_context *ctx, const fwm_model *const *models, size_t count) {
    memset(ctx, 0, sizeof *ctx);
    ctx->models = models;
    ctx->model_count = count;
    ctx->infos = fwm__calloc(count, sizeof *ctx->infos);
    if (!ctx->infos) return false;
    uint32_t max_vocab = 1;
    for (size_t m = 0; m < count; m++) {
        fwm_model_get_info(models[m], &ctx->infos[m]);
        if (ctx->infos[m].vocab_size > max_vocab) max_vocab = ctx->infos[m].vocab_size;
        if (ctx->infos[m].state_blob_bytes > ctx->blob_capacity) ctx->blob_capacity = ctx->infos[m].state_blob_bytes;
    }
    ctx->predictions = fwm__calloc(max_vocab, sizeof *ctx->predictions);
    ctx->scores = fwm__calloc(max_vocab, sizeof *ctx->scores);
    ctx->blob = fwm__malloc(ctx->blob_capacity ? ctx->blob_capacity : 1);
    ctx->record_reserve = 16;
    ctx->spare = new_outbox(ctx);
    return ctx->predictions && ctx->scores && ctx->blob && ctx->spare;
}

void fwm__job_context_release(fwm__job_context *ctx) {
    fwm__free(ctx->infos);
    fwm__free(ctx->predictions);
    fwm__free(ctx->scores);
    fwm__free(ctx->blob);
    fwm__free(ctx->load_buffer);
    fwm__free(ctx->replay_tokens);
    fwm__outbox_free(ctx->outbox);
    fwm__outbox_free(ctx->spare);
    memset(ctx, 0, sizeof *ctx);
}

uint32_t fwm__job_context_vocab(const fwm__job_context *ctx, size_t model_index) {
    return ctx->infos[model_index].vocab_size;
}

void fwm__job_context_post(fwm__job_context *ctx, void (*post)(void *user, fwm__outbox *outbox),
                           void *user) {
    fwm__outbox *outbox = ctx->outbox;
    ctx->outbox = NULL;
    if (!ctx->spare) ctx->spare = new_outbox(ctx); /* the spare was used: another, when memory allows */
    if (!outbox) return;
    if (outbox->record_count == 0 && outbox->sessions_freed == 0 && outbox->op_count == 0 && !outbox->store_failed) {
        fwm__outbox_free(outbox);
        return;
    }
    post(user, outbox);
}

fwm__outbox *fwm__job_context_outbox(fwm__job_context *ctx) {
    if (!ctx->outbox) {
        ctx->outbox = new_outbox(ctx);
        if (!ctx->outbox && ctx->spare) { /* a job that changes a session must never go unrecorded: fail it whole */
            ctx->outbox = ctx->spare;
            ctx->spare = NULL;
            if (ctx->store) {
                ctx->outbox->store_failed = true;
                snprintf(ctx->outbox->store_error, sizeof ctx->outbox->store_error,
                         "out of memory recording the request");
            }
        }
    }
    return ctx->outbox;
}
