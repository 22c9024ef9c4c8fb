/* schema_common.c - the schema parts every architecture shares (schema_common.h): typed keys,
 * vocabulary, prime tokens, name, one tensor's check, the refusal of extra tensors and the
 * fingerprint's byte encoding. */
#include "schema_common.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "fwm_alloc.h"
#include "fwm_error.h"
#include "fwm_model_shape.h"

#define QUOTE(len) ((int)((len) < 64 ? (len) : 64))


/* "u32", or "array of string" for arrays. */
static const char *describe_type(const fwm_gguf_kv *kv, char *buf, size_t size) {
    if (kv->type != FWM_GGUF_TYPE_ARRAY) return fwm__gguf_type_name(kv->type);
    snprintf(buf, size, "array of %s", fwm__gguf_type_name(kv->array_type));
    return buf;
}

/* The pair `key` with the given type; missing (when required) or another type is an error.
 * *out is NULL when an optional key is absent. */
fwm_status fwm__schema_find_typed(const fwm_gguf_file *f, const char *key, uint32_t type, int required,
                             const fwm_gguf_kv **out, fwm_error *err) {
    const fwm_gguf_kv *kv = fwm__gguf_find_key(f, key);
    *out = kv;
    if (!kv) {
        if (required)
            return fwm__error(err, FWM_ERR_FORMAT, "missing key '%s' (%s)", key,
                              fwm__gguf_type_name(type));
        return FWM_OK;
    }
    if (kv->type != type) {
        char buf[32];
        return fwm__error(err, FWM_ERR_FORMAT, "key '%s': expected type %s, found %s", key,
                          fwm__gguf_type_name(type), describe_type(kv, buf, sizeof buf));
    }
    return FWM_OK;
}

fwm_status fwm__schema_get_u32(const fwm_gguf_file *f, const char *key, uint32_t *value,
                          fwm_error *err) {
    const fwm_gguf_kv *kv;
    fwm_status st = fwm__schema_find_typed(f, key, FWM_GGUF_TYPE_UINT32, 1, &kv, err);
    if (st) return st;
    *value = fwm__gguf_read_u32(kv->value);
    return FWM_OK;
}

fwm_status fwm__schema_get_f32(const fwm_gguf_file *f, const char *key, float *value, fwm_error *err) {
    const fwm_gguf_kv *kv;
    fwm_status st = fwm__schema_find_typed(f, key, FWM_GGUF_TYPE_FLOAT32, 1, &kv, err);
    if (st) return st;
    *value = fwm__gguf_read_f32(kv->value);
    return FWM_OK;
}

fwm_status fwm__schema_get_bool(const fwm_gguf_file *f, const char *key, bool *value, fwm_error *err) {
    const fwm_gguf_kv *kv;
    fwm_status st = fwm__schema_find_typed(f, key, FWM_GGUF_TYPE_BOOL, 1, &kv, err);
    if (st) return st;
    *value = kv->value[0] != 0;
    return FWM_OK;
}

fwm_status fwm__schema_get_string(const fwm_gguf_file *f, const char *key, int required,
                             fwm_gguf_string *value, int *present, fwm_error *err) {
    const fwm_gguf_kv *kv;
    fwm_status st = fwm__schema_find_typed(f, key, FWM_GGUF_TYPE_STRING, required, &kv, err);
    if (st) return st;
    if (present) *present = kv != NULL;
    if (kv) *value = fwm__gguf_read_string(kv->value);
    return FWM_OK;
}

fwm_status fwm__schema_get_optional_u64(const fwm_gguf_file *f, const char *key, int *present,
                                   uint64_t *value, fwm_error *err) {
    const fwm_gguf_kv *kv;
    fwm_status st = fwm__schema_find_typed(f, key, FWM_GGUF_TYPE_UINT64, 0, &kv, err);
    if (st) return st;
    *present = kv != NULL;
    *value = kv ? fwm__gguf_read_u64(kv->value) : 0;
    return FWM_OK;
}

