/* runtime_test_util.h - helpers of the runtime tests (and the step benchmark): models built in
 * memory with random weights (no file, no loader), so the step, session and state-blob code can be
 * tested on any sizes. The assertion macros come from the shared tests/check.h, included here by a
 * relative path because bench/runtime includes this header without tests/ on its include path. */
#ifndef FWM_TESTS_RUNTIME_TEST_UTIL_H
#define FWM_TESTS_RUNTIME_TEST_UTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../check.h"
#include "fwm/fwm.h"
#include "fwm_schema.h" /* fwm__write_head */
#include "model_internal.h"

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

/* A session's state as an exported blob, of any architecture, in a new malloc'd buffer of *size
 * bytes: asked for through the size query first (which must answer FWM_ERR_BUFFER_TOO_SMALL with
 * the model's state_blob_bytes), then exported. NULL on failure (reported as a check failure). */
unsigned char *rt_export(const fwm_session *session, size_t *size);

/* The session's state as the model means it (F with any pending write applied), decoded from its
 * exported blob into malloc'd arrays h[H], c[H], F[S*R*T]; false on failure. */
bool rt_state(const fwm_session *session, float **h, float **c, float **F);

/* ---- shared by the tests on model files (test_arch_runtime and the per-architecture
 * test_lstm_runtime, test_mnm_runtime, test_gfw_runtime, test_stm_runtime) ---- */

/* Write a tiny model file of the FWM (E 6, H 8, S = R = T = 3) with `vocab` (V tokens) and its
 * initialisation at `seed` to `path`, and load it; NULL on failure (reported as a check failure). */
fwm_model *rt_write_fwm_file(const char *path, const char *const *vocab, uint32_t V, uint64_t seed);

/* Step `n_sessions` new sessions of `model` over `steps` tokens each (session j reads
 * tokens[j * steps .. (j + 1) * steps)) three ways: fwm_session_step token by token,
 * fwm_session_step_sequence, and fwm_batch_step across the sessions per position. Every row of
 * logits (NaN rows of positions that predict nothing included) and each session's whole state
 * block (padding included) must be equal bit for bit. For architectures whose state block holds
 * the whole state (not the FWM, whose pending write lives outside it). */
void rt_check_step_modes(const fwm_model *model, const uint32_t *tokens, size_t n_sessions,
                         size_t steps);

/* The same over uniform random tokens drawn from `seed` (rt_random_tokens). */
void rt_check_step_modes_random(const fwm_model *model, size_t n_sessions, size_t steps,
                                uint64_t seed);

/* Rewrite a state blob's trailing XXH64 after an edit, so that checks behind the checksum are
 * reached. */
void rt_reseal(unsigned char *blob, size_t size);

/* Session `s` of architecture `arch` (not the FWM; V tokens) refuses the FWM-only functions
 * (fwm_session_memory, fwm_session_trace) and tokens out of range (a step on token V, a sequence
 * with 99 at position 1), its position unchanged. */
void rt_check_non_fwm_refusals(fwm_session *s, const char *arch, uint32_t V);

/* Session `s` of architecture `arch` (one without fwm_session_predict: mnm, gfw, stm) refuses it with
 * FWM_ERR_UNSUPPORTED naming the architecture, its logits row (V floats) and position untouched. */
void rt_check_no_predict(const fwm_session *s, const char *arch, uint32_t V);

/* A fresh temporary folder named after `test` (0, reported, when it cannot be made); rt_path: the
 * path of `name` in it (one of four static buffers used in turn, so four can be held at once);
 * rt_dir_remove: unlink `names` in it, then remove it. */
int rt_dir_make(const char *test);
const char *rt_path(const char *name);
void rt_dir_remove(const char *const *names, size_t count);

/* Allocation failures around the model file `path`: fwm_model_load failing at each allocation in
 * turn until it loads (each time FWM_ERR_OUT_OF_MEMORY and no model, at least five times), then
 * session create and fork failing at each allocation in turn (an error leaves no session). */
void rt_check_load_and_session_oom(const char *path);

/* Forty sessions of `model` (at least) after `steps_before` batch steps over tokens[40]: a batch
 * step failing at its first allocation is refused with FWM_ERR_OUT_OF_MEMORY and leaves every
 * position and session 0's state block as they were; the next step works. Frees the sessions. */
void rt_check_batch_oom(fwm_model *model, const uint32_t *tokens, int steps_before);

/* An architecture's model writer (fwm_<arch>_model_write) behind a `const void *` spec. */
typedef fwm_status (*rt_write_fn)(const char *path, const void *spec, fwm_error *err);
/* The writer failing at each allocation in turn until it writes `path` (each time
 * FWM_ERR_OUT_OF_MEMORY, at least three times); the file is then removed. */
void rt_check_write_oom(rt_write_fn write, const void *spec, const char *path);

/* The head of a test model's write spec: its name and vocabulary, and the `count` tokens at
 * `prime` as its prime tokens (prime NULL: none given, so the default, one <eos>). */
fwm__write_head rt_write_head(const char *name, const char *const *vocabulary, const uint32_t *prime,
                              size_t count);

#endif
