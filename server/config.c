/* config.c - flags, config file, --help, and the bundled model's location (config.h). */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fwm/fwm.h"
#include "fwm/fwm_protocol.h"
#include "fwm_alloc.h"
#include "store/store.h"

/* Where `meson install` puts the bundled models, relative to the folder of the installed fwm-serve
 * (server/meson.build computes it from the bindir and datadir options). */
#ifndef FWM_MODELS_FROM_BINDIR
#define FWM_MODELS_FROM_BINDIR "../share/fwm/models"
#endif
#ifndef FWM_WWW_FROM_BINDIR
#define FWM_WWW_FROM_BINDIR "../share/fwm/www"
#endif

typedef enum { OPT_SIZE, OPT_SECONDS, OPT_FLAG, OPT_MODE } option_type; /* OPT_MODE: octal permissions */

/* The numeric settings: flag name (also the config-file key), type, field, range, help. */
typedef struct option_spec {
    const char *name;
    option_type type;
    size_t offset;
    double min, max;
    const char *help;
} option_spec;

#define F(field) offsetof(fwm__config, field)
static const option_spec options[] = {
    {"workers", OPT_SIZE, F(workers), 0, 256, "compute threads (0: one per CPU)"},
    {"max-batch", OPT_SIZE, F(max_batch), 1, 65536, "sessions stepped together in one batch"},
    {"max-sessions", OPT_SIZE, F(max_sessions), 1, 1e8, "resident sessions; beyond: error session_limit"},
    {"max-sessions-per-connection", OPT_SIZE, F(max_sessions_per_connection), 0, 1e8,
     "sessions one connection may create (opens, forks, restores minus its closes; 0: a quarter of "
     "max-sessions, at least 1000)"},
    {"max-connections", OPT_SIZE, F(max_connections), 1, 1e6, "open connections; beyond: refused"},
    {"idle-timeout", OPT_SECONDS, F(idle_timeout_s), 0, 1e9, "seconds before an idle session is closed (0: never)"},
    {"drain-timeout", OPT_SECONDS, F(drain_timeout_s), 0, 3600, "seconds to finish in-flight work on shutdown"},
    {"default-topk", OPT_SIZE, F(default_topk), 0, 1e6, "predictions per token when a request gives no topk"},
    {"max-feed-tokens", OPT_SIZE, F(max_feed_tokens), 1, 1e8, "tokens in one feed or ask; beyond: too_large"},
    {"max-queued-tokens", OPT_SIZE, F(max_queued_tokens), 1, 1e10,
     "tokens waiting over all sessions; beyond: overloaded"},
    {"max-output-bytes", OPT_SIZE, F(max_output_bytes), 1024, 1e10, "unsent bytes per connection before backpressure"},
    {"max-inflight", OPT_SIZE, F(max_inflight), 1, 1e7, "unfinished requests per connection before reading pauses"},
    {"message-timeout", OPT_SECONDS, F(message_timeout_s), 0, 1e9,
     "seconds an incomplete message may take; beyond: closed (0: never)"},
    {"connection-idle-timeout", OPT_SECONDS, F(connection_idle_timeout_s), 0, 1e9,
     "seconds a connection with nothing in flight may stay (0: never)"},
    {"max-message-bytes", OPT_SIZE, F(limits.max_message_bytes), 64, 1e9, "largest incoming message"},
    {"max-depth", OPT_SIZE, F(limits.max_depth), 2, FWM_RPC_MAX_DEPTH_CAP, "deepest nesting of arrays/maps"},
    {"max-string-bytes", OPT_SIZE, F(limits.max_string_bytes), 1, 1e9, "longest string"},
    {"max-binary-bytes", OPT_SIZE, F(limits.max_binary_bytes), 1, 1e9, "longest binary (state blobs)"},
    {"max-objects", OPT_SIZE, F(limits.max_objects), 4, 1e9, "objects in one message"},
    {"unix-mode", OPT_MODE, F(unix_mode), 0, 0777, "unix: socket file permissions, octal"},
    {"quiet", OPT_FLAG, F(quiet), 0, 1, "no log lines on stderr"},
    {"mmap-models", OPT_FLAG, F(mmap_models), 0, 1,
     "map model files instead of copying them (they must then never change: replace with rename)"},
    {"insecure", OPT_FLAG, F(insecure), 0, 1, "allow a non-loopback --listen without --auth-token-file"},
    {"fsync-interval-ms", OPT_SIZE, F(fsync_interval_ms), 1, 60000, "--fsync interval: milliseconds between fsyncs"},
    {"snapshot-tokens", OPT_SIZE, F(snapshot_tokens), 1, 1e9,
     "durable: snapshot a session after this many logged tokens"},
    {"max-resident", OPT_SIZE, F(max_resident), 0, 1e8,
     "durable: resident sessions before the least recently used are written out (0: no limit)"},
    {"max-memory-bytes", OPT_SIZE, F(max_memory_bytes), 0, 1e15,
     "memory budget for sessions, buffers and weights (0: 80% of RAM)"},
    {"session-ttl", OPT_SECONDS, F(session_ttl_s), 0, 1e10,
     "durable: delete stored sessions unused this long (0: never)"},
    {"store-max-bytes", OPT_SIZE, F(store_max_bytes), 0, 1e15, "durable: the largest the store may grow (0: 1 TiB)"},
    {"lease-ttl-ms", OPT_SIZE, F(lease_ttl_ms), 300, 600000,
     "cluster: a node's lease lasts this long unless renewed (renewed every third of it)"},
};
#undef F
#define OPTION_COUNT (sizeof options / sizeof options[0])

