/* mnm_backward_impl.h - the MNM baseline's backward pass over the window of the last forward call,
 * template over `real` (see real_template.h); included by mnm_f32.c and mnm_f64.c only.
 *
 * Stages in reverse order of mnm_forward_impl.h: the output's gradient of [h; r] for the loss
 * rows (batched), then the recurrence backwards per lane (lanes split across threads), and last the
 * parameter gradients as batched products and column sums. The recurrence needs every step's
 * memory before and after its write: each segment's memory is replayed from the checkpoint the
 * forward pass kept (mnm_write, the same bits), then the segment's steps are walked backwards:
 *   - the gradient of M_t (the memory after step t's write) collects the gradient from step t+1
 *     (through its write), from the read of step t and from the meta term of step t;
 *   - the write M_t = M_(t-1) - beta sum_l c_l sum_i e^l_i z^(l-1)_i^T passes it to M_(t-1)
 *     (identity), to beta, to the targets and to the activations z (all of M_(t-1)), which pass it
 *     on through M_(t-1) to the write keys and to M_(t-1) again;
 *   - u's gradient goes to h_t (W_u), the LSTM cell, and through W_hh and W_ih's read-out columns
 *     to h_(t-1) and r_(t-1).
 * Nothing flows into the state carried in from the previous window (truncated BPTT), nor into the
 * initial memory.
 */

/* n keys whose activations through M are acts + i * act_size, with the gradients
 * d_out + i * out_stride [d_v] at the memory net's output: adds the gradient of M to dM (key by
 * key for every entry, each row of M read once for all keys) and of key i to d_key + i * d_k.
 * cur, next: scratch of n times the widest layer. */
static void mnm_mem_backward_keys(const TM(fwm__mnm_tm) *tm, const real *M, const real *acts,
                                  const real *d_out, size_t out_stride, size_t n, real *dM,
                                  real *d_key, real *cur, real *next, size_t wide)
{
    size_t Lm = tm->hp.memory_layers, A = tm->act_size, dk = tm->hp.key_length;
    for (size_t i = 0; i < n; i++)
        memcpy(cur + i * wide, d_out + i * out_stride, tm->hp.value_length * sizeof(real));
    for (size_t l = Lm; l-- > 0;) {
        size_t rows = tm->mem_rows[l], cols = tm->mem_cols[l];
        size_t out_at = mnm_act_at(tm, l + 1), in_at = mnm_act_at(tm, l);
        const real *Ml = M + tm->mem_offset[l];
        real *dMl = dM + tm->mem_offset[l];
        for (size_t i = 0; i < n; i++) {
            const real *z_out = acts + i * A + out_at;
            real *c = cur + i * wide;
            if (l + 1 < Lm)
                for (size_t j = 0; j < rows; j++)
                    c[j] *= (real)1 - z_out[j] * z_out[j];
            memset(next + i * wide, 0, cols * sizeof(real));
        }
        /* dM's row j takes every key's term in key order; key i's input gradient every row's
         * term in row order: the order of the single axpys, each destination written once */
        for (size_t j = 0; j < rows; j++)
            axpy_many(dMl + j * cols, cur + j, wide, acts + in_at, A, n, cols);
        for (size_t i = 0; i < n; i++)
            axpy_many(next + i * wide, cur + i * wide, 1, Ml, cols, rows, cols);
        real *swap = cur;
        cur = next;
        next = swap;
    }
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < dk; j++)
            d_key[i * dk + j] += cur[i * wide + j];
}

/* The write's backward pass for one lane and step: dM holds the gradient of M_new on entry and of
 * M_old on return; adds to du (the gradient of u, before tanh'), returns the gradient of beta and
 * writes the targets' gradient to dT [Nh][target_size]. */
