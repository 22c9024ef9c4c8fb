/* fuzz_target.h - what every fuzz target in tests/fuzz/ shares: the libFuzzer entry point, the
 * check macro that turns a broken invariant into a crash the fuzzer (or the replay driver) reports,
 * and a counter of accepted inputs.
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

/* The libFuzzer entry point: must not crash, leak or hang whatever `data` holds; returns 0. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Inputs the library accepted (a model loaded, a blob imported, a text tokenized in full), so the
 * replay driver can insist that the valid seeds still reach past validation. */
extern unsigned long fuzz_inputs_accepted;

/* A broken invariant is a bug: say which and abort, so the fuzzer saves the input. */
#define FUZZ_CHECK(cond)                                                                     \
    do {                                                                                     \
        if (!(cond)) {                                                                       \
            fprintf(stderr, "%s:%d: fuzz invariant broken: %s\n", __FILE__, __LINE__, #cond); \
            abort();                                                                         \
        }                                                                                    \
    } while (0)

/* As FUZZ_CHECK, for a call's status, printing the status and the error message. */
#define FUZZ_CHECK_STATUS(status, want, error)                                                  \
    do {                                                                                        \
        if ((status) != (want)) {                                                               \
            fprintf(stderr, "%s:%d: status %d (%s) \"%s\", expected %d (%s)\n", __FILE__,       \
                    __LINE__, (int)(status), fwm_status_str(status), (error).message,           \
                    (int)(want), fwm_status_str(want));                                         \
            abort();                                                                            \
        }                                                                                       \
    } while (0)

#endif
