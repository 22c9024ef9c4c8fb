/* scheduler.c - the ready list, the worker threads and one batch's work (see scheduler.h).
 *
 * Lock discipline: the mutex guards the ready and parked lists, every entry's [sched] fields, the
 * counters and sinks' `congested`. A worker holds the lock only to take a batch and to put it back;
 * stepping, top-k and encoding run unlocked on sessions the worker alone holds (entry->running).
 */
#include "scheduler.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "fwm/fwm_protocol.h"
#include "fwm_alloc.h"
#include "jobs.h"
#include <stdint.h>

struct fwm__scheduler {
    fwm__scheduler_params params;
    pthread_mutex_t mutex;
    pthread_cond_t wake;
    pthread_t *threads;
    size_t thread_count;
    struct worker *workers;
    fwm__session_entry *ready_head, *ready_tail;
    size_t ready_count;
    fwm__session_entry *parked;
    size_t parked_count;
    bool stopping, cancelled;
    uint64_t jobs_pending, tokens_queued;
    uint64_t tokens, batches, batch_sessions, batch_max;
    uint64_t batch_sizes[FWM_BATCH_SIZE_BUCKETS]; /* [k]: batches of (2^(k-1), 2^k] sessions */
    uint64_t *model_tokens;                        /* [model_count]: tokens stepped per model */
    fwm__histogram token_latency;
    uint32_t max_vocab;
    size_t max_blob;
    size_t max_word;  /* longest vocabulary entry, bytes */
};

typedef struct worker {
    fwm__scheduler *scheduler;
    fwm__session_entry **batch; /* [max_batch] sessions this worker holds */
    bool *finished;             /* [max_batch] its head job ended in this batch */
    bool *stepped;              /* [max_batch] it was stepped in this batch */
    bool *moved;                /* [max_batch] its node no longer owns it (cluster): jobs answered `moved` */
    fwm_session **sessions;     /* [max_batch] arguments of fwm_batch_step */
    uint32_t *tokens;
    size_t *rows;               /* [max_batch] batch index of each stepped row */
    float *logits;              /* [max_batch * max_vocab] */
    fwm__sink **sinks;          /* [max_batch] the sink each session's head job writes to */
    size_t *reserved;           /* [max_batch] output reserved for it on that sink */
    fwm__job_context jobs;      /* what jobs emit: outbox, predictions, blob scratch */
    fwm__histogram latency;
} worker;

static void ready_push(fwm__scheduler *s, fwm__session_entry *e) {
    e->queued = true;
    e->ready_next = NULL;
    if (s->ready_tail) s->ready_tail->ready_next = e;
    else s->ready_head = e;
    s->ready_tail = e;
    s->ready_count++;
}

static fwm__session_entry *ready_pop(fwm__scheduler *s) {
    fwm__session_entry *e = s->ready_head;
    if (!e) return NULL;
    s->ready_head = e->ready_next;
    if (!s->ready_head) s->ready_tail = NULL;
    e->ready_next = NULL;
    s->ready_count--;
    return e;
}


void fwm__scheduler_submit(fwm__scheduler *s, fwm__session_entry *e, fwm__job *job) {
    job->next = NULL;
    if (!job->enqueued_ns) job->enqueued_ns = fwm__now_ns();
    pthread_mutex_lock(&s->mutex);
    if (e->jobs_tail) e->jobs_tail->next = job;
    else e->jobs_head = job;
    e->jobs_tail = job;
    e->jobs_pending++;
    e->jobs_submitted++;
    s->jobs_pending++;
    s->tokens_queued += fwm__job_tokens_left(job);
    if (!e->queued && !e->running) {
        ready_push(s, e);
        pthread_cond_signal(&s->wake);
    }
    pthread_mutex_unlock(&s->mutex);
}

static bool sink_blocked(const fwm__scheduler *s, const fwm__sink *sink) {
    return sink->congested || (s->params.max_unsent && sink->unsent > s->params.max_unsent);
}

/* Make the sessions parked on `sink` ready again. Called locked. */
static void unpark(fwm__scheduler *s, const fwm__sink *sink) {
    fwm__session_entry **link = &s->parked;
    bool woke = false;
    while (*link) {
        fwm__session_entry *e = *link;
        if (e->jobs_head->sink == sink) {
            *link = e->ready_next;
            s->parked_count--;
            ready_push(s, e);
            woke = true;
        } else {
            link = &e->ready_next;
        }
    }
    if (woke) pthread_cond_broadcast(&s->wake);
}

