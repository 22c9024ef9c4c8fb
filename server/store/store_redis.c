/* store_redis.c - the Redis session store (store.h), for several fwm-serve nodes sharing sessions
 * (docs/CLUSTER.md), and the cluster's leases and node registry kept beside it (cluster.h).
 *
 * Location: redis://HOST:PORT[/DB] or unix:/PATH[?db=N]. Keys (ids in hex, so a session's keys
 * read well in redis-cli and sort like the ids):
 *   fwm:format         "fwm-session-store 1"
 *   fwm:sessions       sorted set of every stored id (score 0: listed in id order with ZRANGEBYLEX)
 *   fwm:meta:ID        the meta record
 *   fwm:snap:ID        the snapshot record
 *   fwm:log:ID         sorted set: score seq, member 8-byte big-endian seq + log record
 *   fwm:owner:ID       cluster: the token (EPOCH|ADDRESS) of the node that owns the session
 *   fwm:node:ADDRESS   cluster: that node's token, with a TTL (its lease, renewed while it lives)
 *   fwm:nodes          cluster: set of addresses that registered (listing drops the dead ones)
 *   fwm:epoch          cluster: counter of node incarnations (the fencing epochs)
 *   fwm:incarnation    a random value written when the store is created: a node that finds it gone
 *                      or changed knows the store lost its data (Redis restarted empty, a flush)
 * A write batch is gathered in memory and committed as one EVALSHA of a Lua script: Redis runs a
 * script atomically (and writes its effects to the AOF as one transaction), so a batch is all or
 * nothing, like an LMDB commit. In cluster mode the same script first checks that this node's lease
 * is alive and that it owns every session it writes for (fencing): a node that lost its lease can
 * never write again.
 *
 * Connections: one for the write batch (one writer at a time), a few for reading (any thread). A
 * connection that fails is dropped and reopened on next use, with a backoff (100 ms doubling to
 * 2 s) during which uses fail at once with the last error; every command has a timeout.
 * `sync` does nothing: a batch is acknowledged by Redis after it applied it, and it is on disk when
 * Redis runs with appendonly yes and appendfsync always (docs/CLUSTER.md).
 */
#include <errno.h>
#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "cluster.h"
#include "fwm_alloc.h"
#include "store.h"

#define FORMAT_VALUE "fwm-session-store 1"
#define READERS 4
#define CONNECT_TIMEOUT_MS 1000
#define COMMAND_TIMEOUT_MS 5000
#define BACKOFF_FIRST_MS 100
#define BACKOFF_MAX_MS 2000
#define LIST_PAGE 256
#define HEX_BYTES (2 * FWM_STORE_ID_BYTES)

/* One Redis connection and its reconnection state, used under its mutex. */
typedef struct connection {
    pthread_mutex_t mutex;
    redisContext *context;
    uint64_t retry_at_ns; /* no attempt before this */
    unsigned backoff_ms;
    char last_error[200];
} connection;

/* One argument of the batch script: bytes owned by the caller (valid until commit) or in `scratch`. */
typedef struct argument {
    const char *pointer; /* NULL: at `offset` in scratch */
    size_t offset, length;
} argument;

typedef struct redis_store {
    fwm__store base;
    char location[512];
    char host[256];
    int port;
    char socket_path[400];
    int db;
    uint64_t limit_bytes;
    connection writer;
    connection readers[READERS];
    unsigned next_reader;
    pthread_mutex_t reader_pick;
    char batch_sha[41], claim_sha[41];
    /* the open batch */
    bool open;
    argument *args;
    size_t arg_count, arg_capacity;
    char *scratch;
    size_t scratch_length, scratch_capacity;
    bool oom;
    /* cluster mode: this node's token (EPOCH|ADDRESS) and lease key; "" when not a cluster */
    pthread_mutex_t token_mutex;
    char token[300];
    char node_key[300];
    char address[256];
    char incarnation[64]; /* (token_mutex) fwm:incarnation as this node last saw it */
} redis_store;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

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

static void to_hex(const uint8_t *id, char out[HEX_BYTES + 1]) {
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < FWM_STORE_ID_BYTES; i++) {
        out[2 * i] = digits[id[i] >> 4];
        out[2 * i + 1] = digits[id[i] & 15];
    }
    out[HEX_BYTES] = '\0';
}

static bool from_hex(const char *hex, size_t length, uint8_t id[FWM_STORE_ID_BYTES]) {
    if (length != HEX_BYTES) return false;
    for (int i = 0; i < HEX_BYTES; i++) {
        char c = hex[i];
        int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (v < 0) return false;
        if (i % 2 == 0) id[i / 2] = (uint8_t)(v << 4);
        else id[i / 2] |= (uint8_t)v;
    }
    return true;
}

/* ---- connections ---- */

/* The scripts. The batch: ARGV[1] this node's current token ("" outside a cluster), ARGV[2] its lease
 * key, then operations: M id bytes | S id bytes | L id seq member-prefix bytes | D id min max | R id,
 * and T token: the operations after it were made under that token (the epoch of the session copy
 * that made them; "" or none: the current token). Outside a cluster ARGV[2] is instead the store's
 * incarnation marker as this node opened it: a store that lost its data since takes no write. In a cluster every operation's token must still be
 * the node's lease, and must own the operation's session: a copy of a session loaded under an older
 * epoch can never write, even after this node claimed the session again under a newer one. */
static const char BATCH_SCRIPT[] =
    "local current, n = ARGV[1], #ARGV\n"
    "if current == '' and ARGV[2] ~= '' and redis.call('GET', 'fwm:incarnation') ~= ARGV[2] then\n"
    "  return redis.error_reply('LOST its marker fwm:incarnation is gone or changed')\n"
    "end\n"
    "if current ~= '' then\n"
    "  local lease = redis.call('GET', ARGV[2])\n"
    "  local seen, stale, token, i = {}, lease ~= current, current, 3\n"
    "  while i <= n do\n"
    "    local op, id = ARGV[i], ARGV[i + 1]\n"
    "    if op == 'T' then\n"
    "      token = id ~= '' and id or current\n"
    "      if token ~= lease then stale = true end\n"
    "      i = i + 2\n"
    "    else\n"
    "      if not seen[token .. ' ' .. id] then\n"
    "        seen[token .. ' ' .. id] = true\n"
    "        local owner = redis.call('GET', 'fwm:owner:' .. id)\n"
    "        if owner == false then\n"
    "          if redis.call('EXISTS', 'fwm:meta:' .. id) == 1 then\n"
    "            return redis.error_reply('FENCED - session ' .. id .. ' is not owned by this node') end\n"
    "        elseif owner ~= token then\n"
    "          if owner == current then\n"
    "            return redis.error_reply('FENCED - session ' .. id .. ' was claimed again since "
    "this copy of it was loaded') end\n"
    "          return redis.error_reply('FENCED ' .. string.sub(owner, string.find(owner, '|', 1, true) + 1) ..\n"
    "            ' session ' .. id .. ' is owned by another node')\n"
    "        end\n"
    "      end\n"
    "      if op == 'L' or op == 'D' then i = i + (op == 'L' and 5 or 4) elseif op == 'R' then "
    "i = i + 2 else i = i + 3 end\n"
    "    end\n"
    "  end\n"
    "  if stale then return redis.error_reply('FENCED - this node lost its lease') end\n"
    "end\n"
    "local token, i = current, 3\n"
    "while i <= n do\n"
    "  local op, id = ARGV[i], ARGV[i + 1]\n"
    "  if op == 'T' then\n"
    "    token = id ~= '' and id or current\n"
    "    i = i + 2\n"
    "  elseif op == 'M' then\n"
    "    redis.call('SET', 'fwm:meta:' .. id, ARGV[i + 2])\n"
    "    redis.call('ZADD', 'fwm:sessions', 0, id)\n"
    "    if current ~= '' then redis.call('SET', 'fwm:owner:' .. id, token) end\n"
    "    i = i + 3\n"
    "  elseif op == 'S' then\n"
    "    redis.call('SET', 'fwm:snap:' .. id, ARGV[i + 2])\n"
    "    i = i + 3\n"
    "  elseif op == 'L' then\n"
    "    redis.call('ZREMRANGEBYSCORE', 'fwm:log:' .. id, ARGV[i + 2], ARGV[i + 2])\n"
    "    redis.call('ZADD', 'fwm:log:' .. id, ARGV[i + 2], ARGV[i + 3] .. ARGV[i + 4])\n"
    "    i = i + 5\n"
    "  elseif op == 'D' then\n"
    "    redis.call('ZREMRANGEBYSCORE', 'fwm:log:' .. id, ARGV[i + 2], ARGV[i + 3])\n"
    "    i = i + 4\n"
    "  elseif op == 'R' then\n"
    "    redis.call('DEL', 'fwm:meta:' .. id, 'fwm:snap:' .. id, 'fwm:log:' .. id, 'fwm:owner:' .. id)\n"
    "    redis.call('ZREM', 'fwm:sessions', id)\n"
    "    i = i + 2\n"
    "  else\n"
    "    return redis.error_reply('ERR unknown operation ' .. op)\n"
    "  end\n"
    "end\n"
    "return 1\n";

