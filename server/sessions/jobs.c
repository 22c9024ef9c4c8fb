/* jobs.c - job semantics and their messages (see jobs.h; message shapes in docs/PROTOCOL.md). */
#include "jobs.h"

#include <stdio.h>
#include <string.h>

#include "base/metrics.h"
#include "durable_session.h"
#include "trace_job.h"
#include "fwm_alloc.h"
#include "rpc_codec.h"

size_t fwm__job_tokens_left(const fwm__job *job) {
    if (job->kind == FWM_JOB_FEED) return job->count - job->done;
    if (job->kind == FWM_JOB_ASK) return job->count - job->done + (job->commit && !job->answered ? 1 : 0);
    return 0;
}

/* A record for `job`'s output from `offset`. Records that must not be lost (`ending`: a job's end,
 * a load's or an eviction's outcome, a fork's child) always find one: token notifications leave the
 * context's reserve free (and are dropped when the records cannot grow: they acknowledge nothing),
 * so what one batch's jobs must record never needs memory. */
static fwm__outbox_record *add_record_for(fwm__job_context *ctx, const fwm__job *job, size_t offset, bool ending) {
    fwm__outbox *o = fwm__job_context_outbox(ctx);
    if (!o) return NULL;
    size_t keep = ending ? 0 : ctx->record_reserve;
    if (o->record_count + keep >= o->record_capacity) {
        size_t capacity = 2 * o->record_capacity + keep;
        fwm__outbox_record *grown = fwm__realloc(o->records, capacity * sizeof *grown);
        if (!grown && (!ending || o->record_count == o->record_capacity)) return NULL;
        if (grown) {
            o->records = grown;
            o->record_capacity = capacity;
        }
    }
    fwm__outbox_record *r = &o->records[o->record_count++];
    memset(r, 0, sizeof *r);
    r->sink = job->sink;
    r->respond = job->respond;
    r->msgid = job->msgid;
    r->offset = offset;
    r->length = o->buffer.size - offset;
    r->enqueued_ns = job->enqueued_ns;
    return r;
}

static fwm__outbox_record *add_record(fwm__job_context *ctx, const fwm__job *job, size_t offset) {
    return add_record_for(ctx, job, offset, true);
}

/* Start a message for the job's connection: NULL (nothing to write) when nobody listens. */
static bool begin(fwm__job_context *ctx, const fwm__job *job, msgpack_packer *pk, size_t *offset) {
    if (!job->sink) return false;
    fwm__outbox *o = fwm__job_context_outbox(ctx);
    if (!o) return false;
    msgpack_packer_init(pk, &o->buffer, msgpack_sbuffer_write);
    *offset = o->buffer.size;
    return true;
}

/* Record the end of a job: its response (if one was packed since `offset`) and the release of its
 * connection reference. `packed` says whether begin() succeeded. */
static fwm__outbox_record *end_job(fwm__job_context *ctx, const fwm__job *job, bool packed, size_t offset) {
    if (!job->sink) return NULL;
    fwm__outbox *o = fwm__job_context_outbox(ctx);
    if (!o) return NULL;
    fwm__outbox_record *r = add_record_for(ctx, job, packed ? offset : o->buffer.size, true);
    if (r) {
        r->job_finished = true;
        r->released_bytes = job->held_bytes;
    }
    return r;
}

static void pack_predictions(msgpack_packer *pk, const fwm_model *model, const fwm_prediction *p, size_t n) {
    msgpack_pack_array(pk, n);
    for (size_t i = 0; i < n; i++) {
        msgpack_pack_array(pk, 2);
        const char *word = fwm_model_token_text(model, p[i].token);
        fwm__rpc_pack_cstr(pk, word ? word : "");
        msgpack_pack_float(pk, p[i].probability);
    }
}

/* The top k of the session's last prediction; none where its last step predicted nothing (an stm
 * model in sentence mode: every token but a question's end). */
static size_t top_k(fwm__job_context *ctx, const fwm__session_entry *e, size_t k) {
    if (!e->has_logits || k == 0 || (e->session && !fwm_session_has_prediction(e->session))) return 0;
    return fwm_top_k(e->last_logits, ctx->infos[e->model_index].vocab_size, k, ctx->predictions);
}

static void pack_session_key(msgpack_packer *pk, const fwm__session_entry *e) {
    fwm__rpc_pack_cstr(pk, "session");
    fwm__rpc_pack_cstr(pk, e->hex);
}

static void pack_pos(msgpack_packer *pk, const fwm__session_entry *e) {
    fwm__rpc_pack_cstr(pk, "pos");
    msgpack_pack_uint64(pk, e->session ? fwm_session_position(e->session) : 0);
}

