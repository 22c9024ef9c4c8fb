/* session_internal.h - the layout of a session (h, c, F in one aligned block) and the internal
 * functions the rest of the runtime uses to size sessions and state blobs. Internal to libfwm. */
#ifndef FWM_RUNTIME_SESSION_INTERNAL_H
#define FWM_RUNTIME_SESSION_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fwm/fwm.h"
#include "model_internal.h"

/* Alignment of the session block and of each state array inside it (bytes). */
#define FWM_SESSION_ALIGNMENT 64

/* A session is one FWM_SESSION_ALIGNMENT-aligned allocation: this struct, then its architecture's
 * state block (arch_ops.h), zeroed by a reset and copied by a fork. For the FWM: h[H], c[H],
 * F[S*R*T] (T fastest) and the pending write's k1[S], k2[R], d[T], then for a stacked FWM (L > 1)
 * the lower layers' h[L-1][H] and c[L-1][H], each array starting on an aligned boundary. For the
 * LSTM: h[L][H] and c[L][H] (runtime/lstm/), F and the pending write NULL. For
 * the MNM: h[H], c[H], r[d_v] and its memory M^1..M^Lm in F (runtime/mnm/). For the STM: its
 * item memory Mi in F (h points there too: the block's start), its relational memory in Mr, and in
 * sentence mode the word buffer in `words` (runtime/stm/).
 *
 * The fast weights the model means are F with the last write applied: each step's write (a rank-1
 * update and a normalisation, see fwm/fwm_step.c) is kept pending and applied by the next step's one pass
 * over F, and by an export (fwm__fw_apply, kernels.h), so F is read and written once per step. */
struct fwm_session {
    const struct fwm_model *model; /* borrowed */
    uint64_t position;             /* tokens stepped since creation or the last reset */
    float *h;                      /* [H] LSTM hidden state ([L*H] for the LSTM architecture) */
    float *c;                      /* [H] LSTM cell state ([L*H] likewise) */
    float *F;                      /* [S*R*T] fast weights before the pending write (the MNM's memory) */
    float *r;                      /* the MNM's previous read-out [d_v]; NULL for the others */
    float *Mr;                     /* the STM's relational memory [n_q d, d]; NULL for the others */
    uint32_t *words;               /* the STM's sentence buffer, its length and the answer-slot
                                    * flag [P + 2] (sentence mode); NULL otherwise */
    float *pending_k1;             /* [S] the pending write's key k1 */
    float *pending_k2;             /* [R] its key k2 */
    float *pending_d;              /* [T] its delta beta (v - v_old) write_scale */
    float *lower_h;                /* a stacked FWM's lower LSTM layers: h of layer l at
                                    * lower_h + l * fwm__aligned_floats(H), l < L - 1;
                                    * NULL when L = 1 */
    float *lower_c;                /* their c, likewise */
    float pending_s;               /* its normalisation 1 / max(1, ||F + K d^T||) */
    bool has_pending;              /* false after create, reset and import */
    uint32_t last_token;           /* the FWM's last token read (its read policy "token" decides
                                    * from it whether the prediction reads); FWM_NO_TOKEN after
                                    * create, reset and import */
    size_t state_bytes;            /* bytes from h to the end of the block (zeroed on reset, then
                                    * the architecture's reset_state, arch_ops.h) */
};

/* Floats rounded up so the next array starts on an FWM_SESSION_ALIGNMENT boundary. */
static inline size_t fwm__aligned_floats(size_t n) {
    const size_t per = FWM_SESSION_ALIGNMENT / sizeof(float);
    return (n + per - 1) / per * per;
}

/* Bytes one session of `model` occupies (the whole aligned block). */
size_t fwm__session_bytes(const struct fwm_model *model);

/* Exact size of an exported state blob for `model` (see the layout in state_blob.c). */
size_t fwm__state_blob_size(const struct fwm_model *model);

#endif
