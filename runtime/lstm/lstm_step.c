/* lstm_step.c - the LSTM baseline's step: one session, a token sequence, or a batch of sessions.
 *
 * As the FWM's step (step.c): every entry point checks everything first (step_checks.h), then
 * runs one chunk routine on up to CHUNK_SESSIONS sessions at a time, with the weight
 * matrix-vector products batched across the chunk (fwm__matvec_batch, whose arithmetic per element
 * does not depend on the batch) and the cell update per session (fwm__lstm_cell, the FWM's LSTM
 * kernel). So single, sequence and batched steps are bit-identical by construction.
 *
 * Per step, for each layer l (docs/MODEL.md, "The LSTM baseline"): g = (W_ih in + b) + W_hh h^l,
 * where layer 0's W_ih Emb[x] + b comes from the model's input-gate table when it has one; the cell
 * updates c^l and h^l; the layer's output is h^l, plus its input when residual and l >= 1. The
 * output layer W_s y + b_s runs only when logits are wanted. */
#include <string.h>

#include "fwm_alloc.h"
#include "fwm_error.h"
#include "kernels.h"
#include "lstm_runtime.h"
#include "step_checks.h"

#define CHUNK_SESSIONS 32
#define STACK_SCRATCH_FLOATS 8192

static size_t pad16(size_t n) { return (n + 15) & ~(size_t)15; }

/* Per-call scratch for `capacity` sessions: the input part of the gates, the gates, two rows of
 * layer outputs (a layer reads one and writes the other), and the pointer arrays of the batched
 * products. */
typedef struct workspace {
    float *gi, *g, *y[2];
    const float **px, **pb, **in;
    float **py;
    float *heap;
} workspace;

static size_t workspace_floats(size_t H, size_t capacity) {
    size_t per = 2 * pad16(4 * H) + 2 * pad16(H);
    size_t pointers = 4 * capacity * sizeof(void *);
    return per * capacity + (pointers + sizeof(float) - 1) / sizeof(float) + 16;
}

static fwm_status workspace_init(workspace *ws, size_t H, size_t capacity, float *stack,
                                 fwm_error *err) {
    size_t floats = workspace_floats(H, capacity);
    float *p = stack;
    ws->heap = NULL;
    if (floats > STACK_SCRATCH_FLOATS) {
        ws->heap = fwm__aligned_alloc(64, floats * sizeof(float));
        if (!ws->heap)
            return fwm__error(err, FWM_ERR_OUT_OF_MEMORY,
                              "out of memory allocating %zu bytes of step scratch", floats * sizeof(float));
        p = ws->heap;
    }
    ws->gi = p, p += pad16(4 * H) * capacity;
    ws->g = p, p += pad16(4 * H) * capacity;
    ws->y[0] = p, p += pad16(H) * capacity;
    ws->y[1] = p, p += pad16(H) * capacity;
    void **pp = (void **)p;
    ws->px = (const float **)pp;
    ws->pb = (const float **)(pp + capacity);
    ws->in = (const float **)(pp + 2 * capacity);
    ws->py = (float **)(pp + 3 * capacity);
    return FWM_OK;
}

/* n sessions (already checked), one token each. */
static void step_chunk(const fwm_lstm_model *lm, workspace *ws, fwm_session *const *sessions,
                       const uint32_t *tokens, size_t n, float *logits) {
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
            fwm__matvec_batch(lm->weight_ih[l], G, l == 0 ? E : H, n, ws->px, ws->pb, ws->py);
            for (size_t j = 0; j < n; j++) ws->pb[j] = ws->gi + j * gs;
        }
        /* g = (that) + W_hh h^l, then the cell */
        for (size_t j = 0; j < n; j++) {
            ws->px[j] = sessions[j]->h + l * H;
            ws->py[j] = ws->g + j * gs;
        }
        fwm__matvec_batch(lm->weight_hh[l], G, H, n, ws->px, ws->pb, ws->py);
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
    fwm__matvec_batch(lm->output_weight, V, H, n, ws->in, ws->pb, ws->py);
}

/* One session over `count` checked tokens. */
static fwm_status run_sequence(fwm_session *session, const uint32_t *tokens, size_t count,
                               float *logits, fwm_error *err) {
    const fwm_lstm_model *lm = fwm__lstm_of(session->model);
    _Alignas(64) float stack[STACK_SCRATCH_FLOATS];
    workspace ws;
    fwm_status status = workspace_init(&ws, lm->hp.hidden_size, 1, stack, err);
    if (status != FWM_OK) return status;
    size_t V = lm->hp.vocab_size;
    for (size_t i = 0; i < count; i++)
        step_chunk(lm, &ws, &session, &tokens[i], 1, logits ? logits + i * V : NULL);
    fwm__free(ws.heap);
    return FWM_OK;
}

fwm_status fwm__lstm_step(fwm_session *session, uint32_t token, float *logits, fwm_error *err) {
    fwm__error_clear(err);
    if (!session) return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "fwm_session_step: session is NULL");
    fwm_status status = fwm__check_token(session->model, token, "", 0, err);
    if (status != FWM_OK) return status;
    return run_sequence(session, &token, 1, logits, err);
}

fwm_status fwm__lstm_step_sequence(fwm_session *session, const uint32_t *tokens, size_t count,
                                   float *logits, fwm_error *err) {
    fwm__error_clear(err);
    if (!session)
        return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "fwm_session_step_sequence: session is NULL");
    if (count == 0) return FWM_OK;
    if (!tokens)
        return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "fwm_session_step_sequence: tokens is NULL");
    for (size_t i = 0; i < count; i++) {
        fwm_status status = fwm__check_token(session->model, tokens[i], "at sequence position", i, err);
        if (status != FWM_OK) return status;
    }
    return run_sequence(session, tokens, count, logits, err);
}

fwm_status fwm__lstm_batch_step(fwm_session *const *sessions, const uint32_t *tokens, size_t count,
                                float *logits, fwm_error *err) {
    fwm__error_clear(err);
    if (count == 0) return FWM_OK;
    fwm_status status = fwm__check_batch(sessions, tokens, count, err);
    if (status != FWM_OK) return status;
    const fwm_lstm_model *lm = fwm__lstm_of(sessions[0]->model);
    size_t capacity = count < CHUNK_SESSIONS ? count : CHUNK_SESSIONS;
    _Alignas(64) float stack[STACK_SCRATCH_FLOATS];
    workspace ws;
    status = workspace_init(&ws, lm->hp.hidden_size, capacity, stack, err);
    if (status != FWM_OK) return status;
    size_t V = lm->hp.vocab_size;
    for (size_t i = 0; i < count; i += capacity) {
        size_t n = count - i < capacity ? count - i : capacity;
        step_chunk(lm, &ws, sessions + i, tokens + i, n, logits ? logits + i * V : NULL);
    }
    fwm__free(ws.heap);
    return FWM_OK;
}
