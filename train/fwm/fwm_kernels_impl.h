/* fwm_kernels_impl.h - the paired forward/backward kernels of one FWM step, template over
 * `real` (see real_template.h); included by fwm_f32.c and fwm_f64.c only.
 *
 * Every kernel works on one lane at one step (or one row of a batched matrix); the batched matrix
 * products around them are in fwm_forward_impl.h / fwm_backward_impl.h. Backward kernels
 * accumulate (+=) into gradients that the caller zeroed. The write and read follow
 * docs/MODEL.md step 3 and 4; F is [S*R rows][T], T fastest, K = vec(k1 (x) k2) with
 * index s*R + r.
 */

/* ---- write activations (step 3, first line) -------------------------------------------------
 * a[S+R+T+1] pre-activation in, k1, k2, v, beta out (in place). */
static void write_act_forward(real *a, size_t S, size_t R, size_t T, real beta_bias)
{
    size_t n = S + R + T;
    tanh_array(a, a, n);
    a[n] = sigmoid(a[n] + beta_bias);
}

/* d_act[S+R+T+1]: gradient of k1, k2, v, beta in, of the pre-activation out (in place). */
static void write_act_backward(const real *act, real *d_act, size_t S, size_t R, size_t T)
{
    size_t n = S + R + T;
    for (size_t j = 0; j < n; j++)
        d_act[j] *= (real)1 - act[j] * act[j];
    d_act[n] *= act[n] * ((real)1 - act[n]);
}

/* ---- fast-weight write (step 3) -------------------------------------------------------------- */

/* K[S*R] = vec(k1 (x) k2). */
static void outer_key(const real *k1, const real *k2, real *K, size_t S, size_t R)
{
    for (size_t s = 0; s < S; s++)
        for (size_t r = 0; r < R; r++)
            K[s * R + r] = k1[s] * k2[r];
}

/* d[T] = beta * (v - v_old) * write_scale. */
static void write_delta(const real *v, const real *v_old, real beta, real write_scale, real *d,
                        size_t T)
{
    for (size_t t = 0; t < T; t++)
        d[t] = beta * (v[t] - v_old[t]) * write_scale;
}

/* v_old[T] = F^T K */
static void write_read_old(const real *F, const real *K, real *v_old, size_t SR, size_t T)
{
    col_accumulate(v_old, K, F, SR, T);
}

/* Forward: F += K (x) d, then F /= ||F|| if that is > 1. Returns the norm. */
static real write_forward_apply(real *F, const real *K, const real *d, size_t SR, size_t T)
{
    double sum = 0; /* of squares */
    if (T == 4 * TM_VL) {
        /* row update as axpy computes it; squares summed in 4 vector accumulators */
        TM(vec) dv[4], acc[4];
        for (int v = 0; v < 4; v++) {
            dv[v] = vload(d + v * TM_VL);
            acc[v] = (TM(vec)){0};
        }
        for (size_t i = 0; i < SR; i++) {
            real *row = F + i * T;
            TM(vec) kv = (TM(vec)){0} + K[i];
            for (int v = 0; v < 4; v++) {
                TM(vec) f = vload(row + v * TM_VL) + kv * dv[v];
                vstore(row + v * TM_VL, f);
                acc[v] += f * f;
            }
        }
        sum = (double)vsum((acc[0] + acc[1]) + (acc[2] + acc[3]));
    } else {
        for (size_t i = 0; i < SR; i++) {
            real *row = F + i * T;
            axpy(row, K[i], d, T);
            sum += (double)dot(row, row, T);
        }
    }
    real norm = (real)sqrt(sum);
    if (norm > (real)1) {
        real inv = (real)1 / norm;
        size_t n = SR * T;
        for (size_t j = 0; j < n; j++)
            F[j] *= inv;
    }
    return norm;
}

/* Replay for the backward pass: dst = (src + K (x) d) / norm (norm > 1) or src + K (x) d, with
 * the same roundings as write_forward_apply (a + k*d first, then the scaling). */
static void write_replay(real *dst, const real *src, const real *K, const real *d, real norm,
                         size_t SR, size_t T)
{
    real inv = norm > (real)1 ? (real)1 / norm : (real)1;
    int scale = norm > (real)1;
    for (size_t i = 0; i < SR; i++) {
        const real *a = src + i * T;
        real *o = dst + i * T;
        real k = K[i];
        if (scale)
            for (size_t t = 0; t < T; t++) {
                real f = a[t] + k * d[t];
                o[t] = f * inv;
            }
        else
            for (size_t t = 0; t < T; t++)
                o[t] = a[t] + k * d[t];
    }
}

