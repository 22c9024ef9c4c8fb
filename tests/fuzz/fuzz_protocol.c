/* fuzz_protocol.c - fuzz target: any bytes as the msgpack-RPC stream a client sends to fwm-serve,
 * through the pre-scanner (rpc_scan.c) and the codec (rpc_codec.c) that the server runs on it.
 *
 * Checks, beyond "no crash, no leak, no undefined behaviour":
 *  - the scanner finds the same messages and the same verdict (refused or not, and why) whether
 *    the stream arrives whole, one byte at a time, or in chunks of sizes taken from the input;
 *  - msgpack-c agrees on every boundary: each message the scanner hands out unpacks as exactly one
 *    object spanning exactly its bytes;
 *  - the codec decodes each one or refuses it with a code and a message, and the error response
 *    the server would then send is valid msgpack whose strings are valid UTF-8.
 * Small limits (4 KiB messages, depth 8) so mutations reach every refusal.
 */
#include <msgpack.h>
#include <string.h>

#include "fuzz_target.h"
#include "fwm_utf8.h"
#include "rpc_codec.h"
#include "rpc_scan.h"

unsigned long fuzz_inputs_accepted;

#define MAX_MESSAGES 256

typedef struct scan {
    size_t count;
    size_t length[MAX_MESSAGES];
    uint64_t hash[MAX_MESSAGES]; /* FNV-1a of each message's bytes */
    fwm__rpc_result verdict;     /* how the stream ended: NEED_MORE (clean) or ERROR */
    fwm__rpc_fault fault;
} scan;

static fwm__rpc_limits small_limits(void) {
    fwm__rpc_limits l = {.max_message_bytes = 4096, .max_depth = 8, .max_string_bytes = 1024,
                         .max_binary_bytes = 2048, .max_objects = 512};
    return l;
}

static uint64_t fnv(const uint8_t *p, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

/* Every string inside a msgpack object is valid UTF-8. */
static bool strings_valid(const msgpack_object *o, int depth) {
    if (depth > 32) return false;
    switch (o->type) {
    case MSGPACK_OBJECT_STR: return fwm__utf8_valid(o->via.str.ptr, o->via.str.size);
    case MSGPACK_OBJECT_ARRAY:
        for (uint32_t i = 0; i < o->via.array.size; i++)
            if (!strings_valid(&o->via.array.ptr[i], depth + 1)) return false;
        return true;
    case MSGPACK_OBJECT_MAP:
        for (uint32_t i = 0; i < o->via.map.size; i++)
            if (!strings_valid(&o->via.map.ptr[i].key, depth + 1) || !strings_valid(&o->via.map.ptr[i].val, depth + 1))
                return false;
        return true;
    default: return true;
    }
}

/* What the server does with one accepted message: msgpack-c must see exactly one object there,
 * and the codec decodes it or produces a well-formed error response. */
static void check_message(const uint8_t *message, size_t length) {
    msgpack_unpacked u;
    msgpack_unpacked_init(&u);
    size_t offset = 0;
    msgpack_unpack_return rc = msgpack_unpack_next(&u, (const char *)message, length, &offset);
    FUZZ_CHECK(rc == MSGPACK_UNPACK_SUCCESS);
    FUZZ_CHECK(offset == length);
    FUZZ_CHECK(u.data.type == MSGPACK_OBJECT_ARRAY);
    msgpack_unpacked_destroy(&u);

    fwm__rpc_call call;
    fwm__rpc_failure failure;
    memset(&failure, 0, sizeof failure);
    if (!fwm__rpc_call_decode(&call, message, length, &failure)) {
        FUZZ_CHECK(failure.code > 0);
        FUZZ_CHECK(failure.message[0] != '\0');
        msgpack_sbuffer out;
        msgpack_sbuffer_init(&out);
        msgpack_packer pk;
        msgpack_packer_init(&pk, &out, msgpack_sbuffer_write);
        fwm__rpc_pack_error_response(&pk, 7, &failure);
        msgpack_unpacked reply;
        msgpack_unpacked_init(&reply);
        size_t at = 0;
        FUZZ_CHECK(msgpack_unpack_next(&reply, out.data, out.size, &at) == MSGPACK_UNPACK_SUCCESS && at == out.size);
        FUZZ_CHECK(strings_valid(&reply.data, 0));
        msgpack_unpacked_destroy(&reply);
        msgpack_sbuffer_destroy(&out);
    } else {
        FUZZ_CHECK(call.method_length == 0 || call.method != NULL);
    }
    fwm__rpc_call_release(&call);
}

/* Drain every complete message; record them. Returns false once the stream is refused. */
static bool drain(fwm__rpc_reader *r, scan *out, bool check) {
    for (;;) {
        const uint8_t *message;
        size_t length;
        fwm__rpc_result res = fwm__rpc_reader_next(r, &message, &length);
        if (res == FWM_RPC_MESSAGE) {
            FUZZ_CHECK(length > 0 && length <= 4096);
            if (out->count < MAX_MESSAGES) {
                out->length[out->count] = length;
                out->hash[out->count] = fnv(message, length);
            }
            out->count++;
            if (check) check_message(message, length);
            continue;
        }
        out->verdict = res;
        out->fault = fwm__rpc_reader_fault(r);
        if (res == FWM_RPC_ERROR) FUZZ_CHECK(fwm__rpc_reader_error(r)[0] != '\0');
        return res != FWM_RPC_ERROR;
    }
}

/* Feed the stream in pieces: chunk(i) bytes at the i-th step (0: all at once). */
static void run(const uint8_t *data, size_t size, size_t (*chunk)(const uint8_t *, size_t, size_t), scan *out,
                bool check) {
    fwm__rpc_limits limits = small_limits();
    fwm__rpc_reader r;
    fwm__rpc_reader_init(&r, &limits);
    memset(out, 0, sizeof *out);
    drain(&r, out, check); /* a fresh reader, nothing fed yet */
    size_t at = 0;
    for (size_t step = 0; at < size; step++) {
        size_t n = chunk ? chunk(data, size, step) : size;
        if (n > size - at) n = size - at;
        FUZZ_CHECK(fwm__rpc_reader_feed(&r, data + at, n));
        at += n;
        if (!drain(&r, out, check)) break;
    }
    fwm__rpc_reader_release(&r);
}

static size_t one_byte(const uint8_t *data, size_t size, size_t step) {
    (void)data, (void)size, (void)step;
    return 1;
}

static size_t from_input(const uint8_t *data, size_t size, size_t step) {
    return size ? 1 + data[step % size] % 23 : 1;
}

static void same(const scan *a, const scan *b) {
    FUZZ_CHECK(a->count == b->count);
    FUZZ_CHECK(a->verdict == b->verdict);
    FUZZ_CHECK(a->fault == b->fault);
    size_t n = a->count < MAX_MESSAGES ? a->count : MAX_MESSAGES;
    for (size_t i = 0; i < n; i++) FUZZ_CHECK(a->length[i] == b->length[i] && a->hash[i] == b->hash[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static scan whole, bytes, chunks;
    run(data, size, NULL, &whole, true);
    run(data, size, one_byte, &bytes, false);
    run(data, size, from_input, &chunks, false);
    same(&whole, &bytes);
    same(&whole, &chunks);
    if (whole.count > 0) fuzz_inputs_accepted++;
    return 0;
}
