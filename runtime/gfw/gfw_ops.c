/* gfw_ops.c - the Gated Fast Weights model's entry in the runtime's registry of architectures
 * (arch_ops.h). Its reset state is all zero, so it has no reset hook. */
#include "gfw_runtime.h"
#include "state_blob_v2.h"
#include "step_driver.h"

const fwm__arch_ops_table fwm__gfw_ops = {
    .name = "gfw",
    .load = fwm__gfw_load,
    .unload = fwm__gfw_unload,
    .block_floats = fwm__gfw_block_floats,
    .lay_out = fwm__gfw_lay_out,
    .state_floats = fwm__gfw_state_floats,
    .blob_size = fwm__blob_v2_size,
    .step = fwm__driven_step,
    .step_sequence = fwm__driven_step_sequence,
    .batch_step = fwm__driven_batch_step,
    .export_state = fwm__blob_v2_export,
    .import_state = fwm__blob_v2_import,
    .fill_info = fwm__gfw_fill_info,
    .kernel = &fwm__gfw_step_kernel,
    .blob_v2 = &fwm__gfw_blob_v2,
};