/* Claim a session for this node: ARGV token, lease key, id. Replies {what, address}: 'lost' (this
 * node's lease is gone), 'none' (not stored), 'mine', 'taken' (its owner's lease had expired, or it
 * had none: now this node's), 'moved' (owned by the live node at address). */
static const char CLAIM_SCRIPT[] =
    "local token, id = ARGV[1], ARGV[3]\n"
    "if redis.call('GET', ARGV[2]) ~= token then return {'lost', ''} end\n"
    "if redis.call('EXISTS', 'fwm:meta:' .. id) == 0 then return {'none', ''} end\n"
    "local owner = redis.call('GET', 'fwm:owner:' .. id)\n"
    "if owner == token then return {'mine', ''} end\n"
    "if owner then\n"
    "  local address = string.sub(owner, string.find(owner, '|', 1, true) + 1)\n"
    "  if redis.call('GET', 'fwm:node:' .. address) == owner then return {'moved', address} end\n"
    "end\n"
    "redis.call('SET', 'fwm:owner:' .. id, token)\n"
    "return {'taken', owner or ''}\n";

static void connection_init(connection *c) {
    pthread_mutex_init(&c->mutex, NULL);
    c->context = NULL;
    c->retry_at_ns = 0;
    c->backoff_ms = 0;
    c->last_error[0] = '\0';
}

static void connection_drop(connection *c, const char *why) {
    if (c->context) redisFree(c->context);
    c->context = NULL;
    snprintf(c->last_error, sizeof c->last_error, "%s", why);
    c->backoff_ms = c->backoff_ms ? c->backoff_ms * 2 : BACKOFF_FIRST_MS;
    if (c->backoff_ms > BACKOFF_MAX_MS) c->backoff_ms = BACKOFF_MAX_MS;
    c->retry_at_ns = now_ns() + (uint64_t)c->backoff_ms * 1000000u;
}

/* A live context, (re)connecting when needed and allowed. */
static redisContext *connection_get(redis_store *s, connection *c, fwm__store_error *error) {
    if (c->context) return c->context;
    uint64_t now = now_ns();
    if (now < c->retry_at_ns) {
        fail(error, FWM_STORE_IO, "%s: Redis is unreachable: %s (next attempt in %llu ms)", s->location,
             c->last_error, (unsigned long long)((c->retry_at_ns - now) / 1000000u));
        return NULL;
    }
    struct timeval connect_timeout = {CONNECT_TIMEOUT_MS / 1000, (CONNECT_TIMEOUT_MS % 1000) * 1000};
    struct timeval command_timeout = {COMMAND_TIMEOUT_MS / 1000, (COMMAND_TIMEOUT_MS % 1000) * 1000};
    redisContext *ctx = s->socket_path[0] ? redisConnectUnixWithTimeout(s->socket_path, connect_timeout)
                                          : redisConnectWithTimeout(s->host, s->port, connect_timeout);
    if (!ctx || ctx->err) {
        char why[200];
        snprintf(why, sizeof why, "cannot connect: %s", ctx ? ctx->errstr : "out of memory");
        if (ctx) redisFree(ctx);
        connection_drop(c, why);
        fail(error, FWM_STORE_IO, "%s: Redis is unreachable: %s", s->location, why);
        return NULL;
    }
    redisSetTimeout(ctx, command_timeout);
    if (s->db) {
        redisReply *r = redisCommand(ctx, "SELECT %d", s->db);
        bool ok = r && r->type == REDIS_REPLY_STATUS;
        char why[200];
        snprintf(why, sizeof why, "cannot select database %d: %s", s->db,
                 r && r->type == REDIS_REPLY_ERROR ? r->str : ctx->errstr[0] ? ctx->errstr : "no reply");
        if (r) freeReplyObject(r);
        if (!ok) {
            redisFree(ctx);
            connection_drop(c, why);
            fail(error, FWM_STORE_IO, "%s: %s", s->location, why);
            return NULL;
        }
    }
    c->context = ctx; /* the backoff starts again once a command is answered, not at a connection: a
                         Redis that accepts connections but answers nothing keeps backing off */
    return ctx;
}

/* Run one command on the connection (its mutex held). NULL with `error` filled when there is no
 * reply (the connection is then dropped) or the reply is an error (returned status in *status). */
static redisReply *command(redis_store *s, connection *c, int argc, const char **argv, const size_t *lengths,
                           fwm__store_status *status, const char *doing, fwm__store_error *error) {
    redisReply *r = NULL;
    bool maybe_sent = false; /* an attempt went out without an answer: Redis may run it yet */
    /* A connection that served before may have been cut meanwhile (Redis restarted): one new
     * connection and one more try, at once. Every command the store sends may be repeated (a batch
     * rewrites the same keys and log seqs), so a reply lost on the way does no harm. */
    for (int attempt = 0; attempt < 2 && !r; attempt++) {
        bool was_open = c->context != NULL;
        redisContext *ctx = connection_get(s, c, error);
        if (!ctx) {
            *status = FWM_STORE_IO;
            if (error && maybe_sent) error->maybe_applied = true;
            return NULL;
        }
        r = redisCommandArgv(ctx, argc, argv, lengths);
        if (r) {
            c->backoff_ms = 0;
            break;
        }
        maybe_sent = true;
        char why[200];
        bool timed_out = ctx->err == REDIS_ERR_IO && (errno == EAGAIN || errno == EWOULDBLOCK);
        snprintf(why, sizeof why, "%s", ctx->errstr[0] ? ctx->errstr : "connection lost");
        if (timed_out) snprintf(why, sizeof why, "no answer within %d ms", COMMAND_TIMEOUT_MS);
        connection_drop(c, why);
        if (was_open && !timed_out && attempt == 0) {
            c->retry_at_ns = 0;
            continue;
        }
        *status = FWM_STORE_IO;
        fail(error, FWM_STORE_IO, "%s: %s: Redis is unreachable: %s", s->location, doing, why);
        if (error) error->maybe_applied = true;
        return NULL;
    }
    if (r->type == REDIS_REPLY_ERROR) {
        *status = strncmp(r->str, "OOM", 3) == 0     ? FWM_STORE_FULL
                  : strncmp(r->str, "FENCED", 6) == 0 ? FWM_STORE_FENCED
                  : strncmp(r->str, "LOST", 4) == 0   ? FWM_STORE_LOST
                                                      : FWM_STORE_IO;
        if (*status == FWM_STORE_LOST) {
            if (error)
                fail(error, FWM_STORE_LOST, "%s: the store lost its data (%s: Redis restarted empty, or was "
                     "flushed): the sessions stored there are gone, and nothing more is written to it until "
                     "fwm-serve is restarted (which starts a new store there)", s->location, r->str + 5);
            freeReplyObject(r);
            return NULL;
        }
        if (error) {
            fail(error, *status, "%s: %s: Redis answered: %s%s", s->location, doing, r->str,
                 *status == FWM_STORE_FULL ? " (Redis reached its maxmemory)" : "");
            error->owner[0] = '\0';
            if (*status == FWM_STORE_FENCED && strncmp(r->str, "FENCED ", 7) == 0 && r->str[7] != '-') {
                size_t n = strcspn(r->str + 7, " ");
                if (n < sizeof error->owner) {
                    memcpy(error->owner, r->str + 7, n);
                    error->owner[n] = '\0';
                }
            }
        }
        freeReplyObject(r);
        return NULL;
    }
    *status = FWM_STORE_OK;
    return r;
}

