/* fwm_hparams.h - the FWM hyperparameters, their one key list, and the one tensor list.
 *
 * FWM_HPARAM_LIST is the single place a hyperparameter's file key is declared: its C field, its
 * GGUF key, its kind (which fixes the GGUF type and the check), its default (the paper's value on
 * catbAbI, docs/MODEL.md) and, for sizes, its range. It generates the schema's reads and key-type
 * checks, the writer's keys, the range checks (fwm__hparams_check) and fwm__hparams_defaults, which
 * fwm-init, fwm-train and the benchmarks start from.
 *
 * FWM_TENSOR_LIST is the single place a weight tensor is declared: its C field name, its GGUF name
 * and its shape as an expression of the hyperparameters. It generates the loader's checks, the
 * writer's order, the runtime's struct of weight pointers and the trainer's flat layout.
 * Shapes are row-major [rows, cols] (y = W x means W is [out, in]); a 1-D tensor has cols = 1 and is
 * stored with one GGUF dimension. GGUF lists the fastest dimension first: a [rows, cols] matrix has
 * GGUF dims (cols, rows).
 */
#ifndef FWM_MODEL_FORMAT_HPARAMS_H
#define FWM_MODEL_FORMAT_HPARAMS_H

#include <stdbool.h>
#include <stdint.h>

/* The field order and types are frozen: training checkpoints (train/checkpoint.c) store this struct
 * as bytes. A new hyperparameter needs a new checkpoint version as well as a line in the list. */
typedef struct fwm_hparams {
    uint32_t vocab_size;       /* V, fwm.vocab_size */
    uint32_t embedding_length; /* E, fwm.embedding_length */
    uint32_t hidden_size;      /* H, fwm.hidden_size */
    uint32_t memory_s;         /* S, fwm.memory.s: size of key k1 */
    uint32_t memory_r;         /* R, fwm.memory.r: size of key k2 and of each read key e_i */
    uint32_t memory_t;         /* T, fwm.memory.t: size of values */
    uint32_t read_count;       /* N_r, fwm.read_count: chained reads (>1 requires S == T) */
    bool residual;             /* fwm.residual: y = m + h instead of y = m */
    uint16_t block_count;      /* L, fwm.block_count: L - 1 plain LSTM layers below the FWM's own
                                * (1: none). It lives in what was padding after `residual`, so the
                                * struct keeps its size and every other field its offset. 0 means 1
                                * (structs filled field by field before it existed, and checkpoints
                                * written before it, hold 0 there). */
    uint32_t read_policy;      /* fwm.read_policy: 0 "always", 1 "token" (fwm_read_policy) */
    uint32_t read_token_id;    /* fwm.read_token_id: the token that triggers reads under "token" */
    float forget_bias;         /* fwm.forget_bias, 1 in the paper */
    float beta_bias;           /* fwm.beta_bias, 1 in the paper */
    float write_scale;         /* fwm.write_scale, 1/T in the released code */
    float layer_norm_eps;      /* fwm.layer_norm_eps, 1e-5 */
    uint32_t padding_token_id; /* tokenizer.ggml.padding_token_id */
    uint32_t eos_token_id;     /* tokenizer.ggml.eos_token_id */
} fwm_hparams;

#include <stddef.h>
_Static_assert(sizeof(fwm_hparams) == 64 && offsetof(fwm_hparams, block_count) == 30 &&
                   offsetof(fwm_hparams, read_policy) == 32,
               "fwm_hparams keeps its checkpointed layout");

/* Upper bounds the loader enforces on every size before any arithmetic or allocation. */
#define FWM_MAX_VOCAB_SIZE 1000000u
#define FWM_MAX_DIM 65536u          /* E, H, S, R, T */
#define FWM_MAX_READ_COUNT 64u
#define FWM_MAX_MEMORY_ELEMENTS (1u << 26) /* S*R*T */
#define FWM_MAX_BLOCKS 8u           /* L: at most 7 LSTM layers below the FWM's */

/* X(field, gguf_key, kind, default, low, high). Kinds (GGUF type; what fwm__hparams_check demands):
 *   U32      u32;    low .. high
 *   BOOL     bool;   -
 *   POLICY   string "always" (0) or "token" (1), held as a u32 (fwm_read_policy)
 *   TOKEN    u32;    a token id below vocab_size
 *   F32      f32;    finite
 *   F32_POS  f32;    finite and > 0
 *   BLOCKS   u32, optional: absent reads as 1, and the writer leaves it out when it is 1 (so files
 *            without stacked layers are byte for byte what they were); low .. high in a file, and
 *            0 in the struct means 1
 * A default may use the fields listed before it through `hp` (write_scale = 1/T). The token ids'
 * defaults suit a catbAbI vocabulary ("<pad>", "<eos>" first); programs set them (and the read
 * token, "?") from their vocabulary. The list order is the writer's key order (docs/FORMAT.md,
 * section 2). */
