/* test_util.h - a tiny-model factory for the API tests (their assertion macros come from the shared
 * tests/check.h, included here). */
#ifndef FWM_TESTS_API_TEST_UTIL_H
#define FWM_TESTS_API_TEST_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "fwm/fwm.h"
#include "fwm_schema.h" /* fwm_write_kv */

/* Write a small random model with the given vocabulary (NULL-terminated list) to a new temporary
 * file; returns its path (static storage, removed by test_remove_model) or NULL. */
const char *test_write_model(const char *const *vocabulary, uint64_t seed);
/* The same with extra keys (e.g. tokenizer.ggml.model "text", tokenizer.ggml.unknown_token_id). */
const char *test_write_model_extra(const char *const *vocabulary, uint64_t seed,
                                   const fwm_write_kv *extra, size_t extra_count);
void test_remove_model(void);

#endif
