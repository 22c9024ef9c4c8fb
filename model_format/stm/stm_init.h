/* stm_init.h - random initialisation of the STM's weights and of its initial memories
 * (docs/MODEL.md, "The STM (self-attentive associative memory)", Parameters and initialisation),
 * deterministic for a given seed; used by fwm-init --arch stm. Internal to libfwm and its tools. */
#ifndef FWM_MODEL_FORMAT_STM_INIT_H
#define FWM_MODEL_FORMAT_STM_INIT_H

#include <stdint.h>

#include "stm/stm_hparams.h"

/* Fill tensors[i] (F32, row-major, rows*cols floats as fwm__stm_tensor_at says; caller-owned) for
 * every tensor of the list, as the spec's table draws them (U(-a, a) with):
 *   token_embd.weight                              a = 0.1
 *   stm.position.weight (sentence)                 every entry 1/P
 *   stm.write.*, stm.value.*, stm.select.*          a = 1/sqrt(E)
 *   stm.gate.*, stm.sam.weight, stm.sam.bias        a = 1/sqrt(d), the forget half of the gate bias + 1
 *   stm.sam.norm.weight, .bias                      1, 0
 *   stm.alpha                                       sentence (1, 0, 0), word (0, 0, 0)
 *   stm.transfer.*                                  a = 1/sqrt(n_q d)
 *   stm.item.init, stm.relation.init                a = 1/sqrt(2d), 1/sqrt(2d + n_q)
 *   stm.answer.*.weight1/2, output.weight (sentence) Xavier uniform, a = sqrt(6 / (rows + cols))
 *   stm.answer.*.bias1/2                            0
 *   stm.answer.norm                                 gains 1, biases 0
 *   stm.distill.*                                   a = 1/d
 *   output.weight, output.bias (word)               a = 1/sqrt(n_q n_r)
 * Tensor i draws from its own stream of `seed` (fwm__rng_seed(seed, i)) in row-major order.
 * hp must have passed fwm__stm_hparams_valid. Thread-safe. */
void fwm__stm_init_weights(const fwm_stm_hparams *hp, uint64_t seed,
                           float *const tensors[FWM_STM_MAX_TENSORS]);

#endif
