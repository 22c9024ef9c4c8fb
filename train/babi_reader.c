/* babi_reader.c - bAbI task files to stories of tokens (see babi_reader.h). */
#include "babi_reader.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fwm_error.h"
#include "whole_file.h"

static int grow(void **pointer, size_t *capacity, size_t needed, size_t item)
{
    if (needed <= *capacity)
        return 0;
    size_t cap = *capacity ? *capacity : 256;
    while (cap < needed)
        cap *= 2;
    void *p = realloc(*pointer, cap * item);
    if (!p)
        return -1;
    *pointer = p;
    *capacity = cap;
    return 0;
}

static int push_token(fwm__babi_corpus *c, const char *word, size_t length)
{
    if (grow((void **)&c->text, &c->text_capacity, c->text_size + length + 1, 1) ||
        grow((void **)&c->token_offsets, &c->tokens_capacity, c->n_tokens + 1, sizeof(size_t)))
        return -1;
    c->token_offsets[c->n_tokens++] = c->text_size;
    for (size_t i = 0; i < length; i++) {
        char ch = word[i];
        c->text[c->text_size++] = ch >= 'A' && ch <= 'Z' ? (char)(ch - 'A' + 'a') : ch;
    }
    c->text[c->text_size++] = '\0';
    return 0;
}

/* Split text[0..length) into tokens. Returns -1 on allocation failure, else the number of tokens;
 * *last_was_qmark tells whether the last token is "?". */
static long tokenize(fwm__babi_corpus *c, const char *text, size_t length, int *last_was_qmark)
{
    long count = 0;
    size_t i = 0;
    *last_was_qmark = 0;
    while (i < length) {
        while (i < length && (text[i] == ' ' || text[i] == '\t'))
            i++;
        size_t start = i;
        while (i < length && text[i] != ' ' && text[i] != '\t')
            i++;
        size_t n = i - start;
        if (n == 0)
            break;
        char last = text[start + n - 1];
        if (n > 1 && (last == '.' || last == '?')) {
            if (push_token(c, text + start, n - 1) || push_token(c, &last, 1))
                return -1;
            count += 2;
        } else {
            if (push_token(c, text + start, n))
                return -1;
            count++;
        }
        *last_was_qmark = last == '?';
    }
    return count;
}

