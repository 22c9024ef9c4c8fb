/* gfw_backward_impl.h - the Gated Fast Weights model's backward pass over the window of the last
 * forward call, template over `real` (see real_template.h); included by gfw_f32.c and gfw_f64.c
 * only.
 *
 * In three stages, the forward's in reverse:
 *   1. the output: W_o's and b_o's gradients and the gradient of h_F at the loss rows;
 *   2. the fast net per lane back through time (lanes split across threads): at step t the
 *      gradient of h_F goes through the second layer norm, tanh and F2 [a; 1], the first layer
 *      norm, tanh and F1 [h_F; e; 1] to h_F of step t-1 and to e; the gradient of the matrices
 *      step t read is the blend's share, (1 - T) times that of the next step's, plus the fast
 *      net's outer products; the blend's gradient gives that of the update vectors;
 *   3. the slow net: the update vectors' gradient to s (one product), then back through time
 *      (lanes split across threads, batched per step) through h_S; W_1, b_1, W_2, b_2 and the
 *      embedding from batched products and fixed-order column sums.
 */

/* y = LN(u), rstd its 1/sqrt(var + eps): d_y (the gradient of y) in, the gradient of u out (into
 * d_u, which may be d_y). */
static inline void gfw_layer_norm_backward(real *d_u, const real *d_y, const real *y,
                                           real rstd, size_t n)
{
    real mean_dy = 0, mean_dyy = 0;
    for (size_t i = 0; i < n; i++) {
        mean_dy += d_y[i];
        mean_dyy += d_y[i] * y[i];
    }
    mean_dy /= (real)n;
    mean_dyy /= (real)n;
    for (size_t i = 0; i < n; i++)
        d_u[i] = rstd * (d_y[i] - mean_dy - y[i] * mean_dyy);
}

/* One fast matrix F [rows, cols] at step t: dF is the gradient of the matrix the blend made (the
 * next step's) on entry and of F (the one step t read) on return, adding the fast net's share
 * dp in^T; upd the update's activations ([ta; tb; sg; sd]); d_upd their pre-activations' gradient
 * out. col is scratch [2 cols]. One pass over each row, 32-byte vectors with a scalar tail; with
 * g = dF[i, j] and T = sg_i sd_j:
 *   d ta_i = sg_i sum_j g sd_j tb_j,  d sg_i = ta_i sum_j g sd_j tb_j - sum_j g sd_j F_ij,
 *   d tb_j = sd_j sum_i g sg_i ta_i,  d sd_j = tb_j sum_i g sg_i ta_i - sum_i g sg_i F_ij,
 *   dF_ij <- g (1 - T) + dp_i in_j. */
