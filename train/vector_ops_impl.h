/* vector_ops_impl.h - the vector building blocks of the memory kernels, template over `real`
 * (see real_template.h); included by the <arch>_f32.c / <arch>_f64.c of the FWM, the MNM, the GFW
 * and the STM before their own kernels.
 *
 * Dot products and axpy with a fixed order of additions (also several at once, in the same
 * order), 32-byte vectors through GCC/Clang vector extensions, horizontal sums (one vector, or
 * eight at once), and the column accumulation out[T] = sum_i c[i] A[i, :] that F^T K and every
 * read are made of.
 */

/* ---- vector helpers: 8 independent partial sums, added in a fixed order, so the compiler can
 * vectorise a reduction without reassociating (results do not depend on the vector width) ---- */
static inline real sum8(const real *acc)
{
    return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}

static inline real dot(const real *a, const real *b, size_t n)
{
    real acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++)
            acc[k] += a[i + k] * b[i + k];
    real s = sum8(acc);
    for (; i < n; i++)
        s += a[i] * b[i];
    return s;
}

/* y += a * x */
static inline void axpy(real *y, real a, const real *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] += a * x[i];
}

/* ---- column accumulation out[T] = sum_i c[i] * A[i, 0..T) over many rows: the inner step of
 * F^T K and of every read. The partial sums stay in vector registers (GCC/Clang vector
 * extensions, 32 bytes) when T is 4 or 8 vectors wide (T = 32 in float or double, T = 64 in
 * float); other T take the plain loop. Same order of additions on every path: row by row. */
typedef real TM(vec) __attribute__((vector_size(32)));
#define TM_VL (32 / sizeof(real))

