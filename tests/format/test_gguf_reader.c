/* test_gguf_reader.c - the corrupt-file matrix: one handcrafted file per loader check, each
 * refused with its own status and message; truncation at every byte; random damage; allocation
 * failures; and files laid out as other GGUF writers may lay them out, which must load. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>

#include "format_test_util.h"
#include "fwm_alloc.h"
#include "fwm_model_shape.h"
#include "fwm_schema.h"
#include "gguf_reader.h"
#include "xxhash64.h"

/* Parse f's bytes with the schema parser and expect a refusal. */
#define REFUSE(fx, want, needle)                                                           \
    do {                                                                                   \
        fwm_schema s_;                                                                     \
        fwm_error e_ = {0};                                                                \
        fwm_status rst_ = fwm__schema_parse((fx)->data, (fx)->size, &s_, &e_);              \
        CHECK_REFUSED(rst_, e_, want, needle);                                             \
        fwm__schema_release(&s_);                                                           \
    } while (0)

#define EXPECT_OK(fx)                                                                      \
    do {                                                                                   \
        fwm_schema s_;                                                                     \
        fwm_error e_ = {0};                                                                \
        fwm_status rst_ = fwm__schema_parse((fx)->data, (fx)->size, &s_, &e_);              \
        CHECK_OK(rst_, e_);                                                                \
        fwm__schema_release(&s_);                                                           \
    } while (0)

static fixture_options base(void) { return fixture_default_options(); }

/* Build from options, run `body` with `fx`, free. */
#define WITH_FIXTURE(opts, ...)            \
    do {                                   \
        fixture fx_storage;                \
        fixture *fx = &fx_storage;         \
        if (fixture_build(&(opts), fx)) {  \
            __VA_ARGS__;                   \
        }                                  \
        fixture_free(fx);                  \
    } while (0)

/* ---- valid files ------------------------------------------------------------------------------ */

static void valid_file_parses(void) {
    fixture_options o = base();
    o.name = "tiny";
    WITH_FIXTURE(o, {
        fwm_schema s;
        fwm_error e = {0};
        CHECK_OK(fwm__schema_parse(fx->data, fx->size, &s, &e), e);
        CHECK_U64(s.hp.vocab_size, 6);
        CHECK_U64(s.hp.embedding_length, 3);
        CHECK_U64(s.hp.hidden_size, 4);
        CHECK_U64(s.hp.memory_s, 2);
        CHECK_U64(s.hp.memory_r, 3);
        CHECK_U64(s.hp.memory_t, 2);
        CHECK_U64(s.hp.read_count, 2);
        CHECK(s.hp.residual);
        CHECK_U64(s.hp.read_policy, FWM_READ_ALWAYS);
        CHECK_U64(s.hp.read_token_id, 3);
        CHECK(s.hp.write_scale == 0.5f);
        CHECK(s.hp.layer_norm_eps == 1e-5f);
        CHECK_STR(s.head.name, "tiny");
        CHECK_STR(s.head.tokens[4], "mary");
        CHECK_U64(s.head.token_lengths[5], 7);
        CHECK(s.head.has_checksum);
        CHECK_U64(s.head.checksum, fx->checksum);
        CHECK_U64(fwm__schema_checksum(&s), fx->checksum);
        CHECK(s.head.has_fingerprint);
        for (int i = 0; i < FWM_TENSOR_COUNT; i++) {
            CHECK_U64(s.tensors[i].type, FWM_GGML_TYPE_F32);
            CHECK_U64(s.tensors[i].n_bytes, fx->elements[i] * 4);
            CHECK_U64(s.tensors[i].file_offset % 64, 0);
            CHECK((const uint8_t *)s.tensors[i].data == fx->data + s.tensors[i].file_offset);
            CHECK(memcmp(s.tensors[i].data, fx->values[i], (size_t)s.tensors[i].n_bytes) == 0);
        }
        CHECK_U64(s.tensors[FWM_TENSOR_lstm_weight_hh].rows, 16);
        CHECK_U64(s.tensors[FWM_TENSOR_lstm_weight_hh].cols, 4);
        CHECK_U64(s.tensors[FWM_TENSOR_lstm_bias].cols, 1);
        fwm__schema_release(&s);
        fwm__schema_release(&s); /* idempotent */
        fwm__schema_release(NULL);
    });
}

/* Another writer's layout: tensors in reverse order, junk between them, alignment 32 declared or
 * absent (default 32), no checksum or fingerprint, unknown extra keys. */
static void other_writer_layouts_load(void) {
    for (int variant = 0; variant < 4; variant++) {
        fixture_options o = base();
        o.reverse_tensors = variant & 1;
        o.junk = variant >= 2 ? 40 : 0;
        o.alignment = 32;
        o.alignment_key = variant != 3;
        o.with_checksum = variant != 1;
        o.with_fingerprint = 0;
        o.extra_u32_key = "other.writer.key";
        WITH_FIXTURE(o, {
            fwm_schema s;
            fwm_error e = {0};
            CHECK_OK(fwm__schema_parse(fx->data, fx->size, &s, &e), e);
            if (!e.status) {
                CHECK(s.head.has_checksum == (variant != 1));
                CHECK(!s.head.has_fingerprint);
                CHECK_U64(fwm__schema_checksum(&s), fx->checksum);
                for (int i = 0; i < FWM_TENSOR_COUNT; i++) {
                    CHECK_U64(s.tensors[i].file_offset % 32, 0);
                    CHECK(memcmp(s.tensors[i].data, fx->values[i], (size_t)s.tensors[i].n_bytes) == 0);
                }
                fwm__schema_release(&s);
            }
        });
    }
}

static void checksum_is_layout_independent(void) {
    fixture_options a = base(), b = base();
    b.reverse_tensors = 1;
    b.junk = 100;
    fixture fa, fb;
    if (fixture_build(&a, &fa) && fixture_build(&b, &fb)) {
        fwm_schema sa, sb;
        fwm_error e = {0};
        CHECK_OK(fwm__schema_parse(fa.data, fa.size, &sa, &e), e);
        CHECK_OK(fwm__schema_parse(fb.data, fb.size, &sb, &e), e);
        CHECK(fa.size != fb.size);
        CHECK_U64(fwm__schema_checksum(&sb), fwm__schema_checksum(&sa));
        /* independent: XXH64 of the concatenated values in list order */
        uint64_t total = 0;
        for (int i = 0; i < FWM_TENSOR_COUNT; i++) total += fa.elements[i];
        float *all = malloc(total * 4);
        uint64_t at = 0;
        for (int i = 0; i < FWM_TENSOR_COUNT; i++) {
            memcpy(all + at, fa.values[i], fa.elements[i] * 4);
            at += fa.elements[i];
        }
        CHECK_U64(fwm__schema_checksum(&sa), fwm__xxh64(all, total * 4, 0));
        free(all);
        fwm__schema_release(&sa);
        fwm__schema_release(&sb);
    }
    fixture_free(&fa);
    fixture_free(&fb);
}