/* write_backward's two passes over the rows with T = NV vectors in registers.
 * A: d_F row through the norm clamp, d_K[i] = d_F row . d, d_d += K[i] d_F row.
 * B: d_K[i] += F_prev row . d_vold, d_F row += K[i] d_vold. */
#define TM_WRITE_BACK_A_ROW(NV, ACC, I)                                                          \
    do {                                                                                         \
        real *g = d_F + (I) * T;                                                                 \
        const real *fn = F_next + (I) * T;                                                       \
        TM(vec) kv = (TM(vec)){0} + K[I], pv = (TM(vec)){0};                                     \
        for (int v_ = 0; v_ < NV; v_++) {                                                        \
            TM(vec) gv = vload(g + v_ * TM_VL);                                                  \
            if (clamped) {                                                                       \
                gv = (gv - dotv * vload(fn + v_ * TM_VL)) * invv;                                \
                vstore(g + v_ * TM_VL, gv);                                                      \
            }                                                                                    \
            pv += gv * dv[v_];                                                                   \
            ACC[v_] += kv * gv;                                                                  \
        }                                                                                        \
        d_K[I] = vsum(pv);                                                                       \
    } while (0)

/* even and odd rows accumulate d_d separately (no waiting on each other), added at the end */
#define TM_WRITE_BACK_A_BODY(NV)                                                                 \
    do {                                                                                         \
        TM(vec) dv[NV], acc0[NV], acc1[NV];                                                      \
        TM(vec) dotv = (TM(vec)){0} + dot_sum, invv = (TM(vec)){0} + inv;                        \
        for (int v_ = 0; v_ < NV; v_++) {                                                        \
            dv[v_] = vload(d + v_ * TM_VL);                                                      \
            acc0[v_] = acc1[v_] = (TM(vec)){0};                                                  \
        }                                                                                        \
        size_t i = 0;                                                                            \
        for (; i + 2 <= SR; i += 2) {                                                            \
            TM_WRITE_BACK_A_ROW(NV, acc0, i);                                                    \
            TM_WRITE_BACK_A_ROW(NV, acc1, i + 1);                                                \
        }                                                                                        \
        if (i < SR)                                                                              \
            TM_WRITE_BACK_A_ROW(NV, acc0, i);                                                    \
        for (int v_ = 0; v_ < NV; v_++)                                                          \
            vstore(d_d + v_ * TM_VL, acc0[v_] + acc1[v_]);                                       \
    } while (0)

#define TM_WRITE_BACK_B_BODY(NV)                                                                 \
    do {                                                                                         \
        TM(vec) dv[NV];                                                                          \
        for (int v_ = 0; v_ < NV; v_++)                                                          \
            dv[v_] = vload(d_vold + v_ * TM_VL);                                                 \
        for (size_t i = 0; i < SR; i++) {                                                        \
            real *g = d_F + i * T;                                                               \
            const real *fp = F_prev + i * T;                                                     \
            TM(vec) kv = (TM(vec)){0} + K[i], pv = (TM(vec)){0};                                 \
            for (int v_ = 0; v_ < NV; v_++) {                                                    \
                pv += vload(fp + v_ * TM_VL) * dv[v_];                                           \
                vstore(g + v_ * TM_VL, vload(g + v_ * TM_VL) + kv * dv[v_]);                     \
            }                                                                                    \
            d_K[i] += vsum(pv);                                                                  \
        }                                                                                        \
    } while (0)

/* Backward of one write. F_prev: F before the write; F_next: after (normalised); d_F: on entry
 * the gradient of F_next, on return that of F_prev. next_dot: <F_next, d_F> when the caller has
 * it (the last read's backward pass computes it on the way), else NAN. Fills d_act[S+R+T+1] with
 * the gradients of k1, k2, v, beta (not yet through their nonlinearities).
 * scratch: 2*S*R + T reals. */
