/* connection.c - per-connection I/O, backpressure and lifetime (see connection.h). */
#include "connection.h"
#include "tiering/lookup.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fwm_alloc.h"
#include "methods/methods.h"
#include "websocket.h"

#define READ_CHUNK 65536
#define ADMIN_CONNECTIONS 4 /* Unix-socket connections allowed beyond --max-connections (for stats) */
#define CLOSE_GRACE_NS 5000000000ull /* a failed connection gets this long to take its last words */

static void release_job_bytes(fwm__connection *c, size_t bytes) {
    if (bytes) fwm__scheduler_delivered(c->server->scheduler, &c->sink, bytes);
}

static void dirty_unlink(fwm__connection *c) {
    if (!c->is_dirty) return;
    fwm__server *s = c->server;
    if (c->dirty_prev) c->dirty_prev->dirty_next = c->dirty_next;
    else s->dirty = c->dirty_next;
    if (c->dirty_next) c->dirty_next->dirty_prev = c->dirty_prev;
    c->dirty_prev = c->dirty_next = NULL;
    c->is_dirty = false;
}

static void release(fwm__connection *c) {
    fwm__free(c->parked);
    c->server->metrics.input_buffer_bytes -= c->reader.capacity;
    fwm__rpc_reader_release(&c->reader);
    fwm__free(c->out);
    fwm__free(c);
}

void fwm__connection_closed(fwm__connection *c) {
    fwm__server *s = c->server;
    if (c->prev) c->prev->next = c->next;
    else s->connections = c->next;
    if (c->next) c->next->prev = c->prev;
    c->prev = c->next = NULL;
    s->metrics.connections_open--;
    if (c->websocket) s->metrics.websocket_connections_open--;
    if (--c->refs == 0) release(c);
}

static void on_close(uv_handle_t *handle) {
    fwm__connection_closed((fwm__connection *)handle);
}

void fwm__connection_close(fwm__connection *c) {
    if (c->closing) return;
    c->closing = true;
    fwm__lookup_forget(c); /* a parked request is dropped with the connection */
    dirty_unlink(c);
    fwm__free(c->out);
    c->out = NULL;
    c->out_length = c->out_capacity = 0;
    release_job_bytes(c, c->out_job_bytes);
    c->out_job_bytes = 0;
    if (c->congested) { /* let its parked jobs finish; their output is dropped */
        c->congested = false;
        fwm__scheduler_set_congested(c->server->scheduler, &c->sink, false);
    }
    c->reading = false;
    if (c->websocket) fwm__ws_close(c); /* calls fwm__connection_closed once lws lets go */
    else uv_close(&c->h.handle, on_close);
}

bool fwm__connection_idle(const fwm__connection *c) {
    return c->inflight == 0 && c->queued_bytes == 0 && c->out_length == 0 && !c->waiting;
}

/* Output not yet taken by the peer: gathered in this callback plus handed to libuv. Counting the
 * gathered part too stops replies made on the loop thread (hello, errors) from piling up between
 * flushes: a connection that never reads holds at most max_output_bytes plus one reply. */
static size_t unsent_output(const fwm__connection *c) {
    return c->out_length + c->queued_bytes;
}

static bool may_process(const fwm__connection *c) {
    return !c->closing && !c->close_after_flush && !c->congested && !c->waiting &&
           unsent_output(c) <= c->server->config->max_output_bytes &&
           c->inflight < c->server->config->max_inflight;
}

static void on_alloc(uv_handle_t *handle, size_t suggested, uv_buf_t *buf) {
    (void)suggested;
    fwm__connection *c = (fwm__connection *)handle;
    size_t available = 0, before = c->reader.capacity;
    void *space = fwm__rpc_reader_space(&c->reader, READ_CHUNK, &available);
    fwm__server *s = c->server;
    s->metrics.input_buffer_bytes += c->reader.capacity - before;
    /* A large message's buffer must fit in the memory budget (small ones always may). */
    if (space && c->reader.capacity > before && c->reader.capacity > FWM_CONNECTION_FREE_BUFFER_BYTES &&
        !fwm__server_memory_fits(s, 0)) {
        c->refused_buffer = c->reader.capacity; /* refused in on_read: libuv forbids stopping here */
        space = NULL;
    }
    if (available > 4 * READ_CHUNK) available = 4 * READ_CHUNK;
    *buf = uv_buf_init(space, space ? (unsigned)available : 0); /* len 0: libuv reports UV_ENOBUFS */
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf);

