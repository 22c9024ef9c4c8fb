/* rpc_codec.c - msgpack-RPC shape checks, named-argument access and message encoding (rpc_codec.h). */
#include "rpc_codec.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "fwm_utf8.h"

bool fwm__rpc_fail(fwm__rpc_failure *failure, int code, const char *format, ...) {
    failure->code = code;
    failure->word[0] = '\0';
    va_list args;
    va_start(args, format);
    int n = vsnprintf(failure->message, sizeof failure->message, format, args);
    va_end(args);
    if (n <= 0) snprintf(failure->message, sizeof failure->message, "%s", fwm_rpc_code_name(code));
    else if ((size_t)n >= sizeof failure->message) /* cut: never in the middle of a character */
        failure->message[fwm__utf8_complete(failure->message, strlen(failure->message))] = '\0';
    return false;
}

static const char *type_name(msgpack_object_type type) {
    switch (type) {
    case MSGPACK_OBJECT_NIL: return "nil";
    case MSGPACK_OBJECT_BOOLEAN: return "boolean";
    case MSGPACK_OBJECT_POSITIVE_INTEGER: return "positive integer";
    case MSGPACK_OBJECT_NEGATIVE_INTEGER: return "negative integer";
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64: return "float";
    case MSGPACK_OBJECT_STR: return "string";
    case MSGPACK_OBJECT_ARRAY: return "array";
    case MSGPACK_OBJECT_MAP: return "map";
    case MSGPACK_OBJECT_BIN: return "binary";
    case MSGPACK_OBJECT_EXT: return "ext";
    }
    return "unknown";
}

bool fwm__rpc_call_decode(fwm__rpc_call *call, const uint8_t *data, size_t size,
                          fwm__rpc_failure *failure) {
    memset(call, 0, sizeof *call);
    msgpack_unpacked_init(&call->unpacked);
    size_t offset = 0;
    msgpack_unpack_return ret = msgpack_unpack_next(&call->unpacked, (const char *)data, size, &offset);
    if (ret != MSGPACK_UNPACK_SUCCESS || offset != size)
        return fwm__rpc_fail(failure, FWM_RPC_INVALID_REQUEST, "message does not decode as one msgpack object");
    const msgpack_object *root = &call->unpacked.data;
    if (root->type != MSGPACK_OBJECT_ARRAY || root->via.array.size < 1)
        return fwm__rpc_fail(failure, FWM_RPC_INVALID_REQUEST, "a message must be a non-empty array");
    const msgpack_object *item = root->via.array.ptr;
    uint32_t n = root->via.array.size;
    if (item[0].type != MSGPACK_OBJECT_POSITIVE_INTEGER)
        return fwm__rpc_fail(failure, FWM_RPC_INVALID_REQUEST,
                             "message type must be 0 (request) or 2 (notification), found %s", type_name(item[0].type));
    if (item[0].via.u64 != FWM_RPC_REQUEST && item[0].via.u64 != FWM_RPC_NOTIFICATION)
        return fwm__rpc_fail(failure, FWM_RPC_INVALID_REQUEST,
                             "message type must be 0 (request) or 2 (notification), found %llu",
                             (unsigned long long)item[0].via.u64);
    call->kind = (int)item[0].via.u64;
    size_t next = 1;
    if (call->kind == FWM_RPC_REQUEST) {
        if (n < 2)
            return fwm__rpc_fail(failure, FWM_RPC_INVALID_REQUEST,
                                 "a request is [0, msgid, method, params]: found 1 element");
        if (item[1].type != MSGPACK_OBJECT_POSITIVE_INTEGER)
            return fwm__rpc_fail(failure, FWM_RPC_INVALID_REQUEST,
                                 "request msgid must be an unsigned 32-bit integer, found %s",
                                 type_name(item[1].type));
        if (item[1].via.u64 > UINT32_MAX)
            return fwm__rpc_fail(failure, FWM_RPC_INVALID_REQUEST,
                                 "request msgid must be an unsigned 32-bit integer, found %llu (more than 32 bits)",
                                 (unsigned long long)item[1].via.u64);
        call->has_msgid = true;
        call->msgid = (uint32_t)item[1].via.u64;
        next = 2;
        if (n != 4)
            return fwm__rpc_fail(failure, FWM_RPC_INVALID_REQUEST,
                                 "a request is [0, msgid, method, params]: found %u elements", (unsigned)n);
    } else if (n != 3) {
        return fwm__rpc_fail(failure, FWM_RPC_INVALID_REQUEST,
                             "a notification is [2, method, params]: found %u elements", (unsigned)n);
    }
    const msgpack_object *method = &item[next], *params = &item[next + 1];
    if (method->type != MSGPACK_OBJECT_STR)
        return fwm__rpc_fail(failure, FWM_RPC_INVALID_REQUEST, "method must be a string, found %s",
                             type_name(method->type));
    call->method = method->via.str.ptr;
    call->method_length = method->via.str.size;
    if (params->type != MSGPACK_OBJECT_ARRAY)
        return fwm__rpc_fail(failure, FWM_RPC_INVALID_REQUEST, "params must be an array, found %s",
                             type_name(params->type));
    if (params->via.array.size == 1 && params->via.array.ptr[0].type == MSGPACK_OBJECT_MAP) {
        call->args = &params->via.array.ptr[0].via.map;
    } else if (params->via.array.size != 0) {
        return fwm__rpc_fail(failure, FWM_RPC_INVALID_REQUEST,
                             "params must be [] or [ {named arguments} ], found an array of %u elements%s",
                             (unsigned)params->via.array.size,
                             params->via.array.size == 1 ? " (not a map)" : "");
    }
    if (call->args) { /* keys must be strings, each at most once */
        const msgpack_object_kv *kv = call->args->ptr;
        for (uint32_t i = 0; i < call->args->size; i++) {
            if (kv[i].key.type != MSGPACK_OBJECT_STR)
                return fwm__rpc_fail(failure, FWM_RPC_INVALID_REQUEST, "argument names must be strings, found %s",
                                     type_name(kv[i].key.type));
            for (uint32_t j = 0; j < i; j++)
                if (kv[j].key.via.str.size == kv[i].key.via.str.size &&
                    memcmp(kv[j].key.via.str.ptr, kv[i].key.via.str.ptr, kv[i].key.via.str.size) == 0)
                    return fwm__rpc_fail(failure, FWM_RPC_INVALID_REQUEST, "argument '%.*s' given twice",
                                         (int)fwm__utf8_cut(kv[i].key.via.str.ptr, kv[i].key.via.str.size, 64),
                                         kv[i].key.via.str.ptr);
        }
    }
    return true;
}

