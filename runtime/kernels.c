/* kernels.c - the numeric kernels of the FWM step (see kernels.h for the determinism contract).
 *
 * Written with GCC/Clang vector extensions (8 float lanes) so one source serves AVX2+FMA (the
 * default -march=native build on x86-64) and any other target; the few operations vector
 * extensions lack or compile poorly (fused multiply-add, floor, min/max/blend, the horizontal
 * adds of the reductions) use AVX intrinsics where the target has them and a lane-by-lane
 * fallback otherwise, each computing exactly what its fallback computes. No BLAS here: a BLAS may
 * change its summation order with the number of right-hand sides, which would break batched ==
 * single bit-identity.
 */
#include "kernels.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#if defined(__AVX__)
#include <immintrin.h>
#else
/* 32-byte vectors without AVX: GCC notes that passing them by value would differ from an AVX
 * build's ABI; every such function here is static, so no ABI is involved. */
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

typedef float v8f __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));

#define LANES 8

/* ---- 8-lane helpers ---------------------------------------------------------------------------- */

static inline v8f v_load(const float *p) {
    v8f v;
    memcpy(&v, p, sizeof v);
    return v;
}
static inline void v_store(float *p, v8f v) { memcpy(p, &v, sizeof v); }
static inline v8f v_splat(float a) { return (v8f){a, a, a, a, a, a, a, a}; }

/* fma(a, b, c) = a*b + c, fused where the target has FMA. FWM_FMAF (kernels.h) is its scalar
 * twin: the two agree (both fused or both not) so vector lanes and scalar tails compute alike. */
#if FWM_HAVE_FMA
static inline v8f v_fma(v8f a, v8f b, v8f c) {
    return (v8f)_mm256_fmadd_ps((__m256)a, (__m256)b, (__m256)c);
}
#else
static inline v8f v_fma(v8f a, v8f b, v8f c) { return a * b + c; }
#endif

static inline v8f v_floor(v8f x) {
#if defined(__AVX__)
    return (v8f)_mm256_floor_ps((__m256)x);
#else
    for (int l = 0; l < LANES; l++) x[l] = floorf(x[l]);
    return x;
#endif
}

/* The one horizontal reduction every dot product uses. */
static inline float v_reduce(v8f a) {
    return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
}

/* m ? a : b lane by lane (m lanes all ones or all zeros). */
static inline v8f v_select(v8i m, v8f a, v8f b) {
#if defined(__AVX__)
    return (v8f)_mm256_blendv_ps((__m256)b, (__m256)a, (__m256)m);
#else
    return (v8f)(((v8i)a & m) | ((v8i)b & ~m));
#endif
}
/* a < b ? a : b and a > b ? a : b, the scalar twins below use the same comparisons (minps and
 * maxps are exactly these, NaN operands included). */
#if defined(__AVX__)
static inline v8f v_min(v8f a, v8f b) { return (v8f)_mm256_min_ps((__m256)a, (__m256)b); }
static inline v8f v_max(v8f a, v8f b) { return (v8f)_mm256_max_ps((__m256)a, (__m256)b); }
#else
static inline v8f v_min(v8f a, v8f b) { return v_select(a < b, a, b); }
static inline v8f v_max(v8f a, v8f b) { return v_select(a > b, a, b); }
#endif
static inline float s_min(float a, float b) { return a < b ? a : b; }
static inline float s_max(float a, float b) { return a > b ? a : b; }

/* ---- exp, sigmoid, tanh -------------------------------------------------------------------------
 * exp: Cephes expf (range reduction by ln 2 in two parts, degree-5 polynomial), input clamped to
 * [-87, 88] so 2^n stays a normal float. tanh: Cephes tanhf (odd polynomial below 0.625,
 * 1 - 2 / (exp(2|x|) + 1) above). Both within a few ulp of the correctly rounded result. */
