/* session_methods.c - the methods that make, step, copy and close sessions: open, feed, ask, predict,
 * trace, reset, snapshot, fork, restore and close (handlers.h). Work on a session's state becomes a
 * job for its queue (sessions/job.h). */
#include "handlers.h"

#include <string.h>

#include "fwm_alloc.h"
#include "sessions/durable_session.h"
#include "sessions/trace_job.h"
#include "tiering/tiering.h"

bool fwm__method_open(fwm__request *r) {
    uint32_t m, topk;
    bool prime = true;
    if (!fwm__request_model(r, &m) ||
        !fwm__request_topk(r, &r->s->models[m], (uint32_t)r->s->config->default_topk, &topk) ||
        fwm__rpc_arg_bool(&r->call, "prime", false, &prime, &r->failure) < 0 || !fwm__request_room(r, m, 0))
        return false;
    fwm__session_entry *e = fwm__request_new_entry(r, m, topk, true);
    if (e) {
        fwm__session_start(r->s->models[m].model, e, prime);
        fwm__session_entry_note_pos(e);
    }
    fwm__job *job = e && r->s->store ? fwm__request_new_job(r, FWM_JOB_OPEN) : NULL;
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
    fwm__request_hold_session(r);
    if (job) { /* durable: answered once the new session is recorded */
        r->s->reserved_sessions++;
        fwm__request_submit(r, e, job);
        fwm__tiering_evict(r->s, false);
        return true;
    }
    msgpack_packer pk;
    if (!fwm__request_begin_response(r, &pk)) return true;
    msgpack_pack_map(&pk, 5);
    key_str(&pk, "session", e->hex);
    key_str(&pk, "model", r->s->models[m].name);
    key_u64(&pk, "topk", topk);
    key_u64(&pk, "pos", fwm_session_position(e->session));
    key_u64(&pk, "memory_bytes", e->memory_bytes);
    return true;
}

bool fwm__method_feed(fwm__request *r) {
    fwm__session_entry *e = fwm__request_session(r);
    if (!e) return false;
    const fwm__served_model *m = &r->s->models[e->model_index];
    uint32_t topk;
    bool notify = true, logprobs = false;
    if (!fwm__request_topk(r, m, e->default_topk, &topk) ||
        fwm__rpc_arg_bool(&r->call, "notify", false, &notify, &r->failure) < 0 ||
        fwm__rpc_arg_bool(&r->call, "logprobs", false, &logprobs, &r->failure) < 0)
        return false;
    if (logprobs && !m->predicts_from_state)
        return fwm__rpc_fail(&r->failure, FWM_RPC_BAD_PARAMS,
                             "logprobs is not supported for this session: its model '%s' is of architecture '%s', "
                             "whose scores before a feed's first token the runtime cannot compute from the state "
                             "(only 'fwm' and 'lstm' models take logprobs)",
                             m->name, m->info.architecture);
    fwm__input in;
    if (!fwm__request_input(r, m, "feed", false, &in)) return false;
    size_t count = in.count, unknown_count = in.unknown_count;
    /* the response: its head, session, pos and fed (under 128 bytes), the unknown spans, and with
     * logprobs each token's id (at most 5 bytes) and log-probability (a float64, 9 bytes) */
    size_t bound = 128 + fwm__unknown_bound(unknown_count) + (logprobs ? 32 + count * 14 : 0);
    /* what the job holds until it ends: the log-probabilities and the spans */
    uint64_t held = (logprobs ? (uint64_t)count * sizeof(double) : 0) + (uint64_t)unknown_count * sizeof *in.unknown;
    fwm__job *job = NULL;
    size_t limit = r->s->config->max_output_bytes, fixed = 160 + fwm__unknown_bound(unknown_count);
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
    } else if (fwm__request_held_fits(r, held, "this feed holds until it ends (its logprobs and unknown spans; ",
                                      " or feed fewer tokens") &&
               fwm__request_not_overloaded(r, count)) {
        job = fwm__request_new_job(r, FWM_JOB_FEED);
    }
    if (job && logprobs && !(job->logprob = fwm__malloc((count ? count : 1) * sizeof *job->logprob))) {
        fwm__job_free(job);
        job = NULL;
        fwm__rpc_fail(&r->failure, FWM_RPC_INTERNAL, "out of memory");
    }
    if (job) job->notify = notify;
    return fwm__request_submit_input(r, e, job, &in, topk, bound, held);
}

