/* tiering.c - eviction, loading stored sessions, and rebuilding after failed writes (tiering.h). */
#include "tiering.h"

#include <string.h>

#include "cluster_node.h"
#include "fwm_alloc.h"
#include "lookup.h"
#include "sessions/durable_session.h"
#include "store/session_record.h"

static uint64_t now_ms(void) {
    return fwm__now_ns() / 1000000u;
}

uint64_t fwm__tiering_session_count(fwm__server *s) {
    if (!s->store) return s->sessions.count + s->reserved_sessions;
    fwm__store_info info;
    if (!fwm__journal_store_info(s->journal, &info)) return s->sessions.count + s->reserved_sessions;
    return info.sessions + s->reserved_sessions;
}

/* A resident entry for a stored session (its state comes with the LOAD job). */
static fwm__session_entry *entry_for(fwm__server *s, const uint8_t *id, uint32_t model, uint32_t topk) {
    const fwm__served_model *m = &s->models[model];
    fwm__session_entry *e = fwm__calloc(1, sizeof *e);
    if (!e) return NULL;
    memcpy(e->id, id, FWM_SESSION_ID_BYTES);
    fwm__session_id_to_hex(e->id, e->hex);
    e->model_index = model;
    e->default_topk = topk > m->info.vocab_size ? m->info.vocab_size : topk;
    e->memory_bytes = m->session_bytes;
    e->last_used_ms = now_ms();
    e->last_logits = fwm__calloc(m->info.vocab_size, sizeof(float));
    if (!e->last_logits) {
        fwm__session_entry_free(e);
        return NULL;
    }
    return e;
}

/* A resident entry for stored session `id` whose meta record was read (status `st`, `raw`), its load
 * queued; `epoch`: the cluster epoch it was claimed under. NULL with `failure` filled. */
static fwm__session_entry *load_with_meta(fwm__server *s, const uint8_t *id, fwm__store_status st,
                                          const uint8_t *raw, size_t length, const char *why, uint64_t epoch,
                                          fwm__rpc_failure *failure) {
    char hex[FWM_SESSION_HEX_SIZE];
    fwm__session_id_to_hex(id, hex);
    if (st == FWM_STORE_NOT_FOUND) {
        fwm__rpc_fail(failure, FWM_RPC_UNKNOWN_SESSION, "no session %s on this server (closed, or never opened)", hex);
        return NULL;
    }
    fwm__session_meta meta;
    if (st != FWM_STORE_OK || !fwm__meta_decode(raw, length, &meta)) {
        fwm__rpc_fail(failure, FWM_RPC_STORAGE, "session %s cannot be read from the store: %s", hex,
                      st != FWM_STORE_OK ? why : "its meta record is damaged");
        return NULL;
    }
    long model = -1;
    for (size_t m = 0; m < s->model_count && model < 0; m++)
        if (s->models[m].info.fingerprint == meta.fingerprint) model = (long)m;
    if (model < 0) {
        fwm__rpc_fail(failure, FWM_RPC_UNKNOWN_MODEL,
                      "session %s belongs to model '%.100s' (fingerprint %016llx), which this server does not serve; "
                      "it stays stored until that model is served again",
                      hex, meta.model_name, (unsigned long long)meta.fingerprint);
        return NULL;
    }
    fwm__session_entry *e = entry_for(s, id, (uint32_t)model, meta.topk);
    if (e) e->epoch = epoch; /* the epoch it was claimed under */
    fwm__job *load = e ? fwm__job_new(FWM_JOB_LOAD) : NULL;
    if (!load || !fwm__session_table_insert(&s->sessions, e)) {
        fwm__job_free(load);
        fwm__session_entry_free(e);
        fwm__rpc_fail(failure, FWM_RPC_INTERNAL, "out of memory loading session %s", hex);
        return NULL;
    }
    s->metrics.session_memory_bytes += e->memory_bytes;
    fwm__session_table_lru_touch(&s->sessions, e);
    fwm__scheduler_submit(s->scheduler, e, load);
    fwm__tiering_evict(s, false);
    return e;
}

fwm__session_entry *fwm__tiering_load(fwm__server *s, const uint8_t *id, fwm__rpc_failure *failure) {
    if (!s->store) {
        char hex[FWM_SESSION_HEX_SIZE];
        fwm__session_id_to_hex(id, hex);
        fwm__rpc_fail(failure, FWM_RPC_UNKNOWN_SESSION,
                      "no session %s on this server (closed, expired, or never opened)", hex);
        return NULL;
    }
    uint8_t raw[FWM_META_RECORD_BYTES];
    size_t length = 0;
    fwm__store_error error = {0};
    fwm__store_status st = s->store->backend->get_meta(s->store, id, raw, sizeof raw, &length, &error);
    return load_with_meta(s, id, st, raw, length, error.message, fwm__cluster_node_epoch(s), failure);
}