static void update_reading(fwm__connection *c) {
    bool want = may_process(c) && !c->read_eof;
    if (c->websocket) {
        if (want != c->reading) fwm__ws_set_reading(c, want);
        c->reading = want;
        if (!want) c->partial_since_ns = 0;
        return;
    }
    if (want && !c->reading) {
        if (uv_read_start(&c->h.stream, on_alloc, on_read) == 0) c->reading = true;
    } else if (!want && c->reading) {
        uv_read_stop(&c->h.stream);
        c->reading = false;
        c->partial_since_ns = 0; /* the peer cannot finish a message we do not read */
    }
}

/* Start or stop the message timeout's clock: it runs while the reader holds the beginning of a
 * message and the connection is waiting for the peer (not paused by backpressure). */
static void note_partial_message(fwm__connection *c) {
    if (!may_process(c) || fwm__rpc_reader_pending(&c->reader) == 0) c->partial_since_ns = 0;
    else if (!c->partial_since_ns) c->partial_since_ns = fwm__now_ns();
}

/* Dispatch every complete buffered message while the connection may take more work. */
void fwm__connection_process(fwm__connection *c) {
    while (may_process(c)) {
        const uint8_t *message;
        size_t length;
        fwm__rpc_result r = fwm__rpc_reader_next(&c->reader, &message, &length);
        if (r == FWM_RPC_MESSAGE) {
            c->partial_since_ns = 0;
            fwm__methods_dispatch(c, message, length);
        } else {
            if (r == FWM_RPC_ERROR) {
                c->server->metrics.protocol_errors++;
                fwm__connection_fail(c, FWM_RPC_PROTOCOL, fwm__rpc_reader_error(&c->reader));
            }
            break;
        }
    }
    if (c->closing) return;
    note_partial_message(c);
    update_reading(c);
    if (c->read_eof && may_process(c)) { /* every complete message has been dispatched */
        size_t pending = fwm__rpc_reader_pending(&c->reader);
        if (pending > 0) {
            char message[96];
            snprintf(message, sizeof message, "the stream ended inside a message (%zu bytes pending)", pending);
            fwm__connection_fail(c, FWM_RPC_PROTOCOL, message);
        } else if (fwm__connection_idle(c)) {
            fwm__connection_close(c);
        }
    }
}

