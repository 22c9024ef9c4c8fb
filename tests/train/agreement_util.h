/* agreement_util.h - the trainer-vs-runtime agreement check every architecture's test shares
 * (test_lstm_agreement.c, test_mnm_agreement.c, test_gfw_agreement.c): the trainer model's
 * parameters are written with fwm__model_save_spec, loaded with fwm_model_load, and every lane's
 * tokens are stepped through a runtime session from its reset state; the trainer's logits for the
 * same tokens (its lanes, `windows` windows with the state carried between them) must agree within
 * `logit_tolerance` of max(1, |logit|), and the last lane's carried state with the session's
 * exported blob within `state_tolerance`. Header only; include after check.h. */
#ifndef FWM_TESTS_TRAIN_AGREEMENT_UTIL_H
#define FWM_TESTS_TRAIN_AGREEMENT_UTIL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "fwm/fwm.h"
#include "model_io.h"
#include "net.h"

/* The token "?" of the vocabulary the check writes (w0 = <pad>, w1 = <eos>, w5 = ?, others wN). */
#define ATU_QMARK 5u

/* net: an LM-mode model with keep_logits, its parameters set, its window the steps of one window
 * (V >= 6). `label` names the case in the printed line. */
static inline void atu_check_agreement(fwm__net *net, const char *arch, const char *label,
                                       int windows, double logit_tolerance,
                                       double state_tolerance)
{
    const int lanes = net->config.lanes, window = net->config.window;
    const uint32_t V = fwm__spec_vocab_size(&net->config.model);
    fwm_error err;
    char path[] = "/tmp/fwm-test-agreement-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd >= 0)
        close(fd);
    const char **words = calloc(V, sizeof *words);
    char(*storage)[12] = calloc(V, sizeof *storage);
    uint32_t *x = malloc((size_t)lanes * window * sizeof *x);
    uint32_t *y = malloc((size_t)lanes * window * sizeof *y);
    float *logits = malloc(V * sizeof *logits);
    fwm_session **sessions = calloc((size_t)lanes, sizeof *sessions);
    fwm_model *model = NULL;
    if (!words || !storage || !x || !y || !logits || !sessions) {
        CHECK(0);
        goto done;
    }
    for (uint32_t i = 0; i < V; i++) {
        snprintf(storage[i], sizeof storage[i], "w%u", i);
        words[i] = storage[i];
    }
    words[0] = "<pad>";
    words[1] = "<eos>";
    words[ATU_QMARK] = "?";
    CHECK_INT(fwm__model_save_spec(path, &net->config.model, net->params, words, "agreement",
                                   NULL, 0, &err),
              FWM_OK);
    CHECK_INT(fwm_model_load(path, NULL, &model, &err), FWM_OK);
    if (!model) {
        fprintf(stderr, "load: %s\n", err.message);
        goto done;
    }
    fwm_model_info info;
    fwm_model_get_info(model, &info);
    CHECK_STR(info.architecture, arch);
    CHECK_INT(info.session_state_floats, net->state_size);
    for (int b = 0; b < lanes; b++)
        CHECK_INT(fwm_session_create(model, &sessions[b], &err), FWM_OK);
    uint64_t s = 12345;
    double worst = 0, largest = 0;
    int reported = 0;
    fwm__net_reset_state(net); /* as a new session's (the MNM's holds its initial memory) */
    for (int w = 0; w < windows; w++) {
        for (int i = 0; i < lanes * window; i++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            x[i] = (s >> 33) % 4 == 0 ? ATU_QMARK : 1 + (uint32_t)((s >> 40) % (V - 1));
            y[i] = 1 + (uint32_t)((s >> 20) % (V - 1));
        }
        fwm__net_forward(net, x, y, window);
        CHECK_INT(net->n_loss_rows, lanes * window);
        for (int t = 0; t < window; t++)
            for (int b = 0; b < lanes; b++) {
                if (!sessions[b])
                    continue;
                CHECK_INT(fwm_session_step(sessions[b], x[b * window + t], logits, &err), FWM_OK);
                const float *mine = net->logits + (size_t)(t * lanes + b) * V;
                for (uint32_t j = 0; j < V; j++) {
                    double scale = fabs(logits[j]) > 1 ? fabs(logits[j]) : 1;
                    double e = fabs((double)mine[j] - logits[j]) / scale;
                    if (fabs(logits[j]) > largest)
                        largest = fabs(logits[j]);
                    if (e > worst)
                        worst = e;
                    if (e > logit_tolerance && !reported) {
                        fprintf(stderr,
                                "window %d step %d lane %d logit %u: trainer %.8g runtime %.8g\n",
                                w, t, b, j, (double)mine[j], (double)logits[j]);
                        reported = 1;
                    }
                }
            }
    }
    printf("%s: %d steps x %d lanes compared, logits up to %.2f, worst relative logit difference "
           "%.3g\n",
           label, windows * window, lanes, largest, worst);
    CHECK_LE(worst, logit_tolerance);
    CHECK_GE(largest, 2.0);

    /* the carried state: the exported blob holds the lane state after the last step */
    if (sessions[lanes - 1]) {
        size_t n = info.state_blob_bytes, written = 0;
        unsigned char *blob = malloc(n);
        CHECK_INT(fwm_session_export(sessions[lanes - 1], blob, n, &written, &err), FWM_OK);
        const float *state = net->state + (size_t)(lanes - 1) * net->state_size;
        size_t floats = net->state_size, found = (size_t)-1;
        for (size_t off = 0; off + floats * 4 <= written && found == (size_t)-1; off += 4) {
            float f0, f1;
            memcpy(&f0, blob + off, 4);
            memcpy(&f1, blob + off + 4, 4);
            if (fabs(f0 - state[0]) < 1e-5 && fabs(f1 - state[1]) < 1e-5)
                found = off;
        }
        CHECK(found != (size_t)-1);
        if (found != (size_t)-1) {
            double worst_state = 0;
            for (size_t i = 0; i < floats; i++) {
                float f;
                memcpy(&f, blob + found + 4 * i, 4);
                double e = fabs((double)f - state[i]);
                if (e > worst_state)
                    worst_state = e;
            }
            printf("  carried state (%zu floats): worst difference %.3g\n", floats, worst_state);
            CHECK_LE(worst_state, state_tolerance);
        }
        free(blob);
    }
done:
    if (sessions)
        for (int b = 0; b < lanes; b++)
            fwm_session_free(sessions[b]);
    fwm_model_free(model);
    unlink(path);
    free(words);
    free(storage);
    free(x);
    free(y);
    free(logits);
    free(sessions);
}

#endif
