/* request.h - a request being answered, and what every method's handler (handlers.h) does with it: its
 * reply's keys, the session it names, its arguments (topk, model, the words it reads), the room for a new
 * session, and the job it becomes.
 *
 * Loop thread only. Internal to methods/.
 */
#ifndef FWM_SERVER_METHODS_REQUEST_H
#define FWM_SERVER_METHODS_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fwm/fwm.h"
#include "net/connection.h"
#include "rpc_codec.h"
#include "server.h"
#include "sessions/job.h"

typedef struct fwm__request {
    fwm__connection *c;
    fwm__server *s;
    fwm__rpc_call call;
    fwm__rpc_failure failure;
    uint64_t start_ns;
    bool submitted; /* a job will answer */
} fwm__request;

/* The words a request reads, owned until a job takes them: the tokens, and the byte spans of a text's
 * words read as <unk> (models that have it; NULL when there are none). */
typedef struct fwm__input {
    uint32_t *tokens;
    size_t count;
    fwm_text_span *unknown;
    size_t unknown_count;
} fwm__input;

/* A reply's keys and values. */
static inline void key(msgpack_packer *pk, const char *name) {
    fwm__rpc_pack_cstr(pk, name);
}

static inline void key_u64(msgpack_packer *pk, const char *name, uint64_t value) {
    key(pk, name);
    msgpack_pack_uint64(pk, value);
}

static inline void key_double(msgpack_packer *pk, const char *name, double value) {
    key(pk, name);
    msgpack_pack_double(pk, value);
}

static inline void key_str(msgpack_packer *pk, const char *name, const char *value) {
    key(pk, name);
    fwm__rpc_pack_cstr(pk, value);
}

static inline void key_bool(msgpack_packer *pk, const char *name, bool value) {
    key(pk, name);
    fwm__rpc_pack_bool(pk, value);
}

static inline uint64_t now_ms(void) {
    return fwm__now_ns() / 1000000u;
}

/* Begin a response; false for notifications (nothing is sent). */
bool fwm__request_begin_response(fwm__request *r, msgpack_packer *pk);

/* The session named by the argument 'session', resident or loaded from the store (then marked used);
 * NULL with r->failure filled, or with the connection parked while the store is asked who owns it. */
fwm__session_entry *fwm__request_session(fwm__request *r);

/* The argument 'topk' (at most the vocabulary of `m`), `fallback` without it. false with r->failure filled. */
bool fwm__request_topk(fwm__request *r, const fwm__served_model *m, uint32_t fallback, uint32_t *topk);

/* The index of the model named by the argument 'model', 0 (the default model) without it. false with
 * r->failure filled. */
bool fwm__request_model(fwm__request *r, uint32_t *index);

/* Whether a new session of model `m` may be made: the connection's count, the memory budget (with
 * that model's session size: models of different architectures and sizes share one server, plus
 * `extra` bytes held while it is made, a restore's blob) and the session count. false with
 * r->failure filled. */
bool fwm__request_room(fwm__request *r, uint32_t m, size_t extra);

/* A new entry for model `m` (not in the table). With `create`, a fresh zero-state session too. */
fwm__session_entry *fwm__request_new_entry(fwm__request *r, uint32_t m, uint32_t topk, bool create);

/* A session created (or asked for) on this connection counts against its quota. */
void fwm__request_hold_session(fwm__request *r);

/* A fork or restore under way holds a session slot, this connection's quota and `bytes` of the
 * memory budget (the new session, and a restore's copy of its blob) until its job ends, so requests
 * sent together cannot each find the room that only one of them may take. */
void fwm__request_reserve(fwm__request *r, fwm__job *job, uint64_t bytes);

/* Queue `job` on session `e`'s scheduler queue; its response goes to the request's connection. */
void fwm__request_submit(fwm__request *r, fwm__session_entry *e, fwm__job *job);

/* A job of `kind`; NULL with r->failure filled. */
fwm__job *fwm__request_new_job(fwm__request *r, fwm__job_kind kind);

/* Free the words (the job did not take them) and leave *in empty. */
void fwm__input_free(fwm__input *in);

/* Tokenize `text` for model `m` into *in, its token array with `extra` spare slots. false with
 * r->failure filled (and *in empty). */
bool fwm__request_tokenize(fwm__request *r, const fwm__served_model *m, const char *text, size_t length, size_t extra,
                           fwm__input *in);

/* The words a feed or a trace reads: one of 'text' and 'tokens', exactly one unless `optional` (then
 * neither gives an empty *in). false with r->failure filled. */
bool fwm__request_input(fwm__request *r, const fwm__served_model *m, const char *method, bool optional,
                        fwm__input *in);

/* Whether `count` more tokens fit the scheduler's queue (max-queued-tokens). false with r->failure filled. */
bool fwm__request_not_overloaded(fwm__request *r, size_t count);

/* Bytes of a reply's `unknown` list of `n` spans, at most: the key, the array header, [start, length]. */
size_t fwm__unknown_bound(size_t n);

/* Whether the memory budget has room for the `held` bytes a job keeps until it ends; the refusal
 * names them as "the N bytes `what`M bytes in use)" and ends with `advice`. */
bool fwm__request_held_fits(fwm__request *r, uint64_t held, const char *what, const char *advice);

/* Hand `job` the words it reads (its own from then on), its topk, its reply's bound (job.h) and the
 * `held` bytes it keeps until it ends (reserved until its end is delivered), and submit it. Without
 * a job (the request refused), the words are freed and false returned. */
bool fwm__request_submit_input(fwm__request *r, fwm__session_entry *e, fwm__job *job, fwm__input *in, uint32_t topk,
                               size_t output_bound, uint64_t held);

#endif
