/* format_test_util.c - the tiny-model file builder and helpers of format_test_util.h. */
#include "format_test_util.h"

#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "fwm_alloc.h"
#include "fwm_model_shape.h"
#include "xxhash64.h"

static const char *const default_tokens[] = {"<pad>", "<eos>", ".", "?", "mary", "kitchen"};

fixture_options fixture_default_options(void) {
    fixture_options o;
    memset(&o, 0, sizeof o);
    o.hp = (fwm_hparams){.vocab_size = 6,
                         .embedding_length = 3,
                         .hidden_size = 4,
                         .memory_s = 2,
                         .memory_r = 3,
                         .memory_t = 2,
                         .read_count = 2,
                         .residual = true,
                         .read_policy = FWM_READ_ALWAYS,
                         .read_token_id = 3,
                         .forget_bias = 1.0f,
                         .beta_bias = 1.0f,
                         .write_scale = 0.5f,
                         .layer_norm_eps = 1e-5f,
                         .padding_token_id = 0,
                         .eos_token_id = 1};
    o.tokens = default_tokens;
    o.n_tokens = 6;
    o.alignment = 64;
    o.alignment_key = 1;
    o.architecture = "fwm";
    o.tokenizer_model = "word";
    o.with_checksum = 1;
    o.with_fingerprint = 1;
    return o;
}

uint16_t float_to_bf16(float x) {
    uint32_t bits;
    memcpy(&bits, &x, 4);
    bits += 0x7FFF + ((bits >> 16) & 1);
    return (uint16_t)(bits >> 16);
}

uint16_t float_to_f16(float x) {
    /* Small finite test values only: normal range or zero. */
    uint32_t bits;
    memcpy(&bits, &x, 4);
    uint16_t sign = (uint16_t)((bits >> 16) & 0x8000);
    float a = fabsf(x);
    if (a < 6.1035156e-05f) return sign; /* flush tiny values to zero */
    int exponent;
    float mantissa = frexpf(a, &exponent); /* a = mantissa * 2^exponent, mantissa in [0.5, 1) */
    uint32_t m = (uint32_t)lrintf((mantissa * 2.0f - 1.0f) * 1024.0f);
    int e = exponent - 1 + 15;
    if (m == 1024) m = 0, e++;
    return (uint16_t)(sign | (uint16_t)(e << 10) | (uint16_t)m);
}

static int same(const char *a, const char *b) { return a && b && strcmp(a, b) == 0; }

/* Add a key unless omitted or retyped (a retyped key gets a zero/"x" value of the new type). */
static int keep_key(fixture *f, fwm_gguf_writer *w, const fixture_options *o, const char *key) {
    if (same(o->omit_key, key)) return 0;
    f->keys[w->n_kv] = key;
    if (same(o->retype_key, key)) {
        uint8_t zero[16] = {0};
        if (o->retype_to == FWM_GGUF_TYPE_STRING) {
            uint8_t s[9] = {1, 0, 0, 0, 0, 0, 0, 0, 'x'};
            fwm__gguf_writer_add_raw_kv(w, key, strlen(key), o->retype_to, s, 9);
        } else if (o->retype_to == FWM_GGUF_TYPE_ARRAY) {
            uint8_t a[12] = {FWM_GGUF_TYPE_UINT32, 0, 0, 0, 0};
            fwm__gguf_writer_add_raw_kv(w, key, strlen(key), o->retype_to, a, 12);
        } else {
            fwm__gguf_writer_add_raw_kv(w, key, strlen(key), o->retype_to, zero,
                                        (size_t)fwm__gguf_type_size(o->retype_to));
        }
        return 0;
    }
    return 1;
}

