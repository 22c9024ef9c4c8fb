/* state_blob_v2.h - export and import of a version-2 session state blob (state_blob_common.h), the
 * blob of every architecture other than the FWM. Each of those architectures describes its blob in
 * runtime/<arch>/<arch>_state.c with an fwm_blob_v2_layout (its u32 dims, the size they imply, and
 * how its state goes into and comes out of the body), named by its ops table (arch_ops.h,
 * .blob_v2), whose blob_size, export_state and import_state are the shared functions below: they
 * look the layout up from the session's model, as the shared step entry points look up the step
 * kernel (step_driver.h). The header's architecture name is the ops table's name.
 *
 * A version-2 blob: the header (magic .. position, state_blob_common.h), at offset 32 the
 * architecture's dim_count u32 dims (reserved ones 0), then its body, then the XXH64 trailer.
 *
 * Import checks, in this order: session and blob not NULL (FWM_ERR_INVALID_ARGUMENT); the minimum
 * size (header, dims and trailer), magic, version, the architecture name, the size the dims imply,
 * the checksum (each FWM_ERR_STATE_CORRUPT); the fingerprint (FWM_ERR_STATE_MODEL_MISMATCH); the
 * named dims against the model's (FWM_ERR_STATE_CORRUPT); then the architecture's own checks of
 * its body (read_body). Only then is the session overwritten.
 *
 * Internal to libfwm.
 */
#ifndef FWM_RUNTIME_STATE_BLOB_V2_H
#define FWM_RUNTIME_STATE_BLOB_V2_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fwm/fwm.h"
#include "session_internal.h"

/* The most dims an architecture's blob has. */
#define FWM_BLOB_V2_MAX_DIMS 6u

typedef struct fwm_blob_v2_layout {
    const char *article; /* "a" or "an", as the version message says "an 'lstm' session's state" */
    unsigned dim_count;  /* u32 dims after the header, reserved ones included (<= FWM_BLOB_V2_MAX_DIMS) */
    unsigned named_dims; /* the first ones, which the messages name and the model must match */
    const char *const *dim_names; /* named_dims names, "L", "H" */
    /* The dims a session of `model` writes (dim_count of them, reserved ones 0). */
    void (*model_dims)(const struct fwm_model *model, uint32_t *dims);
    /* The body's bytes (between the dims and the trailer) of a session of `model`. */
    size_t (*body_bytes)(const struct fwm_model *model);
    /* The body's bytes that a blob's dims imply, into *bytes; false when the dims are out of range
     * or the size overflows (the size check then refuses the blob, saying it implies 0 bytes). */
    bool (*implied_body_bytes)(const uint32_t *dims, uint64_t *bytes);
    /* Write the session's state into the body. */
    void (*put_body)(const fwm_session *session, unsigned char *body);
    /* Check the body against the session's model (its dims match already; the floats finite, and
     * whatever else the architecture holds), and only when it passes copy it into the session. */
    fwm_status (*read_body)(fwm_session *session, const unsigned char *body, fwm_error *err);
} fwm_blob_v2_layout;

/* An implied_body_bytes for a body of `floats` floats, where 0 floats means the dims are out of
 * range: false then, or when the blob's size would overflow. */
static inline bool fwm__blob_v2_float_body(uint64_t floats, uint64_t *bytes) {
    if (floats == 0 || floats > (UINT64_MAX - 128) / 4) return false;
    *bytes = 4 * floats;
    return true;
}

/* The ops (arch_ops.h) of an architecture with a version-2 blob: the exact size of a blob of a
 * session of `model`, and fwm_session_export / fwm_session_import (fwm.h). */
size_t fwm__blob_v2_size(const struct fwm_model *model);
fwm_status fwm__blob_v2_export(const fwm_session *session, void *buffer, size_t capacity, size_t *written,
                               fwm_error *err);
fwm_status fwm__blob_v2_import(fwm_session *session, const void *blob, size_t size, fwm_error *err);

#endif
