/* test_catbabi_stream.c - catbAbI from the shared bAbI copy: the missing 10k task-3 training file
 * is replaced by its 1k split with a message; question counts per split equal those counted
 * directly in the files (a plain count of tab lines, independent of the reader); <pad> and <eos>
 * come first; and the lanes: every epoch is a permutation of the samples, the windows of all
 * lanes together give back the stream exactly once, targets are the next inputs, and the valid
 * order does not depend on the training seed. Skips (exit 77) when the data is not there. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "catbabi_stream.h"
#include "check.h"

#ifndef FWM_SHARED_DATA
#define FWM_SHARED_DATA "../shared/data/babi-v1.2"
#endif

static int substitutions;
static void on_message(void *user, const char *message)
{
    (void)user;
    printf("message: %s\n", message);
    if (strstr(message, "en-valid-10k/qa3_train.txt is missing") &&
        strstr(message, "en-valid/qa3_train.txt"))
        substitutions++;
}

static long count_questions(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    long n = 0;
    int ch, tabs = 0;
    while ((ch = fgetc(f)) != EOF) {
        if (ch == '\t')
            tabs++;
        if (ch == '\n') {
            n += tabs == 2;
            tabs = 0;
        }
    }
    n += tabs == 2;
    fclose(f);
    return n;
}

static void check_lanes(const fwm__catbabi_split *split, uint32_t eos, int lanes, int window,
                        const uint32_t *order)
{
    fwm__catbabi_stream stream;
    fwm_error err;
    CHECK_INT(fwm__catbabi_stream_build(&stream, split, order, eos, lanes, &err), FWM_OK);
    CHECK_INT(stream.n, split->n_words + split->n_samples);
    size_t windows = fwm__catbabi_window_count(&stream, window);
    CHECK_INT(windows, (stream.lane_length + (size_t)window - 1) / (size_t)window);
    uint32_t *x = malloc((size_t)lanes * (size_t)window * sizeof *x);
    uint32_t *y = malloc((size_t)lanes * (size_t)window * sizeof *y);
    /* rebuild the stream from the windows: lane b, position p is stream position b*L + p */
    uint32_t *seen_x = calloc(stream.n, sizeof *seen_x);
    size_t covered = 0, pads = 0, bad_target = 0;
    for (size_t w = 0; w < windows; w++) {
        size_t start = w * (size_t)window, left = stream.lane_length - start;
        int len = left < (size_t)window ? (int)left : window;
        fwm__catbabi_window(&stream, start, len, 0, x, y, NULL);
        for (int b = 0; b < lanes; b++)
            for (int t = 0; t < len; t++) {
                size_t p = (size_t)b * stream.lane_length + start + (size_t)t;
                uint32_t xi = x[b * len + t], yi = y[b * len + t];
                if (p >= stream.n) {
                    pads += xi == 0 && yi == 0;
                    continue;
                }
                seen_x[p] = xi + 1;
                covered++;
                if (yi != stream.tokens[p + 1])
                    bad_target++;
            }
    }
    CHECK_INT(covered, stream.n);
    CHECK_INT(pads, stream.lane_length * (size_t)lanes - stream.n);
    CHECK_INT(bad_target, 0);
    /* the stream is the samples in order, each as <eos> + words */
    size_t p = 0, mismatches = 0;
    for (size_t k = 0; k < split->n_samples; k++) {
        size_t s = order ? order[k] : k;
        if (seen_x[p++] != eos + 1)
            mismatches++;
        for (uint32_t i = 0; i < split->lengths[s]; i++)
            if (seen_x[p++] != split->words[split->starts[s] + i] + 1)
                mismatches++;
    }
    CHECK_INT(mismatches, 0);
    CHECK_INT(stream.tokens[stream.n], eos);
    free(seen_x);
    free(x);
    free(y);
    fwm__catbabi_stream_release(&stream);
}

static int is_permutation(const uint32_t *order, size_t n)
{
    char *seen = calloc(n, 1);
    int ok = 1;
    for (size_t i = 0; i < n; i++) {
        if (order[i] >= n || seen[order[i]])
            ok = 0;
        else
            seen[order[i]] = 1;
    }
    free(seen);
    return ok;
}

int main(void)
{
    struct stat st;
    if (stat(FWM_SHARED_DATA "/en-valid-10k", &st) != 0) {
        printf("SKIP: no bAbI data at %s\n", FWM_SHARED_DATA);
        return 77;
    }
    fwm__catbabi data;
    fwm_error err;
    CHECK_INT(fwm__catbabi_load(&data, FWM_SHARED_DATA, "en-valid-10k", NULL, on_message, NULL,
                                &err),
              FWM_OK);
    CHECK_INT(substitutions, 1);
    CHECK(strcmp(data.vocab.words[0], "<pad>") == 0);
    CHECK(strcmp(data.vocab.words[1], "<eos>") == 0);
    CHECK_INT(data.pad_id, 0);
    CHECK_INT(data.eos_id, 1);
    printf("vocabulary: %u words\n", data.vocab.count);
    for (int s = 0; s < FWM__SPLIT_COUNT; s++) {
        long want = 0;
        for (int t = 1; t <= 20; t++) {
            char path[512];
            snprintf(path, sizeof path, FWM_SHARED_DATA "/en-valid-10k/qa%d_%s.txt", t,
                     fwm__split_names[s]);
            long n = count_questions(path);
            if (n < 0) { /* the substitute */
                snprintf(path, sizeof path, FWM_SHARED_DATA "/en-valid/qa%d_%s.txt", t,
                         fwm__split_names[s]);
                n = count_questions(path);
            }
            want += n;
        }
        printf("%s: %zu stories, %zu questions (counted in the files: %ld), %zu words\n",
               fwm__split_names[s], data.splits[s].n_samples, data.splits[s].n_questions, want,
               data.splits[s].n_words);
        CHECK_INT(data.splits[s].n_questions, want);
    }
    /* SOURCE.md's figures for the folders present */
    CHECK_INT(data.splits[FWM__SPLIT_VALID].n_questions, 20002);
    CHECK_INT(data.splits[FWM__SPLIT_TEST].n_questions, 20000);

    const fwm__catbabi_split *valid = &data.splits[FWM__SPLIT_VALID];
    size_t n = valid->n_samples;
    uint32_t *e0 = malloc(n * sizeof *e0), *e1 = malloc(n * sizeof *e1), *again = malloc(n * 4);
    fwm__shuffle_order(e0, n, 5, 1);
    fwm__shuffle_order(e1, n, 5, 2);
    fwm__shuffle_order(again, n, 5, 1);
    CHECK(is_permutation(e0, n));
    CHECK(is_permutation(e1, n));
    CHECK(memcmp(e0, e1, n * 4) != 0);   /* epochs differ */
    CHECK(memcmp(e0, again, n * 4) == 0); /* and are reproducible */
    check_lanes(valid, data.eos_id, 32, 200, e0);
    check_lanes(valid, data.eos_id, 7, 33, e1);
    check_lanes(valid, data.eos_id, 1, 200, NULL);
    free(e0);
    free(e1);
    free(again);
    fwm__catbabi_release(&data);
    return check_finish("test_catbabi_stream");
}