int fixture_build(const fixture_options *o, fixture *f) {
    memset(f, 0, sizeof *f);
    const fwm_hparams *hp = &o->hp;
    fwm_gguf_writer *w = &f->writer;
    fwm__gguf_writer_init(w, o->alignment);

    /* Values: deterministic, distinct per tensor and element, exactly representable in F16. */
    for (int i = 0; i < FWM_TENSOR_COUNT; i++) {
        uint64_t rows, cols;
        fwm__tensor_shape(hp, i, &rows, &cols, NULL);
        uint64_t n = rows * cols;
        if (same(o->reshape_tensor, fwm__tensor_name(i))) {
            n = 1;
            for (uint32_t d = 0; d < o->reshape_n_dims; d++) n *= o->reshape_dims[d];
        }
        f->elements[i] = n;
        f->values[i] = calloc(n ? n : 1, sizeof(float));
        if (!f->values[i]) return 0;
        for (uint64_t k = 0; k < n; k++)
            f->values[i][k] = (float)((int)((k * 7 + (uint64_t)i * 13) % 29) - 14) / 16.0f;
    }
    uint64_t n_bytes[FWM_TENSOR_COUNT];
    uint32_t types[FWM_TENSOR_COUNT];
    fwm__xxh64_state state;
    fwm__xxh64_init(&state, 0);
    for (int i = 0; i < FWM_TENSOR_COUNT; i++) {
        uint32_t type = FWM_GGML_TYPE_F32;
        if (o->all_type || same(o->type_tensor, fwm__tensor_name(i))) type = o->tensor_type;
        types[i] = type;
        uint64_t n = f->elements[i];
        if (type == FWM_GGML_TYPE_F16 || type == FWM_GGML_TYPE_BF16) {
            uint16_t *h = calloc(n ? n : 1, 2);
            if (!h) return 0;
            for (uint64_t k = 0; k < n; k++)
                h[k] = type == FWM_GGML_TYPE_F16 ? float_to_f16(f->values[i][k])
                                                  : float_to_bf16(f->values[i][k]);
            f->stored[i] = h;
            n_bytes[i] = 2 * n;
        } else {
            f->stored[i] = NULL;
            n_bytes[i] = 4 * n; /* any other type number: F32-sized bytes, for the reader to judge */
        }
        fwm__xxh64_update(&state, f->stored[i] ? f->stored[i] : (void *)f->values[i],
                          (size_t)n_bytes[i]);
    }
    f->checksum = fwm__xxh64_digest(&state);

    if (keep_key(f, w, o, "general.architecture"))
        fwm__gguf_writer_add_string(w, "general.architecture", o->architecture);
    if (o->alignment_key && keep_key(f, w, o, "general.alignment"))
        fwm__gguf_writer_add_u32(w, "general.alignment",
                                 o->alignment_value ? o->alignment_value : (uint32_t)o->alignment);
    if (o->name && keep_key(f, w, o, "general.name"))
        fwm__gguf_writer_add_string(w, "general.name", o->name);
#define U32_KEY(key, value) \
    if (keep_key(f, w, o, key)) fwm__gguf_writer_add_u32(w, key, value)
#define F32_KEY(key, value) \
    if (keep_key(f, w, o, key)) fwm__gguf_writer_add_f32(w, key, value)
    U32_KEY("fwm.vocab_size", hp->vocab_size);
    U32_KEY("fwm.embedding_length", hp->embedding_length);
    U32_KEY("fwm.hidden_size", hp->hidden_size);
    U32_KEY("fwm.memory.s", hp->memory_s);
    U32_KEY("fwm.memory.r", hp->memory_r);
    U32_KEY("fwm.memory.t", hp->memory_t);
    U32_KEY("fwm.read_count", hp->read_count);
    if (keep_key(f, w, o, "fwm.residual")) fwm__gguf_writer_add_bool(w, "fwm.residual", hp->residual);
    if (keep_key(f, w, o, "fwm.read_policy"))
        fwm__gguf_writer_add_string(w, "fwm.read_policy",
                                    o->read_policy ? o->read_policy
                                    : hp->read_policy ? "token"
                                                      : "always");
    U32_KEY("fwm.read_token_id", hp->read_token_id);
    F32_KEY("fwm.forget_bias", hp->forget_bias);
    F32_KEY("fwm.beta_bias", hp->beta_bias);
    F32_KEY("fwm.write_scale", hp->write_scale);
    F32_KEY("fwm.layer_norm_eps", hp->layer_norm_eps);
    if (keep_key(f, w, o, "tokenizer.ggml.model"))
        fwm__gguf_writer_add_string(w, "tokenizer.ggml.model", o->tokenizer_model);
    if (keep_key(f, w, o, "tokenizer.ggml.tokens"))
        fwm__gguf_writer_add_string_array(w, "tokenizer.ggml.tokens", o->tokens, NULL, o->n_tokens);
    U32_KEY("tokenizer.ggml.padding_token_id", hp->padding_token_id);
    U32_KEY("tokenizer.ggml.eos_token_id", hp->eos_token_id);
    if (o->with_checksum && keep_key(f, w, o, FWM_KEY_CHECKSUM))
        fwm__gguf_writer_add_u64(w, FWM_KEY_CHECKSUM, f->checksum + o->checksum_delta);
    if (o->with_fingerprint && keep_key(f, w, o, FWM_KEY_FINGERPRINT)) {
        uint32_t lengths[64];
        for (uint32_t i = 0; i < o->n_tokens && i < 64; i++)
            lengths[i] = (uint32_t)strlen(o->tokens[i]);
        fwm__gguf_writer_add_u64(w, FWM_KEY_FINGERPRINT,
                                 o->n_tokens == hp->vocab_size && hp->vocab_size <= 64
                                     ? fwm__schema_fingerprint(hp, o->tokens, lengths, f->checksum)
                                     : 0);
    }
    if (o->with_prime && keep_key(f, w, o, FWM_KEY_PRIME_TOKENS)) {
        /* prime_type other than u32 must be 4 bytes wide (i32, f32): the same bytes, retyped */
        uint32_t type = o->prime_type ? o->prime_type : FWM_GGUF_TYPE_UINT32;
        fwm__gguf_writer_add_array(w, FWM_KEY_PRIME_TOKENS, type, o->prime, o->prime_count);
    }
    if (o->extra_u32_key) {
        f->keys[w->n_kv] = o->extra_u32_key;
        fwm__gguf_writer_add_u32(w, o->extra_u32_key, 7);
    }
#undef U32_KEY
#undef F32_KEY

    for (int j = 0; j < FWM_TENSOR_COUNT; j++) {
        int i = o->reverse_tensors ? FWM_TENSOR_COUNT - 1 - j : j;
        const char *name = fwm__tensor_name(i);
        if (same(o->omit_tensor, name)) continue;
        uint64_t rows, cols, dims[4];
        int is_matrix;
        uint32_t n_dims;
        fwm__tensor_shape(hp, i, &rows, &cols, &is_matrix);
        if (same(o->reshape_tensor, name)) {
            n_dims = o->reshape_n_dims;
            memcpy(dims, o->reshape_dims, sizeof dims);
        } else {
            n_dims = is_matrix ? 2 : 1;
            dims[0] = is_matrix ? cols : rows;
            dims[1] = rows;
        }
        f->tensors[w->n_tensors] = name;
        fwm__gguf_writer_add_tensor(w, name, n_dims, dims, types[i],
                                    f->stored[i] ? f->stored[i] : (void *)f->values[i],
                                    n_bytes[i], o->junk);
    }
    static const float extra_values[4] = {1, 2, 3, 4};
    if (o->extra_tensor) {
        uint64_t dims[1] = {4};
        f->tensors[w->n_tensors] = o->extra_tensor;
        fwm__gguf_writer_add_tensor(w, o->extra_tensor, 1, dims, FWM_GGML_TYPE_F32, extra_values,
                                    sizeof extra_values, o->junk);
    }
    fwm_error err;
    if (fwm__gguf_writer_finish(w, &f->data, &f->size, &f->layout, &err) != FWM_OK) {
        fprintf(stderr, "fixture_build: %s\n", err.message);
        check_failures++;
        return 0;
    }
    return 1;
}

