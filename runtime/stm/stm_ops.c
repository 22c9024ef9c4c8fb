/* stm_ops.c - the STM's entry in the runtime's registry of architectures (arch_ops.h). */
#include "stm_runtime.h"
#include "state_blob_v2.h"
#include "step_driver.h"

const fwm__arch_ops_table fwm__stm_ops = {
    .name = "stm",
    .load = fwm__stm_load,
    .unload = fwm__stm_unload,
    .block_floats = fwm__stm_block_floats,
    .lay_out = fwm__stm_lay_out,
    .state_floats = fwm__stm_state_floats,
    .reset_state = fwm__stm_reset_state,
    .has_prediction = fwm__stm_has_prediction,
    .skip_answer = fwm__stm_skip_answer,
    .blob_size = fwm__blob_v2_size,
    .step = fwm__driven_step,
    .step_sequence = fwm__driven_step_sequence,
    .batch_step = fwm__driven_batch_step,
    .export_state = fwm__blob_v2_export,
    .import_state = fwm__blob_v2_import,
    .fill_info = fwm__stm_fill_info,
    .kernel = &fwm__stm_step_kernel,
    .blob_v2 = &fwm__stm_blob_v2,
};
