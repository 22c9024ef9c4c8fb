/* stm_step.c - the STM's step maths: its chunk step and workspace (fwm__stm_step_kernel) behind the
 * shared step entry points (step_driver.h), on up to CHUNK_SESSIONS sessions at a time.
 *
 * The products with weights
 * every session shares are batched across the chunk, and across the rows of each session's memory
 * (fwm__matvec_batch, whose arithmetic per element does not depend on the batch): the input maps,
 * the gates' Ug tanh(Mi[r]) over every row r, the SAM projection over every row of A, eq. 14's G2
 * over every slot and G3, and the answer module's MLPs and Z; the relational transfer G1 runs over
 * every column of one session's S at a time (its S^T, n_q d^2 floats, stays in cache that way; the
 * kernel's register blocking gains nothing from more vectors). Everything on one session's own
 * memories runs per session in a fixed order.
 * So single, sequence and batched steps are bit-identical by construction.
 *
 * Per token (docs/MODEL.md, "The STM (self-attentive associative memory)"):
 *   <eos> with reset_on_eos restores the reset state (sentence mode: and predicts nothing);
 *   word mode: a core step with x = Emb[token], then (logits wanted) eq. 14's logits;
 *   sentence mode: the token that fills an open answer slot closes it and does nothing else; any
 *   other is appended to the buffer while it holds fewer than P words; a statement end encodes the
 *   buffer into x and takes a core step; a question end encodes it into q and (logits wanted) runs
 *   the answer module on Mr, and opens the slot; both empty the buffer. Positions that predict
 *   nothing get a row of quiet NaNs (fwm.h).
 * The core step on x: a = W1 x + b1, c = W2 x + b2, z = softmax(W3 x + b3); G[r] = Wg a + bg +
 * Ug tanh(Mi[r]); Mi' = sigmoid(G_i) tanh(a a^T) + sigmoid(G_f) Mi; vr = sum_{s,e} z[s] c[e] Mr[s,e,:]
 * (the old Mr); A = Mi' + alpha2 vr c^T; Pm = LN(Wqkv A^T + bqkv) * gain + shift; S[s] = sum_j
 * tanh(q_s * k_j) v_j^T; Mi = Mi' + alpha3 T with T[b] = G1 S[:, :, b] + g1 (skipped when alpha3 is
 * 0, where it adds nothing); Mr = alpha1 Mr + S. */
#include <math.h>
#include <string.h>

#include "kernels.h"
#include "step_driver.h"
#include "stm_runtime.h"

#define CHUNK_SESSIONS 8

static size_t pad16(size_t n) { return (n + 15) & ~(size_t)15; }

enum action { ACT_NONE, ACT_CORE, ACT_ANSWER };

/* The sizes one step works with. */
typedef struct dims {
    size_t V, E, P, d, nq, nr, Ha, dd, qd, pq; /* dd = d^2, qd = n_q d, pq = 3 n_q */
} dims;

static dims dims_of(const fwm_stm_hparams *hp) {
    dims k;
    k.V = hp->vocab_size, k.E = hp->embedding_length, k.P = hp->sentence_length;
    k.d = hp->memory_size, k.nq = hp->query_count, k.nr = hp->relation_length;
    k.Ha = hp->answer_hidden;
    k.dd = k.d * k.d, k.qd = k.nq * k.d, k.pq = 3 * k.nq;
    return k;
}

/* Scratch for `capacity` sessions, and the sizes. Per session (kept across the batched products): the
 * step's input x (or the question vector), a, c, z, the gate input part u, one d x d buffer (tanh(Mi),
 * then A), the gates G, the projection Pm^T, eq. 14's r, and the answer module's vectors. Shared
 * (per-session work runs one session at a time): Pm, the attention weights, v^T, S, S^T and T for
 * the transfer, the read's weights and vr, a row of the outer product. Then the pointer arrays of
 * the batched products. */
typedef struct workspace {
    dims k;
    float *x, *a, *c, *z, *u, *D1, *G, *PmT, *rr, *ans;
    size_t xs, as, zs, us, D1s, Gs, PmTs, rrs, anss;
    float *Pm, *Wt, *VT, *S, *ST, *T, *w, *vr, *row;
    const float **px, **pb;
    float **py;
} workspace;

