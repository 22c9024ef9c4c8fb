/* gguf_reader.c - parse and validate a GGUF v3 container in memory (see gguf_reader.h).
 *
 * The parser walks the buffer with a cursor that checks every read against the bytes left. Counts
 * are bounded by what the remaining bytes could hold before the two arrays (pairs, tensor infos)
 * are allocated; nothing else is allocated except the sort keys of the duplicate and overlap
 * checks, which are bounded the same way.
 */
#include "gguf_reader.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fwm_alloc.h"
#include "fwm_error.h"

/* How much of a name a message quotes (names may be up to 65535 bytes). */
#define NAME_QUOTE_MAX 96

typedef struct cursor {
    const uint8_t *data;
    size_t size;
    size_t pos;
} cursor;

static size_t bytes_left(const cursor *c) { return c->size - c->pos; }

uint16_t fwm__gguf_read_u16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

uint32_t fwm__gguf_read_u32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

uint64_t fwm__gguf_read_u64(const uint8_t *p) {
    return (uint64_t)fwm__gguf_read_u32(p) | (uint64_t)fwm__gguf_read_u32(p + 4) << 32;
}

float fwm__gguf_read_f32(const uint8_t *p) {
    uint32_t bits = fwm__gguf_read_u32(p);
    float value;
    memcpy(&value, &bits, sizeof value);
    return value;
}

double fwm__gguf_read_f64(const uint8_t *p) {
    uint64_t bits = fwm__gguf_read_u64(p);
    double value;
    memcpy(&value, &bits, sizeof value);
    return value;
}

fwm_gguf_string fwm__gguf_read_string(const uint8_t *p) {
    fwm_gguf_string s = {(const char *)p + 8, fwm__gguf_read_u64(p)};
    return s;
}

fwm_gguf_string fwm__gguf_next_string(const uint8_t **p) {
    fwm_gguf_string s = fwm__gguf_read_string(*p);
    *p += 8 + s.length;
    return s;
}

const char *fwm__gguf_type_name(uint32_t type) {
    static const char *const names[FWM_GGUF_TYPE_COUNT_] = {
        "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64",
        "f64"};
    return type < FWM_GGUF_TYPE_COUNT_ ? names[type] : "unknown";
}

uint64_t fwm__gguf_type_size(uint32_t type) {
    static const uint8_t sizes[FWM_GGUF_TYPE_COUNT_] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    return type < FWM_GGUF_TYPE_COUNT_ ? sizes[type] : 0;
}

/* GGML's type numbers; NULL marks numbers GGML retired (they are "unknown" here). */
static const char *const ggml_type_names[] = {
    "F32",     "F16",    "Q4_0",   "Q4_1",    NULL,   NULL,     "Q5_0",   "Q5_1",
    "Q8_0",    "Q8_1",   "Q2_K",   "Q3_K",    "Q4_K", "Q5_K",   "Q6_K",   "Q8_K",
    "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S",  "IQ4_NL", "IQ3_S", "IQ2_S",  "IQ4_XS",
    "I8",      "I16",    "I32",    "I64",     "F64",  "IQ1_M",  "BF16",   NULL,
    NULL,      NULL,     "TQ1_0",  "TQ2_0",   NULL,   NULL,     NULL,     "MXFP4"};
#define GGML_TYPE_TABLE_SIZE (sizeof ggml_type_names / sizeof ggml_type_names[0])

const char *fwm__ggml_type_name(uint32_t type) {
    if (type < GGML_TYPE_TABLE_SIZE && ggml_type_names[type]) return ggml_type_names[type];
    return "unknown";
}

/* Bytes per element of the tensor types the reader accepts; 0 for the others. */
static uint64_t tensor_element_size(uint32_t type) {
    switch (type) {
    case 0: return 4;  /* F32 */
    case 1: return 2;  /* F16 */
    case 30: return 2; /* BF16 */
    default: return 0;
    }
}

static int quote_length(uint64_t length) {
    return (int)(length < NAME_QUOTE_MAX ? length : NAME_QUOTE_MAX);
}

/* Fail unless `n` bytes remain at the cursor. `what` says what was being read. */
static fwm_status need(const cursor *c, uint64_t n, const char *what, fwm_error *err) {
    if (n > bytes_left(c))
        return fwm__error(err, FWM_ERR_FORMAT,
                          "truncated file: %s needs %" PRIu64 " bytes at offset %zu, only %zu left",
                          what, n, c->pos, bytes_left(c));
    return FWM_OK;
}

