/* test_lstm_agreement.c - the trainer's LSTM baseline computes what the runtime computes
 * (agreement_util.h): a model
 * with random weights (the initialiser's, then perturbed so every layer matters and the biases are
 * not zero) is written with fwm__model_save_spec (fwm__lstm_model_write), loaded with
 * fwm_model_load, and every lane's tokens are stepped through a runtime session; the trainer's
 * logits for the same tokens (three lanes, two windows with the state carried between them) must
 * agree within 2e-5 of max(1, |logit|). One layer, and three residual layers. The carried state
 * (h and c of every layer) is compared with the session's exported blob. */
#include "agreement_util.h"

enum { LANES = 3, WINDOW = 25, WINDOWS = 2, V = 20 };

static void run_case(unsigned layers, int residual)
{
    fwm__net_config config;
    memset(&config, 0, sizeof config);
    config.model.arch = FWM_ARCH_LSTM;
    fwm_lstm_hparams *hp = &config.model.lstm;
    hp->vocab_size = V;
    hp->embedding_length = 16;
    hp->hidden_size = 24;
    hp->layer_count = layers;
    hp->residual = residual;
    hp->forget_bias = 1;
    hp->padding_token_id = 0;
    hp->eos_token_id = 1;
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
            net->params[net->layout.offset[k] + i] =
                scale * net->params[net->layout.offset[k] + i] + 0.2f * u;
        }

    char label[32];
    snprintf(label, sizeof label, "L=%u%s", layers, residual ? " residual" : "");
    atu_check_agreement(net, "lstm", label, WINDOWS, 2e-5, 1e-5);
    fwm__net_free(net);
}

int main(void)
{
    run_case(1, 0);
    run_case(3, 1);
    run_case(2, 0);
    return check_finish("test_lstm_agreement");
}
