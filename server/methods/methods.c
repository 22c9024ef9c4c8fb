/* methods.c - argument checks and immediate answers for every protocol method (methods.h).
 * Message shapes are specified in docs/PROTOCOL.md; keep the two in step.
 */
#include "methods.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fwm_alloc.h"
#include "fwm_utf8.h"
#include "net/connection.h"
#include "rpc_codec.h"
#include "sessions/durable_session.h"
#include "sessions/trace_job.h"
#include "stats/stats_reply.h"
#include "store/session_record.h"
#include "tiering/cluster_node.h"
#include "tiering/lookup.h"
#include "tiering/tiering.h"

typedef struct request {
    fwm__connection *c;
    fwm__server *s;
    fwm__rpc_call call;
    fwm__rpc_failure failure;
    uint64_t start_ns;
    bool submitted; /* a job will answer */
} request;

typedef struct method {
    const char *name;
    bool (*run)(request *r);
    const char *const *args; /* allowed argument names, NULL-terminated */
    bool during_shutdown;
    bool writes; /* changes a session: refused with `storage` while the store cannot write */
} method;

/* ---- helpers ---- */

/* Answer the failure: with the request's msgid; with a nil msgid when the message is not a
 * notification but its msgid could not be read (so the client learns why nothing else came);
 * nothing for a notification. */
static void respond_error(request *r) {
    r->s->metrics.errors++;
    fwm__metrics_count_error(&r->s->metrics, r->failure.code);
    msgpack_packer pk;
    if (r->call.has_msgid) {
        fwm__connection_packer(r->c, &pk);
        fwm__rpc_pack_error_response(&pk, r->call.msgid, &r->failure);
    } else if (r->call.kind != FWM_RPC_NOTIFICATION) {
        fwm__connection_packer(r->c, &pk);
        fwm__rpc_pack_error_response_without_id(&pk, &r->failure);
    }
}

/* Methods whose result is the point (the id of the session they create): as a notification, the
 * session would exist with an id nobody ever receives, so they are refused (silently). */
static bool needs_response(const method *m) {
    static const char *const names[] = {"open", "fork", "restore", NULL};
    for (const char *const *n = names; *n; n++)
        if (strcmp(m->name, *n) == 0) return true;
    return false;
}

/* Begin a response; false for notifications (nothing is sent). */
static bool begin_response(request *r, msgpack_packer *pk) {
    if (!r->call.has_msgid) return false;
    fwm__connection_packer(r->c, pk);
    fwm__rpc_pack_response_head(pk, r->call.msgid);
    return true;
}

static void key(msgpack_packer *pk, const char *name) {
    fwm__rpc_pack_cstr(pk, name);
}

static void key_u64(msgpack_packer *pk, const char *name, uint64_t value) {
    key(pk, name);
    msgpack_pack_uint64(pk, value);
}

static void key_double(msgpack_packer *pk, const char *name, double value) {
    key(pk, name);
    msgpack_pack_double(pk, value);
}

static void key_str(msgpack_packer *pk, const char *name, const char *value) {
    key(pk, name);
    fwm__rpc_pack_cstr(pk, value);
}

static void key_bool(msgpack_packer *pk, const char *name, bool value) {
    key(pk, name);
    fwm__rpc_pack_bool(pk, value);
}

static uint64_t now_ms(void) {
    return fwm__now_ns() / 1000000u;
}

static fwm__session_entry *find_session(request *r) {
    const char *text;
    size_t length;
    if (fwm__rpc_arg_string(&r->call, "session", true, &text, &length, &r->failure) < 0) return NULL;
    uint8_t id[FWM_SESSION_ID_BYTES];
    if (!fwm__session_id_from_hex(text, length, id)) {
        fwm__rpc_fail(&r->failure, FWM_RPC_BAD_PARAMS,
                      "argument 'session' must be 32 hex digits (as returned by open), found %zu bytes", length);
        return NULL;
    }
    fwm__cluster_node_check_lease(r->s);
    fwm__session_entry *e = fwm__session_table_find(&r->s->sessions, id);
    if (!e && fwm__lookup_remote(r->s)) { /* who owns it and its meta record: asked off the loop */
        const fwm__lookup *answer = fwm__lookup_ready(r->c, FWM_LOOKUP_SESSION, id);
        if (!answer) {
            if (!fwm__lookup_park(r->c, FWM_LOOKUP_SESSION, id))
                fwm__rpc_fail(&r->failure, FWM_RPC_INTERNAL, "out of memory asking the store for a session");
            return NULL;
        }
        if (!(e = fwm__tiering_load_answered(r->s, id, answer, &r->failure))) return NULL;
    } else if (!e && !(e = fwm__tiering_load(r->s, id, &r->failure))) {
        return NULL; /* stored: loaded first */
    }
    e->last_used_ms = now_ms();
    fwm__session_table_lru_touch(&r->s->sessions, e);
    return e;
}

static bool topk_arg(request *r, const fwm__served_model *m, uint32_t fallback, uint32_t *topk) {
    uint64_t value = fallback;
    if (fwm__rpc_arg_uint(&r->call, "topk", false, m->info.vocab_size, &value, &r->failure) < 0) return false;
    *topk = (uint32_t)value;
    return true;
}

static bool model_arg(request *r, uint32_t *index) {
    const char *name;
    size_t length;
    int rc = fwm__rpc_arg_string(&r->call, "model", false, &name, &length, &r->failure);
    if (rc < 0) return false;
    *index = 0;
    if (rc == 0) return true;
    long found = fwm__server_find_model(r->s, name, length);
    if (found < 0)
        return fwm__rpc_fail(&r->failure, FWM_RPC_UNKNOWN_MODEL, "no model named '%.*s' on this server (see hello)",
                             (int)fwm__utf8_cut(name, length, 100), name);
    *index = (uint32_t)found;
    return true;
}

/* Whether a new session of model `m` may be made: the connection's count, the memory budget (with
 * that model's session size: models of different architectures and sizes share one server, plus
 * `extra` bytes held while it is made, a restore's blob) and the session count. false with
 * r->failure filled. */
