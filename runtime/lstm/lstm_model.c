/* lstm_model.c - loading an `lstm` model file into a ready-to-step fwm_model (through the LSTM
 * schema, model_format/lstm/), its model info, and the layout of its sessions' state. */
#include <inttypes.h>
#include <string.h>

#include "fwm_alloc.h"
#include "fwm_error.h"
#include "lstm/lstm_schema.h"
#include "lstm_runtime.h"
#include "model_internal.h"
#include "schema_common.h"

static void bind(fwm_lstm_model *lm, const float *const *pointers, const uint16_t *const *p16) {
    size_t L = lm->hp.layer_count;
    lm->token_embd = pointers[0];
    for (size_t l = 0; l < L; l++) {
        lm->weight_ih[l] = pointers[1 + FWM_LSTM_BLOCK_TENSORS * l];
        lm->weight_hh[l] = pointers[2 + FWM_LSTM_BLOCK_TENSORS * l];
        lm->bias[l] = pointers[3 + FWM_LSTM_BLOCK_TENSORS * l];
        lm->weight_ih16[l] = p16[1 + FWM_LSTM_BLOCK_TENSORS * l];
        lm->weight_hh16[l] = p16[2 + FWM_LSTM_BLOCK_TENSORS * l];
    }
    lm->output_weight = pointers[1 + FWM_LSTM_BLOCK_TENSORS * L];
    lm->output_bias = pointers[2 + FWM_LSTM_BLOCK_TENSORS * L];
    lm->output_weight16 = p16[1 + FWM_LSTM_BLOCK_TENSORS * L];
}

fwm_status fwm__lstm_load(struct fwm_model *model, const void *buf, size_t size,
                          const fwm_model_params *params, fwm_error *err) {
    fwm_lstm_schema schema;
    fwm_status status = fwm__lstm_schema_parse(buf, size, &schema, err);
    if (status != FWM_OK) return status;
    fwm_lstm_model *lm = fwm__calloc(1, sizeof *lm);
    if (!lm) {
        status = fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "out of memory allocating an LSTM model");
        goto done;
    }
    model->arch_data = lm;
    lm->hp = schema.hp;
    model->hp.vocab_size = schema.hp.vocab_size;
    model->hp.embedding_length = schema.hp.embedding_length;
    model->hp.hidden_size = schema.hp.hidden_size;
    model->hp.residual = schema.hp.residual;
    model->hp.forget_bias = schema.hp.forget_bias;
    model->hp.padding_token_id = schema.hp.padding_token_id;
    model->hp.eos_token_id = schema.hp.eos_token_id;

    uint64_t checksum = fwm__lstm_schema_checksum(&schema);
    uint64_t fingerprint = fwm__fingerprint_matmul(
        fwm__lstm_fingerprint(&schema.hp, (const char *const *)schema.head.tokens,
                              schema.head.token_lengths, checksum),
        schema.head.bf16_matmul);
    status = fwm__check_integrity(model, &schema.head, checksum, fingerprint, params, err);
    if (status != FWM_OK) goto done;
    model->parameter_count = 0;
    for (size_t i = 0; i < schema.tensor_count; i++)
        model->parameter_count += schema.tensors[i].rows * schema.tensors[i].cols;
    /* the matrices the step multiplies (all but the embedding, looked up) stay BF16 under
     * fwm.matmul_type "bf16" */
    const float *pointers[FWM_LSTM_MAX_TENSORS];
    const uint16_t *pointers16[FWM_LSTM_MAX_TENSORS];
    bool multiplied[FWM_LSTM_MAX_TENSORS] = {false};
    for (size_t l = 0; l < lm->hp.layer_count; l++)
        multiplied[1 + FWM_LSTM_BLOCK_TENSORS * l] = multiplied[2 + FWM_LSTM_BLOCK_TENSORS * l] = true;
    multiplied[1 + FWM_LSTM_BLOCK_TENSORS * lm->hp.layer_count] = true;
    model->bf16_matmul = schema.head.bf16_matmul != 0;
    status = fwm__bind_tensors_bf16(model, schema.tensors, schema.tensor_count, model->bf16_matmul,
                                    multiplied, pointers, pointers16, err);
    if (status != FWM_OK) goto done;
    bind(lm, pointers, pointers16);
    fwm__model_take_strings(model, &schema.head);
    status = fwm__input_gate_table(lm->token_embd, lm->weight_ih[0], lm->weight_ih16[0], lm->bias[0],
                                   lm->hp.vocab_size,
                                   lm->hp.embedding_length, lm->hp.hidden_size, &lm->input_gates, err);
done:
    fwm__lstm_schema_release(&schema);
    return status;
}

void fwm__lstm_unload(struct fwm_model *model) {
    fwm_lstm_model *lm = model->arch_data;
    if (!lm) return;
    fwm__free(lm->input_gates);
    fwm__free(lm);
    model->arch_data = NULL;
}

void fwm__lstm_fill_info(const struct fwm_model *model, fwm_model_info *info) {
    info->layer_count = fwm__lstm_of(model)->hp.layer_count;
}

/* L*H floats, padded (the loader bounds L and H, so this cannot overflow). */
static size_t layer_block(const struct fwm_model *model) {
    const fwm_lstm_hparams *hp = &fwm__lstm_of(model)->hp;
    return fwm__aligned_floats((size_t)hp->layer_count * hp->hidden_size);
}

size_t fwm__lstm_block_floats(const struct fwm_model *model) { return 2 * layer_block(model); }

void fwm__lstm_lay_out(struct fwm_session *session, float *base) {
    session->h = base;
    session->c = base + layer_block(session->model);
}

size_t fwm__lstm_state_floats(const struct fwm_model *model) {
    const fwm_lstm_hparams *hp = &fwm__lstm_of(model)->hp;
    return 2 * (size_t)hp->layer_count * hp->hidden_size;
}
