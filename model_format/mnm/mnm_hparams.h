/* mnm_hparams.h - the Metalearned Neural Memory architecture (`general.architecture = "mnm"`, the
 * plastic MNM-p of Munkhdalai et al. 2019 as the FWM paper's catbAbI baseline): its hyperparameters,
 * their one key list, and its one tensor list.
 *
 * The model (docs/MODEL.md, "The Metalearned Neural Memory baseline"). Per token x, with state
 * (h, c, r, M^1..M^Lm): e = Emb[x]; the controller LSTM reads [e; r] (r: the previous read-out),
 * g = W_ih [e; r] + W_hh h + b (gate order i, f, z, o as the FWM's LSTM), c = sigmoid(g_f +
 * forget_bias) c + sigmoid(g_i) tanh(g_z), h = sigmoid(g_o) tanh(c). Interaction vectors
 * u = tanh(W_u h + b_u) = [kr_1..kr_Nh; kw_1..kw_Nh; vw_1..vw_Nh; b'] (keys d_k, values d_v, b' d_k),
 * beta = sigmoid(w_beta . b' + b_beta) (one scalar). The memory is a bias-free feed-forward net
 * f_M(k): z^0 = k, z^l = tanh(M^l z^(l-1)) for l < Lm, f = z^Lm = M^Lm z^(Lm-1). Write (the learned
 * local update): push every write key kw_i through f with the current M, keeping the activations
 * z^l_i; targets [t^1_i; ..; t^Lm_i] = W_q vw_i + b_q; then for every layer, all from the same
 * activations, M^l -= beta (2 / (Nh D_l)) sum_i (z^l_i - t^l_i) (z^(l-1)_i)^T (D_l: layer l's
 * width). Read (after the write): r = (1/Nh) sum_i f_M(kr_i). Output: y = W_o [h; r] + b_o,
 * logits = W_s y + b_s. A session's state is h, c (H each), r (d_v) and every M^l: at reset h, c,
 * r are zero and M^l is the model's fixed initial memory mnm.memory.N.init (never trained).
 * Training adds the meta-objective, the coefficient times the mean over steps of
 * (1/(Nh d_v)) sum_i |f_M(kw_i) - vw_i|^2 with the updated M (FWM_MNM_DEFAULT_META_WEIGHT).
 *
 * FWM_MNM_HPARAM_LIST has the same columns and kinds as FWM_HPARAM_LIST (fwm_hparams.h).
 * fwm__mnm_tensor_at is the one tensor list, in file (writer and checksum) order: token_embd.weight;
 * the controller's lstm.weight_ih [4H, E + d_v], lstm.weight_hh, lstm.bias; mnm.interact.weight and
 * .bias; mnm.rate.weight [1, d_k] and .bias [1]; mnm.target.weight [(Lm-1) D + d_v, d_v] and .bias;
 * mnm.memory.N.init for N = 0..Lm-1; mnm.out.weight [d_o, H + d_v] and .bias; output.weight [V, d_o]
 * and output.bias.
 *
 * Counts at the defaults (V = 180; the FWM paper's about 1.1M weights and 30.5k activations):
 * trained 1,098,845 floats (Emb 46,080; controller 364,544 + 262,144 + 1,024; interaction 257,000;
 * rate 101; targets 30,300; read-out 91,392; output 46,260), plus the fixed initial memory 30,000
 * (3 x 100 x 100): 1,128,845 floats in the file. Session state 2 x 256 + 100 + 30,000 = 30,612 floats.
 */
#ifndef FWM_MODEL_FORMAT_MNM_HPARAMS_H
#define FWM_MODEL_FORMAT_MNM_HPARAMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "fwm_hparams.h" /* FWM_MAX_VOCAB_SIZE, FWM_MAX_DIM */

#define FWM_MNM_MAX_MEMORY_LAYERS 16u
#define FWM_MNM_MAX_HEADS 64u
/* Bound on the floats of one session's memory (sum of the M^l sizes), checked with the sizes. */
#define FWM_MNM_MAX_MEMORY_ELEMENTS (1u << 26)

/* The meta-objective's coefficient in the training loss (a training option, not a model key: it
 * changes nothing at inference). The FWM paper searched 1 and 2. */
#define FWM_MNM_DEFAULT_META_WEIGHT 1.0f

