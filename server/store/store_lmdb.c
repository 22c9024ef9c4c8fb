/* store_lmdb.c - the LMDB session store (store.h): one environment in the data folder, four named
 * databases: `info` (the format version), `meta` and `snapshot` (key: session id) and `log` (key:
 * session id + big-endian seq, so one session's records are contiguous and in order).
 *
 * LMDB is opened with MDB_NOSYNC: a commit writes its pages to the operating system (so a killed
 * process loses nothing committed) and `sync` (mdb_env_sync) forces them to disk; the journal decides
 * when. Without MDB_WRITEMAP, LMDB keeps its ACI guarantees under NOSYNC: a power cut can lose the
 * last commits but never tears one. A second fwm-serve on the same folder is refused by an exclusive
 * flock on the folder itself (LMDB itself would let two processes share the environment), which no
 * file removal can take away, and on DIR/fwm-serve.lock, which holds the server's pid for people.
 */
#include <errno.h>
#include <fcntl.h>
#include <lmdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "fwm_alloc.h"
#include "store.h"

#define FORMAT_KEY "format"
#define FORMAT_VALUE "fwm-session-store 1"
#define DEFAULT_MAP_BYTES (1ull << 40) /* 1 TiB of address space; the file grows as it fills */
#define LOG_KEY_BYTES (FWM_STORE_ID_BYTES + 8)

typedef struct lmdb_store {
    fwm__store base;
    MDB_env *env;
    MDB_dbi info, meta, snapshot, log;
    MDB_txn *write; /* the open write batch, or NULL */
    int dir_fd;     /* the folder, flocked: the lock that keeps a second server out */
    int lock_fd;    /* DIR/fwm-serve.lock, flocked too; holds the pid */
    char dir[512];
    char data_path[600];
    uint64_t limit_bytes;  /* --store-max-bytes: writes that grow the store stop here */
    uint64_t map_bytes;    /* LMDB's map: the limit plus headroom, so deletions always have room */
    bool batch_grows;      /* the open batch puts something */
    bool over_limit;       /* the store was at its limit when the batch began */
} lmdb_store;

static fwm__store_status fail(fwm__store_error *error, fwm__store_status status, const char *format, ...)
    __attribute__((format(printf, 3, 4)));

static fwm__store_status fail(fwm__store_error *error, fwm__store_status status, const char *format, ...) {
    if (error) {
        va_list args;
        va_start(args, format);
        vsnprintf(error->message, sizeof error->message, format, args);
        va_end(args);
    }
    return status;
}

static fwm__store_status status_of(int rc) {
    switch (rc) {
    case MDB_SUCCESS: return FWM_STORE_OK;
    case MDB_NOTFOUND: return FWM_STORE_NOT_FOUND;
    case MDB_MAP_FULL:
    case ENOSPC:
    case EDQUOT: return FWM_STORE_FULL;
    case MDB_INVALID:
    case MDB_CORRUPTED:
    case MDB_PAGE_NOTFOUND: return FWM_STORE_CORRUPT;
    case MDB_VERSION_MISMATCH: return FWM_STORE_VERSION;
    case ENOMEM: return FWM_STORE_NO_MEMORY;
    default: return FWM_STORE_IO;
    }
}

/* Below this many free bytes on the file system, a failed write is taken as the disk being full. */
#define DISK_FULL_BYTES (1u << 20)

/* Bytes free on the file system holding the folder, or UINT64_MAX when it cannot be read. */
static uint64_t free_bytes(const char *dir) {
    struct statvfs fs;
    return statvfs(dir, &fs) == 0 ? (uint64_t)fs.f_bavail * fs.f_frsize : UINT64_MAX;
}

/* An LMDB failure, named with the data file, what was being done and, when space ran out, which
 * space and what to do. LMDB reports a write cut short by a full file system as EIO (it sees a short
 * write, not ENOSPC), so an I/O error with (almost) no space left is taken for what it is. */
