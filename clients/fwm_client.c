/* fwm_client.c - the blocking C client of fwm-serve (see include/fwm/fwm_client.h).
 *
 * One request at a time on one socket: pack [0, msgid, method, [{args}]], then read messages
 * (delimited by the same pre-scanner the server uses, so a broken or hostile server cannot make the
 * client allocate without bound) until the response with that msgid; `token` notifications on the
 * way go to the caller's callback. Strings handed back live in an arena reset at the next call.
 */
#include "fwm/fwm_client.h"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include "rpc_codec.h"
#include "rpc_scan.h"

typedef struct arena_block {
    struct arena_block *next;
    size_t used, size;
    char data[];
} arena_block;

#define ADDRESS_MAX 256
#define IDLE_LINKS 4   /* connections to other cluster nodes kept open */
#define OWNER_CACHE 64 /* sessions whose node is remembered */
#define NODES_MAX 16
#define MOVED_HOPS 8

/* A connection to one node that is not the one in use. */
typedef struct node_link {
    int fd;
    fwm__rpc_reader reader;
    char address[ADDRESS_MAX];
} node_link;

struct fwm_client {
    int fd;               /* the connection in use, to `address` */
    int timeout_ms;
    uint32_t next_id;
    fwm__rpc_reader reader;
    char address[ADDRESS_MAX];
    size_t max_message_bytes;
    msgpack_sbuffer out;
    msgpack_packer pk;
    msgpack_unpacked message; /* the last message read */
    arena_block *arena;
    /* clusters (docs/CLUSTER.md): follow `moved`, remember owners, spread `open` */
    node_link idle[IDLE_LINKS];
    size_t idle_count;
    char request_session[FWM_CLIENT_SESSION_ID_SIZE]; /* the session of the request being sent, or "" */
    struct {
        char session[FWM_CLIENT_SESSION_ID_SIZE];
        char address[ADDRESS_MAX];
    } owners[OWNER_CACHE];
    unsigned owner_next;
    char nodes[NODES_MAX][ADDRESS_MAX];
    size_t node_count;
    bool nodes_known;
    unsigned spread;
    char *token; /* presented on each new connection (fwm_client_authenticate) */
};

static int fail(fwm_client_error *err, int code, const char *format, ...) __attribute__((format(printf, 3, 4)));
static int fail(fwm_client_error *err, int code, const char *format, ...) {
    if (err) {
        err->code = code;
        snprintf(err->name, sizeof err->name, "%s", fwm_rpc_code_name(code));
        va_list args;
        va_start(args, format);
        vsnprintf(err->message, sizeof err->message, format, args);
        va_end(args);
        if (!err->message[0]) snprintf(err->message, sizeof err->message, "%s", err->name);
    }
    return code;
}

static void ok(fwm_client_error *err) {
    if (err) {
        err->code = FWM_RPC_OK;
        snprintf(err->name, sizeof err->name, "ok");
        err->message[0] = '\0';
    }
}

fwm_client_params fwm_client_default_params(void) {
    fwm_client_params p = {.timeout_ms = 30000, .max_message_bytes = 16u << 20};
    return p;
}

/* ---- arena ---- */

static void arena_reset(fwm_client *c) {
    while (c->arena) {
        arena_block *next = c->arena->next;
        free(c->arena);
        c->arena = next;
    }
}

static void *arena_alloc(fwm_client *c, size_t size) {
    size = (size + 7) & ~(size_t)7;
    if (!c->arena || c->arena->size - c->arena->used < size) {
        size_t block = size > 8192 ? size : 8192;
        arena_block *b = malloc(sizeof *b + block);
        if (!b) return NULL;
        b->next = c->arena;
        b->used = 0;
        b->size = block;
        c->arena = b;
    }
    void *p = c->arena->data + c->arena->used;
    c->arena->used += size;
    return p;
}

static const char *arena_string(fwm_client *c, const msgpack_object *o) {
    if (!o || o->type != MSGPACK_OBJECT_STR) return NULL;
    char *s = arena_alloc(c, o->via.str.size + 1);
    if (!s) return NULL;
    memcpy(s, o->via.str.ptr, o->via.str.size);
    s[o->via.str.size] = '\0';
    return s;
}

/* ---- connection ---- */

