/* mnm_forward_impl.h - creation of the MNM baseline's trainer model, its memory kernels and its
 * forward pass over one window, template over `real` (see real_template.h); included by
 * mnm_f32.c and mnm_f64.c only.
 *
 * A window runs in three stages:
 *   1. the input table G = Emb W_ih[:, :E]^T + b ([V, 4H], one product per window);
 *   2. the recurrence over time, lanes split across threads (a fixed partition): per step, for the
 *      thread's lanes, g = G[x] + W_ih[:, E:] r + W_hh h and u = tanh(W_u h + b_u) as
 *      [lanes, .] x [., .] products, then per lane the LSTM cell, beta, the targets W_q vw + b_q,
 *      the write (mnm_write), the read of the updated memory and, in training, the meta term;
 *   3. y = W_o [h; r] + b_o and the logits of the loss rows, softmax cross entropy.
 * In training M is stored before every `segment`-th step for the backward pass.
 */

/* Tensors in fwm__mnm_tensor_at order. */
#define MT_EMB 0
#define MT_W_IH 1
#define MT_W_HH 2
#define MT_BIAS 3
#define MT_W_U 4
#define MT_B_U 5
#define MT_W_BETA 6
#define MT_B_BETA 7
#define MT_W_Q 8
#define MT_B_Q 9
#define MT_MEM(l) (10 + (size_t)(l))
#define MT_W_O(Lm) (10 + (size_t)(Lm))
#define MT_B_O(Lm) (11 + (size_t)(Lm))
#define MT_W_S(Lm) (12 + (size_t)(Lm))
#define MT_B_S(Lm) (13 + (size_t)(Lm))
#define MP(tm, k) ((tm)->shell.params + (tm)->layout.offset[k])
#define MG(tm, k) ((tm)->shell.grads + (tm)->layout.offset[k])

void TM(fwm__mnm_tm_free)(TM(fwm__mnm_tm) *tm)
{
    if (!tm)
        return;
    real *buffers[] = {tm->input_table, tm->gates, tm->hs, tm->cs, tm->rs, tm->tanh_cs, tm->us,
                       tm->betas, tm->targets, tm->m_checkpoints, tm->metas, tm->hr_selected,
                       tm->y_selected, tm->d_hr, tm->d_u, tm->d_betas, tm->d_targets, tm->d_gates,
                       tm->d_table, tm->thread_scratch};
    for (size_t i = 0; i < sizeof buffers / sizeof buffers[0]; i++)
        free(buffers[i]);
    TM(fwm__tm_shell_free)(&tm->shell);
    free(tm);
}

