/* listen.c - parse listen addresses, bind TCP and Unix-socket listeners, write the port file.
 *
 * Addresses: "tcp://HOST:PORT", "HOST:PORT", "tcp://[IPV6]:PORT", "unix:PATH" (or "unix://PATH").
 * Port 0 lets the kernel pick; the bound address is logged and written to --port-file (atomically:
 * a temp file renamed into place), so tests can listen on port 0 and find the port.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "connection.h"
#include "fwm_alloc.h"
#include "http.h"
#include "server.h"

#define FD_MARGIN 32 /* descriptors besides connections: stdio, the loop's, listeners, the spare */
#define ACCEPT_LOG_INTERVAL_NS 5000000000ull

/* ---- running out of file descriptors ---- */

/* Raise RLIMIT_NOFILE's soft limit to the hard one; warn when max-connections cannot fit under it. */
static void raise_fd_limit(fwm__server *s) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return;
    if (rl.rlim_cur < rl.rlim_max) {
        struct rlimit raised = {rl.rlim_max, rl.rlim_max};
        if (setrlimit(RLIMIT_NOFILE, &raised) == 0) rl.rlim_cur = rl.rlim_max;
    }
    s->fd_limit = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t)rl.rlim_cur;
    uint64_t want = (uint64_t)s->config->max_connections + FD_MARGIN;
    if (s->fd_limit < want)
        fwm__server_log(s, "WARNING: max-connections %zu needs about %llu file descriptors, but the open-file limit "
                           "(RLIMIT_NOFILE) is %llu: connections beyond it (less the server's own dozen or so "
                           "descriptors) are refused with 'overloaded' (raise the limit with ulimit -n, or lower "
                           "--max-connections)",
                        s->config->max_connections, (unsigned long long)want, (unsigned long long)s->fd_limit);
}

static void open_spare(fwm__server *s) {
    s->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    s->has_spare_fd = s->spare_fd >= 0;
}

static void close_spare(fwm__server *s) {
    if (s->has_spare_fd) close(s->spare_fd);
    s->has_spare_fd = false;
}

bool fwm__listeners_descriptor_left(fwm__server *s) {
    if (!s->has_spare_fd) open_spare(s); /* lost in a trick: take it back first */
    int probe = s->has_spare_fd ? fcntl(s->spare_fd, F_DUPFD_CLOEXEC, 0) : -1;
    if (probe < 0) return errno != EMFILE && errno != ENFILE; /* another failure (no /dev/null): cannot tell */
    close(probe);
    return true;
}

void fwm__listeners_accept_error(fwm__server *s, int status) {
    fwm__metrics *m = &s->metrics;
    m->accept_errors++;
    uint64_t now = fwm__now_ns();
    if (m->accept_log_ns && now - m->accept_log_ns < ACCEPT_LOG_INTERVAL_NS) {
        m->accept_errors_unlogged++;
        return;
    }
    fwm__server_log(s, "cannot accept a connection: %s (open-file limit %llu, %llu connections open; "
                       "%llu more failures since the last report, %llu in all; see stats accept_errors)",
                    uv_strerror(status), (unsigned long long)s->fd_limit, (unsigned long long)m->connections_open,
                    (unsigned long long)m->accept_errors_unlogged, (unsigned long long)m->accept_errors);
    m->accept_log_ns = now;
    m->accept_errors_unlogged = 0;
}

/* The classic trick when accept itself failed for want of descriptors: give back the spare, accept
 * the pending connection, tell it why, close it, take the spare again. */
static void refuse_with_spare(fwm__listener *l) {
    fwm__server *s = l->server;
    uv_os_fd_t listen_fd;
    if (!s->has_spare_fd || uv_fileno(&l->h.handle, &listen_fd) != 0) return;
    close_spare(s);
    int fd = accept(listen_fd, NULL, NULL);
    if (fd >= 0) {
        char message[128];
        snprintf(message, sizeof message, "the server is out of file descriptors (open-file limit %llu); retry later",
                 (unsigned long long)s->fd_limit);
        msgpack_sbuffer b;
        msgpack_sbuffer_init(&b);
        msgpack_packer pk;
        msgpack_packer_init(&pk, &b, msgpack_sbuffer_write);
        fwm__connection_pack_error_notification(&pk, FWM_RPC_OVERLOADED, message);
        ssize_t sent = send(fd, b.data, b.size, MSG_DONTWAIT | MSG_NOSIGNAL);
        (void)sent; /* best effort: the peer sees the close either way */
        msgpack_sbuffer_destroy(&b);
        close(fd);
        s->metrics.connections_refused++;
    }
    open_spare(s);
}

