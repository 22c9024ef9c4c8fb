/* stm_model.h - the STM (self-attentive associative memory, `--arch stm`) as the trainer sees it:
 * flat parameters and gradients, B lanes of carried state, and the forward and backward pass over
 * one window of tokens, in both input modes.
 *
 * The model is docs/MODEL.md's "The STM (self-attentive associative memory)" (stm/stm_hparams.h).
 * A lane reads tokens exactly as a runtime session does (runtime/stm/): word mode takes a core step
 * at every token (after a reset on <eos> when reset_on_eos) and predicts the next word with eq. 14;
 * sentence mode buffers words until a statement end (a core step on the encoded sentence) or a
 * question end (the answer module reads Mr: the prediction; the answer slot opens and the next
 * token changes nothing), and <eos> with reset_on_eos restores the reset state. The buffer, its
 * length and the slot flag are part of the lane's carried state, so a window may end in the middle
 * of a sentence. Loss rows: word mode by the loss rule (fwm__is_loss_position); sentence mode the
 * positions that predict (question ends) whose target is not padding, whatever the loss mode.
 *
 * Lanes are independent, so a window runs lanes split across threads (a fixed partition), each
 * walking its tokens; the products inside a step are matrix products over the d rows of the lane's
 * memories (Ug over tanh(Mi), the SAM projection over A, the attention S = tanh(q k) v, the
 * relational transfer G1 over S's columns, eq. 14's G2 over the n_q slots). The backward pass
 * recomputes: the forward keeps only the lane state at the start of every segment of `segment`
 * core steps; the backward replays each segment (last first) from its snapshot, keeping every
 * step's activations, and walks it back. Each thread adds its lanes' parameter gradients into its
 * own buffer; the buffers are added in thread order, so results depend on the thread count only.
 * Nothing flows into the state carried into a window (truncated BPTT); a reset inside the window
 * passes the gradient of the state after it to the initial memories stm.item.init and
 * stm.relation.init. With fix_alpha, alpha1 and alpha3 are held (zero gradient); without
 * train_output, sentence mode's output matrix Z is held. The relational transfer is skipped when
 * alpha3 is 0 and held (as the runtime skips it when alpha3 is 0).
 * Declared in two precisions from one template (stm_model_decl.h): fwm__stm_tm_f32 (training,
 * evaluation) and fwm__stm_tm_f64 (the gradient check).
 * Not for: data, optimisation, files.
 */
#ifndef FWM_TRAIN_STM_MODEL_H
#define FWM_TRAIN_STM_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "fwm/fwm.h"
#include "param_layout.h"
#include "stm/stm_hparams.h"
#include "thread_pool.h"
#include "tm_shell.h" /* the shell every model begins with */
#include "model_common.h" /* fwm__loss_mode, fwm__is_loss_position */

typedef struct fwm__stm_config {
    fwm_stm_hparams hp;
    int lanes;              /* B >= 1 */
    int window;             /* maximum tokens per lane per forward call */
    int segment;            /* core steps between the backward pass's snapshots; 0 = automatic */
    fwm__loss_mode loss_mode; /* word mode only (sentence mode: the question ends) */
    uint32_t loss_token_id; /* QM mode: the input token at which loss is taken ("?") */
    int fix_alpha;          /* hold alpha1 and alpha3 (the authors' bAbI setting) */
    int train_output;       /* sentence mode: train the output matrix Z (the authors hold it) */
    int keep_logits;        /* also keep the loss rows' logits in tm->shell.logits (tests) */
    int forward_only;       /* no gradients, no backward buffers, no snapshots */
} fwm__stm_config;

/* Per-thread activation memory the automatic segment aims at (floats). */
#define FWM__STM_SEGMENT_BUDGET_FLOATS (16u << 20)

/* Where one core step's kept activations lie in its record (floats; every part starts at a
 * multiple of 16), where one loss row's head activations lie, and the backward pass's per-thread
 * scratch. Precision-independent: computed once by fwm__stm_offsets_init. */
typedef struct fwm__stm_offsets {
    /* core step record */
    size_t x, a, c, z, u, mi, mr, tmi, g, h, mi1, vr, A, pmt, nn, y, wt, s, t, rstd, act_total;
    /* head record: word mode r (n_q n_r); sentence mode q, the MLPs' hidden layers (4 H_a), e1,
     * r1..r3, the reads' normalised values (3 d), their 1/sqrt(var + eps) (3), the reads (3 d),
     * their sum */
    size_t hq, hhid, he, hr, hnrm, hrstd, hout, hsum, head_total;
    /* scratch: the walked state, gradients of the state, Mr at a prediction, and the backward
     * temporaries */
    size_t wmi, wmr, dmi, dmr, mrc, ds, dwt, dy, dA, dg, dtm, dt, w, dx, da, dc, dz, du, dvr, dw,
        dlog, dr, dsum, dout, dn, draw, dprev, drk, dq, dhid, dpre, scratch_total;
} fwm__stm_offsets;

