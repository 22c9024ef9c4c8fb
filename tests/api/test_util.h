/* test_util.h - assertion macros (print both sides, count failures) and a tiny-model factory for
 * the API tests. */
#ifndef FWM_TESTS_API_TEST_UTIL_H
#define FWM_TESTS_API_TEST_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fwm/fwm.h"

extern int test_failures;

#define CHECK(cond)                                                              \
    do {                                                                         \
        if (!(cond)) {                                                           \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
            test_failures++;                                                     \
        }                                                                        \
    } while (0)

#define CHECK_INT(got, want)                                                             \
    do {                                                                                 \
        long long got_ = (long long)(got), want_ = (long long)(want);                    \
        if (got_ != want_) {                                                             \
            fprintf(stderr, "%s:%d: %s == %lld, expected %s == %lld\n", __FILE__, __LINE__, \
                    #got, got_, #want, want_);                                           \
            test_failures++;                                                             \
        }                                                                                \
    } while (0)

#define CHECK_STR(got, want)                                                                  \
    do {                                                                                      \
        const char *got_ = (got), *want_ = (want);                                            \
        if (!got_ || strcmp(got_, want_) != 0) {                                              \
            fprintf(stderr, "%s:%d: %s == \"%s\", expected \"%s\"\n", __FILE__, __LINE__, #got, \
                    got_ ? got_ : "(null)", want_);                                           \
            test_failures++;                                                                  \
        }                                                                                     \
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

/* Print the verdict line and return the exit status. */
int test_finish(const char *name);

/* Write a small random model with the given vocabulary (NULL-terminated list) to a new temporary
 * file; returns its path (static storage, removed by test_remove_model) or NULL. */
const char *test_write_model(const char *const *vocabulary, uint64_t seed);
void test_remove_model(void);

#endif
