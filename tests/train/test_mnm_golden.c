/* test_mnm_golden.c - the trainer's MNM baseline against the independent numpy reference
 * (tests/reference/mnm_reference.py): every `arch=mnm` model of the golden manifest (one to three
 * memory layers and heads; F32, F16, BF16 and mixed tensors, widened to F32) is read with
 * fwm__model_read and its manifest tokens run through the trainer's forward pass from the reset
 * state (the initial memory), one lane, in float and in double (training mode, so the meta terms
 * are computed too and must not change the logits); every
 * logit must agree with the reference's within the golden tolerance
 * (|got - want| <= 1e-5 * max(max_j |want_j|, 1e-3) per row), in two windows with the state
 * carried between them as well as in one.
 * The manifest loop and the tolerance are golden_util.h's.
 * usage: test_mnm_golden GOLDEN_DATA_DIR */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "golden_util.h"
#include "net.h"

/* The trainer's logits of tokens[0..n) in `windows` windows (one lane, from zero), both
 * precisions, into out32 and out64 ([n][V]). */
static void trainer_logits(const fwm__loaded_model *m, const uint32_t *tokens, size_t n,
                           int windows, double *out32, double *out64)
{
    const fwm_mnm_hparams *hp = &m->spec.mnm;
    size_t V = hp->vocab_size, per = (n + (size_t)windows - 1) / (size_t)windows;
    uint32_t y[ATU_GOLDEN_MAX_TOKENS];
    for (size_t i = 0; i < n; i++) /* any target that is not <pad>: every row has a logit */
        y[i] = (hp->padding_token_id + 1) % hp->vocab_size;
    fwm__mnm_config config;
    memset(&config, 0, sizeof config);
    config.hp = *hp;
    config.lanes = 1;
    config.window = (int)per;
    config.loss_mode = FWM__LOSS_LM;
    config.meta_weight = 1;
    config.keep_logits = 1;
    fwm__mnm_tm_f32 *tf = NULL;
    fwm__mnm_tm_f64 *td = NULL;
    fwm_error err;
    CHECK_INT(fwm__mnm_tm_create_f32(&config, NULL, &tf, &err), FWM_OK);
    CHECK_INT(fwm__mnm_tm_create_f64(&config, NULL, &td, &err), FWM_OK);
    if (!tf || !td)
        goto done;
    memcpy(tf->shell.params, m->params, m->layout.total * sizeof(float));
    for (size_t i = 0; i < m->layout.total; i++)
        td->shell.params[i] = m->params[i];
    fwm__mnm_tm_reset_state_f32(tf);
    fwm__mnm_tm_reset_state_f64(td);
    for (size_t at = 0; at < n; at += per) {
        int len = (int)(n - at < per ? n - at : per);
        fwm__mnm_tm_forward_f32(tf, tokens + at, y + at, len);
        fwm__mnm_tm_forward_f64(td, tokens + at, y + at, len);
        CHECK_INT(tf->shell.n_loss_rows, len);
        for (size_t k = 0; k < (size_t)len * V; k++) {
            out32[at * V + k] = tf->shell.logits[k];
            out64[at * V + k] = td->shell.logits[k];
        }
    }
done:
    fwm__mnm_tm_free_f32(tf);
    fwm__mnm_tm_free_f64(td);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_mnm_golden GOLDEN_DATA_DIR\n");
        return 2;
    }
    int checked = atu_golden_run(argv[1], "arch=mnm", trainer_logits);
    printf("%d mnm models checked\n", checked);
    CHECK_GE(checked, 4);
    return check_finish("test_mnm_golden");
}