static int connect_unix(const char *path, int *fd, fwm_client_error *err) {
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    if (strlen(path) >= sizeof sa.sun_path) return fail(err, FWM_RPC_CLIENT_ARGUMENT, "socket path too long: %s", path);
    strcpy(sa.sun_path, path);
    *fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (*fd < 0 || connect(*fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        int e = errno;
        if (*fd >= 0) close(*fd);
        *fd = -1;
        return fail(err, FWM_RPC_CONNECT, "cannot connect to unix:%s: %s", path, strerror(e));
    }
    return FWM_RPC_OK;
}

static int connect_tcp(const char *spec, int *fd, fwm_client_error *err) {
    char host[256], port[16];
    const char *colon;
    if (spec[0] == '[') {
        const char *close = strchr(spec, ']');
        if (!close || close[1] != ':') return fail(err, FWM_RPC_CLIENT_ARGUMENT, "bad address '%s'", spec);
        snprintf(host, sizeof host, "%.*s", (int)(close - spec - 1), spec + 1);
        colon = close + 1;
    } else {
        colon = strrchr(spec, ':');
        if (!colon) return fail(err, FWM_RPC_CLIENT_ARGUMENT, "address '%s' lacks a port (HOST:PORT)", spec);
        snprintf(host, sizeof host, "%.*s", (int)(colon - spec), spec);
    }
    snprintf(port, sizeof port, "%s", colon + 1);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *list = NULL;
    int rc = getaddrinfo(host, port, &hints, &list);
    if (rc != 0) return fail(err, FWM_RPC_CONNECT, "cannot resolve '%s': %s", host, gai_strerror(rc));
    int e = 0;
    *fd = -1;
    for (struct addrinfo *a = list; a && *fd < 0; a = a->ai_next) {
        *fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (*fd < 0) continue;
        if (connect(*fd, a->ai_addr, a->ai_addrlen) != 0) {
            e = errno;
            close(*fd);
            *fd = -1;
        }
    }
    freeaddrinfo(list);
    if (*fd < 0) return fail(err, FWM_RPC_CONNECT, "cannot connect to %s:%s: %s", host, port, strerror(e));
    int one = 1;
    setsockopt(*fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return FWM_RPC_OK;
}

static int connect_any(const char *address, int *fd, fwm_client_error *err) {
    if (strlen(address) >= ADDRESS_MAX)
        return fail(err, FWM_RPC_CLIENT_ARGUMENT, "address too long: %.64s...", address);
    if (strncmp(address, "unix://", 7) == 0) return connect_unix(address + 7, fd, err);
    if (strncmp(address, "unix:", 5) == 0) return connect_unix(address + 5, fd, err);
    if (strncmp(address, "tcp://", 6) == 0) return connect_tcp(address + 6, fd, err);
    return connect_tcp(address, fd, err);
}

static void reader_init(fwm__rpc_reader *reader, size_t max_message_bytes) {
    fwm__rpc_limits limits = fwm__rpc_default_limits();
    limits.max_message_bytes = max_message_bytes;
    limits.max_binary_bytes = max_message_bytes;
    limits.max_string_bytes = max_message_bytes;
    limits.max_depth = 32;
    fwm__rpc_reader_init(reader, &limits);
}

int fwm_client_connect(const char *address, const fwm_client_params *params, fwm_client **out,
                       fwm_client_error *err) {
    if (!address || !out) return fail(err, FWM_RPC_CLIENT_ARGUMENT, "address and out must not be NULL");
    *out = NULL;
    fwm_client_params p = params ? *params : fwm_client_default_params();
    if (p.timeout_ms <= 0) p.timeout_ms = 30000;
    if (p.max_message_bytes == 0) p.max_message_bytes = 16u << 20;
    int fd = -1;
    int rc = connect_any(address, &fd, err);
    if (rc != FWM_RPC_OK) return rc;
    fwm_client *c = calloc(1, sizeof *c);
    if (!c) {
        close(fd);
        return fail(err, FWM_RPC_CLIENT_ARGUMENT, "out of memory");
    }
    c->fd = fd;
    c->timeout_ms = p.timeout_ms;
    c->next_id = 1;
    c->max_message_bytes = p.max_message_bytes;
    snprintf(c->address, sizeof c->address, "%s", address);
    reader_init(&c->reader, p.max_message_bytes);
    msgpack_sbuffer_init(&c->out);
    msgpack_packer_init(&c->pk, &c->out, msgpack_sbuffer_write);
    msgpack_unpacked_init(&c->message);
    *out = c;
    ok(err);
    return FWM_RPC_OK;
}

void fwm_client_free(fwm_client *c) {
    if (!c) return;
    if (c->fd >= 0) close(c->fd);
    fwm__rpc_reader_release(&c->reader);
    for (size_t i = 0; i < c->idle_count; i++) {
        if (c->idle[i].fd >= 0) close(c->idle[i].fd);
        fwm__rpc_reader_release(&c->idle[i].reader);
    }
    free(c->token);
    msgpack_sbuffer_destroy(&c->out);
    msgpack_unpacked_destroy(&c->message);
    arena_reset(c);
    free(c);
}

static int wait_fd(fwm_client *c, short events, fwm_client_error *err) {
    struct pollfd p = {.fd = c->fd, .events = events};
    for (;;) {
        int n = poll(&p, 1, c->timeout_ms);
        if (n > 0) return FWM_RPC_OK;
        if (n == 0) return fail(err, FWM_RPC_TIMEOUT, "no answer from the server within %d ms", c->timeout_ms);
        if (errno != EINTR) return fail(err, FWM_RPC_IO, "poll: %s", strerror(errno));
    }
}

static int send_all(fwm_client *c, fwm_client_error *err) {
    size_t sent = 0;
    while (sent < c->out.size) {
        ssize_t n = send(c->fd, c->out.data + sent, c->out.size - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            sent += (size_t)n;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int rc = wait_fd(c, POLLOUT, err);
            if (rc != FWM_RPC_OK) return rc;
        } else if (n < 0 && errno != EINTR) {
            return fail(err, FWM_RPC_IO, "cannot send to the server: %s", strerror(errno));
        }
    }
    return FWM_RPC_OK;
}

/* Read until one whole message is in c->message. */
static int read_message(fwm_client *c, fwm_client_error *err) {
    for (;;) {
        const uint8_t *m;
        size_t n;
        fwm__rpc_result r = fwm__rpc_reader_next(&c->reader, &m, &n);
        if (r == FWM_RPC_MESSAGE) {
            size_t off = 0;
            if (msgpack_unpack_next(&c->message, (const char *)m, n, &off) != MSGPACK_UNPACK_SUCCESS)
                return fail(err, FWM_RPC_BAD_RESPONSE, "undecodable message from the server");
            return FWM_RPC_OK;
        }
        if (r == FWM_RPC_ERROR)
            return fail(err, FWM_RPC_BAD_RESPONSE, "malformed stream from the server: %s",
                        fwm__rpc_reader_error(&c->reader));
        size_t available;
        void *space = fwm__rpc_reader_space(&c->reader, 65536, &available);
        if (!space) return fail(err, FWM_RPC_IO, "out of memory reading from the server");
        int rc = wait_fd(c, POLLIN, err);
        if (rc != FWM_RPC_OK) return rc;
        ssize_t got = recv(c->fd, space, available, 0);
        if (got == 0) return fail(err, FWM_RPC_IO, "the server closed the connection");
        if (got < 0 && errno != EINTR && errno != EAGAIN)
            return fail(err, FWM_RPC_IO, "cannot read from the server: %s", strerror(errno));
        if (got > 0) fwm__rpc_reader_commit(&c->reader, (size_t)got);
    }
}

static const msgpack_object *get(const msgpack_object *map, const char *key) {
    if (!map || map->type != MSGPACK_OBJECT_MAP) return NULL;
    size_t n = strlen(key);
    for (uint32_t i = 0; i < map->via.map.size; i++) {
        const msgpack_object *k = &map->via.map.ptr[i].key;
        if (k->type == MSGPACK_OBJECT_STR && k->via.str.size == n && memcmp(k->via.str.ptr, key, n) == 0)
            return &map->via.map.ptr[i].val;
    }
    return NULL;
}

static uint64_t get_u64(const msgpack_object *map, const char *key) {
    const msgpack_object *o = get(map, key);
    return o && o->type == MSGPACK_OBJECT_POSITIVE_INTEGER ? o->via.u64 : 0;
}

static double get_f64(const msgpack_object *map, const char *key) {
    const msgpack_object *o = get(map, key);
    if (!o) return 0.0;
    if (o->type == MSGPACK_OBJECT_FLOAT32 || o->type == MSGPACK_OBJECT_FLOAT64) return o->via.f64;
    if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER) return (double)o->via.u64;
    return 0.0;
}

static bool get_bool(const msgpack_object *map, const char *key) {
    const msgpack_object *o = get(map, key);
    return o && o->type == MSGPACK_OBJECT_BOOLEAN && o->via.boolean;
}

/* The `unknown` list of [start, length] pairs; malformed pairs are skipped. */
static size_t get_spans(fwm_client *c, const msgpack_object *list, const fwm_client_span **out) {
    *out = NULL;
    if (!list || list->type != MSGPACK_OBJECT_ARRAY || list->via.array.size == 0) return 0;
    size_t n = list->via.array.size, k = 0;
    fwm_client_span *spans = arena_alloc(c, n * sizeof *spans);
    if (!spans) return 0;
    for (size_t i = 0; i < n; i++) {
        const msgpack_object *pair = &list->via.array.ptr[i];
        if (pair->type != MSGPACK_OBJECT_ARRAY || pair->via.array.size != 2 ||
            pair->via.array.ptr[0].type != MSGPACK_OBJECT_POSITIVE_INTEGER ||
            pair->via.array.ptr[1].type != MSGPACK_OBJECT_POSITIVE_INTEGER)
            continue;
        spans[k].start = pair->via.array.ptr[0].via.u64;
        spans[k++].length = pair->via.array.ptr[1].via.u64;
    }
    *out = spans;
    return k;
}

static size_t get_predictions(fwm_client *c, const msgpack_object *list, const fwm_client_prediction **out) {
    *out = NULL;
    if (!list || list->type != MSGPACK_OBJECT_ARRAY || list->via.array.size == 0) return 0;
    size_t n = list->via.array.size;
    fwm_client_prediction *p = arena_alloc(c, n * sizeof *p);
    if (!p) return 0;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const msgpack_object *pair = &list->via.array.ptr[i];
        if (pair->type != MSGPACK_OBJECT_ARRAY || pair->via.array.size != 2) continue;
        p[k].word = arena_string(c, &pair->via.array.ptr[0]);
        const msgpack_object *prob = &pair->via.array.ptr[1];
        p[k].probability = (prob->type == MSGPACK_OBJECT_FLOAT32 || prob->type == MSGPACK_OBJECT_FLOAT64)
                               ? (float)prob->via.f64
                               : 0.0f;
        if (p[k].word) k++;
    }
    *out = p;
    return k;
}

