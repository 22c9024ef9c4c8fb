/* test_journal.c - the journal's group commit, failure fencing, recovery probe and fsync modes,
 * against a scripted in-memory store backend (a second implementation of store.h, so the journal is
 * tested apart from LMDB and failures can be made to happen exactly when wanted).
 *
 * Checks: outboxes are passed on in the order they came; a batch's writes are applied before its
 * outbox is passed on; with --fsync always every pass-on is preceded by a sync; a failed write marks
 * that outbox store_failed (nothing of it applied), fences its sessions so later writes for them
 * fail too while other sessions' writes go on, and a LOADED marker lifts the fence; the journal is
 * unhealthy until a probe succeeds; deletions may use the headroom when the store is full.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "sessions/durable_session.h"
#include "fwm_alloc.h"
#include "sessions/journal.h"

/* ---- the scripted store ---- */

typedef struct fake {
    fwm__store base;
    pthread_mutex_t mutex;
    int applied_logs;          /* committed log appends */
    int pending_logs;          /* in the open batch */
    uint8_t last_log_id[FWM_STORE_ID_BYTES];
    int fail_commits;          /* the next N commits fail with FULL */
    bool full_for_writes;      /* every batch with a put fails FULL; deletes only with the headroom */
    bool batch_has_put, reserve_free;
    int syncs, probes, commits, removes;
    bool probe_ok;
} fake;

static fwm__store_status f_begin(fwm__store *s, fwm__store_error *e) {
    (void)e;
    fake *f = (fake *)s;
    f->pending_logs = 0;
    f->batch_has_put = false;
    return FWM_STORE_OK;
}

static fwm__store_status f_put(fwm__store *s, const uint8_t *id, const void *b, size_t n, fwm__store_error *e) {
    (void)id, (void)b, (void)n, (void)e;
    ((fake *)s)->batch_has_put = true;
    return FWM_STORE_OK;
}

static fwm__store_status f_log(fwm__store *s, const uint8_t *id, uint64_t seq, const void *b, size_t n,
                               fwm__store_error *e) {
    (void)seq, (void)b, (void)n, (void)e;
    fake *f = (fake *)s;
    f->pending_logs++;
    f->batch_has_put = true;
    memcpy(f->last_log_id, id, FWM_STORE_ID_BYTES);
    return FWM_STORE_OK;
}

static fwm__store_status f_delete_log(fwm__store *s, const uint8_t *id, uint64_t from, uint64_t below,
                                      fwm__store_error *e) {
    (void)s, (void)id, (void)from, (void)below, (void)e;
    return FWM_STORE_OK;
}

static fwm__store_status f_remove(fwm__store *s, const uint8_t *id, fwm__store_error *e) {
    (void)id, (void)e;
    ((fake *)s)->removes++;
    return FWM_STORE_OK;
}

static fwm__store_status f_commit(fwm__store *s, fwm__store_error *e) {
    fake *f = (fake *)s;
    pthread_mutex_lock(&f->mutex);
    bool fail = f->fail_commits > 0 || (f->full_for_writes && (f->batch_has_put || !f->reserve_free));
    if (f->fail_commits > 0) f->fail_commits--;
    if (!fail) {
        f->applied_logs += f->pending_logs;
        f->commits++;
    }
    pthread_mutex_unlock(&f->mutex);
    if (fail) {
        snprintf(e->message, sizeof e->message, "fake store: full");
        return FWM_STORE_FULL;
    }
    return FWM_STORE_OK;
}

static void f_abort(fwm__store *s) {
    ((fake *)s)->pending_logs = 0;
}

static fwm__store_status f_sync(fwm__store *s, fwm__store_error *e) {
    (void)e;
    fake *f = (fake *)s;
    pthread_mutex_lock(&f->mutex);
    f->syncs++;
    pthread_mutex_unlock(&f->mutex);
    return FWM_STORE_OK;
}

static fwm__store_status f_probe(fwm__store *s, size_t n, fwm__store_error *e) {
    (void)n, (void)e;
    fake *f = (fake *)s;
    pthread_mutex_lock(&f->mutex);
    f->probes++;
    bool ok = f->probe_ok;
    pthread_mutex_unlock(&f->mutex);
    return ok ? FWM_STORE_OK : FWM_STORE_FULL;
}