fwm__session_entry *fwm__tiering_load_answered(fwm__server *s, const uint8_t *id, const fwm__lookup *answer,
                                               fwm__rpc_failure *failure) {
    if (answer->timed_out) {
        char hex[FWM_SESSION_HEX_SIZE];
        fwm__session_id_to_hex(id, hex);
        fwm__rpc_fail(failure, FWM_RPC_STORAGE,
                      "cannot ask the store %s session %s: it did not answer within %u ms (the request was not "
                      "applied)", s->cluster ? "who owns" : "for", hex, FWM_LOOKUP_TIMEOUT_MS);
        return NULL;
    }
    if (answer->cluster && !fwm__cluster_node_claim_answer(s, id, answer, failure)) return NULL;
    return load_with_meta(s, id, answer->meta_status, answer->meta, answer->meta_length, answer->error,
                          answer->cluster ? answer->epoch : 0, failure);
}

static bool evict_one(fwm__server *s, fwm__session_entry *e) {
    if (e->evicting || fwm__scheduler_entry_busy(s->scheduler, e)) return false;
    fwm__job *job = fwm__job_new(FWM_JOB_EVICT);
    if (!job) return false;
    e->evicting = true;
    s->evicting++;
    fwm__scheduler_submit(s->scheduler, e, job);
    e->evict_mark = fwm__scheduler_entry_jobs(s->scheduler, e);
    return true;
}

void fwm__tiering_evict(fwm__server *s, bool idle_too) {
    if (!s->store) return;
    size_t max = s->config->max_resident;
    uint64_t now = now_ms(), idle_ms = (uint64_t)(s->config->idle_timeout_s * 1000.0);
    size_t over = max && s->sessions.count > max + s->evicting ? s->sessions.count - max - s->evicting : 0;
    uint64_t used = fwm__server_memory_used(s), budget = s->config->max_memory_bytes;
    uint64_t smallest = 0; /* the smallest session of any model: evicting that many surely makes room */
    for (size_t m = 0; m < s->model_count; m++)
        if (!smallest || s->models[m].session_bytes < smallest) smallest = s->models[m].session_bytes;
    if (used > budget && smallest) { /* and as many as the memory budget needs */
        uint64_t sessions = (used - budget) / smallest + 1;
        if (sessions > s->evicting && sessions - s->evicting > over) over = (size_t)(sessions - s->evicting);
    }
    for (fwm__session_entry *e = s->sessions.lru_head; e;) {
        fwm__session_entry *next = e->lru_next;
        bool idle = idle_too && idle_ms && now > e->last_used_ms && now - e->last_used_ms >= idle_ms;
        if (!over && !idle) break; /* the list is in order of last use: nothing further on is idle */
        if (evict_one(s, e) && over) over--;
        e = next;
    }
}

void fwm__tiering_snapshot_all(fwm__server *s) {
    for (fwm__session_entry *e = s->sessions.lru_head; e; e = e->lru_next) evict_one(s, e);
}

void fwm__tiering_evicted(fwm__server *s, const uint8_t *id, bool store_failed) {
    s->evicting--;
    fwm__session_entry *e = fwm__session_table_find(&s->sessions, id);
    if (!e || !e->evicting) return; /* closed meanwhile */
    e->evicting = false;
    /* A job submitted after the EVICT job may have changed the state, and its records may still be
     * on their way to the store: then the session stays resident (so does one to be rebuilt). */
    if (store_failed || !e->in_table || fwm__scheduler_entry_busy(s->scheduler, e) ||
        fwm__scheduler_entry_jobs(s->scheduler, e) != e->evict_mark)
        return;
    fwm__session_table_remove(&s->sessions, e);
    fwm__session_table_lru_remove(&s->sessions, e);
    s->metrics.evictions++;
    s->metrics.session_memory_bytes -= e->memory_bytes;
    fwm__session_entry_free(e); /* no job holds it (not busy) and no table lists it */
}

void fwm__tiering_loaded(fwm__server *s, const uint8_t *id, bool failed, uint64_t microseconds) {
    if (failed) {
        char hex[FWM_SESSION_HEX_SIZE];
        fwm__session_id_to_hex(id, hex);
        s->metrics.load_failures++;
        fwm__server_log(s, "session %s could not be loaded from the store; its requests get `storage`", hex);
        fwm__session_entry *e = fwm__session_table_find(&s->sessions, id);
        if (e) { /* its queued jobs fail with `storage`; later requests look again */
            fwm__job *close = fwm__job_new(FWM_JOB_CLOSE); /* frees it after its queued jobs */
            if (!close) return;
            close->keep_stored = true;
            fwm__session_table_remove(&s->sessions, e);
            fwm__session_table_lru_remove(&s->sessions, e);
            fwm__scheduler_submit(s->scheduler, e, close);
        }
        return;
    }
    s->metrics.loads++;
    fwm__histogram_add(&s->metrics.load_latency, microseconds);
}