static void f16_and_bf16_tensors_load(void) {
    uint32_t types[2] = {FWM_GGML_TYPE_F16, FWM_GGML_TYPE_BF16};
    for (int t = 0; t < 2; t++) {
        fixture_options o = base();
        o.all_type = 1;
        o.tensor_type = types[t];
        WITH_FIXTURE(o, {
            fwm_schema s;
            fwm_error e = {0};
            CHECK_OK(fwm__schema_parse(fx->data, fx->size, &s, &e), e);
            if (!e.status) {
                for (int i = 0; i < FWM_TENSOR_COUNT; i++) {
                    CHECK_U64(s.tensors[i].type, types[t]);
                    CHECK_U64(s.tensors[i].n_bytes, fx->elements[i] * 2);
                    CHECK(memcmp(s.tensors[i].data, fx->stored[i], (size_t)s.tensors[i].n_bytes) == 0);
                }
                CHECK_U64(fwm__schema_checksum(&s), fx->checksum);
                fwm__schema_release(&s);
            }
        });
    }
    fixture_options o = base(); /* mixed: one F16 tensor among F32 ones */
    o.type_tensor = "fwm.out.weight";
    o.tensor_type = FWM_GGML_TYPE_F16;
    WITH_FIXTURE(o, EXPECT_OK(fx));
}

/* ---- header ----------------------------------------------------------------------------------- */

static void empty_file(void) {
    fixture_options o = base();
    WITH_FIXTURE(o, {
        fx->size = 0;
        REFUSE(fx, FWM_ERR_FORMAT, "too short for the GGUF magic");
    });
}

static void bad_magic(void) {
    fixture_options o = base();
    WITH_FIXTURE(o, {
        fx->data[0] = 'X';
        REFUSE(fx, FWM_ERR_FORMAT, "bad magic: expected \"GGUF\"");
    });
}

static void truncated_header(void) {
    fixture_options o = base();
    WITH_FIXTURE(o, {
        fx->size = 20;
        REFUSE(fx, FWM_ERR_FORMAT, "too short for the 24-byte GGUF header");
    });
}

static void version_2_refused(void) {
    fixture_options o = base();
    WITH_FIXTURE(o, {
        patch_u32(fx, 4, 2);
        REFUSE(fx, FWM_ERR_UNSUPPORTED, "GGUF version 2 is not supported: only version 3");
        patch_u32(fx, 4, 1);
        REFUSE(fx, FWM_ERR_UNSUPPORTED, "GGUF version 1 is not supported");
    });
}

static void unknown_version(void) {
    fixture_options o = base();
    WITH_FIXTURE(o, {
        patch_u32(fx, 4, 7);
        REFUSE(fx, FWM_ERR_FORMAT, "unknown GGUF version 7 (expected 3)");
        patch_u32(fx, 4, 0);
        REFUSE(fx, FWM_ERR_FORMAT, "unknown GGUF version 0");
    });
}

static void big_endian_refused(void) {
    fixture_options o = base();
    WITH_FIXTURE(o, {
        patch_u32(fx, 4, 0x03000000u);
        REFUSE(fx, FWM_ERR_UNSUPPORTED, "big-endian GGUF files are not supported");
    });
}

static void absurd_kv_count(void) {
    fixture_options o = base();
    WITH_FIXTURE(o, {
        patch_u64(fx, 16, UINT64_C(1) << 60);
        REFUSE(fx, FWM_ERR_FORMAT, "key/value pairs cannot fit");
        patch_u64(fx, 16, UINT64_MAX);
        REFUSE(fx, FWM_ERR_FORMAT, "n_kv = 18446744073709551615");
    });
}

static void absurd_tensor_count(void) {
    fixture_options o = base();
    WITH_FIXTURE(o, {
        patch_u64(fx, 8, UINT64_C(1) << 62);
        REFUSE(fx, FWM_ERR_FORMAT, "tensor infos cannot fit");
        patch_u64(fx, 8, fx->size / 33); /* fits alone, not with the pairs */
        REFUSE(fx, FWM_ERR_FORMAT, "tensor infos cannot fit");
    });
}

static void kv_count_too_small(void) {
    /* n_kv one short: the last pair's bytes are read as the first tensor info */
    fixture_options o = base();
    WITH_FIXTURE(o, {
        patch_u64(fx, 16, fx->writer.n_kv - 1);
        fwm_schema s;
        fwm_error e = {0};
        fwm_status st = fwm__schema_parse(fx->data, fx->size, &s, &e);
        CHECK(st != FWM_OK);
        CHECK(e.message[0] != '\0');
        fwm__schema_release(&s);
    });
}

/* ---- metadata --------------------------------------------------------------------------------- */

static void absurd_key_length(void) {
    fixture_options o = base();
    WITH_FIXTURE(o, {
        uint64_t at = fixture_key_offset(fx, "fwm.hidden_size");
        patch_u64(fx, at, UINT64_C(1) << 40);
        REFUSE(fx, FWM_ERR_FORMAT, "name length 1099511627776 exceeds the limit of 65535 bytes");
        patch_u64(fx, at, 60000);
        REFUSE(fx, FWM_ERR_FORMAT, "has length 60000");
    });
}

static void empty_key(void) {
    fixture_options o = base();
    WITH_FIXTURE(o, {
        patch_u64(fx, fixture_key_offset(fx, "fwm.hidden_size"), 0);
        REFUSE(fx, FWM_ERR_FORMAT, "empty key name");
    });
}

static void nul_in_key(void) {
    fixture_options o = base();
    WITH_FIXTURE(o, {
        fx->data[fixture_key_offset(fx, "fwm.hidden_size") + 8 + 3] = 0;
        REFUSE(fx, FWM_ERR_FORMAT, "name contains a NUL byte");
    });
}

static void unknown_value_type(void) {
    fixture_options o = base();
    WITH_FIXTURE(o, {
        patch_u32(fx, fixture_value_offset(fx, "fwm.hidden_size") - 4, 13);
        REFUSE(fx, FWM_ERR_FORMAT, "key 'fwm.hidden_size': unknown value type 13");
    });
}

static void absurd_string_length(void) {
    fixture_options o = base();
    WITH_FIXTURE(o, {
        patch_u64(fx, fixture_value_offset(fx, "general.architecture"), UINT64_C(1) << 62);
        REFUSE(fx, FWM_ERR_FORMAT,
               "the string value of key 'general.architecture' has length 4611686018427387904");
    });
}

