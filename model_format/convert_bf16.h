/* convert_bf16.h - a model file's BF16 twin (fwm-convert --weights bf16): the same keys, tensors
 * and shapes, with the matrices the runtime multiplies (every matrix but token_embd.weight) stored
 * as BF16, rounded to nearest even, and fwm.matmul_type = "bf16" (docs/FORMAT.md, section 4), its
 * own checksum and fingerprint. For the `fwm` and `lstm` architectures. Internal to libfwm and its
 * tools.
 */
#ifndef FWM_MODEL_FORMAT_CONVERT_BF16_H
#define FWM_MODEL_FORMAT_CONVERT_BF16_H

#include <stddef.h>
#include <stdint.h>

#include "fwm/fwm.h"

/* Which matrices to convert: every eligible one (`only` NULL), or those named in only[0..n_only),
 * each of which must be an eligible matrix of the model. */
typedef struct fwm_bf16_convert_options {
    const char *const *only;
    size_t n_only;
} fwm_bf16_convert_options;

/* The twin of the model file in[0..size) into *out (owned, fwm__free) and *out_size; *converted
 * counts the tensors stored as BF16 (F16 and BF16 inputs are widened exactly, then rounded; a
 * tensor already BF16 keeps its bytes). Refuses with a message naming the problem: a file the
 * schema refuses (its status), an architecture other than fwm or lstm and an input whose
 * fwm.matmul_type is already "bf16" (FWM_ERR_UNSUPPORTED), a weight that is not finite or that
 * overflows BF16, a name in `only` that is not an eligible matrix (FWM_ERR_INVALID_ARGUMENT),
 * FWM_ERR_OUT_OF_MEMORY. The input's checksum and fingerprint are not verified here (the tool
 * loads it first). */
fwm_status fwm__convert_bf16(const void *in, size_t size, const fwm_bf16_convert_options *options,
                             uint8_t **out, size_t *out_size, size_t *converted, fwm_error *err);

#endif
