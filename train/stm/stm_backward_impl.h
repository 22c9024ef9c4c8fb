/* stm_backward_impl.h - the STM trainer model's backward pass, template over `real` (see
 * real_template.h); included by stm_f32.c and stm_f64.c after stm_forward_impl.h.
 *
 * The loss rows' probabilities become the gradients of their logits; then every lane (lanes split
 * across threads) walks its segments from the last: the segment is replayed from its snapshot with
 * every core step's activations kept (the forward's code, so the forward's bits), then its tokens
 * are walked back: a loss row's head adds to the gradient of Mr, a core step maps the gradients of
 * the memories after it to those before it (and to the parameters and its input, the word's
 * embedding or the sentence's encoder), a reset passes them to the initial memories and clears
 * them. Each thread adds into its own gradient buffer; the buffers are added into tm->shell.grads in
 * thread order. The gradients of held tensors (alpha1 and alpha3 with fix_alpha, Z without
 * train_output) are left out.
 */

#define SG(g, tm, k) ((g) + (tm)->layout.offset[k])

/* dW += d ⊗ x (W [rows, cols]) */
static inline void stm_outer_add(real *W, const real *d, const real *x, size_t rows,
                                 size_t cols)
{
    for (size_t i = 0; i < rows; i++)
        if (d[i] != 0)
            axpy(W + i * cols, d[i], x, cols);
}

/* out += W^T d (W [rows, cols]) */
static inline void stm_matvec_t_add(real *out, const real *W, const real *d, size_t rows,
                                    size_t cols)
{
    for (size_t i = 0; i < rows; i++)
        if (d[i] != 0)
            axpy(out, d[i], W + i * cols, cols);
}

/* The gradient of a step's input x (or a question vector) to the embeddings (and positions). */
static void stm_input_backward(const TM(fwm__stm_tm) *tm, size_t row, const real *dx, real *g)
{
    size_t E = tm->hp.embedding_length, P = tm->hp.sentence_length;
    real *demb = SG(g, tm, ST_EMB);
    if (!tm->sentence) {
        for (size_t i = 0; i < E; i++)
            demb[(size_t)tm->shell.x[row] * E + i] += dx[i];
        return;
    }
    const real *emb = SP(tm, ST_EMB), *pos = SP(tm, ST_POS);
    real *dpos = SG(g, tm, ST_POS);
    const uint32_t *w = tm->words + row * P;
    for (size_t k = 0; k < tm->n_words[row]; k++) {
        const real *e = emb + (size_t)w[k] * E, *p = pos + k * E;
        real *de = demb + (size_t)w[k] * E, *dp = dpos + k * E;
        for (size_t i = 0; i < E; i++) {
            de[i] += dx[i] * p[i];
            dp[i] += dx[i] * e[i];
        }
    }
}

/* The backward of one core step (record rec): dMi, dMr hold the gradients of the memories after it
 * on entry, before it on return; the step's input gradient goes to the embeddings. */
