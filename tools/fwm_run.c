/* fwm_run.c - fwm-run: step a model (of any registered architecture: fwm, lstm, mnm, gfw, stm) over
 * a sentence or a token list and stream each token's top-k next-word predictions to stdout;
 * optionally dump every row of logits to a file.
 *
 *   fwm-run MODEL (--text "..." | --tokens 3,17,5) [--topk K] [--dump-logits FILE]
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fwm/fwm.h"

static const char usage[] =
    "usage: fwm-run MODEL (--text \"...\" | --tokens 3,17,5) [--topk K] [--dump-logits FILE]\n"
    "\n"
    "Steps a fresh session of MODEL over the input, one token at a time, and prints for each input\n"
    "token its position, its word and the K most probable next words with their probabilities.\n"
    "\n"
    "  --text TEXT          input text, tokenized like catbAbI (\"Where is Mary?\" -> where is mary ?)\n"
    "  --tokens LIST        input token ids, comma-separated\n"
    "  --topk K             predictions per token (default 5, 0 for none)\n"
    "  --dump-logits FILE   write all logits as little-endian float32, one row of V per input token\n"
    "                       (a row of NaNs where the model predicts nothing: an stm model in sentence\n"
    "                       mode predicts only at a question's end)\n"
    "  --help               this text\n";

static int fail(const char *format, const char *detail) {
    fprintf(stderr, "fwm-run: error: ");
    fprintf(stderr, format, detail);
    fputc('\n', stderr);
    return 1;
}

/* Parse "3,17,5" into a new array; returns its length or -1 with a message on stderr. */
static long parse_token_list(const char *list, uint32_t **out) {
    size_t n = 1;
    for (const char *p = list; *p; p++) n += *p == ',';
    uint32_t *tokens = malloc(n * sizeof *tokens);
    if (!tokens) return -1;
    const char *p = list;
    for (size_t i = 0; i < n; i++) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(p, &end, 10);
        if (end == p || errno != 0 || v > UINT32_MAX || (*end != ',' && *end != '\0') || *p == '-') {
            fprintf(stderr, "fwm-run: error: --tokens: '%s' is not a comma-separated list of ids\n",
                    list);
            free(tokens);
            return -1;
        }
        tokens[i] = (uint32_t)v;
        p = end + 1;
    }
    *out = tokens;
    return (long)n;
}

static int write_le_floats(FILE *f, const float *values, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint32_t bits;
        memcpy(&bits, &values[i], 4);
        unsigned char b[4] = {bits & 0xff, (bits >> 8) & 0xff, (bits >> 16) & 0xff, bits >> 24};
        if (fwrite(b, 1, 4, f) != 4) return -1;
    }
    return 0;
}

int main(int argc, char **argv) {
    const char *model_path = NULL, *text = NULL, *token_list = NULL, *dump_path = NULL;
    long topk = 5;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage, stdout);
            return 0;
        } else if (!strcmp(a, "--text") || !strcmp(a, "--tokens") || !strcmp(a, "--topk") ||
                   !strcmp(a, "--dump-logits")) {
            if (i + 1 >= argc) return fail("%s needs a value", a);
            const char *v = argv[++i];
            if (!strcmp(a, "--text")) text = v;
            else if (!strcmp(a, "--tokens")) token_list = v;
            else if (!strcmp(a, "--dump-logits")) dump_path = v;
            else {
                char *end;
                topk = strtol(v, &end, 10);
                if (*v == '\0' || *end != '\0' || topk < 0 || topk > 1000000)
                    return fail("--topk: '%s' is not a count", v);
            }
        } else if (a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "%s", usage);
            return fail("unknown option '%s'", a);
        } else if (!model_path) {
            model_path = a;
        } else {
            return fail("unexpected argument '%s'", a);
        }
    }
    if (!model_path || (!text == !token_list)) {
        fprintf(stderr, "%s", usage);
        return fail("%s", !model_path ? "MODEL is required" : "give exactly one of --text and --tokens");
    }

    fwm_error err;
    fwm_model *model = NULL;
    if (fwm_model_load(model_path, NULL, &model, &err) != FWM_OK)
        return fail("%s", err.message);
    fwm_model_info info;
    fwm_model_get_info(model, &info);

    int rc = 1;
    uint32_t *tokens = NULL;
    float *logits = NULL;
    fwm_prediction *predictions = NULL;
    fwm_session *session = NULL;
    FILE *dump = NULL;
    long n;
    if (text) {
        size_t count = 0;
        fwm_status s = fwm_tokenize(model, text, strlen(text), NULL, 0, &count, &err);
        if (s != FWM_OK && s != FWM_ERR_BUFFER_TOO_SMALL) {
            fail("%s", err.message);
            goto done;
        }
        tokens = malloc((count ? count : 1) * sizeof *tokens);
        if (!tokens || fwm_tokenize(model, text, strlen(text), tokens, count, &count, &err) != FWM_OK) {
            fail("%s", tokens ? err.message : "out of memory");
            goto done;
        }
        n = (long)count;
    } else {
        n = parse_token_list(token_list, &tokens);
        if (n < 0) goto done;
    }
    logits = malloc((size_t)info.vocab_size * sizeof *logits);
    predictions = malloc((size_t)(topk ? topk : 1) * sizeof *predictions);
    if (!logits || !predictions) {
        fail("%s", "out of memory");
        goto done;
    }
    if (fwm_session_create(model, &session, &err) != FWM_OK) {
        fail("%s", err.message);
        goto done;
    }
    if (dump_path && !(dump = fopen(dump_path, "wb"))) {
        fprintf(stderr, "fwm-run: error: cannot write '%s': %s\n", dump_path, strerror(errno));
        goto done;
    }
    for (long i = 0; i < n; i++) {
        if (fwm_session_step(session, tokens[i], logits, &err) != FWM_OK) {
            fail("%s", err.message);
            goto done;
        }
        if (dump && write_le_floats(dump, logits, info.vocab_size) != 0) {
            fprintf(stderr, "fwm-run: error: writing '%s' failed\n", dump_path);
            goto done;
        }
        printf("%ld\t%s\t->", i, fwm_model_token_text(model, tokens[i]));
        bool predicted = fwm_session_has_prediction(session);
        if (!predicted) printf(" (nothing predicted)");
        size_t k = predicted ? fwm_top_k(logits, info.vocab_size, (size_t)topk, predictions) : 0;
        for (size_t j = 0; j < k; j++)
            printf(" %s %.4f", fwm_model_token_text(model, predictions[j].token),
                   predictions[j].probability);
        putchar('\n');
        fflush(stdout);
    }
    rc = 0;
done:
    if (dump && fclose(dump) != 0 && rc == 0) {
        fprintf(stderr, "fwm-run: error: closing '%s' failed\n", dump_path);
        rc = 1;
    }
    fwm_session_free(session);
    free(predictions);
    free(logits);
    free(tokens);
    fwm_model_free(model);
    return rc;
}
