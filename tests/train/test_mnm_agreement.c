/* test_mnm_agreement.c - the trainer's MNM baseline computes what the runtime computes
 * (agreement_util.h): a model
 * with random weights (the initialiser's, then perturbed so every part matters, the memory's
 * writes are large and the biases are not zero) is written with fwm__model_save_spec
 * (fwm__mnm_model_write), loaded with fwm_model_load, and every lane's tokens are stepped through a
 * runtime session from its reset state (the initial memory); the trainer's logits for the same
 * tokens (three lanes, two windows with the state carried between them) must agree within 5e-5 of
 * max(1, |logit|). One to three memory layers, one and three heads. The carried state (h, c, r and
 * every memory layer) is compared with the session's exported blob. */
#include "agreement_util.h"

enum { LANES = 3, WINDOW = 25, WINDOWS = 2, V = 20 };

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

    char label[32];
    snprintf(label, sizeof label, "Lm=%u heads=%u", layers, heads);
    atu_check_agreement(net, "mnm", label, WINDOWS, 5e-5, 1e-5); /* 1.3e-5, 5.3e-7 seen */
    fwm__net_free(net);
}

int main(void)
{
    run_case(3, 3);
    run_case(1, 1);
    run_case(2, 3);
    return check_finish("test_mnm_agreement");
}
