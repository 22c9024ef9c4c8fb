/* babi_standard.h - the standard bAbI protocol (docs/TRAINING.md section 1): a sample per question
 * (the story's statements before it, then the question and its answer), each answered from the
 * reset state; the lanes that put every sample at a window boundary, so that a lane's state can be
 * reset where its next sample starts (fwm__net_reset_lanes). */
#ifndef FWM_TRAIN_BABI_STANDARD_H
#define FWM_TRAIN_BABI_STANDARD_H

#include <stddef.h>
#include <stdint.h>

#include "catbabi_stream.h"

/* The standard bAbI protocol's samples (docs/TRAINING.md "The standard bAbI protocol"): one per
 * question of each story of `stories`: the story's statements before the question (its earlier
 * questions and answers left out), then the question, its "?" and its answer, with the story's
 * task. A statement is the words up to and including a `period_id` word, a question the words up
 * to `qmark_id`, followed by the answer. FWM_ERR_FORMAT (a "?" without an answer after it),
 * FWM_ERR_OUT_OF_MEMORY. */
fwm_status fwm__catbabi_standard_split(fwm__catbabi_split *out, const fwm__catbabi_split *stories,
                                       uint32_t period_id, uint32_t qmark_id, fwm_error *err);

/* Replace every split of `data` by its standard-protocol samples (fwm__catbabi_standard_split, with
 * the "." of `vocab`, the vocabulary the data was read with, and data->qmark_id). */
fwm_status fwm__catbabi_to_standard(fwm__catbabi *data, const fwm__train_vocab *vocab,
                                    fwm_error *err);

/* The samples in `order` (NULL: as stored) laid into `lanes` lanes so that each sample starts at
 * a window boundary (a multiple of `window`) of its lane, for a model whose lane state is reset
 * where a sample starts (sample_starts). Each sample, x = [<eos>] + words and y = words + [<eos>],
 * goes to the lane that has the fewest windows so far (the lowest such lane); the rest of its last
 * window is <pad> with target <pad> (no loss); lanes end with <pad> up to the longest one. */
fwm_status fwm__catbabi_stream_build_aligned(fwm__catbabi_stream *out,
                                             const fwm__catbabi_split *split,
                                             const uint32_t *order, uint32_t eos_id,
                                             uint32_t pad_id, int lanes, int window,
                                             fwm_error *err);

/* Which lanes start a sample at lane position `start` (flags[lanes]: 1 or 0; all 0 for a stream
 * without sample_starts). */
void fwm__catbabi_sample_starts(const fwm__catbabi_stream *stream, size_t start, uint8_t *flags);

#endif
