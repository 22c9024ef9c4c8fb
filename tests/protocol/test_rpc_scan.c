/* test_rpc_scan.c - the msgpack pre-scanner: message boundaries agree with msgpack-c's for every
 * type, whatever way the input is split (every byte position, byte by byte, random chunks); every
 * named limit refuses its input early and stickily; memory stays bounded; garbage never crashes. */
#include <msgpack.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "rpc_scan.h"

typedef struct corpus {
    msgpack_sbuffer buffer;
    size_t starts[64], lengths[64];
    size_t count;
} corpus;

static void mark(corpus *c, size_t start) {
    c->starts[c->count] = start;
    c->lengths[c->count] = c->buffer.size - start;
    c->count++;
}

static void pack_str(msgpack_packer *pk, const char *s) {
    msgpack_pack_str(pk, strlen(s));
    msgpack_pack_str_body(pk, s, strlen(s));
}

static void pack_filled_str(msgpack_packer *pk, size_t n, char fill) {
    char *s = malloc(n + 1);
    memset(s, fill, n);
    msgpack_pack_str(pk, n);
    msgpack_pack_str_body(pk, s, n);
    free(s);
}

/* Messages covering every msgpack type and length class; `big` adds the 64 KiB+ ones. */
static void build(corpus *c, bool big) {
    memset(c, 0, sizeof *c);
    msgpack_sbuffer_init(&c->buffer);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &c->buffer, msgpack_sbuffer_write);
    size_t s;

    s = c->buffer.size; /* [0, 1, "hello", []] */
    msgpack_pack_array(&pk, 4);
    msgpack_pack_uint8(&pk, 0);
    msgpack_pack_uint8(&pk, 1);
    pack_str(&pk, "hello");
    msgpack_pack_array(&pk, 0);
    mark(c, s);

    s = c->buffer.size; /* a feed with a str16 text and a token array */
    msgpack_pack_array(&pk, 4);
    msgpack_pack_uint8(&pk, 0);
    msgpack_pack_uint32(&pk, 4294967295u);
    pack_str(&pk, "feed");
    msgpack_pack_array(&pk, 1);
    msgpack_pack_map(&pk, 4);
    pack_str(&pk, "session");
    pack_str(&pk, "0123456789abcdef0123456789abcdef");
    pack_str(&pk, "text");
    pack_filled_str(&pk, 300, 'a');
    pack_str(&pk, "tokens");
    msgpack_pack_array(&pk, 40);
    for (int i = 0; i < 40; i++) msgpack_pack_uint32(&pk, (uint32_t)i * 1000u);
    pack_str(&pk, "topk");
    msgpack_pack_uint8(&pk, 5);
    mark(c, s);

    s = c->buffer.size; /* scalars of every width, ext of every width */
    msgpack_pack_array(&pk, 3);
    msgpack_pack_uint8(&pk, 2);
    pack_str(&pk, "note");
    msgpack_pack_array(&pk, 20);
    msgpack_pack_double(&pk, 1.5);
    msgpack_pack_float(&pk, -2.25f);
    msgpack_pack_int8(&pk, -7);
    msgpack_pack_int16(&pk, -300);
    msgpack_pack_int32(&pk, -70000);
    msgpack_pack_int64(&pk, -5000000000ll);
    msgpack_pack_uint16(&pk, 60000);
    msgpack_pack_uint64(&pk, UINT64_MAX);
    msgpack_pack_nil(&pk);
    msgpack_pack_true(&pk);
    msgpack_pack_false(&pk);
    static const char ext_body[300] = {1, 2, 3};
    const size_t ext_sizes[] = {1, 2, 4, 8, 16, 3, 300};
    for (size_t i = 0; i < 7; i++) {
        msgpack_pack_ext(&pk, ext_sizes[i], 5);
        msgpack_pack_ext_body(&pk, ext_body, ext_sizes[i]);
    }
    msgpack_pack_bin(&pk, 3);
    msgpack_pack_bin_body(&pk, "abc", 3);
    pack_filled_str(&pk, 40, 'b'); /* str8 */
    mark(c, s);

    s = c->buffer.size; /* nested empties */
    msgpack_pack_array(&pk, 4);
    msgpack_pack_uint8(&pk, 0);
    msgpack_pack_uint8(&pk, 7);
    msgpack_pack_array(&pk, 1);
    msgpack_pack_array(&pk, 1);
    msgpack_pack_array(&pk, 0);
    msgpack_pack_map(&pk, 0);
    mark(c, s);

    s = c->buffer.size; /* array16 and map16 */
    msgpack_pack_array(&pk, 2);
    msgpack_pack_array(&pk, 20);
    for (int i = 0; i < 20; i++) msgpack_pack_int(&pk, i - 10);
    msgpack_pack_map(&pk, 20);
    for (int i = 0; i < 20; i++) {
        msgpack_pack_int(&pk, i);
        msgpack_pack_array(&pk, 1);
        msgpack_pack_nil(&pk);
    }
    mark(c, s);

    if (big) {
        s = c->buffer.size; /* str32, bin32 */
        msgpack_pack_array(&pk, 2);
        pack_filled_str(&pk, 70000, 'c');
        char *bin = calloc(1, 70000);
        msgpack_pack_bin(&pk, 70000);
        msgpack_pack_bin_body(&pk, bin, 70000);
        free(bin);
        mark(c, s);
    }

    s = c->buffer.size; /* [1, 2, nil, "x"] */
    msgpack_pack_array(&pk, 4);
    msgpack_pack_uint8(&pk, 1);
    msgpack_pack_uint8(&pk, 2);
    msgpack_pack_nil(&pk);
    pack_str(&pk, "x");
    mark(c, s);
}

