/* test_client.c - the C client library against a real fwm-serve: every method, the streamed
 * predictions equal to libfwm's own (stepped here, independently of the server), errors carried
 * with their codes, TCP and Unix sockets, and a clean failure once the server is gone; a feed's
 * logprobs equal to libfwm's (fwm_session_predict and the steps' scores through fwm_logprob).
 * Usage: test_client PATH/TO/fwm-serve PATH/TO/fwm-init */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "fwm/fwm.h"
#include "fwm/fwm_client.h"

#define TOPK 3

static fwm_model *model;
static uint32_t vocab;

typedef struct seen {
    size_t count;
    uint64_t pos[64];
    uint32_t token[64];
    char words[64][TOPK][32];
    float probs[64][TOPK];
    size_t topk[64];
} seen;

static void collect(void *user, const fwm_client_token_event *e) {
    seen *s = user;
    if (s->count >= 64) return;
    size_t i = s->count++;
    s->pos[i] = e->pos;
    s->token[i] = e->token;
    s->topk[i] = e->topk_count;
    for (size_t k = 0; k < e->topk_count && k < TOPK; k++) {
        snprintf(s->words[i][k], sizeof s->words[i][k], "%s", e->topk[k].word);
        s->probs[i][k] = e->topk[k].probability;
    }
}

/* Step `tokens` on `session` locally and compare each prediction with the streamed one. */
static void compare(fwm_session *session, const seen *s, const uint32_t *tokens, size_t n, const char *what) {
    float *logits = malloc(vocab * sizeof *logits);
    fwm_prediction top[TOPK];
    CHECK_U64(s->count, n);
    for (size_t i = 0; i < n && i < s->count; i++) {
        fwm_session_step(session, tokens[i], logits, NULL);
        size_t k = fwm_top_k(logits, vocab, TOPK, top);
        CHECK_U64(s->token[i], tokens[i]);
        CHECK_U64(s->pos[i], fwm_session_position(session));
        CHECK_U64(s->topk[i], k);
        for (size_t j = 0; j < k; j++) {
            if (strcmp(s->words[i][j], fwm_model_token_text(model, top[j].token)) != 0 ||
                s->probs[i][j] != top[j].probability) {
                fprintf(stderr, "%s: token %zu rank %zu: server '%s' %.9g, libfwm '%s' %.9g\n", what, i, j,
                        s->words[i][j], (double)s->probs[i][j], fwm_model_token_text(model, top[j].token),
                        (double)top[j].probability);
                check_failures++;
            }
        }
    }
    free(logits);
}

