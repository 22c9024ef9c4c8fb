/* lstm_backward_impl.h - the LSTM baseline's backward pass over the window of the last forward
 * call, template over `real` (see real_template.h); included by lstm_f32.c and lstm_f64.c only.
 *
 * The layers in reverse: the gradient of a layer's output y_l goes through its recurrence (per
 * lane over time, lanes split across threads, as the FWM's LSTM) to its gate pre-activations;
 * from those come W_hh's gradient (times its DropConnect mask), W_ih's and b's, and the gradient
 * of the layer's input, which (times the layer mask, plus the residual's share) is the gradient of
 * the layer below's output. Layer 0's input gradient goes to the embedding rows (through the input
 * table, or row by row with the masks). Parameter gradients come only from batched matrix
 * products and fixed-order column sums, so results do not depend on thread timing. The dropout
 * masks are those of the forward pass.
 */

static void lstm_layer_backward_worker(void *ctx_pointer, int index, int threads)
{
    TM(lstm_layer_ctx) *ctx = ctx_pointer;
    TM(fwm__lstm_tm) *tm = ctx->tm;
    size_t l = ctx->layer, B = (size_t)tm->config.lanes, H = tm->hp.hidden_size, G4 = 4 * H;
    size_t W = (size_t)tm->config.window, rows_all = W * B;
    size_t b0, b1;
    fwm__pool_range(B, index, threads, &b0, &b1);
    if (b1 <= b0)
        return;
    size_t nb = b1 - b0;
    real *scratch = tm->thread_scratch + (size_t)index * tm->scratch_floats;
    real *dh_carry = scratch;         /* [nb, H]: gradient of h_t through step t+1 */
    real *dc_carry = scratch + B * H; /* [nb, H] */
    real *dh = dc_carry + B * H;      /* [H] */
    const real *W_hh = lstm_w_hh(tm, l);
    const real *gates = tm->gates + l * rows_all * G4;
    const real *cs = tm->cs + l * (W + 1) * B * H, *tanh_cs = tm->tanh_cs + l * rows_all * H;
    memset(dh_carry, 0, nb * H * sizeof(real));
    memset(dc_carry, 0, nb * H * sizeof(real));
    for (size_t t = (size_t)tm->shell.len; t-- > 0;) {
        for (size_t b = b0; b < b1; b++) {
            size_t row = t * B + b;
            const real *dh_out = tm->d_y + row * H, *carry = dh_carry + (b - b0) * H;
            for (size_t j = 0; j < H; j++)
                dh[j] = dh_out[j] + carry[j];
            lstm_cell_backward(gates + row * G4, cs + row * H, tanh_cs + row * H, dh,
                               dc_carry + (b - b0) * H, tm->d_gates + row * G4, H);
        }
        if (t > 0) /* gradient of h_{t-1} through W_hh */
            R_GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)nb, (int)H, (int)G4, (real)1,
                   tm->d_gates + (t * B + b0) * G4, (int)G4, W_hh, (int)H, (real)0, dh_carry,
                   (int)H);
    }
}

typedef struct TM(lstm_ce_ctx) {
    TM(fwm__lstm_tm) *tm;
    real scale;
} TM(lstm_ce_ctx);

static void lstm_ce_backward_worker(void *ctx_pointer, int index, int threads)
{
    TM(lstm_ce_ctx) *ctx = ctx_pointer;
    TM(fwm__lstm_tm) *tm = ctx->tm;
    size_t V = tm->hp.vocab_size, i0, i1;
    fwm__pool_range((size_t)tm->shell.n_loss_rows, index, threads, &i0, &i1);
    for (size_t i = i0; i < i1; i++)
        softmax_ce_backward(tm->shell.probs + i * V, V, tm->shell.y[tm->shell.loss_rows[i]], ctx->scale);
}