bool fwm__method_ask(fwm__request *r) {
    fwm__session_entry *e = fwm__request_session(r);
    if (!e) return false;
    const fwm__served_model *m = &r->s->models[e->model_index];
    uint32_t topk;
    bool commit = false;
    const char *text;
    size_t length;
    if (!fwm__request_topk(r, m, e->default_topk, &topk) ||
        fwm__rpc_arg_bool(&r->call, "commit", false, &commit, &r->failure) < 0 ||
        fwm__rpc_arg_string(&r->call, "question", true, &text, &length, &r->failure) < 0)
        return false;
    fwm__input in;
    if (!fwm__request_tokenize(r, m, text, length, 2, &in)) return false; /* room: "?", answer */
    if (m->has_question && (in.count == 0 || in.tokens[in.count - 1] != m->question_token))
        in.tokens[in.count++] = m->question_token;
    size_t count = in.count, unknown_count = in.unknown_count;
    /* the reply: its answer and predictions, and the question's unknown spans, which the job holds */
    size_t bound =
        192 + m->max_word + (size_t)(topk ? topk : 1) * (m->max_word + 16) + fwm__unknown_bound(unknown_count);
    uint64_t held = (uint64_t)unknown_count * sizeof *in.unknown;
    fwm__job *job = NULL;
    if (count == 0) {
        fwm__rpc_fail(&r->failure, FWM_RPC_BAD_PARAMS, "argument 'question' has no words");
    } else if (bound > r->s->config->max_output_bytes) {
        fwm__rpc_fail(&r->failure, FWM_RPC_TOO_LARGE,
                      "the question has %zu words outside the vocabulary, whose spans may take a response of %zu "
                      "bytes, more than max-output-bytes %zu: ask a shorter question",
                      unknown_count, bound, r->s->config->max_output_bytes);
    } else if (fwm__request_held_fits(r, held, "of the question's unknown spans (", "") &&
               fwm__request_not_overloaded(r, count + 1)) {
        job = fwm__request_new_job(r, FWM_JOB_ASK);
    }
    if (job) job->commit = commit;
    /* the bound beyond the answer's (sessions/scheduler.c) */
    return fwm__request_submit_input(r, e, job, &in, topk, fwm__unknown_bound(unknown_count), held);
}

/* predict, reset, snapshot: a job on an existing session with at most a topk. */
static bool session_job(fwm__request *r, fwm__job_kind kind) {
    fwm__session_entry *e = fwm__request_session(r);
    if (!e) return false;
    uint32_t topk = 0;
    if (kind == FWM_JOB_PREDICT && !fwm__request_topk(r, &r->s->models[e->model_index], e->default_topk, &topk))
        return false;
    fwm__job *job = fwm__request_new_job(r, kind);
    if (!job) return false;
    job->topk = topk;
    fwm__request_submit(r, e, job);
    return true;
}

