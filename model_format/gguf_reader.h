/* gguf_reader.h - parse and validate a GGUF v3 container held in memory (no schema knowledge).
 *
 * What it checks (docs/FORMAT.md, "Container validation"): magic, version 3, every count and
 * length against the bytes that remain (and against overflow) before anything is allocated, value
 * types, bools, duplicate keys, tensor names, dimensions, tensor types, alignment
 * (general.alignment, default 32), each tensor's offset, extent and overlap. Every refusal names
 * the key or tensor and what was expected and found.
 *
 * What it is not for: the fwm schema (fwm_schema.c) and writing (gguf_writer.h).
 * The parsed file points into the caller's buffer (an mmap works): it must outlive the result.
 * Internal to libfwm and its tools. Thread-safe: no global state.
 */
#ifndef FWM_MODEL_FORMAT_GGUF_READER_H
#define FWM_MODEL_FORMAT_GGUF_READER_H

#include <stddef.h>
#include <stdint.h>

#include "fwm/fwm.h"

#define FWM_GGUF_MAGIC "GGUF"
#define FWM_GGUF_VERSION 3u
#define FWM_GGUF_DEFAULT_ALIGNMENT 32u
#define FWM_GGUF_MIN_ALIGNMENT 8u              /* smallest general.alignment accepted */
#define FWM_GGUF_MAX_ALIGNMENT (1u << 24)      /* largest general.alignment accepted */
#define FWM_GGUF_MAX_KEY_LENGTH 65535u         /* bytes, as the GGUF spec says */
#define FWM_GGUF_MAX_TENSOR_NAME_LENGTH 64u    /* bytes (GGML_MAX_NAME) */
#define FWM_GGUF_MAX_DIMS 4u
#define FWM_GGUF_HEADER_SIZE 24u               /* magic, version, n_tensors, n_kv */
#define FWM_GGUF_MIN_KV_SIZE 14u               /* key length 8 + key >= 1 + type 4 + value >= 1 */
#define FWM_GGUF_MIN_TENSOR_INFO_SIZE 33u      /* name 8 + >= 1, n_dims 4, dim 8, type 4, offset 8 */

/* GGUF metadata value types. */
typedef enum fwm_gguf_type {
    FWM_GGUF_TYPE_UINT8 = 0,
    FWM_GGUF_TYPE_INT8 = 1,
    FWM_GGUF_TYPE_UINT16 = 2,
    FWM_GGUF_TYPE_INT16 = 3,
    FWM_GGUF_TYPE_UINT32 = 4,
    FWM_GGUF_TYPE_INT32 = 5,
    FWM_GGUF_TYPE_FLOAT32 = 6,
    FWM_GGUF_TYPE_BOOL = 7,
    FWM_GGUF_TYPE_STRING = 8,
    FWM_GGUF_TYPE_ARRAY = 9,
    FWM_GGUF_TYPE_UINT64 = 10,
    FWM_GGUF_TYPE_INT64 = 11,
    FWM_GGUF_TYPE_FLOAT64 = 12,
    FWM_GGUF_TYPE_COUNT_ = 13
} fwm_gguf_type;

/* A string inside the buffer: `length` bytes at `data`, NOT NUL-terminated. */
typedef struct fwm_gguf_string {
    const char *data;
    uint64_t length;
} fwm_gguf_string;

typedef struct fwm_gguf_kv {
    fwm_gguf_string key;
    uint32_t type;          /* fwm_gguf_type */
    uint32_t array_type;    /* element type when type is ARRAY (never ARRAY itself) */
    uint64_t array_count;   /* element count when type is ARRAY */
    const uint8_t *value;   /* the value's bytes: a scalar, a string's u64 length, or the first
                               array element */
    uint64_t value_size;    /* bytes of the value (for an array: of all its elements) */
    uint64_t offset;        /* absolute file offset where this key/value pair starts */
} fwm_gguf_kv;

typedef struct fwm_gguf_tensor_info {
    fwm_gguf_string name;
    uint32_t n_dims;                    /* 1..FWM_GGUF_MAX_DIMS */
    uint64_t dims[FWM_GGUF_MAX_DIMS];   /* fastest first; unused dims are 1 */
    uint32_t type;                      /* GGML type (F32, F16 or BF16 pass the reader) */
    uint64_t offset;                    /* relative to the data section, as stored */
    uint64_t n_elements;
    uint64_t n_bytes;
    uint64_t file_offset;               /* absolute: data_offset + offset */
    const uint8_t *data;                /* into the buffer */
} fwm_gguf_tensor_info;

typedef struct fwm_gguf_file {
    const uint8_t *data; /* the caller's buffer */
    size_t size;
    uint32_t version;
    uint64_t n_kv;
    fwm_gguf_kv *kvs;                /* owned, n_kv entries in file order */
    uint64_t n_tensors;
    fwm_gguf_tensor_info *tensors;   /* owned, n_tensors entries in file order */
    uint64_t alignment;              /* general.alignment or 32 */
    uint64_t data_offset;            /* absolute start of the tensor data section */
} fwm_gguf_file;

/* Parse buf[0..size). On success *out owns its arrays (release with fwm__gguf_release) and points
 * into buf. On failure *out is zeroed. Returns FWM_ERR_FORMAT, FWM_ERR_UNSUPPORTED (a GGML tensor
 * type other than F32, F16, BF16; GGUF versions 1 and 2; big-endian files),
 * FWM_ERR_OUT_OF_MEMORY, FWM_ERR_INVALID_ARGUMENT (NULL pointers). */
fwm_status fwm__gguf_parse(const void *buf, size_t size, fwm_gguf_file *out, fwm_error *err);

/* Free what fwm__gguf_parse allocated and zero *file; NULL is a no-op; idempotent. */
void fwm__gguf_release(fwm_gguf_file *file);

/* The pair whose key equals `key` (NUL-terminated), or NULL. */
const fwm_gguf_kv *fwm__gguf_find_key(const fwm_gguf_file *file, const char *key);

/* The tensor named `name` (NUL-terminated), or NULL. */
const fwm_gguf_tensor_info *fwm__gguf_find_tensor(const fwm_gguf_file *file, const char *name);

/* "u32", "string", "array" ...; "unknown" outside the table. */
const char *fwm__gguf_type_name(uint32_t type);

/* Bytes of one scalar of `type`; 0 for STRING, ARRAY and unknown types. */
uint64_t fwm__gguf_type_size(uint32_t type);

/* GGML tensor type name ("F32", "Q4_0", ...); "unknown" when the number is not a GGML type. */
const char *fwm__ggml_type_name(uint32_t type);

/* Little-endian scalar decoding from unaligned bytes (the kv's value pointer). */
uint16_t fwm__gguf_read_u16(const uint8_t *p);
uint32_t fwm__gguf_read_u32(const uint8_t *p);
uint64_t fwm__gguf_read_u64(const uint8_t *p);
float fwm__gguf_read_f32(const uint8_t *p);
double fwm__gguf_read_f64(const uint8_t *p);

/* A value of type STRING at p (its u64 length then its bytes), already validated by the parser. */
fwm_gguf_string fwm__gguf_read_string(const uint8_t *p);

/* Walk the strings of a validated string array: start with p = kv->value, each call returns the
 * next string and advances *p. */
fwm_gguf_string fwm__gguf_next_string(const uint8_t **p);

#endif
