/* gfw_schema.h - the `gfw` schema on top of the GGUF container: parse and validate a whole Gated
 * Fast Weights model file held in memory (every key of FWM_GFW_HPARAM_LIST with its type and range,
 * the vocabulary and prime tokens under the FWM's rules, every tensor of fwm__gfw_tensor_at with its
 * type and shape), its tensor-data checksum and its FWMFP2 fingerprint (docs/FORMAT.md).
 * Messages are the FWM schema's (schema_common.h). Internal to libfwm and its tools.
 */
#ifndef FWM_MODEL_FORMAT_GFW_SCHEMA_H
#define FWM_MODEL_FORMAT_GFW_SCHEMA_H

#include <stddef.h>
#include <stdint.h>

#include "fwm_schema.h"
#include "gfw/gfw_hparams.h"

typedef struct fwm_gfw_schema {
    fwm_gfw_hparams hp;
    fwm__schema_head head; /* name, vocabulary, prime tokens, checksum and fingerprint keys */
    size_t tensor_count;     /* fwm__gfw_tensor_count(&hp) */
    fwm_schema_tensor tensors[FWM_GFW_MAX_TENSORS]; /* in fwm__gfw_tensor_at order */
} fwm_gfw_schema;

/* As fwm__schema_parse, for `general.architecture = "gfw"`. */
fwm_status fwm__gfw_schema_parse(const void *buf, size_t size, fwm_gfw_schema *out, fwm_error *err);

/* Release what fwm__gfw_schema_parse allocated; idempotent; NULL is a no-op. */
void fwm__gfw_schema_release(fwm_gfw_schema *schema);

/* XXH64 (seed 0) over the tensor data as stored, in list order. */
uint64_t fwm__gfw_schema_checksum(const fwm_gfw_schema *schema);

/* FWMFP2 (docs/FORMAT.md): "FWMFP2", the architecture name, every hparam of the list, the
 * vocabulary, the checksum. */
uint64_t fwm__gfw_fingerprint(const fwm_gfw_hparams *hp, const char *const *tokens,
                             const uint32_t *token_lengths, uint64_t checksum);

/* Whether tensor i of the list is a matrix (two GGUF dims: the embedding, W_1, W_2, W_o) or a
 * vector (the biases: one), by its declaration, whatever its sizes. */
int fwm__gfw_tensor_is_matrix(const fwm_gfw_hparams *hp, size_t i);

/* fwm__gfw_hparams_valid with the reader's (FWM_ERR_FORMAT) or the writer's status. */
fwm_status fwm__gfw_hparams_check(const fwm_gfw_hparams *hp, fwm_status failure, fwm_error *err);

#endif
