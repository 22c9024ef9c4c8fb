/* blas_kernels.h - the trainer's OpenBLAS settings: its kernel set and its threads.
 *
 * Call fwm__blas_choose_kernels(argv) first thing in main, before any thread or MPI exists: when
 * OpenBLAS fell back to its SSE3 ("Prescott") kernels on a CPU with AVX2/FMA or AVX-512 and
 * OPENBLAS_CORETYPE is unset, it sets the variable and re-executes the program (blas_kernels.c).
 * Otherwise, or where that fails, it returns and changes nothing. Setting OPENBLAS_CORETYPE
 * yourself (any value OpenBLAS knows) always wins.
 */
#ifndef FWM_TRAIN_BLAS_KERNELS_H
#define FWM_TRAIN_BLAS_KERNELS_H

void fwm__blas_choose_kernels(char **argv);

/* Make the BLAS library run every call on the calling thread (OpenBLAS; a no-op for others): the
 * trainer's pool threads call it concurrently on their own parts, which keeps results independent
 * of timing. */
void fwm__blas_use_one_thread(void);

#endif
