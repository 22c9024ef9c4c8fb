/* text_dump.c - print the tokens of the text splitter (common/fwm_text.c) for a file, for
 * check_text_rules.py to compare with the reference implementation tests/reference/text_rules.py.
 *   text_dump FILE
 * Output: one line per token of fwm__text_split, "START END IS_EOS TOO_LONG TEXT", TEXT last and
 * written as its bytes. On an error (invalid UTF-8): the error message on stderr, exit status 1
 * (the lines of the tokens handed out before it stay on stdout). */
#include <stdio.h>
#include <stdlib.h>

#include "fwm_error.h"
#include "fwm_text.h"

static fwm_status print_token(void *user, const fwm__text_token *token)
{
    FILE *out = user;
    fprintf(out, "%zu %zu %d %d ", token->start, token->end, token->is_eos ? 1 : 0,
            token->too_long ? 1 : 0);
    fwrite(token->text, 1, token->length, out);
    fputc('\n', out);
    return FWM_OK;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: text_dump FILE\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f) {
        perror(argv[1]);
        return 2;
    }
    size_t cap = 1 << 16, length = 0;
    char *text = malloc(cap);
    for (size_t got; text && (got = fread(text + length, 1, cap - length, f)) > 0;) {
        length += got;
        if (length == cap) {
            char *grown = realloc(text, cap *= 2);
            if (!grown)
                free(text);
            text = grown;
        }
    }
    if (!text || ferror(f)) {
        fprintf(stderr, "%s: cannot read\n", argv[1]);
        fclose(f);
        free(text);
        return 2;
    }
    fclose(f);
    fwm_error err;
    fwm__error_clear(&err);
    fwm_status status = fwm__text_split(text, length, print_token, stdout, &err);
    free(text);
    fflush(stdout);
    if (status != FWM_OK) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    return 0;
}
