/* fwm_forward_impl.h - creation of the trainer's model and its forward pass over one window,
 * template over `real` (see real_template.h); included by fwm_f32.c and fwm_f64.c only.
 *
 * The LSTM does not depend on the memory, so a window is computed in stages, each either one
 * batched matrix product over all B*len rows (split by rows across the pool's threads) or a
 * recurrence over time run per lane (lanes split across threads, a fixed partition):
 *   1. input table  G = Emb W_ih^T + b                       [V, 4H]
 *   1b. a stacked FWM's lower LSTM layers: layer 0 over time from G (W_ih^0, b^0), each further
 *      layer's input product over all rows then the layer over time; the FWM's LSTM's input
 *      product W_ih h^{L-2}_t + b over all rows
 *   2. LSTM over time (per lane; W_hh h as a [lanes, H] x [H, 4H] product per step)
 *   3. write and read projections of every h_t              [B*len, S+R+T+1], [B*len, S+N_r*R]
 *   4. the fast-weight memory over time (per lane): write, then the chained reads
 *   5. read-out m = W_o q + b_o, y, logits of the loss rows and their softmax cross entropy.
 */

#define TM_P(tm, field) ((tm)->shell.params + (tm)->layout.offset[FWM_TENSOR_##field])
#define TM_G(tm, field) ((tm)->shell.grads + (tm)->layout.offset[FWM_TENSOR_##field])
/* A stacked FWM's lower layer l's tensor k (enum fwm_block_tensor). */
#define TM_PL(tm, l, k) ((tm)->shell.params + (tm)->layout.offset[FWM_TENSOR_BLOCK(l, k)])
#define TM_GL(tm, l, k) ((tm)->shell.grads + (tm)->layout.offset[FWM_TENSOR_BLOCK(l, k)])

/* ---- creation -------------------------------------------------------------------------------- */

void TM(fwm__tm_free)(TM(fwm__tm) *tm)
{
    if (!tm)
        return;
    real *buffers[] = {tm->input_table, tm->gates, tm->hs, tm->cs, tm->tanh_cs, tm->write_act,
                       tm->read_act, tm->v_old, tm->norms, tm->qs, tm->rstds, tm->ys,
                       tm->f_checkpoints, tm->y_selected, tm->d_y, tm->d_q, tm->d_write, tm->d_read,
                       tm->d_h, tm->d_gates, tm->d_input_table, tm->thread_scratch, tm->lower_gates,
                       tm->lower_hs, tm->lower_cs, tm->lower_tanh_cs, tm->d_lower, tm->emb_dropped,
                       tm->mask_token, tm->mask_embedding, tm->in0, tm->mask_layer, tm->ins,
                       tm->mask_hh, tm->w_hh_dropped, tm->d_w, tm->d_emb};
    for (size_t i = 0; i < sizeof buffers / sizeof buffers[0]; i++)
        free(buffers[i]);
    free(tm->read_mask);
    TM(fwm__tm_shell_free)(&tm->shell);
    free(tm);
}

fwm_status TM(fwm__tm_create)(const fwm__tm_config *config, fwm__pool *pool, TM(fwm__tm) **out,
                              fwm_error *err)
{
    *out = NULL;
    const fwm_hparams *hp = &config->hp;
    if (hp->vocab_size < 1 || hp->embedding_length < 1 || hp->hidden_size < 1 ||
        hp->memory_s < 1 || hp->memory_r < 1 || hp->memory_t < 1 || hp->read_count < 1)
        return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "every model size must be >= 1");
    if (hp->read_count > 1 && hp->memory_s != hp->memory_t)
        return fwm__error(err, FWM_ERR_INVALID_ARGUMENT,
                          "read_count %u > 1 needs memory_s == memory_t (found S=%u, T=%u)",
                          hp->read_count, hp->memory_s, hp->memory_t);
    if (config->lanes < 1 || config->window < 1)
        return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "lanes (%d) and window (%d) must be >= 1",
                          config->lanes, config->window);
    if (hp->block_count > FWM_MAX_BLOCKS)
        return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "block_count %u: at most %u layers",
                          (unsigned)hp->block_count, FWM_MAX_BLOCKS);
    if (config->tie_embeddings && hp->embedding_length != hp->hidden_size)
        return fwm__error(err, FWM_ERR_INVALID_ARGUMENT,
                          "tied embeddings need the output width H = %u to equal E = %u",
                          hp->hidden_size, hp->embedding_length);
    const fwm__dropout *dp = &config->dropout;
