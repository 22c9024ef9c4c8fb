/* adam.c - Adam with optional clipping, warm-up and cosine decay (see adam.h). */
#include "adam.h"

#include <math.h>

fwm__adam_params fwm__adam_default_params(void)
{
    fwm__adam_params ap = {1e-3, 0.9, 0.999, 1e-8, 0, 0, 0, 0, 1e-4};
    return ap;
}

double fwm__adam_lr(const fwm__adam_params *ap, long step)
{
    double lr = ap->lr;
    if (ap->warmup_steps > 0 && step < ap->warmup_steps)
        lr *= (double)step / (double)ap->warmup_steps;
    if (ap->decay_start > 0 && step > ap->decay_start) {
        if (step >= ap->decay_end || ap->decay_end <= ap->decay_start)
            return ap->lr_final;
        double t = (double)(step - ap->decay_start) / (double)(ap->decay_end - ap->decay_start);
        lr = ap->lr_final + 0.5 * (ap->lr - ap->lr_final) * (1.0 + cos(3.14159265358979323846 * t));
    }
    return lr;
}

double fwm__grad_norm(const float *grads, size_t n)
{
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += (double)grads[i] * grads[i];
    return sqrt(sum);
}

double fwm__adam_update(const fwm__adam_params *ap, long step, double grad_norm, float *params,
                        const float *grads, float *m, float *v, size_t n)
{
    double lr = fwm__adam_lr(ap, step);
    float scale = 1.0f;
    if (ap->clip_norm > 0 && grad_norm > ap->clip_norm)
        scale = (float)(ap->clip_norm / grad_norm);
    float b1 = (float)ap->beta1, b2 = (float)ap->beta2;
    float c1 = (float)(1.0 / (1.0 - pow(ap->beta1, (double)step)));
    float c2 = (float)(1.0 / (1.0 - pow(ap->beta2, (double)step)));
    float lrf = (float)lr, eps = (float)ap->eps;
    for (size_t i = 0; i < n; i++) {
        float g = grads[i] * scale;
        m[i] = b1 * m[i] + (1.0f - b1) * g;
        v[i] = b2 * v[i] + (1.0f - b2) * g * g;
        params[i] -= lrf * (m[i] * c1) / (sqrtf(v[i] * c2) + eps);
    }
    return lr;
}
