/* eval_main.c - fwm-eval: catbAbI accuracy of a model file at "?" positions, overall and per task,
 * with the answer perplexity; or, with --task ar, the associative retrieval task's metrics (total
 * and partial accuracy and bits per character, ar_task.h, docs/AR_TASK.md); or, with --task text,
 * a text model's perplexity on a folder's valid.txt and test.txt through the runtime, with the
 * softmax temperature tuned on valid (text_eval.h).
 *
 * The data's words are mapped through the model's own vocabulary (a word the model lacks is an
 * error naming it). The split is shuffled once with the fixed evaluation seed and walked with the
 * state carried from a zero start; the paper's test protocol is one lane (the default for test).
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "babi_standard.h"
#include "blas_kernels.h"
#include "cli_common.h"
#include "evaluate.h"
#include "model_io.h"
#include "options.h"
#include "text_eval.h"
#include "thread_pool.h"

/* What the options set (the table `options` below). */
typedef struct eval_settings {
    const char *model_path, *data_dir, *set, *split_name, *task_name, *protocol;
    uint8_t keep_task[FWM__TASK_COUNT + 1]; /* --tasks */
    fwm__ar_config ar;
    int lanes, threads;
    long max_windows, max_tokens;
} eval_settings;

static void settings_defaults(eval_settings *s)
{
    memset(s, 0, sizeof *s);
    s->set = "10k";
    s->split_name = "test";
    s->task_name = "catbabi";
    s->protocol = "catbabi";
    fwm__ar_config_default(&s->ar);
    s->threads = fwm__cpu_count();
}

static int set_model(void *settings, const char *word)
{
    eval_settings *s = settings;
    if (s->model_path) {
        fprintf(stderr, "error: more than one model given (%s, %s)\n", s->model_path, word);
        return 2;
    }
    s->model_path = word;
    return 0;
}

static int set_tasks(void *settings, const fwm__option *option, const char *name, const char *value)
{
    (void)option;
    eval_settings *s = settings;
    memset(s->keep_task, 0, sizeof s->keep_task);
    char *copy = strdup(value), *save = NULL;
    for (char *t = copy ? strtok_r(copy, ",", &save) : NULL; t; t = strtok_r(NULL, ",", &save))
        s->keep_task[fwm__parse_long(name, t, 1, FWM__TASK_COUNT)] = 1;
    free(copy);
    return 0;
}

#define S(field) offsetof(eval_settings, field)
#define TEXT(line) {NULL, FWM__OPTION_TEXT, 0, 0, 0, NULL, line, NULL, 0, NULL}
/* name, kind, where, min, max, value's name, help ("{}": the default), hook, -, - */
static const fwm__option options[] = {
    TEXT("usage: fwm-eval MODEL [options]\n"
         "catbAbI accuracy at \"?\" (overall, per task 1-20) and answer perplexity."),
    {"--task", FWM__OPTION_STRING, S(task_name), 0, 0, "catbabi|ar|text",
     "catbAbI (default), the associative retrieval task (the\n"
     "model's vocabulary must be the task's 15 symbols), or the\n"
     "perplexity of a text model on --data DIR's valid.txt or\n"
     "test.txt: one session, primed, its state carried through the\n"
     "whole file; for test, also at the softmax temperature that is\n"
     "best on valid (0.80 to 1.20 in steps of 0.01)", NULL, 0, NULL},
    {"--max-tokens", FWM__OPTION_LONG, S(max_tokens), 1, 1L << 40, "N",
     "--task text: score only the first N tokens of each file", NULL, 0, NULL},
    FWM__AR_OPTIONS(S(ar)),
    {"--protocol", FWM__OPTION_STRING, S(protocol), 0, 0, "catbabi|standard",
     "catbabi: the stories concatenated, the state carried\n"
     "(default); standard: a sample per question (the story's\n"
     "statements before it, then the question), each from the\n"
     "reset state; adds the mean error over the tasks", NULL, 0, NULL},
    {"--tasks", FWM__OPTION_VALUE, 0, 0, 0, "LIST",
     "evaluate only these bAbI tasks (e.g. 1,6,20; default all)", set_tasks, 0, NULL},
    {"--data", FWM__OPTION_STRING, S(data_dir), 0, 0, "DIR", "bAbI v1.2 folder (default: {data})",
     NULL, 0, NULL},
    {"--set", FWM__OPTION_STRING, S(set), 0, 0, "10k|1k|FOLDER", "(default {})", NULL, 0, NULL},
    {"--split", FWM__OPTION_STRING, S(split_name), 0, 0, "test|valid|train",
     "(default {}; train: how well the model fits the\n"
     "data it was trained on)", NULL, 0, NULL},
    {"--lanes", FWM__OPTION_INT, S(lanes), 1, 1 << 16, "B",
     "lanes (default 1 for test, as in the paper; 100 otherwise)", NULL, 0, NULL},
    {"--max-windows", FWM__OPTION_LONG, S(max_windows), 0, 1L << 40, "N",
     "stop after N windows of 200 steps (default {}: all)", NULL, 0, NULL},
    {"--threads", FWM__OPTION_INT, S(threads), 1, 1024, "N", "threads (default: all CPUs)", NULL, 0,
     NULL},
};
#undef S
#undef TEXT
#define OPTION_COUNT (sizeof options / sizeof options[0])

