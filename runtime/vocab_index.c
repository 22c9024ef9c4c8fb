/* vocab_index.c - open-addressing hash index over the model's vocabulary (FNV-1a, linear probing),
 * with optional ASCII case folding so the tokenizer can look words up without copying them. */
#include "vocab_index.h"

#include <string.h>

#include "fwm_alloc.h"
#include "fwm_error.h"

static unsigned char fold(unsigned char ch, bool fold_case) {
    return (fold_case && ch >= 'A' && ch <= 'Z') ? (unsigned char)(ch - 'A' + 'a') : ch;
}

static uint32_t hash_word(const char *word, size_t length, bool fold_case) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < length; i++) {
        h ^= fold((unsigned char)word[i], fold_case);
        h *= 16777619u;
    }
    return h;
}

fwm_status fwm__vocab_index_build(struct fwm_model *model, fwm_error *err) {
    uint32_t v = model->hp.vocab_size;
    uint32_t size = 16;
    while (size < 2 * (uint64_t)v) size *= 2;
    model->vocab_index = fwm__calloc(size, sizeof *model->vocab_index);
    if (!model->vocab_index)
        return fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "out of memory indexing %u words", v);
    model->vocab_index_size = size;
    for (uint32_t id = 0; id < v; id++) {
        uint32_t slot = hash_word(model->tokens[id], model->token_lengths[id], false) & (size - 1);
        while (model->vocab_index[slot] != 0) slot = (slot + 1) & (size - 1);
        model->vocab_index[slot] = id + 1;
    }
    return FWM_OK;
}

static bool same_word(const char *query, size_t length, const char *token, uint32_t token_length,
                      bool fold_case) {
    if (length != token_length) return false;
    for (size_t i = 0; i < length; i++)
        if (fold((unsigned char)query[i], fold_case) != (unsigned char)token[i]) return false;
    return true;
}

bool fwm__vocab_find(const struct fwm_model *model, const char *word, size_t length, bool fold_case,
                     uint32_t *id) {
    uint32_t mask = model->vocab_index_size - 1;
    uint32_t slot = hash_word(word, length, fold_case) & mask;
    for (uint32_t probes = 0; probes < model->vocab_index_size; probes++) {
        uint32_t entry = model->vocab_index[slot];
        if (entry == 0) return false;
        if (same_word(word, length, model->tokens[entry - 1], model->token_lengths[entry - 1],
                      fold_case)) {
            *id = entry - 1;
            return true;
        }
        slot = (slot + 1) & mask;
    }
    return false;
}
