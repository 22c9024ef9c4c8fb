/* bf16_avx512.c - the AVX512-BF16 kernel of the BF16 matrix-vector product (bf16_kernels.h defines
 * what it computes): vdpbf16ps over 32 BF16 elements per instruction, register-blocked over rows
 * and vectors. Compiled for any x86-64 target through target attributes and run only where the CPU
 * reports AVX512-F/BW/DQ/VL and AVX512-BF16 (checked at run time); elsewhere it is a stub that
 * says it is not available. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

bool fwm__bf16_avx512_rows(const uint16_t *W, size_t rows, size_t cols, size_t P, size_t count,
                           const uint16_t *const *xb, const float *const *bias, float *const *y);
bool fwm__bf16_avx512_available(void);

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define TARGET __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16")))
#define INLINE static inline __attribute__((always_inline)) TARGET

bool fwm__bf16_avx512_available(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx512bf16");
}

/* The canonical reduction: a_l + a_{l+8}, then + 4, + 2, + 1 lanes apart. */
INLINE float reduce16(__m512 a) {
    __m256 s = _mm256_add_ps(_mm512_castps512_ps256(a), _mm512_extractf32x8_ps(a, 1));
    __m128 t = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
    __m128 u = _mm_add_ps(t, _mm_movehl_ps(t, t));
    return _mm_cvtss_f32(_mm_add_ss(u, _mm_shuffle_ps(u, u, 1)));
}

#define MAX_RB 8
#define MAX_NB 4

/* RB rows from r times NB vectors: one accumulator per pair; the last chunk's weights are loaded
 * under a mask (the vectors are padded with zeros to P). */
INLINE void block(const uint16_t *W, size_t cols, size_t P, size_t r, int RB, int NB,
                  const uint16_t *const *xb, const float *const *bias, float *const *y) {
    __m512 acc[MAX_RB][MAX_NB];
    const uint16_t *w[MAX_RB];
    for (int i = 0; i < RB; i++) {
        w[i] = W + (r + (size_t)i) * cols;
        for (int j = 0; j < NB; j++) acc[i][j] = _mm512_setzero_ps();
    }
    size_t full = cols / 32 * 32;
    for (size_t k = 0; k < full; k += 32) {
        __m512bh xv[MAX_NB];
        for (int j = 0; j < NB; j++) xv[j] = (__m512bh)_mm512_load_si512((const void *)(xb[j] + k));
        for (int i = 0; i < RB; i++) {
            __m512bh wv = (__m512bh)_mm512_loadu_si512((const void *)(w[i] + k));
            for (int j = 0; j < NB; j++) acc[i][j] = _mm512_dpbf16_ps(acc[i][j], wv, xv[j]);
        }
    }
    if (full < P) {
        __mmask32 m = (__mmask32)((1ull << (cols - full)) - 1);
        __m512bh xv[MAX_NB];
        for (int j = 0; j < NB; j++) xv[j] = (__m512bh)_mm512_load_si512((const void *)(xb[j] + full));
        for (int i = 0; i < RB; i++) {
            __m512bh wv = (__m512bh)_mm512_maskz_loadu_epi16(m, (const void *)(w[i] + full));
            for (int j = 0; j < NB; j++) acc[i][j] = _mm512_dpbf16_ps(acc[i][j], wv, xv[j]);
        }
    }
    for (int j = 0; j < NB; j++)
        for (int i = 0; i < RB; i++) {
            float v = reduce16(acc[i][j]);
            size_t row = r + (size_t)i;
            y[j][row] = bias ? v + bias[j][row] : v;
        }
}

/* Rows [r0, r1) for NB vectors: blocks of RB rows, then single rows. */
#define DEFINE_ROWS(RB, NB)                                                                        \
    static TARGET void rows_##RB##_##NB(const uint16_t *W, size_t cols, size_t P, size_t r0,      \
                                        size_t r1, const uint16_t *const *xb,                     \
                                        const float *const *bias, float *const *y) {              \
        size_t r = r0;                                                                             \
        for (; r + (RB) <= r1; r += (RB)) block(W, cols, P, r, (RB), (NB), xb, bias, y);          \
        for (; r < r1; r++) block(W, cols, P, r, 1, (NB), xb, bias, y);                           \
    }
/* One vector: 8 rows (8 accumulators hide the latency while W streams in). Several: 4 rows by up
 * to 4 vectors (16 accumulators; each W chunk loaded once for all of them). */
DEFINE_ROWS(8, 1)
DEFINE_ROWS(4, 2)
DEFINE_ROWS(4, 3)
DEFINE_ROWS(4, 4)

/* Bytes of W per tile: it stays in L1 while every vector of the batch passes over it. */
#define TILE_BYTES (24u << 10)

TARGET bool fwm__bf16_avx512_rows(const uint16_t *W, size_t rows, size_t cols, size_t P,
                                  size_t count, const uint16_t *const *xb,
                                  const float *const *bias, float *const *y) {
    typedef void rows_fn(const uint16_t *, size_t, size_t, size_t, size_t, const uint16_t *const *,
                         const float *const *, float *const *);
    static rows_fn *const by_vectors[MAX_NB] = {rows_8_1, rows_4_2, rows_4_3, rows_4_4};
    if (count == 1) {
        rows_8_1(W, cols, P, 0, rows, xb, bias, y);
        return true;
    }
    size_t tile = TILE_BYTES / (cols * sizeof(uint16_t) + 1);
    tile = tile < 8 ? 8 : tile / 4 * 4;
    for (size_t r0 = 0; r0 < rows; r0 += tile) {
        size_t r1 = r0 + tile < rows ? r0 + tile : rows;
        for (size_t n = 0; n < count; n += MAX_NB) {
            size_t nb = count - n < MAX_NB ? count - n : MAX_NB;
            by_vectors[nb - 1](W, cols, P, r0, r1, xb + n, bias ? bias + n : NULL, y + n);
        }
    }
    return true;
}

#else /* not x86-64 with GCC or Clang: no native kernel */

bool fwm__bf16_avx512_available(void) { return false; }

bool fwm__bf16_avx512_rows(const uint16_t *W, size_t rows, size_t cols, size_t P, size_t count,
                           const uint16_t *const *xb, const float *const *bias, float *const *y) {
    (void)W, (void)rows, (void)cols, (void)P, (void)count, (void)xb, (void)bias, (void)y;
    return false;
}

#endif
