/* lstm_ops.c - the LSTM baseline's entry in the runtime's registry of architectures (arch_ops.h). */
#include "lstm_runtime.h"
#include "state_blob_v2.h"
#include "step_driver.h"

const fwm__arch_ops_table fwm__lstm_ops = {
    .name = "lstm",
    .load = fwm__lstm_load,
    .unload = fwm__lstm_unload,
    .block_floats = fwm__lstm_block_floats,
    .lay_out = fwm__lstm_lay_out,
    .state_floats = fwm__lstm_state_floats,
    .blob_size = fwm__blob_v2_size,
    .step = fwm__driven_step,
    .step_sequence = fwm__driven_step_sequence,
    .batch_step = fwm__driven_batch_step,
    .predict = fwm__lstm_predict,
    .export_state = fwm__blob_v2_export,
    .import_state = fwm__blob_v2_import,
    .fill_info = fwm__lstm_fill_info,
    .kernel = &fwm__lstm_step_kernel,
    .blob_v2 = &fwm__lstm_blob_v2,
};
