/* writer_common.c - the shared parts of fwm's model writers (writer_common.h). */
#include "writer_common.h"

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

fwm_status fwm__writer_check_host(const char *who, fwm_error *err) {
    const uint16_t one = 1;
    uint8_t first;
    memcpy(&first, &one, 1);
    if (first != 1)
        return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "%s: big-endian hosts are not supported", who);
    return FWM_OK;
}

fwm_status fwm__writer_check_tokens(const char *const *tokens, uint32_t vocab_size, fwm_error *err) {
    if (!tokens) return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "the vocabulary (tokens) is NULL");
    for (uint32_t i = 0; i < vocab_size; i++)
        if (!tokens[i]) return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "token %" PRIu32 " is NULL", i);
    return fwm__vocab_check(tokens, NULL, vocab_size, FWM_ERR_INVALID_ARGUMENT, err);
}

fwm_status fwm__writer_check_prime(const fwm__write_head *head, uint32_t vocab_size,
                                   fwm_error *err) {
    const uint32_t *tokens = head->prime_tokens;
    size_t count = head->prime_count;
    if (!head->has_prime_tokens) return FWM_OK;
    if (count > FWM_MAX_PRIME_TOKENS)
        return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "%zu prime tokens, at most %u allowed", count,
                          FWM_MAX_PRIME_TOKENS);
    if (count && !tokens)
        return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "prime_count is %zu but prime_tokens is NULL",
                          count);
    for (size_t i = 0; i < count; i++)
        if (tokens[i] >= vocab_size)
            return fwm__error(err, FWM_ERR_INVALID_ARGUMENT,
                              "prime token %zu is %" PRIu32 ", not below the vocabulary size %" PRIu32, i,
                              tokens[i], vocab_size);
    return FWM_OK;
}

fwm_status fwm__writer_check_extra(const fwm__write_head *head,
                                   const char *const *written, size_t n_written, const char *who,
                                   fwm_error *err) {
    const fwm_write_kv *extra = head->extra;
    size_t count = head->extra_count;
    if (count && !extra)
        return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "extra_count is %zu but extra is NULL", count);
    for (size_t i = 0; i < count; i++) {
        const fwm_write_kv *kv = &extra[i];
        if (!kv->key || !kv->key[0])
            return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "extra key #%zu has no name", i);
        if (strlen(kv->key) > FWM_GGUF_MAX_KEY_LENGTH)
            return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "extra key #%zu: name too long", i);
        for (size_t k = 0; k < n_written; k++)
            if (strcmp(kv->key, written[k]) == 0)
                return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "extra key '%s' is written by %s itself",
                                  kv->key, who);
        for (size_t j = 0; j < i; j++)
            if (strcmp(kv->key, extra[j].key) == 0)
                return fwm__error(err, FWM_ERR_INVALID_ARGUMENT,
                                  "extra key '%s' given twice (#%zu and #%zu)", kv->key, j, i);
        if (kv->kind == FWM_WRITE_KV_STRING && !kv->value.string)
            return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "extra key '%s': string value is NULL",
                              kv->key);
        if (strcmp(kv->key, FWM_KEY_TOKENIZER_MODEL) == 0 &&
            (kv->kind != FWM_WRITE_KV_STRING ||
             (strcmp(kv->value.string, "word") != 0 && strcmp(kv->value.string, "text") != 0)))
            return fwm__error(err, FWM_ERR_INVALID_ARGUMENT,
                              "extra key '%s': the tokenizer is the string \"word\" or \"text\"",
                              kv->key);
        if (strcmp(kv->key, FWM_KEY_UNKNOWN_TOKEN) == 0 && kv->kind != FWM_WRITE_KV_U32)
            return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "extra key '%s': a u32 token id",
                              kv->key);
        if ((unsigned)kv->kind > FWM_WRITE_KV_BOOL)
            return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "extra key '%s': unknown kind %d", kv->key,
                              (int)kv->kind);
    }
    return FWM_OK;
}

