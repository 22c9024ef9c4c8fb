/* progress.h - what the trainer tells its user: a progress line on stderr, a CSV log of every
 * evaluation (<run_dir>/log.csv) and a learning-curve plot (<run_dir>/curve.png through gnuplot
 * when it is installed; <run_dir>/curve.gp is always written so the plot can be made later). */
#ifndef FWM_TRAIN_PROGRESS_H
#define FWM_TRAIN_PROGRESS_H

#include <stdio.h>

#include "trainer.h"

/* "step 1200/30000  21.3k tok/s  loss 0.512  train acc 87.1%  valid 85.2%  ETA 1h02m" */
void fwm__progress_print(FILE *out, const fwm__trainer *trainer, double tokens_per_second,
                         double eta_seconds);
/* The figures of the evaluation just done. */
void fwm__progress_eval_print(FILE *out, const fwm__trainer *trainer);

/* Append one row (writing the header first when the file is new):
 * step,epoch,tokens,seconds,lr,train_loss,train_acc,valid_acc,valid_ppl */
fwm_status fwm__log_append(const char *run_dir, const fwm__trainer *trainer, fwm_error *err);

/* Write curve.gp and, when gnuplot is on PATH, run it to make curve.png. Failures are ignored
 * (the plot is a convenience; log.csv has the numbers). */
void fwm__plot_curve(const char *run_dir);

/* "1h02m", "3m05s", "12s" */
void fwm__format_duration(double seconds, char *out, size_t size);

#endif
