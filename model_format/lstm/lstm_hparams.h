/* lstm_hparams.h - the LSTM baseline architecture (`general.architecture = "lstm"`): its
 * hyperparameters, their one key list, and its one tensor list.
 *
 * The model (docs/MODEL.md, "The LSTM baseline"): e = Emb[x]; L stacked LSTM layers, layer 0 reads e
 * (E inputs), layer l >= 1 reads the output y_{l-1} of the layer below (H inputs); each layer's
 * pre-activations g = W_ih^l in + b^l + W_hh^l h^l (gate order i, f, z, o, as the FWM's LSTM),
 * c^l = sigmoid(g_f + forget_bias) c^l + sigmoid(g_i) tanh(g_z), h^l = sigmoid(g_o) tanh(c^l);
 * y_l = h^l, plus the layer's input when `residual` and l >= 1; logits = W_s y_{L-1} + b_s.
 * A session's state is h^l and c^l of every layer: 2 L H floats.
 *
 * FWM_LSTM_HPARAM_LIST has the same columns and kinds as FWM_HPARAM_LIST (fwm_hparams.h).
 * fwm__lstm_tensor_at is the one tensor list, in file (writer and checksum) order:
 * token_embd.weight, then each layer's blk.N.lstm.weight_ih, .weight_hh, .bias (layer 0 first),
 * then output.weight and output.bias.
 */
#ifndef FWM_MODEL_FORMAT_LSTM_HPARAMS_H
#define FWM_MODEL_FORMAT_LSTM_HPARAMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "fwm_hparams.h" /* FWM_MAX_VOCAB_SIZE, FWM_MAX_DIM */

#define FWM_LSTM_MAX_LAYERS 16u

typedef struct fwm_lstm_hparams {
    uint32_t vocab_size;       /* V, lstm.vocab_size */
    uint32_t embedding_length; /* E, lstm.embedding_length */
    uint32_t hidden_size;      /* H, lstm.hidden_size */
    uint32_t layer_count;      /* L, lstm.block_count */
    bool residual;             /* lstm.residual: layers l >= 1 add their input to their output */
    float forget_bias;         /* lstm.forget_bias */
    uint32_t padding_token_id; /* tokenizer.ggml.padding_token_id */
    uint32_t eos_token_id;     /* tokenizer.ggml.eos_token_id */
} fwm_lstm_hparams;

/* X(field, gguf_key, kind, default, low, high): kinds as in FWM_HPARAM_LIST. The defaults are the
 * FWM paper's catbAbI LSTM (appendix F.4: four residual layers of 512, embedding 256). */
#define FWM_LSTM_HPARAM_LIST(X)                                                                      \
    X(vocab_size, "lstm.vocab_size", U32, 180, 2, FWM_MAX_VOCAB_SIZE)                                \
    X(embedding_length, "lstm.embedding_length", U32, 256, 1, FWM_MAX_DIM)                           \
    X(hidden_size, "lstm.hidden_size", U32, 512, 1, FWM_MAX_DIM)                                     \
    X(layer_count, "lstm.block_count", U32, 4, 1, FWM_LSTM_MAX_LAYERS)                               \
    X(residual, "lstm.residual", BOOL, true, 0, 0)                                                   \
    X(forget_bias, "lstm.forget_bias", F32, 1.0f, 0, 0)                                              \
    X(padding_token_id, "tokenizer.ggml.padding_token_id", TOKEN, 0, 0, 0)                           \
    X(eos_token_id, "tokenizer.ggml.eos_token_id", TOKEN, 1, 0, 0)

/* Tensors per layer and in all: 1 + 3 L + 2. */
#define FWM_LSTM_BLOCK_TENSORS 3u
#define FWM_LSTM_MAX_TENSORS (3u + FWM_LSTM_BLOCK_TENSORS * FWM_LSTM_MAX_LAYERS)

static inline size_t fwm__lstm_tensor_count(const fwm_lstm_hparams *hp) {
    return 3 + (size_t)FWM_LSTM_BLOCK_TENSORS * hp->layer_count;
}

/* The i-th tensor in file order (i < fwm__lstm_tensor_count(hp)): its name (into name[48]) and
 * shape (cols = 1 for vectors). */
static inline void fwm__lstm_tensor_at(const fwm_lstm_hparams *hp, size_t i, char name[48],
                                      uint64_t *rows, uint64_t *cols) {
    size_t L = hp->layer_count, blocks_end = 1 + (size_t)FWM_LSTM_BLOCK_TENSORS * L;
    if (i == 0) {
        snprintf(name, 48, "token_embd.weight");
        *rows = hp->vocab_size;
        *cols = hp->embedding_length;
    } else if (i < blocks_end) {
        unsigned l = (unsigned)((i - 1) / FWM_LSTM_BLOCK_TENSORS);
        size_t k = (i - 1) % FWM_LSTM_BLOCK_TENSORS;
        static const char *const fmt[FWM_LSTM_BLOCK_TENSORS] = {
            "blk.%u.lstm.weight_ih", "blk.%u.lstm.weight_hh", "blk.%u.lstm.bias"};
        snprintf(name, 48, fmt[k], l);
        *rows = 4 * (uint64_t)hp->hidden_size;
        *cols = k == 0 ? (l == 0 ? hp->embedding_length : hp->hidden_size) : k == 1 ? hp->hidden_size : 1;
    } else if (i == blocks_end) {
        snprintf(name, 48, "output.weight");
        *rows = hp->vocab_size;
        *cols = hp->hidden_size;
    } else {
        snprintf(name, 48, "output.bias");
        *rows = hp->vocab_size;
        *cols = 1;
    }
}

/* ---- implemented in model_format/lstm/ ---- */
#include "fwm_schema.h" /* fwm_write_kv */

/* The paper's sizes (the list's defaults). */
void fwm__lstm_hparams_defaults(fwm_lstm_hparams *hp);

/* Range and consistency checks of the list (token ids below V, ...), naming the key.
 * FWM_ERR_INVALID_ARGUMENT. */
fwm_status fwm__lstm_hparams_valid(const fwm_lstm_hparams *hp, fwm_error *err);

/* What the writer needs: F32 tensors in fwm__lstm_tensor_at order; other fields as fwm_write_spec. */
typedef struct fwm_lstm_write_spec {
    fwm_lstm_hparams hp;
    fwm__write_head head; /* name, vocabulary, extra keys, prime tokens */
    const float *tensors[FWM_LSTM_MAX_TENSORS];
} fwm_lstm_write_spec;

/* Write a complete `lstm` model file atomically, as fwm__model_write does for `fwm`.
 * FWM_ERR_IO, FWM_ERR_INVALID_ARGUMENT, FWM_ERR_OUT_OF_MEMORY. */
fwm_status fwm__lstm_model_write(const char *path, const fwm_lstm_write_spec *spec, fwm_error *err);

#endif