static inline size_t fwm__stm_take(size_t *at, size_t n)
{
    size_t here = *at;
    *at += (n + 15) / 16 * 16;
    return here;
}

static inline void fwm__stm_offsets_init(fwm__stm_offsets *o, const fwm_stm_hparams *hp)
{
    size_t V = hp->vocab_size, E = hp->embedding_length, d = hp->memory_size, nq = hp->query_count;
    size_t nr = hp->relation_length, Ha = hp->answer_hidden, dd = d * d, qd = nq * d, pq = 3 * nq;
    size_t at = 0;
    o->x = fwm__stm_take(&at, E);
    o->a = fwm__stm_take(&at, d);
    o->c = fwm__stm_take(&at, d);
    o->z = fwm__stm_take(&at, nq);
    o->u = fwm__stm_take(&at, 2 * d);
    o->mi = fwm__stm_take(&at, dd);
    o->mr = fwm__stm_take(&at, qd * d);
    o->tmi = fwm__stm_take(&at, dd);
    o->g = fwm__stm_take(&at, 2 * dd);
    o->h = fwm__stm_take(&at, dd);
    o->mi1 = fwm__stm_take(&at, dd);
    o->vr = fwm__stm_take(&at, d);
    o->A = fwm__stm_take(&at, dd);
    o->pmt = fwm__stm_take(&at, pq * d);
    o->nn = fwm__stm_take(&at, pq * d);
    o->y = fwm__stm_take(&at, pq * d);
    o->wt = fwm__stm_take(&at, qd * nq);
    o->s = fwm__stm_take(&at, qd * d);
    o->t = fwm__stm_take(&at, dd);
    o->rstd = fwm__stm_take(&at, 1);
    o->act_total = at;
    at = 0;
    if (hp->input_mode == FWM_STM_INPUT_WORD) {
        o->hq = o->hhid = o->he = o->hr = o->hnrm = o->hrstd = o->hout = o->hsum = 0;
        fwm__stm_take(&at, nq * nr);
    } else {
        o->hq = fwm__stm_take(&at, E);
        o->hhid = fwm__stm_take(&at, 4 * Ha);
        o->he = fwm__stm_take(&at, d);
        o->hr = fwm__stm_take(&at, 3 * nq);
        o->hnrm = fwm__stm_take(&at, 3 * d);
        o->hrstd = fwm__stm_take(&at, 3);
        o->hout = fwm__stm_take(&at, 3 * d);
        o->hsum = fwm__stm_take(&at, d);
    }
    o->head_total = at;
    at = 0;
    o->wmi = fwm__stm_take(&at, dd);
    o->wmr = fwm__stm_take(&at, qd * d);
    o->dmi = fwm__stm_take(&at, dd);
    o->dmr = fwm__stm_take(&at, qd * d);
    o->mrc = fwm__stm_take(&at, qd * d);
    o->ds = fwm__stm_take(&at, qd * d);
    o->dwt = fwm__stm_take(&at, qd * nq);
    o->dy = fwm__stm_take(&at, pq * d);
    o->dA = fwm__stm_take(&at, dd);
    o->dg = fwm__stm_take(&at, 2 * dd);
    o->dtm = fwm__stm_take(&at, dd);
    o->dt = fwm__stm_take(&at, dd);
    o->w = fwm__stm_take(&at, qd);
    o->dx = fwm__stm_take(&at, E);
    o->da = fwm__stm_take(&at, d);
    o->dc = fwm__stm_take(&at, d);
    o->dz = fwm__stm_take(&at, nq);
    o->du = fwm__stm_take(&at, 2 * d);
    o->dvr = fwm__stm_take(&at, d);
    o->dw = fwm__stm_take(&at, qd);
    o->dlog = fwm__stm_take(&at, V);
    o->dr = fwm__stm_take(&at, nq * nr);
    o->dsum = fwm__stm_take(&at, d);
    o->dout = fwm__stm_take(&at, d);
    o->dn = fwm__stm_take(&at, d);
    o->draw = fwm__stm_take(&at, d);
    o->dprev = fwm__stm_take(&at, d);
    o->drk = fwm__stm_take(&at, 3 * nq);
    o->dq = fwm__stm_take(&at, E);
    o->dhid = fwm__stm_take(&at, Ha);
    o->dpre = fwm__stm_take(&at, d > nq ? (d > Ha ? d : Ha) : (nq > Ha ? nq : Ha));
    o->scratch_total = at;
}

/* The action bits of a token (tm->act). */
#define FWM__STM_ACT_RESET 1u  /* the lane is reset first */
#define FWM__STM_ACT_CORE 2u   /* a core step */
#define FWM__STM_ACT_ANSWER 4u /* sentence mode: a question's end, the answer module predicts */

#define FWM_REAL_DOUBLE 0
#include "real_template.h"
#include "stm_model_decl.h"
#undef FWM_REAL_DOUBLE
#define FWM_REAL_DOUBLE 1
#include "real_template.h"
#include "stm_model_decl.h"
#undef FWM_REAL_DOUBLE

#endif
