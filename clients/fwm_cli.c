/* fwm_cli.c - fwm-cli, the command-line client of fwm-serve.
 *
 *   fwm-cli [--connect ADDRESS] [--model NAME] [--topk K] [--logprobs] interactive
 *   fwm-cli [--connect ADDRESS] babi FILE... [--stories N]            bAbI accuracy
 *   fwm-cli [--connect ADDRESS] hello | stats | sessions | close ID...
 *
 * Interactive: each line that ends in "?" is a question (asked; the answer is printed and, unless
 * /commit off, fed so the story goes on as if written); any other line is story text, fed with each
 * word's top predictions streamed as they arrive; with --logprobs (or /logprobs on) each token fed is
 * then printed with its natural-log probability given everything read before it, and the line's
 * perplexity. Words the model read as <unk> are listed after each line that had any. Lines starting
 * with "/" are commands (/help).
 * bAbI mode: for every story of every file, a fresh session reads "<eos>" and the story; at each
 * question it asks, compares with the gold answer, then feeds the gold answer (as catbAbI does);
 * prints the accuracy per file and in total. `sessions` lists every session on the server; `close`
 * closes the sessions named.
 * Exit status: 0 when every request succeeded, 1 when one failed (its error is printed on stderr;
 * interactive and bAbI modes go on after a request the server refused, such as an unknown word,
 * and exit 1 at the end), 2 for a usage error.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fwm/fwm_client.h"

#define DEFAULT_ADDRESS "tcp://127.0.0.1:7411"

typedef struct cli {
    fwm_client *client;
    const char *model;
    int topk;
    bool commit;
    bool quiet;
    int failures; /* requests that failed: the exit status is 1 when there were any */
    bool logprobs;
    char session[FWM_CLIENT_SESSION_ID_SIZE];
} cli;

static void usage(FILE *out) {
    fprintf(out,
            "usage: fwm-cli [--connect ADDRESS] [--model NAME] [--topk K] [COMMAND]\n"
            "\n"
            "Talk to fwm-serve (default address " DEFAULT_ADDRESS ", or $FWM_ADDRESS).\n"
            "\n"
            "commands:\n"
            "  (none)              interactive: type story sentences and questions (lines ending in '?')\n"
            "  babi FILE...        feed every story of each bAbI file, answer its questions, print accuracy\n"
            "                      (--stories N: only the first N stories of each file)\n"
            "  hello               server, version, models\n"
            "  stats               the server's counters\n"
            "  sessions            every session on the server: id, model, position (tokens read), last\n"
            "                      use (UTC), resident (in memory) or stored\n"
            "  close ID...         close these sessions (deleted from the store too)\n"
            "\n"
            "options:\n"
            "  --connect ADDRESS   tcp://HOST:PORT, HOST:PORT or unix:PATH\n"
            "  --model NAME        a model the server serves (default: its first)\n"
            "  --topk K            predictions shown per word (default 3)\n"
            "  --logprobs          print each token fed with its log-probability, and the line's perplexity\n"
            "  --timeout MS        per-call timeout (default 30000)\n"
            "  --token-file FILE   the server's authentication token (default: $FWM_AUTH_TOKEN)\n"
            "  --version           the version of fwm-cli and of its protocol\n"
            "  --help              this text\n"
            "\n"
            "exit status: 0 when every request succeeded; 1 when one failed (the error is printed on\n"
            "stderr; interactive and babi modes go on after a request the server refused, such as an\n"
            "unknown word, and exit 1 at the end) or the server could not be reached; 2 for a usage error.\n");
}

/* Report a failed request; it makes the exit status 1. */
static void print_error(cli *c, const char *what, const fwm_client_error *err) {
    fprintf(stderr, "fwm-cli: %s: %s (%s)\n", what, err->message, err->name);
    c->failures++;
}

static void on_token(void *user, const fwm_client_token_event *e) {
    (void)user;
    printf("  %-14s ->", e->word);
    for (size_t i = 0; i < e->topk_count; i++) printf(" %s %.3f", e->topk[i].word, (double)e->topk[i].probability);
    printf("\n");
    fflush(stdout);
}

/* The words of a feed's notifications, kept for its logprobs (printed too unless quiet). */
typedef struct collected {
    char **words;
    size_t count, capacity;
    bool print;
} collected;

