/* thread_pool.c - fixed worker threads for the trainer's parallel regions (see thread_pool.h). */
#include "thread_pool.h"

#include <pthread.h>
#include <stdlib.h>

struct fwm__pool {
    int thread_count;
    pthread_t *threads;
    pthread_mutex_t mutex;
    pthread_cond_t start_cond; /* workers wait here for a new generation */
    pthread_cond_t done_cond;  /* the caller waits here for pending == 0 */
    unsigned long generation;  /* bumped for every fwm__pool_run */
    int pending;               /* workers still running the current generation */
    int stopping;
    fwm__pool_fn fn;
    void *ctx;
};

typedef struct worker_arg {
    fwm__pool *pool;
    int index;
} worker_arg;

static void *worker_main(void *arg_pointer)
{
    worker_arg arg = *(worker_arg *)arg_pointer;
    free(arg_pointer);
    fwm__pool *pool = arg.pool;
    unsigned long seen = 0;
    for (;;) {
        pthread_mutex_lock(&pool->mutex);
        while (!pool->stopping && pool->generation == seen)
            pthread_cond_wait(&pool->start_cond, &pool->mutex);
        if (pool->stopping) {
            pthread_mutex_unlock(&pool->mutex);
            return NULL;
        }
        seen = pool->generation;
        fwm__pool_fn fn = pool->fn;
        void *ctx = pool->ctx;
        pthread_mutex_unlock(&pool->mutex);

        fn(ctx, arg.index, pool->thread_count);

        pthread_mutex_lock(&pool->mutex);
        if (--pool->pending == 0)
            pthread_cond_signal(&pool->done_cond);
        pthread_mutex_unlock(&pool->mutex);
    }
}

fwm__pool *fwm__pool_create(int thread_count)
{
    if (thread_count < 1)
        thread_count = 1;
    fwm__pool *pool = calloc(1, sizeof *pool);
    if (!pool)
        return NULL;
    int started = 0; /* workers 1..started are running */
    pool->thread_count = thread_count;
    pthread_mutex_init(&pool->mutex, NULL);
    pthread_cond_init(&pool->start_cond, NULL);
    pthread_cond_init(&pool->done_cond, NULL);
    pool->threads = calloc((size_t)thread_count, sizeof *pool->threads);
    if (!pool->threads)
        goto fail;
    for (int i = 1; i < thread_count; i++) {
        worker_arg *arg = malloc(sizeof *arg);
        if (!arg)
            goto fail;
        arg->pool = pool;
        arg->index = i;
        if (pthread_create(&pool->threads[i], NULL, worker_main, arg) != 0) {
            free(arg);
            goto fail;
        }
        started = i;
    }
    return pool;
fail:
    /* stop the workers started so far */
    pthread_mutex_lock(&pool->mutex);
    pool->stopping = 1;
    pthread_cond_broadcast(&pool->start_cond);
    pthread_mutex_unlock(&pool->mutex);
    for (int i = 1; i <= started; i++)
        pthread_join(pool->threads[i], NULL);
    free(pool->threads);
    pthread_mutex_destroy(&pool->mutex);
    pthread_cond_destroy(&pool->start_cond);
    pthread_cond_destroy(&pool->done_cond);
    free(pool);
    return NULL;
}

void fwm__pool_free(fwm__pool *pool)
{
    if (!pool)
        return;
    pthread_mutex_lock(&pool->mutex);
    pool->stopping = 1;
    pthread_cond_broadcast(&pool->start_cond);
    pthread_mutex_unlock(&pool->mutex);
    for (int i = 1; i < pool->thread_count; i++)
        pthread_join(pool->threads[i], NULL);
    free(pool->threads);
    pthread_mutex_destroy(&pool->mutex);
    pthread_cond_destroy(&pool->start_cond);
    pthread_cond_destroy(&pool->done_cond);
    free(pool);
}

int fwm__pool_size(const fwm__pool *pool)
{
    return pool ? pool->thread_count : 1;
}

void fwm__pool_run(fwm__pool *pool, fwm__pool_fn fn, void *ctx)
{
    if (!pool || pool->thread_count == 1) {
        fn(ctx, 0, 1);
        return;
    }
    pthread_mutex_lock(&pool->mutex);
    pool->fn = fn;
    pool->ctx = ctx;
    pool->pending = pool->thread_count - 1;
    pool->generation++;
    pthread_cond_broadcast(&pool->start_cond);
    pthread_mutex_unlock(&pool->mutex);

    fn(ctx, 0, pool->thread_count);

    pthread_mutex_lock(&pool->mutex);
    while (pool->pending > 0)
        pthread_cond_wait(&pool->done_cond, &pool->mutex);
    pthread_mutex_unlock(&pool->mutex);
}

void fwm__pool_range(size_t count, int index, int threads, size_t *begin, size_t *end)
{
    size_t n = (size_t)threads;
    size_t i = (size_t)index;
    *begin = count * i / n;
    *end = count * (i + 1) / n;
}
