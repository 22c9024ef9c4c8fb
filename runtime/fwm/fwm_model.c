/* fwm_model.c - the FWM's load (its ops' `load`: validate the file through the FWM's schema, check
 * checksum and fingerprint, bind its tensors, take its vocabulary and prime tokens, build the input-gate
 * table) and its fields of fwm_model_info (its ops' `fill_info`). The loading every architecture
 * shares is runtime/model.c. */
#include <string.h>

#include "fwm_alloc.h"
#include "fwm_error.h"
#include "fwm_model_shape.h"
#include "fwm_ops.h"
#include "fwm_schema.h"
#include "model_internal.h"
#include "schema_common.h"

/* Point model->w (and model->w16) at every tensor of the FWM. The matrices the step multiplies
 * (every weight but the embedding, which is looked up) stay BF16 under fwm.matmul_type "bf16". */
static fwm_status bind_weights(struct fwm_model *model, const fwm_schema *schema, fwm_error *err) {
    const float *pointers[FWM_MAX_TENSORS];
    const uint16_t *pointers16[FWM_MAX_TENSORS];
    bool multiplied[FWM_MAX_TENSORS] = {false};
    multiplied[FWM_TENSOR_lstm_weight_ih] = multiplied[FWM_TENSOR_lstm_weight_hh] = true;
    multiplied[FWM_TENSOR_write_weight] = multiplied[FWM_TENSOR_read_weight] = true;
    multiplied[FWM_TENSOR_out_weight] = multiplied[FWM_TENSOR_output_weight] = true;
    for (unsigned l = 0; l < fwm__lower_blocks(&schema->hp); l++)
        multiplied[FWM_TENSOR_BLOCK(l, FWM_BLOCK_weight_ih)] =
            multiplied[FWM_TENSOR_BLOCK(l, FWM_BLOCK_weight_hh)] = true;
    const int n = fwm__tensor_count(&schema->hp);
    model->bf16_matmul = schema->head.bf16_matmul != 0;
    fwm_status status = fwm__bind_tensors_bf16(model, schema->tensors, (size_t)n, model->bf16_matmul,
                                               multiplied, pointers, pointers16, err);
    if (status != FWM_OK) return status;
#define FWM_BIND_(field, name, rows, cols)                \
    model->w.field = pointers[FWM_TENSOR_##field];        \
    model->w16.field = pointers16[FWM_TENSOR_##field];
    FWM_TENSOR_LIST(FWM_BIND_)
#undef FWM_BIND_
    for (unsigned l = 0; l < fwm__lower_blocks(&schema->hp); l++)
        for (unsigned k = 0; k < FWM_BLOCK_TENSORS; k++) {
            model->w.lower[l][k] = pointers[FWM_TENSOR_BLOCK(l, k)];
            model->w16.lower[l][k] = pointers16[FWM_TENSOR_BLOCK(l, k)];
        }
    return FWM_OK;
}

static fwm_status check_integrity(struct fwm_model *model, const fwm_schema *schema,
                                  const fwm_model_params *params, fwm_error *err) {
    uint64_t checksum = fwm__schema_checksum(schema);
    const fwm__schema_head *head = &schema->head;
    uint64_t fingerprint = fwm__fingerprint_matmul(
        fwm__schema_fingerprint(&schema->hp, (const char *const *)head->tokens, head->token_lengths,
                                checksum),
        head->bf16_matmul);
    return fwm__check_integrity(model, head, checksum, fingerprint, params, err);
}

/* input_gates[x] = W_ih Emb[x] + b for every token (of the lowest layer of a stacked FWM), with
 * the same kernel (and so the same bits) as the step-time path that models without the table
 * take. */
fwm_status fwm__model_prepare(struct fwm_model *model, fwm_error *err) {
    const fwm_hparams *hp = &model->hp;
    /* the layer that reads the embedding: the FWM's LSTM, or a stacked FWM's lowest layer */
    bool stacked = fwm__lower_blocks(hp) > 0;
    const float *w_ih = stacked ? model->w.lower[0][FWM_BLOCK_weight_ih] : model->w.lstm_weight_ih;
    const uint16_t *w_ih16 =
        stacked ? model->w16.lower[0][FWM_BLOCK_weight_ih] : model->w16.lstm_weight_ih;
    const float *bias = stacked ? model->w.lower[0][FWM_BLOCK_bias] : model->w.lstm_bias;
    return fwm__input_gate_table(model->w.token_embd, w_ih, w_ih16, bias, hp->vocab_size,
                                 hp->embedding_length, hp->hidden_size, &model->input_gates, err);
}

void fwm__model_unprepare(struct fwm_model *model) {
    if (!model) return;
    fwm__free(model->input_gates);
    model->input_gates = NULL;
}

/* The FWM's load (its ops' `load`). */
fwm_status fwm__fwm_load(struct fwm_model *model, const void *buf, size_t size,
                         const fwm_model_params *params, fwm_error *err) {
    fwm_schema schema;
    memset(&schema, 0, sizeof schema);
    fwm_status status = fwm__schema_parse(buf, size, &schema, err);
    if (status != FWM_OK) goto done;
    model->hp = schema.hp;
    status = check_integrity(model, &schema, params, err);
    if (status != FWM_OK) goto done;
    model->parameter_count = fwm__parameter_count(&model->hp);
    status = bind_weights(model, &schema, err);
    if (status != FWM_OK) goto done;
    fwm__model_take_strings(model, &schema.head);
    status = fwm__model_prepare(model, err);
done:
    fwm__schema_release(&schema);
    return status;
}

/* The FWM's fields of fwm_model_info (its ops' `fill_info`). */
void fwm__fwm_fill_info(const struct fwm_model *model, fwm_model_info *info) {
    const fwm_hparams *hp = &model->hp;
    info->layer_count = hp->block_count > 1 ? hp->block_count : 1;
    info->memory_s = hp->memory_s;
    info->memory_r = hp->memory_r;
    info->memory_t = hp->memory_t;
    info->read_count = hp->read_count;
    info->read_policy = hp->read_policy == 1 ? FWM_READ_ON_TOKEN : FWM_READ_ALWAYS;
    info->read_token_id = hp->read_token_id;
    info->beta_bias = hp->beta_bias;
    info->write_scale = hp->write_scale;
    info->layer_norm_eps = hp->layer_norm_eps;
}