void fwm__config_defaults(fwm__config *config) {
    memset(config, 0, sizeof *config);
    config->workers = 0;
    config->max_batch = 64;
    config->max_sessions = 20000;
    config->max_connections = 4096;
    config->idle_timeout_s = 3600;
    config->drain_timeout_s = 10;
    config->default_topk = 5;
    config->max_feed_tokens = 65536;
    config->max_queued_tokens = 1u << 22;
    config->max_output_bytes = 1u << 20;
    config->max_inflight = 1024;
    config->message_timeout_s = 30;
    config->connection_idle_timeout_s = 600;
    config->limits = fwm__rpc_default_limits();
    config->fsync_mode = 1; /* FWM_FSYNC_INTERVAL */
    config->fsync_interval_ms = 100;
    config->snapshot_tokens = 1024;
    config->max_resident = 10000;
    config->lease_ttl_ms = 5000;
    config->unix_mode = 0660;
}

static void free_list(char **list, size_t count) {
    for (size_t i = 0; i < count; i++) fwm__free(list[i]);
    fwm__free(list);
}

void fwm__config_release(fwm__config *config) {
    free_list(config->models, config->model_count);
    free_list(config->listen, config->listen_count);
    fwm__free(config->port_file);
    fwm__free(config->http);
    fwm__free(config->http_root);
    fwm__free(config->data_dir);
    fwm__free(config->advertise);
    fwm__free(config->auth_token_file);
    memset(config, 0, sizeof *config);
}

static char *copy_string(const char *text) {
    size_t n = strlen(text) + 1;
    char *copy = fwm__malloc(n);
    if (copy) memcpy(copy, text, n);
    return copy;
}

static bool push(char ***list, size_t *count, const char *value) {
    char **grown = fwm__realloc(*list, (*count + 1) * sizeof *grown);
    if (!grown) return false;
    *list = grown;
    if (!(grown[*count] = copy_string(value))) return false;
    (*count)++;
    return true;
}

