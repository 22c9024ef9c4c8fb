/* mnm_step.c - the MNM baseline's step maths: its chunk step and workspace (fwm__mnm_step_kernel)
 * behind the shared step entry points (step_driver.h).
 *
 * The products with the slow weights are batched across the chunk (fwm__matvec_batch, whose
 * arithmetic per element does not depend on the batch); the cell update (fwm__lstm_cell) and
 * everything on a session's own memory (its write and read) run per session in a fixed order. So
 * single, sequence and batched steps are bit-identical by construction.
 *
 * Per step (docs/MODEL.md, "The Metalearned Neural Memory baseline", One step):
 *   g = (W_ie Emb[x] + b) + W_ir r + W_hh h, the embedding part from the model's input-gate table
 *   when it has one; the cell updates c and h;
 *   u = tanh(W_u h + b_u): Nh read keys, Nh write keys, Nh values, then b'; beta = sigmoid(w_b.b' + b_b);
 *   targets t_i = W_q v_i + b_q (all layers' at once);
 *   the write keys through the memory, keeping every layer's activations z^l_i; then each layer
 *   M^l -= beta (2 / (Nh D_l)) sum_i (z^l_i - t^l_i) z^(l-1)_i^T, for each element adding the heads'
 *   terms in head order with one fma each;
 *   r = (1/Nh) sum_i f_M(kr_i) through the updated memory (the heads summed in order, then divided);
 *   and, only when logits are wanted, y = W_o [h; r] + b_o and logits = W_s y + b_s. */
#include <string.h>

#include "kernels.h"
#include "mnm_runtime.h"
#include "step_driver.h"

static size_t pad16(size_t n) { return (n + 15) & ~(size_t)15; }

/* The sizes one step works with. */
typedef struct dims {
    size_t H, E, V, G, dk, dv, Nh, D, Lm, nu, nt, dout;
    size_t widest;      /* max(d_k, D, d_v): the widest memory activation */
    size_t activations; /* Nh (d_k + sum of the layers' widths): the write's kept activations */
} dims;

static dims dims_of(const fwm_mnm_hparams *hp) {
    dims d;
    d.H = hp->hidden_size, d.E = hp->embedding_length, d.V = hp->vocab_size, d.G = 4 * d.H;
    d.dk = hp->key_length, d.dv = hp->value_length, d.Nh = hp->head_count;
    d.D = hp->memory_hidden, d.Lm = hp->memory_layers, d.dout = hp->output_length;
    d.nu = (size_t)fwm__mnm_interact_rows(hp), d.nt = (size_t)fwm__mnm_target_rows(hp);
    d.widest = d.dk > d.D ? d.dk : d.D;
    if (d.dv > d.widest) d.widest = d.dv;
    d.activations = d.Nh * (d.dk + d.nt); /* the layers' widths sum to the targets' rows */
    return d;
}

/* Scratch for `capacity` sessions, and the sizes. Per session: two gate buffers, the interaction
 * vectors, beta, the targets, [h; r] and y. Shared (the memory work runs one session at a time):
 * the write's activations, the errors of one layer, and two buffers the read alternates between.
 * Then the pointer arrays of the batched products (Nh per session for the targets). */
typedef struct workspace {
    dims d;
    float *g, *g1, *u, *beta, *t, *hr, *y;
    size_t gs, us, ts, hrs, ys; /* per-session strides */
    float *acts, *e, *rd[2];
    const float **px, **pb;
    float **py;
} workspace;

_Static_assert(sizeof(workspace) <= FWM_STEP_WORKSPACE_BYTES, "the MNM's workspace fits the driver's room");

static size_t per_session_floats(const dims *d) {
    return 2 * pad16(d->G) + pad16(d->nu) + 16 + pad16(d->Nh * d->nt) + pad16(d->H + d->dv) +
           pad16(d->dout);
}

