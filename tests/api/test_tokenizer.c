/* test_tokenizer.c - the catbAbI word tokenizer: lower-casing, split-off "." and "?", commas inside
 * words, white space of every kind, unknown words named with their offset, buffer sizing. */
#include <stdlib.h>

#include "test_util.h"

static const char *const vocabulary[] = {"<pad>", "<eos>", "where", "is", "mary", "?", ".",
                                         "moved", "to",    "the",   "bathroom", "n,w", "...",
                                         NULL};

static fwm_model *model;

/* Tokenize `text` and compare with the expected space-separated words. */
static void expect_tokens(const char *text, const char *expected) {
    uint32_t tokens[64];
    size_t count = 0;
    fwm_error err;
    fwm_status s = fwm_tokenize(model, text, strlen(text), tokens, 64, &count, &err);
    if (s != FWM_OK) {
        fprintf(stderr, "tokenize(\"%s\") failed: %s\n", text, err.message);
        check_failures++;
        return;
    }
    char joined[512] = "";
    for (size_t i = 0; i < count; i++) {
        if (i) strcat(joined, " ");
        strcat(joined, fwm_model_token_text(model, tokens[i]));
    }
    CHECK_STR(joined, expected);
}

static void expect_unknown(const char *text, const char *message_part) {
    uint32_t tokens[64];
    size_t count = 0;
    fwm_error err;
    CHECK_INT(fwm_tokenize(model, text, strlen(text), tokens, 64, &count, &err), FWM_ERR_UNKNOWN_WORD);
    CHECK_INT(err.status, FWM_ERR_UNKNOWN_WORD);
    CHECK_CONTAINS(err.message, message_part);
}

int main(void) {
    const char *path = test_write_model(vocabulary, 7);
    CHECK(path != NULL);
    if (!path) return check_finish("test_tokenizer");
    fwm_error err;
    CHECK_INT(fwm_model_load(path, NULL, &model, &err), FWM_OK);
    if (!model) {
        fprintf(stderr, "load: %s\n", err.message);
        return check_finish("test_tokenizer");
    }

    expect_tokens("Where is Mary?", "where is mary ?");
    expect_tokens("Mary moved to the bathroom.", "mary moved to the bathroom .");
    expect_tokens("  MARY\tmoved\nto\r\nthe   bathroom .  ", "mary moved to the bathroom .");
    expect_tokens("n,w", "n,w");
    expect_tokens("where is mary?.", "where is mary ? .");
    expect_tokens("?", "?");
    expect_tokens("...", "...");   /* a whole word in the vocabulary wins over splitting */
    expect_tokens("mary..", "mary . .");
    expect_tokens("", "");
    expect_tokens(" \t\n ", "");

    expect_unknown("Where is Bob?", "'Bob' at byte 9"); /* named as written */
    expect_unknown("mary, moved", "'mary,'");
    expect_unknown("where is mary!", "'mary!'");
    expect_unknown("where isn't", "at byte 6");
    expect_unknown("caf\xc3\xa9", "caf");

    /* A very long unknown word is named, shortened. */
    char long_word[400];
    memset(long_word, 'x', sizeof long_word - 1);
    long_word[sizeof long_word - 1] = '\0';
    expect_unknown(long_word, "xxxxxxxx...'");

    /* Buffer too small: the count needed is reported, nothing written past capacity. */
    uint32_t small[3] = {99, 99, 99};
    size_t count = 0;
    CHECK_INT(fwm_tokenize(model, "mary moved to the bathroom .", 28, small, 2, &count, &err),
              FWM_ERR_BUFFER_TOO_SMALL);
    CHECK_INT(count, 6);
    CHECK_INT(small[2], 99);
    CHECK_INT(fwm_tokenize(model, "mary moved", 10, NULL, 0, &count, &err), FWM_ERR_BUFFER_TOO_SMALL);
    CHECK_INT(count, 2);

    /* Lengths are honoured: no reading past text_length, embedded NUL is white-space-free data. */
    uint32_t tokens[8];
    CHECK_INT(fwm_tokenize(model, "mary moved", 4, tokens, 8, &count, NULL), FWM_OK);
    CHECK_INT(count, 1);

    /* Bad arguments. */
    CHECK_INT(fwm_tokenize(NULL, "mary", 4, tokens, 8, &count, &err), FWM_ERR_INVALID_ARGUMENT);
    CHECK_INT(fwm_tokenize(model, NULL, 4, tokens, 8, &count, &err), FWM_ERR_INVALID_ARGUMENT);
    CHECK_INT(fwm_tokenize(model, "mary", 4, tokens, 8, NULL, &err), FWM_ERR_INVALID_ARGUMENT);

    /* Exact lookup is case-sensitive. */
    uint32_t id = 0;
    CHECK_INT(fwm_model_token_id(model, "mary", 4, &id), FWM_OK);
    CHECK_STR(fwm_model_token_text(model, id), "mary");
    CHECK_INT(fwm_model_token_id(model, "Mary", 4, &id), FWM_ERR_UNKNOWN_WORD);
    CHECK_INT(fwm_model_token_id(model, "<eos>", 5, &id), FWM_OK);
    CHECK_INT(id, 1);
    CHECK(fwm_model_token_text(model, 13) == NULL);

    fwm_model_free(model);
    test_remove_model();
    return check_finish("test_tokenizer");
}