static real mnm_write_backward(const TM(fwm__mnm_tm) *tm, const real *M_old, real *dM,
                               const real *u, const real *targets, real beta, real *du,
                               real *dT, real *zs, real *dzs)
{
    size_t Nh = tm->hp.head_count, dk = tm->hp.key_length, A = tm->act_size,
           TS = tm->target_size, Lm = tm->hp.memory_layers;
    mnm_mem_forward_keys(tm, M_old, u + Nh * dk, dk, Nh, zs);
    memset(dzs, 0, Nh * A * sizeof(real));
    real d_beta = 0;
    size_t t_at = 0;
    for (size_t l = 0; l < Lm; l++) { /* the outer products, with the gradient of M_new */
        size_t rows = tm->mem_rows[l], cols = tm->mem_cols[l];
        size_t in_at = mnm_act_at(tm, l), out_at = mnm_act_at(tm, l + 1);
        real c = (real)(2.0 / ((double)Nh * (double)rows));
        const real *dMl = dM + tm->mem_offset[l];
        /* rows in blocks of 4: the dot products of a row with every head (the row read once),
         * then each head's input gradient takes the block's rows in row order */
        real v[FWM_MNM_MAX_HEADS], coef[FWM_MNM_MAX_HEADS][4];
        for (size_t j0 = 0; j0 < rows; j0 += 4) {
            size_t block = rows - j0 < 4 ? rows - j0 : 4;
            for (size_t j = j0; j < j0 + block; j++) {
                dot_many(dMl + j * cols, zs + in_at, A, Nh, cols, v, 1);
                for (size_t i = 0; i < Nh; i++) {
                    const real *z = zs + i * A, *tg = targets + i * TS + t_at;
                    real *dz = dzs + i * A, *dt = dT + i * TS + t_at;
                    real e = z[out_at + j] - tg[j];
                    d_beta -= c * e * v[i];
                    real de = -beta * c * v[i];
                    dt[j] = -de;
                    dz[out_at + j] += de;
                    coef[i][j - j0] = -beta * c * e;
                }
            }
            for (size_t i = 0; i < Nh; i++)
                axpy_many(dzs + i * A + in_at, coef[i], 1, dMl + j0 * cols, cols, block,
                          cols);
        }
        t_at += rows;
    }
    for (size_t l = Lm; l-- > 0;) { /* the activations through M_old, layer by layer */
        size_t rows = tm->mem_rows[l], cols = tm->mem_cols[l];
        size_t in_at = mnm_act_at(tm, l), out_at = mnm_act_at(tm, l + 1);
        const real *Ml = M_old + tm->mem_offset[l];
        real *dMl = dM + tm->mem_offset[l];
        if (l + 1 < Lm)
            for (size_t i = 0; i < Nh; i++) {
                const real *z = zs + i * A;
                real *g = dzs + i * A + out_at;
                for (size_t j = 0; j < rows; j++)
                    g[j] *= (real)1 - z[out_at + j] * z[out_at + j];
            }
        for (size_t j = 0; j < rows; j++) /* as in mnm_mem_backward_keys */
            axpy_many(dMl + j * cols, dzs + out_at + j, A, zs + in_at, A, Nh, cols);
        for (size_t i = 0; i < Nh; i++)
            axpy_many(dzs + i * A + in_at, dzs + i * A + out_at, 1, Ml, cols, rows, cols);
    }
    for (size_t i = 0; i < Nh; i++)
        axpy(du + Nh * dk + i * dk, 1, dzs + i * A, dk);
    return d_beta;
}

/* ---- the recurrence backwards, lanes [b0, b1) ---------------------------------------------- */
typedef struct TM(mnm_back_ctx) {
    TM(fwm__mnm_tm) *tm;
    real scale; /* the recurrence: d objective / d m_t; the cross entropy: 1 / its denominator */
} TM(mnm_back_ctx);

