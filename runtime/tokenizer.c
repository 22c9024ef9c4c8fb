/* tokenizer.c - the word-level catbAbI tokenizer over a model's vocabulary, and word lookup.
 *
 * Rules: ASCII lower-casing; words are separated by white space; a "." or "?" ending a word is a
 * token of its own ("Mary?" -> mary ?), unless the whole word is itself in the vocabulary; commas
 * stay inside words ("n,w"). */
#include <string.h>

#include "fwm_error.h"
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

/* Emit one token id; counts past capacity so the caller learns the size needed. */
static void emit(uint32_t id, uint32_t *tokens, size_t capacity, size_t *count) {
    if (*count < capacity) tokens[*count] = id;
    (*count)++;
}

/* The word is shown as valid UTF-8 (the message goes back to clients): at most 80 bytes of it, cut
 * at a character boundary, its invalid bytes as U+FFFD. */
static fwm_status unknown_word(fwm_error *err, const char *text, size_t start, size_t length) {
    char shown[3 * 80 + 1];
    size_t cut = fwm__utf8_cut(text + start, length, 80);
    fwm__utf8_sanitize(shown, sizeof shown, text + start, cut);
    return fwm__error(err, FWM_ERR_UNKNOWN_WORD, "unknown word '%s%s' at byte %zu", shown,
                      cut < length ? "..." : "", start);
}

/* Tokenize the word text[start .. start+length). */
static fwm_status tokenize_word(const fwm_model *model, const char *text, size_t start,
                                size_t length, uint32_t *tokens, size_t capacity, size_t *count,
                                fwm_error *err) {
    uint32_t id;
    if (fwm__vocab_find(model, text + start, length, true, &id)) {
        emit(id, tokens, capacity, count);
        return FWM_OK;
    }
    size_t stem = length;
    while (stem > 0 && is_split_punctuation(text[start + stem - 1])) stem--;
    if (stem == length) return unknown_word(err, text, start, length);
    if (stem > 0) {
        if (!fwm__vocab_find(model, text + start, stem, true, &id))
            return unknown_word(err, text, start, stem);
        emit(id, tokens, capacity, count);
    }
    for (size_t i = start + stem; i < start + length; i++) {
        if (!fwm__vocab_find(model, text + i, 1, false, &id)) return unknown_word(err, text, i, 1);
        emit(id, tokens, capacity, count);
    }
    return FWM_OK;
}

fwm_status fwm_tokenize(const fwm_model *model, const char *text, size_t text_length,
                        uint32_t *tokens, size_t capacity, size_t *count, fwm_error *err) {
    fwm__error_clear(err);
    if (!model || (!text && text_length > 0) || !count || (!tokens && capacity > 0))
        return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "fwm_tokenize: NULL argument");
    *count = 0;
    size_t i = 0;
    while (i < text_length) {
        if (is_space(text[i])) {
            i++;
            continue;
        }
        size_t start = i;
        while (i < text_length && !is_space(text[i])) i++;
        fwm_status status = tokenize_word(model, text, start, i - start, tokens, capacity, count, err);
        if (status != FWM_OK) return status;
    }
    if (*count > capacity)
        return fwm__error(err, FWM_ERR_BUFFER_TOO_SMALL,
                          "the text has %zu tokens, the buffer holds %zu", *count, capacity);
    return FWM_OK;
}
