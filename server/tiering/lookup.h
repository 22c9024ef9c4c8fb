/* lookup.h - questions to a store on the network (Redis) asked off the event-loop thread, so that a
 * Redis that hangs never stalls the loop: who owns a stored session and its meta record (before a
 * request for a session that is not resident can be served), the cluster's live nodes (hello,
 * stats), a page of stored sessions (the `sessions` method) and the --session-ttl scan (no request
 * waits for that one: its answer is applied when it comes). A request that needs an answer is
 * parked in its connection (its bytes kept, the connection reading nothing more meanwhile, so its
 * requests stay in order) and the question goes to a thread of the lookup's own; when the answer
 * comes, or when FWM_LOOKUP_TIMEOUT_MS (5 s) has passed without one, the request is dispatched again
 * and finds the answer (or the timeout) waiting. Other connections go on meanwhile, and requests for
 * one session share one question. With a local store (LMDB) nothing is parked: the loop reads it
 * directly (microseconds). Loop thread unless said otherwise.
 */
#ifndef FWM_SERVER_LOOKUP_H
#define FWM_SERVER_LOOKUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server.h"
#include "sessions/session_table.h"
#include "store/cluster.h"
#include "store/session_record.h"

/* The longest a parked request waits for the store: then it is answered as if the store had failed. */
#define FWM_LOOKUP_TIMEOUT_MS 5000u

typedef enum fwm__lookup_kind {
    FWM_LOOKUP_SESSION, /* a stored session: its owner (cluster) and its meta record */
    FWM_LOOKUP_NODES,   /* the cluster's live nodes */
    FWM_LOOKUP_LIST,    /* a page of stored sessions: ids after `id` (all when !has_after), at most limit + 1 */
    FWM_LOOKUP_EXPIRE,  /* --session-ttl: stored sessions after `id` unused since cutoff_ms that may be deleted */
} fwm__lookup_kind;

/* One stored session of a LIST or EXPIRE answer: its id and (LIST) its meta record. */
typedef struct fwm__lookup_listed {
    uint8_t id[FWM_SESSION_ID_BYTES];
    uint8_t meta[FWM_META_RECORD_BYTES];
    size_t meta_length;
} fwm__lookup_listed;

typedef struct fwm__lookup_node {
    char address[256];
    uint64_t epoch;
} fwm__lookup_node;

typedef struct fwm__lookup {
    fwm__lookup_kind kind;
    uint8_t id[FWM_SESSION_ID_BYTES];
    uint64_t deadline_ns;
    bool timed_out;                  /* loop: no answer within the timeout; the waiters were answered */
    /* the answer (written by the lookup thread; the loop reads it once posted) */
    bool cluster;                    /* the claim was asked (cluster mode) */
    fwm__cluster_claim_result claim; /* cluster: ownership */
    uint64_t epoch;                  /* cluster: the epoch the claim was made under */
    char owner[256];                 /* cluster: FWM_CLAIM_MOVED's owner, FWM_CLAIM_TAKEN's previous one */
    fwm__store_status meta_status;   /* the meta record's read (when owned) */
    uint8_t meta[FWM_META_RECORD_BYTES];
    size_t meta_length;
    char error[512];                 /* what failed, when something did */
    fwm__lookup_node *nodes;         /* FWM_LOOKUP_NODES */
    size_t node_count;
    bool nodes_ok;
    bool has_after;                  /* LIST, EXPIRE: start after `id` */
    size_t limit;                    /* LIST: the page size; EXPIRE: sessions looked at */
    uint64_t cutoff_ms;              /* EXPIRE: last use before this (ms since 1970) */
    fwm__lookup_listed *listed;      /* LIST: the sessions; EXPIRE: those to delete */
    size_t listed_count, seen;       /* EXPIRE: seen, sessions looked at */
    uint8_t last[FWM_SESSION_ID_BYTES]; /* EXPIRE: the last id looked at */
    fwm__store_status list_status;
    /* bookkeeping */
    struct fwm__connection **waiters; /* loop: parked connections waiting for it */
    size_t waiter_count, waiter_capacity;
    struct fwm__lookup *next;         /* loop: the pending list */
    struct fwm__lookup *queue_next;   /* mutex: the thread's queue, then the finished list */
} fwm__lookup;

/* What lookups need of the cluster node and of tiering: given by the server (server.c), so that
 * lookup.c sits below both (they ask it questions). */
typedef struct fwm__lookup_hooks {
    /* Lookup thread, cluster mode: who owns stored session `l->id` (fwm__cluster_node_ask_claim). */
    void (*ask_claim)(fwm__server *server, fwm__lookup *l);
    /* Lookup thread: whether this node may delete stored session `id` (fwm__cluster_node_may_delete). */
    bool (*may_delete)(fwm__server *server, const uint8_t *id);
    /* Loop: a --session-ttl scan has answered (fwm__tiering_expire_answered). */
    void (*expire_answered)(fwm__server *server, const fwm__lookup *answer);
} fwm__lookup_hooks;

/* Start the lookup threads when the store is remote (no-op otherwise). 0, or 1 after printing why. */
int fwm__lookup_start(fwm__server *server, const fwm__lookup_hooks *hooks);
/* Close the loop handle (its deadline timer) as the loop winds down. */
void fwm__lookup_close_handles(fwm__server *server);
/* Stop them (the answers in flight are dropped). NULL-safe. */
void fwm__lookup_stop(fwm__server *server);
/* Whether questions to the store go through lookups (a remote store). */
bool fwm__lookup_remote(const fwm__server *server);

/* The answer this connection's request was dispatched again with, when it is of `kind` (and, for a
 * session, about `id`); NULL: none, ask (fwm__lookup_park). */
const fwm__lookup *fwm__lookup_ready(const struct fwm__connection *c, fwm__lookup_kind kind, const uint8_t *id);
/* Park the request being dispatched on `c` until a lookup of `kind` (`id`: the session) is answered.
 * false when out of memory (then answer the request with an error instead). */
bool fwm__lookup_park(struct fwm__connection *c, fwm__lookup_kind kind, const uint8_t *id);
/* Park the `sessions` request being dispatched on `c` until a page of `limit` + 1 stored sessions
 * after `after` (NULL: from the first) is read. false when out of memory. */
bool fwm__lookup_park_list(struct fwm__connection *c, const uint8_t *after, size_t limit);
/* --session-ttl with a remote store: scan `count` stored sessions after `after` (NULL: from the
 * first) for those unused since `cutoff_ms` that this node may delete; the answer goes to
 * fwm__tiering_expire_answered. No-op while a scan is under way. */
void fwm__lookup_expire(fwm__server *server, const uint8_t *after, size_t count, uint64_t cutoff_ms);
/* A connection closing: it waits for nothing more. */
void fwm__lookup_forget(struct fwm__connection *c);
/* Answers posted by the lookup threads, and timeouts: dispatch the parked requests again (on wake). */
void fwm__lookup_poll(fwm__server *server);

/* The last node list a lookup read (hello and stats answer it when Redis does not answer in time). */
void fwm__lookup_last_nodes(fwm__server *server, const fwm__lookup_node **nodes, size_t *count);

#endif
