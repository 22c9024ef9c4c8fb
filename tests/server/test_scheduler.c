/* test_scheduler.c - continuous batching gives exactly the predictions of stepping each session
 * alone (sequential fwm_session_step + fwm_top_k, bit for bit), in order, with responses after their
 * notifications; congested sinks park their sessions without stalling others; cancel ends all jobs.
 * Usage: test_scheduler PATH/TO/fwm-init (a random model is made in a temp dir). */
#include <msgpack.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "fwm/fwm.h"
#include "sessions/scheduler.h"

#define SESSIONS 60
#define MAX_TOKENS 40
#define TOPK 3

typedef struct collected {
    pthread_mutex_t mutex;
    fwm__outbox *head, *tail;
    size_t finished_jobs;
} collected;

static void post(void *user, fwm__outbox *o) {
    collected *c = user;
    pthread_mutex_lock(&c->mutex);
    o->next = NULL;
    if (c->tail) c->tail->next = o;
    else c->head = o;
    c->tail = o;
    for (size_t i = 0; i < o->record_count; i++)
        if (o->records[i].job_finished) c->finished_jobs++;
    pthread_mutex_unlock(&c->mutex);
}

static size_t finished(collected *c) {
    pthread_mutex_lock(&c->mutex);
    size_t n = c->finished_jobs;
    pthread_mutex_unlock(&c->mutex);
    return n;
}

static bool wait_for(collected *c, size_t jobs, double seconds) {
    for (int i = 0; i < (int)(seconds * 200) && finished(c) < jobs; i++) usleep(5000);
    return finished(c) >= jobs;
}

typedef struct session_case {
    fwm__session_entry *entry;
    fwm__sink sink;
    uint32_t tokens[MAX_TOKENS];
    size_t count;
    size_t seen;       /* notifications checked */
    size_t responses;  /* feed responses seen */
    size_t fed_total;  /* sum of their `fed` */
} session_case;

static fwm_model *model;
static uint32_t vocab;
static session_case cases[SESSIONS];

static const msgpack_object *map_get(const msgpack_object *map, const char *key) {
    for (uint32_t i = 0; i < map->via.map.size; i++) {
        const msgpack_object *k = &map->via.map.ptr[i].key;
        if (k->type == MSGPACK_OBJECT_STR && k->via.str.size == strlen(key) &&
            memcmp(k->via.str.ptr, key, k->via.str.size) == 0)
            return &map->via.map.ptr[i].val;
    }
    return NULL;
}

static session_case *case_of_sink(const fwm__sink *sink) {
    for (int i = 0; i < SESSIONS; i++)
        if (&cases[i].sink == sink) return &cases[i];
    return NULL;
}

/* The reference: step a fresh session through the case's tokens alone. */
static void reference(const session_case *sc, size_t upto, fwm_prediction *top, size_t *n) {
    fwm_session *s;
    fwm_session_create(model, &s, NULL);
    float *logits = malloc(vocab * sizeof *logits);
    for (size_t i = 0; i <= upto; i++) fwm_session_step(s, sc->tokens[i], logits, NULL);
    *n = fwm_top_k(logits, vocab, TOPK, top);
    free(logits);
    fwm_session_free(s);
}

static void check_message(session_case *sc, const msgpack_object *msg) {
    const msgpack_object *a = msg->via.array.ptr;
    if (a[0].via.u64 == 2) { /* [2, "token", [{...}]] */
        const msgpack_object *p = &a[2].via.array.ptr[0];
        size_t i = sc->seen++;
        CHECK_U64(map_get(p, "pos")->via.u64, i + 1);
        CHECK_U64(map_get(p, "token")->via.u64, sc->tokens[i]);
        const msgpack_object *topk = map_get(p, "topk");
        fwm_prediction ref[TOPK];
        size_t n;
        reference(sc, i, ref, &n);
        CHECK_U64(topk->via.array.size, n);
        for (size_t k = 0; k < n && k < topk->via.array.size; k++) {
            const msgpack_object *pair = topk->via.array.ptr[k].via.array.ptr;
            const char *word = fwm_model_token_text(model, ref[k].token);
            if (pair[0].via.str.size != strlen(word) || memcmp(pair[0].via.str.ptr, word, strlen(word)) != 0 ||
                (float)pair[1].via.f64 != ref[k].probability) {
                fprintf(stderr, "session %s token %zu rank %zu: batched '%.*s' %.9g, sequential '%s' %.9g\n",
                        sc->entry->hex, i, k, (int)pair[0].via.str.size, pair[0].via.str.ptr, pair[1].via.f64, word,
                        (double)ref[k].probability);
                check_failures++;
            }
        }
    } else { /* [1, msgid, nil, {session, pos, fed}] */
        CHECK(a[2].type == MSGPACK_OBJECT_NIL);
        const msgpack_object *r = &a[3];
        sc->responses++;
        sc->fed_total += map_get(r, "fed")->via.u64;
        CHECK_U64(sc->fed_total, sc->seen); /* the response follows its notifications */
        CHECK_U64(map_get(r, "pos")->via.u64, sc->seen);
    }
}

