/* mnm_writer.c - fwm_mnm_model_write: a complete `mnm` model file from hyperparameters, a
 * vocabulary and F32 tensors, written atomically; checked with the reader's rules first, assembled
 * in memory, parsed back as a self-check (writer_common.h does what the FWM's writer does too). */
#include <inttypes.h>
#include <string.h>

#include "fwm_alloc.h"
#include "fwm_error.h"
#include "gguf_writer.h"
#include "mnm/mnm_schema.h"
#include "writer_common.h"
#include "xxhash64.h"

static const char *const written_keys[] = {
    "general.architecture", "general.alignment", "general.name",
#define FWM_MNM_KEY_(field, key, kind, def, low, high) key,
    FWM_MNM_HPARAM_LIST(FWM_MNM_KEY_)
#undef FWM_MNM_KEY_
    "tokenizer.ggml.model", "tokenizer.ggml.tokens", FWM_KEY_PRIME_TOKENS, FWM_KEY_CHECKSUM,
    FWM_KEY_FINGERPRINT};

static fwm_status check_spec(const void *raw, fwm_error *err) {
    const fwm_mnm_write_spec *spec = raw;
    fwm_status st = fwm__mnm_hparams_check(&spec->hp, FWM_ERR_INVALID_ARGUMENT, err);
    if (st) return st;
    if ((st = fwm__writer_check_tokens(spec->tokens, spec->hp.vocab_size, err))) return st;
    size_t n = fwm_mnm_tensor_count(&spec->hp);
    for (size_t i = 0; i < n; i++) {
        if (!spec->tensors[i]) {
            char name[48];
            uint64_t rows, cols;
            fwm_mnm_tensor_at(&spec->hp, i, name, &rows, &cols);
            return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "tensor '%s' has no data", name);
        }
    }
    if ((st = fwm__writer_check_prime(spec->has_prime_tokens, spec->prime_tokens, spec->prime_count,
                                      spec->hp.vocab_size, err)))
        return st;
    return fwm__writer_check_extra(spec->extra, spec->extra_count, written_keys,
                                   sizeof written_keys / sizeof written_keys[0],
                                   "fwm_mnm_model_write", err);
}

static fwm_status build_file(const void *raw, uint8_t **file, size_t *size, fwm_error *err) {
    const fwm_mnm_write_spec *spec = raw;
    const fwm_mnm_hparams *hp = &spec->hp;
    uint32_t v = hp->vocab_size;
    size_t n = fwm_mnm_tensor_count(hp);
    uint32_t *lengths = fwm__writer_token_lengths(spec->tokens, v);
    if (!lengths) return fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "out of memory for %" PRIu32 " tokens", v);

    uint64_t n_bytes[FWM_MNM_MAX_TENSORS];
    fwm__xxh64_state state;
    fwm__xxh64_init(&state, 0);
    for (size_t i = 0; i < n; i++) {
        char name[48];
        uint64_t rows, cols;
        fwm_mnm_tensor_at(hp, i, name, &rows, &cols);
        n_bytes[i] = rows * cols * sizeof(float);
        fwm__xxh64_update(&state, spec->tensors[i], (size_t)n_bytes[i]);
    }
    uint64_t checksum = fwm__xxh64_digest(&state);
    uint64_t fingerprint = fwm_mnm_fingerprint(hp, spec->tokens, lengths, checksum);
    fwm__free(lengths);

    fwm_gguf_writer w;
    fwm__gguf_writer_init(&w, FWM_WRITER_ALIGNMENT);
    fwm__writer_add_general(&w, "mnm", spec->name);
#define FWM_MNM_PUT_(field, key, kind, def, low, high) FWM_WRITER_PUT_##kind(&w, key, hp->field);
    FWM_MNM_HPARAM_LIST(FWM_MNM_PUT_)
#undef FWM_MNM_PUT_
    fwm__writer_add_vocabulary(&w, spec->tokens, v, spec->has_prime_tokens, spec->prime_tokens,
                               spec->prime_count);
    fwm__writer_add_trailer_keys(&w, checksum, fingerprint, spec->extra, spec->extra_count);
    for (size_t i = 0; i < n; i++) {
        char name[48];
        uint64_t rows, cols;
        fwm_mnm_tensor_at(hp, i, name, &rows, &cols);
        int is_matrix = fwm__mnm_tensor_is_matrix(hp, i);
        uint64_t dims[2] = {is_matrix ? cols : rows, rows};
        fwm__gguf_writer_add_tensor(&w, name, is_matrix ? 2 : 1, dims, FWM_GGML_TYPE_F32,
                                    spec->tensors[i], n_bytes[i], 0);
    }
    fwm_status st = fwm__gguf_writer_finish(&w, file, size, NULL, err);
    fwm__gguf_writer_release(&w);
    return st;
}

/* The self-check: parse the assembled file back and verify its checksum. */
static fwm_status reread(const uint8_t *file, size_t size, fwm_error *err) {
    fwm_mnm_schema schema;
    fwm_status st = fwm_mnm_schema_parse(file, size, &schema, err);
    if (st) return st;
    st = schema.has_checksum && fwm_mnm_schema_checksum(&schema) == schema.checksum
             ? FWM_OK
             : fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "internal: written checksum does not verify");
    fwm_mnm_schema_release(&schema);
    return st;
}

static const fwm_writer_kind kind = {"fwm_mnm_model_write", check_spec, build_file, reread};

fwm_status fwm_mnm_model_write(const char *path, const fwm_mnm_write_spec *spec, fwm_error *err) {
    return fwm__writer_write(path, spec, &kind, err);
}
