/* http.c - the HTTP port: libwebsockets on the server's loop, routes, authentication (http.h). */
#define _GNU_SOURCE /* accept4 */
#include "http.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <libwebsockets.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "address.h"
#include "connection.h"
#include "descriptors.h"
#include "fwm_alloc.h"
#include "fwm_utf8.h"
#include "websocket.h"

#define HEADER_BYTES 8192   /* the most request-header bytes lws buffers for one request (then 431) */
#define HEADER_POOL 1024    /* requests whose headers are parsed at once (a slot is taken on demand,
                             * about 9 KiB); others wait their turn, so it must dwarf what a few
                             * slow clients can hold */
#define HEADER_TIMEOUT_S 10 /* the most a request's headers may take to arrive (at most --message-timeout) */
#define KEEPALIVE_S 5       /* an idle keep-alive HTTP connection is closed after this long */
#define ACCEPTS_PER_WAKE 64 /* connections accepted per poll callback before the loop goes on */
#define BODY_CHUNK 32768    /* response body bytes per write */
#define RPC_PATH "/rpc"

struct fwm__http {
    fwm__server *server;
    uv_poll_t poll;      /* the listening socket's readiness */
    int fd;              /* the listening socket, -1: none */
    bool poll_open;
    struct lws_context *context; /* NULL once lws has destroyed it */
    struct lws_vhost *vhost;
    char address[128];
    char *root;          /* the static files' folder (realpath), or NULL */
};

/* Per lws connection (HTTP request after request, or the WebSocket it became). */
typedef struct http_session {
    fwm__connection *connection; /* the WebSocket's connection, or NULL */
    char *body;                  /* response body with LWS_PRE bytes before it, owned */
    size_t body_length, body_sent;
    bool close;                  /* close the connection once the response is out */
} http_session;

/* ---- listening (the same rules as --listen) ---- */

