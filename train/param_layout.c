/* param_layout.c - offsets of the weight tensors in the trainer's flat buffers. */
#include "param_layout.h"

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