static void check_outputs(collected *c) {
    for (fwm__outbox *o = c->head; o; o = o->next) {
        for (size_t i = 0; i < o->record_count; i++) {
            const fwm__outbox_record *r = &o->records[i];
            session_case *sc = case_of_sink(r->sink);
            if (!sc || r->length == 0) continue;
            size_t off = 0;
            msgpack_unpacked u;
            msgpack_unpacked_init(&u);
            while (off < r->length &&
                   msgpack_unpack_next(&u, o->buffer.data + r->offset, r->length, &off) == MSGPACK_UNPACK_SUCCESS)
                check_message(sc, &u.data);
            msgpack_unpacked_destroy(&u);
        }
    }
}

static void free_outputs(collected *c) {
    while (c->head) {
        fwm__outbox *next = c->head->next;
        fwm__outbox_free(c->head);
        c->head = next;
    }
    c->tail = NULL;
    c->finished_jobs = 0;
}

static fwm__job *feed_job(session_case *sc, size_t from, size_t count) {
    fwm__job *job = fwm__job_new(FWM_JOB_FEED);
    job->tokens = malloc((count ? count : 1) * sizeof *job->tokens);
    memcpy(job->tokens, sc->tokens + from, count * sizeof *job->tokens);
    job->count = count;
    job->topk = TOPK;
    job->notify = true;
    job->respond = true;
    job->sink = &sc->sink;
    return job;
}

static void make_cases(void) {
    srand(2024);
    for (int i = 0; i < SESSIONS; i++) {
        session_case *sc = &cases[i];
        memset(sc, 0, sizeof *sc);
        sc->entry = fwm__session_entry_new();
        fwm_session_create(model, &sc->entry->session, NULL);
        sc->entry->last_logits = calloc(vocab, sizeof(float));
        sc->count = 1 + (size_t)rand() % MAX_TOKENS;
        for (size_t t = 0; t < sc->count; t++) sc->tokens[t] = (uint32_t)rand() % vocab;
    }
}

static void free_cases(void) {
    for (int i = 0; i < SESSIONS; i++) {
        fwm__session_entry_free(cases[i].entry);
        cases[i].entry = NULL;
    }
}

static fwm__scheduler *start(collected *c, size_t workers, size_t max_batch) {
    static const fwm_model *models[1]; /* borrowed by the scheduler: must outlive it */
    models[0] = model;
    fwm__scheduler_params p = {.models = models, .model_count = 1, .workers = workers, .max_batch = max_batch,
                               .post = post, .user = c};
    return fwm__scheduler_start(&p);
}

static void test_batched_equals_sequential(void) {
    collected c = {.mutex = PTHREAD_MUTEX_INITIALIZER};
    make_cases();
    fwm__scheduler *s = start(&c, 2, 8);
    CHECK(s != NULL);
    /* each session's tokens in up to three feeds, submitted interleaved across sessions */
    size_t jobs = 0, tokens = 0, cut[SESSIONS][3];
    for (int i = 0; i < SESSIONS; i++) {
        cut[i][0] = 0;
        cut[i][1] = (size_t)rand() % (cases[i].count + 1);
        cut[i][2] = cases[i].count;
        tokens += cases[i].count;
    }
    for (int part = 0; part < 2; part++)
        for (int i = 0; i < SESSIONS; i++) {
            fwm__scheduler_submit(s, cases[i].entry,
                                  feed_job(&cases[i], cut[i][part], cut[i][part + 1] - cut[i][part]));
            jobs++;
        }
    CHECK(wait_for(&c, jobs, 20));
    fwm__scheduler_stats st;
    fwm__scheduler_get_stats(s, &st);
    CHECK_U64(st.tokens, tokens);
    CHECK_U64(st.jobs_pending, 0);
    CHECK_U64(st.tokens_queued, 0);
    CHECK(st.batch_max > 1); /* sessions really were stepped together */
    CHECK(st.batch_max <= 8);
    printf("batched: %zu sessions, %zu tokens, %llu batches, mean size %.2f, max %llu\n", (size_t)SESSIONS, tokens,
           (unsigned long long)st.batches, (double)st.batch_sessions / (double)st.batches,
           (unsigned long long)st.batch_max);
    check_outputs(&c);
    for (int i = 0; i < SESSIONS; i++) {
        CHECK_U64(cases[i].seen, cases[i].count);
        CHECK_U64(cases[i].responses, 2);
        CHECK_U64(fwm_session_position(cases[i].entry->session), cases[i].count);
    }
    fwm__scheduler_stop(s);
    free_outputs(&c);
    free_cases();
}