static void absurd_string_array_count(void) {
    fixture_options o = base();
    WITH_FIXTURE(o, {
        patch_u64(fx, fixture_value_offset(fx, "tokenizer.ggml.tokens") + 4, UINT64_C(1) << 61);
        REFUSE(fx, FWM_ERR_FORMAT, "strings cannot fit in the");
    });
}

static void absurd_array_string_length(void) {
    fixture_options o = base();
    WITH_FIXTURE(o, {
        patch_u64(fx, fixture_value_offset(fx, "tokenizer.ggml.tokens") + 12, UINT64_MAX);
        REFUSE(fx, FWM_ERR_FORMAT, "string #0 of key 'tokenizer.ggml.tokens' has length");
    });
}

static void absurd_numeric_array_count(void) {
    fixture_options o = base();
    WITH_FIXTURE(o, {
        /* turn the token array into a u32 array of 2^40 elements */
        uint64_t at = fixture_value_offset(fx, "tokenizer.ggml.tokens");
        patch_u32(fx, at, FWM_GGUF_TYPE_UINT32);
        patch_u64(fx, at + 4, UINT64_C(1) << 40);
        REFUSE(fx, FWM_ERR_FORMAT, "u32 elements (4 bytes each) cannot fit");
        patch_u64(fx, at + 4, UINT64_MAX);
        REFUSE(fx, FWM_ERR_FORMAT, "an array of 18446744073709551615 u32 elements");
    });
}

static void nested_array(void) {
    fixture_options o = base();
    WITH_FIXTURE(o, {
        patch_u32(fx, fixture_value_offset(fx, "tokenizer.ggml.tokens"), FWM_GGUF_TYPE_ARRAY);
        REFUSE(fx, FWM_ERR_FORMAT, "key 'tokenizer.ggml.tokens': nested arrays are not supported");
    });
}

static void unknown_array_type(void) {
    fixture_options o = base();
    WITH_FIXTURE(o, {
        patch_u32(fx, fixture_value_offset(fx, "tokenizer.ggml.tokens"), 99);
        REFUSE(fx, FWM_ERR_FORMAT, "unknown array element type 99");
    });
}

static void bad_bool(void) {
    fixture_options o = base();
    WITH_FIXTURE(o, {
        fx->data[fixture_value_offset(fx, "fwm.residual")] = 2;
        REFUSE(fx, FWM_ERR_FORMAT, "key 'fwm.residual': bool value 2");
    });
}

static void duplicate_key(void) {
    fixture_options o = base();
    o.extra_u32_key = "fwm.hidden_size";
    WITH_FIXTURE(o, REFUSE(fx, FWM_ERR_FORMAT, "duplicate key 'fwm.hidden_size'"));
}

static void alignment_wrong_type(void) {
    fixture_options o = base();
    o.retype_key = "general.alignment";
    o.retype_to = FWM_GGUF_TYPE_UINT64;
    WITH_FIXTURE(o, REFUSE(fx, FWM_ERR_FORMAT, "key 'general.alignment': expected type u32, found u64"));
}

static void alignment_not_power_of_two(void) {
    fixture_options o = base();
    o.alignment_value = 48;
    WITH_FIXTURE(o, REFUSE(fx, FWM_ERR_FORMAT, "key 'general.alignment': expected a power of two"));
    o.alignment_value = 4;
    WITH_FIXTURE(o, REFUSE(fx, FWM_ERR_FORMAT, "from 8 to 16777216, found 4"));
    o.alignment_value = 0;
    o.alignment_key = 1;
    o.alignment = 64;
    WITH_FIXTURE(o, {
        patch_u32(fx, fixture_value_offset(fx, "general.alignment"), 0);
        REFUSE(fx, FWM_ERR_FORMAT, "found 0");
    });
}

/* ---- tensor infos ----------------------------------------------------------------------------- */

static void absurd_tensor_name_length(void) {
    fixture_options o = base();
    WITH_FIXTURE(o, {
        patch_u64(fx, fixture_tensor_info_offset(fx, "lstm.bias"), 1000);
        REFUSE(fx, FWM_ERR_FORMAT, "name length 1000 exceeds the limit of 64 bytes");
    });
}

static void empty_tensor_name(void) {
    fixture_options o = base();
    WITH_FIXTURE(o, {
        patch_u64(fx, fixture_tensor_info_offset(fx, "lstm.bias"), 0);
        REFUSE(fx, FWM_ERR_FORMAT, "empty tensor name");
    });
}

/* Offset of field `field` in a tensor info: 0 n_dims, 1 dims, 2 type, 3 offset. */
static uint64_t info_field(const fixture *f, const char *name, int field) {
    uint64_t at = fixture_tensor_info_offset(f, name) + 8 + strlen(name);
    uint32_t n_dims = f->data[at];
    if (field == 0) return at;
    if (field == 1) return at + 4;
    if (field == 2) return at + 4 + 8ull * n_dims;
    return at + 8 + 8ull * n_dims;
}

static void bad_n_dims(void) {
    fixture_options o = base();
    WITH_FIXTURE(o, {
        patch_u32(fx, info_field(fx, "fwm.out.weight", 0), 0);
        REFUSE(fx, FWM_ERR_FORMAT, "tensor 'fwm.out.weight': n_dims = 0 (expected 1 to 4)");
        patch_u32(fx, info_field(fx, "fwm.out.weight", 0), 5);
        REFUSE(fx, FWM_ERR_FORMAT, "n_dims = 5");
    });
}

static void zero_dimension(void) {
    fixture_options o = base();
    WITH_FIXTURE(o, {
        patch_u64(fx, info_field(fx, "fwm.out.weight", 1) + 8, 0);
        REFUSE(fx, FWM_ERR_FORMAT, "tensor 'fwm.out.weight': dimension 1 is 0");
    });
}

static void element_count_overflow(void) {
    fixture_options o = base();
    WITH_FIXTURE(o, {
        uint64_t at = info_field(fx, "fwm.out.weight", 1);
        patch_u64(fx, at, UINT64_C(1) << 40);
        patch_u64(fx, at + 8, UINT64_C(1) << 40);
        REFUSE(fx, FWM_ERR_FORMAT, "tensor 'fwm.out.weight': element count overflows");
        patch_u64(fx, at, UINT64_C(1) << 62);
        patch_u64(fx, at + 8, 1);
        REFUSE(fx, FWM_ERR_FORMAT, "tensor 'fwm.out.weight': byte size overflows");
    });
}

