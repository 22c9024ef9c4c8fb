/* model_io.h - between the trainer's flat parameters and model files, for every architecture of
 * FWM_ARCH_LIST (one writer case and one reader case, each written once over the list): write a
 * trained model with its vocabulary and provenance keys (fwm__model_write for `fwm`,
 * fwm__lstm_model_write for `lstm`, ...), and read a model file back into the flat layout for
 * evaluation or further training (its architecture's schema; F32, F16 or BF16 tensors, widened to
 * F32). */
#ifndef FWM_TRAIN_MODEL_IO_H
#define FWM_TRAIN_MODEL_IO_H

#include <stddef.h>

#include "fwm_schema.h"
#include "param_layout.h"
#include "vocab.h"

/* An FWM: params flat, in fwm__param_layout order for hp. tokens: V words. extra: provenance
 * keys. The file's session start is <eos> (every training story begins with it).
 * FWM_ERR_IO, FWM_ERR_INVALID_ARGUMENT, FWM_ERR_OUT_OF_MEMORY. */
fwm_status fwm__model_save(const char *path, const fwm_hparams *hp, const float *params,
                           const char *const *tokens, const char *name,
                           const fwm_write_kv *extra, size_t extra_count, fwm_error *err);

/* Any architecture: params flat in fwm__tensor_layout order for `model`; otherwise as above
 * (the writer of its architecture, fwm_<prefix>_model_write: fwm__lstm_model_write for `lstm` and
 * so on, FWM_ARCH_LIST). A parameter that is not finite is refused (FWM_ERR_INVALID_ARGUMENT
 * naming the tensor): nothing is written. */
fwm_status fwm__model_save_spec(const char *path, const fwm__model_spec *model,
                                const float *params, const char *const *tokens, const char *name,
                                const fwm_write_kv *extra, size_t extra_count, fwm_error *err);

typedef struct fwm__loaded_model {
    fwm__model_spec spec;      /* the file's architecture and hyperparameters */
    fwm__tensor_layout layout;
    float *params;     /* owned, flat */
    fwm__train_vocab vocab;  /* the model's words, ids as in the file */
} fwm__loaded_model;

/* FWM_ERR_IO, FWM_ERR_FORMAT, FWM_ERR_UNSUPPORTED (an architecture the trainer does not handle),
 * FWM_ERR_OUT_OF_MEMORY. */
fwm_status fwm__model_read(const char *path, fwm__loaded_model *out, fwm_error *err);
void fwm__loaded_model_release(fwm__loaded_model *model);

#endif