/* `unknown`: the byte spans [start, length] of the words of the job's text read as <unk>. */
static void pack_unknown(msgpack_packer *pk, const fwm__job *job) {
    fwm__rpc_pack_cstr(pk, "unknown");
    msgpack_pack_array(pk, job->unknown_count);
    for (size_t i = 0; i < job->unknown_count; i++) {
        msgpack_pack_array(pk, 2);
        msgpack_pack_uint64(pk, job->unknown[i].start);
        msgpack_pack_uint64(pk, job->unknown[i].length);
    }
}

/* A fork/restore that failed, however (its own error, or a parent that moved or cannot be loaded),
 * still releases its reserved slot and memory. */
static void release_reserved(fwm__job_context *ctx, fwm__job *job) {
    fwm__outbox *o = fwm__job_context_outbox(ctx);
    if (o && job->sink && o->record_count && o->records[o->record_count - 1].sink == job->sink)
        o->records[o->record_count - 1].unhold = true; /* the failure's record: its connection is still held */
    fwm__outbox_record *r = o ? add_record(ctx, job, o->buffer.size) : NULL;
    if (r) {
        r->sink = NULL; /* bookkeeping only: the reference was released by the failure record */
        r->unreserve = true;
        r->reserved_bytes = job->reserved_bytes;
    }
}

static bool fail_job(fwm__job_context *ctx, fwm__session_entry *e, fwm__job *job, int code, const char *message,
                     const char *word) {
    if ((job->kind == FWM_JOB_FEED || job->kind == FWM_JOB_ASK) && job->done > 0)
        fwm__durable_step(ctx, e, job->tokens, job->done); /* what was read stays read */
    msgpack_packer pk;
    size_t offset = 0;
    bool packed = job->respond && begin(ctx, job, &pk, &offset);
    if (packed) {
        fwm__rpc_failure failure;
        fwm__rpc_fail(&failure, code, "%s", message);
        if (word) snprintf(failure.word, sizeof failure.word, "%s", word);
        fwm__rpc_pack_error_response(&pk, job->msgid, &failure);
    }
    fwm__outbox_record *r = end_job(ctx, job, packed, offset);
    if (r && packed) r->error_code = code; /* counted when delivered */
    if (job->kind == FWM_JOB_FORK || job->kind == FWM_JOB_RESTORE) release_reserved(ctx, job);
    return true;
}

bool fwm__job_fail(fwm__job_context *ctx, fwm__session_entry *e, fwm__job *job, int code,
                   const char *message) {
    return fail_job(ctx, e, job, code, message, NULL);
}

bool fwm__job_fail_moved(fwm__job_context *ctx, fwm__session_entry *e, fwm__job *job) {
    const char *address = ctx->advertise ? ctx->advertise : "";
    char message[400];
    snprintf(message, sizeof message, "this node no longer owns session %s; the node at %s serves it", e->hex, address);
    return fail_job(ctx, e, job, FWM_RPC_MOVED, message, address);
}

static void emit_token(fwm__job_context *ctx, fwm__session_entry *e, fwm__job *job) {
    msgpack_packer pk;
    size_t offset;
    if (!begin(ctx, job, &pk, &offset)) return;
    const fwm_model *model = ctx->models[e->model_index];
    uint32_t token = job->tokens[job->done - 1];
    const char *word = fwm_model_token_text(model, token);
    size_t n = top_k(ctx, e, job->topk);
    fwm__rpc_pack_notification_head(&pk, "token");
    msgpack_pack_map(&pk, 5);
    pack_session_key(&pk, e);
    pack_pos(&pk, e);
    fwm__rpc_pack_cstr(&pk, "token");
    msgpack_pack_uint32(&pk, token);
    fwm__rpc_pack_cstr(&pk, "word");
    fwm__rpc_pack_cstr(&pk, word ? word : "");
    fwm__rpc_pack_cstr(&pk, "topk");
    pack_predictions(&pk, model, ctx->predictions, n);
    add_record_for(ctx, job, offset, false); /* a notification: dropped rather than take the reserve */
}

