/* lstm_forward_impl.h - creation of the LSTM baseline's trainer model, its dropout masks and its
 * forward pass over one window, template over `real` (see real_template.h); included by
 * lstm_f32.c and lstm_f64.c only.
 *
 * A window of B lanes x len steps runs layer by layer (a layer's whole sequence before the next
 * one's), each layer in two stages:
 *   1. the input projection of all B*len rows as one product, split by rows over the threads:
 *      layer 0 through the input table G = Emb' W_ih^T + b ([V, 4H], Emb' = Emb with the token
 *      mask) when there is no embedding-element dropout, else from its input rows; layers l >= 1
 *      from the rows of their input;
 *   2. the recurrence over time, lanes split across threads (a fixed partition), W_hh h as one
 *      [lanes, H] x [H, 4H] product per step, then the cell (shared_kernels_impl.h).
 * Then the input of the next layer (y = h (+ input), times the layer mask), and at the end the
 * logits W_s y + b_s of the loss rows and their softmax cross entropy.
 */

/* Tensors in fwm__lstm_tensor_at order. */
#define LT_EMB 0
#define LT_W_IH(l) (1 + 3 * (size_t)(l))
#define LT_W_HH(l) (2 + 3 * (size_t)(l))
#define LT_BIAS(l) (3 + 3 * (size_t)(l))
#define LT_OUT_W(L) (1 + 3 * (size_t)(L))
#define LT_OUT_B(L) (2 + 3 * (size_t)(L))
#define LP(tm, k) ((tm)->shell.params + (tm)->layout.offset[k])
#define LG(tm, k) ((tm)->shell.grads + (tm)->layout.offset[k])

void TM(fwm__lstm_tm_free)(TM(fwm__lstm_tm) *tm)
{
    if (!tm)
        return;
    real *buffers[] = {tm->input_table, tm->emb_dropped, tm->in0, tm->ins, tm->gates, tm->hs,
                       tm->cs, tm->tanh_cs, tm->y_selected, tm->mask_token, tm->mask_embedding,
                       tm->mask_layer, tm->mask_hh, tm->w_hh_dropped, tm->d_gates, tm->d_y,
                       tm->d_in, tm->d_table, tm->d_w, tm->thread_scratch};
    for (size_t i = 0; i < sizeof buffers / sizeof buffers[0]; i++)
        free(buffers[i]);
    TM(fwm__tm_shell_free)(&tm->shell);
    free(tm);
}

static int dropout_ok(float p)
{
    return p >= 0 && p < 1; /* also false for NaN */
}

