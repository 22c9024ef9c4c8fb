/* store.h - the session store: where a durable fwm-serve keeps each session's snapshot, its log of
 * state-changing operations and its metadata, behind one small interface so that a second backend
 * can be added without touching the scheduler, the journal or the methods.
 *
 * A store holds, per session id (16 bytes):
 *   - meta:     a small record (session_record.h): model fingerprint and name, top-k, position,
 *               last use, where the log starts (log_base) and whether a snapshot exists;
 *   - snapshot: the session's state blob and its last prediction, as of log_base;
 *   - log:      records numbered seq = log_base, log_base + 1, ...: the operations applied since.
 * Recovery of a session is: snapshot (or a fresh state when none), then replay of the log in order.
 *
 * Writing: one thread at a time (the journal) opens a write batch, applies operations and commits
 * it atomically: after a crash either every operation of a committed batch is there or none is.
 * The bytes handed to put_meta, put_snapshot and append_log must stay valid until the batch is
 * committed or aborted (a network backend sends the whole batch at commit, without copying it).
 * `commit` does not force the data to disk; `sync` does (the journal chooses when: --fsync).
 * Reading: any thread, concurrently with the writer; a reader sees the last committed batch.
 *
 * Every function returns FWM_STORE_OK or an error status with a message naming the file and the
 * problem in `error` (may be NULL). FWM_STORE_FULL means out of space (map or disk): the batch was
 * not written and the store remains usable once space returns.
 *
 * FWM_STORE_FENCED means the batch was refused because this node no longer owns a session it
 * writes for (cluster mode, cluster.h): nothing was written, `error.owner` names the owner's address
 * when one is alive; the store itself is healthy.
 *
 * Backends: store_lmdb.c (LMDB, the embedded default: `--data-dir DIR`) and store_redis.c (Redis,
 * shared by several nodes: `--store redis://HOST:PORT[/DB]` or `--store unix:/PATH[?db=N]`).
 */
#ifndef FWM_SERVER_STORE_H
#define FWM_SERVER_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FWM_STORE_ID_BYTES 16

typedef enum fwm__store_status {
    FWM_STORE_OK = 0,
    FWM_STORE_NOT_FOUND,  /* no such session (get_meta / get_snapshot) */
    FWM_STORE_FULL,       /* out of space: nothing of the batch was written */
    FWM_STORE_IO,         /* the operating system refused a read or a write */
    FWM_STORE_CORRUPT,    /* damaged data: a record's checksum or shape is wrong */
    FWM_STORE_BUSY,       /* another process holds the store */
    FWM_STORE_VERSION,    /* written by an incompatible version */
    FWM_STORE_NO_MEMORY,
    FWM_STORE_FENCED,     /* cluster: this node does not own a session it writes for */
    FWM_STORE_LOST,       /* the store lost its data since it was opened (Redis restarted empty): nothing
                             is written to it until fwm-serve is restarted */
} fwm__store_status;

typedef struct fwm__store_error {
    char message[512];
    char owner[256];      /* FWM_STORE_FENCED: the owner's advertised address, or "" */
    bool maybe_applied;   /* the write reached the store, but no answer came back (a timeout, a
                             connection lost): the store may still apply it */
} fwm__store_error;

typedef struct fwm__store fwm__store;

typedef struct fwm__store_options {
    uint64_t map_bytes; /* the largest the store may grow (LMDB map size); 0: the backend's default */
    bool durable_writes; /* --fsync always: a backend that cannot promise it says so at open */
} fwm__store_options;

typedef struct fwm__store_info {
    uint64_t sessions;   /* sessions stored */
    uint64_t file_bytes; /* size of the store's files on disk */
    uint64_t map_bytes;  /* the most it may grow to */
    uint64_t used_bytes; /* space in use inside the file */
} fwm__store_info;

/* Called for each log record from `read_log`, in seq order. Return false to stop early. */
typedef bool (*fwm__store_log_visit)(void *user, uint64_t seq, const void *bytes, size_t length);
/* Called for each stored session from `list`, in id order. Return false to stop early. */
typedef bool (*fwm__store_list_visit)(void *user, const uint8_t id[FWM_STORE_ID_BYTES], const void *meta,
                                      size_t length);