void fwm__rpc_call_release(fwm__rpc_call *call) {
    msgpack_unpacked_destroy(&call->unpacked);
}

bool fwm__rpc_method_is(const fwm__rpc_call *call, const char *name) {
    size_t n = strlen(name);
    return call->method_length == n && memcmp(call->method, name, n) == 0;
}

const msgpack_object *fwm__rpc_arg(const fwm__rpc_call *call, const char *key) {
    if (!call->args) return NULL;
    size_t n = strlen(key);
    for (uint32_t i = 0; i < call->args->size; i++) {
        const msgpack_object *k = &call->args->ptr[i].key;
        if (k->type == MSGPACK_OBJECT_STR && k->via.str.size == n && memcmp(k->via.str.ptr, key, n) == 0)
            return &call->args->ptr[i].val;
    }
    return NULL;
}

static int absent(const char *key, bool required, fwm__rpc_failure *failure) {
    if (!required) return 0;
    fwm__rpc_fail(failure, FWM_RPC_BAD_PARAMS, "missing required argument '%s'", key);
    return -1;
}

static int wrong_type(const char *key, const char *expected, const msgpack_object *found,
                      fwm__rpc_failure *failure) {
    fwm__rpc_fail(failure, FWM_RPC_BAD_PARAMS, "argument '%s' must be %s, found %s", key, expected,
                  type_name(found->type));
    return -1;
}

int fwm__rpc_arg_string(const fwm__rpc_call *call, const char *key, bool required,
                        const char **value, size_t *length, fwm__rpc_failure *failure) {
    const msgpack_object *o = fwm__rpc_arg(call, key);
    if (!o || o->type == MSGPACK_OBJECT_NIL) return absent(key, required, failure);
    if (o->type != MSGPACK_OBJECT_STR) return wrong_type(key, "a string", o, failure);
    *value = o->via.str.ptr;
    *length = o->via.str.size;
    return 1;
}

int fwm__rpc_arg_binary(const fwm__rpc_call *call, const char *key, bool required,
                        const void **value, size_t *length, fwm__rpc_failure *failure) {
    const msgpack_object *o = fwm__rpc_arg(call, key);
    if (!o || o->type == MSGPACK_OBJECT_NIL) return absent(key, required, failure);
    if (o->type != MSGPACK_OBJECT_BIN) return wrong_type(key, "binary", o, failure);
    *value = o->via.bin.ptr;
    *length = o->via.bin.size;
    return 1;
}

int fwm__rpc_arg_uint(const fwm__rpc_call *call, const char *key, bool required, uint64_t max,
                      uint64_t *value, fwm__rpc_failure *failure) {
    const msgpack_object *o = fwm__rpc_arg(call, key);
    if (!o || o->type == MSGPACK_OBJECT_NIL) return absent(key, required, failure);
    if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) {
        fwm__rpc_fail(failure, FWM_RPC_BAD_PARAMS, "argument '%s' must be >= 0, found %lld", key,
                      (long long)o->via.i64);
        return -1;
    }
    if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER) return wrong_type(key, "a non-negative integer", o, failure);
    if (o->via.u64 > max) {
        fwm__rpc_fail(failure, FWM_RPC_BAD_PARAMS, "argument '%s' is %llu, larger than its maximum %llu", key,
                      (unsigned long long)o->via.u64, (unsigned long long)max);
        return -1;
    }
    *value = o->via.u64;
    return 1;
}