/* ---- metadata -------------------------------------------------------------------------------- */

/* Read one string's length and check its bytes are present; `label` names it in messages. */
static fwm_status read_key_name(cursor *c, uint64_t index, fwm_gguf_string *out, fwm_error *err) {
    char what[64];
    snprintf(what, sizeof what, "the name length of key #%" PRIu64, index);
    fwm_status st = need(c, 8, what, err);
    if (st) return st;
    uint64_t length = fwm__gguf_read_u64(c->data + c->pos);
    if (length == 0)
        return fwm__error(err, FWM_ERR_FORMAT, "key #%" PRIu64 " at offset %zu: empty key name",
                          index, c->pos);
    if (length > FWM_GGUF_MAX_KEY_LENGTH)
        return fwm__error(err, FWM_ERR_FORMAT,
                          "key #%" PRIu64 " at offset %zu: name length %" PRIu64
                          " exceeds the limit of %u bytes",
                          index, c->pos, length, FWM_GGUF_MAX_KEY_LENGTH);
    c->pos += 8;
    if (length > bytes_left(c))
        return fwm__error(err, FWM_ERR_FORMAT,
                          "truncated file: the name of key #%" PRIu64 " has length %" PRIu64
                          " at offset %zu, only %zu bytes left",
                          index, length, c->pos - 8, bytes_left(c));
    out->data = (const char *)c->data + c->pos;
    out->length = length;
    if (memchr(out->data, '\0', length))
        return fwm__error(err, FWM_ERR_FORMAT, "key #%" PRIu64 " '%.*s': name contains a NUL byte",
                          index, quote_length(length), out->data);
    c->pos += length;
    return FWM_OK;
}

/* Check `count` bool bytes are 0 or 1. */
static fwm_status check_bools(const uint8_t *p, uint64_t count, const fwm_gguf_kv *kv,
                              fwm_error *err) {
    for (uint64_t i = 0; i < count; i++)
        if (p[i] > 1)
            return fwm__error(err, FWM_ERR_FORMAT,
                              "key '%.*s': bool value %u at element %" PRIu64
                              " (expected 0 or 1)",
                              quote_length(kv->key.length), kv->key.data, p[i], i);
    return FWM_OK;
}

/* Parse an array value (element type, count, elements) for kv. */
static fwm_status read_array(cursor *c, fwm_gguf_kv *kv, fwm_error *err) {
    int klen = quote_length(kv->key.length);
    const char *kname = kv->key.data;
    char what[160];
    snprintf(what, sizeof what, "the array header of key '%.*s'", klen < 64 ? klen : 64, kname);
    fwm_status st = need(c, 12, what, err);
    if (st) return st;
    uint32_t element_type = fwm__gguf_read_u32(c->data + c->pos);
    uint64_t count = fwm__gguf_read_u64(c->data + c->pos + 4);
    if (element_type == FWM_GGUF_TYPE_ARRAY)
        return fwm__error(err, FWM_ERR_FORMAT,
                          "key '%.*s': nested arrays are not supported (offset %zu)", klen, kname,
                          c->pos);
    if (element_type >= FWM_GGUF_TYPE_COUNT_)
        return fwm__error(err, FWM_ERR_FORMAT,
                          "key '%.*s': unknown array element type %" PRIu32 " (offset %zu)", klen,
                          kname, element_type, c->pos);
    c->pos += 12;
    kv->array_type = element_type;
    kv->array_count = count;
    kv->value = c->data + c->pos;
    size_t start = c->pos;
    if (element_type == FWM_GGUF_TYPE_STRING) {
        if (count > bytes_left(c) / 8)
            return fwm__error(err, FWM_ERR_FORMAT,
                              "key '%.*s': an array of %" PRIu64
                              " strings cannot fit in the %zu bytes left (each needs at least 8)",
                              klen, kname, count, bytes_left(c));
        for (uint64_t i = 0; i < count; i++) {
            if (bytes_left(c) < 8)
                return fwm__error(err, FWM_ERR_FORMAT,
                                  "truncated file: string #%" PRIu64
                                  " of key '%.*s' needs 8 bytes for its length at offset %zu, "
                                  "only %zu left",
                                  i, klen, kname, c->pos, bytes_left(c));
            uint64_t length = fwm__gguf_read_u64(c->data + c->pos);
            c->pos += 8;
            if (length > bytes_left(c))
                return fwm__error(err, FWM_ERR_FORMAT,
                                  "truncated file: string #%" PRIu64 " of key '%.*s' has length %" PRIu64
                                  " at offset %zu, only %zu bytes left",
                                  i, klen, kname, length, c->pos - 8, bytes_left(c));
            c->pos += length;
        }
    } else {
        uint64_t element_size = fwm__gguf_type_size(element_type);
        if (count > bytes_left(c) / element_size)
            return fwm__error(err, FWM_ERR_FORMAT,
                              "key '%.*s': an array of %" PRIu64 " %s elements (%" PRIu64
                              " bytes each) cannot fit in the %zu bytes left",
                              klen, kname, count, fwm__gguf_type_name(element_type), element_size,
                              bytes_left(c));
        if (element_type == FWM_GGUF_TYPE_BOOL) {
            st = check_bools(c->data + c->pos, count, kv, err);
            if (st) return st;
        }
        c->pos += count * element_size;
    }
    kv->value_size = c->pos - start;
    return FWM_OK;
}

