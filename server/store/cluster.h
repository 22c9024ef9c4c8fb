/* cluster.h - several fwm-serve nodes sharing one Redis store (docs/CLUSTER.md): each node's lease
 * and fencing epoch, which node owns which session, and the registry of live nodes.
 *
 * A node joins with the address clients should use (--advertise): it draws a new epoch (a counter
 * in Redis, so every incarnation of every node has its own), and holds the key fwm:node:ADDRESS =
 * "EPOCH|ADDRESS" (its token) with a TTL, renewed while it lives. A session is owned by the node
 * whose token its owner record holds, for as long as that token is still the node's lease: a
 * session's lease is the pair (owner record, node lease), so a node renews one key, not one per
 * session. Every write batch checks, atomically in Redis, that the writer's lease holds its token
 * and that it owns each session it writes for (store_redis.c): a node paused or cut off past its
 * TTL can never write again; it must join again (a new epoch) and claim sessions anew.
 * Implemented by store_redis.c (it shares the store's connections). Any thread.
 */
#ifndef FWM_SERVER_CLUSTER_H
#define FWM_SERVER_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"

/* Join (or join again after losing the lease): a new epoch above `highest` (the highest this node
 * has held, 0 at first), the lease key set with `ttl_ms`. *data_lost: the store's incarnation marker
 * was gone or differs from the one this node saw last (the store lost its data meanwhile; the marker
 * is written again). FWM_STORE_BUSY when another incarnation's token holds the lease of `address`
 * (another node given the same --advertise, or a crashed run of this one whose lease has not expired
 * yet); then *epoch is that token's epoch. No epoch is drawn unless the node joins. */
fwm__store_status fwm__cluster_join(fwm__store *store, const char *address, uint64_t ttl_ms, uint64_t highest,
                                    uint64_t *epoch, bool *data_lost, fwm__store_error *error);
/* Extend the lease by `ttl_ms`; *lost when it had expired or another incarnation holds it. */
fwm__store_status fwm__cluster_renew(fwm__store *store, uint64_t ttl_ms, bool *lost, fwm__store_error *error);

typedef enum fwm__cluster_claim_result {
    FWM_CLAIM_MINE,  /* this node owns it */
    FWM_CLAIM_TAKEN, /* it had no live owner: now this node's (read it from the store) */
    FWM_CLAIM_MOVED, /* a live node owns it: `owner` is its address */
    FWM_CLAIM_NONE,  /* not stored */
    FWM_CLAIM_LOST,  /* this node's own lease is gone: join again */
    FWM_CLAIM_ERROR, /* Redis failed: `error` says why */
} fwm__cluster_claim_result;

/* Ownership of a stored session for this node, taking it over when its owner's lease expired.
 * *epoch: the epoch of the token the claim was made under (a copy loaded on it writes under that). */
fwm__cluster_claim_result fwm__cluster_claim(fwm__store *store, const uint8_t *id, char *owner, size_t owner_size,
                                             uint64_t *epoch, fwm__store_error *error);

/* Graceful leave: give up the sessions (those still owned) and the lease; no write after this. */
fwm__store_status fwm__cluster_leave(fwm__store *store, const uint8_t (*ids)[FWM_STORE_ID_BYTES], size_t count,
                                     fwm__store_error *error);

/* The live nodes (lease present): address and epoch. */
typedef void (*fwm__cluster_node_visit)(void *user, const char *address, uint64_t epoch);
fwm__store_status fwm__cluster_nodes(fwm__store *store, fwm__cluster_node_visit visit, void *user,
                                     fwm__store_error *error);

#endif