typedef struct fwm_mnm_hparams {
    uint32_t vocab_size;       /* V, mnm.vocab_size */
    uint32_t embedding_length; /* E, mnm.embedding_length */
    uint32_t hidden_size;      /* H, mnm.hidden_size: the controller LSTM's h and c */
    uint32_t head_count;       /* Nh, mnm.head_count: parallel read and write heads */
    uint32_t key_length;       /* d_k, mnm.memory.key_length: read and write keys, and b' */
    uint32_t value_length;     /* d_v, mnm.memory.value_length: target values and the read-out */
    uint32_t memory_hidden;    /* D, mnm.memory.hidden_size: the memory net's hidden layers */
    uint32_t memory_layers;    /* Lm, mnm.memory.block_count: the memory net's weight matrices */
    uint32_t output_length;    /* d_o, mnm.output_length: y = W_o [h; r] + b_o */
    float forget_bias;         /* mnm.forget_bias: added to the forget gate's pre-activation */
    uint32_t padding_token_id; /* tokenizer.ggml.padding_token_id */
    uint32_t eos_token_id;     /* tokenizer.ggml.eos_token_id */
} fwm_mnm_hparams;

/* X(field, gguf_key, kind, default, low, high): kinds as in FWM_HPARAM_LIST. The defaults are the
 * FWM paper's catbAbI MNM-p (appendix F.2: the MNM paper's memory, three layers of 100; embedding
 * 256 as every catbAbI model there) with the MNM paper's bAbI controller and heads (its Table 2:
 * d_h = d_o = 256, d_k = d_v = D = 100, 3 heads). forget_bias 0: the authors' controller is a plain
 * LSTM cell. */
#define FWM_MNM_HPARAM_LIST(X)                                                                       \
    X(vocab_size, "mnm.vocab_size", U32, 180, 2, FWM_MAX_VOCAB_SIZE)                                 \
    X(embedding_length, "mnm.embedding_length", U32, 256, 1, FWM_MAX_DIM)                            \
    X(hidden_size, "mnm.hidden_size", U32, 256, 1, FWM_MAX_DIM)                                      \
    X(head_count, "mnm.head_count", U32, 3, 1, FWM_MNM_MAX_HEADS)                                    \
    X(key_length, "mnm.memory.key_length", U32, 100, 1, FWM_MAX_DIM)                                 \
    X(value_length, "mnm.memory.value_length", U32, 100, 1, FWM_MAX_DIM)                             \
    X(memory_hidden, "mnm.memory.hidden_size", U32, 100, 1, FWM_MAX_DIM)                             \
    X(memory_layers, "mnm.memory.block_count", U32, 3, 1, FWM_MNM_MAX_MEMORY_LAYERS)                 \
    X(output_length, "mnm.output_length", U32, 256, 1, FWM_MAX_DIM)                                  \
    X(forget_bias, "mnm.forget_bias", F32, 0.0f, 0, 0)                                               \
    X(padding_token_id, "tokenizer.ggml.padding_token_id", TOKEN, 0, 0, 0)                           \
    X(eos_token_id, "tokenizer.ggml.eos_token_id", TOKEN, 1, 0, 0)

/* Rows of the interaction projection: Nh read keys, Nh write keys, Nh values, then b' (d_k). */
static inline uint64_t fwm__mnm_interact_rows(const fwm_mnm_hparams *hp) {
    return (uint64_t)hp->head_count * (2 * (uint64_t)hp->key_length + hp->value_length) +
           hp->key_length;
}

/* Shape of the memory net's weight matrix l (0-based, l < Lm): M^(l+1) in the equations. Layer 0
 * reads d_k, the others D; the last writes d_v, the others D. */
static inline void fwm__mnm_memory_shape(const fwm_mnm_hparams *hp, uint32_t l, uint64_t *rows,
                                        uint64_t *cols) {
    *rows = l + 1 == hp->memory_layers ? hp->value_length : hp->memory_hidden;
    *cols = l == 0 ? hp->key_length : hp->memory_hidden;
}

/* Rows of the target (backward feedback prediction) projection: one target per memory layer's
 * output, (Lm - 1) D + d_v, in layer order. Like every helper here it assumes checked
 * hyperparameters (memory_layers >= 1). */
static inline uint64_t fwm__mnm_target_rows(const fwm_mnm_hparams *hp) {
    return (uint64_t)(hp->memory_layers - 1) * hp->memory_hidden + hp->value_length;
}

/* Floats in one session's memory: the sum of the M^l sizes (memory_layers >= 1). */
static inline uint64_t fwm__mnm_memory_elements(const fwm_mnm_hparams *hp) {
    uint64_t n = 0, rows, cols;
    for (uint32_t l = 0; l < hp->memory_layers; l++) {
        fwm__mnm_memory_shape(hp, l, &rows, &cols);
        n += rows * cols;
    }
    return n;
}

/* Floats in one session's state: h, c, r and the memory. */
static inline uint64_t fwm__mnm_hparams_state_floats(const fwm_mnm_hparams *hp) {
    return 2 * (uint64_t)hp->hidden_size + hp->value_length + fwm__mnm_memory_elements(hp);
}

/* Tensors before the memory, and in all: 10 + Lm + 4. */
#define FWM_MNM_HEAD_TENSORS 10u
#define FWM_MNM_TAIL_TENSORS 4u
#define FWM_MNM_MAX_TENSORS (FWM_MNM_HEAD_TENSORS + FWM_MNM_MAX_MEMORY_LAYERS + FWM_MNM_TAIL_TENSORS)

