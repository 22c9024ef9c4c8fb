/* tm_shell_decl.h - template body of tm_shell.h, included once per precision (see
 * real_template.h). No include guard on purpose. */

typedef struct TM(fwm__tm_shell) {
    size_t param_count;         /* = the model's layout.total */
    size_t lanes;               /* B = the model's config.lanes */
    size_t state_size;          /* floats of carried state per lane (each architecture's layout) */
    real *params;               /* [param_count] */
    real *grads;                /* [param_count]; the backward pass accumulates here (NULL when
                                   forward_only) */
    real *state;                /* [B][state_size], carried across calls */

    /* ---- the last forward call (rows r = t*B + b) ---- */
    int len;                    /* tokens per lane */
    uint32_t *x, *y;            /* [window*B] input and target tokens */
    int *loss_rows;             /* [window*B]: the rows with loss, increasing */
    int n_loss_rows;
    real *probs;                /* [window*B, V]: softmax of the loss rows' logits */
    real *logits;               /* [window*B, V]: the logits themselves, with keep_logits; else NULL */
    double *row_loss;           /* [window*B] */
    double loss_sum, loss;      /* cross entropy: sum and mean over the loss rows */
    long loss_denominator;      /* the backward pass takes the gradient of loss_sum / this; 0:
                                   n_loss_rows (the mean). Lanes trained as groups (trainer.c) set
                                   it to the loss rows of all groups together. */

    fwm__pool *pool;            /* borrowed; NULL = one thread */
} TM(fwm__tm_shell);

/* Allocate the shell's buffers, zeroed, for `sizes` and shell->state_size (which the model sets
 * first), and keep the sizes and the pool; *failed is set when one could not be allocated
 * (fwm__tm_shell_free then frees those that were), so a model's create can allocate everything and
 * check once. */
void TM(fwm__tm_shell_alloc)(TM(fwm__tm_shell) *shell, const fwm__tm_shell_sizes *sizes, fwm__pool *pool,
                             int *failed);
/* Free the shell's buffers (not the shell itself, a member of its model). */
void TM(fwm__tm_shell_free)(TM(fwm__tm_shell) *shell);
void TM(fwm__tm_shell_zero_grads)(TM(fwm__tm_shell) *shell);
/* Every lane's state to all zero: the reset state of fwm, lstm and gfw. */
void TM(fwm__tm_shell_zero_state)(TM(fwm__tm_shell) *shell);
