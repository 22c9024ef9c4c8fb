/* server.h - the fwm-serve process: its loop, models, sessions, scheduler, listeners and lifecycle.
 *
 * One libuv loop thread owns everything here except what the scheduler guards; workers hand their
 * results back through `inbox` (mutex) and the `wake` async handle. Shutdown (SIGINT/SIGTERM):
 * stop accepting, refuse new requests, finish in-flight jobs (up to drain_timeout_s, then cancel),
 * flush and close every connection, stop the workers, close every handle so the loop ends with
 * none left.
 * Not for: per-connection I/O (net/connection.c), method semantics (methods/), parsing flags
 * (config.c). The core: every folder of server/ may include this header, and server.c includes them
 * all to tie them together (docs/ARCHITECTURE.md, "fwm-serve's folders").
 */
#ifndef FWM_SERVER_SERVER_H
#define FWM_SERVER_SERVER_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "config.h"
#include "fwm/fwm.h"
#include "sessions/journal.h"
#include "base/metrics.h"
#include "sessions/scheduler.h"
#include "sessions/session_table.h"
#include "store/store.h"

struct fwm__connection;
struct fwm__connection_handler;
struct fwm__http;
typedef struct fwm__cluster_node fwm__cluster_node;
struct fwm__lookups;

typedef struct fwm__served_model {
    fwm_model *model; /* owned */
    fwm_model_info info;
    char name[128];     /* general.name, else the file's base name; unique on this server */
    char path[512];
    char fingerprint[17]; /* hex */
    bool has_question;  /* the vocabulary has "?" */
    uint32_t question_token;
    size_t session_bytes; /* what one session of it accounts for */
    size_t max_word;      /* bytes of its longest vocabulary entry */
    bool has_unknown;     /* it reads words outside its vocabulary as <unk> (info.unknown_token_id) */
    bool predicts_from_state; /* fwm_session_predict works on its sessions: feed takes `logprobs` */
} fwm__served_model;

typedef struct fwm__listener {
    union {
        uv_handle_t handle;
        uv_stream_t stream;
        uv_tcp_t tcp;
        uv_pipe_t pipe;
    } h; /* first: the handle is the listener's address */
    struct fwm__server *server;
    char address[600]; /* as bound: tcp://127.0.0.1:PORT or unix:PATH */
    char unix_path[512]; /* unlinked on close, "" for TCP */
    bool open;
} fwm__listener;

typedef struct fwm__server {
    uv_loop_t loop;
    fwm__config *config;
    fwm__served_model *models;
    const fwm_model **model_handles; /* the scheduler's view */
    size_t model_count;
    size_t workers;

    fwm__session_table sessions;     /* resident sessions */
    size_t reserved_sessions; /* opens/forks/restores under way */
    fwm__scheduler *scheduler;
    fwm__metrics metrics;
    const char **model_names; /* the scheduler's view of the names */

    char *auth_token; /* owned or NULL: what connections must present (--auth-token-file) */
    size_t auth_token_length;

    /* durable mode (--data-dir): */
    fwm__store *store;
    fwm__journal *journal;
    size_t evicting;                         /* EVICT jobs under way */
    bool final_snapshots;                    /* shutdown: the last snapshots were asked for */
    uint8_t expire_cursor[FWM_SESSION_ID_BYTES]; /* --session-ttl: where the scan goes on */
    bool expire_started;
    fwm__cluster_node *cluster;              /* cluster mode (--advertise), or NULL */
    struct fwm__lookups *lookups;            /* a remote store's questions off the loop (lookup.h), or NULL */

    fwm__listener *listeners;
    size_t listener_count;
    int spare_fd;          /* /dev/null, held so a connection can be refused politely when out of fds */
    bool has_spare_fd;
    uint64_t fd_limit;     /* RLIMIT_NOFILE's soft limit after raising it */
    struct fwm__connection *connections; /* all open connections (doubly linked) */
    struct fwm__connection *dirty;       /* connections with output to hand to libuv */
    struct fwm__http *http;              /* the HTTP/WebSocket port (--http), or NULL */
    /* what net/ is given, so it knows nothing of methods or sessions: what the connections' messages
     * and output mean (methods, scheduler), and the /metrics page (stats/prometheus.c) */
    const struct fwm__connection_handler *connection_handler;
    char *(*render_metrics)(struct fwm__server *server, size_t headroom, size_t *length);

    uv_async_t wake;
    pthread_mutex_t inbox_mutex;
    fwm__outbox *inbox_head, *inbox_tail;
    uv_signal_t sigint, sigterm;
    uv_timer_t housekeeping;
    uv_timer_t lookup_timer; /* lookup.h: parked requests' deadlines (a remote store only) */
    /* a connection that cannot be given memory is accepted into this handle and closed at once (left
     * in the backlog, it would stop libuv from accepting any other); busy until its close callback */
    union {
        uv_handle_t handle;
        uv_stream_t stream;
        uv_tcp_t tcp;
        uv_pipe_t pipe;
    } reject;
    bool reject_busy;
    uv_stream_t *reject_waiting; /* a listener whose pending connection waits for `reject` */
    bool lookup_timer_open;
    bool handles_open;

    bool shutting_down, cancelled, finished;
    uint64_t shutdown_deadline_ns;
    int exit_status; /* what fwm__server_run returns after a clean stop (0, or FWM_EXIT_REPLACED) */
} fwm__server;

/* The exit status of a cluster node that stops because another fwm-serve now holds the lease of its
 * --advertise address (docs/CLUSTER.md): it was replaced while it could not renew (paused, cut off). */
#define FWM_EXIT_REPLACED 3

/* Load the models, bind the listeners, start the workers. Returns 0, or 1 after printing why on
 * stderr (the server is then released). */
int fwm__server_init(fwm__server *server, fwm__config *config);
/* Run until shut down; then release everything. Returns the process exit status. */
int fwm__server_run(fwm__server *server);

/* Begin graceful shutdown (idempotent; a second call cancels in-flight work). */
void fwm__server_shutdown(fwm__server *server);
/* Stop at once with exit status `status`: in-flight work is cancelled (answered `shutting_down`), no
 * last snapshots are written and the cluster is not left (the node no longer owns anything). */
void fwm__server_abandon(fwm__server *server, int status);

/* Hand gathered output of every dirty connection to libuv (call at the end of loop callbacks). */
void fwm__server_flush(fwm__server *server);

/* What the memory budget (--max-memory-bytes) counts: resident sessions, the connections' input
 * buffers and queued output, and the model weights. */
uint64_t fwm__server_memory_used(const fwm__server *server);
/* Whether `more` bytes fit in the budget. */
bool fwm__server_memory_fits(const fwm__server *server, uint64_t more);

/* Log a line on stderr unless quiet. */
void fwm__server_log(const fwm__server *server, const char *format, ...) __attribute__((format(printf, 2, 3)));

/* Whether `given` is the server's token (true when it has none); constant time in the given bytes. */
bool fwm__server_token_matches(const fwm__server *server, const char *given, size_t given_length);

/* For /health (net/http.c): tokens waiting to be stepped, and whether the store takes writes (`why`
 * names the problem when not; memory-only: always). */
uint64_t fwm__server_tokens_queued(fwm__server *server);
bool fwm__server_store_healthy(fwm__server *server, char *why, size_t why_size);

/* Index of the model named `name` (length bytes), or -1. */
long fwm__server_find_model(const fwm__server *server, const char *name, size_t length);

#endif