fwm_status TM(fwm__lstm_tm_create)(const fwm__lstm_config *config, fwm__pool *pool,
                                   TM(fwm__lstm_tm) **out, fwm_error *err)
{
    *out = NULL;
    const fwm_lstm_hparams *hp = &config->hp;
    if (hp->vocab_size < 1 || hp->embedding_length < 1 || hp->hidden_size < 1 ||
        hp->layer_count < 1 || hp->layer_count > FWM_LSTM_MAX_LAYERS)
        return fwm__error(err, FWM_ERR_INVALID_ARGUMENT,
                          "every LSTM size must be >= 1 and the layers at most %u (got V=%u E=%u "
                          "H=%u L=%u)",
                          FWM_LSTM_MAX_LAYERS, hp->vocab_size, hp->embedding_length,
                          hp->hidden_size, hp->layer_count);
    if (config->lanes < 1 || config->window < 1)
        return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "lanes (%d) and window (%d) must be >= 1",
                          config->lanes, config->window);
    if (config->tie_embeddings && hp->embedding_length != hp->hidden_size)
        return fwm__error(err, FWM_ERR_INVALID_ARGUMENT,
                          "tied embeddings need the output width H = %u to equal E = %u",
                          hp->hidden_size, hp->embedding_length);
    const fwm__dropout *dp = &config->dropout;
    if (!dropout_ok(dp->token) || !dropout_ok(dp->embedding) ||
        !dropout_ok(dp->recurrent) || !dropout_ok(dp->layer))
        return fwm__error(err, FWM_ERR_INVALID_ARGUMENT,
                          "dropout probabilities must be in [0, 1) (token %g, embedding %g, "
                          "recurrent %g, layer %g)",
                          (double)dp->token, (double)dp->embedding, (double)dp->recurrent,
                          (double)dp->layer);
    TM(fwm__lstm_tm) *tm = calloc(1, sizeof *tm);
    if (!tm)
        return fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "LSTM trainer model: out of memory");
    tm->config = *config;
    tm->hp = *hp;
    fwm__model_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.arch = FWM_ARCH_LSTM;
    spec.lstm = *hp;
    fwm__tensor_layout_init(&tm->layout, &spec);
    size_t V = hp->vocab_size, E = hp->embedding_length, H = hp->hidden_size,
           L = hp->layer_count, G4 = 4 * H;
    size_t B = (size_t)config->lanes, W = (size_t)config->window, rows = W * B;
    size_t wide = E > H ? E : H;
    tm->shell.state_size = 2 * L * H;
    tm->use_table = !(dp->embedding > 0);
    tm->scratch_floats = 2 * B * H + H + 64;
    int failed = 0, backward = !config->forward_only;
    TM(fwm__tm_shell_alloc)(&tm->shell, &FWM__TM_SHELL_SIZES(config, tm->layout.total, V), pool,
                            &failed);
    if (tm->use_table)
        tm->input_table = alloc_reals(V * G4, &failed);
    else
        tm->in0 = alloc_reals(rows * E, &failed);
    if (dp->token > 0) {
        tm->emb_dropped = alloc_reals(V * E, &failed);
        tm->mask_token = alloc_reals(V, &failed);
    }
    if (dp->embedding > 0)
        tm->mask_embedding = alloc_reals(B * E, &failed);
    if (dp->layer > 0 && L > 1)
        tm->mask_layer = alloc_reals((L - 1) * B * H, &failed);
    if (dp->recurrent > 0) {
        tm->mask_hh = alloc_reals(L * G4 * H, &failed);
        tm->w_hh_dropped = alloc_reals(L * G4 * H, &failed);
    }
    if (L > 1)
        tm->ins = alloc_reals((L - 1) * rows * H, &failed);
    tm->gates = alloc_reals(L * rows * G4, &failed);
    tm->hs = alloc_reals(L * (W + 1) * B * H, &failed);
    tm->cs = alloc_reals(L * (W + 1) * B * H, &failed);
    tm->tanh_cs = alloc_reals(L * rows * H, &failed);
    tm->y_selected = alloc_reals(rows * H, &failed);
    if (backward) {
        tm->d_gates = alloc_reals(rows * G4, &failed);
        tm->d_y = alloc_reals(rows * H, &failed);
        tm->d_in = alloc_reals((rows > V ? rows : V) * wide, &failed);
        tm->d_table = alloc_reals(V * G4, &failed);
        if (dp->recurrent > 0)
            tm->d_w = alloc_reals(G4 * H, &failed);
    }
    tm->thread_scratch =
        alloc_reals((size_t)fwm__pool_size(pool) * tm->scratch_floats, &failed);
    if (failed) {
        TM(fwm__lstm_tm_free)(tm);
        return fwm__error(err, FWM_ERR_OUT_OF_MEMORY,
                          "LSTM trainer model: out of memory for %zu lanes x %zu steps, %zu "
                          "layers of %zu",
                          B, W, L, H);
    }
    TM(fwm__lstm_tm_set_dropout)(tm, 0, 0, 0);
    *out = tm;
    return FWM_OK;
}

/* n mask values from stream `stream` of `seed`: 1/(1-p) where kept (probability 1-p), else 0. */
static void draw_mask(real *mask, size_t n, double p, uint64_t seed, uint64_t stream)
{
    fwm__rng rng;
    fwm__rng_seed(&rng, seed, stream);
    real keep = (real)(1.0 / (1.0 - p));
    for (size_t i = 0; i < n; i++)
        mask[i] = fwm__rng_uniform01(&rng) >= p ? keep : (real)0;
}

void TM(fwm__lstm_tm_set_dropout)(TM(fwm__lstm_tm) *tm, uint64_t seed, uint64_t step,
                                  int lane_offset)
{
    const fwm__dropout *dp = &tm->config.dropout;
    size_t V = tm->hp.vocab_size, E = tm->hp.embedding_length, H = tm->hp.hidden_size,
           L = tm->hp.layer_count, B = (size_t)tm->config.lanes;
    if (tm->mask_token)
        draw_mask(tm->mask_token, V, dp->token, seed, fwm__lstm_dropout_stream(1, 0, 0, step));
    if (tm->mask_embedding)
        for (size_t b = 0; b < B; b++)
            draw_mask(tm->mask_embedding + b * E, E, dp->embedding, seed,
                      fwm__lstm_dropout_stream(2, 0, (uint64_t)lane_offset + b, step));
    if (tm->mask_layer)
        for (size_t l = 1; l < L; l++)
            for (size_t b = 0; b < B; b++)
                draw_mask(tm->mask_layer + ((l - 1) * B + b) * H, H, dp->layer, seed,
                          fwm__lstm_dropout_stream(3, (unsigned)l, (uint64_t)lane_offset + b,
                                                   step));
    if (tm->mask_hh)
        for (size_t l = 0; l < L; l++)
            draw_mask(tm->mask_hh + l * 4 * H * H, 4 * H * H, dp->recurrent, seed,
                      fwm__lstm_dropout_stream(4, (unsigned)l, 0, step));
}

