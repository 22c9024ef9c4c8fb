/* net_adapter.h - the template of an architecture's operations table for the trainer's model
 * handle (net.h's fwm__net_ops).
 *
 * Every architecture's typed model (fwm__<x>_tm_f32) has the same functions (create, free,
 * forward, backward, zero_grads, reset_state) and the same buffer members (params, grads, state,
 * x, y, loss_rows, probs, logits, the loss), so the adapter from it to the handle is written once
 * here and instantiated once per architecture:
 *
 *   FWM__NET_ADAPTER(name, ARCH, CONFIG, PREFIX, INIT, SET_DROPOUT, SEGMENT, VIEW_MORE,
 *                    BACKWARD_MORE, META_TERM, LOSS_POSITION)
 *
 * defines `const fwm__net_ops fwm__net_ops_<name>` (the registry in net.c lists it by the
 * architecture's prefix in FWM_ARCH_LIST). Its arguments are what is the architecture's own:
 *   name           its prefix; model spec member (spec->name) and hyperparameters of its config
 *   ARCH           its fwm_arch value
 *   CONFIG         its typed model's config type (fwm__<x>_config)
 *   PREFIX         its typed model's function prefix: PREFIX##create_f32, PREFIX##f32 the type
 *   INIT           its initialiser, INIT(&spec->name, seed, tensors)
 *   SET_DROPOUT    fwm__net_ops.set_dropout, or NULL
 *   SEGMENT        an expression over `c` (the net config) and `tm` (the typed model): the
 *                  checkpoint interval in use, net->segment
 *   VIEW_MORE      statements run after each forward over `net` and `tm` (copying what more the
 *                  handle shows), {} for none
 *   BACKWARD_MORE  statements run before the backward pass over `tm` and `meta_denominator`, {}
 *                  for none
 *   META_TERM      fwm__net_ops.meta_term: 1 when training takes a meta term (the MNM), else 0
 *   LOSS_POSITION  fwm__net_ops.is_loss_position, or NULL for the loss mode's rule
 * and the including file defines before it
 *   static fwm_status name_configure(const fwm__net_config *c, CONFIG *config, fwm_error *err);
 * which fills the config's fields beyond those every architecture has (hp, lanes, window,
 * loss_mode, loss_token_id, keep_logits, forward_only: the template's) and refuses what the
 * architecture does not take (fwm__net_refuse_dropout).
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

#define FWM__NET_ADAPTER(name, ARCH, CONFIG, PREFIX, INIT, SET_DROPOUT, SEGMENT, VIEW_MORE,       \
                         BACKWARD_MORE, META_TERM, LOSS_POSITION)                                  \
    static void name##_view(fwm__net *net)                                                         \
    {                                                                                              \
        const PREFIX##f32 *tm = net->impl;                                                         \
        net->len = tm->len;                                                                        \
        net->n_loss_rows = tm->n_loss_rows;                                                        \
        net->loss_sum = tm->loss_sum;                                                              \
        net->loss = tm->loss;                                                                      \
        VIEW_MORE                                                                                  \
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
        net->params = tm->params;                                                                  \
        net->grads = tm->grads;                                                                    \
        net->state = tm->state;                                                                    \
        net->state_size = tm->state_size;                                                          \
        net->segment = (SEGMENT);                                                                  \
        net->x = tm->x;                                                                            \
        net->y = tm->y;                                                                            \
        net->loss_rows = tm->loss_rows;                                                            \
        net->probs = tm->probs;                                                                    \
        net->logits = tm->logits;                                                                  \
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
        (void)meta_denominator;                                                                    \
        PREFIX##f32 *tm = net->impl;                                                               \
        tm->loss_denominator = loss_denominator;                                                   \
        BACKWARD_MORE                                                                              \
        PREFIX##backward_f32(tm);                                                                  \
    }                                                                                              \
                                                                                                   \
    static void name##_zero_grads(void *impl)                                                      \
    {                                                                                              \
        PREFIX##zero_grads_f32(impl);                                                              \
    }                                                                                              \
                                                                                                   \
    static void name##_reset_state(void *impl)                                                     \
    {                                                                                              \
        PREFIX##reset_state_f32(impl);                                                             \
    }                                                                                              \
                                                                                                   \
    static void name##_init_weights(const fwm__model_spec *spec, uint64_t seed,                    \
                                    float *const *tensors)                                         \
    {                                                                                              \
        INIT(&spec->name, seed, tensors);                                                          \
    }                                                                                              \
                                                                                                   \
    const fwm__net_ops fwm__net_ops_##name = {                                                     \
        ARCH,              name##_create,      name##_destroy, name##_forward,                     \
        name##_backward,   name##_zero_grads,  name##_reset_state, SET_DROPOUT,                    \
        name##_init_weights, META_TERM,        LOSS_POSITION,                                      \
    }

#endif