void fwm__scheduler_set_congested(fwm__scheduler *s, fwm__sink *sink, bool congested) {
    pthread_mutex_lock(&s->mutex);
    sink->congested = congested;
    if (!sink_blocked(s, sink)) unpark(s, sink);
    pthread_mutex_unlock(&s->mutex);
}

void fwm__scheduler_delivered(fwm__scheduler *s, fwm__sink *sink, size_t bytes) {
    pthread_mutex_lock(&s->mutex);
    bool was = sink_blocked(s, sink);
    sink->unsent -= bytes < sink->unsent ? bytes : sink->unsent;
    if (was && !sink_blocked(s, sink)) unpark(s, sink);
    pthread_mutex_unlock(&s->mutex);
}

/* Count the outbox's bytes against their sinks before the loop can see them, and release what the
 * batch had reserved (sinks stay valid until the outbox is posted: their jobs' references are
 * released by its records). */
static void account(fwm__scheduler *s, const fwm__outbox *o, fwm__sink *const *sinks, const size_t *reserved,
                    size_t n) {
    pthread_mutex_lock(&s->mutex);
    for (size_t i = 0; o && i < o->record_count; i++)
        if (o->records[i].sink) o->records[i].sink->unsent += o->records[i].length;
    for (size_t i = 0; i < n; i++) {
        if (!sinks[i]) continue;
        sinks[i]->reserved -= reserved[i] < sinks[i]->reserved ? reserved[i] : sinks[i]->reserved;
        if (reserved[i] && !sink_blocked(s, sinks[i])) unpark(s, sinks[i]); /* parked for the reservation */
    }
    pthread_mutex_unlock(&s->mutex);
}

void fwm__scheduler_cancel(fwm__scheduler *s) {
    pthread_mutex_lock(&s->mutex);
    s->cancelled = true;
    /* parked sessions must finish too: their output is discarded with their connection */
    while (s->parked) {
        fwm__session_entry *e = s->parked;
        s->parked = e->ready_next;
        s->parked_count--;
        ready_push(s, e);
    }
    pthread_cond_broadcast(&s->wake);
    pthread_mutex_unlock(&s->mutex);
}

uint64_t fwm__scheduler_entry_jobs(fwm__scheduler *s, const fwm__session_entry *e) {
    pthread_mutex_lock(&s->mutex);
    uint64_t n = e->jobs_submitted;
    pthread_mutex_unlock(&s->mutex);
    return n;
}

void fwm__scheduler_move_away(fwm__scheduler *s, fwm__session_entry *e) {
    pthread_mutex_lock(&s->mutex);
    e->moved_away = true;
    pthread_mutex_unlock(&s->mutex);
}

bool fwm__scheduler_entry_busy(fwm__scheduler *s, const fwm__session_entry *e) {
    pthread_mutex_lock(&s->mutex);
    bool busy = e->jobs_pending > 0 || e->running;
    pthread_mutex_unlock(&s->mutex);
    return busy;
}

uint64_t fwm__scheduler_model_tokens(fwm__scheduler *s, size_t model) {
    pthread_mutex_lock(&s->mutex);
    uint64_t tokens = model < s->params.model_count ? s->model_tokens[model] : 0;
    pthread_mutex_unlock(&s->mutex);
    return tokens;
}

void fwm__scheduler_get_stats(fwm__scheduler *s, fwm__scheduler_stats *out) {
    pthread_mutex_lock(&s->mutex);
    out->tokens = s->tokens;
    out->batches = s->batches;
    out->batch_sessions = s->batch_sessions;
    out->batch_max = s->batch_max;
    memcpy(out->batch_sizes, s->batch_sizes, sizeof out->batch_sizes);
    out->jobs_pending = s->jobs_pending;
    out->tokens_queued = s->tokens_queued;
    out->ready_sessions = s->ready_count;
    out->parked_sessions = s->parked_count;
    out->token_latency = s->token_latency;
    pthread_mutex_unlock(&s->mutex);
}

uint64_t fwm__scheduler_tokens_queued(fwm__scheduler *s) {
    pthread_mutex_lock(&s->mutex);
    uint64_t n = s->tokens_queued;
    pthread_mutex_unlock(&s->mutex);
    return n;
}

/* An upper bound of what one batch's turn of `job` writes: one token notification (and maybe the
 * response), an answer, a prediction list, or a state blob. */
