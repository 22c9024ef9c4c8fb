/* fwm_alloc.c - allocation wrapper (mimalloc or libc) with test-time fault injection. */
#include "fwm_alloc.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#ifdef FWM_USE_MIMALLOC
#include <mimalloc.h>
#endif

static atomic_long fail_after;   /* 0: injection off; else allocation number that starts failing */
static atomic_long fail_once;    /* 0: off; else the one allocation number that fails */
static atomic_long calls;        /* allocation calls since injection was armed or reset */
static _Atomic(void *) failed_site;
static _Atomic(void *) fail_site; /* fwm__alloc_fail_site: the site whose next allocation fails */
static _Atomic(fwm__alloc_watch) watcher;

void fwm__alloc_fail_after(long n) {
    atomic_store(&calls, 0);
    atomic_store(&fail_after, n < 0 ? 0 : n);
}

void fwm__alloc_fail_reset(void) {
    atomic_store(&fail_after, 0);
    atomic_store(&fail_once, 0);
    atomic_store(&calls, 0);
}

void fwm__alloc_fail_once(long n) {
    atomic_store(&calls, 0);
    atomic_store(&failed_site, NULL);
    atomic_store(&fail_once, n < 0 ? 0 : n);
}

void *fwm__alloc_failed_site(void) { return atomic_load(&failed_site); }

void fwm__alloc_fail_site(void *site) {
    atomic_store(&failed_site, NULL);
    atomic_store(&fail_site, site);
}

void fwm__alloc_set_watch(fwm__alloc_watch watch) { atomic_store(&watcher, watch); }

long fwm__alloc_calls(void) { return atomic_load(&calls); }

/* true when this allocation, made by the code at `site`, must fail (injection armed and its turn has
 * come) */
static int injected_failure_at(void *site) {
    long n = atomic_fetch_add(&calls, 1) + 1;
    fwm__alloc_watch watch = atomic_load(&watcher);
    if (watch) watch(n, site);
    long limit = atomic_load(&fail_after);
    if (limit > 0 && n >= limit) return 1;
    if (atomic_load(&fail_once) == n) {
        atomic_store(&failed_site, site);
        return 1;
    }
    void *target = atomic_load(&fail_site);
    if (target && target == site && atomic_compare_exchange_strong(&fail_site, &target, NULL)) {
        atomic_store(&failed_site, site);
        return 1;
    }
    return 0;
}
#define injected_failure() injected_failure_at(__builtin_return_address(0))

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