#define DROPOUT_OK_(p) ((p) >= 0 && (p) < 1) /* also false for NaN */
    if (!DROPOUT_OK_(dp->token) || !DROPOUT_OK_(dp->embedding) || !DROPOUT_OK_(dp->recurrent) ||
        !DROPOUT_OK_(dp->layer))
        return fwm__error(err, FWM_ERR_INVALID_ARGUMENT,
                          "dropout probabilities must be in [0, 1) (token %g, embedding %g, "
                          "recurrent %g, layer %g)",
                          (double)dp->token, (double)dp->embedding, (double)dp->recurrent,
                          (double)dp->layer);
#undef DROPOUT_OK_
    TM(fwm__tm) *tm = calloc(1, sizeof *tm);
    if (!tm)
        return fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "trainer model: out of memory");
    tm->config = *config;
    tm->hp = *hp;
    if (tm->config.segment <= 0) {
        int s = 1;
        while (s * s < config->window)
            s++;
        tm->config.segment = s;
    }
    fwm__param_layout_init(&tm->layout, hp);
    size_t V = hp->vocab_size, H = hp->hidden_size, S = hp->memory_s, R = hp->memory_r,
           T = hp->memory_t, Nr = hp->read_count;
    size_t B = (size_t)config->lanes, W = (size_t)config->window;
    size_t rows = W * B, seg = (size_t)tm->config.segment;
    size_t SR = S * R;
    tm->memory_size = SR * T;
    tm->lower = fwm__lower_blocks(hp);
    tm->lower_offset = 2 * H + tm->memory_size;
    tm->shell.state_size = 2 * H + tm->memory_size + 2 * tm->lower * H;
    tm->n_segments = (int)((W + seg - 1) / seg);
    size_t wd = S + R + T + 1, rd = S + Nr * R, qd = S + Nr * T;
    size_t big = S > T ? S : T;
    if (R > big)
        big = R;
    tm->scratch_floats = (seg + 2) * tm->memory_size + 4 * SR + 8 * big + 2 * B * H + 64;

    int failed = 0;
    int backward = !config->forward_only;
    TM(fwm__tm_shell_alloc)(&tm->shell, &FWM__TM_SHELL_SIZES(config, tm->layout.total, V), pool,
                            &failed);
    tm->input_table = alloc_reals(V * 4 * H, &failed);
    tm->gates = alloc_reals(rows * 4 * H, &failed);
    size_t E = hp->embedding_length, L = tm->lower + 1, G4 = 4 * H;
    tm->use_table = !(dp->embedding > 0);
    if (!tm->use_table)
        tm->in0 = alloc_reals(rows * E, &failed);
    if (dp->token > 0) {
        tm->emb_dropped = alloc_reals(V * E, &failed);
        tm->mask_token = alloc_reals(V, &failed);
    }
    if (dp->embedding > 0)
        tm->mask_embedding = alloc_reals(B * E, &failed);
    if (dp->layer > 0 && L > 1) {
        tm->mask_layer = alloc_reals((L - 1) * B * H, &failed);
        tm->ins = alloc_reals((L - 1) * rows * H, &failed);
    }
    if (dp->recurrent > 0) {
        tm->mask_hh = alloc_reals(L * G4 * H, &failed);
        tm->w_hh_dropped = alloc_reals(L * G4 * H, &failed);
        if (backward)
            tm->d_w = alloc_reals(G4 * H, &failed);
    }
    if (backward && (dp->token > 0 || dp->embedding > 0))
        tm->d_emb = alloc_reals((rows > V ? rows : V) * E, &failed);
    if (tm->lower) {
        size_t L1 = tm->lower;
        tm->lower_gates = alloc_reals(L1 * rows * 4 * H, &failed);
        tm->lower_hs = alloc_reals(L1 * (W + 1) * B * H, &failed);
        tm->lower_cs = alloc_reals(L1 * (W + 1) * B * H, &failed);
        tm->lower_tanh_cs = alloc_reals(L1 * rows * H, &failed);
        if (backward)
            tm->d_lower = alloc_reals(rows * H, &failed);
    }
    tm->hs = alloc_reals((W + 1) * B * H, &failed);
    tm->cs = alloc_reals((W + 1) * B * H, &failed);
    tm->tanh_cs = alloc_reals(rows * H, &failed);
    tm->write_act = alloc_reals(rows * wd, &failed);
    tm->read_act = alloc_reals(rows * rd, &failed);
    tm->v_old = alloc_reals(rows * T, &failed);
    tm->norms = alloc_reals(rows, &failed);
    tm->qs = alloc_reals(rows * qd, &failed);
    tm->rstds = alloc_reals(rows * Nr, &failed);
    tm->ys = alloc_reals(rows * H, &failed);
    if (backward)
        tm->f_checkpoints =
            alloc_reals(B * (size_t)tm->n_segments * tm->memory_size, &failed);
    tm->y_selected = alloc_reals(rows * H, &failed);
    if (backward) {
        tm->d_y = alloc_reals(rows * H, &failed);
        tm->d_q = alloc_reals(rows * T, &failed);
        tm->d_write = alloc_reals(rows * wd, &failed);
        tm->d_read = alloc_reals(rows * rd, &failed);
        tm->d_h = alloc_reals(rows * H, &failed);
        tm->d_gates = alloc_reals(rows * 4 * H, &failed);
        tm->d_input_table = alloc_reals(V * 4 * H, &failed);
    }
    tm->thread_scratch =
        alloc_reals((size_t)fwm__pool_size(pool) * tm->scratch_floats, &failed);
    tm->read_mask = calloc(rows, 1);
    if (failed || !tm->read_mask) {
        TM(fwm__tm_free)(tm);
        return fwm__error(err, FWM_ERR_OUT_OF_MEMORY,
                          "trainer model: out of memory for %zu lanes x %zu steps", B, W);
    }
    TM(fwm__tm_set_dropout)(tm, 0, 0, 0);
    *out = tm;
    return FWM_OK;
}

