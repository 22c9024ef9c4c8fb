/* cluster_node.c - lease renewal, lease loss, ownership claims and graceful leave (cluster_node.h);
 * also what a node does when another fwm-serve has taken its address (it stops) and when the store
 * lost its data (it says so: `session_lost` for the sessions it held). */
#include "cluster_node.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/timed_wait.h"
#include "fwm_alloc.h"
#include "lookup.h"
#include "store/cluster.h"

/* After a failed attempt to join again, the next waits this long: requests that find the lease lost
 * meanwhile are refused at once instead of each waiting for Redis. */
#define REJOIN_INTERVAL_NS 500000000u

/* At start, a lease already held under this node's address is waited for (it may be a crashed
 * run's, expiring within the TTL) this much past the TTL, retrying every JOIN_RETRY_MS. */
#define JOIN_GRACE_MS 500u
#define JOIN_RETRY_MS 100L

/* The most session ids remembered as lost with the store's data (16 bytes each). */
#define LOST_IDS_MAX (1u << 20)

struct fwm__cluster_node {
    fwm__server *server;
    pthread_t thread;
    bool thread_started;
    pthread_mutex_t mutex;
    pthread_cond_t wake;
    bool stopping;
    bool lost;            /* (mutex) the lease is gone (or could not be renewed in time) */
    uint64_t generation;  /* (mutex) joins so far: a renewal begun before a join says nothing of its lease */
    uint64_t dropped_for; /* (mutex) generation + 1 once the loop dropped what was resident for this loss:
                             the renewal thread joins again only then */
    uint64_t epoch;       /* (mutex) this node's epoch */
    uint64_t previous_epoch; /* (mutex) the epoch before the last join again */
    bool joined_again;    /* (mutex) the renewal thread joined again: the loop logs it */
    bool data_lost;       /* (mutex) that join found the store's data lost: the loop marks the sessions */
    uint64_t replaced_by; /* (mutex) a newer epoch holds this node's address: the loop stops the server */
    size_t dropped_since_loss; /* loop thread: resident sessions dropped since the lease was lost */
    /* loop thread: the ids dropped since the lease was lost (if the store turns out to have lost its
     * data, these sessions are gone), and the ids known lost (sorted), answered `session_lost` */
    uint8_t (*dropped)[FWM_SESSION_ID_BYTES];
    size_t dropped_count, dropped_capacity;
    uint8_t (*lost_ids)[FWM_SESSION_ID_BYTES];
    size_t lost_count;
    uint64_t data_losses;    /* times the store was found to have lost its data */
    char data_lost_at[32];   /* when it was last found so (UTC), "" if never */
    uint64_t valid_until_ns; /* (mutex) monotonic: the lease surely lasts until then (sent + TTL of the
                                last renewal or join Redis confirmed); reads of resident sessions stop there */
    /* counters (mutex) */
    uint64_t renewals, renewal_failures, losses;
};

/* Renewal thread, lease lost: join again once the loop has dropped what was resident (so no copy
 * made under the old epoch is served under the new lease). A newer epoch holding this node's address
 * means it was replaced: the loop stops the server. Called and returns with the mutex held. */
static void join_again(fwm__cluster_node *n) {
    fwm__server *s = n->server;
    if (n->replaced_by || n->dropped_for != n->generation + 1) return;
    uint64_t highest = n->epoch, got = 0;
    pthread_mutex_unlock(&n->mutex);
    bool data_lost = false;
    fwm__store_error error = {0};
    uint64_t sent = fwm__now_ns();
    fwm__store_status st = fwm__cluster_join(s->store, s->config->advertise, s->config->lease_ttl_ms, highest, &got,
                                             &data_lost, &error);
    if (st != FWM_STORE_OK && !(st == FWM_STORE_BUSY && got > highest))
        fprintf(stderr, "fwm-serve: cluster: lease lost and cannot join again yet: %s\n", error.message);
    pthread_mutex_lock(&n->mutex);
    if (data_lost) n->data_lost = true;
    if (st == FWM_STORE_BUSY && got > highest) {
        n->replaced_by = got;
    } else if (st == FWM_STORE_OK) {
        n->previous_epoch = n->epoch;
        n->epoch = got;
        n->lost = false;
        n->joined_again = true;
        n->valid_until_ns = sent + s->config->lease_ttl_ms * 1000000u;
        n->generation++;
        n->losses++;
        pthread_cond_broadcast(&n->wake); /* lookups waiting for the new lease */
    } else {
        return;
    }
    uv_async_send(&s->wake);
}

