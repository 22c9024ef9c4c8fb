/* gfw_model.c - loading a `gfw` model file into a ready-to-step fwm_model (through the GFW schema,
 * model_format/gfw/), its model info, and the layout of its sessions' state. */
#include <string.h>

#include "fwm_alloc.h"
#include "fwm_error.h"
#include "gfw/gfw_schema.h"
#include "gfw_runtime.h"

fwm_status fwm__gfw_load(struct fwm_model *model, const void *buf, size_t size,
                         const fwm_model_params *params, fwm_error *err) {
    fwm_gfw_schema schema;
    fwm_status status = fwm__gfw_schema_parse(buf, size, &schema, err);
    if (status != FWM_OK) return status;
    fwm_gfw_model *gm = fwm__calloc(1, sizeof *gm);
    if (!gm) {
        status = fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "out of memory allocating a GFW model");
        goto done;
    }
    model->arch_data = gm;
    gm->hp = schema.hp;
    gm->f2_offset = fwm__aligned_floats((size_t)(schema.hp.fast_hidden * fwm__gfw_f1_cols(&schema.hp)));
    model->hp.vocab_size = schema.hp.vocab_size;
    model->hp.embedding_length = schema.hp.embedding_length;
    model->hp.hidden_size = schema.hp.fast_hidden;
    model->hp.padding_token_id = schema.hp.padding_token_id;
    model->hp.eos_token_id = schema.hp.eos_token_id;

    uint64_t checksum = fwm__gfw_schema_checksum(&schema);
    uint64_t fingerprint = fwm__gfw_fingerprint(&schema.hp, (const char *const *)schema.head.tokens,
                                               schema.head.token_lengths, checksum);
    status = fwm__check_integrity(model, &schema.head, checksum, fingerprint, params, err);
    if (status != FWM_OK) goto done;
    model->parameter_count = fwm__gfw_parameter_count(&schema.hp);
    const float *pointers[FWM_GFW_MAX_TENSORS];
    status = fwm__bind_tensors(model, schema.tensors, schema.tensor_count, pointers, err);
    if (status != FWM_OK) goto done;
    gm->token_embd = pointers[0];
    gm->slow0_weight = pointers[1];
    gm->slow0_bias = pointers[2];
    gm->slow1_weight = pointers[3];
    gm->slow1_bias = pointers[4];
    gm->output_weight = pointers[5];
    gm->output_bias = pointers[6];
    fwm__model_take_strings(model, &schema.head);
done:
    fwm__gfw_schema_release(&schema);
    return status;
}

void fwm__gfw_unload(struct fwm_model *model) {
    fwm__free(model->arch_data);
    model->arch_data = NULL;
}

/* One recurrent state of each net; hidden_size (set with the common fields) is the fast net's m,
 * layer_norm_eps the fast net's epsilon. */
void fwm__gfw_fill_info(const struct fwm_model *model, fwm_model_info *info) {
    info->layer_count = 1;
    info->layer_norm_eps = fwm__gfw_of(model)->hp.layer_norm_epsilon;
}

/* The loader bounds m, N (FWM_MAX_DIM) and F1 + F2 (FWM_GFW_MAX_FAST_ELEMENTS), so none of this
 * can overflow. */
size_t fwm__gfw_block_floats(const struct fwm_model *model) {
    const fwm_gfw_model *gm = fwm__gfw_of(model);
    size_t m = gm->hp.fast_hidden;
    return fwm__aligned_floats(m) + fwm__aligned_floats(gm->hp.slow_hidden) + gm->f2_offset +
           fwm__aligned_floats(m * (size_t)fwm__gfw_f2_cols(&gm->hp));
}

/* h_F, h_S, then F1 and F2. */
void fwm__gfw_lay_out(struct fwm_session *session, float *base) {
    const fwm_gfw_model *gm = fwm__gfw_of(session->model);
    session->h = base;
    session->c = base + fwm__aligned_floats(gm->hp.fast_hidden);
    session->F = session->c + fwm__aligned_floats(gm->hp.slow_hidden);
}

size_t fwm__gfw_state_floats(const struct fwm_model *model) {
    return (size_t)fwm__gfw_hparams_state_floats(&fwm__gfw_of(model)->hp);
}
