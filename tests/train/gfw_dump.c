/* gfw_dump.c - the trainer's Gated Fast Weights model on one lane, as numbers for test_gfw_torch.py
 * to compare with the independent references (tests/reference/gfw_reference.py's logits,
 * PyTorch's autograd through gfw_torch.py for the gradients).
 *
 * gfw_dump V E M N P EPS lm|qm QMARK PARAMS.f64 TOKENS TARGETS PREFIX LOGITS.f64 LOGITS32.f64
 *          GRADS.f64
 * PARAMS: every tensor in fwm__gfw_tensor_at order, row-major little-endian float64 without gaps.
 * TOKENS, TARGETS: the window (comma-separated ids); PREFIX: tokens read first from the reset state
 * (their state carried in, detached), or "-" for none. Writes the logits after every token of the
 * window (from the state the prefix left) in double and in float (as doubles), and the gradients
 * of the window's mean loss (mode, targets) in the layout of PARAMS; prints the loss and the
 * number of loss rows on stdout.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dump_util.h"
#include "gfw_model.h"

int main(int argc, char **argv)
{
    if (argc != 16) {
        fprintf(stderr, "usage: see the comment at the top of gfw_dump.c\n");
        return 2;
    }
    fwm__gfw_config config;
    memset(&config, 0, sizeof config);
    fwm_gfw_hparams *hp = &config.hp;
    uint32_t *dims[] = {&hp->vocab_size, &hp->embedding_length, &hp->fast_hidden,
                        &hp->slow_hidden, &hp->slow_inner};
    for (int i = 0; i < 5; i++)
        *dims[i] = (uint32_t)strtoul(argv[1 + i], NULL, 10);
    hp->layer_norm_epsilon = strtof(argv[6], NULL);
    hp->padding_token_id = 0;
    hp->eos_token_id = 1;
    config.loss_mode = strcmp(argv[7], "qm") == 0 ? FWM__LOSS_QM : FWM__LOSS_LM;
    config.loss_token_id = (uint32_t)strtoul(argv[8], NULL, 10);
    uint32_t *x = NULL, *prefix = NULL, *y = NULL;
    int len = du_parse_ids(argv[10], &x), ylen = du_parse_ids(argv[11], &y);
    int plen = strcmp(argv[12], "-") == 0 ? 0 : du_parse_ids(argv[12], &prefix);
    if (len < 1 || ylen != len || plen < 0) {
        fprintf(stderr, "bad token lists\n");
        return 2;
    }
    config.lanes = 1;
    config.window = len > plen ? len : plen;
    config.keep_logits = 1;
    fwm__gfw_tm_f64 *tm = NULL;
    fwm__gfw_tm_f32 *tf = NULL;
    fwm_error err;
    if (fwm__gfw_tm_create_f64(&config, NULL, &tm, &err) != FWM_OK ||
        fwm__gfw_tm_create_f32(&config, NULL, &tf, &err) != FWM_OK) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    int ok = du_read_tensors(argv[9], tm->shell.params, &tm->layout);
    if (!ok) {
        fprintf(stderr, "cannot read %s\n", argv[9]);
        return 1;
    }
    for (size_t i = 0; i < tm->layout.total; i++)
        tf->shell.params[i] = (float)tm->shell.params[i];
    size_t V = hp->vocab_size, state_n = tm->shell.state_size;
    uint32_t *any = malloc((size_t)config.window * sizeof *any); /* a target at every position */
    double *saved = malloc(state_n * sizeof *saved), *logits = malloc((size_t)len * V * sizeof *logits);
    for (int i = 0; i < config.window; i++)
        any[i] = 1;
    fwm__tm_shell_zero_state_f64(&tm->shell);
    fwm__tm_shell_zero_state_f32(&tf->shell);
    if (plen > 0) {
        fwm__gfw_tm_forward_f64(tm, prefix, any, plen);
        fwm__gfw_tm_forward_f32(tf, prefix, any, plen);
    }
    memcpy(saved, tm->shell.state, state_n * sizeof *saved);
    /* the logits after every token: LM mode with a target everywhere (the mode is read at each
     * forward call), then the asked mode for the gradients */
    fwm__loss_mode mode = config.loss_mode;
    tm->config.loss_mode = tf->config.loss_mode = FWM__LOSS_LM;
    fwm__gfw_tm_forward_f64(tm, x, any, len);
    fwm__gfw_tm_forward_f32(tf, x, any, len);
    ok = tm->shell.n_loss_rows == len && tf->shell.n_loss_rows == len;
    for (size_t i = 0; ok && i < (size_t)len * V; i++)
        logits[i] = tm->shell.logits[i];
    ok = ok && du_write_doubles(argv[13], logits, (size_t)len * V);
    for (size_t i = 0; ok && i < (size_t)len * V; i++)
        logits[i] = tf->shell.logits[i];
    ok = ok && du_write_doubles(argv[14], logits, (size_t)len * V);
    /* the gradients of the window's loss from the same state */
    memcpy(tm->shell.state, saved, state_n * sizeof *saved);
    tm->config.loss_mode = mode;
    fwm__tm_shell_zero_grads_f64(&tm->shell);
    double loss = fwm__gfw_tm_forward_f64(tm, x, y, len);
    fwm__gfw_tm_backward_f64(tm);
    ok = ok && du_write_tensors(argv[15], tm->shell.grads, &tm->layout);
    if (!ok) {
        fprintf(stderr, "cannot write the outputs\n");
        return 1;
    }
    printf("%.17g %d\n", loss, tm->shell.n_loss_rows);
    fwm__gfw_tm_free_f64(tm);
    fwm__gfw_tm_free_f32(tf);
    free(x);
    free(y);
    free(prefix);
    free(any);
    free(saved);
    free(logits);
    return 0;
}