static void collect_token(void *user, const fwm_client_token_event *e) {
    collected *w = user;
    if (w->print) on_token(NULL, e);
    if (w->count == w->capacity) {
        size_t capacity = w->capacity ? 2 * w->capacity : 64;
        char **grown = realloc(w->words, capacity * sizeof *grown);
        if (!grown) return;
        w->words = grown;
        w->capacity = capacity;
    }
    w->words[w->count] = strdup(e->word);
    if (w->words[w->count]) w->count++;
}

static void collected_free(collected *w) {
    for (size_t i = 0; i < w->count; i++) free(w->words[i]);
    free(w->words);
}

/* "(read as <unk>: w1, w2)" for the words of `text` the server listed, when there are any. */
static void print_unknown(const char *text, const fwm_client_span *spans, size_t count) {
    if (count == 0) return;
    size_t length = strlen(text);
    printf("(read as <unk>:");
    for (size_t i = 0; i < count; i++) {
        if (spans[i].start > length || spans[i].length > length - spans[i].start) continue;
        printf("%s %.*s", i ? "," : "", (int)spans[i].length, text + spans[i].start);
    }
    printf(")\n");
}

/* Each token fed with its log-probability, then the line's total and perplexity. */
static void print_logprobs(const collected *w, const fwm_client_feed_result *r) {
    double total = 0;
    for (size_t i = 0; i < r->token_count; i++) {
        const char *word = i < w->count ? w->words[i] : "";
        printf("  %-14s %5u  ln p = %8.4f  (p=%.4f)\n", word, r->tokens[i], r->logprobs[i], exp(r->logprobs[i]));
        total += r->logprobs[i];
    }
    if (r->token_count)
        printf("(%zu tokens: ln p = %.4f, perplexity %.3f)\n", r->token_count, total,
               exp(-total / (double)r->token_count));
}

static bool ends_with_question(const char *line) {
    size_t n = strlen(line);
    while (n > 0 && (line[n - 1] == ' ' || line[n - 1] == '\t' || line[n - 1] == '\r' || line[n - 1] == '\n')) n--;
    return n > 0 && line[n - 1] == '?';
}

static char *read_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *data = NULL;
    size_t used = 0, capacity = 0;
    for (;;) {
        if (capacity - used < 65536) {
            capacity = capacity ? 2 * capacity : 1 << 20;
            char *grown = realloc(data, capacity);
            if (!grown) {
                free(data);
                fclose(f);
                return NULL;
            }
            data = grown;
        }
        size_t n = fread(data + used, 1, capacity - used, f);
        used += n;
        if (n == 0) break;
    }
    fclose(f);
    *size = used;
    return data;
}

static int command(cli *c, char *line) {
    fwm_client_error err;
    char *arg = strchr(line, ' ');
    if (arg) {
        *arg++ = '\0';
        while (*arg == ' ') arg++;
    }
    if (strcmp(line, "/quit") == 0 || strcmp(line, "/exit") == 0) return 1;
    if (strcmp(line, "/help") == 0) {
        printf("story text is fed; a line ending in '?' is asked.\n"
               "/reset  /fork  /snapshot FILE  /restore FILE  /stats  /topk N  /commit on|off  /quiet on|off\n"
               "/logprobs on|off  /quit\n");
    } else if (strcmp(line, "/reset") == 0) {
        if (fwm_client_reset(c->client, c->session, &err) != FWM_RPC_OK) print_error(c, "reset", &err);
        else printf("(session reset)\n");
    } else if (strcmp(line, "/fork") == 0) {
        char child[FWM_CLIENT_SESSION_ID_SIZE];
        if (fwm_client_fork(c->client, c->session, child, &err) != FWM_RPC_OK) {
            print_error(c, "fork", &err);
        } else {
            printf("(forked %s; now in the fork %s)\n", c->session, child);
            memcpy(c->session, child, sizeof child);
        }
    } else if (strcmp(line, "/snapshot") == 0 && arg && *arg) {
        void *blob;
        size_t size;
        if (fwm_client_snapshot(c->client, c->session, &blob, &size, &err) != FWM_RPC_OK) {
            print_error(c, "snapshot", &err);
        } else {
            FILE *f = fopen(arg, "wb");
            if (!f || fwrite(blob, 1, size, f) != size) {
                fprintf(stderr, "fwm-cli: cannot write %s\n", arg);
                c->failures++;
            } else
                printf("(%zu bytes of state written to %s)\n", size, arg);
            if (f) fclose(f);
            free(blob);
        }
    } else if (strcmp(line, "/restore") == 0 && arg && *arg) {
        size_t size;
        char *blob = read_file(arg, &size);
        char session[FWM_CLIENT_SESSION_ID_SIZE];
        if (!blob) {
            fprintf(stderr, "fwm-cli: cannot read %s\n", arg);
            c->failures++;
        } else if (fwm_client_restore(c->client, blob, size, c->model, session, &err) != FWM_RPC_OK)
            print_error(c, "restore", &err);
        else {
            printf("(restored into session %s)\n", session);
            memcpy(c->session, session, sizeof session);
        }
        free(blob);
    } else if (strcmp(line, "/stats") == 0) {
        char text[8192];
        if (fwm_client_stats(c->client, text, sizeof text, &err) != FWM_RPC_OK) print_error(c, "stats", &err);
        else fputs(text, stdout);
    } else if (strcmp(line, "/topk") == 0 && arg) {
        c->topk = atoi(arg);
    } else if (strcmp(line, "/commit") == 0 && arg) {
        c->commit = strcmp(arg, "off") != 0;
    } else if (strcmp(line, "/quiet") == 0 && arg) {
        c->quiet = strcmp(arg, "off") != 0;
    } else if (strcmp(line, "/logprobs") == 0 && arg) {
        c->logprobs = strcmp(arg, "off") != 0;
    } else {
        printf("unknown command '%s' (/help)\n", line);
    }
    return 0;
}