/* A string key that must equal `expected`. */
fwm_status fwm__schema_expect_string(const fwm_gguf_file *f, const char *key, const char *expected,
                                fwm_error *err) {
    fwm_gguf_string s = {"", 0};
    fwm_status st = fwm__schema_get_string(f, key, 1, &s, NULL, err);
    if (st) return st;
    if (s.length != strlen(expected) || memcmp(s.data, expected, s.length) != 0)
        return fwm__error(err, FWM_ERR_FORMAT, "key '%s': expected \"%s\", found \"%.*s\"", key,
                          expected, QUOTE(s.length), s.data);
    return FWM_OK;
}

/* Check the token array against V and the vocabulary rules, then copy it out. */
fwm_status fwm__schema_read_vocabulary(const fwm_gguf_file *f, uint32_t v, const char *size_key,
                                       char ***tokens_out, uint32_t **lengths_out, fwm_error *err) {
    const fwm_gguf_kv *kv = fwm__gguf_find_key(f, "tokenizer.ggml.tokens");
    if (!kv) return fwm__error(err, FWM_ERR_FORMAT, "missing key 'tokenizer.ggml.tokens' (array of string)");
    if (kv->type != FWM_GGUF_TYPE_ARRAY || kv->array_type != FWM_GGUF_TYPE_STRING) {
        char buf[32];
        return fwm__error(err, FWM_ERR_FORMAT,
                          "key 'tokenizer.ggml.tokens': expected type array of string, found %s",
                          describe_type(kv, buf, sizeof buf));
    }
    if (kv->array_count != v)
        return fwm__error(err, FWM_ERR_FORMAT,
                          "key 'tokenizer.ggml.tokens': has %" PRIu64 " tokens, %s says %" PRIu32,
                          kv->array_count, size_key, v);
    /* Views of the strings for the checks (bounded: V <= FWM_MAX_VOCAB_SIZE). */
    const char **views = fwm__calloc(v, sizeof *views);
    uint64_t *lengths = fwm__calloc(v, sizeof *lengths);
    fwm_status st = FWM_OK;
    if (!views || !lengths) {
        st = fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "out of memory for %" PRIu32 " tokens", v);
        goto done;
    }
    const uint8_t *p = kv->value;
    for (uint32_t i = 0; i < v; i++) {
        fwm_gguf_string s = fwm__gguf_next_string(&p);
        views[i] = s.data;
        lengths[i] = s.length;
    }
    st = fwm__vocab_check(views, lengths, v, FWM_ERR_FORMAT, err);
    if (st) goto done;
    char **tokens = *tokens_out = fwm__calloc(v, sizeof *tokens);
    uint32_t *token_lengths = *lengths_out = fwm__calloc(v, sizeof *token_lengths);
    if (!tokens || !token_lengths) {
        st = fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "out of memory for %" PRIu32 " tokens", v);
        goto done;
    }
    for (uint32_t i = 0; i < v; i++) {
        char *copy = fwm__malloc((size_t)lengths[i] + 1);
        if (!copy) {
            st = fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "out of memory copying token %" PRIu32, i);
            goto done;
        }
        memcpy(copy, views[i], (size_t)lengths[i]);
        copy[lengths[i]] = '\0';
        tokens[i] = copy;
        token_lengths[i] = (uint32_t)lengths[i];
    }
done:
    fwm__free(views);
    fwm__free(lengths);
    return st;
}