static void stm_core_backward(const TM(fwm__stm_tm) *tm, const real *rec, size_t row, real *dMi,
                              real *dMr, real *sc, real *g, int transfer)
{
    const fwm__stm_offsets *o = &tm->off;
    size_t E = tm->hp.embedding_length, d = tm->hp.memory_size, nq = tm->hp.query_count;
    size_t dd = d * d, qd = nq * d, pq = 3 * nq, n_all = pq * d;
    const real *alpha = SP(tm, ST_ALPHA(tm));
    real *dalpha = SG(g, tm, ST_ALPHA(tm));
    const real *x = rec + o->x, *a = rec + o->a, *c = rec + o->c, *z = rec + o->z;
    const real *Mi = rec + o->mi, *Mr = rec + o->mr, *tmi = rec + o->tmi, *G = rec + o->g;
    const real *H = rec + o->h, *vr = rec + o->vr, *A = rec + o->A, *nn = rec + o->nn;
    const real *Y = rec + o->y, *Wt = rec + o->wt, *S = rec + o->s, *T = rec + o->t;
    real rstd = rec[o->rstd];
    real *dS = sc + o->ds, *dWt = sc + o->dwt, *dY = sc + o->dy, *dA = sc + o->dA;
    real *dG = sc + o->dg, *dTM = sc + o->dtm, *dT = sc + o->dt, *dx = sc + o->dx;
    real *da = sc + o->da, *dc = sc + o->dc, *dz = sc + o->dz, *du = sc + o->du;
    real *dvr = sc + o->dvr, *dw = sc + o->dw;
    /* 6. the transfer: Mi = Mi' + alpha3 T */
    if (transfer) {
        real s3 = 0;
        for (size_t n = 0; n < dd; n++)
            s3 += dMi[n] * T[n];
        dalpha[2] += s3;
    }
    if (transfer && alpha[2] != 0) {
        for (size_t n = 0; n < dd; n++)
            dT[n] = alpha[2] * dMi[n];
        stm_gemm(1, 1, d, qd, d, 1, dT, d, S, d, 1, SG(g, tm, ST_G1(tm)), qd);
        real *dg1 = SG(g, tm, ST_G1B(tm));
        for (size_t b = 0; b < d; b++)
            for (size_t cc = 0; cc < d; cc++)
                dg1[cc] += dT[b * d + cc];
        stm_gemm(1, 1, qd, d, d, 1, SP(tm, ST_G1(tm)), qd, dT, d, 0, dS, d);
    } else {
        memset(dS, 0, qd * d * sizeof(real));
    }
    /* 7. Mr = alpha1 Mr + S */
    real s1 = 0;
    for (size_t n = 0; n < qd * d; n++) {
        s1 += dMr[n] * Mr[n];
        dS[n] += dMr[n];
        dMr[n] *= alpha[0];
    }
    dalpha[0] += s1;
    /* 5. attention S = tanh(q k) v */
    const real *q = Y, *k = Y + qd, *v = Y + 2 * qd;
    stm_gemm(0, 1, qd, nq, d, 1, dS, d, v, d, 0, dWt, nq);
    stm_gemm(1, 0, nq, d, qd, 1, Wt, nq, dS, d, 0, dY + 2 * qd, d);
    for (size_t n = 0; n < qd * nq; n++)
        dWt[n] *= 1 - Wt[n] * Wt[n];
    real *dq = dY, *dk = dY + qd;
    memset(dY, 0, 2 * qd * sizeof(real));
    for (size_t s = 0; s < nq; s++)
        for (size_t e = 0; e < d; e++) {
            const real *dp = dWt + (s * d + e) * nq;
            real qse = q[s * d + e], acc = 0;
            for (size_t j = 0; j < nq; j++) {
                acc += dp[j] * k[j * d + e];
                dk[j * d + e] += dp[j] * qse;
            }
            dq[s * d + e] = acc;
        }
    /* the layer norm with gain and shift */
    const real *gain = SP(tm, ST_GAIN(tm));
    real *dgain = SG(g, tm, ST_GAIN(tm)), *dshift = SG(g, tm, ST_SHIFT(tm));
    real m1 = 0, m2 = 0;
    for (size_t n = 0; n < n_all; n++) {
        dgain[n] += dY[n] * nn[n];
        dshift[n] += dY[n];
        dY[n] *= gain[n];
        m1 += dY[n];
        m2 += dY[n] * nn[n];
    }
    m1 /= (real)n_all;
    m2 /= (real)n_all;
    for (size_t n = 0; n < n_all; n++)
        dY[n] = rstd * (dY[n] - m1 - nn[n] * m2); /* now dPm [3 n_q, d] */
    /* Pm[j, e] = Wqkv[j] . A[e] + bqkv[j] */
    stm_gemm(0, 0, pq, d, d, 1, dY, d, A, d, 1, SG(g, tm, ST_WQKV(tm)), d);
    real *dbqkv = SG(g, tm, ST_BQKV(tm));
    for (size_t j = 0; j < pq; j++) {
        real acc = 0;
        for (size_t e = 0; e < d; e++)
            acc += dY[j * d + e];
        dbqkv[j] += acc;
    }
    stm_gemm(1, 0, d, d, pq, 1, dY, d, SP(tm, ST_WQKV(tm)), d, 0, dA, d);
    /* A = Mi' + alpha2 vr c^T: dMi' = dMi + dA */
    real s2 = 0;
    for (size_t i = 0; i < d; i++) {
        dc[i] = 0;
        dvr[i] = 0;
    }
    for (size_t e = 0; e < d; e++) {
        const real *dae = dA + e * d;
        real acc = 0;
        for (size_t f = 0; f < d; f++) {
            acc += dae[f] * c[f];
            dc[f] += alpha[1] * dae[f] * vr[e];
        }
        s2 += acc * vr[e];
        dvr[e] = alpha[1] * acc;
    }
    dalpha[1] += s2;
    for (size_t n = 0; n < dd; n++)
        dMi[n] += dA[n];
    /* 4. vr = Mr^T w, w = z ⊗ c */
    for (size_t i = 0; i < nq; i++)
        dz[i] = 0;
    for (size_t s = 0; s < nq; s++)
        for (size_t e = 0; e < d; e++) {
            size_t n = s * d + e;
            real wn = z[s] * c[e];
            axpy(dMr + n * d, wn, dvr, d);
            dw[n] = dot(Mr + n * d, dvr, d);
            dz[s] += dw[n] * c[e];
            dc[e] += dw[n] * z[s];
        }
    /* 3. Mi' = I * H + F * Mi; 2. the gates */
    for (size_t i = 0; i < d; i++)
        da[i] = 0;
    for (size_t r = 0; r < d; r++) {
        const real *gi = G + r * 2 * d, *gf = gi + d;
        real *dgi = dG + r * 2 * d, *dgf = dgi + d;
        for (size_t col = 0; col < d; col++) {
            size_t n = r * d + col;
            real gm = dMi[n], h = H[n];
            dgi[col] = gm * h * gi[col] * (1 - gi[col]);
            dgf[col] = gm * Mi[n] * gf[col] * (1 - gf[col]);
            dMi[n] = gm * gf[col];
            real dpre = gm * gi[col] * (1 - h * h);
            da[r] += dpre * a[col];
            da[col] += dpre * a[r];
        }
    }
    stm_gemm(1, 0, 2 * d, d, d, 1, dG, 2 * d, tmi, d, 1, SG(g, tm, ST_UG(tm)), d);
    for (size_t j = 0; j < 2 * d; j++)
        du[j] = 0;
    for (size_t r = 0; r < d; r++)
        for (size_t j = 0; j < 2 * d; j++)
            du[j] += dG[r * 2 * d + j];
    stm_gemm(0, 0, d, d, 2 * d, 1, dG, 2 * d, SP(tm, ST_UG(tm)), d, 0, dTM, d);
    for (size_t n = 0; n < dd; n++)
        dMi[n] += dTM[n] * (1 - tmi[n] * tmi[n]);
    /* u = Wg a + bg */
    stm_outer_add(SG(g, tm, ST_WG(tm)), du, a, 2 * d, d);
    real *dbg = SG(g, tm, ST_BG(tm));
    for (size_t j = 0; j < 2 * d; j++)
        dbg[j] += du[j];
    stm_matvec_t_add(da, SP(tm, ST_WG(tm)), du, 2 * d, d);
    /* 1. the input maps and the softmax */
    real zdz = 0;
    for (size_t s = 0; s < nq; s++)
        zdz += z[s] * dz[s];
    for (size_t s = 0; s < nq; s++)
        dz[s] = z[s] * (dz[s] - zdz);
    for (size_t i = 0; i < E; i++)
        dx[i] = 0;
    stm_outer_add(SG(g, tm, ST_W1(tm)), da, x, d, E);
    stm_outer_add(SG(g, tm, ST_W2(tm)), dc, x, d, E);
    stm_outer_add(SG(g, tm, ST_W3(tm)), dz, x, nq, E);
    real *db1 = SG(g, tm, ST_B1(tm)), *db2 = SG(g, tm, ST_B2(tm)), *db3 = SG(g, tm, ST_B3(tm));
    for (size_t i = 0; i < d; i++) {
        db1[i] += da[i];
        db2[i] += dc[i];
    }
    for (size_t s = 0; s < nq; s++)
        db3[s] += dz[s];
    stm_matvec_t_add(dx, SP(tm, ST_W1(tm)), da, d, E);
    stm_matvec_t_add(dx, SP(tm, ST_W2(tm)), dc, d, E);
    stm_matvec_t_add(dx, SP(tm, ST_W3(tm)), dz, nq, E);
    stm_input_backward(tm, row, dx, g);
}

