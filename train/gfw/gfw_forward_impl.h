/* gfw_forward_impl.h - creation of the Gated Fast Weights trainer model and its forward pass over
 * one window, template over `real` (see real_template.h); included by gfw_f32.c and gfw_f64.c only.
 *
 * A window runs in four stages:
 *   1. the slow net's input table G = Emb W_1[:, N:]^T + b_1 ([V, P], one product per window);
 *   2. the slow recurrence over time, lanes split across threads (a fixed partition): per step,
 *      for the thread's lanes, s = tanh(G[x] + W_1[:, :N] h_S) and h_S = tanh(W_2[:N] s + b_2[:N])
 *      as [lanes, .] x [., .] products;
 *   3. the update vectors of every position, D = W_2[N:] s + b_2[N:], as one product, and their
 *      nonlinearities;
 *   4. the fast net and the gated update, per lane over time (lanes split across threads): the
 *      fast net reads the matrices of the previous step, then the blend makes the next step's;
 * then the logits W_o h_F + b_o of the loss rows and their softmax cross entropy. In training the
 * matrices every step read are kept (tm->fasts) for the backward pass; evaluation updates the
 * lanes' matrices in place.
 */

/* Tensors in fwm__gfw_tensor_at order. */
#define GT_EMB 0
#define GT_W1 1
#define GT_B1 2
#define GT_W2 3
#define GT_B2 4
#define GT_WO 5
#define GT_BO 6
#define GP(tm, k) ((tm)->shell.params + (tm)->layout.offset[k])
#define GG(tm, k) ((tm)->shell.grads + (tm)->layout.offset[k])

void TM(fwm__gfw_tm_free)(TM(fwm__gfw_tm) *tm)
{
    if (!tm)
        return;
    real *buffers[] = {tm->slow_table, tm->hss, tm->ss, tm->updates, tm->hfs, tm->u1s, tm->as,
                       tm->u2s, tm->rstd1, tm->rstd2, tm->fasts, tm->h_selected, tm->d_hf,
                       tm->d_updates, tm->d_e, tm->d_z, tm->d_ss, tm->d_table, tm->thread_scratch};
    for (size_t i = 0; i < sizeof buffers / sizeof buffers[0]; i++)
        free(buffers[i]);
    TM(fwm__tm_shell_free)(&tm->shell);
    free(tm);
}

