/* durable_session.c - store operations of durable sessions and their rebuilding (durable_session.h). */
#include "durable_session.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "fwm_alloc.h"
#include "store/session_record.h"
#include "store/store.h"

uint64_t fwm__wall_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Room for `length` more store bytes and one more operation; NULL when out of memory (the outbox is
 * then marked failed, so nothing half-recorded is ever acknowledged). */
static fwm__store_op *outbox_op(fwm__outbox *o, fwm__store_op_kind kind, const uint8_t *id, size_t length,
                                uint8_t **bytes) {
    if (!o || o->store_failed) return NULL;
    if (o->store_length + length > o->store_capacity) {
        size_t capacity = o->store_capacity ? o->store_capacity : 4096;
        while (capacity < o->store_length + length) capacity *= 2;
        uint8_t *grown = fwm__realloc(o->store_bytes, capacity);
        if (!grown) goto oom;
        o->store_bytes = grown;
        o->store_capacity = capacity;
    }
    if (o->op_count == o->op_capacity) {
        size_t capacity = o->op_capacity ? 2 * o->op_capacity : 16;
        fwm__store_op *grown = fwm__realloc(o->ops, capacity * sizeof *grown);
        if (!grown) goto oom;
        o->ops = grown;
        o->op_capacity = capacity;
    }
    fwm__store_op *op = &o->ops[o->op_count++];
    memset(op, 0, sizeof *op);
    op->kind = kind;
    memcpy(op->id, id, FWM_SESSION_ID_BYTES);
    op->offset = o->store_length;
    op->length = length;
    o->store_length += length;
    if (bytes) *bytes = o->store_bytes + op->offset;
    return op;
oom:
    o->store_failed = true;
    snprintf(o->store_error, sizeof o->store_error, "out of memory recording a session's operations");
    return NULL;
}

static fwm__store_op *add_op(fwm__job_context *ctx, fwm__store_op_kind kind, const fwm__session_entry *e,
                             size_t length, uint8_t **bytes) {
    fwm__store_op *op = outbox_op(fwm__job_context_outbox(ctx), kind, e->id, length, bytes);
    if (op) op->epoch = e->epoch;
    return op;
}

bool fwm__outbox_add_removal(fwm__outbox *o, const uint8_t *id) {
    return outbox_op(o, FWM_OP_REMOVE, id, 0, NULL) != NULL;
}

static void put_meta(fwm__job_context *ctx, const fwm__session_entry *e) {
    uint8_t *bytes;
    if (!add_op(ctx, FWM_OP_META, e, FWM_META_RECORD_BYTES, &bytes)) return;
    fwm__session_meta meta = {0};
    meta.fingerprint = ctx->infos[e->model_index].fingerprint;
    snprintf(meta.model_name, sizeof meta.model_name, "%s", ctx->model_names[e->model_index]);
    meta.topk = e->default_topk;
    meta.pos = e->session ? fwm_session_position(e->session) : 0;
    meta.created_ms = e->created_ms;
    meta.last_used_ms = fwm__wall_ms();
    meta.log_base = e->log_base;
    meta.has_snapshot = e->has_snapshot;
    fwm__meta_encode(&meta, bytes);
}

void fwm__durable_touch(fwm__job_context *ctx, fwm__session_entry *e) {
    if (ctx->store) put_meta(ctx, e);
}

static void append_log(fwm__job_context *ctx, fwm__session_entry *e, fwm__log_op kind, const uint32_t *tokens,
                       size_t count);

void fwm__durable_open(fwm__job_context *ctx, fwm__session_entry *e, bool primed) {
    if (!ctx->store) return;
    e->created_ms = fwm__wall_ms();
    e->log_seq = e->log_base = e->logged_tokens = 0;
    e->has_snapshot = false;
    put_meta(ctx, e);
    /* A stored session without a snapshot starts from zero: a primed one's first record says so. */
    if (primed) append_log(ctx, e, FWM_LOG_RESET_PRIMED, NULL, 0);
}

bool fwm__durable_dirty(const fwm__session_entry *e) {
    return e->log_seq > e->log_base;
}