_Static_assert(sizeof(workspace) <= FWM_STEP_WORKSPACE_BYTES, "the STM's workspace fits the driver's room");

static size_t answer_floats(const dims *k) { return 4 * pad16(k->Ha) + 5 * pad16(k->d) + 3 * pad16(k->nq); }

/* The strides (per session) into ws, the pointer slots the batched products need, and the floats
 * of the whole scratch. */
static size_t strides(workspace *ws, const dims *k, size_t capacity, size_t *vectors) {
    ws->xs = pad16(k->E), ws->as = pad16(k->d), ws->zs = pad16(k->nq), ws->us = pad16(2 * k->d);
    ws->D1s = pad16(k->dd), ws->Gs = pad16(2 * k->dd), ws->PmTs = pad16(k->pq * k->d);
    ws->rrs = pad16(k->nq * k->nr), ws->anss = answer_floats(k);
    size_t per = ws->xs + 2 * ws->as + ws->zs + ws->us + ws->D1s + ws->Gs + ws->PmTs + ws->rrs + ws->anss;
    size_t shared = pad16(k->pq * k->d) + pad16(k->qd * k->nq) + pad16(k->d * k->nq) +
                    2 * pad16(k->nq * k->dd) + pad16(k->dd) + pad16(k->qd) + pad16(k->d) + pad16(k->d);
    *vectors = capacity * k->d;
    if (k->qd > *vectors) *vectors = k->qd;
    if (capacity * k->nq > *vectors) *vectors = capacity * k->nq;
    size_t pointer_floats = (3 * *vectors * sizeof(void *) + sizeof(float) - 1) / sizeof(float);
    return per * capacity + shared + pointer_floats + 16;
}

static size_t scratch_floats(const struct fwm_model *model, size_t capacity) {
    workspace ws;
    dims k = dims_of(&fwm__stm_of(model)->hp);
    size_t vectors;
    return strides(&ws, &k, capacity, &vectors);
}

static void lay_out(void *wsp, const struct fwm_model *model, float *p, size_t capacity) {
    workspace *ws = wsp;
    ws->k = dims_of(&fwm__stm_of(model)->hp);
    const dims *k = &ws->k;
    size_t vectors;
    strides(ws, k, capacity, &vectors);
    ws->x = p, p += ws->xs * capacity;
    ws->a = p, p += ws->as * capacity;
    ws->c = p, p += ws->as * capacity;
    ws->z = p, p += ws->zs * capacity;
    ws->u = p, p += ws->us * capacity;
    ws->D1 = p, p += ws->D1s * capacity;
    ws->G = p, p += ws->Gs * capacity;
    ws->PmT = p, p += ws->PmTs * capacity;
    ws->rr = p, p += ws->rrs * capacity;
    ws->ans = p, p += ws->anss * capacity;
    ws->Pm = p, p += pad16(k->pq * k->d);
    ws->Wt = p, p += pad16(k->qd * k->nq);
    ws->VT = p, p += pad16(k->d * k->nq);
    ws->S = p, p += pad16(k->nq * k->dd);
    ws->ST = p, p += pad16(k->nq * k->dd);
    ws->T = p, p += pad16(k->dd);
    ws->w = p, p += pad16(k->qd);
    ws->vr = p, p += pad16(k->d);
    ws->row = p, p += pad16(k->d);
    void **pp = (void **)p;
    ws->px = (const float **)pp;
    ws->pb = (const float **)(pp + vectors);
    ws->py = (float **)(pp + 2 * vectors);
}

/* The reset state: the initial memories, an empty buffer, a closed slot. */
static void reset_lane(const fwm_stm_model *sm, fwm_session *s) {
    memcpy(s->F, sm->item_init, (size_t)fwm__stm_item_floats(&sm->hp) * sizeof(float));
    memcpy(s->Mr, sm->relation_init, (size_t)fwm__stm_relational_floats(&sm->hp) * sizeof(float));
    if (s->words) memset(s->words, 0, (size_t)fwm__stm_state_words(&sm->hp) * sizeof(uint32_t));
}

