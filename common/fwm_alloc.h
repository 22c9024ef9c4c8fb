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

#endif
