/* adam.h - the optimiser: Adam (Kingma & Ba, as torch.optim.Adam without weight decay), optional
 * global gradient-norm clipping, a linear learning-rate warm-up and an optional cosine decay at the
 * end of the run. One loop over the flat parameter buffer. */
#ifndef FWM_TRAIN_ADAM_H
#define FWM_TRAIN_ADAM_H

#include <stddef.h>

typedef struct fwm__adam_params {
    double lr;        /* learning rate after warm-up; paper 1e-3 */
    double beta1;     /* 0.9 */
    double beta2;     /* 0.999 */
    double eps;       /* 1e-8 */
    double clip_norm; /* clip the global gradient L2 norm to this; 0 = no clipping (paper) */
    long warmup_steps; /* lr grows linearly over this many steps; 0 = none (paper) */
    long decay_start;  /* from this step the lr falls along a cosine ...; 0 = no decay (paper) */
    long decay_end;    /* ... reaching lr_final at this step (the run's last) and staying there */
    double lr_final;   /* the lr at and after decay_end */
} fwm__adam_params;

fwm__adam_params fwm__adam_default_params(void);

/* The learning rate of step `step` (1 for the first): warm-up, then lr, then the cosine decay. */
double fwm__adam_lr(const fwm__adam_params *ap, long step);

/* L2 norm of grads[0..n) (summed in double, fixed order). */
double fwm__grad_norm(const float *grads, size_t n);

/* One update at step `step` (1 for the first): m, v updated, params moved. Clips when asked
 * (grad_norm is the value of fwm__grad_norm). Returns the learning rate used. */
double fwm__adam_update(const fwm__adam_params *ap, long step, double grad_norm, float *params,
                        const float *grads, float *m, float *v, size_t n);

#endif
