/* gfw_schema.c - the `gfw` schema: keys, vocabulary, prime tokens, tensors, checksum and the
 * FWMFP2 fingerprint (gfw_schema.h), written with the parts every architecture shares. */
#include "gfw/gfw_schema.h"

#include <string.h>

#include "fwm_alloc.h"
#include "fwm_error.h"
#include "schema_common.h"
#include "xxhash64.h"

/* Every key of FWM_GFW_HPARAM_LIST, in list order, then the ranges. */
static fwm_status read_hparams(const fwm_gguf_file *f, void *schema, uint32_t *vocab_size, uint32_t *eos,
                               fwm_error *err) {
    fwm_gfw_hparams *hp = &((fwm_gfw_schema *)schema)->hp;
    fwm_status st;
#define HPARAM_GET_(field, key, kind, def, low, high) \
    if ((st = FWM_SCHEMA_GET_##kind(f, key, &hp->field))) return st;
    FWM_GFW_HPARAM_LIST(HPARAM_GET_)
#undef HPARAM_GET_
    if ((st = fwm__gfw_hparams_check(hp, FWM_ERR_FORMAT, err))) return st;
    *vocab_size = hp->vocab_size;
    *eos = hp->eos_token_id;
    return FWM_OK;
}

static fwm_status read_tensors(const fwm_gguf_file *f, void *schema, fwm_error *err) {
    fwm_gfw_schema *out = schema;
    char names[FWM_GFW_MAX_TENSORS][48];
    const char *list[FWM_GFW_MAX_TENSORS];
    out->tensor_count = fwm__gfw_tensor_count(&out->hp);
    for (size_t i = 0; i < out->tensor_count; i++) {
        uint64_t rows, cols;
        fwm__gfw_tensor_at(&out->hp, i, names[i], &rows, &cols);
        list[i] = names[i];
        fwm_status st = fwm__schema_read_tensor(f, names[i], rows, cols,
                                                fwm__gfw_tensor_is_matrix(&out->hp, i),
                                                &out->tensors[i], err);
        if (st) return st;
    }
    return fwm__schema_no_other_tensors(f, list, out->tensor_count, "gfw", err);
}

static const fwm_schema_kind kind = {"gfw", "gfw.vocab_size", read_hparams, read_tensors, 0};

fwm_status fwm__gfw_schema_parse(const void *buf, size_t size, fwm_gfw_schema *out, fwm_error *err) {
    if (!out) return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "fwm__gfw_schema_parse: out is NULL");
    memset(out, 0, sizeof *out);
    fwm_status st = fwm__schema_parse_kind(buf, size, &kind, out, &out->head, err);
    if (st) fwm__gfw_schema_release(out);
    return st;
}

void fwm__gfw_schema_release(fwm_gfw_schema *schema) {
    if (!schema) return;
    fwm__schema_release_head(&schema->head, schema->hp.vocab_size);
    memset(schema, 0, sizeof *schema);
}

uint64_t fwm__gfw_schema_checksum(const fwm_gfw_schema *schema) {
    fwm__xxh64_state state;
    fwm__xxh64_init(&state, 0);
    for (size_t i = 0; i < schema->tensor_count; i++)
        fwm__xxh64_update(&state, schema->tensors[i].data, (size_t)schema->tensors[i].n_bytes);
    return fwm__xxh64_digest(&state);
}

int fwm__gfw_tensor_is_matrix(const fwm_gfw_hparams *hp, size_t i) {
    (void)hp;
    return i == 0 || i == 1 || i == 3 || i == 5; /* token_embd, slow.0, slow.1, output weights */
}

/* The list's kinds as fingerprint bytes: 4 little-endian bytes each. */
#define FP_U32(state, value) fwm__fp_u32(state, value)
#define FP_TOKEN(state, value) fwm__fp_u32(state, value)
#define FP_F32_POS(state, value) fwm__fp_f32(state, value)

uint64_t fwm__gfw_fingerprint(const fwm_gfw_hparams *hp, const char *const *tokens,
                              const uint32_t *token_lengths, uint64_t checksum) {
    fwm__xxh64_state state;
    fwm__xxh64_init(&state, 0);
    fwm__xxh64_update(&state, "FWMFP2", 6);
    fwm__fp_u32(&state, 3);
    fwm__xxh64_update(&state, "gfw", 3);
#define FWM_GFW_FP_(field, key, kind, def, low, high) FP_##kind(&state, hp->field);
    FWM_GFW_HPARAM_LIST(FWM_GFW_FP_)
#undef FWM_GFW_FP_
    fwm__fp_vocabulary(&state, hp->vocab_size, tokens, token_lengths);
    fwm__fp_u64(&state, checksum);
    return fwm__xxh64_digest(&state);
}
