/* test_kernels.c - the step kernels on their own: the polynomial exp / sigmoid / tanh against libm
 * (and the vector lanes against the scalar forms, bit for bit), the batched matrix-vector product
 * giving every vector the same bits whatever the batch size and order (and the right value), and
 * the fast-weight passes and layer norm against double-precision loops. */
#include <math.h>
#include <stdlib.h>

#include "fwm_rng.h"
#include "kernels.h"
#include "runtime_test_util.h"

static fwm__rng rng;

static void fill(float *x, size_t n, double a) {
    for (size_t i = 0; i < n; i++) x[i] = (float)fwm__rng_uniform(&rng, -a, a);
}

/* error in units of the float spacing at the reference value */
static double ulps(float got, double want) {
    double spacing = ldexp(1.0, ilogb(want == 0 ? 1e-38 : want) - 23);
    if (fabs(want) < 1.17549435e-38) spacing = ldexp(1.0, -149);
    return fabs((double)got - want) / spacing;
}

static void test_nonlinearities(void) {
    enum { N = 200003 };
    float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
    for (size_t i = 0; i < N; i++) x[i] = -30.0f + 60.0f * (float)i / (float)(N - 1);
    x[0] = 0.0f, x[1] = -0.0f, x[2] = 1e-30f, x[3] = -1e-7f, x[4] = 0.625f, x[5] = -0.625f, x[6] = 100.0f;
    x[7] = -100.0f, x[8] = 88.5f, x[9] = -90.0f;
    double worst_tanh = 0, worst_sig = 0, worst_exp = 0;
    for (size_t i = 0; i < N; i++) {
        double t = ulps(fwm__tanhf(x[i]), tanh((double)x[i]));
        double s = ulps(fwm__sigmoidf(x[i]), 1.0 / (1.0 + exp(-(double)x[i])));
        if (t > worst_tanh) worst_tanh = t;
        if (fabs(x[i]) < 16 && s > worst_sig) worst_sig = s; /* beyond, sigmoid is near denormal */
        if (fabs(x[i]) < 85) {
            double e = ulps(fwm__expf(x[i]), exp((double)x[i]));
            if (e > worst_exp) worst_exp = e;
        }
    }
    printf("worst errors: exp %.2f ulp, sigmoid %.2f ulp, tanh %.2f ulp\n", worst_exp, worst_sig, worst_tanh);
    CHECK(worst_exp <= 3);
    CHECK(worst_sig <= 4);
    CHECK(worst_tanh <= 4);
    CHECK(fwm__tanhf(100.0f) == 1.0f && fwm__tanhf(-100.0f) == -1.0f);
    CHECK(fwm__sigmoidf(100.0f) == 1.0f && fwm__sigmoidf(-100.0f) < 1e-37f);
    CHECK(fwm__tanhf(0.0f) == 0.0f);

    /* the array forms equal the scalar forms in every lane and in the tail */
    float *want = malloc(N * sizeof *want);
    fwm__tanh_array(y, x, N);
    for (size_t i = 0; i < N; i++) want[i] = fwm__tanhf(x[i]);
    CHECK_FLOATS_EQUAL(y, want, N, "tanh array vs scalar");
    fwm__sigmoid_array(y, x, N, 0.75f);
    for (size_t i = 0; i < N; i++) want[i] = fwm__sigmoidf(x[i] + 0.75f);
    CHECK_FLOATS_EQUAL(y, want, N, "sigmoid array vs scalar");
    free(x), free(y), free(want);
}