static bool finish_feed(fwm__job_context *ctx, fwm__session_entry *e, fwm__job *job) {
    fwm__durable_step(ctx, e, job->tokens, job->done);
    msgpack_packer pk;
    size_t offset = 0;
    bool packed = job->respond && begin(ctx, job, &pk, &offset);
    if (packed) {
        fwm__rpc_pack_response_head(&pk, job->msgid);
        msgpack_pack_map(&pk, job->logprob ? 6 : 4);
        pack_session_key(&pk, e);
        pack_pos(&pk, e);
        fwm__rpc_pack_cstr(&pk, "fed");
        msgpack_pack_uint64(&pk, job->done);
        pack_unknown(&pk, job);
        if (job->logprob) { /* the tokens read and each one's log-probability (methods/session_methods.c bounds the size) */
            fwm__rpc_pack_cstr(&pk, "tokens");
            msgpack_pack_array(&pk, job->done);
            for (size_t i = 0; i < job->done; i++) msgpack_pack_uint32(&pk, job->tokens[i]);
            fwm__rpc_pack_cstr(&pk, "logprobs");
            msgpack_pack_array(&pk, job->done);
            for (size_t i = 0; i < job->done; i++) msgpack_pack_double(&pk, job->logprob[i]);
        }
    }
    end_job(ctx, job, packed, offset);
    return true;
}

/* The question has been read: take the answer from the prediction. */
static bool take_answer(fwm__job_context *ctx, fwm__session_entry *e, fwm__job *job) {
    size_t k = job->topk > 0 ? job->topk : 1;
    size_t n = top_k(ctx, e, k);
    job->answered = true;
    job->answer_topk = fwm__calloc(n ? n : 1, sizeof *job->answer_topk);
    if (!job->answer_topk) return false;
    memcpy(job->answer_topk, ctx->predictions, n * sizeof *job->answer_topk);
    job->answer_topk_count = job->topk > 0 ? n : 0;
    job->answer_found = n > 0;
    if (n > 0) {
        job->answer_token = ctx->predictions[0].token;
        job->answer_probability = ctx->predictions[0].probability;
    }
    if (job->commit && n > 0) job->tokens[job->count++] = job->answer_token; /* room reserved */
    return true;
}

static bool finish_ask(fwm__job_context *ctx, fwm__session_entry *e, fwm__job *job) {
    fwm__durable_step(ctx, e, job->tokens, job->done);
    /* Without commit no answer follows: an answer slot (stm, sentence mode) is closed here, and the
     * state recorded, since the log holds tokens only. The answer was taken already. */
    bool has_answer = job->answer_topk && e->has_logits && job->answer_found;
    if (!job->commit && fwm_session_skip_answer(e->session)) fwm__durable_snapshot(ctx, e);
    msgpack_packer pk;
    size_t offset = 0;
    bool packed = job->respond && begin(ctx, job, &pk, &offset);
    if (packed) {
        const fwm_model *model = ctx->models[e->model_index];
        const char *word = has_answer ? fwm_model_token_text(model, job->answer_token) : "";
        fwm__rpc_pack_response_head(&pk, job->msgid);
        msgpack_pack_map(&pk, 7);
        pack_session_key(&pk, e);
        pack_pos(&pk, e);
        fwm__rpc_pack_cstr(&pk, "answer");
        fwm__rpc_pack_cstr(&pk, word ? word : "");
        fwm__rpc_pack_cstr(&pk, "prob");
        msgpack_pack_float(&pk, has_answer ? job->answer_probability : 0.0f);
        fwm__rpc_pack_cstr(&pk, "topk");
        pack_predictions(&pk, model, job->answer_topk, has_answer ? job->answer_topk_count : 0);
        fwm__rpc_pack_cstr(&pk, "committed");
        fwm__rpc_pack_bool(&pk, job->commit && has_answer);
        pack_unknown(&pk, job);
    }
    end_job(ctx, job, packed, offset);
    return true;
}

bool fwm__job_before_first_step(fwm__job_context *ctx, fwm__session_entry *e, fwm__job *job) {
    if (job->kind != FWM_JOB_FEED || !job->logprob || job->done != 0 || job->count == 0) return true;
    uint32_t vocab = ctx->infos[e->model_index].vocab_size;
    const float *scores = e->last_logits; /* the prediction after the last token read (as the step gave it) */
    if (!e->has_logits) { /* none cached (restored, loaded from a snapshot, or not primed): from the state */
        fwm_error err;
        if (fwm_session_predict(e->session, ctx->scores, &err) != FWM_OK) {
            char message[FWM_ERROR_MESSAGE_SIZE + 64];
            snprintf(message, sizeof message, "cannot score the feed's first token: %s", err.message);
            fwm__job_fail(ctx, e, job, FWM_RPC_INTERNAL, message);
            return false;
        }
        scores = ctx->scores;
    }
    job->logprob[0] = fwm_logprob(scores, vocab, job->tokens[0], 1.0);
    return true;
}