static void print_help(FILE *out) {
    fprintf(out,
            "usage: fwm-serve [MODEL ...] [--listen ADDRESS ...] [options]\n"
            "\n"
            "Serve Fast Weight Memory language models over msgpack-RPC (docs/PROTOCOL.md): many\n"
            "resident sessions, token-by-token predictions, closed-book question answering.\n"
            "With no MODEL, serves the bundled model (" FWM_BUNDLED_MODEL_NAME "), looked for in\n"
            "$FWM_MODEL, then <bindir>/" FWM_MODELS_FROM_BINDIR "/ and next to the binary.\n"
            "The first MODEL is the default for requests that name none.\n"
            "\n"
            "  --listen ADDRESS      tcp://HOST:PORT or unix:PATH; repeatable (default " FWM_DEFAULT_LISTEN ").\n"
            "                        Loopback only unless you name another address; port 0 picks a free port\n"
            "  --port-file PATH      once listening, write the bound addresses there, one per line\n"
            "  --config FILE         read settings from FILE: `name = value` lines (names as below, without\n"
            "                        the dashes; `model = PATH` and `listen = ADDRESS` repeat); '#' comments\n"
            "  --http ADDRESS        also serve HTTP on tcp://HOST:PORT: GET /metrics (Prometheus), /health,\n"
            "                        /v1/models, static files, and msgpack-RPC over WebSocket at /rpc; the same\n"
            "                        loopback and token rules as --listen (token: Authorization: Bearer)\n"
            "  --http-root DIR       static files for the HTTP port (default: <bindir>/" FWM_WWW_FROM_BINDIR ")\n"
            "  --auth-token-file F   connections must present the token in F (hello {token}) before anything\n"
            "                        else; without it only loopback addresses are served (or --insecure)\n"
            "  --data-dir DIR        durable sessions: keep every session in an LMDB store in DIR, so they\n"
            "                        survive restarts and crashes and outnumber what RAM holds (default: memory only)\n"
            "  --store LOCATION      durable sessions in a folder (as --data-dir), or in Redis: "
            "redis://HOST:PORT[/DB]\n"
            "                        or unix:/PATH[?db=N] (several nodes may share one: docs/CLUSTER.md)\n"
            "  --advertise ADDRESS   cluster mode (Redis store): this node's address for clients (tcp://HOST:PORT or\n"
            "                        unix:PATH); sessions then have one owner at a time, others answer `moved`\n"
            "  --fsync MODE          durable: always (a response leaves after its records are on disk),\n"
            "                        interval (default: on disk within --fsync-interval-ms), never (the OS decides)\n");
    fwm__config defaults;
    fwm__config_defaults(&defaults);
    for (size_t i = 0; i < OPTION_COUNT; i++) {
        const option_spec *o = &options[i];
        const char *field = (const char *)&defaults + o->offset;
        char flag[64], def[64] = "";
        snprintf(flag, sizeof flag, "--%s%s", o->name,
                 o->type == OPT_FLAG ? "" : o->type == OPT_SECONDS ? " S" : o->type == OPT_MODE ? " MODE" : " N");
        if (o->type == OPT_SIZE) snprintf(def, sizeof def, " (default %zu)", *(const size_t *)field);
        if (o->type == OPT_SECONDS) snprintf(def, sizeof def, " (default %g)", *(const double *)field);
        if (o->type == OPT_MODE) snprintf(def, sizeof def, " (default %04o)", *(const unsigned *)field);
        if (strlen(flag) > 21) fprintf(out, "  %s\n  %-21s %s%s\n", flag, "", o->help, def); /* long flag */
        else fprintf(out, "  %-21s %s%s\n", flag, o->help, def);
    }
    fprintf(out,
            "  --version             print the version\n"
            "  --help                this text\n"
            "\n"
            "SIGINT/SIGTERM: stop accepting, finish in-flight requests (up to --drain-timeout), close.\n"
            "A second signal cancels what is left.\n");
}

/* An octal permission mode such as 0660 (the leading 0 optional). */
static int set_mode(unsigned *field, const char *name, const char *value, double max, FILE *err, const char *where) {
    errno = 0;
    char *end = NULL;
    unsigned long v = strtoul(value, &end, 8);
    if (errno || end == value || *end != '\0' || value[0] == '-' || v > (unsigned long)max) {
        fprintf(err, "fwm-serve: %s--%s: expected octal permissions between 0 and %04o (e.g. 0660), found '%s'\n",
                where, name, (unsigned)max, value);
        return 1;
    }
    *field = (unsigned)v;
    return 0;
}

