/* metrics.c - accuracy and answer perplexity at "?" positions (see metrics.h). */
#include "metrics.h"

#include <math.h>

void fwm__metrics_add(fwm__qa_metrics *m, const fwm__net *tm, uint32_t qmark_id,
                      const uint8_t *tasks)
{
    size_t V = fwm__spec_vocab_size(&tm->config.model), B = (size_t)tm->config.lanes;
    for (int i = 0; i < tm->n_loss_rows; i++) {
        size_t row = (size_t)tm->loss_rows[i];
        if (tm->x[row] != qmark_id)
            continue;
        const float *p = tm->probs + (size_t)i * V;
        uint32_t best = 0;
        for (uint32_t j = 1; j < V; j++)
            if (p[j] > p[best])
                best = j;
        uint32_t target = tm->y[row];
        int ok = best == target;
        double pt = p[target] > 1e-30f ? p[target] : 1e-30;
        m->count++;
        m->correct += ok;
        m->nll_sum -= log(pt);
        int task = 0;
        if (tasks) {
            size_t t = row / B, b = row % B;
            task = tasks[b * (size_t)tm->len + t];
            if (task >= FWM__METRIC_TASKS)
                task = 0;
        }
        m->task_count[task]++;
        m->task_correct[task] += ok;
    }
}

double fwm__metrics_accuracy(const fwm__qa_metrics *m)
{
    return m->count ? (double)m->correct / (double)m->count : 0;
}

double fwm__metrics_perplexity(const fwm__qa_metrics *m)
{
    return m->count ? exp(m->nll_sum / (double)m->count) : 0;
}

void fwm__metrics_merge(fwm__qa_metrics *into, const fwm__qa_metrics *from)
{
    into->count += from->count;
    into->correct += from->correct;
    into->nll_sum += from->nll_sum;
    for (int t = 0; t < FWM__METRIC_TASKS; t++) {
        into->task_count[t] += from->task_count[t];
        into->task_correct[t] += from->task_correct[t];
    }
}