bool fwm__job_after_step(fwm__job_context *ctx, fwm__session_entry *e, fwm__job *job) {
    if (job->kind == FWM_JOB_FEED) {
        if (job->logprob && job->done < job->count) /* the next token, by the step that just ran */
            job->logprob[job->done] =
                fwm_logprob(e->last_logits, ctx->infos[e->model_index].vocab_size, job->tokens[job->done], 1.0);
        if (job->notify) emit_token(ctx, e, job);
        return job->done == job->count ? finish_feed(ctx, e, job) : false;
    }
    /* ASK */
    if (job->done < job->count) return false;
    if (!job->answered) {
        if (!take_answer(ctx, e, job)) return fwm__job_fail(ctx, e, job, FWM_RPC_INTERNAL, "out of memory");
        if (job->done < job->count) return false; /* the committed answer is stepped next */
    }
    return finish_ask(ctx, e, job);
}

static bool respond_simple(fwm__job_context *ctx, fwm__session_entry *e, fwm__job *job,
                           fwm__session_entry *insert, bool unreserve) {
    msgpack_packer pk;
    size_t offset = 0;
    bool packed = job->respond && begin(ctx, job, &pk, &offset);
    if (packed) {
        const fwm_model *model = ctx->models[e->model_index];
        fwm__rpc_pack_response_head(&pk, job->msgid);
        switch (job->kind) {
        case FWM_JOB_PREDICT: {
            size_t n = top_k(ctx, e, job->topk);
            msgpack_pack_map(&pk, 3);
            pack_session_key(&pk, e);
            pack_pos(&pk, e);
            fwm__rpc_pack_cstr(&pk, "topk");
            pack_predictions(&pk, model, ctx->predictions, n);
            break;
        }
        case FWM_JOB_FORK:
            msgpack_pack_map(&pk, 3);
            pack_session_key(&pk, insert);
            fwm__rpc_pack_cstr(&pk, "parent");
            fwm__rpc_pack_cstr(&pk, e->hex);
            pack_pos(&pk, insert);
            break;
        case FWM_JOB_SNAPSHOT: {
            size_t written = 0;
            fwm_session_export(e->session, ctx->blob, ctx->blob_capacity, &written, NULL);
            msgpack_pack_map(&pk, 3);
            pack_session_key(&pk, e);
            pack_pos(&pk, e);
            fwm__rpc_pack_cstr(&pk, "state");
            msgpack_pack_bin(&pk, written);
            msgpack_pack_bin_body(&pk, ctx->blob, written);
            break;
        }
        case FWM_JOB_CLOSE:
            msgpack_pack_map(&pk, 2);
            pack_session_key(&pk, e);
            fwm__rpc_pack_cstr(&pk, "closed");
            msgpack_pack_true(&pk);
            break;
        case FWM_JOB_OPEN:
            msgpack_pack_map(&pk, 5);
            pack_session_key(&pk, e);
            fwm__rpc_pack_cstr(&pk, "model");
            fwm__rpc_pack_cstr(&pk, ctx->model_names[e->model_index]);
            fwm__rpc_pack_cstr(&pk, "topk");
            msgpack_pack_uint32(&pk, e->default_topk);
            pack_pos(&pk, e);
            fwm__rpc_pack_cstr(&pk, "memory_bytes");
            msgpack_pack_uint64(&pk, e->memory_bytes);
            break;
        default: /* RESET, RESTORE */
            msgpack_pack_map(&pk, 2);
            pack_session_key(&pk, e);
            pack_pos(&pk, e);
            break;
        }
    }
    fwm__outbox_record *r =
        job->sink ? end_job(ctx, job, packed, offset)
                  : add_record(ctx, job, fwm__job_context_outbox(ctx) ? fwm__job_context_outbox(ctx)->buffer.size : 0);
    if (r) {
        r->insert = insert;
        r->unreserve = unreserve;
        if (unreserve) r->reserved_bytes = job->reserved_bytes;
    } else if (insert == e) {
        e->dead = true; /* out of memory: the restored session is lost (the scheduler frees it) */
    } else {
        fwm__session_entry_free(insert); /* out of memory: the forked session is lost, not leaked */
    }
    return true;
}

static int restore_code(fwm_status status) {
    if (status == FWM_ERR_STATE_MODEL_MISMATCH) return FWM_RPC_MODEL_MISMATCH;
    if (status == FWM_ERR_STATE_CORRUPT) return FWM_RPC_STATE_CORRUPT;
    return FWM_RPC_INTERNAL;
}

