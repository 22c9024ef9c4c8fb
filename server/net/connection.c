/* connection.c - per-connection I/O, backpressure and lifetime (see connection.h). */
#include "connection.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fwm_alloc.h"

#define ADMIN_CONNECTIONS 4 /* Unix-socket connections allowed beyond --max-connections (for stats) */
#define CLOSE_GRACE_NS 5000000000ull /* a failed connection gets this long to take its last words */

static const fwm__connection_handler *handler(const fwm__connection *c) {
    return c->server->connection_handler;
}

static void release_job_bytes(fwm__connection *c, size_t bytes) {
    if (bytes) handler(c)->delivered(c, bytes);
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
    if (--c->refs == 0) release(c);
}

void fwm__connection_close(fwm__connection *c) {
    if (c->closing) return;
    c->closing = true;
    handler(c)->closing(c); /* a parked request is dropped with the connection */
    dirty_unlink(c);
    fwm__free(c->out);
    c->out = NULL;
    c->out_length = c->out_capacity = 0;
    release_job_bytes(c, c->out_job_bytes);
    c->out_job_bytes = 0;
    if (c->congested) { /* let its parked jobs finish; their output is dropped */
        c->congested = false;
        handler(c)->congested(c, false);
    }
    c->reading = false;
    c->transport->close(c); /* fwm__connection_closed follows once the transport lets go */
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

void fwm__connection_update_reading(fwm__connection *c) {
    c->transport->update_reading(c, may_process(c) && !c->read_eof);
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
            handler(c)->message(c, message, length);
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
    fwm__connection_update_reading(c);
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

void fwm__connection_unpark(fwm__connection *c, const struct fwm__lookup *answer) {
    uint8_t *message = c->parked;
    size_t length = c->parked_length;
    c->parked = NULL;
    if (!message || c->closing) {
        fwm__free(message);
        return;
    }
    c->ready = answer;
    handler(c)->message(c, message, length);
    c->ready = NULL;
    fwm__free(message);
    fwm__connection_process(c);
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
        handler(c)->congested(c, false);
        fwm__connection_process(c);
    }
    if (!c->closing && (c->close_after_flush || c->read_eof) && fwm__connection_idle(c)) fwm__connection_close(c);
    fwm__server_flush(s);
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
    if (c->transport->send(c, w) != 0) {
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
        handler(c)->congested(c, true);
        fwm__connection_update_reading(c);
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
    fwm__connection_update_reading(c);
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

fwm__connection *fwm__connection_new(fwm__server *s, const fwm__transport *transport, size_t size) {
    fwm__connection *c = fwm__calloc(1, size);
    if (!c) return NULL;
    c->server = s;
    c->transport = transport;
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
    if (!fwm__server_memory_fits(s, FWM_CONNECTION_READ_CHUNK)) { /* room for its first input buffer */
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

