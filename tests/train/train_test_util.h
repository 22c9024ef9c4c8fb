/* train_test_util.h - assertion macros for the trainer's tests: each prints both sides of a failed
 * comparison and counts the failure; test_finish prints the verdict and gives the exit status. */
#ifndef FWM_TESTS_TRAIN_TEST_UTIL_H
#define FWM_TESTS_TRAIN_TEST_UTIL_H

#include <math.h>
#include <stdio.h>
#include <string.h>

static int test_failures;

#define CHECK(cond)                                                                          \
    do {                                                                                     \
        if (!(cond)) {                                                                       \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);         \
            test_failures++;                                                                 \
        }                                                                                    \
    } while (0)

#define CHECK_INT(got, want)                                                                 \
    do {                                                                                     \
        long long got_ = (long long)(got), want_ = (long long)(want);                        \
        if (got_ != want_) {                                                                 \
            fprintf(stderr, "%s:%d: %s == %lld, expected %s == %lld\n", __FILE__, __LINE__,  \
                    #got, got_, #want, want_);                                               \
            test_failures++;                                                                 \
        }                                                                                    \
    } while (0)

/* got <= limit */
#define CHECK_LE(got, limit)                                                                 \
    do {                                                                                     \
        double got_ = (double)(got), limit_ = (double)(limit);                               \
        if (!(got_ <= limit_)) {                                                             \
            fprintf(stderr, "%s:%d: %s == %.6g, expected <= %s == %.6g\n", __FILE__,         \
                    __LINE__, #got, got_, #limit, limit_);                                   \
            test_failures++;                                                                 \
        }                                                                                    \
    } while (0)

/* got >= limit */
#define CHECK_GE(got, limit)                                                                 \
    do {                                                                                     \
        double got_ = (double)(got), limit_ = (double)(limit);                               \
        if (!(got_ >= limit_)) {                                                             \
            fprintf(stderr, "%s:%d: %s == %.6g, expected >= %s == %.6g\n", __FILE__,         \
                    __LINE__, #got, got_, #limit, limit_);                                   \
            test_failures++;                                                                 \
        }                                                                                    \
    } while (0)

#define CHECK_CONTAINS(haystack, needle)                                                     \
    do {                                                                                     \
        const char *h_ = (haystack), *n_ = (needle);                                         \
        if (!h_ || !strstr(h_, n_)) {                                                        \
            fprintf(stderr, "%s:%d: \"%s\" does not contain \"%s\"\n", __FILE__, __LINE__,   \
                    h_ ? h_ : "(null)", n_);                                                 \
            test_failures++;                                                                 \
        }                                                                                    \
    } while (0)

static inline int test_finish(const char *name)
{
    if (test_failures) {
        printf("%s: %d check(s) failed\n", name, test_failures);
        return 1;
    }
    printf("%s: all checks passed\n", name);
    return 0;
}

#endif