static void unknown_tensor_type(void) {
    fixture_options o = base();
    WITH_FIXTURE(o, {
        patch_u32(fx, info_field(fx, "fwm.out.weight", 2), 99);
        REFUSE(fx, FWM_ERR_FORMAT, "tensor 'fwm.out.weight': unknown GGML type 99");
        patch_u32(fx, info_field(fx, "fwm.out.weight", 2), 4); /* retired Q4_2 */
        REFUSE(fx, FWM_ERR_FORMAT, "unknown GGML type 4");
    });
}

static void unsupported_tensor_type(void) {
    fixture_options o = base();
    WITH_FIXTURE(o, {
        patch_u32(fx, info_field(fx, "fwm.out.weight", 2), 8);
        REFUSE(fx, FWM_ERR_UNSUPPORTED, "tensor 'fwm.out.weight': type Q8_0 (8) is not supported");
        patch_u32(fx, info_field(fx, "fwm.out.weight", 2), 28);
        REFUSE(fx, FWM_ERR_UNSUPPORTED, "type F64 (28) is not supported (F32, F16 or BF16 only)");
    });
}

static void misaligned_offset(void) {
    fixture_options o = base();
    WITH_FIXTURE(o, {
        uint64_t at = info_field(fx, "lstm.bias", 3);
        patch_u64(fx, at, read_u64_at(fx, at) + 4);
        REFUSE(fx, FWM_ERR_FORMAT, "tensor 'lstm.bias': offset");
        REFUSE(fx, FWM_ERR_FORMAT, "is not a multiple of the alignment 64");
    });
}

static void offset_out_of_file(void) {
    fixture_options o = base();
    WITH_FIXTURE(o, {
        uint64_t at = info_field(fx, "lstm.bias", 3);
        patch_u64(fx, at, UINT64_C(1) << 40);
        REFUSE(fx, FWM_ERR_FORMAT, "tensor 'lstm.bias': data at offset 1099511627776");
        patch_u64(fx, at, UINT64_MAX - 63);
        REFUSE(fx, FWM_ERR_FORMAT, "extends past the end of the file");
        /* last tensor one alignment step further: partly outside */
        uint64_t last = info_field(fx, "output.weight", 3);
        patch_u64(fx, at, 0);
        patch_u64(fx, last, read_u64_at(fx, last) + 64);
        REFUSE(fx, FWM_ERR_FORMAT, "tensor 'output.weight': data at offset");
    });
}

static void overlapping_tensors(void) {
    fixture_options o = base();
    WITH_FIXTURE(o, {
        uint64_t a = info_field(fx, "lstm.weight_hh", 3), b = info_field(fx, "lstm.bias", 3);
        patch_u64(fx, b, read_u64_at(fx, a));
        REFUSE(fx, FWM_ERR_FORMAT, "tensors 'lstm.weight_hh' and 'lstm.bias' overlap");
    });
}

static void duplicate_tensor_name(void) {
    fixture_options o = base();
    o.extra_tensor = "lstm.bias";
    WITH_FIXTURE(o, REFUSE(fx, FWM_ERR_FORMAT, "duplicate tensor name 'lstm.bias'"));
}

/* ---- truncation ------------------------------------------------------------------------------- */

/* Cut at each section boundary: each cut names what it was reading. */
/* Index of pair `key` / tensor `name` in the fixture's file order. */
static uint64_t key_index(const fixture *f, const char *key) {
    for (uint64_t i = 0; i < f->writer.n_kv; i++)
        if (f->keys[i] && strcmp(f->keys[i], key) == 0) return i;
    return 0;
}

static uint64_t tensor_index(const fixture *f, const char *name) {
    for (uint64_t i = 0; i < f->writer.n_tensors; i++)
        if (f->tensors[i] && strcmp(f->tensors[i], name) == 0) return i;
    return 0;
}

/* Cut inside pair `key` (header counts lowered so the file claims no more than it could hold:
 * then the cursor, not the count bound, meets the end). */
static void cut_in_key(fixture *fx, const char *key, size_t cut, const char *needle) {
    size_t full = fx->size;
    patch_u64(fx, 8, 0);
    patch_u64(fx, 16, key_index(fx, key) + 1);
    fx->size = cut;
    REFUSE(fx, FWM_ERR_FORMAT, needle);
    fx->size = full;
    patch_u64(fx, 8, fx->writer.n_tensors);
    patch_u64(fx, 16, fx->writer.n_kv);
}

static void cut_in_tensor_info(fixture *fx, const char *name, size_t cut, const char *needle) {
    size_t full = fx->size;
    patch_u64(fx, 8, tensor_index(fx, name) + 1);
    fx->size = cut;
    REFUSE(fx, FWM_ERR_FORMAT, needle);
    fx->size = full;
    patch_u64(fx, 8, fx->writer.n_tensors);
}

