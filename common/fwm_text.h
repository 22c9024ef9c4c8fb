/* fwm_text.h - the text rules: how ordinary prose (UTF-8) becomes the words of a "text" model.
 *
 * One splitter serves fwm-train and fwm-eval (--task text, train/text_corpus.c) and the runtime's
 * fwm_tokenize for models whose tokenizer.ggml.model is "text", so served text is split exactly as
 * training text was. The rules are docs/TEXT.md's, in short (PTB-style):
 *   - ASCII letters are lower-cased; other characters are kept as they are, except the
 *     typographic ones that are mapped to ASCII (curly quotes, dashes, the ellipsis, spaces);
 *   - a word is a run of letters and digits (any non-ASCII character counts as a letter), joined
 *     across a single "-" or "'" between two of them, and across "." or "," between two digits;
 *   - contractions are split off a word: "n't" ("don't" -> do n't), and "'s", "'m", "'d", "'ll",
 *     "'re", "'ve" ("elizabeth's" -> elizabeth 's);
 *   - every other punctuation character is a token of its own, except: a run of two or more
 *     hyphens is one token "--", a run of two or more dots is one token "...", and "_" (the italics
 *     mark of plain-text books) is dropped;
 *   - "<unk>" and "<eos>" written in the text are those tokens;
 *   - a line end ("\n") after a line that gave tokens is the token "<eos>" (a paragraph per line).
 * Invalid UTF-8 is refused, naming the byte. No state, no allocation, thread-safe.
 */
#ifndef FWM_COMMON_TEXT_H
#define FWM_COMMON_TEXT_H

#include <stdbool.h>
#include <stddef.h>

#include "fwm/fwm.h"

/* Longest normalised token the splitter hands out whole; a longer one comes with too_long set and
 * its first FWM__TEXT_MAX_TOKEN bytes (it is in no vocabulary: training maps it to <unk>). */
#define FWM__TEXT_MAX_TOKEN 128

#define FWM__TEXT_EOS "<eos>"
#define FWM__TEXT_UNK "<unk>"

typedef struct fwm__text_token {
    const char *text; /* normalised, NUL-terminated; valid during the callback only */
    size_t length;    /* bytes of text */
    size_t start;     /* the source bytes it came from: [start, end) */
    size_t end;
    bool is_eos;      /* "<eos>": a line's end, or written as such */
    bool too_long;    /* longer than FWM__TEXT_MAX_TOKEN: text holds its first bytes */
} fwm__text_token;

/* Called once per token, in order; a status other than FWM_OK stops the split and is returned. */
typedef fwm_status (*fwm__text_token_fn)(void *user, const fwm__text_token *token);

/* Split text[0..length) by the rules above. FWM_OK, FWM_ERR_INVALID_ARGUMENT (invalid UTF-8: the
 * message names the byte offset; tokens before it have been handed out), or the callback's
 * status. */
fwm_status fwm__text_split(const char *text, size_t length, fwm__text_token_fn on_token, void *user,
                           fwm_error *err);

#endif
