/* fwm_step.c - the FWM step: one session, a token sequence, or a batch of sessions.
 *
 * The entry points are the FWM's ops (fwm_ops.c; the public functions in dispatch.c call them): the
 * FWM keeps its own, the hot path, beside the other architectures' shared ones (step_driver.h).
 * Every entry point validates everything first (step_checks.h), then runs the same chunk routine
 * (step_chunk) on up to CHUNK_SESSIONS sessions at a time: the weight matrix-vector products are
 * batched across the chunk (fwm__matvec_batch, whose per-element arithmetic does not depend on the
 * batch), the fast-weight passes run per session. So a single step is a chunk of one, a sequence is a run of
 * chunks of one, and all three are bit-identical by construction.
 *
 * The math per step is docs/MODEL.md's, in this order: a stacked FWM's lower LSTM layers, LSTM,
 * write (v_old, rank-1 update, normalisation), read (only when logits are wanted, and under the
 * "token" read policy only for the trigger token), output. fwm__fwm_predict runs the read and the
 * output alone over a session's state (fwm_session_predict). Scratch memory is per call (stack for
 * small models, else one allocation), so distinct sessions may be stepped from different threads.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fwm_alloc.h"
#include "fwm_error.h"
#include "fwm_ops.h"
#include "bf16_kernels.h"
#include "kernels.h"
#include "session_internal.h"
#include "step_checks.h"

/* Sessions stepped together: bounds the scratch memory of a large batch; the step results do not
 * depend on it. */
#define CHUNK_SESSIONS 32

/* Scratch floats on the stack (32 KiB) for small models: a single session at the paper's sizes
 * needs about 6.3k floats, so the common single step allocates nothing. */
#define STACK_SCRATCH_FLOATS 8192

/* Sizes derived from the hyperparameters. */
typedef struct dims {
    size_t V, E, H, S, R, T, Nr;
    size_t gates;     /* 4H */
    size_t write_len; /* S + R + T + 1: [a_s, a_r, a_t, a_b] */
    size_t read_len;  /* S + N_r R: [q0, e_1 .. e_Nr] */
    size_t q_len;     /* max(S, T): the read query, S entries first, T after the first read */
} dims;

static dims dims_of(const struct fwm_model *model) {
    const fwm_hparams *hp = &model->hp;
    dims d;
    d.V = hp->vocab_size;
    d.E = hp->embedding_length;
    d.H = hp->hidden_size;
    d.S = hp->memory_s;
    d.R = hp->memory_r;
    d.T = hp->memory_t;
    d.Nr = hp->read_count;
    d.gates = 4 * d.H;
    d.write_len = d.S + d.R + d.T + 1;
    d.read_len = d.S + d.Nr * d.R;
    d.q_len = d.S > d.T ? d.S : d.T;
    return d;
}

/* Floats rounded up to a 64-byte multiple, so each scratch array starts aligned. */
static size_t pad16(size_t n) { return (n + 15) & ~(size_t)15; }

/* Per-call scratch: per-session rows for `capacity` sessions and per-session temporaries reused
 * by each session in turn. */
typedef struct workspace {
    size_t capacity;
    float *g, *gi, *wv, *u, *q, *m, *y; /* rows of pad16(len) floats per session */
    float *k1, *k2, *v, *v_old, *delta, *te, *z;
    float *contracted;  /* (1 + N_r) blocks of S*T: F contracted with k2, tanh(e_1), ... */
    const float **vecs; /* 1 + N_r: k2, tanh(e_1) .. tanh(e_Nr) */
    float **outs;       /* 1 + N_r: the blocks of `contracted` */
    const float **px, **pb;
    float **py;
    const float **ph; /* each session's h */
    size_t *reader;   /* chunk indices of the sessions that read */
} workspace;

static size_t workspace_floats(const dims *d, size_t capacity, bool need_gi) {
    size_t per = pad16(d->gates) * (need_gi ? 2 : 1) + pad16(d->write_len) + pad16(d->read_len) +
                 pad16(d->q_len) + 2 * pad16(d->H);
    size_t shared = pad16(d->S) + pad16(d->R) + pad16(d->Nr * d->R) +
                    4 * pad16(d->T) + (1 + d->Nr) * pad16(d->S * d->T);
    size_t pointers = (4 * capacity + 2 * (1 + d->Nr)) * sizeof(void *) + capacity * sizeof(size_t);
    return per * capacity + shared + (pointers + sizeof(float) - 1) / sizeof(float) + 16;
}

