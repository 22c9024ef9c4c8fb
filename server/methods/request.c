/* request.c - what every method's handler does with its request (request.h). */
#include "request.h"

#include <string.h>

#include "fwm_alloc.h"
#include "fwm_utf8.h"
#include "tiering/cluster_node.h"
#include "tiering/lookup.h"
#include "tiering/tiering.h"

bool fwm__request_begin_response(fwm__request *r, msgpack_packer *pk) {
    if (!r->call.has_msgid) return false;
    fwm__connection_packer(r->c, pk);
    fwm__rpc_pack_response_head(pk, r->call.msgid);
    return true;
}

fwm__session_entry *fwm__request_session(fwm__request *r) {
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

bool fwm__request_topk(fwm__request *r, const fwm__served_model *m, uint32_t fallback, uint32_t *topk) {
    uint64_t value = fallback;
    if (fwm__rpc_arg_uint(&r->call, "topk", false, m->info.vocab_size, &value, &r->failure) < 0) return false;
    *topk = (uint32_t)value;
    return true;
}

bool fwm__request_model(fwm__request *r, uint32_t *index) {
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

bool fwm__request_room(fwm__request *r, uint32_t m, size_t extra) {
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

fwm__session_entry *fwm__request_new_entry(fwm__request *r, uint32_t m, uint32_t topk, bool create) {
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

void fwm__request_hold_session(fwm__request *r) {
    r->c->sessions_held++;
}

void fwm__request_reserve(fwm__request *r, fwm__job *job, uint64_t bytes) {
    r->s->reserved_sessions++;
    r->s->metrics.reserved_memory_bytes += bytes;
    job->reserved_bytes = bytes;
    fwm__request_hold_session(r);
}

void fwm__request_submit(fwm__request *r, fwm__session_entry *e, fwm__job *job) {
    job->sink = &r->c->sink;
    job->respond = r->call.has_msgid;
    job->msgid = r->call.msgid;
    job->enqueued_ns = r->start_ns;
    r->submitted = true;
    fwm__connection_job_started(r->c);
    fwm__scheduler_submit(r->s->scheduler, e, job);
}

fwm__job *fwm__request_new_job(fwm__request *r, fwm__job_kind kind) {
    fwm__job *job = fwm__job_new(kind);
    if (!job) fwm__rpc_fail(&r->failure, FWM_RPC_INTERNAL, "out of memory");
    return job;
}

/* The word inside the runtime's "unknown word 'WORD' at byte N" message. */
static void unknown_word(fwm__request *r, const char *message) {
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

void fwm__input_free(fwm__input *in) {
    fwm__free(in->tokens);
    fwm__free(in->unknown);
    *in = (fwm__input){0};
}

bool fwm__request_tokenize(fwm__request *r, const fwm__served_model *m, const char *text, size_t length, size_t extra,
                           fwm__input *in) {
    size_t limit = r->s->config->max_feed_tokens;
    size_t capacity = length + 1 < limit + 1 ? length + 1 : limit + 1; /* a token takes >= 1 byte */
    *in = (fwm__input){0};
    if (!(in->tokens = fwm__malloc((capacity + extra) * sizeof *in->tokens)))
        return fwm__rpc_fail(&r->failure, FWM_RPC_INTERNAL, "out of memory");
    fwm_error err;
    size_t spans = 0;
    fwm_status status =
        fwm_tokenize_spans(m->model, text, length, in->tokens, capacity, &in->count, NULL, 0, &spans, &err);
    if (status == FWM_OK && in->count <= limit && spans > 0) { /* again, now that the spans' room is known */
        if (!(in->unknown = fwm__malloc(spans * sizeof *in->unknown))) {
            fwm__input_free(in);
            return fwm__rpc_fail(&r->failure, FWM_RPC_INTERNAL, "out of memory");
        }
        status = fwm_tokenize_spans(m->model, text, length, in->tokens, capacity, &in->count, in->unknown, spans,
                                    &in->unknown_count, &err);
    }
    if (status == FWM_OK && in->count <= limit) return true;
    size_t count = in->count;
    fwm__input_free(in);
    if (status == FWM_ERR_UNKNOWN_WORD) unknown_word(r, err.message);
    else if (status == FWM_OK || status == FWM_ERR_BUFFER_TOO_SMALL)
        fwm__rpc_fail(&r->failure, FWM_RPC_TOO_LARGE, "the text has %zu tokens, more than max-feed-tokens %zu",
                      count, limit);
    else
        fwm__rpc_fail(&r->failure, FWM_RPC_BAD_PARAMS, "cannot tokenize the text: %s", err.message);
    return false;
}

/* The argument 'tokens' (`o`) into *in. false with r->failure filled (and *in empty). */
static bool token_array(fwm__request *r, const fwm__served_model *m, const msgpack_object *o, fwm__input *in) {
    *in = (fwm__input){0};
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
            fwm__input_free(in);
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

bool fwm__request_input(fwm__request *r, const fwm__served_model *m, const char *method, bool optional,
                        fwm__input *in) {
    const char *text;
    size_t length = 0;
    *in = (fwm__input){0};
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
    return has_text == 1 ? fwm__request_tokenize(r, m, text, length, 0, in) : token_array(r, m, list, in);
}

bool fwm__request_not_overloaded(fwm__request *r, size_t count) {
    uint64_t queued = fwm__scheduler_tokens_queued(r->s->scheduler);
    if (queued + count <= r->s->config->max_queued_tokens) return true;
    return fwm__rpc_fail(&r->failure, FWM_RPC_OVERLOADED,
                         "%llu tokens are queued and %zu more would exceed max-queued-tokens %zu; retry later",
                         (unsigned long long)queued, count, r->s->config->max_queued_tokens);
}

size_t fwm__unknown_bound(size_t n) {
    return 16 + n * 19;
}

bool fwm__request_held_fits(fwm__request *r, uint64_t held, const char *what, const char *advice) {
    if (!held || fwm__server_memory_fits(r->s, held)) return true;
    r->s->metrics.memory_refusals++;
    return fwm__rpc_fail(&r->failure, FWM_RPC_OVERLOADED,
                         "the server's memory budget (max-memory-bytes %zu) has no room for the %llu bytes %s%llu "
                         "bytes in use): retry later%s",
                         r->s->config->max_memory_bytes, (unsigned long long)held, what,
                         (unsigned long long)fwm__server_memory_used(r->s), advice);
}

bool fwm__request_submit_input(fwm__request *r, fwm__session_entry *e, fwm__job *job, fwm__input *in, uint32_t topk,
                               size_t output_bound, uint64_t held) {
    if (!job) {
        fwm__input_free(in);
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
    fwm__request_submit(r, e, job);
    return true;
}
