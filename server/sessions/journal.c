/* journal.c - group commit of the workers' store operations, fsync modes, fencing after a failed
 * write, and recovery probes (journal.h); with a remote store, a watcher thread probes it and reads
 * its figures, so a store that does not answer holds up only the write batch waiting for it.
 */
#include "journal.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "fwm_alloc.h"
#include "base/timed_wait.h"

#define PROBE_INTERVAL_NS 1000000000ull
#define PROBE_BYTES (1u << 20)
#define FIGURES_INTERVAL_NS 1000000000ull /* a remote store's figures are read once a second */

/* A fenced session: its writes made under `epoch` or before are refused (a copy claimed later, under
 * a newer cluster epoch, is another copy: its writes are judged by the store; 0 outside a cluster). */
typedef struct fence {
    uint8_t id[FWM_SESSION_ID_BYTES];
    uint64_t epoch;
} fence;

struct fwm__journal {
    fwm__journal_params params;
    pthread_t thread;
    bool thread_started;
    pthread_mutex_t mutex;
    pthread_cond_t wake;
    fwm__outbox *head, *tail;
    uint64_t queued;
    bool stopping, busy;
    bool degraded;
    char why[300];
    fwm__journal_stats stats;
    /* journal thread only: */
    fence *fenced;
    size_t fenced_count, fenced_capacity;
    uint8_t (*moved)[FWM_SESSION_ID_BYTES]; /* of those, the ones fenced because another node owns them */
    size_t moved_count, moved_capacity;
    uint64_t last_probe_ns;
    /* guarded by mutex: */
    bool unsynced; /* committed since the last fsync */
    fwm__store_info figures; /* remote store: its figures as of figures_ns (0: never read) */
    bool figures_ok;
    uint64_t figures_ns;
    uint64_t figures_opens; /* recorded_opens as it was just before the figures were read */
    _Atomic uint64_t recorded_opens; /* new sessions the store has recorded (counted by the loop) */
    /* --fsync interval: a thread of its own forces commits to disk, so the writes never wait for it */
    pthread_t syncer;
    bool syncer_started, syncer_stopping;
    pthread_cond_t syncer_wake;
    /* remote store: a thread of its own probes it while writes fail and reads its figures, so that a
     * store that does not answer holds up only the writes, never the outboxes behind them */
    pthread_t watcher;
    bool watcher_started, watcher_stopping;
    pthread_cond_t watcher_wake;
};

const char *fwm__fsync_mode_name(fwm__fsync_mode mode) {
    return mode == FWM_FSYNC_ALWAYS ? "always" : mode == FWM_FSYNC_INTERVAL ? "interval" : "never";
}

/* ---- fencing: sessions whose last write failed ---- */

static long fence_find(const fwm__journal *j, const uint8_t *id) {
    for (size_t i = 0; i < j->fenced_count; i++)
        if (memcmp(j->fenced[i].id, id, FWM_SESSION_ID_BYTES) == 0) return (long)i;
    return -1;
}

/* Whether a write made under `epoch` for session `id` is refused by a fence. */
static bool fenced_out(const fwm__journal *j, const uint8_t *id, uint64_t epoch) {
    long i = j->fenced_count ? fence_find(j, id) : -1;
    return i >= 0 && epoch <= j->fenced[i].epoch;
}

static void fence_add(fwm__journal *j, const uint8_t *id, uint64_t epoch) {
    long i = fence_find(j, id);
    if (i >= 0) {
        if (epoch > j->fenced[i].epoch) j->fenced[i].epoch = epoch;
        return;
    }
    if (j->fenced_count == j->fenced_capacity) {
        size_t capacity = j->fenced_capacity ? 2 * j->fenced_capacity : 64;
        void *grown = fwm__realloc(j->fenced, capacity * sizeof *j->fenced);
        if (!grown) return; /* out of memory: the session's later writes go through unfenced */
        j->fenced = grown;
        j->fenced_capacity = capacity;
    }
    fence *f = &j->fenced[j->fenced_count++];
    memcpy(f->id, id, FWM_SESSION_ID_BYTES);
    f->epoch = epoch;
}

/* A copy of the session loaded under `epoch`: lifts a fence of that epoch or an older one. */
static void fence_remove(fwm__journal *j, const uint8_t *id, uint64_t epoch) {
    long i = fence_find(j, id);
    if (i < 0 || j->fenced[i].epoch > epoch) return;
    j->fenced[i] = j->fenced[--j->fenced_count];
}

