/* stm_forward_impl.h - creation of the STM trainer model and its forward pass over one window,
 * template over `real` (see real_template.h); included by stm_f32.c and stm_f64.c only.
 *
 * A window runs in three stages:
 *   1. the token bookkeeping of every lane (stm_classify): resets, the sentence buffer and the
 *      answer slot as a runtime session keeps them, giving each token its actions (reset, core
 *      step, answer) and the words a step or an answer encodes; then the loss rows;
 *   2. every lane walks its tokens (lanes split across threads): resets, core steps, and at each
 *      loss row the head (eq. 14 in word mode, the answer module in sentence mode), whose
 *      activations are kept for the backward pass; in training the lane's memories are copied at
 *      the start of every segment of `segment` core steps;
 *   3. the softmax cross entropy of the loss rows.
 * The core step, the heads and the encoder are also what the backward pass replays, so a replay
 * gives the forward's bits.
 */

/* Tensor k of the list (fwm__stm_tensor_at order): the encoder (1 or 2), the core (18), the head. */
#define ST_EMB 0
#define ST_POS 1
#define ST_CORE(tm) ((tm)->sentence ? 2 : 1)
#define ST_W1(tm) (ST_CORE(tm) + 0)
#define ST_B1(tm) (ST_CORE(tm) + 1)
#define ST_W2(tm) (ST_CORE(tm) + 2)
#define ST_B2(tm) (ST_CORE(tm) + 3)
#define ST_W3(tm) (ST_CORE(tm) + 4)
#define ST_B3(tm) (ST_CORE(tm) + 5)
#define ST_WG(tm) (ST_CORE(tm) + 6)
#define ST_UG(tm) (ST_CORE(tm) + 7)
#define ST_BG(tm) (ST_CORE(tm) + 8)
#define ST_WQKV(tm) (ST_CORE(tm) + 9)
#define ST_BQKV(tm) (ST_CORE(tm) + 10)
#define ST_GAIN(tm) (ST_CORE(tm) + 11)
#define ST_SHIFT(tm) (ST_CORE(tm) + 12)
#define ST_ALPHA(tm) (ST_CORE(tm) + 13)
#define ST_G1(tm) (ST_CORE(tm) + 14)
#define ST_G1B(tm) (ST_CORE(tm) + 15)
#define ST_MI0(tm) (ST_CORE(tm) + 16)
#define ST_MR0(tm) (ST_CORE(tm) + 17)
#define ST_HEAD(tm) (ST_CORE(tm) + 18)
/* sentence mode: MLP m (0 entity, 1..3 roles), part k (weight1, bias1, weight2, bias2) */
#define ST_MLP(tm, m, k) (ST_HEAD(tm) + 4 * (m) + (k))
#define ST_NORM(tm) (ST_HEAD(tm) + 16)
#define ST_Z(tm) (ST_HEAD(tm) + 17)
/* word mode: G2, g2, G3, g3 */
#define ST_G2(tm) (ST_HEAD(tm) + 0)
#define ST_G2B(tm) (ST_HEAD(tm) + 1)
#define ST_G3(tm) (ST_HEAD(tm) + 2)
#define ST_G3B(tm) (ST_HEAD(tm) + 3)
#define SP(tm, k) ((tm)->shell.params + (tm)->layout.offset[k])

void TM(fwm__stm_tm_free)(TM(fwm__stm_tm) *tm)
{
    if (!tm)
        return;
    real *buffers[] = {tm->heads, tm->snapshots, tm->thread_acts, tm->thread_scratch,
                       tm->thread_grads};
    for (size_t i = 0; i < sizeof buffers / sizeof buffers[0]; i++)
        free(buffers[i]);
    free(tm->act);
    free(tm->words);
    free(tm->n_words);
    free(tm->loss_index);
    free(tm->segment_start);
    free(tm->n_segments);
    free(tm->thread_source);
    TM(fwm__tm_shell_free)(&tm->shell);
    free(tm);
}

