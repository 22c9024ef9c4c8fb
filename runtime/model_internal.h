/* model_internal.h - the layout of a loaded fwm_model, shared by the runtime's files. Internal. */
#ifndef FWM_RUNTIME_MODEL_INTERNAL_H
#define FWM_RUNTIME_MODEL_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch_list.h"
#include "fwm/fwm.h"
#include "fwm_hparams.h"
#include "fwm_schema.h"
#include "schema_head.h" /* FWM_MAX_PRIME_TOKENS */

/* The FWM's BF16 weights, one pointer per tensor as fwm_weights: set (and the F32 pointer NULL) for
 * each matrix a fwm.matmul_type "bf16" file stores as BF16 and the step multiplies in BF16
 * (bf16_kernels.h); NULL elsewhere. */
typedef struct fwm_weights_bf16 {
#define FWM_TENSOR_FIELD16_(field, name, rows, cols) const uint16_t *field;
    FWM_TENSOR_LIST(FWM_TENSOR_FIELD16_)
#undef FWM_TENSOR_FIELD16_
    const uint16_t *lower[FWM_MAX_LOWER_BLOCKS][FWM_BLOCK_TENSORS];
} fwm_weights_bf16;

struct fwm_model {
    /* The architecture (arch_ops.h dispatches on it); 0, the FWM, for a model built by calloc. */
    fwm_arch arch;
    /* The FWM's hyperparameters. Other architectures fill the fields every architecture has
     * (vocab_size, embedding_length, hidden_size, residual, forget_bias, padding_token_id,
     * eos_token_id) and leave the rest zero; their own are in arch_data. */
    fwm_hparams hp;
    fwm_weights w; /* F32 row-major weights: in place in the mapping, or in `converted` */
    fwm_weights_bf16 w16; /* the FWM's matrices multiplied in BF16 (fwm.matmul_type "bf16") */
    bool bf16_matmul;     /* the file's fwm.matmul_type is "bf16" */
    uint32_t bf16_tensors; /* tensors multiplied in BF16 (any architecture) */

    /* Derived at load by fwm__model_prepare (step kernels), owned: */
    float *input_gates; /* [V, 4H]: W_ih Emb[x] + b for every token x, gate order i, f, z, o */

    /* Vocabulary: V owned NUL-terminated strings, their lengths, and an open-addressing hash index
     * (vocab_index_size slots, a power of two, each a token id + 1 or 0 for empty). */
    char **tokens;
    uint32_t *token_lengths;
    uint32_t *vocab_index;
    uint32_t vocab_index_size;

    /* The session start (docs/FORMAT.md, fwm.session.prime_tokens): the tokens a primed session has
     * read, and `start`, an owned session holding the state after reading them from zero, which
     * fwm_session_prime copies, and its next-word scores (V floats; NULL without prime tokens). */
    uint32_t prime_count;
    uint32_t prime_tokens[FWM_MAX_PRIME_TOKENS];
    struct fwm_session *start;
    float *start_logits;

    char *name;           /* owned, "" if absent */
    bool text_tokenizer;  /* tokenizer.ggml.model "text" (docs/TEXT.md), else "word" */
    bool has_unknown_token;    /* tokenizer.ggml.unknown_token_id is present: */
    uint32_t unknown_token_id; /* its value */
    uint64_t fingerprint;
    uint64_t parameter_count;
    bool has_checksum;
    bool checksum_verified;

    /* An architecture's own data (hyperparameters, weight pointers, tables), owned through its
     * ops' unload; NULL for the FWM. */
    void *arch_data;

    /* Storage behind the weights: */
    void *mapping;            /* mmap of the file, or NULL */
    size_t mapping_size;
    void *file_copy;          /* owned copy of the file (no mmap, or an unaligned buffer) */
    float *converted;         /* owned F32 copies of tensors that could not be used in place */
    uint16_t *converted16;    /* owned aligned copies of BF16 matrices stored at odd addresses */
};

/* Compute the derived tensors (input_gates) once the weights are set. Implemented with the step
 * kernels. FWM_ERR_OUT_OF_MEMORY. */
fwm_status fwm__model_prepare(struct fwm_model *model, fwm_error *err);

/* Build the start state (`start`, `start_logits`) from prime_count and prime_tokens, once the
 * model can step; replaces an earlier one. FWM_ERR_OUT_OF_MEMORY. */
fwm_status fwm__model_build_start(struct fwm_model *model, fwm_error *err);

/* Release what fwm__model_prepare allocated. */
void fwm__model_unprepare(struct fwm_model *model);

/* ---- shared by every architecture's loader (model.c) ---- */

/* F32 pointers to n checked tensors: in place where the data is aligned F32, else widened into
 * model->converted (one allocation). FWM_ERR_OUT_OF_MEMORY. */
fwm_status fwm__bind_tensors(struct fwm_model *model, const fwm_schema_tensor *tensors, size_t n,
                             const float **pointers, fwm_error *err);

/* As fwm__bind_tensors, except that with `bf16` (the file's fwm.matmul_type is "bf16") each
 * tensor i with multiplied[i] that is stored as BF16 and has at most FWM_BF16_MAX_COLS columns is
 * kept as BF16: pointers16[i] points at it (in place, or an aligned copy in
 * model->converted16) and pointers[i] is NULL; pointers16[i] is NULL for every other tensor.
 * Counts those tensors in model->bf16_tensors. FWM_ERR_OUT_OF_MEMORY. */
fwm_status fwm__bind_tensors_bf16(struct fwm_model *model, const fwm_schema_tensor *tensors,
                                  size_t n, bool bf16, const bool *multiplied,
                                  const float **pointers, const uint16_t **pointers16,
                                  fwm_error *err);

/* Set has_checksum, checksum_verified and the fingerprint (`computed`) from a parsed file's
 * stored keys (its schema's head) and the checksum of its data: FWM_ERR_CHECKSUM on a mismatch
 * when params ask to verify. */
fwm_status fwm__check_integrity(struct fwm_model *model, const fwm__schema_head *head,
                                uint64_t checksum, uint64_t computed,
                                const fwm_model_params *params, fwm_error *err);

/* Take a parsed schema head's strings (tokens, their lengths, the name: the head's pointers are
 * cleared) and its prime tokens into the model. */
void fwm__model_take_strings(struct fwm_model *model, fwm__schema_head *head);

/* input gates [V, 4H]: table[x] = W_ih Emb[x] + b for every token x with the step's kernel (W_ih
 * in F32, or in BF16 when w_ih16 is not NULL), or NULL (FWM_OK) when larger than the step's table
 * limit. FWM_ERR_OUT_OF_MEMORY. */
fwm_status fwm__input_gate_table(const float *emb, const float *w_ih, const uint16_t *w_ih16,
                                 const float *bias, size_t V, size_t E, size_t H, float **table,
                                 fwm_error *err);

#endif