/* Sessions fenced by FWM_STORE_FENCED (cluster): the requests queued behind the refused one are
 * answered `moved` too, not `storage`. Lifted with the fence, by the session's LOADED marker. */
static long moved_find(const fwm__journal *j, const uint8_t *id) {
    for (size_t i = 0; i < j->moved_count; i++)
        if (memcmp(j->moved[i], id, FWM_SESSION_ID_BYTES) == 0) return (long)i;
    return -1;
}

static void moved_add(fwm__journal *j, const uint8_t *id) {
    if (moved_find(j, id) >= 0) return;
    if (j->moved_count == j->moved_capacity) {
        size_t capacity = j->moved_capacity ? 2 * j->moved_capacity : 16;
        void *grown = fwm__realloc(j->moved, capacity * FWM_SESSION_ID_BYTES);
        if (!grown) return; /* out of memory: its queued requests get `storage` instead */
        j->moved = grown;
        j->moved_capacity = capacity;
    }
    memcpy(j->moved[j->moved_count++], id, FWM_SESSION_ID_BYTES);
}

static void moved_remove(fwm__journal *j, const uint8_t *id) {
    long i = moved_find(j, id);
    if (i >= 0) memcpy(j->moved[i], j->moved[--j->moved_count], FWM_SESSION_ID_BYTES);
}

static bool writes(const fwm__store_op *op) {
    return op->kind != FWM_OP_LOADED;
}

/* Fence every session the outbox writes for. */
static void fence_outbox(fwm__journal *j, const fwm__outbox *o) {
    for (size_t i = 0; i < o->op_count; i++)
        if (writes(&o->ops[i])) fence_add(j, o->ops[i].id, o->ops[i].epoch);
}

/* Walk the outbox's operations in order against the fences: a LOADED marker lifts its session's
 * fence; a write for a fenced session (made under the fenced epoch or an older one) makes the whole
 * outbox fail. */
static bool passes_fences(fwm__journal *j, const fwm__outbox *o) {
    for (size_t i = 0; i < o->op_count; i++) {
        if (o->ops[i].kind == FWM_OP_LOADED) {
            fence_remove(j, o->ops[i].id, o->ops[i].epoch);
            if (j->moved_count) moved_remove(j, o->ops[i].id);
        }
        else if (fenced_out(j, o->ops[i].id, o->ops[i].epoch)) return false;
    }
    return true;
}

static void mark_failed(fwm__journal *j, fwm__outbox *o, const char *why) {
    if (!o->store_failed) snprintf(o->store_error, sizeof o->store_error, "%s", why);
    o->store_failed = true;
    fence_outbox(j, o);
    j->stats.failures++;
}

/* An outbox refused by an earlier failure of its session: `moved` when that was a fenced write. */
static void mark_fenced_behind(fwm__journal *j, fwm__outbox *o) {
    mark_failed(j, o, "an earlier write for this session failed");
    for (size_t i = 0; i < o->op_count && !o->fenced && j->moved_count; i++)
        if (o->ops[i].kind != FWM_OP_LOADED && moved_find(j, o->ops[i].id) >= 0) o->fenced = true;
}

/* ---- writing ---- */

/* `epoch`: the epoch the batch's operations so far were marked with (cluster: writer_epoch). */
static fwm__store_status apply(fwm__journal *j, const fwm__outbox *o, uint64_t *epoch, fwm__store_error *error) {
    fwm__store *st = j->params.store;
    const fwm__store_backend *b = st->backend;
    fwm__store_status status = FWM_STORE_OK;
    for (size_t i = 0; i < o->op_count && status == FWM_STORE_OK; i++) {
        const fwm__store_op *op = &o->ops[i];
        const uint8_t *bytes = o->store_bytes + op->offset;
        if (b->writer_epoch && op->kind != FWM_OP_LOADED && op->epoch != *epoch) {
            status = b->writer_epoch(st, op->epoch, error);
            *epoch = op->epoch;
            if (status != FWM_STORE_OK) break;
        }
        switch (op->kind) {
        case FWM_OP_META: status = b->put_meta(st, op->id, bytes, op->length, error); break;
        case FWM_OP_SNAPSHOT: status = b->put_snapshot(st, op->id, bytes, op->length, error); break;
        case FWM_OP_LOG: status = b->append_log(st, op->id, op->seq, bytes, op->length, error); break;
        case FWM_OP_DELETE_LOG: status = b->delete_log(st, op->id, op->seq, op->below, error); break;
        case FWM_OP_REMOVE: status = b->remove(st, op->id, error); break;
        case FWM_OP_LOADED: break;
        }
    }
    return status;
}