static void workspace_lay_out(workspace *ws, float *base, const dims *d, size_t capacity,
                              bool need_gi) {
    float *p = base;
#define TAKE(n) (p += pad16(n), p - pad16(n))
    ws->capacity = capacity;
    ws->g = TAKE(pad16(d->gates) * capacity);
    ws->gi = need_gi ? TAKE(pad16(d->gates) * capacity) : NULL;
    ws->wv = TAKE(pad16(d->write_len) * capacity);
    ws->u = TAKE(pad16(d->read_len) * capacity);
    ws->q = TAKE(pad16(d->q_len) * capacity);
    ws->m = TAKE(pad16(d->H) * capacity);
    ws->y = TAKE(pad16(d->H) * capacity);
    ws->k1 = TAKE(d->S);
    ws->k2 = TAKE(d->R);
    ws->te = TAKE(d->Nr * d->R);
    ws->v = TAKE(d->T);
    ws->v_old = TAKE(d->T);
    ws->delta = TAKE(d->T);
    ws->z = TAKE(d->T);
    ws->contracted = TAKE((1 + d->Nr) * pad16(d->S * d->T));
#undef TAKE
    void **pp = (void **)p;
    ws->px = (const float **)pp;
    ws->pb = (const float **)(pp + capacity);
    ws->py = (float **)(pp + 2 * capacity);
    ws->ph = (const float **)(pp + 3 * capacity);
    ws->vecs = (const float **)(pp + 4 * capacity);
    ws->outs = (float **)(pp + 4 * capacity + 1 + d->Nr);
    ws->reader = (size_t *)(pp + 4 * capacity + 2 * (1 + d->Nr));
}

/* Scratch owner: either the caller's stack buffer or one heap block. */
typedef struct scratch {
    workspace ws;
    float *heap;
} scratch;

static fwm_status scratch_init(scratch *s, const struct fwm_model *model, size_t capacity,
                               float *stack_buffer, size_t stack_floats, fwm_error *err) {
    dims d = dims_of(model);
    bool need_gi = model->input_gates == NULL || fwm__lower_blocks(&model->hp) > 0;
    size_t floats = workspace_floats(&d, capacity, need_gi);
    float *base = stack_buffer;
    s->heap = NULL;
    if (floats > stack_floats) {
        s->heap = fwm__aligned_alloc(64, floats * sizeof(float));
        if (!s->heap)
            return fwm__error(err, FWM_ERR_OUT_OF_MEMORY,
                              "out of memory allocating %zu bytes of step scratch", floats * sizeof(float));
        base = s->heap;
    }
    workspace_lay_out(&s->ws, base, &d, capacity, need_gi);
    return FWM_OK;
}

static void scratch_release(scratch *s) { fwm__free(s->heap); }

/* The chained reads from F' = s (F + k1 (x) k2 d^T) (`write`; F itself when NULL), given the
 * contractions of F with each read key in ws->outs[1 ..] and the keys in ws->te: q = q0 (u's first
 * S entries), then N_r times q = LN(sum_i q_i A'_r[i]), A'[i][t] = s (A[i][t] + k1_i (k2.te) d_t).
 * Overwrites the contractions. The step's reads (memory_step) and the prediction from a session's
 * state (fwm__fwm_predict) both run this, so they agree bit for bit. */
static void read_chain(const fwm_hparams *hp, const dims *d, workspace *ws, const float *u,
                       const fwm__fw_pending *write, float *q) {
    const size_t S = d->S, R = d->R, T = d->T;
    memcpy(q, u, S * sizeof *q);
    for (size_t r = 0; r < d->Nr; r++) {
        float *A = ws->outs[1 + r];
        if (write) {
            const float *te = ws->te + r * R;
            float k2te = 0.0f;
            for (size_t j = 0; j < R; j++) k2te += write->k2[j] * te[j];
            for (size_t i = 0; i < S; i++) {
                float a = write->k1[i] * k2te;
                float *Ai = A + i * T;
                for (size_t t = 0; t < T; t++) Ai[t] = (Ai[t] + a * write->d[t]) * write->s;
            }
        }
        fwm__vecmat(A, S, T, q, ws->z);
        fwm__layer_norm(q, ws->z, T, hp->layer_norm_eps);
    }
}