static int interactive(cli *c) {
    fwm_client_error err;
    if (fwm_client_open(c->client, c->model, c->topk, c->session, &err) != FWM_RPC_OK) {
        print_error(c, "open", &err);
        return 1;
    }
    bool tty = isatty(STDIN_FILENO);
    if (tty) printf("session %s. Type story sentences, questions ending in '?', or /help.\n", c->session);
    char line[8192];
    for (;;) {
        if (tty) {
            printf("> ");
            fflush(stdout);
        }
        if (!fgets(line, sizeof line, stdin)) break;
        line[strcspn(line, "\r\n")] = '\0';
        if (!line[0]) continue;
        if (line[0] == '/') {
            if (command(c, line)) break;
            continue;
        }
        if (ends_with_question(line)) {
            fwm_client_answer a;
            /* the answer shows /topk predictions whatever the session's default (a restored session's too) */
            if (fwm_client_ask_topk(c->client, c->session, line, c->commit, c->topk > 0 ? c->topk : 1, &a, &err) !=
                FWM_RPC_OK) {
                print_error(c, "ask", &err);
                if (err.code >= 100) return 1;
                continue;
            }
            printf("answer: %s (p=%.3f)", a.answer, (double)a.probability);
            for (size_t i = 1; i < a.topk_count; i++)
                printf("  %s %.3f", a.topk[i].word, (double)a.topk[i].probability);
            printf("\n");
            print_unknown(line, a.unknown, a.unknown_count);
        } else {
            fwm_client_feed_result r;
            collected words = {.print = !c->quiet};
            /* with logprobs the notifications name the words (printed unless quiet) */
            fwm_client_token_fn fn = c->logprobs ? collect_token : c->quiet ? NULL : on_token;
            int rc = fwm_client_feed_scored(c->client, c->session, line, NULL, 0, c->topk, c->logprobs, fn, &words,
                                            &r, &err);
            if (rc != FWM_RPC_OK) {
                print_error(c, "feed", &err);
                collected_free(&words);
                if (err.code >= 100) return 1;
                continue;
            }
            if (c->logprobs) print_logprobs(&words, &r);
            print_unknown(line, r.unknown, r.unknown_count);
            collected_free(&words);
        }
        fflush(stdout);
    }
    if (fwm_client_close_session(c->client, c->session, &err) != FWM_RPC_OK) print_error(c, "close", &err);
    return c->failures ? 1 : 0;
}

/* ---- bAbI ---- */

typedef struct score {
    long right, total;
} score;