/* Drain every complete message, checking each against the corpus in order. */
static void drain(fwm__rpc_reader *r, const corpus *c, size_t *seen, const char *how, size_t at) {
    for (;;) {
        const uint8_t *m;
        size_t n;
        fwm__rpc_result res = fwm__rpc_reader_next(r, &m, &n);
        if (res == FWM_RPC_NEED_MORE) return;
        if (res == FWM_RPC_ERROR) {
            fprintf(stderr, "%s (at %zu): unexpected error: %s\n", how, at, fwm__rpc_reader_error(r));
            check_failures++;
            return;
        }
        if (*seen >= c->count) {
            fprintf(stderr, "%s (at %zu): more messages than fed\n", how, at);
            check_failures++;
            return;
        }
        if (n != c->lengths[*seen] || memcmp(m, c->buffer.data + c->starts[*seen], n) != 0) {
            fprintf(stderr, "%s (at %zu): message %zu: length %zu, expected %zu (or bytes differ)\n", how, at, *seen,
                    n, c->lengths[*seen]);
            check_failures++;
        }
        (*seen)++;
    }
}

static void test_boundaries_agree_with_msgpack(void) {
    corpus c;
    build(&c, true);
    size_t offset = 0;
    for (size_t i = 0; i < c.count; i++) {
        msgpack_unpacked u;
        msgpack_unpacked_init(&u);
        size_t before = offset;
        CHECK(msgpack_unpack_next(&u, c.buffer.data, c.buffer.size, &offset) == MSGPACK_UNPACK_SUCCESS);
        CHECK_U64(offset - before, c.lengths[i]);
        msgpack_unpacked_destroy(&u);
    }
    msgpack_sbuffer_destroy(&c.buffer);
}