fwm_status TM(fwm__mnm_tm_create)(const fwm__mnm_config *config, fwm__pool *pool,
                                  TM(fwm__mnm_tm) **out, fwm_error *err)
{
    *out = NULL;
    const fwm_mnm_hparams *hp = &config->hp;
    if (hp->vocab_size < 1 || hp->embedding_length < 1 || hp->hidden_size < 1 ||
        hp->head_count < 1 || hp->head_count > FWM_MNM_MAX_HEADS || hp->key_length < 1 ||
        hp->value_length < 1 || hp->memory_hidden < 1 || hp->memory_layers < 1 ||
        hp->memory_layers > FWM_MNM_MAX_MEMORY_LAYERS || hp->output_length < 1)
        return fwm__error(err, FWM_ERR_INVALID_ARGUMENT,
                          "every MNM size must be >= 1, the heads at most %u and the memory layers "
                          "at most %u (got V=%u E=%u H=%u heads=%u d_k=%u d_v=%u D=%u Lm=%u "
                          "d_o=%u)",
                          FWM_MNM_MAX_HEADS, FWM_MNM_MAX_MEMORY_LAYERS, hp->vocab_size,
                          hp->embedding_length, hp->hidden_size, hp->head_count, hp->key_length,
                          hp->value_length, hp->memory_hidden, hp->memory_layers,
                          hp->output_length);
    if (config->lanes < 1 || config->window < 1)
        return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "lanes (%d) and window (%d) must be >= 1",
                          config->lanes, config->window);
    if (!(config->meta_weight >= 0) || !isfinite(config->meta_weight))
        return fwm__error(err, FWM_ERR_INVALID_ARGUMENT,
                          "the meta-objective weight must be finite and >= 0 (got %g)",
                          config->meta_weight);
    TM(fwm__mnm_tm) *tm = calloc(1, sizeof *tm);
    if (!tm)
        return fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "MNM trainer model: out of memory");
    tm->config = *config;
    tm->hp = *hp;
    if (tm->config.segment <= 0) {
        int s = 1;
        while (s * s < config->window)
            s++;
        tm->config.segment = s;
    }
    fwm__tensor_layout_init(&tm->layout, &(fwm__model_spec){.arch = FWM_ARCH_MNM, .mnm = *hp});
    size_t V = hp->vocab_size, H = hp->hidden_size, Nh = hp->head_count, dv = hp->value_length,
           dk = hp->key_length, D = hp->memory_hidden, Lm = hp->memory_layers,
           d_o = hp->output_length, G4 = 4 * H;
    size_t B = (size_t)config->lanes, W = (size_t)config->window, rows = W * B,
           seg = (size_t)tm->config.segment;
    tm->memory_size = 0;
    for (uint32_t l = 0; l < hp->memory_layers; l++) {
        uint64_t r, c;
        fwm__mnm_memory_shape(hp, l, &r, &c);
        tm->mem_rows[l] = (size_t)r;
        tm->mem_cols[l] = (size_t)c;
        tm->mem_offset[l] = tm->memory_size;
        tm->memory_size += (size_t)(r * c);
    }
    tm->shell.state_size = 2 * H + dv + tm->memory_size;
    tm->act_size = dk + (Lm - 1) * D + dv;
    tm->u_size = (size_t)fwm__mnm_interact_rows(hp);
    tm->target_size = (size_t)fwm__mnm_target_rows(hp);
    tm->n_segments = (int)((W + seg - 1) / seg);
    size_t wide = dk > D ? dk : D;
    if (dv > wide)
        wide = dv;
    /* lanes of the largest thread part */
    int threads = fwm__pool_size(pool);
    size_t nb = (B + (size_t)threads - 1) / (size_t)threads;
    size_t per_key = 2 * Nh * tm->act_size + 3 * Nh * wide + Nh * tm->target_size;
    tm->scratch_floats = per_key + 64;
    if (!config->forward_only)
        tm->scratch_floats += nb * ((seg + 2) * tm->memory_size + 4 * H + 2 * dv);
    int failed = 0, backward = !config->forward_only;
    TM(fwm__tm_shell_alloc)(&tm->shell, &FWM__TM_SHELL_SIZES(config, tm->layout.total, V), pool,
                            &failed);
    tm->input_table = alloc_reals(V * G4, &failed);
    tm->gates = alloc_reals(rows * G4, &failed);
    tm->hs = alloc_reals((W + 1) * B * H, &failed);
    tm->cs = alloc_reals((W + 1) * B * H, &failed);
    tm->rs = alloc_reals((W + 1) * B * dv, &failed);
    tm->tanh_cs = alloc_reals(rows * H, &failed);
    tm->us = alloc_reals(rows * tm->u_size, &failed);
    tm->betas = alloc_reals(rows, &failed);
    tm->targets = alloc_reals(rows * Nh * tm->target_size, &failed);
    tm->metas = alloc_reals(rows, &failed);
    tm->hr_selected = alloc_reals(rows * (H + dv), &failed);
    tm->y_selected = alloc_reals(rows * d_o, &failed);
    if (backward) {
        tm->m_checkpoints = alloc_reals(B * (size_t)tm->n_segments * tm->memory_size, &failed);
        tm->d_hr = alloc_reals(rows * (H + dv), &failed);
        tm->d_u = alloc_reals(rows * tm->u_size, &failed);
        tm->d_betas = alloc_reals(rows, &failed);
        tm->d_targets = alloc_reals(rows * Nh * tm->target_size, &failed);
        tm->d_gates = alloc_reals(rows * G4, &failed);
        tm->d_table = alloc_reals(V * G4, &failed);
    }
    tm->thread_scratch = alloc_reals((size_t)threads * tm->scratch_floats, &failed);
    if (failed) {
        TM(fwm__mnm_tm_free)(tm);
        return fwm__error(err, FWM_ERR_OUT_OF_MEMORY,
                          "MNM trainer model: out of memory for %zu lanes x %zu steps (memory of "
                          "%zu floats per lane)",
                          B, W, (size_t)(B ? tm->memory_size : 0));
    }
    *out = tm;
    return FWM_OK;
}

