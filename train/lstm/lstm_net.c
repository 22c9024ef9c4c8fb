/* lstm_net.c - the `lstm` architecture's operations for the trainer's model handle (net.h), from
 * the functions of net_adapter.h: what is the LSTM's own is its dropout (with the FWM's LSTM
 * layers, the only architecture with it) and no checkpoint interval. */
#include "net_adapter.h"

static fwm_status lstm_configure(const fwm__net_config *c, fwm__lstm_config *config,
                                 fwm_error *err)
{
    (void)err;
    config->dropout = c->dropout;
    config->tie_embeddings = c->tie_embeddings;
    return FWM_OK;
}

static void lstm_set_dropout(void *impl, uint64_t seed, uint64_t step, int lane_offset)
{
    fwm__lstm_tm_set_dropout_f32(impl, seed, step, lane_offset);
}

FWM__NET_TYPED_MODEL(lstm, fwm__lstm_config, fwm__lstm_tm_, fwm__lstm_init_weights)

const fwm__net_ops fwm__net_ops_lstm = {
    .arch = FWM_ARCH_LSTM,
    .create = lstm_create,
    .destroy = lstm_destroy,
    .forward = lstm_forward,
    .backward = lstm_backward,
    .set_dropout = lstm_set_dropout,
    .init_weights = lstm_init_weights,
};
