/* convert_bf16.c - the BF16 twin of an fwm or lstm model file (convert_bf16.h): the input's keys
 * copied as they are (but for the alignment, checksum, fingerprint and matmul type, which are
 * written anew), its tensors in the architecture's list order with the chosen matrices rounded to
 * BF16, and the checksum and fingerprint of the result computed by the architecture's schema. */
#include "convert_bf16.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "arch_list.h"
#include "fwm_alloc.h"
#include "fwm_error.h"
#include "fwm_model_shape.h"
#include "fwm_schema.h"
#include "gguf_writer.h"
#include "lstm/lstm_schema.h"
#include "schema_common.h"
#include "writer_common.h"

#define SOURCE_KEY "fwm.convert.source_fingerprint"

/* The architecture's tensors in list order (pointing into the input) and its fingerprint rule. */
typedef struct model_view {
    fwm_arch arch;
    size_t count;
    const char *names[FWM_LSTM_MAX_TENSORS > FWM_MAX_TENSORS ? FWM_LSTM_MAX_TENSORS : FWM_MAX_TENSORS];
    fwm_schema fwm;
    fwm_lstm_schema lstm;
} model_view;

static void view_release(model_view *v) {
    if (v->arch == FWM_ARCH_FWM) fwm__schema_release(&v->fwm);
    if (v->arch == FWM_ARCH_LSTM) fwm__lstm_schema_release(&v->lstm);
}

static fwm_status view_parse(const void *buf, size_t size, fwm_arch arch, model_view *v,
                             fwm_error *err) {
    memset(v, 0, sizeof *v);
    v->arch = arch;
    fwm_status st = arch == FWM_ARCH_FWM ? fwm__schema_parse(buf, size, &v->fwm, err)
                                         : fwm__lstm_schema_parse(buf, size, &v->lstm, err);
    if (st) return st;
    v->count = arch == FWM_ARCH_FWM ? (size_t)fwm__tensor_count(&v->fwm.hp) : v->lstm.tensor_count;
    return FWM_OK;
}

static const fwm_schema_tensor *view_tensor(const model_view *v, size_t i) {
    return v->arch == FWM_ARCH_FWM ? &v->fwm.tensors[i] : &v->lstm.tensors[i];
}

static const fwm__schema_head *view_head(const model_view *v) {
    return v->arch == FWM_ARCH_FWM ? &v->fwm.head : &v->lstm.head;
}

static uint64_t view_fingerprint(const model_view *v) {
    const fwm__schema_head *h = view_head(v);
    uint64_t fp = v->arch == FWM_ARCH_FWM
                      ? fwm__schema_fingerprint(&v->fwm.hp, (const char *const *)h->tokens,
                                                h->token_lengths, fwm__schema_checksum(&v->fwm))
                      : fwm__lstm_fingerprint(&v->lstm.hp, (const char *const *)h->tokens,
                                              h->token_lengths, fwm__lstm_schema_checksum(&v->lstm));
    return fwm__fingerprint_matmul(fp, h->bf16_matmul);
}