#define EXP_HI 88.0f
#define EXP_LO -87.0f
#define EXP_LOG2E 1.44269504088896341f
#define EXP_C1 0.693359375f
#define EXP_C2 -2.12194440e-4f
#define EXP_P0 1.9875691500e-4f
#define EXP_P1 1.3981999507e-3f
#define EXP_P2 8.3334519073e-3f
#define EXP_P3 4.1665795894e-2f
#define EXP_P4 1.6666665459e-1f
#define EXP_P5 5.0000001201e-1f
#define TANH_SMALL 0.625f
#define TANH_P0 -5.70498872745e-3f
#define TANH_P1 2.06390887954e-2f
#define TANH_P2 -5.37397155531e-2f
#define TANH_P3 1.33314422036e-1f
#define TANH_P4 -3.33332819422e-1f

static inline v8f v_exp(v8f x) {
    x = v_min(x, v_splat(EXP_HI));
    x = v_max(x, v_splat(EXP_LO));
    v8f fx = v_floor(v_fma(x, v_splat(EXP_LOG2E), v_splat(0.5f)));
    v8f r = v_fma(fx, v_splat(-EXP_C1), x);
    r = v_fma(fx, v_splat(-EXP_C2), r);
    v8f z = r * r;
    v8f y = v_splat(EXP_P0);
    y = v_fma(y, r, v_splat(EXP_P1));
    y = v_fma(y, r, v_splat(EXP_P2));
    y = v_fma(y, r, v_splat(EXP_P3));
    y = v_fma(y, r, v_splat(EXP_P4));
    y = v_fma(y, r, v_splat(EXP_P5));
    y = v_fma(y, z, r);
    y = y + v_splat(1.0f);
    v8i n = __builtin_convertvector(fx, v8i);
    v8f pow2n = (v8f)((n + 127) << 23);
    return y * pow2n;
}

float fwm__expf(float x) {
    x = s_min(x, EXP_HI);
    x = s_max(x, EXP_LO);
    float fx = floorf(FWM_FMAF(x, EXP_LOG2E, 0.5f));
    float r = FWM_FMAF(fx, -EXP_C1, x);
    r = FWM_FMAF(fx, -EXP_C2, r);
    float z = r * r;
    float y = EXP_P0;
    y = FWM_FMAF(y, r, EXP_P1);
    y = FWM_FMAF(y, r, EXP_P2);
    y = FWM_FMAF(y, r, EXP_P3);
    y = FWM_FMAF(y, r, EXP_P4);
    y = FWM_FMAF(y, r, EXP_P5);
    y = FWM_FMAF(y, z, r);
    y = y + 1.0f;
    int32_t n = (int32_t)fx;
    uint32_t bits = (uint32_t)(n + 127) << 23;
    float pow2n;
    memcpy(&pow2n, &bits, sizeof pow2n);
    return y * pow2n;
}

static inline v8f v_sigmoid(v8f x) { return v_splat(1.0f) / (v_splat(1.0f) + v_exp(-x)); }

float fwm__sigmoidf(float x) { return 1.0f / (1.0f + fwm__expf(-x)); }

static inline v8f v_tanh(v8f x) {
    const v8i abs_mask = {0x7fffffff, 0x7fffffff, 0x7fffffff, 0x7fffffff,
                          0x7fffffff, 0x7fffffff, 0x7fffffff, 0x7fffffff};
    v8f a = (v8f)((v8i)x & abs_mask);
    v8f z = x * x;
    v8f p = v_splat(TANH_P0);
    p = v_fma(p, z, v_splat(TANH_P1));
    p = v_fma(p, z, v_splat(TANH_P2));
    p = v_fma(p, z, v_splat(TANH_P3));
    p = v_fma(p, z, v_splat(TANH_P4));
    v8f small = v_fma(p * z, x, x);
    v8f e = v_exp(a + a);
    v8f large = v_splat(1.0f) - v_splat(2.0f) / (e + v_splat(1.0f));
    large = (v8f)((v8i)large | ((v8i)x & ~abs_mask)); /* sign of x */
    return v_select(a < v_splat(TANH_SMALL), small, large);
}

float fwm__tanhf(float x) {
    float a = fabsf(x);
    if (a < TANH_SMALL) {
        float z = x * x;
        float p = TANH_P0;
        p = FWM_FMAF(p, z, TANH_P1);
        p = FWM_FMAF(p, z, TANH_P2);
        p = FWM_FMAF(p, z, TANH_P3);
        p = FWM_FMAF(p, z, TANH_P4);
        return FWM_FMAF(p * z, x, x);
    }
    float e = fwm__expf(a + a);
    return copysignf(1.0f - 2.0f / (e + 1.0f), x);
}