static bool room_for_session(request *r, uint32_t m, size_t extra) {
    fwm__server *s = r->s;
    if (r->c->sessions_held >= s->config->max_sessions_per_connection)
        return fwm__rpc_fail(&r->failure, FWM_RPC_SESSION_LIMIT,
                             "this connection holds its maximum of %zu sessions (max-sessions-per-connection); "
                             "close one first",
                             s->config->max_sessions_per_connection);
    /* Memory only: a session that does not fit the budget is refused. Durable: resident sessions
     * are evicted to keep within it (tiering/tiering.c), so only the count is checked. */
    if (!s->store && !fwm__server_memory_fits(s, s->models[m].session_bytes + extra)) {
        s->metrics.memory_refusals++;
        return fwm__rpc_fail(&r->failure, FWM_RPC_SESSION_LIMIT,
                             "the server's memory budget (max-memory-bytes %zu) has no room for another session "
                             "(%llu bytes in use); close one or retry later",
                             s->config->max_memory_bytes, (unsigned long long)fwm__server_memory_used(s));
    }
    if (fwm__tiering_session_count(s) < s->config->max_sessions) return true;
    return fwm__rpc_fail(&r->failure, FWM_RPC_SESSION_LIMIT,
                         "the server holds its maximum of %zu sessions (max-sessions%s); close one or retry later",
                         s->config->max_sessions, s->store ? ", counting stored sessions" : "");
}

/* A new entry for model `m` (not in the table). With `create`, a fresh zero-state session too. */
static fwm__session_entry *new_entry(request *r, uint32_t m, uint32_t topk, bool create) {
    const fwm__served_model *model = &r->s->models[m];
    fwm__session_entry *e = fwm__session_entry_new();
    if (e) {
        e->model_index = m;
        e->default_topk = topk;
        e->epoch = fwm__cluster_node_epoch(r->s);
        e->memory_bytes = model->session_bytes;
        e->last_used_ms = now_ms();
        e->last_logits = fwm__calloc(model->info.vocab_size, sizeof(float));
    }
    fwm_error err;
    if (!e || !e->last_logits || (create && fwm_session_create(model->model, &e->session, &err) != FWM_OK)) {
        fwm__session_entry_free(e);
        fwm__rpc_fail(&r->failure, FWM_RPC_INTERNAL, "out of memory creating a session");
        return NULL;
    }
    return e;
}

/* A session created (or asked for) on this connection counts against its quota. */
static void hold_session(request *r) {
    r->c->sessions_held++;
}

/* A fork or restore under way holds a session slot, this connection's quota and `bytes` of the
 * memory budget (the new session, and a restore's copy of its blob) until its job ends, so requests
 * sent together cannot each find the room that only one of them may take. */
static void reserve(request *r, fwm__job *job, uint64_t bytes) {
    r->s->reserved_sessions++;
    r->s->metrics.reserved_memory_bytes += bytes;
    job->reserved_bytes = bytes;
    hold_session(r);
}

static void submit(request *r, fwm__session_entry *e, fwm__job *job) {
    job->sink = &r->c->sink;
    job->respond = r->call.has_msgid;
    job->msgid = r->call.msgid;
    job->enqueued_ns = r->start_ns;
    r->submitted = true;
    fwm__connection_job_started(r->c);
    fwm__scheduler_submit(r->s->scheduler, e, job);
}

static fwm__job *new_job(request *r, fwm__job_kind kind) {
    fwm__job *job = fwm__job_new(kind);
    if (!job) fwm__rpc_fail(&r->failure, FWM_RPC_INTERNAL, "out of memory");
    return job;
}

/* The word inside the runtime's "unknown word 'WORD' at byte N" message. */
static void unknown_word(request *r, const char *message) {
    fwm__rpc_fail(&r->failure, FWM_RPC_UNKNOWN_WORD, "%s", message);
    const char *open = strchr(message, '\'');
    const char *close = open ? strstr(open + 1, "' at byte") : NULL;
    if (!close) close = open ? strrchr(open + 1, '\'') : NULL;
    if (open && close) {
        size_t n = (size_t)(close - open - 1);
        n = fwm__utf8_cut(open + 1, n, 127 /* as before the field held addresses too */);
        memcpy(r->failure.word, open + 1, n);
        r->failure.word[n] = '\0';
    }
}

/* The words a request reads, owned until a job takes them: the tokens, and the byte spans of a text's
 * words read as <unk> (models that have it; NULL when there are none). */
typedef struct input {
    uint32_t *tokens;
    size_t count;
    fwm_text_span *unknown;
    size_t unknown_count;
} input;

static void input_free(input *in) {
    fwm__free(in->tokens);
    fwm__free(in->unknown);
    *in = (input){0};
}

/* Tokenize `text` for model `m` into *in, its token array with `extra` spare slots. false with
 * r->failure filled (and *in empty). */
static bool tokenize(request *r, const fwm__served_model *m, const char *text, size_t length, size_t extra,
                     input *in) {
    size_t limit = r->s->config->max_feed_tokens;
    size_t capacity = length + 1 < limit + 1 ? length + 1 : limit + 1; /* a token takes >= 1 byte */
    *in = (input){0};
    if (!(in->tokens = fwm__malloc((capacity + extra) * sizeof *in->tokens)))
        return fwm__rpc_fail(&r->failure, FWM_RPC_INTERNAL, "out of memory");
    fwm_error err;
    size_t spans = 0;
    fwm_status status =
        fwm_tokenize_spans(m->model, text, length, in->tokens, capacity, &in->count, NULL, 0, &spans, &err);
    if (status == FWM_OK && in->count <= limit && spans > 0) { /* again, now that the spans' room is known */
        if (!(in->unknown = fwm__malloc(spans * sizeof *in->unknown))) {
            input_free(in);
            return fwm__rpc_fail(&r->failure, FWM_RPC_INTERNAL, "out of memory");
        }
        status = fwm_tokenize_spans(m->model, text, length, in->tokens, capacity, &in->count, in->unknown, spans,
                                    &in->unknown_count, &err);
    }
    if (status == FWM_OK && in->count <= limit) return true;
    size_t count = in->count;
    input_free(in);
    if (status == FWM_ERR_UNKNOWN_WORD) unknown_word(r, err.message);
    else if (status == FWM_OK || status == FWM_ERR_BUFFER_TOO_SMALL)
        fwm__rpc_fail(&r->failure, FWM_RPC_TOO_LARGE, "the text has %zu tokens, more than max-feed-tokens %zu",
                      count, limit);
    else
        fwm__rpc_fail(&r->failure, FWM_RPC_BAD_PARAMS, "cannot tokenize the text: %s", err.message);
    return false;
}