static fwm__store_status lmdb_fail(lmdb_store *s, fwm__store_error *error, int rc, const char *doing) {
    if (rc == MDB_MAP_FULL)
        return fail(error, FWM_STORE_FULL,
                    "%s: %s: store map full: the store reached --store-max-bytes (%llu bytes) and its headroom "
                    "for deletions; close sessions to free space, or restart with a larger --store-max-bytes",
                    s->data_path, doing, (unsigned long long)s->limit_bytes);
    if (rc == ENOSPC || rc == EDQUOT || rc == EIO) {
        uint64_t left = free_bytes(s->dir);
        if (rc != EIO || left < DISK_FULL_BYTES)
            return fail(error, FWM_STORE_FULL,
                        "%s: %s: disk full: %s (%llu bytes free on the file system of %s); free space there "
                        "(or close sessions): writes are accepted again by themselves once 1 MiB fits",
                        s->data_path, doing, rc == EDQUOT ? "disk quota exceeded" : "no space left on the device",
                        (unsigned long long)(left == UINT64_MAX ? 0 : left), s->dir);
    }
    return fail(error, status_of(rc), "%s: %s: %s", s->data_path, doing, mdb_strerror(rc));
}

static void log_key(uint8_t key[LOG_KEY_BYTES], const uint8_t *id, uint64_t seq) {
    memcpy(key, id, FWM_STORE_ID_BYTES);
    for (int i = 0; i < 8; i++) key[FWM_STORE_ID_BYTES + i] = (uint8_t)(seq >> (56 - 8 * i));
}

static uint64_t log_key_seq(const uint8_t *key) {
    uint64_t seq = 0;
    for (int i = 0; i < 8; i++) seq = seq << 8 | key[FWM_STORE_ID_BYTES + i];
    return seq;
}

static MDB_val val(const void *data, size_t size) {
    MDB_val v = {size, (void *)data};
    return v;
}

static fwm__store_status used_bytes(lmdb_store *s, uint64_t *used, fwm__store_error *error);
static fwm__store_status read_begin(lmdb_store *s, MDB_txn **txn, fwm__store_error *error);

/* ---- open / close ---- */

static void lmdb_close(fwm__store *base) {
    lmdb_store *s = (lmdb_store *)base;
    if (!s) return;
    if (s->write) mdb_txn_abort(s->write);
    if (s->env) mdb_env_close(s->env);
    if (s->lock_fd >= 0) close(s->lock_fd);
    if (s->dir_fd >= 0) close(s->dir_fd);
    fwm__free(s);
}

/* The pid holding an flock on the file (st_dev, st_ino), from /proc/locks; 0 when not found. */
static long flock_holder(const struct stat *st) {
    FILE *f = fopen("/proc/locks", "re");
    if (!f) return 0;
    char line[256];
    long pid = 0;
    while (!pid && fgets(line, sizeof line, f)) {
        /* "1: FLOCK  ADVISORY  WRITE 4242 fd:01:131090 0 EOF" (a blocked waiter reads "1: -> FLOCK ...") */
        char kind[16], mode[16], access[16];
        long holder;
        unsigned dev_major, dev_minor;
        unsigned long long inode;
        if (strstr(line, "->")) continue;
        if (sscanf(line, "%*d: %15s %15s %15s %ld %x:%x:%llu", kind, mode, access, &holder, &dev_major, &dev_minor,
                   &inode) != 7)
            continue;
        if (strcmp(kind, "FLOCK") == 0 && inode == (unsigned long long)st->st_ino && dev_major == major(st->st_dev) &&
            dev_minor == minor(st->st_dev))
            pid = holder;
    }
    fclose(f);
    return pid;
}

/* The exclusive locks that keep a second server out: the folder itself (a removed or replaced lock
 * file cannot let a second writer in), then DIR/fwm-serve.lock (its pid, for people). */