void fwm__sigmoid_array(float *y, const float *x, size_t n, float bias) {
    size_t i = 0;
    for (; i + LANES <= n; i += LANES) v_store(y + i, v_sigmoid(v_load(x + i) + v_splat(bias)));
    for (; i < n; i++) y[i] = fwm__sigmoidf(x[i] + bias);
}

void fwm__tanh_array(float *y, const float *x, size_t n) {
    size_t i = 0;
    for (; i + LANES <= n; i += LANES) v_store(y + i, v_tanh(v_load(x + i)));
    for (; i < n; i++) y[i] = fwm__tanhf(x[i]);
}

/* Elements per tile of the cell: the gates of a whole tile first, then its cell update, so the
 * long exp-and-divide chains of neighbouring vectors overlap (one vector at a time leaves the
 * core waiting on each chain). */
#define CELL_TILE 64

void fwm__lstm_cell(const float *g, size_t H, float forget_bias, float *c, float *h) {
    const float *gi = g, *gf = g + H, *gz = g + 2 * H, *go = g + 3 * H;
    size_t j = 0;
    while (j + LANES <= H) {
        size_t n = (H - j) & ~(size_t)(LANES - 1);
        if (n > CELL_TILE) n = CELL_TILE;
        v8f ti[CELL_TILE / LANES], tf[CELL_TILE / LANES], tz[CELL_TILE / LANES], to[CELL_TILE / LANES];
        for (size_t k = 0; k < n / LANES; k++) {
            ti[k] = v_sigmoid(v_load(gi + j + LANES * k));
            tf[k] = v_sigmoid(v_load(gf + j + LANES * k) + v_splat(forget_bias));
            tz[k] = v_tanh(v_load(gz + j + LANES * k));
            to[k] = v_sigmoid(v_load(go + j + LANES * k));
        }
        for (size_t k = 0; k < n / LANES; k++) {
            v8f cn = v_fma(tf[k], v_load(c + j + LANES * k), ti[k] * tz[k]);
            v_store(c + j + LANES * k, cn);
            v_store(h + j + LANES * k, to[k] * v_tanh(cn));
        }
        j += n;
    }
    for (; j < H; j++) {
        float i = fwm__sigmoidf(gi[j]);
        float f = fwm__sigmoidf(gf[j] + forget_bias);
        float z = fwm__tanhf(gz[j]);
        float o = fwm__sigmoidf(go[j]);
        float cn = FWM_FMAF(f, c[j], i * z);
        c[j] = cn;
        h[j] = o * fwm__tanhf(cn);
    }
}

void fwm__layer_norm(float *y, const float *x, size_t n, float eps) {
    float sum = 0.0f;
    for (size_t i = 0; i < n; i++) sum += x[i];
    float mean = sum / (float)n;
    float var = 0.0f;
    for (size_t i = 0; i < n; i++) {
        float dlt = x[i] - mean;
        var = FWM_FMAF(dlt, dlt, var);
    }
    var = var / (float)n;
    float inv = 1.0f / sqrtf(var + eps);
    for (size_t i = 0; i < n; i++) y[i] = (x[i] - mean) * inv;
}

/* ---- batched matrix-vector product ------------------------------------------------------------- */

#define MV_MAX_ROWS 8
#define MV_MAX_VECS 3

/* The canonical reduction (v_reduce) of four accumulators at once: hadd pairs neighbours, a second
 * hadd pairs the pairs, and adding the two 128-bit halves finishes each tree, so out[i] is
 * bit-identical to v_reduce(a_i). */
static inline void v_reduce4(v8f a0, v8f a1, v8f a2, v8f a3, float out[4]) {
#if defined(__AVX__)
    __m256 h1 = _mm256_hadd_ps((__m256)a0, (__m256)a1);
    __m256 h2 = _mm256_hadd_ps((__m256)a2, (__m256)a3);
    __m256 h3 = _mm256_hadd_ps(h1, h2);
    _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(h3), _mm256_extractf128_ps(h3, 1)));
#else
    out[0] = v_reduce(a0), out[1] = v_reduce(a1), out[2] = v_reduce(a2), out[3] = v_reduce(a3);