/* A command of NUL-terminated strings. */
static redisReply *command_strings(redis_store *s, connection *c, int argc, const char **argv,
                                   fwm__store_status *status, const char *doing, fwm__store_error *error) {
    size_t lengths[16];
    for (int i = 0; i < argc && i < 16; i++) lengths[i] = strlen(argv[i]);
    return command(s, c, argc, argv, lengths, status, doing, error);
}

/* Run a script by its sha, loading it again when Redis lost its script cache (a restart). */
static redisReply *run_script(redis_store *s, connection *c, char *sha, const char *source, int argc,
                              const char **argv, size_t *lengths, fwm__store_status *status, const char *doing,
                              fwm__store_error *error) {
    for (int attempt = 0; attempt < 2; attempt++) {
        argv[0] = "EVALSHA";
        lengths[0] = 7;
        argv[1] = sha;
        lengths[1] = 40;
        argv[2] = "0";
        lengths[2] = 1;
        fwm__store_error local = {0};
        redisReply *r = command(s, c, argc, argv, lengths, status, doing, &local);
        if (r || *status != FWM_STORE_IO || strstr(local.message, "NOSCRIPT") == NULL) {
            if (!r && error) *error = local;
            return r;
        }
        const char *load[3] = {"SCRIPT", "LOAD", source};
        redisReply *loaded = command_strings(s, c, 3, load, status, "cannot load a script", error);
        if (!loaded) return NULL;
        bool ok = loaded->type == REDIS_REPLY_STRING && loaded->len == 40;
        if (ok) memcpy(sha, loaded->str, 41);
        freeReplyObject(loaded);
        if (!ok) {
            *status = FWM_STORE_IO;
            fail(error, FWM_STORE_IO, "%s: SCRIPT LOAD gave no sha", s->location);
            return NULL;
        }
    }
    return NULL;
}

static connection *reader_take(redis_store *s) {
    pthread_mutex_lock(&s->reader_pick);
    unsigned first = s->next_reader++;
    pthread_mutex_unlock(&s->reader_pick);
    for (unsigned i = 0; i < READERS; i++) {
        connection *c = &s->readers[(first + i) % READERS];
        if (pthread_mutex_trylock(&c->mutex) == 0) return c;
    }
    connection *c = &s->readers[first % READERS];
    pthread_mutex_lock(&c->mutex);
    return c;
}

static void reader_give(connection *c) {
    pthread_mutex_unlock(&c->mutex);
}

/* ---- open / close ---- */

static void redis_close(fwm__store *base) {
    redis_store *s = (redis_store *)base;
    if (!s) return;
    if (s->writer.context) redisFree(s->writer.context);
    pthread_mutex_destroy(&s->writer.mutex);
    for (int i = 0; i < READERS; i++) {
        if (s->readers[i].context) redisFree(s->readers[i].context);
        pthread_mutex_destroy(&s->readers[i].mutex);
    }
    pthread_mutex_destroy(&s->reader_pick);
    pthread_mutex_destroy(&s->token_mutex);
    fwm__free(s->args);
    fwm__free(s->scratch);
    fwm__free(s);
}

/* redis://HOST:PORT[/DB] or unix:/PATH[?db=N]. */
static bool parse_location(redis_store *s, const char *location, fwm__store_error *error) {
    char *end;
    if (strncmp(location, "redis://", 8) == 0) {
        const char *host = location + 8, *colon = strrchr(host, ':');
        if (!colon || colon == host || (size_t)(colon - host) >= sizeof s->host) {
            fail(error, FWM_STORE_IO, "%s: expected redis://HOST:PORT[/DB]", location);
            return false;
        }
        memcpy(s->host, host, (size_t)(colon - host));
        s->host[colon - host] = '\0';
        if (s->host[0] == '[' && s->host[strlen(s->host) - 1] == ']') { /* [::1] */
            memmove(s->host, s->host + 1, strlen(s->host));
            s->host[strlen(s->host) - 1] = '\0';
        }
        long port = strtol(colon + 1, &end, 10);
        if (end == colon + 1 || port < 1 || port > 65535 || (*end && *end != '/')) {
            fail(error, FWM_STORE_IO, "%s: the port must be a number from 1 to 65535", location);
            return false;
        }
        s->port = (int)port;
        if (*end == '/') {
            const char *db = end + 1;
            long n = strtol(db, &end, 10);
            if (end == db || *end || n < 0 || n > 100000) {
                fail(error, FWM_STORE_IO, "%s: the database must be a number (redis://HOST:PORT/DB)", location);
                return false;
            }
            s->db = (int)n;
        }
        return true;
    }
    if (strncmp(location, "unix:", 5) == 0) {
        const char *path = location + 5, *query = strchr(path, '?');
        size_t n = query ? (size_t)(query - path) : strlen(path);
        if (n == 0 || n >= sizeof s->socket_path) {
            fail(error, FWM_STORE_IO, "%s: expected unix:/PATH[?db=N]", location);
            return false;
        }
        memcpy(s->socket_path, path, n);
        s->socket_path[n] = '\0';
        if (query) {
            long db = strncmp(query, "?db=", 4) == 0 ? strtol(query + 4, &end, 10) : -1;
            if (db < 0 || db > 100000 || end == query + 4 || *end) {
                fail(error, FWM_STORE_IO, "%s: expected ?db=N after the socket path", location);
                return false;
            }
            s->db = (int)db;
        }
        return true;
    }
    fail(error, FWM_STORE_IO, "%s: not a Redis location (redis://HOST:PORT[/DB] or unix:/PATH[?db=N])", location);
    return false;
}

static fwm__store_status load_scripts(redis_store *s, fwm__store_error *error) {
    const char *sources[2] = {BATCH_SCRIPT, CLAIM_SCRIPT};
    char *shas[2] = {s->batch_sha, s->claim_sha};
    for (int i = 0; i < 2; i++) {
        const char *argv[3] = {"SCRIPT", "LOAD", sources[i]};
        fwm__store_status status;
        redisReply *r = command_strings(s, &s->writer, 3, argv, &status, "cannot load a script", error);
        if (!r) return status;
        bool ok = r->type == REDIS_REPLY_STRING && r->len == 40;
        if (ok) memcpy(shas[i], r->str, 41);
        freeReplyObject(r);
        if (!ok) return fail(error, FWM_STORE_IO, "%s: SCRIPT LOAD gave no sha", s->location);
    }
    return FWM_STORE_OK;
}

/* A new store's fencing epochs start at its clock in milliseconds (Redis' TIME), so that they stay
 * above any an earlier store at the same place handed out before it lost its data. */
#define FLOOR_EPOCH_LUA                                                                                      \
    "local function floor_epoch()\n"                                                                          \
    "  local t = redis.call('TIME')\n"                                                                        \
    "  local ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"                                 \
    "  if tonumber(redis.call('GET', 'fwm:epoch') or '0') < ms then\n"                                         \
    "    redis.call('SET', 'fwm:epoch', string.format('%.0f', ms)) end\n"                                       \
    "end\n"

