/* test_resume.c - a run interrupted by a checkpoint and resumed in a new trainer equals an
 * uninterrupted run bit for bit (parameters, Adam moments, lane states, data position), across
 * epoch boundaries; a damaged or mismatched checkpoint is refused with a message that says why. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "synthetic_data.h"
#include "check.h"
#include "trainer.h"

static fwm__train_options options(const char *run_dir)
{
    fwm__train_options o;
    memset(&o, 0, sizeof o);
    o.hp = synthetic_hparams(0);
    o.mode = FWM__LOSS_LM;
    o.qmark_id = SYN_QMARK;
    o.lanes = 4;
    o.window = 30;
    o.adam = fwm__adam_default_params();
    o.adam.lr = 3e-3;
    o.adam.clip_norm = 1.0;
    o.adam.warmup_steps = 5;
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

int main(void)
{
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
    size_t windows = fwm__catbabi_window_count(&a->stream, o.window);
    printf("%zu windows per epoch, %ld steps, cut after %ld\n", windows, total, cut);
    CHECK((long)windows < cut); /* the run crosses epoch boundaries before and after the cut */
    CHECK_INT(fwm__trainer_run(a, &err), FWM_OK);

    /* interrupted at `cut`, resumed by a new trainer from the checkpoint */
    fwm__train_options ob = options(dir_b);
    ob.steps = cut;
    fwm__trainer *b = NULL;
    CHECK_INT(fwm__trainer_create(&ob, &train, NULL, SYN_PAD, SYN_EOS, NULL, &b, &err), FWM_OK);
    CHECK_INT(fwm__trainer_run(b, &err), FWM_OK); /* writes dir_b/checkpoint.bin at the end */
    fwm__trainer_free(b);
    char path[256];
    snprintf(path, sizeof path, "%s/checkpoint.bin", dir_b);
    ob.steps = total;
    fwm__trainer *c = NULL;
    CHECK_INT(fwm__trainer_create(&ob, &train, NULL, SYN_PAD, SYN_EOS, NULL, &c, &err), FWM_OK);
    CHECK_INT(fwm__trainer_load_checkpoint(c, path, &err), FWM_OK);
    CHECK_INT(c->step, cut);
    CHECK_INT(fwm__trainer_run(c, &err), FWM_OK);
    if (a && c) {
        size_t n = a->tm->layout.total, k = (size_t)o.lanes * a->tm->state_size;
        CHECK_INT(c->step, a->step);
        CHECK_INT(c->epoch, a->epoch);
        CHECK_INT(c->window_index, a->window_index);
        CHECK_INT(c->tokens, a->tokens);
        CHECK(same_floats("parameters", a->tm->params, c->tm->params, n));
        CHECK(same_floats("Adam m", a->adam_m, c->adam_m, n));
        CHECK(same_floats("Adam v", a->adam_v, c->adam_v, n));
        CHECK(same_floats("lane state", a->tm->state, c->tm->state, k));
        CHECK(a->epoch >= 2);
    }

    /* a checkpoint of other options is refused, naming the difference */
    fwm__train_options od = options(dir_b);
    od.seed = 12;
    fwm__trainer *d = NULL;
    CHECK_INT(fwm__trainer_create(&od, &train, NULL, SYN_PAD, SYN_EOS, NULL, &d, &err), FWM_OK);
    CHECK_INT(fwm__trainer_load_checkpoint(d, path, &err), FWM_ERR_FORMAT);
    CHECK_CONTAINS(err.message, "seed");
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
    fwm__trainer *e = NULL;
    CHECK_INT(fwm__trainer_create(&ob, &train, NULL, SYN_PAD, SYN_EOS, NULL, &e, &err), FWM_OK);
    CHECK_INT(fwm__trainer_load_checkpoint(e, path, &err), FWM_ERR_CHECKSUM);
    CHECK_CONTAINS(err.message, "checksum");
    /* a truncated one too */
    CHECK_INT(truncate(path, 4000), 0);
    CHECK_INT(fwm__trainer_load_checkpoint(e, path, &err), FWM_ERR_FORMAT);
    CHECK_CONTAINS(err.message, "truncated");

    fwm__trainer_free(a);
    fwm__trainer_free(c);
    fwm__trainer_free(d);
    fwm__trainer_free(e);
    fwm__catbabi_split_release(&train);
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", dir_a, dir_b);
    CHECK_INT(system(cmd), 0);
    return check_finish("test_resume");
}