/* W_hh of layer l as the forward and backward passes use it (with its DropConnect mask). */
static const real *lstm_w_hh(const TM(fwm__lstm_tm) *tm, size_t l)
{
    size_t n = 4 * (size_t)tm->hp.hidden_size * tm->hp.hidden_size;
    return tm->w_hh_dropped ? tm->w_hh_dropped + l * n : LP(tm, LT_W_HH(l));
}

/* ---- the recurrence of layer l over time, lanes [b0, b1) ------------------------------------ */
typedef struct TM(lstm_layer_ctx) {
    TM(fwm__lstm_tm) *tm;
    size_t layer;
    int len;
} TM(lstm_layer_ctx);

static void lstm_layer_forward_worker(void *ctx_pointer, int index, int threads)
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
    const real *W_hh = lstm_w_hh(tm, l);
    real *gates = tm->gates + l * rows_all * G4;
    real *hs = tm->hs + l * (W + 1) * B * H, *cs = tm->cs + l * (W + 1) * B * H;
    real *tanh_cs = tm->tanh_cs + l * rows_all * H;
    int table = l == 0 && tm->use_table;
    size_t c_at = (size_t)tm->hp.layer_count * H; /* the state: h of every layer, then c */
    for (size_t b = b0; b < b1; b++) { /* h, c before step 0 from the carried state */
        const real *s = tm->shell.state + b * tm->shell.state_size + l * H;
        memcpy(hs + b * H, s, H * sizeof(real));
        memcpy(cs + b * H, s + c_at, H * sizeof(real));
    }
    for (int t = 0; t < ctx->len; t++) {
        size_t r0 = (size_t)t * B + b0;
        if (table)
            for (size_t b = b0; b < b1; b++)
                memcpy(gates + ((size_t)t * B + b) * G4,
                       tm->input_table + (size_t)tm->shell.x[(size_t)t * B + b] * G4, G4 * sizeof(real));
        R_GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, (int)nb, (int)G4, (int)H, (real)1,
               hs + r0 * H, (int)H, W_hh, (int)H, (real)1, gates + r0 * G4, (int)G4);
        for (size_t b = b0; b < b1; b++) {
            size_t row = (size_t)t * B + b, next = row + B;
            lstm_cell_forward(gates + row * G4, cs + row * H, cs + next * H,
                              tanh_cs + row * H, hs + next * H, H, (real)tm->hp.forget_bias);
        }
    }
    for (size_t b = b0; b < b1; b++) { /* carry h, c */
        size_t last = (size_t)ctx->len * B + b;
        real *s = tm->shell.state + b * tm->shell.state_size + l * H;
        memcpy(s, hs + last * H, H * sizeof(real));
        memcpy(s + c_at, cs + last * H, H * sizeof(real));
    }
}

typedef struct TM(lstm_loss_ctx) {
    TM(fwm__lstm_tm) *tm;
} TM(lstm_loss_ctx);

static void lstm_loss_worker(void *ctx_pointer, int index, int threads)
{
    TM(lstm_loss_ctx) *ctx = ctx_pointer;
    TM(fwm__lstm_tm) *tm = ctx->tm;
    size_t V = tm->hp.vocab_size, i0, i1;
    fwm__pool_range((size_t)tm->shell.n_loss_rows, index, threads, &i0, &i1);
    for (size_t i = i0; i < i1; i++)
        tm->shell.row_loss[i] = softmax_ce_forward(tm->shell.probs + i * V, V, tm->shell.y[tm->shell.loss_rows[i]]);
}

