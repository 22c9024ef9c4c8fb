/* blas_kernels.h - make OpenBLAS use the fast kernels on a CPU it does not recognise.
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

#endif