typedef struct fwm__store_backend {
    const char *name;
    fwm__store_status (*open)(const char *location, const fwm__store_options *options, fwm__store **out,
                              fwm__store_error *error);
    void (*close)(fwm__store *store);

    /* The write batch (one at a time, one thread). */
    fwm__store_status (*begin)(fwm__store *store, fwm__store_error *error);
    fwm__store_status (*put_meta)(fwm__store *store, const uint8_t *id, const void *bytes, size_t length,
                                  fwm__store_error *error);
    fwm__store_status (*put_snapshot)(fwm__store *store, const uint8_t *id, const void *bytes, size_t length,
                                      fwm__store_error *error);
    fwm__store_status (*append_log)(fwm__store *store, const uint8_t *id, uint64_t seq, const void *bytes,
                                    size_t length, fwm__store_error *error);
    /* Delete the log records with from <= seq < below. */
    fwm__store_status (*delete_log)(fwm__store *store, const uint8_t *id, uint64_t from, uint64_t below,
                                    fwm__store_error *error);
    /* Delete meta, snapshot and log of a session (absent: no-op). */
    fwm__store_status (*remove)(fwm__store *store, const uint8_t *id, fwm__store_error *error);
    /* Cluster (NULL for a backend without one): the operations that follow in this batch were made
     * under the node's fencing epoch `epoch` (0: the node's current one). The batch writes them only
     * when that epoch is still the node's lease and owns their sessions (cluster.h). */
    fwm__store_status (*writer_epoch)(fwm__store *store, uint64_t epoch, fwm__store_error *error);
    fwm__store_status (*commit)(fwm__store *store, fwm__store_error *error);
    void (*abort)(fwm__store *store);
    /* Force every committed batch to disk. */
    fwm__store_status (*sync)(fwm__store *store, fwm__store_error *error);
    /* Whether `bytes` more could be written now (no write batch may be open): used to notice that
     * space has returned after FWM_STORE_FULL. */
    fwm__store_status (*probe)(fwm__store *store, size_t bytes, fwm__store_error *error);
    /* Give up the headroom the backend keeps for deletions (a full store must still be able to
     * delete sessions to make room); `probe` takes it back once there is space. */
    fwm__store_status (*free_reserve)(fwm__store *store, fwm__store_error *error);

    /* Reading (any thread). `get_*` copy into a buffer the caller owns and grows (fwm__realloc). */
    fwm__store_status (*get_meta)(fwm__store *store, const uint8_t *id, void *buffer, size_t capacity,
                                  size_t *length, fwm__store_error *error);
    fwm__store_status (*get_snapshot)(fwm__store *store, const uint8_t *id, void **buffer, size_t *capacity,
                                      size_t *length, fwm__store_error *error);
    fwm__store_status (*read_log)(fwm__store *store, const uint8_t *id, uint64_t from, fwm__store_log_visit visit,
                                  void *user, fwm__store_error *error);
    /* Sessions with an id greater than `after` (NULL: from the first), in id order. */
    fwm__store_status (*list)(fwm__store *store, const uint8_t *after, fwm__store_list_visit visit, void *user,
                              fwm__store_error *error);
    fwm__store_status (*info)(fwm__store *store, fwm__store_info *out, fwm__store_error *error);
} fwm__store_backend;

/* A store is its backend's state; its first member is the backend. */
struct fwm__store {
    const fwm__store_backend *backend;
};

extern const fwm__store_backend fwm__store_lmdb;
extern const fwm__store_backend fwm__store_redis;

/* Whether `location` names a Redis server (redis://... or unix:...) rather than a folder. */
bool fwm__store_is_redis(const char *location);

/* Open the store named by `location` (redis://HOST:PORT[/DB] or unix:/PATH[?db=N]: Redis; anything
 * else is a folder: LMDB). */
fwm__store_status fwm__store_open(const char *location, const fwm__store_options *options, fwm__store **out,
                                  fwm__store_error *error);
void fwm__store_close(fwm__store *store);

const char *fwm__store_status_name(fwm__store_status status);

#endif
