/* connection.h - one client connection: reading and delimiting messages, gathering and writing
 * output, backpressure, and closing, whatever carries its bytes.
 *
 * Its transport (socket.c: a libuv stream; websocket.c: WebSocket messages) moves the bytes; the
 * server's handler (fwm__connection_handler, given by server.c) is told what they mean: complete
 * messages to dispatch, output the peer has taken, congestion. So net/ knows nothing of methods or
 * sessions.
 *
 * The struct embeds its libuv handle and is freed only after the close callback has run and every
 * job that may still write to it has finished (`refs`). Output is gathered into `out` during a loop
 * callback and handed to libuv in one write by fwm__server_flush; write buffers live until their
 * write callback. Backpressure: the scheduler stops stepping this connection's jobs while more than
 * max_output_bytes of their output is not yet taken by the peer (sink.unsent, released here as
 * writes complete), and the connection stops reading while more than max_output_bytes are queued.
 * Loop thread only.
 */
#ifndef FWM_SERVER_CONNECTION_H
#define FWM_SERVER_CONNECTION_H

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "base/sink.h"
#include "rpc_codec.h"
#include "rpc_scan.h"
#include "server.h"

struct fwm__lookup;

/* Input buffers up to this size never count against the memory budget's refusals. */
#define FWM_CONNECTION_FREE_BUFFER_BYTES (4 * 65536)
/* Input read at once; a new connection needs room for one in the memory budget. */
#define FWM_CONNECTION_READ_CHUNK 65536

/* Output handed to the transport in one piece (a whole number of messages); freed once written. */
typedef struct fwm__write {
    uv_write_t req;
    struct fwm__connection *connection;
    char *data;
    size_t length;
    size_t job_bytes; /* of `length`, job output to release from sink.unsent once written */
    struct fwm__write *next; /* WebSocket: the connection's queue */
} fwm__write;

typedef struct fwm__connection fwm__connection;

/* How a connection's bytes travel. */
typedef struct fwm__transport {
    /* Hand `w` (whole messages) to the peer; fwm__connection_written follows once it is written.
     * Nonzero: it cannot (w stays the caller's). */
    int (*send)(fwm__connection *c, fwm__write *w);
    /* Take input, or stop taking it, as `want` says (keeps c->reading and c->partial_since_ns). */
    void (*update_reading)(fwm__connection *c, bool want);
    /* Let go of the connection; fwm__connection_closed follows once the transport has. */
    void (*close)(fwm__connection *c);
} fwm__transport;

/* What the server does with a connection's messages and output (server.c gives it). */
typedef struct fwm__connection_handler {
    /* A complete message (accepted by the pre-scanner) arrived on `c`. */
    void (*message)(fwm__connection *c, const uint8_t *message, size_t length);
    /* `c` is closing: it waits for nothing more. */
    void (*closing)(fwm__connection *c);
    /* Stop / go on stepping the jobs that write to `c` (its unsent output is over / back under the limit). */
    void (*congested)(fwm__connection *c, bool congested);
    /* `bytes` of job output were taken by the peer, or dropped. */
    void (*delivered)(fwm__connection *c, size_t bytes);
} fwm__connection_handler;

