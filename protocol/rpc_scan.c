/* rpc_scan.c - incremental msgpack pre-scanner with hard limits (see rpc_scan.h).
 *
 * The scanner walks msgpack headers only: it never builds objects. For each item it needs the whole
 * header and, for str/bin/ext, the whole payload to be buffered before it accepts the item, so a
 * resumed scan starts at an item boundary. Every declared size is checked against its limit as
 * soon as its header is complete, before waiting for the payload: a 4 GiB string header is refused
 * after 5 bytes, not after 4 GiB.
 */
#include "rpc_scan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

fwm__rpc_limits fwm__rpc_default_limits(void) {
    fwm__rpc_limits limits = {
        .max_message_bytes = 4u << 20,
        .max_depth = 16,
        .max_string_bytes = 1u << 20,
        .max_binary_bytes = 4u << 20,
        .max_objects = 1u << 18,
    };
    return limits;
}

const char *fwm__rpc_fault_name(fwm__rpc_fault fault) {
    switch (fault) {
    case FWM_RPC_FAULT_NONE: return "none";
    case FWM_RPC_FAULT_NOT_ARRAY: return "not_array";
    case FWM_RPC_FAULT_INVALID_BYTE: return "invalid_byte";
    case FWM_RPC_FAULT_MESSAGE_TOO_LARGE: return "message_too_large";
    case FWM_RPC_FAULT_TOO_DEEP: return "too_deep";
    case FWM_RPC_FAULT_STRING_TOO_LONG: return "string_too_long";
    case FWM_RPC_FAULT_BINARY_TOO_LONG: return "binary_too_long";
    case FWM_RPC_FAULT_TOO_MANY_ELEMENTS: return "too_many_elements";
    case FWM_RPC_FAULT_TOO_MANY_OBJECTS: return "too_many_objects";
    case FWM_RPC_FAULT_OUT_OF_MEMORY: return "out_of_memory";
    }
    return "unknown";
}

void fwm__rpc_reader_init(fwm__rpc_reader *reader, const fwm__rpc_limits *limits) {
    memset(reader, 0, sizeof *reader);
    reader->limits = limits ? *limits : fwm__rpc_default_limits();
    if (reader->limits.max_depth > FWM_RPC_MAX_DEPTH_CAP) reader->limits.max_depth = FWM_RPC_MAX_DEPTH_CAP;
    reader->grow = realloc;
    reader->release = free;
}

void fwm__rpc_reader_set_allocator(fwm__rpc_reader *reader, void *(*grow)(void *, size_t), void (*release)(void *)) {
    reader->grow = grow;
    reader->release = release;
}

void fwm__rpc_reader_release(fwm__rpc_reader *reader) {
    (reader->release ? reader->release : free)(reader->buffer); /* a reader never initialised holds NULL */
    reader->buffer = NULL;
    reader->capacity = reader->length = reader->start = 0;
}

static fwm__rpc_result fail(fwm__rpc_reader *reader, fwm__rpc_fault fault, const char *format,
                            unsigned long long found, unsigned long long limit) {
    reader->fault = fault;
    snprintf(reader->error, sizeof reader->error, format, found, limit);
    return FWM_RPC_ERROR;
}

/* Drop the message handed out last time, and move the unconsumed tail to the front once the
 * consumed head is at least half the buffer (amortised O(1) per byte). */
static void drop_consumed(fwm__rpc_reader *reader) {
    reader->start += reader->consume;
    reader->consume = 0;
    if (reader->start == reader->length) {
        reader->start = reader->length = 0;
    } else if (reader->start > 0 && reader->start >= reader->capacity / 2) {
        memmove(reader->buffer, reader->buffer + reader->start, reader->length - reader->start);
        reader->length -= reader->start;
        reader->start = 0;
    }
}

void *fwm__rpc_reader_space(fwm__rpc_reader *reader, size_t want, size_t *available) {
    drop_consumed(reader);
    if (reader->capacity - reader->length < want || !reader->buffer) {
        if (reader->start > 0) { /* reclaim the head first */
            memmove(reader->buffer, reader->buffer + reader->start, reader->length - reader->start);
            reader->length -= reader->start;
            reader->start = 0;
        }
        if (reader->capacity - reader->length < want || !reader->buffer) {
            size_t capacity = reader->capacity ? reader->capacity : 4096;
            while (capacity - reader->length < want) capacity *= 2;
            uint8_t *grown = reader->grow(reader->buffer, capacity);
            if (!grown) {
                fail(reader, FWM_RPC_FAULT_OUT_OF_MEMORY, "out of memory growing the input buffer to %llu bytes%.0llu",
                     (unsigned long long)capacity, 0);
                return NULL;
            }
            reader->buffer = grown;
            reader->capacity = capacity;
        }
    }
    *available = reader->capacity - reader->length;
    return reader->buffer + reader->length;
}