static inline size_t fwm__mnm_tensor_count(const fwm_mnm_hparams *hp) {
    return FWM_MNM_HEAD_TENSORS + (size_t)hp->memory_layers + FWM_MNM_TAIL_TENSORS;
}

/* The i-th tensor in file order (i < fwm__mnm_tensor_count(hp)): its name (into name[48]) and
 * shape (cols = 1 for vectors). */
static inline void fwm__mnm_tensor_at(const fwm_mnm_hparams *hp, size_t i, char name[48],
                                     uint64_t *rows, uint64_t *cols) {
    uint64_t H4 = 4 * (uint64_t)hp->hidden_size;
    size_t mem_end = FWM_MNM_HEAD_TENSORS + (size_t)hp->memory_layers;
    *cols = 1;
    if (i < FWM_MNM_HEAD_TENSORS) {
        static const char *const names[FWM_MNM_HEAD_TENSORS] = {
            "token_embd.weight", "lstm.weight_ih",  "lstm.weight_hh",    "lstm.bias",
            "mnm.interact.weight", "mnm.interact.bias", "mnm.rate.weight", "mnm.rate.bias",
            "mnm.target.weight", "mnm.target.bias"};
        snprintf(name, 48, "%s", names[i]);
        switch (i) {
        case 0: *rows = hp->vocab_size; *cols = hp->embedding_length; break;
        case 1: *rows = H4; *cols = (uint64_t)hp->embedding_length + hp->value_length; break;
        case 2: *rows = H4; *cols = hp->hidden_size; break;
        case 3: *rows = H4; break;
        case 4: *rows = fwm__mnm_interact_rows(hp); *cols = hp->hidden_size; break;
        case 5: *rows = fwm__mnm_interact_rows(hp); break;
        case 6: *rows = 1; *cols = hp->key_length; break;
        case 7: *rows = 1; break;
        case 8: *rows = fwm__mnm_target_rows(hp); *cols = hp->value_length; break;
        default: *rows = fwm__mnm_target_rows(hp); break;
        }
    } else if (i < mem_end) {
        uint32_t l = (uint32_t)(i - FWM_MNM_HEAD_TENSORS);
        snprintf(name, 48, "mnm.memory.%u.init", (unsigned)l);
        fwm__mnm_memory_shape(hp, l, rows, cols);
    } else {
        switch (i - mem_end) {
        case 0:
            snprintf(name, 48, "mnm.out.weight");
            *rows = hp->output_length;
            *cols = (uint64_t)hp->hidden_size + hp->value_length;
            break;
        case 1:
            snprintf(name, 48, "mnm.out.bias");
            *rows = hp->output_length;
            break;
        case 2:
            snprintf(name, 48, "output.weight");
            *rows = hp->vocab_size;
            *cols = hp->output_length;
            break;
        default:
            snprintf(name, 48, "output.bias");
            *rows = hp->vocab_size;
            break;
        }
    }
}

/* Whether tensor i is trained: every one but the fixed initial memory mnm.memory.N.init (the MNM
 * paper's section 3.5: learning it overfitted; the memory starts every session from it). */
static inline bool fwm__mnm_tensor_trained(const fwm_mnm_hparams *hp, size_t i) {
    return !(i >= FWM_MNM_HEAD_TENSORS && i < FWM_MNM_HEAD_TENSORS + (size_t)hp->memory_layers);
}

/* ---- implemented in model_format/mnm/ ---- */
#include "fwm_schema.h" /* fwm_write_kv */

/* The paper's sizes (the list's defaults). */
void fwm__mnm_hparams_defaults(fwm_mnm_hparams *hp);

/* Range and consistency checks of the list (token ids below V, the memory's element count at most
 * FWM_MNM_MAX_MEMORY_ELEMENTS, ...), naming the key. FWM_ERR_INVALID_ARGUMENT. */
fwm_status fwm__mnm_hparams_valid(const fwm_mnm_hparams *hp, fwm_error *err);

/* What the writer needs: F32 tensors in fwm__mnm_tensor_at order; other fields as fwm_write_spec. */
typedef struct fwm_mnm_write_spec {
    fwm_mnm_hparams hp;
    fwm__write_head head; /* name, vocabulary, extra keys, prime tokens */
    const float *tensors[FWM_MNM_MAX_TENSORS];
} fwm_mnm_write_spec;

/* Write a complete `mnm` model file atomically, as fwm__model_write does for `fwm`.
 * FWM_ERR_IO, FWM_ERR_INVALID_ARGUMENT, FWM_ERR_OUT_OF_MEMORY. */
fwm_status fwm__mnm_model_write(const char *path, const fwm_mnm_write_spec *spec, fwm_error *err);

#endif
