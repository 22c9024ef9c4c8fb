/* format_test_util.h - a configurable tiny-model file builder for the format tests (their
 * assertion macros and case runner come from the shared tests/check.h, included here). The builder
 * writes a valid fwm file with the generic GGUF writer, or one that differs from it in exactly one
 * way (a key omitted or retyped, a tensor reshaped, another layout...); tests then patch bytes at
 * the offsets it reports to make every corrupt file of the matrix. */
#ifndef FWM_TESTS_FORMAT_TEST_UTIL_H
#define FWM_TESTS_FORMAT_TEST_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "arch_list.h"
#include "check.h"
#include "fwm_hparams.h"
#include "fwm_schema.h"
#include "gguf_writer.h"

/* What to build; fixture_default_options() gives a valid tiny model. */
typedef struct fixture_options {
    fwm_hparams hp;
    const char *const *tokens; /* hp.vocab_size... or n_tokens entries */
    uint32_t n_tokens;
    uint64_t alignment;        /* writer alignment */
    int alignment_key;         /* 1: general.alignment = alignment; 0: omit */
    uint32_t alignment_value;  /* when nonzero: the value written instead */
    int reverse_tensors;       /* tensors (infos and data) in reverse list order */
    uint64_t junk;             /* junk bytes before each tensor's data */
    const char *architecture;
    const char *tokenizer_model;
    const char *read_policy;   /* NULL: from hp */
    const char *name;          /* general.name, NULL to omit */
    const char *omit_key;
    const char *omit_tensor;
    const char *retype_key;    /* written with type retype_to and a zero value of that type */
    uint32_t retype_to;
    const char *reshape_tensor; /* written with n_dims/dims below (data sized to match) */
    uint32_t reshape_n_dims;
    uint64_t reshape_dims[4];
    const char *type_tensor;   /* written as tensor_type (F16 or BF16 data converted) */
    uint32_t tensor_type;
    int all_type;              /* when set: every tensor written as tensor_type */
    const char *extra_tensor;  /* an extra F32 [4] tensor with this name */
    const char *extra_u32_key; /* an extra u32 key = 7 (may repeat an existing key) */
    int with_checksum;         /* fwm.checksum = the right value (+ checksum_delta) */
    uint64_t checksum_delta;
    int with_fingerprint;
    int with_prime;            /* fwm.session.prime_tokens: an array of prime_type (u32 ids) */
    uint32_t prime_type;       /* the array's element type; 0 means u32 */
    uint32_t prime[80];        /* its elements, as u32 (prime_count of them) */
    uint32_t prime_count;
} fixture_options;

typedef struct fixture {
    uint8_t *data;
    size_t size;
    fwm_gguf_layout layout;
    fwm_gguf_writer writer;    /* kept for the offsets of pairs and infos */
    const char *keys[64];      /* key of pair i */
    const char *tensors[32];   /* name of tensor info i */
    float *values[FWM_TENSOR_COUNT]; /* the F32 values behind each schema tensor */
    uint64_t elements[FWM_TENSOR_COUNT];
    void *stored[FWM_TENSOR_COUNT + 1]; /* the bytes as stored (converted for F16/BF16) */
    uint64_t checksum;         /* XXH64 of the stored tensor bytes in list order */
} fixture;

fixture_options fixture_default_options(void);
/* Build; returns 1 on success (a failed build is a test failure, reported). */
int fixture_build(const fixture_options *o, fixture *f);
void fixture_free(fixture *f);

/* Absolute offset of the pair `key` / of the info of tensor `name` (the test fails if absent). */
uint64_t fixture_key_offset(const fixture *f, const char *key);
uint64_t fixture_tensor_info_offset(const fixture *f, const char *name);
/* Offset of a pair's value: after key length, key, type. */
uint64_t fixture_value_offset(const fixture *f, const char *key);

void patch_u32(fixture *f, uint64_t offset, uint32_t value);
void patch_u64(fixture *f, uint64_t offset, uint64_t value);
uint64_t read_u64_at(const fixture *f, uint64_t offset);

/* Float conversions for F16 / BF16 test data (round to nearest even). */
uint16_t float_to_f16(float x);
uint16_t float_to_bf16(float x);

/* ---- for test_arch_format, the format of the architectures other than the FWM ---------------- */