/* ---- the write and the read on one session's F ------------------------------------------------
 *
 * The spec's write then reads, with one pass over F. With K = k1 (x) k2 and
 * F' = s (F + K d^T), s = 1 / max(1, ||F + K d^T||):
 *   v_old = F^T K                 = sum_i k1_i B0[i],     B0[i][t]  = sum_j k2_j F[i][j][t]
 *   ||F + K d^T||^2               = ||F||^2 + 2 d.v_old + ||k1||^2 ||k2||^2 ||d||^2
 *   F'^T vec(q (x) te)            = sum_i q_i A'[i],      A'[i][t] = s (A[i][t] + k1_i (k2.te) d_t),
 *                                                         A[i][t]  = sum_j te_j F[i][j][t]
 * so one pass (fwm__fw_contract) yields B0, every read's A and ||F||^2, and F' itself is left
 * pending (k1, k2, d, s in the session) for the next step's pass to apply as it reads F. The same
 * arithmetic as the spec's order up to float rounding; identical in every step mode. */
static void memory_step(const struct fwm_model *model, const dims *d, workspace *ws, const float *w,
                        const float *u, fwm_session *session, float *q) {
    const fwm_hparams *hp = &model->hp;
    const size_t S = d->S, R = d->R, T = d->T, ST = pad16(S * T);
    fwm__tanh_array(ws->k1, w, S);
    fwm__tanh_array(ws->k2, w + S, R);
    fwm__tanh_array(ws->v, w + S + R, T);
    float beta = fwm__sigmoidf(w[S + R + T] + hp->beta_bias);
    size_t count = 1;
    ws->vecs[0] = ws->k2;
    ws->outs[0] = ws->contracted;
    if (u) {
        for (size_t r = 0; r < d->Nr; r++) {
            fwm__tanh_array(ws->te + r * R, u + S + r * R, R);
            ws->vecs[1 + r] = ws->te + r * R;
            ws->outs[1 + r] = ws->contracted + (1 + r) * ST;
        }
        count += d->Nr;
    }
    const fwm__fw_pending previous = {session->pending_k1, session->pending_k2, session->pending_d,
                                      session->pending_s};
    float sumsq = fwm__fw_contract(session->F, S, R, T, session->has_pending ? &previous : NULL,
                                   ws->vecs, count, ws->outs);

    /* write: v_old, delta and the new norm; F' becomes the pending write */
    fwm__vecmat(ws->contracted, S, T, ws->k1, ws->v_old);
    for (size_t t = 0; t < T; t++) ws->delta[t] = beta * (ws->v[t] - ws->v_old[t]) * hp->write_scale;
    double k1k1 = 0, k2k2 = 0, dd = 0, dv = 0;
    for (size_t i = 0; i < S; i++) k1k1 += (double)ws->k1[i] * ws->k1[i];
    for (size_t j = 0; j < R; j++) k2k2 += (double)ws->k2[j] * ws->k2[j];
    for (size_t t = 0; t < T; t++) {
        dd += (double)ws->delta[t] * ws->delta[t];
        dv += (double)ws->delta[t] * ws->v_old[t];
    }
    double norm2 = (double)sumsq + 2 * dv + k1k1 * k2k2 * dd;
    float norm = norm2 > 0 ? (float)sqrt(norm2) : 0.0f;
    float s = norm > 1.0f ? 1.0f / norm : 1.0f;
    memcpy(session->pending_k1, ws->k1, S * sizeof(float));
    memcpy(session->pending_k2, ws->k2, R * sizeof(float));
    memcpy(session->pending_d, ws->delta, T * sizeof(float));
    session->pending_s = s;
    session->has_pending = true;
    if (!u) return;
    const fwm__fw_pending written = {ws->k1, ws->k2, ws->delta, s};
    read_chain(hp, d, ws, u, &written, q);
}

static bool reads_at(const struct fwm_model *model, uint32_t token) {
    return model->hp.read_policy != FWM_READ_ON_TOKEN || token == model->hp.read_token_id;
}

/* ---- one chunk: n sessions (already validated), one token each ---------------------------------- */