static size_t records_for(collected *c, const fwm__sink *sink) {
    size_t n = 0;
    pthread_mutex_lock(&c->mutex);
    for (fwm__outbox *o = c->head; o; o = o->next)
        for (size_t i = 0; i < o->record_count; i++) n += o->records[i].sink == sink;
    pthread_mutex_unlock(&c->mutex);
    return n;
}

static void test_congestion_parks(void) {
    collected c = {.mutex = PTHREAD_MUTEX_INITIALIZER};
    make_cases();
    fwm__scheduler *s = start(&c, 2, 4);
    fwm__scheduler_set_congested(s, &cases[0].sink, true);
    fwm__scheduler_submit(s, cases[0].entry, feed_job(&cases[0], 0, cases[0].count));
    fwm__scheduler_submit(s, cases[1].entry, feed_job(&cases[1], 0, cases[1].count));
    CHECK(wait_for(&c, 1, 10)); /* the other session finishes */
    usleep(100000);
    CHECK_U64(records_for(&c, &cases[0].sink), 0);
    fwm__scheduler_stats st;
    fwm__scheduler_get_stats(s, &st);
    CHECK_U64(st.parked_sessions, 1);
    CHECK(fwm__scheduler_entry_busy(s, cases[0].entry));
    fwm__scheduler_set_congested(s, &cases[0].sink, false);
    CHECK(wait_for(&c, 2, 10));
    check_outputs(&c);
    CHECK_U64(cases[0].seen, cases[0].count);
    CHECK_U64(cases[1].seen, cases[1].count);
    fwm__scheduler_stop(s);
    free_outputs(&c);
    free_cases();
}

static void test_cancel_and_close(void) {
    collected c = {.mutex = PTHREAD_MUTEX_INITIALIZER};
    make_cases();
    fwm__scheduler *s = start(&c, 1, 2);
    fwm__scheduler_set_congested(s, &cases[0].sink, true); /* parked: cancel must still end it */
    size_t jobs = 0;
    for (int i = 0; i < 10; i++, jobs++)
        fwm__scheduler_submit(s, cases[i].entry, feed_job(&cases[i], 0, cases[i].count));
    fwm__scheduler_cancel(s);
    fwm__job *close = fwm__job_new(FWM_JOB_CLOSE); /* CLOSE frees its entry on the worker */
    close->sink = &cases[1].sink;
    close->respond = true;
    fwm__scheduler_submit(s, cases[1].entry, close);
    jobs++;
    CHECK(wait_for(&c, jobs, 10));
    fwm__scheduler_stats st;
    fwm__scheduler_get_stats(s, &st);
    CHECK_U64(st.jobs_pending, 0);
    CHECK_U64(st.tokens_queued, 0);
    fwm__scheduler_stop(s);
    cases[1].entry = NULL; /* freed by its CLOSE job */
    long freed = 0;
    for (fwm__outbox *o = c.head; o; o = o->next) freed += o->sessions_freed;
    CHECK_U64(freed, 1);
    free_outputs(&c);
    free_cases();
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_scheduler PATH/TO/fwm-init\n");
        return 2;
    }
    char dir[] = "/tmp/fwm-test-scheduler-XXXXXX", command[1024], path[256];
    if (!mkdtemp(dir)) return 2;
    snprintf(path, sizeof path, "%s/model.gguf", dir);
    snprintf(command, sizeof command,
             "'%s' --out '%s' --vocab-size 60 --embedding 16 --hidden 16 --memory-s 4 --memory-r 4 --memory-t 4 "
             "--seed 5 > /dev/null",
             argv[1], path);
    if (system(command) != 0) {
        fprintf(stderr, "cannot make a test model with: %s\n", command);
        return 2;
    }
    fwm_error err;
    if (fwm_model_load(path, NULL, &model, &err) != FWM_OK) {
        fprintf(stderr, "cannot load %s: %s\n", path, err.message);
        return 2;
    }
    unlink(path);
    rmdir(dir);
    fwm_model_info info;
    fwm_model_get_info(model, &info);
    vocab = info.vocab_size;
    test_batched_equals_sequential();
    test_congestion_parks();
    test_cancel_and_close();
    fwm_model_free(model);
    return check_finish("test_scheduler");
}
