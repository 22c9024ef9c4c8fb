/* fwm_model_writer.c - fwm_model_write: a complete fwm model file from hyperparameters, a
 * vocabulary and F32 tensors, written atomically. The spec is checked with the reader's own rules
 * first, the file is assembled in memory (gguf_writer.h), parsed back as a self-check, then
 * written to a temporary file in the target's folder, synced and renamed over the target. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fwm_alloc.h"
#include "fwm_error.h"
#include "fwm_model_shape.h"
#include "fwm_schema.h"
#include "gguf_writer.h"
#include "xxhash64.h"

#define FWM_WRITER_ALIGNMENT 64u

/* Every key this writer writes itself; extra keys may not repeat them. */
static const char *const written_keys[] = {
    "general.architecture", "general.alignment", "general.name",
#define FWM_HPARAM_KEY_(field, key, kind, def, low, high) key,
    FWM_HPARAM_LIST(FWM_HPARAM_KEY_)
#undef FWM_HPARAM_KEY_
    "tokenizer.ggml.model", "tokenizer.ggml.tokens", FWM_KEY_PRIME_TOKENS, FWM_KEY_CHECKSUM,
    FWM_KEY_FINGERPRINT};

/* One write per kind of FWM_HPARAM_LIST, with the kind's GGUF type. */
#define PUT_U32(w, key, value) fwm__gguf_writer_add_u32(w, key, value)
#define PUT_TOKEN(w, key, value) fwm__gguf_writer_add_u32(w, key, value)
#define PUT_BOOL(w, key, value) fwm__gguf_writer_add_bool(w, key, value)
#define PUT_POLICY(w, key, value) \
    fwm__gguf_writer_add_string(w, key, (value) == FWM_READ_ON_TOKEN ? "token" : "always")
#define PUT_F32(w, key, value) fwm__gguf_writer_add_f32(w, key, value)
#define PUT_F32_POS(w, key, value) fwm__gguf_writer_add_f32(w, key, value)

static int host_is_little_endian(void) {
    const uint16_t one = 1;
    uint8_t first;
    memcpy(&first, &one, 1);
    return first == 1;
}

static fwm_status check_extra(const fwm_write_spec *spec, fwm_error *err) {
    if (spec->extra_count && !spec->extra)
        return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "extra_count is %zu but extra is NULL",
                          spec->extra_count);
    for (size_t i = 0; i < spec->extra_count; i++) {
        const fwm_write_kv *kv = &spec->extra[i];
        if (!kv->key || !kv->key[0])
            return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "extra key #%zu has no name", i);
        if (strlen(kv->key) > FWM_GGUF_MAX_KEY_LENGTH)
            return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "extra key #%zu: name too long", i);
        for (size_t k = 0; k < sizeof written_keys / sizeof written_keys[0]; k++)
            if (strcmp(kv->key, written_keys[k]) == 0)
                return fwm__error(err, FWM_ERR_INVALID_ARGUMENT,
                                  "extra key '%s' is written by fwm_model_write itself", kv->key);
        for (size_t j = 0; j < i; j++)
            if (strcmp(kv->key, spec->extra[j].key) == 0)
                return fwm__error(err, FWM_ERR_INVALID_ARGUMENT,
                                  "extra key '%s' given twice (#%zu and #%zu)", kv->key, j, i);
        if (kv->kind == FWM_WRITE_KV_STRING && !kv->value.string)
            return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "extra key '%s': string value is NULL",
                              kv->key);
        if ((unsigned)kv->kind > FWM_WRITE_KV_BOOL)
            return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "extra key '%s': unknown kind %d",
                              kv->key, (int)kv->kind);
    }
    return FWM_OK;
}