static void step_chunk(const struct fwm_model *model, workspace *ws, fwm_session *const *sessions,
                       const uint32_t *tokens, size_t n, float *logits) {
    const fwm_weights *W = &model->w;
    const fwm_weights_bf16 *W16 = &model->w16;
    const fwm_hparams *hp = &model->hp;
    dims d = dims_of(model);
    const size_t gs = pad16(d.gates), ws_len = pad16(d.write_len), us = pad16(d.read_len),
                 qs = pad16(d.q_len), hs = pad16(d.H);

    /* A stacked FWM's lower LSTM layers: layer 0 reads Emb[x] (its W_ih Emb[x] + b from the
     * input-gate table when there is one), layer l the new h of layer l - 1; the same kernels as
     * the FWM's own. */
    const size_t lower = fwm__lower_blocks(hp), hstride = fwm__aligned_floats(d.H);
    for (size_t l = 0; l < lower; l++) {
        if (l == 0 && model->input_gates) {
            for (size_t j = 0; j < n; j++)
                ws->pb[j] = model->input_gates + (size_t)tokens[j] * d.gates;
        } else {
            for (size_t j = 0; j < n; j++) {
                ws->px[j] = l == 0 ? W->token_embd + (size_t)tokens[j] * d.E
                                   : sessions[j]->lower_h + (l - 1) * hstride;
                ws->pb[j] = W->lower[l][FWM_BLOCK_bias];
                ws->py[j] = ws->gi + j * gs;
            }
            fwm__matvec_any(W->lower[l][FWM_BLOCK_weight_ih], W16->lower[l][FWM_BLOCK_weight_ih], d.gates, l == 0 ? d.E : d.H, n,
                              ws->px, ws->pb, ws->py);
            for (size_t j = 0; j < n; j++) ws->pb[j] = ws->gi + j * gs;
        }
        for (size_t j = 0; j < n; j++) {
            ws->ph[j] = sessions[j]->lower_h + l * hstride;
            ws->py[j] = ws->g + j * gs;
        }
        fwm__matvec_any(W->lower[l][FWM_BLOCK_weight_hh], W16->lower[l][FWM_BLOCK_weight_hh], d.gates, d.H, n, ws->ph, ws->pb,
                          ws->py);
        for (size_t j = 0; j < n; j++)
            fwm__lstm_cell(ws->g + j * gs, d.H, hp->forget_bias, sessions[j]->lower_c + l * hstride,
                           sessions[j]->lower_h + l * hstride);
    }

    for (size_t j = 0; j < n; j++) ws->ph[j] = sessions[j]->h;

    /* LSTM pre-activations g = (W_ih in + b) + W_hh h, in = Emb[x] or the last lower layer's h. */
    if (model->input_gates && lower == 0) {
        for (size_t j = 0; j < n; j++) ws->pb[j] = model->input_gates + (size_t)tokens[j] * d.gates;
    } else {
        for (size_t j = 0; j < n; j++) {
            ws->px[j] = lower ? sessions[j]->lower_h + (lower - 1) * hstride
                              : W->token_embd + (size_t)tokens[j] * d.E;
            ws->pb[j] = W->lstm_bias;
            ws->py[j] = ws->gi + j * gs;
        }
        fwm__matvec_any(W->lstm_weight_ih, W16->lstm_weight_ih, d.gates, lower ? d.H : d.E, n, ws->px, ws->pb, ws->py);
        for (size_t j = 0; j < n; j++) ws->pb[j] = ws->gi + j * gs;
    }
    for (size_t j = 0; j < n; j++) ws->py[j] = ws->g + j * gs;
    fwm__matvec_any(W->lstm_weight_hh, W16->lstm_weight_hh, d.gates, d.H, n, ws->ph, ws->pb, ws->py);
    for (size_t j = 0; j < n; j++)
        fwm__lstm_cell(ws->g + j * gs, d.H, hp->forget_bias, sessions[j]->c, sessions[j]->h);

    /* Write projection w = W_write h + b_write. */
    for (size_t j = 0; j < n; j++) {
        ws->pb[j] = W->write_bias;
        ws->py[j] = ws->wv + j * ws_len;
    }
    fwm__matvec_any(W->write_weight, W16->write_weight, d.write_len, d.H, n, ws->ph, ws->pb, ws->py);

    /* Read projection u = W_read h + b_read, for the sessions that read. */
    size_t readers = 0;
    if (logits) {
        for (size_t j = 0; j < n; j++) {
            if (!reads_at(model, tokens[j])) continue;
            ws->px[readers] = sessions[j]->h;
            ws->pb[readers] = W->read_bias;
            ws->py[readers] = ws->u + j * us;
            ws->reader[readers++] = j;
        }
        if (readers) fwm__matvec_any(W->read_weight, W16->read_weight, d.read_len, d.H, readers, ws->px, ws->pb, ws->py);
    }

    /* Per session: write into F, then read from the updated F (it is cache-resident now). */
    size_t next_reader = 0;
    for (size_t j = 0; j < n; j++) {
        bool read = next_reader < readers && ws->reader[next_reader] == j;
        memory_step(model, &d, ws, ws->wv + j * ws_len, read ? ws->u + j * us : NULL, sessions[j],
                    ws->q + j * qs);
        next_reader += read;
        sessions[j]->position++;
        sessions[j]->last_token = tokens[j];
    }
    if (!logits) return;

    /* Read-out m = W_o q + b_o for readers; y = m (+ h); logits = W_s y. */
    for (size_t r = 0; r < readers; r++) {
        size_t j = ws->reader[r];
        ws->px[r] = ws->q + j * qs;
        ws->pb[r] = W->out_bias;
        ws->py[r] = ws->m + j * hs;
    }
    if (readers) fwm__matvec_any(W->out_weight, W16->out_weight, d.H, d.T, readers, ws->px, ws->pb, ws->py);
    size_t outputs = 0;
    next_reader = 0;
    for (size_t j = 0; j < n; j++) {
        float *row = logits + j * d.V;
        bool read = next_reader < readers && ws->reader[next_reader] == j;
        if (read) next_reader++;
        const float *y;
        if (read && hp->residual) {
            float *yj = ws->y + j * hs, *m = ws->m + j * hs;
            const float *h = sessions[j]->h;
            for (size_t i = 0; i < d.H; i++) yj[i] = m[i] + h[i];
            y = yj;
        } else if (read) {
            y = ws->m + j * hs;
        } else if (hp->residual) {
            y = sessions[j]->h; /* m = 0 */
        } else {
            memset(row, 0, d.V * sizeof *row); /* y = 0: W_s 0 = 0 */
            continue;
        }
        ws->px[outputs] = y;
        ws->py[outputs++] = row;
    }
    if (outputs) fwm__matvec_any(W->output_weight, W16->output_weight, d.V, d.H, outputs, ws->px, NULL, ws->py);
}

