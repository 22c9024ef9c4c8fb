/* gguf_writer.c - a generic GGUF v3 writer into memory (see gguf_writer.h). */
#include "gguf_writer.h"

#include <string.h>

#include "fwm_alloc.h"
#include "fwm_error.h"

#define JUNK_BYTE 0xA5

/* ---- growable byte buffers -------------------------------------------------------------------- */

static int reserve(fwm_gguf_writer *w, uint8_t **bytes, size_t *capacity, size_t used,
                   size_t extra) {
    if (w->status) return 0;
    if (extra > SIZE_MAX / 2 - used) {
        w->status = FWM_ERR_INVALID_ARGUMENT;
        return 0;
    }
    if (used + extra <= *capacity) return 1;
    size_t grown = *capacity ? *capacity : 256;
    while (grown < used + extra) grown *= 2;
    uint8_t *p = fwm__realloc(*bytes, grown);
    if (!p) {
        w->status = FWM_ERR_OUT_OF_MEMORY;
        return 0;
    }
    *bytes = p;
    *capacity = grown;
    return 1;
}

static int push_start(fwm_gguf_writer *w, size_t **starts, size_t *capacity, uint64_t count,
                      size_t start) {
    if (w->status) return 0;
    if (count >= *capacity) {
        size_t grown = *capacity ? *capacity * 2 : 16;
        size_t *p = fwm__realloc(*starts, grown * sizeof *p);
        if (!p) {
            w->status = FWM_ERR_OUT_OF_MEMORY;
            return 0;
        }
        *starts = p;
        *capacity = grown;
    }
    (*starts)[count] = start;
    return 1;
}

static void put_bytes(uint8_t *dst, uint64_t value, int n) {
    for (int i = 0; i < n; i++) dst[i] = (uint8_t)(value >> (8 * i));
}

/* Append to the key/value section. */
static void kv_append(fwm_gguf_writer *w, const void *bytes, size_t n) {
    if (!reserve(w, &w->kv_bytes, &w->kv_capacity, w->kv_size, n)) return;
    if (n) memcpy(w->kv_bytes + w->kv_size, bytes, n);
    w->kv_size += n;
}

/* Append the low `n` (<= 8) bytes of value, little-endian. */
static void kv_append_uint(fwm_gguf_writer *w, uint64_t value, int n) {
    uint8_t b[8];
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)(value >> (8 * i));
    kv_append(w, b, n < 0 ? 0 : n > 8 ? 8 : (size_t)n);
}

static void kv_append_string(fwm_gguf_writer *w, const char *s, uint64_t length) {
    kv_append_uint(w, length, 8);
    kv_append(w, s, (size_t)length);
}

/* Start a pair: record where it begins, write its key and type. */
static void begin_pair(fwm_gguf_writer *w, const char *key, uint64_t key_length, uint32_t type) {
    if (!push_start(w, &w->kv_starts, &w->starts_capacity_kv, w->n_kv, w->kv_size)) return;
    w->n_kv++;
    kv_append_string(w, key, key_length);
    kv_append_uint(w, type, 4);
}

static void add_scalar(fwm_gguf_writer *w, const char *key, uint32_t type, uint64_t bits) {
    begin_pair(w, key, strlen(key), type);
    kv_append_uint(w, bits, (int)fwm__gguf_type_size(type));
}

void fwm__gguf_writer_add_u8(fwm_gguf_writer *w, const char *key, uint8_t value) {
    add_scalar(w, key, FWM_GGUF_TYPE_UINT8, value);
}
void fwm__gguf_writer_add_i8(fwm_gguf_writer *w, const char *key, int8_t value) {
    add_scalar(w, key, FWM_GGUF_TYPE_INT8, (uint8_t)value);
}
void fwm__gguf_writer_add_u16(fwm_gguf_writer *w, const char *key, uint16_t value) {
    add_scalar(w, key, FWM_GGUF_TYPE_UINT16, value);
}
void fwm__gguf_writer_add_i16(fwm_gguf_writer *w, const char *key, int16_t value) {
    add_scalar(w, key, FWM_GGUF_TYPE_INT16, (uint16_t)value);
}
void fwm__gguf_writer_add_u32(fwm_gguf_writer *w, const char *key, uint32_t value) {
    add_scalar(w, key, FWM_GGUF_TYPE_UINT32, value);
}
void fwm__gguf_writer_add_i32(fwm_gguf_writer *w, const char *key, int32_t value) {
    add_scalar(w, key, FWM_GGUF_TYPE_INT32, (uint32_t)value);
}
void fwm__gguf_writer_add_f32(fwm_gguf_writer *w, const char *key, float value) {
    uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
    add_scalar(w, key, FWM_GGUF_TYPE_FLOAT32, bits);
}
void fwm__gguf_writer_add_bool(fwm_gguf_writer *w, const char *key, bool value) {
    add_scalar(w, key, FWM_GGUF_TYPE_BOOL, value ? 1 : 0);
}
void fwm__gguf_writer_add_u64(fwm_gguf_writer *w, const char *key, uint64_t value) {
    add_scalar(w, key, FWM_GGUF_TYPE_UINT64, value);
}
void fwm__gguf_writer_add_i64(fwm_gguf_writer *w, const char *key, int64_t value) {
    add_scalar(w, key, FWM_GGUF_TYPE_INT64, (uint64_t)value);
}
void fwm__gguf_writer_add_f64(fwm_gguf_writer *w, const char *key, double value) {
    uint64_t bits;
    memcpy(&bits, &value, sizeof bits);
    add_scalar(w, key, FWM_GGUF_TYPE_FLOAT64, bits);
}
void fwm__gguf_writer_add_string(fwm_gguf_writer *w, const char *key, const char *value) {
    fwm__gguf_writer_add_string_n(w, key, value, strlen(value));
}
void fwm__gguf_writer_add_string_n(fwm_gguf_writer *w, const char *key, const char *value,
                                   uint64_t length) {
    begin_pair(w, key, strlen(key), FWM_GGUF_TYPE_STRING);
    kv_append_string(w, value, length);
}