static bool has_writes(const fwm__outbox *o) {
    for (size_t i = 0; i < o->op_count; i++)
        if (writes(&o->ops[i])) return true;
    return false;
}

static bool only_deletes(const fwm__outbox *o) {
    for (size_t i = 0; i < o->op_count; i++)
        if (o->ops[i].kind != FWM_OP_REMOVE && o->ops[i].kind != FWM_OP_DELETE_LOG && o->ops[i].kind != FWM_OP_LOADED)
            return false;
    return true;
}

static void set_health(fwm__journal *j, bool ok, const char *why) {
    pthread_mutex_lock(&j->mutex);
    j->degraded = !ok;
    if (!ok) {
        snprintf(j->why, sizeof j->why, "%.299s", why);
        pthread_cond_signal(&j->wake); /* the journal thread probes, even when the loop writes */
        pthread_cond_signal(&j->watcher_wake); /* (the watcher, with a remote store) */
    }
    pthread_mutex_unlock(&j->mutex);
}

/* One batch over `outboxes` (those not failed and with writes). */
static fwm__store_status write_batch(fwm__journal *j, fwm__outbox **list, size_t n, fwm__store_error *error) {
    fwm__store *st = j->params.store;
    fwm__store_status status = st->backend->begin(st, error);
    uint64_t epoch = 0;
    for (size_t i = 0; i < n && status == FWM_STORE_OK; i++) status = apply(j, list[i], &epoch, error);
    if (status == FWM_STORE_OK) return st->backend->commit(st, error);
    st->backend->abort(st);
    return status;
}

static void count_written(fwm__journal *j, fwm__outbox *const *list, size_t n) {
    pthread_mutex_lock(&j->mutex);
    j->stats.commits++;
    j->unsynced = true;
    for (size_t i = 0; i < n; i++) {
        j->stats.log_bytes += list[i]->log_bytes;
        j->stats.bytes_written += list[i]->store_length;
    }
    pthread_mutex_unlock(&j->mutex);
}

/* Force what was committed to disk (the store allows this beside a write batch). */
static void sync_now(fwm__journal *j) {
    pthread_mutex_lock(&j->mutex);
    j->unsynced = false;
    pthread_mutex_unlock(&j->mutex);
    fwm__store_error error = {0};
    fwm__store_status status = j->params.store->backend->sync(j->params.store, &error);
    pthread_mutex_lock(&j->mutex);
    j->stats.fsyncs++;
    pthread_mutex_unlock(&j->mutex);
    if (status != FWM_STORE_OK) {
        fprintf(stderr, "fwm-serve: %s\n", error.message);
        set_health(j, false, error.message);
    }
}

