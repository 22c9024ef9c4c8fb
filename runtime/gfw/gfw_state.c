/* gfw_state.c - export and import of a GFW session's state: a version-2 blob
 * (state_blob_common.h, written and checked by state_blob_v2.c) whose dims and body are
 *
 *   offset  size       field
 *   32      4   u32    m    the fast net's size
 *   36      4   u32    N    the slow net's state size
 *   40      4   u32    E    the embedding (F1 has m + E + 1 columns)
 *   44      4   u32    0    reserved
 *   48      4*m  f32   h_F
 *           4*N  f32   h_S
 *           4*m(m+E+1) f32  F1, row-major
 *           4*m(m+1)   f32  F2, row-major
 *   end-8   8   u64    XXH64 (seed 0) of every byte before it
 *
 * Total 56 + 4 (m + N + m (2m + E + 2)) bytes. Import checks, in this order: those of every
 * version-2 blob (state_blob_v2.h) with m, N and E, then that every float is finite
 * (FWM_ERR_STATE_CORRUPT). Only then is the session overwritten. */
#include "fwm_error.h"
#include "gfw_runtime.h"
#include "state_blob_common.h"
#include "state_blob_v2.h"

static void model_dims(const struct fwm_model *model, uint32_t *dims) {
    const fwm_gfw_hparams *hp = &fwm__gfw_of(model)->hp;
    dims[0] = hp->fast_hidden;
    dims[1] = hp->slow_hidden;
    dims[2] = hp->embedding_length;
    dims[3] = 0;
}

static size_t body_bytes(const struct fwm_model *model) { return 4 * fwm__gfw_state_floats(model); }

/* The floats a blob's dims imply, or 0 when they are out of range. Each dim below 2^32, so
 * m (2m + E + 2) < 2^66 could overflow: bound m first. */
static uint64_t implied_floats(const uint32_t dims[4]) {
    uint64_t m = dims[0], N = dims[1], E = dims[2];
    if (m == 0 || dims[3] != 0 || m > FWM_MAX_DIM || E > FWM_MAX_DIM) return 0;
    return m + N + m * (2 * m + E + 2);
}

static bool implied_body_bytes(const uint32_t *dims, uint64_t *bytes) {
    return fwm__blob_v2_float_body(implied_floats(dims), bytes);
}

static void put_body(const fwm_session *session, unsigned char *body) {
    const fwm_gfw_model *gm = fwm__gfw_of(session->model);
    const fwm_gfw_hparams *hp = &gm->hp;
    size_t m = hp->fast_hidden, N = hp->slow_hidden;
    size_t n1 = m * (size_t)fwm__gfw_f1_cols(hp), n2 = m * (size_t)fwm__gfw_f2_cols(hp);
    unsigned char *q = body;
    fwm__put_floats(q, session->h, m), q += 4 * m;
    fwm__put_floats(q, session->c, N), q += 4 * N;
    fwm__put_floats(q, session->F, n1), q += 4 * n1;
    fwm__put_floats(q, session->F + gm->f2_offset, n2);
}

static fwm_status read_body(fwm_session *session, const unsigned char *body, fwm_error *err) {
    const fwm_gfw_model *gm = fwm__gfw_of(session->model);
    const fwm_gfw_hparams *hp = &gm->hp;
    size_t m = hp->fast_hidden, N = hp->slow_hidden;
    size_t n1 = m * (size_t)fwm__gfw_f1_cols(hp), n2 = m * (size_t)fwm__gfw_f2_cols(hp);
    size_t n = m + N + n1 + n2;
    size_t bad = fwm__blob_first_non_finite(body, n);
    if (bad < n) {
        if (bad < m) return fwm__error(err, FWM_ERR_STATE_CORRUPT, "state blob h_F[%zu] is not finite", bad);
        if (bad < m + N)
            return fwm__error(err, FWM_ERR_STATE_CORRUPT, "state blob h_S[%zu] is not finite", bad - m);
        size_t k = bad - m - N;
        return fwm__error(err, FWM_ERR_STATE_CORRUPT, "state blob %s element %zu is not finite",
                          k < n1 ? "F1" : "F2", k < n1 ? k : k - n1);
    }
    const unsigned char *q = body;
    fwm__get_floats(session->h, q, m), q += 4 * m;
    fwm__get_floats(session->c, q, N), q += 4 * N;
    fwm__get_floats(session->F, q, n1), q += 4 * n1;
    fwm__get_floats(session->F + gm->f2_offset, q, n2);
    return FWM_OK;
}

/* The blob behind the shared export and import (state_blob_v2.h), named by fwm__gfw_ops. */
static const char *const dim_names[] = {"m", "N", "E"};

const fwm_blob_v2_layout fwm__gfw_blob_v2 = {
    .article = "a",
    .dim_count = 4,
    .named_dims = 3,
    .dim_names = dim_names,
    .model_dims = model_dims,
    .body_bytes = body_bytes,
    .implied_body_bytes = implied_body_bytes,
    .put_body = put_body,
    .read_body = read_body,
};
