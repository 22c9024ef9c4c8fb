/* bench_serve.c - load generator for fwm-serve: N concurrent sessions stream catbAbI test stories.
 *
 *   bench-serve --connect ADDRESS [--connect ADDRESS2 ...] --babi DIR [--sessions N] [--connections C]
 *               [--seconds S] [--warmup S] [--topk K] [--resident]
 *
 * Each session reads the catbAbI test stream (bAbI v1.2 en-valid-10k test split, tasks 1-20, stories
 * with their answers) from its own starting story, one sentence per `feed` request, closed loop: the
 * next sentence goes out when the previous feed's response is back. Sessions are spread over C
 * connections, alternating between the addresses given (up to 8: e.g. one TCP and one Unix socket, or
 * the nodes of a cluster, each session then owned by the node it was opened on).
 * Prints aggregate tokens/s and per-token latency: for each streamed token, the time the client
 * waited for it (from the request for the first token of a feed, from the previous token after
 * that), p50/p99, plus request latency and the server's own stats. Never fails on a figure.
 * --rate R: open loop instead: every session sends one token (one word per feed) every 1/R s, so
 * N*R tokens/s are offered whatever the server does, and a token's latency is request -> its
 * prediction; a session whose previous token is still unanswered skips its turn (counted).
 * --trace FILE: also write every measured token as "seconds_since_measuring_began latency_ms" lines
 * (to see when the slow tokens happened, e.g. with gnuplot).
 * --resident: open N sessions, feed each one story, and report the server's memory, then exit.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "rpc_codec.h"
#include "rpc_scan.h"

typedef struct bench bench;

typedef struct session {
    int index;
    struct conn *conn;
    char id[33];
    size_t cursor;       /* next sentence */
    uint64_t sent_ns, last_ns, due_ns;
    uint32_t msgid;
    bool busy;
} session;

typedef struct conn {
    union {
        uv_handle_t handle;
        uv_stream_t stream;
        uv_tcp_t tcp;
        uv_pipe_t pipe;
    } h;
    uv_connect_t connect;
    bench *b;
    fwm__rpc_reader reader;
    session **sessions; /* by msgid % capacity is not needed: msgid -> session map below */
    size_t session_count;
    session **by_msgid; /* msgid -> waiting session (msgids are allocated per connection) */
    size_t msgid_capacity;
    uint32_t next_msgid;
    bool open;
    msgpack_sbuffer out; /* requests made in this loop iteration, written together by flush_all */
} conn;

typedef struct sample_set {
    double *v;
    size_t n, cap;
} sample_set;

struct bench {
    uv_loop_t *loop;
    const char *addresses[8]; /* connections alternate between them (e.g. TCP and Unix, or cluster nodes) */
    int address_count;
    int sessions, connections, topk;
    double seconds, warmup;
    bool resident;
    double rate;      /* open loop: tokens/s per session, one word per feed; 0: closed loop by sentence */
    char **sentences; /* the stream, one sentence (closed loop) or one word (open loop) per entry */
    size_t sentence_count, sentence_capacity;
    size_t *story_starts; /* sentence index where each story starts */
    size_t story_count, story_capacity;
    session *all;
    conn *conns;
    int opened, connected, resident_done;
    uint64_t start_ns, measure_ns, end_ns;
    uint64_t tokens, requests, skipped;
    sample_set token_latency, request_latency;
    sample_set token_times; /* --trace: when each token_latency sample was taken, s since measure_ns */
    const char *trace_path;
    uv_timeval64_t measure_wall; /* wall-clock time when measuring began (in the trace's header) */
    bool measuring, stopping;
    uv_timer_t timer;
    uv_prepare_t flush; /* before each poll: one write per connection with requests queued */
    int stats_pending;
};

static uint64_t now_ns(void) {
    return uv_hrtime();
}

/* `array` (count used of *capacity) with room for one more element, doubling from `initial`. */
static void *grow(void *array, size_t *capacity, size_t count, size_t element_size, size_t initial) {
    if (count < *capacity) return array;
    *capacity = *capacity ? 2 * *capacity : initial;
    array = realloc(array, *capacity * element_size);
    if (!array) abort();
    return array;
}