void fixture_free(fixture *f) {
    for (int i = 0; i < FWM_TENSOR_COUNT; i++) {
        free(f->values[i]);
        free(f->stored[i]);
    }
    fwm__free(f->data);
    fwm__gguf_writer_release(&f->writer);
    memset(f, 0, sizeof *f);
}

uint64_t fixture_key_offset(const fixture *f, const char *key) {
    for (uint64_t i = 0; i < f->writer.n_kv; i++)
        if (same(f->keys[i], key)) return fwm__gguf_writer_kv_offset(&f->writer, i);
    fprintf(stderr, "fixture: no key '%s'\n", key);
    check_failures++;
    return 0;
}

uint64_t fixture_value_offset(const fixture *f, const char *key) {
    return fixture_key_offset(f, key) + 8 + strlen(key) + 4;
}

uint64_t fixture_tensor_info_offset(const fixture *f, const char *name) {
    for (uint64_t i = 0; i < f->writer.n_tensors; i++)
        if (same(f->tensors[i], name)) return fwm__gguf_writer_tensor_info_offset(&f->writer, i);
    fprintf(stderr, "fixture: no tensor '%s'\n", name);
    check_failures++;
    return 0;
}

void patch_u32(fixture *f, uint64_t offset, uint32_t value) {
    for (int i = 0; i < 4; i++) f->data[offset + i] = (uint8_t)(value >> (8 * i));
}