/* Renew every third of the TTL. A lease not renewed for a whole TTL is taken as lost, even when
 * Redis could not say so (it may have expired meanwhile, and another node may own the sessions).
 * A lost lease is joined again from here, at most every REJOIN_INTERVAL_NS: the loop thread never
 * waits for Redis. */
static void *renewal_main(void *arg) {
    fwm__cluster_node *n = arg;
    fwm__server *s = n->server;
    uint64_t ttl_ms = s->config->lease_ttl_ms, last_ok = fwm__now_ns();
    pthread_mutex_lock(&n->mutex);
    while (!n->stopping) {
        struct timespec ts;
        fwm__deadline_in(&ts, n->lost ? REJOIN_INTERVAL_NS : ttl_ms * 1000000u / 3);
        pthread_cond_timedwait(&n->wake, &n->mutex, &ts);
        if (n->stopping) break;
        if (n->lost) {
            join_again(n);
            last_ok = fwm__now_ns(); /* the next renewal is of the next lease */
            continue;
        }
        uint64_t generation = n->generation;
        pthread_mutex_unlock(&n->mutex);
        bool lost = false;
        fwm__store_error error = {0};
        uint64_t sent = fwm__now_ns();
        fwm__store_status st = fwm__cluster_renew(s->store, ttl_ms, &lost, &error);
        uint64_t now = fwm__now_ns();
        if (st == FWM_STORE_OK && !lost) last_ok = now;
        else if (st != FWM_STORE_OK) fprintf(stderr, "fwm-serve: cluster: cannot renew the lease: %s\n", error.message);
        if (st != FWM_STORE_OK && now - last_ok >= ttl_ms * 1000000u) lost = true;
        pthread_mutex_lock(&n->mutex);
        if (n->generation != generation) { /* the node joined again meanwhile: this renewal may be of the old lease */
            last_ok = now;
            continue;
        }
        if (st == FWM_STORE_OK && !lost) {
            n->renewals++;
            n->valid_until_ns = sent + ttl_ms * 1000000u;
        }
        if (st != FWM_STORE_OK) n->renewal_failures++;
        if (lost && !n->lost) {
            n->lost = true;
            last_ok = now;
            uv_async_send(&s->wake);
        }
    }
    pthread_mutex_unlock(&n->mutex);
    return NULL;
}

int fwm__cluster_node_start(fwm__server *s) {
    const fwm__config *cfg = s->config;
    if (!cfg->advertise) return 0;
    if (!s->store || s->store->backend != &fwm__store_redis) {
        fprintf(stderr, "fwm-serve: --advertise (cluster mode) needs a Redis store: --store redis://HOST:PORT "
                        "or --store unix:/PATH\n");
        return 1;
    }
    fwm__cluster_node *n = fwm__calloc(1, sizeof *n);
    if (!n) return 1;
    n->server = s;
    pthread_mutex_init(&n->mutex, NULL);
    fwm__cond_init_monotonic(&n->wake);
    s->cluster = n;
    fwm__store_error error = {0};
    /* A lease held under this address is a crashed run's until it expires, or another live node's. */
    uint64_t sent = fwm__now_ns(), give_up = sent + (cfg->lease_ttl_ms + JOIN_GRACE_MS) * 1000000u;
    fwm__store_status st;
    bool data_lost;
    while ((st = fwm__cluster_join(s->store, cfg->advertise, cfg->lease_ttl_ms, 0, &n->epoch, &data_lost, &error)) ==
               FWM_STORE_BUSY &&
           sent < give_up) {
        if (sent + 1000000u * JOIN_RETRY_MS >= give_up) break;
        struct timespec pause = {0, JOIN_RETRY_MS * 1000000L};
        nanosleep(&pause, NULL);
        sent = fwm__now_ns();
    }
    if (st == FWM_STORE_BUSY) {
        fprintf(stderr,
                "fwm-serve: cannot join the cluster: %s, renewed throughout a whole lease (%zu ms): another "
                "fwm-serve is running with --advertise %s; give every node its own address\n",
                error.message, cfg->lease_ttl_ms, cfg->advertise);
        return 1;
    }
    if (st != FWM_STORE_OK) {
        fprintf(stderr, "fwm-serve: cannot join the cluster: %s\n", error.message);
        return 1;
    }
    if (pthread_create(&n->thread, NULL, renewal_main, n) != 0) {
        fprintf(stderr, "fwm-serve: cannot start the lease thread\n");
        return 1;
    }
    n->valid_until_ns = sent + cfg->lease_ttl_ms * 1000000u;
    n->thread_started = true;
    fwm__server_log(s, "cluster: node %s, epoch %llu, lease %zu ms", cfg->advertise, (unsigned long long)n->epoch,
                    cfg->lease_ttl_ms);
    return 0;
}

