/* lstm_init.h - random initialisation of the LSTM baseline's weights (docs/MODEL.md, "The LSTM
 * baseline"), deterministic for a given seed; used by fwm-init --arch lstm and the trainer.
 * Internal to libfwm and its tools. */
#ifndef FWM_MODEL_FORMAT_LSTM_INIT_H
#define FWM_MODEL_FORMAT_LSTM_INIT_H

#include <stdint.h>

#include "lstm/lstm_hparams.h"

/* Fill tensors[i] (F32, row-major, rows*cols floats as fwm__lstm_tensor_at says; caller-owned) for
 * every tensor of the list:
 *   token_embd.weight                   U(-0.1, 0.1)   (AWD-LSTM)
 *   blk.N.lstm.weight_ih, weight_hh, bias  U(-1/sqrt(H), 1/sqrt(H))  (PyTorch's LSTM default)
 *   output.weight                       U(-0.1, 0.1);  output.bias 0
 * Tensor i draws from its own stream of `seed` (fwm__rng_seed(seed, i)) in row-major order.
 * hp must have passed fwm__lstm_hparams_valid. Thread-safe. */
void fwm__lstm_init_weights(const fwm_lstm_hparams *hp, uint64_t seed,
                            float *const tensors[FWM_LSTM_MAX_TENSORS]);

#endif