static void mnm_backward_worker(void *ctx_pointer, int index, int threads)
{
    TM(mnm_back_ctx) *ctx = ctx_pointer;
    TM(fwm__mnm_tm) *tm = ctx->tm;
    const fwm_mnm_hparams *hp = &tm->hp;
    size_t B = (size_t)tm->config.lanes, H = hp->hidden_size, G4 = 4 * H, E = hp->embedding_length,
           dv = hp->value_length, dk = hp->key_length, Nh = hp->head_count, U = tm->u_size,
           A = tm->act_size, TS = tm->target_size, Mn = tm->memory_size, HR = H + dv;
    size_t seg = (size_t)tm->config.segment, nseg = (size_t)tm->n_segments, len = (size_t)tm->shell.len;
    size_t b0, b1;
    fwm__pool_range(B, index, threads, &b0, &b1);
    if (b1 <= b0)
        return;
    size_t nb = b1 - b0;
    size_t wide = dk > hp->memory_hidden ? dk : hp->memory_hidden;
    if (dv > wide)
        wide = dv;
    real *zs = tm->thread_scratch + (size_t)index * tm->scratch_floats; /* [Nh][A] */
    real *dzs = zs + Nh * A;                                           /* [Nh][A] */
    real *cur = dzs + Nh * A, *next = cur + Nh * wide, *dvec = next + Nh * wide; /* [Nh][wide] */
    real *dT = dvec + Nh * wide;                                       /* [Nh][TS] */
    real *Ms = dT + Nh * TS;                       /* [nb][seg + 1][Mn] */
    real *dM = Ms + nb * (seg + 1) * Mn;           /* [nb][Mn] */
    real *dh_carry = dM + nb * Mn, *dc_carry = dh_carry + nb * H, *dh = dc_carry + nb * H;
    real *dr_carry = dh + nb * H, *dr = dr_carry + nb * dv;
    const real *W_ih = MP(tm, MT_W_IH), *W_hh = MP(tm, MT_W_HH), *W_u = MP(tm, MT_W_U),
               *w_beta = MP(tm, MT_W_BETA), *W_q = MP(tm, MT_W_Q);
    uint32_t pad = hp->padding_token_id;
    real meta_c = ctx->scale * (real)(2.0 / ((double)Nh * (double)dv));
    memset(dM, 0, nb * Mn * sizeof(real));
    memset(dh_carry, 0, nb * H * sizeof(real));
    memset(dc_carry, 0, nb * H * sizeof(real));
    memset(dr_carry, 0, nb * dv * sizeof(real));
    for (size_t sg = (len + seg - 1) / seg; sg-- > 0;) {
        size_t t0 = sg * seg, t1 = t0 + seg < len ? t0 + seg : len;
        for (size_t b = b0; b < b1; b++) { /* replay the segment's writes */
            real *Mb = Ms + (b - b0) * (seg + 1) * Mn;
            memcpy(Mb, tm->m_checkpoints + (b * nseg + sg) * Mn, Mn * sizeof(real));
            for (size_t t = t0; t < t1; t++) {
                size_t row = t * B + b;
                real *Mt = Mb + (t - t0 + 1) * Mn;
                memcpy(Mt, Mt - Mn, Mn * sizeof(real));
                mnm_write(tm, Mt, tm->us + row * U, tm->targets + row * Nh * TS,
                          tm->betas[row], zs);
            }
        }
        for (size_t t = t1; t-- > t0;) {
            size_t r0 = t * B + b0;
            for (size_t b = b0; b < b1; b++) {
                size_t row = t * B + b;
                const real *M_new = Ms + ((b - b0) * (seg + 1) + (t - t0 + 1)) * Mn;
                const real *M_old = M_new - Mn;
                real *dMb = dM + (b - b0) * Mn;
                const real *u = tm->us + row * U, *vw = u + 2 * Nh * dk;
                real *du = tm->d_u + row * U;
                memset(du, 0, U * sizeof(real));
                real *drb = dr + (b - b0) * dv;
                for (size_t j = 0; j < dv; j++)
                    drb[j] = tm->d_hr[row * HR + H + j] + dr_carry[(b - b0) * dv + j];
                /* the read: r = (1/Nh) sum_i f_M_new(kr_i) */
                for (size_t j = 0; j < dv; j++)
                    dvec[j] = drb[j] / (real)Nh;
                mnm_mem_forward_keys(tm, M_new, u, dk, Nh, zs);
                mnm_mem_backward_keys(tm, M_new, zs, dvec, 0, Nh, dMb, du, cur, next, wide);
                /* the meta term (1/(Nh d_v)) sum_i |f_M_new(kw_i) - vw_i|^2 */
                if (tm->shell.x[row] != pad && ctx->scale != 0) {
                    mnm_mem_forward_keys(tm, M_new, u + Nh * dk, dk, Nh, zs);
                    for (size_t i = 0; i < Nh; i++) {
                        const real *f = zs + i * A + A - dv;
                        real *dvw = du + 2 * Nh * dk + i * dv, *d = dvec + i * dv;
                        for (size_t j = 0; j < dv; j++) {
                            d[j] = meta_c * (f[j] - vw[i * dv + j]);
                            dvw[j] -= d[j];
                        }
                    }
                    mnm_mem_backward_keys(tm, M_new, zs, dvec, dv, Nh, dMb, du + Nh * dk, cur,
                                          next, wide);
                }
                /* the write: dMb becomes the gradient of M_old */
                const real *tg = tm->targets + row * Nh * TS;
                real beta = tm->betas[row];
                real d_beta = mnm_write_backward(tm, M_old, dMb, u, tg, beta, du, dT, zs, dzs);
                memcpy(tm->d_targets + row * Nh * TS, dT, Nh * TS * sizeof(real));
                for (size_t i = 0; i < Nh; i++) { /* targets = W_q vw_i + b_q */
                    real *dvw = du + 2 * Nh * dk + i * dv;
                    for (size_t j = 0; j < TS; j++)
                        axpy(dvw, dT[i * TS + j], W_q + j * dv, dv);
                }
                real d_pre = d_beta * beta * ((real)1 - beta);
                tm->d_betas[row] = d_pre;
                axpy(du + Nh * (2 * dk + dv), d_pre, w_beta, dk);
                for (size_t j = 0; j < U; j++)
                    du[j] *= (real)1 - u[j] * u[j];
            }
            /* h_t: from the output, from step t+1, and from u */
            for (size_t b = b0; b < b1; b++) {
                size_t row = t * B + b;
                real *d = dh + (b - b0) * H;
                for (size_t j = 0; j < H; j++)
                    d[j] = tm->d_hr[row * HR + j] + dh_carry[(b - b0) * H + j];
            }
            R_GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)nb, (int)H, (int)U, (real)1,
                   tm->d_u + r0 * U, (int)U, W_u, (int)H, (real)1, dh, (int)H);
            for (size_t b = b0; b < b1; b++) {
                size_t row = t * B + b;
                lstm_cell_backward(tm->gates + row * G4, tm->cs + row * H,
                                   tm->tanh_cs + row * H, dh + (b - b0) * H,
                                   dc_carry + (b - b0) * H, tm->d_gates + row * G4, H);
            }
            if (t > 0) { /* h_(t-1) through W_hh, r_(t-1) through W_ih's read-out columns */
                R_GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)nb, (int)H, (int)G4,
                       (real)1, tm->d_gates + r0 * G4, (int)G4, W_hh, (int)H, (real)0, dh_carry,
                       (int)H);
                R_GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)nb, (int)dv, (int)G4,
                       (real)1, tm->d_gates + r0 * G4, (int)G4, W_ih + E, (int)(E + dv), (real)0,
                       dr_carry, (int)dv);
            }
        }
    }
}

