/* test_agreement.c - the trainer's forward pass computes what the runtime computes: a model with
 * random weights is written with fwm__model_write, loaded with fwm_model_load, and every lane's
 * tokens are stepped through a runtime session (fwm_session_step with logits); the trainer's logits
 * for the same tokens (three lanes, two windows with the state carried between them) must agree
 * within 2e-5 relative (of max(1, |logit|)): both sum in float in different orders, and each
 * read's layer norm divides those rounding differences by std(z), which is small in a random
 * model (typical worst case seen: 1e-5). Both read policies ("always", and "token" with a residual), with weights
 * large enough that the norm clamp is active. Also checks the carried state (h, c, F) through
 * fwm_session_export. A third case is a stacked FWM (fwm.block_count 3), whose carried state
 * also holds the lower layers' h and c (as the version-3 blob does). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "fwm/fwm.h"
#include "fwm_model_init.h"
#include "model_io.h"
#include "fwm_model.h"
#include <math.h>

#include "check.h"

enum { LANES = 3, WINDOW = 25, WINDOWS = 2, V = 20, QMARK = 5 };

static void run_case(int token_policy, int layers)
{
    fwm__tm_config config = {0};
    fwm_hparams *hp = &config.hp;
    hp->vocab_size = V;
    hp->embedding_length = 16;
    hp->hidden_size = 24;
    /* T = 32 takes the kernels' vector paths, T = 8 the plain loops */
    hp->memory_s = token_policy ? 32 : 8;
    hp->memory_r = token_policy ? 8 : 6;
    hp->memory_t = token_policy ? 32 : 8;
    hp->read_count = 3;
    hp->residual = token_policy;
    hp->read_policy = token_policy ? FWM_READ_ON_TOKEN : FWM_READ_ALWAYS;
    hp->read_token_id = token_policy ? QMARK : 0;
    hp->forget_bias = 1;
    hp->beta_bias = 1;
    hp->write_scale = 1.0f / 8;
    hp->layer_norm_eps = 1e-5f;
    hp->padding_token_id = 0;
    hp->eos_token_id = 1;
    hp->block_count = (uint16_t)layers;
    config.lanes = LANES;
    config.window = WINDOW;
    config.loss_mode = FWM__LOSS_LM;
    config.keep_logits = 1;
    fwm__tm_f32 *tm = NULL;
    fwm_error err;
    CHECK_INT(fwm__tm_create_f32(&config, NULL, &tm, &err), FWM_OK);
    if (!tm)
        return;
    float *tensors[FWM_MAX_TENSORS];
    for (size_t k = 0; k < tm->layout.count; k++)
        tensors[k] = tm->shell.params + tm->layout.offset[k];
    fwm__model_init_weights(hp, 42, tensors);
    /* larger writes than at initialisation, so that ||F|| reaches the clamp */
    for (size_t i = 0; i < tm->layout.size[FWM_TENSOR_write_weight]; i++)
        tensors[FWM_TENSOR_write_weight][i] *= 4;
    for (size_t i = 0; i < tm->layout.size[FWM_TENSOR_write_bias]; i++)
        tensors[FWM_TENSOR_write_bias][i] *= 4;

    char path[] = "/tmp/fwm-test-agreement-XXXXXX";
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
    CHECK_INT(fwm__model_save(path, hp, tm->shell.params, words, "agreement", NULL, 0, &err), FWM_OK);
    fwm_model *model = NULL;
    CHECK_INT(fwm_model_load(path, NULL, &model, &err), FWM_OK);
    if (!model) {
        fprintf(stderr, "load: %s\n", err.message);
        goto done;
    }
    fwm_session *sessions[LANES] = {0};
    for (int b = 0; b < LANES; b++)
        CHECK_INT(fwm_session_create(model, &sessions[b], &err), FWM_OK);
    uint32_t x[LANES * WINDOW], y[LANES * WINDOW];
    uint64_t r = 12345;
    double worst = 0;
    int clamps = 0, compared = 0;
    float logits[V];
    for (int w = 0; w < WINDOWS; w++) {
        for (int i = 0; i < LANES * WINDOW; i++) {
            r = r * 6364136223846793005ull + 1442695040888963407ull;
            x[i] = (r >> 33) % 4 == 0 ? QMARK : 1 + (uint32_t)((r >> 40) % (V - 1));
            y[i] = 1 + (uint32_t)((r >> 20) % (V - 1));
        }
        fwm__tm_forward_f32(tm, x, y, WINDOW);
        CHECK_INT(tm->shell.n_loss_rows, LANES * WINDOW);
        for (int i = 0; i < tm->shell.n_loss_rows; i++)
            clamps += tm->norms[tm->shell.loss_rows[i]] > 1.0f;
        for (int t = 0; t < WINDOW; t++)
            for (int b = 0; b < LANES; b++) {
                if (!sessions[b])
                    continue;
                CHECK_INT(fwm_session_step(sessions[b], x[b * WINDOW + t], logits, &err), FWM_OK);
                const float *mine = tm->shell.logits + (size_t)(t * LANES + b) * V; /* row = t*B + b */
                for (int j = 0; j < V; j++) {
                    double scale = fabs(logits[j]) > 1 ? fabs(logits[j]) : 1;
                    double e = fabs((double)mine[j] - logits[j]) / scale;
                    if (e > worst)
                        worst = e;
                    if (e > 2e-5 && compared < 1000000) {
                        fprintf(stderr,
                                "window %d step %d lane %d logit %d: trainer %.8g runtime %.8g\n",
                                w, t, b, j, (double)mine[j], (double)logits[j]);
                        compared = 1000000;
                    }
                }
                compared++;
            }
    }
    printf("%s, L=%d: %d steps x %d lanes compared, norm clamp active at %d, worst relative logit "
           "difference %.3g\n",
           token_policy ? "read on \"?\", residual" : "read always", layers, WINDOWS * WINDOW,
           LANES, clamps, worst);
    CHECK_LE(worst, 2e-5);
    CHECK_GE(clamps, 10);

    /* the carried state: the runtime's exported blob holds h, c, F after the last step */
    fwm_model_info info;
    fwm_model_get_info(model, &info);
    if (sessions[LANES - 1]) {
        size_t n = info.state_blob_bytes, written = 0;
        unsigned char *blob = malloc(n);
        CHECK_INT(fwm_session_export(sessions[LANES - 1], blob, n, &written, &err), FWM_OK);
        /* find the trainer's h (first floats of the lane's state) inside the blob */
        const float *state = tm->shell.state + (LANES - 1) * tm->shell.state_size;
        size_t floats = tm->shell.state_size, found = (size_t)-1;
        for (size_t off = 0; off + floats * 4 <= written && found == (size_t)-1; off += 4) {
            const float *f = (const float *)(blob + off);
            if (fabs(f[0] - state[0]) < 1e-5 && fabs(f[1] - state[1]) < 1e-5)
                found = off;
        }
        CHECK(found != (size_t)-1);
        if (found != (size_t)-1) {
            double worst_state = 0;
            const float *f = (const float *)(blob + found);
            for (size_t i = 0; i < floats; i++) {
                double e = fabs((double)f[i] - state[i]);
                if (e > worst_state)
                    worst_state = e;
            }
            printf("  carried state h, c, F%s (%zu floats): worst difference %.3g\n",
                   layers > 1 ? ", lower h, c" : "", floats,
                   worst_state);
            CHECK_LE(worst_state, 1e-5);
        }
        free(blob);
    }
    for (int b = 0; b < LANES; b++)
        fwm_session_free(sessions[b]);
done:
    fwm_model_free(model);
    unlink(path);
    fwm__tm_free_f32(tm);
}

int main(void)
{
    run_case(0, 1);
    run_case(1, 1);
    run_case(0, 3);
    return check_finish("test_agreement");
}