struct fwm__connection {
    union {
        uv_handle_t handle;
        uv_stream_t stream;
        uv_tcp_t tcp;
        uv_pipe_t pipe;
    } h; /* first member; the socket transport's (socket.c) */
    const fwm__transport *transport;
    fwm__server *server;
    fwm__sink sink;
    fwm__rpc_reader reader;
    struct fwm__connection *prev, *next;           /* server->connections */
    struct fwm__connection *dirty_prev, *dirty_next; /* server->dirty */
    bool is_dirty;
    uint64_t id;
    unsigned refs;      /* 1 for the handle until its close callback + 1 per unfinished job */
    size_t inflight;    /* unfinished jobs */
    char *out;          /* gathered output, owned */
    size_t out_length, out_capacity;
    size_t queued_bytes; /* handed to libuv, not yet written */
    size_t out_job_bytes; /* of `out`, bytes of job output (counted in sink.unsent) */
    bool reading;       /* uv_read_start is in effect */
    bool congested;
    bool closing;       /* uv_close called */
    bool read_eof;      /* the peer will send nothing more */
    bool close_after_flush;
    size_t refused_buffer; /* an input buffer this large did not fit the memory budget (on_alloc) */
    bool authenticated;    /* presented the token (or the server has none) */
    size_t sessions_held;  /* opens, forks and restores accepted on it, minus its closes */
    unsigned wrong_tokens;
    uint64_t close_deadline_ns;
    uint64_t partial_since_ns; /* when the incomplete message now buffered began arriving; 0: none */
    uint64_t last_activity_ns; /* last bytes read, output handed to libuv or written, or job ended */
    /* a request parked until the store answers a question (lookup.h): its bytes, and the question */
    uint8_t *parked;
    size_t parked_length;
    uint64_t parked_start_ns;
    struct fwm__lookup *waiting;      /* the question it waits for; nothing more is read meanwhile */
    const struct fwm__lookup *ready;  /* while it is dispatched again: the answer */
    /* a transport's own fields follow (websocket.c), when it asked for more than sizeof(fwm__connection) */
};

/* A connection on `transport`, `size` bytes (at least sizeof(fwm__connection)) zeroed; the transport
 * then sets up its own part. NULL when out of memory. */
fwm__connection *fwm__connection_new(fwm__server *server, const fwm__transport *transport, size_t size);
/* The transport has let go of it (the stream's close callback, or lws closed the WebSocket). */
void fwm__connection_closed(fwm__connection *c);
/* Output the transport has finished with: release it and apply backpressure's end (status < 0: failed). */
void fwm__connection_written(fwm__write *w, int status);
/* The question a parked request waited for was answered (or timed out): dispatch it again with
 * `answer`, then go on with what is buffered. */
void fwm__connection_unpark(fwm__connection *c, const struct fwm__lookup *answer);
/* Dispatch what is buffered, as after a read (WebSocket: a message has arrived). */
void fwm__connection_process(fwm__connection *c);
/* Have the transport take input while the connection may take more work (backpressure, limits). */
void fwm__connection_update_reading(fwm__connection *c);
/* Refuse a new connection for want of room (memory, count): false when it may stay. */
bool fwm__connection_admit(fwm__connection *c, bool admin);

/* A packer that appends to the connection's gathered output (dropped once closing). */
void fwm__connection_packer(fwm__connection *c, msgpack_packer *pk);
void fwm__connection_append(fwm__connection *c, const void *bytes, size_t length);
/* Append a job's output; the scheduler is told when the peer has taken it (sink->unsent). */
void fwm__connection_deliver(fwm__connection *c, const void *bytes, size_t length);
/* Hand gathered output to libuv and apply backpressure. */
void fwm__connection_flush(fwm__connection *c);

/* Pack the notification [2, "error", [{code, name, message}]]. */
void fwm__connection_pack_error_notification(msgpack_packer *pk, int code, const char *message);
/* Send a final `error` notification, stop reading, close once the output is written. */
void fwm__connection_fail(fwm__connection *c, int code, const char *message);
/* Close now (idempotent); unsent output is dropped. */
void fwm__connection_close(fwm__connection *c);

/* A job for this connection was submitted / has ended (loop thread). */
void fwm__connection_job_started(fwm__connection *c);
void fwm__connection_job_finished(fwm__connection *c);

/* Whether nothing is in flight or unsent. */
bool fwm__connection_idle(const fwm__connection *c);

typedef enum fwm__connection_expiry {
    FWM_CONNECTION_LIVE = 0,
    FWM_CONNECTION_MESSAGE_TIMEOUT, /* failed with `protocol`: an incomplete message for too long */
    FWM_CONNECTION_IDLE_TIMEOUT     /* closed: nothing in flight, buffered or sent for too long */
} fwm__connection_expiry;

/* Apply --message-timeout and --connection-idle-timeout at time `now` (housekeeping). */
fwm__connection_expiry fwm__connection_expire(fwm__connection *c, uint64_t now);

#endif
