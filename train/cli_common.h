/* cli_common.h - what fwm-train and fwm-eval share on the command line: option parsing helpers,
 * the default data folder, the per-task table. */
#ifndef FWM_TRAIN_CLI_COMMON_H
#define FWM_TRAIN_CLI_COMMON_H

#include <stdio.h>

#include "metrics.h"

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

/* Message callback that prints "note: <message>" to stderr. */
void fwm__print_message(void *user, const char *message);

#endif