static fwm_status read_kv(cursor *c, uint64_t index, fwm_gguf_kv *kv, fwm_error *err) {
    kv->offset = c->pos;
    fwm_status st = read_key_name(c, index, &kv->key, err);
    if (st) return st;
    int klen = quote_length(kv->key.length);
    const char *kname = kv->key.data;
    char what[160];
    snprintf(what, sizeof what, "the value type of key '%.*s'", klen < 64 ? klen : 64, kname);
    st = need(c, 4, what, err);
    if (st) return st;
    kv->type = fwm__gguf_read_u32(c->data + c->pos);
    if (kv->type >= FWM_GGUF_TYPE_COUNT_)
        return fwm__error(err, FWM_ERR_FORMAT,
                          "key '%.*s': unknown value type %" PRIu32 " (offset %zu)", klen, kname,
                          kv->type, c->pos);
    c->pos += 4;
    if (kv->type == FWM_GGUF_TYPE_ARRAY) return read_array(c, kv, err);
    if (kv->type == FWM_GGUF_TYPE_STRING) {
        snprintf(what, sizeof what, "the string length of key '%.*s'", klen < 64 ? klen : 64,
                 kname);
        st = need(c, 8, what, err);
        if (st) return st;
        uint64_t length = fwm__gguf_read_u64(c->data + c->pos);
        if (length > bytes_left(c) - 8)
            return fwm__error(err, FWM_ERR_FORMAT,
                              "truncated file: the string value of key '%.*s' has length %" PRIu64
                              " at offset %zu, only %zu bytes left",
                              klen, kname, length, c->pos, bytes_left(c) - 8);
        kv->value = c->data + c->pos;
        kv->value_size = 8 + length;
        c->pos += 8 + length;
        return FWM_OK;
    }
    uint64_t size = fwm__gguf_type_size(kv->type);
    snprintf(what, sizeof what, "the %s value of key '%.*s'", fwm__gguf_type_name(kv->type),
             klen < 64 ? klen : 64, kname);
    st = need(c, size, what, err);
    if (st) return st;
    kv->value = c->data + c->pos;
    kv->value_size = size;
    if (kv->type == FWM_GGUF_TYPE_BOOL) {
        st = check_bools(kv->value, 1, kv, err);
        if (st) return st;
    }
    c->pos += size;
    return FWM_OK;
}

/* ---- duplicate and overlap checks (sorting bounded arrays) ------------------------------------ */

typedef struct name_entry {
    const char *data;
    uint64_t length;
    uint64_t index;
} name_entry;

static int compare_names(const void *a, const void *b) {
    const name_entry *x = a, *y = b;
    uint64_t n = x->length < y->length ? x->length : y->length;
    int c = memcmp(x->data, y->data, n);
    if (c) return c;
    if (x->length != y->length) return x->length < y->length ? -1 : 1;
    return x->index < y->index ? -1 : (x->index > y->index);
}