/* n mask values from stream `stream` of `seed`: 1/(1-p) where kept (probability 1-p), else 0. */
static void fwm_draw_mask(real *mask, size_t n, double p, uint64_t seed, uint64_t stream)
{
    fwm__rng rng;
    fwm__rng_seed(&rng, seed, stream);
    real keep = (real)(1.0 / (1.0 - p));
    for (size_t i = 0; i < n; i++)
        mask[i] = fwm__rng_uniform01(&rng) >= p ? keep : (real)0;
}

/* The LSTM baseline's streams (fwm__lstm_dropout_stream), layer l counted bottom up. */
void TM(fwm__tm_set_dropout)(TM(fwm__tm) *tm, uint64_t seed, uint64_t step, int lane_offset)
{
    const fwm__dropout *dp = &tm->config.dropout;
    size_t V = tm->hp.vocab_size, E = tm->hp.embedding_length, H = tm->hp.hidden_size,
           L = tm->lower + 1, B = (size_t)tm->config.lanes;
    if (tm->mask_token)
        fwm_draw_mask(tm->mask_token, V, dp->token, seed,
                      fwm__lstm_dropout_stream(1, 0, 0, step));
    if (tm->mask_embedding)
        for (size_t b = 0; b < B; b++)
            fwm_draw_mask(tm->mask_embedding + b * E, E, dp->embedding, seed,
                          fwm__lstm_dropout_stream(2, 0, (uint64_t)lane_offset + b, step));
    if (tm->mask_layer)
        for (size_t l = 1; l < L; l++)
            for (size_t b = 0; b < B; b++)
                fwm_draw_mask(tm->mask_layer + ((l - 1) * B + b) * H, H, dp->layer, seed,
                              fwm__lstm_dropout_stream(3, (unsigned)l,
                                                       (uint64_t)lane_offset + b, step));
    if (tm->mask_hh)
        for (size_t l = 0; l < L; l++)
            fwm_draw_mask(tm->mask_hh + l * 4 * H * H, 4 * H * H, dp->recurrent, seed,
                          fwm__lstm_dropout_stream(4, (unsigned)l, 0, step));
}

