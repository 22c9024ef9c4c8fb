/* babi_reader.h - read bAbI v1.2 task files into stories of word tokens.
 *
 * A task file holds lines "ID text"; IDs start at 1 for each story and go up by one. A question
 * line is "ID question<TAB>answer<TAB>supporting fact IDs". Tokens are ASCII lower-case words split
 * on white space, with a "." or "?" that ends a word split off as a token of its own (the runtime's
 * tokenizer does the same); commas stay inside words ("n,w"). A question's answer is one token
 * that follows its "?". A story (its sentences and questions, in order) is one sample.
 * Errors name the file and line and what was expected. Not for: vocabularies or ids
 * (catbabi_stream.h).
 */
#ifndef FWM_TRAIN_BABI_READER_H
#define FWM_TRAIN_BABI_READER_H

#include <stddef.h>
#include <stdint.h>

#include "fwm/fwm.h"

typedef struct fwm__babi_story {
    size_t first_token;   /* index into the corpus's token list */
    uint32_t n_tokens;
    uint32_t n_questions;
    uint8_t task;         /* 1..20 */
} fwm__babi_story;

/* Stories of any number of files, tokens kept as strings. Zero-initialise before first use. */
typedef struct fwm__babi_corpus {
    char *text;            /* every token, NUL-terminated, one after the other */
    size_t text_size, text_capacity;
    size_t *token_offsets; /* token i is text + token_offsets[i] */
    size_t n_tokens, tokens_capacity;
    fwm__babi_story *stories;
    size_t n_stories, stories_capacity;
} fwm__babi_corpus;

/* Append the stories of the file at `path` (task number `task` recorded on each).
 * FWM_ERR_IO (cannot open or read: names the path), FWM_ERR_FORMAT ("path:line: ..."),
 * FWM_ERR_OUT_OF_MEMORY. On failure the corpus keeps the stories of earlier files only. */
fwm_status fwm__babi_read_file(fwm__babi_corpus *corpus, const char *path, int task,
                               fwm_error *err);

/* Same from a buffer; `name` is used in messages. */
fwm_status fwm__babi_read_buffer(fwm__babi_corpus *corpus, const char *data, size_t size,
                                 const char *name, int task, fwm_error *err);

static inline const char *fwm__babi_token(const fwm__babi_corpus *corpus, size_t index)
{
    return corpus->text + corpus->token_offsets[index];
}

void fwm__babi_corpus_release(fwm__babi_corpus *corpus);

#endif
