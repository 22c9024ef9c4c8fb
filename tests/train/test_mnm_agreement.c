/* test_mnm_agreement.c - the trainer's MNM baseline computes what the runtime computes: a model
 * with random weights (the initialiser's, then perturbed so every part matters, the memory's
 * writes are large and the biases are not zero) is written with fwm__model_save_spec
 * (fwm_mnm_model_write), loaded with fwm_model_load, and every lane's tokens are stepped through a
 * runtime session from its reset state (the initial memory); the trainer's logits for the same
 * tokens (three lanes, two windows with the state carried between them) must agree within 5e-5 of
 * max(1, |logit|). One to three memory layers, one and three heads. The carried state (h, c, r and
 * every memory layer) is compared with the session's exported blob. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "fwm/fwm.h"
#include "model_io.h"
#include "net.h"

enum { LANES = 3, WINDOW = 25, WINDOWS = 2, V = 20, QMARK = 5 };

static void run_case(unsigned layers, unsigned heads)
{
    fwm__net_config config;
    memset(&config, 0, sizeof config);
    config.model.arch = FWM_ARCH_MNM;
    fwm_mnm_hparams *hp = &config.model.mnm;
    hp->vocab_size = V;
    hp->embedding_length = 16;
    hp->hidden_size = 24;
    hp->head_count = heads;
    hp->key_length = 12;
    hp->value_length = 10;
    hp->memory_hidden = 14;
    hp->memory_layers = layers;
    hp->output_length = 18;
    hp->forget_bias = 0.5f;
    hp->padding_token_id = 0;
    hp->eos_token_id = 1;
    config.meta_weight = 1;
    config.lanes = LANES;
    config.window = WINDOW;
    config.loss_mode = FWM__LOSS_LM;
    config.keep_logits = 1;
    fwm__net *net = NULL;
    fwm_error err;
    CHECK_INT(fwm__net_create(&config, NULL, &net, &err), FWM_OK);
    if (!net)
        return;
    fwm__net_init_weights(net, 42);
    uint64_t r = 777;
    for (size_t k = 0; k < net->layout.count; k++) /* larger weights, non-zero output bias */
        for (size_t i = 0; i < net->layout.size[k]; i++) {
            r = r * 6364136223846793005ull + 1442695040888963407ull;
            float u = (float)((r >> 40) % 20001) / 10000.0f - 1.0f;
            float scale = k + 2 == net->layout.count ? 20.0f : 3.0f; /* output.weight: logits ~5 */
            if (k == 7) /* mnm.rate.bias 0.6: beta mostly above 1/2, large writes */
                scale = 0, u = 3.0f;
            net->params[net->layout.offset[k] + i] =
                scale * net->params[net->layout.offset[k] + i] + 0.2f * u;
        }

    char path[] = "/tmp/fwm-test-lstm-agreement-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    const char *words[V];
    char storage[V][8];
    for (int i = 0; i < V; i++) {
        snprintf(storage[i], sizeof storage[i], "w%d", i);
        words[i] = storage[i];
    }
    words[0] = "<pad>";
    words[1] = "<eos>";
    words[QMARK] = "?";
    CHECK_INT(fwm__model_save_spec(path, &config.model, net->params, words, "agreement", NULL, 0,
                                   &err),
              FWM_OK);
    fwm_model *model = NULL;
    CHECK_INT(fwm_model_load(path, NULL, &model, &err), FWM_OK);
    if (!model) {
        fprintf(stderr, "load: %s\n", err.message);
        goto done;
    }
    fwm_model_info info;
    fwm_model_get_info(model, &info);
    CHECK_STR(info.architecture, "mnm");
    CHECK_INT(info.session_state_floats, net->state_size);
    fwm_session *sessions[LANES] = {0};
    for (int b = 0; b < LANES; b++)
        CHECK_INT(fwm_session_create(model, &sessions[b], &err), FWM_OK);
    uint32_t x[LANES * WINDOW], y[LANES * WINDOW];
    uint64_t s = 12345;
    double worst = 0, largest = 0;
    int reported = 0;
    float logits[V];
    for (int w = 0; w < WINDOWS; w++) {
        for (int i = 0; i < LANES * WINDOW; i++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            x[i] = (s >> 33) % 4 == 0 ? QMARK : 1 + (uint32_t)((s >> 40) % (V - 1));
            y[i] = 1 + (uint32_t)((s >> 20) % (V - 1));
        }
        if (w == 0)
            fwm__net_reset_state(net); /* M = the initial memory, as a new session's */
        fwm__net_forward(net, x, y, WINDOW);
        CHECK_INT(net->n_loss_rows, LANES * WINDOW);
        for (int t = 0; t < WINDOW; t++)
            for (int b = 0; b < LANES; b++) {
                if (!sessions[b])
                    continue;
                CHECK_INT(fwm_session_step(sessions[b], x[b * WINDOW + t], logits, &err), FWM_OK);
                const float *mine = net->logits + (size_t)(t * LANES + b) * V;
                for (int j = 0; j < V; j++) {
                    double scale = fabs(logits[j]) > 1 ? fabs(logits[j]) : 1;
                    double e = fabs((double)mine[j] - logits[j]) / scale;
                    if (fabs(logits[j]) > largest)
                        largest = fabs(logits[j]);
                    if (e > worst)
                        worst = e;
                    if (e > 5e-5 && !reported) {
                        fprintf(stderr,
                                "window %d step %d lane %d logit %d: trainer %.8g runtime %.8g\n",
                                w, t, b, j, (double)mine[j], (double)logits[j]);
                        reported = 1;
                    }
                }
            }
    }
    printf("Lm=%u heads=%u: %d steps x %d lanes compared, logits up to %.2f, worst relative logit "
           "difference %.3g\n",
           layers, heads, WINDOWS * WINDOW, LANES, largest, worst);
    CHECK_LE(worst, 5e-5); /* 1.3e-5 seen */
    CHECK_GE(largest, 2.0);

    /* the carried state: the exported blob holds h, c, r and the memory after the last step */
    if (sessions[LANES - 1]) {
        size_t n = info.state_blob_bytes, written = 0;
        unsigned char *blob = malloc(n);
        CHECK_INT(fwm_session_export(sessions[LANES - 1], blob, n, &written, &err), FWM_OK);
        const float *state = net->state + (LANES - 1) * net->state_size;
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
            printf("  carried state h, c, r, M (%zu floats): worst difference %.3g\n", floats,
                   worst_state);
            CHECK_LE(worst_state, 1e-5); /* 5.3e-7 seen */
        }
        free(blob);
    }
    for (int b = 0; b < LANES; b++)
        fwm_session_free(sessions[b]);
done:
    fwm_model_free(model);
    unlink(path);
    fwm__net_free(net);
}

int main(void)
{
    run_case(3, 3);
    run_case(1, 1);
    run_case(2, 3);
    return check_finish("test_mnm_agreement");
}
