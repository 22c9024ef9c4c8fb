/* fwm_protocol.h - what the server and every client of fwm-serve agree on: the protocol version and
 * the stable error codes of docs/PROTOCOL.md, with their wire names.
 *
 * Public (installed, included by fwm_client.h) and implemented in protocol/rpc_codes.c, which the
 * server and the client library both link. The wire format itself lives in protocol/ (rpc_scan.h,
 * rpc_codec.h), which is internal.
 */
#ifndef FWM_FWM_PROTOCOL_H
#define FWM_FWM_PROTOCOL_H

#include "fwm/fwm_export.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FWM_PROTOCOL_VERSION 1

/* ---- protocol error codes ------------------------------------------------------------------------
 * Stable: values never change, new ones are added at the end. Codes 1..99 come from the server (the
 * `code` of an error map, `name` is the second column); codes 100.. are the client's own.
 * X(enum name, value, wire name, description) */
#define FWM_RPC_CODE_LIST(X)                                                                    \
    X(FWM_RPC_OK, 0, "ok", "ok")                                                                \
    X(FWM_RPC_INVALID_REQUEST, 1, "invalid_request", "not a msgpack-RPC request")               \
    X(FWM_RPC_UNKNOWN_METHOD, 2, "unknown_method", "unknown method")                            \
    X(FWM_RPC_BAD_PARAMS, 3, "bad_params", "missing or malformed parameter")                    \
    X(FWM_RPC_UNKNOWN_SESSION, 4, "unknown_session", "unknown or expired session")              \
    X(FWM_RPC_UNKNOWN_WORD, 5, "unknown_word", "word not in the model's vocabulary")            \
    X(FWM_RPC_TOO_LARGE, 6, "too_large", "request exceeds a size limit")                        \
    X(FWM_RPC_SESSION_LIMIT, 7, "session_limit", "the server holds its maximum of sessions")    \
    X(FWM_RPC_OVERLOADED, 8, "overloaded", "too much work queued; retry later")                 \
    X(FWM_RPC_MODEL_MISMATCH, 9, "model_mismatch", "state belongs to another model")            \
    X(FWM_RPC_UNKNOWN_MODEL, 10, "unknown_model", "no such model on this server")               \
    X(FWM_RPC_STATE_CORRUPT, 11, "state_corrupt", "session state blob is damaged")              \
    X(FWM_RPC_SHUTTING_DOWN, 12, "shutting_down", "the server is shutting down")                \
    X(FWM_RPC_INTERNAL, 13, "internal", "internal server error (e.g. out of memory)")           \
    X(FWM_RPC_PROTOCOL, 14, "protocol", "malformed or over-limit byte stream; connection closed") \
    X(FWM_RPC_STORAGE, 15, "storage", "the session store cannot write (disk full or failing)")  \
    X(FWM_RPC_UNAUTHORIZED, 16, "unauthorized", "authenticate first: hello with the server's token") \
    X(FWM_RPC_MOVED, 17, "moved", "another node owns the session: ask the node at the error's address") \
    X(FWM_RPC_SESSION_LOST, 18, "session_lost", "the session was lost with the store's data")  \
    X(FWM_RPC_OUTCOME_UNKNOWN, 19, "outcome_unknown", "the store may still apply the request: read pos") \
    X(FWM_RPC_CONNECT, 100, "connect", "cannot connect")                                        \
    X(FWM_RPC_IO, 101, "io", "connection lost or socket error")                                 \
    X(FWM_RPC_TIMEOUT, 102, "timeout", "no answer within the timeout")                          \
    X(FWM_RPC_BAD_RESPONSE, 103, "bad_response", "the server's answer is malformed")            \
    X(FWM_RPC_CLIENT_ARGUMENT, 104, "client_argument", "invalid argument to a client function")

typedef enum fwm_rpc_code {
#define FWM_RPC_CODE_ENUM_(name, value, wire, text) name = value,
    FWM_RPC_CODE_LIST(FWM_RPC_CODE_ENUM_)
#undef FWM_RPC_CODE_ENUM_
} fwm_rpc_code;

/* Wire name of a code ("unknown_session"); "unknown" for values outside the table. */
FWM_API const char *fwm_rpc_code_name(int code);

#ifdef __cplusplus
}
#endif

#endif /* FWM_FWM_PROTOCOL_H */
