/* gfw_step.c - the Gated Fast Weights model's step maths: its chunk step and workspace
 * (fwm__gfw_step_kernel) behind the shared step entry points (step_driver.h).
 *
 * The products with the trained weights (the slow net's W_1 and W_2, the output) are batched across the chunk
 * (fwm__matvec_batch, whose arithmetic per element does not depend on the batch); everything on a
 * session's own fast matrices (the fast net's two products, the gated update) runs per session. So
 * single, sequence and batched steps are bit-identical by construction.
 *
 * Per step (docs/MODEL.md, "The Gated Fast Weights model", One step), with e = Emb[x]:
 *   fast net, with F1 and F2 as the previous step left them:
 *     a = LN(tanh(F1 [h_F; e; 1])), h_F = LN(tanh(F2 [a; 1]));
 *   slow net, from the previous h_S: s = tanh(W_1 [h_S; e] + b_1), o = W_2 s + b_2, h_S = tanh(o[0:N]);
 *   the gated update of F1 and F2 in place: with the rows' tanh(alpha), sigmoid(gamma) and the
 *   columns' tanh(beta), sigmoid(delta), each element F = fma(T, H - F, F) where
 *   T = sigmoid(gamma_r) sigmoid(delta_c) and H = tanh(alpha_r) tanh(beta_c) (T H + (1 - T) F);
 *   and, only when logits are wanted, logits = W_o h_F + b_o. */
#include <string.h>

#include "gfw_runtime.h"
#include "kernels.h"
#include "step_driver.h"

static size_t pad16(size_t n) { return (n + 15) & ~(size_t)15; }

/* The sizes one step works with. */
typedef struct dims {
    size_t V, E, m, N, P, c1, c2, out;
} dims;

static dims dims_of(const fwm_gfw_hparams *hp) {
    dims d;
    d.V = hp->vocab_size, d.E = hp->embedding_length, d.m = hp->fast_hidden;
    d.N = hp->slow_hidden, d.P = hp->slow_inner;
    d.c1 = (size_t)fwm__gfw_f1_cols(hp), d.c2 = (size_t)fwm__gfw_f2_cols(hp);
    d.out = (size_t)fwm__gfw_slow_out_rows(hp);
    return d;
}

/* Scratch for `capacity` sessions, and the sizes. Per session: the slow net's input [h_S; e], its inner
 * layer s and its output o. Shared (the fast net runs one session at a time): [h_F; e; 1],
 * [a; 1] and one pre-activation. Then the pointer arrays of the batched products. */
typedef struct workspace {
    dims d;
    float *xs, *s, *o;
    size_t xss, ss, os; /* per-session strides */
    float *x1, *x2, *pre;
    const float **px, **pb;
    float **py;
} workspace;

_Static_assert(sizeof(workspace) <= FWM_STEP_WORKSPACE_BYTES, "the GFW's workspace fits the driver's room");

static size_t scratch_floats(const struct fwm_model *model, size_t capacity) {
    dims dd = dims_of(&fwm__gfw_of(model)->hp), *d = &dd;
    size_t per_session = pad16(d->N + d->E) + pad16(d->P) + pad16(d->out);
    size_t shared = pad16(d->c1) + pad16(d->c2) + pad16(d->m);
    size_t pointers = 3 * capacity * sizeof(void *);
    return per_session * capacity + shared + (pointers + sizeof(float) - 1) / sizeof(float) + 16;
}

static void lay_out(void *w, const struct fwm_model *model, float *p, size_t capacity) {
    workspace *ws = w;
    ws->d = dims_of(&fwm__gfw_of(model)->hp);
    const dims *d = &ws->d;
    ws->xss = pad16(d->N + d->E), ws->ss = pad16(d->P), ws->os = pad16(d->out);
    ws->xs = p, p += ws->xss * capacity;
    ws->s = p, p += ws->ss * capacity;
    ws->o = p, p += ws->os * capacity;
    ws->x1 = p, p += pad16(d->c1);
    ws->x2 = p, p += pad16(d->c2);
    ws->pre = p, p += pad16(d->m);
    void **pp = (void **)p;
    ws->px = (const float **)pp;
    ws->pb = (const float **)(pp + capacity);
    ws->py = (float **)(pp + 2 * capacity);
}

/* y = W x for one session's own matrix (no bias: the last column multiplies the constant 1). */
static void fast_product(const float *W, size_t rows, size_t cols, const float *x, float *y) {
    const float *xs[1] = {x};
    float *ys[1] = {y};
    fwm__matvec_batch(W, rows, cols, 1, xs, NULL, ys);
}

