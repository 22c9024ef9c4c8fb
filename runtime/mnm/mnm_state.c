/* mnm_state.c - export and import of an MNM session's state: a version-2 blob
 * (state_blob_common.h, written and checked by state_blob_v2.c) whose dims and body are
 *
 *   offset  size       field
 *   32      4   u32    H    the controller's size
 *   36      4   u32    d_k  key length (the memory's first layer reads d_k)
 *   40      4   u32    d_v  value length
 *   44      4   u32    D    the memory's hidden size
 *   48      4   u32    Lm   the memory's layers
 *   52      4   u32    0    reserved
 *   56      4*H  f32   h
 *           4*H  f32   c
 *           4*d_v f32  r
 *           4*M  f32   M^1 .. M^Lm, row-major, in layer order (M floats in all)
 *   end-8   8   u64    XXH64 (seed 0) of every byte before it
 *
 * Total 64 + 4 (2 H + d_v + M) bytes. Import checks, in this order: those of every version-2 blob
 * (state_blob_v2.h) with H, d_k, d_v, D and Lm, then that every float is finite
 * (FWM_ERR_STATE_CORRUPT). Only then is the session overwritten. */
#include "fwm_error.h"
#include "mnm_runtime.h"
#include "state_blob_common.h"
#include "state_blob_v2.h"

static void model_dims(const struct fwm_model *model, uint32_t *dims) {
    const fwm_mnm_hparams *hp = &fwm__mnm_of(model)->hp;
    dims[0] = hp->hidden_size;
    dims[1] = hp->key_length;
    dims[2] = hp->value_length;
    dims[3] = hp->memory_hidden;
    dims[4] = hp->memory_layers;
    dims[5] = 0;
}

static size_t body_bytes(const struct fwm_model *model) { return 4 * fwm__mnm_state_floats(model); }

/* The floats a blob's dims imply (2 H + d_v + the memory), or 0 when they are out of range. */
static uint64_t implied_floats(const uint32_t dims[6]) {
    uint64_t H = dims[0], dk = dims[1], dv = dims[2], D = dims[3], L = dims[4];
    if (L == 0 || L > FWM_MNM_MAX_MEMORY_LAYERS || dims[5] != 0) return 0;
    /* each factor < 2^32, each product < 2^64; at most 16 layers keep the sum below 2^64 / 2^4 */
    uint64_t first = (L == 1 ? dv : D) * dk, middle = L > 2 ? (L - 2) * (D * D) : 0;
    uint64_t last = L > 1 ? dv * D : 0;
    if (D * D > (UINT64_MAX >> 8) || first > (UINT64_MAX >> 8) || last > (UINT64_MAX >> 8) ||
        middle > (UINT64_MAX >> 8))
        return 0;
    return 2 * H + dv + first + middle + last;
}

static bool implied_body_bytes(const uint32_t *dims, uint64_t *bytes) {
    return fwm__blob_v2_float_body(implied_floats(dims), bytes);
}

static void put_body(const fwm_session *session, unsigned char *body) {
    const fwm_mnm_model *mm = fwm__mnm_of(session->model);
    const fwm_mnm_hparams *hp = &mm->hp;
    size_t H = hp->hidden_size, dv = hp->value_length, M = mm->memory_offset[hp->memory_layers];
    unsigned char *q = body;
    fwm__put_floats(q, session->h, H), q += 4 * H;
    fwm__put_floats(q, session->c, H), q += 4 * H;
    fwm__put_floats(q, session->r, dv), q += 4 * dv;
    fwm__put_floats(q, session->F, M);
}

static fwm_status read_body(fwm_session *session, const unsigned char *body, fwm_error *err) {
    const fwm_mnm_model *mm = fwm__mnm_of(session->model);
    const fwm_mnm_hparams *hp = &mm->hp;
    size_t H = hp->hidden_size, dv = hp->value_length, M = mm->memory_offset[hp->memory_layers];
    size_t n = 2 * H + dv + M;
    size_t bad = fwm__blob_first_non_finite(body, n);
    if (bad < n) {
        if (bad < 2 * H)
            return fwm__error(err, FWM_ERR_STATE_CORRUPT, "state blob %s[%zu] is not finite",
                              bad < H ? "h" : "c", bad % H);
        if (bad < 2 * H + dv)
            return fwm__error(err, FWM_ERR_STATE_CORRUPT, "state blob r[%zu] is not finite", bad - 2 * H);
        size_t m = bad - 2 * H - dv, l = 0;
        while (l + 1 < hp->memory_layers && m >= mm->memory_offset[l + 1]) l++;
        return fwm__error(err, FWM_ERR_STATE_CORRUPT, "state blob memory layer %zu element %zu is not finite",
                          l, m - mm->memory_offset[l]);
    }
    const unsigned char *q = body;
    fwm__get_floats(session->h, q, H), q += 4 * H;
    fwm__get_floats(session->c, q, H), q += 4 * H;
    fwm__get_floats(session->r, q, dv), q += 4 * dv;
    fwm__get_floats(session->F, q, M);
    return FWM_OK;
}

/* The blob behind the shared export and import (state_blob_v2.h), named by fwm__mnm_ops. */
static const char *const dim_names[] = {"H", "d_k", "d_v", "D", "Lm"};

const fwm_blob_v2_layout fwm__mnm_blob_v2 = {
    .article = "an",
    .dim_count = 6,
    .named_dims = 5,
    .dim_names = dim_names,
    .model_dims = model_dims,
    .body_bytes = body_bytes,
    .implied_body_bytes = implied_body_bytes,
    .put_body = put_body,
    .read_body = read_body,
};