/* ---- entry points ------------------------------------------------------------------------------ */

fwm_status fwm__fwm_step(fwm_session *session, uint32_t token, float *logits, fwm_error *err) {
    fwm_status status = fwm__check_step(session, token, err);
    if (status != FWM_OK) return status;
    _Alignas(64) float stack_buffer[STACK_SCRATCH_FLOATS];
    scratch s;
    status = scratch_init(&s, session->model, 1, stack_buffer, STACK_SCRATCH_FLOATS, err);
    if (status != FWM_OK) return status;
    step_chunk(session->model, &s.ws, &session, &token, 1, logits);
    scratch_release(&s);
    return FWM_OK;
}

fwm_status fwm__fwm_step_sequence(fwm_session *session, const uint32_t *tokens, size_t count,
                                  float *logits, fwm_error *err) {
    fwm_status status = fwm__check_sequence(session, tokens, count, err);
    if (status != FWM_OK || count == 0) return status;
    const struct fwm_model *model = session->model;
    _Alignas(64) float stack_buffer[STACK_SCRATCH_FLOATS];
    scratch s;
    status = scratch_init(&s, model, 1, stack_buffer, STACK_SCRATCH_FLOATS, err);
    if (status != FWM_OK) return status;
    size_t V = model->hp.vocab_size;
    for (size_t i = 0; i < count; i++)
        step_chunk(model, &s.ws, &session, &tokens[i], 1, logits ? logits + i * V : NULL);
    scratch_release(&s);
    return FWM_OK;
}

