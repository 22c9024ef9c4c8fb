/* bf16_kernels.h - the batched matrix-vector product over BF16 weights, for models whose file asks
 * for BF16 matrix products (docs/FORMAT.md, fwm.matmul_type). Internal to libfwm.
 *
 * What one output element is (the same whichever kernel runs, whatever the batch holds): the
 * vector x is rounded to BF16 (round to nearest even; a subnormal result becomes a zero of its
 * sign, a NaN stays a NaN), and x and the weight row are padded with zeros to P = cols rounded up
 * to 32. Sixteen float lane accumulators start at +0; for each chunk c of 32 elements in order,
 * lane l adds the product of elements 32c + 2l + 1, then the product of elements 32c + 2l (each
 * product of two BF16 values is exact in float, each addition rounds to nearest even). The lanes
 * reduce as s_l = a_l + a_{l+8}, t_l = s_l + s_{l+4}, u_l = t_l + t_{l+2}, u_0 + u_1; then the bias
 * is added. That is what AVX512-BF16's vdpbf16ps computes per lane for normal values (its
 * products and sums flush subnormals to zero and it ignores MXCSR), so the native kernel and the
 * portable one give the same bits for weights and vectors whose products and partial sums stay
 * finite and normal (tests/runtime/test_bf16_kernels.c); with subnormal or overflowing values
 * they may differ in the last bits. On one machine the kernel is fixed, so single, sequence and
 * batched steps agree bit for bit as for F32.
 */
#ifndef FWM_RUNTIME_BF16_KERNELS_H
#define FWM_RUNTIME_BF16_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fwm_schema.h"
#include "kernels.h"

/* The widest BF16 matrix the kernels take (cols); wider BF16 matrices are widened to F32 at load. */
#define FWM_BF16_MAX_COLS FWM_BF16_MATRIX_MAX_COLS

/* y[n] = W x[n] + bias[n] as fwm__matvec_batch (kernels.h), W [rows, cols] in BF16, with the
 * arithmetic above; cols <= FWM_BF16_MAX_COLS. Runs the AVX512-BF16 kernel where the CPU has it
 * (and FWM_BF16_KERNEL is not "portable" in the environment at the first call), else the portable
 * one. */
void fwm__matvec_bf16(const uint16_t *W, size_t rows, size_t cols, size_t count,
                      const float *const *x, const float *const *bias, float *const *y);

/* The two kernels behind it, for tests and benchmarks: the portable one always; the native one
 * only where fwm__bf16_native_available() (it computes nothing and returns false elsewhere). */
void fwm__matvec_bf16_portable(const uint16_t *W, size_t rows, size_t cols, size_t count,
                               const float *const *x, const float *const *bias, float *const *y);
bool fwm__matvec_bf16_native(const uint16_t *W, size_t rows, size_t cols, size_t count,
                             const float *const *x, const float *const *bias, float *const *y);
bool fwm__bf16_native_available(void);
/* "avx512bf16" or "portable": the kernel fwm__matvec_bf16 runs. */
const char *fwm__bf16_kernel_name(void);

/* x[0..n) rounded to BF16 as above, then zeros up to `padded` (>= n). */
void fwm__bf16_round(const float *x, size_t n, uint16_t *out, size_t padded);
/* One float rounded to BF16 as above. */
uint16_t fwm__bf16_from_float(float x);

/* W x + bias with W in F32 (w16 NULL) or BF16 (w16): the step's one call for a weight matrix. */
static inline void fwm__matvec_any(const float *w32, const uint16_t *w16, size_t rows, size_t cols,
                                   size_t count, const float *const *x, const float *const *bias,
                                   float *const *y) {
    if (w16)
        fwm__matvec_bf16(w16, rows, cols, count, x, bias, y);
    else
        fwm__matvec_batch(w32, rows, cols, count, x, bias, y);
}

#endif