fwm_status TM(fwm__stm_tm_create)(const fwm__stm_config *config, fwm__pool *pool,
                                  TM(fwm__stm_tm) **out, fwm_error *err)
{
    *out = NULL;
    const fwm_stm_hparams *hp = &config->hp;
    fwm_status status = fwm__stm_hparams_valid(hp, err);
    if (status != FWM_OK)
        return status;
    if (config->lanes < 1 || config->window < 1)
        return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "lanes (%d) and window (%d) must be >= 1",
                          config->lanes, config->window);
    if (config->segment < 0)
        return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "stm: segment %d must be >= 0",
                          config->segment);
    TM(fwm__stm_tm) *tm = calloc(1, sizeof *tm);
    if (!tm)
        return fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "stm trainer model: out of memory");
    tm->config = *config;
    tm->hp = *hp;
    tm->sentence = hp->input_mode == FWM_STM_INPUT_SENTENCE;
    fwm__tensor_layout_init(&tm->layout, &(fwm__model_spec){.arch = FWM_ARCH_STM, .stm = *hp});
    fwm__stm_offsets_init(&tm->off, hp);
    size_t V = hp->vocab_size, P = hp->sentence_length;
    tm->mem_floats = (size_t)fwm__stm_hparams_state_floats(hp);
    tm->shell.state_size = tm->mem_floats + (size_t)fwm__stm_state_words(hp);
    size_t B = (size_t)config->lanes, W = (size_t)config->window, rows = W * B;
    int backward = !config->forward_only;
    size_t K = (size_t)config->segment;
    if (K == 0) {
        K = FWM__STM_SEGMENT_BUDGET_FLOATS / tm->off.act_total;
        if (K < 1)
            K = 1;
    }
    if (K > W)
        K = W;
    if (!backward)
        K = 1; /* one record: the forward's working step */
    tm->segment = (int)K;
    tm->max_segments = (int)((W + K - 1) / K);
    size_t threads = (size_t)fwm__pool_size(pool);
    int failed = 0;
    TM(fwm__tm_shell_alloc)(&tm->shell, &FWM__TM_SHELL_SIZES(config, tm->layout.total, V), pool,
                            &failed);
    tm->heads = alloc_reals(rows * tm->off.head_total, &failed);
    if (backward) {
        tm->snapshots = alloc_reals(B * (size_t)tm->max_segments * tm->mem_floats, &failed);
        tm->thread_grads = alloc_reals(threads * tm->layout.total, &failed);
    }
    tm->thread_acts = alloc_reals(threads * K * tm->off.act_total, &failed);
    tm->thread_scratch = alloc_reals(threads * tm->off.scratch_total, &failed);
    tm->act = calloc(rows, 1);
    tm->words = calloc(tm->sentence ? rows * P : 1, sizeof *tm->words);
    tm->n_words = calloc(rows, sizeof *tm->n_words);
    tm->loss_index = calloc(rows, sizeof *tm->loss_index);
    tm->segment_start = calloc(B * (size_t)tm->max_segments, sizeof *tm->segment_start);
    tm->n_segments = calloc(B, sizeof *tm->n_segments);
    tm->thread_source = calloc(threads * W, sizeof *tm->thread_source);
    if (failed || !tm->act || !tm->words || !tm->n_words ||
        !tm->loss_index || !tm->segment_start || !tm->n_segments ||
        !tm->thread_source) {
        TM(fwm__stm_tm_free)(tm);
        return fwm__error(err, FWM_ERR_OUT_OF_MEMORY,
                          "stm trainer model: out of memory for %zu lanes x %zu steps (%zu floats "
                          "of activations per core step, segments of %zu steps)",
                          B, W, tm->off.act_total, K);
    }
    *out = tm;
    return FWM_OK;
}

void TM(fwm__stm_tm_reset_state)(TM(fwm__stm_tm) *tm)
{
    size_t dd = (size_t)fwm__stm_item_floats(&tm->hp), rel = tm->mem_floats - dd;
    for (size_t b = 0; b < (size_t)tm->config.lanes; b++) {
        real *lane = tm->shell.state + b * tm->shell.state_size;
        memcpy(lane, SP(tm, ST_MI0(tm)), dd * sizeof(real));
        memcpy(lane + dd, SP(tm, ST_MR0(tm)), rel * sizeof(real));
        for (size_t i = tm->mem_floats; i < tm->shell.state_size; i++)
            lane[i] = 0;
    }
}

/* ---- kernels --------------------------------------------------------------------------------- */