/* The format key, written on first use and checked later, and the store's incarnation marker
 * (ARGV[2] when there is none yet). Returns {'format', FOUND} or {'ok', INCARNATION}. */
static const char OPEN_SCRIPT[] = FLOOR_EPOCH_LUA
    "local f = redis.call('GET', 'fwm:format')\n"
    "if f and f ~= ARGV[1] then return {'format', f} end\n"
    "if not f then redis.call('SET', 'fwm:format', ARGV[1]) end\n"
    "local inc = redis.call('GET', 'fwm:incarnation')\n"
    "if not inc then inc = ARGV[2]; redis.call('SET', 'fwm:incarnation', inc); floor_epoch() end\n"
    "return {'ok', inc}\n";

/* A value no other store incarnation has: 16 random bytes in hex (the clock's, if the kernel has none). */
static void new_incarnation(char out[33]) {
    uint8_t bytes[16];
    if (getrandom(bytes, sizeof bytes, 0) != (ssize_t)sizeof bytes) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t a = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec, b = now_ns() ^ (uint64_t)getpid();
        memcpy(bytes, &a, 8);
        memcpy(bytes + 8, &b, 8);
    }
    to_hex(bytes, out);
}

static fwm__store_status check_format(redis_store *s, fwm__store_error *error) {
    char incarnation[33];
    new_incarnation(incarnation);
    const char *argv[5] = {"EVAL", OPEN_SCRIPT, "0", FORMAT_VALUE, incarnation};
    fwm__store_status status;
    redisReply *r = command_strings(s, &s->writer, 5, argv, &status, "cannot read the store's format", error);
    if (!r) return status;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 || r->element[0]->type != REDIS_REPLY_STRING ||
        r->element[1]->type != REDIS_REPLY_STRING) {
        freeReplyObject(r);
        return fail(error, FWM_STORE_IO, "%s: unexpected answer when reading the store's format", s->location);
    }
    const redisReply *value = r->element[1];
    if (strcmp(r->element[0]->str, "format") == 0) {
        int n = (int)(value->len > 64 ? 64 : value->len);
        fail(error, FWM_STORE_VERSION, "%s: written in format '%.*s', this fwm-serve reads '%s'", s->location, n,
             value->str, FORMAT_VALUE);
        freeReplyObject(r);
        return FWM_STORE_VERSION;
    }
    snprintf(s->incarnation, sizeof s->incarnation, "%.*s", (int)(value->len < 63 ? value->len : 63), value->str);
    freeReplyObject(r);
    return FWM_STORE_OK;
}

/* One value of CONFIG GET, or "" when Redis does not say (CONFIG may be renamed away). */
static void config_get(redis_store *s, const char *name, char *out, size_t size) {
    const char *argv[3] = {"CONFIG", "GET", name};
    fwm__store_status status;
    out[0] = '\0';
    redisReply *r = command_strings(s, &s->writer, 3, argv, &status, "CONFIG GET", NULL);
    if (!r) return;
    if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 && r->element[1]->type == REDIS_REPLY_STRING)
        snprintf(out, size, "%s", r->element[1]->str);
    freeReplyObject(r);
}

static fwm__store_status redis_open(const char *location, const fwm__store_options *options, fwm__store **out,
                                    fwm__store_error *error) {
    *out = NULL;
    if (strlen(location) >= 480)
        return fail(error, FWM_STORE_IO, "Redis location too long (%zu bytes)", strlen(location));
    redis_store *s = fwm__calloc(1, sizeof *s);
    if (!s) return fail(error, FWM_STORE_NO_MEMORY, "out of memory opening the store");
    s->base.backend = &fwm__store_redis;
    snprintf(s->location, sizeof s->location, "%s", location);
    connection_init(&s->writer);
    for (int i = 0; i < READERS; i++) connection_init(&s->readers[i]);
    pthread_mutex_init(&s->reader_pick, NULL);
    pthread_mutex_init(&s->token_mutex, NULL);
    s->limit_bytes = options && options->map_bytes ? options->map_bytes : 0;
    if (!parse_location(s, location, error)) {
        redis_close(&s->base);
        return FWM_STORE_IO;
    }
    fwm__store_status status = check_format(s, error);
    if (status == FWM_STORE_OK) status = load_scripts(s, error);
    if (status != FWM_STORE_OK) {
        redis_close(&s->base);
        return status;
    }
    if (options && options->durable_writes) { /* say when Redis does not put what it acknowledges on disk */
        char aof[32], fsync[32];
        config_get(s, "appendonly", aof, sizeof aof);
        config_get(s, "appendfsync", fsync, sizeof fsync);
        if (strcmp(aof, "yes") != 0 || strcmp(fsync, "always") != 0)
            fprintf(stderr,
                    "fwm-serve: WARNING: %s runs with appendonly %s, appendfsync %s: what it acknowledges is not "
                    "on disk at once (--fsync always needs appendonly yes and appendfsync always; docs/CLUSTER.md)\n",
                    location, aof[0] ? aof : "(unknown)", fsync[0] ? fsync : "(unknown)");
    }
    *out = &s->base;
    return FWM_STORE_OK;
}

/* ---- the write batch ---- */

static fwm__store_status redis_begin(fwm__store *base, fwm__store_error *error) {
    redis_store *s = (redis_store *)base;
    if (s->open) return fail(error, FWM_STORE_IO, "a write batch is already open");
    s->open = true;
    s->arg_count = 0;
    s->scratch_length = 0;
    s->oom = false;
    return FWM_STORE_OK;
}

static argument *push_arg(redis_store *s) {
    if (s->arg_count == s->arg_capacity) {
        size_t capacity = s->arg_capacity ? 2 * s->arg_capacity : 64;
        argument *grown = fwm__realloc(s->args, capacity * sizeof *grown);
        if (!grown) {
            s->oom = true;
            return NULL;
        }
        s->args = grown;
        s->arg_capacity = capacity;
    }
    return &s->args[s->arg_count++];
}

/* An argument the caller keeps alive until commit. */
static void arg_bytes(redis_store *s, const void *bytes, size_t length) {
    argument *a = push_arg(s);
    if (a) *a = (argument){bytes ? (const char *)bytes : "", 0, length};
}

/* An argument copied into scratch. */
static void arg_copy(redis_store *s, const void *bytes, size_t length) {
    if (s->scratch_length + length > s->scratch_capacity) {
        size_t capacity = s->scratch_capacity ? s->scratch_capacity : 4096;
        while (capacity < s->scratch_length + length) capacity *= 2;
        char *grown = fwm__realloc(s->scratch, capacity);
        if (!grown) {
            s->oom = true;
            return;
        }
        s->scratch = grown;
        s->scratch_capacity = capacity;
    }
    argument *a = push_arg(s);
    if (!a) return;
    *a = (argument){NULL, s->scratch_length, length};
    memcpy(s->scratch + s->scratch_length, bytes, length);
    s->scratch_length += length;
}

static void arg_text(redis_store *s, const char *text) {
    arg_copy(s, text, strlen(text));
}

static void arg_id(redis_store *s, const uint8_t *id) {
    char hex[HEX_BYTES + 1];
    to_hex(id, hex);
    arg_copy(s, hex, HEX_BYTES);
}

static fwm__store_status batch_state(redis_store *s, fwm__store_error *error) {
    if (!s->open) return fail(error, FWM_STORE_IO, "no write batch is open");
    if (s->oom) return fail(error, FWM_STORE_NO_MEMORY, "out of memory gathering a write batch");
    return FWM_STORE_OK;
}

static fwm__store_status redis_put_meta(fwm__store *base, const uint8_t *id, const void *bytes, size_t length,
                                        fwm__store_error *error) {
    redis_store *s = (redis_store *)base;
    arg_text(s, "M");
    arg_id(s, id);
    arg_bytes(s, bytes, length);
    return batch_state(s, error);
}

