/* server.c - startup, the worker -> loop hand-off, housekeeping and graceful shutdown (server.h). */
#include "server.h"

#include <errno.h>
#include <signal.h>
#include <sys/stat.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fwm_alloc.h"
#include "methods/methods.h"
#include "net/connection.h"
#include "net/http.h"
#include "net/listen.h"
#include "stats/prometheus.h"
#include "tiering/cluster_node.h"
#include "tiering/lookup.h"
#include "tiering/tiering.h"

#define HOUSEKEEPING_MS 1000
#define SHUTDOWN_POLL_MS 20

void fwm__server_log(const fwm__server *s, const char *format, ...) {
    if (s->config && s->config->quiet) return;
    va_list args;
    va_start(args, format);
    fputs("fwm-serve: ", stderr);
    vfprintf(stderr, format, args);
    fputc('\n', stderr);
    va_end(args);
}

uint64_t fwm__server_memory_used(const fwm__server *s) {
    uint64_t weights = 0;
    for (size_t m = 0; m < s->model_count; m++) weights += s->models[m].info.parameter_count * sizeof(float);
    return weights + s->metrics.session_memory_bytes + s->metrics.reserved_memory_bytes +
           s->metrics.input_buffer_bytes + s->metrics.output_queued_bytes;
}

bool fwm__server_memory_fits(const fwm__server *s, uint64_t more) {
    return fwm__server_memory_used(s) + more <= s->config->max_memory_bytes;
}

/* Whether the runtime computes the scores of a session's state for `model` (fwm_session_predict, asked
 * of a new session): the first token of a `feed` with logprobs needs them. */
static bool model_predicts_from_state(const fwm_model *model) {
    fwm_session *session = NULL;
    if (fwm_session_create(model, &session, NULL) != FWM_OK) return false;
    fwm_model_info info;
    fwm_model_get_info(model, &info);
    float *logits = fwm__malloc((info.vocab_size ? info.vocab_size : 1) * sizeof *logits);
    bool ok = logits && fwm_session_predict(session, logits, NULL) == FWM_OK;
    fwm__free(logits);
    fwm_session_free(session);
    return ok;
}

/* Whether a state blob of model m, sent back in a `restore` request that names the model, fits the
 * input limits (max-binary-bytes, max-message-bytes). */
static bool blob_restorable(const fwm__server *s, const fwm__served_model *m) {
    size_t blob = m->info.state_blob_bytes;
    /* [0, msgid, "restore", [{"state": bin, "model": name, "topk": n}]]: the blob, the name and at
     * most 64 bytes of headers, keys and integers */
    size_t message = blob + strlen(m->name) + 64;
    return blob <= s->config->limits.max_binary_bytes && message <= s->config->limits.max_message_bytes;
}

bool fwm__server_token_matches(const fwm__server *s, const char *given, size_t given_length) {
    /* Equal in time that depends on the secret's length only, not on where the first difference is. */
    const char *secret = s->auth_token;
    size_t secret_length = s->auth_token_length;
    if (!secret) return true;
    volatile unsigned char diff = given_length != secret_length;
    for (size_t i = 0; i < secret_length; i++) diff |= (unsigned char)(secret[i] ^ (i < given_length ? given[i] : 0));
    return diff == 0;
}

long fwm__server_find_model(const fwm__server *s, const char *name, size_t length) {
    for (size_t m = 0; m < s->model_count; m++)
        if (strlen(s->models[m].name) == length && memcmp(s->models[m].name, name, length) == 0) return (long)m;
    return -1;
}

/* ---- results from the workers ---- */

/* Worker thread: queue the outbox and wake the loop. */
static void post_outbox(void *user, fwm__outbox *outbox) {
    fwm__server *s = user;
    outbox->next = NULL;
    pthread_mutex_lock(&s->inbox_mutex);
    if (s->inbox_tail) s->inbox_tail->next = outbox;
    else s->inbox_head = outbox;
    s->inbox_tail = outbox;
    pthread_mutex_unlock(&s->inbox_mutex);
    uv_async_send(&s->wake);
}

