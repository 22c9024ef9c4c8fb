/* socket.c - the connection's transport over a libuv stream (TCP or Unix socket), and accepting
 * one from a listener (socket.h). */
#include "socket.h"

#include <stdio.h>

#include "descriptors.h"
#include "fwm/fwm_protocol.h"

static void on_close(uv_handle_t *handle) {
    fwm__connection_closed((fwm__connection *)handle);
}

static void on_alloc(uv_handle_t *handle, size_t suggested, uv_buf_t *buf) {
    (void)suggested;
    fwm__connection *c = (fwm__connection *)handle;
    size_t available = 0, before = c->reader.capacity;
    void *space = fwm__rpc_reader_space(&c->reader, FWM_CONNECTION_READ_CHUNK, &available);
    fwm__server *s = c->server;
    s->metrics.input_buffer_bytes += c->reader.capacity - before;
    /* A large message's buffer must fit in the memory budget (small ones always may). */
    if (space && c->reader.capacity > before && c->reader.capacity > FWM_CONNECTION_FREE_BUFFER_BYTES &&
        !fwm__server_memory_fits(s, 0)) {
        c->refused_buffer = c->reader.capacity; /* refused in on_read: libuv forbids stopping here */
        space = NULL;
    }
    if (available > 4 * FWM_CONNECTION_READ_CHUNK) available = 4 * FWM_CONNECTION_READ_CHUNK;
    *buf = uv_buf_init(space, space ? (unsigned)available : 0); /* len 0: libuv reports UV_ENOBUFS */
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf);

static void socket_update_reading(fwm__connection *c, bool want) {
    if (want && !c->reading) {
        if (uv_read_start(&c->h.stream, on_alloc, on_read) == 0) c->reading = true;
    } else if (!want && c->reading) {
        uv_read_stop(&c->h.stream);
        c->reading = false;
        c->partial_since_ns = 0; /* the peer cannot finish a message we do not read */
    }
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf) {
    (void)buf;
    fwm__connection *c = (fwm__connection *)stream;
    if (nread > 0) {
        c->last_activity_ns = fwm__now_ns();
        fwm__rpc_reader_commit(&c->reader, (size_t)nread);
        fwm__connection_process(c);
    } else if (nread == UV_EOF) {
        c->read_eof = true;
        fwm__connection_process(c);
    } else if (nread == UV_ENOBUFS && c->refused_buffer) {
        fwm__server *s = c->server;
        char message[200];
        snprintf(message, sizeof message,
                 "no room in the server's memory budget (max-memory-bytes %zu) for a %zu-byte input buffer",
                 s->config->max_memory_bytes, c->refused_buffer);
        s->metrics.memory_refusals++;
        c->refused_buffer = 0;
        fwm__connection_fail(c, FWM_RPC_OVERLOADED, message);
    } else if (nread < 0) {
        fwm__connection_close(c);
    }
    fwm__server_flush(c->server);
}

static void on_write(uv_write_t *req, int status) {
    fwm__connection_written((fwm__write *)req, status);
}

static int socket_send(fwm__connection *c, fwm__write *w) {
    uv_buf_t buf = uv_buf_init(w->data, (unsigned)w->length);
    return uv_write(&w->req, &c->h.stream, &buf, 1, on_write);
}

static void socket_close(fwm__connection *c) {
    uv_close(&c->h.handle, on_close);
}

static const fwm__transport socket_transport = {socket_send, socket_update_reading, socket_close};

/* Refuse a connection that must not keep its descriptor: the error notification if the fresh
 * socket's buffer takes it at once (it does: a few hundred bytes), then close now. */
static void refuse_now(fwm__connection *c, int code, const char *message) {
    msgpack_sbuffer b;
    msgpack_sbuffer_init(&b);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &b, msgpack_sbuffer_write);
    fwm__connection_pack_error_notification(&pk, code, message);
    uv_buf_t buf = uv_buf_init(b.data, (unsigned)b.size);
    uv_try_write(&c->h.stream, &buf, 1);
    msgpack_sbuffer_destroy(&b);
    fwm__connection_close(c);
}

static void on_reject_closed(uv_handle_t *handle) {
    fwm__server *s = handle->data;
    s->reject_busy = false;
    uv_stream_t *waiting = s->reject_waiting;
    s->reject_waiting = NULL;
    if (waiting && !s->shutting_down) fwm__socket_accept(s, waiting); /* its pending connection */
}

/* Out of memory for a new connection: accept it into the server's reject handle and close it, so the
 * client learns at once and the listener goes on accepting (libuv accepts nothing more from a
 * listener whose pending connection was not taken). With the handle busy, the connection waits for
 * its close callback. */
static void reject_pending(fwm__server *s, uv_stream_t *listener) {
    if (s->reject_busy) {
        s->reject_waiting = listener;
        return;
    }
    int rc = listener->type == UV_TCP ? uv_tcp_init(&s->loop, &s->reject.tcp)
                                      : uv_pipe_init(&s->loop, &s->reject.pipe, 0);
    if (rc != 0) return;
    s->reject.handle.data = s;
    s->reject_busy = true;
    s->metrics.connections_refused++;
    uv_accept(listener, &s->reject.stream);
    uv_close(&s->reject.handle, on_reject_closed);
}

void fwm__socket_accept(fwm__server *s, uv_stream_t *listener) {
    fwm__connection *c = fwm__connection_new(s, &socket_transport, sizeof(fwm__connection));
    if (!c) {
        fwm__descriptors_accept_error(s, UV_ENOMEM);
        reject_pending(s, listener);
        return;
    }
    int rc = listener->type == UV_TCP ? uv_tcp_init(&s->loop, &c->h.tcp) : uv_pipe_init(&s->loop, &c->h.pipe, 0);
    if (rc != 0) {
        fwm__descriptors_accept_error(s, rc);
        fwm__connection_closed(c); /* no handle to close: unlink and free it */
        return;
    }
    if ((rc = uv_accept(listener, &c->h.stream)) != 0) {
        fwm__descriptors_accept_error(s, rc);
        fwm__connection_close(c);
        return;
    }
    if (listener->type == UV_TCP) uv_tcp_nodelay(&c->h.tcp, 1);
    if (!fwm__descriptors_left(s)) { /* it took the last one: the next accept would fail */
        char message[160];
        snprintf(message, sizeof message,
                 "the server is out of file descriptors (open-file limit %llu, %llu connections "
                 "open); retry later", (unsigned long long)s->fd_limit,
                 (unsigned long long)s->metrics.connections_open - 1);
        fwm__descriptors_accept_error(s, UV_EMFILE);
        s->metrics.connections_refused++;
        refuse_now(c, FWM_RPC_OVERLOADED, message);
        return;
    }
    if (!fwm__connection_admit(c, listener->type == UV_NAMED_PIPE)) return;
    fwm__connection_update_reading(c);
}
