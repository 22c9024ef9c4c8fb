/* bf16_kernels.c - the BF16 matrix-vector product (bf16_kernels.h for what it computes): the
 * rounding of the vectors to BF16, the portable kernel, and the choice between it and the
 * AVX512-BF16 kernel (bf16_avx512.c), made once from the CPU's features. */
#include "bf16_kernels.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* The native kernel's entry (bf16_avx512.c): over vectors already rounded and padded to P. */
bool fwm__bf16_avx512_rows(const uint16_t *W, size_t rows, size_t cols, size_t P, size_t count,
                           const uint16_t *const *xb, const float *const *bias, float *const *y);
bool fwm__bf16_avx512_available(void);

#define CHUNK 32 /* BF16 elements per chunk: 16 lanes of two */
#define LANES16 16

/* BF16 halves of rounded vectors held at once (32 KiB on the stack). */
#define ROUNDED_MAX 16384u

static size_t padded_cols(size_t cols) { return (cols + CHUNK - 1) / CHUNK * CHUNK; }

static float bf16_to_float(uint16_t b) {
    uint32_t bits = (uint32_t)b << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* A subnormal BF16 reads as a zero of its sign (what vdpbf16ps does with its inputs). */
static float bf16_daz(uint16_t b) {
    if ((b & 0x7f80u) == 0) b &= 0x8000u;
    return bf16_to_float(b);
}

uint16_t fwm__bf16_from_float(float x) {
    uint32_t bits;
    memcpy(&bits, &x, sizeof bits);
    if ((bits & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((bits >> 16) | 0x0040u); /* NaN: quiet */
    if ((bits & 0x7f800000u) == 0) return (uint16_t)((bits >> 16) & 0x8000u);        /* subnormal: 0 */
    uint32_t rounded = bits + 0x7fffu + ((bits >> 16) & 1u);                          /* to nearest even */
    uint16_t out = (uint16_t)(rounded >> 16);
    if ((out & 0x7f80u) == 0) out &= 0x8000u; /* (cannot happen from a normal float; kept for clarity) */
    return out;
}

void fwm__bf16_round(const float *x, size_t n, uint16_t *out, size_t padded) {
    for (size_t i = 0; i < n; i++) out[i] = fwm__bf16_from_float(x[i]);
    for (size_t i = n; i < padded; i++) out[i] = 0;
}

/* One output element, exactly as bf16_kernels.h defines it. */
static float dot_portable(const uint16_t *w, size_t cols, size_t P, const uint16_t *xb) {
    float acc[LANES16];
    for (int l = 0; l < LANES16; l++) acc[l] = 0.0f;
    for (size_t c = 0; c < P; c += CHUNK) {
        for (int l = 0; l < LANES16; l++) {
            size_t k = c + 2 * (size_t)l;
            float w1 = k + 1 < cols ? bf16_daz(w[k + 1]) : 0.0f;
            float w0 = k < cols ? bf16_daz(w[k]) : 0.0f;
            float p1 = w1 * bf16_to_float(xb[k + 1]); /* exact */
            float p0 = w0 * bf16_to_float(xb[k]);
            acc[l] = acc[l] + p1;
            acc[l] = acc[l] + p0;
        }
    }
    float s[8], t[4], u[2];
    for (int l = 0; l < 8; l++) s[l] = acc[l] + acc[l + 8];
    for (int l = 0; l < 4; l++) t[l] = s[l] + s[l + 4];
    for (int l = 0; l < 2; l++) u[l] = t[l] + t[l + 2];
    return u[0] + u[1];
}

static void rows_portable(const uint16_t *W, size_t rows, size_t cols, size_t P, size_t count,
                          const uint16_t *const *xb, const float *const *bias, float *const *y) {
    for (size_t r = 0; r < rows; r++) {
        const uint16_t *w = W + r * cols;
        for (size_t j = 0; j < count; j++) {
            float v = dot_portable(w, cols, P, xb[j]);
            y[j][r] = bias ? v + bias[j][r] : v;
        }
    }
}

typedef enum { KERNEL_UNSET = 0, KERNEL_PORTABLE = 1, KERNEL_NATIVE = 2 } kernel_choice;

static _Atomic int chosen = KERNEL_UNSET;

/* Once: the native kernel where the CPU has it, unless FWM_BF16_KERNEL=portable. */
static kernel_choice choice(void) {
    int c = atomic_load_explicit(&chosen, memory_order_relaxed);
    if (c != KERNEL_UNSET) return (kernel_choice)c;
    const char *env = getenv("FWM_BF16_KERNEL");
    bool portable = env && strcmp(env, "portable") == 0;
    c = !portable && fwm__bf16_avx512_available() ? KERNEL_NATIVE : KERNEL_PORTABLE;
    atomic_store_explicit(&chosen, c, memory_order_relaxed);
    return (kernel_choice)c;
}

bool fwm__bf16_native_available(void) { return fwm__bf16_avx512_available(); }

const char *fwm__bf16_kernel_name(void) {
    return choice() == KERNEL_NATIVE ? "avx512bf16" : "portable";
}

/* Round the vectors in groups that fit the stack buffer and run `native` or the portable kernel
 * on each group (each output element depends only on its row and its vector). */
static void run(bool native, const uint16_t *W, size_t rows, size_t cols, size_t count,
                const float *const *x, const float *const *bias, float *const *y) {
    _Alignas(64) uint16_t rounded[ROUNDED_MAX];
    const uint16_t *xb[ROUNDED_MAX / CHUNK];
    size_t P = padded_cols(cols);
    size_t group = ROUNDED_MAX / P; /* >= 2: cols <= FWM_BF16_MAX_COLS */
    for (size_t n0 = 0; n0 < count; n0 += group) {
        size_t n = count - n0 < group ? count - n0 : group;
        for (size_t j = 0; j < n; j++) {
            fwm__bf16_round(x[n0 + j], cols, rounded + j * P, P);
            xb[j] = rounded + j * P;
        }
        const float *const *b = bias ? bias + n0 : NULL;
        if (!native || !fwm__bf16_avx512_rows(W, rows, cols, P, n, xb, b, y + n0))
            rows_portable(W, rows, cols, P, n, xb, b, y + n0);
    }
}

void fwm__matvec_bf16(const uint16_t *W, size_t rows, size_t cols, size_t count,
                      const float *const *x, const float *const *bias, float *const *y) {
    run(choice() == KERNEL_NATIVE, W, rows, cols, count, x, bias, y);
}

void fwm__matvec_bf16_portable(const uint16_t *W, size_t rows, size_t cols, size_t count,
                               const float *const *x, const float *const *bias, float *const *y) {
    run(false, W, rows, cols, count, x, bias, y);
}

bool fwm__matvec_bf16_native(const uint16_t *W, size_t rows, size_t cols, size_t count,
                             const float *const *x, const float *const *bias, float *const *y) {
    if (!fwm__bf16_avx512_available()) return false;
    run(true, W, rows, cols, count, x, bias, y);
    return true;
}
