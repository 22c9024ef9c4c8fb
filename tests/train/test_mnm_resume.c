/* test_mnm_resume.c - checkpoints and non-finite steps of the MNM baseline (`--arch mnm`).
 *
 * Resume: a run interrupted by a checkpoint and resumed in a new trainer equals an uninterrupted
 * one bit for bit (parameters, Adam moments, every lane's h, c, r and memory, data position),
 * across epoch boundaries, with two lane groups; the initial memory is not trained (it ends as it
 * began, and the Adam moments of it stay zero); the checkpoint records the architecture, the MNM's
 * sizes and the meta weight, and a run that differs in any of them is refused with a message
 * naming it. A new trainer's lanes start from the reset state (M = the initial memory).
 * Non-finite steps: a gradient made NaN at one step is reported (the step, the tensor), the window
 * is skipped (no update; the lanes' state as before it), and training goes on; with
 * max_nonfinite 0 the run stops there with an error naming step and tensor; a weight that is NaN
 * makes every window's loss NaN, and the run stops after max_nonfinite + 1 of them. A checkpoint or a
 * model file is never written when a parameter is not finite: the write fails naming the tensor,
 * and an existing checkpoint stays as it was. The model file written from the trained parameters
 * reads back (fwm__model_read) as the same architecture, sizes, vocabulary and bits.
 * The round trips are resume_util.h's; this file keeps the MNM's sizes, initial state, untrained
 * initial memory, meta weight, non-finite steps, and what its checkpoint records.
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
    o.arch = FWM_ARCH_MNM;
    o.mnm.vocab_size = SYN_VOCAB;
    o.mnm.embedding_length = 12;
    o.mnm.hidden_size = 20;
    o.mnm.head_count = 2;
    o.mnm.key_length = 8;
    o.mnm.value_length = 6;
    o.mnm.memory_hidden = 10;
    o.mnm.memory_layers = 3;
    o.mnm.output_length = 16;
    o.mnm.padding_token_id = SYN_PAD;
    o.mnm.eos_token_id = SYN_EOS;
    o.meta_weight = 1.0;
    o.max_nonfinite = 10;
    o.mode = FWM__LOSS_LM;
    o.segment = 7;
    return o;
}

static int file_bytes(const char *path, unsigned char **out, long *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    fseek(f, 0, SEEK_END);
    *size = ftell(f);
    fseek(f, 0, SEEK_SET);
    *out = malloc((size_t)*size + 1);
    int ok = *out && fread(*out, 1, (size_t)*size, f) == (size_t)*size;
    fclose(f);
    return ok ? 0 : -1;
}

static void nonfinite_steps(const fwm__catbabi_split *train, const char *dir)
{
    fwm_error err;
    /* reference: 6 plain steps */
    fwm__train_options o = options(NULL);
    o.lane_groups = 1;
    o.steps = 3;
    fwm__trainer *ref = NULL, *t = NULL;
    CHECK_INT(fwm__trainer_create(&o, train, NULL, SYN_PAD, SYN_EOS, NULL, &ref, &err), FWM_OK);
    CHECK_INT(fwm__trainer_create(&o, train, NULL, SYN_PAD, SYN_EOS, NULL, &t, &err), FWM_OK);
    if (!ref || !t)
        return;
    size_t n = ref->net->layout.total, k = (size_t)o.lanes * ref->net->state_size;
    CHECK_INT(fwm__trainer_run(ref, &err), FWM_OK); /* steps 1..3 */
    t->opt.fault_nan_step = 4; /* the 4th step's gradient is NaN */
    t->opt.steps = 3;
    CHECK_INT(fwm__trainer_run(t, &err), FWM_OK);
    float *params = malloc(n * sizeof *params), *state = malloc(k * sizeof *state);
    float *state_after = malloc(k * sizeof *state_after);
    memcpy(params, t->net->params, n * sizeof *params);
    fwm__trainer_gather_state(t, state);
    t->opt.steps = 4;
    size_t window_before = t->window_index;
    CHECK_INT(fwm__trainer_step(t, &err), FWM_OK); /* the NaN step: skipped */
    printf("after the NaN step: step %ld, skipped %ld, window %zu (was %zu)\n", t->step,
           t->skipped_steps, t->window_index, window_before);
    CHECK_INT(t->step, 3);
    CHECK_INT(t->skipped_steps, 1);
    CHECK_INT(t->window_index, window_before + 1);
    CHECK(atu_same_floats("parameters after a skipped step", params, t->net->params, n));
    fwm__trainer_gather_state(t, state_after);
    CHECK(atu_same_floats("state after a skipped step", state, state_after, k));
    CHECK_INT(fwm__trainer_run(t, &err), FWM_OK); /* and training goes on */
    CHECK_INT(t->step, 4);
    CHECK(fwm__first_nonfinite(&t->net->layout, t->net->params) < 0);
    CHECK(memcmp(params, t->net->params, n * sizeof *params) != 0);
    fwm__trainer_free(t);
    fwm__trainer_free(ref);

    /* max_nonfinite 0: the first such step stops the run, naming it */
    o.max_nonfinite = 0;
    o.fault_nan_step = 2;
    o.steps = 5;
    CHECK_INT(fwm__trainer_create(&o, train, NULL, SYN_PAD, SYN_EOS, NULL, &t, &err), FWM_OK);
    if (t) {
        CHECK_INT(fwm__trainer_run(t, &err), FWM_ERR_INVALID_ARGUMENT);
        printf("stop message: %s\n", err.message);
        CHECK_CONTAINS(err.message, "step 2");
        CHECK_CONTAINS(err.message, "output.bias");
        CHECK_CONTAINS(err.message, "not finite");
        CHECK_INT(t->step, 1);
        CHECK(fwm__first_nonfinite(&t->net->layout, t->net->params) < 0);
    }

    /* never a checkpoint or model with values that are not finite */
    if (t) {
        char path[300], model[300];
        snprintf(path, sizeof path, "%s/checkpoint.bin", dir);
        snprintf(model, sizeof model, "%s/model.gguf", dir);
        CHECK_INT(fwm__trainer_save_checkpoint(t, path, &err), FWM_OK);
        unsigned char *before = NULL, *after = NULL;
        long size_before = 0, size_after = 0;
        CHECK_INT(file_bytes(path, &before, &size_before), 0);
        size_t at = t->net->layout.offset[4] + 3; /* mnm.interact.weight */
        t->net->params[at] = NAN;
        CHECK_INT(fwm__trainer_save_checkpoint(t, path, &err), FWM_ERR_INVALID_ARGUMENT);
        printf("checkpoint refused: %s\n", err.message);
        CHECK_CONTAINS(err.message, "mnm.interact.weight");
        CHECK_INT(file_bytes(path, &after, &size_after), 0);
        CHECK(size_before == size_after && before && after &&
              memcmp(before, after, (size_t)size_before) == 0);
        char tmp[320];
        snprintf(tmp, sizeof tmp, "%s.tmp", path);
        CHECK(access(tmp, F_OK) != 0);
        ru_nan_refused(t, model, "nan", at, "mnm.interact.weight"); /* nor the model file */
        CHECK(access(model, F_OK) != 0);
        t->net->params[at] = INFINITY;
        CHECK_INT(fwm__trainer_save_checkpoint(t, path, &err), FWM_ERR_INVALID_ARGUMENT);
        t->net->params[at] = 0;
        t->adam_v[t->net->layout.offset[2]] = NAN;
        CHECK_INT(fwm__trainer_save_checkpoint(t, path, &err), FWM_ERR_INVALID_ARGUMENT);
        CHECK_CONTAINS(err.message, "lstm.weight_hh");
        t->adam_v[t->net->layout.offset[2]] = 0;
        CHECK_INT(ru_save_model(t, model, "ok", &err), FWM_OK);
        free(before);
        free(after);
    }
    fwm__trainer_free(t);

    /* a weight that is not finite: every window's loss is NaN; after max_nonfinite + 1 windows in
     * a row the run stops, naming the loss */
    o.max_nonfinite = 2;
    o.fault_nan_step = 0;
    CHECK_INT(fwm__trainer_create(&o, train, NULL, SYN_PAD, SYN_EOS, NULL, &t, &err), FWM_OK);
    if (t) {
        t->net->params[t->net->layout.offset[2]] = NAN; /* lstm.weight_hh */
        CHECK_INT(fwm__trainer_run(t, &err), FWM_ERR_INVALID_ARGUMENT);
        printf("stop message: %s\n", err.message);
        CHECK_CONTAINS(err.message, "3 windows in a row");
        CHECK_CONTAINS(err.message, "the loss");
        CHECK_INT(t->step, 0);
        CHECK_INT(t->skipped_steps, 3);
        CHECK_INT(t->window_index, 3);
    }
    fwm__trainer_free(t);
    free(params);
    free(state);
    free(state_after);
}