fwm_status fwm__babi_read_buffer(fwm__babi_corpus *c, const char *data, size_t size,
                                 const char *name, int task, fwm_error *err)
{
    size_t keep_text = c->text_size, keep_tokens = c->n_tokens, keep_stories = c->n_stories;
    fwm_status status = FWM_OK;
    long line_number = 0, expected_id = 1;
    fwm__babi_story *story = NULL;
    size_t pos = 0;
    while (pos < size) {
        const char *line = data + pos;
        const char *newline = memchr(line, '\n', size - pos);
        size_t length = newline ? (size_t)(newline - line) : size - pos;
        pos += length + (newline ? 1 : 0);
        line_number++;
        if (length > 0 && line[length - 1] == '\r')
            length--;
        if (length == 0) {
            if (pos >= size)
                break; /* a final empty line */
            status = fwm__error(err, FWM_ERR_FORMAT, "%s:%ld: empty line (expected \"ID text\")",
                                name, line_number);
            goto fail;
        }
        for (size_t i = 0; i < length; i++) {
            unsigned char ch = (unsigned char)line[i];
            if ((ch < 32 && ch != '\t') || ch > 126) {
                status = fwm__error(err, FWM_ERR_FORMAT,
                                    "%s:%ld: byte 0x%02x at column %zu is not printable ASCII",
                                    name, line_number, ch, i + 1);
                goto fail;
            }
        }
        size_t i = 0;
        long id = 0;
        while (i < length && line[i] >= '0' && line[i] <= '9' && id < 1000000)
            id = id * 10 + (line[i++] - '0');
        if (i == 0 || i >= length || line[i] != ' ' || id < 1) {
            status = fwm__error(err, FWM_ERR_FORMAT,
                                "%s:%ld: expected a line ID (a number >= 1) and a space at the "
                                "start, found \"%.40s\"",
                                name, line_number, line);
            goto fail;
        }
        if (id != 1 && id != expected_id) {
            status = fwm__error(err, FWM_ERR_FORMAT,
                                "%s:%ld: line ID %ld breaks the story (expected %ld, or 1 to start "
                                "a new story)",
                                name, line_number, id, expected_id);
            goto fail;
        }
        if (id == 1) {
            if (grow((void **)&c->stories, &c->stories_capacity, c->n_stories + 1,
                     sizeof *c->stories))
                goto oom;
            story = &c->stories[c->n_stories++];
            story->first_token = c->n_tokens;
            story->n_tokens = 0;
            story->n_questions = 0;
            story->task = (uint8_t)task;
        }
        expected_id = id + 1;
        const char *text = line + i + 1;
        size_t text_length = length - i - 1;
        const char *tab = memchr(text, '\t', text_length);
        int qmark = 0;
        long n;
        if (!tab) {
            n = tokenize(c, text, text_length, &qmark);
            if (n < 0)
                goto oom;
            if (n == 0) {
                status = fwm__error(err, FWM_ERR_FORMAT, "%s:%ld: sentence has no words", name,
                                    line_number);
                goto fail;
            }
        } else {
            const char *answer = tab + 1;
            const char *end = text + text_length;
            const char *tab2 = memchr(answer, '\t', (size_t)(end - answer));
            if (!tab2 || memchr(tab2 + 1, '\t', (size_t)(end - tab2 - 1))) {
                status = fwm__error(err, FWM_ERR_FORMAT,
                                    "%s:%ld: a question line needs exactly three tab-separated "
                                    "fields (question, answer, supporting fact IDs)",
                                    name, line_number);
                goto fail;
            }
            size_t answer_length = (size_t)(tab2 - answer);
            for (size_t k = 0; k < answer_length; k++)
                if (answer[k] == ' ') {
                    status = fwm__error(err, FWM_ERR_FORMAT,
                                        "%s:%ld: answer \"%.*s\" is not one word", name,
                                        line_number, (int)answer_length, answer);
                    goto fail;
                }
            if (answer_length == 0) {
                status = fwm__error(err, FWM_ERR_FORMAT, "%s:%ld: empty answer", name,
                                    line_number);
                goto fail;
            }
            for (const char *k = tab2 + 1; k < end; k++)
                if (!(*k == ' ' || (*k >= '0' && *k <= '9'))) {
                    status = fwm__error(err, FWM_ERR_FORMAT,
                                        "%s:%ld: supporting fact IDs \"%.*s\" must be numbers",
                                        name, line_number, (int)(end - tab2 - 1), tab2 + 1);
                    goto fail;
                }
            n = tokenize(c, text, (size_t)(tab - text), &qmark);
            if (n < 0)
                goto oom;
            if (!qmark) {
                status = fwm__error(err, FWM_ERR_FORMAT,
                                    "%s:%ld: question \"%.*s\" does not end with \"?\"", name,
                                    line_number, (int)(tab - text), text);
                goto fail;
            }
            if (push_token(c, answer, answer_length))
                goto oom;
            n++;
            story->n_questions++;
        }
        story->n_tokens += (uint32_t)n;
    }
    if (c->n_stories == keep_stories) {
        status = fwm__error(err, FWM_ERR_FORMAT, "%s: no stories in the file", name);
        goto fail;
    }
    return FWM_OK;
oom:
    status = fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "%s: out of memory at line %ld", name,
                        line_number);
fail:
    c->text_size = keep_text;
    c->n_tokens = keep_tokens;
    c->n_stories = keep_stories;
    return status;
}

fwm_status fwm__babi_read_file(fwm__babi_corpus *c, const char *path, int task, fwm_error *err)
{
    char *data;
    size_t size;
    fwm_status status = fwm__read_whole_file(path, &data, &size, err);
    if (status != FWM_OK)
        return status;
    status = fwm__babi_read_buffer(c, data, size, path, task, err);
    free(data);
    return status;
}

void fwm__babi_corpus_release(fwm__babi_corpus *c)
{
    if (!c)
        return;
    free(c->text);
    free(c->token_offsets);
    free(c->stories);
    memset(c, 0, sizeof *c);
}
