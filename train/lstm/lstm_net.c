/* lstm_net.c - the `lstm` architecture's operations for the trainer's model handle (net.h), from
 * the shared template (net_adapter.h): what is the LSTM's own is its dropout (the only
 * architecture with it) and no checkpoint interval. */
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

FWM__NET_ADAPTER(lstm, FWM_ARCH_LSTM, fwm__lstm_config, fwm__lstm_tm_, fwm__lstm_init_weights,
                 lstm_set_dropout, /* segment */ 0, /* view */ {}, /* backward */ {},
                 /* meta term */ 0, /* loss position */ NULL);
