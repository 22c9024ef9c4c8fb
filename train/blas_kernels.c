/* blas_kernels.c - the trainer's OpenBLAS settings: the kernels this CPU can run when OpenBLAS
 * does not know the CPU, and one BLAS thread per calling thread.
 *
 * Debian's OpenBLAS is built with DYNAMIC_ARCH: when the library is loaded (in its constructor,
 * before main) it picks its kernels by the CPU's family and model, and reads OPENBLAS_CORETYPE only
 * then. A CPU newer than the library (family 6 model 207, a 5th-generation Xeon, under OpenBLAS
 * 0.3.21) is not in its table and gets the "Prescott" (SSE3) kernels, which run the trainer's
 * matrix products two to three times slower than the AVX-512 ones the CPU has. So when the user has
 * not set OPENBLAS_CORETYPE, the library chose Prescott and the CPU has AVX-512 (SkylakeX kernels)
 * or AVX2 with FMA (Haswell kernels), the program runs itself again, once, with OPENBLAS_CORETYPE
 * set. The new process has the same pid, arguments and environment otherwise.
 */
#include "blas_kernels.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The kernel set OpenBLAS should use on this CPU, or NULL to keep the library's own choice. */
static const char *wanted_core(void)
{
#if defined(__x86_64__) && defined(OPENBLAS_VERSION)
    const char *chosen = openblas_get_corename();
    if (chosen == NULL || strcmp(chosen, "Prescott") != 0)
        return NULL;
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
        return "SkylakeX";
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return "Haswell";
#endif
    return NULL;
}

void fwm__blas_choose_kernels(char **argv)
{
    const char *given = getenv("OPENBLAS_CORETYPE");
    if (given != NULL)
        return; /* the user's choice, or this function's after the restart */
    const char *core = wanted_core();
    if (core == NULL)
        return;
    /* the program's own path, so that the restarted process keeps its name (ps, pkill) */
    char path[4096];
    ssize_t length = readlink("/proc/self/exe", path, sizeof path - 1);
    if (length <= 0 || (size_t)length >= sizeof path - 1)
        return;
    path[length] = '\0';
    if (setenv("OPENBLAS_CORETYPE", core, 1) != 0)
        return;
    execv(path, argv);
    /* execv returned: the file was replaced or removed, say. Go on with the slower kernels. */
    fprintf(stderr,
            "note: OpenBLAS does not recognise this CPU and chose its Prescott kernels; setting "
            "OPENBLAS_CORETYPE=%s and restarting failed, so matrix products run slower\n",
            core);
    unsetenv("OPENBLAS_CORETYPE");
}

void fwm__blas_use_one_thread(void)
{
#ifdef OPENBLAS_VERSION
    openblas_set_num_threads(1);
#endif
}
