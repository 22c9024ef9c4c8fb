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

/* A connection over WebSocket: the connection, then what this transport keeps of it. */
typedef struct ws_connection {
    fwm__connection c;     /* first */
    struct lws *wsi;       /* NULL once libwebsockets has let go of it */
    fwm__write *head, *tail; /* output not yet handed to lws_write */
    size_t offset;         /* bytes of head written */
    size_t message_left;   /* bytes of the message being written, after offset */
    bool message_started;  /* its first fragment has gone */
    size_t incoming;       /* bytes of the incoming WebSocket message so far */
    bool in_message;       /* between the first and the final fragment of an incoming message */
    int close_status;      /* the close frame's status once closing by request (1000, 1002, ...) */
    bool close_sent;       /* our close frame has gone */
} ws_connection;

static ws_connection *ws_of(fwm__connection *c) {
    return (ws_connection *)c;
}

/* The transport has let go: the connection ends. */
static void ended(fwm__connection *c) {
    c->server->metrics.websocket_connections_open--;
    fwm__connection_closed(c);
}

static int ws_send(fwm__connection *c, fwm__write *w);
static void ws_update_reading(fwm__connection *c, bool want);
static void ws_close(fwm__connection *c);
static const fwm__transport ws_transport = {ws_send, ws_update_reading, ws_close};

fwm__connection *fwm__ws_open(fwm__server *s, struct lws *wsi, bool authenticated) {
    fwm__connection *c = fwm__connection_new(s, &ws_transport, sizeof(ws_connection));
    if (!c) return NULL;
    ws_of(c)->wsi = wsi;
    c->reading = true; /* lws reads until told otherwise */
    s->metrics.websocket_connections_open++;
    if (authenticated) c->authenticated = true;
    fwm__connection_admit(c, false); /* refused: the error goes out, then the close */
    return c;
}

/* Fail with `protocol` and the WebSocket close status `status`. */
static void fail(fwm__connection *c, int status, const char *message) {
    ws_connection *ws = ws_of(c);
    c->server->metrics.protocol_errors++;
    ws->close_status = status;
    fwm__connection_fail(c, FWM_RPC_PROTOCOL, message);
    fwm__server_flush(c->server);
}

void fwm__ws_receive(fwm__connection *c, const void *bytes, size_t length) {
    ws_connection *ws = ws_of(c);
    if (c->closing || c->close_after_flush || !ws->wsi) return; /* failed: what follows is dropped */
    fwm__server *s = c->server;
    c->last_activity_ns = fwm__now_ns();
    if (!ws->in_message) {
        ws->in_message = true;
        ws->incoming = 0;
        if (!lws_frame_is_binary(ws->wsi)) {
            fail(c, LWS_CLOSE_STATUS_UNACCEPTABLE_OPCODE,
                 "a text WebSocket message: msgpack-RPC messages go in binary messages, one per message");
            return;
        }
    }
    size_t max = s->config->limits.max_message_bytes, remaining = lws_remaining_packet_payload(ws->wsi);
    if (ws->incoming + length + remaining > max) {
        char message[160];
        snprintf(message, sizeof message, "a WebSocket message of more than max-message-bytes %zu (%zu bytes so far)",
                 max, ws->incoming + length + remaining);
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
        ws->close_status = LWS_CLOSE_STATUS_POLICY_VIOLATION;
        fwm__connection_fail(c, FWM_RPC_OVERLOADED, message);
        fwm__server_flush(s);
        return;
    }
    ws->incoming += length;
    if (!lws_is_final_fragment(ws->wsi)) { /* the message timeout runs until it is whole */
        if (!c->partial_since_ns) c->partial_since_ns = fwm__now_ns();
        return;
    }
    ws->in_message = false;
    /* The message is the tail of the reader's buffer: it must be exactly one msgpack-RPC message. */
    const uint8_t *start = c->reader.buffer + c->reader.length - ws->incoming;
    size_t first = 0;
    fwm__rpc_result r = fwm__rpc_scan_first(&s->config->limits, start, ws->incoming, &first, NULL, 0);
    if (r == FWM_RPC_NEED_MORE || (r == FWM_RPC_MESSAGE && first != ws->incoming)) {
        char message[200];
        if (r == FWM_RPC_NEED_MORE)
            snprintf(message, sizeof message, "a WebSocket message of %zu bytes ends inside a msgpack-RPC message: "
                     "each WebSocket message must hold exactly one", ws->incoming);
        else
            snprintf(message, sizeof message, "a WebSocket message holds more than one msgpack-RPC message (%zu bytes "
                     "after the first %zu): each must hold exactly one", ws->incoming - first, first);
        fail(c, LWS_CLOSE_STATUS_PROTOCOL_ERR, message);
        return;
    }
    ws->incoming = 0;
    fwm__connection_process(c); /* an over-limit message fails there, as on a stream */
    fwm__server_flush(s);
}

