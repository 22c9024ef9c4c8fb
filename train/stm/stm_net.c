/* stm_net.c - the `stm` architecture's operations for the trainer's model handle (net.h), from
 * the shared template (net_adapter.h): what is the STM's own is its config's segment, fixed alpha
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

FWM__NET_ADAPTER(stm, FWM_ARCH_STM, fwm__stm_config, fwm__stm_tm_, fwm__stm_init_weights,
                 /* set_dropout */ NULL, /* segment */ c->forward_only ? 0 : tm->segment,
                 /* view */ {}, /* backward */ {}, /* meta term */ 0,
                 /* loss position */ stm_is_loss_position);
