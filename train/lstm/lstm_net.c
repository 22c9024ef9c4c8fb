/* lstm_net.c - the `lstm` architecture's operations for the trainer's model handle (net.h). */
#include <stdlib.h>
#include <string.h>

#include "fwm_error.h"
#include "net.h"

static void lstm_view(fwm__net *net)
{
    const fwm__lstm_tm_f32 *tm = net->impl;
    net->len = tm->len;
    net->n_loss_rows = tm->n_loss_rows;
    net->loss_sum = tm->loss_sum;
    net->loss = tm->loss;
}

static fwm_status lstm_create(fwm__net *net, fwm__pool *pool, fwm_error *err)
{
    const fwm__net_config *c = &net->config;
    fwm__lstm_config config;
    memset(&config, 0, sizeof config);
    config.hp = c->model.lstm;
    config.lanes = c->lanes;
    config.window = c->window;
    config.loss_mode = c->loss_mode;
    config.loss_token_id = c->loss_token_id;
    config.dropout = c->dropout;
    config.keep_logits = c->keep_logits;
    config.forward_only = c->forward_only;
    fwm__lstm_tm_f32 *tm = NULL;
    fwm_status status = fwm__lstm_tm_create_f32(&config, pool, &tm, err);
    if (status != FWM_OK)
        return status;
    net->impl = tm;
    net->params = tm->params;
    net->grads = tm->grads;
    net->state = tm->state;
    net->state_size = tm->state_size;
    net->segment = 0;
    net->x = tm->x;
    net->y = tm->y;
    net->loss_rows = tm->loss_rows;
    net->probs = tm->probs;
    net->logits = tm->logits;
    lstm_view(net);
    return FWM_OK;
}

static void lstm_destroy(void *impl)
{
    fwm__lstm_tm_free_f32(impl);
}

static double lstm_forward(fwm__net *net, const uint32_t *x, const uint32_t *y, int len)
{
    double loss = fwm__lstm_tm_forward_f32(net->impl, x, y, len);
    lstm_view(net);
    return loss;
}

static void lstm_backward(fwm__net *net, long loss_denominator, long meta_denominator)
{
    (void)meta_denominator;
    fwm__lstm_tm_f32 *tm = net->impl;
    tm->loss_denominator = loss_denominator;
    fwm__lstm_tm_backward_f32(tm);
}

static void lstm_zero_grads(void *impl)
{
    fwm__lstm_tm_zero_grads_f32(impl);
}

static void lstm_reset_state(void *impl)
{
    fwm__lstm_tm_reset_state_f32(impl);
}

static void lstm_set_dropout(void *impl, uint64_t seed, uint64_t step, int lane_offset)
{
    fwm__lstm_tm_set_dropout_f32(impl, seed, step, lane_offset);
}

static void lstm_init_weights(const fwm__model_spec *spec, uint64_t seed, float *const *tensors)
{
    fwm__lstm_init_weights(&spec->lstm, seed, tensors);
}

const fwm__net_ops fwm__net_ops_lstm = {
    FWM_ARCH_LSTM,  lstm_create,      lstm_destroy,      lstm_forward,     lstm_backward,
    lstm_zero_grads, lstm_reset_state, lstm_set_dropout, lstm_init_weights,
};
