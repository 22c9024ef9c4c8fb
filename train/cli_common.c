/* cli_common.c - shared command-line helpers of fwm-train and fwm-eval (see cli_common.h). */
#include "cli_common.h"

#include <math.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *fwm__default_data_dir(void)
{
    const char *env = getenv("FWM_BABI_DIR");
    if (env && env[0])
        return env;
    /* Relative to the working folder: run from the source root, ../shared is beside it. No build or
     * source path is compiled in. */
    static const char *const candidates[] = {"../shared/data/babi-v1.2", "shared/data/babi-v1.2"};
    for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; i++) {
        struct stat st;
        if (stat(candidates[i], &st) == 0 && S_ISDIR(st.st_mode))
            return candidates[i];
    }
    return candidates[0];
}

const char *fwm__data_folder(const char *set)
{
    if (strcmp(set, "10k") == 0)
        return "en-valid-10k";
    if (strcmp(set, "1k") == 0)
        return "en-valid";
    return set;
}

long fwm__parse_long(const char *option, const char *value, long min, long max)
{
    char *end = NULL;
    errno = 0;
    long v = value ? strtol(value, &end, 10) : 0;
    if (!value || errno || end == value || *end || v < min || v > max) {
        fprintf(stderr, "error: %s expects an integer from %ld to %ld, got '%s'\n", option, min,
                max, value ? value : "(nothing)");
        exit(2);
    }
    return v;
}

double fwm__parse_double(const char *option, const char *value, double min, double max)
{
    char *end = NULL;
    errno = 0;
    double v = value ? strtod(value, &end) : 0;
    if (!value || errno || end == value || *end || !(v >= min && v <= max)) {
        fprintf(stderr, "error: %s expects a number from %g to %g, got '%s'\n", option, min, max,
                value ? value : "(nothing)");
        exit(2);
    }
    return v;
}

int fwm__cpu_count(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n >= 1 ? (int)n : 1;
}

void fwm__print_task_table(FILE *out, const char *title, const fwm__qa_metrics *m)
{
    fprintf(out, "%s\n  task  questions  accuracy\n", title);
    for (int t = 1; t < FWM__METRIC_TASKS; t++)
        if (m->task_count[t])
            fprintf(out, "  %4d  %9ld  %7.2f%%\n", t, m->task_count[t],
                    100.0 * (double)m->task_correct[t] / (double)m->task_count[t]);
    fprintf(out, "  all   %9ld  %7.2f%%   answer perplexity %.4f\n", m->count,
            100 * fwm__metrics_accuracy(m), fwm__metrics_perplexity(m));
}

void fwm__print_seq_table(FILE *out, const char *title, const fwm__seq_metrics *m)
{
    fwm__seq_summary s = fwm__seq_metrics_summary(m);
    fprintf(out,
            "%s\n"
            "  targets %9ld  total accuracy   %.8f  total bpc   %.8f\n"
            "  answers %9ld  partial accuracy %.8f  partial bpc %.8f  partial bpc over all "
            "targets %.8f\n",
            title, m->count, s.total_accuracy, s.total_bpc, m->partial_count, s.partial_accuracy,
            s.partial_bpc, s.partial_bpc_all);
}

void fwm__print_mean_error(FILE *out, const fwm__qa_metrics *m)
{
    double error_sum = 0;
    int tasks = 0, failed = 0;
    for (int t = 1; t < FWM__METRIC_TASKS; t++)
        if (m->task_count[t]) {
            double error = 1.0 - (double)m->task_correct[t] / (double)m->task_count[t];
            error_sum += error;
            tasks++;
            failed += error > 0.05;
        }
    fprintf(out, "  mean error %.2f%% over %d task(s); %d task(s) failed (error > 5%%)\n",
            tasks ? 100 * error_sum / tasks : 0.0, tasks, failed);
}

void fwm__print_message(void *user, const char *message)
{
    (void)user;
    fprintf(stderr, "note: %s\n", message);
}

void fwm__print_text_perplexity(FILE *out, const char *split, const fwm__seq_metrics *m, int lanes)
{
    fprintf(out, "%s perplexity %.4f (%ld tokens, %d lane%s)\n", split,
            m->count ? exp(m->nll_sum / (double)m->count) : 0.0, m->count, lanes,
            lanes == 1 ? "" : "s");
}
