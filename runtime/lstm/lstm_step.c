/* lstm_step.c - the LSTM baseline's step maths: its chunk step and workspace (fwm__lstm_step_kernel)
 * behind the shared step entry points (step_driver.h).
 *
 * The chunk step batches the weight matrix-vector products across the chunk (fwm__matvec_batch,
 * whose arithmetic per element does not depend on the batch) and runs the cell update per session
 * (fwm__lstm_cell, the FWM's LSTM kernel). So single, sequence and batched steps are bit-identical
 * by construction.
 *
 * Per step, for each layer l (docs/MODEL.md, "The LSTM baseline"): g = (W_ih in + b) + W_hh h^l,
 * where layer 0's W_ih Emb[x] + b comes from the model's input-gate table when it has one; the cell
 * updates c^l and h^l; the layer's output is h^l, plus its input when residual and l >= 1. The
 * output layer W_s y + b_s runs only when logits are wanted. fwm__lstm_predict runs that output layer
 * alone over a session's state (fwm_session_predict): the same bits as the step's logits. */
#include <string.h>

#include "fwm_alloc.h"
#include "fwm_error.h"
#include "bf16_kernels.h"
#include "kernels.h"
#include "lstm_runtime.h"
#include "step_driver.h"

static size_t pad16(size_t n) { return (n + 15) & ~(size_t)15; }

/* Scratch for `capacity` sessions: the input part of the gates, the gates, two rows of layer
 * outputs (a layer reads one and writes the other), and the pointer arrays of the batched
 * products. */
typedef struct workspace {
    float *gi, *g, *y[2];
    const float **px, **pb, **in;
    float **py;
} workspace;

_Static_assert(sizeof(workspace) <= FWM_STEP_WORKSPACE_BYTES, "the LSTM's workspace fits the driver's room");

static size_t scratch_floats(const struct fwm_model *model, size_t capacity) {
    size_t H = fwm__lstm_of(model)->hp.hidden_size;
    size_t per = 2 * pad16(4 * H) + 2 * pad16(H);
    size_t pointers = 4 * capacity * sizeof(void *);
    return per * capacity + (pointers + sizeof(float) - 1) / sizeof(float) + 16;
}

static void lay_out(void *w, const struct fwm_model *model, float *p, size_t capacity) {
    workspace *ws = w;
    size_t H = fwm__lstm_of(model)->hp.hidden_size;
    ws->gi = p, p += pad16(4 * H) * capacity;
    ws->g = p, p += pad16(4 * H) * capacity;
    ws->y[0] = p, p += pad16(H) * capacity;
    ws->y[1] = p, p += pad16(H) * capacity;
    void **pp = (void **)p;
    ws->px = (const float **)pp;
    ws->pb = (const float **)(pp + capacity);
    ws->in = (const float **)(pp + 2 * capacity);
    ws->py = (float **)(pp + 3 * capacity);
}

/* n sessions (already checked), one token each. */
static void step_chunk(void *w, const struct fwm_model *model, fwm_session *const *sessions,
                       const uint32_t *tokens, size_t n, float *logits) {
    const fwm_lstm_model *lm = fwm__lstm_of(model);
    workspace *ws = w;
    const fwm_lstm_hparams *hp = &lm->hp;
    const size_t H = hp->hidden_size, E = hp->embedding_length, V = hp->vocab_size, G = 4 * H;
    const size_t gs = pad16(G), hs = pad16(H);
    for (size_t l = 0; l < hp->layer_count; l++) {
        /* the input part: layer 0's from the table or W_ih Emb[x] + b, the others' W_ih y + b */
        if (l == 0 && lm->input_gates) {
            for (size_t j = 0; j < n; j++) ws->pb[j] = lm->input_gates + (size_t)tokens[j] * G;
        } else {
            for (size_t j = 0; j < n; j++) {
                ws->px[j] = l == 0 ? lm->token_embd + (size_t)tokens[j] * E : ws->in[j];
                ws->pb[j] = lm->bias[l];
                ws->py[j] = ws->gi + j * gs;
            }
            fwm__matvec_any(lm->weight_ih[l], lm->weight_ih16[l], G, l == 0 ? E : H, n, ws->px, ws->pb, ws->py);
            for (size_t j = 0; j < n; j++) ws->pb[j] = ws->gi + j * gs;
        }
        /* g = (that) + W_hh h^l, then the cell */
        for (size_t j = 0; j < n; j++) {
            ws->px[j] = sessions[j]->h + l * H;
            ws->py[j] = ws->g + j * gs;
        }
        fwm__matvec_any(lm->weight_hh[l], lm->weight_hh16[l], G, H, n, ws->px, ws->pb, ws->py);
        for (size_t j = 0; j < n; j++)
            fwm__lstm_cell(ws->g + j * gs, H, hp->forget_bias, sessions[j]->c + l * H,
                           sessions[j]->h + l * H);
        /* the layer's output, the next layer's input */
        for (size_t j = 0; j < n; j++) {
            const float *h = sessions[j]->h + l * H;
            if (hp->residual && l >= 1) {
                float *y = ws->y[l % 2] + j * hs;
                const float *in = ws->in[j];
                for (size_t i = 0; i < H; i++) y[i] = h[i] + in[i];
                ws->in[j] = y;
            } else {
                ws->in[j] = h;
            }
        }
    }
    for (size_t j = 0; j < n; j++) sessions[j]->position++;
    if (!logits) return;
    for (size_t j = 0; j < n; j++) {
        ws->pb[j] = lm->output_bias;
        ws->py[j] = logits + j * V;
    }
    fwm__matvec_any(lm->output_weight, lm->output_weight16, V, H, n, ws->in, ws->pb, ws->py);
}

const fwm__step_kernel fwm__lstm_step_kernel = {
    .chunk_sessions = 32,
    .stack_floats = 8192,
    .scratch_floats = scratch_floats,
    .lay_out = lay_out,
    .chunk = step_chunk,
};

/* Layer outputs this large and smaller sum on the stack in fwm__lstm_predict. */
#define PREDICT_STACK_FLOATS 1024

/* The output layer over the top layer's output, rebuilt from the state as the step builds it: h of
 * the top layer, plus (residual, from layer 2 on) the sum of the layers below in the step's order. */
fwm_status fwm__lstm_predict(const fwm_session *session, float *logits, fwm_error *err) {
    const fwm_lstm_model *lm = fwm__lstm_of(session->model);
    const fwm_lstm_hparams *hp = &lm->hp;
    const size_t H = hp->hidden_size, L = hp->layer_count;
    float stack[PREDICT_STACK_FLOATS];
    float *sum = NULL;
    const float *in = session->h; /* layer 0's output */
    if (hp->residual && L >= 2) {
        sum = H <= PREDICT_STACK_FLOATS ? stack : fwm__malloc(H * sizeof *sum);
        if (!sum)
            return fwm__error(err, FWM_ERR_OUT_OF_MEMORY,
                              "fwm_session_predict: out of memory allocating %zu bytes of scratch",
                              H * sizeof *sum);
        for (size_t l = 1; l < L; l++) {
            const float *h = session->h + l * H;
            for (size_t i = 0; i < H; i++) sum[i] = h[i] + in[i];
            in = sum;
        }
    } else {
        in = session->h + (L - 1) * H;
    }
    const float *xs[1] = {in}, *bs[1] = {lm->output_bias};
    float *ys[1] = {logits};
    fwm__matvec_any(lm->output_weight, lm->output_weight16, hp->vocab_size, H, 1, xs, bs, ys);
    if (sum != stack) fwm__free(sum);
    return FWM_OK;
}