static void token_event(fwm_client *c, const msgpack_object *params, fwm_client_token_fn fn, void *user) {
    if (!fn || params->type != MSGPACK_OBJECT_ARRAY || params->via.array.size != 1) return;
    const msgpack_object *m = &params->via.array.ptr[0];
    fwm_client_token_event e;
    e.session = arena_string(c, get(m, "session"));
    e.pos = get_u64(m, "pos");
    e.token = (uint32_t)get_u64(m, "token");
    e.word = arena_string(c, get(m, "word"));
    e.topk_count = get_predictions(c, get(m, "topk"), &e.topk);
    if (!e.session) e.session = "";
    if (!e.word) e.word = "";
    fn(user, &e);
}

/* Pack [0, msgid, method, [{...nargs pairs follow}]]; returns the msgid. */
static uint32_t begin(fwm_client *c, const char *method, size_t nargs) {
    arena_reset(c);
    msgpack_sbuffer_clear(&c->out);
    c->request_session[0] = '\0';
    uint32_t id = c->next_id++;
    msgpack_pack_array(&c->pk, 4);
    msgpack_pack_uint8(&c->pk, 0);
    msgpack_pack_uint32(&c->pk, id);
    fwm__rpc_pack_cstr(&c->pk, method);
    msgpack_pack_array(&c->pk, 1);
    msgpack_pack_map(&c->pk, nargs);
    return id;
}

static void arg_str(fwm_client *c, const char *key, const char *value) {
    if (strcmp(key, "session") == 0 && strlen(value) < sizeof c->request_session)
        snprintf(c->request_session, sizeof c->request_session, "%s", value);
    fwm__rpc_pack_cstr(&c->pk, key);
    fwm__rpc_pack_cstr(&c->pk, value);
}

static void arg_bool(fwm_client *c, const char *key, bool value) {
    fwm__rpc_pack_cstr(&c->pk, key);
    if (value)
        msgpack_pack_true(&c->pk);
    else
        msgpack_pack_false(&c->pk);
}

