/* lookup.c - questions to a remote store asked off the loop thread, and the requests parked while
 * they are (lookup.h). */
#include "lookup.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "fwm_alloc.h"
#include "net/connection.h"

#define LOOKUP_THREADS 2
#define TIMER_MS 50 /* how often parked requests are checked against their deadline */

struct fwm__lookups {
    fwm__server *server;
    const fwm__lookup_hooks *hooks;
    pthread_t threads[LOOKUP_THREADS];
    size_t thread_count;
    pthread_mutex_t mutex;
    pthread_cond_t wake;
    bool stopping;
    fwm__lookup *queue_head, *queue_tail; /* (mutex) asked, not yet taken by a thread */
    fwm__lookup *finished;                /* (mutex) answered, not yet seen by the loop */
    fwm__lookup *pending;                 /* loop: asked and not yet answered nor timed out */
    bool timer_running; /* server->lookup_timer */
    fwm__lookup_node *last_nodes; /* loop: the last node list read */
    size_t last_count;
    bool expiring; /* loop: an EXPIRE lookup is asked and not yet posted back (timed out or not) */
};

static void on_timer(uv_timer_t *timer);

static void free_lookup(fwm__lookup *l) {
    if (!l) return;
    fwm__free(l->listed);
    fwm__free(l->waiters);
    fwm__free(l->nodes);
    fwm__free(l);
}

bool fwm__lookup_remote(const fwm__server *s) {
    return s->lookups != NULL;
}

/* ---- the threads ---- */

static void visit_node(void *user, const char *address, uint64_t epoch) {
    fwm__lookup *l = user;
    if (!l->nodes_ok) return;
    fwm__lookup_node *grown = fwm__realloc(l->nodes, (l->node_count + 1) * sizeof *grown);
    if (!grown) {
        l->nodes_ok = false;
        snprintf(l->error, sizeof l->error, "out of memory listing the nodes");
        return;
    }
    l->nodes = grown;
    snprintf(l->nodes[l->node_count].address, sizeof l->nodes[0].address, "%s", address);
    l->nodes[l->node_count++].epoch = epoch;
}

static bool add_listed(fwm__lookup *l, const uint8_t *id, const void *meta, size_t length) {
    if (l->listed_count % 64 == 0) {
        fwm__lookup_listed *grown = fwm__realloc(l->listed, (l->listed_count + 64) * sizeof *grown);
        if (!grown) {
            l->list_status = FWM_STORE_NO_MEMORY;
            snprintf(l->error, sizeof l->error, "out of memory listing sessions");
            return false;
        }
        l->listed = grown;
    }
    fwm__lookup_listed *x = &l->listed[l->listed_count++];
    memcpy(x->id, id, FWM_SESSION_ID_BYTES);
    x->meta_length = length < sizeof x->meta ? length : sizeof x->meta;
    if (meta) memcpy(x->meta, meta, x->meta_length);
    return true;
}

static bool visit_listed(void *user, const uint8_t id[FWM_STORE_ID_BYTES], const void *bytes, size_t length) {
    fwm__lookup *l = user;
    return add_listed(l, id, bytes, length) && l->listed_count <= l->limit;
}

typedef struct expiry_scan {
    fwm__server *server;
    fwm__lookup *lookup;
} expiry_scan;

static bool visit_expiring(void *user, const uint8_t id[FWM_STORE_ID_BYTES], const void *bytes, size_t length) {
    expiry_scan *x = user;
    fwm__lookup *l = x->lookup;
    memcpy(l->last, id, FWM_SESSION_ID_BYTES);
    fwm__session_meta meta;
    if (fwm__meta_decode(bytes, length, &meta) && meta.last_used_ms < l->cutoff_ms &&
        x->server->lookups->hooks->may_delete(x->server, id) && !add_listed(l, id, NULL, 0))
        return false;
    return ++l->seen < l->limit;
}

