/* arch_writer_impl.h - the model writer of an architecture other than the FWM, written once: the
 * spec's checks, the file assembled in memory (keys of the architecture's hparam list, vocabulary,
 * trailer keys, tensors in list order), and the parse-back self-check; writer_common.h does the rest.
 * Included once per architecture by model_format/<arch>/<arch>_writer.c after defining
 *   FWM_ARCH_WRITER       the architecture's C prefix, lower case (lstm: fwm_lstm_..., fwm__lstm_...)
 *   FWM_ARCH_WRITER_UPPER the same in upper case (LSTM: FWM_LSTM_HPARAM_LIST, FWM_LSTM_MAX_TENSORS)
 * and including its schema header; it defines that architecture's fwm_<arch>_model_write. No include
 * guard on purpose. */
#include <inttypes.h>
#include <string.h>

#include "fwm_alloc.h"
#include "fwm_error.h"
#include "gguf_writer.h"
#include "writer_common.h"
#include "xxhash64.h"

#define AW_CAT3_(a, b, c) a##b##c
#define AW_CAT3(a, b, c) AW_CAT3_(a, b, c)
#define AW_STR_(x) #x
#define AW_STR(x) AW_STR_(x)
#define AW_PUBLIC(suffix) AW_CAT3(fwm_, FWM_ARCH_WRITER, suffix)
#define AW_INTERNAL(suffix) AW_CAT3(fwm__, FWM_ARCH_WRITER, suffix)
#define AW_UPPER(suffix) AW_CAT3(FWM_, FWM_ARCH_WRITER_UPPER, suffix)
#define AW_NAME AW_STR(FWM_ARCH_WRITER)

static const char *const written_keys[] = {
    "general.architecture", "general.alignment", "general.name",
#define FWM_AW_KEY_(field, key, kind, def, low, high) key,
    AW_UPPER(_HPARAM_LIST)(FWM_AW_KEY_)
#undef FWM_AW_KEY_
    "tokenizer.ggml.tokens", FWM_KEY_PRIME_TOKENS, FWM_KEY_CHECKSUM,
    FWM_KEY_FINGERPRINT};

static fwm_status check_spec(const void *raw, fwm_error *err) {
    const AW_PUBLIC(_write_spec) *spec = raw;
    fwm_status st = AW_INTERNAL(_hparams_check)(&spec->hp, FWM_ERR_INVALID_ARGUMENT, err);
    if (st) return st;
    if ((st = fwm__writer_check_tokens(spec->head.tokens, spec->hp.vocab_size, err))) return st;
    size_t n = AW_INTERNAL(_tensor_count)(&spec->hp);
    for (size_t i = 0; i < n; i++) {
        if (!spec->tensors[i]) {
            char name[48];
            uint64_t rows, cols;
            AW_INTERNAL(_tensor_at)(&spec->hp, i, name, &rows, &cols);
            return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "tensor '%s' has no data", name);
        }
    }
    if ((st = fwm__writer_check_prime(&spec->head, spec->hp.vocab_size, err)))
        return st;
    return fwm__writer_check_extra(&spec->head, written_keys,
                                   sizeof written_keys / sizeof written_keys[0],
                                   "fwm__" AW_NAME "_model_write", err);
}

static fwm_status build_file(const void *raw, uint8_t **file, size_t *size, fwm_error *err) {
    const AW_PUBLIC(_write_spec) *spec = raw;
    const AW_PUBLIC(_hparams) *hp = &spec->hp;
    uint32_t v = hp->vocab_size;
    size_t n = AW_INTERNAL(_tensor_count)(hp);
    uint32_t *lengths = fwm__writer_token_lengths(spec->head.tokens, v);
    if (!lengths) return fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "out of memory for %" PRIu32 " tokens", v);

    uint64_t n_bytes[AW_UPPER(_MAX_TENSORS)];
    fwm__xxh64_state state;
    fwm__xxh64_init(&state, 0);
    for (size_t i = 0; i < n; i++) {
        char name[48];
        uint64_t rows, cols;
        AW_INTERNAL(_tensor_at)(hp, i, name, &rows, &cols);
        n_bytes[i] = rows * cols * sizeof(float);
        fwm__xxh64_update(&state, spec->tensors[i], (size_t)n_bytes[i]);
    }
    uint64_t checksum = fwm__xxh64_digest(&state);
    uint64_t fingerprint = AW_INTERNAL(_fingerprint)(hp, spec->head.tokens, lengths, checksum);
    fwm__free(lengths);

    fwm_gguf_writer w;
    fwm__gguf_writer_init(&w, FWM_WRITER_ALIGNMENT);
    fwm__writer_add_general(&w, AW_NAME, spec->head.name);
#define FWM_AW_PUT_(field, key, kind, def, low, high) FWM_WRITER_PUT_##kind(&w, key, hp->field);
    AW_UPPER(_HPARAM_LIST)(FWM_AW_PUT_)
#undef FWM_AW_PUT_
    fwm__writer_add_vocabulary(&w, &spec->head, v);
    fwm__writer_add_trailer_keys(&w, checksum, fingerprint, &spec->head);
    for (size_t i = 0; i < n; i++) {
        char name[48];
        uint64_t rows, cols;
        AW_INTERNAL(_tensor_at)(hp, i, name, &rows, &cols);
        int is_matrix = AW_INTERNAL(_tensor_is_matrix)(hp, i);
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
    AW_PUBLIC(_schema) schema;
    fwm_status st = AW_INTERNAL(_schema_parse)(file, size, &schema, err);
    if (st) return st;
    st = schema.head.has_checksum && AW_INTERNAL(_schema_checksum)(&schema) == schema.head.checksum
             ? FWM_OK
             : fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "internal: written checksum does not verify");
    AW_INTERNAL(_schema_release)(&schema);
    return st;
}

static const fwm_writer_kind kind = {"fwm__" AW_NAME "_model_write", check_spec, build_file, reread};

fwm_status AW_INTERNAL(_model_write)(const char *path, const AW_PUBLIC(_write_spec) *spec, fwm_error *err) {
    return fwm__writer_write(path, spec, &kind, err);
}