int main(void)
{
    char dir_a[] = "/tmp/fwm-test-mnm-resume-a-XXXXXX", dir_b[] = "/tmp/fwm-test-mnm-resume-b-XXXXXX";
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
        return check_finish("test_mnm_resume");
    size_t windows = fwm__catbabi_window_count(&a->stream, o.window);
    size_t memory = 10 * 8 + 10 * 10 + 6 * 10;
    printf("%zu windows per epoch, %ld steps, cut after %ld; %zu parameters, %zu state floats "
           "per lane\n",
           windows, total, cut, a->net->layout.parameter_count, a->net->state_size);
    CHECK((long)windows < cut);
    CHECK(a->tm == NULL);
    CHECK_INT(a->net->state_size, 2 * 20 + 6 + memory);
    CHECK_INT(a->net->layout.count, 17);
    /* a new trainer's lanes: h = c = r = 0, M = the initial memory */
    float *init = malloc(memory * sizeof *init);
    for (size_t l = 0, at = 0; l < 3; l++) {
        memcpy(init + at, a->net->params + a->net->layout.offset[10 + l],
               a->net->layout.size[10 + l] * sizeof *init);
        at += a->net->layout.size[10 + l];
    }
    int reset_ok = 1;
    for (int g = 0; g < 2; g++) {
        const fwm__net *net = a->group_net[g];
        for (int b = 0; b < net->config.lanes; b++) {
            const float *s = net->state + (size_t)b * net->state_size;
            for (size_t i = 0; i < 46; i++)
                reset_ok &= s[i] == 0;
            reset_ok &= memcmp(s + 46, init, memory * sizeof *init) == 0;
        }
    }
    CHECK(reset_ok);
    CHECK(init[0] != 0);
    CHECK_INT(fwm__trainer_run(a, &err), FWM_OK);
    /* the initial memory is not trained */
    for (size_t l = 0, at = 0; l < 3; l++) {
        size_t off = a->net->layout.offset[10 + l], size = a->net->layout.size[10 + l];
        CHECK(memcmp(a->net->params + off, init + at, size * sizeof *init) == 0);
        for (size_t i = 0; i < size; i++)
            if (a->adam_m[off + i] != 0 || a->adam_v[off + i] != 0) {
                CHECK(0);
                break;
            }
        at += size;
    }
    printf("after %ld steps: loss %.4f, meta %.4f\n", a->step, a->last_loss, a->last_meta);
    CHECK(a->last_meta > 0 && isfinite(a->last_meta));

    char path[256];
    fwm__trainer *c = ru_resumed_run(options(dir_b), &train, total, cut, dir_b, path, sizeof path);
    if (c) {
        size_t k_state = (size_t)o.lanes * a->net->state_size;
        float *sa = malloc(k_state * sizeof *sa), *sc = malloc(k_state * sizeof *sc);
        ru_check_same_run(a, c, sa, sc, k_state);
        /* the carried memory moved away from the initial one */
        CHECK(memcmp(sa + 46, init, memory * sizeof *init) != 0);
        free(sa);
        free(sc);
    }

    /* the model file of the trained parameters reads back as it was written */
    char model_path[256];
    fwm__loaded_model loaded;
    ru_model_round_trip(a, dir_a, "mnm-test", FWM_ARCH_MNM, model_path, sizeof model_path,
                        &loaded);
    CHECK(memcmp(&loaded.spec.mnm, &a->spec.mnm, sizeof loaded.spec.mnm) == 0);
    fwm__loaded_model_release(&loaded);

    /* the meta weight changes the run */
    fwm__train_options on = options(NULL);
    on.steps = 5;
    fwm__trainer *d = NULL, *e = NULL;
    CHECK_INT(fwm__trainer_create(&on, &train, NULL, SYN_PAD, SYN_EOS, NULL, &d, &err), FWM_OK);
    on.meta_weight = 2;
    CHECK_INT(fwm__trainer_create(&on, &train, NULL, SYN_PAD, SYN_EOS, NULL, &e, &err), FWM_OK);
    CHECK_INT(fwm__trainer_run(d, &err), FWM_OK);
    CHECK_INT(fwm__trainer_run(e, &err), FWM_OK);
    if (d && e)
        CHECK(memcmp(d->net->params, e->net->params, d->net->layout.total * sizeof(float)) != 0);
    fwm__trainer_free(d);
    fwm__trainer_free(e);

    /* what the checkpoint records is checked */
    fwm__train_options other = options(dir_b);
    other.mnm.memory_layers = 2;
    ru_refused(other, &train, path, "model hyperparameters");
    other = options(dir_b);
    other.mnm.head_count = 3;
    ru_refused(other, &train, path, "model hyperparameters");
    other = options(dir_b);
    other.meta_weight = 2;
    ru_refused(other, &train, path, "meta-objective weight");
    other = options(dir_b);
    other.arch = FWM_ARCH_FWM;
    other.hp = synthetic_hparams(0);
    ru_refused(other, &train, path, "architecture mnm");

    nonfinite_steps(&train, dir_b);

    free(init);
    fwm__trainer_free(a);
    fwm__trainer_free(c);
    fwm__catbabi_split_release(&train);
    ru_remove_dirs(dir_a, dir_b);
    return check_finish("test_mnm_resume");
}