static void arg_uint(fwm_client *c, const char *key, uint64_t value) {
    fwm__rpc_pack_cstr(&c->pk, key);
    msgpack_pack_uint64(&c->pk, value);
}

/* ---- clusters: owners, connections to other nodes ---- */

static const char *owner_of(const fwm_client *c, const char *session) {
    for (size_t i = 0; i < OWNER_CACHE; i++)
        if (c->owners[i].session[0] && strcmp(c->owners[i].session, session) == 0) return c->owners[i].address;
    return NULL;
}

static void remember_owner(fwm_client *c, const char *session, const char *address) {
    size_t slot = OWNER_CACHE;
    for (size_t i = 0; i < OWNER_CACHE && slot == OWNER_CACHE; i++)
        if (strcmp(c->owners[i].session, session) == 0) slot = i;
    if (slot == OWNER_CACHE) slot = c->owner_next++ % OWNER_CACHE; /* the oldest entry goes */
    snprintf(c->owners[slot].session, sizeof c->owners[slot].session, "%s", session);
    snprintf(c->owners[slot].address, sizeof c->owners[slot].address, "%s", address);
}

static int finish(fwm_client *c, uint32_t id, fwm_client_token_fn fn, void *user, const msgpack_object **result,
                  fwm_client_error *err);

/* Present the token on a new connection, keeping the request being sent. */
static int authenticate_link(fwm_client *c, fwm_client_error *err) {
    size_t size = c->out.size;
    char *saved = malloc(size ? size : 1);
    if (!saved) return fail(err, FWM_RPC_CLIENT_ARGUMENT, "out of memory");
    memcpy(saved, c->out.data, size);
    char session[FWM_CLIENT_SESSION_ID_SIZE];
    memcpy(session, c->request_session, sizeof session);
    uint32_t id = begin(c, "hello", 1);
    arg_str(c, "token", c->token);
    const msgpack_object *r;
    int rc = finish(c, id, NULL, NULL, &r, err);
    msgpack_sbuffer_clear(&c->out);
    msgpack_sbuffer_write(&c->out, saved, size);
    memcpy(c->request_session, session, sizeof session);
    free(saved);
    return rc;
}

/* Make the connection to `address` the one in use (opening it if needed); the previous one is kept
 * open for later, up to IDLE_LINKS of them. */
static int switch_to(fwm_client *c, const char *address, fwm_client_error *err) {
    if (c->fd >= 0 && strcmp(c->address, address) == 0) return FWM_RPC_OK;
    node_link current = {.fd = c->fd, .reader = c->reader};
    snprintf(current.address, sizeof current.address, "%s", c->address);
    size_t found = c->idle_count;
    for (size_t i = 0; i < c->idle_count && found == c->idle_count; i++)
        if (strcmp(c->idle[i].address, address) == 0) found = i;
    node_link next;
    bool fresh = found == c->idle_count;
    if (!fresh) {
        next = c->idle[found];
        c->idle[found] = c->idle[--c->idle_count];
    } else {
        next.fd = -1;
        int rc = connect_any(address, &next.fd, err);
        if (rc != FWM_RPC_OK) return rc;
        reader_init(&next.reader, c->max_message_bytes);
        snprintf(next.address, sizeof next.address, "%s", address);
    }
    if (current.fd >= 0) {
        if (c->idle_count == IDLE_LINKS) { /* the oldest goes */
            close(c->idle[0].fd);
            fwm__rpc_reader_release(&c->idle[0].reader);
            memmove(&c->idle[0], &c->idle[1], (IDLE_LINKS - 1) * sizeof c->idle[0]);
            c->idle_count--;
        }
        c->idle[c->idle_count++] = current;
    } else {
        fwm__rpc_reader_release(&current.reader);
    }
    c->fd = next.fd;
    c->reader = next.reader;
    snprintf(c->address, sizeof c->address, "%s", next.address);
    return fresh && c->token ? authenticate_link(c, err) : FWM_RPC_OK;
}

/* Send the packed request and read until its response; *result points at the result object. A
 * `moved` answer sends the request again to the node it names (at most MOVED_HOPS times). */
static int finish(fwm_client *c, uint32_t id, fwm_client_token_fn fn, void *user, const msgpack_object **result,
                  fwm_client_error *err) {
    int hops = 0;
    if (c->request_session[0]) { /* to the node that served it last */
        const char *owner = owner_of(c, c->request_session);
        if (owner && strcmp(owner, c->address) != 0) {
            char target[ADDRESS_MAX];
            snprintf(target, sizeof target, "%s", owner);
            if (switch_to(c, target, NULL) != FWM_RPC_OK) remember_owner(c, c->request_session, c->address);
        }
    }
again:
    if (c->fd < 0) return fail(err, FWM_RPC_IO, "the connection is closed");
    int rc = send_all(c, err);
    while (rc == FWM_RPC_OK) {
        rc = read_message(c, err);
        if (rc != FWM_RPC_OK) break;
        const msgpack_object *m = &c->message.data;
        if (m->type != MSGPACK_OBJECT_ARRAY || m->via.array.size < 3) {
            rc = fail(err, FWM_RPC_BAD_RESPONSE, "the server sent a message that is not msgpack-RPC");
            break;
        }
        const msgpack_object *a = m->via.array.ptr;
        if (a[0].type == MSGPACK_OBJECT_POSITIVE_INTEGER && a[0].via.u64 == 2 && a[1].type == MSGPACK_OBJECT_STR) {
            if (a[1].via.str.size == 5 && memcmp(a[1].via.str.ptr, "token", 5) == 0) {
                token_event(c, &a[2], fn, user);
            } else if (a[1].via.str.size == 5 && memcmp(a[1].via.str.ptr, "error", 5) == 0) {
                const msgpack_object *e =
                    a[2].type == MSGPACK_OBJECT_ARRAY && a[2].via.array.size ? &a[2].via.array.ptr[0] : NULL;
                const char *msg = arena_string(c, get(e, "message"));
                rc = fail(err, FWM_RPC_PROTOCOL, "the server refused the stream: %s", msg ? msg : "");
            }
            continue;
        }
        if (m->via.array.size != 4 || a[0].via.u64 != 1 || a[1].via.u64 != id) continue; /* not ours */
        if (a[2].type != MSGPACK_OBJECT_NIL) {
            const char *msg = arena_string(c, get(&a[2], "message"));
            int code = (int)get_u64(&a[2], "code");
            if (code <= 0) code = FWM_RPC_BAD_RESPONSE;
            const char *to = code == FWM_RPC_MOVED ? arena_string(c, get(&a[2], "address")) : NULL;
            if (to && to[0] && hops < MOVED_HOPS) { /* another node serves the session: ask it */
                char target[ADDRESS_MAX];
                snprintf(target, sizeof target, "%s", to);
                hops++;
                if (c->request_session[0]) remember_owner(c, c->request_session, target);
                if (strcmp(target, c->address) == 0) usleep(20000); /* it is taking the session over */
                rc = switch_to(c, target, err);
                if (rc != FWM_RPC_OK) return rc;
                goto again;
            }
            return fail(err, code, "%s", msg ? msg : "error without a message");
        }
        if (c->request_session[0]) remember_owner(c, c->request_session, c->address);
        *result = &a[3];
        ok(err);
        return FWM_RPC_OK;
    }
    if (rc == FWM_RPC_IO || rc == FWM_RPC_PROTOCOL || rc == FWM_RPC_BAD_RESPONSE || rc == FWM_RPC_TIMEOUT) {
        close(c->fd); /* the stream is out of step now: later calls fail cleanly */
        c->fd = -1;
    }
    return rc;
}