static void test_whole_and_byte_by_byte(void) {
    corpus c;
    build(&c, true);
    fwm__rpc_reader r;
    size_t seen = 0;
    fwm__rpc_reader_init(&r, NULL);
    fwm__rpc_reader_feed(&r, c.buffer.data, c.buffer.size);
    drain(&r, &c, &seen, "whole", 0);
    CHECK_U64(seen, c.count);
    CHECK_U64(fwm__rpc_reader_pending(&r), 0);
    fwm__rpc_reader_release(&r);

    seen = 0;
    fwm__rpc_reader_init(&r, NULL);
    for (size_t i = 0; i < c.buffer.size; i++) {
        fwm__rpc_reader_feed(&r, c.buffer.data + i, 1);
        drain(&r, &c, &seen, "byte by byte", i);
    }
    CHECK_U64(seen, c.count);
    fwm__rpc_reader_release(&r);

    srand(7);
    seen = 0;
    fwm__rpc_reader_init(&r, NULL);
    for (size_t i = 0; i < c.buffer.size;) {
        size_t n = 1 + (size_t)rand() % 5000;
        if (n > c.buffer.size - i) n = c.buffer.size - i;
        size_t available;
        void *space = fwm__rpc_reader_space(&r, n, &available); /* the zero-copy path */
        CHECK(space != NULL && available >= n);
        memcpy(space, c.buffer.data + i, n);
        fwm__rpc_reader_commit(&r, n);
        i += n;
        drain(&r, &c, &seen, "random chunks", i);
    }
    CHECK_U64(seen, c.count);
    fwm__rpc_reader_release(&r);
    msgpack_sbuffer_destroy(&c.buffer);
}

static void test_split_at_every_byte(void) {
    corpus c;
    build(&c, false);
    int before = check_failures;
    for (size_t split = 0; split <= c.buffer.size && check_failures == before; split++) {
        fwm__rpc_reader r;
        size_t seen = 0;
        fwm__rpc_reader_init(&r, NULL);
        fwm__rpc_reader_feed(&r, c.buffer.data, split);
        drain(&r, &c, &seen, "split, first part", split);
        fwm__rpc_reader_feed(&r, c.buffer.data + split, c.buffer.size - split);
        drain(&r, &c, &seen, "split, second part", split);
        CHECK_U64(seen, c.count);
        fwm__rpc_reader_release(&r);
    }
    msgpack_sbuffer_destroy(&c.buffer);
}

/* Feed `bytes` (one at a time) to a reader with `limits`; expect `fault` no later than byte `by`. */
static void expect_fault(const char *name, const uint8_t *bytes, size_t size, const fwm__rpc_limits *limits,
                         fwm__rpc_fault fault, size_t by, const char *mention) {
    fwm__rpc_reader r;
    fwm__rpc_reader_init(&r, limits);
    size_t at = 0;
    fwm__rpc_result res = FWM_RPC_NEED_MORE;
    const uint8_t *m;
    size_t n;
    while (at < size && res == FWM_RPC_NEED_MORE) {
        fwm__rpc_reader_feed(&r, bytes + at++, 1);
        res = fwm__rpc_reader_next(&r, &m, &n);
    }
    if (res != FWM_RPC_ERROR || fwm__rpc_reader_fault(&r) != fault) {
        fprintf(stderr, "%s: expected fault %s, found result %d fault %s\n", name, fwm__rpc_fault_name(fault), (int)res,
                fwm__rpc_fault_name(fwm__rpc_reader_fault(&r)));
        check_failures++;
    } else {
        if (at > by) {
            fprintf(stderr, "%s: refused after %zu bytes, expected by %zu\n", name, at, by);
            check_failures++;
        }
        CHECK_CONTAINS(fwm__rpc_reader_error(&r), mention);
        /* sticky: a valid message afterwards is still refused */
        static const uint8_t valid[] = {0x94, 0x00, 0x01, 0xa1, 'x', 0x90};
        fwm__rpc_reader_feed(&r, valid, sizeof valid);
        CHECK(fwm__rpc_reader_next(&r, &m, &n) == FWM_RPC_ERROR);
    }
    fwm__rpc_reader_release(&r);
}