fwm_status fwm__schema_read_prime_tokens(const fwm_gguf_file *f, uint32_t vocab_size, uint32_t eos,
                                         int *has, uint32_t *count,
                                         uint32_t tokens[FWM_MAX_PRIME_TOKENS], fwm_error *err) {
    const fwm_gguf_kv *kv = fwm__gguf_find_key(f, FWM_KEY_PRIME_TOKENS);
    if (!kv) {
        *has = 0;
        *count = 1;
        tokens[0] = eos;
        return FWM_OK;
    }
    if (kv->type != FWM_GGUF_TYPE_ARRAY || kv->array_type != FWM_GGUF_TYPE_UINT32) {
        char buf[32];
        return fwm__error(err, FWM_ERR_FORMAT, "key '%s': expected type array of u32, found %s",
                          FWM_KEY_PRIME_TOKENS, describe_type(kv, buf, sizeof buf));
    }
    if (kv->array_count > FWM_MAX_PRIME_TOKENS)
        return fwm__error(err, FWM_ERR_FORMAT, "key '%s': has %" PRIu64 " tokens, at most %u allowed",
                          FWM_KEY_PRIME_TOKENS, kv->array_count, FWM_MAX_PRIME_TOKENS);
    for (uint64_t i = 0; i < kv->array_count; i++) {
        uint32_t id = fwm__gguf_read_u32(kv->value + 4 * i);
        if (id >= vocab_size)
            return fwm__error(err, FWM_ERR_FORMAT,
                              "key '%s': token %" PRIu64 " is %" PRIu32 ", not below the vocabulary size %" PRIu32,
                              FWM_KEY_PRIME_TOKENS, i, id, vocab_size);
        tokens[i] = id;
    }
    *has = 1;
    *count = (uint32_t)kv->array_count;
    return FWM_OK;
}

fwm_status fwm__schema_read_name(const fwm_gguf_file *f, char **out, fwm_error *err) {
    fwm_gguf_string name = {"", 0};
    int has_name = 0;
    fwm_status st = fwm__schema_get_string(f, "general.name", 0, &name, &has_name, err);
    if (st) return st;
    *out = fwm__malloc((size_t)name.length + 1);
    if (!*out) return fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "out of memory for the model name");
    memcpy(*out, name.data, (size_t)name.length);
    (*out)[name.length] = '\0';
    if (memchr(name.data, '\0', (size_t)name.length))
        return fwm__error(err, FWM_ERR_FORMAT, "key 'general.name': contains a NUL byte");
    return FWM_OK;
}

fwm_status fwm__schema_read_tokenizer(const fwm_gguf_file *f, uint32_t vocab_size, bool *is_text,
                                      uint32_t *unknown, fwm_error *err) {
    fwm_gguf_string s = {"", 0};
    fwm_status st = fwm__schema_get_string(f, "tokenizer.ggml.model", 1, &s, NULL, err);
    if (st) return st;
    bool text = s.length == 4 && memcmp(s.data, "text", 4) == 0;
    if (!text && !(s.length == 4 && memcmp(s.data, "word", 4) == 0))
        return fwm__error(err, FWM_ERR_FORMAT,
                          "key 'tokenizer.ggml.model': expected \"word\" or \"text\", found \"%.*s\"",
                          QUOTE(s.length), s.data);
    const fwm_gguf_kv *kv;
    if ((st = fwm__schema_find_typed(f, FWM_KEY_UNKNOWN_TOKEN, FWM_GGUF_TYPE_UINT32, 0, &kv, err)))
        return st;
    uint32_t unk = kv ? fwm__gguf_read_u32(kv->value) : FWM_NO_TOKEN;
    if (kv && unk >= vocab_size)
        return fwm__error(err, FWM_ERR_FORMAT,
                          "key '%s': token id %" PRIu32 " is not below the vocabulary size %" PRIu32,
                          FWM_KEY_UNKNOWN_TOKEN, unk, vocab_size);
    if (is_text) *is_text = text;
    if (unknown) *unknown = unk;
    return FWM_OK;
}

/* FWM_KEY_MATMUL_TYPE: optional string, "f32" (the default) or "bf16". */
static fwm_status read_matmul_type(const fwm_gguf_file *f, int *bf16, fwm_error *err) {
    fwm_gguf_string type = {"", 0};
    int present = 0;
    fwm_status st = fwm__schema_get_string(f, FWM_KEY_MATMUL_TYPE, 0, &type, &present, err);
    *bf16 = 0;
    if (st || !present) return st;
    if (type.length == 4 && memcmp(type.data, "bf16", 4) == 0)
        *bf16 = 1;
    else if (!(type.length == 3 && memcmp(type.data, "f32", 3) == 0))
        return fwm__error(err, FWM_ERR_FORMAT, "key '%s': expected \"f32\" or \"bf16\", found \"%.*s\"",
                          FWM_KEY_MATMUL_TYPE, QUOTE(type.length), type.data);
    return FWM_OK;
}

