/* tokenizer.c - text to token ids over a model's vocabulary, and word lookup.
 *
 * Two tokenizers, chosen by the model file (tokenizer.ggml.model):
 * "word", catbAbI's: ASCII lower-casing; words are separated by white space; a "." or "?" ending a
 * word is a token of its own ("Mary?" -> mary ?), unless the whole word is itself in the
 * vocabulary; commas stay inside words ("n,w").
 * "text", prose: the text rules of common/fwm_text.h (docs/TEXT.md), the ones fwm-train used.
 * A word outside the vocabulary reads as the model's unknown token when it has one (its span is
 * reported), else it is an error naming it. */
#include <math.h>
#include <string.h>

#include "fwm_error.h"
#include "fwm_text.h"
#include "fwm_utf8.h"
#include "model_internal.h"
#include "vocab_index.h"

fwm_status fwm_model_token_id(const fwm_model *model, const char *word, size_t length,
                              uint32_t *id) {
    if (!model || (!word && length > 0) || !id) return FWM_ERR_INVALID_ARGUMENT;
    return fwm__vocab_find(model, word ? word : "", length, false, id) ? FWM_OK
                                                                        : FWM_ERR_UNKNOWN_WORD;
}

static bool is_space(char ch) {
    return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\v' || ch == '\f';
}

static bool is_split_punctuation(char ch) { return ch == '.' || ch == '?'; }

/* Where the ids and the unknown words' spans go. */
typedef struct output {
    const fwm_model *model;
    const char *text;
    uint32_t *tokens;
    size_t capacity, *count;
    fwm_text_span *unknown;
    size_t unknown_capacity, *unknown_count;
    fwm_error *err;
} output;

/* Emit one token id; counts past capacity so the caller learns the size needed. */
static void emit(output *o, uint32_t id) {
    if (*o->count < o->capacity) o->tokens[*o->count] = id;
    (*o->count)++;
}

/* The word text[start, start + length) is not in the vocabulary: the unknown token, or an error.
 * The word is shown as valid UTF-8 (the message goes back to clients): at most 80 bytes of it, cut
 * at a character boundary, its invalid bytes as U+FFFD. */
static fwm_status unknown_word(output *o, size_t start, size_t length) {
    if (o->model->has_unknown_token) {
        if (*o->unknown_count < o->unknown_capacity)
            o->unknown[*o->unknown_count] = (fwm_text_span){start, length};
        (*o->unknown_count)++;
        emit(o, o->model->unknown_token_id);
        return FWM_OK;
    }
    char shown[3 * 80 + 1];
    size_t cut = fwm__utf8_cut(o->text + start, length, 80);
    fwm__utf8_sanitize(shown, sizeof shown, o->text + start, cut);
    return fwm__error(o->err, FWM_ERR_UNKNOWN_WORD,
                      "unknown word '%s%s' at byte %zu (the model knows %u words and has no "
                      "<unk>: fwm-inspect --vocab MODEL lists them)",
                      shown, cut < length ? "..." : "", start, o->model->hp.vocab_size);
}

/* catbAbI's tokenizer: the word text[start .. start+length). */
static fwm_status tokenize_word(output *o, size_t start, size_t length) {
    const char *text = o->text;
    uint32_t id;
    if (fwm__vocab_find(o->model, text + start, length, true, &id)) {
        emit(o, id);
        return FWM_OK;
    }
    size_t stem = length;
    while (stem > 0 && is_split_punctuation(text[start + stem - 1])) stem--;
    if (stem == length) return unknown_word(o, start, length);
    fwm_status st;
    if (stem > 0) {
        if (fwm__vocab_find(o->model, text + start, stem, true, &id))
            emit(o, id);
        else if ((st = unknown_word(o, start, stem)) != FWM_OK)
            return st;
    }
    for (size_t i = start + stem; i < start + length; i++) {
        if (fwm__vocab_find(o->model, text + i, 1, false, &id))
            emit(o, id);
        else if ((st = unknown_word(o, i, 1)) != FWM_OK)
            return st;
    }
    return FWM_OK;
}

/* The text rules' tokens (fwm__text_split's callback). */
static fwm_status on_text_token(void *user, const fwm__text_token *t) {
    output *o = user;
    uint32_t id;
    if (t->is_eos) {
        emit(o, o->model->hp.eos_token_id);
        return FWM_OK;
    }
    if (!t->too_long && fwm__vocab_find(o->model, t->text, t->length, false, &id)) {
        emit(o, id);
        return FWM_OK;
    }
    return unknown_word(o, t->start, t->end - t->start);
}

fwm_status fwm_tokenize(const fwm_model *model, const char *text, size_t text_length,
                        uint32_t *tokens, size_t capacity, size_t *count, fwm_error *err) {
    size_t unknown_count;
    return fwm_tokenize_spans(model, text, text_length, tokens, capacity, count, NULL, 0,
                              &unknown_count, err);
}

fwm_status fwm_tokenize_spans(const fwm_model *model, const char *text, size_t text_length,
                              uint32_t *tokens, size_t capacity, size_t *count,
                              fwm_text_span *unknown, size_t unknown_capacity,
                              size_t *unknown_count, fwm_error *err) {
    fwm__error_clear(err);
    if (!model || (!text && text_length > 0) || !count || (!tokens && capacity > 0) ||
        !unknown_count || (!unknown && unknown_capacity > 0))
        return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "fwm_tokenize: NULL argument");
    *count = 0;
    *unknown_count = 0;
    output o = {model, text, tokens, capacity, count, unknown, unknown_capacity, unknown_count, err};
    if (model->text_tokenizer) {
        fwm_status status = fwm__text_split(text, text_length, on_text_token, &o, err);
        if (status != FWM_OK) return status;
    }
    size_t i = 0;
    while (!model->text_tokenizer && i < text_length) {
        if (is_space(text[i])) {
            i++;
            continue;
        }
        size_t start = i;
        while (i < text_length && !is_space(text[i])) i++;
        fwm_status status = tokenize_word(&o, start, i - start);
        if (status != FWM_OK) return status;
    }
    if (*count > capacity)
        return fwm__error(err, FWM_ERR_BUFFER_TOO_SMALL,
                          "the text has %zu tokens, the buffer holds %zu", *count, capacity);
    return FWM_OK;
}

double fwm_logprob(const float *logits, uint32_t vocab_size, uint32_t id, double temperature) {
    if (!logits || id >= vocab_size || !(temperature > 0)) return NAN;
    double max = logits[0];
    for (uint32_t j = 1; j < vocab_size; j++)
        if (logits[j] > max) max = logits[j];
    double sum = 0;
    for (uint32_t j = 0; j < vocab_size; j++) sum += exp(((double)logits[j] - max) / temperature);
    return ((double)logits[id] - max) / temperature - log(sum);
}
