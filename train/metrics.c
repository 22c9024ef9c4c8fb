/* metrics.c - accuracy and answer perplexity at "?" positions; sequence-to-sequence accuracy and
 * bits per character (see metrics.h). */
#include "metrics.h"

#include <math.h>
#include <string.h>

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

/* The index of the first largest of p[0..n) (NaNs never chosen; 0 when all are NaN), as a scan
 * keeping the first strictly larger value finds it, in two passes the compiler vectorises: the
 * maximum, kept in 16 independent lanes, then the first index that holds it. */
static uint32_t first_max(const float *p, size_t n)
{
    enum { LANES = 16 };
    float lane[LANES];
    for (int k = 0; k < LANES; k++)
        lane[k] = p[0];
    size_t j = 0;
    for (; j + LANES <= n; j += LANES)
        for (int k = 0; k < LANES; k++)
            lane[k] = p[j + k] > lane[k] ? p[j + k] : lane[k];
    float top = p[0];
    for (int k = 0; k < LANES; k++)
        if (lane[k] > top)
            top = lane[k];
    for (; j < n; j++)
        if (p[j] > top)
            top = p[j];
    for (size_t i = 0; i < n; i++)
        if (p[i] == top)
            return (uint32_t)i;
    return 0;
}

void fwm__seq_metrics_add(fwm__seq_metrics *m, const fwm__net *net, uint32_t blank_id)
{
    size_t V = fwm__spec_vocab_size(&net->config.model);
    for (int i = 0; i < net->n_loss_rows; i++) {
        uint32_t best = first_max(net->probs + (size_t)i * V, V);
        const float *p = net->probs + (size_t)i * V;
        uint32_t target = net->y[net->loss_rows[i]];
        int ok = best == target;
        double nll = -log(p[target] > 1e-30f ? (double)p[target] : 1e-30);
        m->count++;
        m->correct += ok;
        m->nll_sum += nll;
        if (target != blank_id) {
            m->partial_count++;
            m->partial_correct += ok;
            m->partial_nll_sum += nll;
        }
    }
}

void fwm__seq_metrics_to_qa(const fwm__seq_metrics *m, fwm__qa_metrics *out)
{
    memset(out, 0, sizeof *out);
    out->count = out->task_count[0] = m->partial_count;
    out->correct = out->task_correct[0] = m->partial_correct;
    out->nll_sum = m->partial_nll_sum;
}

void fwm__seq_metrics_merge(fwm__seq_metrics *into, const fwm__seq_metrics *from)
{
    into->count += from->count;
    into->correct += from->correct;
    into->nll_sum += from->nll_sum;
    into->partial_count += from->partial_count;
    into->partial_correct += from->partial_correct;
    into->partial_nll_sum += from->partial_nll_sum;
}

fwm__seq_summary fwm__seq_metrics_summary(const fwm__seq_metrics *m)
{
    fwm__seq_summary s;
    memset(&s, 0, sizeof s);
    const double ln2 = 0.69314718055994530942;
    if (m->count > 0) {
        s.total_accuracy = (double)m->correct / (double)m->count;
        s.total_bpc = m->nll_sum / (double)m->count / ln2;
        s.partial_bpc_all = m->partial_nll_sum / (double)m->count / ln2;
    }
    if (m->partial_count > 0) {
        s.partial_accuracy = (double)m->partial_correct / (double)m->partial_count;
        s.partial_bpc = m->partial_nll_sum / (double)m->partial_count / ln2;
    }
    return s;
}
