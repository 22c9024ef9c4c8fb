/* gfw_hparams.h - the Gated Fast Weights architecture (`general.architecture = "gfw"`, Schlag &
 * Schmidhuber, "Gated Fast Weights for Associative Retrieval", 2017): its hyperparameters, their
 * one key list, and its one tensor list.
 *
 * The model (docs/MODEL.md, "The Gated Fast Weights model"). Per token x, with state
 * (h_F, h_S, F1, F2): e = Emb[x].
 *   Fast net (uses the fast matrices of this step, generated at the previous one):
 *     a = LN(tanh(F1 [h_F; e; 1])), h_F <- LN(tanh(F2 [a; 1])); logits = W_o h_F + b_o.
 *   Slow net: s = tanh(W_1 [h_S; e] + b_1); o = W_2 s + b_2 = [z; D1; D2]; h_S <- tanh(z).
 *   Gated update (for the next step), for F in {F1, F2} with D = [alpha; beta; gamma; delta]:
 *     H = tanh(alpha) tanh(beta)^T, T = sigmoid(gamma) sigmoid(delta)^T, F <- T*H + (1 - T)*F.
 * LN has no parameters: (v - mean v) / sqrt(var v + eps), var over the vector (divide by n).
 * The last column of F1 and of F2 is the fast layer's bias (it multiplies the constant 1).
 * A session's state is h_F (m), h_S (N), F1 [m, m+E+1] and F2 [m, m+1], all zero at reset.
 *
 * FWM_GFW_HPARAM_LIST has the same columns and kinds as FWM_HPARAM_LIST (fwm_hparams.h).
 * fwm__gfw_tensor_at is the one tensor list, in file (writer and checksum) order:
 * token_embd.weight [V, E]; gfw.slow.0.weight [P, N+E] (columns h_S first, then e),
 * gfw.slow.0.bias [P]; gfw.slow.1.weight [N+U1+U2, P], gfw.slow.1.bias [N+U1+U2];
 * output.weight [V, m], output.bias [V]. Rows of gfw.slow.1: z (N), then alpha1 (m), beta1 (m+E+1),
 * gamma1 (m), delta1 (m+E+1), then alpha2 (m), beta2 (m+1), gamma2 (m), delta2 (m+1).
 *
 * Counts at the paper's sizes (V = E = 15, m = 40, N = 40, P = 100): U1 = 192, U2 = 162, the slow
 * output 394; parameters 225 + (5,500 + 100) + (39,400 + 394) + (600 + 15) = 46,234; session state
 * 40 + 40 + 40*56 + 40*41 = 3,960 floats.
 */
#ifndef FWM_MODEL_FORMAT_GFW_HPARAMS_H
#define FWM_MODEL_FORMAT_GFW_HPARAMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "fwm_hparams.h" /* FWM_MAX_VOCAB_SIZE, FWM_MAX_DIM */

/* Bound on the floats of one session's fast matrices (F1 and F2), checked with the sizes. */
#define FWM_GFW_MAX_FAST_ELEMENTS (1u << 26)

typedef struct fwm_gfw_hparams {
    uint32_t vocab_size;       /* V, gfw.vocab_size */
    uint32_t embedding_length; /* E, gfw.embedding_length: shared by both nets */
    uint32_t fast_hidden;      /* m, gfw.fast.hidden_size: h_F and the fast net's inner layer;
                                * at least 2 (the layer norm of one number is 0) */
    uint32_t slow_hidden;      /* N, gfw.slow.hidden_size: h_S */
    uint32_t slow_inner;       /* P, gfw.slow.inner_size: the slow net's transition layer */
    float layer_norm_epsilon;  /* gfw.layer_norm_epsilon: added to the variance in LN */
    uint32_t padding_token_id; /* tokenizer.ggml.padding_token_id */
    uint32_t eos_token_id;     /* tokenizer.ggml.eos_token_id */
} fwm_gfw_hparams;

/* X(field, gguf_key, kind, default, low, high): kinds as in FWM_HPARAM_LIST. The defaults are the
 * paper's associative retrieval model (embedding 15, h_F 40, h_S 40, slow transition layer 100)
 * with the AR task's 15-symbol vocabulary (docs/AR_TASK.md): padding is the space " " (id 0, never
 * an input), the end-of-sequence token is "." (id 14, the end of a query). */
#define FWM_GFW_HPARAM_LIST(X)                                                                       \
    X(vocab_size, "gfw.vocab_size", U32, 15, 2, FWM_MAX_VOCAB_SIZE)                                  \
    X(embedding_length, "gfw.embedding_length", U32, 15, 1, FWM_MAX_DIM)                             \
    X(fast_hidden, "gfw.fast.hidden_size", U32, 40, 2, FWM_MAX_DIM)                                  \
    X(slow_hidden, "gfw.slow.hidden_size", U32, 40, 1, FWM_MAX_DIM)                                  \
    X(slow_inner, "gfw.slow.inner_size", U32, 100, 1, FWM_MAX_DIM)                                   \
    X(layer_norm_epsilon, "gfw.layer_norm_epsilon", F32_POS, 1e-5f, 0, 0)                            \
    X(padding_token_id, "tokenizer.ggml.padding_token_id", TOKEN, 0, 0, 0)                           \
    X(eos_token_id, "tokenizer.ggml.eos_token_id", TOKEN, 14, 0, 0)