/* Cut at each section boundary and inside each field: each cut names what it was reading. */
static void truncated_at_section_boundaries(void) {
    fixture_options o = base();
    WITH_FIXTURE(o, {
        size_t full = fx->size;
        /* with the real counts, the count bound refuses first */
        fx->size = 24;
        REFUSE(fx, FWM_ERR_FORMAT, "n_kv = 22 key/value pairs cannot fit in the 0 bytes after the header");
        fx->size = 24 + 22 * 14 + 11 * 33 - 1;
        REFUSE(fx, FWM_ERR_FORMAT, "n_tensors = 11 tensor infos cannot fit");
        fx->size = full;
        uint64_t k = fixture_key_offset(fx, "fwm.hidden_size");
        cut_in_key(fx, "fwm.hidden_size", (size_t)k + 4,
                   "truncated file: the name length of key #4 needs 8 bytes at offset");
        cut_in_key(fx, "fwm.hidden_size", (size_t)k + 8 + 10,
                   "truncated file: the name of key #4 has length 15");
        cut_in_key(fx, "fwm.hidden_size", (size_t)k + 8 + 15 + 2,
                   "truncated file: the value type of key 'fwm.hidden_size'");
        cut_in_key(fx, "fwm.hidden_size", (size_t)k + 8 + 15 + 4 + 3,
                   "truncated file: the u32 value of key 'fwm.hidden_size' needs 4 bytes");
        uint64_t v = fixture_value_offset(fx, "general.architecture");
        cut_in_key(fx, "general.architecture", (size_t)v + 5,
                   "truncated file: the string length of key 'general.architecture'");
        cut_in_key(fx, "general.architecture", (size_t)v + 8 + 2,
                   "the string value of key 'general.architecture' has length 3");
        v = fixture_value_offset(fx, "tokenizer.ggml.tokens");
        cut_in_key(fx, "tokenizer.ggml.tokens", (size_t)v + 6,
                   "truncated file: the array header of key 'tokenizer.ggml.tokens'");
        cut_in_key(fx, "tokenizer.ggml.tokens", (size_t)v + 12 + 4,
                   "an array of 6 strings cannot fit in the 4 bytes left");
        patch_u64(fx, v + 4, 1); /* a count the remaining bytes could hold */
        cut_in_key(fx, "tokenizer.ggml.tokens", (size_t)v + 12 + 8 + 2,
                   "string #0 of key 'tokenizer.ggml.tokens' has length 5");
        patch_u64(fx, v + 4, 2);
        cut_in_key(fx, "tokenizer.ggml.tokens", (size_t)v + 12 + 13 + 3,
                   "string #1 of key 'tokenizer.ggml.tokens' needs 8 bytes for its length");
        patch_u64(fx, v + 4, 6);
        uint64_t t = fixture_tensor_info_offset(fx, "lstm.bias");
        cut_in_tensor_info(fx, "lstm.bias", (size_t)t + 3,
                           "truncated file: the name length of tensor info #3");
        cut_in_tensor_info(fx, "lstm.bias", (size_t)t + 8 + 4,
                           "truncated file: the name of tensor info #3 has length 9");
        cut_in_tensor_info(fx, "lstm.bias", (size_t)info_field(fx, "lstm.bias", 0) + 1,
                           "truncated file: n_dims of tensor 'lstm.bias'");
        cut_in_tensor_info(fx, "lstm.bias", (size_t)info_field(fx, "lstm.bias", 1) + 7,
                           "truncated file: the dimensions of tensor 'lstm.bias'");
        cut_in_tensor_info(fx, "lstm.bias", (size_t)info_field(fx, "lstm.bias", 2),
                           "truncated file: the type of tensor 'lstm.bias'");
        cut_in_tensor_info(fx, "lstm.bias", (size_t)info_field(fx, "lstm.bias", 3) + 7,
                           "truncated file: the data offset of tensor 'lstm.bias'");
        /* after the infos: the padding, then the data */
        fx->size = (size_t)fx->layout.infos_end;
        REFUSE(fx, FWM_ERR_FORMAT, "the tensor data section starts at offset");
        fx->size = (size_t)fx->layout.data_section;
        REFUSE(fx, FWM_ERR_FORMAT, "tensor 'token_embd.weight': data at offset 0");
        fx->size = full - 1;
        REFUSE(fx, FWM_ERR_FORMAT, "tensor 'output.weight': data at offset");
        fx->size = full;
        EXPECT_OK(fx);
    });
}

/* Every proper prefix of a valid file is refused with a message, and nothing crashes. */
static void truncated_at_every_byte(void) {
    fixture_options o = base();
    WITH_FIXTURE(o, {
        size_t full = fx->size;
        /* exact-size copies so that the sanitizers see any read past the end */
        for (size_t cut = 0; cut < full; cut++) {
            uint8_t *copy = malloc(cut ? cut : 1);
            memcpy(copy, fx->data, cut);
            fwm_schema s;
            fwm_error e = {0};
            fwm_status st = fwm__schema_parse(copy, cut, &s, &e);
            if (st == FWM_OK || e.message[0] == '\0') {
                fprintf(stderr, "cut at %zu of %zu: status %d, message \"%s\"\n", cut, full,
                        (int)st, e.message);
                check_failures++;
            }
            fwm__schema_release(&s);
            free(copy);
        }
    });
}

/* Random damage: flip bytes anywhere; any status is fine, a crash or leak is not. */
static void random_damage_never_crashes(void) {
    fixture_options o = base();
    WITH_FIXTURE(o, {
        uint64_t x = 0x9E3779B97F4A7C15ull;
        uint8_t *copy = malloc(fx->size);
        int refused = 0;
        for (int round = 0; round < 3000; round++) {
            memcpy(copy, fx->data, fx->size);
            int flips = 1 + round % 4;
            for (int k = 0; k < flips; k++) {
                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                /* mostly in the metadata, where the structure is */
                size_t limit = round % 3 ? (size_t)fx->layout.data_section : fx->size;
                copy[x % limit] ^= (uint8_t)(1u << ((x >> 32) % 8));
            }
            fwm_schema s;
            fwm_error e = {0};
            fwm_status st = fwm__schema_parse(copy, fx->size, &s, &e);
            if (st) {
                refused++;
                CHECK(e.message[0] != '\0');
            }
            fwm__schema_release(&s);
        }
        CHECK(refused > 1000);
        free(copy);
    });
}

/* ---- schema ----------------------------------------------------------------------------------- */

static const char *const required_keys[] = {
    "general.architecture", "fwm.vocab_size", "fwm.embedding_length", "fwm.hidden_size",
    "fwm.memory.s", "fwm.memory.r", "fwm.memory.t", "fwm.read_count", "fwm.residual",
    "fwm.read_policy", "fwm.read_token_id", "fwm.forget_bias", "fwm.beta_bias", "fwm.write_scale",
    "fwm.layer_norm_eps", "tokenizer.ggml.model", "tokenizer.ggml.tokens",
    "tokenizer.ggml.padding_token_id", "tokenizer.ggml.eos_token_id"};
#define N_REQUIRED (sizeof required_keys / sizeof required_keys[0])

static void missing_each_required_key(void) {
    for (size_t k = 0; k < N_REQUIRED; k++) {
        fixture_options o = base();
        o.omit_key = required_keys[k];
        char needle[96];
        snprintf(needle, sizeof needle, "missing key '%s'", required_keys[k]);
        WITH_FIXTURE(o, REFUSE(fx, FWM_ERR_FORMAT, needle));
    }
}

static void wrong_type_each_required_key(void) {
    for (size_t k = 0; k < N_REQUIRED; k++) {
        fixture_options o = base();
        o.retype_key = required_keys[k];
        const char *expected;
        if (strcmp(required_keys[k], "general.architecture") == 0 ||
            strcmp(required_keys[k], "fwm.read_policy") == 0 ||
            strcmp(required_keys[k], "tokenizer.ggml.model") == 0) {
            o.retype_to = FWM_GGUF_TYPE_UINT32, expected = "expected type string, found u32";
        } else if (strcmp(required_keys[k], "fwm.residual") == 0) {
            o.retype_to = FWM_GGUF_TYPE_UINT8, expected = "expected type bool, found u8";
        } else if (strcmp(required_keys[k], "tokenizer.ggml.tokens") == 0) {
            o.retype_to = FWM_GGUF_TYPE_ARRAY,
            expected = "expected type array of string, found array of u32";
        } else if (strncmp(required_keys[k], "fwm.", 4) == 0 &&
                   (strstr(required_keys[k], "bias") || strstr(required_keys[k], "scale") ||
                    strstr(required_keys[k], "eps"))) {
            o.retype_to = FWM_GGUF_TYPE_FLOAT64, expected = "expected type f32, found f64";
        } else {
            o.retype_to = FWM_GGUF_TYPE_INT32, expected = "expected type u32, found i32";
        }
        char needle[160];
        snprintf(needle, sizeof needle, "key '%s': %s", required_keys[k], expected);
        WITH_FIXTURE(o, REFUSE(fx, FWM_ERR_FORMAT, needle));
    }
    fixture_options o = base(); /* tokens as a plain string */
    o.retype_key = "tokenizer.ggml.tokens";
    o.retype_to = FWM_GGUF_TYPE_STRING;
    WITH_FIXTURE(o, REFUSE(fx, FWM_ERR_FORMAT, "expected type array of string, found string"));
}

