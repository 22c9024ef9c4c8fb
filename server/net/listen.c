/* listen.c - bind the TCP and Unix-socket listeners (--listen), write the port file (listen.h).
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

#include "address.h"
#include "connection.h"
#include "descriptors.h"
#include "fwm_alloc.h"
#include "listen.h"
#include "socket.h"

/* The classic trick when accept itself failed for want of descriptors: give back the spare, accept
 * the pending connection, tell it why, close it, take the spare again. */
static void refuse_with_spare(fwm__listener *l) {
    fwm__server *s = l->server;
    uv_os_fd_t listen_fd;
    if (!s->has_spare_fd || uv_fileno(&l->h.handle, &listen_fd) != 0) return;
    fwm__descriptors_close_spare(s);
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
    fwm__descriptors_open_spare(s);
}

static void on_connection(uv_stream_t *listener, int status) {
    fwm__listener *l = (fwm__listener *)listener;
    if (l->server->shutting_down) return;
    if (status < 0) {
        fwm__descriptors_accept_error(l->server, status);
        if (status == UV_EMFILE || status == UV_ENFILE) refuse_with_spare(l);
        return;
    }
    fwm__socket_accept(l->server, listener);
    fwm__server_flush(l->server);
}

static int open_tcp(fwm__server *s, fwm__listener *l, const char *spec, const char *text) {
    struct sockaddr_storage addr;
    if (fwm__address_parse_tcp(spec, text, "listen", &addr) != 0) return 1;
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
    fwm__address_format(&bound, "tcp", l->address, sizeof l->address);
    return fwm__address_check_exposure(s, &bound, l->address, "listen");
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

int fwm__listeners_open(fwm__server *s) {
    const fwm__config *cfg = s->config;
    fwm__descriptors_raise_limit(s);
    fwm__descriptors_open_spare(s);
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
    return 0;
}

void fwm__listeners_close(fwm__server *s) {
    fwm__descriptors_close_spare(s);
    for (size_t i = 0; i < s->listener_count; i++) {
        fwm__listener *l = &s->listeners[i];
        if (!l->open) continue;
        l->open = false;
        uv_close(&l->h.handle, NULL);
        if (l->unix_path[0]) unlink(l->unix_path);
    }
}

int fwm__listeners_write_port_file(const fwm__server *s, const char *http_address) {
    const char *path = s->config->port_file;
    char temp[1024];
    snprintf(temp, sizeof temp, "%s.tmp%ld", path, (long)getpid());
    FILE *f = fopen(temp, "w");
    if (!f) {
        fprintf(stderr, "fwm-serve: cannot write port file '%s': %s\n", temp, strerror(errno));
        return 1;
    }
    for (size_t i = 0; i < s->listener_count; i++) fprintf(f, "%s\n", s->listeners[i].address);
    if (http_address) fprintf(f, "%s\n", http_address);
    if (fclose(f) != 0 || rename(temp, path) != 0) {
        fprintf(stderr, "fwm-serve: cannot write port file '%s': %s\n", path, strerror(errno));
        unlink(temp);
        return 1;
    }
    return 0;
}
