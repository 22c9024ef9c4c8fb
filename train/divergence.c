/* divergence.c - the training run's instability watcher (see divergence.h). */
#include "divergence.h"

#include <math.h>
#include <stdio.h>

void fwm__divergence_init(fwm__divergence *d)
{
    *d = (fwm__divergence){0};
    d->best_valid = -1;
}

/* Move one track by a value (NaN: this step has none, the track stays); 1 when it has just
 * crossed its threshold, max(factor * lowest, lowest + margin). */
static int track_step(fwm__divergence_track *t, long step, double value, double factor,
                      double margin)
{
    if (isnan(value))
        return 0;
    t->seen++;
    t->average = t->seen == 1 ? value : t->average + FWM__DIVERGENCE_WEIGHT * (value - t->average);
    if (t->seen < FWM__DIVERGENCE_WARMUP)
        return 0;
    if (t->seen == FWM__DIVERGENCE_WARMUP || t->average < t->lowest) {
        t->lowest = t->average;
        t->lowest_step = step;
    }
    if (t->lowest <= 0)
        return 0;
    double limit = fmax(factor * t->lowest, t->lowest + margin);
    if (t->average > limit && !t->reported) {
        t->reported = 1;
        return 1;
    }
    if (t->reported && t->average < t->lowest + 0.5 * (limit - t->lowest))
        t->reported = 0;
    return 0;
}

/* Append one track's report to msg (after `used` characters); the new length. */
static size_t report(char *msg, size_t size, size_t used, long step, const char *what,
                     const fwm__divergence_track *t)
{
    if (used >= size)
        return used;
    int n = snprintf(msg + used, size - used,
                     "%sstep %ld: the training %s's moving average (%.4g) is %.1f times its lowest "
                     "(%.4g at step %ld): the run may be going unstable (a lower --lr or --clip may "
                     "help)",
                     used ? "; " : "", step, what, t->average, t->average / t->lowest, t->lowest,
                     t->lowest_step);
    return n < 0 ? used : used + (size_t)n;
}

int fwm__divergence_step(fwm__divergence *d, long step, double loss, double meta, char *msg,
                         size_t size)
{
    int loss_up = track_step(&d->loss, step, loss, FWM__DIVERGENCE_LOSS_FACTOR,
                             FWM__DIVERGENCE_LOSS_MARGIN);
    int meta_up = track_step(&d->meta, step, meta, FWM__DIVERGENCE_META_FACTOR,
                             FWM__DIVERGENCE_META_MARGIN);
    if (!loss_up && !meta_up)
        return 0;
    size_t used = 0;
    if (size > 0)
        msg[0] = '\0';
    if (loss_up)
        used = report(msg, size, used, step, "loss", &d->loss);
    if (meta_up)
        report(msg, size, used, step, "meta term", &d->meta);
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
