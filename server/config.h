/* config.h - fwm-serve's configuration: defaults, command-line flags, an optional config file, and
 * where the bundled model is looked for.
 *
 * Every setting has one flag (`--max-sessions N`) and the same name in a config file
 * (`max-sessions = N`, one per line, '#' comments); flags given after --config override the file.
 * Not for: acting on the settings (server.c).
 */
#ifndef FWM_SERVER_CONFIG_H
#define FWM_SERVER_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "rpc_scan.h"

#define FWM_DEFAULT_LISTEN "tcp://127.0.0.1:7411"
#define FWM_BUNDLED_MODEL_NAME "fwm-babi-lm.gguf"

typedef struct fwm__config {
    char **models;  /* owned paths; none: the bundled model */
    size_t model_count;
    char **listen;  /* owned addresses ("tcp://HOST:PORT", "unix:PATH"); none: FWM_DEFAULT_LISTEN */
    size_t listen_count;
    char *port_file; /* owned or NULL: write the bound addresses there, one per line, once listening */
    char *http;      /* owned or NULL: the HTTP/WebSocket port's address, tcp://HOST:PORT (net/http.c) */
    char *http_root; /* owned or NULL: static files served at / (default: the installed share/fwm/www) */
    size_t workers;           /* compute threads; 0: one per CPU */
    size_t max_batch;         /* sessions per batch step */
    size_t max_sessions;      /* resident sessions */
    /* opens/forks/restores minus closes on one connection; 0: a quarter of max_sessions */
    size_t max_sessions_per_connection;
    size_t max_connections;
    double idle_timeout_s;    /* close sessions idle this long; 0: never */
    double drain_timeout_s;   /* on shutdown, wait this long for in-flight work */
    size_t default_topk;      /* predictions per token when a request does not say */
    size_t max_feed_tokens;   /* tokens in one feed/ask */
    size_t max_queued_tokens; /* over all sessions; beyond: "overloaded" */
    size_t max_output_bytes;  /* per connection; beyond it, stop reading and stepping for it */
    size_t max_inflight;      /* unfinished requests per connection before it stops being read */
    double message_timeout_s; /* an incomplete message buffered this long closes its connection; 0: never */
    double connection_idle_timeout_s; /* nothing in flight, buffered or sent this long: close; 0: never */
    fwm__rpc_limits limits;   /* the pre-scanner's limits */
    unsigned unix_mode;       /* permissions of Unix-socket files (octal on the command line) */
    bool quiet;               /* no log lines on stderr */
    /* durable sessions (docs/DURABILITY.md) */
    char *data_dir;           /* owned or NULL: memory only. The store: a folder (LMDB) or a Redis location */
    char *advertise;          /* owned or NULL: cluster mode (Redis store), this node's address for clients */
    size_t lease_ttl_ms;      /* cluster: a node's lease lasts this long unless renewed */
    int fsync_mode;           /* fwm__fsync_mode */
    size_t fsync_interval_ms;
    size_t snapshot_tokens;   /* snapshot a session after this many logged tokens */
    size_t max_resident;      /* resident sessions before the least recently used are evicted; 0: no limit */
    size_t store_max_bytes;   /* the store's largest size (LMDB map); 0: 1 TiB */
    double session_ttl_s;     /* durable: delete stored sessions unused this long; 0: never */
    size_t max_memory_bytes;  /* sessions, buffers and weights together; 0: 80% of physical memory */
    char *auth_token_file;    /* owned or NULL: connections must present the token in this file */
    bool insecure;            /* allow a non-loopback --listen without a token */
    bool mmap_models;         /* map model files instead of reading them (they must then never change) */
} fwm__config;

void fwm__config_defaults(fwm__config *config);
void fwm__config_release(fwm__config *config);

/* Parse argv (after the defaults). Returns 0 to run, 1 on a bad argument (message on `err`), 2
 * when --help or --version was printed on `out` (exit 0). */
int fwm__config_parse(fwm__config *config, int argc, char **argv, FILE *out, FILE *err);

/* Where the bundled model is looked for, in order: $FWM_MODEL; <bindir>/../share/fwm/models/ (where
 * `meson install` puts it; FWM_MODELS_FROM_BINDIR) and <bindir>/, beside the running binary. No
 * source or build path is compiled in: a build-tree fwm-serve is given its model. Returns an owned
 * copy of the first existing path, or NULL with every path tried listed in `tried`. */
char *fwm__config_bundled_model(char *tried, size_t tried_size);

/* The static files' folder when --http-root is not given: <bindir>/../share/fwm/www (where `meson
 * install` puts www/), or NULL when it does not exist. Owned. */
char *fwm__config_default_www(void);

#endif
