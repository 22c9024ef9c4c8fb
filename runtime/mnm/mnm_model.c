/* mnm_model.c - loading an `mnm` model file into a ready-to-step fwm_model (through the MNM
 * schema, model_format/mnm/), its model info, the layout of its sessions' state and their reset
 * state (the fixed initial memory). */
#include <inttypes.h>
#include <string.h>

#include "fwm_alloc.h"
#include "fwm_error.h"
#include "mnm/mnm_schema.h"
#include "mnm_runtime.h"

static void bind(fwm_mnm_model *mm, const float *const *pointers) {
    size_t L = mm->hp.memory_layers, tail = FWM_MNM_HEAD_TENSORS + L;
    mm->token_embd = pointers[0];
    /* pointers[1], W_ih, is split into weight_ie and weight_ir by the loader */
    mm->weight_hh = pointers[2];
    mm->bias = pointers[3];
    mm->interact_weight = pointers[4];
    mm->interact_bias = pointers[5];
    mm->rate_weight = pointers[6];
    mm->rate_bias = pointers[7];
    mm->target_weight = pointers[8];
    mm->target_bias = pointers[9];
    for (size_t l = 0; l < L; l++) mm->memory_init[l] = pointers[FWM_MNM_HEAD_TENSORS + l];
    mm->out_weight = pointers[tail];
    mm->out_bias = pointers[tail + 1];
    mm->output_weight = pointers[tail + 2];
    mm->output_bias = pointers[tail + 3];
    size_t at = 0;
    for (uint32_t l = 0; l < L; l++) {
        uint64_t rows, cols;
        fwm__mnm_memory_shape(&mm->hp, l, &rows, &cols);
        mm->memory_offset[l] = at;
        at += (size_t)(rows * cols);
    }
    mm->memory_offset[L] = at;
}

/* W_ih [4H, E + d_v] into its embedding columns [4H, E] and its read-out columns [4H, d_v]. */
static fwm_status split_input_weight(fwm_mnm_model *mm, const float *w_ih, fwm_error *err) {
    size_t G = 4 * (size_t)mm->hp.hidden_size, E = mm->hp.embedding_length, dv = mm->hp.value_length;
    mm->weight_ie = fwm__aligned_alloc(64, G * E * sizeof(float));
    mm->weight_ir = fwm__aligned_alloc(64, G * dv * sizeof(float));
    if (!mm->weight_ie || !mm->weight_ir)
        return fwm__error(err, FWM_ERR_OUT_OF_MEMORY,
                          "out of memory splitting lstm.weight_ih (%zu bytes)", G * (E + dv) * sizeof(float));
    for (size_t g = 0; g < G; g++) {
        memcpy(mm->weight_ie + g * E, w_ih + g * (E + dv), E * sizeof(float));
        memcpy(mm->weight_ir + g * dv, w_ih + g * (E + dv) + E, dv * sizeof(float));
    }
    return FWM_OK;
}

fwm_status fwm__mnm_load(struct fwm_model *model, const void *buf, size_t size,
                         const fwm_model_params *params, fwm_error *err) {
    fwm_mnm_schema schema;
    fwm_status status = fwm__mnm_schema_parse(buf, size, &schema, err);
    if (status != FWM_OK) return status;
    fwm_mnm_model *mm = fwm__calloc(1, sizeof *mm);
    if (!mm) {
        status = fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "out of memory allocating an MNM model");
        goto done;
    }
    model->arch_data = mm;
    mm->hp = schema.hp;
    model->hp.vocab_size = schema.hp.vocab_size;
    model->hp.embedding_length = schema.hp.embedding_length;
    model->hp.hidden_size = schema.hp.hidden_size;
    model->hp.forget_bias = schema.hp.forget_bias;
    model->hp.padding_token_id = schema.hp.padding_token_id;
    model->hp.eos_token_id = schema.hp.eos_token_id;

    uint64_t checksum = fwm__mnm_schema_checksum(&schema);
    uint64_t fingerprint = fwm__mnm_fingerprint(&schema.hp, (const char *const *)schema.head.tokens,
                                               schema.head.token_lengths, checksum);
    status = fwm__check_integrity(model, &schema.head, checksum, fingerprint, params, err);
    if (status != FWM_OK) goto done;
    model->parameter_count = 0;
    for (size_t i = 0; i < schema.tensor_count; i++)
        model->parameter_count += schema.tensors[i].rows * schema.tensors[i].cols;
    const float *pointers[FWM_MNM_MAX_TENSORS];
    status = fwm__bind_tensors(model, schema.tensors, schema.tensor_count, pointers, err);
    if (status != FWM_OK) goto done;
    bind(mm, pointers);
    status = split_input_weight(mm, pointers[1], err);
    if (status != FWM_OK) goto done;
    fwm__model_take_strings(model, &schema.head);
    status = fwm__input_gate_table(mm->token_embd, mm->weight_ie, NULL, mm->bias, mm->hp.vocab_size,
                                   mm->hp.embedding_length, mm->hp.hidden_size, &mm->input_gates, err);
done:
    fwm__mnm_schema_release(&schema);
    return status;
}

void fwm__mnm_unload(struct fwm_model *model) {
    fwm_mnm_model *mm = model->arch_data;
    if (!mm) return;
    fwm__free(mm->input_gates);
    fwm__free(mm->weight_ie);
    fwm__free(mm->weight_ir);
    fwm__free(mm);
    model->arch_data = NULL;
}

/* One recurrent layer (the controller); the memory's sizes are not part of fwm_model_info. */
void fwm__mnm_fill_info(const struct fwm_model *model, fwm_model_info *info) {
    (void)model;
    info->layer_count = 1;
}

/* The loader bounds H, d_v (FWM_MAX_DIM) and the memory (FWM_MNM_MAX_MEMORY_ELEMENTS), so none
 * of this can overflow. */
size_t fwm__mnm_block_floats(const struct fwm_model *model) {
    const fwm_mnm_model *mm = fwm__mnm_of(model);
    return 2 * fwm__aligned_floats(mm->hp.hidden_size) + fwm__aligned_floats(mm->hp.value_length) +
           fwm__aligned_floats(mm->memory_offset[mm->hp.memory_layers]);
}

/* h, c, r, then the memory. */
void fwm__mnm_lay_out(struct fwm_session *session, float *base) {
    const fwm_mnm_model *mm = fwm__mnm_of(session->model);
    session->h = base;
    session->c = base + fwm__aligned_floats(mm->hp.hidden_size);
    session->r = session->c + fwm__aligned_floats(mm->hp.hidden_size);
    session->F = session->r + fwm__aligned_floats(mm->hp.value_length);
}

size_t fwm__mnm_state_floats(const struct fwm_model *model) {
    return (size_t)fwm__mnm_hparams_state_floats(&fwm__mnm_of(model)->hp);
}

/* h, c and r are zero already; every M^l becomes the model's mnm.memory.N.init. */
void fwm__mnm_reset_state(struct fwm_session *session) {
    const fwm_mnm_model *mm = fwm__mnm_of(session->model);
    for (uint32_t l = 0; l < mm->hp.memory_layers; l++)
        memcpy(session->F + mm->memory_offset[l], mm->memory_init[l],
               (mm->memory_offset[l + 1] - mm->memory_offset[l]) * sizeof(float));
}