/* Columns of F1: the fast net's input [h_F; e; 1]. */
static inline uint64_t fwm__gfw_f1_cols(const fwm_gfw_hparams *hp) {
    return (uint64_t)hp->fast_hidden + hp->embedding_length + 1;
}

/* Columns of F2: the inner layer and the constant 1. */
static inline uint64_t fwm__gfw_f2_cols(const fwm_gfw_hparams *hp) {
    return (uint64_t)hp->fast_hidden + 1;
}

/* Slow-net outputs that update F1 (alpha, beta, gamma, delta) and F2: 2 (rows + cols) each. */
static inline uint64_t fwm__gfw_update1_length(const fwm_gfw_hparams *hp) {
    return 2 * ((uint64_t)hp->fast_hidden + fwm__gfw_f1_cols(hp));
}
static inline uint64_t fwm__gfw_update2_length(const fwm_gfw_hparams *hp) {
    return 2 * ((uint64_t)hp->fast_hidden + fwm__gfw_f2_cols(hp));
}

/* Rows of gfw.slow.1: z, the F1 update, the F2 update. */
static inline uint64_t fwm__gfw_slow_out_rows(const fwm_gfw_hparams *hp) {
    return (uint64_t)hp->slow_hidden + fwm__gfw_update1_length(hp) + fwm__gfw_update2_length(hp);
}

/* Floats of F1 and F2 together. */
static inline uint64_t fwm__gfw_fast_elements(const fwm_gfw_hparams *hp) {
    return (uint64_t)hp->fast_hidden * (fwm__gfw_f1_cols(hp) + fwm__gfw_f2_cols(hp));
}

/* Floats in one session's state, in its order: h_F, h_S, F1 (row-major), F2 (row-major). */
static inline uint64_t fwm__gfw_hparams_state_floats(const fwm_gfw_hparams *hp) {
    return (uint64_t)hp->fast_hidden + hp->slow_hidden + fwm__gfw_fast_elements(hp);
}

#define FWM_GFW_MAX_TENSORS 7u

static inline size_t fwm__gfw_tensor_count(const fwm_gfw_hparams *hp) {
    (void)hp;
    return FWM_GFW_MAX_TENSORS;
}

/* The i-th tensor in file order (i < fwm__gfw_tensor_count(hp)): its name (into name[48]) and
 * shape (cols = 1 for vectors). Every tensor is trained. */
static inline void fwm__gfw_tensor_at(const fwm_gfw_hparams *hp, size_t i, char name[48],
                                     uint64_t *rows, uint64_t *cols) {
    static const char *const names[FWM_GFW_MAX_TENSORS] = {
        "token_embd.weight", "gfw.slow.0.weight", "gfw.slow.0.bias", "gfw.slow.1.weight",
        "gfw.slow.1.bias",   "output.weight",     "output.bias"};
    snprintf(name, 48, "%s", names[i < FWM_GFW_MAX_TENSORS ? i : FWM_GFW_MAX_TENSORS - 1]);
    *cols = 1;
    switch (i) {
    case 0: *rows = hp->vocab_size; *cols = hp->embedding_length; break;
    case 1: *rows = hp->slow_inner; *cols = (uint64_t)hp->slow_hidden + hp->embedding_length; break;
    case 2: *rows = hp->slow_inner; break;
    case 3: *rows = fwm__gfw_slow_out_rows(hp); *cols = hp->slow_inner; break;
    case 4: *rows = fwm__gfw_slow_out_rows(hp); break;
    case 5: *rows = hp->vocab_size; *cols = hp->fast_hidden; break;
    default: *rows = hp->vocab_size; break;
    }
}

/* Trained parameters (every tensor's floats). */
static inline uint64_t fwm__gfw_parameter_count(const fwm_gfw_hparams *hp) {
    uint64_t n = 0, rows, cols;
    char name[48];
    for (size_t i = 0; i < fwm__gfw_tensor_count(hp); i++) {
        fwm__gfw_tensor_at(hp, i, name, &rows, &cols);
        n += rows * cols;
    }
    return n;
}

/* ---- implemented in model_format/gfw/ ---- */
#include "fwm_schema.h" /* fwm_write_kv */

/* The paper's sizes (the list's defaults). */
void fwm__gfw_hparams_defaults(fwm_gfw_hparams *hp);

/* Range and consistency checks of the list (token ids below V, fwm__gfw_fast_elements at most
 * FWM_GFW_MAX_FAST_ELEMENTS, ...), naming the key. FWM_ERR_INVALID_ARGUMENT. */
fwm_status fwm__gfw_hparams_valid(const fwm_gfw_hparams *hp, fwm_error *err);

/* What the writer needs: F32 tensors in fwm__gfw_tensor_at order; other fields as fwm_write_spec. */
typedef struct fwm_gfw_write_spec {
    fwm_gfw_hparams hp;
    fwm__write_head head; /* name, vocabulary, extra keys, prime tokens */
    const float *tensors[FWM_GFW_MAX_TENSORS];
} fwm_gfw_write_spec;

/* Write a complete `gfw` model file atomically, as fwm__model_write does for `fwm`.
 * FWM_ERR_IO, FWM_ERR_INVALID_ARGUMENT, FWM_ERR_OUT_OF_MEMORY. */
fwm_status fwm__gfw_model_write(const char *path, const fwm_gfw_write_spec *spec, fwm_error *err);

#endif