#endif
}

#if defined(__AVX__)
/* v_reduce4 and v_reduce of two accumulators, kept in a register: lanes 0-3 (0-1) of the result
 * are the four (two) canonical sums. */
static inline __m128 v_reduce4_reg(v8f a0, v8f a1, v8f a2, v8f a3) {
    __m256 h3 = _mm256_hadd_ps(_mm256_hadd_ps((__m256)a0, (__m256)a1), _mm256_hadd_ps((__m256)a2, (__m256)a3));
    return _mm_add_ps(_mm256_castps256_ps128(h3), _mm256_extractf128_ps(h3, 1));
}
static inline __m128 v_reduce2_reg(v8f a0, v8f a1) {
    __m256 h1 = _mm256_hadd_ps((__m256)a0, (__m256)a1);
    __m256 h2 = _mm256_hadd_ps(h1, h1);
    return _mm_add_ps(_mm256_castps256_ps128(h2), _mm256_extractf128_ps(h2, 1));
}
#endif

/* RB rows (r .. r+RB-1) times NB vectors (x[0..NB-1]): the register block. Each (row, vector) pair
 * has its own 8-lane accumulator and follows exactly the sequence in kernels.h. */
static inline __attribute__((always_inline)) void mv_block(const float *W, size_t cols, size_t r,
                                                           int RB, int NB, const float *const *x,
                                                           const float *const *bias,
                                                           float *const *y) {
    v8f acc[MV_MAX_ROWS][MV_MAX_VECS];
    const float *w[MV_MAX_ROWS];
    for (int i = 0; i < RB; i++) {
        w[i] = W + (r + (size_t)i) * cols;
        for (int j = 0; j < NB; j++) acc[i][j] = v_splat(0.0f);
    }
    size_t k8 = cols & ~(size_t)(LANES - 1);
    for (size_t k = 0; k < k8; k += LANES) {
        v8f xv[MV_MAX_VECS];
        for (int j = 0; j < NB; j++) xv[j] = v_load(x[j] + k);
        /* (One vector streams W from L3: the hardware prefetchers keep up with its eight row
         * streams; a software prefetch of the next block, tried, made the product slower.) */
        for (int i = 0; i < RB; i++) {
            v8f wv = v_load(w[i] + k);
            /* with several vectors, one load of the W chunk into a register serves them all (the
             * compiler would otherwise fold a load into every multiply-add: AVX2 cores load at
             * most two 32-byte chunks a cycle) */
#if defined(__AVX__)
            if (NB > 1) __asm__("" : "+x"(wv));
#endif
            for (int j = 0; j < NB; j++) acc[i][j] = v_fma(wv, xv[j], acc[i][j]);
        }
    }
#if defined(__AVX__)
    if (k8 == cols) { /* no tail: reduce, add the bias and store four (two) rows at a time */
        for (int j = 0; j < NB; j++) {
            float *yj = y[j] + r;
            const float *bj = bias ? bias[j] + r : NULL;
            int q = 0;
            for (; q + 4 <= RB; q += 4) {
                __m128 t = v_reduce4_reg(acc[q][j], acc[q + 1][j], acc[q + 2][j], acc[q + 3][j]);
                if (bj) t = _mm_add_ps(t, _mm_loadu_ps(bj + q));
                _mm_storeu_ps(yj + q, t);
            }
            for (; q + 2 <= RB; q += 2) {
                __m128 t = v_reduce2_reg(acc[q][j], acc[q + 1][j]);
                if (bj) t = _mm_add_ps(t, _mm_loadl_pi(_mm_setzero_ps(), (const __m64 *)(bj + q)));
                _mm_storel_pi((__m64 *)(yj + q), t);
            }
            for (; q < RB; q++) yj[q] = bj ? v_reduce(acc[q][j]) + bj[q] : v_reduce(acc[q][j]);
        }
        return;
    }
#endif
    for (int j = 0; j < NB; j++) {
        float sum[MV_MAX_ROWS];
        int q = 0;
        for (; q + 4 <= RB; q += 4)
            v_reduce4(acc[q][j], acc[q + 1][j], acc[q + 2][j], acc[q + 3][j], sum + q);
        for (; q < RB; q++) sum[q] = v_reduce(acc[q][j]);
        for (int i = 0; i < RB; i++) {
            float t = sum[i];
            for (size_t k = k8; k < cols; k++) t = FWM_FMAF(w[i][k], x[j][k], t);
            y[j][r + (size_t)i] = bias ? t + bias[j][r + (size_t)i] : t;
        }
    }
}