uint64_t fwm__fingerprint_matmul(uint64_t fingerprint, int bf16) {
    if (!bf16) return fingerprint;
    fwm__xxh64_state state;
    fwm__xxh64_init(&state, 0);
    fwm__xxh64_update(&state, "FWMBF16", 8); /* with its NUL */
    fwm__fp_u64(&state, fingerprint);
    return fwm__xxh64_digest(&state);
}

fwm_status fwm__schema_read_common(const fwm_gguf_file *f, uint32_t vocab_size, uint32_t eos,
                                   const char *size_key, fwm__schema_head *out, fwm_error *err) {
    fwm_status st;
    if ((st = fwm__schema_read_tokenizer(f, vocab_size, NULL, NULL, err)) ||
        (st = fwm__schema_read_vocabulary(f, vocab_size, size_key, &out->tokens, &out->token_lengths,
                                          err)) ||
        (st = fwm__schema_read_prime_tokens(f, vocab_size, eos, &out->has_prime_tokens,
                                            &out->prime_count, out->prime_tokens, err)) ||
        (st = fwm__schema_read_name(f, &out->name, err)) ||
        (st = fwm__schema_get_optional_u64(f, FWM_KEY_CHECKSUM, &out->has_checksum, &out->checksum,
                                           err)))
        return st;
    if ((st = fwm__schema_get_optional_u64(f, FWM_KEY_FINGERPRINT, &out->has_fingerprint,
                                           &out->fingerprint, err)))
        return st;
    return read_matmul_type(f, &out->bf16_matmul, err);
}

fwm_status fwm__schema_parse_kind(const void *buf, size_t size, const fwm_schema_kind *kind,
                                  void *schema, fwm__schema_head *head, fwm_error *err) {
    fwm_gguf_file f;
    fwm_status st = fwm__gguf_parse(buf, size, &f, err);
    if (st) return st;
    uint32_t vocab_size = 0, eos = 0;
    if (!(st = fwm__schema_expect_string(&f, "general.architecture", kind->arch, err)) &&
        !(st = kind->read_hparams(&f, schema, &vocab_size, &eos, err)) &&
        !(st = fwm__schema_read_common(&f, vocab_size, eos, kind->size_key, head, err))) {
        if (head->bf16_matmul && !kind->bf16_matmul)
            st = fwm__error(err, FWM_ERR_UNSUPPORTED,
                            "key '%s': \"bf16\" is not supported for architecture '%s' (only fwm "
                            "and lstm multiply in BF16)",
                            FWM_KEY_MATMUL_TYPE, kind->arch);
        else
            st = kind->read_tensors(&f, schema, err);
    }
    fwm__gguf_release(&f);
    if (!st) fwm__error_clear(err);
    return st;
}

void fwm__schema_release_head(fwm__schema_head *head, uint32_t vocab_size) {
    if (head->tokens)
        for (uint32_t i = 0; i < vocab_size; i++) fwm__free(head->tokens[i]);
    fwm__free(head->tokens);
    fwm__free(head->token_lengths);
    fwm__free(head->name);
    head->tokens = NULL;
    head->token_lengths = NULL;
    head->name = NULL;
}

/* "[1024, 256]" (row-major) for the expected shape. */
static void format_expected(char *buf, size_t size, uint64_t rows, uint64_t cols, int is_matrix) {
    if (is_matrix)
        snprintf(buf, size, "[%" PRIu64 ", %" PRIu64 "]", rows, cols);
    else
        snprintf(buf, size, "[%" PRIu64 "]", rows);
}

