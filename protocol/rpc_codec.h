/* rpc_codec.h - msgpack-RPC messages to and from msgpack-c objects.
 *
 * Decoding takes one message that the pre-scanner (rpc_scan.h) has already delimited and accepted,
 * checks the msgpack-RPC shape ([0, msgid, method, params] or [2, method, params], params being []
 * or [ {named arguments} ]) and gives typed access to named arguments with errors that name the
 * argument. Encoding writes responses, error maps and notifications with a msgpack_packer.
 *
 * Not for: deciding what a method does (server/methods/methods.c) or socket I/O (server/net/connection.c,
 * clients/fwm_client.c). Part of protocol/ (the fwm_protocol static library), which the server and
 * the C client both link. Thread-safe (no shared state).
 */
#ifndef FWM_PROTOCOL_RPC_CODEC_H
#define FWM_PROTOCOL_RPC_CODEC_H

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fwm/fwm_protocol.h"

#define FWM_RPC_REQUEST 0
#define FWM_RPC_RESPONSE 1
#define FWM_RPC_NOTIFICATION 2

/* A method's failure: a protocol code and a message naming the problem. */
typedef struct fwm__rpc_failure {
    int code; /* fwm_rpc_code */
    char message[320];
    char word[256]; /* FWM_RPC_UNKNOWN_WORD: the word; FWM_RPC_MOVED: the owner's address; "" otherwise */
} fwm__rpc_failure;

/* Set *failure and return false, so a check is one line. */
bool fwm__rpc_fail(fwm__rpc_failure *failure, int code, const char *format, ...)
    __attribute__((format(printf, 3, 4)));

/* One decoded request or notification. Owns the msgpack zone; pointers stay valid until release. */
typedef struct fwm__rpc_call {
    msgpack_unpacked unpacked;
    int kind;              /* FWM_RPC_REQUEST or FWM_RPC_NOTIFICATION */
    bool has_msgid;        /* a response is owed (and possible even when decoding failed) */
    uint32_t msgid;
    const char *method;    /* not NUL-terminated */
    size_t method_length;
    const msgpack_object_map *args; /* named arguments; NULL when params is [] */
} fwm__rpc_call;

/* Decode `size` bytes. On failure returns false with an FWM_RPC_INVALID_REQUEST failure; has_msgid
 * then says whether the request's id could still be read (so an error response can be sent).
 * Always call fwm__rpc_call_release afterwards. */
bool fwm__rpc_call_decode(fwm__rpc_call *call, const uint8_t *data, size_t size,
                          fwm__rpc_failure *failure);
void fwm__rpc_call_release(fwm__rpc_call *call);

bool fwm__rpc_method_is(const fwm__rpc_call *call, const char *name);

/* Named arguments. Each returns 1 when present and valid, 0 when absent (and not required), and -1
 * with *failure set (FWM_RPC_BAD_PARAMS naming the argument) when malformed or required-but-absent. */
const msgpack_object *fwm__rpc_arg(const fwm__rpc_call *call, const char *key);
int fwm__rpc_arg_string(const fwm__rpc_call *call, const char *key, bool required,
                        const char **value, size_t *length, fwm__rpc_failure *failure);
int fwm__rpc_arg_binary(const fwm__rpc_call *call, const char *key, bool required,
                        const void **value, size_t *length, fwm__rpc_failure *failure);
int fwm__rpc_arg_uint(const fwm__rpc_call *call, const char *key, bool required, uint64_t max,
                      uint64_t *value, fwm__rpc_failure *failure);
int fwm__rpc_arg_bool(const fwm__rpc_call *call, const char *key, bool required, bool *value,
                      fwm__rpc_failure *failure);
/* Reject any argument whose key is not in the NULL-terminated `allowed` list (typos fail loudly). */
bool fwm__rpc_args_check(const fwm__rpc_call *call, const char *const *allowed,
                         fwm__rpc_failure *failure);

/* ---- encoding ---- */
void fwm__rpc_pack_cstr(msgpack_packer *pk, const char *text);
void fwm__rpc_pack_bool(msgpack_packer *pk, bool value);
void fwm__rpc_pack_strn(msgpack_packer *pk, const char *text, size_t length);
/* Begin [1, msgid, nil, ...]: the caller packs exactly one result object next. */
void fwm__rpc_pack_response_head(msgpack_packer *pk, uint32_t msgid);
/* A whole error response [1, msgid, {code, name, message[, word]}, nil]. */
void fwm__rpc_pack_error_response(msgpack_packer *pk, uint32_t msgid, const fwm__rpc_failure *failure);
/* [1, nil, {code, name, message}, nil]: the answer to a malformed request whose msgid cannot be
 * read (missing, negative, over 32 bits, not an integer) or whose message type is not 0 or 2. */
void fwm__rpc_pack_error_response_without_id(msgpack_packer *pk, const fwm__rpc_failure *failure);
/* The error map {code, name, message[, word]}. */
void fwm__rpc_pack_error_map(msgpack_packer *pk, const fwm__rpc_failure *failure);
/* Begin [2, method, [ ...: the caller packs exactly one params object next. */
void fwm__rpc_pack_notification_head(msgpack_packer *pk, const char *method);

#endif