/* Worker thread, durable mode: the outbox goes through the journal first. */
static void post_to_journal(void *user, fwm__outbox *outbox) {
    fwm__server *s = user;
    fwm__journal_submit(s->journal, outbox);
}

static fwm__connection *connection_of(fwm__sink *sink) {
    return (fwm__connection *)((char *)sink - offsetof(fwm__connection, sink));
}

/* A response that could not be made durable: the `storage` error instead of its bytes. */
static void refuse_unwritten(fwm__connection *c, const fwm__outbox *o, const fwm__outbox_record *r) {
    fwm__scheduler_delivered(c->server->scheduler, &c->sink, r->length); /* the bytes are dropped */
    if (!r->job_finished || !r->respond || c->closing) return;
    msgpack_packer pk;
    fwm__connection_packer(c, &pk);
    fwm__rpc_failure failure;
    if (o->fenced) { /* another node owns the session now (or nobody: then ask this one again) */
        const char *owner = o->moved_to[0] ? o->moved_to : c->server->config->advertise;
        fwm__rpc_fail(&failure, FWM_RPC_MOVED, "this node no longer owns the session; the node at %s serves it", owner);
        snprintf(failure.word, sizeof failure.word, "%s", owner);
        fwm__rpc_pack_error_response(&pk, r->msgid, &failure);
        return;
    }
    if (o->store_maybe_applied)
        fwm__rpc_fail(&failure, FWM_RPC_OUTCOME_UNKNOWN,
                      "the session store did not confirm this request, which it may still apply: read the session's "
                      "pos (predict) before sending it again: %s",
                      o->store_error);
    else
        fwm__rpc_fail(&failure, FWM_RPC_STORAGE,
                      "the session store could not record this request, so it was not applied: %s", o->store_error);
    fwm__rpc_pack_error_response(&pk, r->msgid, &failure);
}

static void deliver(fwm__server *s, fwm__outbox *o) {
    uint64_t now = fwm__now_ns();
    if (o->store_failed && o->fenced) fwm__cluster_node_fenced(s, o);
    else if (o->store_failed) fwm__tiering_write_failed(s, o);
    for (size_t i = 0; i < o->record_count; i++) {
        fwm__outbox_record *r = &o->records[i];
        if (r->insert) {
            fwm__session_entry *e = r->insert;
            r->insert = NULL;
            e->last_used_ms = now / 1000000u;
            if (o->store_failed) { /* a fork or restore that was not recorded did not happen */
                fwm__job *close = fwm__job_new(FWM_JOB_CLOSE); /* freed once no worker holds it */
                e->memory_bytes = 0; /* never counted */
                if (close) {
                    close->keep_stored = true;
                    fwm__scheduler_submit(s->scheduler, e, close);
                }
            } else if (fwm__session_table_insert(&s->sessions, e)) {
                s->metrics.sessions_opened++;
                s->metrics.session_memory_bytes += e->memory_bytes;
                fwm__session_table_lru_touch(&s->sessions, e);
                fwm__tiering_evict(s, false);
            } else { /* out of memory: let the scheduler free it once its worker lets go */
                fwm__job *close = fwm__job_new(FWM_JOB_CLOSE);
                if (close) {
                    close->keep_stored = true;
                    fwm__scheduler_submit(s->scheduler, e, close);
                }
            }
        }
        s->metrics.reserved_memory_bytes -= r->released_bytes; /* a feed's logprobs and unknown spans */
        if (r->unreserve) {
            s->reserved_sessions--;
            s->metrics.reserved_memory_bytes -= r->reserved_bytes;
            if (!o->store_failed && s->journal) fwm__journal_count_recorded_open(s->journal);
        }
        if (r->evicted) fwm__tiering_evicted(s, r->session_id, o->store_failed);
        if (r->loaded) fwm__tiering_loaded(s, r->session_id, r->load_failed, r->load_us);
        if (!r->sink) continue;
        fwm__connection *c = connection_of(r->sink);
        if ((r->unhold || (o->store_failed && r->unreserve)) && c->sessions_held) c->sessions_held--;
        if (o->store_failed) {
            refuse_unwritten(c, o, r);
            if (r->job_finished && r->respond) fwm__metrics_count_error(&s->metrics, FWM_RPC_STORAGE);
        } else {
            if (r->error_code) fwm__metrics_count_error(&s->metrics, r->error_code);
            if (r->length) fwm__connection_deliver(c, o->buffer.data + r->offset, r->length);
        }
        if (r->job_finished) {
            fwm__histogram_add(&s->metrics.request_latency, (now - r->enqueued_ns) / 1000);
            fwm__connection_job_finished(c); /* may free c */
        }
    }
    s->metrics.session_memory_bytes -= o->memory_freed;
}

