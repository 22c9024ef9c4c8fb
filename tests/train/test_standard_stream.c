/* test_standard_stream.c - the standard bAbI protocol's data and resets, on made-up ids (no data
 * files): fwm__catbabi_standard_split makes one sample per question out of the story's statements
 * before it (its earlier questions and answers left out) and the question with its answer;
 * fwm__catbabi_stream_build_aligned puts every sample, [<eos>] + words with targets words +
 * [<eos>], at a window boundary of the lane with the fewest windows, pads the rest with <pad>, and
 * marks the starts; fwm__net_reset_lanes resets exactly the flagged lanes to the architecture's
 * reset state (zero for the LSTM; the initial memory for the MNM), the others untouched. */
#include <stdlib.h>
#include <string.h>

#include "babi_standard.h"
#include "check.h"
#include "net.h"

enum { PAD = 0, EOS = 1, PERIOD = 2, QMARK = 3 };

static void check_split(void)
{
    /* story 1 (task 4): a b . c ? d e . f g . h ? i j ? k
     * story 2 (task 7): l ? m                                  (a question with no statements) */
    uint32_t words[] = {10, 11, PERIOD, 12, QMARK, 13, 14, PERIOD, 15, 16, PERIOD, 17, QMARK, 18,
                        19, QMARK, 20, 21, QMARK, 22};
    size_t starts[] = {0, 17};
    uint32_t lengths[] = {17, 3};
    uint8_t tasks[] = {4, 7};
    fwm__catbabi_split stories = {words, 20, starts, lengths, tasks, 2, 4, NULL};
    fwm__catbabi_split split;
    fwm_error err;
    CHECK_INT(fwm__catbabi_standard_split(&split, &stories, PERIOD, QMARK, &err), FWM_OK);
    static const uint32_t want0[] = {10, 11, PERIOD, 12, QMARK, 13};
    static const uint32_t want1[] = {10, 11, PERIOD, 14, PERIOD, 15, 16, PERIOD, 17, QMARK, 18};
    static const uint32_t want2[] = {10, 11, PERIOD, 14, PERIOD, 15, 16, PERIOD, 19, QMARK, 20};
    static const uint32_t want3[] = {21, QMARK, 22};
    const uint32_t *want[] = {want0, want1, want2, want3};
    uint32_t want_len[] = {6, 11, 11, 3};
    uint8_t want_task[] = {4, 4, 4, 7};
    CHECK_INT(split.n_samples, 4);
    CHECK_INT(split.n_questions, 4);
    CHECK_INT(split.n_words, 6 + 11 + 11 + 3);
    for (size_t k = 0; k < 4 && k < split.n_samples; k++) {
        CHECK_INT(split.lengths[k], want_len[k]);
        CHECK_INT(split.tasks[k], want_task[k]);
        CHECK(memcmp(split.words + split.starts[k], want[k], want_len[k] * sizeof(uint32_t)) == 0);
    }

    /* aligned lanes: 2 lanes, windows of 4. Samples need 2, 3, 3, 1 windows ((len + 1) / 4 up):
     * 0 -> lane 0 [0, 2), 1 -> lane 1 [0, 3), 2 -> lane 0 [2, 5), 3 -> lane 1 [3, 4) */
    fwm__catbabi_stream stream;
    CHECK_INT(fwm__catbabi_stream_build_aligned(&stream, &split, NULL, EOS, PAD, 2, 4, &err),
              FWM_OK);
    CHECK_INT(stream.lane_length, 20);
    CHECK_INT(stream.n, 40);
    size_t where[] = {0, 20 + 0, 8, 20 + 12};
    size_t starts_seen = 0;
    for (size_t p = 0; p < stream.n; p++)
        starts_seen += stream.sample_starts[p];
    CHECK_INT(starts_seen, 4);
    for (size_t k = 0; k < 4; k++) {
        size_t p = where[k];
        CHECK_INT(stream.sample_starts[p], 1);
        CHECK_INT(stream.tokens[p], EOS);
        CHECK(memcmp(stream.tokens + p + 1, want[k], want_len[k] * sizeof(uint32_t)) == 0);
        CHECK(memcmp(stream.targets + p, want[k], want_len[k] * sizeof(uint32_t)) == 0);
        CHECK_INT(stream.targets[p + want_len[k]], EOS);
        CHECK_INT(stream.tasks[p], want_task[k]);
        /* the rest of its last window: padding, no loss */
        size_t end = p + want_len[k] + 1, window_end = (end + 3) / 4 * 4;
        for (size_t q = end; q < window_end; q++) {
            CHECK_INT(stream.tokens[q], PAD);
            CHECK_INT(stream.targets[q], PAD);
        }
    }
    /* the windows: sample starts per lane at lane positions 0, 8, 12 */
    uint8_t flags[2];
    fwm__catbabi_sample_starts(&stream, 0, flags);
    CHECK(flags[0] == 1 && flags[1] == 1);
    fwm__catbabi_sample_starts(&stream, 4, flags);
    CHECK(flags[0] == 0 && flags[1] == 0);
    fwm__catbabi_sample_starts(&stream, 8, flags);
    CHECK(flags[0] == 1 && flags[1] == 0);
    fwm__catbabi_sample_starts(&stream, 12, flags);
    CHECK(flags[0] == 0 && flags[1] == 1);
    uint32_t x[8], y[8];
    fwm__catbabi_window(&stream, 8, 4, PAD, x, y, NULL);
    CHECK_INT(x[0], EOS);     /* lane 0: sample 2 starts */
    CHECK_INT(y[0], 10);
    CHECK_INT(x[4 + 0], want1[7]); /* lane 1: sample 1 goes on (its inputs 8..11) */
    CHECK_INT(y[4 + 2], want1[10]);
    CHECK_INT(y[4 + 3], EOS); /* its last input, the answer, has the target <eos> */
    fwm__catbabi_stream_release(&stream);
    /* a shuffled order is laid the same way: every sample exactly once */
    uint32_t order[] = {3, 2, 1, 0};
    CHECK_INT(fwm__catbabi_stream_build_aligned(&stream, &split, order, EOS, PAD, 3, 4, &err),
              FWM_OK);
    size_t eos_starts = 0;
    for (size_t p = 0; p < stream.n; p++)
        eos_starts += stream.sample_starts[p] && stream.tokens[p] == EOS;
    CHECK_INT(eos_starts, 4);
    fwm__catbabi_stream_release(&stream);
    /* refusals: a "?" without its answer */
    uint32_t broken[] = {10, QMARK};
    size_t broken_start = 0;
    uint32_t broken_len = 2;
    uint8_t broken_task = 1;
    fwm__catbabi_split bad = {broken, 2, &broken_start, &broken_len, &broken_task, 1, 1, NULL};
    fwm__catbabi_split out;
    CHECK_INT(fwm__catbabi_standard_split(&out, &bad, PERIOD, QMARK, &err), FWM_ERR_FORMAT);
    CHECK(strstr(err.message, "without an answer") != NULL);
    fwm__catbabi_split_release(&split);
}

