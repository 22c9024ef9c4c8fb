/* lstm_state.c - export and import of an LSTM session's state: a version-2 blob
 * (state_blob_common.h, written and checked by state_blob_v2.c) whose dims and body are
 *
 *   offset  size       field
 *   32      4   u32    L  layers
 *   36      4   u32    H  hidden size
 *   40      4*L*H f32  h, layer 0 first
 *   40+4LH  4*L*H f32  c, layer 0 first
 *   end-8   8   u64    XXH64 (seed 0) of every byte before it
 *
 * Total 48 + 8 L H bytes. Import checks, in this order: those of every version-2 blob
 * (state_blob_v2.h) with L and H, then that every float is finite (FWM_ERR_STATE_CORRUPT). Only
 * then is the session overwritten. */
#include "fwm_error.h"
#include "lstm_runtime.h"
#include "state_blob_common.h"
#include "state_blob_v2.h"

static void model_dims(const struct fwm_model *model, uint32_t *dims) {
    const fwm_lstm_hparams *hp = &fwm__lstm_of(model)->hp;
    dims[0] = hp->layer_count;
    dims[1] = hp->hidden_size;
}

static size_t body_bytes(const struct fwm_model *model) {
    const fwm_lstm_hparams *hp = &fwm__lstm_of(model)->hp;
    return 8 * (size_t)hp->layer_count * hp->hidden_size;
}

/* 2 L H floats, checked against overflow (L H alone fits: each factor < 2^32) */
static bool implied_body_bytes(const uint32_t *dims, uint64_t *bytes) {
    uint64_t lh = (uint64_t)dims[0] * dims[1];
    if (lh > (UINT64_MAX - 64) / 8) return false;
    *bytes = 8 * lh;
    return true;
}

static void put_body(const fwm_session *session, unsigned char *body) {
    const fwm_lstm_hparams *hp = &fwm__lstm_of(session->model)->hp;
    size_t LH = (size_t)hp->layer_count * hp->hidden_size;
    fwm__put_floats(body, session->h, LH);
    fwm__put_floats(body + 4 * LH, session->c, LH);
}

static fwm_status read_body(fwm_session *session, const unsigned char *body, fwm_error *err) {
    const fwm_lstm_hparams *hp = &fwm__lstm_of(session->model)->hp;
    size_t H = hp->hidden_size, LH = (size_t)hp->layer_count * H;
    size_t bad = fwm__blob_first_non_finite(body, 2 * LH);
    if (bad < 2 * LH)
        return fwm__error(err, FWM_ERR_STATE_CORRUPT, "state blob %s[%zu][%zu] is not finite",
                          bad < LH ? "h" : "c", (bad % LH) / H, (bad % LH) % H);
    fwm__get_floats(session->h, body, LH);
    fwm__get_floats(session->c, body + 4 * LH, LH);
    return FWM_OK;
}

/* The blob behind the shared export and import (state_blob_v2.h), named by fwm__lstm_ops. */
static const char *const dim_names[] = {"L", "H"};

const fwm_blob_v2_layout fwm__lstm_blob_v2 = {
    .article = "an",
    .dim_count = 2,
    .named_dims = 2,
    .dim_names = dim_names,
    .model_dims = model_dims,
    .body_bytes = body_bytes,
    .implied_body_bytes = implied_body_bytes,
    .put_body = put_body,
    .read_body = read_body,
};