static fwm__store_status redis_put_snapshot(fwm__store *base, const uint8_t *id, const void *bytes, size_t length,
                                            fwm__store_error *error) {
    redis_store *s = (redis_store *)base;
    arg_text(s, "S");
    arg_id(s, id);
    arg_bytes(s, bytes, length);
    return batch_state(s, error);
}

static fwm__store_status redis_append_log(fwm__store *base, const uint8_t *id, uint64_t seq, const void *bytes,
                                          size_t length, fwm__store_error *error) {
    redis_store *s = (redis_store *)base;
    char number[24];
    uint8_t prefix[8];
    for (int i = 0; i < 8; i++) prefix[i] = (uint8_t)(seq >> (56 - 8 * i));
    snprintf(number, sizeof number, "%llu", (unsigned long long)seq);
    arg_text(s, "L");
    arg_id(s, id);
    arg_text(s, number);
    arg_copy(s, prefix, sizeof prefix);
    arg_bytes(s, bytes, length);
    return batch_state(s, error);
}

static fwm__store_status redis_delete_log(fwm__store *base, const uint8_t *id, uint64_t from, uint64_t below,
                                          fwm__store_error *error) {
    redis_store *s = (redis_store *)base;
    char low[24], high[32];
    snprintf(low, sizeof low, "%llu", (unsigned long long)from);
    if (below == UINT64_MAX) snprintf(high, sizeof high, "+inf");
    else snprintf(high, sizeof high, "(%llu", (unsigned long long)below);
    arg_text(s, "D");
    arg_id(s, id);
    arg_text(s, low);
    arg_text(s, high);
    return batch_state(s, error);
}

static fwm__store_status redis_remove(fwm__store *base, const uint8_t *id, fwm__store_error *error) {
    redis_store *s = (redis_store *)base;
    arg_text(s, "R");
    arg_id(s, id);
    return batch_state(s, error);
}

/* Cluster: the operations that follow were made under `epoch` (0: under the current token). The
 * token is sent as it was then, never the current one: the script refuses it once it is stale. */
static fwm__store_status redis_writer_epoch(fwm__store *base, uint64_t epoch, fwm__store_error *error) {
    redis_store *s = (redis_store *)base;
    char token[sizeof s->token] = "";
    if (epoch) {
        pthread_mutex_lock(&s->token_mutex);
        snprintf(token, sizeof token, "%llu|%s", (unsigned long long)epoch, s->address);
        pthread_mutex_unlock(&s->token_mutex);
    }
    arg_text(s, "T");
    arg_text(s, token);
    return batch_state(s, error);
}

static void redis_abort(fwm__store *base) {
    redis_store *s = (redis_store *)base;
    s->open = false;
    s->arg_count = 0;
    s->scratch_length = 0;
}

static fwm__store_status redis_commit(fwm__store *base, fwm__store_error *error) {
    redis_store *s = (redis_store *)base;
    fwm__store_status status = batch_state(s, error);
    if (status != FWM_STORE_OK) {
        redis_abort(base);
        return status;
    }
    size_t argc = s->arg_count + 5;
    const char **argv = fwm__malloc(argc * sizeof *argv);
    size_t *lengths = fwm__malloc(argc * sizeof *lengths);
    if (!argv || !lengths) {
        fwm__free(argv);
        fwm__free(lengths);
        redis_abort(base);
        return fail(error, FWM_STORE_NO_MEMORY, "out of memory sending a write batch");
    }
    pthread_mutex_lock(&s->token_mutex);
    char token[sizeof s->token], node_key[sizeof s->node_key];
    memcpy(token, s->token, sizeof token);
    memcpy(node_key, s->node_key, sizeof node_key);
    pthread_mutex_unlock(&s->token_mutex);
    argv[3] = token;
    lengths[3] = strlen(token);
    argv[4] = node_key;
    lengths[4] = strlen(node_key);
    char incarnation[sizeof s->incarnation];
    if (!token[0]) { /* not a cluster: the write goes only into the store this node opened */
        pthread_mutex_lock(&s->token_mutex);
        memcpy(incarnation, s->incarnation, sizeof incarnation);
        pthread_mutex_unlock(&s->token_mutex);
        argv[4] = incarnation;
        lengths[4] = strlen(incarnation);
    }
    for (size_t i = 0; i < s->arg_count; i++) {
        const argument *a = &s->args[i];
        argv[5 + i] = a->pointer ? a->pointer : s->scratch + a->offset;
        lengths[5 + i] = a->length;
    }
    pthread_mutex_lock(&s->writer.mutex);
    redisReply *r = run_script(s, &s->writer, s->batch_sha, BATCH_SCRIPT, (int)argc, argv, lengths, &status,
                               "cannot write a batch", error);
    pthread_mutex_unlock(&s->writer.mutex);
    if (r) freeReplyObject(r);
    fwm__free(argv);
    fwm__free(lengths);
    redis_abort(base);
    return status;
}

/* Redis acknowledges a batch after applying it; whether that is on disk is its appendfsync's say. */
static fwm__store_status redis_sync(fwm__store *base, fwm__store_error *error) {
    (void)base, (void)error;
    return FWM_STORE_OK;
}

static fwm__store_status redis_free_reserve(fwm__store *base, fwm__store_error *error) {
    (void)base, (void)error;
    return FWM_STORE_NOT_FOUND;
}