/* Write every outbox of the batch (in order), marking those that could not be written. */
static void write_all(fwm__journal *j, fwm__outbox *batch) {
    size_t count = 0;
    for (fwm__outbox *o = batch; o; o = o->next) count++;
    fwm__outbox **all = fwm__malloc((count ? count : 1) * sizeof *all);
    fwm__outbox **writing = fwm__malloc((count ? count : 1) * sizeof *writing);
    uint64_t start = fwm__now_ns();
    size_t n = 0, w = 0;
    for (fwm__outbox *o = batch; o; o = o->next) {
        if (all) all[n] = o;
        n++;
    }
    if (!all || !writing) { /* out of memory: fail every write, keep the order */
        for (fwm__outbox *o = batch; o; o = o->next)
            if (has_writes(o)) mark_failed(j, o, "out of memory writing to the store");
    } else {
        /* the fences as they were, to re-walk them if the batch must be retried one by one */
        size_t saved_count = j->fenced_count;
        fence *saved = saved_count ? fwm__malloc(saved_count * sizeof *saved) : NULL;
        if (saved) memcpy(saved, j->fenced, saved_count * sizeof *saved);
        for (size_t i = 0; i < n; i++) {
            fwm__outbox *o = all[i];
            if (o->store_failed) mark_failed(j, o, o->store_error);
            else if (!passes_fences(j, o)) mark_fenced_behind(j, o);
            else if (has_writes(o)) writing[w++] = o;
        }
        fwm__store_error error = {0};
        fwm__store_status status = w ? write_batch(j, writing, w, &error) : FWM_STORE_OK;
        bool batch_maybe_applied = status != FWM_STORE_OK && error.maybe_applied;
        if (status == FWM_STORE_OK && w) {
            count_written(j, writing, w);
            set_health(j, true, NULL);
        } else if (status != FWM_STORE_OK && j->params.remote_store && status != FWM_STORE_FULL &&
                   status != FWM_STORE_FENCED) {
            /* a remote store unreachable or silent: retrying each outbox would wait a command timeout
             * each (a request must be answered within one); all of them fail, as the batch did */
            for (size_t i = 0; i < w; i++) {
                mark_failed(j, writing[i], error.message);
                if (batch_maybe_applied) writing[i]->store_maybe_applied = true;
            }
            fprintf(stderr, "fwm-serve: storage: %s\n", error.message);
            set_health(j, false, error.message);
        } else if (status != FWM_STORE_OK) {
            /* retry one outbox at a time, so one that does not fit fails alone */
            if (saved) memcpy(j->fenced, saved, saved_count * sizeof *saved);
            if (saved || saved_count == 0) j->fenced_count = saved_count;
            bool any_failed = false;
            char why[300];
            snprintf(why, sizeof why, "%.299s", error.message);
            for (size_t i = 0; i < n; i++) {
                fwm__outbox *o = all[i];
                if (o->store_failed) continue;
                if (!passes_fences(j, o)) {
                    mark_fenced_behind(j, o);
                    continue;
                }
                if (!has_writes(o)) continue;
                fwm__store_error one = {0};
                fwm__store_status st = write_batch(j, &o, 1, &one);
                if (st == FWM_STORE_FULL && only_deletes(o) &&
                    j->params.store->backend->free_reserve(j->params.store, NULL) == FWM_STORE_OK)
                    st = write_batch(j, &o, 1, &one); /* deleting makes room: it may use the headroom */
                if (st == FWM_STORE_OK) {
                    count_written(j, &o, 1);
                } else if (st == FWM_STORE_FENCED) { /* the session's owner is elsewhere: not a store failure */
                    mark_failed(j, o, "this node no longer owns the session");
                    o->fenced = true;
                    snprintf(o->moved_to, sizeof o->moved_to, "%s", one.owner);
                    for (size_t k = 0; k < o->op_count; k++)
                        if (writes(&o->ops[k])) moved_add(j, o->ops[k].id);
                } else {
                    mark_failed(j, o, one.message);
                    /* an outbox of a batch that may yet be applied may be applied too */
                    if (one.maybe_applied || batch_maybe_applied) o->store_maybe_applied = true;
                    snprintf(why, sizeof why, "%.299s", one.message);
                    any_failed = true;
                }
            }
            if (any_failed) {
                fprintf(stderr, "fwm-serve: storage: %s\n", why);
                set_health(j, false, why);
            }
        }
        fwm__free(saved);
    }
    pthread_mutex_lock(&j->mutex);
    bool unsynced = j->unsynced;
    pthread_mutex_unlock(&j->mutex);
    if (unsynced && j->params.mode == FWM_FSYNC_ALWAYS) sync_now(j); /* before anything is passed on */
    pthread_mutex_lock(&j->mutex);
    fwm__histogram_add(&j->stats.commit_latency, (fwm__now_ns() - start) / 1000);
    pthread_mutex_unlock(&j->mutex);
    fwm__free(all);
    fwm__free(writing);
}

/* Write the batch, then pass every outbox on, in order. */
static void process(fwm__journal *j, fwm__outbox *batch) {
    write_all(j, batch);
    while (batch) {
        fwm__outbox *next = batch->next;
        batch->next = NULL;
        j->params.post(j->params.user, batch);
        batch = next;
    }
}

/* While writes fail: try whether there is room again. */
static void probe(fwm__journal *j) {
    j->last_probe_ns = fwm__now_ns();
    fwm__store_error error = {0};
    if (j->params.store->backend->probe(j->params.store, PROBE_BYTES, &error) == FWM_STORE_OK) {
        fprintf(stderr, "fwm-serve: storage: writes succeed again\n");
        set_health(j, true, NULL);
    }
}

