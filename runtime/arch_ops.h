/* arch_ops.h - the runtime's table of operations per architecture, and the registry that maps an
 * fwm_arch (model_format/arch_list.h) to its table.
 *
 * The public entry points (fwm_session_step, _step_sequence, fwm_batch_step, fwm_session_export,
 * _import: dispatch.c) look the session's model up here and call its architecture's function; a
 * session's layout (state block after the header), its size and the blob size come from here too.
 * Reset, fork, prime and the model's start state are generic: a session's state is one block of
 * floats that reset zeroes (then the architecture's reset_state, if any, sets what is not zero at
 * reset) and fork copies (session_internal.h).
 *
 * An architecture's table is `fwm__<prefix>_ops`, defined in runtime/<arch>/ (the FWM's in
 * runtime/fwm/fwm_ops.c over its files in runtime/fwm/), and registered by its line in FWM_ARCH_LIST. A model
 * built in memory by calloc has arch 0, the FWM.
 */
#ifndef FWM_RUNTIME_ARCH_OPS_H
#define FWM_RUNTIME_ARCH_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch_list.h"
#include "fwm/fwm.h"

struct fwm_model;
struct fwm_session;
struct fwm_blob_v2_layout;

/* An architecture's step maths for the shared entry points (step_driver.h): the driver checks,
 * takes `scratch_floats` floats of scratch (on its stack when they are at most stack_floats, which
 * is at most FWM_STEP_STACK_FLOATS; else one allocation), has `lay_out` build the architecture's
 * workspace struct (at most FWM_STEP_WORKSPACE_BYTES, at `workspace`) over them, and calls `chunk`
 * on up to `capacity` (at most chunk_sessions) checked sessions at a time, one token each, logits
 * [n][V] or NULL. */
typedef struct fwm__step_kernel {
    size_t chunk_sessions;
    size_t stack_floats;
    size_t (*scratch_floats)(const struct fwm_model *model, size_t capacity);
    void (*lay_out)(void *workspace, const struct fwm_model *model, float *scratch, size_t capacity);
    void (*chunk)(void *workspace, const struct fwm_model *model, struct fwm_session *const *sessions,
                  const uint32_t *tokens, size_t n, float *logits);
} fwm__step_kernel;

typedef struct fwm__arch_ops_table {
    const char *name; /* general.architecture */
    /* Build `model` (arch already set) from the whole file buf[0..size): parse and check the
     * schema, checksum and fingerprint, bind the weights, take the vocabulary, name and prime
     * tokens, fill the common hp fields (V, E, H, token ids) and the parameter count, and derive
     * the step's tables. On failure the model is left for fwm_model_free. */
    fwm_status (*load)(struct fwm_model *model, const void *buf, size_t size,
                       const fwm_model_params *params, fwm_error *err);
    /* Release what load derived or allocated for the architecture (not the common fields). */
    void (*unload)(struct fwm_model *model);
    /* Floats of a session's state block (each array padded to FWM_SESSION_ALIGNMENT), and the
     * pointers into it. */
    size_t (*block_floats)(const struct fwm_model *model);
    void (*lay_out)(struct fwm_session *session, float *base);
    /* The state a session holds, unpadded (fwm_model_info.session_state_floats). */
    size_t (*state_floats)(const struct fwm_model *model);
    /* Called by a reset (and so by create) after the block is zeroed, to set the parts of the reset
     * state that are not zero (the MNM's initial memory); NULL where the reset state is all zero. */
    void (*reset_state)(struct fwm_session *session);
    /* Whether the session's last step predicted the next token (fwm_session_has_prediction); NULL
     * where every step does. */
    bool (*has_prediction)(const struct fwm_session *session);
    /* fwm_session_skip_answer; NULL where there is no answer slot. */
    bool (*skip_answer)(struct fwm_session *session);
    /* Exact size of an exported blob. */
    size_t (*blob_size)(const struct fwm_model *model);
    /* As the public functions of the same names (fwm.h), for a session of this architecture: the
     * shared fwm__driven_* (step_driver.h) over `kernel`, or (the FWM) the architecture's own. */
    fwm_status (*step)(struct fwm_session *session, uint32_t token, float *logits, fwm_error *err);
    fwm_status (*step_sequence)(struct fwm_session *session, const uint32_t *tokens, size_t count,
                                float *logits, fwm_error *err);
    fwm_status (*batch_step)(struct fwm_session *const *sessions, const uint32_t *tokens,
                             size_t count, float *logits, fwm_error *err);
    /* fwm_session_predict: the scores of the session's current state, changing nothing; NULL where
     * the architecture does not compute them (then FWM_ERR_UNSUPPORTED names it). */
    fwm_status (*predict)(const struct fwm_session *session, float *logits, fwm_error *err);
    fwm_status (*export_state)(const struct fwm_session *session, void *buffer, size_t capacity,
                               size_t *written, fwm_error *err);
    fwm_status (*import_state)(struct fwm_session *session, const void *blob, size_t size,
                               fwm_error *err);
    /* The architecture's fields of fwm_model_info (the common ones are filled already). */
    void (*fill_info)(const struct fwm_model *model, fwm_model_info *info);
    /* The step maths behind the shared entry points; NULL where the step has its own (the FWM). */
    const fwm__step_kernel *kernel;
    /* The version-2 state blob's dims and body behind the shared blob_size, export_state and
     * import_state (state_blob_v2.h); NULL where the blob is the architecture's own (the FWM). */
    const struct fwm_blob_v2_layout *blob_v2;
} fwm__arch_ops_table;

#define FWM_ARCH_OPS_DECLARE_(id, name, prefix) extern const fwm__arch_ops_table fwm__##prefix##_ops;
FWM_ARCH_LIST(FWM_ARCH_OPS_DECLARE_)
#undef FWM_ARCH_OPS_DECLARE_

/* The tables in FWM_ARCH_LIST order (dispatch.c). */
extern const fwm__arch_ops_table *const fwm__arch_table[FWM_ARCH_COUNT];

/* The table of `arch` (a registered one). */
static inline const fwm__arch_ops_table *fwm__arch_ops(fwm_arch arch) { return fwm__arch_table[arch]; }

#endif