static void wrong_architecture(void) {
    fixture_options o = base();
    o.architecture = "llama";
    WITH_FIXTURE(o, REFUSE(fx, FWM_ERR_FORMAT,
                           "key 'general.architecture': expected \"fwm\", found \"llama\""));
}

static void wrong_tokenizer_model(void) {
    fixture_options o = base();
    o.tokenizer_model = "gpt2";
    WITH_FIXTURE(o, REFUSE(fx, FWM_ERR_FORMAT,
                           "key 'tokenizer.ggml.model': expected \"word\" or \"text\", found \"gpt2\""));
}

static void bad_read_policy(void) {
    fixture_options o = base();
    o.read_policy = "sometimes";
    WITH_FIXTURE(o, REFUSE(fx, FWM_ERR_FORMAT,
                           "key 'fwm.read_policy': expected \"always\" or \"token\", found \"sometimes\""));
    o.read_policy = "token";
    WITH_FIXTURE(o, EXPECT_OK(fx));
}

static uint32_t f32_bits(float x) {
    uint32_t bits;
    memcpy(&bits, &x, 4);
    return bits;
}

/* One hyperparameter out of range per file. */
static void hyperparameter_ranges(void) {
    fixture_options o = base();
    /* Written valid, then one key's value patched: tensors keep their valid shapes. */
#define RANGE(patches, needle)                                    \
    WITH_FIXTURE(o, {                                             \
        patches;                                                  \
        REFUSE(fx, FWM_ERR_FORMAT, needle);                       \
    })
#define SET_U32(key, value) patch_u32(fx, fixture_value_offset(fx, key), value)
#define SET_F32(key, value) patch_u32(fx, fixture_value_offset(fx, key), f32_bits(value))
    RANGE(SET_U32("fwm.vocab_size", 1), "key 'fwm.vocab_size': expected 2 to 1000000, found 1");
    RANGE(SET_U32("fwm.vocab_size", 2000000), "key 'fwm.vocab_size': expected 2 to 1000000, found 2000000");
    RANGE(SET_U32("fwm.embedding_length", 0), "key 'fwm.embedding_length': expected 1 to 65536, found 0");
    RANGE(SET_U32("fwm.hidden_size", 0), "key 'fwm.hidden_size': expected 1 to 65536, found 0");
    RANGE(SET_U32("fwm.hidden_size", 70000), "key 'fwm.hidden_size': expected 1 to 65536, found 70000");
    RANGE(SET_U32("fwm.memory.s", 0), "key 'fwm.memory.s': expected 1 to 65536, found 0");
    RANGE(SET_U32("fwm.memory.r", 100000), "key 'fwm.memory.r': expected 1 to 65536, found 100000");
    RANGE(SET_U32("fwm.memory.t", 0), "key 'fwm.memory.t': expected 1 to 65536, found 0");
    RANGE(SET_U32("fwm.read_count", 0), "key 'fwm.read_count': expected 1 to 64, found 0");
    RANGE(SET_U32("fwm.read_count", 65), "key 'fwm.read_count': expected 1 to 64, found 65");
    RANGE((SET_U32("fwm.memory.s", 1024), SET_U32("fwm.memory.r", 1024), SET_U32("fwm.memory.t", 1024)),
          "1024 * 1024 * 1024 = 1073741824 fast weights, more than the limit 67108864");
    RANGE(SET_U32("fwm.memory.t", 3),
          "key 'fwm.read_count': 2 chained reads require fwm.memory.s == fwm.memory.t, found 2 and 3");
    RANGE(SET_U32("fwm.read_token_id", 6),
          "key 'fwm.read_token_id': expected a token id below fwm.vocab_size = 6, found 6");
    RANGE(SET_U32("tokenizer.ggml.padding_token_id", 9),
          "key 'tokenizer.ggml.padding_token_id': expected a token id below");
    RANGE(SET_U32("tokenizer.ggml.eos_token_id", 6),
          "key 'tokenizer.ggml.eos_token_id': expected a token id below fwm.vocab_size = 6, found 6");
    RANGE(SET_F32("fwm.forget_bias", NAN), "key 'fwm.forget_bias': expected a finite number, found nan");
    RANGE(SET_F32("fwm.beta_bias", INFINITY), "key 'fwm.beta_bias': expected a finite number, found inf");
    RANGE(SET_F32("fwm.write_scale", -INFINITY), "key 'fwm.write_scale': expected a finite number, found -inf");
    RANGE(SET_F32("fwm.layer_norm_eps", 0.0f), "key 'fwm.layer_norm_eps': expected > 0, found 0");
    RANGE(SET_F32("fwm.layer_norm_eps", -1e-5f), "key 'fwm.layer_norm_eps': expected > 0, found -1e-05");
    RANGE(SET_F32("fwm.layer_norm_eps", NAN), "key 'fwm.layer_norm_eps': expected a finite number, found nan");
    /* a consistent file whose only fault is the range: vocabulary of 1 */
    static const char *const one[] = {"<pad>"};
    o.hp.vocab_size = 1, o.hp.read_token_id = 0, o.hp.eos_token_id = 0;
    o.tokens = one, o.n_tokens = 1;
    WITH_FIXTURE(o, REFUSE(fx, FWM_ERR_FORMAT, "key 'fwm.vocab_size': expected 2 to 1000000, found 1"));
#undef RANGE
#undef SET_U32
#undef SET_F32
    o = base(); /* N_r = 1 allows S != T */
    o.hp.read_count = 1;
    o.hp.memory_t = 5;
    WITH_FIXTURE(o, EXPECT_OK(fx));
}

static void token_count_differs_from_vocab_size(void) {
    fixture_options o = base();
    o.n_tokens = 5;
    WITH_FIXTURE(o, REFUSE(fx, FWM_ERR_FORMAT,
                           "key 'tokenizer.ggml.tokens': has 5 tokens, fwm.vocab_size says 6"));
}