/* Ask the store (lookup thread). */
static void answer(fwm__server *s, fwm__lookup *l) {
    fwm__store_error error = {0};
    if (fwm__now_ns() >= l->deadline_ns) { /* waited in the queue past its time: answered already */
        l->claim = FWM_CLAIM_ERROR;
        l->meta_status = l->list_status = FWM_STORE_IO;
        return;
    }
    if (l->kind == FWM_LOOKUP_LIST || l->kind == FWM_LOOKUP_EXPIRE) {
        l->list_status = FWM_STORE_OK;
        expiry_scan x = {s, l};
        fwm__store_status st =
            l->kind == FWM_LOOKUP_LIST
                ? s->store->backend->list(s->store, l->has_after ? l->id : NULL, visit_listed, l, &error)
                : s->store->backend->list(s->store, l->has_after ? l->id : NULL, visit_expiring, &x, &error);
        if (st != FWM_STORE_OK && l->list_status == FWM_STORE_OK) {
            l->list_status = st;
            snprintf(l->error, sizeof l->error, "%s", error.message);
        }
        return;
    }
    if (l->kind == FWM_LOOKUP_NODES) {
        l->nodes_ok = true;
        if (fwm__cluster_nodes(s->store, visit_node, l, &error) != FWM_STORE_OK) {
            l->nodes_ok = false;
            snprintf(l->error, sizeof l->error, "%s", error.message);
        }
        return;
    }
    l->meta_status = FWM_STORE_IO;
    if (s->cluster) {
        l->cluster = true;
        s->lookups->hooks->ask_claim(s, l);
        if (l->claim != FWM_CLAIM_MINE && l->claim != FWM_CLAIM_TAKEN) return;
    }
    l->meta_status = s->store->backend->get_meta(s->store, l->id, l->meta, sizeof l->meta, &l->meta_length, &error);
    if (l->meta_status != FWM_STORE_OK && l->meta_status != FWM_STORE_NOT_FOUND)
        snprintf(l->error, sizeof l->error, "%s", error.message);
}

static void *lookup_main(void *arg) {
    fwm__server *s = arg;
    struct fwm__lookups *q = s->lookups;
    pthread_mutex_lock(&q->mutex);
    for (;;) {
        while (!q->queue_head && !q->stopping) pthread_cond_wait(&q->wake, &q->mutex);
        if (q->stopping) break;
        fwm__lookup *l = q->queue_head;
        q->queue_head = l->queue_next;
        if (!q->queue_head) q->queue_tail = NULL;
        pthread_mutex_unlock(&q->mutex);
        answer(s, l);
        pthread_mutex_lock(&q->mutex);
        l->queue_next = q->finished;
        q->finished = l;
        uv_async_send(&s->wake);
    }
    pthread_mutex_unlock(&q->mutex);
    return NULL;
}

/* ---- the loop ---- */

static void on_timer(uv_timer_t *timer) {
    fwm__lookup_poll(timer->data);
}

int fwm__lookup_start(fwm__server *s, const fwm__lookup_hooks *hooks) {
    if (!s->store || s->store->backend != &fwm__store_redis) return 0;
    struct fwm__lookups *q = fwm__calloc(1, sizeof *q);
    if (!q) {
        fprintf(stderr, "fwm-serve: out of memory starting the store's lookup threads\n");
        return 1;
    }
    q->server = s;
    q->hooks = hooks;
    pthread_mutex_init(&q->mutex, NULL);
    pthread_cond_init(&q->wake, NULL);
    uv_timer_init(&s->loop, &s->lookup_timer);
    s->lookup_timer.data = s;
    s->lookup_timer_open = true;
    s->lookups = q;
    for (size_t i = 0; i < LOOKUP_THREADS; i++) {
        if (pthread_create(&q->threads[i], NULL, lookup_main, s) != 0) {
            fprintf(stderr, "fwm-serve: cannot start the store's lookup threads\n");
            return 1;
        }
        q->thread_count++;
    }
    return 0;
}

