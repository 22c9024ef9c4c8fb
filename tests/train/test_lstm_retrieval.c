/* test_lstm_retrieval.c - the LSTM baseline learns end to end: a small two-layer residual LSTM
 * trained by the trainer (--arch lstm) on the synthetic associative-retrieval task of
 * synthetic_data.h (QM mode: loss at "?") must answer held-out queries far better than before
 * training and than chance, without and with every dropout on (evaluation never drops), and its
 * training loss must fall below a limit. (It reaches what answering with the last value stored
 * gives, not what the FWM reaches on this task: remembering every pair is what the memory is
 * for.) STEPS and THREADS (default 1) environment variables override the step count and
 * threads. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "check.h"
#include "synthetic_data.h"
#include "trainer.h"

static double run(const char *name, int dropout, long steps, double *untrained, double *loss_start,
                  double *loss_end)
{
    fwm__catbabi_split train, valid;
    CHECK_INT(synthetic_split(&train, 4000, 1), 0);
    CHECK_INT(synthetic_split(&valid, 400, 2), 0);
    fwm__train_options o;
    memset(&o, 0, sizeof o);
    o.arch = FWM_ARCH_LSTM;
    o.lstm.vocab_size = SYN_VOCAB;
    o.lstm.embedding_length = 32;
    o.lstm.hidden_size = 96;
    o.lstm.layer_count = 2;
    o.lstm.residual = true;
    o.lstm.forget_bias = 1;
    o.lstm.padding_token_id = SYN_PAD;
    o.lstm.eos_token_id = SYN_EOS;
    if (dropout) {
        o.dropout.token = 0.02f;
        o.dropout.embedding = 0.05f;
        o.dropout.recurrent = 0.1f;
        o.dropout.layer = 0.05f;
    }
    o.mode = FWM__LOSS_QM;
    o.qmark_id = SYN_QMARK;
    o.lanes = 16;
    o.window = 40;
    o.adam = fwm__adam_default_params();
    o.adam.lr = 3e-3;
    o.steps = steps;
    o.seed = 7;
    o.threads = getenv("THREADS") ? atoi(getenv("THREADS")) : 1;
    o.eval.lanes = 8;
    o.eval.window = 40;
    fwm__trainer *tr = NULL;
    fwm_error err;
    double accuracy = 0;
    CHECK_INT(fwm__trainer_create(&o, &train, &valid, SYN_PAD, SYN_EOS, NULL, &tr, &err), FWM_OK);
    if (tr) {
        fwm__qa_metrics before, after;
        CHECK_INT(fwm__trainer_evaluate(tr, &before, &err), FWM_OK);
        clock_t c0 = clock();
        o.steps = 20; /* the first 20 steps' mean loss */
        tr->opt.steps = 20;
        CHECK_INT(fwm__trainer_run(tr, &err), FWM_OK);
        *loss_start = tr->running_loss / (double)tr->running_steps;
        tr->opt.steps = steps - 20;
        CHECK_INT(fwm__trainer_run(tr, &err), FWM_OK);
        tr->running_loss = tr->running_steps = 0;
        tr->opt.steps = steps;
        CHECK_INT(fwm__trainer_run(tr, &err), FWM_OK);
        *loss_end = tr->running_loss / (double)tr->running_steps; /* the last 20 steps' */
        double cpu = (double)(clock() - c0) / CLOCKS_PER_SEC;
        CHECK_INT(fwm__trainer_evaluate(tr, &after, &err), FWM_OK);
        *untrained = fwm__metrics_accuracy(&before);
        accuracy = fwm__metrics_accuracy(&after);
        printf("%s: %ld steps (%.1f s CPU): training loss %.3f (first 20 steps) -> %.3f (last 20); "
               "held-out query accuracy %.2f%% untrained, %.2f%% trained (%ld queries)\n",
               name, steps, cpu, *loss_start, *loss_end, 100 * *untrained, 100 * accuracy,
               after.count);
        CHECK(after.count > 1000);
    }
    fwm__trainer_free(tr);
    fwm__catbabi_split_release(&train);
    fwm__catbabi_split_release(&valid);
    return accuracy;
}

int main(void)
{
    const char *env = getenv("STEPS");
    long steps = env ? atol(env) : 600;
    int both = 1;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    steps = env ? steps : 200; /* slower under sanitizers: one case, fewer steps, loose limits */
    both = 0;
#endif
    double untrained = 0, start = 0, end = 0;
    double plain = run("LSTM", 0, steps, &untrained, &start, &end);
    CHECK_LE(untrained, 0.40);
    CHECK_LE(end, (both ? 0.7 : 0.95) * start); /* sanitizers: 200 steps, 2.02 -> 1.80 seen */
    if (both) {
        /* 61% seen (also after 1,500 steps): the answer "the last value stored" is right for 60.5%
         * of these queries (chance: 1/6) and the LSTM learns it and a little more */
        CHECK_GE(plain, 0.55);
        CHECK_LE(end, 1.0); /* 0.77 seen */
        double dropped = run("LSTM with dropout", 1, steps, &untrained, &start, &end);
        CHECK_GE(dropped, 0.55);
        CHECK_LE(end, 0.8 * start);
        CHECK_LE(end, 1.1); /* 0.85 seen */
    }
    return check_finish("test_lstm_retrieval");
}
