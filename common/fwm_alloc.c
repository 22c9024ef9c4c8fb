/* fwm_alloc.c - allocation wrapper (mimalloc or libc) with test-time fault injection. */
#include "fwm_alloc.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#ifdef FWM_USE_MIMALLOC
#include <mimalloc.h>
#endif

static atomic_long fail_after;   /* 0: injection off; else allocation number that starts failing */
static atomic_long calls;        /* allocation calls since injection was armed or reset */

void fwm__alloc_fail_after(long n) {
    atomic_store(&calls, 0);
    atomic_store(&fail_after, n < 0 ? 0 : n);
}

void fwm__alloc_fail_reset(void) {
    atomic_store(&fail_after, 0);
    atomic_store(&calls, 0);
}

long fwm__alloc_calls(void) { return atomic_load(&calls); }

/* true when this allocation must fail (injection armed and its turn has come) */
static int injected_failure(void) {
    long n = atomic_fetch_add(&calls, 1) + 1;
    long limit = atomic_load(&fail_after);
    return limit > 0 && n >= limit;
}

void *fwm__malloc(size_t size) {
    if (injected_failure()) return NULL;
#ifdef FWM_USE_MIMALLOC
    return mi_malloc(size ? size : 1);
#else
    return malloc(size ? size : 1);
#endif
}

void *fwm__calloc(size_t count, size_t size) {
    if (size != 0 && count > SIZE_MAX / size) return NULL;
    if (injected_failure()) return NULL;
    if (count == 0 || size == 0) count = size = 1;
#ifdef FWM_USE_MIMALLOC
    return mi_calloc(count, size);
#else
    return calloc(count, size);
#endif
}

void *fwm__realloc(void *pointer, size_t size) {
    if (injected_failure()) return NULL;
#ifdef FWM_USE_MIMALLOC
    return mi_realloc(pointer, size ? size : 1);
#else
    return realloc(pointer, size ? size : 1);
#endif
}

void *fwm__aligned_alloc(size_t alignment, size_t size) {
    if (injected_failure()) return NULL;
    if (size == 0) size = 1;
#ifdef FWM_USE_MIMALLOC
    return mi_malloc_aligned(size, alignment);
#else
    void *p = NULL;
    if (posix_memalign(&p, alignment, size) != 0) return NULL;
    return p;
#endif
}

void fwm__free(void *pointer) {
#ifdef FWM_USE_MIMALLOC
    mi_free(pointer);
#else
    free(pointer);
#endif
}