void fwm__cluster_node_stop(fwm__server *s) {
    fwm__cluster_node *n = s->cluster;
    if (!n) return;
    if (n->thread_started) {
        pthread_mutex_lock(&n->mutex);
        n->stopping = true;
        pthread_cond_broadcast(&n->wake);
        pthread_mutex_unlock(&n->mutex);
        pthread_join(n->thread, NULL);
        n->thread_started = false;
    }
    pthread_cond_destroy(&n->wake);
    pthread_mutex_destroy(&n->mutex);
    fwm__free(n->dropped);
    fwm__free(n->lost_ids);
    fwm__free(n);
    s->cluster = NULL;
}

typedef struct id_list {
    uint8_t (*ids)[FWM_SESSION_ID_BYTES];
    size_t count, capacity;
} id_list;

static void collect(fwm__session_entry *e, void *user) {
    id_list *l = user;
    if (l->count == l->capacity) return;
    memcpy(l->ids[l->count++], e->id, FWM_SESSION_ID_BYTES);
}

void fwm__cluster_node_leave(fwm__server *s) {
    fwm__cluster_node *n = s->cluster;
    if (!n) return;
    if (n->thread_started) { /* no renewal after this: the lease goes now */
        pthread_mutex_lock(&n->mutex);
        n->stopping = true;
        pthread_cond_broadcast(&n->wake);
        pthread_mutex_unlock(&n->mutex);
        pthread_join(n->thread, NULL);
        n->thread_started = false;
    }
    id_list l = {NULL, 0, s->sessions.count};
    l.ids = fwm__malloc((l.capacity ? l.capacity : 1) * FWM_SESSION_ID_BYTES);
    if (l.ids) fwm__session_table_each(&s->sessions, collect, &l);
    fwm__store_error error = {0};
    if (fwm__cluster_leave(s->store, (const uint8_t(*)[FWM_STORE_ID_BYTES])l.ids, l.count, &error) != FWM_STORE_OK)
        fprintf(stderr, "fwm-serve: cluster: leaving: %s (the lease expires by itself)\n", error.message);
    else
        fwm__server_log(s, "cluster: left; %zu resident sessions released", l.count);
    fwm__free(l.ids);
}

uint64_t fwm__cluster_node_epoch(const fwm__server *s) {
    fwm__cluster_node *n = s->cluster;
    if (!n) return 0;
    pthread_mutex_lock(&n->mutex);
    uint64_t epoch = n->epoch;
    pthread_mutex_unlock(&n->mutex);
    return epoch;
}

/* Drop one resident session from memory (its stored state stays; another node may own it). Its
 * queued jobs are answered `moved` instead of running; and whatever a job under way still writes
 * carries the entry's epoch: the store refuses it, even once this node has claimed the session again
 * under a new epoch and loaded another copy. */
static void drop_entry(fwm__server *s, fwm__session_entry *e) {
    fwm__job *close = fwm__job_new(FWM_JOB_CLOSE); /* frees it after its queued jobs */
    if (!close) return;
    close->keep_stored = true;
    fwm__scheduler_move_away(s->scheduler, e);
    fwm__session_table_remove(&s->sessions, e);
    fwm__session_table_lru_remove(&s->sessions, e);
    fwm__scheduler_submit(s->scheduler, e, close);
}

/* Remember the id of a session dropped after the lease was lost (best effort: out of memory, the
 * session is answered `unknown_session` instead of `session_lost` should the store have lost it). */
static void remember_dropped(fwm__cluster_node *n, const uint8_t *id) {
    if (n->dropped_count == n->dropped_capacity) {
        size_t capacity = n->dropped_capacity ? 2 * n->dropped_capacity : 64;
        if (capacity > LOST_IDS_MAX) return;
        void *grown = fwm__realloc(n->dropped, capacity * FWM_SESSION_ID_BYTES);
        if (!grown) return;
        n->dropped = grown;
        n->dropped_capacity = capacity;
    }
    memcpy(n->dropped[n->dropped_count++], id, FWM_SESSION_ID_BYTES);
}

