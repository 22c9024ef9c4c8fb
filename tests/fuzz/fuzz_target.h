/* fuzz_target.h - what every fuzz target in tests/fuzz/ shares: the libFuzzer entry point, the
 * check macros (the shared tests/check.h ones) that turn a broken invariant into a crash the fuzzer
 * (or the replay driver) reports, and a counter of accepted inputs.
 *
 * Each target file defines LLVMFuzzerTestOneInput and fuzz_inputs_accepted. It is linked either
 * with libFuzzer (-Dfuzz=true, clang) or with replay_main.c, which feeds it every file of a corpus.
 */
#ifndef FWM_TESTS_FUZZ_TARGET_H
#define FWM_TESTS_FUZZ_TARGET_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"

/* The libFuzzer entry point: must not crash, leak or hang whatever `data` holds; returns 0. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Inputs the library accepted (a model loaded, a blob imported, a text tokenized in full), so the
 * replay driver can insist that the valid seeds still reach past validation. */
extern unsigned long fuzz_inputs_accepted;

/* A broken invariant is a bug: the shared check (tests/check.h) says which, with both sides, and
 * then the target aborts, so the fuzzer (or the replay driver) saves / reports the input. */
#define FUZZ_ABORT_IF_FAILED_(check)                              \
    do {                                                          \
        int fuzz_failures_before_ = check_failures;               \
        check;                                                    \
        if (check_failures != fuzz_failures_before_) abort();     \
    } while (0)

#define FUZZ_CHECK(cond) FUZZ_ABORT_IF_FAILED_(CHECK(cond))

/* As FUZZ_CHECK, for a call's status: prints both statuses and the message of `error` (an
 * fwm_error struct). */
#define FUZZ_CHECK_STATUS(status, want, error) \
    FUZZ_ABORT_IF_FAILED_(CHECK_STATUS(status, want, &(error)))

#endif
