/* fwm_client.h - the C client of fwm-serve (msgpack-RPC over TCP or a Unix socket), and the protocol's
 * error codes (fwm_protocol.h, shared with the server).
 *
 * What it is for: connect to a running fwm-serve, open sessions, feed text and receive the
 * token-by-token predictions, ask closed-book questions, fork/snapshot/restore sessions. The protocol
 * itself is specified in docs/PROTOCOL.md; any msgpack-RPC client can speak it.
 *
 * Threading: an fwm_client is one connection and may be used by one thread at a time; distinct
 * clients are independent. Calls are blocking, each bounded by the connection's timeout.
 *
 * Ownership: strings and arrays inside result structs (fwm_client_answer, fwm_client_hello_info,
 * fwm_client_token_event) point into storage owned by the client and stay valid until the next call
 * on the same client. Session ids are copied into caller-provided buffers of
 * FWM_CLIENT_SESSION_ID_SIZE bytes. fwm_client_free(NULL) is a no-op.
 *
 * Errors: every fallible function returns an fwm_rpc_code (FWM_RPC_OK = 0) and, when `err` is
 * non-NULL, fills it with the code, its name and a message (the server's message for server errors).
 */
#ifndef FWM_FWM_CLIENT_H
#define FWM_FWM_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fwm/fwm_export.h"
#include "fwm/fwm_protocol.h"
#include "fwm/fwm_version.h" /* FWM_VERSION_STRING: the release of this client */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fwm_client_error {
    int code;          /* an fwm_rpc_code */
    char name[32];     /* its wire name */
    char message[384]; /* NUL-terminated, never empty on failure */
} fwm_client_error;

/* ---- connection ---------------------------------------------------------------------------------- */
typedef struct fwm_client fwm_client;

typedef struct fwm_client_params {
    int timeout_ms;         /* per call: connect, and each wait for bytes; 0 means 30000 */
    size_t max_message_bytes; /* largest answer accepted; 0 means 16 MiB */
} fwm_client_params;

FWM_API fwm_client_params fwm_client_default_params(void);

/* Connect to `address`: "tcp://HOST:PORT", "HOST:PORT", or "unix:PATH". `params` may be NULL.
 * FWM_RPC_CONNECT, FWM_RPC_CLIENT_ARGUMENT. On success *out owns the connection. */
FWM_API int fwm_client_connect(const char *address, const fwm_client_params *params, fwm_client **out,
                               fwm_client_error *err);
FWM_API void fwm_client_free(fwm_client *client);

/* Clusters (docs/CLUSTER.md): a node that does not own a session answers `moved` with the owner's
 * address; the client then sends the request again to that node (opening a connection to it, and
 * keeping a few such connections open), remembers the owners of the last sessions it used, and
 * spreads fwm_client_open over the live nodes `hello` lists. The node the last call went to: */
FWM_API const char *fwm_client_node(const fwm_client *client);

/* ---- results ------------------------------------------------------------------------------------- */
#define FWM_CLIENT_SESSION_ID_SIZE 33 /* 32 hex digits and a NUL */

typedef struct fwm_client_prediction {
    const char *word;
    float probability;
} fwm_client_prediction;

/* One `token` notification of a feed: `token`/`word` were read, `topk` predicts the next word. */
typedef struct fwm_client_token_event {
    const char *session;
    uint64_t pos; /* tokens the session has read, this one included */
    uint32_t token;
    const char *word;
    size_t topk_count;
    const fwm_client_prediction *topk;
} fwm_client_token_event;

/* Called once per fed token, in order, on the calling thread. */
typedef void (*fwm_client_token_fn)(void *user, const fwm_client_token_event *event);

/* Bytes [start, start + length) of the text a call sent: a word the model read as <unk>. */
typedef struct fwm_client_span {
    uint64_t start, length;
} fwm_client_span;

typedef struct fwm_client_answer {
    const char *answer;  /* most probable word ("" when none) */
    float probability;
    uint64_t pos;        /* session position after the call */
    size_t topk_count;
    const fwm_client_prediction *topk;
    size_t unknown_count; /* ask: the question's words read as <unk> (models with an unknown token) */
    const fwm_client_span *unknown;
} fwm_client_answer;

/* What a feed read (fwm_client_feed_scored). */
typedef struct fwm_client_feed_result {
    uint64_t pos;             /* the session's position after the feed */
    uint64_t fed;             /* tokens fed */
    size_t token_count;       /* with logprobs: fed, else 0 */
    const uint32_t *tokens;   /* the token ids read, in order */
    const double *logprobs;   /* ln P(tokens[i] | everything the session read before it) */
    size_t unknown_count;     /* the text's words read as <unk> */
    const fwm_client_span *unknown;
} fwm_client_feed_result;

typedef struct fwm_client_model_info {
    const char *name;
    uint32_t vocab_size;
    uint32_t hidden_size;
    uint64_t session_bytes; /* resident bytes per session */
    const char *tokenizer;  /* "word" (catbAbI) or "text" (prose); "" from an older server */
    bool has_unknown_token; /* words outside the vocabulary read as <unk> (else refused: unknown_word) */
    bool logprobs;          /* feed takes logprobs */
} fwm_client_model_info;

typedef struct fwm_client_hello_info {
    const char *server;  /* "fwm-serve" */
    const char *version; /* server version */
    int protocol;        /* FWM_PROTOCOL_VERSION of the server */
    size_t model_count;
    const fwm_client_model_info *models;
    bool durable;        /* sessions are kept in a store (fwm-serve --data-dir) */
    const char *fsync;   /* durable: "always", "interval" or "never"; "" otherwise */
} fwm_client_hello_info;

