/* stm_net.c - the `stm` architecture's operations for the trainer's model handle (net.h), from
 * the functions of net_adapter.h: what is the STM's own is its config's segment, fixed alpha
 * and output-matrix flags, a checkpoint interval only when training, and sentence mode's loss
 * positions (question ends). */
#include "net_adapter.h"
#include "stm/stm_init.h"

static fwm_status stm_configure(const fwm__net_config *c, fwm__stm_config *config, fwm_error *err)
{
    config->segment = c->segment;
    config->fix_alpha = c->fix_alpha;
    config->train_output = c->train_output;
    return fwm__net_refuse_dropout(c, "the STM", err);
}

/* Sentence mode predicts at question ends: the positions whose input is the question end and whose
 * target is not padding. Word mode predicts as the other architectures do. */
static int stm_is_loss_position(const fwm__net_config *c, uint32_t x, uint32_t y)
{
    const fwm_stm_hparams *hp = &c->model.stm;
    if (hp->input_mode == FWM_STM_INPUT_SENTENCE)
        return x == hp->question_end_token_id && y != hp->padding_token_id;
    return fwm__is_loss_position(c->loss_mode, c->loss_token_id, hp->padding_token_id, x, y);
}

/* a checkpoint interval only when training */
static int stm_segment(const fwm__net *net)
{
    return net->config.forward_only ? 0 : ((const fwm__stm_tm_f32 *)net->impl)->segment;
}

/* Its reset state is not all zero (tm_shell.h). */
static void stm_reset_state(void *impl)
{
    fwm__stm_tm_reset_state_f32(impl);
}

FWM__NET_TYPED_MODEL(stm, fwm__stm_config, fwm__stm_tm_, fwm__stm_init_weights)

const fwm__net_ops fwm__net_ops_stm = {
    .arch = FWM_ARCH_STM,
    .create = stm_create,
    .destroy = stm_destroy,
    .forward = stm_forward,
    .backward = stm_backward,
    .reset_state = stm_reset_state,
    .init_weights = stm_init_weights,
    .segment = stm_segment,
    .is_loss_position = stm_is_loss_position,
};