/* Sort `entries` by name; on a repeat, report the two indices through first and second. */
static int find_duplicate(name_entry *entries, uint64_t count, uint64_t *first, uint64_t *second) {
    if (count < 2) return 0;
    qsort(entries, count, sizeof *entries, compare_names);
    for (uint64_t i = 1; i < count; i++)
        if (entries[i].length == entries[i - 1].length &&
            memcmp(entries[i].data, entries[i - 1].data, entries[i].length) == 0) {
            *first = entries[i - 1].index;
            *second = entries[i].index;
            return 1;
        }
    return 0;
}

static fwm_status check_duplicate_keys(const fwm_gguf_file *f, fwm_error *err) {
    if (f->n_kv < 2) return FWM_OK;
    name_entry *entries = fwm__calloc(f->n_kv, sizeof *entries);
    if (!entries)
        return fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "out of memory checking %" PRIu64 " keys",
                          f->n_kv);
    for (uint64_t i = 0; i < f->n_kv; i++)
        entries[i] = (name_entry){f->kvs[i].key.data, f->kvs[i].key.length, i};
    uint64_t a, b;
    fwm_status st = FWM_OK;
    if (find_duplicate(entries, f->n_kv, &a, &b))
        st = fwm__error(err, FWM_ERR_FORMAT, "duplicate key '%.*s' (pairs #%" PRIu64 " and #%" PRIu64 ")",
                        quote_length(f->kvs[a].key.length), f->kvs[a].key.data, a, b);
    fwm__free(entries);
    return st;
}

static fwm_status check_duplicate_tensors(const fwm_gguf_file *f, fwm_error *err) {
    if (f->n_tensors < 2) return FWM_OK;
    name_entry *entries = fwm__calloc(f->n_tensors, sizeof *entries);
    if (!entries)
        return fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "out of memory checking %" PRIu64 " tensors",
                          f->n_tensors);
    for (uint64_t i = 0; i < f->n_tensors; i++)
        entries[i] = (name_entry){f->tensors[i].name.data, f->tensors[i].name.length, i};
    uint64_t a, b;
    fwm_status st = FWM_OK;
    if (find_duplicate(entries, f->n_tensors, &a, &b))
        st = fwm__error(err, FWM_ERR_FORMAT,
                        "duplicate tensor name '%.*s' (tensor infos #%" PRIu64 " and #%" PRIu64 ")",
                        quote_length(f->tensors[a].name.length), f->tensors[a].name.data, a, b);
    fwm__free(entries);
    return st;
}

typedef struct extent_entry {
    uint64_t start, end, index;
} extent_entry;

static int compare_extents(const void *a, const void *b) {
    const extent_entry *x = a, *y = b;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    return x->index < y->index ? -1 : (x->index > y->index);
}

static fwm_status check_overlaps(const fwm_gguf_file *f, fwm_error *err) {
    if (f->n_tensors < 2) return FWM_OK;
    extent_entry *entries = fwm__calloc(f->n_tensors, sizeof *entries);
    if (!entries)
        return fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "out of memory checking %" PRIu64 " tensors",
                          f->n_tensors);
    for (uint64_t i = 0; i < f->n_tensors; i++)
        entries[i] = (extent_entry){f->tensors[i].file_offset,
                                    f->tensors[i].file_offset + f->tensors[i].n_bytes, i};
    qsort(entries, f->n_tensors, sizeof *entries, compare_extents);
    fwm_status st = FWM_OK;
    for (uint64_t i = 1; i < f->n_tensors; i++) {
        const extent_entry *p = &entries[i - 1], *q = &entries[i];
        if (p->end > q->start) {
            const fwm_gguf_tensor_info *a = &f->tensors[p->index], *b = &f->tensors[q->index];
            st = fwm__error(err, FWM_ERR_FORMAT,
                            "tensors '%.*s' and '%.*s' overlap: file bytes [%" PRIu64 ", %" PRIu64
                            ") and [%" PRIu64 ", %" PRIu64 ")",
                            quote_length(a->name.length), a->name.data,
                            quote_length(b->name.length), b->name.data, p->start, p->end,
                            q->start, q->end);
            break;
        }
    }
    fwm__free(entries);
    return st;
}

/* ---- tensor infos ----------------------------------------------------------------------------- */