void fwm__durable_snapshot(fwm__job_context *ctx, fwm__session_entry *e) {
    if (!ctx->store || !e->session) return;
    const fwm_model_info *info = &ctx->infos[e->model_index];
    size_t blob = info->state_blob_bytes;
    size_t total = fwm__snapshot_record_bytes(blob, info->vocab_size, e->has_logits);
    uint8_t *bytes, *blob_at;
    if (!add_op(ctx, FWM_OP_SNAPSHOT, e, total, &bytes)) return;
    fwm__snapshot_record_begin(bytes, blob, info->vocab_size, e->has_logits, e->last_logits, &blob_at);
    size_t written = 0;
    if (fwm_session_export(e->session, blob_at, blob, &written, NULL) != FWM_OK || written != blob) {
        fwm__outbox *o = fwm__job_context_outbox(ctx);
        o->store_failed = true;
        snprintf(o->store_error, sizeof o->store_error, "cannot export session %s for its snapshot", e->hex);
        return;
    }
    fwm__snapshot_record_seal(bytes, total);
    uint64_t old_base = e->log_base;
    e->log_base = e->log_seq;
    e->has_snapshot = true;
    e->logged_tokens = 0;
    put_meta(ctx, e);
    if (e->log_base > old_base) {
        fwm__store_op *trim = add_op(ctx, FWM_OP_DELETE_LOG, e, 0, NULL);
        if (trim) {
            trim->seq = 0;
            trim->below = e->log_base;
        }
    }
}

void fwm__durable_created(fwm__job_context *ctx, fwm__session_entry *e) {
    if (!ctx->store) return;
    e->created_ms = fwm__wall_ms();
    e->log_seq = e->log_base = e->logged_tokens = 0;
    fwm__durable_snapshot(ctx, e);
}

static void append_log(fwm__job_context *ctx, fwm__session_entry *e, fwm__log_op kind, const uint32_t *tokens,
                       size_t count) {
    size_t length = fwm__log_record_bytes(count);
    uint8_t *bytes;
    fwm__store_op *op = add_op(ctx, FWM_OP_LOG, e, length, &bytes);
    if (!op) return;
    fwm__log_record_encode(kind, tokens, count, bytes);
    op->seq = e->log_seq++;
    fwm__job_context_outbox(ctx)->log_bytes += length;
    /* The meta record is not rewritten per record: the log is the truth, and the meta changes only
     * at a snapshot, an eviction or a creation (one B-tree write per operation instead of two). */
}

void fwm__durable_step(fwm__job_context *ctx, fwm__session_entry *e, const uint32_t *tokens, size_t count) {
    if (!ctx->store || count == 0) return;
    append_log(ctx, e, FWM_LOG_STEP, tokens, count);
    e->logged_tokens += count;
    if (e->logged_tokens >= ctx->snapshot_tokens) fwm__durable_snapshot(ctx, e);
}

void fwm__durable_reset(fwm__job_context *ctx, fwm__session_entry *e, bool primed) {
    if (!ctx->store) return;
    append_log(ctx, e, primed ? FWM_LOG_RESET_PRIMED : FWM_LOG_RESET, NULL, 0);
}

void fwm__durable_remove(fwm__job_context *ctx, fwm__session_entry *e) {
    if (ctx->store) add_op(ctx, FWM_OP_REMOVE, e, 0, NULL);
}

/* ---- rebuilding ---- */

typedef struct replay {
    fwm__job_context *ctx;
    fwm__session_entry *entry;
    uint64_t expected; /* the next seq */
    uint64_t bad_seq;  /* the first damaged or missing record, or UINT64_MAX */
    uint64_t tokens;
    char *why;
    size_t why_size;
    bool failed;       /* the runtime refused a step: the session cannot be rebuilt */
} replay;

static bool replay_record(void *user, uint64_t seq, const void *bytes, size_t length) {
    replay *r = user;
    fwm__session_entry *e = r->entry;
    fwm__log_op op;
    const uint8_t *raw;
    size_t count;
    if (seq != r->expected || !fwm__log_record_decode(bytes, length, &op, &raw, &count)) {
        r->bad_seq = r->expected;
        return false;
    }
    if (op == FWM_LOG_RESET || op == FWM_LOG_RESET_PRIMED) {
        fwm__session_start(r->ctx->models[e->model_index], e, op == FWM_LOG_RESET_PRIMED);
    } else {
        if (count > r->ctx->replay_capacity) {
            uint32_t *grown = fwm__realloc(r->ctx->replay_tokens, count * sizeof *grown);
            if (!grown) {
                snprintf(r->why, r->why_size, "out of memory replaying session %s", e->hex);
                r->failed = true;
                return false;
            }
            r->ctx->replay_tokens = grown;
            r->ctx->replay_capacity = count;
        }
        for (size_t i = 0; i < count; i++) r->ctx->replay_tokens[i] = fwm__log_token(raw, i);
        fwm_error err;
        fwm_status st = count > 1 ? fwm_session_step_sequence(e->session, r->ctx->replay_tokens, count - 1, NULL, &err)
                                  : FWM_OK;
        if (st == FWM_OK) st = fwm_session_step(e->session, r->ctx->replay_tokens[count - 1], e->last_logits, &err);
        if (st != FWM_OK) {
            snprintf(r->why, r->why_size, "session %s: log record %llu cannot be replayed: %s", e->hex,
                     (unsigned long long)seq, err.message);
            r->failed = true;
            return false;
        }
        e->has_logits = true;
        r->tokens += count;
    }
    r->expected++;
    return true;
}