void fwm__rpc_reader_commit(fwm__rpc_reader *reader, size_t size) {
    reader->length += size;
}

bool fwm__rpc_reader_feed(fwm__rpc_reader *reader, const void *data, size_t size) {
    if (size == 0) return true;
    size_t available = 0;
    void *space = fwm__rpc_reader_space(reader, size, &available);
    if (!space) return false;
    memcpy(space, data, size);
    fwm__rpc_reader_commit(reader, size);
    return true;
}

size_t fwm__rpc_reader_pending(const fwm__rpc_reader *reader) {
    return reader->length - reader->start - reader->consume;
}

fwm__rpc_fault fwm__rpc_reader_fault(const fwm__rpc_reader *reader) {
    return reader->fault;
}

const char *fwm__rpc_reader_error(const fwm__rpc_reader *reader) {
    return reader->error;
}

static uint64_t read_be(const uint8_t *p, size_t n) {
    uint64_t value = 0;
    for (size_t i = 0; i < n; i++) value = (value << 8) | p[i];
    return value;
}

/* What one header byte announces. */
typedef struct item_shape {
    size_t header;       /* bytes of the header, type byte included (0: invalid) */
    size_t size_bytes;   /* bytes of the big-endian length/count that follow the type byte */
    uint64_t fixed;      /* fixed payload bytes (numbers, fixext) or count (fix containers) */
    enum { SCALAR, STRING, BINARY, EXT, ARRAY, MAP } kind;
} item_shape;

static item_shape shape_of(uint8_t b) {
    item_shape s = {1, 0, 0, SCALAR};
    if (b <= 0x7f || b >= 0xe0) return s;                             /* fixint */
    if (b >= 0x80 && b <= 0x8f) return (item_shape){1, 0, b & 0x0f, MAP};
    if (b >= 0x90 && b <= 0x9f) return (item_shape){1, 0, b & 0x0f, ARRAY};
    if (b >= 0xa0 && b <= 0xbf) return (item_shape){1, 0, b & 0x1f, STRING};
    switch (b) {
    case 0xc0: case 0xc2: case 0xc3: return s;                         /* nil, false, true */
    case 0xc4: return (item_shape){2, 1, 0, BINARY};
    case 0xc5: return (item_shape){3, 2, 0, BINARY};
    case 0xc6: return (item_shape){5, 4, 0, BINARY};
    case 0xc7: return (item_shape){3, 1, 0, EXT};                       /* len8 + type */
    case 0xc8: return (item_shape){4, 2, 0, EXT};
    case 0xc9: return (item_shape){6, 4, 0, EXT};
    case 0xca: return (item_shape){5, 0, 0, SCALAR};                    /* float32 */
    case 0xcb: return (item_shape){9, 0, 0, SCALAR};
    case 0xcc: case 0xd0: return (item_shape){2, 0, 0, SCALAR};
    case 0xcd: case 0xd1: return (item_shape){3, 0, 0, SCALAR};
    case 0xce: case 0xd2: return (item_shape){5, 0, 0, SCALAR};
    case 0xcf: case 0xd3: return (item_shape){9, 0, 0, SCALAR};
    case 0xd4: return (item_shape){2, 0, 1, EXT};                       /* fixext: type + data */
    case 0xd5: return (item_shape){2, 0, 2, EXT};
    case 0xd6: return (item_shape){2, 0, 4, EXT};
    case 0xd7: return (item_shape){2, 0, 8, EXT};
    case 0xd8: return (item_shape){2, 0, 16, EXT};
    case 0xd9: return (item_shape){2, 1, 0, STRING};
    case 0xda: return (item_shape){3, 2, 0, STRING};
    case 0xdb: return (item_shape){5, 4, 0, STRING};
    case 0xdc: return (item_shape){3, 2, 0, ARRAY};
    case 0xdd: return (item_shape){5, 4, 0, ARRAY};
    case 0xde: return (item_shape){3, 2, 0, MAP};
    case 0xdf: return (item_shape){5, 4, 0, MAP};
    default: return (item_shape){0, 0, 0, SCALAR};                     /* 0xc1 */
    }
}

/* One item finished: count it against the open containers; true when the top-level one closed. */
static bool item_done(fwm__rpc_reader *reader) {
    while (reader->depth > 0) {
        if (--reader->remaining[reader->depth - 1] > 0) return false;
        reader->depth--;
    }
    return true;
}

