/* fwm_ops.c - the FWM's entry in the runtime's registry of architectures (arch_ops.h): its ops
 * table over the functions of the FWM's own files. */
#include "fwm_ops.h"

#include "fwm_model_shape.h"

static size_t fwm_state_floats(const struct fwm_model *model) {
    return (size_t)fwm__session_state_floats(&model->hp);
}

const fwm__arch_ops_table fwm__fwm_ops = {
    .name = "fwm",
    .load = fwm__fwm_load,
    .unload = fwm__model_unprepare,
    .block_floats = fwm__fwm_block_floats,
    .lay_out = fwm__fwm_lay_out,
    .state_floats = fwm_state_floats,
    .blob_size = fwm__fwm_blob_size,
    .step = fwm__fwm_step,
    .step_sequence = fwm__fwm_step_sequence,
    .batch_step = fwm__fwm_batch_step,
    .predict = fwm__fwm_predict,
    .export_state = fwm__fwm_export,
    .import_state = fwm__fwm_import,
    .fill_info = fwm__fwm_fill_info,
};
