/* stm_model.c - loading an `stm` model file into a ready-to-step fwm_model (through the STM
 * schema, model_format/stm/), its model info, the layout of its sessions' state, their reset state
 * (the initial memories, an empty sentence buffer, a closed answer slot), whether a session's
 * last step predicted anything, and closing an answer slot no answer will fill. */
#include <inttypes.h>
#include <string.h>

#include "fwm_alloc.h"
#include "fwm_error.h"
#include "stm/stm_schema.h"
#include "stm_runtime.h"

static void bind(fwm_stm_model *sm, const float *const *p) {
    size_t i = 0;
    sm->token_embd = p[i++];
    if (sm->sentence) sm->position = p[i++];
    sm->write_weight = p[i++], sm->write_bias = p[i++];
    sm->value_weight = p[i++], sm->value_bias = p[i++];
    sm->select_weight = p[i++], sm->select_bias = p[i++];
    sm->gate_input = p[i++], sm->gate_memory = p[i++], sm->gate_bias = p[i++];
    sm->sam_weight = p[i++], sm->sam_bias = p[i++];
    sm->sam_gain = p[i++], sm->sam_shift = p[i++];
    sm->alpha = p[i++];
    sm->transfer_weight = p[i++], sm->transfer_bias = p[i++];
    sm->item_init = p[i++], sm->relation_init = p[i++];
    if (sm->sentence) {
        fwm_stm_mlp *mlps[4] = {&sm->entity, &sm->role[0], &sm->role[1], &sm->role[2]};
        for (int k = 0; k < 4; k++) {
            mlps[k]->weight1 = p[i++], mlps[k]->bias1 = p[i++];
            mlps[k]->weight2 = p[i++], mlps[k]->bias2 = p[i++];
        }
        sm->answer_norm = p[i++];
        sm->answer_output = p[i++];
    } else {
        sm->distill_weight = p[i++], sm->distill_bias = p[i++];
        sm->output_weight = p[i++], sm->output_bias = p[i++];
    }
}

fwm_status fwm__stm_load(struct fwm_model *model, const void *buf, size_t size,
                         const fwm_model_params *params, fwm_error *err) {
    fwm_stm_schema schema;
    fwm_status status = fwm__stm_schema_parse(buf, size, &schema, err);
    if (status != FWM_OK) return status;
    fwm_stm_model *sm = fwm__calloc(1, sizeof *sm);
    if (!sm) {
        status = fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "out of memory allocating an STM model");
        goto done;
    }
    model->arch_data = sm;
    sm->hp = schema.hp;
    sm->sentence = schema.hp.input_mode == FWM_STM_INPUT_SENTENCE;
    model->hp.vocab_size = schema.hp.vocab_size;
    model->hp.embedding_length = schema.hp.embedding_length;
    model->hp.hidden_size = schema.hp.memory_size;
    model->hp.padding_token_id = schema.hp.padding_token_id;
    model->hp.eos_token_id = schema.hp.eos_token_id;

    uint64_t checksum = fwm__stm_schema_checksum(&schema);
    uint64_t fingerprint = fwm__stm_fingerprint(&schema.hp, (const char *const *)schema.head.tokens,
                                               schema.head.token_lengths, checksum);
    status = fwm__check_integrity(model, &schema.head, checksum, fingerprint, params, err);
    if (status != FWM_OK) goto done;
    model->parameter_count = 0;
    for (size_t i = 0; i < schema.tensor_count; i++)
        model->parameter_count += schema.tensors[i].rows * schema.tensors[i].cols;
    const float *pointers[FWM_STM_MAX_TENSORS];
    status = fwm__bind_tensors(model, schema.tensors, schema.tensor_count, pointers, err);
    if (status != FWM_OK) goto done;
    bind(sm, pointers);
    fwm__model_take_strings(model, &schema.head);
done:
    fwm__stm_schema_release(&schema);
    return status;
}

void fwm__stm_unload(struct fwm_model *model) {
    fwm__free(model->arch_data);
    model->arch_data = NULL;
}

void fwm__stm_fill_info(const struct fwm_model *model, fwm_model_info *info) {
    const fwm_stm_model *sm = fwm__stm_of(model);
    info->layer_count = 1;
    info->predicts_every_token = !sm->sentence;
    info->sentence_input = sm->sentence;
    info->statement_end_token_id = sm->hp.statement_end_token_id;
    info->question_end_token_id = sm->hp.question_end_token_id;
    info->max_sentence_words = sm->sentence ? sm->hp.sentence_length : 0;
    info->reset_on_eos = sm->hp.reset_on_eos;
}

/* The loader bounds d^2 (1 + n_q) (FWM_STM_MAX_MEMORY_ELEMENTS) and P, so none of this can
 * overflow. */
size_t fwm__stm_block_floats(const struct fwm_model *model) {
    const fwm_stm_hparams *hp = &fwm__stm_of(model)->hp;
    return fwm__aligned_floats((size_t)fwm__stm_item_floats(hp)) +
           fwm__aligned_floats((size_t)fwm__stm_relational_floats(hp)) +
           fwm__aligned_floats((size_t)fwm__stm_state_words(hp));
}

/* Mi (the block's start), Mr, then the sentence buffer's words. */
void fwm__stm_lay_out(struct fwm_session *session, float *base) {
    const fwm_stm_hparams *hp = &fwm__stm_of(session->model)->hp;
    session->h = base;
    session->F = base;
    session->Mr = base + fwm__aligned_floats((size_t)fwm__stm_item_floats(hp));
    session->words = fwm__stm_state_words(hp)
                         ? (uint32_t *)(session->Mr + fwm__aligned_floats((size_t)fwm__stm_relational_floats(hp)))
                         : NULL;
}

size_t fwm__stm_state_floats(const struct fwm_model *model) {
    return (size_t)fwm__stm_hparams_state_floats(&fwm__stm_of(model)->hp);
}

/* The buffer is empty and the slot closed already (the block is zeroed); the memories become the
 * model's stm.item.init and stm.relation.init. */
void fwm__stm_reset_state(struct fwm_session *session) {
    const fwm_stm_model *sm = fwm__stm_of(session->model);
    memcpy(session->F, sm->item_init, (size_t)fwm__stm_item_floats(&sm->hp) * sizeof(float));
    memcpy(session->Mr, sm->relation_init, (size_t)fwm__stm_relational_floats(&sm->hp) * sizeof(float));
}

/* Word mode predicts at every step; sentence mode from a question's end to the next token, which
 * is exactly while the answer slot is open. */
bool fwm__stm_has_prediction(const struct fwm_session *session) {
    const fwm_stm_model *sm = fwm__stm_of(session->model);
    return !sm->sentence || session->words[FWM_STM_WORD_SLOT(sm)] != 0;
}

/* Close an open answer slot (sentence mode) without reading an answer. */
bool fwm__stm_skip_answer(struct fwm_session *session) {
    const fwm_stm_model *sm = fwm__stm_of(session->model);
    if (!sm->sentence || !session->words[FWM_STM_WORD_SLOT(sm)]) return false;
    session->words[FWM_STM_WORD_SLOT(sm)] = 0;
    return true;
}
