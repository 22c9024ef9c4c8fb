/* test_gfw_golden.c - the trainer's Gated Fast Weights model against the independent numpy
 * reference (tests/reference/gfw_reference.py) through the golden manifest (golden_util.h): every
 * `arch=gfw` model (F32, F16, BF16 and mixed tensors widened to F32; m from 2 to 10; default and
 * other epsilon) is read with fwm__model_read and its manifest tokens run through the trainer's
 * forward pass from the reset state (all zero), one lane, in float and in double (training mode:
 * the fast matrices of every step kept), in one window and in two with the state carried.
 * usage: test_gfw_golden GOLDEN_DATA_DIR */
#include "check.h"
#include "golden_util.h"
#include "gfw_model.h"

static void trainer_logits(const fwm__loaded_model *m, const uint32_t *tokens, size_t n,
                           int windows, double *out32, double *out64)
{
    const fwm_gfw_hparams *hp = &m->spec.gfw;
    size_t V = hp->vocab_size, per = (n + (size_t)windows - 1) / (size_t)windows;
    uint32_t y[ATU_GOLDEN_MAX_TOKENS];
    for (size_t i = 0; i < n; i++) /* any target that is not padding: every row has a logit */
        y[i] = (hp->padding_token_id + 1) % hp->vocab_size;
    fwm__gfw_config config;
    memset(&config, 0, sizeof config);
    config.hp = *hp;
    config.lanes = 1;
    config.window = (int)per;
    config.loss_mode = FWM__LOSS_LM;
    config.keep_logits = 1;
    fwm__gfw_tm_f32 *tf = NULL;
    fwm__gfw_tm_f64 *td = NULL;
    fwm_error err;
    CHECK_INT(fwm__gfw_tm_create_f32(&config, NULL, &tf, &err), FWM_OK);
    CHECK_INT(fwm__gfw_tm_create_f64(&config, NULL, &td, &err), FWM_OK);
    if (!tf || !td)
        goto done;
    memcpy(tf->shell.params, m->params, m->layout.total * sizeof(float));
    for (size_t i = 0; i < m->layout.total; i++)
        td->shell.params[i] = m->params[i];
    fwm__tm_shell_zero_state_f32(&tf->shell);
    fwm__tm_shell_zero_state_f64(&td->shell);
    for (size_t at = 0; at < n; at += per) {
        int len = (int)(n - at < per ? n - at : per);
        fwm__gfw_tm_forward_f32(tf, tokens + at, y + at, len);
        fwm__gfw_tm_forward_f64(td, tokens + at, y + at, len);
        CHECK_INT(tf->shell.n_loss_rows, len);
        for (size_t k = 0; k < (size_t)len * V; k++) {
            out32[at * V + k] = tf->shell.logits[k];
            out64[at * V + k] = td->shell.logits[k];
        }
    }
done:
    fwm__gfw_tm_free_f32(tf);
    fwm__gfw_tm_free_f64(td);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_gfw_golden GOLDEN_DATA_DIR\n");
        return 2;
    }
    int checked = atu_golden_run(argv[1], "arch=gfw", trainer_logits);
    printf("%d gfw models checked\n", checked);
    CHECK_GE(checked, 4);
    return check_finish("test_gfw_golden");
}
