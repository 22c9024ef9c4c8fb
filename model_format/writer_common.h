/* writer_common.h - the parts of a model writer every architecture shares: the checks of the
 * vocabulary, the prime tokens and the extra (provenance) keys a spec carries, the common keys
 * (architecture, alignment, name, tokenizer, prime tokens, checksum, fingerprint), and the atomic
 * write of the assembled file (temporary file in the target's folder, fsync, rename).
 * fwm_model_writer.c (`fwm`) and model_format/<arch>/ writers are built on it.
 * Internal to libfwm and its tools.
 */
#ifndef FWM_MODEL_FORMAT_WRITER_COMMON_H
#define FWM_MODEL_FORMAT_WRITER_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fwm_schema.h"
#include "gguf_writer.h"

/* Every model file's alignment as fwm's writers write it. */
#define FWM_WRITER_ALIGNMENT 64u

/* One write per hyperparameter kind (FWM_HPARAM_LIST's kinds), with the kind's GGUF type. */
#define FWM_WRITER_PUT_U32(w, key, value) fwm__gguf_writer_add_u32(w, key, value)
#define FWM_WRITER_PUT_TOKEN(w, key, value) fwm__gguf_writer_add_u32(w, key, value)
#define FWM_WRITER_PUT_BOOL(w, key, value) fwm__gguf_writer_add_bool(w, key, value)
#define FWM_WRITER_PUT_F32(w, key, value) fwm__gguf_writer_add_f32(w, key, value)
#define FWM_WRITER_PUT_F32_POS(w, key, value) fwm__gguf_writer_add_f32(w, key, value)

/* FWM_ERR_INVALID_ARGUMENT on a big-endian host (the writers copy floats as they are). */
fwm_status fwm__writer_check_host(const char *who, fwm_error *err);

/* tokens[0..V) non-NULL and following the vocabulary rules. */
fwm_status fwm__writer_check_tokens(const char *const *tokens, uint32_t vocab_size, fwm_error *err);

/* The prime tokens of a spec's head (only when has_prime_tokens): at most FWM_MAX_PRIME_TOKENS,
 * each below V. */
fwm_status fwm__writer_check_prime(const fwm__write_head *head, uint32_t vocab_size,
                                   fwm_error *err);

/* Extra keys: named, distinct, none of written[0..n_written), a known kind, strings non-NULL;
 * `who` names the writer in the message. */
fwm_status fwm__writer_check_extra(const fwm__write_head *head,
                                   const char *const *written, size_t n_written, const char *who,
                                   fwm_error *err);

/* general.architecture, general.alignment and general.name (when not NULL). */
void fwm__writer_add_general(fwm_gguf_writer *w, const char *arch, const char *name);

/* tokenizer.ggml.model ("word", or the value of an extra key of that name: "text"),
 * tokenizer.ggml.tokens, and the prime tokens when `has`. */
void fwm__writer_add_vocabulary(fwm_gguf_writer *w, const fwm__write_head *head,
                                uint32_t vocab_size);

/* fwm.checksum, fwm.fingerprint, then the extra keys. */
void fwm__writer_add_trailer_keys(fwm_gguf_writer *w, uint64_t checksum, uint64_t fingerprint,
                                  const fwm__write_head *head);

/* Byte lengths of V NUL-terminated tokens (owned, fwm__free), NULL when out of memory. */
uint32_t *fwm__writer_token_lengths(const char *const *tokens, uint32_t vocab_size);

/* Parse an assembled file back with the architecture's reader and check its stored checksum:
 * FWM_OK, the reader's status, or FWM_ERR_INVALID_ARGUMENT when the checksum does not verify. */
typedef fwm_status (*fwm__writer_reread_fn)(const uint8_t *file, size_t size, fwm_error *err);

/* What an architecture's writer adds to the shared steps (fwm__writer_write). */
typedef struct fwm_writer_kind {
    const char *who; /* the public function, for messages: "fwm__lstm_model_write" */
    /* Check the spec with the reader's rules (FWM_ERR_INVALID_ARGUMENT). */
    fwm_status (*check)(const void *spec, fwm_error *err);
    /* Assemble the whole file in memory (*file owned by the caller, fwm__free). */
    fwm_status (*build)(const void *spec, uint8_t **file, size_t *size, fwm_error *err);
    fwm__writer_reread_fn reread;
} fwm_writer_kind;

/* Every writer's steps: the arguments and the host, the spec, the assembled file, the self-check
 * (anything the reader refuses is a bad spec or a bug: FWM_ERR_INVALID_ARGUMENT "the file would not
 * load: ...", out of memory passed on), then the atomic write. */
fwm_status fwm__writer_write(const char *path, const void *spec, const fwm_writer_kind *kind,
                             fwm_error *err);

/* Write file[0..size) to `path` atomically. FWM_ERR_IO, FWM_ERR_OUT_OF_MEMORY. */
fwm_status fwm__write_atomically(const char *path, const uint8_t *file, size_t size, fwm_error *err);

#endif
