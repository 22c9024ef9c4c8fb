/* scheduler.h - continuous batching of session steps over a pool of worker threads.
 *
 * Every request that touches a session's state becomes a job on that session's queue, so a
 * session's requests run strictly in the order they arrived. Sessions with pending jobs wait on one
 * ready list (FIFO). A worker takes a share of the ready sessions (at most max_batch, about
 * ready/workers so all workers get work), gives each one step of its head job, and runs the steps of
 * all of them in one fwm_batch_step per model: one token per session per batch. Sessions with more
 * work go back to the tail of the ready list, so new sessions join the next batch (continuous
 * batching) and no session starves. The cheap jobs (predict, reset, fork, snapshot, restore, close)
 * run on the worker when they reach the head of their session's queue.
 *
 * Results leave as an outbox: one buffer of encoded msgpack messages plus records saying which
 * connection ("sink") each slice is for, handed to the `post` callback (the server wakes its loop).
 * The scheduler knows nothing of sockets: a sink is the scheduler-visible part of a connection.
 *
 * Backpressure: a job whose sink is blocked (congested, or holding more than max_unsent bytes the
 * loop has not taken yet) is not stepped; its session is parked until the sink is unblocked
 * (fwm__scheduler_set_congested, fwm__scheduler_delivered). Output is thus bounded per connection
 * even when the loop lags behind the workers.
 *
 * Threading: all functions may be called from any thread; the post callback runs on a worker thread.
 */
#ifndef FWM_SERVER_SCHEDULER_H
#define FWM_SERVER_SCHEDULER_H

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fwm/fwm.h"
#include "metrics.h"
#include "session_table.h"

/* The scheduler's view of a connection. Embedded in the connection; fields guarded by the
 * scheduler's mutex. */
typedef struct fwm__sink {
    bool congested; /* the connection has more unsent output than it may hold */
    size_t unsent;  /* bytes posted by workers and not yet delivered to the connection */
    size_t reserved; /* an upper bound of what running batches will post (see take_batch) */
} fwm__sink;

typedef enum fwm__job_kind {
    FWM_JOB_FEED,     /* step tokens, a `token` notification each, then the response (with logprobs: each
                       * token's log-probability) */
    FWM_JOB_ASK,      /* step the question, answer from the last prediction, maybe commit it */
    FWM_JOB_PREDICT,  /* the cached prediction */
    FWM_JOB_RESET,
    FWM_JOB_FORK,     /* child entry prepared by the caller; the worker fills its session */
    FWM_JOB_SNAPSHOT,
    FWM_JOB_RESTORE,  /* on a new entry (not yet in the table): import the blob */
    FWM_JOB_CLOSE,    /* free the entry (already out of the table) */
    FWM_JOB_OPEN,     /* durable: record the new session, then answer */
    FWM_JOB_LOAD,     /* durable: rebuild the session from the store (snapshot + log replay) */
    FWM_JOB_EVICT,    /* durable: write a snapshot so the loop may free the resident state */
    FWM_JOB_TRACE     /* step a copy of the session through `tokens`, answer with what each step wrote and read */
} fwm__job_kind;

typedef struct fwm__job {
    struct fwm__job *next;
    fwm__job_kind kind;
    fwm__sink *sink;  /* where output goes; NULL: nobody listens */
    bool respond;     /* a response is owed (request, not notification) */
    uint32_t msgid;
    uint32_t topk;    /* predictions per notification/answer (0..V) */
    bool notify;      /* FEED: send `token` notifications */
    bool commit;      /* ASK: feed the answer too */
    bool keep_stored; /* CLOSE: free the resident session only; the stored one stays */
    bool prime;       /* RESET: to the model's start state (fwm_session_prime), not to zero */
    bool trace_memory; /* TRACE: include the memory after the last token */
    size_t output_bound; /* TRACE, FEED: the most bytes its response can take (checked against the limit);
                          * ASK: those of its unknown spans */
    uint64_t reserved_bytes; /* FORK/RESTORE: memory counted against the budget until it ends */
    uint32_t *tokens; /* FEED/ASK: owned */
    size_t count, done;
    /* FEED with `logprobs`: logprob[i] (owned, count entries) is ln P(tokens[i] | what came before),
     * from the scores before the feed (i = 0) or the step before it; filled as the steps run */
    double *logprob;
    /* FEED/ASK/TRACE given text: the byte spans of its words read as <unk> (owned) */
    fwm_text_span *unknown;
    size_t unknown_count;
    uint64_t held_bytes; /* FEED, ASK: logprob and unknown, counted against the memory budget until it ends */
    /* ASK after the question: the answer, and whether it was committed */
    bool answered;
    uint32_t answer_token;
    float answer_probability;
    fwm_prediction *answer_topk; /* owned, topk entries */
    size_t answer_topk_count;
    bool answer_found;          /* ASK: the question's end predicted something (stm sentence mode
                                 * predicts only there; every other model always) */
    fwm__session_entry *child; /* FORK: the new entry (owned until posted for insertion) */
    void *blob;                /* RESTORE: owned copy */
    size_t blob_size;
    uint64_t enqueued_ns, last_token_ns;
} fwm__job;