static void write_backward(const real *F_prev, const real *F_next, real *d_F, const real *act,
                           const real *v_old, real norm, real write_scale, real next_dot,
                           real *d_act, real *scratch, size_t S, size_t R, size_t T)
{
    size_t SR = S * R;
    const real *k1 = act, *k2 = act + S, *v = act + S + R;
    real beta = act[S + R + T];
    real *K = scratch, *d_K = scratch + SR, *d = scratch + 2 * SR;
    real *d_k1 = d_act, *d_k2 = d_act + S, *d_v = d_act + S + R;
    outer_key(k1, k2, K, S, R);
    write_delta(v, v_old, beta, write_scale, d, T);
    real *d_d = d_v; /* gradient of d first, turned into that of v below */
    int clamped = norm > (real)1;
    real dot_sum = 0, inv = 1;
    if (clamped) {
        if (next_dot == next_dot) {
            dot_sum = next_dot;
        } else {
            double sum = 0;
            for (size_t i = 0; i < SR; i++)
                sum += (double)dot(F_next + i * T, d_F + i * T, T);
            dot_sum = (real)sum;
        }
        inv = (real)1 / norm;
    }
    /* through F_next = F' / norm (d_F becomes the gradient of F'), then F' = F_prev + K (x) d */
    if (T == 4 * TM_VL) {
        TM_WRITE_BACK_A_BODY(4);
    } else if (T == 8 * TM_VL) {
        TM_WRITE_BACK_A_BODY(8);
    } else {
        for (size_t i = 0; i < SR; i++) {
            real *g = d_F + i * T;
            if (clamped) {
                const real *fn = F_next + i * T;
                for (size_t t = 0; t < T; t++)
                    g[t] = (g[t] - dot_sum * fn[t]) * inv;
            }
            d_K[i] = dot(g, d, T);
        }
        col_accumulate(d_d, K, d_F, SR, T);
    }
    /* d = beta * (v - v_old) * ws, v_old = F_prev^T K */
    real d_beta = 0;
    real *d_vold = d; /* d is no longer needed */
    for (size_t t = 0; t < T; t++) {
        d_beta += d_d[t] * (v[t] - v_old[t]) * write_scale;
        real g = d_d[t] * beta * write_scale;
        d_vold[t] = -g;
        d_v[t] = g;
    }
    d_act[S + R + T] = d_beta;
    if (T == 4 * TM_VL) {
        TM_WRITE_BACK_B_BODY(4);
    } else if (T == 8 * TM_VL) {
        TM_WRITE_BACK_B_BODY(8);
    } else {
        for (size_t i = 0; i < SR; i++) {
            d_K[i] += dot(F_prev + i * T, d_vold, T);
            axpy(d_F + i * T, K[i], d_vold, T);
        }
    }
    for (size_t r = 0; r < R; r++)
        d_k2[r] = 0;
    for (size_t s = 0; s < S; s++) {
        const real *dk = d_K + s * R;
        real acc = 0, k1s = k1[s];
        for (size_t r = 0; r < R; r++) {
            acc += dk[r] * k2[r];
            d_k2[r] += dk[r] * k1s;
        }
        d_k1[s] = acc;
    }
}

/* ---- one read (step 4): q_out = LN(F^T vec(q_in (x) r)), r = tanh(e_i) ----------------------
 * Returns the layer norm's 1/sqrt(var + eps). */
static real read_forward(const real *F, const real *q_in, const real *r, real *q_out, size_t S,
                         size_t R, size_t T, real eps, real *key_scratch)
{
    outer_key(q_in, r, key_scratch, S, R);
    col_accumulate(q_out, key_scratch, F, S * R, T);
    real mean = 0;
    for (size_t t = 0; t < T; t++)
        mean += q_out[t];
    mean /= (real)T;
    real var = 0;
    for (size_t t = 0; t < T; t++) {
        real dv = q_out[t] - mean;
        var += dv * dv;
    }
    var /= (real)T;
    real rstd = (real)1 / R_SQRT(var + eps);
    for (size_t t = 0; t < T; t++)
        q_out[t] = (q_out[t] - mean) * rstd;
    return rstd;
}

/* The row loop of read_backward with T = NV vectors kept in registers: for every row of F,
 * p = F_row . d_z, d_F_row += c d_z, and optionally the running <F, d_F>. */
