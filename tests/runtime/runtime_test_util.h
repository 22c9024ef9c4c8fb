/* runtime_test_util.h - helpers of the runtime tests (and the step benchmark): assertion macros
 * that print both sides, and models built in memory with random weights (no file, no loader), so
 * the step, session and state-blob code can be tested on any sizes. */
#ifndef FWM_TESTS_RUNTIME_TEST_UTIL_H
#define FWM_TESTS_RUNTIME_TEST_UTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fwm/fwm.h"
#include "model_internal.h"

extern int rt_failures;

#define CHECK(cond)                                                                   \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
            rt_failures++;                                                            \
        }                                                                             \
    } while (0)

#define CHECK_INT(got, want)                                                                \
    do {                                                                                    \
        long long got_ = (long long)(got), want_ = (long long)(want);                       \
        if (got_ != want_) {                                                                \
            fprintf(stderr, "%s:%d: %s == %lld, expected %s == %lld\n", __FILE__, __LINE__, \
                    #got, got_, #want, want_);                                              \
            rt_failures++;                                                                  \
        }                                                                                   \
    } while (0)

static inline const char *rt_message(const fwm_error *err) { return err ? err->message : ""; }

/* A status check that prints both statuses by name and the error message. */
#define CHECK_STATUS(got, want, err)                                                           \
    do {                                                                                       \
        fwm_status got_ = (got), want_ = (want);                                               \
        if (got_ != want_) {                                                                   \
            fprintf(stderr, "%s:%d: %s returned %s (\"%s\"), expected %s\n", __FILE__, __LINE__, \
                    #got, fwm_status_str(got_), rt_message(err), fwm_status_str(want_)); \
            rt_failures++;                                                                     \
        }                                                                                      \
    } while (0)

#define CHECK_CONTAINS(haystack, needle)                                                   \
    do {                                                                                   \
        const char *h_ = (haystack), *n_ = (needle);                                       \
        if (!strstr(h_, n_)) {                                                             \
            fprintf(stderr, "%s:%d: \"%s\" does not contain \"%s\"\n", __FILE__, __LINE__, \
                    h_, n_);                                                               \
            rt_failures++;                                                                 \
        }                                                                                  \
    } while (0)

/* Bytewise equality of two float arrays; on failure prints the first differing index and both
 * values (with their bit patterns). */
#define CHECK_FLOATS_EQUAL(got, want, n, what) \
    rt_check_floats_equal(__FILE__, __LINE__, (got), (want), (n), (what))
void rt_check_floats_equal(const char *file, int line, const float *got, const float *want,
                           size_t n, const char *what);

/* Bytewise equality of two byte arrays (e.g. exported state blobs). */
#define CHECK_BYTES_EQUAL(got, want, n, what) \
    rt_check_bytes_equal(__FILE__, __LINE__, (got), (want), (n), (what))
void rt_check_bytes_equal(const char *file, int line, const void *got, const void *want, size_t n,
                          const char *what);

/* Print the verdict and return the process exit status. */
int rt_finish(const char *name);

/* Hyperparameters with the paper's constants (forget_bias = beta_bias = 1, write_scale = 1/T,
 * eps = 1e-5). read_policy is FWM_READ_ALWAYS or FWM_READ_ON_TOKEN. */
fwm_hparams rt_hparams(uint32_t V, uint32_t E, uint32_t H, uint32_t S, uint32_t R, uint32_t T,
                       uint32_t read_count, bool residual, uint32_t read_policy,
                       uint32_t read_token_id);

/* A model built in memory: random weights drawn from `seed` (distributions like the released
 * code's initialisation, but with non-zero biases), fingerprint derived from the seed, and
 * fwm__model_prepare run when `prepare` is true (else input_gates stays NULL: the step computes
 * W_ih e + b itself). NULL when out of memory. Free with rt_model_free. */
struct fwm_model *rt_model_create(const fwm_hparams *hp, uint64_t seed, bool prepare);
void rt_model_free(struct fwm_model *model);

/* Uniform random token ids below V, from `seed`. */
void rt_random_tokens(uint32_t *tokens, size_t count, uint32_t V, uint64_t seed);

/* A session's whole state (position, h, c, F) as an exported blob in a new malloc'd buffer of
 * *size bytes; NULL on failure (reported as a check failure). */
unsigned char *rt_export(const fwm_session *session, size_t *size);

/* The session's state as the model means it (F with any pending write applied), decoded from its
 * exported blob into malloc'd arrays h[H], c[H], F[S*R*T]; false on failure. */
bool rt_state(const fwm_session *session, float **h, float **c, float **F);

#endif