static fwm_status read_tensor_info(cursor *c, uint64_t index, fwm_gguf_tensor_info *t,
                                   fwm_error *err) {
    char what[160];
    snprintf(what, sizeof what, "the name length of tensor info #%" PRIu64, index);
    fwm_status st = need(c, 8, what, err);
    if (st) return st;
    uint64_t length = fwm__gguf_read_u64(c->data + c->pos);
    if (length == 0)
        return fwm__error(err, FWM_ERR_FORMAT,
                          "tensor info #%" PRIu64 " at offset %zu: empty tensor name", index,
                          c->pos);
    if (length > FWM_GGUF_MAX_TENSOR_NAME_LENGTH)
        return fwm__error(err, FWM_ERR_FORMAT,
                          "tensor info #%" PRIu64 " at offset %zu: name length %" PRIu64
                          " exceeds the limit of %u bytes",
                          index, c->pos, length, FWM_GGUF_MAX_TENSOR_NAME_LENGTH);
    c->pos += 8;
    if (length > bytes_left(c))
        return fwm__error(err, FWM_ERR_FORMAT,
                          "truncated file: the name of tensor info #%" PRIu64 " has length %" PRIu64
                          " at offset %zu, only %zu bytes left",
                          index, length, c->pos - 8, bytes_left(c));
    t->name.data = (const char *)c->data + c->pos;
    t->name.length = length;
    int nlen = (int)length;
    const char *name = t->name.data;
    if (memchr(name, '\0', length))
        return fwm__error(err, FWM_ERR_FORMAT, "tensor info #%" PRIu64 ": name contains a NUL byte",
                          index);
    c->pos += length;

    snprintf(what, sizeof what, "n_dims of tensor '%.*s'", nlen, name);
    st = need(c, 4, what, err);
    if (st) return st;
    t->n_dims = fwm__gguf_read_u32(c->data + c->pos);
    if (t->n_dims < 1 || t->n_dims > FWM_GGUF_MAX_DIMS)
        return fwm__error(err, FWM_ERR_FORMAT,
                          "tensor '%.*s': n_dims = %" PRIu32 " (expected 1 to %u)", nlen, name,
                          t->n_dims, FWM_GGUF_MAX_DIMS);
    c->pos += 4;

    snprintf(what, sizeof what, "the dimensions of tensor '%.*s'", nlen, name);
    st = need(c, 8ull * t->n_dims, what, err);
    if (st) return st;
    uint64_t elements = 1;
    for (uint32_t d = 0; d < FWM_GGUF_MAX_DIMS; d++) t->dims[d] = 1;
    for (uint32_t d = 0; d < t->n_dims; d++) {
        uint64_t dim = fwm__gguf_read_u64(c->data + c->pos + 8ull * d);
        if (dim == 0)
            return fwm__error(err, FWM_ERR_FORMAT, "tensor '%.*s': dimension %" PRIu32 " is 0",
                              nlen, name, d);
        if (dim > INT64_MAX / elements)
            return fwm__error(err, FWM_ERR_FORMAT,
                              "tensor '%.*s': element count overflows at dimension %" PRIu32
                              " (%" PRIu64 ")",
                              nlen, name, d, dim);
        elements *= dim;
        t->dims[d] = dim;
    }
    t->n_elements = elements;
    c->pos += 8ull * t->n_dims;

    snprintf(what, sizeof what, "the type of tensor '%.*s'", nlen, name);
    st = need(c, 4, what, err);
    if (st) return st;
    t->type = fwm__gguf_read_u32(c->data + c->pos);
    if (strcmp(fwm__ggml_type_name(t->type), "unknown") == 0)
        return fwm__error(err, FWM_ERR_FORMAT, "tensor '%.*s': unknown GGML type %" PRIu32, nlen,
                          name, t->type);
    uint64_t element_size = tensor_element_size(t->type);
    if (element_size == 0)
        return fwm__error(err, FWM_ERR_UNSUPPORTED,
                          "tensor '%.*s': type %s (%" PRIu32
                          ") is not supported (F32, F16 or BF16 only)",
                          nlen, name, fwm__ggml_type_name(t->type), t->type);
    if (elements > INT64_MAX / element_size)
        return fwm__error(err, FWM_ERR_FORMAT, "tensor '%.*s': byte size overflows (%" PRIu64
                          " elements)", nlen, name, elements);
    t->n_bytes = elements * element_size;
    c->pos += 4;

    snprintf(what, sizeof what, "the data offset of tensor '%.*s'", nlen, name);
    st = need(c, 8, what, err);
    if (st) return st;
    t->offset = fwm__gguf_read_u64(c->data + c->pos);
    c->pos += 8;
    return FWM_OK;
}