static void help_value(const char *key, char *buffer, size_t size)
{
    snprintf(buffer, size, "%s", strcmp(key, "data") == 0 ? fwm__default_data_dir() : "");
}

static void usage(FILE *out)
{
    eval_settings defaults;
    settings_defaults(&defaults);
    fwm__options_help(out, options, OPTION_COUNT, 22, &defaults, help_value);
}

/* --task text: the split's perplexity; for test, also at the temperature tuned on valid. */
static int eval_text(const char *model_path, const char *data_dir, int split, size_t max_tokens)
{
    if (split == FWM__SPLIT_TRAIN) {
        fprintf(stderr, "error: --task text scores valid or test\n");
        return 2;
    }
    fwm_error err;
    fwm_model *model;
    if (fwm_model_load(model_path, NULL, &model, &err) != FWM_OK) {
        fprintf(stderr, "error: %s\n", err.message);
        return 1;
    }
    char path[4200];
    fwm__text_score valid, test;
    snprintf(path, sizeof path, "%s/valid.txt", data_dir);
    int code = 1;
    if (fwm__text_score_file(model, path, 0, FWM__TEMPERATURE_COUNT, max_tokens, &valid, &err) !=
        FWM_OK)
        goto fail;
    int best = 0;
    for (int k = 1; k < FWM__TEMPERATURE_COUNT; k++)
        if (valid.nll_at[k] < valid.nll_at[best])
            best = k;
    printf("valid perplexity %.6f (%zu tokens, %.2f%% <unk>; one session, state carried)\n",
           fwm__text_perplexity(valid.nll, valid.tokens), valid.tokens,
           100.0 * (double)valid.unknown / (double)valid.tokens);
    printf("temperature %.2f: valid perplexity %.6f (the best of 0.80..1.20)\n",
           fwm__temperature_at(best), fwm__text_perplexity(valid.nll_at[best], valid.tokens));
    if (split == FWM__SPLIT_TEST) {
        snprintf(path, sizeof path, "%s/test.txt", data_dir);
        /* test at temperature 1 and at the one chosen on valid only */
        if (fwm__text_score_file(model, path, best, best + 1, max_tokens, &test, &err) != FWM_OK)
            goto fail;
        printf("test perplexity %.6f (%zu tokens, %.2f%% <unk>)\n",
               fwm__text_perplexity(test.nll, test.tokens), test.tokens,
               100.0 * (double)test.unknown / (double)test.tokens);
        printf("temperature %.2f (tuned on valid): test perplexity %.6f\n",
               fwm__temperature_at(best), fwm__text_perplexity(test.nll_at[best], test.tokens));
    }
    code = 0;
    goto done;
fail:
    fprintf(stderr, "error: %s\n", err.message);
done:
    fwm_model_free(model);
    return code;
}