/* Remote store: read its figures (sessions, bytes) for stats and /metrics, off the loop thread. */
static void refresh_figures(fwm__journal *j) {
    uint64_t opens = atomic_load(&j->recorded_opens); /* these are in the count read next */
    fwm__store_info info;
    bool ok = j->params.store->backend->info(j->params.store, &info, NULL) == FWM_STORE_OK;
    pthread_mutex_lock(&j->mutex);
    if (ok) {
        j->figures = info;
        j->figures_opens = opens;
    }
    j->figures_ok = ok;
    j->figures_ns = fwm__now_ns();
    pthread_mutex_unlock(&j->mutex);
}

static void *journal_main(void *arg) {
    fwm__journal *j = arg;
    pthread_mutex_lock(&j->mutex);
    for (;;) {
        while (!j->head && !j->stopping) { /* sleep until work, a due probe or due figures */
            uint64_t now = fwm__now_ns(), due = UINT64_MAX;
            if (j->degraded && !j->params.remote_store) due = j->last_probe_ns + PROBE_INTERVAL_NS;
            if (due == UINT64_MAX) {
                pthread_cond_wait(&j->wake, &j->mutex);
                continue;
            }
            if (due <= now) break;
            struct timespec ts;
            fwm__deadline_in(&ts, due - now);
            if (pthread_cond_timedwait(&j->wake, &j->mutex, &ts) == ETIMEDOUT) break;
        }
        fwm__outbox *batch = j->head;
        j->head = j->tail = NULL;
        j->queued = 0;
        j->busy = true;
        bool degraded = j->degraded, stopping = j->stopping;
        pthread_mutex_unlock(&j->mutex);
        if (batch) process(j, batch);
        uint64_t now = fwm__now_ns();
        /* (a remote store is probed by the watcher thread, so a silent one never holds up the writes) */
        if (degraded && !batch && !j->params.remote_store && now - j->last_probe_ns >= PROBE_INTERVAL_NS) probe(j);
        pthread_mutex_lock(&j->mutex);
        j->busy = false;
        pthread_cond_broadcast(&j->wake);
        if (stopping && !j->head) break;
    }
    pthread_mutex_unlock(&j->mutex);
    return NULL;
}

/* Remote store: probe it once a second while writes fail, and read its figures once a second. */
static void *watcher_main(void *arg) {
    fwm__journal *j = arg;
    pthread_mutex_lock(&j->mutex);
    while (!j->watcher_stopping) {
        uint64_t now = fwm__now_ns(), due = j->figures_ns + FIGURES_INTERVAL_NS;
        if (j->degraded && j->last_probe_ns + PROBE_INTERVAL_NS < due) due = j->last_probe_ns + PROBE_INTERVAL_NS;
        if (due > now) {
            struct timespec ts;
            fwm__deadline_in(&ts, due - now);
            pthread_cond_timedwait(&j->watcher_wake, &j->mutex, &ts);
            continue;
        }
        bool degraded = j->degraded;
        pthread_mutex_unlock(&j->mutex);
        if (degraded && now - j->last_probe_ns >= PROBE_INTERVAL_NS) probe(j);
        if (now - j->figures_ns >= FIGURES_INTERVAL_NS) refresh_figures(j);
        pthread_mutex_lock(&j->mutex);
    }
    pthread_mutex_unlock(&j->mutex);
    return NULL;
}

/* --fsync interval: every interval, force what was committed since the last time to disk. */
static void *syncer_main(void *arg) {
    fwm__journal *j = arg;
    pthread_mutex_lock(&j->mutex);
    while (!j->syncer_stopping) {
        struct timespec ts;
        fwm__deadline_in(&ts, j->params.interval_ms * 1000000u);
        pthread_cond_timedwait(&j->syncer_wake, &j->mutex, &ts);
        if (!j->unsynced || j->syncer_stopping) continue;
        pthread_mutex_unlock(&j->mutex);
        sync_now(j);
        pthread_mutex_lock(&j->mutex);
    }
    pthread_mutex_unlock(&j->mutex);
    return NULL;
}

fwm__journal *fwm__journal_start(const fwm__journal_params *params) {
    if (!params || !params->store || !params->post) return NULL;
    fwm__journal *j = fwm__calloc(1, sizeof *j);
    if (!j) return NULL;
    j->params = *params;
    if (j->params.interval_ms == 0) j->params.interval_ms = 100;
    pthread_mutex_init(&j->mutex, NULL);
    fwm__cond_init_monotonic(&j->wake);
    fwm__cond_init_monotonic(&j->syncer_wake);
    fwm__cond_init_monotonic(&j->watcher_wake);
    if (j->params.remote_store) refresh_figures(j); /* before any request asks for them */
    if (pthread_create(&j->thread, NULL, journal_main, j) != 0) {
        fwm__journal_stop(j);
        return NULL;
    }
    j->thread_started = true;
    if (j->params.remote_store) {
        if (pthread_create(&j->watcher, NULL, watcher_main, j) != 0) {
            fwm__journal_stop(j);
            return NULL;
        }
        j->watcher_started = true;
    }
    if (j->params.mode == FWM_FSYNC_INTERVAL) {
        if (pthread_create(&j->syncer, NULL, syncer_main, j) != 0) {
            fwm__journal_stop(j);
            return NULL;
        }
        j->syncer_started = true;
    }
    return j;
}

