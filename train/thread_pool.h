/* thread_pool.h - a fixed set of worker threads that run one function on every thread and wait.
 *
 * The trainer's only source of parallelism: every parallel region is
 * fwm__pool_run(pool, fn, ctx), which calls fn(ctx, i, n) once for each i in 0..n-1 (i = 0 on the
 * calling thread) and returns when all calls have returned. Work is split by the callee with
 * fwm__pool_range, a fixed partition, so results depend on the thread count only, never on timing.
 * Not for: task queues, nested parallel regions (fn must not call fwm__pool_run).
 */
#ifndef FWM_TRAIN_THREAD_POOL_H
#define FWM_TRAIN_THREAD_POOL_H

#include <stddef.h>

typedef struct fwm__pool fwm__pool;
typedef void (*fwm__pool_fn)(void *ctx, int thread_index, int thread_count);

/* A pool of `thread_count` threads (>= 1; the caller is thread 0, so thread_count - 1 are
 * started). Returns NULL when threads or memory cannot be had. */
fwm__pool *fwm__pool_create(int thread_count);

/* Stop and join the workers. NULL is a no-op. */
void fwm__pool_free(fwm__pool *pool);

/* Number of threads (1 for a NULL pool). */
int fwm__pool_size(const fwm__pool *pool);

/* Run fn on every thread; a NULL pool runs fn(ctx, 0, 1) on the caller. */
void fwm__pool_run(fwm__pool *pool, fwm__pool_fn fn, void *ctx);

/* The part [*begin, *end) of 0..count that thread `index` of `threads` owns (contiguous, sizes
 * differ by at most one). */
void fwm__pool_range(size_t count, int index, int threads, size_t *begin, size_t *end);

#endif