/* A number from an INFO reply ("name:value" lines), or 0. */
static uint64_t info_field(const char *text, const char *name) {
    size_t n = strlen(name);
    for (const char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
        if (strncmp(line, name, n) == 0 && line[n] == ':') return strtoull(line + n + 1, NULL, 10);
    return 0;
}

static fwm__store_status memory_used(redis_store *s, connection *c, uint64_t *used, uint64_t *maxmemory,
                                     uint64_t *aof_bytes, fwm__store_error *error) {
    const char *argv[2] = {"INFO", "memory"};
    fwm__store_status status;
    redisReply *r = command_strings(s, c, 2, argv, &status, "cannot read Redis' memory use", error);
    if (!r) return status;
    if (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS) {
        *used = info_field(r->str, "used_memory");
        *maxmemory = info_field(r->str, "maxmemory");
    }
    freeReplyObject(r);
    if (aof_bytes) {
        const char *argv2[2] = {"INFO", "persistence"};
        r = command_strings(s, c, 2, argv2, &status, "cannot read Redis' persistence", error);
        if (!r) return status;
        if (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS)
            *aof_bytes = info_field(r->str, "aof_current_size");
        freeReplyObject(r);
    }
    return FWM_STORE_OK;
}

/* Redis answers again, with room for `bytes` more under its maxmemory and --store-max-bytes. */
static fwm__store_status redis_probe(fwm__store *base, size_t bytes, fwm__store_error *error) {
    redis_store *s = (redis_store *)base;
    uint64_t used = 0, max = 0;
    connection *c = reader_take(s); /* not the writer's: a write batch must not wait for a probe */
    fwm__store_status status = memory_used(s, c, &used, &max, NULL, error);
    char token[sizeof s->token], incarnation[sizeof s->incarnation];
    pthread_mutex_lock(&s->token_mutex);
    memcpy(token, s->token, sizeof token);
    memcpy(incarnation, s->incarnation, sizeof incarnation);
    pthread_mutex_unlock(&s->token_mutex);
    if (status == FWM_STORE_OK && !token[0]) { /* not a cluster: the store it opened must still be there */
        const char *argv[2] = {"GET", "fwm:incarnation"};
        redisReply *r = command_strings(s, c, 2, argv, &status, "cannot read the store's marker", error);
        if (r && (r->type != REDIS_REPLY_STRING || strcmp(r->str, incarnation) != 0))
            status = fail(error, FWM_STORE_LOST, "%s: the store lost its data (its marker fwm:incarnation is gone or "
                          "changed: Redis restarted empty, or was flushed): the sessions stored there are gone, and "
                          "nothing more is written to it until fwm-serve is restarted", s->location);
        if (r) freeReplyObject(r);
    }
    reader_give(c);
    if (status != FWM_STORE_OK) return status;
    if (max && used + bytes > max)
        return fail(error, FWM_STORE_FULL, "%s: Redis uses %llu bytes of its maxmemory %llu", s->location,
                    (unsigned long long)used, (unsigned long long)max);
    if (s->limit_bytes && used + bytes > s->limit_bytes)
        return fail(error, FWM_STORE_FULL, "%s: Redis uses %llu bytes, --store-max-bytes is %llu", s->location,
                    (unsigned long long)used, (unsigned long long)s->limit_bytes);
    return FWM_STORE_OK;
}

/* ---- reading ---- */

/* GET key into a caller-grown buffer. */
static fwm__store_status get_value(redis_store *s, const char *key, void **buffer, size_t *capacity, size_t *length,
                                   const char *doing, fwm__store_error *error) {
    const char *argv[2] = {"GET", key};
    fwm__store_status status;
    connection *c = reader_take(s);
    redisReply *r = command_strings(s, c, 2, argv, &status, doing, error);
    reader_give(c);
    if (!r) return status;
    if (r->type == REDIS_REPLY_NIL) {
        freeReplyObject(r);
        return FWM_STORE_NOT_FOUND;
    }
    if (r->type != REDIS_REPLY_STRING) {
        freeReplyObject(r);
        return fail(error, FWM_STORE_CORRUPT, "%s: %s: %s is not a string", s->location, doing, key);
    }
    if (r->len > *capacity) {
        void *grown = fwm__realloc(*buffer, r->len);
        if (!grown) {
            freeReplyObject(r);
            return fail(error, FWM_STORE_NO_MEMORY, "out of memory reading %zu bytes", r->len);
        }
        *buffer = grown;
        *capacity = r->len;
    }
    memcpy(*buffer, r->str, r->len);
    *length = r->len;
    freeReplyObject(r);
    return FWM_STORE_OK;
}

static fwm__store_status redis_get_meta(fwm__store *base, const uint8_t *id, void *buffer, size_t capacity,
                                        size_t *length, fwm__store_error *error) {
    redis_store *s = (redis_store *)base;
    char key[16 + HEX_BYTES], hex[HEX_BYTES + 1];
    to_hex(id, hex);
    snprintf(key, sizeof key, "fwm:meta:%s", hex);
    const char *argv[2] = {"GET", key};
    fwm__store_status status;
    connection *c = reader_take(s);
    redisReply *r = command_strings(s, c, 2, argv, &status, "cannot read a session's meta record", error);
    reader_give(c);
    if (!r) return status;
    if (r->type == REDIS_REPLY_NIL) status = FWM_STORE_NOT_FOUND;
    else if (r->type != REDIS_REPLY_STRING)
        status = fail(error, FWM_STORE_CORRUPT, "%s: %s is not a string", s->location, key);
    else {
        *length = r->len;
        memcpy(buffer, r->str, r->len < capacity ? r->len : capacity);
    }
    freeReplyObject(r);
    return status;
}

static fwm__store_status redis_get_snapshot(fwm__store *base, const uint8_t *id, void **buffer, size_t *capacity,
                                            size_t *length, fwm__store_error *error) {
    redis_store *s = (redis_store *)base;
    char key[16 + HEX_BYTES], hex[HEX_BYTES + 1];
    to_hex(id, hex);
    snprintf(key, sizeof key, "fwm:snap:%s", hex);
    return get_value(s, key, buffer, capacity, length, "cannot read a session's snapshot", error);
}

static fwm__store_status redis_read_log(fwm__store *base, const uint8_t *id, uint64_t from, fwm__store_log_visit visit,
                                        void *user, fwm__store_error *error) {
    redis_store *s = (redis_store *)base;
    char key[16 + HEX_BYTES], hex[HEX_BYTES + 1], low[24];
    to_hex(id, hex);
    snprintf(key, sizeof key, "fwm:log:%s", hex);
    snprintf(low, sizeof low, "%llu", (unsigned long long)from);
    const char *argv[4] = {"ZRANGEBYSCORE", key, low, "+inf"};
    fwm__store_status status;
    connection *c = reader_take(s);
    redisReply *r = command_strings(s, c, 4, argv, &status, "cannot read a session's log", error);
    reader_give(c);
    if (!r) return status;
    if (r->type != REDIS_REPLY_ARRAY) {
        freeReplyObject(r);
        return fail(error, FWM_STORE_CORRUPT, "%s: %s is not a sorted set", s->location, key);
    }
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *m = r->element[i];
        if (m->type != REDIS_REPLY_STRING || m->len < 8) break; /* damaged: replay stops before it */
        uint64_t seq = 0;
        for (int b = 0; b < 8; b++) seq = seq << 8 | (uint8_t)m->str[b];
        if (!visit(user, seq, m->str + 8, m->len - 8)) break;
    }
    freeReplyObject(r);
    return FWM_STORE_OK;
}

static fwm__store_status redis_list(fwm__store *base, const uint8_t *after, fwm__store_list_visit visit, void *user,
                                    fwm__store_error *error) {
    redis_store *s = (redis_store *)base;
    char start[HEX_BYTES + 2] = "-", hex[HEX_BYTES + 1], page[16];
    if (after) {
        to_hex(after, hex);
        snprintf(start, sizeof start, "(%s", hex);
    }
    snprintf(page, sizeof page, "%d", LIST_PAGE);
    for (;;) {
        const char *argv[7] = {"ZRANGEBYLEX", "fwm:sessions", start, "+", "LIMIT", "0", page};
        fwm__store_status status;
        connection *c = reader_take(s);
        redisReply *ids = command_strings(s, c, 7, argv, &status, "cannot list sessions", error);
        if (!ids) {
            reader_give(c);
            return status;
        }
        size_t n = ids->type == REDIS_REPLY_ARRAY ? ids->elements : 0;
        redisReply *metas = NULL;
        if (n) {
            const char **margv = fwm__malloc((n + 1) * sizeof *margv);
            size_t *mlengths = fwm__malloc((n + 1) * sizeof *mlengths);
            char *keys = fwm__malloc(n * (16 + HEX_BYTES));
            if (margv && mlengths && keys) {
                margv[0] = "MGET";
                mlengths[0] = 4;
                for (size_t i = 0; i < n; i++) {
                    const redisReply *id = ids->element[i];
                    char *key = keys + i * (16 + HEX_BYTES);
                    int k = snprintf(key, 16 + HEX_BYTES, "fwm:meta:%.*s",
                                     (int)(id->len < HEX_BYTES ? id->len : HEX_BYTES),
                                     id->str ? id->str : "");
                    margv[i + 1] = key;
                    mlengths[i + 1] = (size_t)k;
                }
                metas = command(s, c, (int)n + 1, margv, mlengths, &status, "cannot list sessions", error);
            } else {
                status = fail(error, FWM_STORE_NO_MEMORY, "out of memory listing sessions");
            }
            fwm__free(margv);
            fwm__free(mlengths);
            fwm__free(keys);
        }
        reader_give(c);
        if (n && !metas) {
            freeReplyObject(ids);
            return status;
        }
        bool go_on = n == LIST_PAGE;
        for (size_t i = 0; i < n; i++) {
            const redisReply *id = ids->element[i];
            uint8_t raw[FWM_STORE_ID_BYTES];
            if (id->type != REDIS_REPLY_STRING || !from_hex(id->str, id->len, raw)) continue;
            snprintf(start, sizeof start, "(%.*s", HEX_BYTES, id->str);
            const redisReply *m = metas->type == REDIS_REPLY_ARRAY && i < metas->elements ? metas->element[i] : NULL;
            if (!m || m->type != REDIS_REPLY_STRING) continue; /* deleted meanwhile */
            if (!visit(user, raw, m->str, m->len)) {
                go_on = false;
                break;
            }
        }
        if (metas) freeReplyObject(metas);
        freeReplyObject(ids);
        if (!go_on) return FWM_STORE_OK;
    }
}

