/* test_adam.c - the optimiser's learning-rate schedule (warm-up, constant, cosine decay) and the
 * Adam update's known closed forms: the first step moves every parameter by lr against the sign of
 * its gradient, and clipping scales the gradient but not that first step. */
#include <math.h>

#include "adam.h"
#include "check.h"

#define CLOSE(a, b) (fabs((a) - (b)) <= 1e-12 * (fabs(a) + fabs(b) + 1e-30))

static void schedule(void)
{
    fwm__adam_params ap = fwm__adam_default_params();
    CHECK(CLOSE(fwm__adam_lr(&ap, 1), 1e-3));
    CHECK(CLOSE(fwm__adam_lr(&ap, 1000000), 1e-3)); /* no decay unless asked: the paper's */

    ap.warmup_steps = 100;
    CHECK(CLOSE(fwm__adam_lr(&ap, 1), 1e-5));
    CHECK(CLOSE(fwm__adam_lr(&ap, 50), 5e-4));
    CHECK(CLOSE(fwm__adam_lr(&ap, 100), 1e-3));

    ap.warmup_steps = 0;
    ap.decay_start = 1000;
    ap.decay_end = 3000;
    ap.lr_final = 1e-4;
    CHECK(CLOSE(fwm__adam_lr(&ap, 999), 1e-3));
    CHECK(CLOSE(fwm__adam_lr(&ap, 1000), 1e-3));
    /* A cosine from lr to lr_final passes their mean halfway and is symmetric about it. */
    CHECK(CLOSE(fwm__adam_lr(&ap, 2000), 5.5e-4));
    CHECK(CLOSE(fwm__adam_lr(&ap, 1500) - 5.5e-4, 5.5e-4 - fwm__adam_lr(&ap, 2500)));
    CHECK(CLOSE(fwm__adam_lr(&ap, 3000), 1e-4));
    CHECK(CLOSE(fwm__adam_lr(&ap, 5000), 1e-4));
    double prev = 1;
    int falling = 1;
    for (long s = 1000; s <= 3000; s++) {
        double lr = fwm__adam_lr(&ap, s);
        falling &= lr <= prev && lr >= 1e-4 && lr <= 1e-3;
        prev = lr;
    }
    CHECK(falling);
}

static void first_step(double clip)
{
    fwm__adam_params ap = fwm__adam_default_params();
    ap.lr = 0.01;
    ap.clip_norm = clip;
    ap.eps = 1e-12; /* negligible beside the smallest clipped |g| (2.5e-5) */
    float params[4] = {1, -2, 0.5f, 0};
    const float grads[4] = {3, -0.25f, 1e-3f, -40};
    float m[4] = {0}, v[4] = {0};
    double norm = fwm__grad_norm(grads, 4);
    CHECK(fabs(norm - sqrt(9 + 0.0625 + 1e-6 + 1600)) < 1e-9);
    double lr = fwm__adam_update(&ap, 1, norm, params, grads, m, v, 4);
    CHECK(CLOSE(lr, 0.01));
    /* m_hat = g, v_hat = g^2 after one step: the move is lr * g / (|g| + eps). */
    const float want[4] = {0.99f, -1.99f, 0.49f, 0.01f};
    for (int i = 0; i < 4; i++)
        CHECK(fabsf(params[i] - want[i]) < 2e-6f);
}

int main(void)
{
    schedule();
    first_step(0);
    first_step(1.0);
    return check_finish("test_adam");
}