void TM(fwm__mnm_tm_reset_state)(TM(fwm__mnm_tm) *tm)
{
    size_t H = tm->hp.hidden_size, dv = tm->hp.value_length;
    for (size_t b = 0; b < (size_t)tm->config.lanes; b++) {
        real *s = tm->shell.state + b * tm->shell.state_size;
        memset(s, 0, (2 * H + dv) * sizeof(real));
        for (uint32_t l = 0; l < tm->hp.memory_layers; l++)
            memcpy(s + 2 * H + dv + tm->mem_offset[l], MP(tm, MT_MEM(l)),
                   tm->mem_rows[l] * tm->mem_cols[l] * sizeof(real));
    }
}

/* ---- the memory net -------------------------------------------------------------------------
 * acts[act_size] = [z^0 = key (d_k) | z^1 | ... | z^Lm (d_v)]: z^l = tanh(M^l z^(l-1)) for l < Lm,
 * the last layer linear. mnm_mem_forward_keys does n keys (keys + i * key_stride) into
 * acts + i * act_size, each row of M read once for all of them (the same sums as one at a time). */
static void mnm_mem_forward_keys(const TM(fwm__mnm_tm) *tm, const real *M, const real *keys,
                                 size_t key_stride, size_t n, real *acts)
{
    size_t Lm = tm->hp.memory_layers, A = tm->act_size, at = 0;
    for (size_t i = 0; i < n; i++)
        memcpy(acts + i * A, keys + i * key_stride, tm->mem_cols[0] * sizeof(real));
    for (size_t l = 0; l < Lm; l++) {
        size_t rows = tm->mem_rows[l], cols = tm->mem_cols[l];
        const real *Ml = M + tm->mem_offset[l];
        for (size_t j = 0; j < rows; j++) /* each row of M read once for all keys */
            dot_many(Ml + j * cols, acts + at, A, n, cols, acts + at + cols + j, A);
        if (l + 1 < Lm)
            for (size_t i = 0; i < n; i++)
                tanh_array(acts + i * A + at + cols, acts + i * A + at + cols, rows);
        at += cols;
    }
}


/* Offset of z^l (l = 0..Lm) within a key's activations. */
static size_t mnm_act_at(const TM(fwm__mnm_tm) *tm, size_t l)
{
    return l == 0 ? 0 : tm->mem_cols[0] + (l - 1) * tm->hp.memory_hidden;
}

/* The write (docs/MODEL.md, the MNM's step 5), in place on M: every write key through the
 * current M (their activations into zs[Nh][act_size]), then every layer's local step from those
 * activations.
 * u: the step's interaction vectors; targets: [Nh][target_size]. Forward and replay both call
 * this function, so the replayed memory has the forward pass's bits. */
static __attribute__((noinline)) void mnm_write(const TM(fwm__mnm_tm) *tm, real *M,
                                                const real *u, const real *targets, real beta,
                                                real *zs)
{
    size_t Nh = tm->hp.head_count, dk = tm->hp.key_length, A = tm->act_size,
           TS = tm->target_size, Lm = tm->hp.memory_layers;
    mnm_mem_forward_keys(tm, M, u + Nh * dk, dk, Nh, zs);
    size_t t_at = 0;
    for (size_t l = 0; l < Lm; l++) {
        size_t rows = tm->mem_rows[l], cols = tm->mem_cols[l];
        size_t in_at = mnm_act_at(tm, l), out_at = mnm_act_at(tm, l + 1);
        real scale = beta * (real)(2.0 / ((double)Nh * (double)rows));
        real *Ml = M + tm->mem_offset[l];
        real coef[FWM_MNM_MAX_HEADS];
        for (size_t j = 0; j < rows; j++) { /* row j takes every head's term, in head order */
            for (size_t i = 0; i < Nh; i++)
                coef[i] = -scale * (zs[i * A + out_at + j] - targets[i * TS + t_at + j]);
            axpy_many(Ml + j * cols, coef, 1, zs + in_at, A, Nh, cols);
        }
        t_at += rows;
    }
}