void fwm__tiering_write_failed(fwm__server *s, const fwm__outbox *o) {
    s->metrics.storage_refusals++;
    for (size_t i = 0; i < o->op_count; i++) {
        const fwm__store_op *op = &o->ops[i];
        if (op->kind == FWM_OP_LOADED) continue;
        if (i > 0 && memcmp(o->ops[i - 1].id, op->id, FWM_SESSION_ID_BYTES) == 0) continue;
        fwm__session_entry *e = fwm__session_table_find(&s->sessions, op->id);
        if (!e) continue; /* not resident: rebuilt from the store on its next use */
        if (op->epoch && e->epoch != op->epoch) continue; /* another copy (cluster): not the one refused */
        fwm__job *load = fwm__job_new(FWM_JOB_LOAD);
        if (load) fwm__scheduler_submit(s->scheduler, e, load);
    }
}

/* ---- --session-ttl ---- */

#define EXPIRE_SCAN 4096 /* stored sessions looked at per second */

typedef struct expiry {
    fwm__server *server;
    fwm__outbox *outbox;
    uint64_t cutoff_ms;
    size_t seen, expired;
} expiry;

static bool expire_visit(void *user, const uint8_t id[FWM_STORE_ID_BYTES], const void *bytes, size_t length) {
    expiry *x = user;
    fwm__server *s = x->server;
    memcpy(s->expire_cursor, id, FWM_SESSION_ID_BYTES);
    fwm__session_meta meta;
    if (fwm__meta_decode(bytes, length, &meta) && meta.last_used_ms < x->cutoff_ms &&
        !fwm__session_table_find(&s->sessions, id) && fwm__cluster_node_may_delete(s, id) &&
        fwm__outbox_add_removal(x->outbox, id))
        x->expired++;
    return ++x->seen < EXPIRE_SCAN;
}

void fwm__tiering_expire_stored(fwm__server *s) {
    if (!s->store || s->config->session_ttl_s <= 0) return;
    uint64_t ttl_ms = (uint64_t)(s->config->session_ttl_s * 1000.0), now = fwm__wall_ms();
    if (fwm__lookup_remote(s)) { /* scanned off the loop: fwm__tiering_expire_answered */
        fwm__lookup_expire(s, s->expire_started ? s->expire_cursor : NULL, EXPIRE_SCAN,
                           now > ttl_ms ? now - ttl_ms : 0);
        return;
    }
    expiry x = {s, fwm__calloc(1, sizeof *x.outbox), now > ttl_ms ? now - ttl_ms : 0, 0, 0};
    if (!x.outbox) return;
    msgpack_sbuffer_init(&x.outbox->buffer);
    s->store->backend->list(s->store, s->expire_started ? s->expire_cursor : NULL, expire_visit, &x, NULL);
    s->expire_started = x.seen == EXPIRE_SCAN; /* fewer: the end was reached, start over next time */
    if (x.expired) {
        s->metrics.sessions_expired += x.expired;
        fwm__server_log(s, "%zu stored sessions unused for %gs deleted (session-ttl)", x.expired,
                        s->config->session_ttl_s);
        fwm__journal_submit(s->journal, x.outbox);
    } else {
        fwm__outbox_free(x.outbox);
    }
}

void fwm__tiering_expire_answered(fwm__server *s, const fwm__lookup *l) {
    if (l->list_status != FWM_STORE_OK) return; /* the store failed: the next scan tries again */
    if (l->seen) memcpy(s->expire_cursor, l->last, FWM_SESSION_ID_BYTES);
    s->expire_started = l->seen == EXPIRE_SCAN; /* fewer: the end was reached, start over next time */
    fwm__outbox *outbox = fwm__calloc(1, sizeof *outbox);
    if (!outbox) return;
    msgpack_sbuffer_init(&outbox->buffer);
    size_t expired = 0;
    for (size_t i = 0; i < l->listed_count; i++) /* resident ones are in use: kept */
        if (!fwm__session_table_find(&s->sessions, l->listed[i].id) &&
            fwm__outbox_add_removal(outbox, l->listed[i].id))
            expired++;
    if (expired) {
        s->metrics.sessions_expired += expired;
        fwm__server_log(s, "%zu stored sessions unused for %gs deleted (session-ttl)", expired,
                        s->config->session_ttl_s);
        fwm__journal_submit(s->journal, outbox);
    } else {
        fwm__outbox_free(outbox);
    }
}
