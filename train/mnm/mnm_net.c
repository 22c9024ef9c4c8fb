/* mnm_net.c - the `mnm` architecture's operations for the trainer's model handle (net.h), from
 * the functions of net_adapter.h: what is the MNM's own is its meta-objective (its weight in the
 * config, its sum and positions in the handle's view, its denominator in backward, the ops'
 * meta_term flag) and its checkpoint interval. */
#include "mnm/mnm_init.h"
#include "net_adapter.h"

static fwm_status mnm_configure(const fwm__net_config *c, fwm__mnm_config *config, fwm_error *err)
{
    config->segment = c->segment;
    config->meta_weight = c->forward_only ? 0 : c->meta_weight;
    return fwm__net_refuse_dropout(c, "the MNM", err);
}

static int mnm_segment(const fwm__net *net)
{
    return ((const fwm__mnm_tm_f32 *)net->impl)->config.segment;
}

static void mnm_view_meta(fwm__net *net)
{
    const fwm__mnm_tm_f32 *tm = net->impl;
    net->meta_sum = tm->meta_sum;
    net->n_meta_rows = tm->n_meta_rows;
}

static void mnm_set_meta_denominator(void *impl, long meta_denominator)
{
    ((fwm__mnm_tm_f32 *)impl)->meta_denominator = meta_denominator;
}

/* Its reset state is not all zero (tm_shell.h). */
static void mnm_reset_state(void *impl)
{
    fwm__mnm_tm_reset_state_f32(impl);
}

FWM__NET_TYPED_MODEL(mnm, fwm__mnm_config, fwm__mnm_tm_, fwm__mnm_init_weights)

const fwm__net_ops fwm__net_ops_mnm = {
    .arch = FWM_ARCH_MNM,
    .create = mnm_create,
    .destroy = mnm_destroy,
    .forward = mnm_forward,
    .backward = mnm_backward,
    .reset_state = mnm_reset_state,
    .init_weights = mnm_init_weights,
    .segment = mnm_segment,
    .view_more = mnm_view_meta,
    .set_meta_denominator = mnm_set_meta_denominator,
    .meta_term = 1,
};