static void on_connection(uv_stream_t *listener, int status) {
    fwm__listener *l = (fwm__listener *)listener;
    if (l->server->shutting_down) return;
    if (status < 0) {
        fwm__listeners_accept_error(l->server, status);
        if (status == UV_EMFILE || status == UV_ENFILE) refuse_with_spare(l);
        return;
    }
    fwm__connection_accept(l->server, listener);
    fwm__server_flush(l->server);
}

static bool is_loopback(const struct sockaddr *sa) {
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
    }
    if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        return IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
    }
    return false;
}

int fwm__listen_parse_tcp(const char *spec, const char *text, const char *flag, struct sockaddr_storage *addr) {
    char host[256];
    const char *colon;
    if (spec[0] == '[') {
        const char *close = strchr(spec, ']');
        if (!close || close[1] != ':') goto bad;
        snprintf(host, sizeof host, "%.*s", (int)(close - spec - 1), spec + 1);
        colon = close + 1;
    } else {
        colon = strrchr(spec, ':');
        if (!colon) goto bad;
        snprintf(host, sizeof host, "%.*s", (int)(colon - spec), spec);
    }
    char *end = NULL;
    long port = strtol(colon + 1, &end, 10);
    if (!end || *end != '\0' || end == colon + 1 || port < 0 || port > 65535) goto bad;
    if (strcmp(host, "localhost") == 0) snprintf(host, sizeof host, "127.0.0.1");
    memset(addr, 0, sizeof *addr);
    if (uv_ip4_addr(host, (int)port, (struct sockaddr_in *)addr) != 0 &&
        uv_ip6_addr(host, (int)port, (struct sockaddr_in6 *)addr) != 0) {
        fprintf(stderr, "fwm-serve: --%s %s: '%s' is not a numeric IPv4/IPv6 address\n", flag, text, host);
        return 1;
    }
    return 0;
bad:
    fprintf(stderr, "fwm-serve: --%s %s: expected tcp://HOST:PORT%s\n", flag, text,
            strcmp(flag, "listen") == 0 ? " or unix:PATH" : "");
    return 1;
}

void fwm__listen_format(const struct sockaddr_storage *bound, const char *scheme, char *out, size_t size) {
    char ip[64] = "?";
    if (bound->ss_family == AF_INET6) {
        uv_ip6_name((const struct sockaddr_in6 *)bound, ip, sizeof ip);
        snprintf(out, size, "%s://[%s]:%d", scheme, ip, ntohs(((const struct sockaddr_in6 *)bound)->sin6_port));
    } else {
        uv_ip4_name((const struct sockaddr_in *)bound, ip, sizeof ip);
        snprintf(out, size, "%s://%s:%d", scheme, ip, ntohs(((const struct sockaddr_in *)bound)->sin_port));
    }
}

int fwm__listen_check_exposure(fwm__server *s, const struct sockaddr_storage *bound, const char *address,
                               const char *flag) {
    if (is_loopback((const struct sockaddr *)bound) || s->auth_token) return 0;
    if (!s->config->insecure) {
        fprintf(stderr, "fwm-serve: --%s %s: not a loopback address, and the server has no token: anyone who "
                        "can reach it could use every session. Give --auth-token-file FILE (or --insecure to "
                        "serve it without authentication)\n", flag, address);
        return 1;
    }
    fwm__server_log(s, "WARNING: %s is not a loopback address: the server is reachable from the network "
                       "and has no authentication (--insecure)", address);
    return 0;
}

static int open_tcp(fwm__server *s, fwm__listener *l, const char *spec, const char *text) {
    struct sockaddr_storage addr;
    if (fwm__listen_parse_tcp(spec, text, "listen", &addr) != 0) return 1;
    uv_tcp_init(&s->loop, &l->h.tcp);
    l->open = true;
    int rc = uv_tcp_bind(&l->h.tcp, (const struct sockaddr *)&addr, 0);
    if (rc == 0) rc = uv_listen(&l->h.stream, 1024, on_connection);
    if (rc != 0) {
        fprintf(stderr, "fwm-serve: cannot listen on %s: %s\n", text, uv_strerror(rc));
        return 1;
    }
    struct sockaddr_storage bound;
    int length = sizeof bound;
    uv_tcp_getsockname(&l->h.tcp, (struct sockaddr *)&bound, &length);
    fwm__listen_format(&bound, "tcp", l->address, sizeof l->address);
    return fwm__listen_check_exposure(s, &bound, l->address, "listen");
}

/* What is at `path`: a socket nobody listens on (left by a server that died), a live one, or
 * something else. */
typedef enum { SOCKET_STALE, SOCKET_LIVE, SOCKET_OTHER } socket_state;

