/* test_arch_format.c - the model format of the architectures other than the FWM (lstm, mnm, gfw,
 * stm), by property: the program takes an architecture's name and runs every property on that
 * architecture's row of the table at the end of this file (its small models, keys, tensors,
 * defaults and refusals). The properties: fwm_<arch>_model_write round trip (hyperparameters,
 * vocabulary, prime tokens, tensors bit-exact, checksum, the shapes the model documents), the FWMFP2
 * fingerprint recomputed here from its definition in docs/FORMAT.md, the defaults and the
 * hyperparameter checks, the writer's refusals, the schema's refusals by name (every key missing or
 * retyped, the wrong architecture, missing, reshaped and extra tensors, F16/BF16 tensors accepted),
 * the registry, and the initialisation (deterministic per seed, then each architecture's ranges). */
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <unistd.h>

#include "arch_list.h"
#include "format_test_util.h"
#include "fwm_alloc.h"
#include "gfw/gfw_init.h"
#include "gfw/gfw_schema.h"
#include "gguf_writer.h"
#include "lstm/lstm_init.h"
#include "lstm/lstm_schema.h"
#include "mnm/mnm_init.h"
#include "mnm/mnm_schema.h"
#include "stm/stm_init.h"
#include "stm/stm_schema.h"

#define MAX_TENSORS 64

_Static_assert(FWM_LSTM_MAX_TENSORS <= MAX_TENSORS && FWM_MNM_MAX_TENSORS <= MAX_TENSORS &&
                   FWM_GFW_MAX_TENSORS <= MAX_TENSORS && FWM_STM_MAX_TENSORS <= MAX_TENSORS,
               "MAX_TENSORS");

/* Any architecture's hyperparameters. */
typedef union any_hparams {
    fwm_lstm_hparams lstm;
    fwm_mnm_hparams mnm;
    fwm_gfw_hparams gfw;
    fwm_stm_hparams stm;
} any_hparams;

/* A key of an architecture's hparam list: its kind and its field in the hparams. */
enum { KIND_U32, KIND_TOKEN, KIND_BOOL, KIND_F32, KIND_F32_POS };
typedef struct key_fact {
    const char *key;
    int kind;
    size_t offset;
} key_fact;

/* A parsed file of any architecture, as the properties read it. */
typedef struct schema_view {
    void *owned;
    const void *hp;
    const fwm__schema_head *head; /* name, vocabulary, prime tokens, checksum and fingerprint */
    size_t tensor_count;
    const fwm_schema_tensor *tensors;
    uint64_t computed_checksum; /* fwm_<arch>_schema_checksum */
} schema_view;

/* What fwm_<arch>_model_write is given. */
typedef struct write_args {
    const void *hp;
    const char *name;
    const char *const *tokens;
    const float *tensors[MAX_TENSORS];
    const fwm_write_kv *extra;
    size_t extra_count;
    bool has_prime;
    const uint32_t *prime;
    size_t prime_count;
} write_args;

/* An architecture's functions behind `const void *` hparams. */
typedef struct arch_ops {
    size_t hp_size;
    void (*defaults)(void *hp);
    size_t (*tensor_count)(const void *hp);
    tensor_at_fn tensor_at;
    tensor_is_matrix_fn is_matrix;
    fwm_status (*check)(const void *hp, fwm_error *err);
    void (*init)(const void *hp, uint64_t seed, float **tensors);
    uint64_t (*fingerprint)(const void *hp, const char *const *tokens, const uint32_t *lengths,
                            uint64_t checksum);
    fwm_status (*write)(const char *path, const write_args *w, fwm_error *err);
    fwm_status (*parse)(const void *buf, size_t size, schema_view *view, fwm_error *err);
    void (*release)(schema_view *view);
} arch_ops;

#define ARCH_OPS(a)                                                                                   \
    static void a##_defaults(void *hp) { fwm__##a##_hparams_defaults(hp); }                            \
    static size_t a##_tensor_count(const void *hp) { return fwm__##a##_tensor_count(hp); }              \
    static void a##_tensor_at(const void *hp, size_t i, char name[48], uint64_t *rows, uint64_t *cols) { \
        fwm__##a##_tensor_at(hp, i, name, rows, cols);                                                 \
    }                                                                                                 \
    static int a##_is_matrix(const void *hp, size_t i) { return fwm__##a##_tensor_is_matrix(hp, i); } \
    static fwm_status a##_check(const void *hp, fwm_error *err) { return fwm__##a##_hparams_valid(hp, err); } \
    static void a##_init(const void *hp, uint64_t seed, float **tensors) {                            \
        fwm__##a##_init_weights(hp, seed, tensors);                                                   \
    }                                                                                                 \
    static uint64_t a##_fingerprint(const void *hp, const char *const *tokens, const uint32_t *lengths, \
                                    uint64_t checksum) {                                              \
        return fwm__##a##_fingerprint(hp, tokens, lengths, checksum);                                  \
    }                                                                                                 \
    static fwm_status a##_write(const char *path, const write_args *w, fwm_error *err) {              \
        fwm_##a##_write_spec spec = {.head.name = w->name,                                          \
                                     .head.tokens = w->tokens,                                      \
                                     .head.extra = w->extra,                                        \
                                     .head.extra_count = w->extra_count,                            \
                                     .head.has_prime_tokens = w->has_prime,                         \
                                     .head.prime_tokens = w->prime,                                 \
                                     .head.prime_count = w->prime_count};                           \
        memcpy(&spec.hp, w->hp, sizeof spec.hp);                                                      \
        for (size_t i = 0; i < sizeof spec.tensors / sizeof spec.tensors[0]; i++)                     \
            spec.tensors[i] = w->tensors[i];                                                          \
        return fwm__##a##_model_write(path, &spec, err);                                               \
    }                                                                                                 \
    static fwm_status a##_parse(const void *buf, size_t size, schema_view *v, fwm_error *err) {       \
        fwm_##a##_schema *s = malloc(sizeof *s);                                                      \
        if (!s) return FWM_ERR_OUT_OF_MEMORY;                                                         \
        fwm_status st = fwm__##a##_schema_parse(buf, size, s, err);                                    \
        if (st) {                                                                                     \
            free(s);                                                                                  \
            return st;                                                                                \
        }                                                                                             \
        *v = (schema_view){.owned = s,                                                                \
                           .hp = &s->hp,                                                              \
                           .head = &s->head,                                                          \
                           .tensor_count = s->tensor_count,                                           \
                           .tensors = s->tensors,                                                     \
                           .computed_checksum = fwm__##a##_schema_checksum(s)};                        \
        return FWM_OK;                                                                                \
    }                                                                                                 \
    static void a##_release(schema_view *v) {                                                         \
        fwm__##a##_schema_release(v->owned);                                                           \
        free(v->owned);                                                                               \
    }                                                                                                 \
    static const arch_ops a##_ops = {sizeof(fwm_##a##_hparams), a##_defaults, a##_tensor_count, a##_tensor_at, a##_is_matrix,    \
                                     a##_check,    a##_init,         a##_fingerprint, a##_write,      \
                                     a##_parse,    a##_release};

ARCH_OPS(lstm)
ARCH_OPS(mnm)
ARCH_OPS(gfw)
ARCH_OPS(stm)

