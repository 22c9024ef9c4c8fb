/* fwm_schema.c - the fwm schema over a parsed GGUF container: required keys with their types and
 * ranges, the vocabulary, every tensor of FWM_TENSOR_LIST with its shape; plus the tensor-data
 * checksum and the model fingerprint (docs/FORMAT.md). Parsing does not verify the checksum: the
 * loader decides what to do with it. The parts every architecture shares are schema_common.c's. */
#include "fwm_schema.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "fwm_alloc.h"
#include "fwm_error.h"
#include "fwm_model_shape.h"
#include "gguf_reader.h"
#include "schema_common.h"
#include "xxhash64.h"

#define QUOTE(len) ((int)((len) < 64 ? (len) : 64))

/* fwm.read_policy: "always" or "token", held as FWM_READ_ALWAYS / FWM_READ_ON_TOKEN. */
static fwm_status get_policy(const fwm_gguf_file *f, const char *key, uint32_t *value,
                             fwm_error *err) {
    fwm_gguf_string policy = {"", 0};
    fwm_status st = fwm__schema_get_string(f, key, 1, &policy, NULL, err);
    if (st) return st;
    if (policy.length == 6 && memcmp(policy.data, "always", 6) == 0)
        *value = FWM_READ_ALWAYS;
    else if (policy.length == 5 && memcmp(policy.data, "token", 5) == 0)
        *value = FWM_READ_ON_TOKEN;
    else
        return fwm__error(err, FWM_ERR_FORMAT, "key '%s': expected \"always\" or \"token\", found \"%.*s\"",
                          key, QUOTE(policy.length), policy.data);
    return FWM_OK;
}

#define FWM_SCHEMA_GET_POLICY(f, key, field) get_policy(f, key, field, err)

/* fwm.block_count: optional u32, absent = 1; its range is checked here, before it narrows into the
 * struct's 16-bit field. */
static fwm_status get_blocks(const fwm_gguf_file *f, const char *key, uint16_t *value,
                             fwm_error *err) {
    const fwm_gguf_kv *kv = NULL;
    fwm_status st = fwm__schema_find_typed(f, key, FWM_GGUF_TYPE_UINT32, 0, &kv, err);
    if (st) return st;
    uint32_t blocks = kv ? fwm__gguf_read_u32(kv->value) : 1;
    if ((st = fwm__check_range(key, blocks, 1, FWM_MAX_BLOCKS, FWM_ERR_FORMAT, err))) return st;
    *value = (uint16_t)blocks;
    return FWM_OK;
}

#define FWM_SCHEMA_GET_BLOCKS(f, key, field) get_blocks(f, key, field, err)

/* Every key of FWM_HPARAM_LIST, in list order, then the ranges. */
static fwm_status read_hparams(const fwm_gguf_file *f, void *schema, uint32_t *vocab_size, uint32_t *eos,
                               fwm_error *err) {
    fwm_hparams *hp = &((fwm_schema *)schema)->hp;
    fwm_status st;
#define HPARAM_GET_(field, key, kind, def, low, high) \
    if ((st = FWM_SCHEMA_GET_##kind(f, key, &hp->field))) return st;
    FWM_HPARAM_LIST(HPARAM_GET_)
#undef HPARAM_GET_
    if ((st = fwm__hparams_check(hp, FWM_ERR_FORMAT, err))) return st;
    *vocab_size = hp->vocab_size;
    *eos = hp->eos_token_id;
    return FWM_OK;
}

static fwm_status read_tensors(const fwm_gguf_file *f, void *schema, fwm_error *err) {
    fwm_schema *out = schema;
    const char *names[FWM_MAX_TENSORS];
    int n = fwm__tensor_count(&out->hp);
    for (int i = 0; i < n; i++) {
        names[i] = fwm__tensor_name(i);
        uint64_t rows, cols;
        int is_matrix;
        fwm__tensor_shape(&out->hp, i, &rows, &cols, &is_matrix);
        fwm_status st = fwm__schema_read_tensor(f, names[i], rows, cols, is_matrix, &out->tensors[i], err);
        if (st) return st;
    }
    return fwm__schema_no_other_tensors(f, names, (size_t)n, "fwm", err);
}

static const fwm_schema_kind kind = {"fwm", "fwm.vocab_size", read_hparams, read_tensors, 1};

fwm_status fwm__schema_parse(const void *buf, size_t size, fwm_schema *out, fwm_error *err) {
    if (!out) return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "fwm__schema_parse: out is NULL");
    memset(out, 0, sizeof *out);
    fwm_status st = fwm__schema_parse_kind(buf, size, &kind, out, &out->head, err);
    if (st) fwm__schema_release(out);
    return st;
}

void fwm__schema_release(fwm_schema *schema) {
    if (!schema) return;
    fwm__schema_release_head(&schema->head, schema->hp.vocab_size);
    memset(schema, 0, sizeof *schema);
}

uint64_t fwm__schema_checksum(const fwm_schema *schema) {
    fwm__xxh64_state state;
    fwm__xxh64_init(&state, 0);
    for (int i = 0; i < fwm__tensor_count(&schema->hp); i++)
        fwm__xxh64_update(&state, schema->tensors[i].data, (size_t)schema->tensors[i].n_bytes);
    return fwm__xxh64_digest(&state);
}

uint64_t fwm__schema_fingerprint(const fwm_hparams *hp, const char *const *tokens,
                                const uint32_t *token_lengths, uint64_t checksum) {
    fwm__xxh64_state state;
    fwm__xxh64_init(&state, 0);
    fwm__xxh64_update(&state, "FWMFP1", 6);
    fwm__fp_u32(&state, hp->vocab_size);
    fwm__fp_u32(&state, hp->embedding_length);
    fwm__fp_u32(&state, hp->hidden_size);
    fwm__fp_u32(&state, hp->memory_s);
    fwm__fp_u32(&state, hp->memory_r);
    fwm__fp_u32(&state, hp->memory_t);
    fwm__fp_u32(&state, hp->read_count);
    fwm__fp_u32(&state, hp->residual ? 1u : 0u);
    fwm__fp_u32(&state, hp->read_policy);
    fwm__fp_u32(&state, hp->read_token_id);
    fwm__fp_f32(&state, hp->forget_bias);
    fwm__fp_f32(&state, hp->beta_bias);
    fwm__fp_f32(&state, hp->write_scale);
    fwm__fp_f32(&state, hp->layer_norm_eps);
    fwm__fp_u32(&state, hp->padding_token_id);
    fwm__fp_u32(&state, hp->eos_token_id);
    if (hp->block_count > 1) fwm__fp_u32(&state, hp->block_count); /* a stacked FWM only */
    fwm__fp_vocabulary(&state, hp->vocab_size, tokens, token_lengths);
    fwm__fp_u64(&state, checksum);
    return fwm__xxh64_digest(&state);
}
