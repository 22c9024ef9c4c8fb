/* param_layout.c - offsets of the weight tensors in the trainer's flat buffers; architectures by name
 * (see param_layout.h). */
#include "param_layout.h"

#include <stdio.h>
#include <string.h>

#include "fwm_model_shape.h"

const char *const fwm__tensor_names[FWM_TENSOR_COUNT] = {
#define NAME_(field, name, rows, cols) name,
    FWM_TENSOR_LIST(NAME_)
#undef NAME_
};

void fwm__param_layout_init(fwm__param_layout *layout, const fwm_hparams *hp)
{
    size_t offset = 0, count = 0;
    layout->count = (size_t)fwm__tensor_count(hp);
    for (size_t index = 0; index < layout->count; index++) { /* the format's shapes, list order */
        uint64_t r, c;
        fwm__tensor_shape(hp, (int)index, &r, &c, NULL);
        layout->rows[index] = (size_t)r;
        layout->cols[index] = (size_t)c;
        layout->size[index] = layout->rows[index] * layout->cols[index];
        layout->offset[index] = offset;
        offset += (layout->size[index] + 15) / 16 * 16;
        count += layout->size[index];
    }
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

/* One case per architecture of FWM_ARCH_LIST: every architecture's hyperparameters (the spec's
 * member named by its prefix) have these ids under the same names. */
#define SPEC_FIELD_(id, str, prefix)                                                               \
    case FWM_ARCH_##id:                                                                            \
        return spec->prefix.FIELD;

uint32_t fwm__spec_vocab_size(const fwm__model_spec *spec)
{
#define FIELD vocab_size
    switch (spec->arch) { FWM_ARCH_LIST(SPEC_FIELD_) default: return 0; }
#undef FIELD
}

uint32_t fwm__spec_pad_id(const fwm__model_spec *spec)
{
#define FIELD padding_token_id
    switch (spec->arch) { FWM_ARCH_LIST(SPEC_FIELD_) default: return 0; }
#undef FIELD
}

uint32_t fwm__spec_eos_id(const fwm__model_spec *spec)
{
#define FIELD eos_token_id
    switch (spec->arch) { FWM_ARCH_LIST(SPEC_FIELD_) default: return 0; }
#undef FIELD
}
#undef SPEC_FIELD_

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

/* The FWM's tensor list in the form the format gives the other architectures (fwm_<prefix>_
 * tensor_count and fwm_<prefix>_tensor_at, with the FWM's prefix `fwm`: these names are what the
 * FWM_ARCH_LIST case below expands to; they are local), from the trainer's own list
 * (FWM_TENSOR_LIST). Each call computes the whole layout, some twenty tensors' shapes: the layout
 * is built once per model. */
static size_t fwm__fwm_tensor_count(const fwm_hparams *hp)
{
    return (size_t)fwm__tensor_count(hp);
}

static void fwm__fwm_tensor_at(const fwm_hparams *hp, size_t i, char name[48], uint64_t *rows,
                              uint64_t *cols)
{
    fwm__param_layout fwm;
    fwm__param_layout_init(&fwm, hp);
    snprintf(name, 48, "%s", fwm__tensor_name((int)i));
    *rows = fwm.rows[i];
    *cols = fwm.cols[i];
}

void fwm__tensor_layout_init(fwm__tensor_layout *layout, const fwm__model_spec *spec)
{
    memset(layout, 0, sizeof *layout);
    switch (spec->arch) {
#define LAYOUT_CASE_(id, str, prefix)                                                              \
    case FWM_ARCH_##id:                                                                            \
        layout->count = fwm__##prefix##_tensor_count(&spec->prefix);                                \
        for (size_t i = 0; i < layout->count; i++) {                                               \
            uint64_t rows, cols;                                                                   \
            fwm__##prefix##_tensor_at(&spec->prefix, i, layout->names[i], &rows, &cols);            \
            layout->rows[i] = (size_t)rows;                                                        \
            layout->cols[i] = (size_t)cols;                                                        \
        }                                                                                          \
        break;
        FWM_ARCH_LIST(LAYOUT_CASE_)
#undef LAYOUT_CASE_
    default:
        break;
    }
    layout_finish(layout);
}
