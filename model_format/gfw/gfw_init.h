/* gfw_init.h - random initialisation of the Gated Fast Weights model's weights (docs/MODEL.md, "The
 * Gated Fast Weights model", Parameters), deterministic for a given seed; used by fwm-init --arch
 * gfw and the trainer. Internal to libfwm and its tools. */
#ifndef FWM_MODEL_FORMAT_GFW_INIT_H
#define FWM_MODEL_FORMAT_GFW_INIT_H

#include <stdint.h>

#include "gfw/gfw_hparams.h"

/* Fill tensors[i] (F32, row-major, rows*cols floats as fwm__gfw_tensor_at says; caller-owned) for
 * every tensor of the list, the spec's choice:
 *   token_embd.weight, gfw.slow.0.weight, gfw.slow.1.weight, output.weight
 *                                        Glorot uniform, U(-a, a) with a = sqrt(6 / (rows + cols))
 *   gfw.slow.0.bias, gfw.slow.1.bias, output.bias    0
 * Tensor i draws from its own stream of `seed` (fwm__rng_seed(seed, i)) in row-major order.
 * hp must have passed fwm__gfw_hparams_valid. Thread-safe. */
void fwm__gfw_init_weights(const fwm_gfw_hparams *hp, uint64_t seed,
                           float *const tensors[FWM_GFW_MAX_TENSORS]);

#endif