/* C = alpha op(A) op(B) + beta C, one thread (row-major). */
static inline void stm_gemm(int ta, int tb, size_t M, size_t N, size_t K, real alpha,
                            const real *A, size_t lda, const real *B, size_t ldb, real beta,
                            real *C, size_t ldc)
{
    R_GEMM(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)M,
           (int)N, (int)K, alpha, A, (int)lda, B, (int)ldb, beta, C, (int)ldc);
}

/* y = W x + b (W [rows, cols]; b may be NULL). */
static inline void stm_matvec(real *y, const real *W, const real *x, const real *b,
                              size_t rows, size_t cols)
{
    for (size_t i = 0; i < rows; i++)
        y[i] = (b ? b[i] : 0) + dot(W + i * cols, x, cols);
}

/* Layer norm of n numbers without gain: y = (u - mean) / sqrt(var + eps); returns the last
 * factor. */
static inline real stm_norm(real *y, const real *u, size_t n, real eps)
{
    real mean = 0, var = 0;
    for (size_t i = 0; i < n; i++)
        mean += u[i];
    mean /= (real)n;
    for (size_t i = 0; i < n; i++) {
        real dl = u[i] - mean;
        var += dl * dl;
    }
    var /= (real)n;
    real rstd = (real)1 / R_SQRT(var + eps);
    for (size_t i = 0; i < n; i++)
        y[i] = (u[i] - mean) * rstd;
    return rstd;
}

/* The sentence encoder: x = sum_k Emb[w_k] * Pos[k] over the row's words. */
static void stm_encode(const TM(fwm__stm_tm) *tm, size_t row, real *x)
{
    size_t E = tm->hp.embedding_length, P = tm->hp.sentence_length;
    const real *emb = SP(tm, ST_EMB), *pos = SP(tm, ST_POS);
    const uint32_t *w = tm->words + row * P;
    for (size_t i = 0; i < E; i++)
        x[i] = 0;
    for (size_t k = 0; k < tm->n_words[row]; k++) {
        const real *e = emb + (size_t)w[k] * E, *p = pos + k * E;
        for (size_t i = 0; i < E; i++)
            x[i] += e[i] * p[i];
    }
}

/* Whether the relational transfer runs: alpha3 is not 0, or its gradient is wanted (replay of a
 * model whose alpha3 trains). */
static inline int stm_transfer_needed(const TM(fwm__stm_tm) *tm, int replay)
{
    return SP(tm, ST_ALPHA(tm))[2] != 0 || (replay && !tm->config.fix_alpha);
}

/* One core step on rec->x (already there): Mi and Mr are updated in place; rec keeps what the
 * backward pass needs (keep: the previous memories too). s = scratch (w). */