static int copy_session(const msgpack_object *result, const char *key, char out[FWM_CLIENT_SESSION_ID_SIZE],
                        fwm_client_error *err) {
    const msgpack_object *s = get(result, key);
    if (!s || s->type != MSGPACK_OBJECT_STR || s->via.str.size != FWM_CLIENT_SESSION_ID_SIZE - 1)
        return fail(err, FWM_RPC_BAD_RESPONSE, "the answer lacks a session id");
    memcpy(out, s->via.str.ptr, FWM_CLIENT_SESSION_ID_SIZE - 1);
    out[FWM_CLIENT_SESSION_ID_SIZE - 1] = '\0';
    return FWM_RPC_OK;
}

/* ---- methods ---- */

int fwm_client_hello(fwm_client *c, fwm_client_hello_info *out, fwm_client_error *err) {
    if (!c || !out) return fail(err, FWM_RPC_CLIENT_ARGUMENT, "client and out must not be NULL");
    const msgpack_object *r;
    int rc = finish(c, begin(c, "hello", 0), NULL, NULL, &r, err);
    if (rc != FWM_RPC_OK) return rc;
    memset(out, 0, sizeof *out);
    out->server = arena_string(c, get(r, "server"));
    out->version = arena_string(c, get(r, "version"));
    out->protocol = (int)get_u64(r, "protocol");
    const msgpack_object *models = get(r, "models");
    if (models && models->type == MSGPACK_OBJECT_ARRAY && models->via.array.size) {
        size_t n = models->via.array.size;
        fwm_client_model_info *m = arena_alloc(c, n * sizeof *m);
        if (m) {
            for (size_t i = 0; i < n; i++) {
                const msgpack_object *o = &models->via.array.ptr[i];
                m[i].name = arena_string(c, get(o, "name"));
                if (!m[i].name) m[i].name = "";
                m[i].vocab_size = (uint32_t)get_u64(o, "vocab_size");
                m[i].hidden_size = (uint32_t)get_u64(o, "hidden");
                m[i].session_bytes = get_u64(o, "session_bytes");
                m[i].tokenizer = arena_string(c, get(o, "tokenizer"));
                if (!m[i].tokenizer) m[i].tokenizer = "";
                m[i].has_unknown_token = get_bool(o, "has_unknown_token");
                m[i].logprobs = get_bool(o, "logprobs");
            }
            out->models = m;
            out->model_count = n;
        }
    }
    if (!out->server) out->server = "";
    if (!out->version) out->version = "";
    const msgpack_object *durability = get(r, "durability");
    out->durable = durability && durability->type == MSGPACK_OBJECT_MAP;
    out->fsync = out->durable ? arena_string(c, get(durability, "fsync")) : NULL;
    if (!out->fsync) out->fsync = "";
    return FWM_RPC_OK;
}

int fwm_client_authenticate(fwm_client *c, const char *token, fwm_client_error *err) {
    if (!c || !token) return fail(err, FWM_RPC_CLIENT_ARGUMENT, "client and token must not be NULL");
    uint32_t id = begin(c, "hello", 1);
    arg_str(c, "token", token);
    const msgpack_object *r;
    int rc = finish(c, id, NULL, NULL, &r, err);
    if (rc == FWM_RPC_OK && (!c->token || strcmp(c->token, token) != 0)) { /* for connections to other nodes */
        free(c->token);
        c->token = strdup(token);
    }
    return rc;
}

/* The live nodes `hello` lists (cluster mode), once per client. */
static void learn_nodes(fwm_client *c) {
    c->nodes_known = true;
    const msgpack_object *r;
    if (finish(c, begin(c, "hello", 0), NULL, NULL, &r, NULL) != FWM_RPC_OK) return;
    const msgpack_object *cluster = get(r, "cluster"), *nodes = get(cluster, "nodes");
    if (!nodes || nodes->type != MSGPACK_OBJECT_ARRAY) return;
    for (uint32_t i = 0; i < nodes->via.array.size && c->node_count < NODES_MAX; i++) {
        const msgpack_object *a = get(&nodes->via.array.ptr[i], "address");
        if (a && a->type == MSGPACK_OBJECT_STR && a->via.str.size < ADDRESS_MAX) {
            memcpy(c->nodes[c->node_count], a->via.str.ptr, a->via.str.size);
            c->nodes[c->node_count++][a->via.str.size] = '\0';
        }
    }
}

