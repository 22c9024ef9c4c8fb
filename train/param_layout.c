/* param_layout.c - offsets of the weight tensors in the trainer's flat buffers; architectures by name
 * (see param_layout.h). */
#include "param_layout.h"

#include <stdio.h>
#include <string.h>

const char *const fwm__tensor_names[FWM_TENSOR_COUNT] = {
#define NAME_(field, name, rows, cols) name,
    FWM_TENSOR_LIST(NAME_)
#undef NAME_
};

void fwm__param_layout_init(fwm__param_layout *layout, const fwm_hparams *hp)
{
    size_t offset = 0, count = 0;
    int index = 0;
#define SHAPE_(field, name, r, c)                                                                  \
    layout->rows[index] = (size_t)(r);                                                             \
    layout->cols[index] = (size_t)(c);                                                             \
    layout->size[index] = layout->rows[index] * layout->cols[index];                               \
    layout->offset[index] = offset;                                                                \
    offset += (layout->size[index] + 15) / 16 * 16;                                                \
    count += layout->size[index];                                                                  \
    index++;
    FWM_TENSOR_LIST(SHAPE_)
#undef SHAPE_
    layout->total = offset;
    layout->parameter_count = count;
}

int fwm__train_arch_parse(const char *name, fwm_arch *out)
{
    for (int a = 0; a < FWM_ARCH_COUNT; a++) {
        if (strcmp(name, fwm__arch_name((fwm_arch)a)) == 0) {
            *out = (fwm_arch)a;
            return 0;
        }
    }
    return -1;
}

const char *fwm__train_arch_name(fwm_arch arch)
{
    const char *name = fwm__arch_name(arch);
    return name ? name : "?";
}

uint32_t fwm__spec_vocab_size(const fwm__model_spec *spec)
{
    return spec->arch == FWM_ARCH_LSTM   ? spec->lstm.vocab_size
           : spec->arch == FWM_ARCH_MNM ? spec->mnm.vocab_size
           : spec->arch == FWM_ARCH_GFW ? spec->gfw.vocab_size
           : spec->arch == FWM_ARCH_STM ? spec->stm.vocab_size
                                         : spec->fwm.vocab_size;
}

uint32_t fwm__spec_pad_id(const fwm__model_spec *spec)
{
    return spec->arch == FWM_ARCH_LSTM   ? spec->lstm.padding_token_id
           : spec->arch == FWM_ARCH_MNM ? spec->mnm.padding_token_id
           : spec->arch == FWM_ARCH_GFW ? spec->gfw.padding_token_id
           : spec->arch == FWM_ARCH_STM ? spec->stm.padding_token_id
                                         : spec->fwm.padding_token_id;
}

uint32_t fwm__spec_eos_id(const fwm__model_spec *spec)
{
    return spec->arch == FWM_ARCH_LSTM   ? spec->lstm.eos_token_id
           : spec->arch == FWM_ARCH_MNM ? spec->mnm.eos_token_id
           : spec->arch == FWM_ARCH_GFW ? spec->gfw.eos_token_id
           : spec->arch == FWM_ARCH_STM ? spec->stm.eos_token_id
                                         : spec->fwm.eos_token_id;
}

/* Offsets, sizes and totals from the rows and columns (the rule of fwm__param_layout_init). */
static void layout_finish(fwm__tensor_layout *layout)
{
    size_t offset = 0;
    for (size_t i = 0; i < layout->count; i++) {
        layout->size[i] = layout->rows[i] * layout->cols[i];
        layout->offset[i] = offset;
        offset += (layout->size[i] + 15) / 16 * 16;
        layout->parameter_count += layout->size[i];
    }
    layout->total = offset;
}

void fwm__mnm_tensor_layout_init(fwm__tensor_layout *layout, const fwm_mnm_hparams *hp)
{
    memset(layout, 0, sizeof *layout);
    layout->count = fwm_mnm_tensor_count(hp);
    for (size_t i = 0; i < layout->count; i++) {
        uint64_t rows, cols;
        fwm_mnm_tensor_at(hp, i, layout->names[i], &rows, &cols);
        layout->rows[i] = (size_t)rows;
        layout->cols[i] = (size_t)cols;
    }
    layout_finish(layout);
}

void fwm__gfw_tensor_layout_init(fwm__tensor_layout *layout, const fwm_gfw_hparams *hp)
{
    memset(layout, 0, sizeof *layout);
    layout->count = fwm_gfw_tensor_count(hp);
    for (size_t i = 0; i < layout->count; i++) {
        uint64_t rows, cols;
        fwm_gfw_tensor_at(hp, i, layout->names[i], &rows, &cols);
        layout->rows[i] = (size_t)rows;
        layout->cols[i] = (size_t)cols;
    }
    layout_finish(layout);
}

void fwm__stm_tensor_layout_init(fwm__tensor_layout *layout, const fwm_stm_hparams *hp)
{
    memset(layout, 0, sizeof *layout);
    layout->count = fwm_stm_tensor_count(hp);
    for (size_t i = 0; i < layout->count; i++) {
        uint64_t rows, cols;
        fwm_stm_tensor_at(hp, i, layout->names[i], &rows, &cols);
        layout->rows[i] = (size_t)rows;
        layout->cols[i] = (size_t)cols;
    }
    layout_finish(layout);
}

void fwm__tensor_layout_init(fwm__tensor_layout *layout, const fwm__model_spec *spec)
{
    if (spec->arch == FWM_ARCH_STM) {
        fwm__stm_tensor_layout_init(layout, &spec->stm);
        return;
    }
    if (spec->arch == FWM_ARCH_MNM) {
        fwm__mnm_tensor_layout_init(layout, &spec->mnm);
        return;
    }
    if (spec->arch == FWM_ARCH_GFW) {
        fwm__gfw_tensor_layout_init(layout, &spec->gfw);
        return;
    }
    memset(layout, 0, sizeof *layout);
    if (spec->arch == FWM_ARCH_LSTM) {
        layout->count = fwm_lstm_tensor_count(&spec->lstm);
        for (size_t i = 0; i < layout->count; i++) {
            uint64_t rows, cols;
            fwm_lstm_tensor_at(&spec->lstm, i, layout->names[i], &rows, &cols);
            layout->rows[i] = (size_t)rows;
            layout->cols[i] = (size_t)cols;
        }
    } else {
        fwm__param_layout fwm;
        fwm__param_layout_init(&fwm, &spec->fwm);
        layout->count = FWM_TENSOR_COUNT;
        for (size_t i = 0; i < layout->count; i++) {
            snprintf(layout->names[i], sizeof layout->names[i], "%s", fwm__tensor_names[i]);
            layout->rows[i] = fwm.rows[i];
            layout->cols[i] = fwm.cols[i];
        }
    }
    layout_finish(layout);
}