static void stm_core_forward(const TM(fwm__stm_tm) *tm, real *rec, real *Mi, real *Mr,
                             real *scratch, int keep, int transfer)
{
    const fwm__stm_offsets *o = &tm->off;
    size_t E = tm->hp.embedding_length, d = tm->hp.memory_size, nq = tm->hp.query_count;
    size_t dd = d * d, qd = nq * d, pq = 3 * nq;
    const real *alpha = SP(tm, ST_ALPHA(tm));
    real *x = rec + o->x, *a = rec + o->a, *c = rec + o->c, *z = rec + o->z, *u = rec + o->u;
    real *tmi = rec + o->tmi, *G = rec + o->g, *H = rec + o->h, *mi1 = rec + o->mi1;
    real *vr = rec + o->vr, *A = rec + o->A, *pmt = rec + o->pmt, *nn = rec + o->nn;
    real *Y = rec + o->y, *Wt = rec + o->wt, *S = rec + o->s, *T = rec + o->t;
    real *w = scratch + o->w;
    if (keep) {
        memcpy(rec + o->mi, Mi, dd * sizeof(real));
        memcpy(rec + o->mr, Mr, qd * d * sizeof(real));
    }
    /* 1. input maps */
    stm_matvec(a, SP(tm, ST_W1(tm)), x, SP(tm, ST_B1(tm)), d, E);
    stm_matvec(c, SP(tm, ST_W2(tm)), x, SP(tm, ST_B2(tm)), d, E);
    stm_matvec(z, SP(tm, ST_W3(tm)), x, SP(tm, ST_B3(tm)), nq, E);
    real mx = z[0], sum = 0;
    for (size_t s = 1; s < nq; s++)
        mx = z[s] > mx ? z[s] : mx;
    for (size_t s = 0; s < nq; s++)
        sum += (z[s] = R_EXP(z[s] - mx));
    for (size_t s = 0; s < nq; s++)
        z[s] /= sum;
    /* 2. gates: G[r] = Ug tanh(Mi[r]) + Wg a + bg, all rows in one product */
    stm_matvec(u, SP(tm, ST_WG(tm)), a, SP(tm, ST_BG(tm)), 2 * d, d);
    tanh_precise_array(tmi, Mi, dd);
    for (size_t r = 0; r < d; r++)
        memcpy(G + r * 2 * d, u, 2 * d * sizeof(real));
    stm_gemm(0, 1, d, 2 * d, d, 1, tmi, d, SP(tm, ST_UG(tm)), d, 1, G, 2 * d);
    sigmoid_array(G, 2 * dd);
    /* 3. item write */
    for (size_t r = 0; r < d; r++)
        for (size_t col = 0; col < d; col++)
            H[r * d + col] = a[r] * a[col];
    tanh_precise_array(H, H, dd);
    for (size_t r = 0; r < d; r++) {
        const real *gi = G + r * 2 * d, *gf = gi + d;
        for (size_t col = 0; col < d; col++)
            mi1[r * d + col] = gi[col] * H[r * d + col] + gf[col] * Mi[r * d + col];
    }
    /* 4. relational read from the old Mr */
    for (size_t s = 0; s < nq; s++)
        for (size_t e = 0; e < d; e++)
            w[s * d + e] = z[s] * c[e];
    for (size_t f = 0; f < d; f++)
        vr[f] = 0;
    for (size_t n = 0; n < qd; n++)
        axpy(vr, w[n], Mr + n * d, d);
    /* 5. SAM on A = Mi' + alpha2 vr c^T */
    for (size_t e = 0; e < d; e++)
        for (size_t f = 0; f < d; f++)
            A[e * d + f] = mi1[e * d + f] + alpha[1] * vr[e] * c[f];
    const real *bqkv = SP(tm, ST_BQKV(tm));
    for (size_t e = 0; e < d; e++)
        memcpy(pmt + e * pq, bqkv, pq * sizeof(real));
    stm_gemm(0, 1, d, pq, d, 1, A, d, SP(tm, ST_WQKV(tm)), d, 1, pmt, pq);
    for (size_t j = 0; j < pq; j++) /* Pm [3 n_q, d] */
        for (size_t e = 0; e < d; e++)
            Y[j * d + e] = pmt[e * pq + j];
    rec[o->rstd] = stm_norm(nn, Y, pq * d, (real)tm->hp.sam_norm_eps);
    const real *gain = SP(tm, ST_GAIN(tm)), *shift = SP(tm, ST_SHIFT(tm));
    for (size_t n = 0; n < pq * d; n++)
        Y[n] = nn[n] * gain[n] + shift[n];
    const real *q = Y, *k = Y + qd, *v = Y + 2 * qd;
    for (size_t s = 0; s < nq; s++)
        for (size_t e = 0; e < d; e++)
            for (size_t j = 0; j < nq; j++)
                Wt[(s * d + e) * nq + j] = q[s * d + e] * k[j * d + e];
    tanh_precise_array(Wt, Wt, qd * nq);
    stm_gemm(0, 0, qd, d, nq, 1, Wt, nq, v, d, 0, S, d);
    /* 6. relational transfer T[b, c] = sum_n G1[c, n] S[n, b] + g1[c] */
    if (transfer) {
        const real *g1 = SP(tm, ST_G1B(tm));
        for (size_t b = 0; b < d; b++)
            memcpy(T + b * d, g1, d * sizeof(real));
        stm_gemm(1, 1, d, d, qd, 1, S, d, SP(tm, ST_G1(tm)), qd, 1, T, d);
    }
    if (alpha[2] != 0)
        for (size_t n = 0; n < dd; n++)
            Mi[n] = mi1[n] + alpha[2] * T[n];
    else
        memcpy(Mi, mi1, dd * sizeof(real));
    /* 7. relational write */
    for (size_t n = 0; n < qd * d; n++)
        Mr[n] = alpha[0] * Mr[n] + S[n];
}

