/* cli_common.h - what fwm-train and fwm-eval share on the command line: option parsing helpers,
 * the default data folder, the per-task table, the associative retrieval task's options and
 * metrics table. */
#ifndef FWM_TRAIN_CLI_COMMON_H
#define FWM_TRAIN_CLI_COMMON_H

#include <stddef.h>
#include <stdio.h>

#include "ar_task.h"
#include "metrics.h"
#include "options.h"

/* The bAbI folder used when --data is not given: $FWM_BABI_DIR, else ../shared/data/babi-v1.2 (beside
 * the source tree when run from its root), else ./shared/data/babi-v1.2, both from the working folder. */
const char *fwm__default_data_dir(void);

/* "10k" -> "en-valid-10k", "1k" -> "en-valid"; anything else is taken as a folder name. */
const char *fwm__data_folder(const char *set);

/* Parse an integer / real option value or exit with a message naming the option. */
long fwm__parse_long(const char *option, const char *value, long min, long max);
double fwm__parse_double(const char *option, const char *value, double min, double max);

/* Number of online CPUs (>= 1). */
int fwm__cpu_count(void);

/* Per-task accuracy table (tasks 1..20 that have questions) and the overall line. */
void fwm__print_task_table(FILE *out, const char *title, const fwm__qa_metrics *metrics);

/* The associative retrieval task's options (--ar-seed S, --ar-train N, --ar-valid N, --ar-test N,
 * --ar-max-storages N) as rows of an options table (options.h) whose settings hold an
 * fwm__ar_config at offset `base`. --ar-max-storages counts from fwm__ar_config_default's
 * min_storages, 1. */
#define FWM__AR_OPTIONS(base)                                                                     \
    {"--ar-seed", FWM__OPTION_U64, (base) + offsetof(fwm__ar_config, seed), 0, 1L << 60, "S",     \
     "the generator's seed (default {})", NULL, 0, NULL},                                         \
    {"--ar-train", FWM__OPTION_SIZE, (base) + offsetof(fwm__ar_config, queries[FWM__SPLIT_TRAIN]), \
     1, 100000000, "N", "training queries (default {})", NULL, 0, NULL},                          \
    {"--ar-valid", FWM__OPTION_SIZE, (base) + offsetof(fwm__ar_config, queries[FWM__SPLIT_VALID]), \
     1, 100000000, "N", "validation queries (default {})", NULL, 0, NULL},                        \
    {"--ar-test", FWM__OPTION_SIZE, (base) + offsetof(fwm__ar_config, queries[FWM__SPLIT_TEST]),   \
     1, 100000000, "N", "test queries (default {})", NULL, 0, NULL},                              \
    {"--ar-max-storages", FWM__OPTION_INT, (base) + offsetof(fwm__ar_config, max_storages), 1,     \
     FWM__AR_MAX_STORAGES, "N", "storages before a query: 1..N (default {}, the paper's)", NULL,  \
     0, NULL}

/* The sequence-to-sequence metrics: total and partial accuracy and bits per character, and the
 * partial bits over all targets (docs/AR_TASK.md "Protocol and metrics"). */
void fwm__print_seq_table(FILE *out, const char *title, const fwm__seq_metrics *metrics);
/* --task text: "<split> perplexity X (N tokens, L lane(s))" over every target. */
void fwm__print_text_perplexity(FILE *out, const char *split, const fwm__seq_metrics *metrics,
                                int lanes);

/* The standard bAbI protocol's summary line: the mean error over the tasks that have questions
 * (1 - accuracy, averaged with each task weighted alike) and the tasks failed (error > 5%). */
void fwm__print_mean_error(FILE *out, const fwm__qa_metrics *metrics);

/* Message callback that prints "note: <message>" to stderr. */
void fwm__print_message(void *user, const char *message);

#endif
