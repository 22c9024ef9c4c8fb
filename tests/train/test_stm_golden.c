/* test_stm_golden.c - the trainer's STM against the independent numpy reference
 * (tests/reference/stm_reference.py) through the golden manifest (golden_util.h): every `arch=stm`
 * model (both input modes, with and without reset_on_eos) is read with fwm__model_read and its
 * manifest tokens run through the trainer's forward pass from the reset state (the initial
 * memories), one lane, in float and in double (training mode: snapshots kept), in one window and in
 * two with the state (the sentence buffer included) carried. The positions where the trainer takes
 * no loss (sentence mode: all but the question ends) are NaN rows, as in the golden files.
 * usage: test_stm_golden GOLDEN_DATA_DIR */
#include "check.h"
#include "golden_util.h"
#include "stm_model.h"

static void trainer_logits(const fwm__loaded_model *m, const uint32_t *tokens, size_t n,
                           int windows, double *out32, double *out64)
{
    const fwm_stm_hparams *hp = &m->spec.stm;
    size_t V = hp->vocab_size, per = (n + (size_t)windows - 1) / (size_t)windows;
    uint32_t y[ATU_GOLDEN_MAX_TOKENS];
    for (size_t i = 0; i < n; i++) /* any target that is not padding: every prediction counts */
        y[i] = (hp->padding_token_id + 1) % hp->vocab_size;
    for (size_t i = 0; i < n * V; i++)
        out32[i] = out64[i] = NAN;
    fwm__stm_config config;
    memset(&config, 0, sizeof config);
    config.hp = *hp;
    config.lanes = 1;
    config.window = (int)per;
    config.loss_mode = FWM__LOSS_LM;
    config.keep_logits = 1;
    fwm__stm_tm_f32 *tf = NULL;
    fwm__stm_tm_f64 *td = NULL;
    fwm_error err;
    CHECK_INT(fwm__stm_tm_create_f32(&config, NULL, &tf, &err), FWM_OK);
    CHECK_INT(fwm__stm_tm_create_f64(&config, NULL, &td, &err), FWM_OK);
    if (!tf || !td)
        goto done;
    memcpy(tf->shell.params, m->params, m->layout.total * sizeof(float));
    for (size_t i = 0; i < m->layout.total; i++)
        td->shell.params[i] = m->params[i];
    fwm__stm_tm_reset_state_f32(tf);
    fwm__stm_tm_reset_state_f64(td);
    for (size_t at = 0; at < n; at += per) {
        int len = (int)(n - at < per ? n - at : per);
        fwm__stm_tm_forward_f32(tf, tokens + at, y + at, len);
        fwm__stm_tm_forward_f64(td, tokens + at, y + at, len);
        CHECK_INT(tf->shell.n_loss_rows, td->shell.n_loss_rows);
        for (int i = 0; i < tf->shell.n_loss_rows && i < td->shell.n_loss_rows; i++) {
            size_t row = at + (size_t)tf->shell.loss_rows[i];
            for (size_t k = 0; k < V; k++) {
                out32[row * V + k] = tf->shell.logits[(size_t)i * V + k];
                out64[row * V + k] = td->shell.logits[(size_t)i * V + k];
            }
        }
    }
done:
    fwm__stm_tm_free_f32(tf);
    fwm__stm_tm_free_f64(td);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_stm_golden GOLDEN_DATA_DIR\n");
        return 2;
    }
    int checked = atu_golden_run(argv[1], "arch=stm", trainer_logits);
    printf("%d stm models checked\n", checked);
    CHECK_GE(checked, 4);
    return check_finish("test_stm_golden");
}
