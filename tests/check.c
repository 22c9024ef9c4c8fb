/* check.c - the one definition of the failure counter of check.h and its out-of-line helpers
 * (array comparisons, verdict, case table), linked once into every C test program. */
#include "check.h"

int check_failures;

void check_floats_equal(const char *file, int line, const float *got, const float *want, size_t n,
                        const char *what) {
    for (size_t i = 0; i < n; i++) {
        uint32_t a, b;
        memcpy(&a, &got[i], 4);
        memcpy(&b, &want[i], 4);
        if (a != b) {
            fprintf(stderr,
                    "%s:%d: %s differ at [%zu] of %zu: got %.9g (0x%08x), expected %.9g (0x%08x)\n",
                    file, line, what, i, n, (double)got[i], a, (double)want[i], b);
            check_failures++;
            return;
        }
    }
}

void check_bytes_equal(const char *file, int line, const void *got, const void *want, size_t n,
                       const char *what) {
    const unsigned char *a = got, *b = want;
    for (size_t i = 0; i < n; i++) {
        if (a[i] != b[i]) {
            fprintf(stderr, "%s:%d: %s differ at byte %zu of %zu: got 0x%02x, expected 0x%02x\n",
                    file, line, what, i, n, a[i], b[i]);
            check_failures++;
            return;
        }
    }
}

int check_finish(const char *name) {
    if (check_failures) {
        fprintf(stderr, "%s: %d check(s) failed\n", name, check_failures);
        return 1;
    }
    printf("%s: all checks passed\n", name);
    return 0;
}

int check_run_cases(const char *program, const check_case *cases, size_t count) {
    int passed = 0, failed = 0;
    for (size_t i = 0; i < count; i++) {
        int before = check_failures;
        cases[i].run();
        if (check_failures == before) {
            passed++;
        } else {
            failed++;
            fprintf(stderr, "%s: case '%s' FAILED\n", program, cases[i].name);
        }
    }
    printf("%s: %d passed, %d failed\n", program, passed, failed);
    return failed ? 1 : 0;
}