static socket_state probe_socket(const char *path) {
    struct stat st;
    if (lstat(path, &st) != 0 || !S_ISSOCK(st.st_mode)) return SOCKET_OTHER;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return SOCKET_OTHER;
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
    int rc = connect(fd, (struct sockaddr *)&sa, sizeof sa);
    int error = errno;
    close(fd);
    if (rc == 0) return SOCKET_LIVE;
    return error == ECONNREFUSED ? SOCKET_STALE : SOCKET_OTHER;
}

static int open_unix(fwm__server *s, fwm__listener *l, const char *path, const char *text) {
    if (!*path || strlen(path) >= sizeof l->unix_path) {
        fprintf(stderr, "fwm-serve: --listen %s: the socket path is empty or too long\n", text);
        return 1;
    }
    uv_pipe_init(&s->loop, &l->h.pipe, 0);
    l->open = true;
    int rc = uv_pipe_bind(&l->h.pipe, path);
    if (rc == UV_EADDRINUSE) { /* a socket file left by a server that died is replaced; a live one is not */
        socket_state state = probe_socket(path);
        if (state == SOCKET_STALE && unlink(path) == 0) {
            fwm__server_log(s, "replaced the stale socket file %s (nothing listened on it)", path);
            rc = uv_pipe_bind(&l->h.pipe, path);
        } else if (state == SOCKET_LIVE) {
            fprintf(stderr, "fwm-serve: cannot listen on %s: another server is listening on that socket\n", text);
            return 1;
        }
    }
    if (rc == 0) {
        snprintf(l->unix_path, sizeof l->unix_path, "%s", path);
        if (chmod(path, (mode_t)s->config->unix_mode) != 0) { /* before listen: nobody connected yet */
            fprintf(stderr, "fwm-serve: cannot set mode %04o on %s (--unix-mode): %s\n", s->config->unix_mode, path,
                    strerror(errno));
            return 1;
        }
        rc = uv_listen(&l->h.stream, 1024, on_connection);
    }
    if (rc != 0) {
        fprintf(stderr, "fwm-serve: cannot listen on %s: %s%s\n", text, uv_strerror(rc),
                rc == UV_EADDRINUSE ? " (the path exists and is not a socket file)" : "");
        return 1;
    }
    snprintf(l->address, sizeof l->address, "unix:%s", path);
    return 0;
}

static int write_port_file(const fwm__server *s) {
    const char *path = s->config->port_file;
    char temp[1024];
    snprintf(temp, sizeof temp, "%s.tmp%ld", path, (long)getpid());
    FILE *f = fopen(temp, "w");
    if (!f) {
        fprintf(stderr, "fwm-serve: cannot write port file '%s': %s\n", temp, strerror(errno));
        return 1;
    }
    for (size_t i = 0; i < s->listener_count; i++) fprintf(f, "%s\n", s->listeners[i].address);
    if (s->http) fprintf(f, "%s\n", fwm__http_address(s->http));
    if (fclose(f) != 0 || rename(temp, path) != 0) {
        fprintf(stderr, "fwm-serve: cannot write port file '%s': %s\n", path, strerror(errno));
        unlink(temp);
        return 1;
    }
    return 0;
}

int fwm__listeners_open(fwm__server *s) {
    const fwm__config *cfg = s->config;
    raise_fd_limit(s);
    open_spare(s);
    static const char *fallback[] = {FWM_DEFAULT_LISTEN};
    const char *const *addresses = cfg->listen_count ? (const char *const *)cfg->listen : fallback;
    size_t count = cfg->listen_count ? cfg->listen_count : 1;
    s->listeners = fwm__calloc(count, sizeof *s->listeners);
    if (!s->listeners) return 1;
    for (size_t i = 0; i < count; i++) {
        fwm__listener *l = &s->listeners[i];
        const char *a = addresses[i];
        l->server = s;
        s->listener_count = i + 1;
        int rc;
        if (strncmp(a, "unix://", 7) == 0) rc = open_unix(s, l, a + 7, a);
        else if (strncmp(a, "unix:", 5) == 0) rc = open_unix(s, l, a + 5, a);
        else if (strncmp(a, "tcp://", 6) == 0) rc = open_tcp(s, l, a + 6, a);
        else rc = open_tcp(s, l, a, a);
        if (rc != 0) return 1;
        l->h.handle.data = l;
        fwm__server_log(s, "listening on %s", l->address);
    }
    if (cfg->http && fwm__http_open(s) != 0) return 1;
    return cfg->port_file ? write_port_file(s) : 0;
}

void fwm__listeners_close(fwm__server *s) {
    close_spare(s);
    for (size_t i = 0; i < s->listener_count; i++) {
        fwm__listener *l = &s->listeners[i];
        if (!l->open) continue;
        l->open = false;
        uv_close(&l->h.handle, NULL);
        if (l->unix_path[0]) unlink(l->unix_path);
    }
}