/* Word mode's head at a loss row: r[s] = G2 vec(Mr[s]) + g2 (kept in head), logits = G3 r + g3. */
static void stm_word_head(const TM(fwm__stm_tm) *tm, const real *Mr, real *head, real *logits)
{
    size_t d = tm->hp.memory_size, nq = tm->hp.query_count, nr = tm->hp.relation_length;
    size_t dd = d * d, V = tm->hp.vocab_size;
    const real *g2 = SP(tm, ST_G2B(tm));
    for (size_t s = 0; s < nq; s++)
        memcpy(head + s * nr, g2, nr * sizeof(real));
    stm_gemm(0, 1, nq, nr, dd, 1, Mr, dd, SP(tm, ST_G2(tm)), dd, 1, head, nr);
    stm_matvec(logits, SP(tm, ST_G3(tm)), head, SP(tm, ST_G3B(tm)), V, nq * nr);
}

/* out = tanh(W2 tanh(W1 q + b1) + b2) of answer MLP m; hid kept. */
static void stm_mlp(const TM(fwm__stm_tm) *tm, int m, const real *q, real *hid, real *out)
{
    size_t E = tm->hp.embedding_length, Ha = tm->hp.answer_hidden;
    size_t rows = m == 0 ? tm->hp.memory_size : tm->hp.query_count;
    stm_matvec(hid, SP(tm, ST_MLP(tm, m, 0)), q, SP(tm, ST_MLP(tm, m, 1)), Ha, E);
    tanh_precise_array(hid, hid, Ha);
    stm_matvec(out, SP(tm, ST_MLP(tm, m, 2)), hid, SP(tm, ST_MLP(tm, m, 3)), rows, Ha);
    tanh_precise_array(out, out, rows);
}

/* Sentence mode's answer module at a loss row (the question's words at `row`): kept in head. */
static void stm_answer_head(const TM(fwm__stm_tm) *tm, size_t row, const real *Mr, real *head,
                            real *logits, real *scratch)
{
    const fwm__stm_offsets *o = &tm->off;
    size_t d = tm->hp.memory_size, nq = tm->hp.query_count, Ha = tm->hp.answer_hidden;
    size_t qd = nq * d;
    real *q = head + o->hq, *e1 = head + o->he, *sum = head + o->hsum, *w = scratch + o->w;
    stm_encode(tm, row, q);
    stm_mlp(tm, 0, q, head + o->hhid, e1);
    for (int k = 0; k < 3; k++)
        stm_mlp(tm, k + 1, q, head + o->hhid + (size_t)(k + 1) * Ha,
                head + o->hr + (size_t)k * nq);
    const real *norm = SP(tm, ST_NORM(tm));
    const real *prev = e1;
    for (int k = 0; k < 3; k++) {
        const real *rk = head + o->hr + (size_t)k * nq;
        real *nrm = head + o->hnrm + (size_t)k * d, *out = head + o->hout + (size_t)k * d;
        for (size_t s = 0; s < nq; s++)
            for (size_t e = 0; e < d; e++)
                w[s * d + e] = rk[s] * prev[e];
        for (size_t f = 0; f < d; f++)
            out[f] = 0;
        for (size_t n = 0; n < qd; n++)
            axpy(out, w[n], Mr + n * d, d);
        head[o->hrstd + (size_t)k] = stm_norm(nrm, out, d, (real)tm->hp.answer_norm_eps);
        const real *gain = norm + (size_t)(2 * k) * d, *shift = gain + d;
        for (size_t j = 0; j < d; j++)
            out[j] = nrm[j] * gain[j] + shift[j];
        for (size_t j = 0; j < d; j++)
            sum[j] = k == 0 ? out[j] : sum[j] + out[j];
        prev = out;
    }
    stm_matvec(logits, SP(tm, ST_Z(tm)), sum, NULL, tm->hp.vocab_size, d);
}

