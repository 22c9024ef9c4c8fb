/* tiering.h - the resident set of a durable fwm-serve: which sessions are in memory, which only in
 * the store, and the moves between the two.
 *
 * Every resident session is on the session table's LRU list (touched by each request). When more than
 * --max-resident are resident, or one has been idle for --idle-timeout, the least recently used
 * idle ones get an EVICT job (a snapshot when the log is not covered by one) and, once that is
 * committed and the session was not used meanwhile, their memory is freed. A request for a session
 * that is not resident finds its meta record in the store, gets a fresh entry and a LOAD job ahead
 * of its own, and waits for it. When a store write fails, the sessions it concerned are rebuilt
 * from the store (their memory may be ahead of what was written) and their requests answered with
 * `storage`.
 * Loop thread only. Not for: the store's format (store/), what the jobs do (durable_session.c).
 */
#ifndef FWM_SERVER_TIERING_H
#define FWM_SERVER_TIERING_H

#include "rpc_codec.h"
#include "server.h"


/* The stored session `id`, made resident (a LOAD job queued). NULL with `failure` filled when it is
 * not stored (unknown_session), belongs to a model not served (unknown_model), or cannot be read. */
fwm__session_entry *fwm__tiering_load(fwm__server *server, const uint8_t *id, fwm__rpc_failure *failure);
/* The same with a remote store, once a lookup (lookup.h) has answered who owns the session and read
 * its meta record off the loop thread (or timed out). */
struct fwm__lookup;
fwm__session_entry *fwm__tiering_load_answered(fwm__server *server, const uint8_t *id,
                                               const struct fwm__lookup *answer, fwm__rpc_failure *failure);

/* Evict what is over --max-resident and what has been idle past --idle-timeout. */
void fwm__tiering_evict(fwm__server *server, bool idle_too);
/* --session-ttl: delete a slice of the stored sessions unused for that long (called every second;
 * each call looks at the next few thousand). */
void fwm__tiering_expire_stored(fwm__server *server);
/* A remote store's --session-ttl scan (lookup.h) has answered: delete what it found, unless resident. */
void fwm__tiering_expire_answered(fwm__server *server, const struct fwm__lookup *answer);
/* Ask every dirty resident session for a snapshot (shutdown). */
void fwm__tiering_snapshot_all(fwm__server *server);

/* Bookkeeping records of a delivered outbox. */
void fwm__tiering_evicted(fwm__server *server, const uint8_t *id, bool store_failed);
void fwm__tiering_loaded(fwm__server *server, const uint8_t *id, bool failed, uint64_t microseconds);
/* An outbox whose store operations were not written: rebuild the resident sessions it concerned. */
void fwm__tiering_write_failed(fwm__server *server, const fwm__outbox *outbox);

/* Sessions stored (durable) or resident (memory only), plus those being created. */
uint64_t fwm__tiering_session_count(fwm__server *server);

#endif