static bool drain_inbox(fwm__server *s) {
    pthread_mutex_lock(&s->inbox_mutex);
    fwm__outbox *o = s->inbox_head;
    s->inbox_head = s->inbox_tail = NULL;
    pthread_mutex_unlock(&s->inbox_mutex);
    bool any = o != NULL;
    if (o && s->journal && fwm__journal_inline(s->journal))
        fwm__journal_write_inline(s->journal, o); /* recorded before anything of it is delivered */
    while (o) {
        fwm__outbox *next = o->next;
        deliver(s, o);
        fwm__outbox_free(o);
        o = next;
    }
    return any;
}

/* ---- what the connections' messages and output mean (net/connection.h) ---- */

static void on_connection_message(fwm__connection *c, const uint8_t *message, size_t length) {
    fwm__methods_dispatch(c, message, length);
}

static void on_connection_closing(fwm__connection *c) {
    fwm__lookup_forget(c);
}

static void on_connection_congested(fwm__connection *c, bool congested) {
    fwm__scheduler_set_congested(c->server->scheduler, &c->sink, congested);
}

static void on_connection_delivered(fwm__connection *c, size_t bytes) {
    fwm__scheduler_delivered(c->server->scheduler, &c->sink, bytes);
}

static const fwm__connection_handler connection_handler = {on_connection_message, on_connection_closing,
                                                           on_connection_congested, on_connection_delivered};

static const fwm__lookup_hooks lookup_hooks = {fwm__cluster_node_ask_claim, fwm__cluster_node_may_delete,
                                                fwm__tiering_expire_answered};

uint64_t fwm__server_tokens_queued(fwm__server *s) {
    fwm__scheduler_stats st;
    fwm__scheduler_get_stats(s->scheduler, &st);
    return st.tokens_queued;
}

bool fwm__server_store_healthy(fwm__server *s, char *why, size_t why_size) {
    return !s->journal || fwm__journal_healthy(s->journal, why, why_size);
}

void fwm__server_flush(fwm__server *s) {
    while (s->dirty) fwm__connection_flush(s->dirty); /* unlinks it */
}

static void check_shutdown(fwm__server *s);

static void on_wake(uv_async_t *handle) {
    fwm__server *s = handle->data;
    drain_inbox(s);
    fwm__cluster_node_poll(s);
    fwm__lookup_poll(s);
    fwm__server_flush(s);
    if (s->shutting_down) check_shutdown(s);
}

/* ---- housekeeping ---- */

typedef struct expire_walk {
    fwm__server *server;
    uint64_t now_ms, idle_ms;
} expire_walk;

static void expire_one(fwm__session_entry *e, void *user) {
    expire_walk *w = user;
    if (e->last_used_ms >= w->now_ms || w->now_ms - e->last_used_ms < w->idle_ms) return;
    if (fwm__scheduler_entry_busy(w->server->scheduler, e)) return;
    fwm__job *close = fwm__job_new(FWM_JOB_CLOSE);
    if (!close) return;
    fwm__session_table_remove(&w->server->sessions, e);
    fwm__session_table_lru_remove(&w->server->sessions, e);
    w->server->metrics.sessions_expired++;
    fwm__scheduler_submit(w->server->scheduler, e, close);
}