fwm_status TM(fwm__gfw_tm_create)(const fwm__gfw_config *config, fwm__pool *pool,
                                  TM(fwm__gfw_tm) **out, fwm_error *err)
{
    *out = NULL;
    const fwm_gfw_hparams *hp = &config->hp;
    if (hp->vocab_size < 1 || hp->embedding_length < 1 || hp->fast_hidden < 2 ||
        hp->slow_hidden < 1 || hp->slow_inner < 1 || !(hp->layer_norm_epsilon > 0))
        return fwm__error(err, FWM_ERR_INVALID_ARGUMENT,
                          "gfw sizes: V, E, N, P must be >= 1, m >= 2 and the layer-norm "
                          "epsilon > 0 (got V=%u E=%u m=%u N=%u P=%u eps=%g)",
                          hp->vocab_size, hp->embedding_length, hp->fast_hidden,
                          hp->slow_hidden, hp->slow_inner, (double)hp->layer_norm_epsilon);
    if (fwm__gfw_fast_elements(hp) > FWM_GFW_MAX_FAST_ELEMENTS)
        return fwm__error(err, FWM_ERR_INVALID_ARGUMENT,
                          "gfw sizes: the fast matrices would have %llu floats per lane (at most "
                          "%u)",
                          (unsigned long long)fwm__gfw_fast_elements(hp),
                          FWM_GFW_MAX_FAST_ELEMENTS);
    if (config->lanes < 1 || config->window < 1)
        return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "lanes (%d) and window (%d) must be >= 1",
                          config->lanes, config->window);
    TM(fwm__gfw_tm) *tm = calloc(1, sizeof *tm);
    if (!tm)
        return fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "gfw trainer model: out of memory");
    tm->config = *config;
    tm->hp = *hp;
    fwm__tensor_layout_init(&tm->layout, &(fwm__model_spec){.arch = FWM_ARCH_GFW, .gfw = *hp});
    size_t V = hp->vocab_size, E = hp->embedding_length, m = hp->fast_hidden,
           N = hp->slow_hidden, P = hp->slow_inner;
    tm->c1 = (size_t)fwm__gfw_f1_cols(hp);
    tm->c2 = (size_t)fwm__gfw_f2_cols(hp);
    tm->update_size = (size_t)(fwm__gfw_update1_length(hp) + fwm__gfw_update2_length(hp));
    tm->fast_size = (size_t)fwm__gfw_fast_elements(hp);
    tm->shell.state_size = (size_t)fwm__gfw_hparams_state_floats(hp);
    size_t B = (size_t)config->lanes, W = (size_t)config->window, rows = W * B;
    size_t U = tm->update_size;
    size_t lane_scratch = tm->fast_size + 8 * m + 6 * tm->c1 + 64;
    size_t slow_scratch = 2 * B * N + 64;
    tm->scratch_floats = lane_scratch > slow_scratch ? lane_scratch : slow_scratch;
    int failed = 0, backward = !config->forward_only;
    TM(fwm__tm_shell_alloc)(&tm->shell, &FWM__TM_SHELL_SIZES(config, tm->layout.total, V), pool,
                            &failed);
    tm->slow_table = alloc_reals(V * P, &failed);
    tm->hss = alloc_reals((W + 1) * B * N, &failed);
    tm->ss = alloc_reals(rows * P, &failed);
    tm->updates = alloc_reals(rows * U, &failed);
    tm->hfs = alloc_reals((W + 1) * B * m, &failed);
    tm->u1s = alloc_reals(rows * m, &failed);
    tm->as = alloc_reals(rows * m, &failed);
    tm->u2s = alloc_reals(rows * m, &failed);
    tm->rstd1 = alloc_reals(rows, &failed);
    tm->rstd2 = alloc_reals(rows, &failed);
    if (backward)
        tm->fasts = alloc_reals(rows * tm->fast_size, &failed);
    tm->h_selected = alloc_reals(rows * m, &failed);
    if (backward) {
        tm->d_hf = alloc_reals(rows * m, &failed);
        tm->d_updates = alloc_reals(rows * U, &failed);
        tm->d_e = alloc_reals(rows * E, &failed);
        tm->d_z = alloc_reals(rows * N, &failed);
        tm->d_ss = alloc_reals(rows * P, &failed);
        tm->d_table = alloc_reals(V * P, &failed);
    }
    tm->thread_scratch =
        alloc_reals((size_t)fwm__pool_size(pool) * tm->scratch_floats, &failed);
    if (failed) {
        TM(fwm__gfw_tm_free)(tm);
        return fwm__error(err, FWM_ERR_OUT_OF_MEMORY,
                          "gfw trainer model: out of memory for %zu lanes x %zu steps (%zu "
                          "fast floats per lane and step)",
                          B, W, (size_t)fwm__gfw_fast_elements(hp));
    }
    *out = tm;
    return FWM_OK;
}

/* ---- kernels ---------------------------------------------------------------------------------- */

/* y = LN(u) over n numbers (no gain or bias); returns 1/sqrt(var + eps). */
static inline real gfw_layer_norm(real *y, const real *u, size_t n, real eps)
{
    real mean = 0, var = 0;
    for (size_t i = 0; i < n; i++)
        mean += u[i];
    mean /= (real)n;
    for (size_t i = 0; i < n; i++) {
        real d = u[i] - mean;
        var += d * d;
    }
    var /= (real)n;
    real rstd = (real)1 / R_SQRT(var + eps);
    for (size_t i = 0; i < n; i++)
        y[i] = (u[i] - mean) * rstd;
    return rstd;
}

