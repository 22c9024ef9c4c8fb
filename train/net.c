/* net.c - the architecture-independent model handle (see net.h) and the registry of
 * architectures (FWM_ARCH_LIST): each one's operations are in <arch>/<arch>_net.c. */
#include "net.h"

#include <stdlib.h>
#include <string.h>

#include "fwm_error.h"
#include "net_adapter.h"

/* ---- the registry ----------------------------------------------------------------------------- */

/* fwm__net_ops_<prefix>, in <arch>/<arch>_net.c, for every architecture of
 * FWM_ARCH_LIST (model_format/arch_list.h). */
#define FWM_NET_OPS_DECLARE_(id, str, prefix) extern const fwm__net_ops fwm__net_ops_##prefix;
FWM_ARCH_LIST(FWM_NET_OPS_DECLARE_)
#undef FWM_NET_OPS_DECLARE_

static const fwm__net_ops *const registry[] = {
#define FWM_NET_OPS_ENTRY_(id, str, prefix) &fwm__net_ops_##prefix,
    FWM_ARCH_LIST(FWM_NET_OPS_ENTRY_)
#undef FWM_NET_OPS_ENTRY_
};

static const fwm__net_ops *ops_of(fwm_arch arch)
{
    for (size_t i = 0; i < sizeof registry / sizeof registry[0]; i++)
        if (registry[i]->arch == arch)
            return registry[i];
    return NULL;
}

fwm_status fwm__net_create(const fwm__net_config *config, fwm__pool *pool, fwm__net **out,
                           fwm_error *err)
{
    *out = NULL;
    const fwm__net_ops *ops = ops_of(config->model.arch);
    if (!ops)
        return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "unknown architecture %d",
                          (int)config->model.arch);
    fwm__net *net = calloc(1, sizeof *net);
    if (!net)
        return fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "trainer model: out of memory");
    net->ops = ops;
    net->config = *config;
    fwm__tensor_layout_init(&net->layout, &config->model);
    fwm_status status = ops->create(net, pool, err);
    if (status != FWM_OK) {
        free(net);
        return status;
    }
    *out = net;
    return FWM_OK;
}

void fwm__net_free(fwm__net *net)
{
    if (!net)
        return;
    if (net->impl)
        net->ops->destroy(net->impl);
    free(net);
}

double fwm__net_forward(fwm__net *net, const uint32_t *x, const uint32_t *y, int len)
{
    return net->ops->forward(net, x, y, len);
}

fwm_status fwm__net_check_ids(const fwm__net *net, const uint32_t *x, const uint32_t *y, int lanes,
                              int len, fwm_error *err)
{
    uint32_t V = fwm__spec_vocab_size(&net->config.model);
    size_t n = (size_t)lanes * (size_t)len;
    for (size_t i = 0; i < n; i++) {
        if (x[i] < V && y[i] < V)
            continue;
        int input = x[i] >= V;
        return fwm__error(err, FWM_ERR_INVALID_ARGUMENT,
                          "%s id %u at lane %zu, position %zu of the window is out of range: the "
                          "model's vocabulary has V = %u tokens (ids 0 to %u)",
                          input ? "token" : "target", input ? x[i] : y[i], i / (size_t)len,
                          i % (size_t)len, V, V - 1);
    }
    return FWM_OK;
}

void fwm__net_backward(fwm__net *net, long loss_denominator)
{
    net->ops->backward(net, loss_denominator, 0);
}

void fwm__net_backward_meta(fwm__net *net, long loss_denominator, long meta_denominator)
{
    net->ops->backward(net, loss_denominator, meta_denominator);
}

long fwm__net_count_meta_rows(const fwm__net *net, const uint32_t *x, size_t n)
{
    if (!net->ops->meta_term || net->config.forward_only)
        return 0;
    long count = 0;
    uint32_t pad = fwm__spec_pad_id(&net->config.model);
    for (size_t i = 0; i < n; i++)
        count += x[i] != pad;
    return count;
}

void fwm__net_zero_grads(fwm__net *net)
{
    fwm__tm_shell_zero_grads_f32(net->impl); /* the model begins with its shell */
}

void fwm__net_reset_state(fwm__net *net)
{
    if (net->ops->reset_state)
        net->ops->reset_state(net->impl);
    else
        fwm__tm_shell_zero_state_f32(net->impl); /* the model begins with its shell */
}

void fwm__net_reset_lanes(fwm__net *net, const uint8_t *flags, float *scratch)
{
    size_t lanes = (size_t)net->config.lanes, k = net->state_size;
    int any = 0;
    for (size_t b = 0; b < lanes; b++)
        any |= flags[b] != 0;
    if (!any)
        return;
    /* every architecture's reset state (the MNM's holds its initial memory) through its own
     * reset, then the other lanes back */
    memcpy(scratch, net->state, lanes * k * sizeof(float));
    fwm__net_reset_state(net);
    for (size_t b = 0; b < lanes; b++)
        if (!flags[b])
            memcpy(net->state + b * k, scratch + b * k, k * sizeof(float));
}

void fwm__net_set_dropout(fwm__net *net, uint64_t seed, uint64_t step, int lane_offset)
{
    if (net->ops->set_dropout && fwm__dropout_any(&net->config.dropout))
        net->ops->set_dropout(net->impl, seed, step, lane_offset);
}

void fwm__net_init_weights(fwm__net *net, uint64_t seed)
{
    float *tensors[FWM__MAX_TENSORS];
    for (size_t k = 0; k < net->layout.count; k++)
        tensors[k] = net->params + net->layout.offset[k];
    net->ops->init_weights(&net->config.model, seed, tensors);
}

int fwm__net_is_loss_position(const fwm__net *net, uint32_t x, uint32_t y)
{
    const fwm__net_config *config = &net->config;
    if (net->ops->is_loss_position)
        return net->ops->is_loss_position(config, x, y);
    return fwm__is_loss_position(config->loss_mode, config->loss_token_id,
                                 fwm__spec_pad_id(&config->model), x, y);
}
