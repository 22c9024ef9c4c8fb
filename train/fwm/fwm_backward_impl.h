/* fwm_backward_impl.h - the backward pass over the window of the last forward call, template
 * over `real` (see real_template.h); included by fwm_f32.c and fwm_f64.c only.
 *
 * Stages in reverse order of fwm_forward_impl.h. The memory's backward pass needs F before and
 * after every step: the forward pass kept F every `segment` steps, and each segment is replayed
 * (write_apply with the stored v_old and norm, bit-identical to the forward pass) into per-thread
 * scratch before it is walked backwards. Parameter gradients come only from batched matrix
 * products and fixed-order column sums, so results do not depend on thread timing.
 */

/* ---- stage 4 backward: the memory, lanes [b0, b1) ------------------------------------------- */
static void memory_backward_worker(void *ctx_pointer, int index, int threads)
{
    TM(fwm__tm) *tm = ctx_pointer;
    const fwm_hparams *hp = &tm->hp;
    size_t B = (size_t)tm->config.lanes;
    size_t S = hp->memory_s, R = hp->memory_r, T = hp->memory_t, Nr = hp->read_count;
    size_t SR = S * R, M = tm->memory_size, wd = S + R + T + 1, rd = S + Nr * R,
           qd = S + Nr * T;
    size_t seg = (size_t)tm->config.segment, nseg = (size_t)tm->n_segments;
    size_t len = (size_t)tm->shell.len;
    real ws = (real)hp->write_scale;
    size_t b0, b1;
    fwm__pool_range(B, index, threads, &b0, &b1);
    real *scratch = tm->thread_scratch + (size_t)index * tm->scratch_floats;
    real *Fs = scratch;                  /* [seg + 1][M]: F before and after each step */
    real *d_F = Fs + (seg + 1) * M;      /* [M] */
    real *K = d_F + M, *d = K + SR;      /* replay */
    real *wscratch = d + SR;             /* 2*SR + T for write_backward */
    size_t big = S > T ? S : T;
    real *dq_a = wscratch + 2 * SR + T, *dq_b = dq_a + big;
    for (size_t b = b0; b < b1; b++) {
        memset(d_F, 0, M * sizeof(real));
        const real *ck = tm->f_checkpoints + b * nseg * M;
        for (size_t sg = (len + seg - 1) / seg; sg-- > 0;) {
            size_t t0 = sg * seg, t1 = t0 + seg < len ? t0 + seg : len;
            memcpy(Fs, ck + sg * M, M * sizeof(real));
            for (size_t t = t0; t < t1; t++) { /* replay the writes */
                size_t row = t * B + b;
                const real *wa = tm->write_act + row * wd;
                outer_key(wa, wa + S, K, S, R);
                write_delta(wa + S + R, tm->v_old + row * T, wa[S + R + T], ws, d, T);
                write_replay(Fs + (t - t0 + 1) * M, Fs + (t - t0) * M, K, d, tm->norms[row],
                             SR, T);
            }
            for (size_t t = t1; t-- > t0;) {
                size_t row = t * B + b;
                const real *F_prev = Fs + (t - t0) * M, *F_next = F_prev + M;
                real *dr = tm->d_read + row * rd;
                memset(dr, 0, rd * sizeof(real));
                real next_dot = NAN; /* <F_next, d_F>, when the last read's pass gives it */
                if (tm->read_mask[row]) {
                    const real *ra = tm->read_act + row * rd, *q = tm->qs + row * qd;
                    real *dq_out = dq_a, *dq_in = dq_b;
                    memcpy(dq_out, tm->d_q + row * T, T * sizeof(real));
                    for (size_t i = Nr; i-- > 0;) {
                        const real *q_in = i == 0 ? q : q + S + (i - 1) * T;
                        size_t n_in = i == 0 ? S : T;
                        memset(dq_in, 0, n_in * sizeof(real));
                        int want_dot = i == 0 && tm->norms[row] > (real)1;
                        real dot = read_backward(F_next, q_in, ra + S + i * R, q + S + i * T,
                                                 tm->rstds[row * Nr + i], dq_out, dq_in,
                                                 dr + S + i * R, d_F, S, R, T, want_dot,
                                                 wscratch);
                        if (want_dot)
                            next_dot = dot;
                        real *swap = dq_out;
                        dq_out = dq_in;
                        dq_in = swap;
                    }
                    memcpy(dr, dq_out, S * sizeof(real)); /* q0 is used as is */
                    for (size_t j = S; j < rd; j++)
                        dr[j] *= (real)1 - ra[j] * ra[j];
                }
                real *dw = tm->d_write + row * wd;
                write_backward(F_prev, F_next, d_F, tm->write_act + row * wd,
                               tm->v_old + row * T, tm->norms[row], ws, next_dot, dw,
                               wscratch, S, R, T);
                write_act_backward(tm->write_act + row * wd, dw, S, R, T);
            }
        }
    }
}