void patch_u64(fixture *f, uint64_t offset, uint64_t value) {
    for (int i = 0; i < 8; i++) f->data[offset + i] = (uint8_t)(value >> (8 * i));
}

uint64_t read_u64_at(const fixture *f, uint64_t offset) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | f->data[offset + i];
    return v;
}

/* ---- for test_arch_format, the format of the architectures other than the FWM ---------------- */

static char test_dir[256];

int test_dir_make(const char *test) {
    const char *base = getenv("TMPDIR");
    snprintf(test_dir, sizeof test_dir, "%s/fwm-%s-XXXXXX", base && base[0] ? base : "/tmp", test);
    if (!mkdtemp(test_dir)) {
        perror("mkdtemp");
        return 0;
    }
    return 1;
}

const char *test_dir_path(const char *name) {
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", test_dir, name);
    return path;
}

void test_dir_remove(void) { rmdir(test_dir); }

uint8_t *read_whole_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *data = malloc(n > 0 ? (size_t)n : 1);
    if (data && fread(data, 1, (size_t)n, f) != (size_t)n) {
        free(data);
        data = NULL;
    }
    fclose(f);
    *size = (size_t)n;
    return data;
}

uint8_t *read_back(const char *path, fwm_arch want, size_t *size) {
    uint8_t *file = read_whole_file(path, size);
    CHECK(file != NULL);
    if (!file) return NULL;
    fwm_arch arch = FWM_ARCH_COUNT;
    fwm_error err;
    CHECK_OK(fwm__arch_detect(file, *size, &arch, &err), err);
    CHECK_INT(arch, want);
    return file;
}

void check_fwm_schema_refuses(const uint8_t *file, size_t size, const char *arch) {
    char needle[96];
    snprintf(needle, sizeof needle, "key 'general.architecture': expected \"fwm\", found \"%s\"", arch);
    fwm_schema fs;
    fwm_error err;
    CHECK_STATUS(fwm__schema_parse(file, size, &fs, &err), FWM_ERR_FORMAT, &err);
    CHECK_CONTAINS(err.message, needle);
}

static void le32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

uint64_t expected_fwmfp2(const char *arch, const uint32_t *fields, size_t field_count,
                         const char *const *tokens, uint32_t token_count, uint64_t checksum) {
    uint8_t buf[4096];
    size_t n = 0;
    uint32_t arch_length = (uint32_t)strlen(arch);
    memcpy(buf, "FWMFP2", 6), n += 6;
    le32(buf + n, arch_length), n += 4;
    memcpy(buf + n, arch, arch_length), n += arch_length;
    for (size_t i = 0; i < field_count; i++) le32(buf + n, fields[i]), n += 4;
    le32(buf + n, token_count), n += 4;
    for (uint32_t i = 0; i < token_count; i++) {
        uint32_t len = (uint32_t)strlen(tokens[i]);
        le32(buf + n, len), n += 4;
        memcpy(buf + n, tokens[i], len), n += len;
    }
    for (int i = 0; i < 8; i++) buf[n++] = (uint8_t)(checksum >> (8 * i));
    return fwm__xxh64(buf, n, 0);
}

float *fill_tensors_at(const void *hp, size_t count, tensor_at_fn at, const float **tensors) {
    size_t total = 0;
    uint64_t rows, cols;
    char name[48];
    for (size_t i = 0; i < count; i++) {
        at(hp, i, name, &rows, &cols);
        total += rows * cols;
    }
    float *data = malloc(total * sizeof *data);
    for (size_t k = 0; k < total; k++) data[k] = (float)k * 0.01f - 1.0f;
    size_t next = 0;
    for (size_t i = 0; i < count; i++) {
        at(hp, i, name, &rows, &cols);
        tensors[i] = data + next;
        next += rows * cols;
    }
    return data;
}