static int compare_ids(const void *a, const void *b) {
    return memcmp(a, b, FWM_SESSION_ID_BYTES);
}

static bool known_lost(const fwm__cluster_node *n, const uint8_t *id) {
    return n->lost_count && bsearch(id, n->lost_ids, n->lost_count, FWM_SESSION_ID_BYTES, compare_ids);
}

/* The store lost its data (its incarnation marker was gone or replaced): the sessions dropped since
 * the lease was lost are gone with it; requests for them are answered `session_lost` from now on. */
static void store_lost_data(fwm__server *s) {
    fwm__cluster_node *n = s->cluster;
    size_t count = n->lost_count + n->dropped_count;
    if (count > LOST_IDS_MAX) count = LOST_IDS_MAX;
    void *grown = count > n->lost_count ? fwm__realloc(n->lost_ids, count * FWM_SESSION_ID_BYTES) : n->lost_ids;
    size_t added = 0;
    if (grown) {
        n->lost_ids = grown;
        added = count - n->lost_count;
        if (added) memcpy(n->lost_ids[n->lost_count], n->dropped, added * FWM_SESSION_ID_BYTES);
        n->lost_count = count;
        qsort(n->lost_ids, n->lost_count, FWM_SESSION_ID_BYTES, compare_ids);
    }
    n->dropped_count = 0;
    n->data_losses++;
    time_t now = time(NULL);
    struct tm utc;
    gmtime_r(&now, &utc);
    strftime(n->data_lost_at, sizeof n->data_lost_at, "%Y-%m-%dT%H:%M:%SZ", &utc);
    fprintf(stderr,
            "fwm-serve: cluster: the store %s lost its data (its marker fwm:incarnation was gone or replaced: "
            "Redis restarted empty, a flush, or a replica without it promoted): the %zu sessions this node held "
            "are lost and answered session_lost; the marker and the format key are written again, and fencing "
            "epochs go on above every one handed out before\n",
            s->config->data_dir, added);
}

/* Another fwm-serve holds the lease of this node's address under a newer epoch: it was started with
 * this node's --advertise while this one could not renew (paused, cut off). Clients that follow
 * `moved` to the address reach it, not this node: this one stops, so it does not answer for sessions
 * it can no longer serve. */
static void replaced(fwm__server *s, uint64_t holder_epoch, uint64_t own_epoch) {
    fprintf(stderr,
            "fwm-serve: cluster: another fwm-serve now holds --advertise %s (epoch %llu, newer than this node's "
            "%llu): this node was replaced while it could not renew its lease, and stops (exit status %d)\n",
            s->config->advertise, (unsigned long long)holder_epoch, (unsigned long long)own_epoch, FWM_EXIT_REPLACED);
    fwm__server_abandon(s, FWM_EXIT_REPLACED);
}

/* The lease is gone: whatever is resident may have another owner by now. Drop it all (the renewal
 * thread joins again with a new epoch once this is done); sessions are claimed anew on their next
 * request. */
static void drop_resident(fwm__server *s) {
    fwm__cluster_node *n = s->cluster;
    size_t dropped = 0;
    while (s->sessions.lru_head) {
        remember_dropped(n, s->sessions.lru_head->id);
        drop_entry(s, s->sessions.lru_head);
        dropped++;
    }
    n->dropped_since_loss += dropped;
}

/* Loop thread: what the renewal thread found. Stopping the server for a replaced node is left to
 * fwm__cluster_node_poll (`may_stop`), never done in the middle of dispatching a request. */
static void lease_news(fwm__server *s, bool may_stop) {
    fwm__cluster_node *n = s->cluster;
    pthread_mutex_lock(&n->mutex);
    bool drop = n->lost && n->dropped_for != n->generation + 1;
    pthread_mutex_unlock(&n->mutex);
    if (drop) {
        drop_resident(s);
        pthread_mutex_lock(&n->mutex);
        n->dropped_for = n->generation + 1;
        pthread_cond_broadcast(&n->wake); /* the renewal thread may join again now */
        pthread_mutex_unlock(&n->mutex);
    }
    pthread_mutex_lock(&n->mutex);
    bool joined = n->joined_again, data_lost = n->data_lost;
    uint64_t replaced_by = may_stop ? n->replaced_by : 0, epoch = n->epoch, previous = n->previous_epoch;
    n->joined_again = n->data_lost = false;
    pthread_mutex_unlock(&n->mutex);
    if (data_lost) store_lost_data(s);
    if (joined) {
        fwm__server_log(s,
                        "cluster: lease of epoch %llu lost; %zu resident sessions dropped; joined again as epoch %llu",
                        (unsigned long long)previous, n->dropped_since_loss, (unsigned long long)epoch);
        n->dropped_since_loss = 0;
        n->dropped_count = 0;
    }
    if (replaced_by && !s->shutting_down) replaced(s, replaced_by, epoch);
}