/* ---- stage 2 backward: an LSTM layer, lanes [b0, b1) ---------------------------------------- */
typedef struct TM(lstm_back_ctx) {
    TM(fwm__tm) *tm;
    TM(layer_ref) layer; /* its d_h: the gradient of its h_t from above */
} TM(lstm_back_ctx);

static void lstm_backward_worker(void *ctx_pointer, int index, int threads)
{
    TM(lstm_back_ctx) *ctx = ctx_pointer;
    TM(fwm__tm) *tm = ctx->tm;
    const TM(layer_ref) *ly = &ctx->layer;
    size_t B = (size_t)tm->config.lanes, H = tm->hp.hidden_size, G4 = 4 * H;
    size_t b0, b1;
    fwm__pool_range(B, index, threads, &b0, &b1);
    if (b1 <= b0)
        return;
    size_t nb = b1 - b0;
    real *scratch = tm->thread_scratch + (size_t)index * tm->scratch_floats;
    real *dh_carry = scratch;      /* [nb, H]: gradient of h_t through step t+1 */
    real *dc_carry = scratch + B * H; /* [nb, H] */
    real *dh = dc_carry + B * H;   /* [H] */
    const real *W_hh = ly->W_hh;
    memset(dh_carry, 0, nb * H * sizeof(real));
    memset(dc_carry, 0, nb * H * sizeof(real));
    for (size_t t = (size_t)tm->shell.len; t-- > 0;) {
        for (size_t b = b0; b < b1; b++) {
            size_t row = t * B + b;
            const real *dh_out = ly->d_h + row * H, *carry = dh_carry + (b - b0) * H;
            for (size_t j = 0; j < H; j++)
                dh[j] = dh_out[j] + carry[j];
            lstm_cell_backward(ly->gates + row * G4, ly->cs + row * H, ly->tanh_cs + row * H,
                               dh, dc_carry + (b - b0) * H, tm->d_gates + row * G4, H);
        }
        if (t > 0) /* gradient of h_{t-1} through W_hh */
            R_GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)nb, (int)H, (int)G4, (real)1,
                   tm->d_gates + (t * B + b0) * G4, (int)G4, W_hh, (int)H, (real)0, dh_carry,
                   (int)H);
    }
}

typedef struct TM(ce_back_ctx) {
    TM(fwm__tm) *tm;
    real scale;
} TM(ce_back_ctx);

static void ce_backward_worker(void *ctx_pointer, int index, int threads)
{
    TM(ce_back_ctx) *ctx = ctx_pointer;
    TM(fwm__tm) *tm = ctx->tm;
    size_t V = tm->hp.vocab_size, i0, i1;
    fwm__pool_range((size_t)tm->shell.n_loss_rows, index, threads, &i0, &i1);
    for (size_t i = i0; i < i1; i++)
        softmax_ce_backward(tm->shell.probs + i * V, V, tm->shell.y[tm->shell.loss_rows[i]], ctx->scale);
}

