/* check.h - assertion macros for the server's C tests: each prints both sides and the line, counts
 * the failure, and lets the test go on; main returns check_exit(). */
#ifndef FWM_TESTS_SERVER_CHECK_H
#define FWM_TESTS_SERVER_CHECK_H

#include <stdio.h>
#include <string.h>

static int check_failures;

#define CHECK(cond)                                                                   \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);  \
            check_failures++;                                                         \
        }                                                                             \
    } while (0)

#define CHECK_EQ_U(a, b)                                                                               \
    do {                                                                                               \
        unsigned long long a_ = (unsigned long long)(a), b_ = (unsigned long long)(b);                 \
        if (a_ != b_) {                                                                                \
            fprintf(stderr, "%s:%d: CHECK_EQ failed: %s = %llu, %s = %llu\n", __FILE__, __LINE__, #a, \
                    a_, #b, b_);                                                                       \
            check_failures++;                                                                          \
        }                                                                                              \
    } while (0)

#define CHECK_EQ_S(a, b)                                                                                 \
    do {                                                                                                 \
        const char *a_ = (a), *b_ = (b);                                                                 \
        if (strcmp(a_, b_) != 0) {                                                                       \
            fprintf(stderr, "%s:%d: CHECK_EQ failed: %s = \"%s\", %s = \"%s\"\n", __FILE__, __LINE__, \
                    #a, a_, #b, b_);                                                                     \
            check_failures++;                                                                            \
        }                                                                                                \
    } while (0)

#define CHECK_CONTAINS(haystack, needle)                                                                 \
    do {                                                                                                 \
        const char *h_ = (haystack), *n_ = (needle);                                                     \
        if (!strstr(h_, n_)) {                                                                           \
            fprintf(stderr, "%s:%d: CHECK_CONTAINS failed: %s = \"%s\" lacks \"%s\"\n", __FILE__,      \
                    __LINE__, #haystack, h_, n_);                                                        \
            check_failures++;                                                                            \
        }                                                                                                \
    } while (0)

static inline int check_exit(const char *name) {
    if (check_failures) fprintf(stderr, "%s: %d check(s) failed\n", name, check_failures);
    else printf("%s: all checks passed\n", name);
    return check_failures ? 1 : 0;
}

#endif
