/* test_lstm_resume.c - checkpoints of the LSTM baseline (`--arch lstm`), and its model files.
 *
 * Resume: a run interrupted by a checkpoint and resumed in a new trainer equals an uninterrupted
 * one bit for bit (parameters, Adam moments, every layer's lane state, data position), across
 * epoch boundaries, with every dropout on (the masks are functions of seed, step and lane, so the
 * resumed run draws the same ones) and two lane groups; the same run without dropout ends
 * elsewhere. The checkpoint records the architecture, the LSTM's sizes and the dropout, and a run
 * that differs in any of them is refused with a message naming it. The model file written from the
 * trained parameters reads back (fwm__model_read) as the same architecture, sizes, vocabulary and
 * bits, and is not written with a weight that is not finite.
 * The round trips are resume_util.h's; this file keeps the LSTM's sizes, dropout, and what its
 * checkpoint records.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "arch_test_util.h"
#include "check.h"
#include "resume_util.h"

static fwm__train_options options(const char *run_dir)
{
    fwm__train_options o = ru_base_options(run_dir);
    o.arch = FWM_ARCH_LSTM;
    o.lstm.vocab_size = SYN_VOCAB;
    o.lstm.embedding_length = 16;
    o.lstm.hidden_size = 24;
    o.lstm.layer_count = 3;
    o.lstm.residual = true;
    o.lstm.forget_bias = 1;
    o.lstm.padding_token_id = SYN_PAD;
    o.lstm.eos_token_id = SYN_EOS;
    o.dropout.token = 0.1f;
    o.dropout.embedding = 0.2f;
    o.dropout.recurrent = 0.3f;
    o.dropout.layer = 0.2f;
    o.mode = FWM__LOSS_LM;
    return o;
}

int main(void)
{
    char dir_a[] = "/tmp/fwm-test-lstm-resume-a-XXXXXX", dir_b[] = "/tmp/fwm-test-lstm-resume-b-XXXXXX";
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
        return check_finish("test_lstm_resume");
    size_t windows = fwm__catbabi_window_count(&a->stream, o.window);
    printf("%zu windows per epoch, %ld steps, cut after %ld; %zu parameters, %zu state floats "
           "per lane\n",
           windows, total, cut, a->net->layout.parameter_count, a->net->state_size);
    CHECK((long)windows < cut);
    CHECK(a->tm == NULL); /* the FWM's model pointer is the FWM's only */
    CHECK_INT(a->net->state_size, 2 * 3 * 24);
    CHECK_INT(fwm__trainer_run(a, &err), FWM_OK);

    char path[256];
    fwm__trainer *c = ru_resumed_run(options(dir_b), &train, total, cut, dir_b, path, sizeof path);
    if (c) {
        size_t k_state = (size_t)o.lanes * a->net->state_size;
        float *sa = malloc(k_state * sizeof *sa), *sc = malloc(k_state * sizeof *sc);
        ru_check_same_run(a, c, sa, sc, k_state);
        free(sa);
        free(sc);
    }

    /* the same run without dropout ends elsewhere: the masks did something */
    fwm__train_options on = options(NULL);
    on.steps = total;
    memset(&on.dropout, 0, sizeof on.dropout);
    fwm__trainer *d = NULL;
    CHECK_INT(fwm__trainer_create(&on, &train, NULL, SYN_PAD, SYN_EOS, NULL, &d, &err), FWM_OK);
    CHECK_INT(fwm__trainer_run(d, &err), FWM_OK);
    if (d)
        CHECK(memcmp(d->net->params, a->net->params, a->net->layout.total * sizeof(float)) != 0);
    fwm__trainer_free(d);

    /* the model file of the trained parameters reads back as it was written */
    char model_path[256];
    fwm__loaded_model loaded;
    ru_model_round_trip(a, dir_a, "lstm-test", FWM_ARCH_LSTM, model_path, sizeof model_path,
                        &loaded);
    CHECK_INT(loaded.spec.lstm.embedding_length, 16);
    CHECK_INT(loaded.spec.lstm.hidden_size, 24);
    CHECK_INT(loaded.spec.lstm.layer_count, 3);
    CHECK(loaded.spec.lstm.residual);
    fwm__loaded_model_release(&loaded);
    ru_nan_refused(a, model_path, "lstm-test", a->net->layout.offset[5] + 5,
                   "blk.1.lstm.weight_hh");

    /* what the checkpoint records is checked */
    fwm__train_options other = options(dir_b);
    other.lstm.layer_count = 2;
    ru_refused(other, &train, path, "model hyperparameters");
    other = options(dir_b);
    other.lstm.residual = false;
    ru_refused(other, &train, path, "model hyperparameters");
    other = options(dir_b);
    other.dropout.recurrent = 0.5f;
    ru_refused(other, &train, path, "dropout");
    other = options(dir_b);
    other.arch = FWM_ARCH_FWM;
    other.hp = synthetic_hparams(0);
    memset(&other.dropout, 0, sizeof other.dropout);
    ru_refused(other, &train, path, "architecture lstm");

    fwm__trainer_free(a);
    fwm__trainer_free(c);
    fwm__catbabi_split_release(&train);
    ru_remove_dirs(dir_a, dir_b);
    return check_finish("test_lstm_resume");
}