static void refuse_http(int fd, const char *status, const char *message) {
    char response[512];
    int n = snprintf(response, sizeof response,
                     "HTTP/1.1 %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %zu\r\n"
                     "Connection: close\r\n\r\n%s\n", status, strlen(message) + 1, message);
    ssize_t sent = send(fd, response, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
    (void)sent; /* best effort: the close says enough */
    close(fd);
}

static void on_listener(uv_poll_t *handle, int status, int events) {
    (void)events;
    fwm__http *h = handle->data;
    fwm__server *s = h->server;
    if (status < 0 || !h->context) return;
    for (int i = 0; i < ACCEPTS_PER_WAKE; i++) {
        int fd = accept4(h->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            int error = errno;
            if (error == EAGAIN || error == EWOULDBLOCK || error == EINTR) return;
            fwm__descriptors_accept_error(s, -error);
            if ((error == EMFILE || error == ENFILE) && s->has_spare_fd) { /* the spare makes room to say why */
                close(s->spare_fd);
                s->has_spare_fd = false;
                int refused = accept4(h->fd, NULL, NULL, SOCK_CLOEXEC);
                if (refused >= 0) {
                    s->metrics.connections_refused++;
                    refuse_http(refused, "503 Service Unavailable",
                                "the server is out of file descriptors; retry later");
                }
                fwm__descriptors_left(s); /* takes the spare back */
            }
            return;
        }
        uint64_t open = s->metrics.connections_open + s->metrics.http_connections_open -
                        s->metrics.websocket_connections_open;
        if (open >= s->config->max_connections || !fwm__descriptors_left(s)) {
            s->metrics.connections_refused++;
            char message[160];
            snprintf(message, sizeof message, "too many connections (max-connections %zu) or no file descriptors left; "
                     "retry later", s->config->max_connections);
            refuse_http(fd, "503 Service Unavailable", message);
            continue;
        }
        s->metrics.http_connections_total++;
        if (!lws_adopt_socket_vhost(h->vhost, fd)) fwm__descriptors_accept_error(s, UV_ENOMEM); /* lws closed fd */
    }
}

static int open_listener(fwm__http *h) {
    fwm__server *s = h->server;
    const char *text = s->config->http;
    const char *spec = strncmp(text, "tcp://", 6) == 0 ? text + 6 : strncmp(text, "http://", 7) == 0 ? text + 7 : text;
    struct sockaddr_storage addr;
    if (fwm__address_parse_tcp(spec, text, "http", &addr) != 0) return 1;
    h->fd = socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    socklen_t length = addr.ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
    if (h->fd < 0 || setsockopt(h->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(h->fd, (struct sockaddr *)&addr, length) != 0 || listen(h->fd, 1024) != 0) {
        fprintf(stderr, "fwm-serve: cannot listen on --http %s: %s\n", text, strerror(errno));
        return 1;
    }
    struct sockaddr_storage bound;
    socklen_t bound_length = sizeof bound;
    getsockname(h->fd, (struct sockaddr *)&bound, &bound_length);
    fwm__address_format(&bound, "http", h->address, sizeof h->address);
    if (fwm__address_check_exposure(s, &bound, h->address, "http") != 0) return 1;
    if (uv_poll_init_socket(&s->loop, &h->poll, h->fd) != 0) return 1;
    h->poll_open = true;
    h->poll.data = h;
    uv_poll_start(&h->poll, UV_READABLE, on_listener);
    return 0;
}

/* ---- responses ---- */

static int respond(struct lws *wsi, http_session *hs, unsigned status, const char *type, const char *extra_name,
                   const char *extra_value, char *body, size_t length) {
    fwm__server *s = lws_context_user(lws_get_context(wsi));
    s->metrics.http_responses[status / 100 < 6 ? status / 100 : 5]++;
    hs->body = body; /* freed in WSI_DESTROY or once sent */
    hs->body_length = length;
    hs->body_sent = 0;
    unsigned char buffer[LWS_PRE + 1024], *start = buffer + LWS_PRE, *p = start, *end = buffer + sizeof buffer - 1;
    if (lws_add_http_common_headers(wsi, status, type, length, &p, end) ||
        lws_add_http_header_by_name(wsi, (const unsigned char *)"cache-control:", (const unsigned char *)"no-store", 8,
                                    &p, end) ||
        (extra_name && lws_add_http_header_by_name(wsi, (const unsigned char *)extra_name,
                                                   (const unsigned char *)extra_value,
                                                   (int)strlen(extra_value), &p, end)) ||
        (hs->close &&
         lws_add_http_header_by_token(wsi, WSI_TOKEN_CONNECTION, (const unsigned char *)"close", 5, &p, end)) ||
        lws_finalize_write_http_header(wsi, start, &p, end))
        return 1;
    lws_callback_on_writable(wsi);
    return 0;
}

/* A body from a format, with LWS_PRE bytes of headroom. */
static char *body_printf(size_t *length, const char *format, ...) __attribute__((format(printf, 2, 3)));
static char *body_printf(size_t *length, const char *format, ...) {
    va_list args;
    va_start(args, format);
    int n = vsnprintf(NULL, 0, format, args);
    va_end(args);
    char *block = n >= 0 ? fwm__malloc(LWS_PRE + (size_t)n + 1) : NULL;
    if (!block) return NULL;
    va_start(args, format);
    vsnprintf(block + LWS_PRE, (size_t)n + 1, format, args);
    va_end(args);
    *length = (size_t)n;
    return block;
}

static int respond_text(struct lws *wsi, http_session *hs, unsigned status, const char *extra_name,
                        const char *extra_value, const char *message) {
    size_t length = 0;
    char *body = body_printf(&length, "%s\n", message);
    if (!body) return 1;
    return respond(wsi, hs, status, "text/plain; charset=utf-8", extra_name, extra_value, body, length);
}

/* A JSON string: quotes, backslashes and control characters escaped, invalid UTF-8 replaced. */
static void json_string(const char *value, char *out, size_t size) {
    char clean[600];
    fwm__utf8_sanitize(clean, sizeof clean, value, strlen(value));
    size_t used = 0;
    out[used++] = '"';
    for (const unsigned char *p = (const unsigned char *)clean; *p && used + 8 < size; p++) {
        if (*p == '"' || *p == '\\') {
            out[used++] = '\\';
            out[used++] = (char)*p;
        } else if (*p < 0x20) {
            used += (size_t)snprintf(out + used, size - used, "\\u%04x", *p);
        } else {
            out[used++] = (char)*p;
        }
    }
    out[used++] = '"';
    out[used] = '\0';
}

/* ---- authentication: Authorization: Bearer TOKEN ---- */

/* Whether the request carries the server's token (always true when it has none). */
static bool bearer_ok(struct lws *wsi, fwm__server *s, bool *presented) {
    char header[1100];
    int n = lws_hdr_copy(wsi, header, sizeof header, WSI_TOKEN_HTTP_AUTHORIZATION);
    *presented = n != 0;
    if (!s->auth_token) return true;
    if (n <= 7 || strncasecmp(header, "Bearer ", 7) != 0) return false;
    return fwm__server_token_matches(s, header + 7, (size_t)n - 7);
}

static int unauthorized(struct lws *wsi, http_session *hs, fwm__server *s, bool presented) {
    s->metrics.auth_failures++;
    hs->close = true; /* one guess per connection */
    return respond_text(wsi, hs, 401, "www-authenticate:", "Bearer",
                        presented ? "wrong token" : "this server requires its token: send Authorization: Bearer TOKEN");
}

/* ---- the endpoints ---- */

static int health(struct lws *wsi, http_session *hs, fwm__server *s) {
    uint64_t tokens_queued = fwm__server_tokens_queued(s);
    const fwm__config *cfg = s->config;
    char reason[400] = "", why[300];
    const char *status = "ready";
    uint64_t used = fwm__server_memory_used(s);
    uint64_t connections = s->metrics.connections_open + s->metrics.http_connections_open -
                           s->metrics.websocket_connections_open;
    if (s->shutting_down) {
        status = "draining";
        snprintf(reason, sizeof reason,
                 "the server is shutting down: it finishes what is in flight and takes no new work");
    } else if (!fwm__server_store_healthy(s, why, sizeof why)) {
        status = "failing";
        snprintf(reason, sizeof reason, "the session store cannot write: %s", why);
    } else if (tokens_queued >= cfg->max_queued_tokens) {
        status = "overloaded";
        snprintf(reason, sizeof reason, "%llu tokens queued, max-queued-tokens %zu",
                 (unsigned long long)tokens_queued, cfg->max_queued_tokens);
    } else if (!s->store && used + s->models[0].session_bytes > cfg->max_memory_bytes) { /* the default model's */
        status = "overloaded";
        snprintf(reason, sizeof reason,
                 "the memory budget has no room for another session (%llu of max-memory-bytes %zu)",
                 (unsigned long long)used, cfg->max_memory_bytes);
    } else if (s->sessions.count + s->reserved_sessions >= cfg->max_sessions) {
        status = "overloaded";
        snprintf(reason, sizeof reason, "%zu sessions, max-sessions %zu", s->sessions.count, cfg->max_sessions);
    } else if (connections >= cfg->max_connections) {
        status = "overloaded";
        snprintf(reason, sizeof reason, "%llu connections, max-connections %zu", (unsigned long long)connections,
                 cfg->max_connections);
    }
    char reason_json[900];
    json_string(reason, reason_json, sizeof reason_json);
    size_t length = 0;
    char *body = body_printf(&length,
                             "{\"status\":\"%s\",\"reason\":%s,\"sessions\":%zu,\"max_sessions\":%zu,"
                             "\"tokens_queued\":%llu,\"max_queued_tokens\":%zu,\"memory_used_bytes\":%llu,"
                             "\"memory_budget_bytes\":%zu,\"connections\":%llu,\"max_connections\":%zu}\n",
                             status, strcmp(status, "ready") == 0 ? "null" : reason_json, s->sessions.count,
                             cfg->max_sessions, (unsigned long long)tokens_queued, cfg->max_queued_tokens,
                             (unsigned long long)used, cfg->max_memory_bytes, (unsigned long long)connections,
                             cfg->max_connections);
    if (!body) return 1;
    return respond(wsi, hs, strcmp(status, "ready") == 0 ? 200 : 503, "application/json", NULL, NULL, body, length);
}

static int models(struct lws *wsi, http_session *hs, fwm__server *s) {
    size_t capacity = 256 + s->model_count * 2048, used = 0;
    char *block = fwm__malloc(LWS_PRE + capacity);
    if (!block) return 1;
    char *out = block + LWS_PRE;
    used += (size_t)snprintf(out + used, capacity - used, "{\"object\":\"list\",\"data\":[");
    for (size_t m = 0; m < s->model_count; m++) {
        const fwm__served_model *model = &s->models[m];
        const fwm_model_info *i = &model->info;
        char name[900];
        json_string(model->name, name, sizeof name);
        used += (size_t)snprintf(out + used, capacity - used,
                                 "%s{\"id\":%s,\"object\":\"model\",\"owned_by\":\"fwm\",\"default\":%s,"
                                 "\"architecture\":\"%s\",\"fingerprint\":\"%s\",\"vocab_size\":%u,"
                                 "\"embedding\":%u,\"hidden\":%u,"
                                 "\"memory\":[%u,%u,%u],\"reads\":%u,\"parameters\":%llu,\"session_bytes\":%zu,"
                                 "\"tokenizer\":\"%s\",\"has_unknown_token\":%s,\"logprobs\":%s}",
                                 m ? "," : "", name, m == 0 ? "true" : "false", i->architecture, model->fingerprint,
                                 i->vocab_size,
                                 i->embedding_length, i->hidden_size, i->memory_s, i->memory_r, i->memory_t,
                                 i->read_count, (unsigned long long)i->parameter_count, model->session_bytes,
                                 i->tokenizer, model->has_unknown ? "true" : "false",
                                 model->predicts_from_state ? "true" : "false");
    }
    used += (size_t)snprintf(out + used, capacity - used, "]}\n");
    return respond(wsi, hs, 200, "application/json", NULL, NULL, block, used);
}

static int metrics(struct lws *wsi, http_session *hs, fwm__server *s) {
    size_t length = 0;
    char *body = s->render_metrics(s, LWS_PRE, &length);
    if (!body) return 1;
    return respond(wsi, hs, 200, "text/plain; version=0.0.4; charset=utf-8", NULL, NULL, body, length);
}

/* The content type of a static file: the types a web page needs that lws' own table lacks (ES modules
 * must come as JavaScript, or browsers refuse them), then lws' table. */
static const char *content_type(const char *path) {
    static const struct {
        const char *suffix, *type;
    } extra[] = {{".mjs", "text/javascript"}, {".js", "text/javascript"}, {".map", "application/json"},
                 {".svg", "image/svg+xml"}, {".wasm", "application/wasm"}};
    size_t length = strlen(path);
    for (size_t i = 0; i < sizeof extra / sizeof extra[0]; i++) {
        size_t n = strlen(extra[i].suffix);
        if (length > n && strcmp(path + length - n, extra[i].suffix) == 0) return extra[i].type;
    }
    return lws_get_mimetype(path, NULL);
}

/* A static file under the root: realpath must stay inside it (no .., no symlink out), a regular file. */
static int static_file(struct lws *wsi, http_session *hs, fwm__http *h, const char *uri) {
    if (!h->root)
        return respond_text(wsi, hs, 404, NULL, NULL,
                            "not found (this server has no static files: --http-root DIR; the API is at /metrics, "
                            "/health, /v1/models and the WebSocket " RPC_PATH ")");
    char wanted[PATH_MAX], resolved[PATH_MAX];
    size_t root_length = strlen(h->root);
    bool dir = uri[strlen(uri) - 1] == '/';
    if (strlen(uri) > 1024 || strstr(uri, "..") || strchr(uri, '\\') ||
        snprintf(wanted, sizeof wanted, "%s%s%s", h->root, uri, dir ? "index.html" : "") >= (int)sizeof wanted)
        return respond_text(wsi, hs, 404, NULL, NULL, "not found");
    struct stat st;
    if (!realpath(wanted, resolved) || strncmp(resolved, h->root, root_length) != 0 || resolved[root_length] != '/' ||
        stat(resolved, &st) != 0 || !S_ISREG(st.st_mode))
        return respond_text(wsi, hs, 404, NULL, NULL, "not found");
    const char *type = content_type(resolved);
    fwm__server *s = h->server;
    s->metrics.http_responses[2]++;
    int n = lws_serve_http_file(wsi, resolved, type ? type : "application/octet-stream", NULL, 0);
    if (n < 0) return -1;
    if (n > 0 && lws_http_transaction_completed(wsi)) return -1;
    return 0;
}

/* The host part of "host[:port]" (an IPv6 literal keeps its brackets), lower-cased into out. */
static void host_part(const char *hostport, char *out, size_t size) {
    size_t n = hostport[0] == '[' ? strcspn(hostport, "]") + (strchr(hostport, ']') ? 1 : 0) : strcspn(hostport, ":");
    if (n >= size) n = size - 1;
    for (size_t i = 0; i < n; i++) out[i] = (char)tolower((unsigned char)hostport[i]);
    out[n] = '\0';
}

/* Without a token, on a loopback port, a request must name this machine in its Host header: a page
 * on another site that has its own name resolve to 127.0.0.1 (DNS rebinding) then reaches nothing.
 * (A port beyond loopback without a token is the operator's explicit --insecure choice.) */
static bool host_allowed(struct lws *wsi, fwm__server *s) {
    if (s->auth_token || !(strncmp(s->http->address, "http://127.", 11) == 0 ||
                           strncmp(s->http->address, "http://[::1]", 12) == 0))
        return true;
    char host[300], name[300];
    if (lws_hdr_copy(wsi, host, sizeof host, WSI_TOKEN_HOST) <= 0) return false;
    host_part(host, name, sizeof name);
    return strcmp(name, "localhost") == 0 || strncmp(name, "127.", 4) == 0 || strcmp(name, "[::1]") == 0 ||
           strcmp(name, "localhost.") == 0;
}

/* A WebSocket from a browser page carries the page's Origin: it must be this server's own
 * (scheme://Host), so a page of another site cannot drive the sessions (cross-site WebSocket
 * hijacking). Clients that are not browsers send no Origin. */
static bool origin_allowed(struct lws *wsi) {
    char origin[300], host[300];
    int n = lws_hdr_copy(wsi, origin, sizeof origin, WSI_TOKEN_ORIGIN);
    if (n == 0) return true;
    if (n < 0 || lws_hdr_copy(wsi, host, sizeof host, WSI_TOKEN_HOST) <= 0) return false;
    const char *rest = strncasecmp(origin, "http://", 7) == 0 ? origin + 7
                       : strncasecmp(origin, "https://", 8) == 0 ? origin + 8 : NULL;
    return rest && strcasecmp(rest, host) == 0;
}

static bool is_method(struct lws *wsi, enum lws_token_indexes token) {
    return lws_hdr_total_length(wsi, token) > 0;
}

static int route(struct lws *wsi, http_session *hs, fwm__http *h, const char *uri) {
    fwm__server *s = h->server;
    if (!host_allowed(wsi, s)) {
        hs->close = true;
        return respond_text(wsi, hs, 403, NULL, NULL,
                            "forbidden: without --auth-token-file this server answers only requests whose Host "
                            "is this machine (localhost, 127.x.x.x or [::1])");
    }
    bool api = strcmp(uri, "/metrics") == 0 || strcmp(uri, "/health") == 0 || strcmp(uri, "/v1/models") == 0;
    if (!is_method(wsi, WSI_TOKEN_GET_URI)) {
        hs->close = true; /* its body, if any, is not read */
        return respond_text(wsi, hs, 405, "allow:", "GET", "method not allowed: this server answers GET only");
    }
    if (strcmp(uri, RPC_PATH) == 0)
        return respond_text(wsi, hs, 426, "upgrade:", "websocket",
                            "msgpack-RPC is served here over WebSocket: send an Upgrade: websocket request");
    if (!api) return static_file(wsi, hs, h, uri);
    bool presented = false;
    if (!bearer_ok(wsi, s, &presented)) return unauthorized(wsi, hs, s, presented);
    if (strcmp(uri, "/metrics") == 0) return metrics(wsi, hs, s);
    if (strcmp(uri, "/health") == 0) return health(wsi, hs, s);
    return models(wsi, hs, s);
}

/* Write the next piece of the body; -1 closes the connection. */
static int write_body(struct lws *wsi, http_session *hs) {
    if (!hs->body) return 0;
    size_t left = hs->body_length - hs->body_sent;
    size_t chunk = left < BODY_CHUNK ? left : BODY_CHUNK;
    bool last = chunk == left;
    /* the bytes before this chunk (LWS_PRE of headroom, or body already sent) are lws's to use */
    unsigned char *at = (unsigned char *)hs->body + LWS_PRE + hs->body_sent;
    if (chunk && lws_write(wsi, at, chunk, last ? LWS_WRITE_HTTP_FINAL : LWS_WRITE_HTTP) < (int)chunk) return -1;
    hs->body_sent += chunk;
    if (!last) {
        lws_callback_on_writable(wsi);
        return 0;
    }
    fwm__free(hs->body);
    hs->body = NULL;
    if (hs->close) return -1;
    return lws_http_transaction_completed(wsi) ? -1 : 0;
}

/* ---- WebSocket upgrade ---- */

static int filter_upgrade(struct lws *wsi, fwm__server *s) {
    char uri[64];
    if (lws_hdr_copy(wsi, uri, sizeof uri, WSI_TOKEN_GET_URI) <= 0 || strcmp(uri, RPC_PATH) != 0) return -1;
    if (s->shutting_down || !host_allowed(wsi, s) || !origin_allowed(wsi)) return -1;
    bool presented = false;
    if (!bearer_ok(wsi, s, &presented) && presented) { /* a wrong header is refused; none: hello {token} later */
        s->metrics.auth_failures++;
        return -1;
    }
    return 0;
}

static int callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len) {
    struct lws_context *context = lws_get_context(wsi);
    fwm__server *s = context ? lws_context_user(context) : NULL;
    http_session *hs = user;
    if (!s) return 0;
    fwm__http *h = s->http;
    switch (reason) {
    case LWS_CALLBACK_WSI_CREATE:
        s->metrics.http_connections_open++;
        return 0;
    case LWS_CALLBACK_WSI_DESTROY:
        s->metrics.http_connections_open--;
        if (hs) {
            fwm__free(hs->body);
            hs->body = NULL;
            if (hs->connection) {
                fwm__connection *c = hs->connection;
                hs->connection = NULL;
                fwm__ws_closed(c);
                fwm__server_flush(s);
            }
        }
        return 0;
    case LWS_CALLBACK_HTTP:
        if (!hs || !h) return -1;
        fwm__free(hs->body);
        hs->body = NULL;
        hs->close = false;
        return route(wsi, hs, h, in && *(const char *)in ? (const char *)in : "/") ? -1 : 0;
    case LWS_CALLBACK_HTTP_WRITEABLE:
        return hs ? write_body(wsi, hs) : -1;
    case LWS_CALLBACK_HTTP_FILE_COMPLETION:
        return lws_http_transaction_completed(wsi) ? -1 : 0;
    case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION:
        return filter_upgrade(wsi, s);
    case LWS_CALLBACK_ESTABLISHED: {
        bool presented = false;
        bool authenticated = s->auth_token && bearer_ok(wsi, s, &presented) && presented;
        if (!hs || !(hs->connection = fwm__ws_open(s, wsi, authenticated))) return -1;
        fwm__server_flush(s);
        return 0;
    }
    case LWS_CALLBACK_RECEIVE:
        if (hs && hs->connection) fwm__ws_receive(hs->connection, in, len);
        return 0;
    case LWS_CALLBACK_SERVER_WRITEABLE:
        return hs && hs->connection ? fwm__ws_writable(hs->connection) : -1;
    case LWS_CALLBACK_CLOSED:
        if (hs && hs->connection) {
            fwm__connection *c = hs->connection;
            hs->connection = NULL;
            fwm__ws_closed(c);
            fwm__server_flush(s);
        }
        return 0;
    default:
        return 0;
    }
}

static const struct lws_protocols protocols[] = {
    {"msgpack-rpc", callback, sizeof(http_session), 16384, 0, NULL, 0},
    {NULL, NULL, 0, 0, 0, NULL, 0},
};

/* ---- lifetime ---- */

#define LOG_INTERVAL_NS 5000000000ull /* lws' errors, some of which a client can cause, at most this often */

static const fwm__server *log_server; /* lws logs through a plain function */
static uint64_t log_last_ns, log_suppressed;

static void emit_log(int level, const char *line) {
    (void)level;
    uint64_t now = fwm__now_ns();
    if (!log_server) return;
    if (log_last_ns && now - log_last_ns < LOG_INTERVAL_NS) {
        log_suppressed++;
        return;
    }
    size_t n = strlen(line);
    while (n && line[n - 1] == '\n') n--;
    if (log_suppressed)
        fwm__server_log(log_server, "http: %.*s (and %llu more libwebsockets errors since the last)", (int)n, line,
                        (unsigned long long)log_suppressed);
    else
        fwm__server_log(log_server, "http: %.*s", (int)n, line);
    log_last_ns = now;
    log_suppressed = 0;
}

static char *static_root(const fwm__config *cfg) {
    char *configured = cfg->http_root ? NULL : fwm__config_default_www();
    const char *folder = cfg->http_root ? cfg->http_root : configured;
    char resolved[PATH_MAX];
    char *root = NULL;
    if (folder && realpath(folder, resolved)) {
        size_t n = strlen(resolved) + 1;
        if ((root = fwm__malloc(n))) memcpy(root, resolved, n);
    }
    fwm__free(configured);
    return root;
}

int fwm__http_open(fwm__server *s) {
    fwm__http *h = fwm__calloc(1, sizeof *h);
    if (!h) return 1;
    s->http = h;
    h->server = s;
    h->fd = -1;
    h->root = static_root(s->config);
    if (s->config->http_root && !h->root) {
        fprintf(stderr, "fwm-serve: --http-root %s: %s\n", s->config->http_root, strerror(errno));
        return 1;
    }
    if (open_listener(h) != 0) return 1;
    log_server = s;
    lws_set_log_level(LLL_ERR, emit_log);
    struct lws_context_creation_info info;
    memset(&info, 0, sizeof info);
    void *loops[1] = {&s->loop};
    info.options = LWS_SERVER_OPTION_LIBUV | LWS_SERVER_OPTION_UV_NO_SIGSEGV_SIGFPE_SPIN;
    info.foreign_loops = loops;
    info.port = CONTEXT_PORT_NO_LISTEN_SERVER; /* sockets come from on_listener */
    info.protocols = protocols;
    info.user = s;
    info.pcontext = &h->context;
    info.max_http_header_data = HEADER_BYTES;
    info.max_http_header_pool = HEADER_POOL;
    info.keepalive_timeout = KEEPALIVE_S;
    /* a request's headers must arrive within --message-timeout, as a message on the msgpack port */
    double limit = s->config->message_timeout_s > 0 && s->config->message_timeout_s < HEADER_TIMEOUT_S
                       ? s->config->message_timeout_s : HEADER_TIMEOUT_S;
    info.timeout_secs = (unsigned)ceil(limit);
    info.timeout_secs_ah_idle = info.timeout_secs;
    uint64_t wanted_fds = (uint64_t)s->config->max_connections + 64;
    info.fd_limit_per_thread = (unsigned)(wanted_fds < s->fd_limit ? wanted_fds : s->fd_limit);
    info.vhost_name = "fwm";
    h->context = lws_create_context(&info);
    if (!h->context) {
        fprintf(stderr, "fwm-serve: --http %s: cannot start libwebsockets (is its libuv plugin, Debian package "
                        "libwebsockets-evlib-uv, installed?)\n", s->config->http);
        return 1;
    }
    h->vhost = lws_get_vhost_by_name(h->context, "fwm");
    if (!h->vhost) {
        fprintf(stderr, "fwm-serve: --http %s: libwebsockets made no vhost\n", s->config->http);
        return 1;
    }
    fwm__server_log(s, "HTTP on %s (/metrics, /health, /v1/models, WebSocket %s%s%s)", h->address, RPC_PATH,
                    h->root ? ", files from " : "", h->root ? h->root : "");
    return 0;
}

const char *fwm__http_address(const fwm__http *h) {
    return h->address;
}

static void on_poll_closed(uv_handle_t *handle) {
    fwm__http *h = handle->data;
    if (h->fd >= 0) close(h->fd);
    h->fd = -1;
}

void fwm__http_close(fwm__server *s) {
    fwm__http *h = s->http;
    if (!h) return;
    if (h->poll_open) {
        h->poll_open = false;
        uv_poll_stop(&h->poll);
        uv_close((uv_handle_t *)&h->poll, on_poll_closed);
    } else if (h->fd >= 0) {
        close(h->fd);
        h->fd = -1;
    }
    if (h->context) lws_context_destroy(h->context); /* finishes on the loop; then h->context is NULL */
}

void fwm__http_release(fwm__server *s) {
    fwm__http *h = s->http;
    if (!h) return;
    if (h->context) lws_context_destroy(h->context); /* the loop has ended: the last step */
    if (h->fd >= 0) close(h->fd);
    fwm__free(h->root);
    fwm__free(h);
    s->http = NULL;
    log_server = NULL;
}
