/* tm_shell_impl.h - the shell's functions (tm_shell.h), template over `real` (see real_template.h);
 * included by tm_shell_f32.c and tm_shell_f64.c only. */

#include "real_buffers_impl.h"

void TM(fwm__tm_shell_alloc)(TM(fwm__tm_shell) *shell, const fwm__tm_shell_sizes *sizes, fwm__pool *pool,
                             int *failed)
{
    size_t rows = sizes->window * sizes->lanes;
    shell->param_count = sizes->param_count;
    shell->lanes = sizes->lanes;
    shell->pool = pool;
    shell->params = alloc_reals(sizes->param_count, failed);
    if (!sizes->forward_only)
        shell->grads = alloc_reals(sizes->param_count, failed);
    shell->state = alloc_reals(sizes->lanes * shell->state_size, failed);
    shell->probs = alloc_reals(rows * sizes->vocab_size, failed);
    if (sizes->keep_logits)
        shell->logits = alloc_reals(rows * sizes->vocab_size, failed);
    shell->x = calloc(rows, sizeof *shell->x);
    shell->y = calloc(rows, sizeof *shell->y);
    shell->loss_rows = calloc(rows, sizeof *shell->loss_rows);
    shell->row_loss = calloc(rows, sizeof *shell->row_loss);
    if (!shell->x || !shell->y || !shell->loss_rows || !shell->row_loss)
        *failed = 1;
}

void TM(fwm__tm_shell_free)(TM(fwm__tm_shell) *shell)
{
    free(shell->params);
    free(shell->grads);
    free(shell->state);
    free(shell->probs);
    free(shell->logits);
    free(shell->x);
    free(shell->y);
    free(shell->loss_rows);
    free(shell->row_loss);
}

void TM(fwm__tm_shell_zero_grads)(TM(fwm__tm_shell) *shell)
{
    if (shell->grads)
        memset(shell->grads, 0, shell->param_count * sizeof(real));
}

void TM(fwm__tm_shell_zero_state)(TM(fwm__tm_shell) *shell)
{
    memset(shell->state, 0, shell->lanes * shell->state_size * sizeof(real));
}