static int ws_send(fwm__connection *c, fwm__write *w) {
    ws_connection *ws = ws_of(c);
    if (!ws->wsi) return -1;
    w->next = NULL;
    if (ws->tail) ws->tail->next = w;
    else ws->head = w;
    ws->tail = w;
    lws_callback_on_writable(ws->wsi);
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
    ws_connection *ws = ws_of(c);
    if (ws->close_sent) return 0;
    ws->close_sent = true;
    int status = ws->close_status ? ws->close_status
                 : c->close_after_flush ? LWS_CLOSE_STATUS_POLICY_VIOLATION : LWS_CLOSE_STATUS_NORMAL;
    unsigned char frame[LWS_PRE + 2];
    frame[LWS_PRE] = (unsigned char)(status >> 8);
    frame[LWS_PRE + 1] = (unsigned char)(status & 0xff);
    if (lws_write(ws->wsi, frame + LWS_PRE, 2, WRITE_CLOSE) < 0) return -1;
    lws_set_timeout(ws->wsi, PENDING_TIMEOUT_CLOSE_ACK, CLOSE_WAIT_S); /* the peer answers, or is cut off */
    return 0;
}

int fwm__ws_writable(fwm__connection *c) {
    ws_connection *ws = ws_of(c);
    if (c->closing) return close_now(c);
    for (int frames = 0; ws->head && frames < FRAMES_PER_WRITABLE && !lws_send_pipe_choked(ws->wsi); frames++) {
        fwm__write *w = ws->head;
        if (ws->message_left == 0) {
            ws->message_left = next_message(w, ws->offset);
            ws->message_started = false;
        }
        size_t chunk = ws->message_left < FRAGMENT_BYTES ? ws->message_left : FRAGMENT_BYTES;
        bool end = chunk == ws->message_left;
        memcpy(staging + LWS_PRE, w->data + ws->offset, chunk);
        int flags = lws_write_ws_flags(LWS_WRITE_BINARY, !ws->message_started, end);
        if (lws_write(ws->wsi, staging + LWS_PRE, chunk, (enum lws_write_protocol)flags) < (int)chunk) return -1;
        ws->message_started = true;
        ws->offset += chunk;
        ws->message_left -= chunk;
        if (ws->offset == w->length) {
            ws->head = w->next;
            if (!ws->head) ws->tail = NULL;
            ws->offset = 0;
            fwm__connection_written(w, 0); /* may close c */
            if (c->closing) return close_now(c);
        }
    }
    if (ws->head) lws_callback_on_writable(ws->wsi);
    return 0;
}

static void set_reading(fwm__connection *c, bool reading) {
    ws_connection *ws = ws_of(c);
    /* once failed, what arrives is dropped (fwm__ws_receive): lws keeps reading so the close handshake runs */
    if (c->close_after_flush || c->closing) reading = true;
    if (ws->wsi) lws_rx_flow_control(ws->wsi, reading ? 1 : 0);
}

/* Output that will never be written: released as if written with an error. */
static void drop_queue(fwm__connection *c) {
    ws_connection *ws = ws_of(c);
    while (ws->head) {
        fwm__write *w = ws->head;
        ws->head = w->next;
        fwm__connection_written(w, UV_ECANCELED); /* c is closing: only releases */
    }
    ws->tail = NULL;
    ws->offset = ws->message_left = 0;
}

/* Closing by the server's will: the close frame, then the peer's answer (or a timeout). */
static void ws_close(fwm__connection *c) {
    ws_connection *ws = ws_of(c);
    drop_queue(c);
    if (!ws->wsi) { /* lws has already let go */
        ended(c);
        return;
    }
    lws_callback_on_writable(ws->wsi); /* the close frame goes out from there ... */
    lws_set_timeout(ws->wsi, PENDING_TIMEOUT_CLOSE_SEND, CLOSE_WAIT_S); /* ... or the peer is cut off */
}

void fwm__ws_closed(fwm__connection *c) {
    ws_of(c)->wsi = NULL;
    if (!c->closing) fwm__connection_close(c); /* drops what is unsent, then fwm__connection_closed */
    else ended(c);
}

static void ws_update_reading(fwm__connection *c, bool want) {
    if (want != c->reading) set_reading(c, want);
    c->reading = want;
    if (!want) c->partial_since_ns = 0;
}