/* Host value of element i of a scalar array, as little-endian bits. */
static uint64_t element_bits(uint32_t type, const void *elements, uint64_t i) {
    switch (type) {
    case FWM_GGUF_TYPE_UINT8:
    case FWM_GGUF_TYPE_INT8:
    case FWM_GGUF_TYPE_BOOL: return ((const uint8_t *)elements)[i];
    case FWM_GGUF_TYPE_UINT16:
    case FWM_GGUF_TYPE_INT16: return ((const uint16_t *)elements)[i];
    case FWM_GGUF_TYPE_UINT32:
    case FWM_GGUF_TYPE_INT32:
    case FWM_GGUF_TYPE_FLOAT32: {
        uint32_t v;
        memcpy(&v, (const uint8_t *)elements + 4 * i, 4);
        return v;
    }
    default: {
        uint64_t v;
        memcpy(&v, (const uint8_t *)elements + 8 * i, 8);
        return v;
    }
    }
}

void fwm__gguf_writer_add_array(fwm_gguf_writer *w, const char *key, uint32_t element_type,
                                const void *elements, uint64_t count) {
    uint64_t size = fwm__gguf_type_size(element_type);
    if (size == 0) {
        if (!w->status) w->status = FWM_ERR_INVALID_ARGUMENT;
        return;
    }
    begin_pair(w, key, strlen(key), FWM_GGUF_TYPE_ARRAY);
    kv_append_uint(w, element_type, 4);
    kv_append_uint(w, count, 8);
    if (count > SIZE_MAX / size) {
        if (!w->status) w->status = FWM_ERR_INVALID_ARGUMENT;
        return;
    }
    if (!reserve(w, &w->kv_bytes, &w->kv_capacity, w->kv_size, (size_t)(count * size))) return;
    for (uint64_t i = 0; i < count; i++)
        kv_append_uint(w, element_bits(element_type, elements, i), (int)size);
}

void fwm__gguf_writer_add_string_array(fwm_gguf_writer *w, const char *key,
                                       const char *const *strings, const uint64_t *lengths,
                                       uint64_t count) {
    begin_pair(w, key, strlen(key), FWM_GGUF_TYPE_ARRAY);
    kv_append_uint(w, FWM_GGUF_TYPE_STRING, 4);
    kv_append_uint(w, count, 8);
    for (uint64_t i = 0; i < count; i++)
        kv_append_string(w, strings[i], lengths ? lengths[i] : strlen(strings[i]));
}

void fwm__gguf_writer_add_raw_kv(fwm_gguf_writer *w, const char *key, uint64_t key_length,
                                 uint32_t type, const void *value, size_t value_size) {
    begin_pair(w, key, key_length, type);
    kv_append(w, value, value_size);
}

/* ---- tensors ----------------------------------------------------------------------------------- */

void fwm__gguf_writer_add_tensor_info(fwm_gguf_writer *w, const char *name, uint32_t n_dims,
                                      const uint64_t *dims, uint32_t type, uint64_t offset) {
    if (!push_start(w, &w->info_starts, &w->starts_capacity_info, w->n_tensors, w->info_size))
        return;
    w->n_tensors++;
    size_t length = strlen(name);
    size_t need = 8 + length + 4 + 8 * (size_t)n_dims + 4 + 8;
    if (!reserve(w, &w->info_bytes, &w->info_capacity, w->info_size, need)) return;
    uint8_t *p = w->info_bytes + w->info_size;
    put_bytes(p, length, 8);
    memcpy(p + 8, name, length);
    p += 8 + length;
    put_bytes(p, n_dims, 4);
    p += 4;
    for (uint32_t d = 0; d < n_dims; d++, p += 8) put_bytes(p, dims[d], 8);
    put_bytes(p, type, 4);
    put_bytes(p + 4, offset, 8);
    w->info_size += need;
}

