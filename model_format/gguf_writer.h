/* gguf_writer.h - a generic, low-level GGUF v3 writer into memory.
 *
 * Keys of any type and tensors are appended in call order; the file is assembled by
 * fwm__gguf_writer_finish. Tensor data is placed at offsets aligned to the writer's alignment, with
 * optional junk bytes before a tensor, or at offsets the caller chooses (raw tensor infos plus raw
 * data), so tests can produce any layout another writer could, and then patch bytes to make
 * corrupt files. The writer checks nothing about the schema and little about the container: it is
 * the reader's job to refuse bad files. fwm's own model writer (fwm_model_writer.c) builds on it.
 *
 * Errors are sticky: the add functions return nothing; the first failure (out of memory, size
 * overflow) is reported by fwm__gguf_writer_finish. Internal to libfwm, its tools and tests.
 * Little-endian output whatever the host (numeric values are given as host values).
 */
#ifndef FWM_MODEL_FORMAT_GGUF_WRITER_H
#define FWM_MODEL_FORMAT_GGUF_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fwm/fwm.h"
#include "gguf_reader.h"

typedef struct fwm_gguf_writer_chunk {
    const void *data; /* borrowed: must stay valid until finish */
    uint64_t offset;  /* relative to the data section */
    uint64_t size;
    uint8_t gap_fill; /* byte written in the gap before this chunk (0, or junk 0xA5) */
} fwm_gguf_writer_chunk;

typedef struct fwm_gguf_writer {
    uint64_t alignment;      /* data section start and tensor offsets are multiples of it */
    uint8_t *kv_bytes;       /* serialised key/value pairs */
    size_t kv_size, kv_capacity;
    uint64_t n_kv;
    size_t *kv_starts;       /* start of pair i within kv_bytes */
    uint8_t *info_bytes;     /* serialised tensor infos */
    size_t info_size, info_capacity;
    uint64_t n_tensors;
    size_t *info_starts;     /* start of tensor info i within info_bytes */
    size_t starts_capacity_kv, starts_capacity_info;
    fwm_gguf_writer_chunk *chunks; /* tensor data, in increasing offset order */
    size_t n_chunks, chunk_capacity;
    uint64_t data_size;      /* end of the last chunk */
    fwm_status status;       /* sticky first failure */
} fwm_gguf_writer;

/* Where the sections of the finished file are (absolute offsets). */
typedef struct fwm_gguf_layout {
    uint64_t kv_section;     /* 24: the first key/value pair */
    uint64_t info_section;   /* the first tensor info */
    uint64_t infos_end;      /* end of the last tensor info (padding follows) */
    uint64_t data_section;   /* infos_end rounded up to the alignment */
    uint64_t size;           /* total file size */
} fwm_gguf_layout;

/* `alignment`: a power of two >= 1 (the writer does not add general.alignment; add it yourself). */
void fwm__gguf_writer_init(fwm_gguf_writer *w, uint64_t alignment);
/* Free what the writer allocated; safe on a zeroed writer. */
void fwm__gguf_writer_release(fwm_gguf_writer *w);

/* Scalars. `key` is NUL-terminated. */
void fwm__gguf_writer_add_u8(fwm_gguf_writer *w, const char *key, uint8_t value);
void fwm__gguf_writer_add_i8(fwm_gguf_writer *w, const char *key, int8_t value);
void fwm__gguf_writer_add_u16(fwm_gguf_writer *w, const char *key, uint16_t value);
void fwm__gguf_writer_add_i16(fwm_gguf_writer *w, const char *key, int16_t value);
void fwm__gguf_writer_add_u32(fwm_gguf_writer *w, const char *key, uint32_t value);
void fwm__gguf_writer_add_i32(fwm_gguf_writer *w, const char *key, int32_t value);
void fwm__gguf_writer_add_f32(fwm_gguf_writer *w, const char *key, float value);
void fwm__gguf_writer_add_bool(fwm_gguf_writer *w, const char *key, bool value);
void fwm__gguf_writer_add_u64(fwm_gguf_writer *w, const char *key, uint64_t value);
void fwm__gguf_writer_add_i64(fwm_gguf_writer *w, const char *key, int64_t value);
void fwm__gguf_writer_add_f64(fwm_gguf_writer *w, const char *key, double value);
void fwm__gguf_writer_add_string(fwm_gguf_writer *w, const char *key, const char *value);
void fwm__gguf_writer_add_string_n(fwm_gguf_writer *w, const char *key, const char *value,
                                   uint64_t length);

/* An array of `count` scalars of `element_type` (not STRING or ARRAY) given as a host array of
 * the matching C type (bool as one byte each). */
void fwm__gguf_writer_add_array(fwm_gguf_writer *w, const char *key, uint32_t element_type,
                                const void *elements, uint64_t count);
/* An array of strings; `lengths` may be NULL (then strlen). */
void fwm__gguf_writer_add_string_array(fwm_gguf_writer *w, const char *key,
                                       const char *const *strings, const uint64_t *lengths,
                                       uint64_t count);
/* A pair with arbitrary key bytes, type number and value bytes, exactly as given (for tests). */
void fwm__gguf_writer_add_raw_kv(fwm_gguf_writer *w, const char *key, uint64_t key_length,
                                 uint32_t type, const void *value, size_t value_size);

/* A tensor: info plus data placed at the next aligned offset after `junk_before` junk bytes.
 * dims are GGUF order (fastest first). `data` is borrowed until finish. Returns the offset. */
uint64_t fwm__gguf_writer_add_tensor(fwm_gguf_writer *w, const char *name, uint32_t n_dims,
                                     const uint64_t *dims, uint32_t type, const void *data,
                                     uint64_t n_bytes, uint64_t junk_before);
/* A tensor info only, with the offset written as given (pair with fwm__gguf_writer_add_data). */
void fwm__gguf_writer_add_tensor_info(fwm_gguf_writer *w, const char *name, uint32_t n_dims,
                                      const uint64_t *dims, uint32_t type, uint64_t offset);
/* Data only, placed at the next aligned offset after `junk_before` junk bytes; returns it. */
uint64_t fwm__gguf_writer_add_data(fwm_gguf_writer *w, const void *data, uint64_t n_bytes,
                                   uint64_t junk_before);

/* Absolute file offsets, valid once everything is added: pair i, tensor info i. */
uint64_t fwm__gguf_writer_kv_offset(const fwm_gguf_writer *w, uint64_t index);
uint64_t fwm__gguf_writer_tensor_info_offset(const fwm_gguf_writer *w, uint64_t index);

/* Assemble the file: *out (allocated with fwm__malloc, owned by the caller, free with fwm__free)
 * and *size; `layout` may be NULL. Returns the sticky status (FWM_ERR_OUT_OF_MEMORY,
 * FWM_ERR_INVALID_ARGUMENT for a size overflow) or FWM_OK. The writer stays usable (finish again
 * after adding more). */
fwm_status fwm__gguf_writer_finish(fwm_gguf_writer *w, uint8_t **out, size_t *size,
                                   fwm_gguf_layout *layout, fwm_error *err);

#endif
