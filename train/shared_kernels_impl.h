/* shared_kernels_impl.h - the pieces of a training step that every architecture's template uses,
 * template over `real` (see real_template.h); included by the <arch>_f32.c / <arch>_f64.c files of each architecture
 * (train/fwm/fwm_f32.c, train/lstm/lstm_f32.c, ...) before their own kernels:
 *   - the parallel matrix product and column sums (rows or columns split over the pool's threads,
 *     fixed order of additions, so results do not depend on timing);
 *   - the LSTM cell (gate order i, f, z, o; the same nonlinearities as the runtime's);
 *   - softmax cross entropy over one row of logits;
 *   - zeroed aligned buffers, and the sigmoid and precise tanh over arrays.
 */

/* ---- buffers: alloc_reals --------------------------------------------------------------------- */

#include "real_buffers_impl.h"

/* ---- parallel matrix product: C[M,N] = alpha op(A) op(B) + beta C (row-major), M split ------- */
typedef struct TM(gemm_job) {
    int trans_a, trans_b;
    size_t M, N, K;
    real alpha;
    const real *A;
    size_t lda;
    const real *B;
    size_t ldb;
    real beta;
    real *C;
    size_t ldc;
    const real *bias; /* optional [N]: every row of C is set to it first (then beta must be 1) */
} TM(gemm_job);

static void gemm_worker(void *ctx, int index, int threads)
{
    const TM(gemm_job) *job = ctx;
    size_t m0, m1;
    fwm__pool_range(job->M, index, threads, &m0, &m1);
    if (m1 <= m0)
        return;
    real *C = job->C + m0 * job->ldc;
    if (job->bias)
        for (size_t i = m0; i < m1; i++)
            memcpy(job->C + i * job->ldc, job->bias, job->N * sizeof(real));
    if (job->K == 0) {
        if (!job->bias && job->beta != (real)1)
            for (size_t i = m0; i < m1; i++)
                for (size_t j = 0; j < job->N; j++)
                    job->C[i * job->ldc + j] *= job->beta;
        return;
    }
    const real *A = job->trans_a ? job->A + m0 : job->A + m0 * job->lda;
    R_GEMM(CblasRowMajor, job->trans_a ? CblasTrans : CblasNoTrans,
           job->trans_b ? CblasTrans : CblasNoTrans, (int)(m1 - m0), (int)job->N, (int)job->K,
           job->alpha, A, (int)job->lda, job->B, (int)job->ldb, job->beta, C, (int)job->ldc);
}

static __attribute__((unused)) void par_gemm(fwm__pool *pool, int trans_a, int trans_b,
                                             size_t M, size_t N, size_t K, real alpha,
                                             const real *A, size_t lda, const real *B,
                                             size_t ldb, real beta, real *C, size_t ldc,
                                             const real *bias)
{
    if (M == 0 || N == 0)
        return;
    TM(gemm_job) job = {trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, bias};
    fwm__pool_run(pool, gemm_worker, &job);
}

/* ---- column sums: out[j] += sum over rows i of A[i, j], columns split across threads -------- */
typedef struct TM(colsum_job) {
    const real *A;
    size_t rows, cols, lda;
    real *out;
    const uint32_t *scatter; /* optional: out is [*, cols] and row i goes to out[scatter[i]] */
} TM(colsum_job);

static void colsum_worker(void *ctx, int index, int threads)
{
    const TM(colsum_job) *job = ctx;
    size_t j0, j1;
    fwm__pool_range(job->cols, index, threads, &j0, &j1);
    for (size_t i = 0; i < job->rows; i++) {
        const real *a = job->A + i * job->lda;
        real *o = job->scatter ? job->out + (size_t)job->scatter[i] * job->cols : job->out;
        for (size_t j = j0; j < j1; j++)
            o[j] += a[j];
    }
}

static void par_colsum(fwm__pool *pool, const real *A, size_t rows, size_t cols, size_t lda,
                       real *out, const uint32_t *scatter)
{
    TM(colsum_job) job = {A, rows, cols, lda, out, scatter};
    fwm__pool_run(pool, colsum_worker, &job);
}

static inline real sigmoid(real x)
{
    return (real)1 / ((real)1 + R_EXP(-x));
}

/* a[i] = sigmoid(a[i]) over n numbers (the vector kernel in single precision) */
static inline __attribute__((unused)) void sigmoid_array(real *a, size_t n)
{
#if FWM_REAL_DOUBLE
    for (size_t i = 0; i < n; i++)
        a[i] = sigmoid(a[i]);
#else
    fwm__sigmoid_array(a, n, 0);
#endif
}