/* Close the connections past --message-timeout or --connection-idle-timeout: one log line per kind. */
static void expire_connections(fwm__server *s, uint64_t now) {
    unsigned count[3] = {0, 0, 0};
    for (fwm__connection *c = s->connections; c; c = c->next) count[fwm__connection_expire(c, now)]++;
    if (count[FWM_CONNECTION_MESSAGE_TIMEOUT])
        fwm__server_log(s, "closed %u connections: no complete message within message-timeout %gs",
                        count[FWM_CONNECTION_MESSAGE_TIMEOUT], s->config->message_timeout_s);
    if (count[FWM_CONNECTION_IDLE_TIMEOUT])
        fwm__server_log(s, "closed %u idle connections (connection-idle-timeout %gs)",
                        count[FWM_CONNECTION_IDLE_TIMEOUT],
                        s->config->connection_idle_timeout_s);
}

static void on_housekeeping(uv_timer_t *timer) {
    fwm__server *s = timer->data;
    uint64_t now = fwm__now_ns();
    fwm__scheduler_stats st;
    fwm__scheduler_get_stats(s->scheduler, &st);
    if (now - s->metrics.rate_ns >= 500000000u) {
        s->metrics.tokens_per_second =
            (double)(st.tokens - s->metrics.rate_tokens) * 1e9 / (double)(now - s->metrics.rate_ns);
        s->metrics.rate_tokens = st.tokens;
        s->metrics.rate_ns = now;
    }
    fwm__cluster_node_poll(s);
    if (s->store && !s->shutting_down) {
        fwm__tiering_evict(s, true); /* durable: idle sessions are written out, not lost */
        fwm__tiering_expire_stored(s);
    } else if (s->config->idle_timeout_s > 0 && !s->shutting_down) {
        expire_walk w = {s, now / 1000000u, (uint64_t)(s->config->idle_timeout_s * 1000.0)};
        fwm__session_table_each(&s->sessions, expire_one, &w);
    }
    if (!s->shutting_down) expire_connections(s, now);
    for (fwm__connection *c = s->connections; c; c = c->next)
        if (!c->closing && c->close_after_flush && c->close_deadline_ns && now > c->close_deadline_ns)
            fwm__connection_close(c);
    fwm__server_flush(s);
    if (s->shutting_down) check_shutdown(s);
}

/* ---- shutdown ---- */

static void on_signal(uv_signal_t *handle, int signum) {
    fwm__server *s = handle->data;
    fwm__server_log(s, "%s received", signum == SIGINT ? "SIGINT" : "SIGTERM");
    fwm__server_shutdown(s);
}

void fwm__server_shutdown(fwm__server *s) {
    if (s->finished) return;
    if (!s->shutting_down) {
        s->shutting_down = true;
        s->shutdown_deadline_ns = fwm__now_ns() + (uint64_t)(s->config->drain_timeout_s * 1e9);
        fwm__scheduler_stats st;
        fwm__scheduler_get_stats(s->scheduler, &st);
        fwm__server_log(s, "shutting down: %zu sessions, %llu connections, %llu requests in flight",
                        s->sessions.count, (unsigned long long)s->metrics.connections_open,
                        (unsigned long long)st.jobs_pending);
        fwm__listeners_close(s);
        uv_timer_start(&s->housekeeping, on_housekeeping, SHUTDOWN_POLL_MS, SHUTDOWN_POLL_MS);
    } else if (!s->cancelled) {
        fwm__server_log(s, "second signal: cancelling in-flight requests");
        s->cancelled = true;
        fwm__scheduler_cancel(s->scheduler);
    }
    check_shutdown(s);
}

void fwm__server_abandon(fwm__server *s, int status) {
    s->exit_status = status;
    if (!s->cancelled) {
        s->cancelled = true;
        fwm__scheduler_cancel(s->scheduler);
    }
    fwm__server_shutdown(s);
}