static fwm__store_status redis_info(fwm__store *base, fwm__store_info *out, fwm__store_error *error) {
    redis_store *s = (redis_store *)base;
    memset(out, 0, sizeof *out);
    const char *argv[2] = {"ZCARD", "fwm:sessions"};
    fwm__store_status status;
    connection *c = reader_take(s);
    redisReply *r = command_strings(s, c, 2, argv, &status, "cannot count sessions", error);
    if (r) {
        out->sessions = r->type == REDIS_REPLY_INTEGER ? (uint64_t)r->integer : 0;
        freeReplyObject(r);
        uint64_t used = 0, max = 0, aof = 0;
        status = memory_used(s, c, &used, &max, &aof, error);
        out->used_bytes = used;
        out->map_bytes = s->limit_bytes ? s->limit_bytes : max;
        out->file_bytes = aof;
    }
    reader_give(c);
    return status;
}

const fwm__store_backend fwm__store_redis = {
    .name = "redis",
    .open = redis_open,
    .close = redis_close,
    .begin = redis_begin,
    .put_meta = redis_put_meta,
    .put_snapshot = redis_put_snapshot,
    .append_log = redis_append_log,
    .delete_log = redis_delete_log,
    .remove = redis_remove,
    .writer_epoch = redis_writer_epoch,
    .commit = redis_commit,
    .abort = redis_abort,
    .sync = redis_sync,
    .probe = redis_probe,
    .free_reserve = redis_free_reserve,
    .get_meta = redis_get_meta,
    .get_snapshot = redis_get_snapshot,
    .read_log = redis_read_log,
    .list = redis_list,
    .info = redis_info,
};

bool fwm__store_is_redis(const char *location) {
    return strncmp(location, "redis://", 8) == 0 || strncmp(location, "unix:", 5) == 0;
}

/* ---- cluster (cluster.h) ---- */

static redis_store *as_redis(fwm__store *store) {
    return store && store->backend == &fwm__store_redis ? (redis_store *)store : NULL;
}

/* Join: set the lease key to a new token unless another incarnation's token holds it (a live node
 * with the same address, or a crashed one whose lease has not expired yet); the caller's previous
 * token, after a loss, may be replaced. The epoch is drawn only when the node joins, so failed
 * attempts burn none, and it is above ARGV[4], the highest this node has held, so no node ever holds
 * an epoch twice, even when the counter went back with the store's data. The incarnation marker
 * tells whether the store lost its data since the node last saw it (ARGV[5]); a missing one is
 * written again (ARGV[6]), with the format key, and the epochs jump to the store's clock.
 * KEYS: the lease key, fwm:nodes. ARGV: previous token, TTL ms, address, highest epoch held, known
 * incarnation, new incarnation, format. Returns {epoch, token, incarnation, lost}: epoch 0 when the
 * lease is held by another token (then `token` is that one); lost 1 when the data was lost. */
static const char JOIN_SCRIPT[] = FLOOR_EPOCH_LUA
    "local inc = redis.call('GET', 'fwm:incarnation')\n"
    "local lost = 0\n"
    "if not inc then\n"
    "  inc = ARGV[6]; lost = 1\n"
    "  redis.call('SET', 'fwm:incarnation', inc)\n"
    "  redis.call('SET', 'fwm:format', ARGV[7], 'NX')\n"
    "  floor_epoch()\n"
    "elseif inc ~= ARGV[5] then lost = 1 end\n"
    "local cur = redis.call('GET', KEYS[1])\n"
    "if cur and cur ~= ARGV[1] then return {0, cur, inc, lost} end\n"
    "local e = redis.call('INCR', 'fwm:epoch')\n"
    "if e <= tonumber(ARGV[4]) then\n"
    "  e = tonumber(ARGV[4]) + 1\n"
    "  redis.call('SET', 'fwm:epoch', string.format('%.0f', e))\n"
    "end\n"
    "local token = string.format('%.0f', e) .. '|' .. ARGV[3]\n"
    "redis.call('SET', KEYS[1], token, 'PX', ARGV[2])\n"
    "redis.call('SADD', KEYS[2], ARGV[3])\n"
    "return {e, token, inc, lost}\n";

fwm__store_status fwm__cluster_join(fwm__store *store, const char *address, uint64_t ttl_ms, uint64_t highest,
                                    uint64_t *epoch, bool *data_lost, fwm__store_error *error) {
    redis_store *s = as_redis(store);
    *data_lost = false;
    if (!s) return fail(error, FWM_STORE_IO, "cluster mode needs a Redis store (--store redis://...)");
    if (strlen(address) >= sizeof s->address || strchr(address, '|'))
        return fail(error, FWM_STORE_IO, "--advertise %s: too long, or holds '|'", address);
    char previous[sizeof s->token], known[sizeof s->incarnation], fresh[33];
    pthread_mutex_lock(&s->token_mutex);
    memcpy(previous, s->token, sizeof previous);
    memcpy(known, s->incarnation, sizeof known);
    pthread_mutex_unlock(&s->token_mutex);
    new_incarnation(fresh);
    char key[sizeof s->node_key], ttl[24], floor[24];
    snprintf(key, sizeof key, "fwm:node:%s", address);
    snprintf(ttl, sizeof ttl, "%llu", (unsigned long long)ttl_ms);
    snprintf(floor, sizeof floor, "%llu", (unsigned long long)highest);
    const char *argv[12] = {"EVAL", JOIN_SCRIPT, "2", key, "fwm:nodes", previous, ttl, address, floor, known, fresh,
                            FORMAT_VALUE};
    fwm__store_status status;
    pthread_mutex_lock(&s->writer.mutex);
    redisReply *r = command_strings(s, &s->writer, 12, argv, &status, "cannot register this node", error);
    pthread_mutex_unlock(&s->writer.mutex);
    if (!r) return status;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 4 || r->element[0]->type != REDIS_REPLY_INTEGER ||
        r->element[1]->type != REDIS_REPLY_STRING || r->element[2]->type != REDIS_REPLY_STRING ||
        r->element[3]->type != REDIS_REPLY_INTEGER) {
        freeReplyObject(r);
        return fail(error, FWM_STORE_IO, "%s: unexpected answer when joining the cluster", s->location);
    }
    *data_lost = r->element[3]->integer == 1;
    pthread_mutex_lock(&s->token_mutex);
    snprintf(s->incarnation, sizeof s->incarnation, "%.*s", (int)(r->element[2]->len < 63 ? r->element[2]->len : 63),
             r->element[2]->str);
    pthread_mutex_unlock(&s->token_mutex);
    const redisReply *token = r->element[1];
    if (r->element[0]->integer <= 0 || token->len >= sizeof s->token) {
        status = fail(error, FWM_STORE_BUSY, "the lease of %s is held by another fwm-serve (token %.*s)", address,
                      (int)(token->len < 200 ? token->len : 200), token->str);
        *epoch = strtoull(token->str, NULL, 10); /* the holder's */
        freeReplyObject(r);
        return status;
    }
    *epoch = (uint64_t)r->element[0]->integer;
    pthread_mutex_lock(&s->token_mutex);
    memcpy(s->token, token->str, token->len);
    s->token[token->len] = '\0';
    memcpy(s->node_key, key, sizeof key);
    snprintf(s->address, sizeof s->address, "%s", address);
    pthread_mutex_unlock(&s->token_mutex);
    freeReplyObject(r);
    return FWM_STORE_OK;
}

/* Renew this node's lease: PEXPIRE only when the key still holds this node's token. */
static const char RENEW_SCRIPT[] =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end\n"
    "return -1\n";