/* out = F in: F is [rows, cols] row-major. */
static inline void gfw_matvec(real *out, const real *F, const real *in, size_t rows,
                              size_t cols)
{
    for (size_t i = 0; i < rows; i++)
        out[i] = dot(F + i * cols, in, cols);
}

/* The update's nonlinearities in place on one position's [U1 + U2] numbers: for F1 then F2,
 * tanh on alpha (rows) and beta (cols), the sigmoid on gamma (rows) and delta (cols). */
static inline void gfw_update_activate(real *d, size_t m, size_t c1, size_t c2)
{
    size_t cols[2] = {c1, c2};
    for (int k = 0; k < 2; k++) {
        size_t c = cols[k];
        tanh_precise_array(d, d, m + c);
        sigmoid_array(d + m + c, m + c);
        d += 2 * (m + c);
    }
}

/* F_out = T*H + (1 - T)*F_in = F_in + T*(H - F_in) for one [rows, cols] matrix, H = ta tb^T,
 * T = sg sd^T; upd = [ta (rows); tb (cols); sg (rows); sd (cols)] (after their nonlinearities).
 * F_out may be F_in. */
static inline void gfw_blend(real *F_out, const real *F_in, const real *upd, size_t rows,
                             size_t cols)
{
    const real *ta = upd, *tb = upd + rows, *sg = upd + rows + cols, *sd = upd + 2 * rows + cols;
    for (size_t i = 0; i < rows; i++) {
        const real *fi = F_in + i * cols;
        real *fo = F_out + i * cols;
        real a = ta[i], g = sg[i];
        for (size_t j = 0; j < cols; j++) {
            real t = g * sd[j];
            fo[j] = fi[j] + t * (a * tb[j] - fi[j]);
        }
    }
}

/* ---- stage 2: the slow recurrence, lanes [b0, b1) ---------------------------------------------- */
typedef struct TM(gfw_ctx) {
    TM(fwm__gfw_tm) *tm;
    int len;
} TM(gfw_ctx);

static void gfw_slow_forward_worker(void *ctx_pointer, int index, int threads)
{
    TM(gfw_ctx) *ctx = ctx_pointer;
    TM(fwm__gfw_tm) *tm = ctx->tm;
    size_t B = (size_t)tm->config.lanes, m = tm->hp.fast_hidden, N = tm->hp.slow_hidden,
           P = tm->hp.slow_inner, E = tm->hp.embedding_length;
    size_t b0, b1;
    fwm__pool_range(B, index, threads, &b0, &b1);
    if (b1 <= b0)
        return;
    size_t nb = b1 - b0;
    const real *W1 = GP(tm, GT_W1), *W2 = GP(tm, GT_W2), *b2 = GP(tm, GT_B2);
    real *z = tm->thread_scratch + (size_t)index * tm->scratch_floats; /* [nb, N] */
    for (size_t b = b0; b < b1; b++)
        memcpy(tm->hss + b * N, tm->shell.state + b * tm->shell.state_size + m, N * sizeof(real));
    for (int t = 0; t < ctx->len; t++) {
        size_t r0 = (size_t)t * B + b0;
        real *s = tm->ss + r0 * P;
        for (size_t b = b0; b < b1; b++)
            memcpy(tm->ss + ((size_t)t * B + b) * P,
                   tm->slow_table + (size_t)tm->shell.x[(size_t)t * B + b] * P, P * sizeof(real));
        R_GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, (int)nb, (int)P, (int)N, (real)1,
               tm->hss + r0 * N, (int)N, W1, (int)(N + E), (real)1, s, (int)P);
        tanh_precise_array(s, s, nb * P);
        for (size_t b = 0; b < nb; b++)
            memcpy(z + b * N, b2, N * sizeof(real));
        R_GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, (int)nb, (int)N, (int)P, (real)1, s,
               (int)P, W2, (int)P, (real)1, z, (int)N);
        tanh_precise_array(tm->hss + (r0 + B) * N, z, nb * N);
    }
    for (size_t b = b0; b < b1; b++)
        memcpy(tm->shell.state + b * tm->shell.state_size + m, tm->hss + ((size_t)ctx->len * B + b) * N,
               N * sizeof(real));
}