/* Allocate a zeroed job (fwm__calloc). */
fwm__job *fwm__job_new(fwm__job_kind kind);
void fwm__job_free(fwm__job *job);

/* One slice of the outbox. */
typedef struct fwm__outbox_record {
    fwm__sink *sink;             /* NULL: no bytes, only bookkeeping */
    size_t offset, length;       /* bytes in the outbox buffer */
    bool job_finished;           /* a job holding a reference to `sink` ended */
    bool respond;                /* job_finished: a response is owed for `msgid` (the bytes hold it) */
    uint32_t msgid;
    int error_code;              /* job_finished: the error code it failed with; 0: it did not */
    fwm__session_entry *insert;  /* a fork/restore result to insert into the table (then reply) */
    bool unreserve;              /* a fork/restore/open ended: release its reserved session slot */
    uint64_t reserved_bytes;     /* ... and this much reserved memory (the job's reserved_bytes) */
    bool unhold;                 /* a fork/restore failed: it no longer counts against its connection */
    uint64_t released_bytes;     /* job_finished: memory its job held against the budget (held_bytes) */
    /* Durable bookkeeping, by id (the entry may be gone by the time the loop reads this): */
    bool evicted;                /* an EVICT job wrote its snapshot: the loop may free the entry */
    bool loaded;                 /* a LOAD job ended */
    bool load_failed;            /* ... and could not rebuild the session */
    uint8_t session_id[FWM_SESSION_ID_BYTES];
    uint64_t load_us;            /* LOAD: microseconds from submission to loaded */
    uint64_t enqueued_ns;        /* when the job was submitted (request latency) */
} fwm__outbox_record;

/* A change to the session store that jobs made (durable mode only). The journal applies an
 * outbox's operations in order, in one atomic batch, before the loop sees its messages. */
typedef enum fwm__store_op_kind {
    FWM_OP_META,       /* put the meta record (bytes) */
    FWM_OP_SNAPSHOT,   /* put the snapshot record (bytes) */
    FWM_OP_LOG,        /* append log record `seq` (bytes) */
    FWM_OP_DELETE_LOG, /* delete log records seq .. below-1 */
    FWM_OP_REMOVE,     /* delete the session */
    FWM_OP_LOADED      /* no write: the session was rebuilt from the store (ends a failure's fencing) */
} fwm__store_op_kind;

typedef struct fwm__store_op {
    fwm__store_op_kind kind;
    uint8_t id[FWM_SESSION_ID_BYTES];
    uint64_t seq, below;
    uint64_t epoch;        /* cluster: the epoch of the session copy that made it (0: the node's current one) */
    size_t offset, length; /* bytes in the outbox's store_bytes */
} fwm__store_op;

typedef struct fwm__outbox {
    struct fwm__outbox *next;
    msgpack_sbuffer buffer;
    fwm__outbox_record *records;
    size_t record_count, record_capacity;
    long sessions_freed;      /* CLOSE jobs run */
    size_t memory_freed;      /* bytes those sessions accounted for */
    /* durable mode: */
    uint8_t *store_bytes;
    size_t store_length, store_capacity;
    fwm__store_op *ops;
    size_t op_count, op_capacity;
    size_t log_bytes;         /* of store_bytes, log records */
    bool store_failed;        /* set by the journal: nothing of `ops` was written */
    char store_error[256];
    bool store_maybe_applied; /* ... as far as this node knows: the store may apply it yet (timeout) */
    bool fenced;              /* ... because this node no longer owns a session it wrote for (cluster) */
    char moved_to[256];       /* fenced: the owner's address, or "" when no live node owns it */
} fwm__outbox;

