/* mnm_net.c - the `mnm` architecture's operations for the trainer's model handle (net.h). */
#include <stdlib.h>
#include <string.h>

#include "fwm_error.h"
#include "mnm/mnm_init.h"
#include "net.h"

static void mnm_view(fwm__net *net)
{
    const fwm__mnm_tm_f32 *tm = net->impl;
    net->len = tm->len;
    net->n_loss_rows = tm->n_loss_rows;
    net->loss_sum = tm->loss_sum;
    net->loss = tm->loss;
    net->meta_sum = tm->meta_sum;
    net->n_meta_rows = tm->n_meta_rows;
}

static fwm_status mnm_create(fwm__net *net, fwm__pool *pool, fwm_error *err)
{
    const fwm__net_config *c = &net->config;
    if (fwm__dropout_any(&c->dropout))
        return fwm__error(err, FWM_ERR_INVALID_ARGUMENT,
                          "the dropout options are for --arch lstm; the MNM has none");
    fwm__mnm_config config;
    memset(&config, 0, sizeof config);
    config.hp = c->model.mnm;
    config.lanes = c->lanes;
    config.window = c->window;
    config.segment = c->segment;
    config.loss_mode = c->loss_mode;
    config.loss_token_id = c->loss_token_id;
    config.meta_weight = c->forward_only ? 0 : c->meta_weight;
    config.keep_logits = c->keep_logits;
    config.forward_only = c->forward_only;
    fwm__mnm_tm_f32 *tm = NULL;
    fwm_status status = fwm__mnm_tm_create_f32(&config, pool, &tm, err);
    if (status != FWM_OK)
        return status;
    net->impl = tm;
    net->params = tm->params;
    net->grads = tm->grads;
    net->state = tm->state;
    net->state_size = tm->state_size;
    net->segment = tm->config.segment;
    net->x = tm->x;
    net->y = tm->y;
    net->loss_rows = tm->loss_rows;
    net->probs = tm->probs;
    net->logits = tm->logits;
    mnm_view(net);
    return FWM_OK;
}

static void mnm_destroy(void *impl)
{
    fwm__mnm_tm_free_f32(impl);
}

static double mnm_forward(fwm__net *net, const uint32_t *x, const uint32_t *y, int len)
{
    double loss = fwm__mnm_tm_forward_f32(net->impl, x, y, len);
    mnm_view(net);
    return loss;
}

static void mnm_backward(fwm__net *net, long loss_denominator, long meta_denominator)
{
    fwm__mnm_tm_f32 *tm = net->impl;
    tm->loss_denominator = loss_denominator;
    tm->meta_denominator = meta_denominator;
    fwm__mnm_tm_backward_f32(tm);
}

static void mnm_zero_grads(void *impl)
{
    fwm__mnm_tm_zero_grads_f32(impl);
}

static void mnm_reset_state(void *impl)
{
    fwm__mnm_tm_reset_state_f32(impl);
}

static void mnm_init_weights(const fwm__model_spec *spec, uint64_t seed, float *const *tensors)
{
    fwm__mnm_init_weights(&spec->mnm, seed, tensors);
}

const fwm__net_ops fwm__net_ops_mnm = {
    FWM_ARCH_MNM,  mnm_create,      mnm_destroy, mnm_forward,      mnm_backward,
    mnm_zero_grads, mnm_reset_state, NULL,        mnm_init_weights,
};
