/* resume_util.h - the checkpoint and model-file round trips the trainer's resume tests share
 * (test_resume.c for the FWM, test_lstm_resume.c, test_mnm_resume.c, test_gfw_resume.c,
 * test_stm_resume.c): the runs' common options, a run interrupted by a checkpoint and resumed in
 * a new trainer compared bit for bit with an uninterrupted one (step, epoch, data position,
 * parameters, Adam moments, every lane's state), the model file of the trained parameters read
 * back, a parameter that is not finite refused, and a checkpoint refused by a run that differs
 * from it. Each test keeps its architecture's sizes and options, its initial-state and
 * initial-weight checks and what else its checkpoint must record.
 * Header only (static inline functions); include after check.h. */
#ifndef FWM_TESTS_TRAIN_RESUME_UTIL_H
#define FWM_TESTS_TRAIN_RESUME_UTIL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch_test_util.h"
#include "check.h"
#include "model_io.h"
#include "synthetic_data.h"
#include "trainer.h"

/* Everything of a resume test's options but the architecture, its sizes and the loss mode: five
 * lanes in two groups, two threads, windows of 30 on the synthetic task. */
static inline fwm__train_options ru_base_options(const char *run_dir)
{
    fwm__train_options o;
    memset(&o, 0, sizeof o);
    o.max_nonfinite = 0;
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

/* A trainer with options o loads the checkpoint at path: FWM_ERR_FORMAT with `what` in the
 * message. */
static inline void ru_refused(fwm__train_options o, const fwm__catbabi_split *train,
                              const char *path, const char *what)
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

/* The options ob (in run folder dir_b) train `cut` steps and checkpoint into path
 * (dir_b/checkpoint.bin); a new trainer loads it and trains on to `total` steps. Returns that
 * trainer (NULL if it could not be made), to compare with the uninterrupted run. */
static inline fwm__trainer *ru_resumed_run(fwm__train_options ob, const fwm__catbabi_split *train,
                                           long total, long cut, const char *dir_b, char *path,
                                           size_t path_size)
{
    fwm_error err;
    ob.steps = cut;
    fwm__trainer *b = NULL;
    CHECK_INT(fwm__trainer_create(&ob, train, NULL, SYN_PAD, SYN_EOS, NULL, &b, &err), FWM_OK);
    CHECK_INT(fwm__trainer_run(b, &err), FWM_OK);
    fwm__trainer_free(b);
    snprintf(path, path_size, "%s/checkpoint.bin", dir_b);
    ob.steps = total;
    fwm__trainer *c = NULL;
    CHECK_INT(fwm__trainer_create(&ob, train, NULL, SYN_PAD, SYN_EOS, NULL, &c, &err), FWM_OK);
    CHECK_INT(fwm__trainer_load_checkpoint(c, path, &err), FWM_OK);
    CHECK_INT(c->step, cut);
    CHECK_INT(fwm__trainer_run(c, &err), FWM_OK);
    return c;
}

/* The resumed run c equals the uninterrupted a bit for bit, and a crossed an epoch boundary at
 * least twice. sa, sc: [k_state] floats, left holding a's and c's lane states. */
static inline void ru_check_same_run(fwm__trainer *a, fwm__trainer *c, float *sa, float *sc,
                                     size_t k_state)
{
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
    CHECK(a->epoch >= 2);
}

/* a's parameters as the model file at path (named `name`, the words "w0", "w1", ...); its
 * status. */
static inline fwm_status ru_save_model(const fwm__trainer *a, const char *path, const char *name,
                                       fwm_error *err)
{
    char words[SYN_VOCAB][8];
    const char *tokens[SYN_VOCAB];
    for (int i = 0; i < SYN_VOCAB; i++) {
        snprintf(words[i], sizeof words[i], "w%d", i);
        tokens[i] = words[i];
    }
    return fwm__model_save_spec(path, &a->spec, a->net->params, tokens, name, NULL, 0, err);
}

/* The model file of a's trained parameters (dir/model.gguf, path into model_path) reads back as
 * written: architecture `arch`, layout, vocabulary and bits. *loaded is left for the test's checks
 * of its sizes; the caller releases it. */
static inline void ru_model_round_trip(const fwm__trainer *a, const char *dir, const char *name,
                                       fwm_arch arch, char *model_path, size_t path_size,
                                       fwm__loaded_model *loaded)
{
    fwm_error err;
    snprintf(model_path, path_size, "%s/model.gguf", dir);
    CHECK_INT(ru_save_model(a, model_path, name, &err), FWM_OK);
    CHECK_INT(fwm__model_read(model_path, loaded, &err), FWM_OK);
    CHECK_INT(loaded->spec.arch, arch);
    CHECK_INT(loaded->layout.total, a->net->layout.total);
    CHECK_INT(loaded->vocab.count, SYN_VOCAB);
    if (loaded->params)
        CHECK(atu_same_floats("model file", a->net->params, loaded->params,
                              a->net->layout.total));
}

/* With a NaN at flat offset `at` (in the tensor named `tensor`), a's model is not written:
 * FWM_ERR_INVALID_ARGUMENT naming the tensor. */
static inline void ru_nan_refused(fwm__trainer *a, const char *model_path, const char *name,
                                  size_t at, const char *tensor)
{
    fwm_error err;
    a->net->params[at] = NAN; /* never a file with a NaN weight */
    CHECK_INT(ru_save_model(a, model_path, name, &err), FWM_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(err.message, tensor);
}

/* rm -rf of the two run folders. */
static inline void ru_remove_dirs(const char *dir_a, const char *dir_b)
{
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", dir_a, dir_b);
    CHECK_INT(system(cmd), 0);
}

#endif
