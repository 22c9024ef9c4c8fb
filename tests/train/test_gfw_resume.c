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
 * The round trips are resume_util.h's, shared with test_stm_resume.c; this file keeps the gfw's
 * sizes, initial state and weights, and what its checkpoint records.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "arch_test_util.h"
#include "check.h"
#include "resume_util.h"

static fwm__train_options options(const char *run_dir)
{
    fwm__train_options o = ru_base_options(run_dir);
    o.arch = FWM_ARCH_GFW;
    fwm__gfw_hparams_defaults(&o.gfw);
    o.gfw.vocab_size = SYN_VOCAB;
    o.gfw.embedding_length = 6;
    o.gfw.fast_hidden = 7;
    o.gfw.slow_hidden = 9;
    o.gfw.slow_inner = 11;
    o.gfw.padding_token_id = SYN_PAD;
    o.gfw.eos_token_id = SYN_EOS;
    o.mode = FWM__LOSS_LM;
    return o;
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

    char path[256];
    fwm__trainer *c = ru_resumed_run(options(dir_b), &train, total, cut, dir_b, path, sizeof path);
    if (c) {
        ru_check_same_run(a, c, sa, sc, k_state);
        size_t nonzero = 0;
        for (size_t i = 0; i < k_state; i++)
            nonzero += sa[i] != 0;
        CHECK(nonzero > k_state * 9 / 10); /* h_F, h_S and both matrices carried */
    }

    /* the model file of the trained parameters reads back as it was written */
    char model_path[256];
    fwm__loaded_model loaded;
    ru_model_round_trip(a, dir_a, "gfw-test", FWM_ARCH_GFW, model_path, sizeof model_path, &loaded);
    CHECK(memcmp(&loaded.spec.gfw, &a->spec.gfw, sizeof loaded.spec.gfw) == 0);
    fwm__loaded_model_release(&loaded);
    ru_nan_refused(a, model_path, "gfw-test", a->net->layout.offset[3] + 5, "gfw.slow.1.weight");

    /* what the checkpoint records is checked */
    fwm__train_options other = options(dir_b);
    other.gfw.slow_inner = 12;
    ru_refused(other, &train, path, "model hyperparameters");
    other = options(dir_b);
    other.gfw.fast_hidden = 8;
    ru_refused(other, &train, path, "model hyperparameters");
    other = options(dir_b);
    other.gfw.layer_norm_epsilon = 1e-6f;
    ru_refused(other, &train, path, "model hyperparameters");
    other = options(dir_b);
    other.arch = FWM_ARCH_FWM;
    other.hp = synthetic_hparams(0);
    ru_refused(other, &train, path, "architecture gfw");

    free(sa);
    free(sc);
    fwm__trainer_free(a);
    fwm__trainer_free(c);
    fwm__catbabi_split_release(&train);
    ru_remove_dirs(dir_a, dir_b);
    return check_finish("test_gfw_resume");
}
