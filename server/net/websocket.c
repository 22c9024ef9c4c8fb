/* websocket.c - msgpack-RPC over WebSocket as a transport of fwm__connection (websocket.h). */
#include "websocket.h"

#include <libwebsockets.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define FRAGMENT_BYTES 16384  /* an outgoing message longer than this goes in several frames */
#define FRAMES_PER_WRITABLE 64 /* then lws is asked for another writable callback (fairness) */
#define CLOSE_WAIT_S 3        /* a peer that does not answer our close frame is cut off after this long */
/* lws_write's type for a close frame: lws's own value (roles/ws/private-lib-roles-ws.h), which its
 * public header leaves to lws_close_reason() */
#define WRITE_CLOSE ((enum lws_write_protocol)4)

/* The loop thread's staging area: lws_write needs LWS_PRE writable bytes before the payload. */
static unsigned char staging[LWS_PRE + FRAGMENT_BYTES];

fwm__connection *fwm__ws_open(fwm__server *s, struct lws *wsi, bool authenticated) {
    fwm__connection *c = fwm__connection_new(s);
    if (!c) return NULL;
    c->websocket = true;
    c->wsi = wsi;
    c->reading = true; /* lws reads until told otherwise */
    s->metrics.websocket_connections_open++;
    if (authenticated) c->authenticated = true;
    fwm__connection_admit(c, false); /* refused: the error goes out, then the close */
    return c;
}

/* Fail with `protocol` and the WebSocket close status `status`. */
static void fail(fwm__connection *c, int status, const char *message) {
    c->server->metrics.protocol_errors++;
    c->ws_close_status = status;
    fwm__connection_fail(c, FWM_RPC_PROTOCOL, message);
    fwm__server_flush(c->server);
}

void fwm__ws_receive(fwm__connection *c, const void *bytes, size_t length) {
    if (c->closing || c->close_after_flush || !c->wsi) return; /* failed: what follows is dropped */
    fwm__server *s = c->server;
    c->last_activity_ns = fwm__now_ns();
    if (!c->ws_in_message) {
        c->ws_in_message = true;
        c->ws_incoming = 0;
        if (!lws_frame_is_binary(c->wsi)) {
            fail(c, LWS_CLOSE_STATUS_UNACCEPTABLE_OPCODE,
                 "a text WebSocket message: msgpack-RPC messages go in binary messages, one per message");
            return;
        }
    }
    size_t max = s->config->limits.max_message_bytes, remaining = lws_remaining_packet_payload(c->wsi);
    if (c->ws_incoming + length + remaining > max) {
        char message[160];
        snprintf(message, sizeof message, "a WebSocket message of more than max-message-bytes %zu (%zu bytes so far)",
                 max, c->ws_incoming + length + remaining);
        fail(c, LWS_CLOSE_STATUS_MESSAGE_TOO_LARGE, message);
        return;
    }
    size_t before = c->reader.capacity;
    bool fed = fwm__rpc_reader_feed(&c->reader, bytes, length);
    s->metrics.input_buffer_bytes += c->reader.capacity - before;
    if (!fed) {
        fail(c, LWS_CLOSE_STATUS_UNEXPECTED_CONDITION, "out of memory buffering a WebSocket message");
        return;
    }
    if (c->reader.capacity > before && c->reader.capacity > FWM_CONNECTION_FREE_BUFFER_BYTES &&
        !fwm__server_memory_fits(s, 0)) {
        char message[200];
        snprintf(message, sizeof message,
                 "no room in the server's memory budget (max-memory-bytes %zu) for a %zu-byte input buffer",
                 s->config->max_memory_bytes, c->reader.capacity);
        s->metrics.memory_refusals++;
        c->ws_close_status = LWS_CLOSE_STATUS_POLICY_VIOLATION;
        fwm__connection_fail(c, FWM_RPC_OVERLOADED, message);
        fwm__server_flush(s);
        return;
    }
    c->ws_incoming += length;
    if (!lws_is_final_fragment(c->wsi)) { /* the message timeout runs until it is whole */
        if (!c->partial_since_ns) c->partial_since_ns = fwm__now_ns();
        return;
    }
    c->ws_in_message = false;
    /* The message is the tail of the reader's buffer: it must be exactly one msgpack-RPC message. */
    const uint8_t *start = c->reader.buffer + c->reader.length - c->ws_incoming;
    size_t first = 0;
    fwm__rpc_result r = fwm__rpc_scan_first(&s->config->limits, start, c->ws_incoming, &first, NULL, 0);
    if (r == FWM_RPC_NEED_MORE || (r == FWM_RPC_MESSAGE && first != c->ws_incoming)) {
        char message[200];
        if (r == FWM_RPC_NEED_MORE)
            snprintf(message, sizeof message, "a WebSocket message of %zu bytes ends inside a msgpack-RPC message: "
                     "each WebSocket message must hold exactly one", c->ws_incoming);
        else
            snprintf(message, sizeof message, "a WebSocket message holds more than one msgpack-RPC message (%zu bytes "
                     "after the first %zu): each must hold exactly one", c->ws_incoming - first, first);
        fail(c, LWS_CLOSE_STATUS_PROTOCOL_ERR, message);
        return;
    }
    c->ws_incoming = 0;
    fwm__connection_process(c); /* an over-limit message fails there, as on a stream */
    fwm__server_flush(s);
}