/* Rows [r0, r1) for NB vectors: blocks of RB rows, then of 4, then single rows. */
#define DEFINE_MV_ROWS(NB, RB)                                                                    \
    static void mv_rows_##NB(const float *W, size_t cols, size_t r0, size_t r1,                   \
                             const float *const *x, const float *const *bias, float *const *y) { \
        size_t r = r0;                                                                            \
        for (; r + (RB) <= r1; r += (RB)) mv_block(W, cols, r, (RB), (NB), x, bias, y);          \
        for (; r + 4 <= r1; r += 4) mv_block(W, cols, r, 4, (NB), x, bias, y);                    \
        for (; r < r1; r++) mv_block(W, cols, r, 1, (NB), x, bias, y);                            \
    }
/* Block shapes, chosen for AVX2's 16 vector registers: one vector, 8 rows (8 accumulators to hide
 * the FMA latency while W streams in); two vectors, 6 rows (12 accumulators, the two x chunks and
 * one W chunk in registers: 8 loads per 12 FMAs); three (batch remainders), 4 rows. */
DEFINE_MV_ROWS(1, 8)
DEFINE_MV_ROWS(2, 6)
DEFINE_MV_ROWS(3, 4)

/* Bytes of W per tile: with the vectors of a pair it stays in L1 while the batch passes over it. */
#define MV_TILE_BYTES (24u << 10)

/* Rows per tile: a tile of W (about MV_TILE_BYTES) stays in cache while every vector passes over it. */
static size_t mv_tile_rows(size_t cols) {
    size_t rows = MV_TILE_BYTES / (cols * sizeof(float) + 1);
    if (rows < 24) rows = 24;
    return rows / 24 * 24; /* a multiple of every block height */
}

void fwm__matvec_batch(const float *W, size_t rows, size_t cols, size_t count,
                       const float *const *x, const float *const *bias, float *const *y) {
    if (count == 1) { /* one vector: no reuse of W to tile for */
        mv_rows_1(W, cols, 0, rows, x, bias, y);
        return;
    }
    size_t tile = mv_tile_rows(cols);
    for (size_t r0 = 0; r0 < rows; r0 += tile) {
        size_t r1 = r0 + tile < rows ? r0 + tile : rows;
        size_t n = 0;
        /* pairs; an odd count ends with a triple (a single would stream the tile alone) */
        for (; count - n >= 2 && count - n != 3; n += 2)
            mv_rows_2(W, cols, r0, r1, x + n, bias ? bias + n : NULL, y + n);
        if (count - n == 3) mv_rows_3(W, cols, r0, r1, x + n, bias ? bias + n : NULL, y + n);
    }
}

/* ---- passes over the fast weights F ([rows, cols], cols = T fastest) ---------------------------- */

#define F_GROUP 4 /* vector columns handled together */

/* Columns t0 .. t0 + 8*GW - 1 of F^T x: even and odd rows in separate accumulators (two
 * independent chains per column), summed at the end. */
static inline __attribute__((always_inline)) void vecmat_group(const float *F, size_t rows,
                                                               size_t cols, size_t t0, int GW,
                                                               const float *x, float *out) {
    v8f even[F_GROUP], odd[F_GROUP];
    for (int g = 0; g < GW; g++) even[g] = odd[g] = v_splat(0.0f);
    size_t k = 0;
    for (; k + 2 <= rows; k += 2) {
        v8f xe = v_splat(x[k]), xo = v_splat(x[k + 1]);
        const float *fe = F + k * cols + t0, *fo = fe + cols;
        for (int g = 0; g < GW; g++) {
            even[g] = v_fma(xe, v_load(fe + LANES * g), even[g]);
            odd[g] = v_fma(xo, v_load(fo + LANES * g), odd[g]);
        }
    }
    if (k < rows) {
        v8f xe = v_splat(x[k]);
        const float *fe = F + k * cols + t0;
        for (int g = 0; g < GW; g++) even[g] = v_fma(xe, v_load(fe + LANES * g), even[g]);
    }
    for (int g = 0; g < GW; g++) v_store(out + t0 + LANES * g, even[g] + odd[g]);
}