double TM(fwm__lstm_tm_forward)(TM(fwm__lstm_tm) *tm, const uint32_t *x, const uint32_t *y,
                                int len)
{
    const fwm_lstm_hparams *hp = &tm->hp;
    size_t B = (size_t)tm->config.lanes, V = hp->vocab_size, E = hp->embedding_length,
           H = hp->hidden_size, L = hp->layer_count, G4 = 4 * H;
    size_t W = (size_t)tm->config.window, rows_all = W * B, rows = (size_t)len * B;
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

    /* the window's weights with their dropout masks */
    const real *emb = LP(tm, LT_EMB);
    if (tm->emb_dropped) {
        for (size_t v = 0; v < V; v++)
            for (size_t j = 0; j < E; j++)
                tm->emb_dropped[v * E + j] = tm->mask_token[v] * emb[v * E + j];
        emb = tm->emb_dropped;
    }
    if (tm->w_hh_dropped)
        for (size_t l = 0; l < L; l++) {
            const real *w = LP(tm, LT_W_HH(l)), *m = tm->mask_hh + l * G4 * H;
            real *o = tm->w_hh_dropped + l * G4 * H;
            for (size_t i = 0; i < G4 * H; i++)
                o[i] = m[i] * w[i];
        }

    /* layer 0's input: the table, or the rows with their masks */
    if (tm->use_table) {
        par_gemm(tm->shell.pool, 0, 1, V, G4, E, 1, emb, E, LP(tm, LT_W_IH(0)), E, 1,
                 tm->input_table, G4, LP(tm, LT_BIAS(0)));
    } else {
        for (size_t row = 0; row < rows; row++) {
            const real *e = emb + (size_t)tm->shell.x[row] * E,
                       *m = tm->mask_embedding + (row % B) * E;
            real *o = tm->in0 + row * E;
            for (size_t j = 0; j < E; j++)
                o[j] = e[j] * m[j];
        }
        par_gemm(tm->shell.pool, 0, 1, rows, G4, E, 1, tm->in0, E, LP(tm, LT_W_IH(0)), E, 1,
                 tm->gates, G4, LP(tm, LT_BIAS(0)));
    }
    for (size_t l = 0; l < L; l++) {
        real *in = l > 0 ? tm->ins + (l - 1) * rows_all * H : NULL;
        if (l > 0)
            par_gemm(tm->shell.pool, 0, 1, rows, G4, H, 1, in, H, LP(tm, LT_W_IH(l)), H, 1,
                     tm->gates + l * rows_all * G4, G4, LP(tm, LT_BIAS(l)));
        TM(lstm_layer_ctx) ctx = {tm, l, len};
        fwm__pool_run(tm->shell.pool, lstm_layer_forward_worker, &ctx);
        if (l + 1 < L) { /* the next layer's input: y_l = h_l (+ in_l), times the layer mask */
            const real *h = tm->hs + l * (W + 1) * B * H + B * H;
            real *next = tm->ins + l * rows_all * H;
            const real *mask = tm->mask_layer ? tm->mask_layer + l * B * H : NULL;
            int add = hp->residual && l >= 1;
            for (size_t row = 0; row < rows; row++) {
                real *o = next + row * H;
                const real *hr = h + row * H, *ir = add ? in + row * H : NULL;
                const real *mr = mask ? mask + (row % B) * H : NULL;
                for (size_t j = 0; j < H; j++) {
                    real v = ir ? hr[j] + ir[j] : hr[j];
                    o[j] = mr ? v * mr[j] : v;
                }
            }
        }
    }

    tm->shell.loss = 0;
    tm->shell.loss_sum = 0;
    if (tm->shell.n_loss_rows == 0)
        return 0;
    size_t n_loss = (size_t)tm->shell.n_loss_rows;
    const real *h_last = tm->hs + (L - 1) * (W + 1) * B * H + B * H;
    const real *in_last = L > 1 && hp->residual ? tm->ins + (L - 2) * rows_all * H : NULL;
    for (size_t i = 0; i < n_loss; i++) {
        size_t row = (size_t)tm->shell.loss_rows[i];
        real *o = tm->y_selected + i * H;
        for (size_t j = 0; j < H; j++)
            o[j] = in_last ? h_last[row * H + j] + in_last[row * H + j] : h_last[row * H + j];
    }
    const real *W_s = tm->config.tie_embeddings ? LP(tm, LT_EMB) : LP(tm, LT_OUT_W(L));
    par_gemm(tm->shell.pool, 0, 1, n_loss, V, H, 1, tm->y_selected, H, W_s, H, 1, tm->shell.probs, V,
             LP(tm, LT_OUT_B(L)));
    if (tm->shell.logits)
        memcpy(tm->shell.logits, tm->shell.probs, n_loss * V * sizeof(real));
    TM(lstm_loss_ctx) lctx = {tm};
    fwm__pool_run(tm->shell.pool, lstm_loss_worker, &lctx);
    double sum = 0;
    for (size_t i = 0; i < n_loss; i++)
        sum += tm->shell.row_loss[i];
    tm->shell.loss_sum = sum;
    tm->shell.loss = sum / (double)n_loss;
    return tm->shell.loss;
}
