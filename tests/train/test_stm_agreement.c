/* test_stm_agreement.c - the trainer's STM computes what the runtime computes.
 *
 * Word mode through the shared check (agreement_util.h): the trainer's parameters are written with
 * fwm__model_save_spec (fwm__stm_model_write), loaded with fwm_model_load, every lane's tokens are
 * stepped through a runtime session from its reset state, and the logits of every position (three
 * lanes, two windows with the state carried between them) must agree within 5e-5 of
 * max(1, |logit|), the carried memories with the session's exported blob.
 * Sentence mode the same way over a stream of sentences: statements, questions with their
 * answers, <eos> resets, windows that end inside sentences; the positions where the trainer takes
 * its loss must be exactly those where the runtime session predicts (and whose target is not
 * padding), with the same logits; the carried state (memories, the buffered words, the buffer's
 * length and the slot flag) must equal the exported blob's.
 * Each mode with alpha = (1, 0, 0) (sentence mode's draw: no transfer) and with all three non-zero.
 * (Word mode draws (0, 0, 0), whose logits are too small here to test agreement with.)
 */
#include "agreement_util.h"

enum { LANES = 3, WINDOWS = 2, V = 20, DOT = 2, QMARK = 3 };

static fwm__net *make_net(int sentence, int window, const float *alpha)
{
    fwm__net_config config;
    memset(&config, 0, sizeof config);
    config.model.arch = FWM_ARCH_STM;
    fwm_stm_hparams *hp = &config.model.stm;
    fwm__stm_hparams_defaults(hp);
    hp->vocab_size = V;
    hp->input_mode = sentence ? FWM_STM_INPUT_SENTENCE : FWM_STM_INPUT_WORD;
    hp->embedding_length = 8;
    hp->sentence_length = 5;
    hp->memory_size = 6;
    hp->query_count = 3;
    hp->relation_length = 4;
    hp->answer_hidden = 7;
    hp->statement_end_token_id = DOT;
    hp->question_end_token_id = sentence ? QMARK : ATU_QMARK;
    hp->padding_token_id = 0;
    hp->eos_token_id = 1;
    config.lanes = LANES;
    config.window = window;
    config.loss_mode = sentence ? FWM__LOSS_QM : FWM__LOSS_LM;
    config.loss_token_id = hp->question_end_token_id;
    config.keep_logits = 1;
    config.forward_only = 1;
    fwm__net *net = NULL;
    fwm_error err;
    CHECK_INT(fwm__net_create(&config, NULL, &net, &err), FWM_OK);
    if (!net)
        return NULL;
    fwm__net_init_weights(net, 42);
    uint64_t r = 777;
    for (size_t k = 0; k < net->layout.count; k++) /* non-zero biases, logits of a few units */
        for (size_t i = 0; i < net->layout.size[k]; i++) {
            r = r * 6364136223846793005ull + 1442695040888963407ull;
            float u = (float)((r >> 40) % 20001) / 10000.0f - 1.0f;
            float *p = net->params + net->layout.offset[k] + i;
            if (strcmp(net->layout.names[k], "stm.alpha") == 0)
                *p = alpha[i];
            else if (strcmp(net->layout.names[k], "output.weight") == 0)
                *p = 3.0f * *p + 0.1f * u;
            else
                *p += 0.1f * u;
        }
    return net;
}

/* Sentence-mode tokens of one lane: sentences of 1..7 words (P = 5: some are cut), a question
 * now and then followed by its answer, an <eos> rarely. */
static uint32_t next_token(uint64_t *s, int *pending_answer)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    uint32_t u = (uint32_t)(*s >> 33);
    if (*pending_answer) {
        *pending_answer = 0;
        return 4 + u % (V - 4);
    }
    if (u % 100 < 3)
        return 1;
    if (u % 100 < 20)
        return DOT;
    if (u % 100 < 27) {
        *pending_answer = 1;
        return QMARK;
    }
    return 4 + (u >> 8) % (V - 4);
}