const char *fwm_client_node(const fwm_client *c) {
    return c ? c->address : "";
}

int fwm_client_sessions(fwm_client *c, const char *after, unsigned limit, const fwm_client_session_info **items,
                        size_t *count, const char **next, fwm_client_error *err) {
    if (!c || !items || !count || !next)
        return fail(err, FWM_RPC_CLIENT_ARGUMENT, "client, items, count and next must not be NULL");
    *items = NULL;
    *count = 0;
    *next = NULL;
    uint32_t id = begin(c, "sessions", (after ? 1 : 0) + (limit ? 1 : 0));
    if (after) arg_str(c, "after", after);
    if (limit) arg_uint(c, "limit", limit);
    const msgpack_object *r;
    int rc = finish(c, id, NULL, NULL, &r, err);
    if (rc != FWM_RPC_OK) return rc;
    const msgpack_object *list = get(r, "sessions");
    if (!list || list->type != MSGPACK_OBJECT_ARRAY)
        return fail(err, FWM_RPC_BAD_RESPONSE, "sessions: no list in the answer");
    size_t n = list->via.array.size;
    fwm_client_session_info *out = arena_alloc(c, (n ? n : 1) * sizeof *out);
    if (!out) return fail(err, FWM_RPC_CLIENT_ARGUMENT, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const msgpack_object *o = &list->via.array.ptr[i];
        const msgpack_object *pos = get(o, "pos"), *resident = get(o, "resident");
        out[i].session = arena_string(c, get(o, "session"));
        out[i].model = arena_string(c, get(o, "model"));
        if (!out[i].session || !out[i].model)
            return fail(err, FWM_RPC_BAD_RESPONSE, "sessions: an item without id or model");
        out[i].has_pos = pos && pos->type == MSGPACK_OBJECT_POSITIVE_INTEGER;
        out[i].pos = out[i].has_pos ? pos->via.u64 : 0;
        out[i].last_used_ms = get_u64(o, "last_used_ms");
        out[i].resident = resident && resident->type == MSGPACK_OBJECT_BOOLEAN && resident->via.boolean;
    }
    *items = out;
    *count = n;
    *next = arena_string(c, get(r, "next"));
    return FWM_RPC_OK;
}

static int open_session(fwm_client *c, const char *model, int topk, bool prime,
                        char session[FWM_CLIENT_SESSION_ID_SIZE], fwm_client_error *err) {
    if (!c || !session) return fail(err, FWM_RPC_CLIENT_ARGUMENT, "client and session must not be NULL");
    if (!c->nodes_known) learn_nodes(c);
    if (c->node_count > 1) { /* a cluster: opens go round the live nodes */
        char target[ADDRESS_MAX];
        snprintf(target, sizeof target, "%s", c->nodes[c->spread++ % c->node_count]);
        switch_to(c, target, NULL); /* unreachable: the node in use opens it */
    }
    uint32_t id = begin(c, "open", (model ? 1 : 0) + (topk >= 0 ? 1 : 0) + (prime ? 0 : 1));
    if (model) arg_str(c, "model", model);
    if (topk >= 0) arg_uint(c, "topk", (uint64_t)topk);
    if (!prime) arg_bool(c, "prime", false);
    const msgpack_object *r;
    int rc = finish(c, id, NULL, NULL, &r, err);
    if (rc == FWM_RPC_OK) rc = copy_session(r, "session", session, err);
    if (rc == FWM_RPC_OK) remember_owner(c, session, c->address);
    return rc;
}

int fwm_client_open(fwm_client *c, const char *model, int topk, char session[FWM_CLIENT_SESSION_ID_SIZE],
                    fwm_client_error *err) {
    return open_session(c, model, topk, true, session, err);
}

int fwm_client_open_unprimed(fwm_client *c, const char *model, int topk, char session[FWM_CLIENT_SESSION_ID_SIZE],
                             fwm_client_error *err) {
    return open_session(c, model, topk, false, session, err);
}

