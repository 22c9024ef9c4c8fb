/* gfw_net.c - the `gfw` architecture's operations for the trainer's model handle (net.h), from
 * the shared template (net_adapter.h). */
#include "gfw/gfw_init.h"
#include "net_adapter.h"

static fwm_status gfw_configure(const fwm__net_config *c, fwm__gfw_config *config, fwm_error *err)
{
    (void)config;
    return fwm__net_refuse_dropout(c, "the gfw model", err);
}

/* segment 0: every step's fast matrices are kept, no checkpoint interval */
FWM__NET_ADAPTER(gfw, FWM_ARCH_GFW, fwm__gfw_config, fwm__gfw_tm_, fwm__gfw_init_weights,
                 /* set_dropout */ NULL, /* segment */ 0, /* view */ {}, /* backward */ {},
                 /* meta term */ 0, /* loss position */ NULL);