fwm__store_status fwm__cluster_renew(fwm__store *store, uint64_t ttl_ms, bool *lost, fwm__store_error *error) {
    redis_store *s = as_redis(store);
    *lost = false;
    if (!s) return FWM_STORE_OK;
    pthread_mutex_lock(&s->token_mutex);
    char token[sizeof s->token], key[sizeof s->node_key], ttl[24];
    memcpy(token, s->token, sizeof token);
    memcpy(key, s->node_key, sizeof key);
    pthread_mutex_unlock(&s->token_mutex);
    if (!token[0]) return FWM_STORE_OK;
    snprintf(ttl, sizeof ttl, "%llu", (unsigned long long)ttl_ms);
    const char *argv[6] = {"EVAL", RENEW_SCRIPT, "1", key, token, ttl};
    fwm__store_status status;
    connection *c = reader_take(s); /* not the writer: a long batch must not delay the renewal */
    redisReply *r = command_strings(s, c, 6, argv, &status, "cannot renew this node's lease", error);
    reader_give(c);
    if (!r) return status;
    *lost = r->type == REDIS_REPLY_INTEGER && r->integer == -1;
    freeReplyObject(r);
    return FWM_STORE_OK;
}

fwm__cluster_claim_result fwm__cluster_claim(fwm__store *store, const uint8_t *id, char *owner, size_t owner_size,
                                             uint64_t *epoch, fwm__store_error *error) {
    redis_store *s = as_redis(store);
    if (owner_size) owner[0] = '\0';
    *epoch = 0;
    if (!s) return FWM_CLAIM_MINE;
    pthread_mutex_lock(&s->token_mutex);
    char token[sizeof s->token], key[sizeof s->node_key];
    memcpy(token, s->token, sizeof token);
    memcpy(key, s->node_key, sizeof key);
    pthread_mutex_unlock(&s->token_mutex);
    if (!token[0]) return FWM_CLAIM_MINE;
    *epoch = strtoull(token, NULL, 10);
    char hex[HEX_BYTES + 1];
    to_hex(id, hex);
    const char *argv[6] = {NULL, NULL, NULL, token, key, hex};
    size_t lengths[6] = {0, 0, 0, strlen(token), strlen(key), HEX_BYTES};
    fwm__store_status status;
    connection *c = reader_take(s);
    redisReply *r = run_script(s, c, s->claim_sha, CLAIM_SCRIPT, 6, argv, lengths, &status,
                               "cannot claim a session", error);
    reader_give(c);
    if (!r) return FWM_CLAIM_ERROR;
    fwm__cluster_claim_result result = FWM_CLAIM_ERROR;
    if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 && r->element[0]->type == REDIS_REPLY_STRING &&
        r->element[1]->type == REDIS_REPLY_STRING) {
        const char *what = r->element[0]->str;
        result = strcmp(what, "mine") == 0    ? FWM_CLAIM_MINE
                 : strcmp(what, "taken") == 0 ? FWM_CLAIM_TAKEN
                 : strcmp(what, "moved") == 0 ? FWM_CLAIM_MOVED
                 : strcmp(what, "none") == 0  ? FWM_CLAIM_NONE
                 : strcmp(what, "lost") == 0  ? FWM_CLAIM_LOST
                                              : FWM_CLAIM_ERROR;
        if (owner_size) snprintf(owner, owner_size, "%s", r->element[1]->str);
    }
    if (result == FWM_CLAIM_ERROR) fail(error, FWM_STORE_IO, "%s: unexpected answer to a claim", s->location);
    freeReplyObject(r);
    return result;
}

/* Give up ownership of sessions (graceful leave): only those this node still owns. */
static const char RELEASE_SCRIPT[] =
    "local n = 0\n"
    "for i = 2, #ARGV do\n"
    "  if redis.call('GET', 'fwm:owner:' .. ARGV[i]) == ARGV[1] then "
    "redis.call('DEL', 'fwm:owner:' .. ARGV[i]); n = n + 1 end\n"
    "end\n"
    "return n\n";

fwm__store_status fwm__cluster_leave(fwm__store *store, const uint8_t (*ids)[FWM_STORE_ID_BYTES], size_t count,
                                     fwm__store_error *error) {
    redis_store *s = as_redis(store);
    if (!s || !s->token[0]) return FWM_STORE_OK;
    const char **argv = fwm__malloc((count + 4) * sizeof *argv);
    size_t *lengths = fwm__malloc((count + 4) * sizeof *lengths);
    char *hex = fwm__malloc(count * (HEX_BYTES + 1) + 1);
    fwm__store_status status = FWM_STORE_OK;
    if (!argv || !lengths || !hex) {
        status = fail(error, FWM_STORE_NO_MEMORY, "out of memory releasing sessions");
    } else {
        argv[0] = "EVAL";
        argv[1] = RELEASE_SCRIPT;
        argv[2] = "0";
        argv[3] = s->token;
        for (int i = 0; i < 4; i++) lengths[i] = strlen(argv[i]);
        for (size_t i = 0; i < count; i++) {
            to_hex(ids[i], hex + i * (HEX_BYTES + 1));
            argv[4 + i] = hex + i * (HEX_BYTES + 1);
            lengths[4 + i] = HEX_BYTES;
        }
        pthread_mutex_lock(&s->writer.mutex);
        redisReply *r =
            command(s, &s->writer, (int)count + 4, argv, lengths, &status, "cannot release sessions", error);
        if (r) freeReplyObject(r);
        /* the lease goes last: until then, nobody else may take what is being released */
        const char *drop[5] = {"EVAL", "if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end "
                                       "redis.call('SREM', 'fwm:nodes', ARGV[2]) return 1",
                               "1", s->node_key, s->token};
        const char *argv2[6] = {drop[0], drop[1], drop[2], drop[3], drop[4], s->address};
        fwm__store_status dropped;
        r = command_strings(s, &s->writer, 6, argv2, &dropped, "cannot release this node's lease",
                            status ? NULL : error);
        if (r) freeReplyObject(r);
        if (status == FWM_STORE_OK) status = dropped;
        pthread_mutex_unlock(&s->writer.mutex);
        pthread_mutex_lock(&s->token_mutex);
        s->token[0] = '\0';
        pthread_mutex_unlock(&s->token_mutex);
    }
    fwm__free(argv);
    fwm__free(lengths);
    fwm__free(hex);
    return status;
}

/* The live nodes: ADDRESS, TOKEN pairs; addresses whose lease expired leave fwm:nodes in the same
 * step, so a node that joins meanwhile (SET then SADD, atomically too) is never dropped. */
static const char NODES_SCRIPT[] =
    "local out = {}\n"
    "for _, a in ipairs(redis.call('SMEMBERS', 'fwm:nodes')) do\n"
    "  local t = redis.call('GET', 'fwm:node:' .. a)\n"
    "  if t then out[#out + 1] = a; out[#out + 1] = t else redis.call('SREM', 'fwm:nodes', a) end\n"
    "end\n"
    "return out\n";

fwm__store_status fwm__cluster_nodes(fwm__store *store, fwm__cluster_node_visit visit, void *user,
                                     fwm__store_error *error) {
    redis_store *s = as_redis(store);
    if (!s) return FWM_STORE_OK;
    const char *argv[3] = {"EVAL", NODES_SCRIPT, "0"};
    fwm__store_status status;
    connection *c = reader_take(s);
    redisReply *r = command_strings(s, c, 3, argv, &status, "cannot list the nodes", error);
    reader_give(c);
    if (!r) return status;
    if (r->type != REDIS_REPLY_ARRAY || r->elements % 2) {
        freeReplyObject(r);
        return fail(error, FWM_STORE_IO, "%s: unexpected answer when listing the nodes", s->location);
    }
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
        const redisReply *address = r->element[i], *token = r->element[i + 1];
        if (address->type != REDIS_REPLY_STRING || token->type != REDIS_REPLY_STRING || address->len >= 256) continue;
        visit(user, address->str, strtoull(token->str, NULL, 10));
    }
    freeReplyObject(r);
    return FWM_STORE_OK;
}
