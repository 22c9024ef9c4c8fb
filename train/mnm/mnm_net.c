/* mnm_net.c - the `mnm` architecture's operations for the trainer's model handle (net.h), from
 * the shared template (net_adapter.h): what is the MNM's own is its meta-objective (its weight
 * in the config, its sum and positions in the handle's view, its denominator in backward, the
 * ops' meta_term flag). */
#include "mnm/mnm_init.h"
#include "net_adapter.h"

static fwm_status mnm_configure(const fwm__net_config *c, fwm__mnm_config *config, fwm_error *err)
{
    config->segment = c->segment;
    config->meta_weight = c->forward_only ? 0 : c->meta_weight;
    return fwm__net_refuse_dropout(c, "the MNM", err);
}

FWM__NET_ADAPTER(mnm, FWM_ARCH_MNM, fwm__mnm_config, fwm__mnm_tm_, fwm__mnm_init_weights,
                 /* set_dropout */ NULL, /* segment */ tm->config.segment,
                 /* view */ {
                     net->meta_sum = tm->meta_sum;
                     net->n_meta_rows = tm->n_meta_rows;
                 },
                 /* backward */ { tm->meta_denominator = meta_denominator; },
                 /* meta term */ 1, /* loss position */ NULL);