void fwm__lookup_close_handles(fwm__server *s) {
    if (!s->lookup_timer_open) return;
    uv_close((uv_handle_t *)&s->lookup_timer, NULL);
    s->lookup_timer_open = false;
}

void fwm__lookup_stop(fwm__server *s) {
    struct fwm__lookups *q = s->lookups;
    if (!q) return;
    pthread_mutex_lock(&q->mutex);
    q->stopping = true;
    pthread_cond_broadcast(&q->wake);
    pthread_mutex_unlock(&q->mutex);
    for (size_t i = 0; i < q->thread_count; i++) pthread_join(q->threads[i], NULL);
    /* every lookup is in the queue or among the finished now (pending ones too) */
    for (fwm__lookup *l = q->queue_head, *next; l; l = next) {
        next = l->queue_next;
        free_lookup(l);
    }
    for (fwm__lookup *l = q->finished, *next; l; l = next) {
        next = l->queue_next;
        free_lookup(l);
    }
    pthread_cond_destroy(&q->wake);
    pthread_mutex_destroy(&q->mutex);
    fwm__free(q->last_nodes);
    fwm__free(q);
    s->lookups = NULL;
}

const fwm__lookup *fwm__lookup_ready(const fwm__connection *c, fwm__lookup_kind kind, const uint8_t *id) {
    const fwm__lookup *l = c->ready;
    if (!l || l->kind != kind) return NULL;
    if (kind == FWM_LOOKUP_SESSION && memcmp(l->id, id, FWM_SESSION_ID_BYTES) != 0) return NULL;
    return l;
}

static fwm__lookup *new_lookup(fwm__lookup_kind kind, const uint8_t *id) {
    fwm__lookup *l = fwm__calloc(1, sizeof *l);
    if (!l) return NULL;
    l->kind = kind;
    if (id) memcpy(l->id, id, FWM_SESSION_ID_BYTES);
    l->deadline_ns = fwm__now_ns() + FWM_LOOKUP_TIMEOUT_MS * 1000000ull;
    return l;
}

/* Hand a new lookup to the threads and watch its deadline. */
static void ask(fwm__server *s, fwm__lookup *l) {
    struct fwm__lookups *q = s->lookups;
    l->next = q->pending;
    q->pending = l;
    pthread_mutex_lock(&q->mutex);
    if (q->queue_tail) q->queue_tail->queue_next = l;
    else q->queue_head = l;
    q->queue_tail = l;
    pthread_cond_signal(&q->wake);
    pthread_mutex_unlock(&q->mutex);
    if (!q->timer_running && s->lookup_timer_open) {
        uv_timer_start(&s->lookup_timer, on_timer, TIMER_MS, TIMER_MS);
        q->timer_running = true;
    }
}

/* Park `c` on `l` (created: ask it too). */
static bool wait_for(fwm__connection *c, fwm__lookup *l, bool created) {
    if (l->waiter_count == l->waiter_capacity) {
        size_t capacity = l->waiter_capacity ? 2 * l->waiter_capacity : 4;
        fwm__connection **grown = fwm__realloc(l->waiters, capacity * sizeof *grown);
        if (!grown) {
            if (created) free_lookup(l);
            return false;
        }
        l->waiters = grown;
        l->waiter_capacity = capacity;
    }
    l->waiters[l->waiter_count++] = c;
    c->waiting = l;
    if (created) ask(c->server, l);
    return true;
}

bool fwm__lookup_park_list(fwm__connection *c, const uint8_t *after, size_t limit) {
    fwm__lookup *l = new_lookup(FWM_LOOKUP_LIST, after);
    if (!l) return false;
    l->has_after = after != NULL;
    l->limit = limit;
    return wait_for(c, l, true);
}