static void finish(fwm__server *s) {
    s->finished = true;
    drain_inbox(s); /* no jobs are left, so everything they posted is here */
    fwm__scheduler_stop(s->scheduler); /* joins the idle workers */
    s->scheduler = NULL;
    fwm__journal_stop(s->journal); /* writes what is queued and syncs */
    s->journal = NULL;
    drain_inbox(s);
    fwm__lookup_stop(s); /* before the cluster node: its lookups may wait on it */
    fwm__lookup_close_handles(s);
    if (!s->cancelled) fwm__cluster_node_leave(s); /* the last snapshots are written: let others take over */
    fwm__cluster_node_stop(s);
    fwm__http_close(s); /* lws closes its handles on the loop, then frees its context */
    uv_close((uv_handle_t *)&s->wake, NULL);
    uv_close((uv_handle_t *)&s->housekeeping, NULL);
    uv_close((uv_handle_t *)&s->sigint, NULL);
    uv_close((uv_handle_t *)&s->sigterm, NULL);
}

static void check_shutdown(fwm__server *s) {
    if (!s->shutting_down || s->finished) return;
    uint64_t now = fwm__now_ns();
    if (!s->cancelled && now > s->shutdown_deadline_ns) {
        fwm__server_log(s, "drain timeout: cancelling in-flight requests");
        s->cancelled = true;
        fwm__scheduler_cancel(s->scheduler);
    }
    fwm__scheduler_stats st;
    fwm__scheduler_get_stats(s->scheduler, &st);
    if (st.jobs_pending > 0 || (s->journal && !fwm__journal_idle(s->journal))) return;
    if (s->store && !s->final_snapshots && !s->cancelled) { /* snapshot every session before leaving */
        s->final_snapshots = true;
        fwm__tiering_snapshot_all(s);
        fwm__server_log(s, "writing the last snapshots of %zu resident sessions", s->sessions.count);
        return;
    }
    drain_inbox(s);
    fwm__server_flush(s);
    for (fwm__connection *c = s->connections; c; c = c->next) {
        if (c->closing) continue;
        if (fwm__connection_idle(c) || s->cancelled || (c->close_deadline_ns && now > c->close_deadline_ns)) {
            fwm__connection_close(c);
        } else if (!c->close_after_flush) { /* let the peer read what it asked for, briefly */
            c->close_after_flush = true;
            c->close_deadline_ns = now + 2000000000u;
        }
    }
    if (!s->connections) finish(s);
}

/* ---- startup ---- */

static bool name_taken(const fwm__server *s, size_t count, const char *name) {
    for (size_t i = 0; i < count; i++)
        if (strcmp(s->models[i].name, name) == 0) return true;
    return false;
}

/* general.name, else the file's base name; made unique among the first `count` models. */
static void model_name(fwm__served_model *m, const fwm__server *s, size_t count) {
    if (m->info.name && m->info.name[0]) {
        snprintf(m->name, sizeof m->name, "%s", m->info.name);
    } else {
        const char *base = strrchr(m->path, '/');
        base = base ? base + 1 : m->path;
        snprintf(m->name, sizeof m->name, "%.120s", base);
        char *dot = strrchr(m->name, '.');
        if (dot && strcmp(dot, ".gguf") == 0) *dot = '\0';
    }
    char unique[sizeof m->name];
    snprintf(unique, sizeof unique, "%s", m->name);
    for (unsigned n = 2; name_taken(s, count, unique); n++) snprintf(unique, sizeof unique, "%.100s-%u", m->name, n);
    snprintf(m->name, sizeof m->name, "%s", unique);
}