/* Rebuild a stored session; the loop learns how it went (and how long it took) from the record. */
static bool run_load(fwm__job_context *ctx, fwm__session_entry *e, fwm__job *job) {
    if (!fwm__durable_load(ctx, e, e->load_error, sizeof e->load_error)) e->load_failed = true;
    fwm__outbox *o = fwm__job_context_outbox(ctx);
    fwm__outbox_record *r = o ? add_record(ctx, job, o->buffer.size) : NULL;
    if (r) {
        r->loaded = true;
        r->load_failed = e->load_failed;
        memcpy(r->session_id, e->id, FWM_SESSION_ID_BYTES);
        r->load_us = (fwm__now_ns() - job->enqueued_ns) / 1000;
    }
    return true;
}

/* TRACE: the whole response at once, or an error when out of memory. */
static bool run_trace(fwm__job_context *ctx, fwm__session_entry *e, fwm__job *job) {
    msgpack_packer pk;
    size_t offset = 0;
    bool packed = job->respond && begin(ctx, job, &pk, &offset);
    if (packed) {
        fwm__outbox *o = fwm__job_context_outbox(ctx);
        fwm__rpc_pack_response_head(&pk, job->msgid);
        if (!fwm__trace_pack(ctx, e, job, &pk)) {
            o->buffer.size = offset; /* drop the head */
            return fwm__job_fail(ctx, e, job, FWM_RPC_INTERNAL, "out of memory tracing the session");
        }
    }
    end_job(ctx, job, packed, offset);
    return true;
}

bool fwm__job_run(fwm__job_context *ctx, fwm__session_entry *e, fwm__job *job) {
    fwm_error err;
    switch (job->kind) {
    case FWM_JOB_TRACE:
        return run_trace(ctx, e, job);
    case FWM_JOB_FEED:
        return finish_feed(ctx, e, job);
    case FWM_JOB_ASK:
        return finish_ask(ctx, e, job);
    case FWM_JOB_PREDICT:
        return respond_simple(ctx, e, job, NULL, false);
    case FWM_JOB_RESET:
        fwm__session_start(ctx->models[e->model_index], e, job->prime);
        fwm__durable_reset(ctx, e, job->prime);
        return respond_simple(ctx, e, job, NULL, false);
    case FWM_JOB_FORK: {
        fwm__session_entry *child = job->child;
        if (fwm_session_fork(e->session, &child->session, &err) != FWM_OK)
            return fwm__job_fail(ctx, e, job, FWM_RPC_INTERNAL, err.message);
        memcpy(child->last_logits, e->last_logits, ctx->infos[e->model_index].vocab_size * sizeof(float));
        child->has_logits = e->has_logits;
        fwm__durable_created(ctx, child);
        fwm__session_entry_note_pos(child);
        job->child = NULL; /* now owned by the outbox record, then the table */
        return respond_simple(ctx, e, job, child, true);
    }
    case FWM_JOB_SNAPSHOT:
        return respond_simple(ctx, e, job, NULL, false);
    case FWM_JOB_RESTORE: {
        fwm_status status = fwm_session_import(e->session, job->blob, job->blob_size, &err);
        if (status != FWM_OK) {
            e->dead = true;
            return fwm__job_fail(ctx, e, job, restore_code(status), err.message);
        }
        e->has_logits = false;
        fwm__durable_created(ctx, e);
        return respond_simple(ctx, e, job, e, true);
    }
    case FWM_JOB_CLOSE: {
        fwm__outbox *o = fwm__job_context_outbox(ctx);
        if (o) {
            o->sessions_freed++;
            o->memory_freed += e->memory_bytes;
        }
        if (!job->keep_stored) fwm__durable_remove(ctx, e);
        respond_simple(ctx, e, job, NULL, false);
        e->dead = true;
        return true;
    }
    case FWM_JOB_OPEN:
        fwm__durable_open(ctx, e, job->prime);
        return respond_simple(ctx, e, job, NULL, true);
    case FWM_JOB_LOAD:
        return run_load(ctx, e, job);
    case FWM_JOB_EVICT: {
        if (fwm__durable_dirty(e) && e->logged_tokens > FWM_EVICT_REPLAY_TOKENS) fwm__durable_snapshot(ctx, e);
        else fwm__durable_touch(ctx, e); /* its last use, for --session-ttl */
        fwm__outbox *o = fwm__job_context_outbox(ctx);
        fwm__outbox_record *r = o ? add_record(ctx, job, o->buffer.size) : NULL;
        if (r) {
            r->evicted = true;
            memcpy(r->session_id, e->id, FWM_SESSION_ID_BYTES);
        }
        return true;
    }
    }
    return fwm__job_fail(ctx, e, job, FWM_RPC_INTERNAL, "unknown job kind");
}