/* ---- stage 1: the token bookkeeping of every lane ------------------------------------------- */
static void stm_classify(TM(fwm__stm_tm) *tm, int len)
{
    const fwm_stm_hparams *hp = &tm->hp;
    size_t B = (size_t)tm->config.lanes, P = hp->sentence_length;
    for (size_t b = 0; b < B; b++) {
        real *ints = tm->shell.state + b * tm->shell.state_size + tm->mem_floats; /* P words, length, slot */
        uint32_t buffer[FWM_STM_MAX_SENTENCE_LENGTH], length = 0, slot = 0;
        if (tm->sentence) {
            for (size_t k = 0; k < P; k++)
                buffer[k] = (uint32_t)ints[k];
            length = (uint32_t)ints[P];
            slot = (uint32_t)ints[P + 1];
        }
        for (size_t t = 0; t < (size_t)len; t++) {
            size_t row = t * B + b;
            uint32_t token = tm->shell.x[row];
            uint8_t act = 0;
            tm->n_words[row] = 0;
            int reset = hp->reset_on_eos && token == hp->eos_token_id;
            if (!tm->sentence) {
                tm->act[row] = (uint8_t)(FWM__STM_ACT_CORE | (reset ? FWM__STM_ACT_RESET : 0));
                continue;
            }
            if (reset) {
                length = slot = 0;
                memset(buffer, 0, P * sizeof *buffer);
                tm->act[row] = FWM__STM_ACT_RESET;
                continue;
            }
            if (slot) { /* the answer: read, and the slot closes */
                slot = 0;
                tm->act[row] = 0;
                continue;
            }
            if (length < P)
                buffer[length++] = token;
            if (token == hp->statement_end_token_id || token == hp->question_end_token_id) {
                act = token == hp->statement_end_token_id ? FWM__STM_ACT_CORE : FWM__STM_ACT_ANSWER;
                memcpy(tm->words + row * P, buffer, length * sizeof *buffer);
                tm->n_words[row] = (uint16_t)length;
                memset(buffer, 0, P * sizeof *buffer);
                length = 0;
                slot = act == FWM__STM_ACT_ANSWER;
            }
            tm->act[row] = act;
        }
        if (tm->sentence) {
            for (size_t k = 0; k < P; k++)
                ints[k] = (real)buffer[k];
            ints[P] = (real)length;
            ints[P + 1] = (real)slot;
        }
    }
}

/* ---- stage 2: every lane walks its tokens --------------------------------------------------- */
typedef struct TM(stm_ctx) {
    TM(fwm__stm_tm) *tm;
    int len;
} TM(stm_ctx);

/* The input of a core step at `row` into x: the word's embedding or the encoded sentence. */
static inline void stm_step_input(const TM(fwm__stm_tm) *tm, size_t row, real *x)
{
    size_t E = tm->hp.embedding_length;
    if (tm->sentence)
        stm_encode(tm, row, x);
    else
        memcpy(x, SP(tm, ST_EMB) + (size_t)tm->shell.x[row] * E, E * sizeof(real));
}

static void stm_forward_worker(void *ctx_pointer, int index, int threads)
{
    TM(stm_ctx) *ctx = ctx_pointer;
    TM(fwm__stm_tm) *tm = ctx->tm;
    const fwm__stm_offsets *o = &tm->off;
    size_t B = (size_t)tm->config.lanes, V = tm->hp.vocab_size;
    size_t dd = (size_t)fwm__stm_item_floats(&tm->hp);
    size_t mem = tm->mem_floats, K = (size_t)tm->segment;
    int training = tm->snapshots != NULL, transfer = stm_transfer_needed(tm, 0);
    real *rec = tm->thread_acts + (size_t)index * K * o->act_total;
    real *scratch = tm->thread_scratch + (size_t)index * o->scratch_total;
    size_t b0, b1;
    fwm__pool_range(B, index, threads, &b0, &b1);
    for (size_t b = b0; b < b1; b++) {
        real *Mi = tm->shell.state + b * tm->shell.state_size, *Mr = Mi + dd;
        real *snaps = training ? tm->snapshots + b * (size_t)tm->max_segments * mem : NULL;
        int *starts = tm->segment_start + b * (size_t)tm->max_segments;
        int seg = 0;
        size_t steps = 0;
        if (training)
            memcpy(snaps, Mi, mem * sizeof(real));
        starts[0] = 0;
        for (int t = 0; t < ctx->len; t++) {
            size_t row = (size_t)t * B + b;
            uint8_t act = tm->act[row];
            if (training && (act & FWM__STM_ACT_CORE) && steps == K) {
                seg++;
                memcpy(snaps + (size_t)seg * mem, Mi, mem * sizeof(real));
                starts[seg] = t;
                steps = 0;
            }
            if (act & FWM__STM_ACT_RESET) {
                memcpy(Mi, SP(tm, ST_MI0(tm)), dd * sizeof(real));
                memcpy(Mr, SP(tm, ST_MR0(tm)), (mem - dd) * sizeof(real));
            }
            if (act & FWM__STM_ACT_CORE) {
                stm_step_input(tm, row, rec + o->x);
                stm_core_forward(tm, rec, Mi, Mr, scratch, 0, transfer);
                steps++;
            }
            int li = tm->loss_index[row];
            if (li >= 0) {
                real *head = tm->heads + (size_t)li * o->head_total;
                real *logits = tm->shell.probs + (size_t)li * V;
                if (tm->sentence)
                    stm_answer_head(tm, row, Mr, head, logits, scratch);
                else
                    stm_word_head(tm, Mr, head, logits);
            }
        }
        tm->n_segments[b] = seg + 1;
    }
}