/* ---- stage 2: the recurrence, lanes [b0, b1) ------------------------------------------------ */
static void mnm_forward_worker(void *ctx_pointer, int index, int threads)
{
    TM(fwm__mnm_tm) *tm = ctx_pointer;
    const fwm_mnm_hparams *hp = &tm->hp;
    size_t B = (size_t)tm->config.lanes, H = hp->hidden_size, G4 = 4 * H, E = hp->embedding_length,
           dv = hp->value_length, dk = hp->key_length, Nh = hp->head_count, U = tm->u_size,
           A = tm->act_size, TS = tm->target_size, Mn = tm->memory_size;
    size_t seg = (size_t)tm->config.segment, nseg = (size_t)tm->n_segments;
    size_t b0, b1;
    fwm__pool_range(B, index, threads, &b0, &b1);
    if (b1 <= b0)
        return;
    size_t nb = b1 - b0;
    int training = !tm->config.forward_only;
    real *zs = tm->thread_scratch + (size_t)index * tm->scratch_floats; /* [Nh][A] */
    const real *W_ih = MP(tm, MT_W_IH), *W_hh = MP(tm, MT_W_HH), *W_u = MP(tm, MT_W_U),
               *b_u = MP(tm, MT_B_U), *w_beta = MP(tm, MT_W_BETA), *W_q = MP(tm, MT_W_Q),
               *b_q = MP(tm, MT_B_Q);
    real b_beta = MP(tm, MT_B_BETA)[0], forget_bias = (real)hp->forget_bias;
    uint32_t pad = hp->padding_token_id;
    for (size_t b = b0; b < b1; b++) { /* h, c, r before step 0 from the carried state */
        const real *s = tm->shell.state + b * tm->shell.state_size;
        memcpy(tm->hs + b * H, s, H * sizeof(real));
        memcpy(tm->cs + b * H, s + H, H * sizeof(real));
        memcpy(tm->rs + b * dv, s + 2 * H, dv * sizeof(real));
    }
    for (size_t t = 0; t < (size_t)tm->shell.len; t++) {
        size_t r0 = t * B + b0;
        real *g = tm->gates + r0 * G4;
        for (size_t b = b0; b < b1; b++)
            memcpy(tm->gates + (t * B + b) * G4, tm->input_table + (size_t)tm->shell.x[t * B + b] * G4,
                   G4 * sizeof(real));
        R_GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, (int)nb, (int)G4, (int)dv, (real)1,
               tm->rs + r0 * dv, (int)dv, W_ih + E, (int)(E + dv), (real)1, g, (int)G4);
        R_GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, (int)nb, (int)G4, (int)H, (real)1,
               tm->hs + r0 * H, (int)H, W_hh, (int)H, (real)1, g, (int)G4);
        for (size_t b = b0; b < b1; b++) {
            size_t row = t * B + b;
            lstm_cell_forward(tm->gates + row * G4, tm->cs + row * H, tm->cs + (row + B) * H,
                              tm->tanh_cs + row * H, tm->hs + (row + B) * H, H, forget_bias);
        }
        real *u = tm->us + r0 * U;
        for (size_t b = 0; b < nb; b++)
            memcpy(u + b * U, b_u, U * sizeof(real));
        R_GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, (int)nb, (int)U, (int)H, (real)1,
               tm->hs + (r0 + B) * H, (int)H, W_u, (int)H, (real)1, u, (int)U);
        tanh_array(u, u, nb * U);
        for (size_t b = b0; b < b1; b++) {
            size_t row = t * B + b;
            const real *ur = tm->us + row * U, *vw = ur + 2 * Nh * dk, *bp = vw + Nh * dv;
            real beta = sigmoid(dot(w_beta, bp, dk) + b_beta);
            tm->betas[row] = beta;
            real *tg = tm->targets + row * Nh * TS;
            for (size_t i = 0; i < Nh; i++) {
                real *o = tg + i * TS;
                for (size_t j = 0; j < TS; j++)
                    o[j] = dot(W_q + j * dv, vw + i * dv, dv) + b_q[j];
            }
            real *M = tm->shell.state + b * tm->shell.state_size + 2 * H + dv;
            if (training && t % seg == 0)
                memcpy(tm->m_checkpoints + (b * nseg + t / seg) * Mn, M, Mn * sizeof(real));
            mnm_write(tm, M, ur, tg, beta, zs);
            real *r = tm->rs + (row + B) * dv;
            memset(r, 0, dv * sizeof(real));
            mnm_mem_forward_keys(tm, M, ur, dk, Nh, zs); /* the read keys */
            for (size_t i = 0; i < Nh; i++)
                axpy(r, (real)1 / (real)Nh, zs + i * A + A - dv, dv);
            tm->metas[row] = 0;
            if (training && tm->shell.x[row] != pad) {
                double m = 0;
                mnm_mem_forward_keys(tm, M, ur + Nh * dk, dk, Nh, zs); /* the write keys */
                for (size_t i = 0; i < Nh; i++) {
                    const real *f = zs + i * A + A - dv, *v = vw + i * dv;
                    for (size_t j = 0; j < dv; j++) {
                        double d = (double)f[j] - (double)v[j];
                        m += d * d;
                    }
                }
                tm->metas[row] = (real)(m / ((double)Nh * (double)dv));
            }
        }
    }
    for (size_t b = b0; b < b1; b++) { /* carry h, c, r (M was updated in place) */
        size_t last = (size_t)tm->shell.len * B + b;
        real *s = tm->shell.state + b * tm->shell.state_size;
        memcpy(s, tm->hs + last * H, H * sizeof(real));
        memcpy(s + H, tm->cs + last * H, H * sizeof(real));
        memcpy(s + 2 * H, tm->rs + last * dv, dv * sizeof(real));
    }
}