#define KEY_FACT_(field, key, kind, def, low, high) {key, KIND_##kind, offsetof(HP_, field)},
#define HP_ fwm_lstm_hparams
static const key_fact lstm_keys[] = {FWM_LSTM_HPARAM_LIST(KEY_FACT_)};
#undef HP_
#define HP_ fwm_mnm_hparams
static const key_fact mnm_keys[] = {FWM_MNM_HPARAM_LIST(KEY_FACT_)};
#undef HP_
#define HP_ fwm_gfw_hparams
static const key_fact gfw_keys[] = {FWM_GFW_HPARAM_LIST(KEY_FACT_)};
#undef HP_
#define HP_ fwm_stm_hparams
static const key_fact stm_keys[] = {FWM_STM_HPARAM_LIST(KEY_FACT_)};
#undef HP_
#undef KEY_FACT_

/* One hyperparameter set by its key (value converted to the key's kind; flip: a bool negated). */
typedef struct hp_edit {
    const char *key;
    double value;
    bool flip;
} hp_edit;

/* Hyperparameters refused by fwm_<arch>_hparams_check (or the writer): the edits made to the
 * defaults (or to the small model), and a part of the message (NULL: the status only). */
typedef struct hp_refusal {
    hp_edit edits[3];
    const char *needle;
} hp_refusal;

/* A hand-built file with one damage, and what the schema answers. */
typedef struct file_damage {
    int variant;               /* which small model */
    const char *architecture;  /* general.architecture's value instead of the architecture's */
    hp_edit key;               /* a key written with this value instead (the tensors unchanged) */
    const char *omit_tensor;
    const char *reshape_tensor; /* one more row */
    const char *f16_tensor;     /* stored as F16 (2 bytes an element) */
    const char *type_tensor;    /* its GGML type written as tensor_type */
    uint32_t tensor_type;
    const char *extra_tensor;   /* one more F32 tensor of extra_rows x extra_cols */
    uint64_t extra_rows, extra_cols;
    int extra_matrix;
    bool accepted;              /* the file is valid; else refused as FWM_ERR_FORMAT with needle */
    const char *needle;
} file_damage;

/* An architecture's row. */
typedef struct arch_row {
    const char *name;
    fwm_arch arch;
    const arch_ops *ops;
    const key_fact *keys;
    size_t key_count;
    const char *const *vocabulary; /* the small models' */
    int variants;                  /* small models: stm has one per input mode */
    void (*small)(any_hparams *hp, int variant);
    size_t tensor_counts[2];       /* of each small model */
    uint32_t prime[2];             /* prime tokens written in the round trip */
    /* FWMFP2's fields as docs/FORMAT.md lists them (u32, bools as a u32, f32 as its bits) */
    size_t (*fp_fields)(const void *hp, uint32_t fields[16]);
    hp_edit fingerprint_edits[2];  /* each changes the fingerprint */
    void (*shapes)(const void *hp, int variant, const schema_view *s); /* the documented shapes */
    hp_edit defaults[12];          /* the defaults, key by key */
    void (*counts)(void);          /* docs/MODEL.md's counts at the defaults, other checks */
    hp_refusal hp_refusals[12];    /* of the defaults */
    size_t missing_tensor;         /* writer: the tensor given no data */
    const char *missing_tensor_name;
    const char *own_key;           /* writer: an extra key it writes itself */
    hp_refusal writer_refusals[1]; /* of the small model */
    file_damage damages[16];
    void (*init_facts)(void);      /* the initialisation's ranges */
    bool init_defaults;            /* the initialisation also checked at the defaults */
} arch_row;

static const arch_row *arch; /* the row under test */

/* ---- helpers --------------------------------------------------------------------------------- */

static const key_fact *find_key(const char *key) {
    for (size_t k = 0; k < arch->key_count; k++)
        if (strcmp(arch->keys[k].key, key) == 0) return &arch->keys[k];
    fprintf(stderr, "no key '%s' in the %s list\n", key, arch->name);
    check_failures++;
    return NULL;
}

static void apply_edit(any_hparams *hp, const hp_edit *e) {
    const key_fact *k = find_key(e->key);
    if (!k) return;
    char *field = (char *)hp + k->offset;
    if (k->kind == KIND_BOOL) {
        bool b;
        memcpy(&b, field, sizeof b);
        b = e->flip ? !b : e->value != 0;
        memcpy(field, &b, sizeof b);
    } else if (k->kind == KIND_F32 || k->kind == KIND_F32_POS) {
        float f = (float)e->value;
        memcpy(field, &f, sizeof f);
    } else {
        uint32_t u = (uint32_t)e->value;
        memcpy(field, &u, sizeof u);
    }
}

static void apply_edits(any_hparams *hp, const hp_edit *edits, size_t count) {
    for (size_t i = 0; i < count && edits[i].key; i++) apply_edit(hp, &edits[i]);
}

static uint32_t field_u32(const void *hp, const key_fact *k) {
    const char *field = (const char *)hp + k->offset;
    if (k->kind == KIND_BOOL) {
        bool b;
        memcpy(&b, field, sizeof b);
        return b ? 1u : 0u;
    }
    uint32_t u;
    memcpy(&u, field, sizeof u);
    return u;
}

static float field_f32(const void *hp, const key_fact *k) {
    float f;
    memcpy(&f, (const char *)hp + k->offset, sizeof f);
    return f;
}

static uint32_t vocab_size(const any_hparams *hp) { return field_u32(hp, &arch->keys[0]); }

static size_t tensor_count(const void *hp) { return arch->ops->tensor_count(hp); }

/* ---- round trip ------------------------------------------------------------------------------ */

static void round_trip_variant(int variant) {
    any_hparams hp;
    arch->small(&hp, variant);
    char name[32];
    snprintf(name, sizeof name, "tiny %s", arch->name);
    write_args w = {.hp = &hp, .name = name, .tokens = arch->vocabulary};
    float *data = fill_tensors_at(&hp, tensor_count(&hp), arch->ops->tensor_at, w.tensors);
    w.has_prime = true, w.prime = arch->prime, w.prime_count = 2;
    const fwm_write_kv extra[1] = {{.key = "fwm.training.steps", .kind = FWM_WRITE_KV_U32, .value.u32 = 9}};
    w.extra = extra, w.extra_count = 1;
    fwm_error err;
    CHECK_OK(arch->ops->write(test_dir_path("a.gguf"), &w, &err), err);
    size_t size = 0;
    uint8_t *file = read_back(test_dir_path("a.gguf"), arch->arch, &size);
    schema_view s;
    fwm_status st = arch->ops->parse(file, size, &s, &err);
    CHECK_OK(st, err);
    if (st == FWM_OK) {
        CHECK(memcmp(s.hp, &hp, arch->ops->hp_size) == 0);
        CHECK_STR(s.head->name, name);
        for (uint32_t i = 0; i < vocab_size(&hp); i++) CHECK_STR(s.head->tokens[i], arch->vocabulary[i]);
        CHECK_INT(s.head->prime_count, 2);
        CHECK_INT(s.head->prime_tokens[0], arch->prime[0]);
        CHECK_INT(s.head->prime_tokens[1], arch->prime[1]);
        CHECK_INT(s.tensor_count, arch->tensor_counts[variant]);
        check_stored_tensors(s.tensors, s.tensor_count, &hp, arch->ops->tensor_at, w.tensors);
        arch->shapes(&hp, variant, &s);
        CHECK(s.head->has_checksum && s.head->checksum == s.computed_checksum);
        CHECK(s.head->has_fingerprint);
        uint32_t fields[16];
        size_t n = arch->fp_fields(&hp, fields);
        CHECK_U64(s.head->fingerprint,
                  expected_fwmfp2(arch->name, fields, n, arch->vocabulary, vocab_size(&hp),
                                  s.head->checksum));
        const char *const *tokens = (const char *const *)s.head->tokens;
        const fwm__schema_head *head = s.head;
        CHECK_U64(arch->ops->fingerprint(&hp, tokens, head->token_lengths, head->checksum),
                  head->fingerprint);
        /* a changed hyperparameter changes the fingerprint */
        for (size_t e = 0; e < 2 && arch->fingerprint_edits[e].key; e++) {
            any_hparams other = hp;
            apply_edit(&other, &arch->fingerprint_edits[e]);
            CHECK(arch->ops->fingerprint(&other, tokens, head->token_lengths, head->checksum) !=
                  head->fingerprint);
        }
        arch->ops->release(&s);
    }
    /* the FWM's schema refuses it by its architecture */
    check_fwm_schema_refuses(file, size, arch->name);
    free(file);
    free(data);
    unlink(test_dir_path("a.gguf"));
}