/* The file's shape written row-major: GGUF dims reversed. */
static void format_found(char *buf, size_t size, const fwm_gguf_tensor_info *t) {
    size_t used = 0;
    buf[0] = '\0';
    for (uint32_t d = t->n_dims; d-- > 0 && used < size;) {
        int n = snprintf(buf + used, size - used, "%s%" PRIu64, d + 1 == t->n_dims ? "[" : ", ",
                         t->dims[d]);
        if (n < 0) break;
        used += (size_t)n;
    }
    if (used < size) snprintf(buf + used, size - used, "]");
}

fwm_status fwm__schema_read_tensor(const fwm_gguf_file *f, const char *name, uint64_t rows,
                                   uint64_t cols, int is_matrix, fwm_schema_tensor *out,
                                   fwm_error *err) {
    const fwm_gguf_tensor_info *t = fwm__gguf_find_tensor(f, name);
    if (!t) return fwm__error(err, FWM_ERR_FORMAT, "missing tensor '%s'", name);
    int ok = is_matrix ? (t->n_dims == 2 && t->dims[0] == cols && t->dims[1] == rows)
                       : (t->n_dims == 1 && t->dims[0] == rows);
    if (!ok) {
        char expected[64], found[128];
        format_expected(expected, sizeof expected, rows, cols, is_matrix);
        format_found(found, sizeof found, t);
        return fwm__error(err, FWM_ERR_FORMAT, "tensor '%s': expected shape %s, found %s", name,
                          expected, found);
    }
    if (t->type != FWM_GGML_TYPE_F32 && t->type != FWM_GGML_TYPE_F16 &&
        t->type != FWM_GGML_TYPE_BF16) /* the reader lets no other type through */
        return fwm__error(err, FWM_ERR_UNSUPPORTED,
                          "tensor '%s': type %s is not supported (F32, F16 or BF16 only)", name,
                          fwm__ggml_type_name(t->type));
    out->data = t->data;
    out->type = t->type;
    out->rows = rows;
    out->cols = cols;
    out->n_bytes = t->n_bytes;
    out->file_offset = t->file_offset;
    return FWM_OK;
}

fwm_status fwm__schema_no_other_tensors(const fwm_gguf_file *f, const char *const *names,
                                        size_t count, const char *arch, fwm_error *err) {
    if (f->n_tensors <= count) return FWM_OK;
    /* All schema tensors were found and names are distinct: any other one is extra. */
    for (uint64_t j = 0; j < f->n_tensors; j++) {
        const fwm_gguf_tensor_info *t = &f->tensors[j];
        int known = 0;
        for (size_t i = 0; i < count && !known; i++)
            known = t->name.length == strlen(names[i]) &&
                    memcmp(t->name.data, names[i], t->name.length) == 0;
        if (!known)
            return fwm__error(err, FWM_ERR_FORMAT, "unexpected tensor '%.*s': not part of the %s schema",
                              QUOTE(t->name.length), t->name.data, arch);
    }
    return FWM_OK;
}

void fwm__fp_u32(fwm__xxh64_state *state, uint32_t value) {
    uint8_t b[4] = {(uint8_t)value, (uint8_t)(value >> 8), (uint8_t)(value >> 16),
                    (uint8_t)(value >> 24)};
    fwm__xxh64_update(state, b, 4);
}

void fwm__fp_f32(fwm__xxh64_state *state, float value) {
    uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
    fwm__fp_u32(state, bits);
}

void fwm__fp_u64(fwm__xxh64_state *state, uint64_t value) {
    uint8_t b[8];
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)(value >> (8 * i));
    fwm__xxh64_update(state, b, 8);
}

void fwm__fp_vocabulary(fwm__xxh64_state *state, uint32_t vocab_size, const char *const *tokens,
                        const uint32_t *token_lengths) {
    fwm__fp_u32(state, vocab_size);
    for (uint32_t i = 0; i < vocab_size; i++) {
        fwm__fp_u32(state, token_lengths[i]);
        fwm__xxh64_update(state, tokens[i], token_lengths[i]);
    }
}
