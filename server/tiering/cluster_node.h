/* cluster_node.h - this fwm-serve as a node of a cluster (--store redis://... --advertise ADDRESS;
 * docs/CLUSTER.md): its lease, kept alive (and joined again when lost) by a thread of its own; what
 * happens when the lease is lost (every resident session dropped, a new epoch drawn), when another
 * process took its address (it stops), when the store lost its data (`session_lost`); asking Redis
 * who owns a session before loading it, off the loop (taking it over when its owner's lease expired,
 * or answering `moved`); the graceful leave on SIGTERM; the node list of `hello`.
 * Loop thread unless said otherwise. Not for: the Redis keys and scripts (store/store_redis.c).
 */
#ifndef FWM_SERVER_CLUSTER_NODE_H
#define FWM_SERVER_CLUSTER_NODE_H

#include <msgpack.h>
#include <stdbool.h>

#include "lookup.h"
#include "rpc_codec.h"
#include "server.h"

/* Join the cluster and start renewing the lease (no-op without --advertise). 0, or 1 after
 * printing why. */
int fwm__cluster_node_start(fwm__server *server);
/* Stop renewing (no leave: the lease then expires by itself). NULL-safe. */
void fwm__cluster_node_stop(fwm__server *server);
/* Graceful leave: release the resident sessions and the lease (after their last snapshots). */
void fwm__cluster_node_leave(fwm__server *server);

/* What the renewal thread found (called on every wake and housekeeping tick): a lost lease (what is
 * resident is dropped; the renewal thread then joins again), a join again (logged), a store that
 * lost its data, or this node's address taken by a newer epoch (the server stops, exit status 3). */
void fwm__cluster_node_poll(fwm__server *server);

/* Before serving a resident session: when no renewal has confirmed the lease up to now (Redis slow
 * or unreachable, the node paused), the lease is taken as lost here and then, so a node never
 * answers from a session another node may own by now; what is resident is dropped and the request
 * goes on as for a stored session (claimed anew, or refused). */
void fwm__cluster_node_check_lease(fwm__server *server);

/* Lookup thread (lookup.h): ask who owns stored session `l->id`, taking it over when its owner's
 * lease expired; when this node's own lease turns out lost, wait (until the lookup's deadline) for
 * the node to join again and ask once more. Fills l->claim, l->epoch, l->owner, l->error. */
void fwm__cluster_node_ask_claim(fwm__server *server, fwm__lookup *l);
/* Loop thread: true when the claim's answer lets this node serve the session; else `failure`
 * (moved, unknown_session, session_lost, storage). */
bool fwm__cluster_node_claim_answer(fwm__server *server, const uint8_t *id, const fwm__lookup *l,
                                    fwm__rpc_failure *failure);

/* --session-ttl: whether this node may delete stored session `id` (it owns it, or takes it over
 * because its owner's lease expired); a session a live node owns is that node's to expire. */
bool fwm__cluster_node_may_delete(fwm__server *server, const uint8_t *id);

/* A write for these sessions was fenced: drop them from memory (their owner is elsewhere). */
void fwm__cluster_node_fenced(fwm__server *server, const fwm__outbox *outbox);
/* The node's current fencing epoch (0 outside a cluster): a session entry records it when it is
 * created or claimed (loop thread). */
uint64_t fwm__cluster_node_epoch(const fwm__server *server);

/* `hello` and `stats`: the cluster map, or nil outside a cluster; `nodes`: the live nodes (lookup.h). */
void fwm__cluster_node_pack_hello(msgpack_packer *pk, fwm__server *server, const fwm__lookup_node *nodes,
                                  size_t count);
void fwm__cluster_node_pack_stats(msgpack_packer *pk, fwm__server *server, const fwm__lookup_node *nodes,
                                  size_t count);

#endif
