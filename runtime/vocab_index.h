/* vocab_index.h - the hash index from word to token id built at load. Internal. */
#ifndef FWM_RUNTIME_VOCAB_INDEX_H
#define FWM_RUNTIME_VOCAB_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "model_internal.h"

/* Build model->vocab_index over model->tokens. FWM_ERR_OUT_OF_MEMORY. */
fwm_status fwm__vocab_index_build(struct fwm_model *model, fwm_error *err);

/* Find `word` (length bytes). With fold_case, ASCII upper-case letters of `word` match lower-case
 * letters of the vocabulary. Returns true and sets *id when found. */
bool fwm__vocab_find(const struct fwm_model *model, const char *word, size_t length, bool fold_case,
                     uint32_t *id);

#endif