static bool load_failed(fwm__session_entry *e, char *why, size_t why_size, const char *message) {
    snprintf(why, why_size, "%s", message);
    e->load_failed = true;
    return false;
}

bool fwm__durable_load(fwm__job_context *ctx, fwm__session_entry *e, char *why, size_t why_size) {
    fwm__store *store = ctx->store;
    fwm__store_error error = {0};
    uint8_t raw[FWM_META_RECORD_BYTES];
    size_t length = 0;
    char message[600];
    fwm__store_status st = store->backend->get_meta(store, e->id, raw, sizeof raw, &length, &error);
    fwm__session_meta meta;
    if (st == FWM_STORE_NOT_FOUND) return load_failed(e, why, why_size, "the session is no longer stored");
    if (st != FWM_STORE_OK) return load_failed(e, why, why_size, error.message);
    if (!fwm__meta_decode(raw, length, &meta)) {
        snprintf(message, sizeof message, "session %s: its meta record is damaged", e->hex);
        return load_failed(e, why, why_size, message);
    }
    const fwm_model *model = ctx->models[e->model_index];
    fwm_error err;
    if (!e->session && fwm_session_create(model, &e->session, &err) != FWM_OK)
        return load_failed(e, why, why_size, "out of memory creating the session");
    fwm_session_reset(e->session);
    e->has_logits = false;
    if (meta.has_snapshot) {
        st = store->backend->get_snapshot(store, e->id, &ctx->load_buffer, &ctx->load_capacity, &length, &error);
        fwm__snapshot_view view;
        if (st != FWM_STORE_OK) {
            snprintf(message, sizeof message, "session %s: its snapshot cannot be read: %s", e->hex,
                     st == FWM_STORE_NOT_FOUND ? "missing" : error.message);
            return load_failed(e, why, why_size, message);
        }
        if (!fwm__snapshot_record_decode(ctx->load_buffer, length, &view) ||
            (view.has_logits && view.vocab != ctx->infos[e->model_index].vocab_size)) {
            snprintf(message, sizeof message, "session %s: its snapshot is damaged", e->hex);
            return load_failed(e, why, why_size, message);
        }
        if (fwm_session_import(e->session, view.blob, view.blob_bytes, &err) != FWM_OK) {
            snprintf(message, sizeof message, "session %s: its snapshot cannot be restored: %s", e->hex, err.message);
            return load_failed(e, why, why_size, message);
        }
        if (view.has_logits) {
            memcpy(e->last_logits, view.logits, view.vocab * sizeof(float)); /* little-endian host */
            e->has_logits = true;
        }
    }
    replay r = {ctx, e, meta.log_base, UINT64_MAX, 0, why, why_size, false};
    st = store->backend->read_log(store, e->id, meta.log_base, replay_record, &r, &error);
    if (r.failed) {
        e->load_failed = true;
        return false;
    }
    if (st != FWM_STORE_OK) return load_failed(e, why, why_size, error.message);
    e->created_ms = meta.created_ms;
    e->default_topk = meta.topk;
    e->log_base = meta.log_base;
    e->log_seq = r.expected;
    e->has_snapshot = meta.has_snapshot;
    e->logged_tokens = r.tokens;
    e->load_failed = false;
    if (r.bad_seq != UINT64_MAX) { /* a damaged tail: dropped, never replayed */
        fwm__store_op *drop = add_op(ctx, FWM_OP_DELETE_LOG, e, 0, NULL);
        if (drop) {
            drop->seq = r.bad_seq;
            drop->below = UINT64_MAX;
        }
    }
    add_op(ctx, FWM_OP_LOADED, e, 0, NULL);
    return true;
}