fwm__rpc_result fwm__rpc_reader_next(fwm__rpc_reader *reader, const uint8_t **message,
                                     size_t *length) {
    if (reader->fault != FWM_RPC_FAULT_NONE) return FWM_RPC_ERROR;
    drop_consumed(reader);
    if (!reader->buffer) return FWM_RPC_NEED_MORE; /* nothing fed yet (and NULL + 0 is undefined) */
    const fwm__rpc_limits *lim = &reader->limits;
    const uint8_t *msg = reader->buffer + reader->start;
    size_t have = reader->length - reader->start;

    while (reader->scanned < have) {
        size_t at = reader->scanned;
        uint8_t b = msg[at];
        item_shape s = shape_of(b);
        if (s.header == 0)
            return fail(reader, FWM_RPC_FAULT_INVALID_BYTE, "invalid msgpack byte 0xc1 at message offset %llu%.0llu",
                        (unsigned long long)at, 0);
        if (at == 0 && s.kind != ARRAY)
            return fail(reader, FWM_RPC_FAULT_NOT_ARRAY,
                        "a message must be a msgpack array, found type byte 0x%02llx%.0llu", b, 0);
        if (at + s.header > lim->max_message_bytes)
            return fail(reader, FWM_RPC_FAULT_MESSAGE_TOO_LARGE,
                        "message longer than %llu bytes (max_message_bytes %llu)",
                        (unsigned long long)(at + s.header), (unsigned long long)lim->max_message_bytes);
        if (have - at < s.header) return FWM_RPC_NEED_MORE;

        uint64_t n = s.size_bytes ? read_be(msg + at + 1, s.size_bytes) : s.fixed;
        size_t after = at + s.header; /* offset just past the header */
        uint64_t payload = 0;
        switch (s.kind) {
        case SCALAR:
            break;
        case STRING:
            if (n > lim->max_string_bytes)
                return fail(reader, FWM_RPC_FAULT_STRING_TOO_LONG, "string of %llu bytes exceeds max_string_bytes %llu",
                            (unsigned long long)n, (unsigned long long)lim->max_string_bytes);
            payload = n;
            break;
        case BINARY:
        case EXT:
            if (n > lim->max_binary_bytes)
                return fail(reader, FWM_RPC_FAULT_BINARY_TOO_LONG, "binary of %llu bytes exceeds max_binary_bytes %llu",
                            (unsigned long long)n, (unsigned long long)lim->max_binary_bytes);
            payload = n;
            break;
        case ARRAY:
        case MAP: {
            uint64_t items = s.kind == MAP ? 2 * n : n;
            /* every item takes at least one byte: a count larger than what may still follow is a lie */
            if (items > lim->max_message_bytes - after)
                return fail(reader, FWM_RPC_FAULT_TOO_MANY_ELEMENTS,
                            "container declares %llu items but at most %llu bytes may follow",
                            (unsigned long long)items, (unsigned long long)(lim->max_message_bytes - after));
            if (items > lim->max_objects - reader->objects)
                return fail(reader, FWM_RPC_FAULT_TOO_MANY_OBJECTS, "message has more than %llu objects%.0llu",
                            (unsigned long long)lim->max_objects, 0);
            break;
        }
        }
        if (payload > lim->max_message_bytes - after)
            return fail(reader, FWM_RPC_FAULT_MESSAGE_TOO_LARGE,
                        "message longer than %llu bytes (max_message_bytes %llu)",
                        (unsigned long long)(after + payload), (unsigned long long)lim->max_message_bytes);
        if (have - after < payload) return FWM_RPC_NEED_MORE;

        /* The item is fully buffered: accept it. */
        if (++reader->objects > lim->max_objects)
            return fail(reader, FWM_RPC_FAULT_TOO_MANY_OBJECTS, "message has more than %llu objects%.0llu",
                        (unsigned long long)lim->max_objects, 0);
        reader->scanned = after + (size_t)payload;
        bool complete;
        if ((s.kind == ARRAY || s.kind == MAP) && reader->depth >= lim->max_depth)
            return fail(reader, FWM_RPC_FAULT_TOO_DEEP, "nesting deeper than max_depth %llu%.0llu",
                        (unsigned long long)lim->max_depth, 0);
        if ((s.kind == ARRAY || s.kind == MAP) && n > 0) {
            reader->remaining[reader->depth++] = s.kind == MAP ? 2 * n : n;
            complete = false;
        } else {
            complete = item_done(reader);
        }
        if (complete) {
            *message = msg;
            *length = reader->scanned;
            reader->consume = reader->scanned;
            reader->scanned = 0;
            reader->depth = 0;
            reader->objects = 0;
            return FWM_RPC_MESSAGE;
        }
    }
    return FWM_RPC_NEED_MORE;
}

fwm__rpc_result fwm__rpc_scan_first(const fwm__rpc_limits *limits, const uint8_t *bytes, size_t size,
                                    size_t *length, char *error, size_t error_size) {
    fwm__rpc_reader reader;
    fwm__rpc_reader_init(&reader, limits);
    reader.buffer = (uint8_t *)bytes; /* only read: one call of next() with nothing consumed moves nothing */
    reader.length = reader.capacity = size;
    const uint8_t *message;
    fwm__rpc_result result = size ? fwm__rpc_reader_next(&reader, &message, length) : FWM_RPC_NEED_MORE;
    if (error && error_size) snprintf(error, error_size, "%s", reader.error);
    return result;
}