void fwm__vecmat(const float *F, size_t rows, size_t cols, const float *x, float *out) {
    size_t c8 = cols & ~(size_t)(LANES - 1), t = 0;
    for (; t + F_GROUP * LANES <= c8; t += F_GROUP * LANES) vecmat_group(F, rows, cols, t, F_GROUP, x, out);
    for (; t < c8; t += LANES) vecmat_group(F, rows, cols, t, 1, x, out);
    for (; t < cols; t++) {
        float even = 0.0f, odd = 0.0f;
        size_t k = 0;
        for (; k + 2 <= rows; k += 2) {
            even = FWM_FMAF(x[k], F[k * cols + t], even);
            odd = FWM_FMAF(x[k + 1], F[(k + 1) * cols + t], odd);
        }
        if (k < rows) even = FWM_FMAF(x[k], F[k * cols + t], even);
        out[t] = even + odd;
    }
}

/* ---- the one pass over F per step ---------------------------------------------------------------
 * F is viewed as [S][R][T]. The pass first brings F up to date (the previous step's rank-1 update
 * and normalisation, kept pending until now), writes it back, and on the updated values contracts
 * F over its R axis with every vector (the write's k2 and the reads' tanh(e_i)) and sums its
 * squares. It walks F in column blocks: rows j = 0 .. R-1 of slice i, columns t0 .. t0 + 8*GW - 1.
 * One sweep over a block updates it, sums its squares and contracts it with up to four vectors
 * (so the multiply-adds overlap the block's traffic to and from L2); vectors past the fourth take
 * further sweeps over the block while it is still in L1. Per output element this is the same
 * chain whatever the blocking: out[v][i*T + t] = fma(vec[v][j], F[i][j][t], .) over j in order
 * from 0; the squares of each 8-column vector summed over j, those sums added to the total in
 * column order. */

#define F_FIRST_VECS 4 /* vectors of the first sweep */
#define F_MORE_VECS 3  /* vectors per further sweep */

/* Pending-update modes of the first sweep: none, update without scaling (s == 1), update and scale. */
enum { UPD_NONE = 0, UPD_ADD = 1, UPD_SCALE = 2 };

/* The first sweep of one column block: apply the pending write (MODE) and store, sum the squares
 * into *total, out[v][off + t] = sum_j vecs[v][j] F[j][t] for v < NV. */
static inline __attribute__((always_inline)) void fw_sweep_first(float *restrict blk, size_t R,
                                                                 size_t T, int GW, int NV, int MODE,
                                                                 float k1i, const float *pk2,
                                                                 const float *d, float s,
                                                                 const float *const *vecs,
                                                                 float *const *out, size_t off,
                                                                 v8f *total) {
    v8f acc[F_FIRST_VECS][F_GROUP], ss[F_GROUP], dv[F_GROUP];
    const float *vp[F_FIRST_VECS];
    v8f sv = v_splat(s);
    for (int g = 0; g < GW; g++) {
        ss[g] = v_splat(0.0f);
        dv[g] = MODE != UPD_NONE ? v_load(d + LANES * g) : v_splat(0.0f);
    }
    for (int v = 0; v < NV; v++) {
        vp[v] = vecs[v];
        for (int g = 0; g < GW; g++) acc[v][g] = v_splat(0.0f);
    }
    float *row = blk;
    for (size_t j = 0; j < R; j++, row += T) {
        v8f kk = v_splat(MODE != UPD_NONE ? k1i * pk2[j] : 0.0f);
        v8f f[F_GROUP];
        for (int g = 0; g < GW; g++) {
            f[g] = v_load(row + LANES * g);
            if (MODE != UPD_NONE) {
                f[g] = v_fma(kk, dv[g], f[g]);
                if (MODE == UPD_SCALE) f[g] = f[g] * sv;
                v_store(row + LANES * g, f[g]);
            }
            ss[g] = v_fma(f[g], f[g], ss[g]);
        }
        for (int v = 0; v < NV; v++) {
            v8f b = v_splat(vp[v][j]);
            for (int g = 0; g < GW; g++) acc[v][g] = v_fma(b, f[g], acc[v][g]);
        }
    }
    for (int g = 0; g < GW; g++) *total = *total + ss[g];
    for (int v = 0; v < NV; v++)
        for (int g = 0; g < GW; g++) v_store(out[v] + off + LANES * g, acc[v][g]);
}