static fwm__store_status take_lock(lmdb_store *s, fwm__store_error *error) {
    char path[600];
    snprintf(path, sizeof path, "%s/fwm-serve.lock", s->dir);
    s->dir_fd = open(s->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (s->dir_fd < 0) return fail(error, FWM_STORE_IO, "%s: cannot open the data folder: %s", s->dir, strerror(errno));
    if (flock(s->dir_fd, LOCK_EX | LOCK_NB) != 0) {
        if (errno != EWOULDBLOCK)
            return fail(error, FWM_STORE_IO, "%s: cannot lock the data folder: %s", s->dir, strerror(errno));
        char holder[32] = "";
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            ssize_t n = pread(fd, holder, sizeof holder - 1, 0);
            holder[n > 0 ? n : 0] = '\0';
            holder[strcspn(holder, "\n")] = '\0';
            close(fd);
        }
        struct stat st;
        long pid = fstat(s->dir_fd, &st) == 0 ? flock_holder(&st) : 0;
        if (pid) snprintf(holder, sizeof holder, "%ld", pid); /* the lock's holder: the file may be stale */
        return fail(error, FWM_STORE_BUSY, "%s: the data folder is in use by another fwm-serve (pid %s)%s", s->dir,
                    holder[0] ? holder : "unknown", fd >= 0 ? "" : "; its fwm-serve.lock was removed, the folder's own "
                    "lock still holds");
    }
    s->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (s->lock_fd < 0) return fail(error, FWM_STORE_IO, "%s: cannot open the lock file: %s", path, strerror(errno));
    if (flock(s->lock_fd, LOCK_EX | LOCK_NB) != 0) { /* an older fwm-serve, which locks only this file */
        char holder[32] = "";
        ssize_t n = pread(s->lock_fd, holder, sizeof holder - 1, 0);
        holder[n > 0 ? n : 0] = '\0';
        holder[strcspn(holder, "\n")] = '\0';
        return fail(error, FWM_STORE_BUSY, "%s: the data folder is in use by another fwm-serve (pid %s)", path,
                    holder[0] ? holder : "unknown");
    }
    char pid[32];
    int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (ftruncate(s->lock_fd, 0) != 0 || pwrite(s->lock_fd, pid, (size_t)n, 0) != n) { /* informative only */
    }
    return FWM_STORE_OK;
}

/* Create or check the four databases and the format version. */
static fwm__store_status open_databases(lmdb_store *s, fwm__store_error *error) {
    MDB_txn *txn;
    int rc = mdb_txn_begin(s->env, NULL, 0, &txn);
    if (rc) return lmdb_fail(s, error, rc, "cannot begin the first transaction");
    MDB_dbi *dbis[4] = {&s->info, &s->meta, &s->snapshot, &s->log};
    const char *names[4] = {"info", "meta", "snapshot", "log"};
    for (int i = 0; i < 4 && rc == 0; i++) rc = mdb_dbi_open(txn, names[i], MDB_CREATE, dbis[i]);
    if (rc) {
        mdb_txn_abort(txn);
        return lmdb_fail(s, error, rc, "cannot open its databases (is it an fwm-serve data folder?)");
    }
    MDB_val key = val(FORMAT_KEY, strlen(FORMAT_KEY)), found;
    rc = mdb_get(txn, s->info, &key, &found);
    if (rc == MDB_NOTFOUND) {
        MDB_val format = val(FORMAT_VALUE, strlen(FORMAT_VALUE));
        rc = mdb_put(txn, s->info, &key, &format, 0);
    } else if (rc == 0 &&
               (found.mv_size != strlen(FORMAT_VALUE) || memcmp(found.mv_data, FORMAT_VALUE, found.mv_size))) {
        int n = (int)(found.mv_size > 64 ? 64 : found.mv_size);
        mdb_txn_abort(txn);
        return fail(error, FWM_STORE_VERSION, "%s: written in format '%.*s', this fwm-serve reads '%s'", s->data_path,
                    n, (const char *)found.mv_data, FORMAT_VALUE);
    }
    if (rc) {
        mdb_txn_abort(txn);
        return lmdb_fail(s, error, rc, "cannot read its format");
    }
    rc = mdb_txn_commit(txn);
    if (rc) return lmdb_fail(s, error, rc, "cannot commit its format");
    rc = mdb_env_sync(s->env, 1);
    return rc ? lmdb_fail(s, error, rc, "cannot sync") : FWM_STORE_OK;
}