static void mnm_loss_worker(void *ctx_pointer, int index, int threads)
{
    TM(fwm__mnm_tm) *tm = ctx_pointer;
    size_t V = tm->hp.vocab_size, i0, i1;
    fwm__pool_range((size_t)tm->shell.n_loss_rows, index, threads, &i0, &i1);
    for (size_t i = i0; i < i1; i++)
        tm->shell.row_loss[i] = softmax_ce_forward(tm->shell.probs + i * V, V, tm->shell.y[tm->shell.loss_rows[i]]);
}

double TM(fwm__mnm_tm_forward)(TM(fwm__mnm_tm) *tm, const uint32_t *x, const uint32_t *y, int len)
{
    const fwm_mnm_hparams *hp = &tm->hp;
    size_t B = (size_t)tm->config.lanes, V = hp->vocab_size, E = hp->embedding_length,
           H = hp->hidden_size, dv = hp->value_length, d_o = hp->output_length, G4 = 4 * H,
           Lm = hp->memory_layers;
    tm->shell.len = len;
    tm->shell.n_loss_rows = 0;
    tm->n_meta_rows = 0;
    for (size_t t = 0; t < (size_t)len; t++)
        for (size_t b = 0; b < B; b++) {
            size_t row = t * B + b;
            uint32_t xi = x[b * (size_t)len + t], yi = y[b * (size_t)len + t];
            tm->shell.x[row] = xi;
            tm->shell.y[row] = yi;
            if (fwm__is_loss_position(tm->config.loss_mode, tm->config.loss_token_id,
                                      hp->padding_token_id, xi, yi))
                tm->shell.loss_rows[tm->shell.n_loss_rows++] = (int)row;
            if (xi != hp->padding_token_id && !tm->config.forward_only)
                tm->n_meta_rows++;
        }

    par_gemm(tm->shell.pool, 0, 1, V, G4, E, 1, MP(tm, MT_EMB), E, MP(tm, MT_W_IH), E + dv, 1,
             tm->input_table, G4, MP(tm, MT_BIAS));
    fwm__pool_run(tm->shell.pool, mnm_forward_worker, tm);

    double meta = 0;
    for (size_t row = 0; row < (size_t)len * B; row++)
        meta += (double)tm->metas[row];
    tm->meta_sum = meta;
    tm->meta = tm->n_meta_rows > 0 ? meta / (double)tm->n_meta_rows : 0;
    tm->shell.loss = 0;
    tm->shell.loss_sum = 0;
    size_t n_loss = (size_t)tm->shell.n_loss_rows;
    if (n_loss > 0) {
        size_t HR = H + dv;
        for (size_t i = 0; i < n_loss; i++) {
            size_t row = (size_t)tm->shell.loss_rows[i];
            memcpy(tm->hr_selected + i * HR, tm->hs + (row + B) * H, H * sizeof(real));
            memcpy(tm->hr_selected + i * HR + H, tm->rs + (row + B) * dv, dv * sizeof(real));
        }
        par_gemm(tm->shell.pool, 0, 1, n_loss, d_o, HR, 1, tm->hr_selected, HR, MP(tm, MT_W_O(Lm)),
                 HR, 1, tm->y_selected, d_o, MP(tm, MT_B_O(Lm)));
        par_gemm(tm->shell.pool, 0, 1, n_loss, V, d_o, 1, tm->y_selected, d_o, MP(tm, MT_W_S(Lm)),
                 d_o, 1, tm->shell.probs, V, MP(tm, MT_B_S(Lm)));
        if (tm->shell.logits)
            memcpy(tm->shell.logits, tm->shell.probs, n_loss * V * sizeof(real));
        fwm__pool_run(tm->shell.pool, mnm_loss_worker, tm);
        double sum = 0;
        for (size_t i = 0; i < n_loss; i++)
            sum += tm->shell.row_loss[i];
        tm->shell.loss_sum = sum;
        tm->shell.loss = sum / (double)n_loss;
    }
    tm->objective = tm->shell.loss + tm->config.meta_weight * tm->meta;
    return tm->shell.loss;
}