void fwm__lookup_expire(fwm__server *s, const uint8_t *after, size_t count, uint64_t cutoff_ms) {
    struct fwm__lookups *q = s->lookups;
    if (!q || q->expiring) return;
    fwm__lookup *l = new_lookup(FWM_LOOKUP_EXPIRE, after);
    if (!l) return;
    l->has_after = after != NULL;
    l->limit = count;
    l->cutoff_ms = cutoff_ms;
    q->expiring = true;
    ask(s, l);
}

bool fwm__lookup_park(fwm__connection *c, fwm__lookup_kind kind, const uint8_t *id) {
    fwm__server *s = c->server;
    struct fwm__lookups *q = s->lookups;
    fwm__lookup *l = q->pending;
    while (l && !(l->kind == kind && (kind == FWM_LOOKUP_NODES || memcmp(l->id, id, FWM_SESSION_ID_BYTES) == 0)))
        l = l->next;
    bool created = false;
    if (!l) {
        l = new_lookup(kind, id);
        if (!l) return false;
        created = true;
    }
    return wait_for(c, l, created);
}

void fwm__lookup_forget(fwm__connection *c) {
    fwm__lookup *l = c->waiting;
    if (!l) return;
    for (size_t i = 0; i < l->waiter_count; i++)
        if (l->waiters[i] == c) {
            l->waiters[i] = l->waiters[--l->waiter_count];
            break;
        }
    c->waiting = NULL;
}

static void unlink_pending(struct fwm__lookups *q, fwm__lookup *l) {
    for (fwm__lookup **p = &q->pending; *p; p = &(*p)->next)
        if (*p == l) {
            *p = l->next;
            return;
        }
}

/* Dispatch every request waiting for `l` again, with `l` as its answer. */
static void release_waiters(fwm__lookup *l) {
    while (l->waiter_count) {
        fwm__connection *c = l->waiters[--l->waiter_count];
        c->waiting = NULL;
        fwm__connection_unpark(c, l);
    }
}

void fwm__lookup_poll(fwm__server *s) {
    struct fwm__lookups *q = s->lookups;
    if (!q) return;
    pthread_mutex_lock(&q->mutex);
    fwm__lookup *finished = q->finished;
    q->finished = NULL;
    pthread_mutex_unlock(&q->mutex);
    while (finished) {
        fwm__lookup *l = finished;
        finished = l->queue_next;
        if (l->kind == FWM_LOOKUP_EXPIRE) {
            q->expiring = false;
            if (!l->timed_out) {
                unlink_pending(q, l);
                q->hooks->expire_answered(s, l);
            }
            free_lookup(l);
            continue;
        }
        if (!l->timed_out) {
            unlink_pending(q, l);
            if (l->kind == FWM_LOOKUP_NODES && l->nodes_ok) { /* kept for answers that cannot wait */
                fwm__lookup_node *copy = fwm__malloc((l->node_count ? l->node_count : 1) * sizeof *copy);
                if (copy) {
                    if (l->node_count) memcpy(copy, l->nodes, l->node_count * sizeof *copy);
                    fwm__free(q->last_nodes);
                    q->last_nodes = copy;
                    q->last_count = l->node_count;
                }
            }
            release_waiters(l);
        }
        free_lookup(l); /* a timed-out one was answered already; the thread has let go of it now */
    }
    uint64_t now = fwm__now_ns();
    for (fwm__lookup *l = q->pending, *next; l; l = next) {
        next = l->next;
        if (now < l->deadline_ns) continue;
        l->timed_out = true; /* its thread still holds it: freed once it is posted */
        unlink_pending(q, l);
        release_waiters(l);
    }
    if (!q->pending && q->timer_running && s->lookup_timer_open) {
        uv_timer_stop(&s->lookup_timer);
        q->timer_running = false;
    }
}

void fwm__lookup_last_nodes(fwm__server *s, const fwm__lookup_node **nodes, size_t *count) {
    struct fwm__lookups *q = s->lookups;
    *nodes = q ? q->last_nodes : NULL;
    *count = q ? q->last_count : 0;
}
