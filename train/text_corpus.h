/* text_corpus.h - --task text: a folder of plain text as the trainer's splits (the layout PTB and
 * WikiText ship in: train.txt, valid.txt, test.txt), split into words by the text rules
 * (common/fwm_text.h, docs/TEXT.md), the runtime's own.
 *
 * Vocabulary: <pad> = 0, <eos> = 1, <unk> = 2, then the training split's words by frequency (most
 * frequent first, ties in order of first appearance), all of them or the `vocab_size` most
 * frequent; any other word (and a token longer than FWM__TEXT_MAX_TOKEN) reads as <unk>.
 * Each split is one sample, as a language-modelling corpus is one stream: with t_1 .. t_n the
 * split's tokens (every line that has words ends in <eos>), the inputs are <eos> t_1 .. t_{n-1}
 * and the targets t_1 .. t_n (split->targets), so the stream is cut into lanes in order and the
 * loss is taken at every position (as for any split with targets, trainer.h).
 */
#ifndef FWM_TRAIN_TEXT_CORPUS_H
#define FWM_TRAIN_TEXT_CORPUS_H

#include <stddef.h>
#include <stdint.h>

#include "catbabi_stream.h"

#define FWM__TEXT_PAD_ID 0u
#define FWM__TEXT_EOS_ID 1u
#define FWM__TEXT_UNK_ID 2u

typedef struct fwm__text_stats {
    size_t tokens[FWM__SPLIT_COUNT];  /* targets of each split (every word and <eos>) */
    size_t unknown[FWM__SPLIT_COUNT]; /* of them, <unk> */
    size_t distinct_train;            /* distinct words of the training split */
} fwm__text_stats;

/* Read <dir>/train.txt, valid.txt and test.txt. vocab_size: 0 for every training word, else the
 * number of words kept (more than the training split has is an error that says how many it has).
 * A missing or unreadable file, a split without words, invalid UTF-8 (naming file and byte) are
 * errors. FWM_ERR_IO, FWM_ERR_FORMAT, FWM_ERR_INVALID_ARGUMENT, FWM_ERR_OUT_OF_MEMORY. */
fwm_status fwm__text_load(fwm__catbabi *out, const char *dir, uint32_t vocab_size,
                          fwm__text_stats *stats, fwm_error *err);

#endif