/* Place each tensor in the data section: alignment, extent within the file. */
static fwm_status place_tensors(fwm_gguf_file *f, fwm_error *err) {
    uint64_t data_room = f->size - f->data_offset; /* data_offset <= size checked by the caller */
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        fwm_gguf_tensor_info *t = &f->tensors[i];
        int nlen = (int)t->name.length;
        if (t->offset % f->alignment != 0)
            return fwm__error(err, FWM_ERR_FORMAT,
                              "tensor '%.*s': offset %" PRIu64
                              " is not a multiple of the alignment %" PRIu64,
                              nlen, t->name.data, t->offset, f->alignment);
        if (t->offset > data_room || t->n_bytes > data_room - t->offset)
            return fwm__error(err, FWM_ERR_FORMAT,
                              "tensor '%.*s': data at offset %" PRIu64 " (+%" PRIu64
                              " bytes) extends past the end of the file: the data section holds "
                              "%" PRIu64 " bytes",
                              nlen, t->name.data, t->offset, t->n_bytes, data_room);
        t->file_offset = f->data_offset + t->offset;
        t->data = f->data + t->file_offset;
    }
    return FWM_OK;
}

static fwm_status read_alignment(fwm_gguf_file *f, fwm_error *err) {
    f->alignment = FWM_GGUF_DEFAULT_ALIGNMENT;
    const fwm_gguf_kv *kv = fwm__gguf_find_key(f, "general.alignment");
    if (!kv) return FWM_OK;
    if (kv->type != FWM_GGUF_TYPE_UINT32)
        return fwm__error(err, FWM_ERR_FORMAT,
                          "key 'general.alignment': expected type u32, found %s",
                          fwm__gguf_type_name(kv->type));
    uint32_t a = fwm__gguf_read_u32(kv->value);
    if (a < FWM_GGUF_MIN_ALIGNMENT || a > FWM_GGUF_MAX_ALIGNMENT || (a & (a - 1)) != 0)
        return fwm__error(err, FWM_ERR_FORMAT,
                          "key 'general.alignment': expected a power of two from %u to %u, "
                          "found %" PRIu32,
                          FWM_GGUF_MIN_ALIGNMENT, FWM_GGUF_MAX_ALIGNMENT, a);
    f->alignment = a;
    return FWM_OK;
}

static fwm_status read_header(cursor *c, fwm_gguf_file *f, fwm_error *err) {
    if (c->size < 4)
        return fwm__error(err, FWM_ERR_FORMAT,
                          "truncated file: %zu bytes, too short for the GGUF magic", c->size);
    if (memcmp(c->data, FWM_GGUF_MAGIC, 4) != 0)
        return fwm__error(err, FWM_ERR_FORMAT,
                          "bad magic: expected \"GGUF\" (47 47 55 46), found %02x %02x %02x %02x",
                          c->data[0], c->data[1], c->data[2], c->data[3]);
    if (c->size < FWM_GGUF_HEADER_SIZE)
        return fwm__error(err, FWM_ERR_FORMAT,
                          "truncated file: %zu bytes, too short for the %u-byte GGUF header",
                          c->size, FWM_GGUF_HEADER_SIZE);
    uint32_t version = fwm__gguf_read_u32(c->data + 4);
    if (version == 1 || version == 2)
        return fwm__error(err, FWM_ERR_UNSUPPORTED,
                          "GGUF version %" PRIu32 " is not supported: only version 3 is", version);
    if (version == 0x03000000u || version == 0x02000000u)
        return fwm__error(err, FWM_ERR_UNSUPPORTED,
                          "big-endian GGUF files are not supported (version field %08" PRIx32 ")",
                          version);
    if (version != FWM_GGUF_VERSION)
        return fwm__error(err, FWM_ERR_FORMAT, "unknown GGUF version %" PRIu32 " (expected 3)",
                          version);
    f->version = version;
    f->n_tensors = fwm__gguf_read_u64(c->data + 8);
    f->n_kv = fwm__gguf_read_u64(c->data + 16);
    c->pos = FWM_GGUF_HEADER_SIZE;
    size_t room = bytes_left(c);
    if (f->n_kv > room / FWM_GGUF_MIN_KV_SIZE)
        return fwm__error(err, FWM_ERR_FORMAT,
                          "n_kv = %" PRIu64 " key/value pairs cannot fit in the %zu bytes after "
                          "the header (each needs at least %u)",
                          f->n_kv, room, FWM_GGUF_MIN_KV_SIZE);
    room -= f->n_kv * FWM_GGUF_MIN_KV_SIZE;
    if (f->n_tensors > room / FWM_GGUF_MIN_TENSOR_INFO_SIZE)
        return fwm__error(err, FWM_ERR_FORMAT,
                          "n_tensors = %" PRIu64 " tensor infos cannot fit in the %zu bytes left "
                          "after the header and %" PRIu64 " key/value pairs (each needs at least %u)",
                          f->n_tensors, room, f->n_kv, FWM_GGUF_MIN_TENSOR_INFO_SIZE);
    return FWM_OK;
}