/* ---- stage 4: the fast net and the blend, lanes [b0, b1) --------------------------------------- */
static void gfw_fast_forward_worker(void *ctx_pointer, int index, int threads)
{
    TM(gfw_ctx) *ctx = ctx_pointer;
    TM(fwm__gfw_tm) *tm = ctx->tm;
    size_t B = (size_t)tm->config.lanes, m = tm->hp.fast_hidden, N = tm->hp.slow_hidden,
           E = tm->hp.embedding_length;
    size_t c1 = tm->c1, c2 = tm->c2, FS = tm->fast_size, U = tm->update_size,
           U1 = 2 * (m + c1);
    real eps = (real)tm->hp.layer_norm_epsilon;
    size_t b0, b1;
    fwm__pool_range(B, index, threads, &b0, &b1);
    real *scratch = tm->thread_scratch + (size_t)index * tm->scratch_floats;
    real *x1 = scratch, *x2 = x1 + c1, *p = x2 + c2; /* inputs [h_F; e; 1], [a; 1]; F x */
    const real *emb = GP(tm, GT_EMB);
    for (size_t b = b0; b < b1; b++) {
        real *lane = tm->shell.state + b * tm->shell.state_size;
        real *F_state = lane + m + N;
        memcpy(tm->hfs + b * m, lane, m * sizeof(real));
        for (int t = 0; t < ctx->len; t++) {
            size_t row = (size_t)t * B + b;
            /* the matrices of this step: kept in training, the lane's own in evaluation */
            real *F = F_state;
            if (tm->fasts) {
                F = tm->fasts + row * FS;
                if (t == 0)
                    memcpy(F, F_state, FS * sizeof(real));
            }
            memcpy(x1, tm->hfs + row * m, m * sizeof(real));
            memcpy(x1 + m, emb + (size_t)tm->shell.x[row] * E, E * sizeof(real));
            x1[m + E] = 1;
            gfw_matvec(p, F, x1, m, c1);
            real *u1 = tm->u1s + row * m, *a = tm->as + row * m, *u2 = tm->u2s + row * m;
            tanh_precise_array(u1, p, m);
            tm->rstd1[row] = gfw_layer_norm(a, u1, m, eps);
            memcpy(x2, a, m * sizeof(real));
            x2[m] = 1;
            gfw_matvec(p, F + m * c1, x2, m, c2);
            tanh_precise_array(u2, p, m);
            tm->rstd2[row] = gfw_layer_norm(tm->hfs + (row + B) * m, u2, m, eps);
            /* the next step's matrices */
            real *next = F_state;
            if (tm->fasts && t + 1 < ctx->len)
                next = tm->fasts + (row + B) * FS;
            const real *upd = tm->updates + row * U;
            gfw_blend(next, F, upd, m, c1);
            gfw_blend(next + m * c1, F + m * c1, upd + U1, m, c2);
        }
        memcpy(lane, tm->hfs + ((size_t)ctx->len * B + b) * m, m * sizeof(real));
    }
}

typedef struct TM(gfw_loss_ctx) {
    TM(fwm__gfw_tm) *tm;
} TM(gfw_loss_ctx);

static void gfw_loss_worker(void *ctx_pointer, int index, int threads)
{
    TM(gfw_loss_ctx) *ctx = ctx_pointer;
    TM(fwm__gfw_tm) *tm = ctx->tm;
    size_t V = tm->hp.vocab_size, i0, i1;
    fwm__pool_range((size_t)tm->shell.n_loss_rows, index, threads, &i0, &i1);
    for (size_t i = i0; i < i1; i++)
        tm->shell.row_loss[i] = softmax_ce_forward(tm->shell.probs + i * V, V, tm->shell.y[tm->shell.loss_rows[i]]);
}