static int set_option(fwm__config *config, const char *name, const char *value, FILE *err,
                      const char *where) {
    if (strcmp(name, "listen") == 0) return push(&config->listen, &config->listen_count, value) ? 0 : 1;
    if (strcmp(name, "model") == 0) return push(&config->models, &config->model_count, value) ? 0 : 1;
    if (strcmp(name, "port-file") == 0) {
        fwm__free(config->port_file);
        return (config->port_file = copy_string(value)) ? 0 : 1;
    }
    if (strcmp(name, "http") == 0 || strcmp(name, "http-root") == 0) {
        char **field = name[4] ? &config->http_root : &config->http;
        fwm__free(*field);
        *field = NULL;
        if (!value || !*value) {
            fprintf(err, "fwm-serve: %s--%s needs %s\n", where, name,
                    name[4] ? "a folder" : "an address (tcp://HOST:PORT)");
            return 1;
        }
        return (*field = copy_string(value)) ? 0 : 1;
    }
    if (strcmp(name, "data-dir") == 0 || strcmp(name, "store") == 0) {
        bool folder = strcmp(name, "data-dir") == 0;
        fwm__free(config->data_dir);
        config->data_dir = NULL;
        if (!value || !*value) {
            fprintf(err, "fwm-serve: %s--%s needs %s\n", where, name,
                    folder ? "a folder" : "a folder, redis://HOST:PORT[/DB] or unix:/PATH[?db=N]");
            return 1;
        }
        if (folder && fwm__store_is_redis(value)) {
            fprintf(err, "fwm-serve: %s--data-dir takes a folder; for Redis use --store %s\n", where, value);
            return 1;
        }
        return (config->data_dir = copy_string(value)) ? 0 : 1;
    }
    if (strcmp(name, "advertise") == 0) {
        fwm__free(config->advertise);
        config->advertise = NULL;
        if (!value || (strncmp(value, "tcp://", 6) != 0 && strncmp(value, "unix:", 5) != 0) || strchr(value, '|') ||
            strlen(value) > 200) {
            fprintf(err,
                    "fwm-serve: %s--advertise: expected tcp://HOST:PORT or unix:PATH (at most 200 bytes), "
                    "found '%s'\n",
                    where, value ? value : "");
            return 1;
        }
        return (config->advertise = copy_string(value)) ? 0 : 1;
    }
    if (strcmp(name, "auth-token-file") == 0) {
        fwm__free(config->auth_token_file);
        config->auth_token_file = NULL;
        if (!value || !*value) {
            fprintf(err, "fwm-serve: %s--auth-token-file needs a file\n", where);
            return 1;
        }
        return (config->auth_token_file = copy_string(value)) ? 0 : 1;
    }
    if (strcmp(name, "fsync") == 0) {
        static const char *const modes[] = {"always", "interval", "never"};
        for (int m = 0; m < 3; m++)
            if (value && strcmp(value, modes[m]) == 0) {
                config->fsync_mode = m;
                return 0;
            }
        fprintf(err, "fwm-serve: %s--fsync: expected always, interval or never, found '%s'\n", where,
                value ? value : "");
        return 1;
    }
    for (size_t i = 0; i < OPTION_COUNT; i++) {
        const option_spec *o = &options[i];
        if (strcmp(name, o->name) != 0) continue;
        char *field = (char *)config + o->offset;
        if (o->type == OPT_FLAG) {
            bool on = !value || strcmp(value, "true") == 0 || strcmp(value, "1") == 0 || strcmp(value, "yes") == 0;
            if (value && !on && strcmp(value, "false") != 0 && strcmp(value, "0") != 0 && strcmp(value, "no") != 0) {
                fprintf(err, "fwm-serve: %s%s: '%s' expects true or false, found '%s'\n", where, name, name, value);
                return 1;
            }
            *(bool *)field = on;
            return 0;
        }
        if (!value) {
            fprintf(err, "fwm-serve: %s--%s needs a value\n", where, name);
            return 1;
        }
        if (o->type == OPT_MODE) return set_mode((unsigned *)field, name, value, o->max, err, where);
        errno = 0;
        char *end = NULL;
        double v = strtod(value, &end);
        bool integral = o->type == OPT_SIZE && v != (double)(unsigned long long)v;
        if (errno || end == value || *end != '\0' || v < o->min || v > o->max || integral) {
            fprintf(err, "fwm-serve: %s--%s: expected %s between %g and %g, found '%s'\n", where, name,
                    o->type == OPT_SIZE ? "an integer" : "a number of seconds", o->min, o->max, value);
            return 1;
        }
        if (o->type == OPT_SIZE) *(size_t *)field = (size_t)v;
        else *(double *)field = v;
        return 0;
    }
    fprintf(err, "fwm-serve: %sunknown setting '%s' (see --help)\n", where, name);
    return 1;
}

