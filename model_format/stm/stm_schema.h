/* stm_schema.h - the `stm` schema on top of the GGUF container: parse and validate a whole STM
 * model file held in memory (every key of FWM_STM_HPARAM_LIST with its type and range, the
 * vocabulary and prime tokens under the FWM's rules, every tensor of fwm__stm_tensor_at for the
 * file's input mode with its type and shape), its tensor-data checksum and its FWMFP2 fingerprint
 * (docs/FORMAT.md). Messages are the FWM schema's (schema_common.h). Internal to libfwm and its
 * tools.
 */
#ifndef FWM_MODEL_FORMAT_STM_SCHEMA_H
#define FWM_MODEL_FORMAT_STM_SCHEMA_H

#include <stddef.h>
#include <stdint.h>

#include "fwm_schema.h"
#include "stm/stm_hparams.h"

typedef struct fwm_stm_schema {
    fwm_stm_hparams hp;
    fwm__schema_head head; /* name, vocabulary, prime tokens, checksum and fingerprint keys */
    size_t tensor_count;     /* fwm__stm_tensor_count(&hp) */
    fwm_schema_tensor tensors[FWM_STM_MAX_TENSORS]; /* in fwm__stm_tensor_at order */
} fwm_stm_schema;

/* As fwm__schema_parse, for `general.architecture = "stm"`. */
fwm_status fwm__stm_schema_parse(const void *buf, size_t size, fwm_stm_schema *out, fwm_error *err);

/* Release what fwm__stm_schema_parse allocated; idempotent; NULL is a no-op. */
void fwm__stm_schema_release(fwm_stm_schema *schema);

/* XXH64 (seed 0) over the tensor data as stored, in list order. */
uint64_t fwm__stm_schema_checksum(const fwm_stm_schema *schema);

/* FWMFP2 (docs/FORMAT.md): "FWMFP2", the architecture name, every hparam of the list (bool as a
 * u32 0/1, f32 as its bits), the vocabulary, the checksum. */
uint64_t fwm__stm_fingerprint(const fwm_stm_hparams *hp, const char *const *tokens,
                             const uint32_t *token_lengths, uint64_t checksum);

/* Whether tensor i of the list is a matrix (two GGUF dims) or a vector (one), by its declaration,
 * whatever its sizes. */
int fwm__stm_tensor_is_matrix(const fwm_stm_hparams *hp, size_t i);

/* fwm__stm_hparams_valid with the reader's (FWM_ERR_FORMAT) or the writer's status. */
fwm_status fwm__stm_hparams_check(const fwm_stm_hparams *hp, fwm_status failure, fwm_error *err);

#endif
