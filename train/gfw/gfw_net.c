/* gfw_net.c - the `gfw` architecture's operations for the trainer's model handle (net.h), from
 * the functions of net_adapter.h (no dropout, no checkpoint interval: every step's fast matrices
 * are kept). */
#include "gfw/gfw_init.h"
#include "net_adapter.h"

static fwm_status gfw_configure(const fwm__net_config *c, fwm__gfw_config *config, fwm_error *err)
{
    (void)config;
    return fwm__net_refuse_dropout(c, "the gfw model", err);
}

FWM__NET_TYPED_MODEL(gfw, fwm__gfw_config, fwm__gfw_tm_, fwm__gfw_init_weights)

const fwm__net_ops fwm__net_ops_gfw = {
    .arch = FWM_ARCH_GFW,
    .create = gfw_create,
    .destroy = gfw_destroy,
    .forward = gfw_forward,
    .backward = gfw_backward,
    .init_weights = gfw_init_weights,
};
