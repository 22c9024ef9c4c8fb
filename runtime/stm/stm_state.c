/* stm_state.c - export and import of an STM session's state: a version-2 blob
 * (state_blob_common.h, written and checked by state_blob_v2.c) whose dims and body are
 *
 *   offset  size         field
 *   32      4    u32     d    the memory size
 *   36      4    u32     n_q  the relational memory's slots
 *   40      4    u32     input mode (0 sentence, 1 word)
 *   44      4    u32     P    the sentence buffer's capacity (0 in word mode)
 *   48      8            0    reserved
 *   56      4*d^2 f32    Mi, row-major
 *           4*n_q d^2    Mr, [n_q d, d] row-major (slot s's row e at s d + e)
 *           4*P  u32     sentence mode: the buffered word ids, unused entries 0
 *           4    u32     sentence mode: the buffer's length (at most P)
 *           4    u32     sentence mode: the answer slot (0 closed, 1 open)
 *   end-8   8    u64     XXH64 (seed 0) of every byte before it
 *
 * Total 64 + 4 d^2 (1 + n_q) (+ 4 (P + 2)) bytes. Import checks, in this order: those of every
 * version-2 blob (state_blob_v2.h) with d, n_q, mode and P, then every float finite, and the
 * buffer consistent: length at most P, words below V, unused entries 0, the slot 0 or 1 and open
 * only with an empty buffer (FWM_ERR_STATE_CORRUPT). Only then is the session overwritten. */
#include <inttypes.h>

#include "fwm_error.h"
#include "state_blob_common.h"
#include "state_blob_v2.h"
#include "stm_runtime.h"

static void model_dims(const struct fwm_model *model, uint32_t *dims) {
    const fwm_stm_model *sm = fwm__stm_of(model);
    const fwm_stm_hparams *hp = &sm->hp;
    dims[0] = hp->memory_size;
    dims[1] = hp->query_count;
    dims[2] = hp->input_mode;
    dims[3] = sm->sentence ? hp->sentence_length : 0;
    dims[4] = dims[5] = 0;
}

static size_t body_bytes(const struct fwm_model *model) {
    return (size_t)fwm__stm_state_bytes(&fwm__stm_of(model)->hp);
}

/* The bytes of state the dims imply; false when they are out of range. */
static bool implied_body_bytes(const uint32_t *dims, uint64_t *bytes) {
    uint64_t d = dims[0], nq = dims[1], mode = dims[2], P = dims[3];
    if (d == 0 || d > FWM_MAX_DIM || nq == 0 || nq > FWM_STM_MAX_QUERIES || mode > 1 || dims[4] || dims[5])
        return false;
    if ((mode == FWM_STM_INPUT_SENTENCE) != (P != 0) || P > FWM_STM_MAX_SENTENCE_LENGTH) return false;
    uint64_t floats = d * d * (1 + nq); /* < 2^41 */
    *bytes = 4 * (floats + (P ? P + 2 : 0));
    return true;
}

static void put_body(const fwm_session *session, unsigned char *body) {
    const fwm_stm_hparams *hp = &fwm__stm_of(session->model)->hp;
    size_t mi = (size_t)fwm__stm_item_floats(hp), mr = (size_t)fwm__stm_relational_floats(hp);
    unsigned char *q = body;
    fwm__put_floats(q, session->F, mi), q += 4 * mi;
    fwm__put_floats(q, session->Mr, mr), q += 4 * mr;
    size_t nw = (size_t)fwm__stm_state_words(hp);
    for (size_t i = 0; i < nw; i++) fwm__put_u32(q + 4 * i, session->words[i]);
}

static fwm_status read_body(fwm_session *session, const unsigned char *body, fwm_error *err) {
    const fwm_stm_model *sm = fwm__stm_of(session->model);
    const fwm_stm_hparams *hp = &sm->hp;
    uint32_t P = sm->sentence ? hp->sentence_length : 0;
    size_t mi = (size_t)fwm__stm_item_floats(hp), mr = (size_t)fwm__stm_relational_floats(hp);
    size_t bad = fwm__blob_first_non_finite(body, mi + mr);
    if (bad < mi + mr) {
        if (bad < mi)
            return fwm__error(err, FWM_ERR_STATE_CORRUPT, "state blob Mi[%zu][%zu] is not finite",
                              bad / hp->memory_size, bad % hp->memory_size);
        bad -= mi;
        return fwm__error(err, FWM_ERR_STATE_CORRUPT, "state blob Mr[%zu][%zu][%zu] is not finite",
                          bad / mi, bad % mi / hp->memory_size, bad % hp->memory_size);
    }
    const unsigned char *w = body + 4 * (mi + mr);
    if (P) {
        uint32_t length = fwm__get_u32(w + 4 * P), slot = fwm__get_u32(w + 4 * (P + 1));
        if (length > P)
            return fwm__error(err, FWM_ERR_STATE_CORRUPT,
                              "state blob sentence buffer holds %" PRIu32 " words, more than P = %" PRIu32,
                              length, P);
        if (slot > 1 || (slot && length))
            return fwm__error(err, FWM_ERR_STATE_CORRUPT,
                              "state blob answer slot is %" PRIu32 " with %" PRIu32
                              " buffered words (expected 0, or 1 with an empty buffer)",
                              slot, length);
        for (uint32_t i = 0; i < P; i++) {
            uint32_t id = fwm__get_u32(w + 4 * i);
            if (i < length ? id >= hp->vocab_size : id != 0)
                return fwm__error(err, FWM_ERR_STATE_CORRUPT,
                                  "state blob sentence buffer word %" PRIu32 " is %" PRIu32 " (%s)", i, id,
                                  i < length ? "not a token id" : "past the buffer's length, expected 0");
        }
    }
    const unsigned char *q = body;
    fwm__get_floats(session->F, q, mi), q += 4 * mi;
    fwm__get_floats(session->Mr, q, mr);
    for (uint32_t i = 0; i < (P ? P + 2 : 0); i++) session->words[i] = fwm__get_u32(w + 4 * i);
    return FWM_OK;
}

/* The blob behind the shared export and import (state_blob_v2.h), named by fwm__stm_ops. */
static const char *const dim_names[] = {"d", "n_q", "mode", "P"};

const fwm_blob_v2_layout fwm__stm_blob_v2 = {
    .article = "an",
    .dim_count = 6,
    .named_dims = 4,
    .dim_names = dim_names,
    .model_dims = model_dims,
    .body_bytes = body_bytes,
    .implied_body_bytes = implied_body_bytes,
    .put_body = put_body,
    .read_body = read_body,
};
