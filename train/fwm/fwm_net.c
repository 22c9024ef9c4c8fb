/* fwm_net.c - the `fwm` architecture's operations for the trainer's model handle (net.h): its
 * table over net_adapter.h's functions, as every architecture's <arch>_net.c. */
#include "net.h"

#include "fwm_error.h"
#include "fwm_model_init.h"
#include "net_adapter.h"

static fwm_status fwm_configure(const fwm__net_config *c, fwm__tm_config *config, fwm_error *err)
{
    (void)err;
    config->segment = c->segment;
    config->dropout = c->dropout; /* the LSTM baseline's, on every LSTM layer */
    config->tie_embeddings = c->tie_embeddings;
    return FWM_OK;
}

static void fwm_set_dropout(void *impl, uint64_t seed, uint64_t step, int lane_offset)
{
    fwm__tm_set_dropout_f32(impl, seed, step, lane_offset);
}

static int fwm_segment(const fwm__net *net)
{
    return ((const fwm__tm_f32 *)net->impl)->config.segment;
}

FWM__NET_TYPED_MODEL(fwm, fwm__tm_config, fwm__tm_, fwm__model_init_weights)

const fwm__net_ops fwm__net_ops_fwm = {
    .arch = FWM_ARCH_FWM,
    .create = fwm_create,
    .destroy = fwm_destroy,
    .forward = fwm_forward,
    .backward = fwm_backward,
    .set_dropout = fwm_set_dropout,
    .init_weights = fwm_init_weights,
    .segment = fwm_segment,
};