static int load_models(fwm__server *s) {
    fwm__config *cfg = s->config;
    if (cfg->model_count == 0) {
        char tried[2048];
        char *path = fwm__config_bundled_model(tried, sizeof tried);
        if (!path) {
            fprintf(stderr,
                    "fwm-serve: no MODEL given and the bundled model %s is missing (looked in: %s).\n"
                    "Pass a model file (fwm-serve PATH.gguf), set FWM_MODEL, install the bundled models "
                    "(meson install), or train one (docs/TRAINING.md).\n",
                    FWM_BUNDLED_MODEL_NAME, tried);
            return 1;
        }
        cfg->models = fwm__calloc(1, sizeof *cfg->models);
        if (!cfg->models) {
            fwm__free(path);
            return 1;
        }
        cfg->models[0] = path;
        cfg->model_count = 1;
    }
    s->models = fwm__calloc(cfg->model_count, sizeof *s->models);
    s->model_handles = fwm__calloc(cfg->model_count, sizeof *s->model_handles);
    s->model_names = fwm__calloc(cfg->model_count, sizeof *s->model_names);
    if (!s->models || !s->model_handles || !s->model_names) return 1;
    for (size_t i = 0; i < cfg->model_count; i++) {
        fwm__served_model *m = &s->models[i];
        fwm_error err;
        snprintf(m->path, sizeof m->path, "%s", cfg->models[i]);
        /* Read into memory by default: a model file truncated or rewritten while serving can then
         * neither crash the server (SIGBUS) nor change its answers behind its fingerprint. */
        fwm_model_params params = fwm_model_default_params();
        params.use_mmap = cfg->mmap_models;
        if (fwm_model_load(cfg->models[i], &params, &m->model, &err) != FWM_OK) {
            fprintf(stderr, "fwm-serve: cannot load model '%s': %s\n", cfg->models[i], err.message);
            return 1;
        }
        s->model_count = i + 1;
        s->model_handles[i] = m->model;
        fwm_model_get_info(m->model, &m->info);
        model_name(m, s, i);
        s->model_names[i] = m->name;
        snprintf(m->fingerprint, sizeof m->fingerprint, "%016llx", (unsigned long long)m->info.fingerprint);
        m->has_question = fwm_model_token_id(m->model, "?", 1, &m->question_token) == FWM_OK;
        m->session_bytes =
            m->info.session_state_bytes + m->info.vocab_size * sizeof(float) + sizeof(fwm__session_entry);
        m->has_unknown = m->info.unknown_token_id != FWM_NO_TOKEN;
        m->predicts_from_state = model_predicts_from_state(m->model);
        m->max_word = 0;
        for (uint32_t t = 0; t < m->info.vocab_size; t++) {
            size_t length = strlen(fwm_model_token_text(m->model, t));
            if (length > m->max_word) m->max_word = length;
        }
        fwm__server_log(s, "model '%s' from %s: %s, V=%u H=%u L=%u S,R,T=%u,%u,%u, %zu bytes per session", m->name,
                        m->path, m->info.architecture, m->info.vocab_size, m->info.hidden_size, m->info.layer_count,
                        m->info.memory_s, m->info.memory_r, m->info.memory_t, m->session_bytes);
        if (!blob_restorable(s, m))
            fwm__server_log(s, "warning: model '%s': its state blob of %zu bytes does not fit a restore request "
                            "(max-binary-bytes %zu, max-message-bytes %zu): its snapshots can be restored only by "
                            "a server with larger limits", m->name, m->info.state_blob_bytes,
                            cfg->limits.max_binary_bytes, cfg->limits.max_message_bytes);
    }
    return 0;
}

/* --auth-token-file: the token is the file's first line (at least 16 bytes). */
static int load_token(fwm__server *s) {
    const char *path = s->config->auth_token_file;
    if (!path) return 0;
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "fwm-serve: cannot read the token file %s: %s\n", path, strerror(errno));
        return 1;
    }
    char line[1024];
    size_t n = fgets(line, sizeof line, f) ? strcspn(line, "\r\n") : 0;
    struct stat st;
    bool shared = fstat(fileno(f), &st) == 0 && (st.st_mode & 077);
    fclose(f);
    if (n < 16) {
        fprintf(stderr, "fwm-serve: the token in %s is %zu bytes long; it must have at least 16 (e.g. "
                        "head -c 24 /dev/urandom | base64 > %s)\n", path, n, path);
        return 1;
    }
    if (shared) fwm__server_log(s, "WARNING: the token file %s can be read by other users (chmod 600 it)", path);
    if (!(s->auth_token = fwm__malloc(n + 1))) return 1;
    memcpy(s->auth_token, line, n);
    s->auth_token[n] = '\0';
    s->auth_token_length = n;
    return 0;
}