void TM(fwm__lstm_tm_backward)(TM(fwm__lstm_tm) *tm)
{
    const fwm_lstm_hparams *hp = &tm->hp;
    size_t B = (size_t)tm->config.lanes, V = hp->vocab_size, E = hp->embedding_length,
           H = hp->hidden_size, L = hp->layer_count, G4 = 4 * H;
    size_t W = (size_t)tm->config.window, rows_all = W * B;
    size_t rows = (size_t)tm->shell.len * B, n_loss = (size_t)tm->shell.n_loss_rows;
    fwm__pool *pool = tm->shell.pool;
    if (n_loss == 0 || !tm->shell.grads)
        return;

    /* logits = W_s y + b_s on the loss rows */
    double denominator = tm->shell.loss_denominator > 0 ? (double)tm->shell.loss_denominator : (double)n_loss;
    TM(lstm_ce_ctx) cctx = {tm, (real)(1.0 / denominator)};
    fwm__pool_run(pool, lstm_ce_backward_worker, &cctx);
    real *d_logits = tm->shell.probs;
    int tied = tm->config.tie_embeddings; /* W_s is Emb: its gradient is Emb's */
    par_gemm(pool, 1, 0, V, H, n_loss, 1, d_logits, V, tm->y_selected, H, 1,
             tied ? LG(tm, LT_EMB) : LG(tm, LT_OUT_W(L)), H, NULL);
    par_colsum(pool, d_logits, n_loss, V, V, LG(tm, LT_OUT_B(L)), NULL);
    real *d_y_selected = tm->y_selected; /* no longer needed */
    par_gemm(pool, 0, 0, n_loss, H, V, 1, d_logits, V,
             tied ? LP(tm, LT_EMB) : LP(tm, LT_OUT_W(L)), H, 0, d_y_selected, H, NULL);
    memset(tm->d_y, 0, rows * H * sizeof(real));
    for (size_t i = 0; i < n_loss; i++)
        memcpy(tm->d_y + (size_t)tm->shell.loss_rows[i] * H, d_y_selected + i * H, H * sizeof(real));

    for (size_t l = L; l-- > 0;) {
        /* tm->d_y: gradient of y_l, which is h_l's (and, with the residual, in_l's too) */
        TM(lstm_layer_ctx) ctx = {tm, l, tm->shell.len};
        fwm__pool_run(pool, lstm_layer_backward_worker, &ctx);
        const real *h_prev = tm->hs + l * (W + 1) * B * H; /* h_{t-1} of rows t*B + b */
        if (tm->d_w) {
            par_gemm(pool, 1, 0, G4, H, rows, 1, tm->d_gates, G4, h_prev, H, 0, tm->d_w, H,
                     NULL);
            const real *m = tm->mask_hh + l * G4 * H;
            real *g = LG(tm, LT_W_HH(l));
            for (size_t i = 0; i < G4 * H; i++)
                g[i] += tm->d_w[i] * m[i];
        } else {
            par_gemm(pool, 1, 0, G4, H, rows, 1, tm->d_gates, G4, h_prev, H, 1,
                     LG(tm, LT_W_HH(l)), H, NULL);
        }
        if (l == 0 && tm->use_table) {
            const real *emb = tm->emb_dropped ? tm->emb_dropped : LP(tm, LT_EMB);
            memset(tm->d_table, 0, V * G4 * sizeof(real));
            par_colsum(pool, tm->d_gates, rows, G4, G4, tm->d_table, tm->shell.x);
            par_colsum(pool, tm->d_table, V, G4, G4, LG(tm, LT_BIAS(0)), NULL);
            par_gemm(pool, 1, 0, G4, E, V, 1, tm->d_table, G4, emb, E, 1,
                     LG(tm, LT_W_IH(0)), E, NULL);
            if (tm->mask_token) {
                par_gemm(pool, 0, 0, V, E, G4, 1, tm->d_table, G4, LP(tm, LT_W_IH(0)), E, 0,
                         tm->d_in, E, NULL);
                real *g = LG(tm, LT_EMB);
                for (size_t v = 0; v < V; v++)
                    for (size_t j = 0; j < E; j++)
                        g[v * E + j] += tm->mask_token[v] * tm->d_in[v * E + j];
            } else {
                par_gemm(pool, 0, 0, V, E, G4, 1, tm->d_table, G4, LP(tm, LT_W_IH(0)), E, 1,
                         LG(tm, LT_EMB), E, NULL);
            }
            break;
        }
        size_t in_dim = l == 0 ? E : H;
        const real *in = l == 0 ? tm->in0 : tm->ins + (l - 1) * rows_all * H;
        par_colsum(pool, tm->d_gates, rows, G4, G4, LG(tm, LT_BIAS(l)), NULL);
        par_gemm(pool, 1, 0, G4, in_dim, rows, 1, tm->d_gates, G4, in, in_dim, 1,
                 LG(tm, LT_W_IH(l)), in_dim, NULL);
        par_gemm(pool, 0, 0, rows, in_dim, G4, 1, tm->d_gates, G4, LP(tm, LT_W_IH(l)), in_dim,
                 0, tm->d_in, in_dim, NULL);
        if (l == 0) { /* in0 = Emb[x] * token mask[x] * embedding mask[lane] */
            for (size_t row = 0; row < rows; row++) {
                real *d = tm->d_in + row * E;
                const real *m = tm->mask_embedding + (row % B) * E;
                real mt = tm->mask_token ? tm->mask_token[tm->shell.x[row]] : (real)1;
                for (size_t j = 0; j < E; j++)
                    d[j] *= m[j] * mt;
            }
            par_colsum(pool, tm->d_in, rows, E, E, LG(tm, LT_EMB), tm->shell.x);
            break;
        }
        /* in_l = mask (x) y_{l-1}; y_l = h_l + in_l with the residual */
        const real *mask = tm->mask_layer ? tm->mask_layer + (l - 1) * B * H : NULL;
        int add = hp->residual && l >= 1;
        for (size_t row = 0; row < rows; row++) {
            real *dy = tm->d_y + row * H;
            const real *di = tm->d_in + row * H;
            const real *mr = mask ? mask + (row % B) * H : NULL;
            for (size_t j = 0; j < H; j++) {
                real g = add ? di[j] + dy[j] : di[j];
                dy[j] = mr ? g * mr[j] : g;
            }
        }
    }
}
