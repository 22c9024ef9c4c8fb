/* catbabi_stream.h - catbAbI: the bAbI tasks as id sequences, and the lane streams the trainer and
 * the evaluator walk through in windows.
 *
 * Vocabulary: <pad> = 0, <eos> = 1, then every word in order of first appearance over the files in
 * this order: split train (tasks 1..20), then valid (1..20), then test (1..20); within a file, in
 * reading order, each answer right after its "?".
 * A sample is one story; its encoding is x = [<eos>] + words, y = words + [<eos>]. A stream is the
 * samples of a split in a given order concatenated, [<eos>] w.. [<eos>] w.. [<eos>], cut into B
 * lanes of equal length L = ceil(N / B) (lane b holds positions b*L .. b*L + L - 1; positions past
 * the end are <pad> with target <pad>, which carries no loss). Windows of W steps walk all lanes
 * together; the state of each lane carries over from one window to the next.
 */
#ifndef FWM_TRAIN_CATBABI_STREAM_H
#define FWM_TRAIN_CATBABI_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "fwm/fwm.h"
#include "vocab.h"

enum { FWM__SPLIT_TRAIN = 0, FWM__SPLIT_VALID = 1, FWM__SPLIT_TEST = 2, FWM__SPLIT_COUNT = 3 };
extern const char *const fwm__split_names[FWM__SPLIT_COUNT]; /* "train", "valid", "test" */

#define FWM__TASK_COUNT 20

/* The samples of one split. */
typedef struct fwm__catbabi_split {
    uint32_t *words;   /* every sample's word ids, one sample after the other */
    size_t n_words;
    size_t *starts;    /* [n_samples] first word of each sample */
    uint32_t *lengths; /* [n_samples] words per sample */
    uint8_t *tasks;    /* [n_samples] task 1..20 (0 for data that has no tasks) */
    size_t n_samples;
    size_t n_questions;
    uint32_t *targets; /* [n_words] a sequence-to-sequence task's target of each word (ar_task.h);
                          NULL for catbAbI, whose target is the next word */
} fwm__catbabi_split;

typedef struct fwm__catbabi {
    fwm__train_vocab vocab;
    fwm__catbabi_split splits[FWM__SPLIT_COUNT];
    uint32_t pad_id, eos_id, qmark_id;
} fwm__catbabi;

/* Called with progress and substitution messages ("... is missing: using ..."). */
typedef void (*fwm__message_fn)(void *user, const char *message);

/* Read the 60 files <data_dir>/<folder>/qaN_<split>.txt. With `fixed_vocab` (e.g. a model's
 * words) words are mapped through it and a word it lacks is an error that names the word and the
 * file; without, the vocabulary is built as described above. A missing training file of a
 * "...-10k" folder is replaced by the same file of the 1k folder (the name without "-10k") when
 * that exists, with a message; any other missing file is an error naming it.
 * FWM_ERR_IO, FWM_ERR_FORMAT, FWM_ERR_UNKNOWN_WORD, FWM_ERR_OUT_OF_MEMORY. */
fwm_status fwm__catbabi_load(fwm__catbabi *out, const char *data_dir, const char *folder,
                             const fwm__train_vocab *fixed_vocab, fwm__message_fn message, void *user,
                             fwm_error *err);
void fwm__catbabi_release(fwm__catbabi *data);
void fwm__catbabi_split_release(fwm__catbabi_split *split);

/* Keep only the samples whose task t has keep[t] set (keep: [21], index 0 unused), their words
 * moved together (samples stored in order, as the loaders store them); n_questions is recounted
 * as the kept samples' `qmark_id` words. */
void fwm__catbabi_split_keep_tasks(fwm__catbabi_split *split, const uint8_t *keep,
                                   uint32_t qmark_id);

/* A permutation of 0..n-1 drawn with fwm__rng (seed, stream): Fisher-Yates. */
void fwm__shuffle_order(uint32_t *order, size_t n, uint64_t seed, uint64_t stream);

typedef struct fwm__catbabi_stream {
    uint32_t *tokens;  /* [n + 1]: input at position p is tokens[p], its target tokens[p + 1] */
    uint32_t *targets; /* [n] or NULL: with a split's targets, the target at p is targets[p] */
    uint8_t *sample_starts; /* [n] or NULL: 1 where a sample starts (a stream of samples that
                               start at window boundaries, fwm__catbabi_stream_build_aligned) */
    uint8_t *tasks;    /* [n]: task of the sample position p belongs to */
    size_t n;
    int lanes;
    size_t lane_length; /* ceil(n / lanes) */
} fwm__catbabi_stream;

/* Concatenate the split's samples in `order` (NULL: as stored) into `lanes` lanes. A split with
 * targets (a sequence-to-sequence task) is concatenated without <eos> markers, its targets beside
 * it. */
fwm_status fwm__catbabi_stream_build(fwm__catbabi_stream *out, const fwm__catbabi_split *split,
                                     const uint32_t *order, uint32_t eos_id, int lanes,
                                     fwm_error *err);
void fwm__catbabi_stream_release(fwm__catbabi_stream *stream);

/* Number of windows of `window` steps that cover a lane. */
size_t fwm__catbabi_window_count(const fwm__catbabi_stream *stream, int window);

/* Fill x, y (and tasks, if not NULL) [lanes][len] with lane positions start .. start + len - 1
 * (targets: the next input, or the stream's targets where it has them). */
void fwm__catbabi_window(const fwm__catbabi_stream *stream, size_t start, int len,
                         uint32_t pad_id, uint32_t *x, uint32_t *y, uint8_t *tasks);

#endif