static void sentence_case(const char *label, const float *alpha, int window)
{
    fwm__net *net = make_net(1, window, alpha);
    if (!net)
        return;
    fwm_error err;
    char path[] = "/tmp/fwm-test-stm-agreement-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd >= 0)
        close(fd);
    const char *words[V];
    char storage[V][12];
    for (uint32_t i = 0; i < V; i++) {
        snprintf(storage[i], sizeof storage[i], "w%u", i);
        words[i] = storage[i];
    }
    words[0] = "<pad>";
    words[1] = "<eos>";
    words[DOT] = ".";
    words[QMARK] = "?";
    CHECK_INT(fwm__model_save_spec(path, &net->config.model, net->params, words, "agreement", NULL,
                                   0, &err),
              FWM_OK);
    fwm_model *model = NULL;
    CHECK_INT(fwm_model_load(path, NULL, &model, &err), FWM_OK);
    fwm_session *sessions[LANES] = {0};
    for (int b = 0; b < LANES && model; b++)
        CHECK_INT(fwm_session_create(model, &sessions[b], &err), FWM_OK);
    uint32_t *x = malloc((size_t)LANES * window * sizeof *x), *y = malloc((size_t)LANES * window * sizeof *y);
    uint32_t lane_next[LANES];
    uint64_t seeds[LANES];
    int pending[LANES];
    for (int b = 0; b < LANES; b++) {
        seeds[b] = 1000 + (uint64_t)b;
        pending[b] = 0;
        lane_next[b] = next_token(&seeds[b], &pending[b]);
    }
    float logits[V];
    double worst = 0, largest = 0;
    int compared = 0, mismatched_rows = 0;
    fwm__net_reset_state(net);
    for (int w = 0; w < WINDOWS && model; w++) {
        for (int b = 0; b < LANES; b++)
            for (int t = 0; t < window; t++) {
                x[b * window + t] = lane_next[b];
                lane_next[b] = next_token(&seeds[b], &pending[b]);
                y[b * window + t] = lane_next[b];
            }
        fwm__net_forward(net, x, y, window);
        int li = 0;
        for (int t = 0; t < window; t++)
            for (int b = 0; b < LANES; b++) {
                CHECK_INT(fwm_session_step(sessions[b], x[b * window + t], logits, &err), FWM_OK);
                int predicts = fwm_session_has_prediction(sessions[b]) && y[b * window + t] != 0;
                int row = t * LANES + b, is_loss = li < net->n_loss_rows && net->loss_rows[li] == row;
                if (predicts != is_loss) {
                    mismatched_rows++;
                    continue;
                }
                if (!is_loss)
                    continue;
                const float *mine = net->logits + (size_t)li * V;
                for (uint32_t j = 0; j < V; j++) {
                    double scale = fabs(logits[j]) > 1 ? fabs(logits[j]) : 1;
                    worst = fmax(worst, fabs((double)mine[j] - logits[j]) / scale);
                    largest = fmax(largest, fabs(logits[j]));
                }
                compared++;
                li++;
            }
        CHECK_INT(li, net->n_loss_rows);
    }
    printf("%s: %d answers of %d lanes x %d tokens compared, logits up to %.2f, worst relative "
           "logit difference %.3g\n",
           label, compared, LANES, WINDOWS * window, largest, worst);
    CHECK_INT(mismatched_rows, 0);
    CHECK_GE(compared, 10);
    CHECK_LE(worst, 5e-5);
    CHECK_GE(largest, 2.0);
    /* the carried state of every lane: memories, buffer, length, slot */
    if (model) {
        fwm_model_info info;
        fwm_model_get_info(model, &info);
        size_t n = info.state_blob_bytes, written = 0, floats = net->state_size;
        size_t mem = floats - net->config.model.stm.sentence_length - 2;
        unsigned char *blob = malloc(n);
        double worst_state = 0;
        int words_differ = 0, found_all = 1;
        for (int b = 0; b < LANES; b++) {
            CHECK_INT(fwm_session_export(sessions[b], blob, n, &written, &err), FWM_OK);
            const float *state = net->state + (size_t)b * floats;
            size_t found = (size_t)-1;
            for (size_t off = 0; off + floats * 4 <= written && found == (size_t)-1; off += 4) {
                float f0, f1;
                memcpy(&f0, blob + off, 4);
                memcpy(&f1, blob + off + 4, 4);
                if (fabs(f0 - state[0]) < 1e-5 && fabs(f1 - state[1]) < 1e-5)
                    found = off;
            }
            if (found == (size_t)-1) {
                found_all = 0;
                continue;
            }
            for (size_t i = 0; i < floats; i++) {
                if (i < mem) {
                    float f;
                    memcpy(&f, blob + found + 4 * i, 4);
                    worst_state = fmax(worst_state, fabs((double)f - state[i]));
                } else {
                    uint32_t u;
                    memcpy(&u, blob + found + 4 * i, 4);
                    words_differ += (float)u != state[i];
                }
            }
        }
        printf("  carried state (%zu floats and %zu words per lane): worst difference %.3g, "
               "%d words differ\n",
               mem, floats - mem, worst_state, words_differ);
        CHECK(found_all);
        CHECK_LE(worst_state, 1e-5);
        CHECK_INT(words_differ, 0);
        free(blob);
    }
    for (int b = 0; b < LANES; b++)
        fwm_session_free(sessions[b]);
    fwm_model_free(model);
    unlink(path);
    free(x);
    free(y);
    fwm__net_free(net);
}

int main(void)
{
    const float sentence_drawn[3] = {1, 0, 0}, all[3] = {0.9f, 0.3f, 0.2f};
    fwm__net *net = make_net(0, 12, sentence_drawn);
    if (net)
        atu_check_agreement(net, "stm", "word mode, alpha (1, 0, 0)", WINDOWS, 5e-5, 1e-5);
    fwm__net_free(net);
    net = make_net(0, 12, all);
    if (net)
        atu_check_agreement(net, "stm", "word mode, alpha (0.9, 0.3, 0.2)", WINDOWS, 5e-5, 1e-5);
    fwm__net_free(net);
    sentence_case("sentence mode, alpha (1, 0, 0)", sentence_drawn, 37);
    sentence_case("sentence mode, alpha (0.9, 0.3, 0.2)", all, 37);
    return check_finish("test_stm_agreement");
}