static void check_reset(fwm_arch arch)
{
    fwm__net_config config;
    memset(&config, 0, sizeof config);
    config.model.arch = arch;
    if (arch == FWM_ARCH_LSTM) {
        fwm__lstm_hparams_defaults(&config.model.lstm);
        config.model.lstm.vocab_size = 9;
        config.model.lstm.embedding_length = 4;
        config.model.lstm.hidden_size = 5;
        config.model.lstm.layer_count = 2;
    } else {
        fwm_mnm_hparams *hp = &config.model.mnm;
        fwm__mnm_hparams_defaults(hp);
        hp->vocab_size = 9;
        hp->embedding_length = 4;
        hp->hidden_size = 5;
        hp->head_count = 1;
        hp->key_length = 3;
        hp->value_length = 3;
        hp->memory_hidden = 4;
        hp->memory_layers = 2;
        hp->output_length = 4;
        config.meta_weight = 1;
    }
    config.lanes = 3;
    config.window = 4;
    config.loss_mode = FWM__LOSS_LM;
    fwm__net *net = NULL;
    fwm_error err;
    CHECK_INT(fwm__net_create(&config, NULL, &net, &err), FWM_OK);
    if (!net)
        return;
    fwm__net_init_weights(net, 5);
    fwm__net_reset_state(net);
    size_t k = net->state_size, all = 3 * k;
    float *fresh = malloc(all * sizeof *fresh), *scratch = malloc(all * sizeof *scratch);
    float *before = malloc(all * sizeof *before);
    memcpy(fresh, net->state, all * sizeof *fresh);
    uint32_t xs[12] = {1, 4, 5, 6, 1, 7, 8, 2, 1, 3, 3, 4};
    fwm__net_forward(net, xs, xs, 4); /* a moved state in every lane */
    memcpy(before, net->state, all * sizeof *before);
    CHECK(memcmp(before + k, fresh + k, k * sizeof(float)) != 0);
    uint8_t flags[3] = {0, 1, 0};
    fwm__net_reset_lanes(net, flags, scratch);
    CHECK(memcmp(net->state, before, k * sizeof(float)) == 0);
    CHECK(memcmp(net->state + k, fresh + k, k * sizeof(float)) == 0);
    CHECK(memcmp(net->state + 2 * k, before + 2 * k, k * sizeof(float)) == 0);
    if (arch == FWM_ARCH_MNM) { /* its reset state is not zero: the initial memory */
        int nonzero = 0;
        for (size_t i = 0; i < k; i++)
            nonzero |= fresh[k + i] != 0;
        CHECK(nonzero);
    }
    uint8_t none[3] = {0, 0, 0};
    fwm__net_reset_lanes(net, none, scratch);
    CHECK(memcmp(net->state + 2 * k, before + 2 * k, k * sizeof(float)) == 0);
    free(fresh);
    free(scratch);
    free(before);
    fwm__net_free(net);
}

int main(void)
{
    check_split();
    check_reset(FWM_ARCH_LSTM);
    check_reset(FWM_ARCH_MNM);
    return check_finish("test_standard_stream");
}