/* Word mode's head: dlog (V) is the gradient of the row's logits; Mr the memory it read. */
static void stm_word_head_backward(const TM(fwm__stm_tm) *tm, const real *head,
                                   const real *dlog, const real *Mr, real *dMr, real *sc,
                                   real *g)
{
    size_t d = tm->hp.memory_size, nq = tm->hp.query_count, nr = tm->hp.relation_length;
    size_t dd = d * d, V = tm->hp.vocab_size, n = nq * nr;
    real *dr = sc + tm->off.dr;
    stm_outer_add(SG(g, tm, ST_G3(tm)), dlog, head, V, n);
    real *dg3 = SG(g, tm, ST_G3B(tm)), *dg2 = SG(g, tm, ST_G2B(tm));
    for (size_t v = 0; v < V; v++)
        dg3[v] += dlog[v];
    for (size_t i = 0; i < n; i++)
        dr[i] = 0;
    stm_matvec_t_add(dr, SP(tm, ST_G3(tm)), dlog, V, n);
    stm_gemm(1, 0, nr, dd, nq, 1, dr, nr, Mr, dd, 1, SG(g, tm, ST_G2(tm)), dd);
    for (size_t s = 0; s < nq; s++)
        for (size_t j = 0; j < nr; j++)
            dg2[j] += dr[s * nr + j];
    stm_gemm(0, 0, nq, dd, nr, 1, dr, nr, SP(tm, ST_G2(tm)), dd, 1, dMr, dd);
}

