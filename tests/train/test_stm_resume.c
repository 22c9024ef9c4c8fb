/* test_stm_resume.c - checkpoints of the STM (`--arch stm`), and its model files, in both input
 * modes.
 *
 * Resume: a run interrupted by a checkpoint and resumed in a new trainer equals an uninterrupted
 * one bit for bit (parameters, Adam moments, every lane's Mi, Mr and, in sentence mode, its
 * half-read sentence and answer slot, data position), across epoch boundaries, with two lane
 * groups and two threads. Sentence mode reads the synthetic episodes with "S" as the statement end
 * (sentences "k v S", questions "Q k ?" then the answer), so windows end inside sentences. The
 * checkpoint records the architecture, the STM sizes and its switches (--fix-alpha,
 * --train-output): a run that differs in any of them is refused with a message naming it. A new
 * trainer's lanes start from the reset state (the initial memories), and the initial weights are
 * fwm-init's (fwm__stm_init_weights). The model file written from the trained parameters reads
 * back (fwm__model_read) as the same architecture, sizes, vocabulary and bits; with --fix-alpha
 * alpha1 and alpha3 keep their values, and Z keeps its draw unless trained.
 * The round trips are resume_util.h's, shared with test_gfw_resume.c; this file keeps the STM's
 * sizes, modes, initial state and weights, held tensors, and what its checkpoint records.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "arch_test_util.h"
#include "check.h"
#include "resume_util.h"
#include "stm/stm_init.h"

static fwm__train_options options(const char *run_dir, int sentence)
{
    fwm__train_options o = ru_base_options(run_dir);
    o.arch = FWM_ARCH_STM;
    fwm_stm_hparams *hp = &o.stm;
    fwm__stm_hparams_defaults(hp);
    hp->vocab_size = SYN_VOCAB;
    hp->input_mode = sentence ? FWM_STM_INPUT_SENTENCE : FWM_STM_INPUT_WORD;
    hp->embedding_length = 6;
    hp->sentence_length = 3;
    hp->memory_size = 5;
    hp->query_count = 3;
    hp->relation_length = 4;
    hp->answer_hidden = 7;
    hp->statement_end_token_id = SYN_STORE;
    hp->question_end_token_id = SYN_QMARK;
    hp->padding_token_id = SYN_PAD;
    hp->eos_token_id = SYN_EOS;
    o.stm_fix_alpha = 1;
    o.mode = sentence ? FWM__LOSS_QM : FWM__LOSS_LM;
    return o;
}

static void run_mode(int sentence, const fwm__catbabi_split *train)
{
    const char *label = sentence ? "sentence" : "word";
    char dir_a[] = "/tmp/fwm-test-stm-resume-a-XXXXXX", dir_b[] = "/tmp/fwm-test-stm-resume-b-XXXXXX";
    CHECK(mkdtemp(dir_a) != NULL);
    CHECK(mkdtemp(dir_b) != NULL);
    fwm_error err;
    const long total = 45, cut = 25;

    fwm__train_options o = options(dir_a, sentence);
    o.steps = total;
    fwm__trainer *a = NULL;
    CHECK_INT(fwm__trainer_create(&o, train, NULL, SYN_PAD, SYN_EOS, NULL, &a, &err), FWM_OK);
    if (!a)
        return;
    size_t windows = fwm__catbabi_window_count(&a->stream, o.window);
    printf("%s mode: %zu windows per epoch, %ld steps, cut after %ld; %zu parameters, %zu state "
           "floats per lane\n",
           label, windows, total, cut, a->net->layout.parameter_count, a->net->state_size);
    CHECK((long)windows < cut);
    CHECK(a->tm == NULL);
    CHECK_INT(a->net->state_size, 5 * 5 * 4 + (sentence ? 3 + 2 : 0));
    /* the initial weights are fwm-init's, the lanes start from the initial memories */
    fwm__tensor_layout *L = &a->net->layout;
    float *init = calloc(L->total, sizeof *init);
    float *tensors[FWM_STM_MAX_TENSORS];
    for (size_t k = 0; k < L->count; k++)
        tensors[k] = init + L->offset[k];
    fwm__stm_init_weights(&o.stm, o.seed, tensors);
    CHECK(atu_same_floats("initial weights", init, a->net->params, L->total));
    size_t k_state = (size_t)o.lanes * a->net->state_size;
    float *sa = calloc(k_state, sizeof *sa), *sc = malloc(k_state * sizeof *sc);
    fwm__trainer_gather_state(a, sc);
    size_t k_mi = 0, k_mr = 0, k_alpha = 0, k_z = 0;
    for (size_t k = 0; k < L->count; k++) {
        k_mi = strcmp(L->names[k], "stm.item.init") == 0 ? k : k_mi;
        k_mr = strcmp(L->names[k], "stm.relation.init") == 0 ? k : k_mr;
        k_alpha = strcmp(L->names[k], "stm.alpha") == 0 ? k : k_alpha;
        k_z = strcmp(L->names[k], "output.weight") == 0 ? k : k_z;
    }
    CHECK(atu_same_floats("reset state Mi", init + L->offset[k_mi], sc, 25));
    CHECK(atu_same_floats("reset state Mr", init + L->offset[k_mr], sc + 25, 75));
    CHECK_INT(fwm__trainer_run(a, &err), FWM_OK);

    char path[256];
    fwm__trainer *c =
        ru_resumed_run(options(dir_b, sentence), train, total, cut, dir_b, path, sizeof path);
    if (c) {
        ru_check_same_run(a, c, sa, sc, k_state);
        int buffered = 0;
        for (int lane = 0; lane < o.lanes && sentence; lane++)
            buffered += sa[(size_t)lane * a->net->state_size + 100 + 3] > 0;
        if (sentence)
            printf("sentence mode: %d of %d lanes end the run inside a sentence\n", buffered,
                   o.lanes);
        /* the held tensors kept their values; the others moved */
        const float *al = a->net->params + L->offset[k_alpha];
        CHECK(al[0] == (sentence ? 1.0f : 0.0f) && al[2] == 0.0f && al[1] != 0.0f);
        if (sentence)
            CHECK(atu_same_floats("Z (held)", init + L->offset[k_z], a->net->params + L->offset[k_z],
                                  L->size[k_z]));
        CHECK(memcmp(init + L->offset[k_mr], a->net->params + L->offset[k_mr],
                     L->size[k_mr] * sizeof(float)) != 0); /* stm.relation.init trained */
    }

    /* the model file of the trained parameters reads back as it was written */
    char model_path[256];
    fwm__loaded_model loaded;
    ru_model_round_trip(a, dir_a, "stm-test", FWM_ARCH_STM, model_path, sizeof model_path, &loaded);
    CHECK_INT(loaded.spec.stm.input_mode, a->spec.stm.input_mode);
    CHECK_INT(loaded.spec.stm.memory_size, a->spec.stm.memory_size);
    CHECK_INT(loaded.spec.stm.statement_end_token_id, SYN_STORE);
    fwm__loaded_model_release(&loaded);
    ru_nan_refused(a, model_path, "stm-test", L->offset[k_mr] + 5, "stm.relation.init");

    /* what the checkpoint records is checked */
    fwm__train_options other = options(dir_b, sentence);
    other.stm.memory_size = 6;
    ru_refused(other, train, path, "model hyperparameters");
    other = options(dir_b, sentence);
    other.stm.reset_on_eos = false;
    ru_refused(other, train, path, "model hyperparameters");
    other = options(dir_b, sentence);
    other.stm_fix_alpha = 0;
    ru_refused(other, train, path, "--fix-alpha");
    other = options(dir_b, sentence);
    other.stm_train_output = 1;
    ru_refused(other, train, path, "--train-output");
    other = options(dir_b, !sentence);
    other.mode = o.mode;
    ru_refused(other, train, path, "model hyperparameters");
    other = options(dir_b, sentence);
    other.arch = FWM_ARCH_GFW;
    fwm__gfw_hparams_defaults(&other.gfw);
    other.gfw.vocab_size = SYN_VOCAB;
    other.gfw.padding_token_id = SYN_PAD;
    other.gfw.eos_token_id = SYN_EOS;
    ru_refused(other, train, path, "architecture stm");

    free(init);
    free(sa);
    free(sc);
    fwm__trainer_free(a);
    fwm__trainer_free(c);
    ru_remove_dirs(dir_a, dir_b);
}

int main(void)
{
    fwm__catbabi_split train;
    CHECK_INT(synthetic_split(&train, 60, 3), 0);
    run_mode(0, &train);
    run_mode(1, &train);
    fwm__catbabi_split_release(&train);
    return check_finish("test_stm_resume");
}