/* x = sum over the buffer's words k (at most P) of Emb[w_k] * Pos[k]; then the buffer is emptied. */
static void encode_and_clear(const fwm_stm_model *sm, const dims *k, fwm_session *s, float *x) {
    uint32_t *words = s->words, n = words[FWM_STM_WORD_LENGTH(sm)];
    for (size_t i = 0; i < k->E; i++) x[i] = 0.0f;
    for (uint32_t w = 0; w < n; w++) {
        const float *e = sm->token_embd + (size_t)words[w] * k->E, *pos = sm->position + (size_t)w * k->E;
        for (size_t i = 0; i < k->E; i++) x[i] = FWM_FMAF(e[i], pos[i], x[i]);
    }
    memset(words, 0, (k->P + 1) * sizeof(uint32_t)); /* the words and the length; not the slot */
}

/* What one token does to one session before any product: the sentence-mode bookkeeping and the
 * reset; returns the action and fills x (the step's input or the question vector). */
static enum action read_token(const fwm_stm_model *sm, const dims *k, fwm_session *s, uint32_t t,
                              float *x) {
    const fwm_stm_hparams *hp = &sm->hp;
    if (hp->reset_on_eos && t == hp->eos_token_id) {
        reset_lane(sm, s);
        if (sm->sentence) return ACT_NONE;
    }
    if (!sm->sentence) {
        memcpy(x, sm->token_embd + (size_t)t * k->E, k->E * sizeof(float));
        return ACT_CORE;
    }
    uint32_t *words = s->words;
    if (words[FWM_STM_WORD_SLOT(sm)]) { /* the answer: read, and the slot closes */
        words[FWM_STM_WORD_SLOT(sm)] = 0;
        return ACT_NONE;
    }
    uint32_t n = words[FWM_STM_WORD_LENGTH(sm)];
    if (n < hp->sentence_length) {
        words[n] = t;
        words[FWM_STM_WORD_LENGTH(sm)] = n + 1;
    }
    if (t == hp->statement_end_token_id) {
        encode_and_clear(sm, k, s, x);
        return ACT_CORE;
    }
    if (t == hp->question_end_token_id) {
        encode_and_clear(sm, k, s, x);
        words[FWM_STM_WORD_SLOT(sm)] = 1;
        return ACT_ANSWER;
    }
    return ACT_NONE;
}

/* y_j = W x_j + b for the m lanes lane[0..m) (x, y at per-lane strides). */
static void lanes_matvec(workspace *ws, const float *W, size_t rows, size_t cols, const size_t *lane,
                         size_t m, const float *x, size_t xs, const float *b, float *y, size_t ys) {
    for (size_t i = 0; i < m; i++) {
        ws->px[i] = x + lane[i] * xs;
        ws->pb[i] = b;
        ws->py[i] = y + lane[i] * ys;
    }
    fwm__matvec_batch(W, rows, cols, m, ws->px, b ? ws->pb : NULL, ws->py);
}

/* The relational transfer of one session, its S in ws->S: T[b] = G1 S[:, :, b] + g1 for every
 * column b (S^T's rows, transposed in 16 x 16 tiles, one product over all d of them; the kernel's
 * arithmetic per element does not depend on how many vectors a call takes, so taking one session at
 * a time keeps S^T in cache without changing a bit), then Mi = Mi' + alpha3 T. */
static void transfer(const fwm_stm_model *sm, const dims *k, workspace *ws, float *Mi, float alpha3) {
    size_t d = k->d, qd = k->qd;
    const float *S = ws->S;
    float *ST = ws->ST, *T = ws->T;
    for (size_t n0 = 0; n0 < qd; n0 += 16)
        for (size_t b0 = 0; b0 < d; b0 += 16) {
            size_t n1 = n0 + 16 < qd ? n0 + 16 : qd, b1 = b0 + 16 < d ? b0 + 16 : d;
            for (size_t n = n0; n < n1; n++)
                for (size_t b = b0; b < b1; b++) ST[b * qd + n] = S[n * d + b];
        }
    for (size_t b = 0; b < d; b++) {
        ws->px[b] = ST + b * qd;
        ws->pb[b] = sm->transfer_bias;
        ws->py[b] = T + b * d;
    }
    fwm__matvec_batch(sm->transfer_weight, d, qd, d, ws->px, ws->pb, ws->py);
    for (size_t n = 0; n < k->dd; n++) Mi[n] = FWM_FMAF(alpha3, T[n], Mi[n]);
}

