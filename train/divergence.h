/* divergence.h - notice a training run that is going unstable before it ends in NaNs.
 *
 * The FWM paper reports that long MNM runs grew unstable; an unstable run usually shows it first
 * as a training loss (or, for the MNM, a meta term) that climbs far above where it had settled, or
 * as a validation accuracy that falls well below its best, long before anything is not finite.
 * The trainer feeds every step's losses and every evaluation's accuracy to a watcher, which
 * answers with a report the first time a quantity crosses its threshold (and again only after it
 * has come back). The watcher only reports; the trainer prints the report and goes on (a
 * non-finite loss or gradient is handled apart, trainer.c). Its thresholds:
 *
 *   - the loss and the meta term are followed as moving averages (each step that has one weighs
 *     1/32; a window without a loss position, or a model without a meta term, passes NaN and
 *     leaves the average as it was); their lowest values count from the track's
 *     FWM__DIVERGENCE_WARMUP-th value of the session on;
 *   - the loss: the average above FWM__DIVERGENCE_LOSS_FACTOR times its lowest and more than
 *     FWM__DIVERGENCE_LOSS_MARGIN above it (a loss near zero, as on the retrieval task, doubles
 *     by chance);
 *   - the meta term: above FWM__DIVERGENCE_META_FACTOR times its lowest and more than
 *     FWM__DIVERGENCE_META_MARGIN above it (it is small and noisy while the memory learns to
 *     write);
 *   - validation accuracy: more than FWM__DIVERGENCE_VALID_DROP (a fraction) below its best.
 *
 * A quantity reported is re-armed when it is back under the middle between its lowest and its
 * threshold (half the accuracy drop). A report names every quantity that crossed at that step.
 * The watcher lives for one session: a resumed run starts its averages, lowest values and best
 * validation afresh.
 */
#ifndef FWM_TRAIN_DIVERGENCE_H
#define FWM_TRAIN_DIVERGENCE_H

#include <stddef.h>

#define FWM__DIVERGENCE_WEIGHT (1.0 / 32)
#define FWM__DIVERGENCE_WARMUP 64
#define FWM__DIVERGENCE_LOSS_FACTOR 2.0
#define FWM__DIVERGENCE_META_FACTOR 10.0
#define FWM__DIVERGENCE_LOSS_MARGIN 0.1
#define FWM__DIVERGENCE_META_MARGIN 0.05
#define FWM__DIVERGENCE_VALID_DROP 0.05

typedef struct fwm__divergence_track {
    long seen;       /* values fed */
    double average;  /* the moving average */
    double lowest;   /* its lowest since the warm-up (0 until then) */
    long lowest_step;
    int reported;    /* over the threshold and reported; cleared when back under re-arm */
} fwm__divergence_track;

typedef struct fwm__divergence {
    fwm__divergence_track loss, meta;
    double best_valid;          /* the best validation accuracy of the session (-1: none yet) */
    long best_valid_step;
    int valid_reported;
} fwm__divergence;

void fwm__divergence_init(fwm__divergence *d);

/* Feed step `step`'s training loss and meta term (NaN for either where the step has none).
 * Returns 1 and writes a one-line report (no newline) into msg when the loss or the meta term (or
 * both) has just crossed its threshold, else 0. */
int fwm__divergence_step(fwm__divergence *d, long step, double loss, double meta, char *msg,
                         size_t size);

/* Feed the validation accuracy (a fraction) of the evaluation at `step`. Returns 1 and writes a
 * report when it has just fallen more than FWM__DIVERGENCE_VALID_DROP below the best, else 0. */
int fwm__divergence_valid(fwm__divergence *d, long step, double accuracy, char *msg, size_t size);

#endif
