/* net_adapter.h - the functions every architecture's operations table (net.h's fwm__net_ops)
 * takes from its typed model, written once.
 *
 * Every architecture's typed model (fwm__<x>_tm_f32) has the same functions (create, free,
 * forward, backward) and begins with the same shell (tm_shell.h: params, grads, state, x, y,
 * loss_rows, probs, logits, the loss), so the functions from it to the handle are written once
 * here (zeroing the gradients and the state is the shell's, in net.c):
 *
 *   FWM__NET_TYPED_MODEL(name, CONFIG, PREFIX, INIT)
 *
 * defines name_create, name_destroy, name_forward, name_backward and name_init_weights (static),
 * where
 *   name    the architecture's prefix: model spec member (spec->name) and hyperparameters of its
 *           config
 *   CONFIG  its typed model's config type (fwm__<x>_config)
 *   PREFIX  its typed model's function prefix: PREFIX##create_f32, PREFIX##f32 the type
 *   INIT    its initialiser, INIT(&spec->name, seed, tensors)
 * and the including file defines before it
 *   static fwm_status name_configure(const fwm__net_config *c, CONFIG *config, fwm_error *err);
 * which fills the config's fields beyond those every architecture has (hp, lanes, window,
 * loss_mode, loss_token_id, keep_logits, forward_only: the template's) and refuses what the
 * architecture does not take (fwm__net_refuse_dropout). After it, the file defines its table,
 * `const fwm__net_ops fwm__net_ops_<name>` (the registry in net.c lists it by the architecture's
 * prefix in FWM_ARCH_LIST), with designated initializers: these functions, and what is the
 * architecture's own (reset_state when its reset state is not all zero, set_dropout, segment,
 * view_more, set_meta_denominator, meta_term, is_loss_position; net.h), which the functions here
 * call through the table.
 */
#ifndef FWM_TRAIN_NET_ADAPTER_H
#define FWM_TRAIN_NET_ADAPTER_H

#include <string.h>

#include "fwm_error.h"
#include "net.h"

/* FWM_OK, or FWM_ERR_INVALID_ARGUMENT when c asks for dropout of a model (`model`, "the STM")
 * that has none. */
static inline fwm_status fwm__net_refuse_dropout(const fwm__net_config *c, const char *model,
                                                 fwm_error *err)
{
    if (fwm__dropout_any(&c->dropout))
        return fwm__error(err, FWM_ERR_INVALID_ARGUMENT,
                          "the dropout options are for --arch lstm; %s has none", model);
    return FWM_OK;
}

#define FWM__NET_TYPED_MODEL(name, CONFIG, PREFIX, INIT)                                         \
    static void name##_view(fwm__net *net)                                                         \
    {                                                                                              \
        const PREFIX##f32 *tm = net->impl;                                                         \
        net->len = tm->shell.len;                                                                        \
        net->n_loss_rows = tm->shell.n_loss_rows;                                                        \
        net->loss_sum = tm->shell.loss_sum;                                                              \
        net->loss = tm->shell.loss;                                                                      \
        if (net->ops->view_more)                                                                   \
            net->ops->view_more(net);                                                              \
    }                                                                                              \
                                                                                                   \
    static fwm_status name##_create(fwm__net *net, fwm__pool *pool, fwm_error *err)                \
    {                                                                                              \
        const fwm__net_config *c = &net->config;                                                   \
        CONFIG config;                                                                             \
        memset(&config, 0, sizeof config);                                                         \
        config.hp = c->model.name;                                                                 \
        config.lanes = c->lanes;                                                                   \
        config.window = c->window;                                                                 \
        config.loss_mode = c->loss_mode;                                                           \
        config.loss_token_id = c->loss_token_id;                                                   \
        config.keep_logits = c->keep_logits;                                                       \
        config.forward_only = c->forward_only;                                                     \
        fwm_status status = name##_configure(c, &config, err);                                     \
        if (status != FWM_OK)                                                                      \
            return status;                                                                         \
        PREFIX##f32 *tm = NULL;                                                                    \
        status = PREFIX##create_f32(&config, pool, &tm, err);                                      \
        if (status != FWM_OK)                                                                      \
            return status;                                                                         \
        net->impl = tm;                                                                            \
        net->params = tm->shell.params;                                                                  \
        net->grads = tm->shell.grads;                                                                    \
        net->state = tm->shell.state;                                                                    \
        net->state_size = tm->shell.state_size;                                                          \
        net->segment = net->ops->segment ? net->ops->segment(net) : 0;                             \
        net->x = tm->shell.x;                                                                            \
        net->y = tm->shell.y;                                                                            \
        net->loss_rows = tm->shell.loss_rows;                                                            \
        net->probs = tm->shell.probs;                                                                    \
        net->logits = tm->shell.logits;                                                                  \
        name##_view(net);                                                                          \
        return FWM_OK;                                                                             \
    }                                                                                              \
                                                                                                   \
    static void name##_destroy(void *impl)                                                         \
    {                                                                                              \
        PREFIX##free_f32(impl);                                                                    \
    }                                                                                              \
                                                                                                   \
    static double name##_forward(fwm__net *net, const uint32_t *x, const uint32_t *y, int len)     \
    {                                                                                              \
        double loss = PREFIX##forward_f32(net->impl, x, y, len);                                   \
        name##_view(net);                                                                          \
        return loss;                                                                               \
    }                                                                                              \
                                                                                                   \
    static void name##_backward(fwm__net *net, long loss_denominator, long meta_denominator)       \
    {                                                                                              \
        PREFIX##f32 *tm = net->impl;                                                               \
        tm->shell.loss_denominator = loss_denominator;                                                   \
        if (net->ops->set_meta_denominator)                                                        \
            net->ops->set_meta_denominator(tm, meta_denominator);                                  \
        PREFIX##backward_f32(tm);                                                                  \
    }                                                                                              \
                                                                                                   \
    static void name##_init_weights(const fwm__model_spec *spec, uint64_t seed,                    \
                                    float *const *tensors)                                         \
    {                                                                                              \
        INIT(&spec->name, seed, tensors);                                                          \
    }

#endif