/* out = tanh(in) over n numbers (in place when out == in): the vector kernel's tanh in single
 * precision (a small absolute error), the library's in double */
static inline __attribute__((unused)) void tanh_array(real *out, const real *in, size_t n)
{
#if FWM_REAL_DOUBLE
    for (size_t i = 0; i < n; i++)
        out[i] = R_TANH(in[i]);
#else
    fwm__tanh_array(out, in, n);
#endif
}

/* out = tanh(in) over n numbers to a small relative error (layer norms scale small activations up
 * to unit size, so the fast absolute-error tanh is not enough there) */
static inline __attribute__((unused)) void tanh_precise_array(real *out, const real *in,
                                                              size_t n)
{
#if FWM_REAL_DOUBLE
    for (size_t i = 0; i < n; i++)
        out[i] = R_TANH(in[i]);
#else
    fwm__tanh_array_precise(out, in, n);
#endif
}

/* ---- LSTM cell (the FWM's step 2; every layer of the LSTM baseline) --------------------------
 * gates[4H] holds the pre-activation g = W_ih e + W_hh h + b on entry, i, f, z, o on return. */
static __attribute__((unused)) void lstm_cell_forward(real *gates, const real *c_prev,
                                                      real *c, real *tanh_c, real *h,
                                                      size_t H, real forget_bias)
{
    real *gi = gates, *gf = gates + H, *gz = gates + 2 * H, *go = gates + 3 * H;
#if FWM_REAL_DOUBLE
    for (size_t j = 0; j < H; j++) {
        gi[j] = sigmoid(gi[j]);
        gf[j] = sigmoid(gf[j] + forget_bias);
        go[j] = sigmoid(go[j]);
    }
#else
    fwm__sigmoid_array(gi, H, 0);
    fwm__sigmoid_array(gf, H, forget_bias);
    fwm__sigmoid_array(go, H, 0);
#endif
    tanh_array(gz, gz, H);
    for (size_t j = 0; j < H; j++)
        c[j] = gf[j] * c_prev[j] + gi[j] * gz[j];
    tanh_array(tanh_c, c, H);
    for (size_t j = 0; j < H; j++)
        h[j] = go[j] * tanh_c[j];
}

/* d_h: gradient of h_t (all uses); d_c: on entry gradient of c_t from step t+1, on return the
 * gradient of c_{t-1}. Writes the gate pre-activation gradients to d_gates[4H]. */
static __attribute__((unused)) void lstm_cell_backward(const real *gates,
                                                       const real *c_prev,
                                                       const real *tanh_c, const real *d_h,
                                                       real *d_c, real *d_gates, size_t H)
{
    const real *gi = gates, *gf = gates + H, *gz = gates + 2 * H, *go = gates + 3 * H;
    for (size_t j = 0; j < H; j++) {
        real i = gi[j], f = gf[j], z = gz[j], o = go[j], tc = tanh_c[j];
        real d_o = d_h[j] * tc;
        real dc = d_c[j] + d_h[j] * o * ((real)1 - tc * tc);
        d_gates[j] = dc * z * i * ((real)1 - i);
        d_gates[H + j] = dc * c_prev[j] * f * ((real)1 - f);
        d_gates[2 * H + j] = dc * i * ((real)1 - z * z);
        d_gates[3 * H + j] = d_o * o * ((real)1 - o);
        d_c[j] = dc * f;
    }
}

/* ---- softmax cross entropy over one row of V logits (step 5) --------------------------------
 * logits in, probabilities out (in place); returns -log p[target]. */
static double softmax_ce_forward(real *row, size_t V, uint32_t target)
{
    real max = row[0];
    for (size_t j = 1; j < V; j++)
        if (row[j] > max)
            max = row[j];
    double target_logit = (double)row[target];
    double sum = 0;
    for (size_t j = 0; j < V; j++) {
        row[j] = R_EXP(row[j] - max);
        sum += row[j];
    }
    real inv = (real)(1.0 / sum);
    for (size_t j = 0; j < V; j++)
        row[j] *= inv;
    /* -log p from the log-sum-exp: stays finite when p underflows */
    return log(sum) + (double)max - target_logit;
}

/* probabilities in, gradient of scale * (-log p[target]) with respect to the logits out. */
static void softmax_ce_backward(real *row, size_t V, uint32_t target, real scale)
{
    row[target] -= (real)1;
    for (size_t j = 0; j < V; j++)
        row[j] *= scale;
}