static void gfw_blend_backward(real *dF, const real *F, const real *upd, const real *dp,
                               const real *in, real *d_upd, real *col, size_t rows,
                               size_t cols)
{
    const real *ta = upd, *tb = upd + rows, *sg = upd + rows + cols, *sd = upd + 2 * rows + cols;
    real *d_ta = d_upd, *d_tb = d_upd + rows, *d_sg = d_upd + rows + cols,
         *d_sd = d_upd + 2 * rows + cols;
    real *c1 = col, *c2 = col + cols; /* sum_i g sg_i ta_i, sum_i g sg_i F_ij */
    memset(col, 0, 2 * cols * sizeof(real));
    size_t vector_end = cols / TM_VL * TM_VL;
    for (size_t i = 0; i < rows; i++) {
        real *g = dF + i * cols;
        const real *f = F + i * cols;
        real w = sg[i] * ta[i], s = sg[i], d = dp[i];
        TM(vec) acc1 = (TM(vec)){0}, acc2 = (TM(vec)){0};
        TM(vec) wv = (TM(vec)){0} + w, sv = (TM(vec)){0} + s, dv = (TM(vec)){0} + d;
        size_t j = 0;
        for (; j < vector_end; j += TM_VL) {
            TM(vec) gv = vload(g + j), fv = vload(f + j);
            TM(vec) gs = gv * vload(sd + j);
            acc1 += gs * vload(tb + j);
            acc2 += gs * fv;
            vstore(c1 + j, vload(c1 + j) + gv * wv);
            vstore(c2 + j, vload(c2 + j) + gv * fv * sv);
            vstore(g + j, gv - gs * sv + dv * vload(in + j));
        }
        real r1 = vsum(acc1), r2 = vsum(acc2);
        for (; j < cols; j++) {
            real gj = g[j], gs = gj * sd[j];
            r1 += gs * tb[j];
            r2 += gs * f[j];
            c1[j] += gj * w;
            c2[j] += gj * f[j] * s;
            g[j] = gj - gs * s + d * in[j];
        }
        d_ta[i] = s * r1;
        d_sg[i] = ta[i] * r1 - r2;
    }
    for (size_t j = 0; j < cols; j++) {
        d_tb[j] = sd[j] * c1[j];
        d_sd[j] = tb[j] * c1[j] - c2[j];
    }
    /* through the nonlinearities: tanh for ta, tb; the sigmoid for sg, sd */
    for (size_t i = 0; i < rows; i++) {
        d_ta[i] *= (real)1 - ta[i] * ta[i];
        d_sg[i] *= sg[i] * ((real)1 - sg[i]);
    }
    for (size_t j = 0; j < cols; j++) {
        d_tb[j] *= (real)1 - tb[j] * tb[j];
        d_sd[j] *= sd[j] * ((real)1 - sd[j]);
    }
}

static void gfw_fast_backward_worker(void *ctx_pointer, int index, int threads)
{
    TM(gfw_ctx) *ctx = ctx_pointer;
    TM(fwm__gfw_tm) *tm = ctx->tm;
    size_t B = (size_t)tm->config.lanes, m = tm->hp.fast_hidden, E = tm->hp.embedding_length;
    size_t c1 = tm->c1, c2 = tm->c2, FS = tm->fast_size, U = tm->update_size,
           U1 = 2 * (m + c1);
    size_t b0, b1;
    fwm__pool_range(B, index, threads, &b0, &b1);
    real *scratch = tm->thread_scratch + (size_t)index * tm->scratch_floats;
    real *dF = scratch;                        /* [FS]: F1 then F2 */
    real *carry = dF + FS, *dh = carry + m;    /* [m] each: of h_F from step t+1; in all */
    real *dp1 = dh + m, *dp2 = dp1 + m;        /* [m] each: of F1 x1, F2 x2 */
    real *dx = dp2 + m;                        /* [c1]: of x1 or x2 */
    real *x1 = dx + c1, *x2 = x1 + c1;         /* [c1], [c2] */
    real *col = x2 + c2;                       /* [2 c1] */
    const real *emb = GP(tm, GT_EMB);
    for (size_t b = b0; b < b1; b++) {
        memset(dF, 0, FS * sizeof(real));
        memset(carry, 0, m * sizeof(real));
        for (size_t t = (size_t)tm->shell.len; t-- > 0;) {
            size_t row = t * B + b;
            const real *F = tm->fasts + row * FS, *F2 = F + m * c1;
            const real *u1 = tm->u1s + row * m, *a = tm->as + row * m, *u2 = tm->u2s + row * m;
            const real *hf = tm->hfs + (row + B) * m, *d_out = tm->d_hf + row * m;
            for (size_t i = 0; i < m; i++)
                dh[i] = d_out[i] + carry[i];
            /* h_F = LN(u2), u2 = tanh(F2 [a; 1]) */
            gfw_layer_norm_backward(dp2, dh, hf, tm->rstd2[row], m);
            for (size_t i = 0; i < m; i++)
                dp2[i] *= (real)1 - u2[i] * u2[i];
            for (size_t j = 0; j < c2; j++)
                dx[j] = 0;
            for (size_t i = 0; i < m; i++)
                axpy(dx, dp2[i], F2 + i * c2, c2);
            /* a = LN(u1), u1 = tanh(F1 [h_F; e; 1]) */
            gfw_layer_norm_backward(dp1, dx, a, tm->rstd1[row], m);
            for (size_t i = 0; i < m; i++)
                dp1[i] *= (real)1 - u1[i] * u1[i];
            for (size_t j = 0; j < c1; j++)
                dx[j] = 0;
            for (size_t i = 0; i < m; i++)
                axpy(dx, dp1[i], F + i * c1, c1);
            memcpy(carry, dx, m * sizeof(real));
            memcpy(tm->d_e + row * E, dx + m, E * sizeof(real));
            /* the matrices: the blend that made the next step's, and this step's products */
            memcpy(x1, tm->hfs + row * m, m * sizeof(real));
            memcpy(x1 + m, emb + (size_t)tm->shell.x[row] * E, E * sizeof(real));
            x1[m + E] = 1;
            memcpy(x2, a, m * sizeof(real));
            x2[m] = 1;
            const real *upd = tm->updates + row * U;
            real *d_upd = tm->d_updates + row * U;
            gfw_blend_backward(dF, F, upd, dp1, x1, d_upd, col, m, c1);
            gfw_blend_backward(dF + m * c1, F2, upd + U1, dp2, x2, d_upd + U1, col, m, c2);
        }
    }
}