void fwm__writer_add_general(fwm_gguf_writer *w, const char *arch, const char *name) {
    fwm__gguf_writer_add_string(w, "general.architecture", arch);
    fwm__gguf_writer_add_u32(w, "general.alignment", FWM_WRITER_ALIGNMENT);
    if (name) fwm__gguf_writer_add_string(w, "general.name", name);
}

/* The extra key that chooses the tokenizer ("text"), or NULL for the default "word". */
static const char *extra_tokenizer(const fwm_write_kv *extra, size_t extra_count) {
    for (size_t i = 0; i < extra_count; i++)
        if (strcmp(extra[i].key, FWM_KEY_TOKENIZER_MODEL) == 0) return extra[i].value.string;
    return NULL;
}

void fwm__writer_add_vocabulary(fwm_gguf_writer *w, const fwm__write_head *head,
                                uint32_t vocab_size) {
    const char *const *tokens = head->tokens;
    bool has_prime = head->has_prime_tokens;
    const uint32_t *prime = head->prime_tokens;
    size_t prime_count = head->prime_count;
    const fwm_write_kv *extra = head->extra;
    size_t extra_count = head->extra_count;
    const char *model = extra_tokenizer(extra, extra_count);
    fwm__gguf_writer_add_string(w, FWM_KEY_TOKENIZER_MODEL, model ? model : "word");
    fwm__gguf_writer_add_string_array(w, "tokenizer.ggml.tokens", tokens, NULL, vocab_size);
    if (has_prime) {
        uint32_t none = 0; /* a valid pointer for an empty array */
        fwm__gguf_writer_add_array(w, FWM_KEY_PRIME_TOKENS, FWM_GGUF_TYPE_UINT32,
                                   prime_count ? (const void *)prime : &none, prime_count);
    }
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

void fwm__writer_add_trailer_keys(fwm_gguf_writer *w, uint64_t checksum, uint64_t fingerprint,
                                  const fwm__write_head *head) {
    const fwm_write_kv *extra = head->extra;
    size_t extra_count = head->extra_count;
    fwm__gguf_writer_add_u64(w, FWM_KEY_CHECKSUM, checksum);
    fwm__gguf_writer_add_u64(w, FWM_KEY_FINGERPRINT, fingerprint);
    for (size_t i = 0; i < extra_count; i++) /* the tokenizer's model went with the vocabulary */
        if (strcmp(extra[i].key, FWM_KEY_TOKENIZER_MODEL) != 0) add_extra(w, &extra[i]);
}

uint32_t *fwm__writer_token_lengths(const char *const *tokens, uint32_t vocab_size) {
    uint32_t *lengths = fwm__calloc(vocab_size ? vocab_size : 1, sizeof *lengths);
    if (lengths)
        for (uint32_t i = 0; i < vocab_size; i++) lengths[i] = (uint32_t)strlen(tokens[i]);
    return lengths;
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

fwm_status fwm__write_atomically(const char *path, const uint8_t *file, size_t size,
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

fwm_status fwm__writer_write(const char *path, const void *spec, const fwm_writer_kind *kind,
                             fwm_error *err) {
    if (!path || !path[0] || !spec)
        return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "%s: %s is NULL or empty", kind->who,
                          !spec ? "spec" : "path");
    fwm_status st = fwm__writer_check_host(kind->who, err);
    if (st) return st;
    if ((st = kind->check(spec, err))) return st;
    uint8_t *file = NULL;
    size_t size = 0;
    st = kind->build(spec, &file, &size, err);
    fwm_error inner;
    if (!st && (st = kind->reread(file, size, &inner)))
        st = st == FWM_ERR_OUT_OF_MEMORY
                 ? fwm__error(err, st, "%s", inner.message)
                 : fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "the file would not load: %s", inner.message);
    if (!st) st = fwm__write_atomically(path, file, size, err);
    fwm__free(file);
    if (!st) fwm__error_clear(err);
    return st;
}
