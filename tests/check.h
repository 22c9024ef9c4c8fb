/* check.h - the assertion macros shared by every C test program under tests/: each failed check
 * prints the file, the line and both sides (the expressions and their values), adds one to the
 * process-wide counter check_failures, and lets the test go on. A test's main returns
 * check_finish(name) (one verdict line), or check_run_cases(...) for a table of named cases.
 *
 * The counter and the out-of-line helpers live in tests/check.c, which is linked once into each
 * test program (a test area's helper library or the executable itself), so checks made in several
 * translation units of one program add up. tests/meson.build puts this folder on the include path
 * as test_inc and names the source test_check_src. */
#ifndef FWM_TESTS_CHECK_H
#define FWM_TESTS_CHECK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fwm/fwm.h"

/* Failed checks so far in this process (defined in check.c). Tests may add to it directly when a
 * failure is better reported by hand. */
extern int check_failures;

#define CHECK(cond)                                                                   \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
            check_failures++;                                                         \
        }                                                                             \
    } while (0)

/* Signed integer equality. */
#define CHECK_INT(got, want)                                                                \
    do {                                                                                    \
        long long got_ = (long long)(got), want_ = (long long)(want);                       \
        if (got_ != want_) {                                                                \
            fprintf(stderr, "%s:%d: %s == %lld, expected %s == %lld\n", __FILE__, __LINE__, \
                    #got, got_, #want, want_);                                              \
            check_failures++;                                                               \
        }                                                                                   \
    } while (0)

/* Unsigned integer equality (both sides converted to unsigned long long), printed in decimal and
 * hexadecimal. */
#define CHECK_U64(got, want)                                                                     \
    do {                                                                                         \
        unsigned long long got_ = (unsigned long long)(got), want_ = (unsigned long long)(want); \
        if (got_ != want_) {                                                                     \
            fprintf(stderr, "%s:%d: %s == %llu (0x%llx), expected %s == %llu (0x%llx)\n",        \
                    __FILE__, __LINE__, #got, got_, got_, #want, want_, want_);                  \
            check_failures++;                                                                    \
        }                                                                                        \
    } while (0)

/* got <= limit, compared as doubles. */
#define CHECK_LE(got, limit)                                                         \
    do {                                                                             \
        double got_ = (double)(got), limit_ = (double)(limit);                       \
        if (!(got_ <= limit_)) {                                                     \
            fprintf(stderr, "%s:%d: %s == %.6g, expected <= %s == %.6g\n", __FILE__, \
                    __LINE__, #got, got_, #limit, limit_);                           \
            check_failures++;                                                        \
        }                                                                            \
    } while (0)

/* got >= limit, compared as doubles. */
#define CHECK_GE(got, limit)                                                         \
    do {                                                                             \
        double got_ = (double)(got), limit_ = (double)(limit);                       \
        if (!(got_ >= limit_)) {                                                     \
            fprintf(stderr, "%s:%d: %s == %.6g, expected >= %s == %.6g\n", __FILE__, \
                    __LINE__, #got, got_, #limit, limit_);                           \
            check_failures++;                                                        \
        }                                                                            \
    } while (0)

/* String equality; a NULL on either side is a failure. */
#define CHECK_STR(got, want)                                                                   \
    do {                                                                                       \
        const char *got_ = (got), *want_ = (want);                                             \
        if (!got_ || !want_ || strcmp(got_, want_) != 0) {                                     \
            fprintf(stderr, "%s:%d: %s == \"%s\", expected %s == \"%s\"\n", __FILE__, __LINE__, \
                    #got, got_ ? got_ : "(null)", #want, want_ ? want_ : "(null)");           \
            check_failures++;                                                                  \
        }                                                                                      \
    } while (0)

/* `needle` occurs in `haystack`; a NULL haystack is a failure. */
#define CHECK_CONTAINS(haystack, needle)                                                       \
    do {                                                                                       \
        const char *h_ = (haystack), *n_ = (needle);                                           \
        if (!h_ || !strstr(h_, n_)) {                                                          \
            fprintf(stderr, "%s:%d: %s == \"%s\" does not contain \"%s\"\n", __FILE__, __LINE__, \
                    #haystack, h_ ? h_ : "(null)", n_);                                        \
            check_failures++;                                                                  \
        }                                                                                      \
    } while (0)

static inline const char *check_error_text_(const fwm_error *err) {
    return err ? err->message : "";
}

/* A call's status: `got` (evaluated once) equals `want`; prints both statuses by name and number,
 * and the message of the fwm_error *`err` (which may be NULL). */
#define CHECK_STATUS(got, want, err)                                                          \
    do {                                                                                      \
        fwm_status got_ = (got), want_ = (want);                                              \
        if (got_ != want_) {                                                                  \
            fprintf(stderr, "%s:%d: %s returned %s (%d) (\"%s\"), expected %s (%d)\n",        \
                    __FILE__, __LINE__, #got, fwm_status_str(got_), (int)got_,                \
                    check_error_text_(err), fwm_status_str(want_), (int)want_);               \
            check_failures++;                                                                 \
        }                                                                                     \
    } while (0)

/* A call that must succeed; `record` is its fwm_error (a struct, not a pointer). */
#define CHECK_OK(call, record)                                                                \
    do {                                                                                      \
        fwm_status st_ = (call);                                                              \
        if (st_ != FWM_OK) {                                                                  \
            fprintf(stderr, "%s:%d: got status %d (%s): \"%s\", expected FWM_OK\n", __FILE__, \
                    __LINE__, (int)st_, fwm_status_str(st_), (record).message);               \
            check_failures++;                                                                 \
        }                                                                                     \
    } while (0)

/* A call that must be refused: it returns `want`, `record` (its fwm_error struct) holds the same
 * status and a message containing `needle`. */
#define CHECK_REFUSED(call, record, want, needle)                                             \
    do {                                                                                      \
        fwm_status st_ = (call);                                                              \
        const char *n_ = (needle);                                                            \
        if (st_ != (want) || (record).status != (want) || !strstr((record).message, n_)) {    \
            fprintf(stderr,                                                                   \
                    "%s:%d: got status %d (%s) with message \"%s\", expected status %d (%s) " \
                    "with a message containing \"%s\"\n",                                     \
                    __FILE__, __LINE__, (int)st_, fwm_status_str(st_), (record).message,      \
                    (int)(want), fwm_status_str(want), n_);                                   \
            check_failures++;                                                                 \
        }                                                                                     \
    } while (0)

/* Bytewise equality of two float arrays; on failure prints the first differing index and both
 * values (with their bit patterns). `what` names the arrays. */
#define CHECK_FLOATS_EQUAL(got, want, n, what) \
    check_floats_equal(__FILE__, __LINE__, (got), (want), (n), (what))
void check_floats_equal(const char *file, int line, const float *got, const float *want, size_t n,
                        const char *what);

/* Bytewise equality of two byte arrays (e.g. exported state blobs). */
#define CHECK_BYTES_EQUAL(got, want, n, what) \
    check_bytes_equal(__FILE__, __LINE__, (got), (want), (n), (what))
void check_bytes_equal(const char *file, int line, const void *got, const void *want, size_t n,
                       const char *what);

/* The verdict: "NAME: all checks passed" on stdout and 0, or "NAME: N check(s) failed" on stderr
 * and 1. */
int check_finish(const char *name);

/* A table of named cases: runs each, prints "PROGRAM: case 'NAME' FAILED" for each case that
 * failed a check and the final "PROGRAM: N passed, N failed" line; returns 0 or 1. */
typedef struct check_case {
    const char *name;
    void (*run)(void);
} check_case;
int check_run_cases(const char *program, const check_case *cases, size_t count);

#endif