/* The backward of answer MLP m: dout is the gradient of its output; dq gets the input's. */
static void stm_mlp_backward(const TM(fwm__stm_tm) *tm, int m, const real *q, const real *hid,
                             const real *out, const real *dout, real *dq, real *sc, real *g)
{
    size_t E = tm->hp.embedding_length, Ha = tm->hp.answer_hidden;
    size_t rows = m == 0 ? tm->hp.memory_size : tm->hp.query_count;
    real *dpre = sc + tm->off.dpre, *dhid = sc + tm->off.dhid;
    for (size_t i = 0; i < rows; i++)
        dpre[i] = dout[i] * (1 - out[i] * out[i]);
    stm_outer_add(SG(g, tm, ST_MLP(tm, m, 2)), dpre, hid, rows, Ha);
    real *db2 = SG(g, tm, ST_MLP(tm, m, 3)), *db1 = SG(g, tm, ST_MLP(tm, m, 1));
    for (size_t i = 0; i < rows; i++)
        db2[i] += dpre[i];
    for (size_t i = 0; i < Ha; i++)
        dhid[i] = 0;
    stm_matvec_t_add(dhid, SP(tm, ST_MLP(tm, m, 2)), dpre, rows, Ha);
    for (size_t i = 0; i < Ha; i++)
        dhid[i] *= 1 - hid[i] * hid[i];
    stm_outer_add(SG(g, tm, ST_MLP(tm, m, 0)), dhid, q, Ha, E);
    for (size_t i = 0; i < Ha; i++)
        db1[i] += dhid[i];
    stm_matvec_t_add(dq, SP(tm, ST_MLP(tm, m, 0)), dhid, Ha, E);
}