fwm_status fwm__gguf_parse(const void *buf, size_t size, fwm_gguf_file *out, fwm_error *err) {
    if (!out) return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "fwm__gguf_parse: out is NULL");
    memset(out, 0, sizeof *out);
    if (!buf && size > 0)
        return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "fwm__gguf_parse: buffer is NULL");
    fwm_gguf_file f = {0};
    f.data = buf;
    f.size = size;
    cursor c = {buf, size, 0};
    fwm_status st = read_header(&c, &f, err);
    if (st) goto fail;

    if (f.n_kv > 0) {
        f.kvs = fwm__calloc(f.n_kv, sizeof *f.kvs);
        if (!f.kvs) {
            st = fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "out of memory for %" PRIu64 " keys", f.n_kv);
            goto fail;
        }
    }
    for (uint64_t i = 0; i < f.n_kv; i++) {
        st = read_kv(&c, i, &f.kvs[i], err);
        if (st) goto fail;
    }
    st = check_duplicate_keys(&f, err);
    if (st) goto fail;
    st = read_alignment(&f, err);
    if (st) goto fail;

    if (f.n_tensors > 0) {
        f.tensors = fwm__calloc(f.n_tensors, sizeof *f.tensors);
        if (!f.tensors) {
            st = fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "out of memory for %" PRIu64 " tensor infos",
                            f.n_tensors);
            goto fail;
        }
    }
    for (uint64_t i = 0; i < f.n_tensors; i++) {
        st = read_tensor_info(&c, i, &f.tensors[i], err);
        if (st) goto fail;
    }
    st = check_duplicate_tensors(&f, err);
    if (st) goto fail;

    /* The data section starts at the end of the tensor infos, rounded up to the alignment. */
    f.data_offset = ((uint64_t)c.pos + f.alignment - 1) / f.alignment * f.alignment;
    if (f.data_offset > size) {
        if (f.n_tensors > 0) {
            st = fwm__error(err, FWM_ERR_FORMAT,
                            "truncated file: the tensor data section starts at offset %" PRIu64
                            " (end of the tensor infos %zu rounded up to the alignment %" PRIu64
                            ") but the file has %zu bytes",
                            f.data_offset, c.pos, f.alignment, size);
            goto fail;
        }
        f.data_offset = size; /* no tensors: the padding may be absent */
    }
    st = place_tensors(&f, err);
    if (st) goto fail;
    st = check_overlaps(&f, err);
    if (st) goto fail;
    *out = f;
    return FWM_OK;
fail:
    fwm__gguf_release(&f);
    return st;
}

void fwm__gguf_release(fwm_gguf_file *file) {
    if (!file) return;
    fwm__free(file->kvs);
    fwm__free(file->tensors);
    memset(file, 0, sizeof *file);
}

static int string_equals(fwm_gguf_string s, const char *text) {
    size_t n = strlen(text);
    return s.length == n && memcmp(s.data, text, n) == 0;
}

const fwm_gguf_kv *fwm__gguf_find_key(const fwm_gguf_file *file, const char *key) {
    for (uint64_t i = 0; i < file->n_kv; i++)
        if (string_equals(file->kvs[i].key, key)) return &file->kvs[i];
    return NULL;
}

const fwm_gguf_tensor_info *fwm__gguf_find_tensor(const fwm_gguf_file *file, const char *name) {
    for (uint64_t i = 0; i < file->n_tensors; i++)
        if (string_equals(file->tensors[i].name, name)) return &file->tensors[i];
    return NULL;
}