static fwm_status check_spec(const fwm_write_spec *spec, fwm_error *err) {
    fwm_status st = fwm__hparams_check(&spec->hp, FWM_ERR_INVALID_ARGUMENT, err);
    if (st) return st;
    if (!spec->tokens)
        return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "the vocabulary (tokens) is NULL");
    for (uint32_t i = 0; i < spec->hp.vocab_size; i++)
        if (!spec->tokens[i])
            return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "token %" PRIu32 " is NULL", i);
    st = fwm__vocab_check(spec->tokens, NULL, spec->hp.vocab_size, FWM_ERR_INVALID_ARGUMENT, err);
    if (st) return st;
    for (int i = 0; i < FWM_TENSOR_COUNT; i++)
        if (!spec->tensors[i])
            return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "tensor '%s' has no data",
                              fwm__tensor_name(i));
    if (spec->has_prime_tokens) {
        if (spec->prime_count > FWM_MAX_PRIME_TOKENS)
            return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "%zu prime tokens, at most %u allowed",
                              spec->prime_count, FWM_MAX_PRIME_TOKENS);
        if (spec->prime_count && !spec->prime_tokens)
            return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "prime_count is %zu but prime_tokens is NULL",
                              spec->prime_count);
        for (size_t i = 0; i < spec->prime_count; i++)
            if (spec->prime_tokens[i] >= spec->hp.vocab_size)
                return fwm__error(err, FWM_ERR_INVALID_ARGUMENT,
                                  "prime token %zu is %" PRIu32 ", not below the vocabulary size %" PRIu32,
                                  i, spec->prime_tokens[i], spec->hp.vocab_size);
    }
    return check_extra(spec, err);
}

static void add_extra(fwm_gguf_writer *w, const fwm_write_kv *kv) {
    switch (kv->kind) {
    case FWM_WRITE_KV_STRING: fwm__gguf_writer_add_string(w, kv->key, kv->value.string); break;
    case FWM_WRITE_KV_U32: fwm__gguf_writer_add_u32(w, kv->key, kv->value.u32); break;
    case FWM_WRITE_KV_U64: fwm__gguf_writer_add_u64(w, kv->key, kv->value.u64); break;
    case FWM_WRITE_KV_F32: fwm__gguf_writer_add_f32(w, kv->key, kv->value.f32); break;
    case FWM_WRITE_KV_BOOL: fwm__gguf_writer_add_bool(w, kv->key, kv->value.boolean); break;
    }
}

/* Assemble the whole file in memory. */
static fwm_status build_file(const fwm_write_spec *spec, uint8_t **file, size_t *size,
                             fwm_error *err) {
    const fwm_hparams *hp = &spec->hp;
    uint32_t v = hp->vocab_size;
    uint32_t *lengths = fwm__calloc(v, sizeof *lengths);
    if (!lengths) return fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "out of memory for %" PRIu32 " tokens", v);
    for (uint32_t i = 0; i < v; i++) lengths[i] = (uint32_t)strlen(spec->tokens[i]);

    uint64_t n_bytes[FWM_TENSOR_COUNT];
    fwm__xxh64_state state;
    fwm__xxh64_init(&state, 0);
    for (int i = 0; i < FWM_TENSOR_COUNT; i++) {
        uint64_t rows, cols;
        fwm__tensor_shape(hp, i, &rows, &cols, NULL);
        n_bytes[i] = rows * cols * sizeof(float);
        fwm__xxh64_update(&state, spec->tensors[i], (size_t)n_bytes[i]);
    }
    uint64_t checksum = fwm__xxh64_digest(&state);
    uint64_t fingerprint = fwm_schema_fingerprint(hp, spec->tokens, lengths, checksum);
    fwm__free(lengths);

    fwm_gguf_writer w;
    fwm__gguf_writer_init(&w, FWM_WRITER_ALIGNMENT);
    fwm__gguf_writer_add_string(&w, "general.architecture", "fwm");
    fwm__gguf_writer_add_u32(&w, "general.alignment", FWM_WRITER_ALIGNMENT);
    if (spec->name) fwm__gguf_writer_add_string(&w, "general.name", spec->name);
#define FWM_HPARAM_PUT_(field, key, kind, def, low, high) PUT_##kind(&w, key, hp->field);
    FWM_HPARAM_LIST(FWM_HPARAM_PUT_)