/* Durable mode: open the store (refusing a damaged, foreign or busy one) and start the journal. */
static int open_store(fwm__server *s) {
    const fwm__config *cfg = s->config;
    if (!cfg->data_dir) return 0;
    fwm__store_options options = {.map_bytes = cfg->store_max_bytes,
                                  .durable_writes = cfg->fsync_mode == FWM_FSYNC_ALWAYS};
    fwm__store_error error = {0};
    fwm__store_status status = fwm__store_open(cfg->data_dir, &options, &s->store, &error);
    if (status != FWM_STORE_OK) {
        fprintf(stderr, "fwm-serve: cannot open the session store: %s\n", error.message);
        return 1;
    }
    fwm__journal_params jp = {.store = s->store, .mode = (fwm__fsync_mode)cfg->fsync_mode,
                              .interval_ms = cfg->fsync_interval_ms, .post = post_outbox, .user = s,
                              .remote_store = s->store->backend == &fwm__store_redis};
    if (!(s->journal = fwm__journal_start(&jp))) {
        fprintf(stderr, "fwm-serve: cannot start the journal thread\n");
        return 1;
    }
    fwm__store_info info;
    if (s->store->backend->info(s->store, &info, &error) != FWM_STORE_OK) {
        fprintf(stderr, "fwm-serve: cannot read the session store: %s\n", error.message);
        return 1;
    }
    fwm__server_log(s, "durable sessions in %s: %llu stored, %.1f MB %s, fsync %s, at most %zu resident",
                    cfg->data_dir, (unsigned long long)info.sessions, (double)info.file_bytes / 1e6,
                    s->store->backend == &fwm__store_redis ? "in Redis' append-only file" : "on disk",
                    fwm__fsync_mode_name((fwm__fsync_mode)cfg->fsync_mode), cfg->max_resident);
    return 0;
}

static void release(fwm__server *s) {
    fwm__lookup_stop(s);
    fwm__cluster_node_stop(s);
    fwm__scheduler_stop(s->scheduler);
    s->scheduler = NULL;
    fwm__journal_stop(s->journal);
    s->journal = NULL;
    while (s->inbox_head) {
        fwm__outbox *next = s->inbox_head->next;
        fwm__outbox_free(s->inbox_head);
        s->inbox_head = next;
    }
    if (s->sessions.buckets) {
        for (size_t b = 0; b < s->sessions.bucket_count; b++) {
            fwm__session_entry *e = s->sessions.buckets[b];
            while (e) {
                fwm__session_entry *next = e->bucket_next;
                fwm__session_entry_free(e);
                e = next;
            }
        }
        fwm__session_table_release(&s->sessions);
    }
    for (size_t m = 0; m < s->model_count; m++) fwm_model_free(s->models[m].model);
    fwm__free(s->models);
    fwm__free(s->model_handles);
    fwm__free(s->model_names);
    fwm__free(s->auth_token);
    fwm__store_close(s->store);
    s->store = NULL;
    fwm__free(s->listeners);
    fwm__http_release(s);
    pthread_mutex_destroy(&s->inbox_mutex);
}

/* Close whatever handles init opened before failing, and let the loop finish. */
static void abort_init(fwm__server *s) {
    if (s->handles_open) {
        fwm__lookup_stop(s);
        fwm__lookup_close_handles(s);
        fwm__listeners_close(s);
        fwm__http_close(s);
        uv_close((uv_handle_t *)&s->wake, NULL);
        uv_close((uv_handle_t *)&s->housekeeping, NULL);
        uv_close((uv_handle_t *)&s->sigint, NULL);
        uv_close((uv_handle_t *)&s->sigterm, NULL);
        uv_run(&s->loop, UV_RUN_DEFAULT);
    }
    release(s);
    uv_loop_close(&s->loop);
}