typedef struct TM(gfw_activate_ctx) {
    TM(fwm__gfw_tm) *tm;
    size_t rows;
} TM(gfw_activate_ctx);

static void gfw_activate_worker(void *ctx_pointer, int index, int threads)
{
    TM(gfw_activate_ctx) *ctx = ctx_pointer;
    TM(fwm__gfw_tm) *tm = ctx->tm;
    size_t r0, r1;
    fwm__pool_range(ctx->rows, index, threads, &r0, &r1);
    for (size_t r = r0; r < r1; r++)
        gfw_update_activate(tm->updates + r * tm->update_size, tm->hp.fast_hidden, tm->c1,
                            tm->c2);
}

double TM(fwm__gfw_tm_forward)(TM(fwm__gfw_tm) *tm, const uint32_t *x, const uint32_t *y,
                               int len)
{
    const fwm_gfw_hparams *hp = &tm->hp;
    size_t B = (size_t)tm->config.lanes, V = hp->vocab_size, E = hp->embedding_length,
           m = hp->fast_hidden, N = hp->slow_hidden, P = hp->slow_inner;
    size_t rows = (size_t)len * B, U = tm->update_size;
    tm->shell.len = len;

    tm->shell.n_loss_rows = 0;
    for (size_t t = 0; t < (size_t)len; t++)
        for (size_t b = 0; b < B; b++) {
            size_t row = t * B + b;
            uint32_t xi = x[b * (size_t)len + t], yi = y[b * (size_t)len + t];
            tm->shell.x[row] = xi;
            tm->shell.y[row] = yi;
            if (fwm__is_loss_position(tm->config.loss_mode, tm->config.loss_token_id,
                                      hp->padding_token_id, xi, yi))
                tm->shell.loss_rows[tm->shell.n_loss_rows++] = (int)row;
        }

    /* 1. the slow net's input table; 2. its recurrence */
    par_gemm(tm->shell.pool, 0, 1, V, P, E, 1, GP(tm, GT_EMB), E, GP(tm, GT_W1) + N, N + E, 1,
             tm->slow_table, P, GP(tm, GT_B1));
    TM(gfw_ctx) ctx = {tm, len};
    fwm__pool_run(tm->shell.pool, gfw_slow_forward_worker, &ctx);
    /* 3. the update vectors of every position */
    par_gemm(tm->shell.pool, 0, 1, rows, U, P, 1, tm->ss, P, GP(tm, GT_W2) + N * P, P, 1,
             tm->updates, U, GP(tm, GT_B2) + N);
    TM(gfw_activate_ctx) actx = {tm, rows};
    fwm__pool_run(tm->shell.pool, gfw_activate_worker, &actx);
    /* 4. the fast net and the gated update */
    fwm__pool_run(tm->shell.pool, gfw_fast_forward_worker, &ctx);

    tm->shell.loss = 0;
    tm->shell.loss_sum = 0;
    if (tm->shell.n_loss_rows == 0)
        return 0;
    size_t n_loss = (size_t)tm->shell.n_loss_rows;
    for (size_t i = 0; i < n_loss; i++)
        memcpy(tm->h_selected + i * m, tm->hfs + ((size_t)tm->shell.loss_rows[i] + B) * m,
               m * sizeof(real));
    par_gemm(tm->shell.pool, 0, 1, n_loss, V, m, 1, tm->h_selected, m, GP(tm, GT_WO), m, 1,
             tm->shell.probs, V, GP(tm, GT_BO));
    if (tm->shell.logits)
        memcpy(tm->shell.logits, tm->shell.probs, n_loss * V * sizeof(real));
    TM(gfw_loss_ctx) lctx = {tm};
    fwm__pool_run(tm->shell.pool, gfw_loss_worker, &lctx);
    double sum = 0;
    for (size_t i = 0; i < n_loss; i++)
        sum += tm->shell.row_loss[i];
    tm->shell.loss_sum = sum;
    tm->shell.loss = sum / (double)n_loss;
    return tm->shell.loss;
}
