/* step_checks.c - the checks before a step (step_checks.h), shared by every architecture. */
#include "step_checks.h"

#include <stdio.h>
#include <stdlib.h>

#include "fwm_alloc.h"
#include "fwm_error.h"
#include "session_internal.h"

fwm_status fwm__token_out_of_range(const struct fwm_model *model, uint32_t token, const char *where,
                                   size_t index, fwm_error *err) {
    char place[64] = "";
    if (*where) snprintf(place, sizeof place, " %s %zu", where, index);
    return fwm__error(err, FWM_ERR_TOKEN_OUT_OF_RANGE,
                      "token %u%s is out of range: the vocabulary has V = %u tokens (ids 0 to %u)",
                      token, place, model->hp.vocab_size, model->hp.vocab_size - 1);
}

fwm_status fwm__check_sequence(const struct fwm_session *session, const uint32_t *tokens, size_t count,
                               fwm_error *err) {
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
    return FWM_OK;
}

typedef struct indexed_session {
    const fwm_session *session;
    size_t index;
} indexed_session;

static int compare_indexed(const void *a, const void *b) {
    const indexed_session *x = a, *y = b;
    if (x->session != y->session) return (uintptr_t)x->session < (uintptr_t)y->session ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* FWM_ERR_INVALID_ARGUMENT naming the first repeated session's two indices, if any. */
static fwm_status check_distinct(fwm_session *const *sessions, size_t count, fwm_error *err) {
    if (count <= 64) {
        for (size_t i = 1; i < count; i++)
            for (size_t k = 0; k < i; k++)
                if (sessions[i] == sessions[k])
                    return fwm__error(err, FWM_ERR_INVALID_ARGUMENT,
                                      "fwm_batch_step: sessions %zu and %zu are the same session", k, i);
        return FWM_OK;
    }
    indexed_session *sorted = fwm__calloc(count, sizeof *sorted);
    if (!sorted)
        return fwm__error(err, FWM_ERR_OUT_OF_MEMORY,
                          "out of memory checking %zu batch sessions for repeats", count);
    for (size_t i = 0; i < count; i++) sorted[i] = (indexed_session){sessions[i], i};
    qsort(sorted, count, sizeof *sorted, compare_indexed);
    fwm_status status = FWM_OK;
    for (size_t i = 1; i < count; i++) {
        if (sorted[i].session == sorted[i - 1].session) {
            status = fwm__error(err, FWM_ERR_INVALID_ARGUMENT,
                                "fwm_batch_step: sessions %zu and %zu are the same session",
                                sorted[i - 1].index, sorted[i].index);
            break;
        }
    }
    fwm__free(sorted);
    return status;
}

fwm_status fwm__check_batch(struct fwm_session *const *sessions, const uint32_t *tokens, size_t count,
                            fwm_error *err) {
    if (!sessions) return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "fwm_batch_step: sessions is NULL");
    if (!tokens) return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "fwm_batch_step: tokens is NULL");
    for (size_t i = 0; i < count; i++)
        if (!sessions[i])
            return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "fwm_batch_step: session %zu is NULL", i);
    const struct fwm_model *model = sessions[0]->model;
    for (size_t i = 1; i < count; i++)
        if (sessions[i]->model != model)
            return fwm__error(err, FWM_ERR_MODEL_MISMATCH,
                              "fwm_batch_step: session %zu belongs to a different model than session 0",
                              i);
    for (size_t i = 0; i < count; i++) {
        fwm_status status = fwm__check_token(model, tokens[i], "for batch session", i, err);
        if (status != FWM_OK) return status;
    }
    return check_distinct(sessions, count, err);
}