static fwm__store_status f_free_reserve(fwm__store *s, fwm__store_error *e) {
    (void)e;
    fake *f = (fake *)s;
    if (f->reserve_free) return FWM_STORE_NOT_FOUND;
    f->reserve_free = true;
    return FWM_STORE_OK;
}

static const fwm__store_backend fake_backend = {
    .name = "fake", .begin = f_begin, .put_meta = f_put, .put_snapshot = f_put, .append_log = f_log,
    .delete_log = f_delete_log, .remove = f_remove, .commit = f_commit, .abort = f_abort, .sync = f_sync,
    .probe = f_probe, .free_reserve = f_free_reserve,
};

/* ---- what the journal passes on ---- */

typedef struct sink_log {
    pthread_mutex_t mutex;
    pthread_cond_t cond;
    fwm__outbox *got[64];
    int applied_at_post[64]; /* the store's committed logs when each was passed on */
    int syncs_at_post[64];
    int count;
    fake *store;
    fwm__journal *journal;
} sink_log;

/* The loop's side: with --fsync interval/never the journal hands outboxes straight over and the
 * loop writes them itself before delivering (as fwm-serve's drain_inbox does). */
static void post(void *user, fwm__outbox *o) {
    sink_log *l = user;
    if (l->journal && fwm__journal_inline(l->journal)) fwm__journal_write_inline(l->journal, o);
    pthread_mutex_lock(&l->store->mutex);
    int applied = l->store->applied_logs, syncs = l->store->syncs;
    pthread_mutex_unlock(&l->store->mutex);
    pthread_mutex_lock(&l->mutex);
    l->applied_at_post[l->count] = applied;
    l->syncs_at_post[l->count] = syncs;
    l->got[l->count++] = o;
    pthread_cond_broadcast(&l->cond);
    pthread_mutex_unlock(&l->mutex);
}

static void wait_for(sink_log *l, int count) {
    pthread_mutex_lock(&l->mutex);
    for (int i = 0; i < 500 && l->count < count; i++) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 10000000;
        if (ts.tv_nsec >= 1000000000) ts.tv_sec++, ts.tv_nsec -= 1000000000;
        pthread_cond_timedwait(&l->cond, &l->mutex, &ts);
    }
    pthread_mutex_unlock(&l->mutex);
}

/* An outbox holding one log append (or a LOADED marker, or a removal) for session `who`. */
static fwm__outbox *outbox_for(uint8_t who, fwm__store_op_kind kind) {
    fwm__outbox *o = fwm__calloc(1, sizeof *o); /* freed by fwm__outbox_free */
    msgpack_sbuffer_init(&o->buffer);
    o->ops = fwm__calloc(1, sizeof *o->ops);
    o->op_capacity = o->op_count = 1;
    o->ops[0].kind = kind;
    memset(o->ops[0].id, who, FWM_SESSION_ID_BYTES);
    return o;
}