static void test_matvec(void) {
    static const size_t shapes[][2] = {{1, 1}, {5, 7}, {8, 8}, {9, 17}, {13, 37}, {1024, 256}, {97, 256}, {180, 31}};
    enum { MAXN = 11 };
    for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++) {
        size_t rows = shapes[sh][0], cols = shapes[sh][1];
        float *W = malloc(rows * cols * sizeof *W), *X = malloc(MAXN * cols * sizeof *X);
        float *B = malloc(MAXN * rows * sizeof *B), *alone = malloc(MAXN * rows * sizeof *alone);
        float *Y = malloc(MAXN * rows * sizeof *Y);
        fill(W, rows * cols, 1.0), fill(X, MAXN * cols, 1.0), fill(B, MAXN * rows, 1.0);
        const float *px[MAXN], *pb[MAXN];
        float *py[MAXN];
        /* each vector alone, with its own bias */
        for (size_t n = 0; n < MAXN; n++) {
            px[0] = X + n * cols, pb[0] = B + n * rows, py[0] = alone + n * rows;
            fwm__matvec_batch(W, rows, cols, 1, px, pb, py);
        }
        double worst = 0;
        for (size_t n = 0; n < MAXN; n++)
            for (size_t r = 0; r < rows; r++) {
                double s = B[n * rows + r], mag = fabs(s);
                for (size_t k = 0; k < cols; k++) {
                    s += (double)W[r * cols + k] * X[n * cols + k];
                    mag += fabs((double)W[r * cols + k] * X[n * cols + k]);
                }
                double e = fabs(alone[n * rows + r] - s) / mag;
                if (e > worst) worst = e;
            }
        CHECK(worst < 1e-6);
        /* batches of every size and a scrambled order give every vector the same bits */
        for (size_t count = 1; count <= MAXN; count++) {
            size_t order[MAXN];
            for (size_t i = 0; i < count; i++) order[i] = (i * 7 + count) % MAXN;
            for (size_t i = 0; i < count; i++) {
                px[i] = X + order[i] * cols, pb[i] = B + order[i] * rows, py[i] = Y + i * rows;
            }
            fwm__matvec_batch(W, rows, cols, count, px, pb, py);
            for (size_t i = 0; i < count; i++) {
                char what[96];
                snprintf(what, sizeof what, "matvec %zux%zu, batch of %zu, vector %zu vs alone", rows,
                         cols, count, order[i]);
                CHECK_FLOATS_EQUAL(Y + i * rows, alone + order[i] * rows, rows, what);
            }
        }
        /* no bias: same as a zero bias up to the sign of zero; compare values */
        px[0] = X, py[0] = Y;
        fwm__matvec_batch(W, rows, cols, 1, px, NULL, py);
        for (size_t r = 0; r < rows; r++) {
            double s = 0;
            for (size_t k = 0; k < cols; k++) s += (double)W[r * cols + k] * X[k];
            CHECK(fabs(Y[r] - s) <= 1e-5 * (1 + fabs(s)));
        }
        free(W), free(X), free(B), free(alone), free(Y);
    }
}