/* One bAbI line: "ID text" or "ID question?<TAB>answer<TAB>support". */
static int babi_file(cli *c, const char *path, long max_stories, score *file) {
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "fwm-cli: cannot open %s\n", path);
        return 1;
    }
    fwm_client_error err;
    char line[4096];
    bool open = false;
    long stories = 0;
    int rc = 0;
    while (rc == 0 && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = '\0';
        char *text = strchr(line, ' ');
        if (!text) continue;
        *text++ = '\0';
        if (strcmp(line, "1") == 0) { /* a new story */
            if (open) fwm_client_close_session(c->client, c->session, &err);
            open = false;
            if (max_stories && stories >= max_stories) break;
            stories++;
            if (fwm_client_open(c->client, c->model, 1, c->session, &err) != FWM_RPC_OK) {
                print_error(c, "open", &err);
                rc = 1;
                break;
            }
            open = true; /* primed by the server: it has read "<eos>", as every catbAbI story begins */
        }
        if (!open) continue;
        char *tab = strchr(text, '\t');
        if (!tab) {
            if (fwm_client_feed(c->client, c->session, text, 0, NULL, NULL, NULL, NULL, &err) != FWM_RPC_OK) {
                print_error(c, "feed", &err);
                rc = err.code >= 100;
            }
            continue;
        }
        *tab = '\0';
        char *answer = tab + 1;
        answer[strcspn(answer, "\t")] = '\0';
        for (char *p = answer; *p; p++) *p = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
        fwm_client_answer a;
        if (fwm_client_ask(c->client, c->session, text, false, &a, &err) != FWM_RPC_OK) {
            print_error(c, "ask", &err);
            rc = err.code >= 100;
            continue;
        }
        file->total++;
        if (strcmp(a.answer, answer) == 0) file->right++;
        if (fwm_client_feed(c->client, c->session, answer, 0, NULL, NULL, NULL, NULL, &err) != FWM_RPC_OK) {
            print_error(c, "feed answer", &err);
            rc = err.code >= 100;
        }
    }
    if (open) fwm_client_close_session(c->client, c->session, &err);
    fclose(f);
    return rc;
}

static int babi(cli *c, char **files, int count, long max_stories) {
    score all = {0, 0};
    for (int i = 0; i < count; i++) {
        score s = {0, 0};
        if (babi_file(c, files[i], max_stories, &s) != 0) return 1;
        const char *base = strrchr(files[i], '/');
        printf("%-24s %6ld / %-6ld %6.2f%%\n", base ? base + 1 : files[i], s.right, s.total,
               s.total ? 100.0 * (double)s.right / (double)s.total : 0.0);
        fflush(stdout);
        all.right += s.right;
        all.total += s.total;
    }
    printf("total: %ld / %ld = %.2f%%\n", all.right, all.total,
           all.total ? 100.0 * (double)all.right / (double)all.total : 0.0);
    return c->failures ? 1 : 0;
}

/* ---- sessions and close ---- */

/* Every session, page by page: id, model, position, last use (UTC), resident or stored. */
static int list_sessions(cli *c) {
    fwm_client_error err;
    char after[FWM_CLIENT_SESSION_ID_SIZE] = "";
    for (;;) {
        const fwm_client_session_info *items;
        size_t count;
        const char *next;
        if (fwm_client_sessions(c->client, after[0] ? after : NULL, 0, &items, &count, &next, &err) !=
            FWM_RPC_OK) {
            print_error(c, "sessions", &err);
            return 1;
        }
        for (size_t i = 0; i < count; i++) {
            char pos[24] = "-", used[32] = "-";
            if (items[i].has_pos) snprintf(pos, sizeof pos, "%llu", (unsigned long long)items[i].pos);
            time_t seconds = (time_t)(items[i].last_used_ms / 1000);
            struct tm tm;
            if (gmtime_r(&seconds, &tm)) strftime(used, sizeof used, "%Y-%m-%dT%H:%M:%SZ", &tm);
            printf("%s %s pos %s used %s %s\n", items[i].session, items[i].model, pos, used,
                   items[i].resident ? "resident" : "stored");
        }
        if (!next) break;
        snprintf(after, sizeof after, "%s", next); /* the client's storage is reused by the next call */
    }
    return 0;
}

static int close_sessions(cli *c, char **ids, int count) {
    fwm_client_error err;
    for (int i = 0; i < count; i++) {
        if (fwm_client_close_session(c->client, ids[i], &err) != FWM_RPC_OK) {
            char what[64];
            snprintf(what, sizeof what, "close %.40s", ids[i]);
            print_error(c, what, &err);
        } else {
            printf("closed %s\n", ids[i]);
        }
    }
    return c->failures ? 1 : 0;
}

/* The token: the first line of `path`, else $FWM_AUTH_TOKEN, else none (""). False when the file
 * cannot be read. */
static bool read_token(const char *path, char *token, size_t size) {
    token[0] = '\0';
    if (!path) {
        const char *env = getenv("FWM_AUTH_TOKEN");
        if (env) snprintf(token, size, "%s", env);
        return true;
    }
    FILE *f = fopen(path, "r");
    if (!f || !fgets(token, (int)size, f)) {
        fprintf(stderr, "fwm-cli: cannot read the token file %s\n", path);
        if (f) fclose(f);
        return false;
    }
    fclose(f);
    token[strcspn(token, "\r\n")] = '\0';
    return true;
}

