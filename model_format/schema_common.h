/* schema_common.h - the parts of a model file's schema every architecture shares: typed key reads
 * with their messages, the vocabulary, the prime tokens, general.name, the checksum and fingerprint
 * keys, one tensor's type and shape check, the refusal of tensors outside a schema, and the bytes a
 * fingerprint hashes. The `fwm` schema (fwm_schema.c) and every other architecture's schema
 * (model_format/<arch>/) are written with these, so their messages and rules are one.
 * Internal to libfwm and its tools.
 */
#ifndef FWM_MODEL_FORMAT_SCHEMA_COMMON_H
#define FWM_MODEL_FORMAT_SCHEMA_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fwm_schema.h"
#include "gguf_reader.h"
#include "xxhash64.h"

/* The pair `key` with GGUF type `type`; missing (when required) or another type is FWM_ERR_FORMAT
 * ("missing key 'k' (u32)", "key 'k': expected type u32, found i32"). *out is NULL when an optional
 * key is absent. */
fwm_status fwm__schema_find_typed(const fwm_gguf_file *f, const char *key, uint32_t type,
                                  int required, const fwm_gguf_kv **out, fwm_error *err);

/* Required scalars of one type. */
fwm_status fwm__schema_get_u32(const fwm_gguf_file *f, const char *key, uint32_t *value, fwm_error *err);
fwm_status fwm__schema_get_f32(const fwm_gguf_file *f, const char *key, float *value, fwm_error *err);
fwm_status fwm__schema_get_bool(const fwm_gguf_file *f, const char *key, bool *value, fwm_error *err);
/* A string key, required or not (*present says which when not). */
fwm_status fwm__schema_get_string(const fwm_gguf_file *f, const char *key, int required,
                                  fwm_gguf_string *value, int *present, fwm_error *err);
/* An optional u64 key. */
fwm_status fwm__schema_get_optional_u64(const fwm_gguf_file *f, const char *key, int *present,
                                        uint64_t *value, fwm_error *err);
/* A required string key that must equal `expected`. */
fwm_status fwm__schema_expect_string(const fwm_gguf_file *f, const char *key, const char *expected,
                                     fwm_error *err);

/* One read per hyperparameter kind (FWM_HPARAM_LIST's kinds; POLICY is the FWM's own). `err` is
 * taken from the caller's scope. */
#define FWM_SCHEMA_GET_U32(f, key, field) fwm__schema_get_u32(f, key, field, err)
#define FWM_SCHEMA_GET_TOKEN(f, key, field) fwm__schema_get_u32(f, key, field, err)
#define FWM_SCHEMA_GET_BOOL(f, key, field) fwm__schema_get_bool(f, key, field, err)
#define FWM_SCHEMA_GET_F32(f, key, field) fwm__schema_get_f32(f, key, field, err)
#define FWM_SCHEMA_GET_F32_POS(f, key, field) fwm__schema_get_f32(f, key, field, err)

/* The tokenizer keys (docs/FORMAT.md): tokenizer.ggml.model, "word" (the catbAbI word tokenizer)
 * or "text" (the text rules of common/fwm_text.h, docs/TEXT.md), into *is_text; and the optional
 * tokenizer.ggml.unknown_token_id (u32, below V), the id words outside the vocabulary read as,
 * into *unknown (FWM_NO_TOKEN when absent). Either pointer may be NULL. */
fwm_status fwm__schema_read_tokenizer(const fwm_gguf_file *f, uint32_t vocab_size, bool *is_text,
                                      uint32_t *unknown, fwm_error *err);

/* tokenizer.ggml.tokens: an array of exactly `vocab_size` strings (`size_key` names the key that
 * says V in the message) following the vocabulary rules (fwm__vocab_check); on success *tokens and
 * *lengths are owned copies (fwm__free each token, then the arrays), else both stay NULL or partly
 * filled for the caller's release. */
fwm_status fwm__schema_read_vocabulary(const fwm_gguf_file *f, uint32_t vocab_size,
                                       const char *size_key, char ***tokens, uint32_t **lengths,
                                       fwm_error *err);

/* FWM_KEY_PRIME_TOKENS: optional array of u32 ids below V, at most FWM_MAX_PRIME_TOKENS; absent
 * means one token, `eos`. */
