/* mnm_ops.c - the MNM baseline's entry in the runtime's registry of architectures (arch_ops.h). */
#include "mnm_runtime.h"
#include "state_blob_v2.h"
#include "step_driver.h"

const fwm__arch_ops_table fwm__mnm_ops = {
    .name = "mnm",
    .load = fwm__mnm_load,
    .unload = fwm__mnm_unload,
    .block_floats = fwm__mnm_block_floats,
    .lay_out = fwm__mnm_lay_out,
    .state_floats = fwm__mnm_state_floats,
    .reset_state = fwm__mnm_reset_state,
    .blob_size = fwm__blob_v2_size,
    .step = fwm__driven_step,
    .step_sequence = fwm__driven_step_sequence,
    .batch_step = fwm__driven_batch_step,
    .export_state = fwm__blob_v2_export,
    .import_state = fwm__blob_v2_import,
    .fill_info = fwm__mnm_fill_info,
    .kernel = &fwm__mnm_step_kernel,
    .blob_v2 = &fwm__mnm_blob_v2,
};
