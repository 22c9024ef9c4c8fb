/* mnm_schema.h - the `mnm` schema on top of the GGUF container: parse and validate a whole MNM
 * model file held in memory (every key of FWM_MNM_HPARAM_LIST with its type and range, the
 * vocabulary and prime tokens under the FWM's rules, every tensor of fwm__mnm_tensor_at with its
 * type and shape), its tensor-data checksum and its FWMFP2 fingerprint (docs/FORMAT.md).
 * Messages are the FWM schema's (schema_common.h). Internal to libfwm and its tools.
 */
#ifndef FWM_MODEL_FORMAT_MNM_SCHEMA_H
#define FWM_MODEL_FORMAT_MNM_SCHEMA_H

#include <stddef.h>
#include <stdint.h>

#include "fwm_schema.h"
#include "mnm/mnm_hparams.h"

typedef struct fwm_mnm_schema {
    fwm_mnm_hparams hp;
    fwm__schema_head head; /* name, vocabulary, prime tokens, checksum and fingerprint keys */
    size_t tensor_count;     /* fwm__mnm_tensor_count(&hp) */
    fwm_schema_tensor tensors[FWM_MNM_MAX_TENSORS]; /* in fwm__mnm_tensor_at order */
} fwm_mnm_schema;

/* As fwm__schema_parse, for `general.architecture = "mnm"`. */
fwm_status fwm__mnm_schema_parse(const void *buf, size_t size, fwm_mnm_schema *out, fwm_error *err);

/* Release what fwm__mnm_schema_parse allocated; idempotent; NULL is a no-op. */
void fwm__mnm_schema_release(fwm_mnm_schema *schema);

/* XXH64 (seed 0) over the tensor data as stored, in list order. */
uint64_t fwm__mnm_schema_checksum(const fwm_mnm_schema *schema);

/* FWMFP2 (docs/FORMAT.md): "FWMFP2", the architecture name, every hparam of the list, the
 * vocabulary, the checksum. */
uint64_t fwm__mnm_fingerprint(const fwm_mnm_hparams *hp, const char *const *tokens,
                              const uint32_t *token_lengths, uint64_t checksum);

/* Whether tensor i of the list is a matrix (two GGUF dims) or a vector (the biases: one), by its
 * declaration, whatever its sizes. */
int fwm__mnm_tensor_is_matrix(const fwm_mnm_hparams *hp, size_t i);

/* fwm__mnm_hparams_valid with the reader's (FWM_ERR_FORMAT) or the writer's status. */
fwm_status fwm__mnm_hparams_check(const fwm_mnm_hparams *hp, fwm_status failure, fwm_error *err);

#endif