static void bad_tokens(void) {
    static const char *const duplicate[] = {"<pad>", "<eos>", ".", "mary", "?", "mary"};
    static const char *const empty[] = {"<pad>", "<eos>", "", "?", "mary", "kitchen"};
    fixture_options o = base();
    o.tokens = duplicate;
    WITH_FIXTURE(o, REFUSE(fx, FWM_ERR_FORMAT, "duplicate token 'mary' (ids 3 and 5)"));
    o.tokens = empty;
    WITH_FIXTURE(o, REFUSE(fx, FWM_ERR_FORMAT, "key 'tokenizer.ggml.tokens': token 2 is empty"));
    o = base();
    WITH_FIXTURE(o, {
        /* "mary" -> "ma\0y": tokens 0..3 are 5,5,1,1 bytes long */
        uint64_t at = fixture_value_offset(fx, "tokenizer.ggml.tokens") + 12;
        at += (8 + 5) * 2 + (8 + 1) * 2 + 8 + 2;
        fx->data[at] = 0;
        REFUSE(fx, FWM_ERR_FORMAT, "token 4 contains a NUL byte");
    });
}

static void optional_keys_checked_when_present(void) {
    fixture_options o = base();
    o.retype_key = FWM_KEY_CHECKSUM;
    o.retype_to = FWM_GGUF_TYPE_UINT32;
    WITH_FIXTURE(o, REFUSE(fx, FWM_ERR_FORMAT, "key 'fwm.checksum': expected type u64, found u32"));
    o.retype_key = FWM_KEY_FINGERPRINT;
    WITH_FIXTURE(o, REFUSE(fx, FWM_ERR_FORMAT, "key 'fwm.fingerprint': expected type u64, found u32"));
    o = base();
    o.name = "x";
    o.retype_key = "general.name";
    o.retype_to = FWM_GGUF_TYPE_FLOAT32;
    WITH_FIXTURE(o, REFUSE(fx, FWM_ERR_FORMAT, "key 'general.name': expected type string, found f32"));
}

/* fwm.session.prime_tokens: optional; absent means one eos token; an array of u32 ids below V, at
 * most FWM_MAX_PRIME_TOKENS, possibly empty; anything else is refused by name. */
static void prime_tokens_key(void) {
    fixture_options o = base();
    WITH_FIXTURE(o, {
        fwm_schema s;
        fwm_error e = {0};
        CHECK_OK(fwm__schema_parse(fx->data, fx->size, &s, &e), e);
        CHECK(!s.head.has_prime_tokens);
        CHECK_U64(s.head.prime_count, 1);
        CHECK_U64(s.head.prime_tokens[0], o.hp.eos_token_id);
        fwm__schema_release(&s);
    });
    o.with_prime = 1;
    o.prime_count = 3;
    o.prime[0] = 5;
    o.prime[1] = 0;
    o.prime[2] = 2;
    WITH_FIXTURE(o, {
        fwm_schema s;
        fwm_error e = {0};
        CHECK_OK(fwm__schema_parse(fx->data, fx->size, &s, &e), e);
        CHECK(s.head.has_prime_tokens);
        CHECK_U64(s.head.prime_count, 3);
        CHECK_U64(s.head.prime_tokens[0], 5);
        CHECK_U64(s.head.prime_tokens[1], 0);
        CHECK_U64(s.head.prime_tokens[2], 2);
        fwm__schema_release(&s);
    });
    o.prime_count = 0;
    WITH_FIXTURE(o, {
        fwm_schema s;
        fwm_error e = {0};
        CHECK_OK(fwm__schema_parse(fx->data, fx->size, &s, &e), e);
        CHECK(s.head.has_prime_tokens);
        CHECK_U64(s.head.prime_count, 0);
        fwm__schema_release(&s);
    });
    o.prime_count = 2;
    o.prime[1] = 6; /* V = 6 */
    WITH_FIXTURE(o, REFUSE(fx, FWM_ERR_FORMAT,
                           "key 'fwm.session.prime_tokens': token 1 is 6, not below the vocabulary size 6"));
    o.prime_count = FWM_MAX_PRIME_TOKENS + 1;
    memset(o.prime, 0, sizeof o.prime);
    WITH_FIXTURE(o, REFUSE(fx, FWM_ERR_FORMAT, "key 'fwm.session.prime_tokens': has 65 tokens, at most 64 allowed"));
    o.prime_count = FWM_MAX_PRIME_TOKENS;
    WITH_FIXTURE(o, EXPECT_OK(fx));
    o.prime_count = 1;
    o.prime_type = FWM_GGUF_TYPE_INT32;
    WITH_FIXTURE(o, REFUSE(fx, FWM_ERR_FORMAT,
                           "key 'fwm.session.prime_tokens': expected type array of u32, found array of i32"));
    o = base();
    o.extra_u32_key = FWM_KEY_PRIME_TOKENS;
    WITH_FIXTURE(o, REFUSE(fx, FWM_ERR_FORMAT,
                           "key 'fwm.session.prime_tokens': expected type array of u32, found u32"));
}

/* The stored checksum is exposed, not verified, by the parser. */
static void wrong_checksum_is_reported_not_refused(void) {
    fixture_options o = base();
    o.checksum_delta = 1;
    WITH_FIXTURE(o, {
        fwm_schema s;
        fwm_error e = {0};
        CHECK_OK(fwm__schema_parse(fx->data, fx->size, &s, &e), e);
        CHECK(s.head.has_checksum);
        CHECK(s.head.checksum != fwm__schema_checksum(&s));
        CHECK_U64(s.head.checksum, fx->checksum + 1);
        fwm__schema_release(&s);
    });
    o = base(); /* tensor data changed after the checksum was taken */
    WITH_FIXTURE(o, {
        fwm_schema s;
        fwm_error e = {0};
        fx->data[fx->size - 1] ^= 0x40;
        CHECK_OK(fwm__schema_parse(fx->data, fx->size, &s, &e), e);
        CHECK(s.head.checksum != fwm__schema_checksum(&s));
        fwm__schema_release(&s);
    });
}

static void missing_each_tensor(void) {
    for (int i = 0; i < FWM_TENSOR_COUNT; i++) {
        fixture_options o = base();
        o.omit_tensor = fwm__tensor_name(i);
        char needle[96];
        snprintf(needle, sizeof needle, "missing tensor '%s'", fwm__tensor_name(i));
        WITH_FIXTURE(o, REFUSE(fx, FWM_ERR_FORMAT, needle));
    }
}

