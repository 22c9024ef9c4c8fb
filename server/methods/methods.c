/* methods.c - the table of protocol methods (name, handler, allowed arguments, whether it runs during
 * shutdown, whether it changes a session) and the dispatch of a request to its handler (methods.h),
 * with the checks every method shares and the error reply. The handlers are handlers.h's.
 * Message shapes are specified in docs/PROTOCOL.md; keep the two in step.
 */
#include "methods.h"

#include <string.h>

#include "fwm_alloc.h"
#include "fwm_utf8.h"
#include "handlers.h"
#include "tiering/lookup.h"

typedef struct method {
    const char *name;
    bool (*run)(fwm__request *r);
    const char *const *args; /* allowed argument names, NULL-terminated */
    bool during_shutdown;
    bool writes; /* changes a session: refused with `storage` while the store cannot write */
} method;

/* Answer the failure: with the request's msgid; with a nil msgid when the message is not a
 * notification but its msgid could not be read (so the client learns why nothing else came);
 * nothing for a notification. */
static void respond_error(fwm__request *r) {
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
    {"hello", fwm__method_hello, args_hello, true, false},
    {"open", fwm__method_open, args_open, false, true},
    {"feed", fwm__method_feed, args_feed, false, true},
    {"ask", fwm__method_ask, args_ask, false, true},
    {"predict", fwm__method_predict, args_predict, false, false},
    {"reset", fwm__method_reset, args_reset, false, true},
    {"fork", fwm__method_fork, args_session, false, true},
    {"snapshot", fwm__method_snapshot, args_session, false, false},
    {"trace", fwm__method_trace, args_trace, false, false},
    {"restore", fwm__method_restore, args_restore, false, true},
    {"close", fwm__method_close, args_session, false, false}, /* deleting frees space: allowed while writes fail */
    {"stats", fwm__method_stats, args_none, true, false},
    {"sessions", fwm__method_sessions, args_sessions, true, false},
};

/* Durable mode: whether the store takes writes; the refusal names why. */
static bool store_writable(fwm__request *r) {
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
    fwm__request r = {.c = c, .s = c->server, .start_ns = again ? c->parked_start_ns : fwm__now_ns()};
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
    else if (!c->authenticated && found->run != fwm__method_hello && (++r.s->metrics.auth_failures, true))
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
