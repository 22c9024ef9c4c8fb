/* param_layout.h - where each weight tensor lives in the trainer's flat parameter buffer.
 *
 * The trainer keeps parameters, gradients and both Adam moments in one flat buffer each (llm.c
 * style); this layout, generated from FWM_TENSOR_LIST, gives every tensor's offset and shape in
 * those buffers. Tensors start at multiples of 16 elements (64-byte aligned in float); the gaps are
 * zero and stay zero.
 */
#ifndef FWM_TRAIN_PARAM_LAYOUT_H
#define FWM_TRAIN_PARAM_LAYOUT_H

#include <stddef.h>

#include "fwm_hparams.h"

typedef struct fwm__param_layout {
    size_t rows[FWM_TENSOR_COUNT];   /* as FWM_TENSOR_LIST (cols = 1 for vectors) */
    size_t cols[FWM_TENSOR_COUNT];
    size_t offset[FWM_TENSOR_COUNT]; /* element offset in the flat buffer */
    size_t size[FWM_TENSOR_COUNT];   /* rows * cols */
    size_t total;                    /* elements in the flat buffer, gaps included */
    size_t parameter_count;          /* sum of size[] */
} fwm__param_layout;

/* Names of the tensors as in the model file ("lstm.weight_hh"), FWM_TENSOR_LIST order. */
extern const char *const fwm__tensor_names[FWM_TENSOR_COUNT];

void fwm__param_layout_init(fwm__param_layout *layout, const fwm_hparams *hp);

#endif