/* The core step for the sessions lane[0..m) of the chunk, their inputs in ws->x. */
static void core_step(const fwm_stm_model *sm, const dims *k, workspace *ws, fwm_session *const *sessions,
                      const size_t *lane, size_t m) {
    size_t d = k->d, nq = k->nq, qd = k->qd, pq = k->pq;
    const float alpha1 = sm->alpha[0], alpha2 = sm->alpha[1], alpha3 = sm->alpha[2];
    lanes_matvec(ws, sm->write_weight, d, k->E, lane, m, ws->x, ws->xs, sm->write_bias, ws->a, ws->as);
    lanes_matvec(ws, sm->value_weight, d, k->E, lane, m, ws->x, ws->xs, sm->value_bias, ws->c, ws->as);
    lanes_matvec(ws, sm->select_weight, nq, k->E, lane, m, ws->x, ws->xs, sm->select_bias, ws->z, ws->zs);
    lanes_matvec(ws, sm->gate_input, 2 * d, d, lane, m, ws->a, ws->as, sm->gate_bias, ws->u, ws->us);
    for (size_t i = 0; i < m; i++) { /* z = softmax, tanh(Mi) */
        float *z = ws->z + lane[i] * ws->zs, mx = z[0], sum = 0.0f;
        for (size_t s = 1; s < nq; s++) mx = z[s] > mx ? z[s] : mx;
        for (size_t s = 0; s < nq; s++) sum += (z[s] = fwm__expf(z[s] - mx));
        for (size_t s = 0; s < nq; s++) z[s] /= sum;
        fwm__tanh_array(ws->D1 + lane[i] * ws->D1s, sessions[lane[i]]->F, k->dd);
    }
    /* G[r] = Ug tanh(Mi[r]) + (Wg a + bg), every row of every lane in one product */
    for (size_t i = 0; i < m; i++)
        for (size_t r = 0; r < d; r++) {
            size_t v = i * d + r;
            ws->px[v] = ws->D1 + lane[i] * ws->D1s + r * d;
            ws->pb[v] = ws->u + lane[i] * ws->us;
            ws->py[v] = ws->G + lane[i] * ws->Gs + r * 2 * d;
        }
    fwm__matvec_batch(sm->gate_memory, 2 * d, d, m * d, ws->px, ws->pb, ws->py);
    for (size_t i = 0; i < m; i++) {
        fwm_session *s = sessions[lane[i]];
        const float *a = ws->a + lane[i] * ws->as, *c = ws->c + lane[i] * ws->as, *z = ws->z + lane[i] * ws->zs;
        float *Mi = s->F, *A = ws->D1 + lane[i] * ws->D1s;
        /* Mi' = sigmoid(G_i) tanh(a a^T) + sigmoid(G_f) Mi, in place */
        for (size_t r = 0; r < d; r++) {
            float *g = ws->G + lane[i] * ws->Gs + r * 2 * d, *mrow = Mi + r * d;
            fwm__sigmoid_array(g, g, 2 * d, 0.0f);
            for (size_t col = 0; col < d; col++) ws->row[col] = a[r] * a[col];
            fwm__tanh_array(ws->row, ws->row, d);
            for (size_t col = 0; col < d; col++) mrow[col] = FWM_FMAF(g[col], ws->row[col], g[d + col] * mrow[col]);
        }
        /* vr = sum_{s,e} z[s] c[e] Mr[s, e, :] from the old Mr */
        for (size_t q = 0; q < nq; q++)
            for (size_t e = 0; e < d; e++) ws->w[q * d + e] = z[q] * c[e];
        fwm__vecmat(s->Mr, qd, d, ws->w, ws->vr);
        /* A = Mi' + alpha2 vr c^T */
        for (size_t e = 0; e < d; e++) {
            float scale = alpha2 * ws->vr[e];
            for (size_t f = 0; f < d; f++) A[e * d + f] = FWM_FMAF(scale, c[f], Mi[e * d + f]);
        }
    }
    /* Pm^T[e] = Wqkv A[e] + bqkv, every row of every lane in one product */
    for (size_t i = 0; i < m; i++)
        for (size_t e = 0; e < d; e++) {
            size_t v = i * d + e;
            ws->px[v] = ws->D1 + lane[i] * ws->D1s + e * d;
            ws->pb[v] = sm->sam_bias;
            ws->py[v] = ws->PmT + lane[i] * ws->PmTs + e * pq;
        }
    fwm__matvec_batch(sm->sam_weight, pq, d, m * d, ws->px, ws->pb, ws->py);
    for (size_t i = 0; i < m; i++) {
        fwm_session *s = sessions[lane[i]];
        const float *PmT = ws->PmT + lane[i] * ws->PmTs;
        float *Pm = ws->Pm, *S = ws->S;
        for (size_t j = 0; j < pq; j++)
            for (size_t e = 0; e < d; e++) Pm[j * d + e] = PmT[e * pq + j];
        fwm__layer_norm(Pm, Pm, pq * d, sm->hp.sam_norm_eps);
        for (size_t n = 0; n < pq * d; n++) Pm[n] = FWM_FMAF(Pm[n], sm->sam_gain[n], sm->sam_shift[n]);
        const float *q = Pm, *kk = Pm + nq * d, *v = Pm + 2 * nq * d;
        /* S[s][e][:] = sum_j tanh(q_s[e] k_j[e]) v_j: weights, then v^T times each row's weights */
        for (size_t sq = 0; sq < nq; sq++)
            for (size_t e = 0; e < d; e++)
                for (size_t j = 0; j < nq; j++) ws->Wt[(sq * d + e) * nq + j] = q[sq * d + e] * kk[j * d + e];
        fwm__tanh_array(ws->Wt, ws->Wt, qd * nq);
        for (size_t f = 0; f < d; f++)
            for (size_t j = 0; j < nq; j++) ws->VT[f * nq + j] = v[j * d + f];
        for (size_t n = 0; n < qd; n++) {
            ws->px[n] = ws->Wt + n * nq;
            ws->py[n] = S + n * d;
        }
        fwm__matvec_batch(ws->VT, d, nq, qd, ws->px, NULL, ws->py);
        if (alpha3 != 0.0f) transfer(sm, k, ws, s->F, alpha3);
        /* Mr = alpha1 Mr + S */
        for (size_t n = 0; n < qd * d; n++) s->Mr[n] = FWM_FMAF(alpha1, s->Mr[n], S[n]);
    }
}