static int feed(fwm_client *c, const char *session, const char *text, const uint32_t *tokens, size_t count,
                int topk, bool logprobs, fwm_client_token_fn fn, void *user, fwm_client_feed_result *out,
                fwm_client_error *err) {
    memset(out, 0, sizeof *out);
    if (!c || !session || (!text && !tokens && count))
        return fail(err, FWM_RPC_CLIENT_ARGUMENT, "client, session and the input must not be NULL");
    uint32_t id = begin(c, "feed", 2 + (topk >= 0 ? 1 : 0) + (fn ? 0 : 1) + (logprobs ? 1 : 0));
    arg_str(c, "session", session);
    if (text) {
        arg_str(c, "text", text);
    } else {
        fwm__rpc_pack_cstr(&c->pk, "tokens");
        msgpack_pack_array(&c->pk, count);
        for (size_t i = 0; i < count; i++) msgpack_pack_uint32(&c->pk, tokens[i]);
    }
    if (topk >= 0) arg_uint(c, "topk", (uint64_t)topk);
    if (!fn) { /* nobody looks at the notifications: ask for none */
        fwm__rpc_pack_cstr(&c->pk, "notify");
        msgpack_pack_false(&c->pk);
    }
    if (logprobs) arg_bool(c, "logprobs", true);
    const msgpack_object *r;
    int rc = finish(c, id, fn, user, &r, err);
    if (rc != FWM_RPC_OK) return rc;
    out->pos = get_u64(r, "pos");
    out->fed = get_u64(r, "fed");
    out->unknown_count = get_spans(c, get(r, "unknown"), &out->unknown);
    if (!logprobs) return FWM_RPC_OK;
    const msgpack_object *ids = get(r, "tokens"), *lps = get(r, "logprobs");
    if (!ids || !lps || ids->type != MSGPACK_OBJECT_ARRAY || lps->type != MSGPACK_OBJECT_ARRAY ||
        ids->via.array.size != lps->via.array.size)
        return fail(err, FWM_RPC_BAD_RESPONSE, "feed: logprobs asked for, but the answer has no matching "
                                               "'tokens' and 'logprobs' arrays");
    size_t n = ids->via.array.size;
    uint32_t *t = arena_alloc(c, (n ? n : 1) * sizeof *t);
    double *l = arena_alloc(c, (n ? n : 1) * sizeof *l);
    if (!t || !l) return fail(err, FWM_RPC_CLIENT_ARGUMENT, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const msgpack_object *id_o = &ids->via.array.ptr[i], *lp = &lps->via.array.ptr[i];
        if (id_o->type != MSGPACK_OBJECT_POSITIVE_INTEGER || id_o->via.u64 > UINT32_MAX ||
            (lp->type != MSGPACK_OBJECT_FLOAT64 && lp->type != MSGPACK_OBJECT_FLOAT32))
            return fail(err, FWM_RPC_BAD_RESPONSE, "feed: logprobs item %zu is not a token id and a float", i);
        t[i] = (uint32_t)id_o->via.u64;
        l[i] = lp->via.f64;
    }
    out->token_count = n;
    out->tokens = t;
    out->logprobs = l;
    return FWM_RPC_OK;
}

int fwm_client_feed(fwm_client *c, const char *session, const char *text, int topk, fwm_client_token_fn fn,
                    void *user, uint64_t *pos, uint64_t *fed, fwm_client_error *err) {
    if (!text) return fail(err, FWM_RPC_CLIENT_ARGUMENT, "text must not be NULL");
    fwm_client_feed_result result;
    int rc = feed(c, session, text, NULL, 0, topk, false, fn, user, &result, err);
    if (rc == FWM_RPC_OK && pos) *pos = result.pos;
    if (rc == FWM_RPC_OK && fed) *fed = result.fed;
    return rc;
}

int fwm_client_feed_tokens(fwm_client *c, const char *session, const uint32_t *tokens, size_t count, int topk,
                           fwm_client_token_fn fn, void *user, uint64_t *pos, uint64_t *fed, fwm_client_error *err) {
    if (!tokens && count) return fail(err, FWM_RPC_CLIENT_ARGUMENT, "tokens must not be NULL");
    static const uint32_t none[1] = {0};
    fwm_client_feed_result result;
    int rc = feed(c, session, NULL, tokens ? tokens : none, count, topk, false, fn, user, &result, err);
    if (rc == FWM_RPC_OK && pos) *pos = result.pos;
    if (rc == FWM_RPC_OK && fed) *fed = result.fed;
    return rc;
}

int fwm_client_feed_scored(fwm_client *c, const char *session, const char *text, const uint32_t *tokens, size_t count,
                           int topk, bool logprobs, fwm_client_token_fn fn, void *user, fwm_client_feed_result *out,
                           fwm_client_error *err) {
    if (!out) return fail(err, FWM_RPC_CLIENT_ARGUMENT, "out must not be NULL");
    if (!text && !tokens && count) return fail(err, FWM_RPC_CLIENT_ARGUMENT, "text or tokens must not be NULL");
    static const uint32_t none[1] = {0};
    return feed(c, session, text, text ? NULL : tokens ? tokens : none, count, topk, logprobs, fn, user, out, err);
}

static void fill_answer(fwm_client *c, const msgpack_object *r, fwm_client_answer *out) {
    memset(out, 0, sizeof *out);
    out->answer = arena_string(c, get(r, "answer"));
    if (!out->answer) out->answer = "";
    out->probability = (float)get_f64(r, "prob");
    out->pos = get_u64(r, "pos");
    out->topk_count = get_predictions(c, get(r, "topk"), &out->topk);
    out->unknown_count = get_spans(c, get(r, "unknown"), &out->unknown);
    if (!get(r, "answer") && out->topk_count) { /* predict: the top word is the answer */
        out->answer = out->topk[0].word;
        out->probability = out->topk[0].probability;
    }
}

int fwm_client_ask(fwm_client *c, const char *session, const char *question, bool commit, fwm_client_answer *out,
                   fwm_client_error *err) {
    return fwm_client_ask_topk(c, session, question, commit, -1, out, err);
}

int fwm_client_ask_topk(fwm_client *c, const char *session, const char *question, bool commit, int topk,
                        fwm_client_answer *out, fwm_client_error *err) {
    if (!c || !session || !question || !out)
        return fail(err, FWM_RPC_CLIENT_ARGUMENT, "client, session, question and out must not be NULL");
    uint32_t id = begin(c, "ask", topk >= 0 ? 4 : 3);
    arg_str(c, "session", session);
    arg_str(c, "question", question);
    fwm__rpc_pack_cstr(&c->pk, "commit");
    fwm__rpc_pack_bool(&c->pk, commit);
    if (topk >= 0) arg_uint(c, "topk", (uint64_t)topk);
    const msgpack_object *r;
    int rc = finish(c, id, NULL, NULL, &r, err);
    if (rc == FWM_RPC_OK) fill_answer(c, r, out);
    return rc;
}

int fwm_client_predict(fwm_client *c, const char *session, int topk, fwm_client_answer *out, fwm_client_error *err) {
    if (!c || !session || !out) return fail(err, FWM_RPC_CLIENT_ARGUMENT, "client, session and out must not be NULL");
    uint32_t id = begin(c, "predict", topk >= 0 ? 2 : 1);
    arg_str(c, "session", session);
    if (topk >= 0) arg_uint(c, "topk", (uint64_t)topk);
    const msgpack_object *r;
    int rc = finish(c, id, NULL, NULL, &r, err);
    if (rc == FWM_RPC_OK) fill_answer(c, r, out);
    return rc;
}

