/* fwm_model_writer.c - fwm__model_write: a complete fwm model file from hyperparameters, a
 * vocabulary and F32 tensors, written atomically. The spec is checked with the reader's own rules
 * first, the file is assembled in memory (gguf_writer.h), parsed back as a self-check, then
 * written to a temporary file in the target's folder, synced and renamed over the target. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "fwm_alloc.h"
#include "fwm_error.h"
#include "fwm_model_shape.h"
#include "fwm_schema.h"
#include "gguf_writer.h"
#include "writer_common.h"
#include "xxhash64.h"

/* Every key this writer writes itself; extra keys may not repeat them. */
static const char *const written_keys[] = {
    "general.architecture", "general.alignment", "general.name",
#define FWM_HPARAM_KEY_(field, key, kind, def, low, high) key,
    FWM_HPARAM_LIST(FWM_HPARAM_KEY_)
#undef FWM_HPARAM_KEY_
    "tokenizer.ggml.tokens", FWM_KEY_PRIME_TOKENS, FWM_KEY_CHECKSUM,
    FWM_KEY_FINGERPRINT};

/* The FWM's own kind (the others are writer_common.h's). */
#define FWM_WRITER_PUT_POLICY(w, key, value) \
    fwm__gguf_writer_add_string(w, key, (value) == FWM_READ_ON_TOKEN ? "token" : "always")
/* fwm.block_count only for a stacked FWM: a file with one layer is what it was before the key. */
#define FWM_WRITER_PUT_BLOCKS(w, key, value) \
    do {                                     \
        if ((value) > 1) fwm__gguf_writer_add_u32(w, key, (uint32_t)(value)); \
    } while (0)

static fwm_status check_spec(const void *raw, fwm_error *err) {
    const fwm_write_spec *spec = raw;
    fwm_status st = fwm__hparams_check(&spec->hp, FWM_ERR_INVALID_ARGUMENT, err);
    if (st) return st;
    if ((st = fwm__writer_check_tokens(spec->head.tokens, spec->hp.vocab_size, err))) return st;
    for (int i = 0; i < fwm__tensor_count(&spec->hp); i++)
        if (!spec->tensors[i])
            return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "tensor '%s' has no data",
                              fwm__tensor_name(i));
    if ((st = fwm__writer_check_prime(&spec->head, spec->hp.vocab_size, err)))
        return st;
    return fwm__writer_check_extra(&spec->head, written_keys,
                                   sizeof written_keys / sizeof written_keys[0], "fwm__model_write", err);
}

/* Assemble the whole file in memory. */
static fwm_status build_file(const void *raw, uint8_t **file, size_t *size, fwm_error *err) {
    const fwm_write_spec *spec = raw;
    const fwm_hparams *hp = &spec->hp;
    uint32_t v = hp->vocab_size;
    uint32_t *lengths = fwm__writer_token_lengths(spec->head.tokens, v);
    if (!lengths) return fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "out of memory for %" PRIu32 " tokens", v);

    const int n = fwm__tensor_count(hp);
    uint64_t n_bytes[FWM_MAX_TENSORS];
    fwm__xxh64_state state;
    fwm__xxh64_init(&state, 0);
    for (int i = 0; i < n; i++) {
        uint64_t rows, cols;
        fwm__tensor_shape(hp, i, &rows, &cols, NULL);
        n_bytes[i] = rows * cols * sizeof(float);
        fwm__xxh64_update(&state, spec->tensors[i], (size_t)n_bytes[i]);
    }
    uint64_t checksum = fwm__xxh64_digest(&state);
    uint64_t fingerprint = fwm__schema_fingerprint(hp, spec->head.tokens, lengths, checksum);
    fwm__free(lengths);

    fwm_gguf_writer w;
    fwm__gguf_writer_init(&w, FWM_WRITER_ALIGNMENT);
    fwm__writer_add_general(&w, "fwm", spec->head.name);
#define FWM_HPARAM_PUT_(field, key, kind, def, low, high) FWM_WRITER_PUT_##kind(&w, key, hp->field);
    FWM_HPARAM_LIST(FWM_HPARAM_PUT_)
#undef FWM_HPARAM_PUT_
    fwm__writer_add_vocabulary(&w, &spec->head, v);
    fwm__writer_add_trailer_keys(&w, checksum, fingerprint, &spec->head);
    for (int i = 0; i < n; i++) {
        uint64_t rows, cols;
        int is_matrix;
        fwm__tensor_shape(hp, i, &rows, &cols, &is_matrix);
        uint64_t dims[2] = {is_matrix ? cols : rows, rows};
        fwm__gguf_writer_add_tensor(&w, fwm__tensor_name(i), is_matrix ? 2 : 1, dims,
                                    FWM_GGML_TYPE_F32, spec->tensors[i], n_bytes[i], 0);
    }
    fwm_status st = fwm__gguf_writer_finish(&w, file, size, NULL, err);
    fwm__gguf_writer_release(&w);
    return st;
}

/* The self-check: parse the assembled file back and verify its checksum. */
static fwm_status reread(const uint8_t *file, size_t size, fwm_error *err) {
    fwm_schema schema;
    fwm_status st = fwm__schema_parse(file, size, &schema, err);
    if (st) return st;
    st = schema.head.has_checksum && fwm__schema_checksum(&schema) == schema.head.checksum
             ? FWM_OK
             : fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "internal: written checksum does not verify");
    fwm__schema_release(&schema);
    return st;
}

static const fwm_writer_kind kind = {"fwm__model_write", check_spec, build_file, reread};

fwm_status fwm__model_write(const char *path, const fwm_write_spec *spec, fwm_error *err) {
    return fwm__writer_write(path, spec, &kind, err);
}