static void test_limits(void) {
    fwm__rpc_limits lim = fwm__rpc_default_limits();
    { /* a string claiming 2 GiB: refused at its header */
        const uint8_t b[] = {0x91, 0xdb, 0x7f, 0xff, 0xff, 0xff, 'a', 'b'};
        expect_fault("str32 2 GiB", b, sizeof b, &lim, FWM_RPC_FAULT_STRING_TOO_LONG, 6, "max_string_bytes");
    }
    {
        const uint8_t b[] = {0x91, 0xc6, 0x7f, 0xff, 0xff, 0xff, 0};
        expect_fault("bin32 2 GiB", b, sizeof b, &lim, FWM_RPC_FAULT_BINARY_TOO_LONG, 6, "max_binary_bytes");
    }
    {
        const uint8_t b[] = {0x91, 0xc9, 0x7f, 0xff, 0xff, 0xff, 1, 0};
        expect_fault("ext32 2 GiB", b, sizeof b, &lim, FWM_RPC_FAULT_BINARY_TOO_LONG, 7, "max_binary_bytes");
    }
    { /* an array claiming 4 billion elements in a 4 MiB message */
        const uint8_t b[] = {0xdd, 0xff, 0xff, 0xff, 0xff, 0xc0};
        expect_fault("array32 lie", b, sizeof b, &lim, FWM_RPC_FAULT_TOO_MANY_ELEMENTS, 5, "items");
    }
    {
        const uint8_t b[] = {0x91, 0xdf, 0x10, 0x00, 0x00, 0x00, 0xc0};
        expect_fault("map32 lie", b, sizeof b, &lim, FWM_RPC_FAULT_TOO_MANY_ELEMENTS, 6, "items");
    }
    { /* depth: 16 nested arrays pass, 17 fail */
        uint8_t b[40];
        memset(b, 0x91, 16);
        b[16] = 0xc0;
        fwm__rpc_reader r;
        fwm__rpc_reader_init(&r, &lim);
        fwm__rpc_reader_feed(&r, b, 17);
        const uint8_t *m;
        size_t n;
        CHECK(fwm__rpc_reader_next(&r, &m, &n) == FWM_RPC_MESSAGE);
        CHECK_U64(n, 17);
        fwm__rpc_reader_release(&r);
        memset(b, 0x91, 17);
        b[17] = 0xc0;
        expect_fault("17 deep", b, 18, &lim, FWM_RPC_FAULT_TOO_DEEP, 17, "max_depth");
        memset(b, 0x91, 16);
        b[16] = 0x90; /* an empty array is a level too */
        expect_fault("17 deep, empty innermost", b, 17, &lim, FWM_RPC_FAULT_TOO_DEEP, 17, "max_depth");
        uint8_t deep[100000];
        memset(deep, 0x91, sizeof deep);
        expect_fault("100000 deep", deep, sizeof deep, &lim, FWM_RPC_FAULT_TOO_DEEP, 17, "max_depth");
    }
    { /* total size */
        fwm__rpc_limits small = lim;
        small.max_message_bytes = 100;
        uint8_t b[200] = {0x91, 0xd9, 120};
        memset(b + 3, 'x', 120);
        expect_fault("120-byte string in a 100-byte message", b, 123, &small, FWM_RPC_FAULT_MESSAGE_TOO_LARGE, 3,
                     "max_message_bytes");
        uint8_t many[200] = {0xdc, 0x00, 150}; /* 150 nils: each 1 byte, 153 > 100 */
        memset(many + 3, 0xc0, 150);
        expect_fault("150 elements in a 100-byte message", many, 153, &small, FWM_RPC_FAULT_TOO_MANY_ELEMENTS, 3,
                     "items");
    }
    {
        fwm__rpc_limits few = lim;
        few.max_objects = 10;
        uint8_t b[30] = {0xdc, 0x00, 20};
        memset(b + 3, 0xc0, 20);
        expect_fault("20 objects, max 10", b, 23, &few, FWM_RPC_FAULT_TOO_MANY_OBJECTS, 3, "objects");
    }
    {
        const uint8_t b[] = {0x91, 0xc1};
        expect_fault("0xc1", b, sizeof b, &lim, FWM_RPC_FAULT_INVALID_BYTE, 2, "0xc1");
        const uint8_t g[] = "GET / HTTP/1.1\r\n\r\n";
        expect_fault("HTTP", g, sizeof g - 1, &lim, FWM_RPC_FAULT_NOT_ARRAY, 1, "array");
        const uint8_t map[] = {0x80};
        expect_fault("top-level map", map, 1, &lim, FWM_RPC_FAULT_NOT_ARRAY, 1, "array");
    }
}

