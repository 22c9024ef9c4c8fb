/* step_driver.c - the shared step entry points (step_driver.h): checks, scratch, and the loop of
 * chunks over an architecture's chunk step. */
#include "step_driver.h"

#include <stdbool.h>
#include <stddef.h>

#include "arch_ops.h"
#include "fwm_alloc.h"
#include "fwm_error.h"
#include "session_internal.h"
#include "step_checks.h"

/* Runs `kernel` over count tokens: one session over a sequence (sequence true; sessions has one
 * entry), or the batch's sessions one token each, in chunks. Everything is checked. */
static fwm_status drive(const fwm__step_kernel *kernel, const struct fwm_model *model,
                        fwm_session *const *sessions, const uint32_t *tokens, size_t count, bool sequence,
                        float *logits, fwm_error *err) {
    size_t chunk = kernel->chunk_sessions;
    size_t capacity = sequence ? 1 : count < chunk ? count : chunk;
    size_t floats = kernel->scratch_floats(model, capacity);
    _Alignas(64) float stack[FWM_STEP_STACK_FLOATS];
    _Alignas(max_align_t) unsigned char workspace[FWM_STEP_WORKSPACE_BYTES];
    float *scratch = stack, *heap = NULL;
    if (floats > kernel->stack_floats || floats > FWM_STEP_STACK_FLOATS) {
        scratch = heap = fwm__aligned_alloc(64, floats * sizeof(float));
        if (!heap)
            return fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "out of memory allocating %zu bytes of step scratch",
                              floats * sizeof(float));
    }
    kernel->lay_out(workspace, model, scratch, capacity);
    size_t V = model->hp.vocab_size;
    if (sequence) {
        for (size_t i = 0; i < count; i++)
            kernel->chunk(workspace, model, sessions, tokens + i, 1, logits ? logits + i * V : NULL);
    } else {
        for (size_t i = 0; i < count; i += capacity) {
            size_t n = count - i < capacity ? count - i : capacity;
            kernel->chunk(workspace, model, sessions + i, tokens + i, n, logits ? logits + i * V : NULL);
        }
    }
    fwm__free(heap);
    return FWM_OK;
}

static const fwm__step_kernel *kernel_of(const struct fwm_model *model) {
    return fwm__arch_ops(model->arch)->kernel;
}

fwm_status fwm__driven_step(fwm_session *session, uint32_t token, float *logits, fwm_error *err) {
    fwm_status status = fwm__check_step(session, token, err);
    if (status != FWM_OK) return status;
    return drive(kernel_of(session->model), session->model, &session, &token, 1, true, logits, err);
}

fwm_status fwm__driven_step_sequence(fwm_session *session, const uint32_t *tokens, size_t count,
                                     float *logits, fwm_error *err) {
    fwm_status status = fwm__check_sequence(session, tokens, count, err);
    if (status != FWM_OK || count == 0) return status;
    return drive(kernel_of(session->model), session->model, &session, tokens, count, true, logits, err);
}

fwm_status fwm__driven_batch_step(fwm_session *const *sessions, const uint32_t *tokens, size_t count,
                                  float *logits, fwm_error *err) {
    fwm__error_clear(err);
    if (count == 0) return FWM_OK;
    fwm_status status = fwm__check_batch(sessions, tokens, count, err);
    if (status != FWM_OK) return status;
    const struct fwm_model *model = sessions[0]->model;
    return drive(kernel_of(model), model, sessions, tokens, count, false, logits, err);
}