/* Sentence mode's answer module at `row`. */
static void stm_answer_backward(const TM(fwm__stm_tm) *tm, size_t row, const real *head,
                                const real *dlog, const real *Mr, real *dMr, real *sc, real *g)
{
    const fwm__stm_offsets *o = &tm->off;
    size_t d = tm->hp.memory_size, nq = tm->hp.query_count, Ha = tm->hp.answer_hidden;
    size_t E = tm->hp.embedding_length, V = tm->hp.vocab_size;
    real *dsum = sc + o->dsum, *dout = sc + o->dout, *dn = sc + o->dn, *draw = sc + o->draw;
    real *dprev = sc + o->dprev, *drk = sc + o->drk, *dq = sc + o->dq;
    const real *sum = head + o->hsum, *e1 = head + o->he, *q = head + o->hq;
    stm_outer_add(SG(g, tm, ST_Z(tm)), dlog, sum, V, d);
    for (size_t j = 0; j < d; j++)
        dsum[j] = 0;
    stm_matvec_t_add(dsum, SP(tm, ST_Z(tm)), dlog, V, d);
    const real *norm = SP(tm, ST_NORM(tm));
    real *dnorm = SG(g, tm, ST_NORM(tm));
    memcpy(dout, dsum, d * sizeof(real));
    for (int k = 2; k >= 0; k--) {
        const real *nrm = head + o->hnrm + (size_t)k * d, *rk = head + o->hr + (size_t)k * nq;
        const real *prev = k == 0 ? e1 : head + o->hout + (size_t)(k - 1) * d;
        real rstd = head[o->hrstd + (size_t)k];
        const real *gain = norm + (size_t)(2 * k) * d;
        real *dgain = dnorm + (size_t)(2 * k) * d, *dshift = dgain + d;
        real m1 = 0, m2 = 0;
        for (size_t j = 0; j < d; j++) {
            dgain[j] += dout[j] * nrm[j];
            dshift[j] += dout[j];
            dn[j] = dout[j] * gain[j];
            m1 += dn[j];
            m2 += dn[j] * nrm[j];
        }
        m1 /= (real)d;
        m2 /= (real)d;
        for (size_t j = 0; j < d; j++)
            draw[j] = rstd * (dn[j] - m1 - nrm[j] * m2);
        real *dr = drk + (size_t)k * nq;
        for (size_t j = 0; j < d; j++)
            dprev[j] = 0;
        for (size_t s = 0; s < nq; s++) {
            real acc = 0;
            for (size_t e = 0; e < d; e++) {
                size_t n = s * d + e;
                axpy(dMr + n * d, rk[s] * prev[e], draw, d);
                real dwn = dot(Mr + n * d, draw, d);
                acc += dwn * prev[e];
                dprev[e] += dwn * rk[s];
            }
            dr[s] = acc;
        }
        if (k > 0)
            for (size_t j = 0; j < d; j++)
                dout[j] = dsum[j] + dprev[j];
    }
    for (size_t i = 0; i < E; i++)
        dq[i] = 0;
    stm_mlp_backward(tm, 0, q, head + o->hhid, e1, dprev, dq, sc, g);
    for (int k = 0; k < 3; k++)
        stm_mlp_backward(tm, k + 1, q, head + o->hhid + (size_t)(k + 1) * Ha,
                         head + o->hr + (size_t)k * nq, drk + (size_t)k * nq, dq, sc, g);
    stm_input_backward(tm, row, dq, g);
}