static inline TM(vec) vload(const real *p)
{
    TM(vec) v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void vstore(real *p, TM(vec) v)
{
    memcpy(p, &v, sizeof v);
}

static inline real vsum(TM(vec) v)
{
    real l[TM_VL];
    memcpy(l, &v, sizeof v);
    if (TM_VL == 8)
        return sum8(l);
    return (l[0] + l[TM_VL / 2]) + (l[1] + l[TM_VL / 2 + 1]);
}

/* ---- several dot products or axpys in one pass: every number takes the operations of the
 * single calls (dot, axpy) in the same order; only independent chains are interleaved
 * (dot products share a's loads and hide each other's latency; the axpys into one y read and
 * write it once instead of once per term). Results can differ from the single calls' in the last
 * bit where the compiler fuses a multiply and an add into one rounding (-ffp-contract=fast) in
 * one and not the other; they are deterministic for a given build. ---------------------- */

/* out[g * out_stride] = dot(a, b + g * b_stride, n) for g < nb (nb <= 4); the eight partial
 * sums of each are one vector in float, two in double */
#define TM_NV8 (8 / TM_VL)
static inline __attribute__((always_inline)) void dot_group(const real *a, const real *b,
                                                            size_t b_stride, size_t nb,
                                                            size_t n, real *out,
                                                            size_t out_stride)
{
    TM(vec) acc[4][TM_NV8];
    for (size_t g = 0; g < nb; g++)
        for (size_t v = 0; v < TM_NV8; v++)
            acc[g][v] = (TM(vec)){0};
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (size_t v = 0; v < TM_NV8; v++) {
            TM(vec) av = vload(a + i + v * TM_VL);
            for (size_t g = 0; g < nb; g++)
                acc[g][v] += av * vload(b + g * b_stride + i + v * TM_VL);
        }
    for (size_t g = 0; g < nb; g++) {
        real partial[8];
        memcpy(partial, acc[g], sizeof partial);
        real s = sum8(partial);
        for (size_t t = i; t < n; t++)
            s += a[t] * b[g * b_stride + t];
        out[g * out_stride] = s;
    }
}

/* out[g * out_stride] = dot(a, b + g * b_stride, n) for g < count; out must not overlap the
 * b vectors still to be read */
static inline void dot_many(const real *a, const real *b, size_t b_stride, size_t count,
                            size_t n, real *out, size_t out_stride)
{
    size_t g = 0;
    for (; g + 4 <= count; g += 4)
        dot_group(a, b + g * b_stride, b_stride, 4, n, out + g * out_stride, out_stride);
    const real *bg = b + g * b_stride;
    real *og = out + g * out_stride;
    switch (count - g) { /* constant group sizes, so each is compiled with its chains unrolled */
    case 3:
        dot_group(a, bg, b_stride, 3, n, og, out_stride);
        break;
    case 2:
        dot_group(a, bg, b_stride, 2, n, og, out_stride);
        break;
    case 1:
        dot_group(a, bg, b_stride, 1, n, og, out_stride);
        break;
    default:
        break;
    }
}

/* y += c[g * c_stride] x_g over g < nx (nx <= 4), x_g = x + g * x_stride, term by term in g's
 * order, as nx axpy calls in that order */
static inline __attribute__((always_inline)) void axpy_group(real *y, const real *c,
                                                             size_t c_stride, const real *x,
                                                             size_t x_stride, size_t nx,
                                                             size_t n)
{
    real cg[4];
    TM(vec) cv[4];
    for (size_t g = 0; g < nx; g++) {
        cg[g] = c[g * c_stride];
        cv[g] = cg[g] - (TM(vec)){0}; /* the scalar in every lane */
    }
    size_t k = 0;
    for (; k + TM_VL <= n; k += TM_VL) {
        TM(vec) r = vload(y + k);
        for (size_t g = 0; g < nx; g++)
            r += cv[g] * vload(x + g * x_stride + k);
        vstore(y + k, r);
    }
    for (; k < n; k++) {
        real r = y[k];
        for (size_t g = 0; g < nx; g++)
            r += cg[g] * x[g * x_stride + k];
        y[k] = r;
    }
}

/* y += c[g * c_stride] x_g for g = 0, 1, ..., count - 1 (x_g = x + g * x_stride), in that order,
 * as count axpy calls; y must not overlap any x_g or c */
static inline void axpy_many(real *y, const real *c, size_t c_stride, const real *x,
                             size_t x_stride, size_t count, size_t n)
{
    size_t g = 0;
    for (; g + 4 <= count; g += 4)
        axpy_group(y, c + g * c_stride, c_stride, x + g * x_stride, x_stride, 4, n);
    const real *cg = c + g * c_stride, *xg = x + g * x_stride;
    switch (count - g) {
    case 3:
        axpy_group(y, cg, c_stride, xg, x_stride, 3, n);
        break;
    case 2:
        axpy_group(y, cg, c_stride, xg, x_stride, 2, n);
        break;
    case 1:
        axpy_group(y, cg, c_stride, xg, x_stride, 1, n);
        break;
    default:
        break;
    }
}


/* Two sets of accumulators (even and odd rows), so that consecutive rows do not wait for each
 * other's additions; added together at the end. */
/* Sums of 8 vectors at once: out[k] = sum of the lanes of p[k] (float, 8 lanes; a pairwise
 * shuffle-and-add tree, about 21 operations for 8 rows instead of a horizontal sum per row).
 * TM_HAS_SUM8ROWS says whether this precision and compiler have it. */
#if !FWM_REAL_DOUBLE && (defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 12))
#undef TM_HAS_SUM8ROWS
#define TM_HAS_SUM8ROWS 1
static inline TM(vec) sum8rows(const TM(vec) *p)
{
#define EV_ 0, 8, 2, 10, 4, 12, 6, 14
#define OD_ 1, 9, 3, 11, 5, 13, 7, 15
    TM(vec) a = __builtin_shufflevector(p[0], p[1], EV_) + __builtin_shufflevector(p[0], p[1], OD_);
    TM(vec) b = __builtin_shufflevector(p[2], p[3], EV_) + __builtin_shufflevector(p[2], p[3], OD_);
    TM(vec) c = __builtin_shufflevector(p[4], p[5], EV_) + __builtin_shufflevector(p[4], p[5], OD_);
    TM(vec) d = __builtin_shufflevector(p[6], p[7], EV_) + __builtin_shufflevector(p[6], p[7], OD_);
#undef EV_
#undef OD_
    /* a = [p0 01, p1 01, p0 23, p1 23, p0 45, p1 45, p0 67, p1 67] (pairs summed) */
    TM(vec) e = __builtin_shufflevector(a, b, 0, 1, 8, 9, 4, 5, 12, 13) +
                __builtin_shufflevector(a, b, 2, 3, 10, 11, 6, 7, 14, 15);
    TM(vec) f = __builtin_shufflevector(c, d, 0, 1, 8, 9, 4, 5, 12, 13) +
                __builtin_shufflevector(c, d, 2, 3, 10, 11, 6, 7, 14, 15);
    /* e = [p0 0-3, p1 0-3, p2 0-3, p3 0-3, p0 4-7, p1 4-7, p2 4-7, p3 4-7] */
    return __builtin_shufflevector(e, f, 0, 1, 2, 3, 8, 9, 10, 11) +
           __builtin_shufflevector(e, f, 4, 5, 6, 7, 12, 13, 14, 15);
}
#else
#undef TM_HAS_SUM8ROWS
#define TM_HAS_SUM8ROWS 0
static inline TM(vec) sum8rows(const TM(vec) *p)
{
    (void)p;
    return (TM(vec)){0};
}
#endif

#define TM_COLACC_BODY(NV)                                                                       \
    do {                                                                                         \
        TM(vec) acc0[NV], acc1[NV];                                                              \
        for (int v_ = 0; v_ < NV; v_++)                                                          \
            acc0[v_] = acc1[v_] = (TM(vec)){0};                                                  \
        size_t i = 0;                                                                            \
        for (; i + 2 <= rows; i += 2) {                                                          \
            TM(vec) c0 = (TM(vec)){0} + c[i], c1 = (TM(vec)){0} + c[i + 1];                      \
            const real *row0 = A + i * T, *row1 = row0 + T;                                      \
            for (int v_ = 0; v_ < NV; v_++) {                                                    \
                acc0[v_] += c0 * vload(row0 + v_ * TM_VL);                                       \
                acc1[v_] += c1 * vload(row1 + v_ * TM_VL);                                       \
            }                                                                                    \
        }                                                                                        \
        if (i < rows) {                                                                          \
            TM(vec) c0 = (TM(vec)){0} + c[i];                                                    \
            for (int v_ = 0; v_ < NV; v_++)                                                      \
                acc0[v_] += c0 * vload(A + i * T + v_ * TM_VL);                                  \
        }                                                                                        \
        for (int v_ = 0; v_ < NV; v_++)                                                          \
            vstore(out + v_ * TM_VL, acc0[v_] + acc1[v_]);                                       \
    } while (0)

static __attribute__((unused)) void col_accumulate(real *out, const real *c, const real *A, size_t rows, size_t T)
{
    if (T == 4 * TM_VL) {
        TM_COLACC_BODY(4);
    } else if (T == 8 * TM_VL) {
        TM_COLACC_BODY(8);
    } else {
        for (size_t t = 0; t < T; t++)
            out[t] = 0;
        for (size_t i = 0; i < rows; i++)
            for (size_t t = 0; t < T; t++)
                out[t] += c[i] * A[i * T + t];
    }
}