/* Eq. 14 for the lanes lane[0..m): r[s] = G2 vec(Mr[s]) + g2, logits = G3 vec(r) + g3. */
static void word_output(const fwm_stm_model *sm, const dims *k, workspace *ws, fwm_session *const *sessions,
                        const size_t *lane, size_t m, float *logits) {
    for (size_t i = 0; i < m; i++)
        for (size_t s = 0; s < k->nq; s++) {
            size_t v = i * k->nq + s;
            ws->px[v] = sessions[lane[i]]->Mr + s * k->dd;
            ws->pb[v] = sm->distill_bias;
            ws->py[v] = ws->rr + lane[i] * ws->rrs + s * k->nr;
        }
    fwm__matvec_batch(sm->distill_weight, k->nr, k->dd, m * k->nq, ws->px, ws->pb, ws->py);
    for (size_t i = 0; i < m; i++) {
        ws->px[i] = ws->rr + lane[i] * ws->rrs;
        ws->pb[i] = sm->output_bias;
        ws->py[i] = logits + lane[i] * k->V;
    }
    fwm__matvec_batch(sm->output_weight, k->V, k->nq * k->nr, m, ws->px, ws->pb, ws->py);
}

/* out = tanh(W2 tanh(W1 q + b1) + b2) for the lanes; `h` and `out` are offsets into a lane's
 * answer scratch. */
static void answer_mlp(workspace *ws, const dims *k, const fwm_stm_mlp *mlp, size_t out_rows,
                       const size_t *lane, size_t m, size_t h, size_t out) {
    lanes_matvec(ws, mlp->weight1, k->Ha, k->E, lane, m, ws->x, ws->xs, mlp->bias1, ws->ans + h, ws->anss);
    for (size_t i = 0; i < m; i++)
        fwm__tanh_array(ws->ans + lane[i] * ws->anss + h, ws->ans + lane[i] * ws->anss + h, k->Ha);
    lanes_matvec(ws, mlp->weight2, out_rows, k->Ha, lane, m, ws->ans + h, ws->anss, mlp->bias2, ws->ans + out,
                 ws->anss);
    for (size_t i = 0; i < m; i++)
        fwm__tanh_array(ws->ans + lane[i] * ws->anss + out, ws->ans + lane[i] * ws->anss + out, out_rows);
}

