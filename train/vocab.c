/* vocab.c - insertion-ordered word table with an open-addressing index (see vocab.h). */
#include "vocab.h"

#include <stdlib.h>
#include <string.h>

static uint64_t hash_word(const char *word)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *word; word++)
        h = (h ^ (unsigned char)*word) * 1099511628211ull;
    return h;
}

uint32_t fwm__train_vocab_find(const fwm__train_vocab *v, const char *word)
{
    if (!v->slot_count)
        return FWM__TRAIN_VOCAB_NONE;
    uint32_t mask = v->slot_count - 1;
    for (uint32_t i = (uint32_t)hash_word(word) & mask;; i = (i + 1) & mask) {
        uint32_t s = v->slots[i];
        if (!s)
            return FWM__TRAIN_VOCAB_NONE;
        if (strcmp(v->words[s - 1], word) == 0)
            return s - 1;
    }
}

static int rehash(fwm__train_vocab *v, uint32_t slot_count)
{
    uint32_t *slots = calloc(slot_count, sizeof *slots);
    if (!slots)
        return -1;
    for (uint32_t id = 0; id < v->count; id++) {
        uint32_t i = (uint32_t)hash_word(v->words[id]) & (slot_count - 1);
        while (slots[i])
            i = (i + 1) & (slot_count - 1);
        slots[i] = id + 1;
    }
    free(v->slots);
    v->slots = slots;
    v->slot_count = slot_count;
    return 0;
}

uint32_t fwm__train_vocab_add(fwm__train_vocab *v, const char *word)
{
    uint32_t id = fwm__train_vocab_find(v, word);
    if (id != FWM__TRAIN_VOCAB_NONE)
        return id;
    if (v->count + 1 > v->capacity) {
        uint32_t cap = v->capacity ? v->capacity * 2 : 64;
        char **words = realloc(v->words, cap * sizeof *words);
        if (!words)
            return FWM__TRAIN_VOCAB_NONE;
        v->words = words;
        v->capacity = cap;
    }
    if (2 * (v->count + 1) >= v->slot_count &&
        rehash(v, v->slot_count ? v->slot_count * 2 : 256))
        return FWM__TRAIN_VOCAB_NONE;
    char *copy = strdup(word);
    if (!copy)
        return FWM__TRAIN_VOCAB_NONE;
    v->words[v->count] = copy;
    uint32_t mask = v->slot_count - 1, i = (uint32_t)hash_word(word) & mask;
    while (v->slots[i])
        i = (i + 1) & mask;
    v->slots[i] = ++v->count;
    return v->count - 1;
}

void fwm__train_vocab_release(fwm__train_vocab *v)
{
    if (!v)
        return;
    for (uint32_t i = 0; i < v->count; i++)
        free(v->words[i]);
    free(v->words);
    free(v->slots);
    memset(v, 0, sizeof *v);
}