int fwm__rpc_arg_bool(const fwm__rpc_call *call, const char *key, bool required, bool *value,
                      fwm__rpc_failure *failure) {
    const msgpack_object *o = fwm__rpc_arg(call, key);
    if (!o || o->type == MSGPACK_OBJECT_NIL) return absent(key, required, failure);
    if (o->type != MSGPACK_OBJECT_BOOLEAN) return wrong_type(key, "a boolean", o, failure);
    *value = o->via.boolean;
    return 1;
}

bool fwm__rpc_args_check(const fwm__rpc_call *call, const char *const *allowed,
                         fwm__rpc_failure *failure) {
    if (!call->args) return true;
    for (uint32_t i = 0; i < call->args->size; i++) {
        const msgpack_object *k = &call->args->ptr[i].key;
        bool known = false;
        for (const char *const *a = allowed; *a && !known; a++)
            known = strlen(*a) == k->via.str.size && memcmp(*a, k->via.str.ptr, k->via.str.size) == 0;
        if (!known)
            return fwm__rpc_fail(failure, FWM_RPC_BAD_PARAMS, "unknown argument '%.*s'",
                                 (int)fwm__utf8_cut(k->via.str.ptr, k->via.str.size, 64), k->via.str.ptr);
    }
    return true;
}

void fwm__rpc_pack_bool(msgpack_packer *pk, bool value) {
    if (value) msgpack_pack_true(pk);
    else msgpack_pack_false(pk);
}

/* Valid UTF-8 goes as it is; otherwise each byte that begins no valid sequence (client input
 * echoed back, a model file's odd word) becomes U+FFFD, so every str on the wire decodes. */
void fwm__rpc_pack_strn(msgpack_packer *pk, const char *text, size_t length) {
    if (fwm__utf8_valid(text, length)) {
        msgpack_pack_str(pk, length);
        msgpack_pack_str_body(pk, text, length);
        return;
    }
    msgpack_pack_str(pk, fwm__utf8_sanitized_length(text, length));
    size_t run = 0; /* start of the current run of valid bytes */
    for (size_t i = 0; i < length;) {
        size_t n = fwm__utf8_sequence(text + i, length - i);
        if (n) {
            i += n;
            continue;
        }
        msgpack_pack_str_body(pk, text + run, i - run);
        msgpack_pack_str_body(pk, FWM_UTF8_REPLACEMENT, FWM_UTF8_REPLACEMENT_BYTES);
        run = ++i;
    }
    msgpack_pack_str_body(pk, text + run, length - run);
}

void fwm__rpc_pack_cstr(msgpack_packer *pk, const char *text) {
    fwm__rpc_pack_strn(pk, text, strlen(text));
}

void fwm__rpc_pack_response_head(msgpack_packer *pk, uint32_t msgid) {
    msgpack_pack_array(pk, 4);
    msgpack_pack_uint8(pk, FWM_RPC_RESPONSE);
    msgpack_pack_uint32(pk, msgid);
    msgpack_pack_nil(pk);
}

void fwm__rpc_pack_error_map(msgpack_packer *pk, const fwm__rpc_failure *failure) {
    bool has_word = (failure->code == FWM_RPC_UNKNOWN_WORD || failure->code == FWM_RPC_MOVED) && failure->word[0];
    msgpack_pack_map(pk, has_word ? 4 : 3);
    fwm__rpc_pack_cstr(pk, "code");
    msgpack_pack_int(pk, failure->code);
    fwm__rpc_pack_cstr(pk, "name");
    fwm__rpc_pack_cstr(pk, fwm_rpc_code_name(failure->code));
    fwm__rpc_pack_cstr(pk, "message");
    fwm__rpc_pack_cstr(pk, failure->message);
    if (has_word) {
        fwm__rpc_pack_cstr(pk, failure->code == FWM_RPC_MOVED ? "address" : "word");
        fwm__rpc_pack_cstr(pk, failure->word);
    }
}

void fwm__rpc_pack_error_response(msgpack_packer *pk, uint32_t msgid, const fwm__rpc_failure *failure) {
    msgpack_pack_array(pk, 4);
    msgpack_pack_uint8(pk, FWM_RPC_RESPONSE);
    msgpack_pack_uint32(pk, msgid);
    fwm__rpc_pack_error_map(pk, failure);
    msgpack_pack_nil(pk);
}

void fwm__rpc_pack_error_response_without_id(msgpack_packer *pk, const fwm__rpc_failure *failure) {
    msgpack_pack_array(pk, 4);
    msgpack_pack_uint8(pk, FWM_RPC_RESPONSE);
    msgpack_pack_nil(pk);
    fwm__rpc_pack_error_map(pk, failure);
    msgpack_pack_nil(pk);
}

void fwm__rpc_pack_notification_head(msgpack_packer *pk, const char *method) {
    msgpack_pack_array(pk, 3);
    msgpack_pack_uint8(pk, FWM_RPC_NOTIFICATION);
    fwm__rpc_pack_cstr(pk, method);
    msgpack_pack_array(pk, 1);
}