/* The slow recurrence back through time, lanes [b0, b1): tm->d_ss holds the gradient of s from
 * the update vectors on entry, that of s's pre-activation on return; tm->d_z that of z. */
static void gfw_slow_backward_worker(void *ctx_pointer, int index, int threads)
{
    TM(gfw_ctx) *ctx = ctx_pointer;
    TM(fwm__gfw_tm) *tm = ctx->tm;
    size_t B = (size_t)tm->config.lanes, N = tm->hp.slow_hidden, P = tm->hp.slow_inner,
           E = tm->hp.embedding_length;
    size_t b0, b1;
    fwm__pool_range(B, index, threads, &b0, &b1);
    if (b1 <= b0)
        return;
    size_t nb = b1 - b0;
    const real *W1 = GP(tm, GT_W1), *W2 = GP(tm, GT_W2);
    real *carry = tm->thread_scratch + (size_t)index * tm->scratch_floats; /* [nb, N] */
    memset(carry, 0, nb * N * sizeof(real));
    for (size_t t = (size_t)tm->shell.len; t-- > 0;) {
        size_t r0 = t * B + b0;
        const real *hs = tm->hss + (r0 + B) * N;
        real *dz = tm->d_z + r0 * N, *ds = tm->d_ss + r0 * P;
        const real *s = tm->ss + r0 * P;
        for (size_t i = 0; i < nb * N; i++)
            dz[i] = carry[i] * ((real)1 - hs[i] * hs[i]);
        R_GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)nb, (int)P, (int)N, (real)1, dz,
               (int)N, W2, (int)P, (real)1, ds, (int)P);
        for (size_t i = 0; i < nb * P; i++)
            ds[i] *= (real)1 - s[i] * s[i];
        if (t > 0)
            R_GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)nb, (int)N, (int)P, (real)1,
                   ds, (int)P, W1, (int)(N + E), (real)0, carry, (int)N);
    }
}

typedef struct TM(gfw_ce_ctx) {
    TM(fwm__gfw_tm) *tm;
    real scale;
} TM(gfw_ce_ctx);

static void gfw_ce_backward_worker(void *ctx_pointer, int index, int threads)
{
    TM(gfw_ce_ctx) *ctx = ctx_pointer;
    TM(fwm__gfw_tm) *tm = ctx->tm;
    size_t V = tm->hp.vocab_size, i0, i1;
    fwm__pool_range((size_t)tm->shell.n_loss_rows, index, threads, &i0, &i1);
    for (size_t i = i0; i < i1; i++)
        softmax_ce_backward(tm->shell.probs + i * V, V, tm->shell.y[tm->shell.loss_rows[i]], ctx->scale);
}