static fwm__store_status lmdb_open(const char *dir, const fwm__store_options *options, fwm__store **out,
                                   fwm__store_error *error) {
    *out = NULL;
    if (strlen(dir) >= 480) return fail(error, FWM_STORE_IO, "data folder path too long (%zu bytes)", strlen(dir));
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return fail(error, FWM_STORE_IO, "%s: cannot create the data folder: %s", dir, strerror(errno));
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return fail(error, FWM_STORE_IO, "%s: not a folder", dir);
    lmdb_store *s = fwm__calloc(1, sizeof *s);
    if (!s) return fail(error, FWM_STORE_NO_MEMORY, "out of memory opening the store");
    s->base.backend = &fwm__store_lmdb;
    s->lock_fd = -1;
    s->dir_fd = -1;
    snprintf(s->dir, sizeof s->dir, "%s", dir);
    snprintf(s->data_path, sizeof s->data_path, "%s/data.mdb", dir);
    fwm__store_status status = take_lock(s, error);
    if (status != FWM_STORE_OK) goto fail;
    int rc = mdb_env_create(&s->env);
    uint64_t limit = options && options->map_bytes ? options->map_bytes : DEFAULT_MAP_BYTES;
    uint64_t headroom = limit / 8;
    if (headroom < (1u << 20)) headroom = 1u << 20;
    if (headroom > (64u << 20)) headroom = 64u << 20;
    uint64_t map = limit + headroom;
    s->limit_bytes = limit;
    s->map_bytes = map;
    if (!rc) rc = mdb_env_set_maxdbs(s->env, 4);
    if (!rc) rc = mdb_env_set_maxreaders(s->env, 1024);
    if (!rc) rc = mdb_env_set_mapsize(s->env, (size_t)map);
    if (!rc) rc = mdb_env_open(s->env, dir, MDB_NOSYNC | MDB_NOTLS, 0600);
    if (rc) {
        status = lmdb_fail(s, error, rc, "cannot open the store");
        goto fail;
    }
    status = open_databases(s, error);
    if (status != FWM_STORE_OK) goto fail;
    *out = &s->base;
    return FWM_STORE_OK;
fail:
    lmdb_close(&s->base);
    return status;
}

/* ---- the write batch ---- */

static fwm__store_status lmdb_begin(fwm__store *base, fwm__store_error *error) {
    lmdb_store *s = (lmdb_store *)base;
    if (s->write) return fail(error, FWM_STORE_IO, "a write batch is already open");
    uint64_t used = 0;
    s->batch_grows = false;
    s->over_limit = used_bytes(s, &used, NULL) == FWM_STORE_OK && used >= s->limit_bytes;
    int rc = mdb_txn_begin(s->env, NULL, 0, &s->write);
    if (rc) {
        s->write = NULL;
        return lmdb_fail(s, error, rc, "cannot begin a write");
    }
    return FWM_STORE_OK;
}

static fwm__store_status put(lmdb_store *s, MDB_dbi dbi, const void *key, size_t key_length, const void *bytes,
                             size_t length, fwm__store_error *error, const char *what) {
    s->batch_grows = true;
    MDB_val k = val(key, key_length), v = val(bytes, length);
    int rc = mdb_put(s->write, dbi, &k, &v, 0);
    return rc ? lmdb_fail(s, error, rc, what) : FWM_STORE_OK;
}

static fwm__store_status lmdb_put_meta(fwm__store *base, const uint8_t *id, const void *bytes, size_t length,
                                       fwm__store_error *error) {
    lmdb_store *s = (lmdb_store *)base;
    return put(s, s->meta, id, FWM_STORE_ID_BYTES, bytes, length, error, "cannot write a session's meta record");
}

