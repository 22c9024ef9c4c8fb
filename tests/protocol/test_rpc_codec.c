/* test_rpc_codec.c - msgpack-RPC shape checks and named-argument access: every malformed shape is
 * refused with invalid_request (keeping the msgid when it can be read), every argument error names
 * the argument, and encoded errors decode (with msgpack-c) to the documented map. */
#include <msgpack.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "rpc_codec.h"

static msgpack_sbuffer buffer;
static msgpack_packer pk;

static void start(void) {
    msgpack_sbuffer_clear(&buffer);
    msgpack_packer_init(&pk, &buffer, msgpack_sbuffer_write);
}

static void str(const char *s) {
    fwm__rpc_pack_cstr(&pk, s);
}

/* [0, msgid, method, [ {args...} ]] with the map header for `nargs` pairs; caller packs pairs. */
static void request(uint32_t msgid, const char *method, int nargs) {
    start();
    msgpack_pack_array(&pk, 4);
    msgpack_pack_uint8(&pk, 0);
    msgpack_pack_uint32(&pk, msgid);
    str(method);
    if (nargs < 0) {
        msgpack_pack_array(&pk, 0);
    } else {
        msgpack_pack_array(&pk, 1);
        msgpack_pack_map(&pk, (size_t)nargs);
    }
}

static bool decode(fwm__rpc_call *call, fwm__rpc_failure *f) {
    return fwm__rpc_call_decode(call, (const uint8_t *)buffer.data, buffer.size, f);
}

static void expect_invalid(const char *name, bool has_msgid, const char *mention) {
    fwm__rpc_call call;
    fwm__rpc_failure f;
    bool ok = decode(&call, &f);
    if (ok) {
        fprintf(stderr, "%s: decoded, expected invalid_request\n", name);
        check_failures++;
    } else {
        CHECK_U64(f.code, FWM_RPC_INVALID_REQUEST);
        CHECK_U64(call.has_msgid, has_msgid);
        CHECK_CONTAINS(f.message, mention);
    }
    fwm__rpc_call_release(&call);
}

static void test_valid(void) {
    request(77, "feed", 3);
    str("session");
    str("abc");
    str("topk");
    msgpack_pack_uint8(&pk, 5);
    str("state");
    msgpack_pack_bin(&pk, 3);
    msgpack_pack_bin_body(&pk, "\x01\x02\x03", 3);
    fwm__rpc_call call;
    fwm__rpc_failure f;
    CHECK(decode(&call, &f));
    CHECK_U64(call.kind, FWM_RPC_REQUEST);
    CHECK(call.has_msgid);
    CHECK_U64(call.msgid, 77);
    CHECK(fwm__rpc_method_is(&call, "feed"));
    CHECK(!fwm__rpc_method_is(&call, "fee"));
    const char *s;
    size_t n;
    CHECK_U64(fwm__rpc_arg_string(&call, "session", true, &s, &n, &f), 1);
    CHECK(n == 3 && memcmp(s, "abc", 3) == 0);
    uint64_t k = 0;
    CHECK_U64(fwm__rpc_arg_uint(&call, "topk", true, 10, &k, &f), 1);
    CHECK_U64(k, 5);
    CHECK_U64(fwm__rpc_arg_uint(&call, "topk", true, 4, &k, &f), (unsigned long long)-1);
    CHECK_CONTAINS(f.message, "'topk' is 5, larger than its maximum 4");
    const void *b;
    CHECK_U64(fwm__rpc_arg_binary(&call, "state", true, &b, &n, &f), 1);
    CHECK_U64(n, 3);
    CHECK_U64(fwm__rpc_arg_string(&call, "missing", false, &s, &n, &f), 0);
    CHECK_U64(fwm__rpc_arg_string(&call, "missing", true, &s, &n, &f), (unsigned long long)-1);
    CHECK_U64(f.code, FWM_RPC_BAD_PARAMS);
    CHECK_CONTAINS(f.message, "missing required argument 'missing'");
    CHECK_U64(fwm__rpc_arg_string(&call, "topk", true, &s, &n, &f), (unsigned long long)-1);
    CHECK_CONTAINS(f.message, "argument 'topk' must be a string, found positive integer");
    bool flag;
    CHECK_U64(fwm__rpc_arg_bool(&call, "session", true, &flag, &f), (unsigned long long)-1);
    CHECK_CONTAINS(f.message, "'session' must be a boolean");
    static const char *const allowed[] = {"session", "topk", NULL};
    CHECK(!fwm__rpc_args_check(&call, allowed, &f));
    CHECK_CONTAINS(f.message, "unknown argument 'state'");
    static const char *const all[] = {"session", "topk", "state", NULL};
    CHECK(fwm__rpc_args_check(&call, all, &f));
    fwm__rpc_call_release(&call);

    request(1, "hello", -1); /* params [] */
    CHECK(decode(&call, &f));
    CHECK(call.args == NULL);
    CHECK_U64(fwm__rpc_arg_string(&call, "x", false, &s, &n, &f), 0);
    fwm__rpc_call_release(&call);

    start(); /* notification */
    msgpack_pack_array(&pk, 3);
    msgpack_pack_uint8(&pk, 2);
    str("close");
    msgpack_pack_array(&pk, 1);
    msgpack_pack_map(&pk, 1);
    str("topk");
    msgpack_pack_int(&pk, -3);
    CHECK(decode(&call, &f));
    CHECK_U64(call.kind, FWM_RPC_NOTIFICATION);
    CHECK(!call.has_msgid);
    CHECK_U64(fwm__rpc_arg_uint(&call, "topk", true, 10, &k, &f), (unsigned long long)-1);
    CHECK_CONTAINS(f.message, "'topk' must be >= 0, found -3");
    fwm__rpc_call_release(&call);
}

