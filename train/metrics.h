/* metrics.h - question-answer metrics at "?" positions: accuracy (argmax = answer) overall and per
 * task 1..20, and the answer's mean negative log-likelihood (perplexity = exp of it). */
#ifndef FWM_TRAIN_METRICS_H
#define FWM_TRAIN_METRICS_H

#include <stdint.h>

#include "net.h"

#define FWM__METRIC_TASKS 21 /* index 0: data without a task; 1..20: bAbI tasks */

typedef struct fwm__qa_metrics {
    long count, correct;
    double nll_sum;
    long task_count[FWM__METRIC_TASKS], task_correct[FWM__METRIC_TASKS];
} fwm__qa_metrics;

/* Add the loss rows of the last forward call whose input is `qmark_id` (read before the backward
 * pass, which overwrites the probabilities). tasks: [B][len] as given to the forward call, or
 * NULL. */
void fwm__metrics_add(fwm__qa_metrics *metrics, const fwm__net *net, uint32_t qmark_id,
                      const uint8_t *tasks);

double fwm__metrics_accuracy(const fwm__qa_metrics *metrics);   /* 0 when empty */
double fwm__metrics_perplexity(const fwm__qa_metrics *metrics); /* exp(mean nll) */
void fwm__metrics_merge(fwm__qa_metrics *into, const fwm__qa_metrics *from);

#endif