#undef FWM_HPARAM_PUT_
    fwm__gguf_writer_add_string(&w, "tokenizer.ggml.model", "word");
    fwm__gguf_writer_add_string_array(&w, "tokenizer.ggml.tokens", spec->tokens, NULL, v);
    if (spec->has_prime_tokens) {
        uint32_t none = 0; /* a valid pointer for an empty array */
        fwm__gguf_writer_add_array(&w, FWM_KEY_PRIME_TOKENS, FWM_GGUF_TYPE_UINT32,
                                   spec->prime_count ? (const void *)spec->prime_tokens : &none,
                                   spec->prime_count);
    }
    fwm__gguf_writer_add_u64(&w, FWM_KEY_CHECKSUM, checksum);
    fwm__gguf_writer_add_u64(&w, FWM_KEY_FINGERPRINT, fingerprint);
    for (size_t i = 0; i < spec->extra_count; i++) add_extra(&w, &spec->extra[i]);
    for (int i = 0; i < FWM_TENSOR_COUNT; i++) {
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

/* Parse the assembled file back: anything the reader refuses is a bug or a bad spec. */
static fwm_status self_check(const uint8_t *file, size_t size, fwm_error *err) {
    fwm_schema schema;
    fwm_error inner;
    fwm_status st = fwm_schema_parse(file, size, &schema, &inner);
    if (st == FWM_ERR_OUT_OF_MEMORY) return fwm__error(err, st, "%s", inner.message);
    if (st) return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "the file would not load: %s", inner.message);
    uint64_t checksum = fwm_schema_checksum(&schema);
    st = schema.has_checksum && checksum == schema.checksum
             ? FWM_OK
             : fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "internal: written checksum does not verify");
    fwm_schema_release(&schema);
    return st;
}

static fwm_status write_all(int fd, const uint8_t *data, size_t size, const char *path,
                            fwm_error *err) {
    while (size > 0) {
        ssize_t n = write(fd, data, size > (1u << 30) ? (1u << 30) : size);
        if (n < 0) {
            if (errno == EINTR) continue;
            return fwm__error(err, FWM_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
        }
        data += n;
        size -= (size_t)n;
    }
    return FWM_OK;
}

static fwm_status write_atomically(const char *path, const uint8_t *file, size_t size,
                                   fwm_error *err) {
    size_t length = strlen(path);
    char *tmp = fwm__malloc(length + 16);
    if (!tmp) return fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "out of memory");
    memcpy(tmp, path, length);
    memcpy(tmp + length, ".tmp-XXXXXX", 12);
    fwm_status st = FWM_OK;
    int fd = mkstemp(tmp);
    if (fd < 0) {
        st = fwm__error(err, FWM_ERR_IO, "cannot create a temporary file next to '%s': %s", path,
                        strerror(errno));
        goto done;
    }
    (void)fchmod(fd, 0644);
    st = write_all(fd, file, size, tmp, err);
    if (!st && fsync(fd) != 0)
        st = fwm__error(err, FWM_ERR_IO, "cannot sync '%s': %s", tmp, strerror(errno));
    if (close(fd) != 0 && !st)
        st = fwm__error(err, FWM_ERR_IO, "cannot close '%s': %s", tmp, strerror(errno));
    if (!st && rename(tmp, path) != 0)
        st = fwm__error(err, FWM_ERR_IO, "cannot rename '%s' to '%s': %s", tmp, path,
                        strerror(errno));
    if (st) unlink(tmp);
done:
    fwm__free(tmp);
    return st;
}

fwm_status fwm_model_write(const char *path, const fwm_write_spec *spec, fwm_error *err) {
    if (!path || !path[0] || !spec)
        return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "fwm_model_write: %s is NULL or empty",
                          !spec ? "spec" : "path");
    if (!host_is_little_endian())
        return fwm__error(err, FWM_ERR_INVALID_ARGUMENT,
                          "fwm_model_write: big-endian hosts are not supported");
    fwm_status st = check_spec(spec, err);
    if (st) return st;
    uint8_t *file = NULL;
    size_t size = 0;
    st = build_file(spec, &file, &size, err);
    if (!st) st = self_check(file, size, err);
    if (!st) st = write_atomically(path, file, size, err);
    fwm__free(file);
    if (!st) fwm__error_clear(err);
    return st;
}