static void mnm_ce_backward_worker(void *ctx_pointer, int index, int threads)
{
    TM(mnm_back_ctx) *ctx = ctx_pointer;
    TM(fwm__mnm_tm) *tm = ctx->tm;
    size_t V = tm->hp.vocab_size, i0, i1;
    fwm__pool_range((size_t)tm->shell.n_loss_rows, index, threads, &i0, &i1);
    for (size_t i = i0; i < i1; i++)
        softmax_ce_backward(tm->shell.probs + i * V, V, tm->shell.y[tm->shell.loss_rows[i]], ctx->scale);
}

void TM(fwm__mnm_tm_backward)(TM(fwm__mnm_tm) *tm)
{
    const fwm_mnm_hparams *hp = &tm->hp;
    size_t B = (size_t)tm->config.lanes, V = hp->vocab_size, E = hp->embedding_length,
           H = hp->hidden_size, G4 = 4 * H, dv = hp->value_length, dk = hp->key_length,
           Nh = hp->head_count, d_o = hp->output_length, Lm = hp->memory_layers, HR = H + dv,
           U = tm->u_size, TS = tm->target_size;
    size_t rows = (size_t)tm->shell.len * B, n_loss = (size_t)tm->shell.n_loss_rows;
    fwm__pool *pool = tm->shell.pool;
    if (!tm->shell.grads || tm->shell.len == 0)
        return;
    double meta_denominator =
        tm->meta_denominator > 0 ? (double)tm->meta_denominator : (double)tm->n_meta_rows;
    real meta_scale =
        meta_denominator > 0 ? (real)(tm->config.meta_weight / meta_denominator) : (real)0;
    if (n_loss == 0 && meta_scale == 0)
        return;

    /* output: logits = W_s y + b_s, y = W_o [h; r] + b_o on the loss rows */
    memset(tm->d_hr, 0, rows * HR * sizeof(real));
    if (n_loss > 0) {
        double denominator =
            tm->shell.loss_denominator > 0 ? (double)tm->shell.loss_denominator : (double)n_loss;
        TM(mnm_back_ctx) cctx = {tm, (real)(1.0 / denominator)};
        fwm__pool_run(pool, mnm_ce_backward_worker, &cctx);
        real *d_logits = tm->shell.probs;
        par_gemm(pool, 1, 0, V, d_o, n_loss, 1, d_logits, V, tm->y_selected, d_o, 1,
                 MG(tm, MT_W_S(Lm)), d_o, NULL);
        par_colsum(pool, d_logits, n_loss, V, V, MG(tm, MT_B_S(Lm)), NULL);
        real *d_y = tm->y_selected; /* no longer needed */
        par_gemm(pool, 0, 0, n_loss, d_o, V, 1, d_logits, V, MP(tm, MT_W_S(Lm)), d_o, 0, d_y,
                 d_o, NULL);
        par_gemm(pool, 1, 0, d_o, HR, n_loss, 1, d_y, d_o, tm->hr_selected, HR, 1,
                 MG(tm, MT_W_O(Lm)), HR, NULL);
        par_colsum(pool, d_y, n_loss, d_o, d_o, MG(tm, MT_B_O(Lm)), NULL);
        real *d_hr_sel = tm->hr_selected;
        par_gemm(pool, 0, 0, n_loss, HR, d_o, 1, d_y, d_o, MP(tm, MT_W_O(Lm)), HR, 0,
                 d_hr_sel, HR, NULL);
        for (size_t i = 0; i < n_loss; i++)
            memcpy(tm->d_hr + (size_t)tm->shell.loss_rows[i] * HR, d_hr_sel + i * HR, HR * sizeof(real));
    }

    /* the recurrence */
    TM(mnm_back_ctx) ctx = {tm, meta_scale};
    fwm__pool_run(pool, mnm_backward_worker, &ctx);

    /* targets = W_q vw_i + b_q, head by head */
    for (size_t i = 0; i < Nh; i++) {
        par_gemm(pool, 1, 0, TS, dv, rows, 1, tm->d_targets + i * TS, Nh * TS,
                 tm->us + 2 * Nh * dk + i * dv, U, 1, MG(tm, MT_W_Q), dv, NULL);
        par_colsum(pool, tm->d_targets + i * TS, rows, TS, Nh * TS, MG(tm, MT_B_Q), NULL);
    }
    /* beta = sigmoid(w_beta . b' + b_beta) */
    par_gemm(pool, 1, 0, 1, dk, rows, 1, tm->d_betas, 1, tm->us + Nh * (2 * dk + dv), U, 1,
             MG(tm, MT_W_BETA), dk, NULL);
    par_colsum(pool, tm->d_betas, rows, 1, 1, MG(tm, MT_B_BETA), NULL);
    /* u = tanh(W_u h + b_u) */
    par_gemm(pool, 1, 0, U, H, rows, 1, tm->d_u, U, tm->hs + B * H, H, 1, MG(tm, MT_W_U), H,
             NULL);
    par_colsum(pool, tm->d_u, rows, U, U, MG(tm, MT_B_U), NULL);
    /* g = G[x] + W_ih[:, E:] r_(t-1) + W_hh h_(t-1) */
    par_gemm(pool, 1, 0, G4, H, rows, 1, tm->d_gates, G4, tm->hs, H, 1, MG(tm, MT_W_HH), H,
             NULL);
    par_gemm(pool, 1, 0, G4, dv, rows, 1, tm->d_gates, G4, tm->rs, dv, 1,
             MG(tm, MT_W_IH) + E, E + dv, NULL);
    memset(tm->d_table, 0, V * G4 * sizeof(real));
    par_colsum(pool, tm->d_gates, rows, G4, G4, tm->d_table, tm->shell.x);
    par_colsum(pool, tm->d_table, V, G4, G4, MG(tm, MT_BIAS), NULL);
    par_gemm(pool, 1, 0, G4, E, V, 1, tm->d_table, G4, MP(tm, MT_EMB), E, 1, MG(tm, MT_W_IH),
             E + dv, NULL);
    par_gemm(pool, 0, 0, V, E, G4, 1, tm->d_table, G4, MP(tm, MT_W_IH), E + dv, 1,
             MG(tm, MT_EMB), E, NULL);
}
