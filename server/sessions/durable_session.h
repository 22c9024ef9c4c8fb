/* durable_session.h - what a durable session writes to the store, and how it is rebuilt from it.
 *
 * Jobs call these on a worker, on a session that worker alone holds; each appends store operations
 * to the job context's outbox (the journal applies them before the loop sees the outbox's
 * messages). The log records operations, not states: the tokens a feed or ask read, a reset.
 * Rebuilding is the snapshot (or a fresh state) followed by a replay of the log through the runtime,
 * which is deterministic and batch-invariant, so a rebuilt session is bit-identical to one that never
 * left memory. In memory-only mode (no store) every function here does nothing.
 * Not for: when jobs run (scheduler.c), the write batches and fsync (journal.c).
 */
#ifndef FWM_SERVER_DURABLE_SESSION_H
#define FWM_SERVER_DURABLE_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "job_context.h"

/* Eviction (and shutdown) writes a snapshot only when the log since the last one holds more tokens
 * than this: replaying a short log (~1.5 ms for 64 tokens of the paper-size model) is cheaper than
 * writing and reading a full state (134 KB), and keeps sessions that read little small on disk. */
#define FWM_EVICT_REPLAY_TOKENS 64

/* A new session (open): its meta record, and with `primed` a log record saying it was primed. */
void fwm__durable_open(fwm__job_context *ctx, fwm__session_entry *entry, bool primed);
/* A new session whose state did not come from stepping (fork child, restore): meta and snapshot. */
void fwm__durable_created(fwm__job_context *ctx, fwm__session_entry *entry);
/* `count` tokens were read: a log record (and a snapshot when enough tokens were logged). */
void fwm__durable_step(fwm__job_context *ctx, fwm__session_entry *entry, const uint32_t *tokens, size_t count);
void fwm__durable_reset(fwm__job_context *ctx, fwm__session_entry *entry, bool primed);
/* Whether the session has logged operations that no snapshot covers. */
bool fwm__durable_dirty(const fwm__session_entry *entry);
/* Rewrite the meta record (its last use becomes now). */
void fwm__durable_touch(fwm__job_context *ctx, fwm__session_entry *entry);
/* Snapshot now (meta, snapshot, and the log trimmed). */
void fwm__durable_snapshot(fwm__job_context *ctx, fwm__session_entry *entry);
void fwm__durable_remove(fwm__job_context *ctx, fwm__session_entry *entry);

/* Rebuild the entry's session from the store. On failure the entry is marked load_failed and
 * `why` names the problem. A damaged log record ends the replay; it and every later record are
 * deleted (never replayed). */
bool fwm__durable_load(fwm__job_context *ctx, fwm__session_entry *entry, char *why, size_t why_size);

/* Append a deletion of session `id` to an outbox (any thread that owns the outbox); false when out
 * of memory. */
bool fwm__outbox_add_removal(fwm__outbox *outbox, const uint8_t *id);

/* Wall-clock milliseconds since 1970. */
uint64_t fwm__wall_ms(void);

#endif
