/* session_table.h - the server's resident sessions, addressed by 128-bit random ids.
 *
 * A session entry is one client-visible session: its runtime state (fwm_session), the model it
 * belongs to, its cached last prediction, and the scheduler's per-session job queue. The table maps
 * ids to entries (chained hashing, power-of-two buckets); the idle timeout walks it with
 * fwm__session_table_each.
 *
 * Threading: the table itself (lookup/insert/remove) is used by the loop thread only. The fields
 * marked [sched] are guarded by the scheduler's mutex; the fields marked [worker] belong to the
 * worker currently running the session (the scheduler guarantees at most one).
 * Not for: running jobs (scheduler.c) or protocol handling (methods/).
 */
#ifndef FWM_SERVER_SESSION_TABLE_H
#define FWM_SERVER_SESSION_TABLE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fwm/fwm.h"

#define FWM_SESSION_ID_BYTES 16
#define FWM_SESSION_HEX_SIZE 33 /* 32 lowercase hex digits and a NUL */

struct fwm__job;

typedef struct fwm__session_entry {
    uint8_t id[FWM_SESSION_ID_BYTES];
    char hex[FWM_SESSION_HEX_SIZE];
    uint32_t model_index;
    uint32_t default_topk;
    fwm_session *session;   /* [worker] owned */
    float *last_logits;     /* [worker] owned, V floats: the prediction after the last token */
    bool has_logits;        /* [worker] */
    bool dead;              /* [worker] closed or failed restore: the scheduler frees it */
    size_t memory_bytes;    /* what this entry accounts for (state, logits, bookkeeping) */
    /* The session's position as `sessions` lists it: stored by whoever holds the session (the loop
     * thread at open, the worker after each batch, before its answers are posted), read by the loop
     * thread; UINT64_MAX until a state exists (a stored session being loaded). */
    _Atomic uint64_t listed_pos;

    /* durable mode, [worker]: */
    uint64_t log_seq;       /* the next log record's seq */
    uint64_t log_base;      /* the first seq after the last snapshot */
    uint64_t logged_tokens; /* tokens logged since the last snapshot */
    uint64_t created_ms;    /* wall clock */
    bool has_snapshot;
    bool load_failed;       /* the store could not rebuild it: its jobs fail with `storage` */
    char load_error[160];   /* why */

    /* loop thread: */
    uint64_t epoch;         /* cluster: the node's fencing epoch when this copy was created or claimed (0 outside
                             * a cluster); set before its first job, carried by its store operations */
    uint64_t last_used_ms;
    struct fwm__session_entry *bucket_next;
    bool in_table;
    struct fwm__session_entry *lru_prev, *lru_next; /* durable: resident sessions, least recent first */
    bool evicting;          /* an EVICT job is under way */
    uint64_t evict_mark;    /* jobs_submitted counting the EVICT job: more later means it was used */

    /* [sched] */
    struct fwm__job *jobs_head, *jobs_tail; /* pending jobs, in request order */
    size_t jobs_pending;
    bool queued;  /* on the ready list or parked */
    bool running; /* a worker holds it */
    uint64_t jobs_submitted; /* ever, so the loop can tell whether a session was used since a mark */
    bool moved_away;         /* cluster: dropped, its node no longer owns it: queued jobs answered `moved` */
    struct fwm__session_entry *ready_next;
} fwm__session_entry;

typedef struct fwm__session_table {
    fwm__session_entry **buckets;
    size_t bucket_count; /* power of two */
    size_t count;
    /* durable mode (sessions/ is told by tiering/): resident sessions, least recently used first */
    fwm__session_entry *lru_head, *lru_tail;
} fwm__session_table;

/* 16 random bytes from the kernel (getrandom); false if none can be had. Thread-safe. */
bool fwm__session_id_generate(uint8_t id[FWM_SESSION_ID_BYTES]);
void fwm__session_id_to_hex(const uint8_t id[FWM_SESSION_ID_BYTES], char hex[FWM_SESSION_HEX_SIZE]);
/* Parse exactly 32 hex digits (either case); false otherwise. */
bool fwm__session_id_from_hex(const char *text, size_t length, uint8_t id[FWM_SESSION_ID_BYTES]);

/* Allocate an entry with a fresh id (not inserted). NULL when out of memory or no randomness. */
fwm__session_entry *fwm__session_entry_new(void);
/* Record the session's current position for `sessions` (by the thread that holds the session). */
void fwm__session_entry_note_pos(fwm__session_entry *entry);
/* The last recorded position (any thread), or UINT64_MAX when none was recorded yet. */
uint64_t fwm__session_entry_listed_pos(const fwm__session_entry *entry);
/* Free the entry and what it owns (session, logits). NULL is a no-op. */
void fwm__session_entry_free(fwm__session_entry *entry);

/* Put the entry's session (of `model`) in a start state: with `primed`, the model's start state
 * (fwm_session_prime) and its scores as the last prediction; otherwise zero, with no prediction. */
void fwm__session_start(const fwm_model *model, fwm__session_entry *entry, bool primed);

bool fwm__session_table_init(fwm__session_table *table);
void fwm__session_table_release(fwm__session_table *table); /* does not free entries */

/* Insert; false when out of memory or when the id is already present. */
bool fwm__session_table_insert(fwm__session_table *table, fwm__session_entry *entry);
fwm__session_entry *fwm__session_table_find(const fwm__session_table *table,
                                            const uint8_t id[FWM_SESSION_ID_BYTES]);
/* Remove (no-op if absent). The entry is not freed. */
void fwm__session_table_remove(fwm__session_table *table, fwm__session_entry *entry);

/* Visit every entry; `visit` may remove the entry it is given (and only that one). */
/* The least-recently-used list (durable mode): put an entry at the most recently used end / take it
 * off the list (no-op when it is not on it). Separate from insert and remove. */
void fwm__session_table_lru_touch(fwm__session_table *table, fwm__session_entry *entry);
void fwm__session_table_lru_remove(fwm__session_table *table, fwm__session_entry *entry);
void fwm__session_table_each(fwm__session_table *table,
                             void (*visit)(fwm__session_entry *entry, void *user), void *user);

#endif
