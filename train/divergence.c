/* divergence.c - the training run's instability watcher (see divergence.h). */
#include "divergence.h"

#include <stdio.h>

void fwm__divergence_init(fwm__divergence *d)
{
    *d = (fwm__divergence){0};
    d->best_valid = -1;
}

/* Move one track; 1 when it has just crossed factor * lowest and lowest + margin. */
static int track_step(fwm__divergence_track *t, long seen, long step, double value, double factor,
                      double margin)
{
    t->average = seen == 1 ? value : t->average + FWM__DIVERGENCE_WEIGHT * (value - t->average);
    if (seen < FWM__DIVERGENCE_WARMUP)
        return 0;
    if (seen == FWM__DIVERGENCE_WARMUP || t->average < t->lowest) {
        t->lowest = t->average;
        t->lowest_step = step;
    }
    double limit = factor * t->lowest;
    int over = t->average > limit && t->average > t->lowest + margin && t->lowest > 0;
    if (over && !t->reported) {
        t->reported = 1;
        return 1;
    }
    if (t->reported && t->average < 0.5 * (1 + factor) * t->lowest)
        t->reported = 0;
    return 0;
}

int fwm__divergence_step(fwm__divergence *d, long step, double loss, double meta, char *msg,
                         size_t size)
{
    d->seen++;
    int loss_up = track_step(&d->loss, d->seen, step, loss, FWM__DIVERGENCE_LOSS_FACTOR,
                             FWM__DIVERGENCE_LOSS_MARGIN);
    int meta_up = track_step(&d->meta, d->seen, step, meta, FWM__DIVERGENCE_META_FACTOR,
                             FWM__DIVERGENCE_META_MARGIN);
    if (!loss_up && !meta_up)
        return 0;
    const fwm__divergence_track *t = loss_up ? &d->loss : &d->meta;
    snprintf(msg, size,
             "step %ld: the training %s's moving average (%.4g) is %.1f times its lowest (%.4g at "
             "step %ld): the run may be going unstable (a lower --lr or --clip may help)",
             step, loss_up ? "loss" : "meta term", t->average, t->average / t->lowest, t->lowest,
             t->lowest_step);
    return 1;
}

int fwm__divergence_valid(fwm__divergence *d, long step, double accuracy, char *msg, size_t size)
{
    if (accuracy > d->best_valid) {
        d->best_valid = accuracy;
        d->best_valid_step = step;
    }
    double drop = d->best_valid - accuracy;
    if (drop > FWM__DIVERGENCE_VALID_DROP && !d->valid_reported) {
        d->valid_reported = 1;
        snprintf(msg, size,
                 "step %ld: validation accuracy %.2f%% is %.2f points below its best (%.2f%% at "
                 "step %ld): the run may be going unstable (a lower --lr or --clip may help)",
                 step, 100 * accuracy, 100 * drop, 100 * d->best_valid, d->best_valid_step);
        return 1;
    }
    if (d->valid_reported && drop < 0.5 * FWM__DIVERGENCE_VALID_DROP)
        d->valid_reported = 0;
    return 0;
}