static size_t output_estimate(const fwm__scheduler *s, const fwm__job *job) {
    size_t per_prediction = s->max_word + 16, topk = job->topk ? job->topk : 1;
    size_t predictions = topk * per_prediction;
    switch (job->kind) {
    case FWM_JOB_FEED: /* a notification, and the response on the last turn (its bound counts logprobs and
                        * unknown spans) */
        return (job->notify ? 160 + s->max_word + predictions : 0) +
               (job->count - job->done <= 1 && job->output_bound > 160 ? job->output_bound : 160);
    case FWM_JOB_ASK: return 192 + s->max_word + predictions + job->output_bound; /* and its unknown spans */
    case FWM_JOB_PREDICT: return 192 + s->max_word + predictions;
    case FWM_JOB_SNAPSHOT: return 192 + s->max_blob;
    case FWM_JOB_TRACE: return job->output_bound;
    default: return 256;
    }
}

/* Take up to a fair share of the ready sessions; sessions whose head job writes to a congested
 * sink are parked instead. Called locked. */
static size_t take_batch(fwm__scheduler *s, worker *w) {
    size_t share = (s->ready_count + s->params.workers - 1) / s->params.workers;
    if (share > s->params.max_batch) share = s->params.max_batch;
    if (share < 1) share = 1;
    size_t n = 0;
    while (n < share) {
        fwm__session_entry *e = ready_pop(s);
        if (!e) break;
        fwm__job *head = e->jobs_head;
        fwm__sink *sink = head->sink;
        size_t estimate = sink ? output_estimate(s, head) : 0;
        bool active = !s->cancelled && !s->stopping && sink;
        /* A blocked sink waits; so does one whose output already taken for running batches would,
         * with this job's, pass the limit: output stays within the limit plus one job's worth. */
        if (active && (sink_blocked(s, sink) ||
                       (s->params.max_unsent && sink->reserved &&
                        sink->unsent + sink->reserved + estimate > s->params.max_unsent))) {
            e->ready_next = s->parked;
            s->parked = e;
            s->parked_count++;
            continue;
        }
        if (sink) sink->reserved += estimate;
        w->sinks[n] = sink;
        w->reserved[n] = estimate;
        e->queued = false;
        e->running = true;
        w->batch[n] = e;
        w->finished[n] = false;
        w->stepped[n] = false;
        w->moved[n] = e->moved_away;
        n++;
    }
    return n;
}

/* Step every session of the batch whose head job has a token to step, one fwm_batch_step per
 * model; then emit what each step produced. */
static void step_batch(worker *w, size_t n) {
    fwm__scheduler *s = w->scheduler;
    for (size_t m = 0; m < s->params.model_count; m++) {
        size_t count = 0;
        for (size_t i = 0; i < n; i++) {
            fwm__session_entry *e = w->batch[i];
            fwm__job *job = e->jobs_head;
            if (w->finished[i] || e->model_index != m || job->done >= job->count) continue;
            w->sessions[count] = e->session;
            w->tokens[count] = job->tokens[job->done];
            w->rows[count] = i;
            count++;
        }
        if (count == 0) continue;
        fwm_error err;
        uint32_t vocab = fwm__job_context_vocab(&w->jobs, m);
        fwm_status status = fwm_batch_step(w->sessions, w->tokens, count, w->logits, &err);
        uint64_t now = fwm__now_ns();
        for (size_t r = 0; r < count; r++) {
            size_t i = w->rows[r];
            fwm__session_entry *e = w->batch[i];
            fwm__job *job = e->jobs_head;
            if (status != FWM_OK) {
                w->finished[i] = fwm__job_fail(&w->jobs, e, job, FWM_RPC_INTERNAL, err.message);
                continue;
            }
            uint64_t ready = job->last_token_ns > job->enqueued_ns ? job->last_token_ns : job->enqueued_ns;
            fwm__histogram_add(&w->latency, (now - ready) / 1000);
            job->last_token_ns = now;
            w->stepped[i] = true;
            memcpy(e->last_logits, w->logits + r * vocab, vocab * sizeof(float));
            e->has_logits = true;
            job->done++;
            w->finished[i] = fwm__job_after_step(&w->jobs, e, job);
        }
        if (status == FWM_OK) {
            pthread_mutex_lock(&s->mutex);
            s->batches++;
            s->batch_sessions += count;
            if (count > s->batch_max) s->batch_max = count;
            unsigned k = 0;
            while (k + 1 < FWM_BATCH_SIZE_BUCKETS && ((size_t)1 << k) < count) k++;
            s->batch_sizes[k]++;
            s->model_tokens[m] += count;
            pthread_mutex_unlock(&s->mutex);
        }
    }
}

