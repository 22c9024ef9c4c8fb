/* timed_wait.h - condition variables whose timed waits run on the monotonic clock, so a wall clock
 * stepped back (NTP, an operator) neither delays a lease renewal, a probe or an fsync interval nor
 * makes one early. Header only; every timed wait of fwm-serve goes through it. */
#ifndef FWM_SERVER_TIMED_WAIT_H
#define FWM_SERVER_TIMED_WAIT_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

/* pthread_cond_init with CLOCK_MONOTONIC for pthread_cond_timedwait; 0 or an errno value. */
static inline int fwm__cond_init_monotonic(pthread_cond_t *cond) {
    pthread_condattr_t attr;
    int rc = pthread_condattr_init(&attr);
    if (rc) return rc;
    rc = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    if (!rc) rc = pthread_cond_init(cond, &attr);
    pthread_condattr_destroy(&attr);
    return rc;
}

/* The absolute monotonic time `ns` nanoseconds from now, for pthread_cond_timedwait on a condition
 * made by fwm__cond_init_monotonic. */
static inline void fwm__deadline_in(struct timespec *ts, uint64_t ns) {
    clock_gettime(CLOCK_MONOTONIC, ts);
    uint64_t total = (uint64_t)ts->tv_nsec + ns;
    ts->tv_sec += (time_t)(total / 1000000000u);
    ts->tv_nsec = (long)(total % 1000000000u);
}

#endif
