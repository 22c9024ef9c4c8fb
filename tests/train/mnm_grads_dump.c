/* mnm_grads_dump.c - the trainer's MNM objective and gradients for one lane, in double, as numbers
 * for test_mnm_torch.py to compare with PyTorch's autograd (tests/reference/mnm_torch.py).
 *
 * mnm_grads_dump V E H HEADS DK DV D LM DO FORGET_BIAS META_WEIGHT lm|qm QMARK PARAMS.f64
 *                TOKENS TARGETS PREFIX OUT.f64
 * PARAMS: every tensor in fwm__mnm_tensor_at order, row-major little-endian float64 without gaps.
 * TOKENS, TARGETS: the window (comma-separated ids); PREFIX: tokens read first from the reset state
 * (their state carried in, detached), or "-" for none. Writes the gradients in the same layout as
 * PARAMS and prints "total task meta" on stdout.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dump_util.h"
#include "mnm_model.h"

int main(int argc, char **argv)
{
    if (argc != 19) {
        fprintf(stderr, "usage: see the comment at the top of mnm_grads_dump.c\n");
        return 2;
    }
    fwm__mnm_config config;
    memset(&config, 0, sizeof config);
    fwm_mnm_hparams *hp = &config.hp;
    uint32_t *dims[] = {&hp->vocab_size,  &hp->embedding_length, &hp->hidden_size,
                        &hp->head_count,  &hp->key_length,       &hp->value_length,
                        &hp->memory_hidden, &hp->memory_layers,  &hp->output_length};
    for (int i = 0; i < 9; i++)
        *dims[i] = (uint32_t)strtoul(argv[1 + i], NULL, 10);
    hp->forget_bias = strtof(argv[10], NULL);
    hp->padding_token_id = 0;
    hp->eos_token_id = 1;
    config.meta_weight = strtod(argv[11], NULL);
    config.loss_mode = strcmp(argv[12], "qm") == 0 ? FWM__LOSS_QM : FWM__LOSS_LM;
    config.loss_token_id = (uint32_t)strtoul(argv[13], NULL, 10);
    uint32_t *x = NULL, *prefix = NULL, *y = NULL;
    int len = du_parse_ids(argv[15], &x), ylen = du_parse_ids(argv[16], &y);
    int plen = strcmp(argv[17], "-") == 0 ? 0 : du_parse_ids(argv[17], &prefix);
    if (len < 1 || ylen != len || plen < 0) {
        fprintf(stderr, "bad token lists\n");
        return 2;
    }
    config.lanes = 1;
    config.window = len > plen ? len : plen;
    fwm__mnm_tm_f64 *tm = NULL;
    fwm_error err;
    if (fwm__mnm_tm_create_f64(&config, NULL, &tm, &err) != FWM_OK) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    int ok = du_read_tensors(argv[14], tm->shell.params, &tm->layout);
    if (!ok) {
        fprintf(stderr, "cannot read %s\n", argv[14]);
        return 1;
    }
    fwm__mnm_tm_reset_state_f64(tm);
    if (plen > 0) {
        uint32_t *pad = calloc((size_t)plen, sizeof *pad);
        fwm__mnm_tm_forward_f64(tm, prefix, pad, plen);
        free(pad);
    }
    fwm__tm_shell_zero_grads_f64(&tm->shell);
    fwm__mnm_tm_forward_f64(tm, x, y, len);
    fwm__mnm_tm_backward_f64(tm);
    ok = du_write_tensors(argv[18], tm->shell.grads, &tm->layout);
    if (!ok) {
        fprintf(stderr, "cannot write %s\n", argv[18]);
        return 1;
    }
    printf("%.17g %.17g %.17g\n", tm->objective, tm->shell.loss, tm->meta);
    fwm__mnm_tm_free_f64(tm);
    free(x);
    free(y);
    free(prefix);
    return 0;
}