static void round_trip(void) {
    for (int v = 0; v < arch->variants; v++) round_trip_variant(v);
}

/* ---- hyperparameters ------------------------------------------------------------------------- */

static void hparams_checks(void) {
    any_hparams hp;
    arch->ops->defaults(&hp);
    for (size_t d = 0; d < 12 && arch->defaults[d].key; d++) {
        const key_fact *k = find_key(arch->defaults[d].key);
        if (!k) continue;
        if (k->kind == KIND_F32 || k->kind == KIND_F32_POS) {
            if (field_f32(&hp, k) != (float)arch->defaults[d].value) {
                fprintf(stderr, "%s defaults to %g, expected %g\n", k->key, (double)field_f32(&hp, k),
                        arch->defaults[d].value);
                check_failures++;
            }
        } else if (field_u32(&hp, k) != (uint32_t)arch->defaults[d].value) {
            fprintf(stderr, "%s defaults to %" PRIu32 ", expected %g\n", k->key, field_u32(&hp, k),
                    arch->defaults[d].value);
            check_failures++;
        }
    }
    arch->counts();
    fwm_error err;
    CHECK_OK(arch->ops->check(&hp, &err), err);
    for (size_t r = 0; r < 12 && arch->hp_refusals[r].edits[0].key; r++) {
        any_hparams bad = hp;
        apply_edits(&bad, arch->hp_refusals[r].edits, 3);
        CHECK_STATUS(arch->ops->check(&bad, &err), FWM_ERR_INVALID_ARGUMENT, &err);
        if (arch->hp_refusals[r].needle) CHECK_CONTAINS(err.message, arch->hp_refusals[r].needle);
    }
    CHECK_STATUS(arch->ops->check(NULL, &err), FWM_ERR_INVALID_ARGUMENT, &err);
}

/* ---- the writer's refusals ------------------------------------------------------------------- */