#define FWM_HPARAM_LIST(X)                                                                           \
    X(vocab_size, "fwm.vocab_size", U32, 180, 2, FWM_MAX_VOCAB_SIZE)                                 \
    X(embedding_length, "fwm.embedding_length", U32, 256, 1, FWM_MAX_DIM)                            \
    X(hidden_size, "fwm.hidden_size", U32, 256, 1, FWM_MAX_DIM)                                      \
    X(block_count, "fwm.block_count", BLOCKS, 1, 1, FWM_MAX_BLOCKS)                                  \
    X(memory_s, "fwm.memory.s", U32, 32, 1, FWM_MAX_DIM)                                             \
    X(memory_r, "fwm.memory.r", U32, 32, 1, FWM_MAX_DIM)                                             \
    X(memory_t, "fwm.memory.t", U32, 32, 1, FWM_MAX_DIM)                                             \
    X(read_count, "fwm.read_count", U32, 3, 1, FWM_MAX_READ_COUNT)                                   \
    X(residual, "fwm.residual", BOOL, false, 0, 0)                                                   \
    X(read_policy, "fwm.read_policy", POLICY, 0, 0, 0)                                               \
    X(read_token_id, "fwm.read_token_id", TOKEN, 0, 0, 0)                                            \
    X(forget_bias, "fwm.forget_bias", F32, 1.0f, 0, 0)                                               \
    X(beta_bias, "fwm.beta_bias", F32, 1.0f, 0, 0)                                                   \
    X(write_scale, "fwm.write_scale", F32, 1.0f / (float)(hp)->memory_t, 0, 0)                       \
    X(layer_norm_eps, "fwm.layer_norm_eps", F32_POS, 1e-5f, 0, 0)                                    \
    X(padding_token_id, "tokenizer.ggml.padding_token_id", TOKEN, 0, 0, 0)                           \
    X(eos_token_id, "tokenizer.ggml.eos_token_id", TOKEN, 1, 0, 0)

/* X(field, gguf_name, rows, cols) with shapes written over `hp`, a `const fwm_hparams *`. */
#define FWM_TENSOR_LIST(X)                                                                           \
    X(token_embd, "token_embd.weight", (hp)->vocab_size, (hp)->embedding_length)                     \
    X(lstm_weight_ih, "lstm.weight_ih", 4 * (uint64_t)(hp)->hidden_size,                             \
      (hp)->block_count > 1 ? (hp)->hidden_size : (hp)->embedding_length)                            \
    X(lstm_weight_hh, "lstm.weight_hh", 4 * (uint64_t)(hp)->hidden_size, (hp)->hidden_size)          \
    X(lstm_bias, "lstm.bias", 4 * (uint64_t)(hp)->hidden_size, 1)                                    \
    X(write_weight, "fwm.write.weight",                                                              \
      (uint64_t)(hp)->memory_s + (hp)->memory_r + (hp)->memory_t + 1, (hp)->hidden_size)            \
    X(write_bias, "fwm.write.bias", (uint64_t)(hp)->memory_s + (hp)->memory_r + (hp)->memory_t + 1, \
      1)                                                                                             \
    X(read_weight, "fwm.read.weight",                                                                \
      (uint64_t)(hp)->memory_s + (uint64_t)(hp)->read_count * (hp)->memory_r, (hp)->hidden_size)     \
    X(read_bias, "fwm.read.bias",                                                                    \
      (uint64_t)(hp)->memory_s + (uint64_t)(hp)->read_count * (hp)->memory_r, 1)                     \
    X(out_weight, "fwm.out.weight", (hp)->hidden_size, (hp)->memory_t)                               \
    X(out_bias, "fwm.out.bias", (hp)->hidden_size, 1)                                                \
    X(output_weight, "output.weight", (hp)->vocab_size, (hp)->hidden_size)

/* FWM_TENSOR_<field> indices in list order, and FWM_TENSOR_COUNT. */
enum fwm_tensor_index {
#define FWM_TENSOR_INDEX_(field, name, rows, cols) FWM_TENSOR_##field,
    FWM_TENSOR_LIST(FWM_TENSOR_INDEX_)
#undef FWM_TENSOR_INDEX_
        FWM_TENSOR_COUNT
};

/* The stacked FWM (docs/MODEL.md, "The stacked FWM"): with block_count = L > 1 the file also holds
 * the L - 1 lower LSTM layers' tensors, after the list's (indices FWM_TENSOR_COUNT and up, layer 0
 * first), named as the LSTM baseline names its layers:
 *   blk.N.lstm.weight_ih [4H, E] (N = 0) or [4H, H];  blk.N.lstm.weight_hh [4H, H];
 *   blk.N.lstm.bias [4H]
 * and the FWM's own lstm.weight_ih reads the last lower layer's h: [4H, H] (the list says so). */
#define FWM_BLOCK_TENSORS 3u
#define FWM_MAX_LOWER_BLOCKS (FWM_MAX_BLOCKS - 1u)
#define FWM_MAX_TENSORS (FWM_TENSOR_COUNT + FWM_BLOCK_TENSORS * FWM_MAX_LOWER_BLOCKS)
enum fwm_block_tensor { FWM_BLOCK_weight_ih, FWM_BLOCK_weight_hh, FWM_BLOCK_bias };

/* The index of lower layer l's tensor k (enum fwm_block_tensor). */
#define FWM_TENSOR_BLOCK(l, k) \
    ((int)FWM_TENSOR_COUNT + (int)FWM_BLOCK_TENSORS * (int)(l) + (int)(k))

/* Lower LSTM layers (L - 1) and tensors in all (11 + 3 (L - 1)) of a checked hp. */
static inline unsigned fwm__lower_blocks(const fwm_hparams *hp) {
    return hp->block_count > 1 ? hp->block_count - 1u : 0u;
}
static inline int fwm__tensor_count(const fwm_hparams *hp) {
    return (int)FWM_TENSOR_COUNT + (int)FWM_BLOCK_TENSORS * (int)fwm__lower_blocks(hp);
}

/* One pointer per tensor, F32, row-major, in list order; then the lower layers' (NULL beyond
 * L - 1). */
typedef struct fwm_weights {
#define FWM_TENSOR_FIELD_(field, name, rows, cols) const float *field;
    FWM_TENSOR_LIST(FWM_TENSOR_FIELD_)
#undef FWM_TENSOR_FIELD_
    const float *lower[FWM_MAX_LOWER_BLOCKS][FWM_BLOCK_TENSORS]; /* [l][enum fwm_block_tensor] */
} fwm_weights;

#endif
