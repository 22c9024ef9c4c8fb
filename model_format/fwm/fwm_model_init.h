/* fwm_model_init.h - random initialisation of every weight tensor as the released FWM code does it
 * (docs/FORMAT.md and docs/MODEL.md's table), deterministic for a given seed. Used by fwm-init and
 * the trainer. Internal to libfwm and its tools.
 */
#ifndef FWM_MODEL_FORMAT_MODEL_INIT_H
#define FWM_MODEL_FORMAT_MODEL_INIT_H

#include <stdint.h>

#include "fwm_hparams.h"

/* Fill tensors[i] (F32, row-major, rows*cols floats as fwm__tensor_shape says; caller-owned) for
 * every tensor of the list (fwm__tensor_count(hp) of them):
 *   token_embd          N(0, 1)
 *   lstm.weight_ih/_hh  U(-1/sqrt(H), 1/sqrt(H));   lstm.bias 0
 *   fwm.write.weight    U(-a, a), a = sqrt(6/(H+S)); fwm.write.bias U(-1/sqrt(H), 1/sqrt(H))
 *   fwm.read.weight     U(-a, a), same a;            fwm.read.bias  U(-1/sqrt(H), 1/sqrt(H))
 *   fwm.out.weight/bias U(-1/sqrt(T), 1/sqrt(T))
 *   output.weight       N(0, sqrt(2/(V+H)))  (Xavier normal, gain 1)
 *   blk.N.lstm.weight_ih, weight_hh, bias (a stacked FWM's lower layers)  U(-1/sqrt(H), 1/sqrt(H)),
 *                       as the LSTM baseline's layers (lstm_init.h)
 * Tensor i draws from its own stream of `seed` (fwm__rng_seed(seed, i)) in row-major order, so a
 * tensor's values do not depend on the sizes of the others. hp must have passed
 * fwm__hparams_check. Thread-safe. */
void fwm__model_init_weights(const fwm_hparams *hp, uint64_t seed,
                             float *const tensors[FWM_MAX_TENSORS]);

#endif
