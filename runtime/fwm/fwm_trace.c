/* trace.c - inspecting a session: what its last step wrote into the fast-weight memory, what each of
 * its chained reads retrieves, and the memory itself (fwm_session_trace, fwm_session_memory).
 *
 * Everything here is computed from the session's state after the step (h, and F with the pending
 * write applied) by docs/MODEL.md's steps 3-5 written out plainly; nothing here is on the stepping
 * path and nothing changes the session. The write keys and the read queries use the step's own
 * matrix-vector kernel, so they are the step's values; the reads are summed in a plain order, so they
 * match the step's fused pass up to float rounding. FWM models only: other architectures are
 * refused with FWM_ERR_UNSUPPORTED. */
#include <string.h>

#include "fwm_alloc.h"
#include "fwm_error.h"
#include "bf16_kernels.h"
#include "kernels.h"
#include "session_internal.h"

/* FWM_ERR_UNSUPPORTED for a model of another architecture: it has no fast-weight memory. */
static fwm_status fwm_only(const struct fwm_session *s, const char *what, fwm_error *err) {
    return fwm__error(err, FWM_ERR_UNSUPPORTED,
                      "%s: the model's architecture is '%s', which has no fast-weight memory to inspect "
                      "(only 'fwm' models do)",
                      what, fwm__arch_name(s->model->arch));
}

/* F as the model means it: the pending write applied (what an export stores). */
static void effective_memory(const struct fwm_session *s, float *out) {
    const fwm_hparams *hp = &s->model->hp;
    size_t S = hp->memory_s, R = hp->memory_r, T = hp->memory_t;
    if (!s->has_pending) {
        memcpy(out, s->F, S * R * T * sizeof(float));
        return;
    }
    for (size_t i = 0; i < S; i++)
        for (size_t j = 0; j < R; j++) {
            float kk = s->pending_k1[i] * s->pending_k2[j];
            const float *f = s->F + (i * R + j) * T;
            float *o = out + (i * R + j) * T;
            for (size_t t = 0; t < T; t++) o[t] = fwm__fw_apply(f[t], kk, s->pending_d[t], s->pending_s);
        }
}

fwm_status fwm_session_memory(const fwm_session *session, float *out, size_t capacity, fwm_error *err) {
    fwm__error_clear(err);
    if (!session || !out) return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "fwm_session_memory: NULL argument");
    if (session->model->arch != FWM_ARCH_FWM) return fwm_only(session, "fwm_session_memory", err);
    const fwm_hparams *hp = &session->model->hp;
    size_t n = (size_t)hp->memory_s * hp->memory_r * hp->memory_t;
    if (capacity < n)
        return fwm__error(err, FWM_ERR_BUFFER_TOO_SMALL, "fwm_session_memory: %zu floats needed, %zu given", n,
                          capacity);
    effective_memory(session, out);
    return FWM_OK;
}

/* y = W x + b (b may be NULL) with the step's kernel (W in F32, or in BF16 when W16 is set). */
static void affine(const float *W, const uint16_t *W16, size_t rows, size_t cols, const float *x,
                   const float *b, float *y) {
    const float *xs[1] = {x};
    const float *bs[1] = {b};
    float *ys[1] = {y};
    fwm__matvec_any(W, W16, rows, cols, 1, xs, b ? bs : NULL, ys);
}

fwm_status fwm_session_trace(const fwm_session *session, fwm_trace *trace, fwm_error *err) {
    fwm__error_clear(err);
    if (!session || !trace || !trace->k1 || !trace->k2 || !trace->v || !trace->read_queries ||
        !trace->read_keys || !trace->read_values)
        return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "fwm_session_trace: NULL argument");
    if (session->model->arch != FWM_ARCH_FWM) return fwm_only(session, "fwm_session_trace", err);
    const struct fwm_model *model = session->model;
    const fwm_hparams *hp = &model->hp;
    const fwm_weights *w = &model->w;
    const fwm_weights_bf16 *w16 = &model->w16;
    size_t S = hp->memory_s, R = hp->memory_r, T = hp->memory_t, H = hp->hidden_size, V = hp->vocab_size;
    size_t N = hp->read_count;
    size_t write_rows = S + R + T + 1, read_rows = S + N * R;
    /* scratch: F, the write and read pre-activations, the contraction over j, q, m, y */
    size_t floats = S * R * T + write_rows + read_rows + S * T + S + 2 * H;
    float *scratch = fwm__malloc(floats * sizeof(float));
    if (!scratch) return fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "out of memory tracing a session");
    float *F = scratch, *a = F + S * R * T, *u = a + write_rows, *partial = u + read_rows, *q = partial + S * T;
    float *m = q + S, *y = m + H;
    effective_memory(session, F);

    /* the write of the last step, from the h it was computed from */
    affine(w->write_weight, w16->write_weight, write_rows, H, session->h, w->write_bias, a);
    fwm__tanh_array(trace->k1, a, S);
    fwm__tanh_array(trace->k2, a + S, R);
    fwm__tanh_array(trace->v, a + S + R, T);
    trace->beta = fwm__sigmoidf(a[S + R + T] + hp->beta_bias);

    /* the chained reads over the memory after it */
    affine(w->read_weight, w16->read_weight, read_rows, H, session->h, w->read_bias, u);
    memcpy(q, u, S * sizeof(float)); /* q0, no tanh */
    for (size_t r = 0; r < N; r++) {
        float *key = trace->read_keys + r * R;
        fwm__tanh_array(key, u + S + r * R, R);
        memcpy(trace->read_queries + r * S, q, S * sizeof(float));
        /* partial[i][t] = sum_j key[j] F[i][j][t]; then out[t] = sum_i q[i] partial[i][t] */
        for (size_t i = 0; i < S; i++) fwm__vecmat(F + i * R * T, R, T, key, partial + i * T);
        float *value = trace->read_values + r * T;
        fwm__vecmat(partial, S, T, q, value);
        fwm__layer_norm(value, value, T, hp->layer_norm_eps);
        memcpy(q, value, T * sizeof(float)); /* S == T whenever N > 1 */
        if (trace->read_logits) {
            affine(w->out_weight, w16->out_weight, H, T, value, w->out_bias, m);
            if (hp->residual)
                for (size_t k = 0; k < H; k++) y[k] = m[k] + session->h[k];
            else
                memcpy(y, m, H * sizeof(float));
            affine(w->output_weight, w16->output_weight, V, H, y, NULL, trace->read_logits + r * V);
        }
    }
    fwm__free(scratch);
    return FWM_OK;
}