fwm_status fwm__schema_read_prime_tokens(const fwm_gguf_file *f, uint32_t vocab_size, uint32_t eos,
                                         int *has, uint32_t *count,
                                         uint32_t tokens[FWM_MAX_PRIME_TOKENS], fwm_error *err);

/* general.name (optional, no NUL byte) as an owned string, "" when absent. */
fwm_status fwm__schema_read_name(const fwm_gguf_file *f, char **name, fwm_error *err);

/* The shared keys after an architecture's hyperparameters, into the schema's head, in this order:
 * tokenizer.ggml.model "word", the vocabulary (V tokens; `size_key` names the key holding V), the
 * prime tokens (default `eos`), general.name, fwm.checksum, fwm.fingerprint and fwm.matmul_type. */
fwm_status fwm__schema_read_common(const fwm_gguf_file *f, uint32_t vocab_size, uint32_t eos,
                                   const char *size_key, fwm__schema_head *out, fwm_error *err);

/* What an architecture's schema adds to the shared parse (fwm__schema_parse_kind). */
typedef struct fwm_schema_kind {
    const char *arch;     /* general.architecture's value, e.g. "lstm" */
    const char *size_key; /* the key holding V, e.g. "lstm.vocab_size" */
    /* Read every hyperparameter key and check the ranges (FWM_ERR_FORMAT) into `schema`; give V
     * and the eos token id. */
    fwm_status (*read_hparams)(const fwm_gguf_file *f, void *schema, uint32_t *vocab_size,
                               uint32_t *eos, fwm_error *err);
    /* Every tensor of the architecture's list, and no other. */
    fwm_status (*read_tensors)(const fwm_gguf_file *f, void *schema, fwm_error *err);
    /* Whether the runtime multiplies BF16 matrices in BF16 for it (fwm.matmul_type "bf16" is
     * refused with FWM_ERR_UNSUPPORTED otherwise). */
    int bf16_matmul;
} fwm_schema_kind;

/* The parse every schema makes, in this order: the container, general.architecture == kind->arch,
 * the hyperparameters, the shared keys (fwm__schema_read_common), the tensors. On failure the
 * caller releases what `schema` holds. */
fwm_status fwm__schema_parse_kind(const void *buf, size_t size, const fwm_schema_kind *kind,
                                  void *schema, fwm__schema_head *head, fwm_error *err);

/* Free the vocabulary and the name a schema's head holds (V tokens). */
void fwm__schema_release_head(fwm__schema_head *head, uint32_t vocab_size);

/* The tensor `name` must exist with the row-major shape [rows, cols] (one GGUF dim when not
 * is_matrix) and type F32, F16 or BF16; *out points into the file's buffer. */
fwm_status fwm__schema_read_tensor(const fwm_gguf_file *f, const char *name, uint64_t rows,
                                   uint64_t cols, int is_matrix, fwm_schema_tensor *out,
                                   fwm_error *err);

/* Refuse a tensor whose name is none of names[0..count) ("unexpected tensor 'x': not part of the
 * <arch> schema"); to be called once every listed tensor has been found. */
fwm_status fwm__schema_no_other_tensors(const fwm_gguf_file *f, const char *const *names,
                                        size_t count, const char *arch, fwm_error *err);

/* Fingerprint bytes: a u32, a float's bit pattern (4 little-endian bytes each), a u64 (8). */
void fwm__fp_u32(fwm__xxh64_state *state, uint32_t value);
void fwm__fp_f32(fwm__xxh64_state *state, float value);
void fwm__fp_u64(fwm__xxh64_state *state, uint64_t value);
/* The fingerprint of a model whose fwm.matmul_type is "bf16" (`bf16`): XXH64 (seed 0) of the 8
 * bytes "FWMBF16\0" and the u64 `fingerprint` its architecture's rule computes; that fingerprint
 * unchanged otherwise (docs/FORMAT.md, section 4). */
uint64_t fwm__fingerprint_matmul(uint64_t fingerprint, int bf16);

/* u32 V, then each token's u32 byte length and its bytes. */
void fwm__fp_vocabulary(fwm__xxh64_state *state, uint32_t vocab_size, const char *const *tokens,
                        const uint32_t *token_lengths);

#endif