int fwm__server_init(fwm__server *s, fwm__config *config) {
    memset(s, 0, sizeof *s);
    s->config = config;
    s->metrics.start_ns = s->metrics.rate_ns = fwm__now_ns();
    pthread_mutex_init(&s->inbox_mutex, NULL);
    if (uv_loop_init(&s->loop) != 0) {
        fprintf(stderr, "fwm-serve: cannot create the event loop\n");
        pthread_mutex_destroy(&s->inbox_mutex);
        return 1;
    }
    if (load_token(s) != 0 || load_models(s) != 0 || !fwm__session_table_init(&s->sessions) || open_store(s) != 0)
        goto fail;
    if (config->advertise && !s->store) {
        fprintf(stderr, "fwm-serve: --advertise (cluster mode) needs a Redis store: --store redis://HOST:PORT\n");
        goto fail;
    }
    if (!config->max_sessions_per_connection) { /* a quarter of max-sessions, but never below 1,000 */
        size_t floor = config->max_sessions < 1000 ? config->max_sessions : 1000;
        config->max_sessions_per_connection = config->max_sessions / 4 > floor ? config->max_sessions / 4 : floor;
    }
    if (!config->max_memory_bytes) { /* 80% of physical memory */
        long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
        config->max_memory_bytes = pages > 0 && page > 0 ? (size_t)((double)pages * (double)page * 0.8) : SIZE_MAX;
    }
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    s->workers = config->workers ? config->workers : (cpus > 0 ? (size_t)cpus : 1);
    fwm__scheduler_params sp = {
        .models = s->model_handles, .model_names = s->model_names, .model_count = s->model_count,
        .store = s->store, .snapshot_tokens = config->snapshot_tokens, .workers = s->workers,
        .max_batch = config->max_batch, .max_unsent = config->max_output_bytes, .advertise = config->advertise,
        .post = s->store && !fwm__journal_inline(s->journal) ? post_to_journal : post_outbox, .user = s};
    if (!(s->scheduler = fwm__scheduler_start(&sp))) {
        fprintf(stderr, "fwm-serve: cannot start %zu worker threads\n", s->workers);
        goto fail;
    }
    uv_async_init(&s->loop, &s->wake, on_wake);
    uv_timer_init(&s->loop, &s->housekeeping);
    uv_signal_init(&s->loop, &s->sigint);
    uv_signal_init(&s->loop, &s->sigterm);
    s->wake.data = s->housekeeping.data = s->sigint.data = s->sigterm.data = s;
    s->handles_open = true;
    if (fwm__lookup_start(s, &lookup_hooks) != 0) goto fail;
    s->connection_handler = &connection_handler;
    s->render_metrics = fwm__prometheus_render;
    if (fwm__listeners_open(s) != 0) goto fail;
    if (config->http && fwm__http_open(s) != 0) goto fail;
    if (config->port_file &&
        fwm__listeners_write_port_file(s, s->http ? fwm__http_address(s->http) : NULL) != 0)
        goto fail;
    if (fwm__cluster_node_start(s) != 0) goto fail;
    uv_signal_start(&s->sigint, on_signal, SIGINT);
    uv_signal_start(&s->sigterm, on_signal, SIGTERM);
    uv_timer_start(&s->housekeeping, on_housekeeping, HOUSEKEEPING_MS, HOUSEKEEPING_MS);
    fwm__server_log(s, "%zu workers, max batch %zu, max sessions %zu, idle timeout %gs", s->workers,
                    config->max_batch, config->max_sessions, config->idle_timeout_s);
    return 0;
fail:
    abort_init(s);
    return 1;
}

static void report_handle(uv_handle_t *handle, void *arg) {
    (void)arg;
    fprintf(stderr, "fwm-serve: handle left open at exit: %s\n", uv_handle_type_name(handle->type));
}

int fwm__server_run(fwm__server *s) {
    uv_run(&s->loop, UV_RUN_DEFAULT);
    fwm__scheduler_stats st = {0};
    if (s->scheduler) fwm__scheduler_get_stats(s->scheduler, &st);
    uint64_t opened = s->metrics.sessions_opened;
    release(s);
    int rc = uv_loop_close(&s->loop);
    if (rc != 0) {
        uv_walk(&s->loop, report_handle, NULL);
        fprintf(stderr, "fwm-serve: the event loop did not close cleanly: %s\n", uv_strerror(rc));
        return 1;
    }
    if (s->exit_status) {
        fwm__server_log(s, "stopped (%llu sessions served), exit status %d", (unsigned long long)opened,
                        s->exit_status);
        return s->exit_status;
    }
    fwm__server_log(s, "stopped cleanly (%llu sessions served)", (unsigned long long)opened);
    return 0;
}
