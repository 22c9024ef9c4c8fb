/* fwm_schema.c - the fwm schema over a parsed GGUF container: required keys with their types and
 * ranges, the vocabulary, every tensor of FWM_TENSOR_LIST with its shape; plus the tensor-data
 * checksum and the model fingerprint (docs/FORMAT.md). Parsing does not verify the checksum: the
 * loader decides what to do with it. */
#include "fwm_schema.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "fwm_alloc.h"
#include "fwm_error.h"
#include "fwm_model_shape.h"
#include "gguf_reader.h"
#include "xxhash64.h"

#define QUOTE(len) ((int)((len) < 64 ? (len) : 64))

/* "u32", or "array of string" for arrays. */
static const char *describe_type(const fwm_gguf_kv *kv, char *buf, size_t size) {
    if (kv->type != FWM_GGUF_TYPE_ARRAY) return fwm__gguf_type_name(kv->type);
    snprintf(buf, size, "array of %s", fwm__gguf_type_name(kv->array_type));
    return buf;
}

/* The pair `key` with the given type; missing (when required) or another type is an error.
 * *out is NULL when an optional key is absent. */
static fwm_status find_typed(const fwm_gguf_file *f, const char *key, uint32_t type, int required,
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

static fwm_status get_u32(const fwm_gguf_file *f, const char *key, uint32_t *value,
                          fwm_error *err) {
    const fwm_gguf_kv *kv;
    fwm_status st = find_typed(f, key, FWM_GGUF_TYPE_UINT32, 1, &kv, err);
    if (st) return st;
    *value = fwm__gguf_read_u32(kv->value);
    return FWM_OK;
}

static fwm_status get_f32(const fwm_gguf_file *f, const char *key, float *value, fwm_error *err) {
    const fwm_gguf_kv *kv;
    fwm_status st = find_typed(f, key, FWM_GGUF_TYPE_FLOAT32, 1, &kv, err);
    if (st) return st;
    *value = fwm__gguf_read_f32(kv->value);
    return FWM_OK;
}

static fwm_status get_bool(const fwm_gguf_file *f, const char *key, bool *value, fwm_error *err) {
    const fwm_gguf_kv *kv;
    fwm_status st = find_typed(f, key, FWM_GGUF_TYPE_BOOL, 1, &kv, err);
    if (st) return st;
    *value = kv->value[0] != 0;
    return FWM_OK;
}

static fwm_status get_string(const fwm_gguf_file *f, const char *key, int required,
                             fwm_gguf_string *value, int *present, fwm_error *err) {
    const fwm_gguf_kv *kv;
    fwm_status st = find_typed(f, key, FWM_GGUF_TYPE_STRING, required, &kv, err);
    if (st) return st;
    if (present) *present = kv != NULL;
    if (kv) *value = fwm__gguf_read_string(kv->value);
    return FWM_OK;
}

static fwm_status get_optional_u64(const fwm_gguf_file *f, const char *key, int *present,
                                   uint64_t *value, fwm_error *err) {
    const fwm_gguf_kv *kv;
    fwm_status st = find_typed(f, key, FWM_GGUF_TYPE_UINT64, 0, &kv, err);
    if (st) return st;
    *present = kv != NULL;
    *value = kv ? fwm__gguf_read_u64(kv->value) : 0;
    return FWM_OK;
}

/* A string key that must equal `expected`. */
static fwm_status expect_string(const fwm_gguf_file *f, const char *key, const char *expected,
                                fwm_error *err) {
    fwm_gguf_string s = {"", 0};
    fwm_status st = get_string(f, key, 1, &s, NULL, err);
    if (st) return st;
    if (s.length != strlen(expected) || memcmp(s.data, expected, s.length) != 0)
        return fwm__error(err, FWM_ERR_FORMAT, "key '%s': expected \"%s\", found \"%.*s\"", key,
                          expected, QUOTE(s.length), s.data);
    return FWM_OK;
}

/* fwm.read_policy: "always" or "token", held as FWM_READ_ALWAYS / FWM_READ_ON_TOKEN. */
static fwm_status get_policy(const fwm_gguf_file *f, const char *key, uint32_t *value,
                             fwm_error *err) {
    fwm_gguf_string policy = {"", 0};
    fwm_status st = get_string(f, key, 1, &policy, NULL, err);
    if (st) return st;
    if (policy.length == 6 && memcmp(policy.data, "always", 6) == 0)
        *value = FWM_READ_ALWAYS;
    else if (policy.length == 5 && memcmp(policy.data, "token", 5) == 0)
        *value = FWM_READ_ON_TOKEN;
    else
        return fwm__error(err, FWM_ERR_FORMAT, "key '%s': expected \"always\" or \"token\", found \"%.*s\"",
                          key, QUOTE(policy.length), policy.data);
    return FWM_OK;
}

/* One read per kind of FWM_HPARAM_LIST: the key must be present with the kind's GGUF type. */
#define GET_U32(f, key, field) get_u32(f, key, field, err)
#define GET_TOKEN(f, key, field) get_u32(f, key, field, err)
#define GET_BOOL(f, key, field) get_bool(f, key, field, err)
#define GET_POLICY(f, key, field) get_policy(f, key, field, err)
#define GET_F32(f, key, field) get_f32(f, key, field, err)
#define GET_F32_POS(f, key, field) get_f32(f, key, field, err)

/* Every key of FWM_HPARAM_LIST, in list order; ranges are fwm__hparams_check's. */
static fwm_status read_hparams(const fwm_gguf_file *f, fwm_hparams *hp, fwm_error *err) {
    fwm_status st;
#define FWM_HPARAM_GET_(field, key, kind, def, low, high) \
    if ((st = GET_##kind(f, key, &hp->field))) return st;
    FWM_HPARAM_LIST(FWM_HPARAM_GET_)
#undef FWM_HPARAM_GET_
    return FWM_OK;
}

/* Check the token array against V and the vocabulary rules, then copy it out. */
static fwm_status read_vocabulary(const fwm_gguf_file *f, fwm_schema *out, fwm_error *err) {
    const fwm_gguf_kv *kv = fwm__gguf_find_key(f, "tokenizer.ggml.tokens");
    if (!kv) return fwm__error(err, FWM_ERR_FORMAT, "missing key 'tokenizer.ggml.tokens' (array of string)");
    if (kv->type != FWM_GGUF_TYPE_ARRAY || kv->array_type != FWM_GGUF_TYPE_STRING) {
        char buf[32];
        return fwm__error(err, FWM_ERR_FORMAT,
                          "key 'tokenizer.ggml.tokens': expected type array of string, found %s",
                          describe_type(kv, buf, sizeof buf));
    }
    uint32_t v = out->hp.vocab_size;
    if (kv->array_count != v)
        return fwm__error(err, FWM_ERR_FORMAT,
                          "key 'tokenizer.ggml.tokens': has %" PRIu64
                          " tokens, fwm.vocab_size says %" PRIu32,
                          kv->array_count, v);
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
    out->tokens = fwm__calloc(v, sizeof *out->tokens);
    out->token_lengths = fwm__calloc(v, sizeof *out->token_lengths);
    if (!out->tokens || !out->token_lengths) {
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
        out->tokens[i] = copy;
        out->token_lengths[i] = (uint32_t)lengths[i];
    }
done:
    fwm__free(views);
    fwm__free(lengths);
    return st;
}

/* FWM_KEY_PRIME_TOKENS: optional array of u32 token ids below V, at most FWM_MAX_PRIME_TOKENS;
 * absent means one token, the eos token id (hp must be read and checked already). */
static fwm_status read_prime_tokens(const fwm_gguf_file *f, fwm_schema *out, fwm_error *err) {
    const fwm_gguf_kv *kv = fwm__gguf_find_key(f, FWM_KEY_PRIME_TOKENS);
    if (!kv) {
        out->has_prime_tokens = 0;
        out->prime_count = 1;
        out->prime_tokens[0] = out->hp.eos_token_id;
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
        if (id >= out->hp.vocab_size)
            return fwm__error(err, FWM_ERR_FORMAT,
                              "key '%s': token %" PRIu64 " is %" PRIu32 ", not below the vocabulary size %" PRIu32,
                              FWM_KEY_PRIME_TOKENS, i, id, out->hp.vocab_size);
        out->prime_tokens[i] = id;
    }
    out->has_prime_tokens = 1;
    out->prime_count = (uint32_t)kv->array_count;
    return FWM_OK;
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

static fwm_status read_tensors(const fwm_gguf_file *f, fwm_schema *out, fwm_error *err) {
    for (int i = 0; i < FWM_TENSOR_COUNT; i++) {
        const char *name = fwm__tensor_name(i);
        const fwm_gguf_tensor_info *t = fwm__gguf_find_tensor(f, name);
        if (!t) return fwm__error(err, FWM_ERR_FORMAT, "missing tensor '%s'", name);
        uint64_t rows, cols;
        int is_matrix;
        fwm__tensor_shape(&out->hp, i, &rows, &cols, &is_matrix);
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
        fwm_schema_tensor *st = &out->tensors[i];
        st->data = t->data;
        st->type = t->type;
        st->rows = rows;
        st->cols = cols;
        st->n_bytes = t->n_bytes;
        st->file_offset = t->file_offset;
    }
    if (f->n_tensors > FWM_TENSOR_COUNT) {
        /* All schema tensors were found and names are distinct: any other one is extra. */
        for (uint64_t j = 0; j < f->n_tensors; j++) {
            const fwm_gguf_tensor_info *t = &f->tensors[j];
            int known = 0;
            for (int i = 0; i < FWM_TENSOR_COUNT && !known; i++) {
                const char *name = fwm__tensor_name(i);
                known = t->name.length == strlen(name) && memcmp(t->name.data, name, t->name.length) == 0;
            }
            if (!known)
                return fwm__error(err, FWM_ERR_FORMAT,
                                  "unexpected tensor '%.*s': not part of the fwm schema",
                                  QUOTE(t->name.length), t->name.data);
        }
    }
    return FWM_OK;
}

fwm_status fwm_schema_parse(const void *buf, size_t size, fwm_schema *out, fwm_error *err) {
    if (!out) return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "fwm_schema_parse: out is NULL");
    memset(out, 0, sizeof *out);
    fwm_gguf_file f;
    fwm_status st = fwm__gguf_parse(buf, size, &f, err);
    if (st) return st;

    if ((st = expect_string(&f, "general.architecture", "fwm", err))) goto fail;
    if ((st = read_hparams(&f, &out->hp, err))) goto fail;
    if ((st = fwm__hparams_check(&out->hp, FWM_ERR_FORMAT, err))) goto fail;
    if ((st = expect_string(&f, "tokenizer.ggml.model", "word", err))) goto fail;
    if ((st = read_vocabulary(&f, out, err))) goto fail;
    if ((st = read_prime_tokens(&f, out, err))) goto fail;

    fwm_gguf_string name = {"", 0};
    int has_name = 0;
    if ((st = get_string(&f, "general.name", 0, &name, &has_name, err))) goto fail;
    out->name = fwm__malloc((size_t)name.length + 1);
    if (!out->name) {
        st = fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "out of memory for the model name");
        goto fail;
    }
    memcpy(out->name, name.data, (size_t)name.length);
    out->name[name.length] = '\0';
    if (memchr(name.data, '\0', (size_t)name.length)) {
        st = fwm__error(err, FWM_ERR_FORMAT, "key 'general.name': contains a NUL byte");
        goto fail;
    }

    if ((st = get_optional_u64(&f, FWM_KEY_CHECKSUM, &out->has_checksum, &out->checksum, err)) ||
        (st = get_optional_u64(&f, FWM_KEY_FINGERPRINT, &out->has_fingerprint, &out->fingerprint,
                               err)))
        goto fail;
    if ((st = read_tensors(&f, out, err))) goto fail;
    fwm__gguf_release(&f);
    fwm__error_clear(err);
    return FWM_OK;
fail:
    fwm__gguf_release(&f);
    fwm_schema_release(out);
    return st;
}

void fwm_schema_release(fwm_schema *schema) {
    if (!schema) return;
    if (schema->tokens)
        for (uint32_t i = 0; i < schema->hp.vocab_size; i++) fwm__free(schema->tokens[i]);
    fwm__free(schema->tokens);
    fwm__free(schema->token_lengths);
    fwm__free(schema->name);
    memset(schema, 0, sizeof *schema);
}

uint64_t fwm_schema_checksum(const fwm_schema *schema) {
    fwm__xxh64_state state;
    fwm__xxh64_init(&state, 0);
    for (int i = 0; i < FWM_TENSOR_COUNT; i++)
        fwm__xxh64_update(&state, schema->tensors[i].data, (size_t)schema->tensors[i].n_bytes);
    return fwm__xxh64_digest(&state);
}

static void hash_u32(fwm__xxh64_state *state, uint32_t value) {
    uint8_t b[4] = {(uint8_t)value, (uint8_t)(value >> 8), (uint8_t)(value >> 16),
                    (uint8_t)(value >> 24)};
    fwm__xxh64_update(state, b, 4);
}

static void hash_f32(fwm__xxh64_state *state, float value) {
    uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
    hash_u32(state, bits);
}

uint64_t fwm_schema_fingerprint(const fwm_hparams *hp, const char *const *tokens,
                                const uint32_t *token_lengths, uint64_t checksum) {
    fwm__xxh64_state state;
    fwm__xxh64_init(&state, 0);
    fwm__xxh64_update(&state, "FWMFP1", 6);
    hash_u32(&state, hp->vocab_size);
    hash_u32(&state, hp->embedding_length);
    hash_u32(&state, hp->hidden_size);
    hash_u32(&state, hp->memory_s);
    hash_u32(&state, hp->memory_r);
    hash_u32(&state, hp->memory_t);
    hash_u32(&state, hp->read_count);
    hash_u32(&state, hp->residual ? 1u : 0u);
    hash_u32(&state, hp->read_policy);
    hash_u32(&state, hp->read_token_id);
    hash_f32(&state, hp->forget_bias);
    hash_f32(&state, hp->beta_bias);
    hash_f32(&state, hp->write_scale);
    hash_f32(&state, hp->layer_norm_eps);
    hash_u32(&state, hp->padding_token_id);
    hash_u32(&state, hp->eos_token_id);
    hash_u32(&state, hp->vocab_size);
    for (uint32_t i = 0; i < hp->vocab_size; i++) {
        hash_u32(&state, token_lengths[i]);
        fwm__xxh64_update(&state, tokens[i], token_lengths[i]);
    }
    uint8_t b[8];
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)(checksum >> (8 * i));
    fwm__xxh64_update(&state, b, 8);
    return fwm__xxh64_digest(&state);
}