/* A further sweep: out[v][off + t] = sum_j vecs[v][j] F[j][t] for NV vectors. */
static inline __attribute__((always_inline)) void fw_sweep_more(const float *restrict blk, size_t R,
                                                                size_t T, int GW, int NV,
                                                                const float *const *vecs,
                                                                float *const *out, size_t off) {
    v8f acc[F_MORE_VECS][F_GROUP];
    const float *vp[F_MORE_VECS];
    for (int v = 0; v < NV; v++) {
        vp[v] = vecs[v];
        for (int g = 0; g < GW; g++) acc[v][g] = v_splat(0.0f);
    }
    const float *row = blk;
    for (size_t j = 0; j < R; j++, row += T) {
        v8f b[F_MORE_VECS];
        for (int v = 0; v < NV; v++) b[v] = v_splat(vp[v][j]);
        for (int g = 0; g < GW; g++) {
            v8f f = v_load(row + LANES * g);
#if defined(__AVX__)
            __asm__("" : "+x"(f)); /* one load serves NV multiply-adds (see mv_block) */
#endif
            for (int v = 0; v < NV; v++) acc[v][g] = v_fma(b[v], f, acc[v][g]);
        }
    }
    for (int v = 0; v < NV; v++)
        for (int g = 0; g < GW; g++) v_store(out[v] + off + LANES * g, acc[v][g]);
}

typedef void fw_first_fn(float *, size_t, size_t, float, const float *, const float *, float,
                         const float *const *, float *const *, size_t, v8f *);
typedef void fw_more_fn(const float *, size_t, size_t, const float *const *, float *const *, size_t);

/* Narrow first sweeps (one 8-column vector: the end of a row whose length is not a multiple of
 * the wide block) and further sweeps, called per block. */
#define DEFINE_SWEEP_FIRST_NARROW(NV, MODE)                                                        \
    static void fw_first_narrow_##NV##_##MODE(float *blk, size_t R, size_t T, float k1i,          \
                                              const float *pk2, const float *d, float s,          \
                                              const float *const *vecs, float *const *out,        \
                                              size_t off, v8f *total) {                           \
        fw_sweep_first(blk, R, T, 1, (NV), (MODE), k1i, pk2, d, s, vecs, out, off, total);        \
    }
#define DEFINE_SWEEP_MORE(GW, NV)                                                                   \
    static void fw_more_##GW##_##NV(const float *blk, size_t R, size_t T, const float *const *vecs, \
                                    float *const *out, size_t off) {                                \
        fw_sweep_more(blk, R, T, (GW), (NV), vecs, out, off);                                       \
    }
DEFINE_SWEEP_MORE(2, 1)
DEFINE_SWEEP_MORE(2, 2)
DEFINE_SWEEP_MORE(2, 3)
DEFINE_SWEEP_MORE(1, 1)
DEFINE_SWEEP_MORE(1, 2)
DEFINE_SWEEP_MORE(1, 3)

/* The whole pass for NV vectors in the first sweep (NV = min(count, 4)) and one pending mode:
 * wide blocks of GW vectors inlined here, narrow ones and further sweeps called. Block widths,
 * for AVX2's 16 vector registers: one vector (no read), 32 columns; two to four, 16 columns (8
 * accumulators, the squares, the block's two chunks). */
