/* fwm_alloc.h - the one allocation wrapper every part of libfwm goes through.
 *
 * Backed by mimalloc (or libc malloc when built with -Dallocator=libc, e.g. under sanitizers).
 * Tests can make the Nth allocation from now fail to exercise every error path (fault injection).
 * Internal: not part of the public API.
 */
#ifndef FWM_COMMON_ALLOC_H
#define FWM_COMMON_ALLOC_H

#include <stddef.h>

void *fwm__malloc(size_t size);
void *fwm__calloc(size_t count, size_t size); /* checks count*size for overflow */
void *fwm__realloc(void *pointer, size_t size);
/* `alignment` is a power of two >= sizeof(void*); the result is released with fwm__free. */
void *fwm__aligned_alloc(size_t alignment, size_t size);
void fwm__free(void *pointer);

/* Fault injection for tests: the `n`th allocation from now (n >= 1) and every one after it fail
 * until fwm__alloc_fail_reset() is called. n = 0 disables injection. */
void fwm__alloc_fail_after(long n);
void fwm__alloc_fail_reset(void);
/* Number of allocation calls made since the last fwm__alloc_fail_after / reset. */
long fwm__alloc_calls(void);

/* Fault injection of one allocation (a server's request paths): only the `n`th allocation from now
 * fails (n >= 1); every other one succeeds. n = 0 disables it. The counter is the same as above. */
void fwm__alloc_fail_once(long n);
/* Fault injection at one place: the first allocation made by the code at `site` (a return address,
 * as fwm__alloc_watch reports it) from now fails; every other one succeeds. NULL disables it. */
void fwm__alloc_fail_site(void *site);
/* The code address that made the allocation that failed by fwm__alloc_fail_once or
 * fwm__alloc_fail_site, or NULL when none has yet. */
void *fwm__alloc_failed_site(void);
/* Tests: `watch` is called (from any thread, before the allocation) with each allocation's number and
 * the code address that made it; it must not allocate through these functions. NULL: none. */
typedef void (*fwm__alloc_watch)(long n, void *site);
void fwm__alloc_set_watch(fwm__alloc_watch watch);

#endif