/* ---- stage 2: an LSTM layer over time, lanes [b0, b1) ---------------------------------------- */

/* One LSTM layer's buffers and place in the lane state: the FWM's own, or a stacked FWM's lower
 * layer l (layer_of). */
typedef struct TM(layer_ref) {
    const real *W_hh;
    real *gates, *hs, *cs, *tanh_cs; /* as fwm__tm's gates, hs, cs, tanh_cs */
    size_t h_off, c_off;             /* h and c in a lane's state */
    const real *table;               /* pre-activations W_ih Emb[x] + b by token; NULL: the gate
                                        rows hold W_ih in_t + b already */
    const real *d_h;                 /* backward: gradient of h_t from above, [window*B, H] */
} TM(layer_ref);

/* lower < tm->lower: that lower layer; tm->lower: the FWM's own LSTM. */
static TM(layer_ref) layer_of(TM(fwm__tm) *tm, size_t lower)
{
    size_t B = (size_t)tm->config.lanes, H = tm->hp.hidden_size, W = (size_t)tm->config.window;
    size_t rows = W * B;
    TM(layer_ref) r;
    size_t G4H = 4 * H * H;
    if (lower == tm->lower) {
        r.W_hh = tm->w_hh_dropped ? tm->w_hh_dropped + lower * G4H : TM_P(tm, lstm_weight_hh);
        r.gates = tm->gates, r.hs = tm->hs, r.cs = tm->cs, r.tanh_cs = tm->tanh_cs;
        r.h_off = 0, r.c_off = H;
        r.table = tm->lower || !tm->use_table ? NULL : tm->input_table;
        r.d_h = tm->d_h;
    } else {
        r.W_hh = tm->w_hh_dropped ? tm->w_hh_dropped + lower * G4H
                                  : TM_PL(tm, lower, FWM_BLOCK_weight_hh);
        r.gates = tm->lower_gates + lower * rows * 4 * H;
        r.hs = tm->lower_hs + lower * (W + 1) * B * H;
        r.cs = tm->lower_cs + lower * (W + 1) * B * H;
        r.tanh_cs = tm->lower_tanh_cs + lower * rows * H;
        r.h_off = tm->lower_offset + lower * H;
        r.c_off = tm->lower_offset + (tm->lower + lower) * H;
        r.table = lower == 0 && tm->use_table ? tm->input_table : NULL;
        r.d_h = tm->d_lower;
    }
    return r;
}

typedef struct TM(forward_ctx) {
    TM(fwm__tm) *tm;
    int len;
    TM(layer_ref) layer; /* stage 2's */
} TM(forward_ctx);

static void lstm_forward_worker(void *ctx_pointer, int index, int threads)
{
    TM(forward_ctx) *ctx = ctx_pointer;
    TM(fwm__tm) *tm = ctx->tm;
    const TM(layer_ref) *ly = &ctx->layer;
    size_t B = (size_t)tm->config.lanes, H = tm->hp.hidden_size, G4 = 4 * H;
    size_t b0, b1;
    fwm__pool_range(B, index, threads, &b0, &b1);
    if (b1 <= b0)
        return;
    size_t nb = b1 - b0;
    const real *W_hh = ly->W_hh;
    for (size_t b = b0; b < b1; b++) { /* h, c before step 0 from the carried state */
        memcpy(ly->hs + b * H, tm->shell.state + b * tm->shell.state_size + ly->h_off, H * sizeof(real));
        memcpy(ly->cs + b * H, tm->shell.state + b * tm->shell.state_size + ly->c_off, H * sizeof(real));
    }
    for (int t = 0; t < ctx->len; t++) {
        size_t r0 = (size_t)t * B + b0;
        if (ly->table)
            for (size_t b = b0; b < b1; b++)
                memcpy(ly->gates + ((size_t)t * B + b) * G4,
                       ly->table + (size_t)tm->shell.x[(size_t)t * B + b] * G4, G4 * sizeof(real));
        R_GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, (int)nb, (int)G4, (int)H, (real)1,
               ly->hs + r0 * H, (int)H, W_hh, (int)H, (real)1, ly->gates + r0 * G4, (int)G4);
        for (size_t b = b0; b < b1; b++) {
            size_t row = (size_t)t * B + b, next = row + B;
            lstm_cell_forward(ly->gates + row * G4, ly->cs + row * H, ly->cs + next * H,
                              ly->tanh_cs + row * H, ly->hs + next * H, H,
                              (real)tm->hp.forget_bias);
        }
    }
    for (size_t b = b0; b < b1; b++) { /* carry h, c */
        size_t last = (size_t)ctx->len * B + b;
        memcpy(tm->shell.state + b * tm->shell.state_size + ly->h_off, ly->hs + last * H, H * sizeof(real));
        memcpy(tm->shell.state + b * tm->shell.state_size + ly->c_off, ly->cs + last * H, H * sizeof(real));
    }
}

