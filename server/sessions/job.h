/* job.h - a job (one request's work on a session's queue) and the outbox its results leave in: the
 * messages for the connections, the bookkeeping records for the loop, and the store operations the
 * journal writes first.
 *
 * Made on the loop (methods/), queued and run by the scheduler on a worker (scheduler.c, jobs.c),
 * written by the journal (journal.c), delivered on the loop (server.c).
 */
#ifndef FWM_SERVER_SESSIONS_JOB_H
#define FWM_SERVER_SESSIONS_JOB_H

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/sink.h"
#include "fwm/fwm.h"
#include "session_table.h"

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

#endif