void fwm__connection_unpark(fwm__connection *c, const fwm__lookup *answer) {
    uint8_t *message = c->parked;
    size_t length = c->parked_length;
    c->parked = NULL;
    if (!message || c->closing) {
        fwm__free(message);
        return;
    }
    c->ready = answer;
    fwm__methods_dispatch(c, message, length);
    c->ready = NULL;
    fwm__free(message);
    fwm__connection_process(c);
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

static int pack_write(void *data, const char *bytes, size_t length) {
    fwm__connection_append(data, bytes, length);
    return 0;
}

void fwm__connection_packer(fwm__connection *c, msgpack_packer *pk) {
    msgpack_packer_init(pk, c, pack_write);
}

void fwm__connection_append(fwm__connection *c, const void *bytes, size_t length) {
    if (c->closing || length == 0) return;
    if (c->out_capacity - c->out_length < length) {
        size_t capacity = c->out_capacity ? c->out_capacity : 4096;
        while (capacity - c->out_length < length) capacity *= 2;
        char *grown = fwm__realloc(c->out, capacity);
        if (!grown) {
            fwm__connection_close(c);
            return;
        }
        c->out = grown;
        c->out_capacity = capacity;
    }
    memcpy(c->out + c->out_length, bytes, length);
    c->out_length += length;
    if (!c->is_dirty) {
        fwm__server *s = c->server;
        c->is_dirty = true;
        c->dirty_prev = NULL;
        c->dirty_next = s->dirty;
        if (s->dirty) s->dirty->dirty_prev = c;
        s->dirty = c;
    }
}

void fwm__connection_deliver(fwm__connection *c, const void *bytes, size_t length) {
    if (c->closing) {
        release_job_bytes(c, length);
        return;
    }
    fwm__connection_append(c, bytes, length);
    if (c->closing) release_job_bytes(c, length); /* append failed and closed it */
    else c->out_job_bytes += length;
}

void fwm__connection_written(fwm__write *w, int status) {
    fwm__connection *c = w->connection;
    fwm__server *s = c->server;
    release_job_bytes(c, w->job_bytes);
    c->queued_bytes -= w->length;
    s->metrics.output_queued_bytes -= w->length;
    fwm__free(w->data);
    fwm__free(w);
    if (c->closing) return;
    c->last_activity_ns = fwm__now_ns();
    if (status < 0) {
        fwm__connection_close(c);
        return;
    }
    if (c->congested && unsent_output(c) <= s->config->max_output_bytes / 2) {
        c->congested = false;
        fwm__scheduler_set_congested(s->scheduler, &c->sink, false);
        fwm__connection_process(c);
    }
    if (!c->closing && (c->close_after_flush || c->read_eof) && fwm__connection_idle(c)) fwm__connection_close(c);
    fwm__server_flush(s);
}

static void on_write(uv_write_t *req, int status) {
    fwm__connection_written((fwm__write *)req, status);
}

void fwm__connection_flush(fwm__connection *c) {
    dirty_unlink(c);
    if (c->closing || c->out_length == 0) return;
    fwm__server *s = c->server;
    fwm__write *w = fwm__calloc(1, sizeof *w);
    if (!w) {
        fwm__connection_close(c);
        return;
    }
    w->connection = c;
    w->data = c->out;
    w->length = c->out_length;
    w->job_bytes = c->out_job_bytes;
    c->out = NULL;
    c->out_length = c->out_capacity = c->out_job_bytes = 0;
    uv_buf_t buf = uv_buf_init(w->data, (unsigned)w->length);
    if (c->websocket ? fwm__ws_send(c, w) != 0 : uv_write(&w->req, &c->h.stream, &buf, 1, on_write) != 0) {
        release_job_bytes(c, w->job_bytes);
        fwm__free(w->data);
        fwm__free(w);
        fwm__connection_close(c);
        return;
    }
    c->queued_bytes += w->length;
    s->metrics.output_queued_bytes += w->length;
    c->last_activity_ns = fwm__now_ns();
    if (!c->congested && c->queued_bytes > s->config->max_output_bytes) {
        c->congested = true;
        fwm__scheduler_set_congested(s->scheduler, &c->sink, true);
        update_reading(c);
    }
}

void fwm__connection_pack_error_notification(msgpack_packer *pk, int code, const char *message) {
    fwm__rpc_failure failure;
    fwm__rpc_fail(&failure, code, "%s", message);
    fwm__rpc_pack_notification_head(pk, "error");
    fwm__rpc_pack_error_map(pk, &failure);
}

void fwm__connection_fail(fwm__connection *c, int code, const char *message) {
    if (c->closing || c->close_after_flush) return;
    fwm__metrics_count_error(&c->server->metrics, code);
    msgpack_packer pk;
    fwm__connection_packer(c, &pk);
    fwm__connection_pack_error_notification(&pk, code, message);
    c->close_after_flush = true;
    c->close_deadline_ns = fwm__now_ns() + CLOSE_GRACE_NS;
    update_reading(c);
}

void fwm__connection_job_started(fwm__connection *c) {
    c->refs++;
    c->inflight++;
}

void fwm__connection_job_finished(fwm__connection *c) {
    c->inflight--;
    if (--c->refs == 0) {
        release(c); /* closed, and this was the last job */
        return;
    }
    if (c->closing) return;
    c->last_activity_ns = fwm__now_ns();
    fwm__connection_process(c); /* it may have been waiting for max_inflight */
    if (!c->closing && (c->close_after_flush || c->read_eof) && fwm__connection_idle(c)) fwm__connection_close(c);
}

static uint64_t seconds_ns(double seconds) {
    return (uint64_t)(seconds * 1e9);
}

fwm__connection_expiry fwm__connection_expire(fwm__connection *c, uint64_t now) {
    const fwm__config *cfg = c->server->config;
    if (c->closing || c->close_after_flush) return FWM_CONNECTION_LIVE;
    if (cfg->message_timeout_s > 0 && c->reading && c->partial_since_ns && now > c->partial_since_ns &&
        now - c->partial_since_ns > seconds_ns(cfg->message_timeout_s)) {
        char message[160];
        snprintf(message, sizeof message, "no complete message within message-timeout %gs (%zu bytes of one buffered)",
                 cfg->message_timeout_s, fwm__rpc_reader_pending(&c->reader));
        c->server->metrics.protocol_errors++;
        c->server->metrics.connections_timed_out++;
        fwm__connection_fail(c, FWM_RPC_PROTOCOL, message);
        return FWM_CONNECTION_MESSAGE_TIMEOUT;
    }
    if (cfg->connection_idle_timeout_s > 0 && fwm__connection_idle(c) && fwm__rpc_reader_pending(&c->reader) == 0 &&
        now > c->last_activity_ns && now - c->last_activity_ns > seconds_ns(cfg->connection_idle_timeout_s)) {
        c->server->metrics.connections_timed_out++;
        fwm__connection_close(c);
        return FWM_CONNECTION_IDLE_TIMEOUT;
    }
    return FWM_CONNECTION_LIVE;
}

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

fwm__connection *fwm__connection_new(fwm__server *s) {
    fwm__connection *c = fwm__calloc(1, sizeof *c);
    if (!c) return NULL;
    c->server = s;
    c->authenticated = s->auth_token == NULL;
    c->refs = 1;
    c->id = ++s->metrics.connections_total;
    c->last_activity_ns = fwm__now_ns();
    fwm__rpc_reader_init(&c->reader, &s->config->limits);
    fwm__rpc_reader_set_allocator(&c->reader, fwm__realloc, fwm__free);
    c->next = s->connections;
    if (s->connections) s->connections->prev = c;
    s->connections = c;
    s->metrics.connections_open++;
    return c;
}

bool fwm__connection_admit(fwm__connection *c, bool admin) {
    fwm__server *s = c->server;
    if (!fwm__server_memory_fits(s, READ_CHUNK)) { /* room for its first input buffer */
        s->metrics.connections_refused++;
        s->metrics.memory_refusals++;
        char message[160];
        snprintf(message, sizeof message, "the server's memory budget is used up (max-memory-bytes %zu); retry later",
                 s->config->max_memory_bytes);
        fwm__connection_fail(c, FWM_RPC_OVERLOADED, message);
        fwm__server_flush(s);
        return false;
    }
    /* An operator can always get in over a Unix socket: it keeps ADMIN_CONNECTIONS beyond the limit.
     * Plain HTTP requests on the --http port count too (http.c). */
    size_t allowed = s->config->max_connections + (admin ? ADMIN_CONNECTIONS : 0);
    uint64_t open =
        s->metrics.connections_open + s->metrics.http_connections_open - s->metrics.websocket_connections_open;
    if (open > allowed) {
        s->metrics.connections_refused++;
        char message[128];
        snprintf(message, sizeof message, "too many connections (max-connections %zu)", s->config->max_connections);
        fwm__connection_fail(c, FWM_RPC_OVERLOADED, message);
        fwm__server_flush(s);
        return false;
    }
    return true;
}

static void on_reject_closed(uv_handle_t *handle) {
    fwm__server *s = handle->data;
    s->reject_busy = false;
    uv_stream_t *waiting = s->reject_waiting;
    s->reject_waiting = NULL;
    if (waiting && !s->shutting_down) fwm__connection_accept(s, waiting); /* its pending connection */
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

void fwm__connection_accept(fwm__server *s, uv_stream_t *listener) {
    fwm__connection *c = fwm__connection_new(s);
    if (!c) {
        fwm__listeners_accept_error(s, UV_ENOMEM);
        reject_pending(s, listener);
        return;
    }
    int rc = listener->type == UV_TCP ? uv_tcp_init(&s->loop, &c->h.tcp) : uv_pipe_init(&s->loop, &c->h.pipe, 0);
    if (rc != 0) {
        fwm__listeners_accept_error(s, rc);
        fwm__connection_closed(c); /* no handle to close: unlink and free it */
        return;
    }
    if ((rc = uv_accept(listener, &c->h.stream)) != 0) {
        fwm__listeners_accept_error(s, rc);
        fwm__connection_close(c);
        return;
    }
    if (listener->type == UV_TCP) uv_tcp_nodelay(&c->h.tcp, 1);
    if (!fwm__listeners_descriptor_left(s)) { /* it took the last one: the next accept would fail */
        char message[160];
        snprintf(message, sizeof message,
                 "the server is out of file descriptors (open-file limit %llu, %llu connections "
                 "open); retry later", (unsigned long long)s->fd_limit,
                 (unsigned long long)s->metrics.connections_open - 1);
        fwm__listeners_accept_error(s, UV_EMFILE);
        s->metrics.connections_refused++;
        refuse_now(c, FWM_RPC_OVERLOADED, message);
        return;
    }
    if (!fwm__connection_admit(c, listener->type == UV_NAMED_PIPE)) return;
    update_reading(c);
}