static int session_call(fwm_client *c, const char *method, const char *session, const msgpack_object **r,
                        fwm_client_error *err) {
    if (!c || !session) return fail(err, FWM_RPC_CLIENT_ARGUMENT, "client and session must not be NULL");
    uint32_t id = begin(c, method, 1);
    arg_str(c, "session", session);
    return finish(c, id, NULL, NULL, r, err);
}

int fwm_client_reset(fwm_client *c, const char *session, fwm_client_error *err) {
    const msgpack_object *r;
    return session_call(c, "reset", session, &r, err);
}

int fwm_client_reset_unprimed(fwm_client *c, const char *session, fwm_client_error *err) {
    if (!c || !session) return fail(err, FWM_RPC_CLIENT_ARGUMENT, "client and session must not be NULL");
    uint32_t id = begin(c, "reset", 2);
    arg_str(c, "session", session);
    arg_bool(c, "prime", false);
    const msgpack_object *r;
    return finish(c, id, NULL, NULL, &r, err);
}

int fwm_client_close_session(fwm_client *c, const char *session, fwm_client_error *err) {
    const msgpack_object *r;
    return session_call(c, "close", session, &r, err);
}

int fwm_client_fork(fwm_client *c, const char *session, char child[FWM_CLIENT_SESSION_ID_SIZE], fwm_client_error *err) {
    if (!child) return fail(err, FWM_RPC_CLIENT_ARGUMENT, "child must not be NULL");
    const msgpack_object *r;
    int rc = session_call(c, "fork", session, &r, err);
    return rc != FWM_RPC_OK ? rc : copy_session(r, "session", child, err);
}

int fwm_client_snapshot(fwm_client *c, const char *session, void **blob, size_t *size, fwm_client_error *err) {
    if (!blob || !size) return fail(err, FWM_RPC_CLIENT_ARGUMENT, "blob and size must not be NULL");
    *blob = NULL;
    *size = 0;
    const msgpack_object *r;
    int rc = session_call(c, "snapshot", session, &r, err);
    if (rc != FWM_RPC_OK) return rc;
    const msgpack_object *state = get(r, "state");
    if (!state || state->type != MSGPACK_OBJECT_BIN) return fail(err, FWM_RPC_BAD_RESPONSE, "the answer lacks 'state'");
    *blob = malloc(state->via.bin.size ? state->via.bin.size : 1);
    if (!*blob) return fail(err, FWM_RPC_CLIENT_ARGUMENT, "out of memory");
    memcpy(*blob, state->via.bin.ptr, state->via.bin.size);
    *size = state->via.bin.size;
    return FWM_RPC_OK;
}

int fwm_client_restore(fwm_client *c, const void *blob, size_t size, const char *model,
                       char session[FWM_CLIENT_SESSION_ID_SIZE], fwm_client_error *err) {
    if (!c || (!blob && size) || !session)
        return fail(err, FWM_RPC_CLIENT_ARGUMENT, "client, blob and session must not be NULL");
    uint32_t id = begin(c, "restore", model ? 2 : 1);
    fwm__rpc_pack_cstr(&c->pk, "state");
    msgpack_pack_bin(&c->pk, size);
    msgpack_pack_bin_body(&c->pk, blob, size);
    if (model) arg_str(c, "model", model);
    const msgpack_object *r;
    int rc = finish(c, id, NULL, NULL, &r, err);
    return rc != FWM_RPC_OK ? rc : copy_session(r, "session", session, err);
}

/* "prefix.key: value" lines for a map, recursively. */
static void render(const msgpack_object *o, const char *prefix, char *text, size_t capacity, size_t *used) {
    if (o->type == MSGPACK_OBJECT_MAP) {
        for (uint32_t i = 0; i < o->via.map.size; i++) {
            const msgpack_object *k = &o->via.map.ptr[i].key;
            char name[256];
            if (k->type != MSGPACK_OBJECT_STR) continue;
            snprintf(name, sizeof name, "%s%s%.*s", prefix, *prefix ? "." : "", (int)k->via.str.size, k->via.str.ptr);
            render(&o->via.map.ptr[i].val, name, text, capacity, used);
        }
        return;
    }
    if (*used >= capacity) return;
    int n = snprintf(text + *used, capacity - *used, "%s: ", prefix);
    if (n > 0) *used += (size_t)n < capacity - *used ? (size_t)n : capacity - *used;
    if (*used < capacity) {
        int w;
        if (o->type == MSGPACK_OBJECT_FLOAT32 || o->type == MSGPACK_OBJECT_FLOAT64)
            w = snprintf(text + *used, capacity - *used, "%.6g", o->via.f64);
        else
            w = msgpack_object_print_buffer(text + *used, capacity - *used, *o);
        if (w > 0) *used += (size_t)w < capacity - *used ? (size_t)w : capacity - *used;
    }
    if (*used + 1 < capacity) {
        text[(*used)++] = '\n';
        text[*used] = '\0';
    }
}

int fwm_client_stats(fwm_client *c, char *text, size_t capacity, fwm_client_error *err) {
    if (!c || !text || capacity == 0) return fail(err, FWM_RPC_CLIENT_ARGUMENT, "client and text must not be NULL");
    const msgpack_object *r;
    int rc = finish(c, begin(c, "stats", 0), NULL, NULL, &r, err);
    if (rc != FWM_RPC_OK) return rc;
    text[0] = '\0';
    size_t used = 0;
    render(r, "", text, capacity, &used);
    if (used < capacity) text[used] = '\0';
    else text[capacity - 1] = '\0';
    return FWM_RPC_OK;
}
