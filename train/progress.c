/* progress.c - progress line, CSV log and learning-curve plot (see progress.h). */
#include "progress.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fwm_error.h"

void fwm__format_duration(double seconds, char *out, size_t size)
{
    if (seconds < 0 || seconds != seconds)
        seconds = 0;
    long s = (long)(seconds + 0.5);
    if (s >= 3600)
        snprintf(out, size, "%ldh%02ldm", s / 3600, s / 60 % 60);
    else if (s >= 60)
        snprintf(out, size, "%ldm%02lds", s / 60, s % 60);
    else
        snprintf(out, size, "%lds", s);
}

void fwm__progress_print(FILE *out, const fwm__trainer *tr, double tokens_per_second,
                         double eta_seconds)
{
    char eta[32], valid[48] = "", extra[80] = "";
    fwm__format_duration(eta_seconds, eta, sizeof eta);
    if (tr->has_valid && tr->opt.report_perplexity)
        snprintf(valid, sizeof valid, "  valid ppl %.2f",
                 fwm__metrics_perplexity(&tr->last_valid));
    else if (tr->has_valid)
        snprintf(valid, sizeof valid, "  valid %.2f%%",
                 100 * fwm__metrics_accuracy(&tr->last_valid));
    double loss = tr->running_steps ? tr->running_loss / (double)tr->running_steps : 0;
    size_t at = 0;
    if (tr->net->ops->meta_term) /* the last step's meta term (the loss is the task's) */
        at += (size_t)snprintf(extra, sizeof extra, "  meta %.4f", tr->last_meta);
    if (tr->skipped_steps > 0)
        snprintf(extra + at, sizeof extra - at, "  skipped %ld (not finite)", tr->skipped_steps);
    fprintf(out, "step %ld/%ld  epoch %ld  %.1fk tok/s  loss %.4f%s  train acc %.2f%%%s  ETA %s\n",
            tr->step, tr->opt.steps, tr->epoch, tokens_per_second / 1000, loss, extra,
            100 * fwm__metrics_accuracy(&tr->running), valid, eta);
    fflush(out);
}

void fwm__progress_eval_print(FILE *out, const fwm__trainer *tr)
{
    if (tr->valid && tr->valid->targets && tr->opt.report_perplexity) { /* text */
        const fwm__seq_metrics *m = &tr->last_valid_seq;
        fprintf(out, "eval at step %ld (epoch %ld): valid perplexity %.4f (%ld tokens)\n",
                tr->step, tr->epoch, m->count ? exp(m->nll_sum / (double)m->count) : 0.0,
                m->count);
        fflush(out);
        return;
    }
    if (tr->valid && tr->valid->targets) { /* a sequence-to-sequence task */
        fwm__seq_summary v = fwm__seq_metrics_summary(&tr->last_valid_seq);
        fprintf(out,
                "eval at step %ld: valid partial accuracy %.2f%% (%ld answers), total accuracy "
                "%.4f%%, total bpc %.5f, partial bpc %.5f (over all targets %.5f)\n",
                tr->step, 100 * v.partial_accuracy, tr->last_valid_seq.partial_count,
                100 * v.total_accuracy, v.total_bpc, v.partial_bpc, v.partial_bpc_all);
        fflush(out);
        return;
    }
    fprintf(out, "eval at step %ld: valid accuracy %.2f%% (%ld questions), answer perplexity %.4f\n",
            tr->step, 100 * fwm__metrics_accuracy(&tr->last_valid), tr->last_valid.count,
            fwm__metrics_perplexity(&tr->last_valid));
    fflush(out);
}

fwm_status fwm__log_append(const char *run_dir, const fwm__trainer *tr, fwm_error *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/log.csv", run_dir);
    struct stat st;
    int is_new = stat(path, &st) != 0 || st.st_size == 0;
    FILE *f = fopen(path, "a");
    if (!f)
        return fwm__error(err, FWM_ERR_IO, "cannot open %s: %s", path, strerror(errno));
    if (is_new)
        fprintf(f, "step,epoch,tokens,seconds,lr,train_loss,train_acc,valid_acc,valid_ppl\n");
    double lr = fwm__adam_lr(&tr->opt.adam, tr->step);
    fprintf(f, "%ld,%ld,%ld,%.1f,%.6g,%.6f,%.6f,%.6f,%.6f\n", tr->step, tr->epoch, tr->tokens,
            tr->seconds, lr, tr->running_steps ? tr->running_loss / (double)tr->running_steps : 0,
            fwm__metrics_accuracy(&tr->running), fwm__metrics_accuracy(&tr->last_valid),
            fwm__metrics_perplexity(&tr->last_valid));
    if (fclose(f) != 0)
        return fwm__error(err, FWM_ERR_IO, "cannot write %s: %s", path, strerror(errno));
    return FWM_OK;
}

void fwm__plot_curve(const char *run_dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/curve.gp", run_dir);
    FILE *f = fopen(path, "w");
    if (!f)
        return;
    fprintf(f,
            "# Learning curve of an fwm-train run: gnuplot curve.gp (in the run folder)\n"
            "set datafile separator ','\n"
            "set terminal png size 900,500 noenhanced\n"
            "set output 'curve.png'\n"
            "set title 'fwm-train: answer accuracy at \"?\"'\n"
            "set xlabel 'step'\n"
            "set ylabel 'accuracy (%%)'\n"
            "set y2label 'training loss'\n"
            "set y2tics\n"
            "set key bottom right\n"
            "set grid\n"
            "plot 'log.csv' skip 1 using 1:($7*100) with linespoints pt 7 ps 0.6 title 'train', \\\n"
            "     'log.csv' skip 1 using 1:($8*100) with linespoints pt 7 ps 0.6 title 'valid', \\\n"
            "     'log.csv' skip 1 using 1:6 axes x1y2 with linespoints pt 7 ps 0.6 title 'train loss'\n");
    fclose(f);
    if (system("command -v gnuplot >/dev/null 2>&1") != 0)
        return;
    char command[4200];
    snprintf(command, sizeof command, "cd '%s' && gnuplot curve.gp >/dev/null 2>&1", run_dir);
    if (system(command) != 0)
        return;
}
