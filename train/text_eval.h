/* text_eval.h - fwm-eval --task text: the perplexity of a text model (tokenizer "text") on a plain
 * text file, through the runtime exactly as fwm-serve scores a feed: the file is split by
 * fwm_tokenize (the text rules, <unk> for words outside the vocabulary), one session starts
 * primed and carries its state through the whole file (the authors' protocol: one lane), and
 * every token is scored by fwm_logprob over the logits of the step before it (the first by the
 * logits of the primed start).
 *
 * Softmax temperature (the authors' tuning): beside the plain score, the negative log-likelihood
 * at every temperature of a grid (0.80 to 1.20 in steps of 0.01) is summed, so the temperature
 * that is best on valid can be chosen and applied to test.
 */
#ifndef FWM_TRAIN_TEXT_EVAL_H
#define FWM_TRAIN_TEXT_EVAL_H

#include <stddef.h>

#include "fwm/fwm.h"

#define FWM__TEMPERATURE_COUNT 41 /* 0.80, 0.81, ..., 1.20 */

/* Temperature k of the grid. */
double fwm__temperature_at(int k);

typedef struct fwm__text_score {
    size_t tokens;   /* scored: every token of the file */
    size_t unknown;  /* of them, words read as <unk> */
    double nll;      /* sum of -log p at temperature 1 (fwm_logprob) */
    double nll_at[FWM__TEMPERATURE_COUNT]; /* the same at the grid's temperatures asked for */
} fwm__text_score;

/* Score the file at `path`; also fill nll_at[k] for the grid's temperatures k in [grid_from,
 * grid_to) (each computed alone, so a range of one gives the bits of the whole grid's entry; an
 * empty range computes none). max_tokens: stop after this many (0: the
 * whole file). FWM_ERR_IO (names the file), FWM_ERR_INVALID_ARGUMENT (a model whose tokenizer is
 * not "text", invalid UTF-8, a file without words), FWM_ERR_UNKNOWN_WORD (a model without <unk>),
 * FWM_ERR_OUT_OF_MEMORY. */
fwm_status fwm__text_score_file(const fwm_model *model, const char *path, int grid_from,
                                int grid_to, size_t max_tokens, fwm__text_score *out, fwm_error *err);

/* exp(nll / tokens), or 0 for no tokens. */
double fwm__text_perplexity(double nll, size_t tokens);

#endif
