/* fuzz_text.c - fuzz target: any bytes through the text rules (common/fwm_text.h, docs/TEXT.md).
 *
 * Checks, beyond not crashing: the split refuses exactly the inputs that are not valid UTF-8
 * (FWM_ERR_INVALID_ARGUMENT, naming a byte offset), and for valid ones every token is non-empty,
 * NUL-terminated at its length, at most FWM__TEXT_MAX_TOKEN bytes, free of white space and of
 * upper-case ASCII; spans lie inside the text, do not overlap and come in order; an <eos> token
 * stands on a "\n" or on a literal "<eos>"; a too-long token's span is longer than the limit; and
 * splitting the same text twice gives the same tokens.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz_target.h"
#include "fwm_text.h"
#include "fwm_utf8.h"

unsigned long fuzz_inputs_accepted;

typedef struct walk {
    const char *text;
    size_t length, last_end, count;
    unsigned long long hash;
} walk;

static fwm_status on_token(void *user, const fwm__text_token *t) {
    walk *w = user;
    FUZZ_CHECK(t->length > 0 && t->length <= FWM__TEXT_MAX_TOKEN);
    FUZZ_CHECK(t->text[t->length] == '\0' && strlen(t->text) == t->length);
    for (size_t i = 0; i < t->length; i++) {
        unsigned char c = (unsigned char)t->text[i];
        FUZZ_CHECK(!(c >= 'A' && c <= 'Z'));
        FUZZ_CHECK(c > ' ' && c != 0x7f);
    }
    FUZZ_CHECK(t->start >= w->last_end && t->start < t->end && t->end <= w->length);
    if (t->is_eos)
        FUZZ_CHECK((t->end - t->start == 1 && w->text[t->start] == '\n') ||
                   (t->end - t->start == 5 && memcmp(w->text + t->start, "<eos>", 5) == 0));
    if (t->too_long)
        FUZZ_CHECK(t->end - t->start > FWM__TEXT_MAX_TOKEN); /* no character grows */
    w->last_end = t->end;
    for (size_t i = 0; i < t->length; i++)
        w->hash = w->hash * 1099511628211ull ^ (unsigned char)t->text[i];
    w->hash = w->hash * 31 + t->start * 7 + t->end + (t->is_eos ? 1 : 0);
    w->count++;
    return FWM_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size ? size : 1); /* exact size: overreads are caught */
    FUZZ_CHECK(text != NULL);
    if (size) memcpy(text, data, size);
    walk a = {text, size, 0, 0, 14695981039346656037ull}, b = a;
    fwm_error err;
    fwm_status status = fwm__text_split(text, size, on_token, &a, &err);
    bool valid = fwm__utf8_valid(text, size);
    if (!valid) {
        FUZZ_CHECK(status == FWM_ERR_INVALID_ARGUMENT && strstr(err.message, "invalid UTF-8 at byte"));
        free(text);
        return 0;
    }
    FUZZ_CHECK(status == FWM_OK);
    fuzz_inputs_accepted++;
    FUZZ_CHECK(fwm__text_split(text, size, on_token, &b, &err) == FWM_OK);
    FUZZ_CHECK(a.count == b.count && a.hash == b.hash);
    free(text);
    return 0;
}