void fwm__cluster_node_poll(fwm__server *s) {
    if (!s->cluster || s->finished) return;
    lease_news(s, true);
}

void fwm__cluster_node_check_lease(fwm__server *s) {
    fwm__cluster_node *n = s->cluster;
    if (!n) return;
    pthread_mutex_lock(&n->mutex);
    if (!n->lost && fwm__now_ns() >= n->valid_until_ns) { /* no renewal confirmed in time */
        n->lost = true;
        pthread_cond_broadcast(&n->wake);
    }
    pthread_mutex_unlock(&n->mutex);
    lease_news(s, false); /* drops what is resident; joining again is the renewal thread's: no Redis call */
}

static void fail_moved(fwm__rpc_failure *failure, const char *hex, const char *owner) {
    fwm__rpc_fail(failure, FWM_RPC_MOVED, "session %s is served by the node at %s", hex, owner);
    snprintf(failure->word, sizeof failure->word, "%s", owner);
}

void fwm__cluster_node_ask_claim(fwm__server *s, fwm__lookup *l) {
    fwm__cluster_node *n = s->cluster;
    for (int attempt = 0; attempt < 2; attempt++) {
        fwm__store_error error = {0};
        pthread_mutex_lock(&n->mutex);
        uint64_t generation = n->generation;
        l->epoch = n->epoch;
        pthread_mutex_unlock(&n->mutex);
        l->claim = fwm__cluster_claim(s->store, l->id, l->owner, sizeof l->owner, &l->epoch, &error);
        if (l->claim == FWM_CLAIM_ERROR) snprintf(l->error, sizeof l->error, "%s", error.message);
        if (l->claim != FWM_CLAIM_LOST) return;
        /* this node's lease is gone: have it dropped and joined again, then ask once more */
        pthread_mutex_lock(&n->mutex);
        if (!n->lost && n->generation == generation) {
            n->lost = true;
            pthread_cond_broadcast(&n->wake);
            uv_async_send(&s->wake);
        }
        while (n->generation == generation && !n->stopping && !n->replaced_by && fwm__now_ns() < l->deadline_ns) {
            struct timespec ts;
            fwm__deadline_in(&ts, 50000000u);
            pthread_cond_timedwait(&n->wake, &n->mutex, &ts);
        }
        bool joined = n->generation != generation;
        pthread_mutex_unlock(&n->mutex);
        if (!joined) return;
    }
}

bool fwm__cluster_node_claim_answer(fwm__server *s, const uint8_t *id, const fwm__lookup *l,
                                    fwm__rpc_failure *failure) {
    fwm__cluster_node *n = s->cluster;
    if (!n) return true;
    char hex[FWM_SESSION_HEX_SIZE];
    fwm__session_id_to_hex(id, hex);
    lease_news(s, false); /* a data loss the claim's join found is known before NONE is answered */
    switch (l->claim) {
    case FWM_CLAIM_MINE: return true;
    case FWM_CLAIM_TAKEN:
        s->metrics.sessions_taken_over++;
        fwm__server_log(s, "cluster: session %s taken over%s%s (its owner's lease had expired)", hex,
                        l->owner[0] ? " from " : "", l->owner);
        return true;
    case FWM_CLAIM_MOVED:
        s->metrics.moved_replies++;
        fail_moved(failure, hex, l->owner);
        return false;
    case FWM_CLAIM_NONE:
        if (known_lost(n, id)) {
            fwm__rpc_fail(failure, FWM_RPC_SESSION_LOST,
                          "session %s was lost with the store's data: the store %s lost its data (found at %s); "
                          "open a new session", hex, s->config->data_dir, n->data_lost_at);
        } else if (n->data_losses) {
            fwm__rpc_fail(failure, FWM_RPC_UNKNOWN_SESSION,
                          "no session %s in the cluster (closed, never opened, or lost when the store lost its "
                          "data, found at %s)", hex, n->data_lost_at);
        } else {
            fwm__rpc_fail(failure, FWM_RPC_UNKNOWN_SESSION, "no session %s in the cluster (closed, or never opened)",
                          hex);
        }
        return false;
    case FWM_CLAIM_ERROR:
        fwm__rpc_fail(failure, FWM_RPC_STORAGE, "cannot ask the store who owns session %s: %s", hex, l->error);
        return false;
    case FWM_CLAIM_LOST: break;
    }
    fwm__rpc_fail(failure, FWM_RPC_STORAGE,
                  "this node lost its lease in the store and could not join again in time; session %s not served "
                  "(retry)", hex);
    return false;
}