static fwm__store_status lmdb_put_snapshot(fwm__store *base, const uint8_t *id, const void *bytes, size_t length,
                                           fwm__store_error *error) {
    lmdb_store *s = (lmdb_store *)base;
    return put(s, s->snapshot, id, FWM_STORE_ID_BYTES, bytes, length, error, "cannot write a session's snapshot");
}

static fwm__store_status lmdb_append_log(fwm__store *base, const uint8_t *id, uint64_t seq, const void *bytes,
                                         size_t length, fwm__store_error *error) {
    lmdb_store *s = (lmdb_store *)base;
    uint8_t key[LOG_KEY_BYTES];
    log_key(key, id, seq);
    return put(s, s->log, key, sizeof key, bytes, length, error, "cannot append to a session's log");
}

/* Delete one session's log records with from <= seq < below. */
static fwm__store_status delete_log(lmdb_store *s, const uint8_t *id, uint64_t from, uint64_t below,
                                    fwm__store_error *error) {
    MDB_cursor *cursor;
    int rc = mdb_cursor_open(s->write, s->log, &cursor);
    if (rc) return lmdb_fail(s, error, rc, "cannot open a log cursor");
    uint8_t start[LOG_KEY_BYTES];
    log_key(start, id, from);
    MDB_val k = val(start, sizeof start), v;
    rc = mdb_cursor_get(cursor, &k, &v, MDB_SET_RANGE);
    while (rc == 0 && k.mv_size == LOG_KEY_BYTES && memcmp(k.mv_data, id, FWM_STORE_ID_BYTES) == 0 &&
           log_key_seq(k.mv_data) < below) {
        rc = mdb_cursor_del(cursor, 0);
        if (rc) break;
        k = val(start, sizeof start); /* seek again: the first remaining record of the session */
        rc = mdb_cursor_get(cursor, &k, &v, MDB_SET_RANGE);
    }
    mdb_cursor_close(cursor);
    return rc && rc != MDB_NOTFOUND ? lmdb_fail(s, error, rc, "cannot trim a session's log") : FWM_STORE_OK;
}

static fwm__store_status lmdb_delete_log(fwm__store *base, const uint8_t *id, uint64_t from, uint64_t below,
                                         fwm__store_error *error) {
    return delete_log((lmdb_store *)base, id, from, below, error);
}

static fwm__store_status lmdb_remove(fwm__store *base, const uint8_t *id, fwm__store_error *error) {
    lmdb_store *s = (lmdb_store *)base;
    MDB_val k = val(id, FWM_STORE_ID_BYTES);
    int rc = mdb_del(s->write, s->meta, &k, NULL);
    if (rc == 0 || rc == MDB_NOTFOUND) rc = mdb_del(s->write, s->snapshot, &k, NULL);
    if (rc && rc != MDB_NOTFOUND) return lmdb_fail(s, error, rc, "cannot delete a session");
    return delete_log(s, id, 0, UINT64_MAX, error);
}

static fwm__store_status lmdb_commit(fwm__store *base, fwm__store_error *error) {
    lmdb_store *s = (lmdb_store *)base;
    if (!s->write) return fail(error, FWM_STORE_IO, "no write batch is open");
    if (s->over_limit && s->batch_grows) { /* deletions may go on into the headroom; nothing else */
        mdb_txn_abort(s->write);
        s->write = NULL;
        return fail(error, FWM_STORE_FULL, "%s: store full: the store holds %llu bytes, its limit "
                    "(--store-max-bytes); only deletions are written until sessions are closed", s->data_path,
                    (unsigned long long)s->limit_bytes);
    }
    int rc = mdb_txn_commit(s->write);
    s->write = NULL;
    return rc ? lmdb_fail(s, error, rc, "cannot commit a write") : FWM_STORE_OK;
}