void fwm__outbox_free(fwm__outbox *outbox);

struct fwm__store;

typedef struct fwm__scheduler_params {
    const fwm_model *const *models; /* borrowed, `model_count` of them */
    const char *const *model_names; /* borrowed: the served names (recorded with durable sessions) */
    size_t model_count;
    struct fwm__store *store;       /* durable mode: where sessions are loaded from; NULL: memory only */
    size_t snapshot_tokens;         /* durable mode: snapshot a session after this many logged tokens */
    size_t workers;   /* >= 1 */
    size_t max_batch; /* >= 1: sessions stepped in one batch by one worker */
    size_t max_unsent; /* a sink with more posted-but-undelivered bytes is not stepped; 0: no limit */
    const char *advertise; /* cluster: this node's address (the `moved` of a dropped entry's jobs); or NULL */
    void (*post)(void *user, fwm__outbox *outbox); /* takes ownership of outbox */
    void *user;
} fwm__scheduler_params;

typedef struct fwm__scheduler fwm__scheduler;

/* Start the workers. NULL when out of memory or threads cannot start. */
fwm__scheduler *fwm__scheduler_start(const fwm__scheduler_params *params);
/* Finish every queued job (or cancel them when fwm__scheduler_cancel was called), stop and join
 * the workers, free the scheduler. NULL is a no-op. Entries still in the table are not freed. */
void fwm__scheduler_stop(fwm__scheduler *scheduler);

/* Append a job to `entry`'s queue (ownership passes); the session becomes ready if it was idle. */
void fwm__scheduler_submit(fwm__scheduler *scheduler, fwm__session_entry *entry, fwm__job *job);
/* Cluster: `entry` was dropped because this node no longer owns its session (loop thread): every job
 * still queued for it, except the CLOSE that frees it, is answered `moved` instead of running. */
void fwm__scheduler_move_away(fwm__scheduler *scheduler, fwm__session_entry *entry);
/* Mark a sink (un)congested; uncongesting makes its parked sessions ready again. */
void fwm__scheduler_set_congested(fwm__scheduler *scheduler, fwm__sink *sink, bool congested);
/* The loop handed `bytes` of a sink's posted output to its connection (see max_unsent). */
void fwm__scheduler_delivered(fwm__scheduler *scheduler, fwm__sink *sink, size_t bytes);
/* From now on, jobs end without stepping, answering FWM_RPC_SHUTTING_DOWN. */
void fwm__scheduler_cancel(fwm__scheduler *scheduler);

/* How many jobs were ever submitted to the entry. */
uint64_t fwm__scheduler_entry_jobs(fwm__scheduler *scheduler, const fwm__session_entry *entry);
/* Whether the entry has jobs queued or running. */
bool fwm__scheduler_entry_busy(fwm__scheduler *scheduler, const fwm__session_entry *entry);

#define FWM_BATCH_SIZE_BUCKETS 18 /* batch sizes up to 2^17 sessions (max-batch is at most 65536) */

typedef struct fwm__scheduler_stats {
    uint64_t tokens;           /* stepped since start */
    uint64_t batches;          /* fwm_batch_step calls */
    uint64_t batch_sessions;   /* sum of their sizes */
    uint64_t batch_max;
    uint64_t batch_sizes[FWM_BATCH_SIZE_BUCKETS]; /* [k]: batches of more than 2^(k-1) and at most 2^k sessions */
    uint64_t jobs_pending;     /* queued or running */
    uint64_t tokens_queued;    /* not yet stepped */
    uint64_t ready_sessions;   /* queue depth: sessions waiting for a worker */
    uint64_t parked_sessions;  /* waiting for a congested connection */
    fwm__histogram token_latency; /* per token: ready -> stepped, microseconds */
} fwm__scheduler_stats;

void fwm__scheduler_get_stats(fwm__scheduler *scheduler, fwm__scheduler_stats *out);
/* Tokens stepped for model `model` (an index of params.models) since start. */
uint64_t fwm__scheduler_model_tokens(fwm__scheduler *scheduler, size_t model);
uint64_t fwm__scheduler_tokens_queued(fwm__scheduler *scheduler);

#endif
