/* session.c - session lifetime: create, free, reset, fork and the two accessors, for every
 * architecture; and the FWM's layout of the state block.
 *
 * A session's bookkeeping and its state (for the FWM: h, c, F, the pending write) live in one
 * 64-byte-aligned allocation (session_internal.h), so a fork is one allocation and one copy and a
 * reset is one memset; the architecture's ops (arch_ops.h) say how large the state block is and
 * where its arrays are. Stepping is in fwm/fwm_step.c, state blobs in fwm/fwm_state.c (for the FWM; other
 * architectures' in runtime/<arch>/).
 */
#include <string.h>

#include "arch_ops.h"
#include "fwm_alloc.h"
#include "fwm_error.h"
#include "fwm_ops.h"
#include "session_internal.h"

#define aligned_floats fwm__aligned_floats

static size_t header_bytes(void) {
    return (sizeof(struct fwm_session) + FWM_SESSION_ALIGNMENT - 1) / FWM_SESSION_ALIGNMENT *
           FWM_SESSION_ALIGNMENT;
}

/* The loader bounds every size (FWM_MAX_DIM, FWM_MAX_MEMORY_ELEMENTS), so none of this can
 * overflow a 64-bit size_t. */
size_t fwm__fwm_block_floats(const struct fwm_model *model) {
    const fwm_hparams *hp = &model->hp;
    return 2 * aligned_floats(hp->hidden_size) * (1 + (size_t)fwm__lower_blocks(hp)) +
           aligned_floats((size_t)hp->memory_s * hp->memory_r * hp->memory_t) +
           aligned_floats(hp->memory_s) + aligned_floats(hp->memory_r) + aligned_floats(hp->memory_t);
}

size_t fwm__session_bytes(const struct fwm_model *model) {
    return header_bytes() + fwm__arch_ops(model->arch)->block_floats(model) * sizeof(float);
}

/* The FWM's arrays: h, c, F and the pending write, then a stacked FWM's lower layers' h and c, in
 * this order. */
void fwm__fwm_lay_out(struct fwm_session *session, float *base) {
    const struct fwm_model *model = session->model;
    session->h = base;
    session->c = base + aligned_floats(model->hp.hidden_size);
    session->F = session->c + aligned_floats(model->hp.hidden_size);
    session->pending_k1 =
        session->F + aligned_floats((size_t)model->hp.memory_s * model->hp.memory_r * model->hp.memory_t);
    session->pending_k2 = session->pending_k1 + aligned_floats(model->hp.memory_s);
    session->pending_d = session->pending_k2 + aligned_floats(model->hp.memory_r);
    size_t lower = fwm__lower_blocks(&model->hp);
    if (lower) {
        session->lower_h = session->pending_d + aligned_floats(model->hp.memory_t);
        session->lower_c = session->lower_h + lower * aligned_floats(model->hp.hidden_size);
    }
}

/* Point the state arrays into the block that starts at `session`. */
static void lay_out(struct fwm_session *session, const struct fwm_model *model) {
    float *base = (float *)((unsigned char *)session + header_bytes());
    const fwm__arch_ops_table *ops = fwm__arch_ops(model->arch);
    memset(session, 0, sizeof *session);
    session->model = model;
    session->pending_s = 1.0f;
    session->has_pending = false;
    session->last_token = FWM_NO_TOKEN;
    ops->lay_out(session, base);
    session->state_bytes = ops->block_floats(model) * sizeof(float);
}

static fwm_status allocate(const struct fwm_model *model, struct fwm_session **out, fwm_error *err) {
    size_t bytes = fwm__session_bytes(model);
    struct fwm_session *session = fwm__aligned_alloc(FWM_SESSION_ALIGNMENT, bytes);
    if (!session)
        return fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "out of memory allocating a session (%zu bytes)",
                          bytes);
    lay_out(session, model);
    *out = session;
    return FWM_OK;
}

fwm_status fwm_session_create(const fwm_model *model, fwm_session **out, fwm_error *err) {
    fwm__error_clear(err);
    if (!out) return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "fwm_session_create: out is NULL");
    *out = NULL;
    if (!model) return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "fwm_session_create: model is NULL");
    struct fwm_session *session = NULL;
    fwm_status status = allocate(model, &session, err);
    if (status != FWM_OK) return status;
    fwm_session_reset(session);
    *out = session;
    return FWM_OK;
}

void fwm_session_free(fwm_session *session) { fwm__free(session); }

void fwm_session_reset(fwm_session *session) {
    if (!session) return;
    session->position = 0;
    session->has_pending = false;
    session->last_token = FWM_NO_TOKEN;
    session->pending_s = 1.0f;
    memset(session->h, 0, session->state_bytes);
    const fwm__arch_ops_table *ops = fwm__arch_ops(session->model->arch);
    if (ops->reset_state) ops->reset_state(session);
}

/* dst takes src's position and state (same model). */
static void copy_state(struct fwm_session *dst, const struct fwm_session *src) {
    dst->position = src->position;
    dst->has_pending = src->has_pending;
    dst->pending_s = src->pending_s;
    dst->last_token = src->last_token;
    memcpy(dst->h, src->h, src->state_bytes);
}

void fwm_session_prime(fwm_session *session) {
    if (!session) return;
    if (session->model->start)
        copy_state(session, session->model->start);
    else /* a model being built, before its start state exists */
        fwm_session_reset(session);
}

fwm_status fwm_session_fork(const fwm_session *parent, fwm_session **out, fwm_error *err) {
    fwm__error_clear(err);
    if (!out) return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "fwm_session_fork: out is NULL");
    *out = NULL;
    if (!parent) return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "fwm_session_fork: parent is NULL");
    struct fwm_session *child = NULL;
    fwm_status status = allocate(parent->model, &child, err);
    if (status != FWM_OK) return status;
    copy_state(child, parent);
    *out = child;
    return FWM_OK;
}

const fwm_model *fwm_session_model(const fwm_session *session) {
    return session ? session->model : NULL;
}

uint64_t fwm_session_position(const fwm_session *session) { return session ? session->position : 0; }