fwm_status fwm__fwm_batch_step(fwm_session *const *sessions, const uint32_t *tokens, size_t count,
                               float *logits, fwm_error *err) {
    fwm__error_clear(err);
    if (count == 0) return FWM_OK;
    fwm_status status = fwm__check_batch(sessions, tokens, count, err);
    if (status != FWM_OK) return status;
    const struct fwm_model *model = sessions[0]->model;

    size_t capacity = count < CHUNK_SESSIONS ? count : CHUNK_SESSIONS;
    _Alignas(64) float stack_buffer[STACK_SCRATCH_FLOATS];
    scratch s;
    status = scratch_init(&s, model, capacity, stack_buffer, STACK_SCRATCH_FLOATS, err);
    if (status != FWM_OK) return status;
    size_t V = model->hp.vocab_size;
    for (size_t i = 0; i < count; i += capacity) {
        size_t n = count - i < capacity ? count - i : capacity;
        step_chunk(model, &s.ws, sessions + i, tokens + i, n, logits ? logits + i * V : NULL);
    }
    scratch_release(&s);
    return FWM_OK;
}

/* The scores of the session's state without a step: the step's read and output (step_chunk, for
 * one session) over h and F with the pending write, which is the write of the step that produced
 * h. The contraction takes the step's vectors (the pending k2, then the read keys), so the pass
 * sums as the step's did; F is only read (no pending write is given to the pass). */
fwm_status fwm__fwm_predict(const fwm_session *session, float *logits, fwm_error *err) {
    const struct fwm_model *model = session->model;
    const fwm_weights *W = &model->w;
    const fwm_weights_bf16 *W16 = &model->w16;
    const fwm_hparams *hp = &model->hp;
    dims d = dims_of(model);
    _Alignas(64) float stack_buffer[STACK_SCRATCH_FLOATS];
    scratch sc;
    fwm_status status = scratch_init(&sc, model, 1, stack_buffer, STACK_SCRATCH_FLOATS, err);
    if (status != FWM_OK) return status;
    workspace *ws = &sc.ws;
    const float *y;
    bool read = model->hp.read_policy != FWM_READ_ON_TOKEN ||
                (session->last_token != FWM_NO_TOKEN && reads_at(model, session->last_token));
    if (read) {
        float *u = ws->u, *q = ws->q;
        const float *xs[1] = {session->h}, *bs[1] = {W->read_bias};
        float *ys[1] = {u};
        fwm__matvec_any(W->read_weight, W16->read_weight, d.read_len, d.H, 1, xs, bs, ys);
        const size_t ST = pad16(d.S * d.T);
        ws->vecs[0] = session->pending_k2; /* zero when nothing is pending: its sums are not used */
        ws->outs[0] = ws->contracted;
        for (size_t r = 0; r < d.Nr; r++) {
            fwm__tanh_array(ws->te + r * d.R, u + d.S + r * d.R, d.R);
            ws->vecs[1 + r] = ws->te + r * d.R;
            ws->outs[1 + r] = ws->contracted + (1 + r) * ST;
        }
        /* read-only: without a pending write the pass stores nothing into F */
        fwm__fw_contract((float *)session->F, d.S, d.R, d.T, NULL, ws->vecs, 1 + d.Nr, ws->outs);
        const fwm__fw_pending pending = {session->pending_k1, session->pending_k2, session->pending_d,
                                         session->pending_s};
        read_chain(hp, &d, ws, u, session->has_pending ? &pending : NULL, q);
        float *m = ws->m;
        xs[0] = q, bs[0] = W->out_bias, ys[0] = m;
        fwm__matvec_any(W->out_weight, W16->out_weight, d.H, d.T, 1, xs, bs, ys);
        if (hp->residual) {
            float *yj = ws->y;
            for (size_t i = 0; i < d.H; i++) yj[i] = m[i] + session->h[i];
            y = yj;
        } else {
            y = m;
        }
    } else if (hp->residual) {
        y = session->h; /* m = 0 */
    } else {
        memset(logits, 0, d.V * sizeof *logits); /* y = 0 */
        scratch_release(&sc);
        return FWM_OK;
    }
    const float *xs[1] = {y};
    float *ys[1] = {logits};
    fwm__matvec_any(W->output_weight, W16->output_weight, d.V, d.H, 1, xs, NULL, ys);
    scratch_release(&sc);
    return FWM_OK;
}