static pid_t start_server(const char *serve, const char *model_path, const char *dir, char *tcp, char *unix_address) {
    char port_file[512], sock[512];
    snprintf(port_file, sizeof port_file, "%s/port", dir);
    snprintf(sock, sizeof sock, "unix:%s/s.sock", dir);
    pid_t pid = fork();
    if (pid == 0) {
        execl(serve, serve, model_path, "--listen", "tcp://127.0.0.1:0", "--listen", sock, "--port-file", port_file,
              "--quiet", (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 1000 && access(port_file, R_OK) != 0; i++) usleep(10000);
    FILE *f = fopen(port_file, "r");
    if (!f || fscanf(f, "%255s %255s", tcp, unix_address) != 2) {
        fprintf(stderr, "fwm-serve did not start\n");
        kill(pid, SIGKILL);
        exit(1);
    }
    fclose(f);
    return pid;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: test_client PATH/TO/fwm-serve PATH/TO/fwm-init\n");
        return 2;
    }
    char dir[] = "/tmp/fwm-test-client-XXXXXX", path[256], command[1024], tcp[256], unix_address[256];
    if (!mkdtemp(dir)) return 2;
    snprintf(path, sizeof path, "%s/m.gguf", dir);
    snprintf(command, sizeof command,
             "'%s' --out '%s' --vocab-size 40 --embedding 16 --hidden 16 --memory-s 4 --memory-r 4 --memory-t 4 "
             "--seed 9 --name clientmodel > /dev/null",
             argv[2], path);
    if (system(command) != 0 || fwm_model_load(path, NULL, &model, NULL) != FWM_OK) {
        fprintf(stderr, "cannot make a test model: %s\n", command);
        return 2;
    }
    fwm_model_info info;
    fwm_model_get_info(model, &info);
    vocab = info.vocab_size;
    pid_t pid = start_server(argv[1], path, dir, tcp, unix_address);

    fwm_client *c = NULL;
    fwm_client_error err;
    CHECK_U64(fwm_client_connect(tcp, NULL, &c, &err), FWM_RPC_OK);
    fwm_client_hello_info h;
    CHECK_U64(fwm_client_hello(c, &h, &err), FWM_RPC_OK);
    CHECK_STR(h.server, "fwm-serve");
    CHECK_U64(h.protocol, FWM_PROTOCOL_VERSION);
    CHECK_U64(h.model_count, 1);
    if (h.model_count == 1) {
        CHECK_STR(h.models[0].name, "clientmodel");
        CHECK_U64(h.models[0].vocab_size, 40);
        CHECK_STR(h.models[0].tokenizer, "word");
        CHECK(!h.models[0].has_unknown_token && h.models[0].logprobs);
    }

    CHECK(!h.durable);
    CHECK_STR(h.fsync, "");

    char s[FWM_CLIENT_SESSION_ID_SIZE], child[FWM_CLIENT_SESSION_ID_SIZE], restored[FWM_CLIENT_SESSION_ID_SIZE];
    CHECK_U64(fwm_client_open(c, NULL, TOPK, s, &err), FWM_RPC_OK);
    CHECK_U64(strlen(s), 32);
    /* sessions: the one session, then a page after it is empty */
    const fwm_client_session_info *items;
    size_t listed;
    const char *next;
    CHECK_U64(fwm_client_sessions(c, NULL, 0, &items, &listed, &next, &err), FWM_RPC_OK);
    CHECK_U64(listed, 1);
    if (listed == 1) {
        CHECK_STR(items[0].session, s);
        CHECK_STR(items[0].model, "clientmodel");
        CHECK(items[0].resident && items[0].last_used_ms > 1700000000000ull);
        CHECK(items[0].has_pos && items[0].pos == 1); /* primed: it has read "<eos>" */
    }
    CHECK(next == NULL);
    CHECK_U64(fwm_client_sessions(c, s, 10, &items, &listed, &next, &err), FWM_RPC_OK);
    CHECK_U64(listed, 0);
    CHECK_U64(fwm_client_sessions(c, "not-an-id", 10, &items, &listed, &next, &err), FWM_RPC_BAD_PARAMS);
    /* the server's session is primed: it has read the eos token (the model file leaves out
     * fwm.session.prime_tokens), which the local reference reads itself */
    fwm_session *local;
    fwm_session_create(model, &local, NULL);
    CHECK_U64(info.prime_token_count, 1);
    fwm_session_step(local, info.eos_token_id, NULL, NULL);

    /* streamed predictions equal libfwm's */
    seen got = {0};
    uint64_t pos = 0, fed = 0;
    CHECK_U64(fwm_client_feed(c, s, "w4 w5 . w6 W7 .", -1, collect, &got, &pos, &fed, &err), FWM_RPC_OK);
    CHECK_U64(fed, 6);
    CHECK_U64(pos, 7);
    uint32_t text_tokens[6];
    size_t n = 0;
    fwm_tokenize(model, "w4 w5 . w6 w7 .", 15, text_tokens, 6, &n, NULL);
    compare(local, &got, text_tokens, n, "feed text");
    const uint32_t ids[4] = {9, 10, 2, 11};
    memset(&got, 0, sizeof got);
    CHECK_U64(fwm_client_feed_tokens(c, s, ids, 4, TOPK, collect, &got, &pos, &fed, &err), FWM_RPC_OK);
    compare(local, &got, ids, 4, "feed tokens");
    CHECK_U64(pos, 11);

    /* ask: the answer is libfwm's top-1 after the question */
    fwm_client_answer a;
    CHECK_U64(fwm_client_ask(c, s, "w12 w13", false, &a, &err), FWM_RPC_OK); /* "?" appended */
    uint32_t question[3] = {12, 13, 3};
    float *logits = malloc(vocab * sizeof *logits);
    for (int i = 0; i < 3; i++) fwm_session_step(local, question[i], logits, NULL);
    fwm_prediction top[TOPK];
    fwm_top_k(logits, vocab, TOPK, top);
    CHECK_STR(a.answer, fwm_model_token_text(model, top[0].token));
    CHECK(a.probability == top[0].probability);
    CHECK_U64(a.pos, 14);
    CHECK_U64(a.topk_count, TOPK);

    /* predict = the same prediction again */
    CHECK_U64(fwm_client_predict(c, s, 2, &a, &err), FWM_RPC_OK);
    CHECK_U64(a.topk_count, 2);
    CHECK_STR(a.topk[0].word, fwm_model_token_text(model, top[0].token));
    CHECK_STR(a.topk[1].word, fwm_model_token_text(model, top[1].token));

    /* snapshot / restore, fork */
    void *blob = NULL;
    size_t size = 0;
    CHECK_U64(fwm_client_snapshot(c, s, &blob, &size, &err), FWM_RPC_OK);
    CHECK_U64(size, info.state_blob_bytes);
    CHECK_U64(fwm_client_restore(c, blob, size, NULL, restored, &err), FWM_RPC_OK);
    CHECK(strcmp(restored, s) != 0);
    fwm_client_answer b;
    CHECK_U64(fwm_client_feed(c, restored, "w20", -1, NULL, NULL, &pos, NULL, &err), FWM_RPC_OK);
    CHECK_U64(pos, 15);
    CHECK_U64(fwm_client_fork(c, s, child, &err), FWM_RPC_OK);
    CHECK_U64(fwm_client_feed(c, s, "w20", -1, NULL, NULL, NULL, NULL, &err), FWM_RPC_OK);
    CHECK_U64(fwm_client_predict(c, s, 3, &a, &err), FWM_RPC_OK);
    char first[64];
    snprintf(first, sizeof first, "%s", a.topk[0].word);
    float p0 = a.topk[0].probability;
    CHECK_U64(fwm_client_predict(c, restored, 3, &b, &err), FWM_RPC_OK);
    CHECK_STR(b.topk[0].word, first);
    CHECK(b.topk[0].probability == p0);
    CHECK_U64(fwm_client_feed(c, child, "w30 w31 w32 .", -1, NULL, NULL, NULL, NULL, &err), FWM_RPC_OK);
    CHECK_U64(fwm_client_predict(c, s, 3, &a, &err), FWM_RPC_OK);
    CHECK_STR(a.topk[0].word, first); /* the parent did not see the child's words */
    char stats[8192]; /* as fwm-cli's */
    fwm_client_stats(c, stats, sizeof stats, &err);
    CHECK_CONTAINS(stats, "sessions: 3\n");
    CHECK_CONTAINS(stats, "token_latency_ms.p99: ");
    CHECK_CONTAINS(stats, "errors_by_code.unknown_session: ");

    /* errors carry the server's codes and messages */
    CHECK_U64(fwm_client_feed(c, "00000000000000000000000000000000", "w4", -1, NULL, NULL, NULL, NULL, &err),
               FWM_RPC_UNKNOWN_SESSION);
    CHECK_STR(err.name, "unknown_session");
    CHECK_U64(fwm_client_feed(c, s, "w4 zebra", -1, NULL, NULL, NULL, NULL, &err), FWM_RPC_UNKNOWN_WORD);
    CHECK_CONTAINS(err.message, "zebra");
    CHECK_U64(fwm_client_open(c, "nosuchmodel", -1, s, &err), FWM_RPC_UNKNOWN_MODEL);
    CHECK_U64(fwm_client_restore(c, "junk", 4, NULL, restored, &err), FWM_RPC_STATE_CORRUPT);
    CHECK_U64(fwm_client_reset_unprimed(c, child, &err), FWM_RPC_OK);
    CHECK_U64(fwm_client_predict(c, child, 3, &a, &err), FWM_RPC_OK);
    CHECK_U64(a.topk_count, 0);
    CHECK_U64(a.pos, 0);
    /* reset primes again: the prediction after the eos token, read from zero here */
    CHECK_U64(fwm_client_reset(c, child, &err), FWM_RPC_OK);
    CHECK_U64(fwm_client_predict(c, child, 3, &a, &err), FWM_RPC_OK);
    fwm_session *fresh;
    fwm_session_create(model, &fresh, NULL);
    fwm_session_step(fresh, info.eos_token_id, logits, NULL);
    fwm_top_k(logits, vocab, TOPK, top);
    CHECK_U64(a.pos, 1);
    CHECK_U64(a.topk_count, 3);
    CHECK_STR(a.topk[0].word, fwm_model_token_text(model, top[0].token));
    CHECK(a.topk[0].probability == top[0].probability);
    fwm_session_free(fresh);
    /* an unprimed open starts at zero */
    char raw[FWM_CLIENT_SESSION_ID_SIZE];
    CHECK_U64(fwm_client_open_unprimed(c, NULL, -1, raw, &err), FWM_RPC_OK);
    CHECK_U64(fwm_client_predict(c, raw, 3, &a, &err), FWM_RPC_OK);
    CHECK_U64(a.pos + a.topk_count, 0);
    /* a feed with logprobs: each token's log-probability from libfwm's own scores, the first from the
     * zero state's (fwm_session_predict), the others from the step before */
    fwm_client_feed_result fr;
    CHECK_U64(fwm_client_feed_scored(c, raw, "w4 w5 . w6", NULL, 0, -1, true, NULL, NULL, &fr, &err), FWM_RPC_OK);
    const uint32_t scored[4] = {4, 5, 2, 6};
    CHECK_U64(fr.fed, 4);
    CHECK_U64(fr.pos, 4);
    CHECK_U64(fr.unknown_count, 0);
    CHECK_U64(fr.token_count, 4);
    fwm_session *zero;
    fwm_session_create(model, &zero, NULL);
    CHECK_U64(fwm_session_predict(zero, logits, NULL), FWM_OK);
    for (size_t i = 0; i < 4 && fr.token_count == 4; i++) {
        CHECK_U64(fr.tokens[i], scored[i]);
        double want = fwm_logprob(logits, vocab, scored[i], 1.0);
        if (fr.logprobs[i] != want) {
            fprintf(stderr, "logprob %zu: %.17g, libfwm %.17g\n", i, fr.logprobs[i], want);
            check_failures++;
        }
        fwm_session_step(zero, scored[i], logits, NULL);
    }
    fwm_session_free(zero);
    /* without logprobs: no ids, no log-probabilities */
    CHECK_U64(fwm_client_feed_scored(c, raw, NULL, scored, 2, -1, false, NULL, NULL, &fr, &err), FWM_RPC_OK);
    CHECK_U64(fr.pos, 6);
    CHECK(fr.token_count == 0 && fr.tokens == NULL && fr.logprobs == NULL);
    CHECK_U64(fwm_client_feed_scored(c, raw, NULL, NULL, 1, -1, true, NULL, NULL, &fr, &err),
              FWM_RPC_CLIENT_ARGUMENT);
    CHECK_U64(fwm_client_close_session(c, raw, &err), FWM_RPC_OK);
    CHECK_U64(fwm_client_close_session(c, child, &err), FWM_RPC_OK);
    CHECK_U64(fwm_client_predict(c, child, 3, &a, &err), FWM_RPC_UNKNOWN_SESSION);

    /* the Unix socket serves the same sessions */
    fwm_client *u = NULL;
    CHECK_U64(fwm_client_connect(unix_address, NULL, &u, &err), FWM_RPC_OK);
    CHECK_U64(fwm_client_predict(u, s, 3, &a, &err), FWM_RPC_OK);
    CHECK_STR(a.topk[0].word, first);
    fwm_client_free(u);

    fwm_client *bad = NULL;
    CHECK_U64(fwm_client_connect("tcp://127.0.0.1:1", NULL, &bad, &err), FWM_RPC_CONNECT);
    CHECK(bad == NULL);
    CHECK_U64(fwm_client_connect("nonsense", NULL, &bad, &err), FWM_RPC_CLIENT_ARGUMENT);

    /* the server stops cleanly; the client then fails with io */
    kill(pid, SIGTERM);
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK_U64(fwm_client_hello(c, &h, &err), FWM_RPC_IO);
    CHECK_U64(fwm_client_hello(c, &h, &err), FWM_RPC_IO);
    fwm_client_free(c);
    fwm_client_free(NULL);

    free(blob);
    free(logits);
    fwm_session_free(local);
    fwm_model_free(model);
    snprintf(command, sizeof command, "rm -rf '%s'", dir);
    if (system(command) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return check_finish("test_client");
}
