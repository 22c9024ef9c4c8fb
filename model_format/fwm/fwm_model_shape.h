/* fwm_model_shape.h - what follows from the hyperparameters alone: their valid ranges, each
 * tensor's name and shape, the flat layout of all weights, the parameter count, the per-session
 * state size, and the vocabulary rules. Shared by the schema reader, the model writer, the
 * initialiser, the tools and the trainer, so that every part agrees on one definition.
 * Internal to libfwm and its tools. Thread-safe (pure functions).
 */
#ifndef FWM_MODEL_FORMAT_MODEL_SHAPE_H
#define FWM_MODEL_FORMAT_MODEL_SHAPE_H

#include <stddef.h>
#include <stdint.h>

#include "fwm/fwm.h"
#include "fwm_hparams.h"

#define FWM_MAX_TOKEN_LENGTH 65535u /* bytes of one vocabulary entry */

/* Check every hyperparameter (docs/FORMAT.md, "Keys"): first each key of FWM_HPARAM_LIST by its kind
 * (size ranges, read_policy 0 or 1, token ids < V, finite floats, layer_norm_eps > 0), then
 * S*R*T bound and N_r > 1 needs S == T. The message
 * names the file key ("key 'fwm.hidden_size': expected 1 to 65536, found 0"). Returns FWM_OK or
 * `failure_status` (FWM_ERR_FORMAT for the reader, FWM_ERR_INVALID_ARGUMENT for the writer). */
fwm_status fwm__hparams_check(const fwm_hparams *hp, fwm_status failure_status, fwm_error *err);

/* The per-kind checks behind fwm__hparams_check, for every architecture's list (messages name
 * `key`; `size_key` is the key holding V): low <= value <= high; a token id below V; a finite
 * float. */
fwm_status fwm__check_range(const char *key, uint32_t value, uint32_t low, uint32_t high,
                            fwm_status failure, fwm_error *err);
fwm_status fwm__check_token_id(const char *key, uint32_t id, const char *size_key,
                               uint32_t vocab_size, fwm_status failure, fwm_error *err);
fwm_status fwm__check_finite(const char *key, float value, fwm_status failure, fwm_error *err);

/* Every field at its default of FWM_HPARAM_LIST: the paper's catbAbI sizes and constants
 * (docs/MODEL.md), V = 180, write_scale = 1/T, token ids 0 (read), 0 (padding), 1 (eos). The one
 * definition that fwm-init, fwm-train and the benchmarks start from. */
void fwm__hparams_defaults(fwm_hparams *hp);

/* GGUF name of tensor `index` (FWM_TENSOR_LIST order, then the lower layers' blk.N.lstm.*
 * tensors from FWM_TENSOR_COUNT up), NULL when out of range (>= FWM_MAX_TENSORS). */
const char *fwm__tensor_name(int index);

/* Row-major shape of tensor `index` (< fwm__tensor_count(hp); cols = 1 for vectors); *is_matrix
 * says whether it is stored with two GGUF dims (cols, rows) or one (rows). hp must have passed
 * fwm__hparams_check. */
void fwm__tensor_shape(const fwm_hparams *hp, int index, uint64_t *rows, uint64_t *cols,
                       int *is_matrix);

/* Element offsets of each tensor in one flat buffer holding all of them in list order;
 * offsets[fwm__tensor_count(hp)] is the total, which is also the parameter count (the entries
 * after it are left alone; FWM_MAX_TENSORS + 1 always suffice). */
void fwm__tensor_offsets(const fwm_hparams *hp, uint64_t *offsets);

/* Total number of weights. */
uint64_t fwm__parameter_count(const fwm_hparams *hp);

/* Floats of per-session state: h and c (2H) plus F (S*R*T), plus h and c of each lower layer
 * (2 (L - 1) H). */
uint64_t fwm__session_state_floats(const fwm_hparams *hp);

/* Check a vocabulary of `count` tokens: each 1..FWM_MAX_TOKEN_LENGTH bytes without NUL, all
 * distinct ("duplicate token 'mary' (ids 5 and 17)"). `lengths` may be NULL (then strlen; the
 * strings are NUL-terminated). Messages start with "key 'tokenizer.ggml.tokens': ". Returns FWM_OK,
 * `failure_status` or FWM_ERR_OUT_OF_MEMORY. */
fwm_status fwm__vocab_check(const char *const *tokens, const uint64_t *lengths, uint64_t count,
                            fwm_status failure_status, fwm_error *err);

#endif