/* ---- stage 4: the memory over time, lanes [b0, b1) ------------------------------------------ */
static void memory_forward_worker(void *ctx_pointer, int index, int threads)
{
    TM(forward_ctx) *ctx = ctx_pointer;
    TM(fwm__tm) *tm = ctx->tm;
    const fwm_hparams *hp = &tm->hp;
    size_t B = (size_t)tm->config.lanes, H = hp->hidden_size;
    size_t S = hp->memory_s, R = hp->memory_r, T = hp->memory_t, Nr = hp->read_count;
    size_t SR = S * R, wd = S + R + T + 1, rd = S + Nr * R, qd = S + Nr * T;
    size_t seg = (size_t)tm->config.segment, nseg = (size_t)tm->n_segments;
    real ws = (real)hp->write_scale, eps = (real)hp->layer_norm_eps;
    size_t b0, b1;
    fwm__pool_range(B, index, threads, &b0, &b1);
    real *scratch = tm->thread_scratch + (size_t)index * tm->scratch_floats;
    real *K = scratch, *d = scratch + SR;
    for (size_t b = b0; b < b1; b++) {
        real *F = tm->shell.state + b * tm->shell.state_size + 2 * H; /* updated in place */
        real *ck = tm->f_checkpoints ? tm->f_checkpoints + b * nseg * tm->memory_size : NULL;
        if (ck)
            memcpy(ck, F, tm->memory_size * sizeof(real));
        for (size_t t = 0; t < (size_t)ctx->len; t++) {
            size_t row = t * B + b;
            real *wa = tm->write_act + row * wd;
            write_act_forward(wa, S, R, T, (real)hp->beta_bias);
            outer_key(wa, wa + S, K, S, R);
            real *v_old = tm->v_old + row * T;
            write_read_old(F, K, v_old, SR, T);
            write_delta(wa + S + R, v_old, wa[S + R + T], ws, d, T);
            tm->norms[row] = write_forward_apply(F, K, d, SR, T);
            if (ck && (t + 1) % seg == 0 && t + 1 < (size_t)ctx->len)
                memcpy(ck + (t + 1) / seg * tm->memory_size, F, tm->memory_size * sizeof(real));
            if (!tm->read_mask[row])
                continue;
            real *ra = tm->read_act + row * rd, *q = tm->qs + row * qd;
            tanh_array(ra + S, ra + S, rd - S);
            memcpy(q, ra, S * sizeof(real));
            const real *q_in = q;
            for (size_t i = 0; i < Nr; i++) {
                real *q_out = q + S + i * T;
                tm->rstds[row * Nr + i] =
                    read_forward(F, q_in, ra + S + i * R, q_out, S, R, T, eps, K);
                q_in = q_out;
            }
        }
    }
}

/* ---- stage 5: softmax cross entropy of the loss rows ---------------------------------------- */
typedef struct TM(loss_ctx) {
    TM(fwm__tm) *tm;
    double *row_loss;
} TM(loss_ctx);