#define DEFINE_PASS(NV, GW, MODE)                                                                  \
    DEFINE_SWEEP_FIRST_NARROW(NV, MODE)                                                            \
    static void fw_pass_##NV##_##MODE(float *F, size_t S, size_t R, size_t T, size_t c8,           \
                                      const fwm__fw_pending *p, const float *const *vecs,          \
                                      size_t count, float *const *out, v8f *total) {               \
        static fw_more_fn *const more_wide[F_MORE_VECS] = {fw_more_2_1, fw_more_2_2, fw_more_2_3}; \
        static fw_more_fn *const more_narrow[F_MORE_VECS] = {fw_more_1_1, fw_more_1_2,             \
                                                             fw_more_1_3};                         \
        const float *pk2 = p ? p->k2 : NULL, *pd = p ? p->d : NULL;                                \
        float s = p ? p->s : 1.0f;                                                                 \
        for (size_t i = 0; i < S; i++) {                                                           \
            float *Fi = F + i * R * T;                                                             \
            float k1i = p ? p->k1[i] : 0.0f;                                                       \
            size_t t = 0;                                                                          \
            while (t < c8) {                                                                       \
                bool wide = t + (GW) * LANES <= c8;                                                \
                size_t off = i * T + t;                                                            \
                if (wide)                                                                          \
                    fw_sweep_first(Fi + t, R, T, (GW), (NV), (MODE), k1i, pk2, pd ? pd + t : NULL, \
                                   s, vecs, out, off, total);                                      \
                else                                                                               \
                    fw_first_narrow_##NV##_##MODE(Fi + t, R, T, k1i, pk2, pd ? pd + t : NULL, s,   \
                                                  vecs, out, off, total);                          \
                for (size_t v0 = (NV); v0 < count; v0 += F_MORE_VECS) {                            \
                    size_t nv = count - v0 < F_MORE_VECS ? count - v0 : F_MORE_VECS;               \
                    fw_more_fn *more = wide ? more_wide[nv - 1] : more_narrow[nv - 1];             \
                    more(Fi + t, R, T, vecs + v0, out + v0, off);                                  \
                }                                                                                  \
                t += wide ? (GW) * LANES : LANES;                                                  \
            }                                                                                      \
        }                                                                                          \
    }
#define DEFINE_PASS_MODES(NV, GW) DEFINE_PASS(NV, GW, 0) DEFINE_PASS(NV, GW, 1) DEFINE_PASS(NV, GW, 2)
DEFINE_PASS_MODES(1, 4)
DEFINE_PASS_MODES(2, 2)
DEFINE_PASS_MODES(3, 2)
DEFINE_PASS_MODES(4, 2)

typedef void fw_pass_fn(float *, size_t, size_t, size_t, size_t, const fwm__fw_pending *,
                        const float *const *, size_t, float *const *, v8f *);

float fwm__fw_contract(float *F, size_t S, size_t R, size_t T, const fwm__fw_pending *pending,
                       const float *const *vecs, size_t count, float *const *out) {
    /* [vectors in the first sweep - 1][pending mode] */
    static fw_pass_fn *const passes[F_FIRST_VECS][3] = {
        {fw_pass_1_0, fw_pass_1_1, fw_pass_1_2}, {fw_pass_2_0, fw_pass_2_1, fw_pass_2_2},
        {fw_pass_3_0, fw_pass_3_1, fw_pass_3_2}, {fw_pass_4_0, fw_pass_4_1, fw_pass_4_2}};
    size_t c8 = T & ~(size_t)(LANES - 1);
    size_t nv0 = count < F_FIRST_VECS ? count : F_FIRST_VECS;
    int mode = !pending ? UPD_NONE : pending->s != 1.0f ? UPD_SCALE : UPD_ADD;
    fw_pass_fn *pass = passes[nv0 - 1][mode];
    v8f total = v_splat(0.0f);
    pass(F, S, R, T, c8, pending, vecs, count, out, &total);
    /* columns past the last full vector: scalar, the same chains */
    float tail = 0.0f;
    for (size_t t = c8; t < T; t++) {
        for (size_t i = 0; i < S; i++) {
            for (size_t j = 0; j < R; j++) {
                float *f = &F[(i * R + j) * T + t];
                if (pending) *f = fwm__fw_apply(*f, pending->k1[i] * pending->k2[j], pending->d[t], pending->s);
                tail = FWM_FMAF(*f, *f, tail);
            }
            for (size_t v = 0; v < count; v++) {
                float acc = 0.0f;
                for (size_t j = 0; j < R; j++) acc = FWM_FMAF(vecs[v][j], F[(i * R + j) * T + t], acc);
                out[v][i * T + t] = acc;
            }
        }
    }
    return v_reduce(total) + tail;
}