static void writer_refusals(void) {
    any_hparams hp;
    arch->small(&hp, 0);
    write_args w = {.hp = &hp, .tokens = arch->vocabulary};
    float *data = fill_tensors_at(&hp, tensor_count(&hp), arch->ops->tensor_at, w.tensors);
    fwm_error err;
    char needle[128];
    write_args bad = w;
    bad.tensors[arch->missing_tensor] = NULL;
    CHECK_STATUS(arch->ops->write(test_dir_path("b.gguf"), &bad, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    snprintf(needle, sizeof needle, "tensor '%s' has no data", arch->missing_tensor_name);
    CHECK_CONTAINS(err.message, needle);
    /* token 4 repeats token 3 */
    bad = w;
    const char *dup[16];
    for (uint32_t i = 0; i < vocab_size(&hp); i++) dup[i] = arch->vocabulary[i];
    dup[4] = dup[3];
    bad.tokens = dup;
    CHECK_STATUS(arch->ops->write(test_dir_path("b.gguf"), &bad, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    snprintf(needle, sizeof needle, "duplicate token '%s'", dup[3]);
    CHECK_CONTAINS(err.message, needle);
    bad = w;
    const fwm_write_kv extra[1] = {{.key = arch->own_key, .kind = FWM_WRITE_KV_U32}};
    bad.extra = extra, bad.extra_count = 1;
    CHECK_STATUS(arch->ops->write(test_dir_path("b.gguf"), &bad, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    snprintf(needle, sizeof needle, "extra key '%s' is written by fwm__%s_model_write itself", arch->own_key,
             arch->name);
    CHECK_CONTAINS(err.message, needle);
    bad = w;
    const uint32_t prime[1] = {vocab_size(&hp)};
    bad.has_prime = true, bad.prime = prime, bad.prime_count = 1;
    CHECK_STATUS(arch->ops->write(test_dir_path("b.gguf"), &bad, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    snprintf(needle, sizeof needle, "prime token 0 is %" PRIu32, vocab_size(&hp));
    CHECK_CONTAINS(err.message, needle);
    if (arch->writer_refusals[0].edits[0].key) {
        any_hparams other = hp;
        apply_edits(&other, arch->writer_refusals[0].edits, 3);
        bad = w, bad.hp = &other;
        CHECK_STATUS(arch->ops->write(test_dir_path("b.gguf"), &bad, &err), FWM_ERR_INVALID_ARGUMENT, &err);
        CHECK_CONTAINS(err.message, arch->writer_refusals[0].needle);
    }
    CHECK(access(test_dir_path("b.gguf"), F_OK) != 0);
    free(data);
}

/* ---- hand-built files for the schema's refusals ---------------------------------------------- */

/* A small model's file built key by key (not by the writer), with `d`'s damage, the key `omit_key`
 * left out and `retype_key` retyped. */
static uint8_t *build(const file_damage *d, const char *omit_key, const char *retype_key, size_t *size) {
    any_hparams hp;
    arch->small(&hp, d->variant);
    fwm_gguf_writer w;
    fwm__gguf_writer_init(&w, 32);
    put_damaged_key(&w, omit_key, retype_key, "general.architecture", FWM_GGUF_TYPE_STRING, 0, 0,
                    d->architecture ? d->architecture : arch->name);
    any_hparams keys = hp;
    if (d->key.key) apply_edit(&keys, &d->key);
    for (size_t k = 0; k < arch->key_count; k++) {
        const key_fact *f = &arch->keys[k];
        uint32_t type = f->kind == KIND_BOOL                              ? FWM_GGUF_TYPE_BOOL
                        : f->kind == KIND_F32 || f->kind == KIND_F32_POS ? FWM_GGUF_TYPE_FLOAT32
                                                                          : FWM_GGUF_TYPE_UINT32;
        put_damaged_key(&w, omit_key, retype_key, f->key, type,
                        type == FWM_GGUF_TYPE_FLOAT32 ? 0 : field_u32(&keys, f),
                        type == FWM_GGUF_TYPE_FLOAT32 ? field_f32(&keys, f) : 0, NULL);
    }
    put_damaged_key(&w, omit_key, retype_key, "tokenizer.ggml.model", FWM_GGUF_TYPE_STRING, 0, 0, "word");
    if (!(omit_key && strcmp(omit_key, "tokenizer.ggml.tokens") == 0))
        fwm__gguf_writer_add_string_array(&w, "tokenizer.ggml.tokens", arch->vocabulary, NULL,
                                          vocab_size(&hp));
    tensor_damage t = {.omit_tensor = d->omit_tensor,
                       .reshape_tensor = d->reshape_tensor,
                       .f16_tensor = d->f16_tensor,
                       .type_tensor = d->type_tensor,
                       .tensor_type = d->tensor_type,
                       .extra_name = d->extra_tensor,
                       .extra_rows = d->extra_rows,
                       .extra_cols = d->extra_cols,
                       .extra_matrix = d->extra_matrix};
    return finish_damaged_file(&w, &hp, tensor_count(&hp), arch->ops->tensor_at, arch->ops->is_matrix, &t,
                               size);
}

static void expect_file(const file_damage *d, const char *omit_key, const char *retype_key, fwm_status status,
                        const char *needle) {
    size_t size = 0;
    uint8_t *file = build(d, omit_key, retype_key, &size);
    schema_view s;
    fwm_error err;
    fwm_status st = arch->ops->parse(file, size, &s, &err);
    expect_parse(st, &err, status, needle);
    if (!st) arch->ops->release(&s);
    fwm__free(file);
}

static void try_key(const char *omit_key, const char *retype_key, fwm_status status, const char *needle) {
    file_damage none = {0};
    expect_file(&none, omit_key, retype_key, status, needle);
}

static void schema_refusals(void) {
    for (int v = 0; v < arch->variants; v++) {
        file_damage ok = {.variant = v};
        expect_file(&ok, NULL, NULL, FWM_OK, NULL);
    }
    /* every key left out, then written with another type */
    const char *keys[40];
    retyped_key retyped[40];
    size_t n = 0;
    keys[n] = "general.architecture";
    retyped[n++] = (retyped_key){"general.architecture", "expected type string, found u32"};
    for (size_t k = 0; k < arch->key_count; k++) {
        int kind = arch->keys[k].kind;
        keys[n] = arch->keys[k].key;
        retyped[n++] = (retyped_key){arch->keys[k].key, kind == KIND_BOOL ? "expected type bool, found i32"
                                                        : kind == KIND_F32 || kind == KIND_F32_POS
                                                            ? "expected type f32, found i32"
                                                            : "expected type u32, found i32"};
    }
    keys[n] = "tokenizer.ggml.model";
    retyped[n++] = (retyped_key){"tokenizer.ggml.model", "expected type string, found u32"};
    keys[n] = "tokenizer.ggml.tokens";
    expect_missing_keys(keys, n + 1, try_key);
    expect_retyped_keys(retyped, n, try_key);
    /* another architecture's name */
    file_damage d = {.architecture = "fwm"};
    char needle[96];
    snprintf(needle, sizeof needle, "key 'general.architecture': expected \"%s\", found \"fwm\"", arch->name);
    expect_file(&d, NULL, NULL, FWM_ERR_FORMAT, needle);
    for (size_t i = 0; i < 16 && (arch->damages[i].needle || arch->damages[i].accepted); i++)
        expect_file(&arch->damages[i], NULL, NULL, arch->damages[i].accepted ? FWM_OK : FWM_ERR_FORMAT,
                    arch->damages[i].needle);
}

/* ---- the registry ---------------------------------------------------------------------------- */

static void registry(void) {
    file_damage d = {.architecture = "ntm"};
    size_t size = 0;
    uint8_t *file = build(&d, NULL, NULL, &size);
    fwm_arch found;
    fwm_error err;
    CHECK_STATUS(fwm__arch_detect(file, size, &found, &err), FWM_ERR_UNSUPPORTED, &err);
    CHECK_CONTAINS(err.message,
                   "key 'general.architecture': unknown architecture \"ntm\" (known: fwm, lstm, mnm, gfw, stm)");
    fwm__free(file);
    CHECK_STR(fwm__arch_name(arch->arch), arch->name);
    CHECK_STR(fwm__arch_name(FWM_ARCH_FWM), "fwm");
    CHECK(fwm__arch_name(FWM_ARCH_COUNT) == NULL);
}

/* ---- the initialisation ---------------------------------------------------------------------- */

/* fwm__<arch>_init_weights of `hp` at `seed` into one new buffer (free it), tensors[i] pointing
 * into it; offsets[i] where tensor i starts, offsets[count] the total. */
static float *init_tensors(const void *hp, uint64_t seed, float **tensors, uint64_t *offsets) {
    size_t n = tensor_count(hp);
    uint64_t total = 0, rows, cols;
    char name[48];
    for (size_t i = 0; i < n; i++) {
        arch->ops->tensor_at(hp, i, name, &rows, &cols);
        offsets[i] = total;
        total += rows * cols;
    }
    offsets[n] = total;
    float *a = malloc(total * sizeof *a);
    for (size_t i = 0; i < n; i++) tensors[i] = a + offsets[i];
    arch->ops->init(hp, seed, tensors);
    return a;
}

/* Deterministic per seed and finite, on each small model (and at the defaults where asked). */
static void init_weights(void) {
    for (int v = arch->init_defaults ? -1 : 0; v < arch->variants; v++) {
        any_hparams hp;
        if (v < 0)
            arch->ops->defaults(&hp);
        else
            arch->small(&hp, v);
        float *ta[MAX_TENSORS], *tb[MAX_TENSORS];
        uint64_t offsets[MAX_TENSORS + 1];
        float *a = init_tensors(&hp, 7, ta, offsets);
        float *b = init_tensors(&hp, 7, tb, offsets);
        uint64_t total = offsets[tensor_count(&hp)];
        CHECK(memcmp(a, b, total * sizeof *a) == 0);
        free(b);
        b = init_tensors(&hp, 8, tb, offsets);
        CHECK(memcmp(a, b, total * sizeof *a) != 0);
        size_t bad = 0;
        for (uint64_t e = 0; e < total; e++) bad += !isfinite(a[e]);
        CHECK_U64(bad, 0);
        free(a);
        free(b);
    }
    arch->init_facts();
}

/* ==== the architectures ======================================================================== */

static const char *const babi_vocabulary[] = {"<pad>", "<eos>", ".", "?", "john", "garden", "n,w", "is"};

static void no_facts(void) {}

/* ---- lstm ---- */

static void lstm_small(any_hparams *u, int variant) {
    memset(u, 0, sizeof *u);
    (void)variant;
    fwm_lstm_hparams *hp = &u->lstm;
    fwm__lstm_hparams_defaults(hp);
    hp->vocab_size = 7;
    hp->embedding_length = 5;
    hp->hidden_size = 3;
    hp->layer_count = 2;
    hp->forget_bias = 0.5f;
}

static size_t lstm_fp_fields(const void *raw, uint32_t fields[16]) {
    const fwm_lstm_hparams *hp = raw;
    uint32_t fb;
    memcpy(&fb, &hp->forget_bias, 4);
    uint32_t f[8] = {hp->vocab_size, hp->embedding_length, hp->hidden_size, hp->layer_count,
                     hp->residual ? 1u : 0u, fb, hp->padding_token_id, hp->eos_token_id};
    memcpy(fields, f, sizeof f);
    return 8;
}

static void lstm_shapes(const void *hp, int variant, const schema_view *s) {
    (void)hp, (void)variant;
    /* layer 1 reads H inputs, layer 0 E */
    CHECK_U64(s->tensors[1].cols, 5);
    CHECK_U64(s->tensors[4].cols, 3);
}

/* ---- mnm ---- */

static void mnm_small(any_hparams *u, int variant) {
    memset(u, 0, sizeof *u);
    (void)variant;
    fwm_mnm_hparams *hp = &u->mnm;
    fwm__mnm_hparams_defaults(hp);
    hp->vocab_size = 7;
    hp->embedding_length = 5;
    hp->hidden_size = 3;
    hp->head_count = 2;
    hp->key_length = 4;
    hp->value_length = 2;
    hp->memory_hidden = 6;
    hp->memory_layers = 2;
    hp->output_length = 3;
    hp->forget_bias = 0.5f;
}

static size_t mnm_fp_fields(const void *raw, uint32_t fields[16]) {
    const fwm_mnm_hparams *hp = raw;
    uint32_t fb;
    memcpy(&fb, &hp->forget_bias, 4);
    uint32_t f[12] = {hp->vocab_size,    hp->embedding_length, hp->hidden_size,
                      hp->head_count,    hp->key_length,       hp->value_length,
                      hp->memory_hidden, hp->memory_layers,    hp->output_length,
                      fb,                hp->padding_token_id, hp->eos_token_id};
    memcpy(fields, f, sizeof f);
    return 12;
}

static void mnm_shapes(const void *raw, int variant, const schema_view *s) {
    (void)variant;
    const fwm_mnm_hparams *hp = raw;
    /* W_ih reads [e; r] (E + d_v), W_u has Nh (2 d_k + d_v) + d_k rows, the targets (Lm-1) D + d_v;
     * the memory is [D, d_k] then [d_v, D] */
    CHECK_U64(s->tensors[1].cols, 7);
    CHECK_U64(s->tensors[4].rows, 24);
    CHECK_U64(s->tensors[8].rows, 8);
    CHECK_U64(s->tensors[10].rows, 6);
    CHECK_U64(s->tensors[10].cols, 4);
    CHECK_U64(s->tensors[11].rows, 2);
    CHECK_U64(s->tensors[11].cols, 6);
    CHECK(!fwm__mnm_tensor_trained(hp, 10) && !fwm__mnm_tensor_trained(hp, 11));
    CHECK(fwm__mnm_tensor_trained(hp, 9) && fwm__mnm_tensor_trained(hp, 12));
    CHECK_U64(fwm__mnm_hparams_state_floats(hp), 2 * 3 + 2 + 24 + 12);
}

/* docs/MODEL.md's counts at the defaults */
static void mnm_counts(void) {
    fwm_mnm_hparams hp;
    fwm__mnm_hparams_defaults(&hp);
    uint64_t trained = 0, total = 0;
    for (size_t i = 0; i < fwm__mnm_tensor_count(&hp); i++) {
        char name[48];
        uint64_t rows, cols;
        fwm__mnm_tensor_at(&hp, i, name, &rows, &cols);
        total += rows * cols;
        if (fwm__mnm_tensor_trained(&hp, i)) trained += rows * cols;
    }
    CHECK_U64(trained, 1098845);
    CHECK_U64(total, 1128845);
    CHECK_U64(fwm__mnm_hparams_state_floats(&hp), 30612);
}

/* Each tensor within its documented range, the embedding normal. */
static void mnm_init_facts(void) {
    any_hparams hp;
    mnm_small(&hp, 0);
    float *t[MAX_TENSORS];
    uint64_t offsets[MAX_TENSORS + 1];
    float *a = init_tensors(&hp, 7, t, offsets);
    /* bounds: H = 3 (controller, interaction), d_k = 4 (rate), d_v = 2 (targets), the memory's
     * columns (4, then 6), H + d_v = 5 (W_o), d_o = 3 (W_s) */
    const double bound[16] = {0, 1 / sqrt(3.0), 1 / sqrt(3.0), 1 / sqrt(3.0), 1 / sqrt(3.0),
                              1 / sqrt(3.0), 0.5, 0.5, 1 / sqrt(2.0), 1 / sqrt(2.0), 0.5,
                              1 / sqrt(6.0), 1 / sqrt(5.0), 1 / sqrt(5.0), 1 / sqrt(3.0), 1 / sqrt(3.0)};
    double emb_max = 0;
    for (size_t i = 0; i < tensor_count(&hp); i++) {
        for (uint64_t e = offsets[i]; e < offsets[i + 1]; e++) {
            if (i == 0) {
                if (fabs(a[e]) > emb_max) emb_max = fabs(a[e]);
            } else if (fabs(a[e]) > bound[i]) {
                fprintf(stderr, "tensor %zu element %" PRIu64 " is %g, beyond %g\n", i, e - offsets[i],
                        (double)a[e], bound[i]);
                check_failures++;
            }
        }
    }
    CHECK(emb_max > 0.5); /* 35 normal draws: not a narrow uniform */
    free(a);
}

/* ---- gfw ---- */

static const char *const gfw_vocabulary[] = {" ", "a", "b", "1", "2", "?", "."};

/* V 7, E 3, m 4, N 3, P 5: F1 [4, 8], F2 [4, 5], U1 24, U2 18, the slow output 45. */
static void gfw_small(any_hparams *u, int variant) {
    memset(u, 0, sizeof *u);
    (void)variant;
    fwm_gfw_hparams *hp = &u->gfw;
    fwm__gfw_hparams_defaults(hp);
    hp->vocab_size = 7;
    hp->embedding_length = 3;
    hp->fast_hidden = 4;
    hp->slow_hidden = 3;
    hp->slow_inner = 5;
    hp->layer_norm_epsilon = 1e-3f;
    hp->eos_token_id = 6;
}

static size_t gfw_fp_fields(const void *raw, uint32_t fields[16]) {
    const fwm_gfw_hparams *hp = raw;
    uint32_t eps;
    memcpy(&eps, &hp->layer_norm_epsilon, 4);
    uint32_t f[8] = {hp->vocab_size, hp->embedding_length, hp->fast_hidden,      hp->slow_hidden,
                     hp->slow_inner, eps,                  hp->padding_token_id, hp->eos_token_id};
    memcpy(fields, f, sizeof f);
    return 8;
}

static void gfw_shapes(const void *raw, int variant, const schema_view *s) {
    (void)variant;
    const fwm_gfw_hparams *hp = raw;
    /* W_1 reads [h_S; e] (N + E = 6), W_2 writes z, the F1 update (2 (4 + 8)) and the F2 update
     * (2 (4 + 5)): 3 + 24 + 18 = 45 rows */
    CHECK_U64(s->tensors[1].rows, 5);
    CHECK_U64(s->tensors[1].cols, 6);
    CHECK_U64(s->tensors[3].rows, 45);
    CHECK_U64(s->tensors[3].cols, 5);
    CHECK_U64(s->tensors[4].rows, 45);
    CHECK_U64(s->tensors[5].cols, 4);
    CHECK_U64(fwm__gfw_f1_cols(hp), 8);
    CHECK_U64(fwm__gfw_f2_cols(hp), 5);
    CHECK_U64(fwm__gfw_hparams_state_floats(hp), 4 + 3 + 4 * 8 + 4 * 5);
    CHECK_U64(fwm__gfw_parameter_count(hp), 21 + 30 + 5 + 225 + 45 + 28 + 7);
}

/* docs/MODEL.md's counts at the paper's sizes */
static void gfw_counts(void) {
    fwm_gfw_hparams hp;
    fwm__gfw_hparams_defaults(&hp);
    CHECK_U64(fwm__gfw_update1_length(&hp), 192);
    CHECK_U64(fwm__gfw_update2_length(&hp), 162);
    CHECK_U64(fwm__gfw_slow_out_rows(&hp), 394);
    CHECK_U64(fwm__gfw_parameter_count(&hp), 46234);
    CHECK_U64(fwm__gfw_hparams_state_floats(&hp), 3960);
}

/* Every matrix within its Glorot bound and spread over it, the biases zero (at the defaults). */
static void gfw_init_facts(void) {
    any_hparams hp;
    fwm__gfw_hparams_defaults(&hp.gfw);
    float *t[MAX_TENSORS];
    uint64_t offsets[MAX_TENSORS + 1];
    float *a = init_tensors(&hp, 7, t, offsets);
    /* sqrt(6 / (rows + cols)): Emb 15 + 15, W_1 100 + 55, W_2 394 + 100, W_o 15 + 40 */
    const double bound[7] = {sqrt(6.0 / 30), sqrt(6.0 / 155), 0, sqrt(6.0 / 494), 0, sqrt(6.0 / 55), 0};
    for (size_t i = 0; i < tensor_count(&hp); i++) {
        double largest = 0;
        for (uint64_t e = offsets[i]; e < offsets[i + 1]; e++)
            if (fabs(a[e]) > largest) largest = fabs(a[e]);
        if (bound[i] == 0) {
            CHECK(largest == 0); /* biases start at zero */
        } else if (largest > bound[i] || largest < 0.9 * bound[i]) {
            fprintf(stderr, "tensor %zu: largest |w| %g, bound %g\n", i, largest, bound[i]);
            check_failures++;
        }
    }
    free(a);
}

/* ---- stm: variant 0 reads sentences, variant 1 words ---- */

static void stm_small(any_hparams *u, int variant) {
    memset(u, 0, sizeof *u);
    fwm_stm_hparams *hp = &u->stm;
    fwm__stm_hparams_defaults(hp);
    hp->vocab_size = 8;
    hp->input_mode = variant == 0 ? FWM_STM_INPUT_SENTENCE : FWM_STM_INPUT_WORD;
    hp->embedding_length = 5;
    hp->sentence_length = 4;
    hp->memory_size = 3;
    hp->query_count = 2;
    hp->relation_length = 4;
    hp->answer_hidden = 6;
    hp->statement_end_token_id = 2;
    hp->question_end_token_id = 3;
    hp->reset_on_eos = variant == 0;
}

static size_t stm_fp_fields(const void *raw, uint32_t fields[16]) {
    const fwm_stm_hparams *hp = raw;
    uint32_t es, ea;
    memcpy(&es, &hp->sam_norm_eps, 4);
    memcpy(&ea, &hp->answer_norm_eps, 4);
    uint32_t f[15] = {hp->vocab_size,     hp->input_mode,    hp->embedding_length,
                      hp->sentence_length, hp->memory_size,  hp->query_count,
                      hp->relation_length, hp->answer_hidden, es,
                      ea,                 hp->reset_on_eos ? 1u : 0u, hp->statement_end_token_id,
                      hp->question_end_token_id, hp->padding_token_id, hp->eos_token_id};
    memcpy(fields, f, sizeof f);
    return 15;
}

static void stm_shapes(const void *hp, int variant, const schema_view *s) {
    char name[48];
    uint64_t rows, cols;
    fwm__stm_tensor_at(hp, s->tensor_count - 2, name, &rows, &cols);
    if (variant == 0) {
        CHECK_STR(name, "stm.answer.norm");
        CHECK_U64(rows, 6);
        fwm__stm_tensor_at(hp, 1, name, &rows, &cols);
        CHECK_STR(name, "stm.position.weight");
        CHECK_U64(fwm__stm_state_bytes(hp), 4 * (9 * 3 + 4 + 2));
    } else {
        CHECK_STR(name, "output.weight"); /* G3 [V, n_q n_r] */
        CHECK_U64(cols, 8);
        CHECK_U64(fwm__stm_state_bytes(hp), 4 * 27);
    }
}

static uint64_t stm_total_floats(const fwm_stm_hparams *hp) {
    uint64_t total = 0;
    for (size_t i = 0; i < fwm__stm_tensor_count(hp); i++) {
        char name[48];
        uint64_t rows, cols;
        fwm__stm_tensor_at(hp, i, name, &rows, &cols);
        total += rows * cols;
    }
    return total;
}

/* docs/MODEL.md's counts: the bAbI size, and the catbAbI size in word mode, whose checks differ */
static void stm_counts(void) {
    fwm_stm_hparams hp;
    fwm__stm_hparams_defaults(&hp);
    CHECK_U64(stm_total_floats(&hp), 456267);
    CHECK_U64(fwm__stm_state_bytes(&hp), 680472);
    fwm_stm_hparams word = hp;
    word.input_mode = FWM_STM_INPUT_WORD, word.embedding_length = 256, word.memory_size = 56;
    word.query_count = 12, word.relation_length = 96, word.reset_on_eos = false;
    CHECK_U64(stm_total_floats(&word), 683839);
    CHECK_U64(fwm__stm_state_bytes(&word), 163072);
    fwm_error err;
    CHECK_OK(fwm__stm_hparams_valid(&word, &err), err);
    word.question_end_token_id = word.statement_end_token_id; /* word mode does not use them */
    CHECK_OK(fwm__stm_hparams_valid(&word, &err), err);
    fwm_stm_hparams bad = word;
    bad.memory_size = 2048, bad.query_count = 1, bad.relation_length = 65536;
    CHECK_STATUS(fwm__stm_hparams_valid(&bad, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    CHECK_CONTAINS(err.message, "tensor 'stm.distill.weight' would hold");
}

/* The spec's table (constants exact, draws within their bounds); word mode's alpha. */
static void stm_init_facts(void) {
    any_hparams hp;
    stm_small(&hp, 0);
    float *ta[MAX_TENSORS];
    uint64_t offsets[MAX_TENSORS + 1];
    float *a = init_tensors(&hp, 7, ta, offsets);
    CHECK(ta[1][0] == 0.25f && ta[1][19] == 0.25f);                     /* Pos: 1/P */
    CHECK(ta[15][0] == 1.0f && ta[15][1] == 0.0f && ta[15][2] == 0.0f); /* alpha (1, 0, 0) in sentence mode */
    CHECK(ta[13][0] == 1.0f && ta[14][5] == 0.0f);                      /* SAM's layer norm */
    CHECK(ta[36][0] == 1.0f && ta[36][3] == 0.0f && ta[36][6] == 1.0f); /* answer norms */
    CHECK(ta[21][0] == 0.0f && ta[23][1] == 0.0f);                      /* entity MLP biases */
    /* the gate bias: U(-1/sqrt(d), 1/sqrt(d)) on the input half, + 1 on the forget half */
    for (size_t e = 0; e < 6; e++) {
        double x = ta[10][e], centre = e < 3 ? 0.0 : 1.0;
        CHECK(fabs(x - centre) <= 1 / sqrt(3.0));
    }
    double limit_emb = 0, limit_item = 0;
    for (uint64_t e = 0; e < 8 * 5; e++) limit_emb = fmax(limit_emb, fabs(ta[0][e]));
    for (uint64_t e = 0; e < 9; e++) limit_item = fmax(limit_item, fabs(ta[18][e]));
    CHECK(limit_emb <= 0.1 && limit_emb > 0.05);
    CHECK(limit_item <= 1 / sqrt(6.0) && limit_item > 0);
    free(a);
    /* word mode draws alpha (0, 0, 0): its relational memory starts without carrying itself over */
    stm_small(&hp, 1);
    float *tw[MAX_TENSORS];
    float *w = init_tensors(&hp, 7, tw, offsets);
    size_t alpha = tensor_count(&hp);
    for (size_t i = 0; i < tensor_count(&hp); i++) {
        char name[48];
        uint64_t rows, cols;
        fwm__stm_tensor_at(&hp.stm, i, name, &rows, &cols);
        if (strcmp(name, "stm.alpha") == 0) alpha = i;
    }
    CHECK(alpha < tensor_count(&hp));
    if (alpha < tensor_count(&hp)) CHECK(tw[alpha][0] == 0.0f && tw[alpha][1] == 0.0f && tw[alpha][2] == 0.0f);
    free(w);
}

/* ---- the table ---- */

#define FORMAT(s) .needle = (s)

static const arch_row rows[] = {
    {.name = "lstm",
     .arch = FWM_ARCH_LSTM,
     .ops = &lstm_ops,
     .keys = lstm_keys,
     .key_count = sizeof lstm_keys / sizeof lstm_keys[0],
     .vocabulary = babi_vocabulary,
     .variants = 1,
     .small = lstm_small,
     .tensor_counts = {9},
     .prime = {1, 4},
     .fp_fields = lstm_fp_fields,
     .fingerprint_edits = {{"lstm.residual", 0, true}},
     .shapes = lstm_shapes,
     .defaults = {{"lstm.vocab_size", 180}, {"lstm.embedding_length", 256}, {"lstm.hidden_size", 512},
                  {"lstm.block_count", 4}, {"lstm.residual", 1}, {"lstm.forget_bias", 1.0}},
     .counts = no_facts,
     .hp_refusals = {{{{"lstm.block_count", 0}}, "key 'lstm.block_count': expected 1 to 16, found 0"},
                     {{{"lstm.block_count", 17}}, NULL},
                     {{{"lstm.hidden_size", 0}}, "lstm.hidden_size"},
                     {{{"tokenizer.ggml.eos_token_id", 180}},
                      "key 'tokenizer.ggml.eos_token_id': expected a token id below lstm.vocab_size = 180"},
                     {{{"lstm.forget_bias", NAN}}, "lstm.forget_bias"}},
     .missing_tensor = 4,
     .missing_tensor_name = "blk.1.lstm.weight_ih",
     .own_key = "lstm.hidden_size",
     .damages = {{.omit_tensor = "blk.1.lstm.weight_hh", FORMAT("missing tensor 'blk.1.lstm.weight_hh'")},
                 {.omit_tensor = "output.bias", FORMAT("missing tensor 'output.bias'")},
                 {.reshape_tensor = "blk.0.lstm.weight_ih",
                  FORMAT("tensor 'blk.0.lstm.weight_ih': expected shape [12, 5], found [13, 5]")},
                 {.reshape_tensor = "blk.1.lstm.weight_ih",
                  FORMAT("tensor 'blk.1.lstm.weight_ih': expected shape [12, 3], found [13, 3]")},
                 {.reshape_tensor = "blk.1.lstm.bias",
                  FORMAT("tensor 'blk.1.lstm.bias': expected shape [12], found [13]")},
                 {.reshape_tensor = "output.weight",
                  FORMAT("tensor 'output.weight': expected shape [7, 3], found [8, 3]")},
                 {.extra_tensor = "blk.9.lstm.bias", .extra_rows = 12, .extra_cols = 1,
                  FORMAT("unexpected tensor 'blk.9.lstm.bias': not part of the lstm schema")},
                 {.f16_tensor = "blk.1.lstm.weight_hh", .accepted = true},
                 {.f16_tensor = "blk.0.lstm.bias", .type_tensor = "blk.0.lstm.bias",
                  .tensor_type = FWM_GGML_TYPE_BF16, .accepted = true}},
     .init_facts = no_facts},
    {.name = "mnm",
     .arch = FWM_ARCH_MNM,
     .ops = &mnm_ops,
     .keys = mnm_keys,
     .key_count = sizeof mnm_keys / sizeof mnm_keys[0],
     .vocabulary = babi_vocabulary,
     .variants = 1,
     .small = mnm_small,
     .tensor_counts = {16},
     .prime = {1, 4},
     .fp_fields = mnm_fp_fields,
     .fingerprint_edits = {{"mnm.head_count", 3}},
     .shapes = mnm_shapes,
     .defaults = {{"mnm.vocab_size", 180}, {"mnm.embedding_length", 256}, {"mnm.hidden_size", 256},
                  {"mnm.head_count", 3}, {"mnm.memory.key_length", 100}, {"mnm.memory.value_length", 100},
                  {"mnm.memory.hidden_size", 100}, {"mnm.memory.block_count", 3},
                  {"mnm.output_length", 256}, {"mnm.forget_bias", 0.0}},
     .counts = mnm_counts,
     .hp_refusals = {{{{"mnm.memory.block_count", 0}}, "key 'mnm.memory.block_count': expected 1 to 16, found 0"},
                     {{{"mnm.memory.block_count", 17}}, NULL},
                     {{{"mnm.head_count", 65}}, "key 'mnm.head_count': expected 1 to 64, found 65"},
                     /* the memory's bound: 16 layers of 65536 x 65536 */
                     {{{"mnm.memory.block_count", 16}, {"mnm.memory.hidden_size", 65536}}, "the memory holds"},
                     {{{"mnm.hidden_size", 0}}, "mnm.hidden_size"},
                     {{{"tokenizer.ggml.eos_token_id", 180}},
                      "key 'tokenizer.ggml.eos_token_id': expected a token id below mnm.vocab_size = 180"},
                     {{{"mnm.forget_bias", NAN}}, "mnm.forget_bias"}},
     .missing_tensor = 4,
     .missing_tensor_name = "mnm.interact.weight",
     .own_key = "mnm.hidden_size",
     .damages = {{.omit_tensor = "mnm.memory.1.init", FORMAT("missing tensor 'mnm.memory.1.init'")},
                 {.omit_tensor = "output.bias", FORMAT("missing tensor 'output.bias'")},
                 {.reshape_tensor = "lstm.weight_ih",
                  FORMAT("tensor 'lstm.weight_ih': expected shape [12, 7], found [13, 7]")},
                 {.reshape_tensor = "mnm.interact.weight",
                  FORMAT("tensor 'mnm.interact.weight': expected shape [24, 3], found [25, 3]")},
                 {.reshape_tensor = "mnm.rate.bias", FORMAT("tensor 'mnm.rate.bias': expected shape [1], found [2]")},
                 {.reshape_tensor = "mnm.memory.0.init",
                  FORMAT("tensor 'mnm.memory.0.init': expected shape [6, 4], found [7, 4]")},
                 {.reshape_tensor = "mnm.target.weight",
                  FORMAT("tensor 'mnm.target.weight': expected shape [8, 2], found [9, 2]")},
                 {.reshape_tensor = "mnm.out.weight",
                  FORMAT("tensor 'mnm.out.weight': expected shape [3, 5], found [4, 5]")},
                 {.extra_tensor = "mnm.memory.9.init", .extra_rows = 6, .extra_cols = 6, .extra_matrix = 1,
                  FORMAT("unexpected tensor 'mnm.memory.9.init': not part of the mnm schema")},
                 {.f16_tensor = "mnm.memory.1.init", .accepted = true},
                 {.f16_tensor = "mnm.target.bias", .type_tensor = "mnm.target.bias",
                  .tensor_type = FWM_GGML_TYPE_BF16, .accepted = true}},
     .init_facts = mnm_init_facts},
    {.name = "gfw",
     .arch = FWM_ARCH_GFW,
     .ops = &gfw_ops,
     .keys = gfw_keys,
     .key_count = sizeof gfw_keys / sizeof gfw_keys[0],
     .vocabulary = gfw_vocabulary,
     .variants = 1,
     .small = gfw_small,
     .tensor_counts = {7},
     .prime = {6, 1},
     .fp_fields = gfw_fp_fields,
     /* the epsilon's bits included */
     .fingerprint_edits = {{"gfw.slow.inner_size", 6}, {"gfw.layer_norm_epsilon", 1e-5}},
     .shapes = gfw_shapes,
     .defaults = {{"gfw.vocab_size", 15}, {"gfw.embedding_length", 15}, {"gfw.fast.hidden_size", 40},
                  {"gfw.slow.hidden_size", 40}, {"gfw.slow.inner_size", 100}, {"gfw.layer_norm_epsilon", 1e-5},
                  {"tokenizer.ggml.padding_token_id", 0}, {"tokenizer.ggml.eos_token_id", 14}},
     .counts = gfw_counts,
     .hp_refusals = {{{{"gfw.fast.hidden_size", 1}}, "key 'gfw.fast.hidden_size': expected 2 to 65536, found 1"},
                     {{{"gfw.slow.inner_size", 0}}, "key 'gfw.slow.inner_size': expected 1 to 65536, found 0"},
                     {{{"gfw.vocab_size", 1}}, "gfw.vocab_size"},
                     /* the fast matrices' bound: m = 8192 gives 2 * 8192^2 + ... > 2^26 floats */
                     {{{"gfw.fast.hidden_size", 8192}}, "the fast matrices F1 and F2 hold"},
                     {{{"tokenizer.ggml.eos_token_id", 15}},
                      "key 'tokenizer.ggml.eos_token_id': expected a token id below gfw.vocab_size = 15"},
                     {{{"tokenizer.ggml.padding_token_id", 99}}, "tokenizer.ggml.padding_token_id"},
                     {{{"gfw.layer_norm_epsilon", 0}}, "key 'gfw.layer_norm_epsilon': expected > 0, found 0"},
                     {{{"gfw.layer_norm_epsilon", NAN}}, "gfw.layer_norm_epsilon"}},
     .missing_tensor = 3,
     .missing_tensor_name = "gfw.slow.1.weight",
     .own_key = "gfw.slow.inner_size",
     .writer_refusals = {{{{"gfw.fast.hidden_size", 1}}, "key 'gfw.fast.hidden_size'"}},
     .damages = {{.architecture = "mnm", FORMAT("key 'general.architecture': expected \"gfw\", found \"mnm\"")},
                 {.key = {"gfw.layer_norm_epsilon", -1}, FORMAT("key 'gfw.layer_norm_epsilon': expected > 0, found -1")},
                 {.omit_tensor = "gfw.slow.0.bias", FORMAT("missing tensor 'gfw.slow.0.bias'")},
                 {.omit_tensor = "output.weight", FORMAT("missing tensor 'output.weight'")},
                 {.reshape_tensor = "gfw.slow.0.weight",
                  FORMAT("tensor 'gfw.slow.0.weight': expected shape [5, 6], found [6, 6]")},
                 {.reshape_tensor = "gfw.slow.1.weight",
                  FORMAT("tensor 'gfw.slow.1.weight': expected shape [45, 5], found [46, 5]")},
                 {.reshape_tensor = "gfw.slow.1.bias", FORMAT("tensor 'gfw.slow.1.bias': expected shape [45], found [46]")},
                 {.reshape_tensor = "token_embd.weight",
                  FORMAT("tensor 'token_embd.weight': expected shape [7, 3], found [8, 3]")},
                 {.extra_tensor = "gfw.slow.2.weight", .extra_rows = 4, .extra_cols = 4, .extra_matrix = 1,
                  FORMAT("unexpected tensor 'gfw.slow.2.weight': not part of the gfw schema")},
                 {.f16_tensor = "gfw.slow.1.weight", .accepted = true}},
     .init_facts = gfw_init_facts,
     .init_defaults = true},
    {.name = "stm",
     .arch = FWM_ARCH_STM,
     .ops = &stm_ops,
     .keys = stm_keys,
     .key_count = sizeof stm_keys / sizeof stm_keys[0],
     .vocabulary = babi_vocabulary,
     .variants = 2,
     .small = stm_small,
     .tensor_counts = {38, 23},
     .prime = {1, 4},
     .fp_fields = stm_fp_fields,
     .fingerprint_edits = {{"stm.reset_on_eos", 0, true}},
     .shapes = stm_shapes,
     .defaults = {{"stm.vocab_size", 180}, {"stm.input_mode", FWM_STM_INPUT_SENTENCE}, {"stm.memory.size", 90},
                  {"stm.memory.query_count", 20}, {"stm.reset_on_eos", 1}},
     .counts = stm_counts,
     .hp_refusals = {{{{"stm.input_mode", 2}}, "key 'stm.input_mode': expected 0 to 1, found 2"},
                     {{{"stm.question_end_token_id", 7}}, "also stm.statement_end_token_id"},
                     {{{"stm.statement_end_token_id", 1}}, "key 'tokenizer.ggml.eos_token_id': equals an end token"},
                     {{{"stm.question_end_token_id", 0}}, "tokenizer.ggml.padding_token_id"},
                     {{{"stm.question_end_token_id", 180}},
                      "key 'stm.question_end_token_id': expected a token id below stm.vocab_size = 180"},
                     {{{"stm.sam.layer_norm_epsilon", 0}}, "key 'stm.sam.layer_norm_epsilon': expected > 0"},
                     {{{"stm.answer.layer_norm_epsilon", NAN}}, "stm.answer.layer_norm_epsilon"},
                     {{{"stm.sentence.max_length", 257}}, "key 'stm.sentence.max_length': expected 1 to 256, found 257"},
                     /* 2048^2 * 17 > 2^26 */
                     {{{"stm.memory.size", 2048}, {"stm.memory.query_count", 16}}, "the memories hold"}},
     .missing_tensor = 37,
     .missing_tensor_name = "output.weight",
     .own_key = "stm.reset_on_eos",
     .writer_refusals = {{{{"stm.statement_end_token_id", 3}}, "stm.question_end_token_id"}},
     .damages = {{.omit_tensor = "stm.relation.init", FORMAT("missing tensor 'stm.relation.init'")},
                 {.omit_tensor = "stm.answer.role.2.bias2", FORMAT("missing tensor 'stm.answer.role.2.bias2'")},
                 {.variant = 1, .omit_tensor = "stm.distill.bias", FORMAT("missing tensor 'stm.distill.bias'")},
                 {.reshape_tensor = "stm.sam.weight", FORMAT("tensor 'stm.sam.weight': expected shape [6, 3], found [7, 3]")},
                 {.reshape_tensor = "stm.alpha", FORMAT("tensor 'stm.alpha': expected shape [3], found [4]")},
                 {.reshape_tensor = "stm.relation.init",
                  FORMAT("tensor 'stm.relation.init': expected shape [6, 3], found [7, 3]")},
                 /* a word-mode file's keys with a sentence-mode tensor list, and the other way round */
                 {.key = {"stm.input_mode", FWM_STM_INPUT_WORD}, FORMAT("missing tensor 'stm.distill.weight'")},
                 {.variant = 1, .key = {"stm.input_mode", FWM_STM_INPUT_SENTENCE},
                  FORMAT("missing tensor 'stm.position.weight'")},
                 {.variant = 1, .extra_tensor = "stm.position.weight", .extra_rows = 3, .extra_cols = 1,
                  FORMAT("unexpected tensor 'stm.position.weight': not part of the stm schema")}},
     .init_facts = stm_init_facts},
};

int main(int argc, char **argv) {
    for (size_t r = 0; argc == 2 && r < sizeof rows / sizeof rows[0]; r++)
        if (strcmp(argv[1], rows[r].name) == 0) arch = &rows[r];
    if (!arch) {
        fprintf(stderr, "usage: test_arch_format lstm|mnm|gfw|stm\n");
        return 2;
    }
    char program[32];
    snprintf(program, sizeof program, "format_%s", arch->name);
    char dir[48];
    snprintf(dir, sizeof dir, "test-%s-format", arch->name);
    if (!test_dir_make(dir)) return 1;
    static const check_case cases[] = {
        {"round_trip", round_trip},       {"hparams_checks", hparams_checks},
        {"writer_refusals", writer_refusals}, {"schema_refusals", schema_refusals},
        {"registry", registry},           {"init_weights", init_weights},
    };
    int status = check_run_cases(program, cases, sizeof cases / sizeof cases[0]);
    test_dir_remove();
    return status;
}