/* The i-th tensor of an architecture's hyperparameters `hp` (its fwm_<arch>_tensor_at). */
typedef void (*tensor_at_fn)(const void *hp, size_t i, char name[48], uint64_t *rows, uint64_t *cols);
/* Whether that tensor is stored as a matrix (its fwm__<arch>_tensor_is_matrix). */
typedef int (*tensor_is_matrix_fn)(const void *hp, size_t i);

/* A fresh temporary folder named after `test` (returns 0, reported, when it cannot be made), the
 * path of `name` in it (a static buffer), and its removal. */
int test_dir_make(const char *test);
const char *test_dir_path(const char *name);
void test_dir_remove(void);

/* A whole file read into a malloc'd buffer (NULL when it cannot be read). */
uint8_t *read_whole_file(const char *path, size_t *size);

/* The file at `path` read back whole (NULL, a test failure, when it cannot be), its architecture
 * detected as `want`. */
uint8_t *read_back(const char *path, fwm_arch want, size_t *size);

/* The FWM's schema refuses a file of architecture `arch` by its general.architecture. */
void check_fwm_schema_refuses(const uint8_t *file, size_t size, const char *arch);

/* FWMFP2 written out from docs/FORMAT.md, byte by byte: the architecture's name, its fields as u32,
 * the vocabulary (lengths and bytes) and the checksum, hashed with XXH64. */
uint64_t expected_fwmfp2(const char *arch, const uint32_t *fields, size_t field_count,
                         const char *const *tokens, uint32_t token_count, uint64_t checksum);

/* Tensors filled with distinct values, one after the other: tensors[i] for i < count points into
 * the returned buffer (owned by the caller: free it). */
float *fill_tensors_at(const void *hp, size_t count, tensor_at_fn at, const float **tensors);

/* The parsed tensors against tensor_at: shapes, F32, 64-byte aligned, bytes equal to expected[i]. */
void check_stored_tensors(const fwm_schema_tensor *stored, size_t count, const void *hp,
                          tensor_at_fn at, const float *const *expected);

/* A key written as `type` (u32, bool, f32 or string), left out when it is omit_key, or written as
 * an i32 1 (a u32 1 for strings) when it is retype_key. */
void put_damaged_key(fwm_gguf_writer *w, const char *omit_key, const char *retype_key, const char *key,
                     uint32_t type, uint32_t u, float f, const char *s);

/* How a hand-built file's tensors differ from the schema (NULL fields: no such damage). */
typedef struct tensor_damage {
    const char *omit_tensor;    /* a tensor left out */
    const char *reshape_tensor; /* a tensor written with one more row */
    const char *f16_tensor;     /* a tensor stored as F16 (halves of the same values) */
    const char *type_tensor;    /* a tensor whose GGML type is written as tensor_type */
    uint32_t tensor_type;
    const char *extra_name;     /* one more F32 tensor of extra_rows x extra_cols */
    uint64_t extra_rows, extra_cols;
    int extra_matrix;
} tensor_damage;

/* The schema's tensors (every value 0.25) with `d`'s damage added to `w`, which is then finished
 * and released: the file's bytes (free with fwm__free; NULL, reported, on failure) and *size. */
uint8_t *finish_damaged_file(fwm_gguf_writer *w, const void *hp, size_t count, tensor_at_fn at,
                             tensor_is_matrix_fn is_matrix, const tensor_damage *d, size_t *size);

/* A parse that returned `st` (message in err) against the expected status and message part
 * (FWM_OK: success); a mismatch is reported and counted as a failure. */
void expect_parse(fwm_status st, const fwm_error *err, fwm_status status, const char *needle);

/* One hand-built file per key: each of `keys` left out must be refused as "missing key '<key>'"
 * (try_key builds and parses the file with that key omitted or retyped, then calls expect_parse). */
typedef void (*try_key_fn)(const char *omit_key, const char *retype_key, fwm_status status,
                           const char *needle);
void expect_missing_keys(const char *const *keys, size_t count, try_key_fn try_key);
/* Each retyped[k].key written with the wrong type must be refused as "key '<key>': <found>". */
typedef struct retyped_key {
    const char *key, *found;
} retyped_key;
void expect_retyped_keys(const retyped_key *retyped, size_t count, try_key_fn try_key);

#endif