int main(int argc, char **argv)
{
    fwm__blas_choose_kernels(argv);
    eval_settings settings;
    settings_defaults(&settings);
    unsigned char given[OPTION_COUNT];
    const fwm__options_parser parser = {options, OPTION_COUNT, &settings, 0, stderr, NULL,
                                        set_model};
    fwm__options_result parsed = {0, NULL, given};
    int parse_code = fwm__options_parse(&parser, argc, argv, &parsed);
    if (parse_code != 0)
        return parse_code;
    if (parsed.help) {
        usage(stdout);
        return 0;
    }
    const char *model_path = settings.model_path, *data_dir = settings.data_dir;
    const char *set = settings.set, *split_name = settings.split_name;
    const char *task_name = settings.task_name, *protocol = settings.protocol;
    const uint8_t *keep_task = settings.keep_task;
    int tasks_given = fwm__options_given(&parser, &parsed, "--tasks");
    fwm__ar_config ar = settings.ar;
    int lanes = settings.lanes, threads = settings.threads;
    long max_windows = settings.max_windows, max_tokens = settings.max_tokens;
    if (!model_path) {
        usage(stderr);
        return 2;
    }
    int split = -1;
    for (int s = 0; s < FWM__SPLIT_COUNT; s++)
        if (strcmp(split_name, fwm__split_names[s]) == 0)
            split = s;
    if (split < 0) {
        fprintf(stderr, "error: --split expects train, valid or test, got '%s'\n", split_name);
        return 2;
    }
    int task_ar = strcmp(task_name, "ar") == 0;
    if (strcmp(task_name, "text") == 0) {
        if (!data_dir) {
            fprintf(stderr, "error: --task text needs --data DIR (a folder with valid.txt and "
                            "test.txt)\n");
            return 2;
        }
        return eval_text(model_path, data_dir, split, (size_t)max_tokens);
    }
    if (max_tokens) {
        fprintf(stderr, "error: --max-tokens is for --task text\n");
        return 2;
    }
    if (!task_ar && strcmp(task_name, "catbabi") != 0) {
        fprintf(stderr, "error: --task expects catbabi, ar or text, got '%s'\n", task_name);
        return 2;
    }
    int standard = strcmp(protocol, "standard") == 0;
    if ((!standard && strcmp(protocol, "catbabi") != 0) || (standard && task_ar)) {
        fprintf(stderr, "error: --protocol expects catbabi or standard (bAbI only), got '%s'\n",
                protocol);
        return 2;
    }
    if (!lanes)
        lanes = split == FWM__SPLIT_TEST ? 1 : 100;
    if (!data_dir)
        data_dir = fwm__default_data_dir();

    int exit_code = 1;
    fwm_error err;
    fwm__loaded_model model;
    fwm__catbabi data;
    memset(&data, 0, sizeof data);
    fwm__pool *pool = NULL;
    if (fwm__model_read(model_path, &model, &err) != FWM_OK) {
        fprintf(stderr, "error: %s\n", err.message);
        return 1;
    }
    const char *folder = fwm__data_folder(set);
    if (task_ar) {
        if (!fwm__ar_vocab_matches(&model.vocab, &err))
            goto fail;
        for (int s = 0; s < FWM__SPLIT_COUNT; s++) /* only the split evaluated is generated */
            if (s != split)
                ar.queries[s] = 1;
        if (fwm__ar_load(&data, &ar, &err) != FWM_OK)
            goto fail;
    } else if (fwm__catbabi_load(&data, data_dir, folder, &model.vocab, fwm__print_message, NULL,
                                 &err) != FWM_OK ||
               (standard && fwm__catbabi_to_standard(&data, &model.vocab, &err) != FWM_OK)) {
        goto fail;
    }
    if (tasks_given) {
        if (task_ar) {
            fprintf(stderr, "error: --tasks is for the bAbI tasks, not --task ar\n");
            goto done_usage;
        }
        fwm__catbabi_split_keep_tasks(&data.splits[split], keep_task, data.qmark_id);
    }
    fwm__blas_use_one_thread();
    if (threads > 1 && !(pool = fwm__pool_create(threads))) {
        snprintf(err.message, sizeof err.message, "cannot start %d threads", threads);
        goto fail;
    }
    fwm__eval_options options = {lanes, 200, max_windows, standard};
    if (standard)
        options.window = 64; /* samples of ~60 words: less padding (the figures are the same) */
    fwm__qa_metrics metrics;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (task_ar) {
        fwm__seq_metrics seq;
        if (fwm__evaluate_seq(&model.spec, model.params, &data.splits[split], data.pad_id,
                              &options, pool, &seq, &err) != FWM_OK)
            goto fail;
        clock_gettime(CLOCK_MONOTONIC, &t1);
        char title[512];
        snprintf(title, sizeof title,
                 "%s: associative retrieval, %s split of seed %llu (%zu queries, 1..%d storages), "
                 "%d lane(s), state carried",
                 model_path, split_name, (unsigned long long)ar.seed, ar.queries[split],
                 ar.max_storages, lanes);
        fwm__print_seq_table(stdout, title, &seq);
        fprintf(stderr, "(%.1f s)\n",
                (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
        exit_code = 0;
        goto done;
    }
    if (fwm__evaluate(&model.spec, model.params, &data.splits[split], data.pad_id, data.eos_id,
                      data.qmark_id, &options, pool, &metrics, &err) != FWM_OK)
        goto fail;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    char title[512];
    snprintf(title, sizeof title, "%s: %s split of %s/%s, %d lane(s), %s", model_path,
             split_name, data_dir, folder, lanes,
             standard ? "standard protocol (a sample per question, from the reset state)"
                      : "state carried");
    fwm__print_task_table(stdout, title, &metrics);
    if (standard)
        fwm__print_mean_error(stdout, &metrics);
    fprintf(stderr, "(%.1f s)\n",
            (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
    exit_code = 0;
    goto done;
fail:
    fprintf(stderr, "error: %s\n", err.message);
    goto done;
done_usage:
    exit_code = 2;
done:
    fwm__pool_free(pool);
    fwm__catbabi_release(&data);
    fwm__loaded_model_release(&model);
    return exit_code;
}
