/* kernels.h - the numeric kernels of the FWM step: batched matrix-vector products, the fast-weight
 * passes over F, and the element-wise nonlinearities. Internal to libfwm.
 *
 * Determinism contract (what makes single, sequence and batched steps bit-identical): every output
 * element is computed by one fixed sequence of float operations that depends only on the operand
 * sizes, never on how many vectors are processed together or where they sit in memory. A dot
 * product of length n is: eight lane accumulators, each acc[l] = fma(w[k], x[k], acc[l]) over
 * k = 8c + l for full chunks c in order; the lanes reduced as ((a0+a1)+(a2+a3))+((a4+a5)+(a6+a7));
 * then the n % 8 tail elements added in order with one fma each; then the bias added. Where the
 * machine has no FMA, fma(a, b, c) is a*b + c everywhere instead (still one fixed sequence).
 * Register blocking is over rows and vectors only. The pass over F works on one session's F, so its
 * order depends only on S, R and T.
 *
 * The nonlinearities are polynomial approximations (about 2 ulp), computed the same way in the
 * vector lanes and in the scalar tail, so they do not depend on an element's position either.
 */
#ifndef FWM_RUNTIME_KERNELS_H
#define FWM_RUNTIME_KERNELS_H

#include <stddef.h>

/* fma(a, b, c): one rounding where the target has FMA, a*b + c (two) elsewhere; the vector kernels
 * follow the same choice. */
#if defined(__FMA__) && defined(__AVX__)
#define FWM_HAVE_FMA 1
#define FWM_FMAF(a, b, c) __builtin_fmaf((a), (b), (c))
#else
#define FWM_HAVE_FMA 0
#define FWM_FMAF(a, b, c) ((a) * (b) + (c))
#endif

/* y[n][r] = sum_k W[r*cols + k] * x[n][k] + bias[n][r], for r < rows, n < count.
 * W: [rows, cols] row-major. x, y: `count` pointers to vectors of cols and rows floats. bias:
 * `count` pointers to rows floats each (they may all be the same pointer), or NULL for no bias.
 * No y[n] may overlap W, any x or any bias. */
void fwm__matvec_batch(const float *W, size_t rows, size_t cols, size_t count,
                       const float *const *x, const float *const *bias, float *const *y);

/* out[t] = sum_k x[k] * F[k*cols + t] for t < cols (F^T x; F is [rows, cols]). */
void fwm__vecmat(const float *F, size_t rows, size_t cols, const float *x, float *out);

/* The write's rank-1 update and normalisation, kept pending until the next pass over F:
 * F[i][j][t] becomes fwm__fw_apply(F[i][j][t], k1[i] * k2[j], d[t], s). */
typedef struct fwm__fw_pending {
    const float *k1; /* [S] */
    const float *k2; /* [R] */
    const float *d;  /* [T] */
    float s;         /* 1 / max(1, ||F + K d^T||) */
} fwm__fw_pending;

/* One element of the pending update (kk = k1[i] * k2[j], a float product): exactly what the pass
 * stores, so a state export can apply it on the fly and match bit for bit. */
static inline float fwm__fw_apply(float f, float kk, float d, float s) {
    float g = FWM_FMAF(kk, d, f);
    return s != 1.0f ? g * s : g;
}

/* The step's one pass over F ([S][R][T], T fastest): applies `pending` if not NULL (storing the
 * result), then for each of `count` >= 1 vectors vecs[v] (R floats) writes
 * out[v][i*T + t] = sum_j vecs[v][j] * F[i][j][t] (S*T floats each), and returns the sum of squares
 * of the updated F. The sum of squares depends only on S, R, T (not on count), so steps with and
 * without reads normalise F identically. */
float fwm__fw_contract(float *F, size_t S, size_t R, size_t T, const fwm__fw_pending *pending,
                       const float *const *vecs, size_t count, float *const *out);

/* y[i] = sigmoid(x[i] + bias), y[i] = tanh(x[i]); y may equal x. */
void fwm__sigmoid_array(float *y, const float *x, size_t n, float bias);
void fwm__tanh_array(float *y, const float *x, size_t n);

/* Scalar forms, bit-identical to one lane of the array forms. */
float fwm__expf(float x);
float fwm__sigmoidf(float x);
float fwm__tanhf(float x);

/* One LSTM cell update from the pre-activations g[4H] (gate order i, f, z, o):
 * c = f*c + i*z, h = o*tanh(c), with f = sigmoid(g_f + forget_bias). */
void fwm__lstm_cell(const float *g, size_t H, float forget_bias, float *c, float *h);

/* y = (x - mean(x)) / sqrt(var(x) + eps), biased variance; y may equal x. */
void fwm__layer_norm(float *y, const float *x, size_t n, float eps);

#endif