/* The fast net of one session: h_F from F1, F2, the previous h_F and e. */
static void fast_net(const fwm_gfw_model *gm, const dims *d, workspace *ws, fwm_session *s,
                     const float *e) {
    const float *F1 = s->F, *F2 = s->F + gm->f2_offset;
    float eps = gm->hp.layer_norm_epsilon;
    memcpy(ws->x1, s->h, d->m * sizeof(float));
    memcpy(ws->x1 + d->m, e, d->E * sizeof(float));
    ws->x1[d->c1 - 1] = 1.0f;
    fast_product(F1, d->m, d->c1, ws->x1, ws->pre);
    fwm__tanh_array(ws->pre, ws->pre, d->m);
    fwm__layer_norm(ws->x2, ws->pre, d->m, eps);
    ws->x2[d->c2 - 1] = 1.0f;
    fast_product(F2, d->m, d->c2, ws->x2, ws->pre);
    fwm__tanh_array(ws->pre, ws->pre, d->m);
    fwm__layer_norm(s->h, ws->pre, d->m, eps);
}

/* F <- T * H + (1 - T) * F for one fast matrix [rows, cols], from its four update vectors at u
 * (alpha: rows, beta: cols, gamma: rows, delta: cols), squashed here in place. */
static void gated_update(float *F, size_t rows, size_t cols, float *u) {
    float *alpha = u, *beta = u + rows, *gamma = beta + cols, *delta = gamma + rows;
    fwm__tanh_array(alpha, alpha, rows);
    fwm__tanh_array(beta, beta, cols);
    fwm__sigmoid_array(gamma, gamma, rows, 0.0f);
    fwm__sigmoid_array(delta, delta, cols, 0.0f);
    for (size_t r = 0; r < rows; r++) {
        const float a = alpha[r], g = gamma[r];
        float *row = F + r * cols;
        for (size_t c = 0; c < cols; c++) {
            float t = g * delta[c], h = a * beta[c];
            row[c] = FWM_FMAF(t, h - row[c], row[c]);
        }
    }
}

/* n sessions (already checked), one token each. */
static void step_chunk(void *w, const struct fwm_model *model, fwm_session *const *sessions,
                       const uint32_t *tokens, size_t n, float *logits) {
    const fwm_gfw_model *gm = fwm__gfw_of(model);
    workspace *ws = w;
    const dims *d = &ws->d;
    /* the slow net's inputs [h_S; e], taken before anything changes */
    for (size_t j = 0; j < n; j++) {
        float *xs = ws->xs + j * ws->xss;
        memcpy(xs, sessions[j]->c, d->N * sizeof(float));
        memcpy(xs + d->N, gm->token_embd + (size_t)tokens[j] * d->E, d->E * sizeof(float));
    }
    /* the fast net of each session, with its matrices as the previous step left them */
    for (size_t j = 0; j < n; j++)
        fast_net(gm, d, ws, sessions[j], gm->token_embd + (size_t)tokens[j] * d->E);
    /* s = tanh(W_1 [h_S; e] + b_1), o = W_2 s + b_2, batched over the chunk */
    for (size_t j = 0; j < n; j++) {
        ws->px[j] = ws->xs + j * ws->xss;
        ws->pb[j] = gm->slow0_bias;
        ws->py[j] = ws->s + j * ws->ss;
    }
    fwm__matvec_batch(gm->slow0_weight, d->P, d->N + d->E, n, ws->px, ws->pb, ws->py);
    for (size_t j = 0; j < n; j++) {
        fwm__tanh_array(ws->s + j * ws->ss, ws->s + j * ws->ss, d->P);
        ws->px[j] = ws->s + j * ws->ss;
        ws->pb[j] = gm->slow1_bias;
        ws->py[j] = ws->o + j * ws->os;
    }
    fwm__matvec_batch(gm->slow1_weight, d->out, d->P, n, ws->px, ws->pb, ws->py);
    /* h_S = tanh(z) and the gated update of F1 and F2, for the next step */
    for (size_t j = 0; j < n; j++) {
        float *o = ws->o + j * ws->os;
        fwm_session *s = sessions[j];
        fwm__tanh_array(s->c, o, d->N);
        gated_update(s->F, d->m, d->c1, o + d->N);
        gated_update(s->F + gm->f2_offset, d->m, d->c2, o + d->N + 2 * (d->m + d->c1));
        s->position++;
    }
    if (!logits) return;
    /* logits = W_o h_F + b_o */
    for (size_t j = 0; j < n; j++) {
        ws->px[j] = sessions[j]->h;
        ws->pb[j] = gm->output_bias;
        ws->py[j] = logits + j * d->V;
    }
    fwm__matvec_batch(gm->output_weight, d->V, d->m, n, ws->px, ws->pb, ws->py);
}

const fwm__step_kernel fwm__gfw_step_kernel = {
    .chunk_sessions = 32,
    .stack_floats = 16384,
    .scratch_floats = scratch_floats,
    .lay_out = lay_out,
    .chunk = step_chunk,
};
