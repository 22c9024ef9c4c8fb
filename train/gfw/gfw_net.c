/* gfw_net.c - the `gfw` architecture's operations for the trainer's model handle (net.h). */
#include <stdlib.h>
#include <string.h>

#include "fwm_error.h"
#include "gfw/gfw_init.h"
#include "net.h"

static void gfw_view(fwm__net *net)
{
    const fwm__gfw_tm_f32 *tm = net->impl;
    net->len = tm->len;
    net->n_loss_rows = tm->n_loss_rows;
    net->loss_sum = tm->loss_sum;
    net->loss = tm->loss;
}

static fwm_status gfw_create(fwm__net *net, fwm__pool *pool, fwm_error *err)
{
    const fwm__net_config *c = &net->config;
    if (fwm__dropout_any(&c->dropout))
        return fwm__error(err, FWM_ERR_INVALID_ARGUMENT,
                          "the dropout options are for --arch lstm; the gfw model has none");
    fwm__gfw_config config;
    memset(&config, 0, sizeof config);
    config.hp = c->model.gfw;
    config.lanes = c->lanes;
    config.window = c->window;
    config.loss_mode = c->loss_mode;
    config.loss_token_id = c->loss_token_id;
    config.keep_logits = c->keep_logits;
    config.forward_only = c->forward_only;
    fwm__gfw_tm_f32 *tm = NULL;
    fwm_status status = fwm__gfw_tm_create_f32(&config, pool, &tm, err);
    if (status != FWM_OK)
        return status;
    net->impl = tm;
    net->params = tm->params;
    net->grads = tm->grads;
    net->state = tm->state;
    net->state_size = tm->state_size;
    net->segment = 0; /* every step's fast matrices are kept: no checkpoint interval */
    net->x = tm->x;
    net->y = tm->y;
    net->loss_rows = tm->loss_rows;
    net->probs = tm->probs;
    net->logits = tm->logits;
    gfw_view(net);
    return FWM_OK;
}

static void gfw_destroy(void *impl)
{
    fwm__gfw_tm_free_f32(impl);
}

static double gfw_forward(fwm__net *net, const uint32_t *x, const uint32_t *y, int len)
{
    double loss = fwm__gfw_tm_forward_f32(net->impl, x, y, len);
    gfw_view(net);
    return loss;
}

static void gfw_backward(fwm__net *net, long loss_denominator, long meta_denominator)
{
    (void)meta_denominator;
    fwm__gfw_tm_f32 *tm = net->impl;
    tm->loss_denominator = loss_denominator;
    fwm__gfw_tm_backward_f32(tm);
}

static void gfw_zero_grads(void *impl)
{
    fwm__gfw_tm_zero_grads_f32(impl);
}

static void gfw_reset_state(void *impl)
{
    fwm__gfw_tm_reset_state_f32(impl);
}

static void gfw_init_weights(const fwm__model_spec *spec, uint64_t seed, float *const *tensors)
{
    fwm__gfw_init_weights(&spec->gfw, seed, tensors);
}

const fwm__net_ops fwm__net_ops_gfw = {
    FWM_ARCH_GFW,   gfw_create,      gfw_destroy, gfw_forward,      gfw_backward,
    gfw_zero_grads, gfw_reset_state, NULL,        gfw_init_weights,
};