static bool is_flag_option(const char *name) {
    for (size_t i = 0; i < OPTION_COUNT; i++)
        if (strcmp(options[i].name, name) == 0) return options[i].type == OPT_FLAG;
    return false;
}

static char *trim(char *s) {
    while (*s == ' ' || *s == '\t') s++;
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r')) s[--n] = '\0';
    return s;
}

static int read_file(fwm__config *config, const char *path, FILE *err) {
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(err, "fwm-serve: cannot open config file '%s': %s\n", path, strerror(errno));
        return 1;
    }
    char line[4096], where[600];
    int status = 0;
    for (unsigned number = 1; status == 0 && fgets(line, sizeof line, f); number++) {
        char *hash = strchr(line, '#');
        if (hash) *hash = '\0';
        char *text = trim(line);
        if (!*text) continue;
        char *eq = strchr(text, '=');
        char *value = NULL;
        if (eq) {
            *eq = '\0';
            value = trim(eq + 1);
        }
        snprintf(where, sizeof where, "%s line %u: ", path, number);
        status = set_option(config, trim(text), value, err, where);
    }
    fclose(f);
    return status;
}

int fwm__config_parse(fwm__config *config, int argc, char **argv, FILE *out, FILE *err) {
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            print_help(out);
            return 2;
        }
        if (strcmp(arg, "--version") == 0) {
            fprintf(out, "fwm-serve %s (protocol %d)\n", FWM_VERSION_STRING, FWM_PROTOCOL_VERSION);
            return 2;
        }
        if (strncmp(arg, "--", 2) != 0 || arg[2] == '\0') {
            if (!push(&config->models, &config->model_count, arg)) return 1;
            continue;
        }
        char name[64];
        const char *value = NULL;
        const char *eq = strchr(arg + 2, '=');
        size_t n = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2);
        if (n >= sizeof name) n = sizeof name - 1;
        memcpy(name, arg + 2, n);
        name[n] = '\0';
        if (eq) value = eq + 1;
        else if (!is_flag_option(name) && i + 1 < argc) value = argv[++i];
        if (strcmp(name, "config") == 0) {
            if (!value) {
                fprintf(err, "fwm-serve: --config needs a file\n");
                return 1;
            }
            if (read_file(config, value, err) != 0) return 1;
            continue;
        }
        if (set_option(config, name, value, err, "") != 0) return 1;
    }
    return 0;
}

static bool exists(const char *path) {
    return path[0] && access(path, R_OK) == 0;
}

static void note_tried(char *tried, size_t size, const char *path) {
    size_t used = strlen(tried);
    if (used < size) snprintf(tried + used, size - used, "%s%s", used ? ", " : "", path);
}

char *fwm__config_bundled_model(char *tried, size_t tried_size) {
    char candidate[PATH_MAX + 64];
    tried[0] = '\0';
    const char *env = getenv("FWM_MODEL");
    if (env && *env) {
        if (exists(env)) return copy_string(env);
        snprintf(candidate, sizeof candidate, "$FWM_MODEL=%s", env);
        note_tried(tried, tried_size, candidate);
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) *slash = '\0';
        snprintf(candidate, sizeof candidate, "%s/%s/%s", exe, FWM_MODELS_FROM_BINDIR, FWM_BUNDLED_MODEL_NAME);
        if (exists(candidate)) return copy_string(candidate);
        note_tried(tried, tried_size, candidate);
        snprintf(candidate, sizeof candidate, "%s/%s", exe, FWM_BUNDLED_MODEL_NAME);
        if (exists(candidate)) return copy_string(candidate);
        note_tried(tried, tried_size, candidate);
    }
    return NULL;
}

char *fwm__config_default_www(void) {
    char exe[PATH_MAX], candidate[PATH_MAX + 64];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return NULL;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash) *slash = '\0';
    snprintf(candidate, sizeof candidate, "%s/%s", exe, FWM_WWW_FROM_BINDIR);
    return exists(candidate) ? copy_string(candidate) : NULL;
}