/* The answer module for the lanes lane[0..m), their question vectors in ws->x. */
static void answer(const fwm_stm_model *sm, const dims *k, workspace *ws, fwm_session *const *sessions,
                   const size_t *lane, size_t m, float *logits) {
    size_t d = k->d, nq = k->nq, Ha16 = pad16(k->Ha), d16 = pad16(d), q16 = pad16(nq);
    size_t ent = 4 * Ha16, role = ent + d16, total = role + 3 * q16, read = total + d16;
    answer_mlp(ws, k, &sm->entity, d, lane, m, 0, ent);
    for (int r = 0; r < 3; r++)
        answer_mlp(ws, k, &sm->role[r], nq, lane, m, (size_t)(r + 1) * Ha16, role + (size_t)r * q16);
    for (size_t i = 0; i < m; i++) {
        float *sc = ws->ans + lane[i] * ws->anss, *sum = sc + total;
        const float *e = sc + ent;
        for (int r = 0; r < 3; r++) {
            const float *rv = sc + role + (size_t)r * q16;
            float *out = sc + read + (size_t)(r % 2) * d16; /* i1, i2, i3 alternate between two */
            for (size_t q = 0; q < nq; q++)
                for (size_t j = 0; j < d; j++) ws->w[q * d + j] = rv[q] * e[j];
            fwm__vecmat(sessions[lane[i]]->Mr, k->qd, d, ws->w, out);
            fwm__layer_norm(out, out, d, sm->hp.answer_norm_eps);
            const float *gain = sm->answer_norm + (size_t)(2 * r) * d, *shift = gain + d;
            for (size_t j = 0; j < d; j++) out[j] = FWM_FMAF(out[j], gain[j], shift[j]);
            for (size_t j = 0; j < d; j++) sum[j] = r == 0 ? out[j] : sum[j] + out[j];
            e = out;
        }
        ws->px[i] = sum;
        ws->py[i] = logits + lane[i] * k->V;
    }
    fwm__matvec_batch(sm->answer_output, k->V, d, m, ws->px, NULL, ws->py);
}

/* n sessions (already checked), one token each. */
static void step_chunk(void *wsp, const struct fwm_model *model, fwm_session *const *sessions,
                       const uint32_t *tokens, size_t n, float *logits) {
    const fwm_stm_model *sm = fwm__stm_of(model);
    workspace *ws = wsp;
    const dims *k = &ws->k;
    size_t core[CHUNK_SESSIONS], asked[CHUNK_SESSIONS], silent[CHUNK_SESSIONS];
    size_t n_core = 0, n_asked = 0, n_silent = 0;
    for (size_t j = 0; j < n; j++) {
        enum action act = read_token(sm, k, sessions[j], tokens[j], ws->x + j * ws->xs);
        if (act == ACT_CORE) core[n_core++] = j;
        else if (act == ACT_ANSWER) asked[n_asked++] = j;
        else silent[n_silent++] = j;
        sessions[j]->position++;
    }
    if (n_core) core_step(sm, k, ws, sessions, core, n_core);
    if (!logits) return;
    if (sm->sentence) {
        if (n_asked) answer(sm, k, ws, sessions, asked, n_asked, logits);
        for (size_t i = 0; i < n_core; i++) silent[n_silent++] = core[i];
    } else if (n_core) {
        word_output(sm, k, ws, sessions, core, n_core, logits);
    }
    for (size_t i = 0; i < n_silent; i++) {
        float *row = logits + silent[i] * k->V;
        for (size_t v = 0; v < k->V; v++) row[v] = NAN;
    }
}

const fwm__step_kernel fwm__stm_step_kernel = {
    .chunk_sessions = CHUNK_SESSIONS,
    .stack_floats = 0,
    .scratch_floats = scratch_floats,
    .lay_out = lay_out,
    .chunk = step_chunk,
};