/* One stored element as a float (F32, F16 or BF16, little-endian). */
static float half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, bits;
    if (e == 0 && m == 0) {
        bits = sign;
    } else if (e == 0) {
        int shift = 0;
        while (!(m & 0x400u)) m <<= 1, shift++;
        bits = sign | ((uint32_t)(127 - 15 + 1 - shift) << 23) | ((m & 0x3ffu) << 13);
    } else if (e == 31) {
        bits = sign | 0x7f800000u | (m << 13);
    } else {
        bits = sign | ((e + 127 - 15) << 23) | (m << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static float element(const fwm_schema_tensor *t, uint64_t i) {
    const unsigned char *p = t->data;
    if (t->type == FWM_GGML_TYPE_F32) {
        float f;
        memcpy(&f, p + 4 * i, sizeof f);
        return f;
    }
    uint16_t h = (uint16_t)(p[2 * i] | (p[2 * i + 1] << 8));
    if (t->type == FWM_GGML_TYPE_F16) return half_to_float(h);
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* Round to nearest even; subnormal results become zeros of their sign (as the runtime reads them). */
static uint16_t to_bf16(float x) {
    uint32_t bits;
    memcpy(&bits, &x, sizeof bits);
    if ((bits & 0x7f800000u) == 0) return (uint16_t)((bits >> 16) & 0x8000u);
    uint32_t r = bits + 0x7fffu + ((bits >> 16) & 1u);
    uint16_t out = (uint16_t)(r >> 16);
    if ((out & 0x7f80u) == 0) out &= 0x8000u;
    return out;
}

/* Tensor t as BF16 into dst (n elements): FWM_ERR_INVALID_ARGUMENT naming the first weight that is
 * not finite or rounds to infinity. */
static fwm_status round_tensor(const char *name, const fwm_schema_tensor *t, uint16_t *dst,
                               fwm_error *err) {
    uint64_t n = t->rows * t->cols;
    for (uint64_t i = 0; i < n; i++) {
        float x = element(t, i);
        if (!isfinite(x))
            return fwm__error(err, FWM_ERR_INVALID_ARGUMENT,
                              "tensor '%s' element %" PRIu64 " is not finite (%g): not converted",
                              name, i, (double)x);
        dst[i] = to_bf16(x);
        if ((dst[i] & 0x7f80u) == 0x7f80u)
            return fwm__error(err, FWM_ERR_INVALID_ARGUMENT,
                              "tensor '%s' element %" PRIu64 " (%g) overflows BF16", name, i,
                              (double)x);
    }
    return FWM_OK;
}

/* The bytes of pair kv's value (after its type) in the file. */
static void value_bytes(const fwm_gguf_file *f, const fwm_gguf_kv *kv, const uint8_t **start,
                        size_t *length) {
    const uint8_t *p = f->data + kv->offset + 8 + kv->key.length + 4;
    const uint8_t *end;
    if (kv->type == FWM_GGUF_TYPE_ARRAY) {
        end = kv->value;
        if (kv->array_type == FWM_GGUF_TYPE_STRING)
            for (uint64_t i = 0; i < kv->array_count; i++) fwm__gguf_next_string(&end);
        else
            end += kv->array_count * fwm__gguf_type_size(kv->array_type);
    } else if (kv->type == FWM_GGUF_TYPE_STRING) {
        end = kv->value + 8 + fwm__gguf_read_u64(kv->value);
    } else {
        end = kv->value + fwm__gguf_type_size(kv->type);
    }
    *start = p;
    *length = (size_t)(end - p);
}

static int is_rewritten(const fwm_gguf_string *key) {
    static const char *const keys[] = {"general.alignment", FWM_KEY_CHECKSUM, FWM_KEY_FINGERPRINT,
                                       FWM_KEY_MATMUL_TYPE, SOURCE_KEY};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (key->length == strlen(keys[i]) && memcmp(key->data, keys[i], key->length) == 0) return 1;
    return 0;
}

/* Whether `name` is in the options' list (every eligible matrix when there is none). */
static int chosen(const fwm_bf16_convert_options *o, const char *name) {
    if (!o || !o->only) return 1;
    for (size_t i = 0; i < o->n_only; i++)
        if (strcmp(o->only[i], name) == 0) return 1;
    return 0;
}

/* The output file with the tensors data[i] (types[i]) and, when `keys`, the checksum and
 * fingerprint. */
static fwm_status assemble(const fwm_gguf_file *f, const model_view *v, const void *const *data,
                           const uint32_t *types, uint64_t source, int keys, uint64_t checksum,
                           uint64_t fingerprint, uint8_t **out, size_t *out_size, fwm_error *err) {
    fwm_gguf_writer w;
    fwm__gguf_writer_init(&w, FWM_WRITER_ALIGNMENT);
    for (uint64_t i = 0; i < f->n_kv; i++) {
        const fwm_gguf_kv *kv = &f->kvs[i];
        if (is_rewritten(&kv->key)) continue;
        const uint8_t *value;
        size_t length;
        value_bytes(f, kv, &value, &length);
        fwm__gguf_writer_add_raw_kv(&w, kv->key.data, kv->key.length, kv->type, value, length);
        if (kv->key.length == 20 && memcmp(kv->key.data, "general.architecture", 20) == 0)
            fwm__gguf_writer_add_u32(&w, "general.alignment", FWM_WRITER_ALIGNMENT);
    }
    fwm__gguf_writer_add_string(&w, FWM_KEY_MATMUL_TYPE, "bf16");
    fwm__gguf_writer_add_u64(&w, SOURCE_KEY, source);
    if (keys) {
        fwm__gguf_writer_add_u64(&w, FWM_KEY_CHECKSUM, checksum);
        fwm__gguf_writer_add_u64(&w, FWM_KEY_FINGERPRINT, fingerprint);
    }
    for (size_t i = 0; i < v->count; i++) {
        const fwm_gguf_tensor_info *t = fwm__gguf_find_tensor(f, v->names[i]);
        uint64_t n = t->n_elements;
        uint64_t bytes = n * (types[i] == FWM_GGML_TYPE_F32 ? 4 : 2);
        fwm__gguf_writer_add_tensor(&w, v->names[i], t->n_dims, t->dims, types[i], data[i], bytes, 0);
    }
    fwm_status st = fwm__gguf_writer_finish(&w, out, out_size, NULL, err);
    fwm__gguf_writer_release(&w);
    return st;
}

fwm_status fwm__convert_bf16(const void *in, size_t size, const fwm_bf16_convert_options *options,
                             uint8_t **out, size_t *out_size, size_t *converted, fwm_error *err) {
    fwm__error_clear(err);
    *out = NULL;
    *out_size = 0;
    *converted = 0;
    fwm_arch arch;
    fwm_status st = fwm__arch_detect(in, size, &arch, err);
    if (st) return st;
    if (arch != FWM_ARCH_FWM && arch != FWM_ARCH_LSTM)
        return fwm__error(err, FWM_ERR_UNSUPPORTED,
                          "architecture '%s' is not converted to BF16 (only fwm and lstm multiply in "
                          "BF16)",
                          fwm__arch_name(arch));
    model_view v;
    if ((st = view_parse(in, size, arch, &v, err))) {
        view_release(&v);
        return st;
    }
    fwm_gguf_file f;
    memset(&f, 0, sizeof f);
    void *data[FWM_LSTM_MAX_TENSORS > FWM_MAX_TENSORS ? FWM_LSTM_MAX_TENSORS : FWM_MAX_TENSORS];
    uint32_t types[sizeof data / sizeof data[0]];
    char lstm_names[FWM_LSTM_MAX_TENSORS][48];
    memset(data, 0, sizeof data);
    uint8_t *first = NULL;
    size_t first_size = 0;
    if (view_head(&v)->bf16_matmul) {
        st = fwm__error(err, FWM_ERR_UNSUPPORTED,
                        "the model is already a BF16 model (key '%s' is \"bf16\")", FWM_KEY_MATMUL_TYPE);
        goto done;
    }
    if ((st = fwm__gguf_parse(in, size, &f, err))) goto done;
    for (size_t i = 0; i < v.count; i++) {
        if (arch == FWM_ARCH_FWM) {
            v.names[i] = fwm__tensor_name((int)i);
        } else {
            uint64_t rows, cols;
            fwm__lstm_tensor_at(&v.lstm.hp, i, lstm_names[i], &rows, &cols);
            v.names[i] = lstm_names[i];
        }
    }
    /* every name of `only` must be an eligible matrix */
    for (size_t k = 0; options && options->only && k < options->n_only; k++) {
        size_t i = 0;
        while (i < v.count && strcmp(v.names[i], options->only[k]) != 0) i++;
        const fwm_gguf_tensor_info *t = i < v.count ? fwm__gguf_find_tensor(&f, v.names[i]) : NULL;
        if (!t || t->n_dims != 2 || i == 0 || t->dims[0] > FWM_BF16_MATRIX_MAX_COLS) {
            st = fwm__error(err, FWM_ERR_INVALID_ARGUMENT,
                            "'%s' is not a matrix the runtime multiplies in BF16 (every matrix of "
                            "the model but token_embd.weight, at most %u columns)",
                            options->only[k], FWM_BF16_MATRIX_MAX_COLS);
            goto done;
        }
    }
    for (size_t i = 0; i < v.count; i++) {
        const fwm_schema_tensor *t = view_tensor(&v, i);
        const fwm_gguf_tensor_info *info = fwm__gguf_find_tensor(&f, v.names[i]);
        uint64_t n = t->rows * t->cols;
        int bf16 = i > 0 && info->n_dims == 2 && t->cols <= FWM_BF16_MATRIX_MAX_COLS &&
                   chosen(options, v.names[i]);
        types[i] = bf16 ? FWM_GGML_TYPE_BF16 : FWM_GGML_TYPE_F32;
        data[i] = fwm__malloc((size_t)n * (bf16 ? 2 : 4) + 1);
        if (!data[i]) {
            st = fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "out of memory converting tensor '%s'",
                            v.names[i]);
            goto done;
        }
        if (bf16) {
            if ((st = round_tensor(v.names[i], t, data[i], err))) goto done;
            (*converted)++;
        } else {
            float *dst = data[i];
            for (uint64_t k = 0; k < n; k++) dst[k] = element(t, k);
        }
    }
    /* the file once without its checksum and fingerprint, to compute them with the schema */
    uint64_t source = view_fingerprint(&v);
    if ((st = assemble(&f, &v, (const void *const *)data, types, source, 0, 0, 0, &first,
                       &first_size, err)))
        goto done;
    model_view twin;
    if ((st = view_parse(first, first_size, arch, &twin, err))) {
        view_release(&twin);
        goto done;
    }
    uint64_t checksum = arch == FWM_ARCH_FWM ? fwm__schema_checksum(&twin.fwm)
                                             : fwm__lstm_schema_checksum(&twin.lstm);
    uint64_t fingerprint = view_fingerprint(&twin);
    view_release(&twin);
    st = assemble(&f, &v, (const void *const *)data, types, source, 1, checksum, fingerprint, out,
                  out_size, err);
done:
    fwm__free(first);
    for (size_t i = 0; i < sizeof data / sizeof data[0]; i++) fwm__free(data[i]);
    fwm__gguf_release(&f);
    view_release(&v);
    if (st) *converted = 0;
    return st;
}
