/* fwm_schema.h - the FWM schema on top of the GGUF container: parse and validate a whole model file
 * held in memory, and write one.
 *
 * Parsing checks the container (gguf_reader.h) and then the schema: every required key with its
 * type and range, the vocabulary, and every tensor of FWM_TENSOR_LIST with its type and shape.
 * Messages name the key or tensor, what was expected and what was found. Nothing is trusted or
 * allocated before it has been checked against the buffer's size and against overflow.
 * Internal to libfwm and its tools; the public API is include/fwm/fwm.h.
 */
#ifndef FWM_MODEL_FORMAT_SCHEMA_H
#define FWM_MODEL_FORMAT_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fwm/fwm.h"
#include "fwm_hparams.h"
#include "schema_head.h"

/* GGUF tensor types the schema accepts (values are GGML's). */
#define FWM_GGML_TYPE_F32 0u
#define FWM_GGML_TYPE_F16 1u
#define FWM_GGML_TYPE_BF16 30u

/* Optional metadata keys written by fwm's writer. */
#define FWM_KEY_CHECKSUM "fwm.checksum"       /* u64: XXH64 (seed 0) of the tensor data, see FORMAT.md */
#define FWM_KEY_FINGERPRINT "fwm.fingerprint" /* u64: see fwm__schema_fingerprint */
/* string, optional: "f32" (absent: every tensor widened to F32) or "bf16" (the BF16 matrices the
 * step multiplies are multiplied in BF16; fwm and lstm only); see fwm__fingerprint_matmul */
#define FWM_KEY_MATMUL_TYPE "fwm.matmul_type"
/* The widest BF16 matrix (columns) multiplied in BF16; wider ones are widened to F32 at load. */
#define FWM_BF16_MATRIX_MAX_COLS 8192u
/* u32, optional: the id that words outside the vocabulary read as (<unk>), docs/FORMAT.md */
#define FWM_KEY_UNKNOWN_TOKEN "tokenizer.ggml.unknown_token_id"
/* string: "word" (the catbAbI tokenizer, the default) or "text" (docs/TEXT.md) */
#define FWM_KEY_TOKENIZER_MODEL "tokenizer.ggml.model"

/* The tokens a new session reads before anything else (docs/FORMAT.md): an array of u32 token ids,
 * each below V, at most FWM_MAX_PRIME_TOKENS of them, possibly none. A file without the key gets
 * the default: one token, tokenizer.ggml.eos_token_id, as every catbAbI story begins. */
#define FWM_KEY_PRIME_TOKENS "fwm.session.prime_tokens"

typedef struct fwm_schema_tensor {
    const void *data;    /* into the parsed buffer */
    uint32_t type;       /* FWM_GGML_TYPE_* */
    uint64_t rows, cols; /* as FWM_TENSOR_LIST says (cols = 1 for vectors) */
    uint64_t n_bytes;    /* bytes of data in the file */
    uint64_t file_offset; /* absolute offset of data in the file */
} fwm_schema_tensor;

typedef struct fwm_schema {
    fwm_hparams hp;
    fwm__schema_head head;    /* name, vocabulary, prime tokens, checksum and fingerprint keys */
    fwm_schema_tensor tensors[FWM_MAX_TENSORS]; /* FWM_TENSOR_LIST order, then the lower layers' */
} fwm_schema;

/* Parse and validate the model file in buf[0..size). On success *out holds owned copies of the
 * strings and pointers into `buf` for the tensor data (buf must outlive that use). On failure
 * *out is left released (safe to call fwm__schema_release on). Returns FWM_ERR_FORMAT,
 * FWM_ERR_UNSUPPORTED (e.g. a tensor type outside F32/F16/BF16), FWM_ERR_OUT_OF_MEMORY. The checksum
 * is not verified here (see fwm__schema_checksum). */
fwm_status fwm__schema_parse(const void *buf, size_t size, fwm_schema *out, fwm_error *err);

/* Release what fwm__schema_parse allocated; idempotent; NULL is a no-op. */
void fwm__schema_release(fwm_schema *schema);

/* XXH64 (seed 0) over the tensor data bytes as stored, tensors in FWM_TENSOR_LIST order. */
uint64_t fwm__schema_checksum(const fwm_schema *schema);

/* Model fingerprint: XXH64 over a canonical little-endian serialisation of the hyperparameters,
 * the vocabulary and the tensor-data checksum (see FORMAT.md). Ties session state blobs to a model. */
uint64_t fwm__schema_fingerprint(const fwm_hparams *hp, const char *const *tokens,
                                const uint32_t *token_lengths, uint64_t checksum);

/* An extra metadata key for fwm__model_write (e.g. provenance "fwm.training.steps"): a small tagged
 * union. The key must not be one the writer writes itself (general.architecture,
 * general.alignment, general.name, the fwm.* schema keys, the tokenizer.ggml.* keys, fwm.checksum,
 * fwm.fingerprint); extra keys must be distinct and non-empty. */
typedef enum fwm_write_kv_kind {
    FWM_WRITE_KV_STRING = 0, /* value.string: NUL-terminated, written as GGUF string */
    FWM_WRITE_KV_U32 = 1,    /* value.u32 */
    FWM_WRITE_KV_U64 = 2,    /* value.u64 */
    FWM_WRITE_KV_F32 = 3,    /* value.f32 */
    FWM_WRITE_KV_BOOL = 4    /* value.boolean */
} fwm_write_kv_kind;

typedef struct fwm_write_kv {
    const char *key; /* e.g. "fwm.training.mode"; borrowed */
    fwm_write_kv_kind kind;
    union {
        const char *string; /* borrowed */
        uint32_t u32;
        uint64_t u64;
        float f32;
        bool boolean;
    } value;
} fwm_write_kv;

/* What every architecture's write spec holds besides its hyperparameters and tensors: the keys they
 * all share, which a schema's head (schema_head.h) holds once read back. */
typedef struct fwm__write_head {
    const char *name;                /* general.name; NULL to omit */
    const char *const *tokens;       /* V NUL-terminated token strings */
    const fwm_write_kv *extra;       /* optional extra keys (provenance), may be NULL */
    size_t extra_count;
    /* FWM_KEY_PRIME_TOKENS: written when has_prime_tokens (prime_count ids, possibly none, each
     * below V); omitted otherwise, which readers take as the default (one eos token). */
    bool has_prime_tokens;
    const uint32_t *prime_tokens;
    size_t prime_count;
} fwm__write_head;

/* What fwm's writer needs to write a model file: F32 tensors in FWM_TENSOR_LIST order. */
typedef struct fwm_write_spec {
    fwm_hparams hp;
    fwm__write_head head;                  /* name, vocabulary, extra keys, prime tokens */
    const float *tensors[FWM_MAX_TENSORS]; /* F32 row-major data, list order (fwm__tensor_count) */
} fwm_write_spec;

/* Write a complete model file (alignment 64, checksum and fingerprint keys included) to `path`,
 * atomically (temporary file + rename). Validates the spec as the reader would. Returns FWM_ERR_IO,
 * FWM_ERR_INVALID_ARGUMENT, FWM_ERR_OUT_OF_MEMORY. */
fwm_status fwm__model_write(const char *path, const fwm_write_spec *spec, fwm_error *err);

#endif
