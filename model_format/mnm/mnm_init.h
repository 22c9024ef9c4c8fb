/* mnm_init.h - random initialisation of the MNM baseline's weights and of its fixed initial memory
 * (docs/MODEL.md, "The Metalearned Neural Memory baseline", Parameters), deterministic for a given
 * seed; used by fwm-init --arch mnm and the trainer. Internal to libfwm and its tools. */
#ifndef FWM_MODEL_FORMAT_MNM_INIT_H
#define FWM_MODEL_FORMAT_MNM_INIT_H

#include <stdint.h>

#include "mnm/mnm_hparams.h"

/* Fill tensors[i] (F32, row-major, rows*cols floats as fwm__mnm_tensor_at says; caller-owned) for
 * every tensor of the list, PyTorch's default for each layer:
 *   token_embd.weight                                  standard normal
 *   lstm.weight_ih, .weight_hh, .bias                  U(-1/sqrt(H), 1/sqrt(H))
 *   mnm.interact.weight, .bias                         U(-1/sqrt(H), 1/sqrt(H))
 *   mnm.rate.weight, .bias                             U(-1/sqrt(d_k), 1/sqrt(d_k))
 *   mnm.target.weight, .bias                           U(-1/sqrt(d_v), 1/sqrt(d_v))
 *   mnm.memory.N.init (fixed, never trained)           U(-1/sqrt(cols), 1/sqrt(cols)) of its own
 *   mnm.out.weight, .bias                              U(-1/sqrt(H + d_v), 1/sqrt(H + d_v))
 *   output.weight, .bias                               U(-1/sqrt(d_o), 1/sqrt(d_o))
 * Tensor i draws from its own stream of `seed` (fwm__rng_seed(seed, i)) in row-major order.
 * hp must have passed fwm__mnm_hparams_valid. Thread-safe. */
void fwm__mnm_init_weights(const fwm_mnm_hparams *hp, uint64_t seed,
                           float *const tensors[FWM_MNM_MAX_TENSORS]);

#endif
