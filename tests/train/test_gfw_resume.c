/* test_gfw_resume.c - checkpoints of the Gated Fast Weights model (`--arch gfw`), and its model
 * files.
 *
 * Resume: a run interrupted by a checkpoint and resumed in a new trainer equals an uninterrupted
 * one bit for bit (parameters, Adam moments, every lane's h_F, h_S, F1 and F2, data position),
 * across epoch boundaries, with two lane groups and two threads. The checkpoint records the
 * architecture and the gfw sizes: a run that differs in any of them is refused with a message
 * naming it. A new trainer's lanes start from the reset state (all zero), and the initial weights
 * are fwm-init's (fwm__gfw_init_weights: biases zero). The model file written from the trained
 * parameters reads back (fwm__model_read) as the same architecture, sizes, vocabulary and bits.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "arch_test_util.h"
#include "check.h"
#include "model_io.h"
#include "synthetic_data.h"
#include "trainer.h"

static fwm__train_options options(const char *run_dir)
{
    fwm__train_options o;
    memset(&o, 0, sizeof o);
    o.arch = FWM_ARCH_GFW;
    fwm_gfw_hparams_defaults(&o.gfw);
    o.gfw.vocab_size = SYN_VOCAB;
    o.gfw.embedding_length = 6;
    o.gfw.fast_hidden = 7;
    o.gfw.slow_hidden = 9;
    o.gfw.slow_inner = 11;
    o.gfw.padding_token_id = SYN_PAD;
    o.gfw.eos_token_id = SYN_EOS;
    o.max_nonfinite = 0;
    o.mode = FWM__LOSS_LM;
    o.qmark_id = SYN_QMARK;
    o.lanes = 5;
    o.lane_groups = 2;
    o.window = 30;
    o.adam = fwm__adam_default_params();
    o.adam.lr = 3e-3;
    o.adam.clip_norm = 1.0;
    o.seed = 11;
    o.threads = 2;
    o.run_dir = run_dir;
    return o;
}

static void refused(fwm__train_options o, const fwm__catbabi_split *train, const char *path,
                    const char *what)
{
    fwm__trainer *t = NULL;
    fwm_error err;
    CHECK_INT(fwm__trainer_create(&o, train, NULL, SYN_PAD, SYN_EOS, NULL, &t, &err), FWM_OK);
    if (!t)
        return;
    CHECK_INT(fwm__trainer_load_checkpoint(t, path, &err), FWM_ERR_FORMAT);
    CHECK_CONTAINS(err.message, what);
    fwm__trainer_free(t);
}

int main(void)
{
    char dir_a[] = "/tmp/fwm-test-gfw-resume-a-XXXXXX", dir_b[] = "/tmp/fwm-test-gfw-resume-b-XXXXXX";
    CHECK(mkdtemp(dir_a) != NULL);
    CHECK(mkdtemp(dir_b) != NULL);
    fwm__catbabi_split train;
    CHECK_INT(synthetic_split(&train, 60, 3), 0);
    fwm_error err;
    const long total = 45, cut = 25;

    fwm__train_options o = options(dir_a);
    o.steps = total;
    fwm__trainer *a = NULL;
    CHECK_INT(fwm__trainer_create(&o, &train, NULL, SYN_PAD, SYN_EOS, NULL, &a, &err), FWM_OK);
    if (!a)
        return check_finish("test_gfw_resume");
    size_t windows = fwm__catbabi_window_count(&a->stream, o.window);
    size_t m = 7, N = 9, E = 6;
    printf("%zu windows per epoch, %ld steps, cut after %ld; %zu parameters, %zu state floats "
           "per lane\n",
           windows, total, cut, a->net->layout.parameter_count, a->net->state_size);
    CHECK((long)windows < cut);
    CHECK(a->tm == NULL);
    CHECK_INT(a->net->state_size, m + N + m * (m + E + 1) + m * (m + 1));
    CHECK_INT(a->net->layout.count, 7);
    /* the initial weights: fwm-init's (biases zero, matrices not) and the reset state */
    for (size_t k = 0; k < a->net->layout.count; k++) {
        const float *p = a->net->params + a->net->layout.offset[k];
        double sum = 0;
        for (size_t i = 0; i < a->net->layout.size[k]; i++)
            sum += fabs(p[i]);
        if (a->net->layout.cols[k] == 1)
            CHECK(sum == 0);
        else
            CHECK(sum > 0);
    }
    size_t k_state = (size_t)o.lanes * a->net->state_size;
    float *sa = calloc(k_state, sizeof *sa), *sc = malloc(k_state * sizeof *sc);
    fwm__trainer_gather_state(a, sc);
    CHECK(atu_same_floats("reset state", sa, sc, k_state));
    CHECK_INT(fwm__trainer_run(a, &err), FWM_OK);

    fwm__train_options ob = options(dir_b);
    ob.steps = cut;
    fwm__trainer *b = NULL;
    CHECK_INT(fwm__trainer_create(&ob, &train, NULL, SYN_PAD, SYN_EOS, NULL, &b, &err), FWM_OK);
    CHECK_INT(fwm__trainer_run(b, &err), FWM_OK);
    fwm__trainer_free(b);
    char path[256];
    snprintf(path, sizeof path, "%s/checkpoint.bin", dir_b);
    ob.steps = total;
    fwm__trainer *c = NULL;
    CHECK_INT(fwm__trainer_create(&ob, &train, NULL, SYN_PAD, SYN_EOS, NULL, &c, &err), FWM_OK);
    CHECK_INT(fwm__trainer_load_checkpoint(c, path, &err), FWM_OK);
    CHECK_INT(c->step, cut);
    CHECK_INT(fwm__trainer_run(c, &err), FWM_OK);
    if (c) {
        size_t n = a->net->layout.total;
        CHECK_INT(c->step, a->step);
        CHECK_INT(c->epoch, a->epoch);
        CHECK_INT(c->window_index, a->window_index);
        CHECK_INT(c->skipped_steps + a->skipped_steps, 0);
        CHECK(atu_same_floats("parameters", a->net->params, c->net->params, n));
        CHECK(atu_same_floats("Adam m", a->adam_m, c->adam_m, n));
        CHECK(atu_same_floats("Adam v", a->adam_v, c->adam_v, n));
        fwm__trainer_gather_state(a, sa);
        fwm__trainer_gather_state(c, sc);
        CHECK(atu_same_floats("lane state", sa, sc, k_state));
        size_t nonzero = 0;
        for (size_t i = 0; i < k_state; i++)
            nonzero += sa[i] != 0;
        CHECK(nonzero > k_state * 9 / 10); /* h_F, h_S and both matrices carried */
        CHECK(a->epoch >= 2);
    }

    /* the model file of the trained parameters reads back as it was written */
    char model_path[256];
    snprintf(model_path, sizeof model_path, "%s/model.gguf", dir_a);
    char words[SYN_VOCAB][8];
    const char *tokens[SYN_VOCAB];
    for (int i = 0; i < SYN_VOCAB; i++) {
        snprintf(words[i], sizeof words[i], "w%d", i);
        tokens[i] = words[i];
    }
    CHECK_INT(fwm__model_save_spec(model_path, &a->spec, a->net->params, tokens, "gfw-test", NULL,
                                   0, &err),
              FWM_OK);
    fwm__loaded_model loaded;
    CHECK_INT(fwm__model_read(model_path, &loaded, &err), FWM_OK);
    CHECK_INT(loaded.spec.arch, FWM_ARCH_GFW);
    CHECK(memcmp(&loaded.spec.gfw, &a->spec.gfw, sizeof loaded.spec.gfw) == 0);
    CHECK_INT(loaded.layout.total, a->net->layout.total);
    CHECK_INT(loaded.vocab.count, SYN_VOCAB);
    if (loaded.params)
        CHECK(atu_same_floats("model file", a->net->params, loaded.params,
                              a->net->layout.total));
    fwm__loaded_model_release(&loaded);
    a->net->params[a->net->layout.offset[3] + 5] = NAN; /* never a file with a NaN weight */
    CHECK_INT(fwm__model_save_spec(model_path, &a->spec, a->net->params, tokens, "gfw-test", NULL,
                                   0, &err),
              FWM_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(err.message, "gfw.slow.1.weight");

    /* what the checkpoint records is checked */
    fwm__train_options other = options(dir_b);
    other.gfw.slow_inner = 12;
    refused(other, &train, path, "model hyperparameters");
    other = options(dir_b);
    other.gfw.fast_hidden = 8;
    refused(other, &train, path, "model hyperparameters");
    other = options(dir_b);
    other.gfw.layer_norm_epsilon = 1e-6f;
    refused(other, &train, path, "model hyperparameters");
    other = options(dir_b);
    other.arch = FWM_ARCH_FWM;
    other.hp = synthetic_hparams(0);
    refused(other, &train, path, "architecture gfw");

    free(sa);
    free(sc);
    fwm__trainer_free(a);
    fwm__trainer_free(c);
    fwm__catbabi_split_release(&train);
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", dir_a, dir_b);
    CHECK_INT(system(cmd), 0);
    return check_finish("test_gfw_resume");
}