int main(int argc, char **argv) {
    cli c = {.topk = 3, .commit = true};
    const char *address = getenv("FWM_ADDRESS");
    if (!address || !*address) address = DEFAULT_ADDRESS;
    fwm_client_params params = fwm_client_default_params();
    long max_stories = 0;
    char **rest = calloc((size_t)argc + 1, sizeof *rest);
    int rest_count = 0;
    const char *token_file = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has_value = i + 1 < argc;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            free(rest);
            return 0;
        } else if (strcmp(a, "--version") == 0) {
            printf("fwm-cli %s (protocol %d)\n", FWM_VERSION_STRING, FWM_PROTOCOL_VERSION);
            free(rest);
            return 0;
        } else if (strcmp(a, "--connect") == 0 && has_value) {
            address = argv[++i];
        } else if (strcmp(a, "--model") == 0 && has_value) {
            c.model = argv[++i];
        } else if (strcmp(a, "--topk") == 0 && has_value) {
            c.topk = atoi(argv[++i]);
        } else if (strcmp(a, "--logprobs") == 0) {
            c.logprobs = true;
        } else if (strcmp(a, "--timeout") == 0 && has_value) {
            params.timeout_ms = atoi(argv[++i]);
        } else if (strcmp(a, "--token-file") == 0 && has_value) {
            token_file = argv[++i];
        } else if (strcmp(a, "--stories") == 0 && has_value) {
            max_stories = atol(argv[++i]);
        } else if (strncmp(a, "--", 2) == 0) {
            fprintf(stderr, "fwm-cli: unknown option '%s' (or it lacks its value)\n", a);
            usage(stderr);
            free(rest);
            return 2;
        } else {
            rest[rest_count++] = argv[i];
        }
    }
    fwm_client_error err;
    if (fwm_client_connect(address, &params, &c.client, &err) != FWM_RPC_OK) {
        print_error(&c, "connect", &err);
        free(rest);
        return 1;
    }
    char token[1024] = "";
    if (!read_token(token_file, token, sizeof token) ||
        (token[0] && fwm_client_authenticate(c.client, token, &err) != FWM_RPC_OK)) {
        if (token[0]) print_error(&c, "authenticate", &err);
        fwm_client_free(c.client);
        free(rest);
        return 1;
    }
    int rc = 0;
    if (rest_count == 0) {
        rc = interactive(&c);
    } else if (strcmp(rest[0], "babi") == 0 && rest_count > 1) {
        rc = babi(&c, rest + 1, rest_count - 1, max_stories);
    } else if (strcmp(rest[0], "hello") == 0) {
        fwm_client_hello_info h;
        rc = fwm_client_hello(c.client, &h, &err) != FWM_RPC_OK;
        if (rc) print_error(&c, "hello", &err);
        else {
            printf("%s %s, protocol %d\n", h.server, h.version, h.protocol);
            for (size_t m = 0; m < h.model_count; m++)
                printf("model %s: vocabulary %u, hidden %u, %llu bytes per session, %s tokenizer%s%s\n",
                       h.models[m].name, h.models[m].vocab_size, h.models[m].hidden_size,
                       (unsigned long long)h.models[m].session_bytes,
                       h.models[m].tokenizer[0] ? h.models[m].tokenizer : "unknown",
                       h.models[m].has_unknown_token ? ", <unk> for words outside the vocabulary" : "",
                       h.models[m].logprobs ? ", logprobs" : "");
        }
    } else if (strcmp(rest[0], "stats") == 0) {
        char text[8192];
        rc = fwm_client_stats(c.client, text, sizeof text, &err) != FWM_RPC_OK;
        if (rc) print_error(&c, "stats", &err);
        else fputs(text, stdout);
    } else if (strcmp(rest[0], "sessions") == 0 && rest_count == 1) {
        rc = list_sessions(&c);
    } else if (strcmp(rest[0], "close") == 0 && rest_count > 1) {
        rc = close_sessions(&c, rest + 1, rest_count - 1);
    } else {
        fprintf(stderr, "fwm-cli: unknown command '%s' (or wrong arguments)\n", rest[0]);
        usage(stderr);
        rc = 2;
    }
    fwm_client_free(c.client);
    free(rest);
    return rc;
}
