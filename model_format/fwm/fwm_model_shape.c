/* fwm_model_shape.c - hyperparameter ranges, tensor shapes, sizes and vocabulary rules. */
#include "fwm_model_shape.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fwm_alloc.h"
#include "fwm_error.h"

fwm_status fwm__check_range(const char *key, uint32_t value, uint32_t low, uint32_t high,
                              fwm_status failure, fwm_error *err) {
    if (value < low || value > high)
        return fwm__error(err, failure, "key '%s': expected %" PRIu32 " to %" PRIu32 ", found %" PRIu32,
                          key, low, high, value);
    return FWM_OK;
}

fwm_status fwm__check_token_id(const char *key, uint32_t id, const char *size_key,
                               uint32_t vocab_size, fwm_status failure, fwm_error *err) {
    if (id >= vocab_size)
        return fwm__error(err, failure,
                          "key '%s': expected a token id below %s = %" PRIu32 ", found %" PRIu32,
                          key, size_key, vocab_size, id);
    return FWM_OK;
}

fwm_status fwm__check_finite(const char *key, float value, fwm_status failure, fwm_error *err) {
    if (!isfinite(value))
        return fwm__error(err, failure, "key '%s': expected a finite number, found %g", key,
                          (double)value);
    return FWM_OK;
}

static fwm_status check_positive(const char *key, float value, fwm_status failure, fwm_error *err) {
    fwm_status st = fwm__check_finite(key, value, failure, err);
    if (st) return st;
    if (!(value > 0))
        return fwm__error(err, failure, "key '%s': expected > 0, found %g", key, (double)value);
    return FWM_OK;
}

static fwm_status check_policy(const char *key, uint32_t value, fwm_status failure, fwm_error *err) {
    if (value != FWM_READ_ALWAYS && value != FWM_READ_ON_TOKEN)
        return fwm__error(err, failure,
                          "key '%s': expected 0 (\"always\") or 1 (\"token\"), found %" PRIu32, key,
                          value);
    return FWM_OK;
}

/* One check per kind of FWM_HPARAM_LIST. */
#define CHECK_U32(key, value, low, high) fwm__check_range(key, value, low, high, failure, err)
#define CHECK_BOOL(key, value, low, high) FWM_OK
#define CHECK_POLICY(key, value, low, high) check_policy(key, value, failure, err)
#define CHECK_TOKEN(key, value, low, high) \
    fwm__check_token_id(key, value, "fwm.vocab_size", hp->vocab_size, failure, err)
#define CHECK_F32(key, value, low, high) fwm__check_finite(key, value, failure, err)
#define CHECK_F32_POS(key, value, low, high) check_positive(key, value, failure, err)
/* 0 in the struct means 1 (a struct filled by hand before the key existed; fwm_hparams.h). */
#define CHECK_BLOCKS(key, value, low, high) \
    ((value) == 0 ? FWM_OK : fwm__check_range(key, value, low, high, failure, err))

