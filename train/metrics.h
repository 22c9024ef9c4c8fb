/* metrics.h - question-answer metrics at "?" positions: accuracy (argmax = answer) overall and per
 * task 1..20, and the answer's mean negative log-likelihood (perplexity = exp of it); and the
 * metrics of a sequence-to-sequence task (the associative retrieval task, docs/AR_TASK.md): accuracy
 * and bits per character over every target ("total") and over the targets that are not the blank
 * (the space: "partial"). */
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

/* Sequence-to-sequence metrics: every loss row, and the rows whose target is not the blank. */
typedef struct fwm__seq_metrics {
    long count, correct;                 /* every target */
    double nll_sum;                      /* nats */
    long partial_count, partial_correct; /* targets that are not the blank */
    double partial_nll_sum;              /* nats */
} fwm__seq_metrics;

/* Add every loss row of the last forward call (read before the backward pass). */
void fwm__seq_metrics_add(fwm__seq_metrics *metrics, const fwm__net *net, uint32_t blank_id);
/* The partial (non-blank) part as question-answer metrics: count, correct and nll_sum of the
 * answers (task 0); what the trainer's progress line and log.csv show for such a task. */
void fwm__seq_metrics_to_qa(const fwm__seq_metrics *metrics, fwm__qa_metrics *out);
void fwm__seq_metrics_merge(fwm__seq_metrics *into, const fwm__seq_metrics *from);

/* The paper's figures (0 when empty): total and partial accuracy and bits per character (mean
 * -log2 p(target)), and partial_bpc_all: the non-blank targets' bits over all targets. */
typedef struct fwm__seq_summary {
    double total_accuracy, partial_accuracy, total_bpc, partial_bpc, partial_bpc_all;
} fwm__seq_summary;
fwm__seq_summary fwm__seq_metrics_summary(const fwm__seq_metrics *metrics);

#endif