/* One session as `sessions` lists it. */
typedef struct fwm_client_session_info {
    const char *session;   /* 32 hex digits */
    const char *model;
    bool has_pos;          /* false only while a stored session is being read back */
    uint64_t pos;          /* tokens read: now for a resident session; else as of its last snapshot,
                            * eviction or creation */
    uint64_t last_used_ms; /* milliseconds since 1970 */
    bool resident;         /* in the server's memory now (durable servers also hold stored ones) */
} fwm_client_session_info;

/* ---- methods (one request each; see docs/PROTOCOL.md) ------------------------------------------- */
FWM_API int fwm_client_hello(fwm_client *client, fwm_client_hello_info *out, fwm_client_error *err);

/* Present the server's authentication token (`hello {token}`; fwm-serve --auth-token-file). Needed
 * once per connection before any other method on a server that has a token. */
FWM_API int fwm_client_authenticate(fwm_client *client, const char *token, fwm_client_error *err);

/* One page of every session on the server, in id order: those with an id after `after` (NULL: from
 * the first), at most `limit` (1..1000; 0: the server's default of 100). `*next` is the `after` of
 * the next page, or NULL on the last one. */
FWM_API int fwm_client_sessions(fwm_client *client, const char *after, unsigned limit,
                        const fwm_client_session_info **items,
                        size_t *count, const char **next, fwm_client_error *err);

/* A new session in the model's start state: primed, as the model file says (the bundled models'
 * sessions have read "<eos>", as every training story begins). `model` NULL: the server's default
 * model. `topk` < 0: the server's default. */
FWM_API int fwm_client_open(fwm_client *client, const char *model, int topk,
                            char session[FWM_CLIENT_SESSION_ID_SIZE], fwm_client_error *err);
/* As fwm_client_open, but the session starts from the zero state, unprimed. */
FWM_API int fwm_client_open_unprimed(fwm_client *client, const char *model, int topk,
                                     char session[FWM_CLIENT_SESSION_ID_SIZE], fwm_client_error *err);

/* Feed text (tokenized by the server) or token ids. `on_token` (may be NULL) sees each token's
 * notification; `topk` < 0 uses the session's default. *pos / *fed (may be NULL) receive the
 * session's position after the feed and the number of tokens fed. */
FWM_API int fwm_client_feed(fwm_client *client, const char *session, const char *text, int topk,
                            fwm_client_token_fn on_token, void *user, uint64_t *pos, uint64_t *fed,
                            fwm_client_error *err);
FWM_API int fwm_client_feed_tokens(fwm_client *client, const char *session, const uint32_t *tokens,
                                   size_t count, int topk, fwm_client_token_fn on_token, void *user,
                                   uint64_t *pos, uint64_t *fed, fwm_client_error *err);

/* As fwm_client_feed / fwm_client_feed_tokens (`text` NULL: `tokens`), with the whole result: the
 * spans of the text's words read as <unk> and, with `logprobs`, each token's id and natural-log
 * probability given everything the session read before it. A reply that would pass the server's
 * max-output-bytes is refused (too_large: feed fewer tokens per call), as is logprobs on a model
 * whose `hello` entry says `logprobs: false` (bad_params); nothing is fed then. */
FWM_API int fwm_client_feed_scored(fwm_client *client, const char *session, const char *text,
                                   const uint32_t *tokens, size_t count, int topk, bool logprobs,
                                   fwm_client_token_fn on_token, void *user, fwm_client_feed_result *out,
                                   fwm_client_error *err);

/* Feed `question` (it should end in "?") and answer from the prediction after its last token. With
 * `commit` the answer is fed too. */
FWM_API int fwm_client_ask(fwm_client *client, const char *session, const char *question, bool commit,
                           fwm_client_answer *out, fwm_client_error *err);
/* As fwm_client_ask, with `topk` predictions in the answer (< 0: the session's default). */
FWM_API int fwm_client_ask_topk(fwm_client *client, const char *session, const char *question, bool commit, int topk,
                                fwm_client_answer *out, fwm_client_error *err);

/* The prediction after the last token read (topk_count 0 before any token). */
FWM_API int fwm_client_predict(fwm_client *client, const char *session, int topk, fwm_client_answer *out,
                               fwm_client_error *err);

/* Back to the start state (primed, as fwm_client_open), or to zero (unprimed). */
FWM_API int fwm_client_reset(fwm_client *client, const char *session, fwm_client_error *err);
FWM_API int fwm_client_reset_unprimed(fwm_client *client, const char *session, fwm_client_error *err);
FWM_API int fwm_client_fork(fwm_client *client, const char *session,
                            char child[FWM_CLIENT_SESSION_ID_SIZE], fwm_client_error *err);

/* *blob receives a malloc'ed copy of the state (release with free()). */
FWM_API int fwm_client_snapshot(fwm_client *client, const char *session, void **blob, size_t *size,
                                fwm_client_error *err);
FWM_API int fwm_client_restore(fwm_client *client, const void *blob, size_t size, const char *model,
                               char session[FWM_CLIENT_SESSION_ID_SIZE], fwm_client_error *err);
FWM_API int fwm_client_close_session(fwm_client *client, const char *session, fwm_client_error *err);

/* The `stats` map rendered as "key: value" lines into `text` (truncated to `capacity`). */
FWM_API int fwm_client_stats(fwm_client *client, char *text, size_t capacity, fwm_client_error *err);

#ifdef __cplusplus
}
#endif

#endif /* FWM_FWM_CLIENT_H */