static void run_batch(worker *w, size_t n) {
    fwm__scheduler *s = w->scheduler;
    bool cancelled;
    pthread_mutex_lock(&s->mutex);
    cancelled = s->cancelled;
    pthread_mutex_unlock(&s->mutex);
    for (size_t i = 0; i < n; i++) {
        fwm__session_entry *e = w->batch[i];
        fwm__job *job = e->jobs_head;
        if (w->moved[i] && job->kind != FWM_JOB_CLOSE) {
            w->finished[i] = fwm__job_fail_moved(&w->jobs, e, job);
        } else if (e->load_failed && job->kind != FWM_JOB_CLOSE && job->kind != FWM_JOB_LOAD) {
            char message[300];
            snprintf(message, sizeof message, "session %s cannot be loaded from the store: %s", e->hex, e->load_error);
            w->finished[i] = fwm__job_fail(&w->jobs, e, job, FWM_RPC_STORAGE, message);
        } else if (job->kind == FWM_JOB_FEED || job->kind == FWM_JOB_ASK) {
            if (cancelled)
                w->finished[i] = fwm__job_fail(&w->jobs, e, job, FWM_RPC_SHUTTING_DOWN,
                                                         "the server is shutting down; the request was not completed");
            else if (job->done >= job->count) /* an empty feed */
                w->finished[i] = fwm__job_run(&w->jobs, e, job);
            else if (job->done == 0 && !fwm__job_before_first_step(&w->jobs, e, job))
                w->finished[i] = true; /* it failed: not stepped */
        } else {
            w->finished[i] = fwm__job_run(&w->jobs, e, job);
        }
    }
    step_batch(w, n);
    /* Before the answers are posted: a client that has its answer sees this position listed. */
    for (size_t i = 0; i < n; i++) fwm__session_entry_note_pos(w->batch[i]);
}

/* Put the batch back: pop finished jobs, requeue sessions with more work. Jobs and closed entries
 * are freed after the lock is released. */
static void return_batch(worker *w, size_t n) {
    fwm__scheduler *s = w->scheduler;
    fwm__job *done_jobs = NULL;
    fwm__session_entry *dead = NULL;
    uint64_t stepped = 0;
    pthread_mutex_lock(&s->mutex);
    for (size_t i = 0; i < n; i++) {
        fwm__session_entry *e = w->batch[i];
        if (w->stepped[i]) stepped++;
        e->running = false;
        if (w->finished[i]) {
            fwm__job *job = e->jobs_head;
            s->tokens_queued -= fwm__job_tokens_left(job);
            e->jobs_head = job->next;
            if (!e->jobs_head) e->jobs_tail = NULL;
            e->jobs_pending--;
            s->jobs_pending--;
            bool closes = e->dead;
            job->next = done_jobs;
            done_jobs = job;
            if (closes) {
                e->ready_next = dead;
                dead = e;
                continue;
            }
        }
        if (e->jobs_head) ready_push(s, e);
    }
    s->tokens += stepped;
    s->tokens_queued -= stepped;
    fwm__histogram_merge(&s->token_latency, &w->latency);
    if (s->ready_count > 0) pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->mutex);
    memset(&w->latency, 0, sizeof w->latency);
    while (done_jobs) {
        fwm__job *next = done_jobs->next;
        fwm__job_free(done_jobs);
        done_jobs = next;
    }
    while (dead) {
        fwm__session_entry *next = dead->ready_next;
        fwm__session_entry_free(dead);
        dead = next;
    }
}

static void *worker_main(void *arg) {
    worker *w = arg;
    fwm__scheduler *s = w->scheduler;
    pthread_mutex_lock(&s->mutex);
    for (;;) {
        while (!s->stopping && s->ready_count == 0) pthread_cond_wait(&s->wake, &s->mutex);
        if (s->ready_count == 0 && s->stopping && s->jobs_pending == 0) break;
        if (s->ready_count == 0) { /* stopping, but other workers still hold jobs */
            pthread_cond_wait(&s->wake, &s->mutex);
            continue;
        }
        size_t n = take_batch(s, w);
        if (s->ready_count > 0) pthread_cond_signal(&s->wake);
        pthread_mutex_unlock(&s->mutex);
        if (n > 0) {
            run_batch(w, n);
            /* post before the sessions can be taken again: keeps each session's output in order */
            account(s, w->jobs.outbox, w->sinks, w->reserved, n);
            fwm__job_context_post(&w->jobs, s->params.post, s->params.user);
            return_batch(w, n);
        }
        pthread_mutex_lock(&s->mutex);
        if (s->stopping && s->jobs_pending == 0) pthread_cond_broadcast(&s->wake);
    }
    pthread_mutex_unlock(&s->mutex);
    return NULL;
}