static void test_memory_stays_bounded(void) {
    /* many small messages byte by byte: the buffer stays small */
    fwm__rpc_reader r;
    fwm__rpc_reader_init(&r, NULL);
    static const uint8_t msg[] = {0x94, 0x00, 0x01, 0xa5, 'h', 'e', 'l', 'l', 'o', 0x90};
    size_t got = 0;
    for (int i = 0; i < 20000; i++) {
        for (size_t j = 0; j < sizeof msg; j++) {
            fwm__rpc_reader_feed(&r, msg + j, 1);
            const uint8_t *m;
            size_t n;
            while (fwm__rpc_reader_next(&r, &m, &n) == FWM_RPC_MESSAGE) got++;
        }
    }
    CHECK_U64(got, 20000);
    CHECK(r.capacity <= 8192);
    fwm__rpc_reader_release(&r);

    /* one 1 MiB string byte by byte: linear time, buffer within 2x */
    fwm__rpc_reader_init(&r, NULL);
    size_t size = 1u << 20;
    uint8_t *big = malloc(size + 6);
    big[0] = 0x91;
    big[1] = 0xdb;
    big[2] = (uint8_t)(size >> 24);
    big[3] = (uint8_t)(size >> 16);
    big[4] = (uint8_t)(size >> 8);
    big[5] = (uint8_t)size;
    memset(big + 6, 'z', size);
    fwm__rpc_result res = FWM_RPC_NEED_MORE;
    const uint8_t *m;
    size_t n = 0;
    for (size_t i = 0; i < size + 6 && res == FWM_RPC_NEED_MORE; i++) {
        fwm__rpc_reader_feed(&r, big + i, 1);
        res = fwm__rpc_reader_next(&r, &m, &n);
    }
    CHECK(res == FWM_RPC_MESSAGE);
    CHECK_U64(n, size + 6);
    CHECK(r.capacity <= 2 * (size + 6));
    fwm__rpc_reader_release(&r);
    free(big);
}

static void test_garbage_never_crashes(void) {
    srand(12345);
    unsigned errors = 0, messages = 0;
    for (int round = 0; round < 3000; round++) {
        fwm__rpc_reader r;
        fwm__rpc_limits lim = fwm__rpc_default_limits();
        lim.max_message_bytes = 4096;
        fwm__rpc_reader_init(&r, &lim);
        uint8_t bytes[256];
        size_t size = 1 + (size_t)rand() % sizeof bytes;
        for (size_t i = 0; i < size; i++) bytes[i] = (uint8_t)rand();
        if (round % 2) bytes[0] = (uint8_t)(0x90 | (bytes[0] & 15)); /* get past the first check */
        fwm__rpc_reader_feed(&r, bytes, size);
        const uint8_t *m;
        size_t n;
        fwm__rpc_result res;
        int calls = 0;
        while ((res = fwm__rpc_reader_next(&r, &m, &n)) == FWM_RPC_MESSAGE) {
            messages++;
            CHECK(n <= size);
            CHECK(++calls <= 256);
            msgpack_unpacked u; /* whatever passed the scan decodes exactly */
            msgpack_unpacked_init(&u);
            size_t offset = 0;
            CHECK(msgpack_unpack_next(&u, (const char *)m, n, &offset) == MSGPACK_UNPACK_SUCCESS && offset == n);
            msgpack_unpacked_destroy(&u);
        }
        if (res == FWM_RPC_ERROR) errors++;
        fwm__rpc_reader_release(&r);
    }
    CHECK(errors > 0);
    printf("garbage: %u refused, %u messages accepted (and decoded) out of 3000 buffers\n", errors, messages);
}

