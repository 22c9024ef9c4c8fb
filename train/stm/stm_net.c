/* stm_net.c - the `stm` architecture's operations for the trainer's model handle (net.h), from
 * the shared template (net_adapter.h): what is the STM's own is its config's segment, fixed alpha
 * and output-matrix flags, and a checkpoint interval only when training. */
#include "net_adapter.h"
#include "stm/stm_init.h"

static fwm_status stm_configure(const fwm__net_config *c, fwm__stm_config *config, fwm_error *err)
{
    config->segment = c->segment;
    config->fix_alpha = c->fix_alpha;
    config->train_output = c->train_output;
    return fwm__net_refuse_dropout(c, "the STM", err);
}

FWM__NET_ADAPTER(stm, FWM_ARCH_STM, fwm__stm_config, fwm__stm_tm_, fwm__stm_init_weights,
                 /* set_dropout */ NULL, /* segment */ c->forward_only ? 0 : tm->segment,
                 /* view */ {}, /* backward */ {});