void check_stored_tensors(const fwm_schema_tensor *stored, size_t count, const void *hp,
                          tensor_at_fn at, const float *const *expected) {
    for (size_t i = 0; i < count; i++) {
        char name[48];
        uint64_t rows, cols;
        at(hp, i, name, &rows, &cols);
        CHECK_U64(stored[i].rows, rows);
        CHECK_U64(stored[i].cols, cols);
        CHECK(stored[i].type == FWM_GGML_TYPE_F32);
        CHECK(stored[i].file_offset % 64 == 0);
        CHECK(memcmp(stored[i].data, expected[i], rows * cols * 4) == 0);
    }
}

void put_damaged_key(fwm_gguf_writer *w, const char *omit_key, const char *retype_key, const char *key,
                     uint32_t type, uint32_t u, float f, const char *s) {
    if (omit_key && strcmp(omit_key, key) == 0) return;
    if (retype_key && strcmp(retype_key, key) == 0) {
        if (type == FWM_GGUF_TYPE_STRING)
            fwm__gguf_writer_add_u32(w, key, 1);
        else
            fwm__gguf_writer_add_i32(w, key, 1);
        return;
    }
    switch (type) {
    case FWM_GGUF_TYPE_UINT32: fwm__gguf_writer_add_u32(w, key, u); break;
    case FWM_GGUF_TYPE_BOOL: fwm__gguf_writer_add_bool(w, key, u != 0); break;
    case FWM_GGUF_TYPE_FLOAT32: fwm__gguf_writer_add_f32(w, key, f); break;
    default: fwm__gguf_writer_add_string(w, key, s); break;
    }
}

uint8_t *finish_damaged_file(fwm_gguf_writer *w, const void *hp, size_t count, tensor_at_fn at,
                             tensor_is_matrix_fn is_matrix, const tensor_damage *d, size_t *size) {
    static float values[4096];
    static uint16_t halves[4096];
    for (size_t i = 0; i < 4096; i++) values[i] = 0.25f, halves[i] = 0x3400; /* 0.25 in F16 */
    for (size_t i = 0; i < count + (d->extra_name ? 1 : 0); i++) {
        char name[48];
        uint64_t rows, cols;
        int matrix;
        if (i < count) {
            at(hp, i, name, &rows, &cols);
            matrix = is_matrix(hp, i);
        } else {
            snprintf(name, sizeof name, "%s", d->extra_name);
            rows = d->extra_rows, cols = d->extra_cols, matrix = d->extra_matrix;
        }
        if (d->omit_tensor && strcmp(d->omit_tensor, name) == 0) continue;
        if (d->reshape_tensor && strcmp(d->reshape_tensor, name) == 0) rows++;
        uint64_t dims[2] = {matrix ? cols : rows, rows};
        uint32_t type = FWM_GGML_TYPE_F32;
        const void *data = values;
        uint64_t bytes = rows * cols * 4;
        if (d->f16_tensor && strcmp(d->f16_tensor, name) == 0)
            type = FWM_GGML_TYPE_F16, data = halves, bytes = rows * cols * 2;
        if (d->type_tensor && strcmp(d->type_tensor, name) == 0) type = d->tensor_type;
        fwm__gguf_writer_add_tensor(w, name, matrix ? 2 : 1, dims, type, data, bytes, 0);
    }
    uint8_t *file = NULL;
    fwm_error err;
    CHECK_OK(fwm__gguf_writer_finish(w, &file, size, NULL, &err), err);
    fwm__gguf_writer_release(w);
    return file;
}

void expect_parse(fwm_status st, const fwm_error *err, fwm_status status, const char *needle) {
    if (st != status || (needle && !strstr(err->message, needle))) {
        fprintf(stderr, "expected %s '%s', got %s '%s'\n", fwm_status_str(status), needle ? needle : "",
                fwm_status_str(st), st ? err->message : "");
        check_failures++;
    }
}

void expect_missing_keys(const char *const *keys, size_t count, try_key_fn try_key) {
    for (size_t k = 0; k < count; k++) {
        char needle[96];
        snprintf(needle, sizeof needle, "missing key '%s'", keys[k]);
        try_key(keys[k], NULL, FWM_ERR_FORMAT, needle);
    }
}

void expect_retyped_keys(const retyped_key *retyped, size_t count, try_key_fn try_key) {
    for (size_t k = 0; k < count; k++) {
        char needle[160];
        snprintf(needle, sizeof needle, "key '%s': %s", retyped[k].key, retyped[k].found);
        try_key(NULL, retyped[k].key, FWM_ERR_FORMAT, needle);
    }
}
