/* bench_arch.c - bench-arch: the architectures side by side, one table from one invocation.
 *
 * For each model file named on the command line it prints the architecture, parameters, bytes a
 * session holds, bytes of its exported state, and the runtime's speed over a story-shaped token
 * stream: tokens per second of one session (fwm_session_step with logits) and of a batch of
 * 64 sessions on one thread (fwm_batch_step), each the median over the repetitions, and the ratio of
 * each median to the first file's (the reference, normally the FWM). Repetitions run the models in
 * turn (round robin), so load from other processes falls on all of them alike.
 *
 * The stream: sentences of five words ended by the model's "." (a statement), every third one by
 * its "?" (a question) followed by one answer word, so an STM in sentence mode steps and answers as
 * it would on bAbI text; words are drawn from the vocabulary without the end marks, padding and
 * <eos>. Speeds count every token read (words and marks), the unit users feed.
 * A benchmark prints figures; it never fails on time.
 *
 * Usage: bench-arch [--quick] model.gguf [model.gguf ...]
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fwm/fwm.h"
#include "bench_timing.h"

#define BATCH 64
#define MAX_MODELS 16

static int repetitions = 9;
static double target_seconds = 0.2; /* per model per repetition and measurement */

typedef struct entry {
    const char *path;
    fwm_model *model;
    fwm_model_info info;
    uint32_t *tokens; /* the stream, [steps * BATCH] (session i reads position s at [s * BATCH + i]) */
    size_t steps_single, steps_batch;
    float *logits;   /* [BATCH][V] */
    double single[32], batch[32]; /* tokens/s per repetition */
} entry;

static void die(const char *what, fwm_status status, const fwm_error *err) {
    fprintf(stderr, "bench-arch: %s: %s (%s)\n", what, fwm_status_str(status), err ? err->message : "");
    exit(1);
}