static void lmdb_abort(fwm__store *base) {
    lmdb_store *s = (lmdb_store *)base;
    if (s->write) mdb_txn_abort(s->write);
    s->write = NULL;
}

static fwm__store_status lmdb_sync(fwm__store *base, fwm__store_error *error) {
    lmdb_store *s = (lmdb_store *)base;
    int rc = mdb_env_sync(s->env, 1);
    return rc ? lmdb_fail(s, error, rc, "cannot sync to disk") : FWM_STORE_OK;
}

/* Pages in use: the file's high-water mark less the pages on LMDB's free list. The free list is
 * scanned (in a read transaction of its own: LMDB lets only readers walk it) only when the
 * high-water mark is past the limit, i.e. when the store is nearly full; otherwise this costs no
 * transaction, so a write batch pays nothing for it. */
static fwm__store_status used_bytes(lmdb_store *s, uint64_t *used, fwm__store_error *error) {
    MDB_envinfo info;
    MDB_stat st;
    if (mdb_env_info(s->env, &info) != 0 || mdb_env_stat(s->env, &st) != 0)
        return fail(error, FWM_STORE_IO, "%s: cannot read the store's size", s->data_path);
    uint64_t pages = (uint64_t)info.me_last_pgno + 1;
    *used = pages * st.ms_psize;
    if (*used < s->limit_bytes) return FWM_STORE_OK;
    MDB_txn *txn;
    fwm__store_status status = read_begin(s, &txn, error);
    if (status != FWM_STORE_OK) return status;
    MDB_cursor *cursor;
    if (mdb_cursor_open(txn, 0 /* FREE_DBI */, &cursor) != 0) {
        mdb_txn_abort(txn);
        return FWM_STORE_OK;
    }
    MDB_val k, v;
    uint64_t free_pages = 0;
    for (int rc = mdb_cursor_get(cursor, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(cursor, &k, &v, MDB_NEXT))
        if (v.mv_size >= sizeof(size_t)) free_pages += *(const size_t *)v.mv_data; /* an IDL: its count first */
    mdb_cursor_close(cursor);
    mdb_txn_abort(txn);
    *used = (free_pages < pages ? pages - free_pages : 0) * st.ms_psize;
    return FWM_STORE_OK;
}

/* The LMDB store keeps its deletion headroom beyond the limit in its map: nothing to give up. */
static fwm__store_status lmdb_free_reserve(fwm__store *base, fwm__store_error *error) {
    (void)base, (void)error;
    return FWM_STORE_NOT_FOUND;
}

/* Room for `bytes` more under the limit (and on the file system). */
static fwm__store_status lmdb_probe(fwm__store *base, size_t bytes, fwm__store_error *error) {
    lmdb_store *s = (lmdb_store *)base;
    if (bytes > s->limit_bytes / 8) bytes = (size_t)(s->limit_bytes / 8); /* small stores: an eighth of it */
    struct statvfs fs;
    if (statvfs(s->dir, &fs) == 0 && (uint64_t)fs.f_bavail * fs.f_frsize < bytes)
        return fail(error, FWM_STORE_FULL, "%s: disk full: the file system has %llu bytes free", s->dir,
                    (unsigned long long)fs.f_bavail * fs.f_frsize);
    uint64_t used = 0;
    fwm__store_status st = used_bytes(s, &used, error);
    if (st != FWM_STORE_OK) return st;
    if (used + bytes > s->limit_bytes)
        return fail(error, FWM_STORE_FULL, "%s: %llu bytes in use, the limit is %llu", s->data_path,
                    (unsigned long long)used, (unsigned long long)s->limit_bytes);
    return FWM_STORE_OK;
}

/* ---- reading ---- */

static fwm__store_status read_begin(lmdb_store *s, MDB_txn **txn, fwm__store_error *error) {
    int rc = mdb_txn_begin(s->env, NULL, MDB_RDONLY, txn);
    return rc ? lmdb_fail(s, error, rc, "cannot begin a read") : FWM_STORE_OK;
}

static fwm__store_status lmdb_get_meta(fwm__store *base, const uint8_t *id, void *buffer, size_t capacity,
                                       size_t *length, fwm__store_error *error) {
    lmdb_store *s = (lmdb_store *)base;
    MDB_txn *txn;
    fwm__store_status status = read_begin(s, &txn, error);
    if (status != FWM_STORE_OK) return status;
    MDB_val k = val(id, FWM_STORE_ID_BYTES), v;
    int rc = mdb_get(txn, s->meta, &k, &v);
    if (rc == 0) {
        *length = v.mv_size;
        memcpy(buffer, v.mv_data, v.mv_size < capacity ? v.mv_size : capacity);
    }
    mdb_txn_abort(txn);
    if (rc == MDB_NOTFOUND) return FWM_STORE_NOT_FOUND;
    return rc ? lmdb_fail(s, error, rc, "cannot read a session's meta record") : FWM_STORE_OK;
}

static fwm__store_status lmdb_get_snapshot(fwm__store *base, const uint8_t *id, void **buffer, size_t *capacity,
                                           size_t *length, fwm__store_error *error) {
    lmdb_store *s = (lmdb_store *)base;
    MDB_txn *txn;
    fwm__store_status status = read_begin(s, &txn, error);
    if (status != FWM_STORE_OK) return status;
    MDB_val k = val(id, FWM_STORE_ID_BYTES), v;
    int rc = mdb_get(txn, s->snapshot, &k, &v);
    if (rc == 0 && v.mv_size > *capacity) {
        void *grown = fwm__realloc(*buffer, v.mv_size);
        if (!grown) {
            mdb_txn_abort(txn);
            return fail(error, FWM_STORE_NO_MEMORY, "out of memory reading a snapshot of %zu bytes", v.mv_size);
        }
        *buffer = grown;
        *capacity = v.mv_size;
    }
    if (rc == 0) {
        memcpy(*buffer, v.mv_data, v.mv_size);
        *length = v.mv_size;
    }
    mdb_txn_abort(txn);
    if (rc == MDB_NOTFOUND) return FWM_STORE_NOT_FOUND;
    return rc ? lmdb_fail(s, error, rc, "cannot read a session's snapshot") : FWM_STORE_OK;
}

static fwm__store_status lmdb_read_log(fwm__store *base, const uint8_t *id, uint64_t from, fwm__store_log_visit visit,
                                       void *user, fwm__store_error *error) {
    lmdb_store *s = (lmdb_store *)base;
    MDB_txn *txn;
    fwm__store_status status = read_begin(s, &txn, error);
    if (status != FWM_STORE_OK) return status;
    MDB_cursor *cursor;
    int rc = mdb_cursor_open(txn, s->log, &cursor);
    if (rc) {
        mdb_txn_abort(txn);
        return lmdb_fail(s, error, rc, "cannot open a log cursor");
    }
    uint8_t start[LOG_KEY_BYTES];
    log_key(start, id, from);
    MDB_val k = val(start, sizeof start), v;
    rc = mdb_cursor_get(cursor, &k, &v, MDB_SET_RANGE);
    while (rc == 0 && k.mv_size == LOG_KEY_BYTES && memcmp(k.mv_data, id, FWM_STORE_ID_BYTES) == 0) {
        if (!visit(user, log_key_seq(k.mv_data), v.mv_data, v.mv_size)) break;
        rc = mdb_cursor_get(cursor, &k, &v, MDB_NEXT);
    }
    mdb_cursor_close(cursor);
    mdb_txn_abort(txn);
    return rc && rc != MDB_NOTFOUND ? lmdb_fail(s, error, rc, "cannot read a session's log") : FWM_STORE_OK;
}

static fwm__store_status lmdb_list(fwm__store *base, const uint8_t *after, fwm__store_list_visit visit, void *user,
                                   fwm__store_error *error) {
    lmdb_store *s = (lmdb_store *)base;
    MDB_txn *txn;
    fwm__store_status status = read_begin(s, &txn, error);
    if (status != FWM_STORE_OK) return status;
    MDB_cursor *cursor;
    int rc = mdb_cursor_open(txn, s->meta, &cursor);
    if (rc) {
        mdb_txn_abort(txn);
        return lmdb_fail(s, error, rc, "cannot open a cursor");
    }
    MDB_val k = val(after, FWM_STORE_ID_BYTES), v;
    rc = mdb_cursor_get(cursor, &k, &v, after ? MDB_SET_RANGE : MDB_FIRST);
    if (rc == 0 && after && memcmp(k.mv_data, after, FWM_STORE_ID_BYTES) == 0)
        rc = mdb_cursor_get(cursor, &k, &v, MDB_NEXT);
    while (rc == 0) {
        if (k.mv_size == FWM_STORE_ID_BYTES && !visit(user, k.mv_data, v.mv_data, v.mv_size)) break;
        rc = mdb_cursor_get(cursor, &k, &v, MDB_NEXT);
    }
    mdb_cursor_close(cursor);
    mdb_txn_abort(txn);
    return rc && rc != MDB_NOTFOUND ? lmdb_fail(s, error, rc, "cannot list sessions") : FWM_STORE_OK;
}

static fwm__store_status lmdb_info(fwm__store *base, fwm__store_info *out, fwm__store_error *error) {
    lmdb_store *s = (lmdb_store *)base;
    memset(out, 0, sizeof *out);
    MDB_txn *txn;
    fwm__store_status status = read_begin(s, &txn, error);
    if (status != FWM_STORE_OK) return status;
    MDB_stat st;
    int rc = mdb_stat(txn, s->meta, &st);
    mdb_txn_abort(txn);
    if (rc) return lmdb_fail(s, error, rc, "cannot count sessions");
    out->sessions = st.ms_entries;
    MDB_envinfo info;
    MDB_stat env;
    if (mdb_env_info(s->env, &info) == 0 && mdb_env_stat(s->env, &env) == 0) {
        out->map_bytes = s->limit_bytes;
        out->used_bytes = (uint64_t)(info.me_last_pgno + 1) * env.ms_psize;
    }
    struct stat file;
    if (stat(s->data_path, &file) == 0) out->file_bytes = (uint64_t)file.st_blocks * 512u;
    return FWM_STORE_OK;
}

const fwm__store_backend fwm__store_lmdb = {
    .name = "lmdb",
    .open = lmdb_open,
    .close = lmdb_close,
    .begin = lmdb_begin,
    .put_meta = lmdb_put_meta,
    .put_snapshot = lmdb_put_snapshot,
    .append_log = lmdb_append_log,
    .delete_log = lmdb_delete_log,
    .remove = lmdb_remove,
    .commit = lmdb_commit,
    .abort = lmdb_abort,
    .sync = lmdb_sync,
    .probe = lmdb_probe,
    .free_reserve = lmdb_free_reserve,
    .get_meta = lmdb_get_meta,
    .get_snapshot = lmdb_get_snapshot,
    .read_log = lmdb_read_log,
    .list = lmdb_list,
    .info = lmdb_info,
};

fwm__store_status fwm__store_open(const char *location, const fwm__store_options *options, fwm__store **out,
                                  fwm__store_error *error) {
    if (fwm__store_is_redis(location)) return fwm__store_redis.open(location, options, out, error);
    return fwm__store_lmdb.open(location, options, out, error);
}

void fwm__store_close(fwm__store *store) {
    if (store) store->backend->close(store);
}

const char *fwm__store_status_name(fwm__store_status status) {
    static const char *const names[] = {"ok",      "not found",         "full",          "input/output error",
                                        "corrupt", "busy",              "version mismatch", "out of memory",
                                        "fenced",  "store lost its data"};
    return (unsigned)status < sizeof names / sizeof names[0] ? names[status] : "unknown";
}