static size_t scratch_floats(const struct fwm_model *model, size_t capacity) {
    dims dd = dims_of(&fwm__mnm_of(model)->hp), *d = &dd;
    size_t shared = pad16(d->activations) + pad16(d->Nh * d->widest) + 2 * pad16(d->Nh * d->widest);
    size_t pointers = 3 * capacity * d->Nh * sizeof(void *);
    return per_session_floats(d) * capacity + shared + (pointers + sizeof(float) - 1) / sizeof(float) + 16;
}

static void lay_out(void *w, const struct fwm_model *model, float *p, size_t capacity) {
    workspace *ws = w;
    ws->d = dims_of(&fwm__mnm_of(model)->hp);
    const dims *d = &ws->d;
    ws->gs = pad16(d->G), ws->us = pad16(d->nu), ws->ts = pad16(d->Nh * d->nt);
    ws->hrs = pad16(d->H + d->dv), ws->ys = pad16(d->dout);
    ws->g = p, p += ws->gs * capacity;
    ws->g1 = p, p += ws->gs * capacity;
    ws->u = p, p += ws->us * capacity;
    ws->beta = p, p += 16 * capacity;
    ws->t = p, p += ws->ts * capacity;
    ws->hr = p, p += ws->hrs * capacity;
    ws->y = p, p += ws->ys * capacity;
    ws->acts = p, p += pad16(d->activations);
    ws->e = p, p += pad16(d->Nh * d->widest);
    ws->rd[0] = p, p += pad16(d->Nh * d->widest);
    ws->rd[1] = p, p += pad16(d->Nh * d->widest);
    void **pp = (void **)p;
    size_t slots = capacity * d->Nh;
    ws->px = (const float **)pp;
    ws->pb = (const float **)(pp + slots);
    ws->py = (float **)(pp + 2 * slots);
}

/* z_out[i] = M z_in[i] for the Nh heads, tanh unless `last`. */
static void memory_layer(const float *M, size_t rows, size_t cols, size_t Nh, const float *const *in,
                         float *const *out, int last) {
    fwm__matvec_batch(M, rows, cols, Nh, in, NULL, out);
    if (!last)
        for (size_t i = 0; i < Nh; i++) fwm__tanh_array(out[i], out[i], rows);
}