#define TM_READ_BACK_ROW(NV, S_, J_, PV)                                                         \
    do {                                                                                         \
        const real *row = F + ((S_) * R + (J_)) * T;                                             \
        real *g = d_F + ((S_) * R + (J_)) * T;                                                   \
        TM(vec) cv = (TM(vec)){0} + q_in[S_] * r[J_];                                            \
        PV = (TM(vec)){0};                                                                       \
        for (int v_ = 0; v_ < NV; v_++) {                                                        \
            TM(vec) f = vload(row + v_ * TM_VL);                                                 \
            TM(vec) gv = vload(g + v_ * TM_VL) + cv * z[v_];                                     \
            PV += f * z[v_];                                                                     \
            vstore(g + v_ * TM_VL, gv);                                                          \
            if (want_dot)                                                                        \
                acc[v_] += f * gv;                                                               \
        }                                                                                        \
    } while (0)

/* The row loop of read_backward with T = NV vectors kept in registers: for every row of F,
 * P = F_row . d_z, d_F_row += c d_z, and optionally the running <F, d_F>. Rows go in blocks of
 * 8 whose dot products are summed together (sum8rows) when R is a multiple of 8. */
#define TM_READ_BACK_BODY(NV)                                                                    \
    do {                                                                                         \
        TM(vec) z[NV], acc[NV];                                                                  \
        for (int v_ = 0; v_ < NV; v_++) {                                                        \
            z[v_] = vload(d_z + v_ * TM_VL);                                                     \
            acc[v_] = (TM(vec)){0};                                                              \
        }                                                                                        \
        for (size_t s = 0; s < S; s++) {                                                         \
            size_t j = 0;                                                                        \
            if (TM_HAS_SUM8ROWS)                                                                 \
                for (; j + 8 <= R; j += 8) {                                                     \
                    TM(vec) pv[8];                                                               \
                    for (int k_ = 0; k_ < 8; k_++)                                               \
                        TM_READ_BACK_ROW(NV, s, j + (size_t)k_, pv[k_]);                         \
                    vstore(P + s * R + j, sum8rows(pv));                                         \
                }                                                                                \
            for (; j < R; j++) {                                                                 \
                TM(vec) pv1;                                                                     \
                TM_READ_BACK_ROW(NV, s, j, pv1);                                                 \
                P[s * R + j] = vsum(pv1);                                                        \
            }                                                                                    \
        }                                                                                        \
        TM(vec) total = (TM(vec)){0};                                                            \
        for (int v_ = 0; v_ < NV; v_++)                                                          \
            total += acc[v_];                                                                    \
        dot_sum = (double)vsum(total);                                                           \
    } while (0)

/* d_q_out[T] in (clobbered: becomes the gradient of the pre-norm read); adds to d_q_in[S],
 * d_r[R] and d_F. When want_dot, returns <F, d_F> after the update (for write_backward), else 0.
 * P: S*R reals of scratch (F d_z per row, kept so that the sums into d_q_in and d_r run after
 * the pass over F instead of through memory inside it). */
static real read_backward(const real *F, const real *q_in, const real *r, const real *q_out,
                          real rstd, real *d_q_out, real *d_q_in, real *d_r, real *d_F,
                          size_t S, size_t R, size_t T, int want_dot, real *P)
{
    real mean_d = 0, mean_dq = 0;
    for (size_t t = 0; t < T; t++) {
        mean_d += d_q_out[t];
        mean_dq += d_q_out[t] * q_out[t];
    }
    mean_d /= (real)T;
    mean_dq /= (real)T;
    real *d_z = d_q_out;
    for (size_t t = 0; t < T; t++)
        d_z[t] = rstd * (d_q_out[t] - mean_d - q_out[t] * mean_dq);
    double dot_sum = 0;
    if (T == 4 * TM_VL) {
        TM_READ_BACK_BODY(4);
    } else if (T == 8 * TM_VL) {
        TM_READ_BACK_BODY(8);
    } else {
        for (size_t s = 0; s < S; s++)
            for (size_t j = 0; j < R; j++) {
                const real *row = F + (s * R + j) * T;
                real *g = d_F + (s * R + j) * T;
                P[s * R + j] = dot(row, d_z, T);
                axpy(g, q_in[s] * r[j], d_z, T);
                if (want_dot)
                    dot_sum += (double)dot(row, g, T);
            }
    }
    for (size_t s = 0; s < S; s++) {
        const real *ps = P + s * R;
        real acc = 0, qs = q_in[s];
        for (size_t j = 0; j < R; j++) {
            acc += ps[j] * r[j];
            d_r[j] += ps[j] * qs;
        }
        d_q_in[s] += acc;
    }
    return (real)dot_sum;
}