static void loss_worker(void *ctx_pointer, int index, int threads)
{
    TM(loss_ctx) *ctx = ctx_pointer;
    TM(fwm__tm) *tm = ctx->tm;
    size_t V = tm->hp.vocab_size, i0, i1;
    fwm__pool_range((size_t)tm->shell.n_loss_rows, index, threads, &i0, &i1);
    for (size_t i = i0; i < i1; i++)
        ctx->row_loss[i] =
            softmax_ce_forward(tm->shell.probs + i * V, V, tm->shell.y[tm->shell.loss_rows[i]]);
}

double TM(fwm__tm_forward)(TM(fwm__tm) *tm, const uint32_t *x, const uint32_t *y, int len)
{
    const fwm_hparams *hp = &tm->hp;
    size_t B = (size_t)tm->config.lanes, V = hp->vocab_size, E = hp->embedding_length,
           H = hp->hidden_size;
    size_t S = hp->memory_s, R = hp->memory_r, T = hp->memory_t, Nr = hp->read_count;
    size_t wd = S + R + T + 1, rd = S + Nr * R, qd = S + Nr * T;
    size_t rows = (size_t)len * B;
    tm->shell.len = len;

    /* tokens to time-major rows; where to read; where the loss is */
    tm->shell.n_loss_rows = 0;
    for (size_t t = 0; t < (size_t)len; t++)
        for (size_t b = 0; b < B; b++) {
            size_t row = t * B + b;
            uint32_t xi = x[b * (size_t)len + t], yi = y[b * (size_t)len + t];
            tm->shell.x[row] = xi;
            tm->shell.y[row] = yi;
            int loss = fwm__tm_is_loss_position(&tm->config, xi, yi);
            /* the read changes no state: it is only needed where a logit is */
            tm->read_mask[row] =
                loss && (hp->read_policy == FWM_READ_ALWAYS || xi == hp->read_token_id);
            if (loss)
                tm->shell.loss_rows[tm->shell.n_loss_rows++] = (int)row;
        }

    /* the window's weights with their dropout masks */
    size_t G4 = 4 * H, W = (size_t)tm->config.window, rows_all = W * B;
    const real *emb = TM_P(tm, token_embd);
    if (tm->emb_dropped) {
        for (size_t v = 0; v < V; v++)
            for (size_t j = 0; j < E; j++)
                tm->emb_dropped[v * E + j] = tm->mask_token[v] * emb[v * E + j];
        emb = tm->emb_dropped;
    }
    if (tm->w_hh_dropped)
        for (size_t l = 0; l <= tm->lower; l++) {
            const real *w = l == tm->lower ? TM_P(tm, lstm_weight_hh)
                                           : TM_PL(tm, l, FWM_BLOCK_weight_hh);
            const real *m = tm->mask_hh + l * G4 * H;
            real *o = tm->w_hh_dropped + l * G4 * H;
            for (size_t i = 0; i < G4 * H; i++)
                o[i] = m[i] * w[i];
        }
    /* 1. G = Emb W_ih^T + b of the layer that reads the embedding; or, with embedding dropout,
     * its input rows Emb[x] (x) mask and their product */
    const real *w_in = tm->lower ? TM_PL(tm, 0, FWM_BLOCK_weight_ih) : TM_P(tm, lstm_weight_ih);
    const real *b_in = tm->lower ? TM_PL(tm, 0, FWM_BLOCK_bias) : TM_P(tm, lstm_bias);
    if (tm->use_table) {
        par_gemm(tm->shell.pool, 0, 1, V, G4, E, 1, emb, E, w_in, E, 1, tm->input_table, G4, b_in);
    } else {
        for (size_t row = 0; row < rows; row++) {
            const real *e = emb + (size_t)tm->shell.x[row] * E, *m = tm->mask_embedding + (row % B) * E;
            real *o = tm->in0 + row * E;
            for (size_t j = 0; j < E; j++)
                o[j] = e[j] * m[j];
        }
        par_gemm(tm->shell.pool, 0, 1, rows, G4, E, 1, tm->in0, E, w_in, E, 1,
                 layer_of(tm, 0).gates, G4, b_in);
    }
    TM(forward_ctx) ctx = {tm, len, layer_of(tm, 0)};
    /* 1b. a stacked FWM's lower layers; the input products of the layers above them (the input
     * with the layer mask, kept in `ins`) */
    for (size_t l = 0; l < tm->lower; l++) {
        ctx.layer = layer_of(tm, l);
        fwm__pool_run(tm->shell.pool, lstm_forward_worker, &ctx);
        TM(layer_ref) above = layer_of(tm, l + 1);
        int top = l + 1 == tm->lower;
        const real *in = ctx.layer.hs + B * H;
        if (tm->mask_layer) {
            real *masked = tm->ins + l * rows_all * H;
            const real *mask = tm->mask_layer + l * B * H;
            for (size_t row = 0; row < rows; row++)
                for (size_t j = 0; j < H; j++)
                    masked[row * H + j] = in[row * H + j] * mask[(row % B) * H + j];
            in = masked;
        }
        par_gemm(tm->shell.pool, 0, 1, rows, G4, H, 1, in, H,
                 top ? TM_P(tm, lstm_weight_ih) : TM_PL(tm, l + 1, FWM_BLOCK_weight_ih), H, 1,
                 above.gates, G4, top ? TM_P(tm, lstm_bias) : TM_PL(tm, l + 1, FWM_BLOCK_bias));
    }
    /* 2. LSTM */
    ctx.layer = layer_of(tm, tm->lower);
    fwm__pool_run(tm->shell.pool, lstm_forward_worker, &ctx);
    /* 3. projections of h_1..h_len */
    const real *h_seq = tm->hs + B * H;
    par_gemm(tm->shell.pool, 0, 1, rows, wd, H, 1, h_seq, H, TM_P(tm, write_weight), H, 1,
             tm->write_act, wd, TM_P(tm, write_bias));
    par_gemm(tm->shell.pool, 0, 1, rows, rd, H, 1, h_seq, H, TM_P(tm, read_weight), H, 1,
             tm->read_act, rd, TM_P(tm, read_bias));
    /* 4. memory */
    fwm__pool_run(tm->shell.pool, memory_forward_worker, &ctx);
    /* 5. m = W_o q_Nr + b_o on read rows (0 elsewhere), y = m (+ h) */
    par_gemm(tm->shell.pool, 0, 1, rows, H, T, 1, tm->qs + S + (Nr - 1) * T, qd, TM_P(tm, out_weight),
             T, 1, tm->ys, H, TM_P(tm, out_bias));
    for (size_t row = 0; row < rows; row++) {
        real *yr = tm->ys + row * H;
        if (!tm->read_mask[row])
            memset(yr, 0, H * sizeof(real));
        if (hp->residual)
            for (size_t j = 0; j < H; j++)
                yr[j] += h_seq[row * H + j];
    }
    tm->shell.loss = 0;
    tm->shell.loss_sum = 0;
    if (tm->shell.n_loss_rows == 0)
        return 0;
    size_t n_loss = (size_t)tm->shell.n_loss_rows;
    for (size_t i = 0; i < n_loss; i++)
        memcpy(tm->y_selected + i * H, tm->ys + (size_t)tm->shell.loss_rows[i] * H, H * sizeof(real));
    const real *W_s = tm->config.tie_embeddings ? TM_P(tm, token_embd) : TM_P(tm, output_weight);
    par_gemm(tm->shell.pool, 0, 1, n_loss, V, H, 1, tm->y_selected, H, W_s, H, 0, tm->shell.probs, V, NULL);
    if (tm->shell.logits)
        memcpy(tm->shell.logits, tm->shell.probs, n_loss * V * sizeof(real));
    double *row_loss = tm->shell.row_loss;
    TM(loss_ctx) lctx = {tm, row_loss};
    fwm__pool_run(tm->shell.pool, loss_worker, &lctx);
    double sum = 0;
    for (size_t i = 0; i < n_loss; i++)
        sum += row_loss[i];
    tm->shell.loss_sum = sum;
    tm->shell.loss = sum / (double)n_loss;
    return tm->shell.loss;
}