/* One session's write and read (its interaction vectors u, rate beta and targets t computed). */
static void write_and_read(const fwm_mnm_model *mm, const dims *d, workspace *ws, fwm_session *s,
                           const float *u, float beta, const float *t) {
    const float *kr = u, *kw = u + d->Nh * d->dk;
    float *M = s->F;
    const float *zin[FWM_MNM_MAX_HEADS];
    float *zout[FWM_MNM_MAX_HEADS];
    /* Write: the write keys through the current memory, keeping every layer's activations. Layer
     * l's inputs are z^(l) (the keys for l = 0), its outputs z^(l+1) at acts + layer_at[l]. */
    size_t layer_at[FWM_MNM_MAX_MEMORY_LAYERS];
    size_t at = 0;
    for (size_t l = 0; l < d->Lm; l++) {
        uint64_t rows, cols;
        fwm__mnm_memory_shape(&mm->hp, (uint32_t)l, &rows, &cols);
        for (size_t i = 0; i < d->Nh; i++) {
            zin[i] = l == 0 ? kw + i * d->dk : ws->acts + layer_at[l - 1] + i * cols;
            zout[i] = ws->acts + at + i * rows;
        }
        layer_at[l] = at;
        memory_layer(M + mm->memory_offset[l], rows, cols, d->Nh, zin, zout, l + 1 == d->Lm);
        at += d->Nh * rows;
    }
    /* The local update of every layer, from those activations. */
    size_t target_at = 0;
    for (size_t l = 0; l < d->Lm; l++) {
        uint64_t rows, cols;
        fwm__mnm_memory_shape(&mm->hp, (uint32_t)l, &rows, &cols);
        float coef = beta * (2.0f / (float)(d->Nh * rows));
        for (size_t i = 0; i < d->Nh; i++) {
            const float *z = ws->acts + layer_at[l] + i * rows, *target = t + i * d->nt + target_at;
            float *e = ws->e + i * rows;
            for (size_t r = 0; r < rows; r++) e[r] = -((z[r] - target[r]) * coef);
            zin[i] = l == 0 ? kw + i * d->dk : ws->acts + layer_at[l - 1] + i * cols;
        }
        float *Ml = M + mm->memory_offset[l];
        for (size_t r = 0; r < rows; r++) {
            float *row = Ml + r * cols;
            /* blocks of 16 columns kept in registers across the heads: one pass over the row, and
             * for every element the same fma chain, head 0 first, as a pass per head would make */
            size_t c0 = 0;
            for (; c0 + 16 <= cols; c0 += 16) {
                float acc[16];
                for (size_t k = 0; k < 16; k++) acc[k] = row[c0 + k];
                for (size_t i = 0; i < d->Nh; i++) {
                    const float er = ws->e[i * rows + r], *zp = zin[i] + c0;
                    for (size_t k = 0; k < 16; k++) acc[k] = FWM_FMAF(er, zp[k], acc[k]);
                }
                for (size_t k = 0; k < 16; k++) row[c0 + k] = acc[k];
            }
            for (size_t i = 0; i < d->Nh; i++) {
                const float er = ws->e[i * rows + r], *zp = zin[i];
                for (size_t c = c0; c < cols; c++) row[c] = FWM_FMAF(er, zp[c], row[c]);
            }
        }
        target_at += rows;
    }
    /* Read: the read keys through the updated memory, the heads' outputs averaged into r. */
    for (size_t l = 0; l < d->Lm; l++) {
        uint64_t rows, cols;
        fwm__mnm_memory_shape(&mm->hp, (uint32_t)l, &rows, &cols);
        for (size_t i = 0; i < d->Nh; i++) {
            zin[i] = l == 0 ? kr + i * d->dk : ws->rd[(l + 1) % 2] + i * d->widest;
            zout[i] = ws->rd[l % 2] + i * d->widest;
        }
        memory_layer(M + mm->memory_offset[l], rows, cols, d->Nh, zin, zout, l + 1 == d->Lm);
    }
    const float *last = ws->rd[(d->Lm - 1) % 2];
    for (size_t k = 0; k < d->dv; k++) {
        float sum = last[k];
        for (size_t i = 1; i < d->Nh; i++) sum += last[i * d->widest + k];
        s->r[k] = sum / (float)d->Nh;
    }
}