typedef struct TM(stm_loss_ctx) {
    TM(fwm__stm_tm) *tm;
} TM(stm_loss_ctx);

static void stm_loss_worker(void *ctx_pointer, int index, int threads)
{
    TM(stm_loss_ctx) *ctx = ctx_pointer;
    TM(fwm__stm_tm) *tm = ctx->tm;
    size_t V = tm->hp.vocab_size, i0, i1;
    fwm__pool_range((size_t)tm->shell.n_loss_rows, index, threads, &i0, &i1);
    for (size_t i = i0; i < i1; i++)
        tm->shell.row_loss[i] = softmax_ce_forward(tm->shell.probs + i * V, V, tm->shell.y[tm->shell.loss_rows[i]]);
}

double TM(fwm__stm_tm_forward)(TM(fwm__stm_tm) *tm, const uint32_t *x, const uint32_t *y, int len)
{
    const fwm_stm_hparams *hp = &tm->hp;
    size_t B = (size_t)tm->config.lanes, V = hp->vocab_size;
    tm->shell.len = len;
    for (size_t t = 0; t < (size_t)len; t++)
        for (size_t b = 0; b < B; b++) {
            size_t row = t * B + b;
            tm->shell.x[row] = x[b * (size_t)len + t];
            tm->shell.y[row] = y[b * (size_t)len + t];
        }
    /* 1. the bookkeeping, then the loss rows */
    stm_classify(tm, len);
    tm->shell.n_loss_rows = 0;
    for (size_t row = 0; row < (size_t)len * B; row++) {
        int loss = tm->sentence
                       ? (tm->act[row] & FWM__STM_ACT_ANSWER) && tm->shell.y[row] != hp->padding_token_id
                       : fwm__is_loss_position(tm->config.loss_mode, tm->config.loss_token_id,
                                               hp->padding_token_id, tm->shell.x[row], tm->shell.y[row]);
        tm->loss_index[row] = loss ? tm->shell.n_loss_rows : -1;
        if (loss)
            tm->shell.loss_rows[tm->shell.n_loss_rows++] = (int)row;
    }
    /* 2. the lanes */
    TM(stm_ctx) ctx = {tm, len};
    fwm__pool_run(tm->shell.pool, stm_forward_worker, &ctx);
    /* 3. the loss */
    tm->shell.loss = 0;
    tm->shell.loss_sum = 0;
    if (tm->shell.n_loss_rows == 0)
        return 0;
    size_t n_loss = (size_t)tm->shell.n_loss_rows;
    if (tm->shell.logits)
        memcpy(tm->shell.logits, tm->shell.probs, n_loss * V * sizeof(real));
    TM(stm_loss_ctx) lctx = {tm};
    fwm__pool_run(tm->shell.pool, stm_loss_worker, &lctx);
    double sum = 0;
    for (size_t i = 0; i < n_loss; i++)
        sum += tm->shell.row_loss[i];
    tm->shell.loss_sum = sum;
    tm->shell.loss = sum / (double)n_loss;
    return tm->shell.loss;
}
