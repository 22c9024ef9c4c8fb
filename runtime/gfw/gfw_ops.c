/* gfw_ops.c - the Gated Fast Weights model's entry in the runtime's registry of architectures
 * (arch_ops.h). The format is registered; until its runtime is built a `gfw` file is refused at
 * load, naming the architecture. */
#include "arch_ops.h"
#include "fwm_error.h"
#include "model_internal.h"

static fwm_status gfw_load(struct fwm_model *model, const void *buf, size_t size,
                           const fwm_model_params *params, fwm_error *err) {
    (void)model, (void)buf, (void)size, (void)params;
    return fwm__error(err, FWM_ERR_UNSUPPORTED,
                      "architecture 'gfw': this build reads and writes its files but cannot run them");
}

static void gfw_unload(struct fwm_model *model) { (void)model; }

const fwm_arch_ops fwm__gfw_ops = {
    .name = "gfw",
    .load = gfw_load,
    .unload = gfw_unload,
};
