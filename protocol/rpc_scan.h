/* rpc_scan.h - the msgpack-RPC stream reader: finds where each message ends and checks it against
 * hard limits before msgpack-c ever sees it.
 *
 * hiredis-style: bytes are fed in as they arrive (any split), and fwm__rpc_reader_next() answers
 * "here is one complete message", "need more bytes", or a sticky error that names the violated limit.
 * The scan is incremental (a resumed scan never re-reads a byte it already accepted), so feeding a
 * message one byte at a time costs O(size), and memory stays bounded by max_message_bytes plus one
 * read.
 *
 * Not for: decoding (rpc_codec.c does that with msgpack-c, on a message this reader has accepted).
 * Part of protocol/ (the fwm_protocol static library), which the server and the C client both link.
 */
#ifndef FWM_PROTOCOL_RPC_SCAN_H
#define FWM_PROTOCOL_RPC_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The named limits. Every field must be > 0. */
typedef struct fwm__rpc_limits {
    size_t max_message_bytes; /* whole encoded message, bytes */
    size_t max_depth;         /* nesting of arrays/maps; the top-level array is depth 1 */
    size_t max_string_bytes;  /* one str object */
    size_t max_binary_bytes;  /* one bin or ext object */
    size_t max_objects;       /* objects in one message (bounds msgpack-c's zone: ~24 bytes each) */
} fwm__rpc_limits;

#define FWM_RPC_MAX_DEPTH_CAP 64 /* the scanner's stack; max_depth is clamped to it */

/* Defaults: 4 MiB message, depth 16, 1 MiB strings, 4 MiB binaries, 262144 objects. */
fwm__rpc_limits fwm__rpc_default_limits(void);

typedef enum fwm__rpc_result {
    FWM_RPC_MESSAGE = 0,   /* *message / *length hold one complete message */
    FWM_RPC_NEED_MORE = 1, /* feed more bytes */
    FWM_RPC_ERROR = 2      /* sticky: the stream is unusable; fwm__rpc_reader_error() says why */
} fwm__rpc_result;

/* Why the stream was refused (stable names used in error messages and tests). */
typedef enum fwm__rpc_fault {
    FWM_RPC_FAULT_NONE = 0,
    FWM_RPC_FAULT_NOT_ARRAY,       /* a message must be an array (msgpack-RPC) */
    FWM_RPC_FAULT_INVALID_BYTE,    /* 0xc1, never used by msgpack */
    FWM_RPC_FAULT_MESSAGE_TOO_LARGE,
    FWM_RPC_FAULT_TOO_DEEP,
    FWM_RPC_FAULT_STRING_TOO_LONG,
    FWM_RPC_FAULT_BINARY_TOO_LONG,
    FWM_RPC_FAULT_TOO_MANY_ELEMENTS, /* a count larger than the bytes that can still follow */
    FWM_RPC_FAULT_TOO_MANY_OBJECTS,
    FWM_RPC_FAULT_OUT_OF_MEMORY
} fwm__rpc_fault;

typedef struct fwm__rpc_reader {
    fwm__rpc_limits limits;
    uint8_t *buffer; /* owned; [start, length) is unconsumed input */
    size_t capacity, length, start;
    /* Scan state of the message that begins at `start`: */
    size_t scanned;                           /* bytes of it accepted so far */
    size_t depth;                             /* open containers */
    uint64_t remaining[FWM_RPC_MAX_DEPTH_CAP]; /* items still expected in each open container */
    size_t objects;
    size_t consume; /* bytes of the message handed out by the last call, dropped on the next */
    fwm__rpc_fault fault;
    char error[160];
    void *(*grow)(void *pointer, size_t size); /* the buffer's allocator: realloc unless set */
    void (*release)(void *pointer);
} fwm__rpc_reader;

/* Initialise with `limits` (NULL: defaults). Never fails (the buffer grows on demand). */
void fwm__rpc_reader_init(fwm__rpc_reader *reader, const fwm__rpc_limits *limits);
void fwm__rpc_reader_release(fwm__rpc_reader *reader);
/* Use another allocator for the buffer (before anything is fed): the server passes its own, so its
 * allocation-failure injection reaches the reader too. */
void fwm__rpc_reader_set_allocator(fwm__rpc_reader *reader, void *(*grow)(void *, size_t), void (*release)(void *));

/* Append bytes. Returns false (and sets the sticky error) when out of memory. */
bool fwm__rpc_reader_feed(fwm__rpc_reader *reader, const void *data, size_t size);

/* Zero-copy feeding (libuv alloc_cb/read_cb): get room for at least `want` bytes at the end of the
 * buffer (NULL when out of memory), then commit what was written into it. */
void *fwm__rpc_reader_space(fwm__rpc_reader *reader, size_t want, size_t *available);
void fwm__rpc_reader_commit(fwm__rpc_reader *reader, size_t size);

/* The next complete message. The pointer stays valid until the next call on this reader. */
fwm__rpc_result fwm__rpc_reader_next(fwm__rpc_reader *reader, const uint8_t **message,
                                     size_t *length);

/* Bytes buffered and not yet returned as a message. */
size_t fwm__rpc_reader_pending(const fwm__rpc_reader *reader);

/* Where the first message in `bytes` (all of it in memory) ends: FWM_RPC_MESSAGE with *length,
 * FWM_RPC_NEED_MORE when the bytes end inside it, or FWM_RPC_ERROR with the reason in `error` (may be
 * NULL). Frames of message-per-frame transports (WebSocket) are checked and split with it. */
fwm__rpc_result fwm__rpc_scan_first(const fwm__rpc_limits *limits, const uint8_t *bytes, size_t size,
                                    size_t *length, char *error, size_t error_size);

fwm__rpc_fault fwm__rpc_reader_fault(const fwm__rpc_reader *reader);
const char *fwm__rpc_reader_error(const fwm__rpc_reader *reader); /* "" when none */
const char *fwm__rpc_fault_name(fwm__rpc_fault fault);

#endif