static uint64_t next_random(uint64_t *s) { /* splitmix64 */
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static bool lookup(const fwm_model *model, const char *word, uint32_t *id) {
    return fwm_model_token_id(model, word, strlen(word), id) == FWM_OK;
}

/* Fill tokens[count] with the story-shaped stream for this model. Session i of a batch reads the
 * positions [s * BATCH + i]; each session's column is its own stream. */
static void fill_stream(const entry *e, uint32_t *tokens, size_t count, uint64_t seed) {
    uint32_t dot = UINT32_MAX, question = UINT32_MAX;
    if (e->info.sentence_input) {
        dot = e->info.statement_end_token_id;
        question = e->info.question_end_token_id;
    } else {
        if (!lookup(e->model, ".", &dot)) dot = UINT32_MAX;
        if (!lookup(e->model, "?", &question)) question = UINT32_MAX;
    }
    uint32_t V = e->info.vocab_size;
    for (size_t i = 0; i < BATCH; i++) {
        uint64_t rng = seed * 1000003u + i;
        int in_sentence = 0, sentence = 0, answer_due = 0;
        for (size_t p = i; p < count; p += BATCH) {
            uint32_t word;
            do {
                word = (uint32_t)(next_random(&rng) % V);
            } while (V > 6 && (word == dot || word == question || word == e->info.padding_token_id ||
                               word == e->info.eos_token_id));
            uint32_t t = word;
            if (answer_due) {
                answer_due = 0; /* the answer word */
            } else if (in_sentence == 5) {
                sentence++;
                bool is_question = sentence % 3 == 0 && question != UINT32_MAX;
                uint32_t mark = is_question ? question : dot;
                if (mark != UINT32_MAX) t = mark;
                answer_due = is_question;
                in_sentence = 0;
            } else {
                in_sentence++;
            }
            tokens[p] = t;
        }
    }
}

static void load(entry *e) {
    fwm_error err;
    fwm_status st = fwm_model_load(e->path, NULL, &e->model, &err);
    if (st != FWM_OK) die(e->path, st, &err);
    fwm_model_get_info(e->model, &e->info);
    e->logits = malloc((size_t)BATCH * e->info.vocab_size * sizeof(float));
    if (!e->logits) die("logits", FWM_ERR_OUT_OF_MEMORY, NULL);
}

/* The steps one measurement takes so it lasts about target_seconds, from a short trial. */
static void size_runs(entry *e) {
    fwm_error err;
    fwm_session *s = NULL;
    fwm_status st = fwm_session_create(e->model, &s, &err);
    if (st != FWM_OK) die("fwm_session_create", st, &err);
    size_t trial = 64;
    uint32_t *t = malloc(trial * BATCH * sizeof *t);
    fill_stream(e, t, trial * BATCH, 7);
    double t0 = bench_now();
    for (size_t i = 0; i < trial; i++) {
        st = fwm_session_step(s, t[i * BATCH], e->logits, &err);
        if (st != FWM_OK) die("fwm_session_step", st, &err);
    }
    double per_token = (bench_now() - t0) / (double)trial;
    free(t);
    fwm_session_free(s);
    if (per_token <= 0) per_token = 1e-7;
    e->steps_single = (size_t)(target_seconds / per_token);
    e->steps_batch = (size_t)(target_seconds / (per_token * BATCH));
    if (e->steps_single < 16) e->steps_single = 16;
    if (e->steps_batch < 4) e->steps_batch = 4;
    size_t steps = e->steps_single > e->steps_batch ? e->steps_single : e->steps_batch;
    e->tokens = malloc(steps * BATCH * sizeof *e->tokens);
    if (!e->tokens) die("tokens", FWM_ERR_OUT_OF_MEMORY, NULL);
    fill_stream(e, e->tokens, steps * BATCH, 11);
}

/* tokens/s of one session reading its column of the stream a token at a time, with logits. */
static double run_single(entry *e) {
    fwm_error err;
    fwm_session *s = NULL;
    fwm_status st = fwm_session_create(e->model, &s, &err);
    if (st != FWM_OK) die("fwm_session_create", st, &err);
    double t0 = bench_now();
    for (size_t i = 0; i < e->steps_single; i++) {
        st = fwm_session_step(s, e->tokens[i * BATCH], e->logits, &err);
        if (st != FWM_OK) die("fwm_session_step", st, &err);
    }
    double rate = (double)e->steps_single / (bench_now() - t0);
    fwm_session_free(s);
    return rate;
}

/* tokens/s of BATCH sessions stepped together by fwm_batch_step on this thread. */
static double run_batch(entry *e) {
    fwm_error err;
    fwm_session *sessions[BATCH];
    for (int i = 0; i < BATCH; i++) {
        fwm_status st = fwm_session_create(e->model, &sessions[i], &err);
        if (st != FWM_OK) die("fwm_session_create", st, &err);
    }
    double t0 = bench_now();
    for (size_t s = 0; s < e->steps_batch; s++) {
        fwm_status st = fwm_batch_step(sessions, e->tokens + s * BATCH, BATCH, e->logits, &err);
        if (st != FWM_OK) die("fwm_batch_step", st, &err);
    }
    double rate = (double)e->steps_batch * BATCH / (bench_now() - t0);
    for (int i = 0; i < BATCH; i++) fwm_session_free(sessions[i]);
    return rate;
}

static const char *base_name(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

int main(int argc, char **argv) {
    entry entries[MAX_MODELS];
    int n = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            repetitions = 3;
            target_seconds = 0.05;
        } else if (strcmp(argv[i], "--help") == 0 || argv[i][0] == '-') {
            fprintf(stderr, "usage: bench-arch [--quick] model.gguf [model.gguf ...] (at most %d)\n", MAX_MODELS);
            return strcmp(argv[i], "--help") == 0 ? 0 : 2;
        } else if (n == MAX_MODELS) {
            fprintf(stderr, "bench-arch: at most %d model files\n", MAX_MODELS);
            return 2;
        } else {
            memset(&entries[n], 0, sizeof entries[n]);
            entries[n++].path = argv[i];
        }
    }
    if (n == 0) {
        fprintf(stderr, "usage: bench-arch [--quick] model.gguf [model.gguf ...]\n");
        return 2;
    }
    for (int m = 0; m < n; m++) {
        load(&entries[m]);
        size_runs(&entries[m]);
    }
    for (int r = -1; r < repetitions; r++) /* r = -1: warm-up */
        for (int m = 0; m < n; m++) {
            double single = run_single(&entries[m]);
            double batch = run_batch(&entries[m]);
            if (r >= 0) {
                entries[m].single[r] = single;
                entries[m].batch[r] = batch;
            }
        }
    printf("story-shaped stream (5 words and a mark, every third sentence a question and its answer);\n"
           "medians of %d round-robin repetitions of about %.2f s per model and measurement; one thread\n",
           repetitions, target_seconds);
    printf("%-26s %-5s %-8s %11s %12s %12s %12s %8s %12s %8s\n", "file", "arch", "input", "parameters",
           "state bytes", "blob bytes", "single tok/s", "ratio", "b64 tok/s", "ratio");
    double ref_single = bench_median(entries[0].single, (size_t)repetitions);
    double ref_batch = bench_median(entries[0].batch, (size_t)repetitions);
    for (int m = 0; m < n; m++) {
        entry *e = &entries[m];
        double single = bench_median(e->single, (size_t)repetitions),
               batch = bench_median(e->batch, (size_t)repetitions);
        const char *input = !e->info.predicts_every_token ? "sentence" : "word";
        printf("%-26s %-5s %-8s %11llu %12zu %12zu %12.0f %8.3f %12.0f %8.3f\n", base_name(e->path),
               e->info.architecture, input, (unsigned long long)e->info.parameter_count,
               e->info.session_state_bytes, e->info.state_blob_bytes, single, single / ref_single, batch,
               batch / ref_batch);
    }
    for (int m = 0; m < n; m++) {
        free(entries[m].tokens);
        free(entries[m].logits);
        fwm_model_free(entries[m].model);
    }
    return 0;
}