static void add_sample(sample_set *s, double v) {
    s->v = grow(s->v, &s->cap, s->n, sizeof *s->v, 1 << 16);
    s->v[s->n++] = v;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double percentile(sample_set *s, double q) {
    if (!s->n) return 0;
    qsort(s->v, s->n, sizeof *s->v, cmp_double);
    size_t i = (size_t)ceil(q * (double)s->n);
    if (i < 1) i = 1;
    return s->v[i - 1];
}

/* ---- the catbAbI test stream ---- */

static void push_one(bench *b, const char *text, size_t n) {
    b->sentences = grow(b->sentences, &b->sentence_capacity, b->sentence_count, sizeof *b->sentences, 4096);
    b->sentences[b->sentence_count++] = strndup(text, n);
}

/* Closed loop: the sentence. Open loop: each token of it (a final '.' or '?' split off). */
static void push_sentence(bench *b, const char *text) {
    if (b->rate <= 0) {
        push_one(b, text, strlen(text));
        return;
    }
    for (const char *p = text; *p;) {
        while (*p == ' ') p++;
        size_t n = strcspn(p, " ");
        if (!n) break;
        if (n > 1 && (p[n - 1] == '.' || p[n - 1] == '?')) {
            push_one(b, p, n - 1);
            push_one(b, p + n - 1, 1);
        } else {
            push_one(b, p, n);
        }
        p += n;
    }
}

static bool load_babi(bench *b, const char *dir) {
    for (int task = 1; task <= 20; task++) {
        char path[1024], line[4096];
        snprintf(path, sizeof path, "%s/en-valid-10k/qa%d_test.txt", dir, task);
        FILE *f = fopen(path, "r");
        if (!f) {
            fprintf(stderr, "bench-serve: cannot open %s\n", path);
            return false;
        }
        while (fgets(line, sizeof line, f)) {
            line[strcspn(line, "\r\n")] = '\0';
            char *text = strchr(line, ' ');
            if (!text) continue;
            *text++ = '\0';
            if (strcmp(line, "1") == 0) {
                b->story_starts =
                    grow(b->story_starts, &b->story_capacity, b->story_count, sizeof *b->story_starts, 256);
                b->story_starts[b->story_count++] = b->sentence_count;
                push_sentence(b, "<eos>");
            }
            char *tab = strchr(text, '\t');
            if (tab) { /* question<TAB>answer<TAB>support: the question then its answer, as catbAbI reads */
                *tab = '\0';
                char *answer = tab + 1;
                answer[strcspn(answer, "\t")] = '\0';
                char joined[4200];
                snprintf(joined, sizeof joined, "%s %s", text, answer);
                push_sentence(b, joined);
            } else {
                push_sentence(b, text);
            }
        }
        fclose(f);
    }
    return b->sentence_count > 0;
}

/* ---- requests ---- */

static void on_write(uv_write_t *req, int status) {
    (void)status;
    free(req->data);
    free(req);
}

/* Write each connection's queued requests in one uv_write (one syscall for all the requests made
 * on it since the last poll: the timer's sends and those made while reading replies), as a client
 * multiplexing sessions over a connection would. Runs just before the loop blocks for I/O, so no
 * request waits for the poll. */
static void flush_all(uv_prepare_t *h) {
    bench *b = h->data;
    for (int i = 0; i < b->connections; i++) {
        conn *c = &b->conns[i];
        if (!c->out.size) continue;
        uv_write_t *w = malloc(sizeof *w);
        if (!w) abort();
        w->data = c->out.data;
        uv_buf_t buf = uv_buf_init(c->out.data, (unsigned)c->out.size);
        msgpack_sbuffer_init(&c->out); /* the write request owns the bytes now */
        if (uv_write(w, &c->h.stream, &buf, 1, on_write) != 0) {
            free(buf.base);
            free(w);
        }
    }
}

static void send_request(conn *c, session *s, const char *method, const char *text) {
    msgpack_packer pk;
    msgpack_packer_init(&pk, &c->out, msgpack_sbuffer_write);
    uint32_t id = c->next_msgid++;
    msgpack_pack_array(&pk, 4);
    msgpack_pack_uint8(&pk, 0);
    msgpack_pack_uint32(&pk, id);
    fwm__rpc_pack_cstr(&pk, method);
    msgpack_pack_array(&pk, 1);
    if (strcmp(method, "open") == 0) {
        msgpack_pack_map(&pk, 1);
        fwm__rpc_pack_cstr(&pk, "topk");
        msgpack_pack_uint32(&pk, (uint32_t)c->b->topk);
    } else if (strcmp(method, "stats") == 0) {
        msgpack_pack_map(&pk, 0);
    } else {
        msgpack_pack_map(&pk, 2);
        fwm__rpc_pack_cstr(&pk, "session");
        fwm__rpc_pack_cstr(&pk, s->id);
        fwm__rpc_pack_cstr(&pk, "text");
        fwm__rpc_pack_cstr(&pk, text);
    }
    if (s) {
        if (id >= c->msgid_capacity) {
            size_t cap = c->msgid_capacity ? c->msgid_capacity : 1024;
            while (cap <= id) cap *= 2;
            c->by_msgid = realloc(c->by_msgid, cap * sizeof *c->by_msgid);
            memset(c->by_msgid + c->msgid_capacity, 0, (cap - c->msgid_capacity) * sizeof *c->by_msgid);
            c->msgid_capacity = cap;
        }
        c->by_msgid[id] = s;
        s->msgid = id;
    }
}

static void next_feed(session *s) {
    bench *b = s->conn->b;
    if (b->stopping) return;
    const char *text = b->sentences[s->cursor];
    s->cursor = (s->cursor + 1) % b->sentence_count;
    s->busy = true;
    s->sent_ns = s->last_ns = now_ns();
    send_request(s->conn, s, "feed", text);
}

static void finish(bench *b);

static void print_stats(const msgpack_object *r) {
    char text[4096];
    int n = msgpack_object_print_buffer(text, sizeof text, *r);
    if (n > 0) printf("server stats: %s\n", text);
}

static const msgpack_object *get(const msgpack_object *map, const char *key) {
    if (map->type != MSGPACK_OBJECT_MAP) return NULL;
    for (uint32_t i = 0; i < map->via.map.size; i++) {
        const msgpack_object *k = &map->via.map.ptr[i].key;
        if (k->type == MSGPACK_OBJECT_STR && k->via.str.size == strlen(key) &&
            !memcmp(k->via.str.ptr, key, k->via.str.size))
            return &map->via.map.ptr[i].val;
    }
    return NULL;
}

static void on_message(conn *c, const msgpack_object *m) {
    bench *b = c->b;
    const msgpack_object *a = m->via.array.ptr;
    uint64_t t = now_ns();
    if (a[0].via.u64 == 2) { /* token notification: find the session by its id */
        if (!(a[1].type == MSGPACK_OBJECT_STR && a[1].via.str.size == 5 && !memcmp(a[1].via.str.ptr, "token", 5))) {
            fprintf(stderr, "bench-serve: server notification: %.*s\n", (int)a[1].via.str.size, a[1].via.str.ptr);
            return;
        }
        const msgpack_object *sid = get(&a[2].via.array.ptr[0], "session");
        for (size_t i = 0; i < c->session_count && sid; i++) {
            session *s = c->sessions[i];
            if (s->busy && memcmp(s->id, sid->via.str.ptr, 32) == 0) {
                if (b->measuring) {
                    add_sample(&b->token_latency, (double)(t - s->last_ns) / 1e6);
                    if (b->trace_path) add_sample(&b->token_times, (double)(t - b->measure_ns) / 1e9);
                    b->tokens++;
                }
                s->last_ns = t;
                break;
            }
        }
        return;
    }
    uint32_t id = (uint32_t)a[1].via.u64;
    session *s = id < c->msgid_capacity ? c->by_msgid[id] : NULL;
    if (a[2].type != MSGPACK_OBJECT_NIL) {
        const msgpack_object *msg = get(&a[2], "message");
        fprintf(stderr, "bench-serve: error: %.*s\n", msg ? (int)msg->via.str.size : 0, msg ? msg->via.str.ptr : "");
        if (s && !s->id[0]) exit(1);
    }
    if (!s) { /* stats */
        print_stats(&a[3]);
        if (--b->stats_pending == 0) finish(b);
        return;
    }
    c->by_msgid[id] = NULL;
    if (!s->id[0]) { /* open */
        const msgpack_object *sid = get(&a[3], "session");
        memcpy(s->id, sid->via.str.ptr, 32);
        s->id[32] = '\0';
        if (++b->opened == b->sessions) {
            b->start_ns = now_ns();
            printf("opened %d sessions over %d connections\n", b->sessions, b->connections);
            for (int i = 0; i < b->sessions; i++) {
                if (b->rate > 0) b->all[i].due_ns = b->start_ns + (uint64_t)((double)i / b->sessions * 1e9 / b->rate);
                else next_feed(&b->all[i]);
            }
        }
        return;
    }
    s->busy = false;
    if (b->measuring) {
        add_sample(&b->request_latency, (double)(t - s->sent_ns) / 1e6);
        b->requests++;
    }
    if (b->rate > 0) return; /* open loop: the timer sends the next token when it is due */
    if (b->resident) {
        if (strcmp(b->sentences[s->cursor], "<eos>") != 0) next_feed(s); /* until the story ends */
        else if (++b->resident_done == b->sessions) {
            b->stats_pending = 1;
            send_request(&b->conns[0], NULL, "stats", NULL);
        }
        return;
    }
    next_feed(s);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
    (void)suggested;
    conn *c = (conn *)h;
    size_t available;
    void *p = fwm__rpc_reader_space(&c->reader, 65536, &available);
    *buf = uv_buf_init(p, p ? (unsigned)available : 0);
}

static void on_read(uv_stream_t *stream, ssize_t n, const uv_buf_t *buf) {
    (void)buf;
    conn *c = (conn *)stream;
    if (n < 0) {
        if (!c->b->stopping) fprintf(stderr, "bench-serve: connection lost: %s\n", uv_strerror((int)n));
        uv_read_stop(stream);
        if (!c->b->stopping) exit(1);
        return;
    }
    fwm__rpc_reader_commit(&c->reader, (size_t)n);
    const uint8_t *m;
    size_t len;
    fwm__rpc_result r;
    msgpack_unpacked u;
    msgpack_unpacked_init(&u);
    while ((r = fwm__rpc_reader_next(&c->reader, &m, &len)) == FWM_RPC_MESSAGE) {
        size_t off = 0;
        if (msgpack_unpack_next(&u, (const char *)m, len, &off) == MSGPACK_UNPACK_SUCCESS) on_message(c, &u.data);
    }
    msgpack_unpacked_destroy(&u);
    if (r == FWM_RPC_ERROR) {
        fprintf(stderr, "bench-serve: bad stream: %s\n", fwm__rpc_reader_error(&c->reader));
        exit(1);
    }
}

static void on_connect(uv_connect_t *req, int status) {
    conn *c = req->data;
    bench *b = c->b;
    if (status != 0) {
        fprintf(stderr, "bench-serve: cannot connect: %s\n", uv_strerror(status));
        exit(1);
    }
    uv_read_start(&c->h.stream, on_alloc, on_read);
    for (size_t i = 0; i < c->session_count; i++) send_request(c, c->sessions[i], "open", NULL);
    b->connected++;
}

static void on_timer(uv_timer_t *t) {
    bench *b = t->data;
    uint64_t now = now_ns();
    if (!b->start_ns || b->resident) return; /* --resident ends when every story is read */
    if (b->rate > 0 && !b->stopping) { /* open loop: each session sends its next token when due */
        uint64_t period = (uint64_t)(1e9 / b->rate);
        for (int i = 0; i < b->sessions; i++) {
            session *s = &b->all[i];
            if (now < s->due_ns) continue;
            if (s->busy) { /* the previous token is not answered yet: the server is behind */
                if (b->measuring) b->skipped++;
            } else {
                next_feed(s);
            }
            s->due_ns += period;
            if (s->due_ns < now) s->due_ns = now + period;
        }
    }
    if (!b->measuring && !b->stopping && now - b->start_ns >= (uint64_t)(b->warmup * 1e9)) {
        b->measuring = true;
        b->measure_ns = now;
        uv_gettimeofday(&b->measure_wall);
    } else if (b->measuring && now - b->measure_ns >= (uint64_t)(b->seconds * 1e9)) {
        b->measuring = false;
        b->stopping = true;
        b->end_ns = now;
        b->stats_pending = 1;
        send_request(&b->conns[0], NULL, "stats", NULL);
    }
}

static void close_cb(uv_handle_t *h) {
    (void)h;
}

static void write_trace(const bench *b) {
    FILE *f = fopen(b->trace_path, "w");
    if (!f) {
        fprintf(stderr, "bench-serve: cannot write %s\n", b->trace_path);
        return;
    }
    fprintf(f, "# measuring began at unix time %lld.%06d; columns: seconds since then, latency ms\n",
            (long long)b->measure_wall.tv_sec, (int)b->measure_wall.tv_usec);
    for (size_t i = 0; i < b->token_times.n; i++) fprintf(f, "%.6f %.4f\n", b->token_times.v[i], b->token_latency.v[i]);
    fclose(f);
}

static void finish(bench *b) {
    if (b->trace_path && !b->resident) write_trace(b); /* before percentile() sorts the latencies */
    if (!b->resident) {
        double secs = (double)(b->end_ns - b->measure_ns) / 1e9;
        printf("sessions %d, connections %d (%s", b->sessions, b->connections, b->addresses[0]);
        for (int i = 1; i < b->address_count; i++) printf(" + %s", b->addresses[i]);
        printf("), topk %d, %.1f s measured after %.1f s warm-up\n", b->topk, secs, b->warmup);
        if (b->rate > 0)
            printf("open loop: each session sends one token every %.1f ms (%.0f tokens/s offered); "
                   "%llu sends skipped because the previous token was not answered yet\n",
                   1e3 / b->rate, b->rate * b->sessions, (unsigned long long)b->skipped);
        printf("tokens %llu, requests %llu: %.0f tokens/s aggregate\n", (unsigned long long)b->tokens,
               (unsigned long long)b->requests, (double)b->tokens / secs);
        printf("per-token latency (client wait per streamed token): p50 %.3f ms, p99 %.3f ms, max %.3f ms\n",
               percentile(&b->token_latency, 0.5), percentile(&b->token_latency, 0.99),
               percentile(&b->token_latency, 1.0));
        printf("request latency (one sentence): p50 %.3f ms, p99 %.3f ms\n", percentile(&b->request_latency, 0.5),
               percentile(&b->request_latency, 0.99));
    } else {
        printf("resident: %d sessions opened, each fed one story, in %.1f s\n", b->sessions,
               (double)(now_ns() - b->start_ns) / 1e9);
    }
    fflush(stdout);
    uv_timer_stop(&b->timer);
    uv_close((uv_handle_t *)&b->timer, close_cb);
    uv_prepare_stop(&b->flush);
    uv_close((uv_handle_t *)&b->flush, close_cb);
    for (int i = 0; i < b->connections; i++) uv_close(&b->conns[i].h.handle, close_cb);
}

/* Free everything once the loop has closed every handle (so sanitizer runs report no leaks). */
static void release(bench *b) {
    for (int i = 0; i < b->connections; i++) {
        conn *c = &b->conns[i];
        fwm__rpc_reader_release(&c->reader);
        msgpack_sbuffer_destroy(&c->out);
        free(c->sessions);
        free(c->by_msgid);
    }
    free(b->conns);
    free(b->all);
    for (size_t i = 0; i < b->sentence_count; i++) free(b->sentences[i]);
    free(b->sentences);
    free(b->story_starts);
    free(b->token_latency.v);
    free(b->request_latency.v);
    free(b->token_times.v);
}

int main(int argc, char **argv) {
    bench b = {.sessions = 100, .connections = 0, .topk = 5, .seconds = 10, .warmup = 2};
    const char *babi = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--connect") == 0 && v && b.address_count < 8) b.addresses[b.address_count++] = argv[++i];
        else if (strcmp(a, "--babi") == 0 && v) babi = argv[++i];
        else if (strcmp(a, "--sessions") == 0 && v) b.sessions = atoi(argv[++i]);
        else if (strcmp(a, "--connections") == 0 && v) b.connections = atoi(argv[++i]);
        else if (strcmp(a, "--seconds") == 0 && v) b.seconds = atof(argv[++i]);
        else if (strcmp(a, "--warmup") == 0 && v) b.warmup = atof(argv[++i]);
        else if (strcmp(a, "--topk") == 0 && v) b.topk = atoi(argv[++i]);
        else if (strcmp(a, "--rate") == 0 && v) b.rate = atof(argv[++i]);
        else if (strcmp(a, "--resident") == 0) b.resident = true;
        else if (strcmp(a, "--trace") == 0 && v) b.trace_path = argv[++i];
        else {
            fprintf(stderr,
                    "usage: bench-serve --connect ADDRESS [--connect ADDRESS2] --babi DIR [--sessions N]\n"
                    "       [--connections C] [--seconds S] [--warmup S] [--topk K] [--rate R] [--trace FILE]"
                    " [--resident]\n");
            return 2;
        }
    }
    if (!b.address_count || !babi || b.sessions < 1) {
        fprintf(stderr, "bench-serve: --connect and --babi are required (see --help)\n");
        return 2;
    }
    if (b.connections <= 0) b.connections = b.sessions < 64 ? b.sessions : 64;
    if (b.connections > b.sessions) b.connections = b.sessions;
    if (!load_babi(&b, babi)) return 1;
    b.loop = uv_default_loop();
    b.all = calloc((size_t)b.sessions, sizeof *b.all);
    b.conns = calloc((size_t)b.connections, sizeof *b.conns);
    for (int i = 0; i < b.connections; i++) {
        conn *c = &b.conns[i];
        c->b = &b;
        c->next_msgid = 1;
        c->sessions = calloc((size_t)b.sessions / (size_t)b.connections + 1, sizeof *c->sessions);
        fwm__rpc_limits lim = fwm__rpc_default_limits();
        fwm__rpc_reader_init(&c->reader, &lim);
        const char *addr = b.addresses[i % b.address_count];
        c->connect.data = c;
        if (strncmp(addr, "unix:", 5) == 0) {
            uv_pipe_init(b.loop, &c->h.pipe, 0);
            uv_pipe_connect(&c->connect, &c->h.pipe, addr + 5, on_connect);
        } else {
            const char *hp = strncmp(addr, "tcp://", 6) == 0 ? addr + 6 : addr;
            char host[128];
            const char *colon = strrchr(hp, ':');
            snprintf(host, sizeof host, "%.*s", (int)(colon - hp), hp);
            struct sockaddr_in sa;
            uv_ip4_addr(host, atoi(colon + 1), &sa);
            uv_tcp_init(b.loop, &c->h.tcp);
            uv_tcp_nodelay(&c->h.tcp, 1);
            uv_tcp_connect(&c->connect, &c->h.tcp, (const struct sockaddr *)&sa, on_connect);
        }
    }
    for (int i = 0; i < b.sessions; i++) {
        session *s = &b.all[i];
        s->index = i;
        s->conn = &b.conns[i % b.connections];
        s->cursor = b.story_starts[((size_t)i * 7919u) % b.story_count]; /* spread over the stream */
        s->conn->sessions[s->conn->session_count++] = s;
    }
    uv_timer_init(b.loop, &b.timer);
    b.timer.data = &b;
    uv_timer_start(&b.timer, on_timer, 1, 1);
    uv_prepare_init(b.loop, &b.flush);
    b.flush.data = &b;
    uv_prepare_start(&b.flush, flush_all);
    uv_run(b.loop, UV_RUN_DEFAULT);
    release(&b);
    return 0;
}