void TM(fwm__gfw_tm_backward)(TM(fwm__gfw_tm) *tm)
{
    const fwm_gfw_hparams *hp = &tm->hp;
    size_t B = (size_t)tm->config.lanes, V = hp->vocab_size, E = hp->embedding_length,
           m = hp->fast_hidden, N = hp->slow_hidden, P = hp->slow_inner;
    size_t rows = (size_t)tm->shell.len * B, n_loss = (size_t)tm->shell.n_loss_rows, U = tm->update_size;
    fwm__pool *pool = tm->shell.pool;
    if (n_loss == 0 || !tm->shell.grads)
        return;

    /* 1. logits = W_o h_F + b_o on the loss rows */
    double denominator = tm->shell.loss_denominator > 0 ? (double)tm->shell.loss_denominator : (double)n_loss;
    TM(gfw_ce_ctx) cctx = {tm, (real)(1.0 / denominator)};
    fwm__pool_run(pool, gfw_ce_backward_worker, &cctx);
    real *d_logits = tm->shell.probs;
    par_gemm(pool, 1, 0, V, m, n_loss, 1, d_logits, V, tm->h_selected, m, 1, GG(tm, GT_WO),
             m, NULL);
    par_colsum(pool, d_logits, n_loss, V, V, GG(tm, GT_BO), NULL);
    real *d_selected = tm->h_selected; /* no longer needed */
    par_gemm(pool, 0, 0, n_loss, m, V, 1, d_logits, V, GP(tm, GT_WO), m, 0, d_selected, m,
             NULL);
    memset(tm->d_hf, 0, rows * m * sizeof(real));
    for (size_t i = 0; i < n_loss; i++)
        memcpy(tm->d_hf + (size_t)tm->shell.loss_rows[i] * m, d_selected + i * m, m * sizeof(real));

    /* 2. the fast net and the blend, per lane */
    TM(gfw_ctx) ctx = {tm, tm->shell.len};
    fwm__pool_run(pool, gfw_fast_backward_worker, &ctx);
    par_colsum(pool, tm->d_e, rows, E, E, GG(tm, GT_EMB), tm->shell.x);

    /* 3. the slow net: D = W_2[N:] s + b_2[N:], then the recurrence */
    const real *W2u = GP(tm, GT_W2) + N * P;
    par_gemm(pool, 1, 0, U, P, rows, 1, tm->d_updates, U, tm->ss, P, 1,
             GG(tm, GT_W2) + N * P, P, NULL);
    par_colsum(pool, tm->d_updates, rows, U, U, GG(tm, GT_B2) + N, NULL);
    par_gemm(pool, 0, 0, rows, P, U, 1, tm->d_updates, U, W2u, P, 0, tm->d_ss, P, NULL);
    fwm__pool_run(pool, gfw_slow_backward_worker, &ctx);
    par_gemm(pool, 1, 0, N, P, rows, 1, tm->d_z, N, tm->ss, P, 1, GG(tm, GT_W2), P, NULL);
    par_colsum(pool, tm->d_z, rows, N, N, GG(tm, GT_B2), NULL);
    /* s = tanh(W_1[:, :N] h_S + G[x]), G = Emb W_1[:, N:]^T + b_1 */
    par_gemm(pool, 1, 0, P, N, rows, 1, tm->d_ss, P, tm->hss, N, 1, GG(tm, GT_W1), N + E,
             NULL);
    memset(tm->d_table, 0, V * P * sizeof(real));
    par_colsum(pool, tm->d_ss, rows, P, P, tm->d_table, tm->shell.x);
    par_colsum(pool, tm->d_table, V, P, P, GG(tm, GT_B1), NULL);
    par_gemm(pool, 1, 0, P, E, V, 1, tm->d_table, P, GP(tm, GT_EMB), E, 1, GG(tm, GT_W1) + N,
             N + E, NULL);
    par_gemm(pool, 0, 0, V, E, P, 1, tm->d_table, P, GP(tm, GT_W1) + N, N + E, 1,
             GG(tm, GT_EMB), E, NULL);
}