static void worker_release(worker *w) {
    fwm__free(w->batch);
    fwm__free(w->finished);
    fwm__free(w->stepped);
    fwm__free(w->moved);
    fwm__free(w->sessions);
    fwm__free(w->tokens);
    fwm__free(w->rows);
    fwm__free(w->logits);
    fwm__free(w->sinks);
    fwm__free(w->reserved);
    fwm__job_context_release(&w->jobs);
}

static bool worker_init(worker *w, fwm__scheduler *s) {
    size_t b = s->params.max_batch;
    w->scheduler = s;
    w->batch = fwm__calloc(b, sizeof *w->batch);
    w->finished = fwm__calloc(b, sizeof *w->finished);
    w->stepped = fwm__calloc(b, sizeof *w->stepped);
    w->moved = fwm__calloc(b, sizeof *w->moved);
    w->sessions = fwm__calloc(b, sizeof *w->sessions);
    w->tokens = fwm__calloc(b, sizeof *w->tokens);
    w->rows = fwm__calloc(b, sizeof *w->rows);
    w->logits = fwm__calloc(b * s->max_vocab, sizeof *w->logits);
    w->sinks = fwm__calloc(b, sizeof *w->sinks);
    w->reserved = fwm__calloc(b, sizeof *w->reserved);
    if (!w->sinks || !w->reserved) return false;
    if (!(w->batch && w->finished && w->stepped && w->moved && w->sessions && w->tokens && w->rows && w->logits &&
          fwm__job_context_init(&w->jobs, s->params.models, s->params.model_count)))
        return false;
    w->jobs.store = s->params.store;
    w->jobs.advertise = s->params.advertise;
    w->jobs.model_names = s->params.model_names;
    w->jobs.snapshot_tokens = s->params.snapshot_tokens ? s->params.snapshot_tokens : SIZE_MAX;
    fwm__job_context_reserve(&w->jobs, 2 * s->params.max_batch + 8); /* ends per batch: one a job, at most */
    return true;
}

fwm__scheduler *fwm__scheduler_start(const fwm__scheduler_params *params) {
    if (!params || params->workers < 1 || params->max_batch < 1 || params->model_count < 1 || !params->post)
        return NULL;
    fwm__scheduler *s = fwm__calloc(1, sizeof *s);
    if (!s) return NULL;
    s->params = *params;
    for (size_t m = 0; m < params->model_count; m++) {
        fwm_model_info info;
        fwm_model_get_info(params->models[m], &info);
        if (info.vocab_size > s->max_vocab) s->max_vocab = info.vocab_size;
        if (info.state_blob_bytes > s->max_blob) s->max_blob = info.state_blob_bytes;
        for (uint32_t t = 0; t < info.vocab_size; t++) {
            const char *word = fwm_model_token_text(params->models[m], t);
            size_t length = word ? strlen(word) : 0;
            if (length > s->max_word) s->max_word = length;
        }
    }
    pthread_mutex_init(&s->mutex, NULL);
    pthread_cond_init(&s->wake, NULL);
    s->workers = fwm__calloc(params->workers, sizeof *s->workers);
    s->threads = fwm__calloc(params->workers, sizeof *s->threads);
    s->model_tokens = fwm__calloc(params->model_count, sizeof *s->model_tokens);
    if (!s->workers || !s->threads || !s->model_tokens) goto fail;
    for (size_t i = 0; i < params->workers; i++)
        if (!worker_init(&s->workers[i], s)) goto fail;
    for (size_t i = 0; i < params->workers; i++) {
        if (pthread_create(&s->threads[i], NULL, worker_main, &s->workers[i]) != 0) goto fail;
        s->thread_count++;
    }
    return s;
fail:
    fwm__scheduler_stop(s);
    return NULL;
}

void fwm__scheduler_stop(fwm__scheduler *s) {
    if (!s) return;
    pthread_mutex_lock(&s->mutex);
    s->stopping = true;
    while (s->parked) { /* nothing will uncongest them now: finish their jobs */
        fwm__session_entry *e = s->parked;
        s->parked = e->ready_next;
        s->parked_count--;
        ready_push(s, e);
    }
    pthread_cond_broadcast(&s->wake);
    pthread_mutex_unlock(&s->mutex);
    for (size_t i = 0; i < s->thread_count; i++) pthread_join(s->threads[i], NULL);
    if (s->workers)
        for (size_t i = 0; i < s->params.workers; i++) worker_release(&s->workers[i]);
    pthread_cond_destroy(&s->wake);
    pthread_mutex_destroy(&s->mutex);
    fwm__free(s->workers);
    fwm__free(s->threads);
    fwm__free(s->model_tokens);
    fwm__free(s);
}