int fwm__ws_send(fwm__connection *c, fwm__write *w) {
    if (!c->wsi) return -1;
    w->next = NULL;
    if (c->ws_tail) c->ws_tail->next = w;
    else c->ws_head = w;
    c->ws_tail = w;
    lws_callback_on_writable(c->wsi);
    return 0;
}

/* Where the next outgoing message ends: our own output, so the limits are only the scanner's. */
static size_t next_message(const fwm__write *w, size_t offset) {
    static const fwm__rpc_limits unbounded = {SIZE_MAX, FWM_RPC_MAX_DEPTH_CAP, SIZE_MAX, SIZE_MAX, SIZE_MAX};
    size_t length = 0;
    if (fwm__rpc_scan_first(&unbounded, (const uint8_t *)w->data + offset, w->length - offset, &length, NULL, 0) !=
        FWM_RPC_MESSAGE)
        length = w->length - offset; /* cannot happen: the server writes whole messages */
    return length;
}

/* Send the close frame ourselves, then wait for the peer's: lws's own polite close (lws_close_reason,
 * then -1) is cut short in Debian's build, whose _DEBUG closes a libuv wsi twice at once. */
static int close_now(fwm__connection *c) {
    if (c->ws_close_sent) return 0;
    c->ws_close_sent = true;
    int status = c->ws_close_status ? c->ws_close_status
                 : c->close_after_flush ? LWS_CLOSE_STATUS_POLICY_VIOLATION : LWS_CLOSE_STATUS_NORMAL;
    unsigned char frame[LWS_PRE + 2];
    frame[LWS_PRE] = (unsigned char)(status >> 8);
    frame[LWS_PRE + 1] = (unsigned char)(status & 0xff);
    if (lws_write(c->wsi, frame + LWS_PRE, 2, WRITE_CLOSE) < 0) return -1;
    lws_set_timeout(c->wsi, PENDING_TIMEOUT_CLOSE_ACK, CLOSE_WAIT_S); /* the peer answers, or is cut off */
    return 0;
}

int fwm__ws_writable(fwm__connection *c) {
    if (c->closing) return close_now(c);
    for (int frames = 0; c->ws_head && frames < FRAMES_PER_WRITABLE && !lws_send_pipe_choked(c->wsi); frames++) {
        fwm__write *w = c->ws_head;
        if (c->ws_message_left == 0) {
            c->ws_message_left = next_message(w, c->ws_offset);
            c->ws_message_started = false;
        }
        size_t chunk = c->ws_message_left < FRAGMENT_BYTES ? c->ws_message_left : FRAGMENT_BYTES;
        bool end = chunk == c->ws_message_left;
        memcpy(staging + LWS_PRE, w->data + c->ws_offset, chunk);
        int flags = lws_write_ws_flags(LWS_WRITE_BINARY, !c->ws_message_started, end);
        if (lws_write(c->wsi, staging + LWS_PRE, chunk, (enum lws_write_protocol)flags) < (int)chunk) return -1;
        c->ws_message_started = true;
        c->ws_offset += chunk;
        c->ws_message_left -= chunk;
        if (c->ws_offset == w->length) {
            c->ws_head = w->next;
            if (!c->ws_head) c->ws_tail = NULL;
            c->ws_offset = 0;
            fwm__connection_written(w, 0); /* may close c */
            if (c->closing) return close_now(c);
        }
    }
    if (c->ws_head) lws_callback_on_writable(c->wsi);
    return 0;
}

void fwm__ws_set_reading(fwm__connection *c, bool reading) {
    /* once failed, what arrives is dropped (fwm__ws_receive): lws keeps reading so the close handshake runs */
    if (c->close_after_flush || c->closing) reading = true;
    if (c->wsi) lws_rx_flow_control(c->wsi, reading ? 1 : 0);
}

/* Output that will never be written: released as if written with an error. */
static void drop_queue(fwm__connection *c) {
    while (c->ws_head) {
        fwm__write *w = c->ws_head;
        c->ws_head = w->next;
        fwm__connection_written(w, UV_ECANCELED); /* c is closing: only releases */
    }
    c->ws_tail = NULL;
    c->ws_offset = c->ws_message_left = 0;
}

void fwm__ws_close(fwm__connection *c) {
    drop_queue(c);
    if (!c->wsi) { /* lws has already let go */
        fwm__connection_closed(c);
        return;
    }
    lws_callback_on_writable(c->wsi); /* the close frame goes out from there ... */
    lws_set_timeout(c->wsi, PENDING_TIMEOUT_CLOSE_SEND, CLOSE_WAIT_S); /* ... or the peer is cut off */
}

void fwm__ws_closed(fwm__connection *c) {
    c->wsi = NULL;
    if (!c->closing) fwm__connection_close(c); /* drops what is unsent, then fwm__connection_closed */
    else fwm__connection_closed(c);
}
