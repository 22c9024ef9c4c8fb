/* stm_net.c - the `stm` architecture's operations for the trainer's model handle (net.h). */
#include <stdlib.h>
#include <string.h>

#include "fwm_error.h"
#include "net.h"
#include "stm/stm_init.h"

static void stm_view(fwm__net *net)
{
    const fwm__stm_tm_f32 *tm = net->impl;
    net->len = tm->len;
    net->n_loss_rows = tm->n_loss_rows;
    net->loss_sum = tm->loss_sum;
    net->loss = tm->loss;
}

static fwm_status stm_create(fwm__net *net, fwm__pool *pool, fwm_error *err)
{
    const fwm__net_config *c = &net->config;
    if (fwm__dropout_any(&c->dropout))
        return fwm__error(err, FWM_ERR_INVALID_ARGUMENT,
                          "the dropout options are for --arch lstm; the STM has none");
    fwm__stm_config config;
    memset(&config, 0, sizeof config);
    config.hp = c->model.stm;
    config.lanes = c->lanes;
    config.window = c->window;
    config.segment = c->segment;
    config.loss_mode = c->loss_mode;
    config.loss_token_id = c->loss_token_id;
    config.fix_alpha = c->fix_alpha;
    config.train_output = c->train_output;
    config.keep_logits = c->keep_logits;
    config.forward_only = c->forward_only;
    fwm__stm_tm_f32 *tm = NULL;
    fwm_status status = fwm__stm_tm_create_f32(&config, pool, &tm, err);
    if (status != FWM_OK)
        return status;
    net->impl = tm;
    net->params = tm->params;
    net->grads = tm->grads;
    net->state = tm->state;
    net->state_size = tm->state_size;
    net->segment = c->forward_only ? 0 : tm->segment;
    net->x = tm->x;
    net->y = tm->y;
    net->loss_rows = tm->loss_rows;
    net->probs = tm->probs;
    net->logits = tm->logits;
    stm_view(net);
    return FWM_OK;
}

static void stm_destroy(void *impl)
{
    fwm__stm_tm_free_f32(impl);
}

static double stm_forward(fwm__net *net, const uint32_t *x, const uint32_t *y, int len)
{
    double loss = fwm__stm_tm_forward_f32(net->impl, x, y, len);
    stm_view(net);
    return loss;
}

static void stm_backward(fwm__net *net, long loss_denominator, long meta_denominator)
{
    (void)meta_denominator;
    fwm__stm_tm_f32 *tm = net->impl;
    tm->loss_denominator = loss_denominator;
    fwm__stm_tm_backward_f32(tm);
}

static void stm_zero_grads(void *impl)
{
    fwm__stm_tm_zero_grads_f32(impl);
}

static void stm_reset_state(void *impl)
{
    fwm__stm_tm_reset_state_f32(impl);
}

static void stm_init_weights(const fwm__model_spec *spec, uint64_t seed, float *const *tensors)
{
    fwm__stm_init_weights(&spec->stm, seed, tensors);
}

const fwm__net_ops fwm__net_ops_stm = {
    FWM_ARCH_STM,   stm_create,      stm_destroy, stm_forward,      stm_backward,
    stm_zero_grads, stm_reset_state, NULL,        stm_init_weights,
};