static void wrong_shapes(void) {
    fixture_options o = base();
    o.reshape_tensor = "lstm.weight_hh";
    o.reshape_n_dims = 2;
    o.reshape_dims[0] = 3, o.reshape_dims[1] = 16;
    WITH_FIXTURE(o, REFUSE(fx, FWM_ERR_FORMAT,
                           "tensor 'lstm.weight_hh': expected shape [16, 4], found [16, 3]"));
    o.reshape_dims[0] = 16, o.reshape_dims[1] = 4; /* transposed */
    WITH_FIXTURE(o, REFUSE(fx, FWM_ERR_FORMAT, "expected shape [16, 4], found [4, 16]"));
    o.reshape_n_dims = 1, o.reshape_dims[0] = 64; /* flattened */
    WITH_FIXTURE(o, REFUSE(fx, FWM_ERR_FORMAT, "expected shape [16, 4], found [64]"));
    o.reshape_n_dims = 3, o.reshape_dims[0] = 4, o.reshape_dims[1] = 16, o.reshape_dims[2] = 1;
    WITH_FIXTURE(o, REFUSE(fx, FWM_ERR_FORMAT, "expected shape [16, 4], found [1, 16, 4]"));
    o.reshape_tensor = "lstm.bias"; /* a vector written as a matrix */
    o.reshape_n_dims = 2, o.reshape_dims[0] = 1, o.reshape_dims[1] = 16;
    WITH_FIXTURE(o, REFUSE(fx, FWM_ERR_FORMAT, "tensor 'lstm.bias': expected shape [16], found [16, 1]"));
    o.reshape_tensor = "output.weight";
    o.reshape_n_dims = 2, o.reshape_dims[0] = 4, o.reshape_dims[1] = 7;
    WITH_FIXTURE(o, REFUSE(fx, FWM_ERR_FORMAT, "tensor 'output.weight': expected shape [6, 4], found [7, 4]"));
}

static void unexpected_tensor(void) {
    fixture_options o = base();
    o.extra_tensor = "extra.weight";
    WITH_FIXTURE(o, REFUSE(fx, FWM_ERR_FORMAT,
                           "unexpected tensor 'extra.weight': not part of the fwm schema"));
}

/* ---- robustness --------------------------------------------------------------------------------- */

static void allocation_failures(void) {
    fixture_options o = base();
    WITH_FIXTURE(o, {
        int out_of_memory = 0;
        for (long n = 1; n < 200; n++) {
            fwm__alloc_fail_after(n);
            fwm_schema s;
            fwm_error e = {0};
            fwm_status st = fwm__schema_parse(fx->data, fx->size, &s, &e);
            fwm__alloc_fail_reset();
            if (st == FWM_OK) {
                fwm__schema_release(&s);
                break;
            }
            out_of_memory++;
            CHECK_REFUSED(st, e, FWM_ERR_OUT_OF_MEMORY, "out of memory");
            fwm__schema_release(&s);
        }
        CHECK(out_of_memory >= 5);
    });
}

static void null_arguments(void) {
    fwm_error e = {0};
    fwm_schema s;
    CHECK_REFUSED(fwm__schema_parse(NULL, 10, &s, &e), e, FWM_ERR_INVALID_ARGUMENT, "buffer is NULL");
    CHECK_REFUSED(fwm__schema_parse("GGUF", 4, NULL, &e), e, FWM_ERR_INVALID_ARGUMENT, "out is NULL");
    CHECK(fwm__schema_parse(NULL, 0, &s, NULL) == FWM_ERR_FORMAT); /* err may be NULL */
}

int main(void) {
    static const check_case cases[] = {
        {"valid_file_parses", valid_file_parses},
        {"other_writer_layouts_load", other_writer_layouts_load},
        {"checksum_is_layout_independent", checksum_is_layout_independent},
        {"f16_and_bf16_tensors_load", f16_and_bf16_tensors_load},
        {"empty_file", empty_file},
        {"bad_magic", bad_magic},
        {"truncated_header", truncated_header},
        {"version_2_refused", version_2_refused},
        {"unknown_version", unknown_version},
        {"big_endian_refused", big_endian_refused},
        {"absurd_kv_count", absurd_kv_count},
        {"absurd_tensor_count", absurd_tensor_count},
        {"kv_count_too_small", kv_count_too_small},
        {"absurd_key_length", absurd_key_length},
        {"empty_key", empty_key},
        {"nul_in_key", nul_in_key},
        {"unknown_value_type", unknown_value_type},
        {"absurd_string_length", absurd_string_length},
        {"absurd_string_array_count", absurd_string_array_count},
        {"absurd_array_string_length", absurd_array_string_length},
        {"absurd_numeric_array_count", absurd_numeric_array_count},
        {"nested_array", nested_array},
        {"unknown_array_type", unknown_array_type},
        {"bad_bool", bad_bool},
        {"duplicate_key", duplicate_key},
        {"alignment_wrong_type", alignment_wrong_type},
        {"alignment_not_power_of_two", alignment_not_power_of_two},
        {"absurd_tensor_name_length", absurd_tensor_name_length},
        {"empty_tensor_name", empty_tensor_name},
        {"bad_n_dims", bad_n_dims},
        {"zero_dimension", zero_dimension},
        {"element_count_overflow", element_count_overflow},
        {"unknown_tensor_type", unknown_tensor_type},
        {"unsupported_tensor_type", unsupported_tensor_type},
        {"misaligned_offset", misaligned_offset},
        {"offset_out_of_file", offset_out_of_file},
        {"overlapping_tensors", overlapping_tensors},
        {"duplicate_tensor_name", duplicate_tensor_name},
        {"truncated_at_section_boundaries", truncated_at_section_boundaries},
        {"truncated_at_every_byte", truncated_at_every_byte},
        {"random_damage_never_crashes", random_damage_never_crashes},
        {"missing_each_required_key", missing_each_required_key},
        {"wrong_type_each_required_key", wrong_type_each_required_key},
        {"wrong_architecture", wrong_architecture},
        {"wrong_tokenizer_model", wrong_tokenizer_model},
        {"bad_read_policy", bad_read_policy},
        {"hyperparameter_ranges", hyperparameter_ranges},
        {"token_count_differs_from_vocab_size", token_count_differs_from_vocab_size},
        {"bad_tokens", bad_tokens},
        {"optional_keys_checked_when_present", optional_keys_checked_when_present},
        {"prime_tokens_key", prime_tokens_key},
        {"wrong_checksum_is_reported_not_refused", wrong_checksum_is_reported_not_refused},
        {"missing_each_tensor", missing_each_tensor},
        {"wrong_shapes", wrong_shapes},
        {"unexpected_tensor", unexpected_tensor},
        {"allocation_failures", allocation_failures},
        {"null_arguments", null_arguments},
    };
    return check_run_cases("test_gguf_reader", cases, sizeof cases / sizeof cases[0]);
}