/* The argument 'tokens' (`o`) into *in. false with r->failure filled (and *in empty). */
static bool token_array(request *r, const fwm__served_model *m, const msgpack_object *o, input *in) {
    *in = (input){0};
    if (o->type != MSGPACK_OBJECT_ARRAY)
        return fwm__rpc_fail(&r->failure, FWM_RPC_BAD_PARAMS, "argument 'tokens' must be an array of token ids");
    size_t n = o->via.array.size;
    if (n > r->s->config->max_feed_tokens)
        return fwm__rpc_fail(&r->failure, FWM_RPC_TOO_LARGE, "%zu tokens, more than max-feed-tokens %zu", n,
                             r->s->config->max_feed_tokens);
    if (!(in->tokens = fwm__malloc((n ? n : 1) * sizeof *in->tokens)))
        return fwm__rpc_fail(&r->failure, FWM_RPC_INTERNAL, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const msgpack_object *t = &o->via.array.ptr[i];
        if (t->type != MSGPACK_OBJECT_POSITIVE_INTEGER || t->via.u64 >= m->info.vocab_size) {
            input_free(in);
            if (t->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
                return fwm__rpc_fail(&r->failure, FWM_RPC_BAD_PARAMS,
                                     "tokens[%zu] = %llu is out of range (vocabulary of %u)", i,
                                     (unsigned long long)t->via.u64, m->info.vocab_size);
            return fwm__rpc_fail(&r->failure, FWM_RPC_BAD_PARAMS, "tokens[%zu] is not a non-negative integer", i);
        }
        in->tokens[i] = (uint32_t)t->via.u64;
    }
    in->count = n;
    return true;
}

/* The words a feed or a trace reads: one of 'text' and 'tokens', exactly one unless `optional` (then
 * neither gives an empty *in). false with r->failure filled. */
static bool input_tokens(request *r, const fwm__served_model *m, const char *method, bool optional, input *in) {
    const char *text;
    size_t length = 0;
    *in = (input){0};
    int has_text = fwm__rpc_arg_string(&r->call, "text", false, &text, &length, &r->failure);
    if (has_text < 0) return false;
    const msgpack_object *list = fwm__rpc_arg(&r->call, "tokens");
    if (list && list->type == MSGPACK_OBJECT_NIL) list = NULL;
    if (has_text == 1 && list)
        return fwm__rpc_fail(&r->failure, FWM_RPC_BAD_PARAMS, "%s takes %s one of 'text' and 'tokens'", method,
                             optional ? "at most" : "exactly");
    if (has_text != 1 && !list) {
        if (optional) return true;
        return fwm__rpc_fail(&r->failure, FWM_RPC_BAD_PARAMS, "%s takes exactly one of 'text' and 'tokens'", method);
    }
    return has_text == 1 ? tokenize(r, m, text, length, 0, in) : token_array(r, m, list, in);
}

static bool not_overloaded(request *r, size_t count) {
    uint64_t queued = fwm__scheduler_tokens_queued(r->s->scheduler);
    if (queued + count <= r->s->config->max_queued_tokens) return true;
    return fwm__rpc_fail(&r->failure, FWM_RPC_OVERLOADED,
                         "%llu tokens are queued and %zu more would exceed max-queued-tokens %zu; retry later",
                         (unsigned long long)queued, count, r->s->config->max_queued_tokens);
}

/* ---- methods ---- */

static void pack_model(msgpack_packer *pk, const fwm__served_model *m, bool is_default) {
    const fwm_model_info *i = &m->info;
    bool stm = strcmp(i->architecture, "stm") == 0;
    msgpack_pack_map(pk, stm ? 25 : 20); /* count the keys below when adding one */
    key_str(pk, "name", m->name);
    key_str(pk, "architecture", i->architecture); /* "fwm", "lstm", "mnm", "gfw" or "stm" */
    key_u64(pk, "layers", i->layer_count);
    key_str(pk, "fingerprint", m->fingerprint);
    key_u64(pk, "vocab_size", i->vocab_size);
    key_u64(pk, "embedding", i->embedding_length);
    key_u64(pk, "hidden", i->hidden_size);
    key(pk, "memory");
    msgpack_pack_array(pk, 3);
    msgpack_pack_uint32(pk, i->memory_s);
    msgpack_pack_uint32(pk, i->memory_r);
    msgpack_pack_uint32(pk, i->memory_t);
    key_u64(pk, "reads", i->read_count);
    key_bool(pk, "residual", i->residual);
    key_str(pk, "read_policy", i->read_policy == FWM_READ_ON_TOKEN ? "token" : "always");
    key_str(pk, "tokenizer", i->tokenizer); /* "word" or "text" */
    key_bool(pk, "has_unknown_token", m->has_unknown); /* words outside the vocabulary read as <unk> */
    key_bool(pk, "logprobs", m->predicts_from_state); /* feed takes logprobs */
    key_u64(pk, "parameters", i->parameter_count);
    key_u64(pk, "session_bytes", m->session_bytes);
    key_u64(pk, "state_blob_bytes", i->state_blob_bytes);
    key_bool(pk, "checksum_verified", i->checksum_verified);
    key_bool(pk, "default", is_default);
    key(pk, "prime"); /* the words a new session has read (open, reset) */
    msgpack_pack_array(pk, i->prime_token_count);
    for (uint32_t t = 0; t < i->prime_token_count; t++)
        fwm__rpc_pack_cstr(pk, fwm_model_token_text(m->model, i->prime_tokens[t]));
    if (!stm) return;
    /* how an STM reads tokens: in sentence mode it predicts only after a question's end */
    key_str(pk, "input", i->sentence_input ? "sentence" : "word");
    key_str(pk, "statement_end", fwm_model_token_text(m->model, i->statement_end_token_id));
    key_str(pk, "question_end", fwm_model_token_text(m->model, i->question_end_token_id));
    key_u64(pk, "max_sentence_words", i->max_sentence_words);
    key_bool(pk, "reset_on_eos", i->reset_on_eos);
}

#define MAX_WRONG_TOKENS 3 /* per connection, then it is closed */

/* hello {token}: authenticates the connection when the token is the server's. */
static bool authenticate(request *r) {
    const char *token;
    size_t length;
    int has = fwm__rpc_arg_string(&r->call, "token", false, &token, &length, &r->failure);
    if (has <= 0 || !r->s->auth_token) return has >= 0;
    if (fwm__server_token_matches(r->s, token, length)) {
        r->c->authenticated = true;
        return true;
    }
    r->s->metrics.auth_failures++;
    if (++r->c->wrong_tokens >= MAX_WRONG_TOKENS)
        fwm__connection_fail(r->c, FWM_RPC_UNAUTHORIZED, "too many wrong tokens; the connection is closed");
    return fwm__rpc_fail(&r->failure, FWM_RPC_UNAUTHORIZED, "wrong token (attempt %u of %d on this connection)",
                         r->c->wrong_tokens, MAX_WRONG_TOKENS);
}

/* Cluster: the live nodes for hello and stats, read off the loop (the request parks meanwhile);
 * false when parked. When the store did not answer in time, the last list read. */
static bool live_nodes(request *r, const fwm__lookup_node **nodes, size_t *count) {
    *nodes = NULL;
    *count = 0;
    if (!r->s->cluster || !fwm__lookup_remote(r->s)) return true;
    const fwm__lookup *answer = fwm__lookup_ready(r->c, FWM_LOOKUP_NODES, NULL);
    if (!answer) {
        if (fwm__lookup_park(r->c, FWM_LOOKUP_NODES, NULL)) return false;
        fwm__lookup_last_nodes(r->s, nodes, count); /* out of memory: what is known */
        return true;
    }
    if (!answer->timed_out && answer->nodes_ok) {
        *nodes = answer->nodes;
        *count = answer->node_count;
    } else {
        fwm__lookup_last_nodes(r->s, nodes, count);
    }
    return true;
}

static bool m_hello(request *r) {
    const fwm__lookup_node *nodes;
    size_t node_count;
    if (!live_nodes(r, &nodes, &node_count)) return false; /* parked */
    if (!authenticate(r)) return false;
    msgpack_packer pk;
    if (!begin_response(r, &pk)) return true;
    const fwm__server *s = r->s;
    const fwm__config *cfg = s->config;
    bool authenticated = r->c->authenticated;
    msgpack_pack_map(&pk, authenticated ? 11 : 5);
    key_str(&pk, "server", "fwm-serve");
    key_str(&pk, "version", FWM_VERSION_STRING);
    key_u64(&pk, "protocol", FWM_PROTOCOL_VERSION);
    key_bool(&pk, "auth_required", !authenticated || s->auth_token != NULL);
    key_bool(&pk, "authenticated", authenticated);
    if (!authenticated) return true; /* who it is, and that it wants a token: nothing more */
    key(&pk, "models");
    msgpack_pack_array(&pk, s->model_count);
    for (size_t m = 0; m < s->model_count; m++) pack_model(&pk, &s->models[m], m == 0);
    key(&pk, "limits");
    msgpack_pack_map(&pk, 15);
    key_u64(&pk, "max_sessions", cfg->max_sessions);
    key_u64(&pk, "max_sessions_per_connection", cfg->max_sessions_per_connection);
    key_u64(&pk, "max_memory_bytes", cfg->max_memory_bytes);
    key_double(&pk, "idle_timeout_s", cfg->idle_timeout_s);
    key_u64(&pk, "max_message_bytes", cfg->limits.max_message_bytes);
    key_u64(&pk, "max_depth", cfg->limits.max_depth);
    key_u64(&pk, "max_string_bytes", cfg->limits.max_string_bytes);
    key_u64(&pk, "max_binary_bytes", cfg->limits.max_binary_bytes);
    key_u64(&pk, "max_objects", cfg->limits.max_objects);
    key_u64(&pk, "max_feed_tokens", cfg->max_feed_tokens);
    key_u64(&pk, "max_queued_tokens", cfg->max_queued_tokens);
    key_u64(&pk, "max_output_bytes", cfg->max_output_bytes);
    key_u64(&pk, "max_inflight", cfg->max_inflight);
    key_double(&pk, "message_timeout_s", cfg->message_timeout_s);
    key_double(&pk, "connection_idle_timeout_s", cfg->connection_idle_timeout_s);
    key_u64(&pk, "workers", s->workers);
    key_u64(&pk, "max_batch", cfg->max_batch);
    key(&pk, "durability"); /* nil: sessions live in memory only */
    if (s->store) {
        msgpack_pack_map(&pk, 4);
        key_str(&pk, "fsync", fwm__fsync_mode_name((fwm__fsync_mode)cfg->fsync_mode));
        key_u64(&pk, "max_resident", cfg->max_resident);
        key_u64(&pk, "snapshot_tokens", cfg->snapshot_tokens);
        key_double(&pk, "session_ttl_s", cfg->session_ttl_s);
    } else {
        msgpack_pack_nil(&pk);
    }
    fwm__cluster_node_pack_hello(&pk, (fwm__server *)s, nodes, node_count);
    return true;
}

static bool m_stats(request *r) {
    const fwm__lookup_node *nodes;
    size_t node_count;
    if (!live_nodes(r, &nodes, &node_count)) return false; /* parked */
    msgpack_packer pk;
    if (!begin_response(r, &pk)) return true;
    fwm__stats_pack(&pk, r->s, nodes, node_count);
    return true;
}

/* ---- sessions: every session, page by page, in id order ---- */

typedef struct listing {
    request *r;
    msgpack_packer *pk;
    size_t limit, count;
    uint8_t last[FWM_SESSION_ID_BYTES];
    bool more;
} listing;

static void pack_listed(listing *l, const uint8_t *id, const char *model, uint64_t pos, uint64_t last_used_ms,
                        bool resident) {
    char hex[FWM_SESSION_HEX_SIZE];
    fwm__session_id_to_hex(id, hex);
    msgpack_pack_map(l->pk, 5);
    key_str(l->pk, "session", hex);
    key_str(l->pk, "model", model);
    key(l->pk, "pos");
    if (pos == UINT64_MAX) msgpack_pack_nil(l->pk); /* no state yet (never, once a session answered) */
    else msgpack_pack_uint64(l->pk, pos);
    key_u64(l->pk, "last_used_ms", last_used_ms);
    key_bool(l->pk, "resident", resident);
    memcpy(l->last, id, FWM_SESSION_ID_BYTES);
    l->count++;
}

/* Stored sessions: the meta record, with the resident entry's table presence. */
static bool list_stored(void *user, const uint8_t id[FWM_STORE_ID_BYTES], const void *bytes, size_t length) {
    listing *l = user;
    if (l->count == l->limit) {
        l->more = true;
        return false;
    }
    fwm__session_meta meta;
    if (!fwm__meta_decode(bytes, length, &meta)) {
        memset(&meta, 0, sizeof meta);
        snprintf(meta.model_name, sizeof meta.model_name, "(damaged meta record)");
    }
    /* A resident session: where it is now and when it was last used, not as of its last record. */
    fwm__session_entry *e = fwm__session_table_find(&l->r->s->sessions, id);
    uint64_t pos = e ? fwm__session_entry_listed_pos(e) : UINT64_MAX;
    uint64_t last_used_ms = meta.last_used_ms;
    if (e) {
        uint64_t now = now_ms(), idle = now > e->last_used_ms ? now - e->last_used_ms : 0;
        last_used_ms = fwm__wall_ms() - idle;
    }
    pack_listed(l, id, meta.model_name, pos != UINT64_MAX ? pos : meta.pos, last_used_ms, e != NULL);
    return true;
}

static int compare_ids(const void *a, const void *b) {
    return memcmp((*(fwm__session_entry *const *)a)->id, (*(fwm__session_entry *const *)b)->id, FWM_SESSION_ID_BYTES);
}

typedef struct gather {
    fwm__session_entry **entries;
    size_t count;
    const uint8_t *after;
} gather;

static void gather_one(fwm__session_entry *e, void *user) {
    gather *g = user;
    if (!g->after || memcmp(e->id, g->after, FWM_SESSION_ID_BYTES) > 0) g->entries[g->count++] = e;
}

static bool m_sessions(request *r) {
    uint64_t limit = 100;
    const char *after_text;
    size_t after_length;
    uint8_t after[FWM_SESSION_ID_BYTES];
    int has_after = fwm__rpc_arg_string(&r->call, "after", false, &after_text, &after_length, &r->failure);
    if (has_after < 0 || fwm__rpc_arg_uint(&r->call, "limit", false, 1000, &limit, &r->failure) < 0) return false;
    if (has_after && !fwm__session_id_from_hex(after_text, after_length, after))
        return fwm__rpc_fail(&r->failure, FWM_RPC_BAD_PARAMS, "argument 'after' must be a session id (32 hex digits)");
    if (limit == 0) return fwm__rpc_fail(&r->failure, FWM_RPC_BAD_PARAMS, "argument 'limit' must be 1..1000");
    fwm__server *s = r->s;
    const fwm__lookup *answer = NULL;
    if (fwm__lookup_remote(s) && !(answer = fwm__lookup_ready(r->c, FWM_LOOKUP_LIST, NULL))) {
        if (!fwm__lookup_park_list(r->c, has_after ? after : NULL, (size_t)limit))
            return fwm__rpc_fail(&r->failure, FWM_RPC_INTERNAL, "out of memory listing sessions");
        return false; /* parked: the page is read off the loop */
    }
    gather g = {NULL, 0, has_after ? after : NULL};
    if (!s->store) { /* memory only: the resident table, sorted */
        g.entries = fwm__malloc((s->sessions.count ? s->sessions.count : 1) * sizeof *g.entries);
        if (!g.entries) return fwm__rpc_fail(&r->failure, FWM_RPC_INTERNAL, "out of memory listing sessions");
        fwm__session_table_each(&s->sessions, gather_one, &g);
        qsort(g.entries, g.count, sizeof *g.entries, compare_ids);
    }
    msgpack_packer pk;
    if (!begin_response(r, &pk)) {
        fwm__free(g.entries);
        return true;
    }
    msgpack_sbuffer items;
    msgpack_sbuffer_init(&items);
    msgpack_packer ipk;
    msgpack_packer_init(&ipk, &items, msgpack_sbuffer_write);
    listing l = {r, &ipk, (size_t)limit, 0, {0}, false};
    fwm__store_error error = {0};
    bool ok = true;
    if (answer && answer->timed_out) {
        ok = false;
        snprintf(error.message, sizeof error.message, "the store did not answer within %u ms", FWM_LOOKUP_TIMEOUT_MS);
    } else if (answer) {
        for (size_t i = 0; i < answer->listed_count; i++)
            if (!list_stored(&l, answer->listed[i].id, answer->listed[i].meta, answer->listed[i].meta_length)) break;
        ok = answer->list_status == FWM_STORE_OK;
        if (!ok) snprintf(error.message, sizeof error.message, "%s", answer->error);
    } else if (s->store) {
        ok = s->store->backend->list(s->store, has_after ? after : NULL, list_stored, &l, &error) == FWM_STORE_OK;
    } else {
        uint64_t wall = fwm__wall_ms(), now = now_ms();
        for (size_t i = 0; i < g.count && l.count < l.limit; i++) {
            fwm__session_entry *e = g.entries[i];
            uint64_t idle = now > e->last_used_ms ? now - e->last_used_ms : 0;
            pack_listed(&l, e->id, s->models[e->model_index].name, fwm__session_entry_listed_pos(e), wall - idle,
                        true);
        }
        l.more = l.count < g.count;
    }
    fwm__free(g.entries);
    msgpack_pack_map(&pk, 3);
    key(&pk, "sessions");
    msgpack_pack_array(&pk, l.count);
    msgpack_pack_bin_body(&pk, items.data, items.size); /* the items, already packed */
    key(&pk, "next");
    if (l.more) {
        char hex[FWM_SESSION_HEX_SIZE];
        fwm__session_id_to_hex(l.last, hex);
        fwm__rpc_pack_cstr(&pk, hex);
    } else {
        msgpack_pack_nil(&pk);
    }
    key(&pk, "error");
    if (ok) msgpack_pack_nil(&pk);
    else fwm__rpc_pack_cstr(&pk, error.message);
    msgpack_sbuffer_destroy(&items);
    return true;
}

static bool m_open(request *r) {
    uint32_t m, topk;
    bool prime = true;
    if (!model_arg(r, &m) || !topk_arg(r, &r->s->models[m], (uint32_t)r->s->config->default_topk, &topk) ||
        fwm__rpc_arg_bool(&r->call, "prime", false, &prime, &r->failure) < 0 || !room_for_session(r, m, 0))
        return false;
    fwm__session_entry *e = new_entry(r, m, topk, true);
    if (e) {
        fwm__session_start(r->s->models[m].model, e, prime);
        fwm__session_entry_note_pos(e);
    }
    fwm__job *job = e && r->s->store ? new_job(r, FWM_JOB_OPEN) : NULL;
    if (!e || (r->s->store && !job)) {
        fwm__session_entry_free(e);
        return false;
    }
    if (job) job->prime = prime;
    if (!fwm__session_table_insert(&r->s->sessions, e)) {
        fwm__job_free(job);
        fwm__session_entry_free(e);
        return fwm__rpc_fail(&r->failure, FWM_RPC_INTERNAL, "out of memory registering the session");
    }
    r->s->metrics.sessions_opened++;
    r->s->metrics.session_memory_bytes += e->memory_bytes;
    fwm__session_table_lru_touch(&r->s->sessions, e);
    hold_session(r);
    if (job) { /* durable: answered once the new session is recorded */
        r->s->reserved_sessions++;
        submit(r, e, job);
        fwm__tiering_evict(r->s, false);
        return true;
    }
    msgpack_packer pk;
    if (!begin_response(r, &pk)) return true;
    msgpack_pack_map(&pk, 5);
    key_str(&pk, "session", e->hex);
    key_str(&pk, "model", r->s->models[m].name);
    key_u64(&pk, "topk", topk);
    key_u64(&pk, "pos", fwm_session_position(e->session));
    key_u64(&pk, "memory_bytes", e->memory_bytes);
    return true;
}

/* Bytes of a reply's `unknown` list of `n` spans, at most: the key, the array header, [start, length]. */
static size_t unknown_bound(size_t n) {
    return 16 + n * 19;
}

/* Whether the memory budget has room for the `held` bytes a job keeps until it ends; the refusal
 * names them as "the N bytes `what`M bytes in use)" and ends with `advice`. */
static bool held_fits(request *r, uint64_t held, const char *what, const char *advice) {
    if (!held || fwm__server_memory_fits(r->s, held)) return true;
    r->s->metrics.memory_refusals++;
    return fwm__rpc_fail(&r->failure, FWM_RPC_OVERLOADED,
                         "the server's memory budget (max-memory-bytes %zu) has no room for the %llu bytes %s%llu "
                         "bytes in use): retry later%s",
                         r->s->config->max_memory_bytes, (unsigned long long)held, what,
                         (unsigned long long)fwm__server_memory_used(r->s), advice);
}

/* Hand `job` the words it reads (its own from then on), its topk, its reply's bound (job.h) and the
 * `held` bytes it keeps until it ends (reserved until its end is delivered), and submit it. Without
 * a job (the request refused), the words are freed and false returned. */
static bool submit_input(request *r, fwm__session_entry *e, fwm__job *job, input *in, uint32_t topk,
                         size_t output_bound, uint64_t held) {
    if (!job) {
        input_free(in);
        return false;
    }
    job->tokens = in->tokens;
    job->count = in->count;
    job->unknown = in->unknown;
    job->unknown_count = in->unknown_count;
    job->topk = topk;
    job->output_bound = output_bound;
    job->held_bytes = held;
    r->s->metrics.reserved_memory_bytes += held; /* released when the job's end is delivered */
    submit(r, e, job);
    return true;
}

static bool m_feed(request *r) {
    fwm__session_entry *e = find_session(r);
    if (!e) return false;
    const fwm__served_model *m = &r->s->models[e->model_index];
    uint32_t topk;
    bool notify = true, logprobs = false;
    if (!topk_arg(r, m, e->default_topk, &topk) ||
        fwm__rpc_arg_bool(&r->call, "notify", false, &notify, &r->failure) < 0 ||
        fwm__rpc_arg_bool(&r->call, "logprobs", false, &logprobs, &r->failure) < 0)
        return false;
    if (logprobs && !m->predicts_from_state)
        return fwm__rpc_fail(&r->failure, FWM_RPC_BAD_PARAMS,
                             "logprobs is not supported for this session: its model '%s' is of architecture '%s', "
                             "whose scores before a feed's first token the runtime cannot compute from the state "
                             "(only 'fwm' and 'lstm' models take logprobs)",
                             m->name, m->info.architecture);
    input in;
    if (!input_tokens(r, m, "feed", false, &in)) return false;
    size_t count = in.count, unknown_count = in.unknown_count;
    /* the response: its head, session, pos and fed (under 128 bytes), the unknown spans, and with
     * logprobs each token's id (at most 5 bytes) and log-probability (a float64, 9 bytes) */
    size_t bound = 128 + unknown_bound(unknown_count) + (logprobs ? 32 + count * 14 : 0);
    /* what the job holds until it ends: the log-probabilities and the spans */
    uint64_t held = (logprobs ? (uint64_t)count * sizeof(double) : 0) + (uint64_t)unknown_count * sizeof *in.unknown;
    fwm__job *job = NULL;
    size_t limit = r->s->config->max_output_bytes, fixed = 160 + unknown_bound(unknown_count);
    if (bound > limit) {
        if (logprobs)
            fwm__rpc_fail(&r->failure, FWM_RPC_TOO_LARGE,
                          "a feed of %zu tokens with logprobs may take a response of %zu bytes, more than "
                          "max-output-bytes %zu: feed fewer tokens per call (%zu fit)",
                          count, bound, limit, limit > fixed ? (limit - fixed) / 14 : 0);
        else
            fwm__rpc_fail(&r->failure, FWM_RPC_TOO_LARGE,
                          "the text has %zu words outside the vocabulary, whose spans may take a response of %zu "
                          "bytes, more than max-output-bytes %zu: feed less text per call",
                          unknown_count, bound, r->s->config->max_output_bytes);
    } else if (held_fits(r, held, "this feed holds until it ends (its logprobs and unknown spans; ",
                         " or feed fewer tokens") &&
               not_overloaded(r, count)) {
        job = new_job(r, FWM_JOB_FEED);
    }
    if (job && logprobs && !(job->logprob = fwm__malloc((count ? count : 1) * sizeof *job->logprob))) {
        fwm__job_free(job);
        job = NULL;
        fwm__rpc_fail(&r->failure, FWM_RPC_INTERNAL, "out of memory");
    }
    if (job) job->notify = notify;
    return submit_input(r, e, job, &in, topk, bound, held);
}

static bool m_ask(request *r) {
    fwm__session_entry *e = find_session(r);
    if (!e) return false;
    const fwm__served_model *m = &r->s->models[e->model_index];
    uint32_t topk;
    bool commit = false;
    const char *text;
    size_t length;
    if (!topk_arg(r, m, e->default_topk, &topk) ||
        fwm__rpc_arg_bool(&r->call, "commit", false, &commit, &r->failure) < 0 ||
        fwm__rpc_arg_string(&r->call, "question", true, &text, &length, &r->failure) < 0)
        return false;
    input in;
    if (!tokenize(r, m, text, length, 2, &in)) return false; /* room: "?", answer */
    if (m->has_question && (in.count == 0 || in.tokens[in.count - 1] != m->question_token))
        in.tokens[in.count++] = m->question_token;
    size_t count = in.count, unknown_count = in.unknown_count;
    /* the reply: its answer and predictions, and the question's unknown spans, which the job holds */
    size_t bound = 192 + m->max_word + (size_t)(topk ? topk : 1) * (m->max_word + 16) + unknown_bound(unknown_count);
    uint64_t held = (uint64_t)unknown_count * sizeof *in.unknown;
    fwm__job *job = NULL;
    if (count == 0) {
        fwm__rpc_fail(&r->failure, FWM_RPC_BAD_PARAMS, "argument 'question' has no words");
    } else if (bound > r->s->config->max_output_bytes) {
        fwm__rpc_fail(&r->failure, FWM_RPC_TOO_LARGE,
                      "the question has %zu words outside the vocabulary, whose spans may take a response of %zu "
                      "bytes, more than max-output-bytes %zu: ask a shorter question",
                      unknown_count, bound, r->s->config->max_output_bytes);
    } else if (held_fits(r, held, "of the question's unknown spans (", "") && not_overloaded(r, count + 1)) {
        job = new_job(r, FWM_JOB_ASK);
    }
    if (job) job->commit = commit;
    /* the bound beyond the answer's (sessions/scheduler.c) */
    return submit_input(r, e, job, &in, topk, unknown_bound(unknown_count), held);
}

/* predict, reset, snapshot: a job on an existing session with at most a topk. */
static bool session_job(request *r, fwm__job_kind kind) {
    fwm__session_entry *e = find_session(r);
    if (!e) return false;
    uint32_t topk = 0;
    if (kind == FWM_JOB_PREDICT && !topk_arg(r, &r->s->models[e->model_index], e->default_topk, &topk)) return false;
    fwm__job *job = new_job(r, kind);
    if (!job) return false;
    job->topk = topk;
    submit(r, e, job);
    return true;
}

static bool m_predict(request *r) { return session_job(r, FWM_JOB_PREDICT); }
/* trace: what each step of `text`/`tokens` writes and reads, on a copy of the session (docs/PROTOCOL.md). */
static bool m_trace(request *r) {
    fwm__session_entry *e = find_session(r);
    if (!e) return false;
    const fwm__served_model *m = &r->s->models[e->model_index];
    if (strcmp(m->info.architecture, "fwm") != 0) /* only the FWM has a memory to trace */
        return fwm__rpc_fail(&r->failure, FWM_RPC_BAD_PARAMS,
                             "trace is not supported for this session: its model '%s' is of architecture '%s', "
                             "which has no fast-weight memory (only 'fwm' models can be traced)",
                             m->name, m->info.architecture);
    uint32_t topk;
    bool memory = false;
    if (!topk_arg(r, m, e->default_topk, &topk) ||
        fwm__rpc_arg_bool(&r->call, "memory", false, &memory, &r->failure) < 0)
        return false;
    input in;
    if (!input_tokens(r, m, "trace", true, &in)) return false;
    size_t count = in.count;
    if (count > FWM_TRACE_MAX_TOKENS) {
        input_free(&in);
        return fwm__rpc_fail(&r->failure, FWM_RPC_TOO_LARGE, "trace takes at most %d tokens, %zu given",
                             FWM_TRACE_MAX_TOKENS, count);
    }
    const fwm_model_info *i = &m->info;
    size_t floats = (size_t)i->memory_s + i->memory_r + i->memory_t;
    size_t predictions = (size_t)topk * (m->max_word + 16);
    size_t per_step = 256 + m->max_word + predictions + 4 * floats + 16 +
                      i->read_count * (4 * floats + 64 + predictions);
    size_t bound = 512 + count * per_step + (memory ? 4 * (size_t)i->memory_s * i->memory_r * i->memory_t + 16 : 0) +
                   unknown_bound(in.unknown_count);
    if (bound > r->s->config->max_output_bytes) {
        input_free(&in);
        return fwm__rpc_fail(&r->failure, FWM_RPC_TOO_LARGE,
                             "this trace may take %zu bytes, more than max-output-bytes %zu: trace fewer tokens, "
                             "a smaller topk or without memory",
                             bound, r->s->config->max_output_bytes);
    }
    fwm__job *job = new_job(r, FWM_JOB_TRACE);
    if (job) job->trace_memory = memory;
    return submit_input(r, e, job, &in, topk, bound, 0);
}

static bool m_reset(request *r) {
    bool prime = true;
    if (fwm__rpc_arg_bool(&r->call, "prime", false, &prime, &r->failure) < 0) return false;
    fwm__session_entry *e = find_session(r);
    if (!e) return false;
    fwm__job *job = new_job(r, FWM_JOB_RESET);
    if (!job) return false;
    job->prime = prime;
    submit(r, e, job);
    return true;
}
static bool m_snapshot(request *r) { return session_job(r, FWM_JOB_SNAPSHOT); }

static bool m_fork(request *r) {
    fwm__session_entry *parent = find_session(r);
    if (!parent || !room_for_session(r, parent->model_index, 0)) return false;
    fwm__job *job = new_job(r, FWM_JOB_FORK);
    if (!job) return false;
    job->child = new_entry(r, parent->model_index, parent->default_topk, false);
    if (!job->child) {
        fwm__job_free(job);
        return false;
    }
    reserve(r, job, r->s->models[parent->model_index].session_bytes);
    submit(r, parent, job);
    return true;
}

static bool m_restore(request *r) {
    const void *blob;
    size_t size;
    uint32_t m, topk;
    if (fwm__rpc_arg_binary(&r->call, "state", true, &blob, &size, &r->failure) < 0 || !model_arg(r, &m) ||
        !topk_arg(r, &r->s->models[m], (uint32_t)r->s->config->default_topk, &topk) || !room_for_session(r, m, size))
        return false;
    fwm__session_entry *e = new_entry(r, m, topk, true);
    if (!e) return false;
    fwm__job *job = new_job(r, FWM_JOB_RESTORE);
    if (job) job->blob = fwm__malloc(size ? size : 1);
    if (!job || !job->blob) {
        fwm__job_free(job);
        fwm__session_entry_free(e);
        return fwm__rpc_fail(&r->failure, FWM_RPC_INTERNAL, "out of memory");
    }
    memcpy(job->blob, blob, size);
    job->blob_size = size;
    reserve(r, job, r->s->models[m].session_bytes + size);
    submit(r, e, job);
    return true;
}

static bool m_close(request *r) {
    fwm__session_entry *e = find_session(r);
    if (!e) return false;
    fwm__job *job = new_job(r, FWM_JOB_CLOSE);
    if (!job) return false;
    fwm__session_table_remove(&r->s->sessions, e); /* later requests find no such session */
    fwm__session_table_lru_remove(&r->s->sessions, e);
    if (r->c->sessions_held) r->c->sessions_held--;
    r->s->metrics.sessions_closed++;
    submit(r, e, job);
    return true;
}

static const char *const args_none[] = {NULL};
static const char *const args_open[] = {"model", "topk", "prime", NULL};
static const char *const args_reset[] = {"session", "prime", NULL};
static const char *const args_trace[] = {"session", "text", "tokens", "topk", "memory", NULL};
static const char *const args_feed[] = {"session", "text", "tokens", "topk", "notify", "logprobs", NULL};
static const char *const args_ask[] = {"session", "question", "commit", "topk", NULL};
static const char *const args_predict[] = {"session", "topk", NULL};
static const char *const args_session[] = {"session", NULL};
static const char *const args_restore[] = {"state", "model", "topk", NULL};
static const char *const args_sessions[] = {"after", "limit", NULL};
static const char *const args_hello[] = {"token", NULL};

static const method methods[] = {
    {"hello", m_hello, args_hello, true, false},
    {"open", m_open, args_open, false, true},
    {"feed", m_feed, args_feed, false, true},
    {"ask", m_ask, args_ask, false, true},
    {"predict", m_predict, args_predict, false, false},
    {"reset", m_reset, args_reset, false, true},
    {"fork", m_fork, args_session, false, true},
    {"snapshot", m_snapshot, args_session, false, false},
    {"trace", m_trace, args_trace, false, false},
    {"restore", m_restore, args_restore, false, true},
    {"close", m_close, args_session, false, false}, /* deleting frees space: allowed while writes fail */
    {"stats", m_stats, args_none, true, false},
    {"sessions", m_sessions, args_sessions, true, false},
};

/* Durable mode: whether the store takes writes; the refusal names why. */
static bool store_writable(request *r) {
    char why[300];
    if (!r->s->journal || fwm__journal_healthy(r->s->journal, why, sizeof why)) return true;
    r->s->metrics.storage_refusals++;
    return fwm__rpc_fail(&r->failure, FWM_RPC_STORAGE,
                         "the session store cannot write, so nothing that changes a session is accepted until it "
                         "can (retried every second): %s",
                         why);
}

void fwm__methods_dispatch(fwm__connection *c, const uint8_t *message, size_t length) {
    bool again = c->ready != NULL; /* a parked request, dispatched again with the store's answer */
    request r = {.c = c, .s = c->server, .start_ns = again ? c->parked_start_ns : fwm__now_ns()};
    if (!again) r.s->metrics.requests++;
    if (!fwm__rpc_call_decode(&r.call, message, length, &r.failure)) {
        respond_error(&r);
        fwm__rpc_call_release(&r.call);
        return;
    }
    const method *found = NULL;
    for (size_t i = 0; i < sizeof methods / sizeof methods[0] && !found; i++)
        if (fwm__rpc_method_is(&r.call, methods[i].name)) found = &methods[i];
    bool ok;
    if (!found)
        ok = fwm__rpc_fail(&r.failure, FWM_RPC_UNKNOWN_METHOD, "unknown method '%.*s'",
                           (int)fwm__utf8_cut(r.call.method, r.call.method_length, 64), r.call.method);
    else if (!r.call.has_msgid && needs_response(found))
        ok = fwm__rpc_fail(&r.failure, FWM_RPC_INVALID_REQUEST,
                           "'%s' sent as a notification: its result (a new session's id) would be lost", found->name);
    else if (!c->authenticated && found->run != m_hello && (++r.s->metrics.auth_failures, true))
        ok = fwm__rpc_fail(&r.failure, FWM_RPC_UNAUTHORIZED,
                           "this server requires authentication: send hello {token} first ('%s' refused)", found->name);
    else if (r.s->shutting_down && !found->during_shutdown)
        ok = fwm__rpc_fail(&r.failure, FWM_RPC_SHUTTING_DOWN, "the server is shutting down; '%s' refused", found->name);
    else if (found->writes && !store_writable(&r))
        ok = false;
    else
        ok = fwm__rpc_args_check(&r.call, found->args, &r.failure) && found->run(&r);
    if (c->waiting) { /* parked until the store answers (lookup.h): keep its bytes, answer nothing yet */
        c->parked = fwm__malloc(length ? length : 1);
        if (c->parked) {
            memcpy(c->parked, message, length);
            c->parked_length = length;
            c->parked_start_ns = r.start_ns;
            fwm__rpc_call_release(&r.call);
            return;
        }
        fwm__lookup_forget(c);
        ok = fwm__rpc_fail(&r.failure, FWM_RPC_INTERNAL, "out of memory holding a request while the store is asked");
    }
    if (!ok) respond_error(&r);
    if (!r.submitted) /* answered now; jobs are timed when their response is delivered */
        fwm__histogram_add(&r.s->metrics.request_latency, (fwm__now_ns() - r.start_ns) / 1000);
    fwm__rpc_call_release(&r.call);
}