static void stm_backward_worker(void *ctx_pointer, int index, int threads)
{
    TM(stm_ctx) *ctx = ctx_pointer;
    TM(fwm__stm_tm) *tm = ctx->tm;
    const fwm__stm_offsets *o = &tm->off;
    size_t B = (size_t)tm->config.lanes, V = tm->hp.vocab_size;
    size_t dd = (size_t)fwm__stm_item_floats(&tm->hp);
    size_t mem = tm->mem_floats, rel = mem - dd, K = (size_t)tm->segment;
    int transfer = stm_transfer_needed(tm, 1);
    const real *alpha = SP(tm, ST_ALPHA(tm));
    real *recs = tm->thread_acts + (size_t)index * K * o->act_total;
    real *sc = tm->thread_scratch + (size_t)index * o->scratch_total;
    real *g = tm->thread_grads + (size_t)index * tm->layout.total;
    int *source = tm->thread_source + (size_t)index * (size_t)tm->config.window;
    real *wMi = sc + o->wmi, *wMr = sc + o->wmr, *dMi = sc + o->dmi, *dMr = sc + o->dmr;
    real *mrc = sc + o->mrc;
    size_t b0, b1;
    fwm__pool_range(B, index, threads, &b0, &b1);
    for (size_t b = b0; b < b1; b++) {
        const real *snaps = tm->snapshots + b * (size_t)tm->max_segments * mem;
        const int *starts = tm->segment_start + b * (size_t)tm->max_segments;
        memset(dMi, 0, dd * sizeof(real));
        memset(dMr, 0, rel * sizeof(real));
        for (int seg = tm->n_segments[b] - 1; seg >= 0; seg--) {
            int t0 = starts[seg], t1 = seg + 1 < tm->n_segments[b] ? starts[seg + 1] : ctx->len;
            /* replay, keeping every step; source[t - t0]: the step whose Mr the token's
             * prediction reads (-1: the snapshot's, -2: the initial memory) */
            memcpy(wMi, snaps + (size_t)seg * mem, dd * sizeof(real));
            memcpy(wMr, snaps + (size_t)seg * mem + dd, rel * sizeof(real));
            int j = 0, last = -1;
            for (int t = t0; t < t1; t++) {
                size_t row = (size_t)t * B + b;
                uint8_t act = tm->act[row];
                if (act & FWM__STM_ACT_RESET) {
                    memcpy(wMi, SP(tm, ST_MI0(tm)), dd * sizeof(real));
                    memcpy(wMr, SP(tm, ST_MR0(tm)), rel * sizeof(real));
                    last = -2;
                }
                if (act & FWM__STM_ACT_CORE) {
                    real *rec = recs + (size_t)j * o->act_total;
                    stm_step_input(tm, row, rec + o->x);
                    stm_core_forward(tm, rec, wMi, wMr, sc, 1, transfer);
                    last = j++;
                }
                source[t - t0] = last;
            }
            /* walk back */
            for (int t = t1 - 1; t >= t0; t--) {
                size_t row = (size_t)t * B + b;
                uint8_t act = tm->act[row];
                int li = tm->loss_index[row];
                if (li >= 0) {
                    int src = source[t - t0];
                    const real *Mr;
                    if (src >= 0) { /* the memory after step src: alpha1 Mr + S, as the forward */
                        const real *rec = recs + (size_t)src * o->act_total;
                        const real *mr = rec + o->mr, *S = rec + o->s;
                        for (size_t n = 0; n < rel; n++)
                            mrc[n] = alpha[0] * mr[n] + S[n];
                        Mr = mrc;
                    } else {
                        Mr = src == -1 ? snaps + (size_t)seg * mem + dd : SP(tm, ST_MR0(tm));
                    }
                    const real *head = tm->heads + (size_t)li * o->head_total;
                    const real *dlog = tm->shell.probs + (size_t)li * V;
                    if (tm->sentence)
                        stm_answer_backward(tm, row, head, dlog, Mr, dMr, sc, g);
                    else
                        stm_word_head_backward(tm, head, dlog, Mr, dMr, sc, g);
                }
                if (act & FWM__STM_ACT_CORE) {
                    j--;
                    stm_core_backward(tm, recs + (size_t)j * o->act_total, row, dMi, dMr, sc,
                                      g, transfer);
                }
                if (act & FWM__STM_ACT_RESET) {
                    real *g0 = SG(g, tm, ST_MI0(tm)), *g1 = SG(g, tm, ST_MR0(tm));
                    for (size_t n = 0; n < dd; n++)
                        g0[n] += dMi[n];
                    for (size_t n = 0; n < rel; n++)
                        g1[n] += dMr[n];
                    memset(dMi, 0, dd * sizeof(real));
                    memset(dMr, 0, rel * sizeof(real));
                }
            }
        }
    }
}

void TM(fwm__stm_tm_backward)(TM(fwm__stm_tm) *tm)
{
    if (!tm->shell.grads || tm->shell.n_loss_rows == 0)
        return;
    size_t V = tm->hp.vocab_size;
    long denominator = tm->shell.loss_denominator > 0 ? tm->shell.loss_denominator : tm->shell.n_loss_rows;
    real scale = (real)(1.0 / (double)denominator);
    for (int i = 0; i < tm->shell.n_loss_rows; i++)
        softmax_ce_backward(tm->shell.probs + (size_t)i * V, V, tm->shell.y[tm->shell.loss_rows[i]], scale);
    int threads = fwm__pool_size(tm->shell.pool);
    memset(tm->thread_grads, 0, (size_t)threads * tm->layout.total * sizeof(real));
    TM(stm_ctx) ctx = {tm, tm->shell.len};
    fwm__pool_run(tm->shell.pool, stm_backward_worker, &ctx);
    for (int k = 0; k < threads; k++) { /* the held tensors */
        real *g = tm->thread_grads + (size_t)k * tm->layout.total;
        if (tm->config.fix_alpha) {
            SG(g, tm, ST_ALPHA(tm))[0] = 0;
            SG(g, tm, ST_ALPHA(tm))[2] = 0;
        }
        if (tm->sentence && !tm->config.train_output)
            memset(SG(g, tm, ST_Z(tm)), 0, tm->layout.size[ST_Z(tm)] * sizeof(real));
    }
    /* tm->shell.grads += the threads' buffers, added in thread order */
    par_colsum(tm->shell.pool, tm->thread_grads, (size_t)threads, tm->layout.total, tm->layout.total,
               tm->shell.grads, NULL);
}