/* A reader read before any byte arrives (the C client's first read): nothing, and no NULL + 0
 * pointer arithmetic (clang's UBSan reports it; GCC's does not). */
static void test_fresh_reader(void) {
    fwm__rpc_reader r;
    fwm__rpc_reader_init(&r, NULL);
    const uint8_t *m = NULL;
    size_t n = 99;
    CHECK(fwm__rpc_reader_next(&r, &m, &n) == FWM_RPC_NEED_MORE);
    CHECK(fwm__rpc_reader_next(&r, &m, &n) == FWM_RPC_NEED_MORE);
    CHECK_INT(fwm__rpc_reader_pending(&r), 0);
    CHECK(fwm__rpc_reader_fault(&r) == FWM_RPC_FAULT_NONE);
    size_t available = 0;
    CHECK(fwm__rpc_reader_space(&r, 0, &available) != NULL); /* even for 0 bytes: a real buffer */
    CHECK(fwm__rpc_reader_feed(&r, "\x91", 1));
    CHECK(fwm__rpc_reader_next(&r, &m, &n) == FWM_RPC_NEED_MORE);
    CHECK(fwm__rpc_reader_feed(&r, "\x01", 1));
    CHECK(fwm__rpc_reader_next(&r, &m, &n) == FWM_RPC_MESSAGE);
    CHECK_INT(n, 2);
    fwm__rpc_reader_release(&r);
    fwm__rpc_reader_init(&r, NULL); /* released, then read again */
    fwm__rpc_reader_release(&r);
    CHECK(fwm__rpc_reader_next(&r, &m, &n) == FWM_RPC_NEED_MORE);
}

/* An allocator that fails from its n-th call on (the server injects failures the same way). */
static int grow_calls, grow_fail_at;
static void *failing_grow(void *pointer, size_t size) {
    return ++grow_calls >= grow_fail_at ? NULL : realloc(pointer, size);
}

static void test_allocation_failure(void) {
    for (grow_fail_at = 1; grow_fail_at <= 4; grow_fail_at++) {
        grow_calls = 0;
        fwm__rpc_reader r;
        fwm__rpc_reader_init(&r, NULL);
        fwm__rpc_reader_set_allocator(&r, failing_grow, free);
        /* a 100 KB bin message: the buffer grows 4 KiB, 8, ... until the allocator fails */
        uint8_t head[] = {0x94, 0x00, 0x01, 0xa5, 'h', 'e', 'l', 'l', 'o', 0x91, 0xc6, 0x00, 0x01, 0x86, 0xa0};
        bool fed = fwm__rpc_reader_feed(&r, head, sizeof head);
        uint8_t chunk[4096] = {0};
        for (int i = 0; fed && i < 25; i++) fed = fwm__rpc_reader_feed(&r, chunk, sizeof chunk);
        CHECK(!fed); /* some growth failed */
        const uint8_t *message;
        size_t length;
        CHECK(fwm__rpc_reader_next(&r, &message, &length) == FWM_RPC_ERROR);
        CHECK(fwm__rpc_reader_fault(&r) == FWM_RPC_FAULT_OUT_OF_MEMORY);
        CHECK(strstr(fwm__rpc_reader_error(&r), "out of memory") != NULL);
        fwm__rpc_reader_release(&r); /* and nothing leaks (ASan) */
    }
}

int main(void) {
    test_fresh_reader();
    test_allocation_failure();
    test_boundaries_agree_with_msgpack();
    test_whole_and_byte_by_byte();
    test_split_at_every_byte();
    test_limits();
    test_memory_stays_bounded();
    test_garbage_never_crashes();
    return check_finish("test_rpc_scan");
}
