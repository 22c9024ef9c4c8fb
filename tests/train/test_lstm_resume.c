/* test_lstm_resume.c - checkpoints of the LSTM baseline: a run interrupted by a checkpoint and
 * resumed in a new trainer equals an uninterrupted one bit for bit (parameters, Adam moments, every
 * layer's lane state, data position), across epoch boundaries, with every dropout on (the masks
 * are functions of seed, step and lane, so the resumed run draws the same ones) and two lane
 * groups; the checkpoint records the architecture, the LSTM's sizes and the dropout, and a run
 * that differs in any of them is refused with a message naming it. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "synthetic_data.h"
#include "trainer.h"

static fwm__train_options options(const char *run_dir)
{
    fwm__train_options o;
    memset(&o, 0, sizeof o);
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

static int same_floats(const char *what, const float *a, const float *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], sizeof(float)) != 0) {
            fprintf(stderr, "%s differs at %zu: %.9g (uninterrupted) vs %.9g (resumed)\n", what, i,
                    (double)a[i], (double)b[i]);
            return 0;
        }
    return 1;
}

/* A trainer with options `o` refuses the checkpoint at `path`, naming `what`. */
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
        size_t n = a->net->layout.total, k = (size_t)o.lanes * a->net->state_size;
        CHECK_INT(c->step, a->step);
        CHECK_INT(c->epoch, a->epoch);
        CHECK_INT(c->window_index, a->window_index);
        CHECK(same_floats("parameters", a->net->params, c->net->params, n));
        CHECK(same_floats("Adam m", a->adam_m, c->adam_m, n));
        CHECK(same_floats("Adam v", a->adam_v, c->adam_v, n));
        float *sa = malloc(k * sizeof *sa), *sc = malloc(k * sizeof *sc);
        fwm__trainer_gather_state(a, sa);
        fwm__trainer_gather_state(c, sc);
        CHECK(same_floats("lane state", sa, sc, k));
        free(sa);
        free(sc);
        CHECK(a->epoch >= 2);
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

    /* what the checkpoint records is checked */
    fwm__train_options other = options(dir_b);
    other.lstm.layer_count = 2;
    refused(other, &train, path, "model hyperparameters");
    other = options(dir_b);
    other.lstm.residual = false;
    refused(other, &train, path, "model hyperparameters");
    other = options(dir_b);
    other.dropout.recurrent = 0.5f;
    refused(other, &train, path, "dropout");
    other = options(dir_b);
    other.arch = FWM_ARCH_FWM;
    other.hp = synthetic_hparams(0);
    memset(&other.dropout, 0, sizeof other.dropout);
    refused(other, &train, path, "architecture lstm");

    fwm__trainer_free(a);
    fwm__trainer_free(c);
    fwm__catbabi_split_release(&train);
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", dir_a, dir_b);
    CHECK_INT(system(cmd), 0);
    return check_finish("test_lstm_resume");
}