static void test_invalid_shapes(void) {
    start();
    msgpack_pack_array(&pk, 4);
    msgpack_pack_uint8(&pk, 1); /* a response sent to the server */
    msgpack_pack_uint8(&pk, 1);
    msgpack_pack_nil(&pk);
    msgpack_pack_nil(&pk);
    expect_invalid("type 1", false, "0 (request) or 2 (notification)");

    start();
    msgpack_pack_array(&pk, 4);
    msgpack_pack_uint8(&pk, 0);
    msgpack_pack_uint64(&pk, 1ull << 40);
    str("hello");
    msgpack_pack_array(&pk, 0);
    expect_invalid("msgid 2^40", false, "unsigned 32-bit");

    start();
    msgpack_pack_array(&pk, 3);
    msgpack_pack_uint8(&pk, 0);
    msgpack_pack_uint8(&pk, 9);
    str("hello");
    expect_invalid("3-element request", true, "found 3 elements");

    start();
    msgpack_pack_array(&pk, 4);
    msgpack_pack_uint8(&pk, 0);
    msgpack_pack_uint8(&pk, 9);
    msgpack_pack_uint8(&pk, 3);
    msgpack_pack_array(&pk, 0);
    expect_invalid("method not a string", true, "method must be a string, found positive integer");

    start();
    msgpack_pack_array(&pk, 4);
    msgpack_pack_uint8(&pk, 0);
    msgpack_pack_uint8(&pk, 9);
    str("open");
    msgpack_pack_map(&pk, 0);
    expect_invalid("params a map", true, "params must be an array, found map");

    start();
    msgpack_pack_array(&pk, 4);
    msgpack_pack_uint8(&pk, 0);
    msgpack_pack_uint8(&pk, 9);
    str("open");
    msgpack_pack_array(&pk, 2);
    msgpack_pack_nil(&pk);
    msgpack_pack_nil(&pk);
    expect_invalid("positional params", true, "found an array of 2 elements");

    request(9, "open", 2);
    str("topk");
    msgpack_pack_uint8(&pk, 1);
    str("topk");
    msgpack_pack_uint8(&pk, 2);
    expect_invalid("duplicate argument", true, "argument 'topk' given twice");

    request(9, "open", 1);
    msgpack_pack_uint8(&pk, 1);
    msgpack_pack_uint8(&pk, 2);
    expect_invalid("integer key", true, "argument names must be strings");

    start();
    msgpack_pack_array(&pk, 0);
    expect_invalid("empty array", false, "non-empty array");
}

static void test_error_encoding(void) {
    start();
    fwm__rpc_failure f;
    fwm__rpc_fail(&f, FWM_RPC_UNKNOWN_WORD, "unknown word '%s' at byte %d", "flew", 5);
    strcpy(f.word, "flew");
    fwm__rpc_pack_error_response(&pk, 42, &f);
    msgpack_unpacked u;
    msgpack_unpacked_init(&u);
    size_t off = 0;
    CHECK(msgpack_unpack_next(&u, buffer.data, buffer.size, &off) == MSGPACK_UNPACK_SUCCESS);
    msgpack_object o = u.data;
    CHECK(o.type == MSGPACK_OBJECT_ARRAY && o.via.array.size == 4);
    if (o.type == MSGPACK_OBJECT_ARRAY && o.via.array.size == 4) {
        CHECK_U64(o.via.array.ptr[0].via.u64, 1);
        CHECK_U64(o.via.array.ptr[1].via.u64, 42);
        CHECK(o.via.array.ptr[3].type == MSGPACK_OBJECT_NIL);
        msgpack_object e = o.via.array.ptr[2];
        CHECK(e.type == MSGPACK_OBJECT_MAP && e.via.map.size == 4);
        char text[400];
        msgpack_object_print_buffer(text, sizeof text, e);
        CHECK_STR(text, "{\"code\"=>5, \"name\"=>\"unknown_word\", \"message\"=>\"unknown word 'flew' at byte 5\", "
                         "\"word\"=>\"flew\"}");
    }
    msgpack_unpacked_destroy(&u);
    CHECK_STR(fwm_rpc_code_name(FWM_RPC_SESSION_LIMIT), "session_limit");
    CHECK_STR(fwm_rpc_code_name(9999), "unknown");
}

int main(void) {
    msgpack_sbuffer_init(&buffer);
    test_valid();
    test_invalid_shapes();
    test_error_encoding();
    msgpack_sbuffer_destroy(&buffer);
    return check_finish("test_rpc_codec");
}
