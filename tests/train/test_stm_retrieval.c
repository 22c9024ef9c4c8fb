/* test_stm_retrieval.c - the STM learns end to end in both input modes, trained by the trainer
 * (--arch stm, Adam 3e-3, clipping 1) on the synthetic associative-retrieval task of
 * synthetic_data.h.
 *
 * Word mode reads the episodes as they are ("S k v ... Q k ? v"; QM mode: loss at "?").
 * Sentence mode reads them as a story (stm_story): a store "S k v" becomes the statement "k v ."
 * and a query "Q k ? v" the question "k ?" with its answer v (the id of "S" serves as "."), so that
 * each store is one core step and each query one answer from the relational memory; Z is held as
 * in the authors' bAbI runs. Each run must answer held-out queries far better than before training
 * and than chance (1/6), and its training loss must fall; answering with the last value stored
 * would be right for 60.5% of these queries, and sentence mode (6,000 steps, 12 s of CPU) must get
 * well beyond that. Seed 9 climbs late, and when depends on OpenBLAS's kernels: 57.5% after 2,000
 * steps and 61.2% after 3,000 on all of them; after 4,000, 91.3% on the Haswell and Zen kernels but
 * 62.2% on the AVX-512 ones (SkylakeX, Cooperlake); after 6,000, 95.1% (SkylakeX, Cooperlake) to
 * 99.6% (Prescott, Sandybridge, Haswell, Zen). Word mode (600 steps, 6 s) reaches 50% and stays
 * there for 3,000 steps. STEPS, THREADS (default 1), SEED and LR environment
 * variables override the step count, threads, seed and learning rate; INPUT (word or sentence)
 * runs one mode; TRAIN_OUTPUT and FIX_ALPHA (set) turn on --train-output and --fix-alpha. Seen: see the figures printed. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "check.h"
#include "synthetic_data.h"
#include "trainer.h"

enum { STORY_DOT = SYN_STORE };

/* The episodes of a synthetic split as sentences: "S k v" -> "k v .", "Q k ? v" -> "k ? v". */
static void stm_story(fwm__catbabi_split *split)
{
    size_t out = 0;
    for (size_t e = 0; e < split->n_samples; e++) {
        size_t start = split->starts[e], end = start + split->lengths[e], first = out;
        for (size_t i = start; i < end;) {
            const uint32_t *w = split->words + i;
            if (w[0] == SYN_STORE) {
                uint32_t k = w[1], v = w[2];
                split->words[out++] = k;
                split->words[out++] = v;
                split->words[out++] = STORY_DOT;
                i += 3;
            } else {
                uint32_t k = w[1], v = w[3];
                split->words[out++] = k;
                split->words[out++] = SYN_QMARK;
                split->words[out++] = v;
                i += 4;
            }
        }
        split->starts[e] = first;
        split->lengths[e] = (uint32_t)(out - first);
    }
    split->n_words = out;
}

static double run(int sentence, long steps, uint64_t seed, double *untrained, double *loss_start,
                  double *loss_end)
{
    fwm__catbabi_split train, valid;
    CHECK_INT(synthetic_split(&train, 4000, 1), 0);
    CHECK_INT(synthetic_split(&valid, 400, 2), 0);
    if (sentence) {
        stm_story(&train);
        stm_story(&valid);
    }
    fwm__train_options o;
    memset(&o, 0, sizeof o);
    o.arch = FWM_ARCH_STM;
    fwm_stm_hparams *hp = &o.stm;
    fwm__stm_hparams_defaults(hp);
    hp->vocab_size = SYN_VOCAB;
    hp->input_mode = sentence ? FWM_STM_INPUT_SENTENCE : FWM_STM_INPUT_WORD;
    hp->embedding_length = 16;
    hp->sentence_length = 4;
    hp->memory_size = 16;
    hp->query_count = 4;
    hp->relation_length = 8;
    hp->answer_hidden = 24;
    hp->reset_on_eos = true;
    hp->statement_end_token_id = STORY_DOT;
    hp->question_end_token_id = SYN_QMARK;
    hp->padding_token_id = SYN_PAD;
    hp->eos_token_id = SYN_EOS;
    o.max_nonfinite = 0;
    o.mode = FWM__LOSS_QM;
    o.qmark_id = SYN_QMARK;
    o.lanes = 16;
    o.window = 40;
    o.adam = fwm__adam_default_params();
    o.adam.lr = getenv("LR") ? atof(getenv("LR")) : 3e-3;
    o.stm_train_output = getenv("TRAIN_OUTPUT") != NULL;
    o.stm_fix_alpha = getenv("FIX_ALPHA") != NULL;
    o.adam.clip_norm = 1.0;
    o.steps = steps;
    o.seed = seed;
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
        tr->opt.steps = 20; /* the first 20 steps' mean loss */
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
        printf("stm %s mode, seed %llu: %ld steps (%.1f s CPU): training loss %.3f (first 20 "
               "steps) -> %.3f (last 20); held-out query accuracy %.2f%% untrained, %.2f%% "
               "trained (%ld queries); %ld windows skipped\n",
               sentence ? "sentence" : "word", (unsigned long long)seed, steps, cpu, *loss_start,
               *loss_end, 100 * *untrained, 100 * accuracy, after.count, tr->skipped_steps);
        CHECK(after.count > 1000);
        CHECK_INT(tr->skipped_steps, 0);
    }
    fwm__trainer_free(tr);
    fwm__catbabi_split_release(&train);
    fwm__catbabi_split_release(&valid);
    return accuracy;
}

int main(void)
{
    const char *env = getenv("STEPS");
    long mode_steps[2] = {600, 6000}; /* word, sentence (a sentence-mode step is cheap) */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    mode_steps[0] = mode_steps[1] = 200; /* slower under sanitizers: fewer steps, loose limits */
    int full = 0;
#else
    int full = !env;
#endif
    uint64_t seed = getenv("SEED") ? (uint64_t)atol(getenv("SEED")) : 9;
    const char *only = getenv("INPUT"); /* word or sentence: that mode alone */
    for (int sentence = 0; sentence < 2; sentence++) {
        if (only && strcmp(only, sentence ? "sentence" : "word") != 0)
            continue;
        double untrained = 0, start = 0, end = 0;
        long steps = env ? atol(env) : mode_steps[sentence];
        double trained = run(sentence, steps, seed, &untrained, &start, &end);
        CHECK_LE(untrained, 0.40);
        CHECK_LE(end, (full ? 0.6 : 0.95) * start);
        if (full) /* three times chance; sentence mode beyond the last value stored (60.5%) */
            CHECK_GE(trained, sentence ? 0.75 : 0.50);
    }
    return check_finish("test_stm_retrieval");
}