void fwm__journal_stop(fwm__journal *j) {
    if (!j) return;
    if (j->thread_started) {
        pthread_mutex_lock(&j->mutex);
        j->stopping = true;
        pthread_cond_broadcast(&j->wake);
        pthread_mutex_unlock(&j->mutex);
        pthread_join(j->thread, NULL);
    }
    if (j->watcher_started) {
        pthread_mutex_lock(&j->mutex);
        j->watcher_stopping = true;
        pthread_cond_broadcast(&j->watcher_wake);
        pthread_mutex_unlock(&j->mutex);
        pthread_join(j->watcher, NULL);
    }
    if (j->syncer_started) {
        pthread_mutex_lock(&j->mutex);
        j->syncer_stopping = true;
        pthread_cond_broadcast(&j->syncer_wake);
        pthread_mutex_unlock(&j->mutex);
        pthread_join(j->syncer, NULL);
    }
    if (j->thread_started && j->unsynced) sync_now(j); /* the last commits, in every mode */
    while (j->head) { /* only when the thread never ran */
        fwm__outbox *next = j->head->next;
        fwm__outbox_free(j->head);
        j->head = next;
    }
    pthread_cond_destroy(&j->wake);
    pthread_cond_destroy(&j->syncer_wake);
    pthread_cond_destroy(&j->watcher_wake);
    pthread_mutex_destroy(&j->mutex);
    fwm__free(j->fenced);
    fwm__free(j->moved);
    fwm__free(j);
}

bool fwm__journal_store_info(fwm__journal *j, fwm__store_info *out) {
    if (!j->params.remote_store) {
        if (j->params.store->backend->info(j->params.store, out, NULL) == FWM_STORE_OK) return true;
        memset(out, 0, sizeof *out);
        return false;
    }
    pthread_mutex_lock(&j->mutex);
    *out = j->figures;
    out->sessions += atomic_load(&j->recorded_opens) - j->figures_opens; /* opened since: never too few */
    bool ok = j->figures_ok;
    pthread_mutex_unlock(&j->mutex);
    return ok;
}

void fwm__journal_count_recorded_open(fwm__journal *j) {
    atomic_fetch_add(&j->recorded_opens, 1);
}

bool fwm__journal_inline(const fwm__journal *j) {
    return j->params.mode != FWM_FSYNC_ALWAYS && !j->params.remote_store;
}

void fwm__journal_write_inline(fwm__journal *j, fwm__outbox *batch) {
    write_all(j, batch);
}

void fwm__journal_submit(fwm__journal *j, fwm__outbox *o) {
    if (fwm__journal_inline(j)) { /* the loop writes it, with everything else it delivers */
        o->next = NULL;
        j->params.post(j->params.user, o);
        return;
    }
    o->next = NULL;
    pthread_mutex_lock(&j->mutex);
    if (j->tail) j->tail->next = o;
    else j->head = o;
    j->tail = o;
    j->queued++;
    pthread_cond_signal(&j->wake);
    pthread_mutex_unlock(&j->mutex);
}

bool fwm__journal_idle(fwm__journal *j) {
    pthread_mutex_lock(&j->mutex);
    bool idle = !j->head && !j->busy;
    pthread_mutex_unlock(&j->mutex);
    return idle;
}

bool fwm__journal_healthy(fwm__journal *j, char *why, size_t why_size) {
    pthread_mutex_lock(&j->mutex);
    bool ok = !j->degraded;
    if (!ok && why) snprintf(why, why_size, "%s", j->why);
    pthread_mutex_unlock(&j->mutex);
    return ok;
}

void fwm__journal_get_stats(fwm__journal *j, fwm__journal_stats *out) {
    pthread_mutex_lock(&j->mutex);
    *out = j->stats;
    out->queued = j->queued;
    pthread_mutex_unlock(&j->mutex);
}