static void test_fast_weight_passes(void) {
    /* F^T x (the small contractions of the read) */
    static const size_t shapes[][2] = {{1, 1}, {7, 5}, {12, 8}, {35, 40}, {1024, 32}, {30, 37}};
    for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++) {
        size_t rows = shapes[sh][0], cols = shapes[sh][1];
        float *F = malloc(rows * cols * sizeof *F), *x = malloc(rows * sizeof *x);
        float *out = malloc(cols * sizeof *out);
        fill(F, rows * cols, 0.1), fill(x, rows, 1.0);
        fwm__vecmat(F, rows, cols, x, out);
        for (size_t t = 0; t < cols; t++) {
            double s = 0, mag = 0;
            for (size_t k = 0; k < rows; k++) {
                s += (double)x[k] * F[k * cols + t];
                mag += fabs((double)x[k] * F[k * cols + t]);
            }
            CHECK(fabs(out[t] - s) <= 1e-6 * mag + 1e-30);
        }
        free(F), free(x), free(out);
    }
    /* the pass over F (1..6 vectors: one and two groups), with and without a pending update */
    static const size_t dims[][3] = {{1, 1, 1}, {3, 5, 7}, {4, 4, 8}, {32, 32, 32}, {6, 9, 6}, {5, 3, 37}, {2, 2, 24}};
    for (size_t sh = 0; sh < sizeof dims / sizeof dims[0]; sh++) {
        size_t S = dims[sh][0], R = dims[sh][1], T = dims[sh][2], n = S * R * T;
        float *F = malloc(n * sizeof *F), *F0 = malloc(n * sizeof *F0), *vec = malloc(6 * R * sizeof *vec);
        float *out = malloc(6 * S * T * sizeof *out), *k1 = malloc(S * sizeof *k1), *k2 = malloc(R * sizeof *k2);
        float *d = malloc(T * sizeof *d);
        double *want = malloc(n * sizeof *want);
        fill(F0, n, 0.1), fill(vec, 6 * R, 1.0), fill(k1, S, 1.0), fill(k2, R, 1.0), fill(d, T, 0.5);
        static const float scales[2] = {1.0f, 0.75f};
        for (int mode = 0; mode < 3; mode++) { /* none, pending with s = 1, pending with s = 0.75 */
            fwm__fw_pending p = {k1, k2, d, mode == 2 ? scales[1] : scales[0]};
            double ss = 0;
            for (size_t i = 0; i < S; i++)
                for (size_t j = 0; j < R; j++)
                    for (size_t t = 0; t < T; t++) {
                        size_t e = (i * R + j) * T + t;
                        want[e] = mode ? ((double)F0[e] + (double)k1[i] * k2[j] * d[t]) * p.s : F0[e];
                        ss += want[e] * want[e];
                    }
            float first_ss = 0;
            for (size_t count = 1; count <= 6; count++) {
                memcpy(F, F0, n * sizeof *F);
                const float *pv[6];
                float *po[6];
                for (size_t v = 0; v < count; v++) pv[v] = vec + v * R, po[v] = out + v * S * T;
                float got_ss = fwm__fw_contract(F, S, R, T, mode ? &p : NULL, pv, count, po);
                CHECK(fabs(got_ss - ss) <= 1e-5 * ss);
                if (count == 1) first_ss = got_ss;
                /* the sum of squares has the same bits whatever the number of vectors */
                CHECK_FLOATS_EQUAL(&got_ss, &first_ss, 1, "fw_contract sum of squares vs count 1");
                size_t bad = 0;
                for (size_t e = 0; e < n; e++) bad += fabs(F[e] - want[e]) > 1e-6 * (1 + fabs(want[e]));
                /* the stored values are exactly fwm__fw_apply's (what an export writes) */
                for (size_t i = 0; mode && i < S; i++)
                    for (size_t j = 0; j < R; j++)
                        for (size_t t = 0; t < T; t++) {
                            size_t e = (i * R + j) * T + t;
                            bad += F[e] != fwm__fw_apply(F0[e], k1[i] * k2[j], d[t], p.s);
                        }
                for (size_t v = 0; v < count; v++)
                    for (size_t i = 0; i < S; i++)
                        for (size_t t = 0; t < T; t++) {
                            double s = 0, mag = 0;
                            for (size_t j = 0; j < R; j++) {
                                s += (double)pv[v][j] * want[(i * R + j) * T + t];
                                mag += fabs((double)pv[v][j] * want[(i * R + j) * T + t]);
                            }
                            bad += fabs(po[v][i * T + t] - s) > 1e-6 * mag + 1e-30;
                        }
                CHECK_INT(bad, 0);
            }
        }
        free(F), free(F0), free(vec), free(out), free(k1), free(k2), free(d), free(want);
    }
    float z[37], q[37];
    fill(z, 37, 3.0);
    z[5] = 40.0f;
    fwm__layer_norm(q, z, 37, 1e-5f);
    double mean = 0, var = 0;
    for (int i = 0; i < 37; i++) mean += z[i] / 37.0;
    for (int i = 0; i < 37; i++) var += (z[i] - mean) * (z[i] - mean) / 37.0;
    for (int i = 0; i < 37; i++) CHECK(fabs(q[i] - (z[i] - mean) / sqrt(var + 1e-5)) < 1e-5);
}

int main(void) {
    fwm__rng_seed(&rng, 77, 0);
    test_nonlinearities();
    test_matvec();
    test_fast_weight_passes();
    return check_finish("test_kernels");
}
