/* vocab.h - the trainer's word <-> id table: ids in order of insertion, hashed lookup.
 * Not the runtime's tokenizer (runtime/tokenizer.c); the model file carries the words. */
#ifndef FWM_TRAIN_VOCAB_H
#define FWM_TRAIN_VOCAB_H

#include <stddef.h>
#include <stdint.h>

typedef struct fwm__train_vocab {
    char **words;       /* owned, NUL-terminated; words[id] */
    uint32_t count, capacity;
    uint32_t *slots;    /* open addressing: id + 1, or 0 for empty */
    uint32_t slot_count; /* power of two, > 2 * count */
} fwm__train_vocab;

#define FWM__TRAIN_VOCAB_NONE UINT32_MAX

/* Id of `word`, or FWM__TRAIN_VOCAB_NONE. */
uint32_t fwm__train_vocab_find(const fwm__train_vocab *vocab, const char *word);
/* Id of `word`, added at the end if new. FWM__TRAIN_VOCAB_NONE when out of memory. */
uint32_t fwm__train_vocab_add(fwm__train_vocab *vocab, const char *word);
void fwm__train_vocab_release(fwm__train_vocab *vocab);

#endif
