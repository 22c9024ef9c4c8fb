/* test_resume.c - checkpoints of the FWM (`--arch fwm`, the default), and its model files.
 *
 * Resume: a run interrupted by a checkpoint and resumed in a new trainer equals an uninterrupted
 * run bit for bit (parameters, Adam moments, lane states, data position, tokens seen), across
 * epoch boundaries, with a warmup that the cut falls after. A checkpoint of other options is
 * refused naming the difference (the seed); a damaged one fails its checksum and a truncated one
 * is refused as truncated. The model file written from the trained parameters reads back
 * (fwm__model_read) as the same architecture, sizes, vocabulary and bits, and is not written with
 * a weight that is not finite.
 * The trainer's handle lays the FWM's tensors out where its own model does (the paper's sizes
 * and the test's). The round trips are resume_util.h's; this file keeps the FWM's sizes and options, and the
 * damaged and truncated checkpoints.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "arch_test_util.h"
#include "check.h"
#include "fwm_model_shape.h"
#include "resume_util.h"

static fwm__train_options options(const char *run_dir)
{
    fwm__train_options o = ru_base_options(run_dir);
    o.hp = synthetic_hparams(0);
    o.mode = FWM__LOSS_LM;
    o.lanes = 4;
    o.lane_groups = 0;
    o.adam.warmup_steps = 5;
    return o;
}

/* The trainer's handle lays the FWM's tensors out (fwm__tensor_layout_init, over FWM_ARCH_LIST)
 * exactly where the FWM's own model puts them (fwm__param_layout_init): the checkpoint and model
 * file bytes depend on it. */
static void layouts_agree(const fwm_hparams *hp)
{
    fwm__param_layout own;
    fwm__param_layout_init(&own, hp);
    fwm__tensor_layout handle;
    fwm__tensor_layout_init(&handle, &(fwm__model_spec){.arch = FWM_ARCH_FWM, .fwm = *hp});
    CHECK_INT(handle.count, FWM_TENSOR_COUNT);
    for (size_t i = 0; i < FWM_TENSOR_COUNT && i < handle.count; i++) {
        CHECK_STR(handle.names[i], fwm__tensor_names[i]);
        CHECK_U64(handle.rows[i], own.rows[i]);
        CHECK_U64(handle.cols[i], own.cols[i]);
        CHECK_U64(handle.offset[i], own.offset[i]);
    }
    CHECK_U64(handle.total, own.total);
    CHECK_U64(handle.parameter_count, own.parameter_count);
}

int main(void)
{
    fwm_hparams paper;
    fwm__hparams_defaults(&paper);
    paper.vocab_size = 180;
    layouts_agree(&paper);
    fwm_hparams small = synthetic_hparams(0);
    layouts_agree(&small);

    char dir_a[] = "/tmp/fwm-test-resume-a-XXXXXX", dir_b[] = "/tmp/fwm-test-resume-b-XXXXXX";
    CHECK(mkdtemp(dir_a) != NULL);
    CHECK(mkdtemp(dir_b) != NULL);
    fwm__catbabi_split train;
    CHECK_INT(synthetic_split(&train, 60, 3), 0);
    fwm_error err;
    const long total = 45, cut = 25;

    /* uninterrupted */
    fwm__train_options o = options(dir_a);
    o.steps = total;
    fwm__trainer *a = NULL;
    CHECK_INT(fwm__trainer_create(&o, &train, NULL, SYN_PAD, SYN_EOS, NULL, &a, &err), FWM_OK);
    if (!a)
        return check_finish("test_resume");
    size_t windows = fwm__catbabi_window_count(&a->stream, o.window);
    printf("%zu windows per epoch, %ld steps, cut after %ld\n", windows, total, cut);
    CHECK((long)windows < cut); /* the run crosses epoch boundaries before and after the cut */
    CHECK(a->tm != NULL);
    CHECK_INT(fwm__trainer_run(a, &err), FWM_OK);

    /* interrupted at `cut`, resumed by a new trainer from the checkpoint */
    char path[256];
    fwm__trainer *c = ru_resumed_run(options(dir_b), &train, total, cut, dir_b, path, sizeof path);
    if (c) {
        size_t k_state = (size_t)o.lanes * a->tm->shell.state_size;
        float *sa = malloc(k_state * sizeof *sa), *sc = malloc(k_state * sizeof *sc);
        ru_check_same_run(a, c, sa, sc, k_state);
        CHECK_INT(c->tokens, a->tokens);
        CHECK(atu_same_floats("FWM lane state", a->tm->shell.state, c->tm->shell.state, k_state));
        free(sa);
        free(sc);
    }

    /* the model file of the trained parameters reads back as it was written */
    char model_path[256];
    fwm__loaded_model loaded;
    ru_model_round_trip(a, dir_a, "fwm-test", FWM_ARCH_FWM, model_path, sizeof model_path, &loaded);
    CHECK_INT(loaded.spec.fwm.hidden_size, 64);
    CHECK_INT(loaded.spec.fwm.memory_s, 16);
    CHECK_INT(loaded.spec.fwm.read_count, 2);
    fwm__loaded_model_release(&loaded);
    ru_nan_refused(a, model_path, "fwm-test", a->net->layout.offset[2] + 5, "lstm.weight_hh");

    /* a checkpoint of other options is refused, naming the difference */
    fwm__train_options od = options(dir_b);
    od.seed = 12;
    ru_refused(od, &train, path, "seed");
    /* a damaged checkpoint is refused */
    FILE *f = fopen(path, "r+b");
    CHECK(f != NULL);
    if (f) {
        fseek(f, 1000, SEEK_SET);
        int ch = fgetc(f);
        fseek(f, 1000, SEEK_SET);
        fputc(ch ^ 0x55, f);
        fclose(f);
    }
    fwm__train_options ob = options(dir_b);
    ob.steps = total;
    fwm__trainer *e = NULL;
    CHECK_INT(fwm__trainer_create(&ob, &train, NULL, SYN_PAD, SYN_EOS, NULL, &e, &err), FWM_OK);
    if (e) {
        CHECK_INT(fwm__trainer_load_checkpoint(e, path, &err), FWM_ERR_CHECKSUM);
        CHECK_CONTAINS(err.message, "checksum");
        /* a truncated one too */
        CHECK_INT(truncate(path, 4000), 0);
        CHECK_INT(fwm__trainer_load_checkpoint(e, path, &err), FWM_ERR_FORMAT);
        CHECK_CONTAINS(err.message, "truncated");
    }

    fwm__trainer_free(a);
    fwm__trainer_free(c);
    fwm__trainer_free(e);
    fwm__catbabi_split_release(&train);
    ru_remove_dirs(dir_a, dir_b);
    return check_finish("test_resume");
}