void TM(fwm__tm_backward)(TM(fwm__tm) *tm)
{
    const fwm_hparams *hp = &tm->hp;
    size_t B = (size_t)tm->config.lanes, V = hp->vocab_size, E = hp->embedding_length,
           H = hp->hidden_size, G4 = 4 * H;
    size_t S = hp->memory_s, R = hp->memory_r, T = hp->memory_t, Nr = hp->read_count;
    size_t wd = S + R + T + 1, rd = S + Nr * R, qd = S + Nr * T;
    size_t rows = (size_t)tm->shell.len * B, n_loss = (size_t)tm->shell.n_loss_rows;
    const real *h_seq = tm->hs + B * H;
    fwm__pool *pool = tm->shell.pool;
    if (n_loss == 0 || !tm->shell.grads)
        return;

    /* 5. logits = W_s y on the loss rows */
    double denominator = tm->shell.loss_denominator > 0 ? (double)tm->shell.loss_denominator : (double)n_loss;
    TM(ce_back_ctx) cctx = {tm, (real)(1.0 / denominator)};
    fwm__pool_run(pool, ce_backward_worker, &cctx);
    real *d_logits = tm->shell.probs;
    int tied = tm->config.tie_embeddings; /* W_s is Emb: its gradient is Emb's */
    par_gemm(pool, 1, 0, V, H, n_loss, 1, d_logits, V, tm->y_selected, H, 1,
             tied ? TM_G(tm, token_embd) : TM_G(tm, output_weight), H, NULL);
    real *d_y_selected = tm->y_selected; /* y_selected is no longer needed */
    par_gemm(pool, 0, 0, n_loss, H, V, 1, d_logits, V,
             tied ? TM_P(tm, token_embd) : TM_P(tm, output_weight), H, 0, d_y_selected, H,
             NULL);
    memset(tm->d_y, 0, rows * H * sizeof(real));
    for (size_t i = 0; i < n_loss; i++)
        memcpy(tm->d_y + (size_t)tm->shell.loss_rows[i] * H, d_y_selected + i * H, H * sizeof(real));
    /* y = m (+ h): h's share is added to d_h below; m = W_o q + b_o only on read rows */
    if (hp->residual)
        memcpy(tm->d_h, tm->d_y, rows * H * sizeof(real));
    for (size_t row = 0; row < rows; row++)
        if (!tm->read_mask[row])
            memset(tm->d_y + row * H, 0, H * sizeof(real));
    real *d_m = tm->d_y;
    par_colsum(pool, d_m, rows, H, H, TM_G(tm, out_bias), NULL);
    par_gemm(pool, 1, 0, H, T, rows, 1, d_m, H, tm->qs + S + (Nr - 1) * T, qd, 1,
             TM_G(tm, out_weight), T, NULL);
    par_gemm(pool, 0, 0, rows, T, H, 1, d_m, H, TM_P(tm, out_weight), T, 0, tm->d_q, T, NULL);

    /* 4. memory -> gradients of the write and read pre-activations */
    fwm__pool_run(pool, memory_backward_worker, tm);

    /* 3. projections */
    par_colsum(pool, tm->d_write, rows, wd, wd, TM_G(tm, write_bias), NULL);
    par_gemm(pool, 1, 0, wd, H, rows, 1, tm->d_write, wd, h_seq, H, 1, TM_G(tm, write_weight),
             H, NULL);
    par_colsum(pool, tm->d_read, rows, rd, rd, TM_G(tm, read_bias), NULL);
    par_gemm(pool, 1, 0, rd, H, rows, 1, tm->d_read, rd, h_seq, H, 1, TM_G(tm, read_weight), H,
             NULL);
    par_gemm(pool, 0, 0, rows, H, wd, 1, tm->d_write, wd, TM_P(tm, write_weight), H,
             hp->residual ? 1 : 0, tm->d_h, H, NULL);
    par_gemm(pool, 0, 0, rows, H, rd, 1, tm->d_read, rd, TM_P(tm, read_weight), H, 1, tm->d_h,
             H, NULL);

    /* 2. LSTM; then, top down, a stacked FWM's lower layers: each layer's input product
     * W_ih in_t + b gives its W_ih and b their gradients and the layer below its d_h (through
     * the layer mask when there is one) */
    TM(lstm_back_ctx) lctx = {tm, layer_of(tm, tm->lower)};
    size_t W = (size_t)tm->config.window, rows_all = W * B;
    for (size_t l = tm->lower + 1; l-- > 0;) {
        lctx.layer = layer_of(tm, l);
        fwm__pool_run(pool, lstm_backward_worker, &lctx);
        int own = l == tm->lower;
        real *g_hh = own ? TM_G(tm, lstm_weight_hh) : TM_GL(tm, l, FWM_BLOCK_weight_hh);
        if (tm->mask_hh) { /* DropConnect: the gradient of W_hh is that of W_hh (x) mask, masked */
            par_gemm(pool, 1, 0, G4, H, rows, 1, tm->d_gates, G4, lctx.layer.hs, H, 0,
                     tm->d_w, H, NULL);
            const real *m = tm->mask_hh + l * G4 * H;
            for (size_t i = 0; i < G4 * H; i++)
                g_hh[i] += tm->d_w[i] * m[i];
        } else {
            par_gemm(pool, 1, 0, G4, H, rows, 1, tm->d_gates, G4, lctx.layer.hs, H, 1, g_hh, H,
                     NULL);
        }
        if (l == 0)
            break; /* the layer that reads the embedding: stage 1 below */
        const real *in = tm->mask_layer ? tm->ins + (l - 1) * rows_all * H
                                        : layer_of(tm, l - 1).hs + B * H; /* its input rows */
        par_colsum(pool, tm->d_gates, rows, G4, G4,
                   own ? TM_G(tm, lstm_bias) : TM_GL(tm, l, FWM_BLOCK_bias), NULL);
        par_gemm(pool, 1, 0, G4, H, rows, 1, tm->d_gates, G4, in, H, 1,
                 own ? TM_G(tm, lstm_weight_ih) : TM_GL(tm, l, FWM_BLOCK_weight_ih), H, NULL);
        par_gemm(pool, 0, 0, rows, H, G4, 1, tm->d_gates, G4,
                 own ? TM_P(tm, lstm_weight_ih) : TM_PL(tm, l, FWM_BLOCK_weight_ih), H, 0,
                 tm->d_lower, H, NULL);
        if (tm->mask_layer) {
            const real *mask = tm->mask_layer + (l - 1) * B * H;
            for (size_t row = 0; row < rows; row++)
                for (size_t j = 0; j < H; j++)
                    tm->d_lower[row * H + j] *= mask[(row % B) * H + j];
        }
    }

    /* 1. the layer that reads the embedding: G = Emb' W_ih^T + b (Emb' = Emb (x) token mask), or
     * with embedding dropout its input rows Emb'[x] (x) mask */
    real *g_w_in = tm->lower ? TM_GL(tm, 0, FWM_BLOCK_weight_ih) : TM_G(tm, lstm_weight_ih);
    real *g_b_in = tm->lower ? TM_GL(tm, 0, FWM_BLOCK_bias) : TM_G(tm, lstm_bias);
    const real *w_in = tm->lower ? TM_PL(tm, 0, FWM_BLOCK_weight_ih) : TM_P(tm, lstm_weight_ih);
    real *g_emb = TM_G(tm, token_embd);
    if (tm->use_table) {
        const real *emb = tm->emb_dropped ? tm->emb_dropped : TM_P(tm, token_embd);
        memset(tm->d_input_table, 0, V * G4 * sizeof(real));
        par_colsum(pool, tm->d_gates, rows, G4, G4, tm->d_input_table, tm->shell.x);
        par_colsum(pool, tm->d_input_table, V, G4, G4, g_b_in, NULL);
        par_gemm(pool, 1, 0, G4, E, V, 1, tm->d_input_table, G4, emb, E, 1, g_w_in, E, NULL);
        if (!tm->mask_token) {
            par_gemm(pool, 0, 0, V, E, G4, 1, tm->d_input_table, G4, w_in, E, 1, g_emb, E,
                     NULL);
        } else {
            par_gemm(pool, 0, 0, V, E, G4, 1, tm->d_input_table, G4, w_in, E, 0, tm->d_emb, E,
                     NULL);
            for (size_t v = 0; v < V; v++)
                for (size_t j = 0; j < E; j++)
                    g_emb[v * E + j] += tm->d_emb[v * E + j] * tm->mask_token[v];
        }
    } else {
        par_colsum(pool, tm->d_gates, rows, G4, G4, g_b_in, NULL);
        par_gemm(pool, 1, 0, G4, E, rows, 1, tm->d_gates, G4, tm->in0, E, 1, g_w_in, E, NULL);
        par_gemm(pool, 0, 0, rows, E, G4, 1, tm->d_gates, G4, w_in, E, 0, tm->d_emb, E, NULL);
        for (size_t row = 0; row < rows; row++) { /* in row order: the same sums every run */
            size_t v = tm->shell.x[row];
            const real *m = tm->mask_embedding + (row % B) * E;
            real token = tm->mask_token ? tm->mask_token[v] : (real)1;
            for (size_t j = 0; j < E; j++)
                g_emb[v * E + j] += tm->d_emb[row * E + j] * m[j] * token;
        }
    }
}
