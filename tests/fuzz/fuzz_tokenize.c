/* fuzz_tokenize.c - fuzz target: any bytes as text for fwm_tokenize over the fixture's small
 * vocabulary (fuzz_fixture.c: words, punctuation, "n,w", "mr.", "a.", "?.", a UTF-8 word).
 *
 * Checks, beyond not crashing: the only statuses are OK, BUFFER_TOO_SMALL and UNKNOWN_WORD; ids
 * are in range; the count reported for a too-small buffer is the count a big enough buffer gets,
 * with the same prefix; and since the vocabulary is lower-case without white space, the token
 * texts joined by single spaces tokenize to the same ids again.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz_fixture.h"
#include "fuzz_target.h"
#include "fwm/fwm.h"

#define SMALL_CAPACITY 8

unsigned long fuzz_inputs_accepted;

/* The token texts of ids[0..count) joined by single spaces; *length receives its length. */
static char *join(const fwm_model *model, const uint32_t *ids, size_t count, size_t *length) {
    size_t total = 0;
    for (size_t i = 0; i < count; i++) total += strlen(fwm_model_token_text(model, ids[i])) + 1;
    char *text = malloc(total ? total : 1);
    FUZZ_CHECK(text != NULL);
    size_t at = 0;
    for (size_t i = 0; i < count; i++) {
        const char *word = fwm_model_token_text(model, ids[i]);
        size_t n = strlen(word);
        if (i > 0) text[at++] = ' ';
        memcpy(text + at, word, n);
        at += n;
    }
    *length = at;
    return text;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const fwm_model *model = fuzz_fixture_model();
    fwm_model_info info;
    fwm_model_get_info(model, &info);
    char *text = malloc(size ? size : 1); /* exact size, not NUL-terminated: overreads are caught */
    FUZZ_CHECK(text != NULL);
    if (size) memcpy(text, data, size);

    uint32_t small[SMALL_CAPACITY];
    size_t count = 0;
    fwm_error err;
    fwm_status status = fwm_tokenize(model, text, size, small, SMALL_CAPACITY, &count, &err);
    if (status == FWM_ERR_UNKNOWN_WORD) {
        FUZZ_CHECK(err.status == status && strstr(err.message, "unknown word") != NULL);
        free(text);
        return 0;
    }
    FUZZ_CHECK(status == FWM_OK || status == FWM_ERR_BUFFER_TOO_SMALL);
    FUZZ_CHECK((status == FWM_OK) == (count <= SMALL_CAPACITY));
    fuzz_inputs_accepted++;

    /* The count alone (no buffer) and then all ids in a buffer of exactly that size. */
    size_t counted = 0;
    status = fwm_tokenize(model, text, size, NULL, 0, &counted, &err);
    FUZZ_CHECK_STATUS(status, counted == 0 ? FWM_OK : FWM_ERR_BUFFER_TOO_SMALL, err);
    FUZZ_CHECK(counted == count);
    uint32_t *ids = malloc((count ? count : 1) * sizeof *ids);
    FUZZ_CHECK(ids != NULL);
    size_t full = 0;
    status = fwm_tokenize(model, text, size, ids, count, &full, &err);
    FUZZ_CHECK_STATUS(status, FWM_OK, err);
    FUZZ_CHECK(full == count);
    for (size_t i = 0; i < count; i++) {
        FUZZ_CHECK(ids[i] < info.vocab_size);
        if (i < SMALL_CAPACITY) FUZZ_CHECK(ids[i] == small[i]);
    }

    /* Round trip through the token texts. */
    size_t joined_length = 0;
    char *joined = join(model, ids, count, &joined_length);
    uint32_t *again = malloc((count ? count : 1) * sizeof *again);
    FUZZ_CHECK(again != NULL);
    size_t again_count = 0;
    status = fwm_tokenize(model, joined, joined_length, again, count, &again_count, &err);
    FUZZ_CHECK_STATUS(status, FWM_OK, err);
    FUZZ_CHECK(again_count == count);
    FUZZ_CHECK(count == 0 || memcmp(again, ids, count * sizeof *ids) == 0);

    free(again);
    free(joined);
    free(ids);
    free(text);
    return 0;
}
