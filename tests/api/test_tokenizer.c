/* test_tokenizer.c - the catbAbI word tokenizer: lower-casing, split-off "." and "?", commas inside
 * words, white space of every kind, unknown words named with their offset, buffer sizing; and a
 * model with <unk> (the word tokenizer's and the text tokenizer's unknown words read as <unk>,
 * their spans reported), the text tokenizer over a model (docs/TEXT.md; its rules in full are
 * checked against tests/reference/text_rules.py by check_text_rules), and fwm_logprob. */
#include <math.h>
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

/* fwm_tokenize_spans on `m`: the tokens (space-separated words) and the unknown spans
 * ("start+length" each, space-separated). */
static void expect_spans(fwm_model *m, const char *text, const char *tokens_expected,
                         const char *spans_expected) {
    uint32_t tokens[64];
    fwm_text_span spans[2];
    size_t count = 0, n_unknown = 0;
    fwm_error err;
    fwm_status s = fwm_tokenize_spans(m, text, strlen(text), tokens, 64, &count, spans, 2,
                                      &n_unknown, &err);
    if (s != FWM_OK) {
        fprintf(stderr, "tokenize_spans(\"%s\") failed: %s\n", text, err.message);
        check_failures++;
        return;
    }
    char joined[512] = "", shown[256] = "";
    for (size_t i = 0; i < count; i++) {
        if (i) strcat(joined, " ");
        strcat(joined, fwm_model_token_text(m, tokens[i]));
    }
    for (size_t i = 0; i < n_unknown; i++) { /* past the capacity: only counted */
        char one[40];
        if (i < 2)
            snprintf(one, sizeof one, "%s%zu+%zu", i ? " " : "", spans[i].start, spans[i].length);
        else
            snprintf(one, sizeof one, " ?");
        strcat(shown, one);
    }
    CHECK_STR(joined, tokens_expected);
    CHECK_STR(shown, spans_expected);
}

static void check_unknown_and_text(void) {
    static const char *const words[] = {"<pad>", "<eos>", "<unk>", "elizabeth", "walked", "to",
                                        "the", ".", "do", "n't", "'s", ",", "\"", "--", NULL};
    fwm_write_kv word_keys[1] = {{.key = "tokenizer.ggml.unknown_token_id",
                                  .kind = FWM_WRITE_KV_U32, .value.u32 = 2}};
    fwm_write_kv text_keys[2] = {{.key = "tokenizer.ggml.model", .kind = FWM_WRITE_KV_STRING,
                                  .value.string = "text"},
                                 {.key = "tokenizer.ggml.unknown_token_id",
                                  .kind = FWM_WRITE_KV_U32, .value.u32 = 2}};
    fwm_error err;
    fwm_model *word_model = NULL, *text_model = NULL;
    const char *path = test_write_model_extra(words, 3, word_keys, 1);
    CHECK(path && fwm_model_load(path, NULL, &word_model, &err) == FWM_OK);
    test_remove_model();
    path = test_write_model_extra(words, 3, text_keys, 2);
    CHECK(path && fwm_model_load(path, NULL, &text_model, &err) == FWM_OK);
    test_remove_model();
    if (!word_model || !text_model) return;
    fwm_model_info info;
    fwm_model_get_info(word_model, &info);
    CHECK_STR(info.tokenizer, "word");
    CHECK_INT(info.unknown_token_id, 2);
    fwm_model_get_info(text_model, &info);
    CHECK_STR(info.tokenizer, "text");
    CHECK_INT(info.unknown_token_id, 2);
    fwm_model_get_info(model, &info); /* the catbAbI model: no <unk> */
    CHECK_STR(info.tokenizer, "word");
    CHECK(info.unknown_token_id == FWM_NO_TOKEN);

    /* the word tokenizer with <unk>: unknown words read as it, their spans reported */
    expect_spans(word_model, "Elizabeth walked to Pemberley.", "elizabeth walked to <unk> .",
                 "20+9");
    expect_spans(word_model, "Jane walked to the ballroom.", "<unk> walked to the <unk> .",
                 "0+4 19+8");
    expect_spans(word_model, "a b c", "<unk> <unk> <unk>", "0+1 2+1 ?");
    /* the text tokenizer: the text rules, <eos> at a line's end, unknown spans in the source */
    expect_spans(text_model, "\"Elizabeth's--\" Jane didn't walk.\n",
                 "\" elizabeth 's -- \" <unk> <unk> n't <unk> . <eos>", "16+4 21+3 ?");
    expect_spans(text_model, "ELIZABETH WALKED", "elizabeth walked", "");
    expect_spans(text_model, "\n\n  \n", "", "");
    uint32_t tokens[8];
    size_t count, n_unknown;
    CHECK_INT(fwm_tokenize(text_model, "walked \xc3\x28", 9, tokens, 8, &count, &err),
              FWM_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(err.message, "invalid UTF-8 at byte 7");
    CHECK_INT(fwm_tokenize_spans(text_model, "walked", 6, tokens, 8, &count, NULL, 0, NULL, &err),
              FWM_ERR_INVALID_ARGUMENT);
    CHECK_INT(fwm_tokenize_spans(text_model, "zz walked", 9, tokens, 8, &count, NULL, 0,
                                 &n_unknown, &err),
              FWM_OK);
    CHECK_INT(n_unknown, 1);
    /* a model without <unk>: the message says how to list its words */
    expect_unknown("where is Bob?", "fwm-inspect --vocab");
    fwm_model_free(word_model);
    fwm_model_free(text_model);
}

/* fwm_logprob against a direct evaluation in double. */
static void check_logprob(void) {
    const float logits[4] = {1.5f, -2.0f, 0.25f, 3.0f};
    for (uint32_t id = 0; id < 4; id++)
        for (double T = 0.8; T < 1.25; T += 0.2) {
            double sum = 0;
            for (int j = 0; j < 4; j++) sum += exp(logits[j] / T);
            double want = logits[id] / T - log(sum);
            CHECK(fabs(fwm_logprob(logits, 4, id, T) - want) < 1e-12);
        }
    CHECK(isnan(fwm_logprob(logits, 4, 4, 1.0)));
    CHECK(isnan(fwm_logprob(logits, 4, 0, 0.0)));
    const float big[2] = {1000.0f, 999.0f}; /* no overflow */
    CHECK(fabs(fwm_logprob(big, 2, 1, 1.0) - (-1.0 - log1p(exp(-1.0)))) < 1e-12);
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

    test_remove_model();
    check_unknown_and_text();
    check_logprob();
    fwm_model_free(model);
    return check_finish("test_tokenizer");
}
