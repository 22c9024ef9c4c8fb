/* stm_dump.c - the trainer's STM on one lane, as numbers for test_stm_torch.py to compare with the
 * independent references (tests/reference/stm_reference.py's logits, PyTorch's autograd through
 * stm_torch.py for the gradients).
 *
 * stm_dump MODE V E P d NQ NR HA RESET DOT QMARK PARAMS.f64 TOKENS TARGETS SPLIT LOGITS.f64
 *          LOGITS32.f64 GRADS.f64
 * MODE: sentence or word; RESET: 1 or 0 (reset_on_eos); DOT, QMARK: the end tokens; padding 0,
 * <eos> 1; the layer-norm epsilons 1e-5 and 1e-12 (the list's defaults). PARAMS: every tensor in
 * fwm__stm_tensor_at order, row-major little-endian float64 without gaps. TOKENS, TARGETS: the
 * stream (comma-separated ids) from the reset state. Writes the logits of the positions that
 * predict (every position in word mode, the question ends in sentence mode; the targets must not be
 * padding) read as two windows, the first SPLIT tokens then the rest (the state, sentence buffer
 * included, carried between them), in double and in float (as doubles); and the gradients of the
 * summed cross entropy of one window of the whole stream, in the layout of PARAMS. Prints the
 * summed loss and the number of loss rows.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dump_util.h"
#include "stm_model.h"

int main(int argc, char **argv)
{
    if (argc != 19) {
        fprintf(stderr, "usage: see the comment at the top of stm_dump.c\n");
        return 2;
    }
    fwm__stm_config config;
    memset(&config, 0, sizeof config);
    fwm_stm_hparams *hp = &config.hp;
    fwm__stm_hparams_defaults(hp);
    hp->input_mode = strcmp(argv[1], "word") == 0 ? FWM_STM_INPUT_WORD : FWM_STM_INPUT_SENTENCE;
    uint32_t *dims[] = {&hp->vocab_size,  &hp->embedding_length, &hp->sentence_length,
                        &hp->memory_size, &hp->query_count,      &hp->relation_length,
                        &hp->answer_hidden};
    for (int i = 0; i < 7; i++)
        *dims[i] = (uint32_t)strtoul(argv[2 + i], NULL, 10);
    hp->reset_on_eos = strcmp(argv[9], "1") == 0;
    hp->statement_end_token_id = (uint32_t)strtoul(argv[10], NULL, 10);
    hp->question_end_token_id = (uint32_t)strtoul(argv[11], NULL, 10);
    hp->padding_token_id = 0;
    hp->eos_token_id = 1;
    uint32_t *x = NULL, *y = NULL;
    int len = du_parse_ids(argv[13], &x), ylen = du_parse_ids(argv[14], &y);
    int split = atoi(argv[15]);
    if (len < 2 || ylen != len || split < 1 || split >= len) {
        fprintf(stderr, "bad token lists or split\n");
        return 2;
    }
    config.lanes = 1;
    config.window = len;
    config.loss_mode = FWM__LOSS_LM;
    config.loss_token_id = hp->question_end_token_id;
    config.train_output = 1;
    config.keep_logits = 1;
    fwm__stm_tm_f64 *tm = NULL;
    fwm__stm_tm_f32 *tf = NULL;
    fwm_error err;
    if (fwm__stm_tm_create_f64(&config, NULL, &tm, &err) != FWM_OK ||
        fwm__stm_tm_create_f32(&config, NULL, &tf, &err) != FWM_OK) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    int ok = du_read_tensors(argv[12], tm->shell.params, &tm->layout);
    if (!ok) {
        fprintf(stderr, "cannot read %s\n", argv[12]);
        return 1;
    }
    for (size_t i = 0; i < tm->layout.total; i++)
        tf->shell.params[i] = (float)tm->shell.params[i];
    size_t V = hp->vocab_size;
    double *l64 = malloc((size_t)len * V * sizeof *l64), *l32 = malloc((size_t)len * V * sizeof *l32);
    size_t rows = 0;
    /* two windows, the state carried */
    fwm__stm_tm_reset_state_f64(tm);
    fwm__stm_tm_reset_state_f32(tf);
    int starts[2] = {0, split}, lens[2] = {split, len - split};
    for (int w = 0; w < 2; w++) {
        fwm__stm_tm_forward_f64(tm, x + starts[w], y + starts[w], lens[w]);
        fwm__stm_tm_forward_f32(tf, x + starts[w], y + starts[w], lens[w]);
        ok = ok && tm->shell.n_loss_rows == tf->shell.n_loss_rows;
        for (size_t i = 0; ok && i < (size_t)tm->shell.n_loss_rows * V; i++) {
            l64[rows * V + i] = tm->shell.logits[i];
            l32[rows * V + i] = tf->shell.logits[i];
        }
        rows += (size_t)tm->shell.n_loss_rows;
    }
    ok = ok && du_write_doubles(argv[16], l64, rows * V) &&
         du_write_doubles(argv[17], l32, rows * V);
    /* the gradients of the summed loss of one window */
    fwm__stm_tm_reset_state_f64(tm);
    fwm__tm_shell_zero_grads_f64(&tm->shell);
    fwm__stm_tm_forward_f64(tm, x, y, len);
    tm->shell.loss_denominator = 1;
    fwm__stm_tm_backward_f64(tm);
    ok = ok && (size_t)tm->shell.n_loss_rows == rows;
    ok = ok && du_write_tensors(argv[18], tm->shell.grads, &tm->layout);
    if (!ok) {
        fprintf(stderr, "cannot write the outputs (or the two windows' loss rows differ from one "
                        "window's)\n");
        return 1;
    }
    printf("%.17g %d\n", tm->shell.loss_sum, tm->shell.n_loss_rows);
    fwm__stm_tm_free_f64(tm);
    fwm__stm_tm_free_f32(tf);
    free(x);
    free(y);
    free(l64);
    free(l32);
    return 0;
}