/* n sessions (already checked), one token each. */
static void step_chunk(void *w, const struct fwm_model *model, fwm_session *const *sessions,
                       const uint32_t *tokens, size_t n, float *logits) {
    const fwm_mnm_model *mm = fwm__mnm_of(model);
    workspace *ws = w;
    const dims *d = &ws->d;
    /* the embedding part of the gates: from the table, or W_ie Emb[x] + b into g */
    if (mm->input_gates) {
        for (size_t j = 0; j < n; j++) ws->pb[j] = mm->input_gates + (size_t)tokens[j] * d->G;
    } else {
        for (size_t j = 0; j < n; j++) {
            ws->px[j] = mm->token_embd + (size_t)tokens[j] * d->E;
            ws->pb[j] = mm->bias;
            ws->py[j] = ws->g + j * ws->gs;
        }
        fwm__matvec_batch(mm->weight_ie, d->G, d->E, n, ws->px, ws->pb, ws->py);
        for (size_t j = 0; j < n; j++) ws->pb[j] = ws->g + j * ws->gs;
    }
    /* + W_ir r into g1, + W_hh h into g, then the cell */
    for (size_t j = 0; j < n; j++) {
        ws->px[j] = sessions[j]->r;
        ws->py[j] = ws->g1 + j * ws->gs;
    }
    fwm__matvec_batch(mm->weight_ir, d->G, d->dv, n, ws->px, ws->pb, ws->py);
    for (size_t j = 0; j < n; j++) {
        ws->px[j] = sessions[j]->h;
        ws->pb[j] = ws->g1 + j * ws->gs;
        ws->py[j] = ws->g + j * ws->gs;
    }
    fwm__matvec_batch(mm->weight_hh, d->G, d->H, n, ws->px, ws->pb, ws->py);
    for (size_t j = 0; j < n; j++)
        fwm__lstm_cell(ws->g + j * ws->gs, d->H, mm->hp.forget_bias, sessions[j]->c, sessions[j]->h);
    /* the interaction vectors u = tanh(W_u h + b_u) */
    for (size_t j = 0; j < n; j++) {
        ws->px[j] = sessions[j]->h;
        ws->pb[j] = mm->interact_bias;
        ws->py[j] = ws->u + j * ws->us;
    }
    fwm__matvec_batch(mm->interact_weight, d->nu, d->H, n, ws->px, ws->pb, ws->py);
    for (size_t j = 0; j < n; j++) fwm__tanh_array(ws->u + j * ws->us, ws->u + j * ws->us, d->nu);
    /* beta = sigmoid(w_b . b' + b_b) */
    for (size_t j = 0; j < n; j++) {
        ws->px[j] = ws->u + j * ws->us + d->Nh * (2 * d->dk + d->dv);
        ws->pb[j] = mm->rate_bias;
        ws->py[j] = ws->beta + 16 * j;
    }
    fwm__matvec_batch(mm->rate_weight, 1, d->dk, n, ws->px, ws->pb, ws->py);
    /* the targets of every head: W_q v_i + b_q */
    for (size_t j = 0; j < n; j++) {
        for (size_t i = 0; i < d->Nh; i++) {
            size_t k = j * d->Nh + i;
            ws->px[k] = ws->u + j * ws->us + 2 * d->Nh * d->dk + i * d->dv;
            ws->pb[k] = mm->target_bias;
            ws->py[k] = ws->t + j * ws->ts + i * d->nt;
        }
    }
    fwm__matvec_batch(mm->target_weight, d->nt, d->dv, n * d->Nh, ws->px, ws->pb, ws->py);
    /* each session's own memory: write, then read */
    for (size_t j = 0; j < n; j++)
        write_and_read(mm, d, ws, sessions[j], ws->u + j * ws->us, fwm__sigmoidf(ws->beta[16 * j]),
                       ws->t + j * ws->ts);
    for (size_t j = 0; j < n; j++) sessions[j]->position++;
    if (!logits) return;
    /* y = W_o [h; r] + b_o, logits = W_s y + b_s */
    for (size_t j = 0; j < n; j++) {
        float *hr = ws->hr + j * ws->hrs;
        memcpy(hr, sessions[j]->h, d->H * sizeof(float));
        memcpy(hr + d->H, sessions[j]->r, d->dv * sizeof(float));
        ws->px[j] = hr;
        ws->pb[j] = mm->out_bias;
        ws->py[j] = ws->y + j * ws->ys;
    }
    fwm__matvec_batch(mm->out_weight, d->dout, d->H + d->dv, n, ws->px, ws->pb, ws->py);
    for (size_t j = 0; j < n; j++) {
        ws->px[j] = ws->y + j * ws->ys;
        ws->pb[j] = mm->output_bias;
        ws->py[j] = logits + j * d->V;
    }
    fwm__matvec_batch(mm->output_weight, d->V, d->dout, n, ws->px, ws->pb, ws->py);
}

const fwm__step_kernel fwm__mnm_step_kernel = {
    .chunk_sessions = 32,
    .stack_floats = 16384,
    .scratch_floats = scratch_floats,
    .lay_out = lay_out,
    .chunk = step_chunk,
};