fwm_status fwm__hparams_check(const fwm_hparams *hp, fwm_status failure, fwm_error *err) {
    fwm_status st;
    /* Each key on its own, in list order (vocab_size comes before the token ids checked against it). */
#define FWM_HPARAM_CHECK_(field, key, kind, def, low, high) \
    if ((st = CHECK_##kind(key, hp->field, low, high))) return st;
    FWM_HPARAM_LIST(FWM_HPARAM_CHECK_)
#undef FWM_HPARAM_CHECK_
    /* Then what involves several keys. */
    uint64_t memory = (uint64_t)hp->memory_s * hp->memory_r * hp->memory_t;
    if (memory > FWM_MAX_MEMORY_ELEMENTS)
        return fwm__error(err, failure,
                          "keys 'fwm.memory.s' * 'fwm.memory.r' * 'fwm.memory.t' = %" PRIu32
                          " * %" PRIu32 " * %" PRIu32 " = %" PRIu64
                          " fast weights, more than the limit %u",
                          hp->memory_s, hp->memory_r, hp->memory_t, memory,
                          FWM_MAX_MEMORY_ELEMENTS);
    if (hp->read_count > 1 && hp->memory_s != hp->memory_t)
        return fwm__error(err, failure,
                          "key 'fwm.read_count': %" PRIu32
                          " chained reads require fwm.memory.s == fwm.memory.t, found %" PRIu32
                          " and %" PRIu32,
                          hp->read_count, hp->memory_s, hp->memory_t);
    return FWM_OK;
}

void fwm__hparams_defaults(fwm_hparams *hp) {
    memset(hp, 0, sizeof *hp);
#define FWM_HPARAM_DEFAULT_(field, key, kind, def, low, high) hp->field = def;
    FWM_HPARAM_LIST(FWM_HPARAM_DEFAULT_)
#undef FWM_HPARAM_DEFAULT_
}

/* The lower layers' tensor names, "blk.N.lstm.weight_ih" ... for N < FWM_MAX_LOWER_BLOCKS. */
#define BLOCK_NAMES_(n) \
    "blk." #n ".lstm.weight_ih", "blk." #n ".lstm.weight_hh", "blk." #n ".lstm.bias"
static const char *const block_names[FWM_MAX_LOWER_BLOCKS * FWM_BLOCK_TENSORS] = {
    BLOCK_NAMES_(0), BLOCK_NAMES_(1), BLOCK_NAMES_(2), BLOCK_NAMES_(3),
    BLOCK_NAMES_(4), BLOCK_NAMES_(5), BLOCK_NAMES_(6)};
#undef BLOCK_NAMES_
_Static_assert(FWM_MAX_LOWER_BLOCKS == 7, "block_names lists every lower layer");

const char *fwm__tensor_name(int index) {
    static const char *const names[FWM_TENSOR_COUNT] = {
#define FWM_TENSOR_NAME_(field, name, rows, cols) name,
        FWM_TENSOR_LIST(FWM_TENSOR_NAME_)
#undef FWM_TENSOR_NAME_
    };
    if (index >= FWM_TENSOR_COUNT && index < (int)FWM_MAX_TENSORS)
        return block_names[index - FWM_TENSOR_COUNT];
    return index >= 0 && index < FWM_TENSOR_COUNT ? names[index] : NULL;
}

void fwm__tensor_shape(const fwm_hparams *hp, int index, uint64_t *rows, uint64_t *cols,
                       int *is_matrix) {
    /* A vector is declared with the literal cols 1; a matrix's cols is a size that may itself be
     * 1, so the declaration (not the value) decides how it is stored. */
    static const char *const declared_cols[FWM_TENSOR_COUNT] = {
#define FWM_TENSOR_COLS_TEXT_(field, name, rows, cols) #cols,
        FWM_TENSOR_LIST(FWM_TENSOR_COLS_TEXT_)
#undef FWM_TENSOR_COLS_TEXT_
    };
    uint64_t r = 0, c = 0;
    if (index >= FWM_TENSOR_COUNT) { /* a lower layer's: [4H, E or H], [4H, H], [4H] */
        int l = (index - FWM_TENSOR_COUNT) / (int)FWM_BLOCK_TENSORS;
        int k = (index - FWM_TENSOR_COUNT) % (int)FWM_BLOCK_TENSORS;
        *rows = 4 * (uint64_t)hp->hidden_size;
        *cols = k == FWM_BLOCK_weight_ih ? (l == 0 ? hp->embedding_length : hp->hidden_size)
                : k == FWM_BLOCK_weight_hh ? hp->hidden_size
                                           : 1;
        if (is_matrix) *is_matrix = k != FWM_BLOCK_bias;
        return;
    }
    switch (index) {
#define FWM_TENSOR_SHAPE_(field, name, rows_expr, cols_expr) \
    case FWM_TENSOR_##field:                                 \
        r = (uint64_t)(rows_expr);                           \
        c = (uint64_t)(cols_expr);                           \
        break;
        FWM_TENSOR_LIST(FWM_TENSOR_SHAPE_)
#undef FWM_TENSOR_SHAPE_
    default: break;
    }
    *rows = r;
    *cols = c;
    if (is_matrix)
        *is_matrix = index >= 0 && index < FWM_TENSOR_COUNT && strcmp(declared_cols[index], "1") != 0;
}

void fwm__tensor_offsets(const fwm_hparams *hp, uint64_t *offsets) {
    uint64_t total = 0;
    int n = fwm__tensor_count(hp);
    for (int i = 0; i < n; i++) {
        uint64_t rows, cols;
        fwm__tensor_shape(hp, i, &rows, &cols, NULL);
        offsets[i] = total;
        total += rows * cols;
    }
    offsets[n] = total;
}

uint64_t fwm__parameter_count(const fwm_hparams *hp) {
    uint64_t offsets[FWM_MAX_TENSORS + 1];
    fwm__tensor_offsets(hp, offsets);
    return offsets[fwm__tensor_count(hp)];
}

uint64_t fwm__session_state_floats(const fwm_hparams *hp) {
    return 2 * (uint64_t)hp->hidden_size * (1 + fwm__lower_blocks(hp)) +
           (uint64_t)hp->memory_s * hp->memory_r * hp->memory_t;
}

/* ---- vocabulary -------------------------------------------------------------------------------- */

typedef struct token_entry {
    const char *data;
    uint64_t length;
    uint64_t id;
} token_entry;

static int compare_tokens(const void *a, const void *b) {
    const token_entry *x = a, *y = b;
    uint64_t n = x->length < y->length ? x->length : y->length;
    int c = memcmp(x->data, y->data, n);
    if (c) return c;
    if (x->length != y->length) return x->length < y->length ? -1 : 1;
    return x->id < y->id ? -1 : (x->id > y->id);
}

#define QUOTE(len) ((int)((len) < 64 ? (len) : 64))

fwm_status fwm__vocab_check(const char *const *tokens, const uint64_t *lengths, uint64_t count,
                            fwm_status failure, fwm_error *err) {
    token_entry *entries = count ? fwm__calloc(count, sizeof *entries) : NULL;
    if (count && !entries)
        return fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "out of memory checking %" PRIu64 " tokens",
                          count);
    fwm_status st = FWM_OK;
    for (uint64_t i = 0; i < count; i++) {
        const char *t = tokens[i];
        uint64_t length = lengths ? lengths[i] : strlen(t);
        if (length == 0) {
            st = fwm__error(err, failure, "key 'tokenizer.ggml.tokens': token %" PRIu64 " is empty", i);
            goto done;
        }
        if (length > FWM_MAX_TOKEN_LENGTH) {
            st = fwm__error(err, failure,
                            "key 'tokenizer.ggml.tokens': token %" PRIu64 " is %" PRIu64
                            " bytes long (limit %u)",
                            i, length, FWM_MAX_TOKEN_LENGTH);
            goto done;
        }
        if (lengths && memchr(t, '\0', length)) {
            st = fwm__error(err, failure,
                            "key 'tokenizer.ggml.tokens': token %" PRIu64 " contains a NUL byte", i);
            goto done;
        }
        entries[i] = (token_entry){t, length, i};
    }
    if (count > 1) {
        qsort(entries, count, sizeof *entries, compare_tokens);
        for (uint64_t i = 1; i < count; i++) {
            const token_entry *a = &entries[i - 1], *b = &entries[i];
            if (a->length == b->length && memcmp(a->data, b->data, a->length) == 0) {
                st = fwm__error(err, failure,
                                "key 'tokenizer.ggml.tokens': duplicate token '%.*s' (ids %" PRIu64
                                " and %" PRIu64 ")",
                                QUOTE(a->length), a->data, a->id, b->id);
                goto done;
            }
        }
    }
done:
    fwm__free(entries);
    return st;
}