static void run(fwm__fsync_mode mode) {
    fake f = {.base = {&fake_backend}};
    pthread_mutex_init(&f.mutex, NULL);
    sink_log l = {.store = &f};
    pthread_mutex_init(&l.mutex, NULL);
    pthread_cond_init(&l.cond, NULL);
    fwm__journal_params p = {.store = &f.base, .mode = mode, .interval_ms = 20, .post = post, .user = &l};
    fwm__journal *j = fwm__journal_start(&p);
    CHECK(j != NULL);
    pthread_mutex_lock(&l.mutex);
    l.journal = j;
    pthread_mutex_unlock(&l.mutex);
    CHECK(fwm__journal_inline(j) == (mode != FWM_FSYNC_ALWAYS));

    /* 1. ordinary writes: passed on in order, after they were committed */
    for (int i = 0; i < 4; i++) fwm__journal_submit(j, outbox_for((uint8_t)(1 + i % 2), FWM_OP_LOG));
    wait_for(&l, 4);
    CHECK_INT(l.count, 4);
    for (int i = 0; i < 4; i++) {
        CHECK(!l.got[i]->store_failed);
        CHECK(l.applied_at_post[i] >= i + 1); /* its own write is in before it leaves */
        if (mode == FWM_FSYNC_ALWAYS) CHECK(l.syncs_at_post[i] >= 1);
    }
    CHECK(l.got[0]->ops[0].id[0] == 1 && l.got[1]->ops[0].id[0] == 2 && l.got[3]->ops[0].id[0] == 2);
    CHECK(fwm__journal_healthy(j, NULL, 0));

    /* 2. a failed write: that outbox fails, its session (7) is fenced, session 8 goes on */
    pthread_mutex_lock(&f.mutex);
    f.fail_commits = 2; /* the group, then the retry of the one outbox */
    pthread_mutex_unlock(&f.mutex);
    fwm__journal_submit(j, outbox_for(7, FWM_OP_LOG));
    wait_for(&l, 5);
    CHECK(l.got[4]->store_failed);
    char why[300] = "";
    CHECK(!fwm__journal_healthy(j, why, sizeof why));
    CHECK(strstr(why, "fake store: full") != NULL);
    int before = f.applied_logs;
    fwm__journal_submit(j, outbox_for(7, FWM_OP_LOG)); /* fenced */
    fwm__journal_submit(j, outbox_for(8, FWM_OP_LOG)); /* another session: written */
    wait_for(&l, 7);
    CHECK(l.got[5]->store_failed && strstr(l.got[5]->store_error, "earlier write for this session failed"));
    CHECK(!l.got[6]->store_failed);
    CHECK_INT(f.applied_logs, before + 1);
    CHECK(f.last_log_id[0] == 8);
    CHECK(fwm__journal_healthy(j, NULL, 0)); /* session 8's write succeeded */
    /* the rebuilt session's LOADED marker lifts the fence */
    fwm__journal_submit(j, outbox_for(7, FWM_OP_LOADED));
    fwm__journal_submit(j, outbox_for(7, FWM_OP_LOG));
    wait_for(&l, 9);
    CHECK(!l.got[7]->store_failed && !l.got[8]->store_failed);
    CHECK(f.last_log_id[0] == 7);

    /* 3. full: writes fail until a probe finds room; a deletion may use the headroom */
    pthread_mutex_lock(&f.mutex);
    f.full_for_writes = true;
    pthread_mutex_unlock(&f.mutex);
    fwm__journal_submit(j, outbox_for(9, FWM_OP_LOG));
    wait_for(&l, 10);
    CHECK(l.got[9]->store_failed);
    CHECK(!fwm__journal_healthy(j, NULL, 0));
    fwm__journal_submit(j, outbox_for(10, FWM_OP_REMOVE));
    wait_for(&l, 11);
    CHECK(!l.got[10]->store_failed);
    CHECK(f.reserve_free && f.removes >= 1);
    pthread_mutex_lock(&f.mutex);
    f.full_for_writes = false;
    f.probe_ok = true;
    pthread_mutex_unlock(&f.mutex);
    for (int i = 0; i < 300 && !fwm__journal_healthy(j, NULL, 0); i++) usleep(10000);
    CHECK(fwm__journal_healthy(j, NULL, 0)); /* the probe, about a second later */
    CHECK(f.probes >= 1);

    fwm__journal_stats st;
    fwm__journal_get_stats(j, &st);
    for (int i = 0; i < 100 && mode == FWM_FSYNC_INTERVAL && st.fsyncs == 0; i++) { /* the syncer's tick */
        usleep(10000);
        fwm__journal_get_stats(j, &st);
    }
    CHECK(st.failures >= 3);
    CHECK(st.commits >= 4); /* group commit: step 1's four outboxes may share one batch */
    if (mode == FWM_FSYNC_INTERVAL) CHECK(st.fsyncs >= 1); /* the syncer thread */
    if (mode == FWM_FSYNC_NEVER) CHECK_INT(st.fsyncs, 0);
    fwm__journal_stop(j);
    if (mode == FWM_FSYNC_NEVER) CHECK(f.syncs >= 1); /* stopping syncs what was committed */
    for (int i = 0; i < l.count; i++) fwm__outbox_free(l.got[i]);
    pthread_cond_destroy(&l.cond);
    pthread_mutex_destroy(&l.mutex);
    pthread_mutex_destroy(&f.mutex);
}

int main(void) {
    run(FWM_FSYNC_ALWAYS);
    run(FWM_FSYNC_INTERVAL);
    run(FWM_FSYNC_NEVER);
    return check_finish("test_journal");
}
