/* param_layout.h - where each weight tensor lives in the trainer's flat parameter buffer, and which
 * architecture a trainer's model is.
 *
 * The trainer keeps parameters, gradients and both Adam moments in one flat buffer each (llm.c
 * style); a layout gives every tensor's offset and shape in those buffers. Tensors start at
 * multiples of 16 elements (64-byte aligned in float); the gaps are zero and stay zero.
 * fwm__param_layout is the FWM's (generated from FWM_TENSOR_LIST, indexed by FWM_TENSOR_*);
 * fwm__tensor_layout is the same rule over any architecture's tensor list (for the FWM it gives the
 * same offsets), for the code that works for every architecture (model files, checkpoints).
 */
#ifndef FWM_TRAIN_PARAM_LAYOUT_H
#define FWM_TRAIN_PARAM_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "arch_list.h"
#include "fwm_hparams.h"
#include "gfw/gfw_hparams.h"
#include "lstm/lstm_hparams.h"
#include "mnm/mnm_hparams.h"
#include "stm/stm_hparams.h"

typedef struct fwm__param_layout {
    size_t count;                    /* fwm__tensor_count(hp): the list's, then a stacked FWM's
                                        lower layers' (FWM_TENSOR_BLOCK(l, k)) */
    size_t rows[FWM_MAX_TENSORS];    /* as FWM_TENSOR_LIST (cols = 1 for vectors) */
    size_t cols[FWM_MAX_TENSORS];
    size_t offset[FWM_MAX_TENSORS];  /* element offset in the flat buffer */
    size_t size[FWM_MAX_TENSORS];    /* rows * cols */
    size_t total;                    /* elements in the flat buffer, gaps included */
    size_t parameter_count;          /* sum of size[] */
} fwm__param_layout;

/* Names of the tensors as in the model file ("lstm.weight_hh"), FWM_TENSOR_LIST order. */
extern const char *const fwm__tensor_names[FWM_TENSOR_COUNT];

void fwm__param_layout_init(fwm__param_layout *layout, const fwm_hparams *hp);

/* ---- architectures ------------------------------------------------------------------------- */

/* The architectures (fwm_arch, FWM_ARCH_FWM = 0, FWM_ARCH_LSTM = 1, FWM_ARCH_MNM = 2,
 * FWM_ARCH_GFW = 3, FWM_ARCH_STM = 4: the registry of model_format/arch_list.h, whose values checkpoints store) by
 * name: 0 and *out set when `name` is one the trainer trains, else -1. */
int fwm__train_arch_parse(const char *name, fwm_arch *out);

/* A model as the trainer sees it: its architecture and that architecture's hyperparameters (the
 * member named by its prefix in FWM_ARCH_LIST; the other members are never read, whatever they
 * hold: the trainer fills them all from its options). */
typedef struct fwm__model_spec {
    fwm_arch arch;
    fwm_hparams fwm;        /* arch FWM */
    fwm_lstm_hparams lstm;  /* arch LSTM */
    fwm_mnm_hparams mnm;    /* arch MNM */
    fwm_gfw_hparams gfw;    /* arch GFW */
    fwm_stm_hparams stm;    /* arch STM */
} fwm__model_spec;

/* "fwm", "lstm", "mnm", "gfw", "stm": the name of an architecture the trainer trains ("?" for others). */
const char *fwm__train_arch_name(fwm_arch arch);

/* Ids every architecture has. */
uint32_t fwm__spec_vocab_size(const fwm__model_spec *spec);
uint32_t fwm__spec_pad_id(const fwm__model_spec *spec);
uint32_t fwm__spec_eos_id(const fwm__model_spec *spec);

/* The most tensors any architecture has. */
#define FWM__MAX_TENSORS_2_ \
    (FWM_LSTM_MAX_TENSORS > FWM_MAX_TENSORS ? FWM_LSTM_MAX_TENSORS : FWM_MAX_TENSORS)
#define FWM__MAX_TENSORS_3_ (FWM_MNM_MAX_TENSORS > FWM__MAX_TENSORS_2_ ? FWM_MNM_MAX_TENSORS : FWM__MAX_TENSORS_2_)
#define FWM__MAX_TENSORS_4_ (FWM_GFW_MAX_TENSORS > FWM__MAX_TENSORS_3_ ? FWM_GFW_MAX_TENSORS : FWM__MAX_TENSORS_3_)
#define FWM__MAX_TENSORS (FWM_STM_MAX_TENSORS > FWM__MAX_TENSORS_4_ ? FWM_STM_MAX_TENSORS : FWM__MAX_TENSORS_4_)

typedef struct fwm__tensor_layout {
    size_t count;                        /* tensors, in the architecture's file order */
    char names[FWM__MAX_TENSORS][48];    /* as in the model file */
    size_t rows[FWM__MAX_TENSORS];       /* cols = 1 for vectors */
    size_t cols[FWM__MAX_TENSORS];
    size_t offset[FWM__MAX_TENSORS];     /* element offset in the flat buffer */
    size_t size[FWM__MAX_TENSORS];       /* rows * cols */
    size_t total;                        /* elements in the flat buffer, gaps included */
    size_t parameter_count;              /* sum of size[] */
} fwm__tensor_layout;

void fwm__tensor_layout_init(fwm__tensor_layout *layout, const fwm__model_spec *spec);

#endif