uint64_t fwm__gguf_writer_add_data(fwm_gguf_writer *w, const void *data, uint64_t n_bytes,
                                   uint64_t junk_before) {
    if (w->status) return 0;
    uint64_t a = w->alignment;
    if (junk_before > UINT64_MAX / 4 || w->data_size > UINT64_MAX / 4 ||
        n_bytes > UINT64_MAX / 4) {
        w->status = FWM_ERR_INVALID_ARGUMENT;
        return 0;
    }
    uint64_t offset = (w->data_size + junk_before + a - 1) / a * a;
    if (w->n_chunks == w->chunk_capacity) {
        size_t grown = w->chunk_capacity ? w->chunk_capacity * 2 : 16;
        fwm_gguf_writer_chunk *p = fwm__realloc(w->chunks, grown * sizeof *p);
        if (!p) {
            w->status = FWM_ERR_OUT_OF_MEMORY;
            return 0;
        }
        w->chunks = p;
        w->chunk_capacity = grown;
    }
    w->chunks[w->n_chunks++] =
        (fwm_gguf_writer_chunk){data, offset, n_bytes, junk_before ? JUNK_BYTE : 0};
    w->data_size = offset + n_bytes;
    return offset;
}

uint64_t fwm__gguf_writer_add_tensor(fwm_gguf_writer *w, const char *name, uint32_t n_dims,
                                     const uint64_t *dims, uint32_t type, const void *data,
                                     uint64_t n_bytes, uint64_t junk_before) {
    uint64_t offset = fwm__gguf_writer_add_data(w, data, n_bytes, junk_before);
    fwm__gguf_writer_add_tensor_info(w, name, n_dims, dims, type, offset);
    return offset;
}

/* ---- assembly ---------------------------------------------------------------------------------- */

void fwm__gguf_writer_init(fwm_gguf_writer *w, uint64_t alignment) {
    memset(w, 0, sizeof *w);
    w->alignment = alignment;
    if (alignment == 0 || (alignment & (alignment - 1)) != 0) w->status = FWM_ERR_INVALID_ARGUMENT;
}

void fwm__gguf_writer_release(fwm_gguf_writer *w) {
    if (!w) return;
    fwm__free(w->kv_bytes);
    fwm__free(w->kv_starts);
    fwm__free(w->info_bytes);
    fwm__free(w->info_starts);
    fwm__free(w->chunks);
    memset(w, 0, sizeof *w);
}

uint64_t fwm__gguf_writer_kv_offset(const fwm_gguf_writer *w, uint64_t index) {
    return index < w->n_kv ? FWM_GGUF_HEADER_SIZE + w->kv_starts[index] : 0;
}

uint64_t fwm__gguf_writer_tensor_info_offset(const fwm_gguf_writer *w, uint64_t index) {
    return index < w->n_tensors ? FWM_GGUF_HEADER_SIZE + w->kv_size + w->info_starts[index] : 0;
}

fwm_status fwm__gguf_writer_finish(fwm_gguf_writer *w, uint8_t **out, size_t *size,
                                   fwm_gguf_layout *layout, fwm_error *err) {
    *out = NULL;
    *size = 0;
    if (w->status == FWM_ERR_OUT_OF_MEMORY)
        return fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "out of memory while building a GGUF file");
    if (w->status)
        return fwm__error(err, w->status, "GGUF writer: bad alignment, array type or size overflow");
    fwm_gguf_layout l;
    l.kv_section = FWM_GGUF_HEADER_SIZE;
    l.info_section = l.kv_section + w->kv_size;
    l.infos_end = l.info_section + w->info_size;
    l.data_section = (l.infos_end + w->alignment - 1) / w->alignment * w->alignment;
    if (w->data_size > SIZE_MAX - l.data_section)
        return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "GGUF writer: file size overflows");
    l.size = l.data_section + w->data_size;
    uint8_t *file = fwm__malloc((size_t)l.size);
    if (!file)
        return fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "out of memory for a %llu-byte GGUF file",
                          (unsigned long long)l.size);
    memcpy(file, FWM_GGUF_MAGIC, 4);
    put_bytes(file + 4, FWM_GGUF_VERSION, 4);
    put_bytes(file + 8, w->n_tensors, 8);
    put_bytes(file + 16, w->n_kv, 8);
    if (w->kv_size) memcpy(file + l.kv_section, w->kv_bytes, w->kv_size);
    if (w->info_size) memcpy(file + l.info_section, w->info_bytes, w->info_size);
    memset(file + l.infos_end, 0, l.data_section - l.infos_end);
    uint8_t *data = file + l.data_section;
    uint64_t end = 0;
    for (size_t i = 0; i < w->n_chunks; i++) {
        const fwm_gguf_writer_chunk *c = &w->chunks[i];
        memset(data + end, c->gap_fill, c->offset - end);
        if (c->size) memcpy(data + c->offset, c->data, c->size);
        end = c->offset + c->size;
    }
    *out = file;
    *size = (size_t)l.size;
    if (layout) *layout = l;
    return FWM_OK;
}