bool fwm__cluster_node_may_delete(fwm__server *s, const uint8_t *id) {
    if (!s->cluster) return true;
    char owner[256];
    uint64_t epoch = 0;
    fwm__cluster_claim_result r = fwm__cluster_claim(s->store, id, owner, sizeof owner, &epoch, NULL);
    return r == FWM_CLAIM_MINE || r == FWM_CLAIM_TAKEN;
}

void fwm__cluster_node_fenced(fwm__server *s, const fwm__outbox *o) {
    s->metrics.fenced_writes++;
    for (size_t i = 0; i < o->op_count; i++) {
        const fwm__store_op *op = &o->ops[i];
        if (op->kind == FWM_OP_LOADED) continue;
        fwm__session_entry *e = fwm__session_table_find(&s->sessions, op->id);
        /* a copy claimed since, under a newer epoch, is not the one that was refused */
        if (e && (!op->epoch || e->epoch <= op->epoch)) {
            remember_dropped(s->cluster, e->id);
            drop_entry(s, e);
        }
    }
}

static void key(msgpack_packer *pk, const char *name) {
    fwm__rpc_pack_cstr(pk, name);
}

static void pack_nodes(msgpack_packer *pk, const fwm__lookup_node *nodes, size_t count) {
    msgpack_pack_array(pk, count);
    for (size_t i = 0; i < count; i++) {
        msgpack_pack_map(pk, 2);
        key(pk, "address");
        fwm__rpc_pack_cstr(pk, nodes[i].address);
        key(pk, "epoch");
        msgpack_pack_uint64(pk, nodes[i].epoch);
    }
}

void fwm__cluster_node_pack_hello(msgpack_packer *pk, fwm__server *s, const fwm__lookup_node *nodes, size_t count) {
    key(pk, "cluster");
    fwm__cluster_node *n = s->cluster;
    if (!n) {
        msgpack_pack_nil(pk);
        return;
    }
    msgpack_pack_map(pk, 4);
    key(pk, "node");
    fwm__rpc_pack_cstr(pk, s->config->advertise);
    key(pk, "epoch");
    msgpack_pack_uint64(pk, fwm__cluster_node_epoch(s));
    key(pk, "lease_ttl_ms");
    msgpack_pack_uint64(pk, s->config->lease_ttl_ms);
    key(pk, "nodes"); /* the live ones: their lease is alive */
    pack_nodes(pk, nodes, count);
}

void fwm__cluster_node_pack_stats(msgpack_packer *pk, fwm__server *s, const fwm__lookup_node *nodes, size_t count) {
    key(pk, "cluster");
    fwm__cluster_node *n = s->cluster;
    if (!n) {
        msgpack_pack_nil(pk);
        return;
    }
    pthread_mutex_lock(&n->mutex);
    uint64_t renewals = n->renewals, failures = n->renewal_failures, losses = n->losses, epoch = n->epoch;
    pthread_mutex_unlock(&n->mutex);
    msgpack_pack_map(pk, 10);
    key(pk, "node");
    fwm__rpc_pack_cstr(pk, s->config->advertise);
    key(pk, "epoch");
    msgpack_pack_uint64(pk, epoch);
    key(pk, "sessions_taken_over");
    msgpack_pack_uint64(pk, s->metrics.sessions_taken_over);
    key(pk, "moved_replies");
    msgpack_pack_uint64(pk, s->metrics.moved_replies);
    key(pk, "fenced_writes");
    msgpack_pack_uint64(pk, s->metrics.fenced_writes);
    key(pk, "lease_renewals");
    msgpack_pack_uint64(pk, renewals);
    key(pk, "lease_renewal_failures");
    msgpack_pack_uint64(pk, failures);
    key(pk, "lease_losses");
    msgpack_pack_uint64(pk, losses);
    key(pk, "store_data_losses");
    msgpack_pack_uint64(pk, n->data_losses);
    key(pk, "nodes");
    pack_nodes(pk, nodes, count);
}