bool fwm__method_predict(fwm__request *r) { return session_job(r, FWM_JOB_PREDICT); }
/* trace: what each step of `text`/`tokens` writes and reads, on a copy of the session (docs/PROTOCOL.md). */
bool fwm__method_trace(fwm__request *r) {
    fwm__session_entry *e = fwm__request_session(r);
    if (!e) return false;
    const fwm__served_model *m = &r->s->models[e->model_index];
    if (strcmp(m->info.architecture, "fwm") != 0) /* only the FWM has a memory to trace */
        return fwm__rpc_fail(&r->failure, FWM_RPC_BAD_PARAMS,
                             "trace is not supported for this session: its model '%s' is of architecture '%s', "
                             "which has no fast-weight memory (only 'fwm' models can be traced)",
                             m->name, m->info.architecture);
    uint32_t topk;
    bool memory = false;
    if (!fwm__request_topk(r, m, e->default_topk, &topk) ||
        fwm__rpc_arg_bool(&r->call, "memory", false, &memory, &r->failure) < 0)
        return false;
    fwm__input in;
    if (!fwm__request_input(r, m, "trace", true, &in)) return false;
    size_t count = in.count;
    if (count > FWM_TRACE_MAX_TOKENS) {
        fwm__input_free(&in);
        return fwm__rpc_fail(&r->failure, FWM_RPC_TOO_LARGE, "trace takes at most %d tokens, %zu given",
                             FWM_TRACE_MAX_TOKENS, count);
    }
    const fwm_model_info *i = &m->info;
    size_t floats = (size_t)i->memory_s + i->memory_r + i->memory_t;
    size_t predictions = (size_t)topk * (m->max_word + 16);
    size_t per_step = 256 + m->max_word + predictions + 4 * floats + 16 +
                      i->read_count * (4 * floats + 64 + predictions);
    size_t bound = 512 + count * per_step + (memory ? 4 * (size_t)i->memory_s * i->memory_r * i->memory_t + 16 : 0) +
                   fwm__unknown_bound(in.unknown_count);
    if (bound > r->s->config->max_output_bytes) {
        fwm__input_free(&in);
        return fwm__rpc_fail(&r->failure, FWM_RPC_TOO_LARGE,
                             "this trace may take %zu bytes, more than max-output-bytes %zu: trace fewer tokens, "
                             "a smaller topk or without memory",
                             bound, r->s->config->max_output_bytes);
    }
    fwm__job *job = fwm__request_new_job(r, FWM_JOB_TRACE);
    if (job) job->trace_memory = memory;
    return fwm__request_submit_input(r, e, job, &in, topk, bound, 0);
}

bool fwm__method_reset(fwm__request *r) {
    bool prime = true;
    if (fwm__rpc_arg_bool(&r->call, "prime", false, &prime, &r->failure) < 0) return false;
    fwm__session_entry *e = fwm__request_session(r);
    if (!e) return false;
    fwm__job *job = fwm__request_new_job(r, FWM_JOB_RESET);
    if (!job) return false;
    job->prime = prime;
    fwm__request_submit(r, e, job);
    return true;
}
bool fwm__method_snapshot(fwm__request *r) { return session_job(r, FWM_JOB_SNAPSHOT); }

bool fwm__method_fork(fwm__request *r) {
    fwm__session_entry *parent = fwm__request_session(r);
    if (!parent || !fwm__request_room(r, parent->model_index, 0)) return false;
    fwm__job *job = fwm__request_new_job(r, FWM_JOB_FORK);
    if (!job) return false;
    job->child = fwm__request_new_entry(r, parent->model_index, parent->default_topk, false);
    if (!job->child) {
        fwm__job_free(job);
        return false;
    }
    fwm__request_reserve(r, job, r->s->models[parent->model_index].session_bytes);
    fwm__request_submit(r, parent, job);
    return true;
}

bool fwm__method_restore(fwm__request *r) {
    const void *blob;
    size_t size;
    uint32_t m, topk;
    if (fwm__rpc_arg_binary(&r->call, "state", true, &blob, &size, &r->failure) < 0 || !fwm__request_model(r, &m) ||
        !fwm__request_topk(r, &r->s->models[m], (uint32_t)r->s->config->default_topk, &topk) ||
        !fwm__request_room(r, m, size))
        return false;
    fwm__session_entry *e = fwm__request_new_entry(r, m, topk, true);
    if (!e) return false;
    fwm__job *job = fwm__request_new_job(r, FWM_JOB_RESTORE);
    if (job) job->blob = fwm__malloc(size ? size : 1);
    if (!job || !job->blob) {
        fwm__job_free(job);
        fwm__session_entry_free(e);
        return fwm__rpc_fail(&r->failure, FWM_RPC_INTERNAL, "out of memory");
    }
    memcpy(job->blob, blob, size);
    job->blob_size = size;
    fwm__request_reserve(r, job, r->s->models[m].session_bytes + size);
    fwm__request_submit(r, e, job);
    return true;
}

bool fwm__method_close(fwm__request *r) {
    fwm__session_entry *e = fwm__request_session(r);
    if (!e) return false;
    fwm__job *job = fwm__request_new_job(r, FWM_JOB_CLOSE);
    if (!job) return false;
    fwm__session_table_remove(&r->s->sessions, e); /* later requests find no such session */
    fwm__session_table_lru_remove(&r->s->sessions, e);
    if (r->c->sessions_held) r->c->sessions_held--;
    r->s->metrics.sessions_closed++;
    fwm__request_submit(r, e, job);
    return true;
}
