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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "babi_standard.h"
#include "blas_kernels.h"
#include "cli_common.h"
#include "evaluate.h"
#include "model_io.h"
#include "text_eval.h"
#include "thread_pool.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: fwm-eval MODEL [options]\n"
            "catbAbI accuracy at \"?\" (overall, per task 1-20) and answer perplexity.\n"
            "  --task catbabi|ar|text   catbAbI (default), the associative retrieval task (the\n"
            "                      model's vocabulary must be the task's 15 symbols), or the\n"
            "                      perplexity of a text model on --data DIR's valid.txt or\n"
            "                      test.txt: one session, primed, its state carried through the\n"
            "                      whole file; for test, also at the softmax temperature that is\n"
            "                      best on valid (0.80 to 1.20 in steps of 0.01)\n"
            "  --max-tokens N      --task text: score only the first N tokens of each file\n"
            FWM__AR_OPTIONS_HELP
            "  --protocol catbabi|standard   catbabi: the stories concatenated, the state carried\n"
            "                      (default); standard: a sample per question (the story's\n"
            "                      statements before it, then the question), each from the\n"
            "                      reset state; adds the mean error over the tasks\n"
            "  --tasks LIST        evaluate only these bAbI tasks (e.g. 1,6,20; default all)\n"
            "  --data DIR          bAbI v1.2 folder (default: %s)\n"
            "  --set 10k|1k|FOLDER (default 10k)\n"
            "  --split test|valid|train  (default test; train: how well the model fits the\n"
            "                      data it was trained on)\n"
            "  --lanes B           lanes (default 1 for test, as in the paper; 100 otherwise)\n"
            "  --max-windows N     stop after N windows of 200 steps (default 0: all)\n"
            "  --threads N         threads (default: all CPUs)\n",
            fwm__default_data_dir());
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
    const char *model_path = NULL, *data_dir = NULL, *set = "10k", *split_name = "test";
    const char *task_name = "catbabi", *protocol = "catbabi";
    uint8_t keep_task[FWM__TASK_COUNT + 1]; /* --tasks */
    int tasks_given = 0;
    fwm__ar_config ar;
    fwm__ar_config_default(&ar);
    int lanes = 0, threads = fwm__cpu_count();
    long max_windows = 0, max_tokens = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (a[0] != '-') {
            if (model_path) {
                fprintf(stderr, "error: more than one model given (%s, %s)\n", model_path, a);
                return 2;
            }
            model_path = a;
            continue;
        } else if (!v) {
            fprintf(stderr, "error: unknown option or missing value: %s (see --help)\n", a);
            return 2;
        } else if (strcmp(a, "--task") == 0) {
            task_name = v;
        } else if (strcmp(a, "--protocol") == 0) {
            protocol = v;
        } else if (strcmp(a, "--tasks") == 0) {
            tasks_given = 1;
            memset(keep_task, 0, sizeof keep_task);
            char *copy = strdup(v), *save = NULL;
            for (char *t = copy ? strtok_r(copy, ",", &save) : NULL; t;
                 t = strtok_r(NULL, ",", &save))
                keep_task[fwm__parse_long(a, t, 1, FWM__TASK_COUNT)] = 1;
            free(copy);
        } else if (fwm__parse_ar_option(a, v, &ar)) {
            /* parsed */
        } else if (strcmp(a, "--data") == 0) {
            data_dir = v;
        } else if (strcmp(a, "--set") == 0) {
            set = v;
        } else if (strcmp(a, "--split") == 0) {
            split_name = v;
        } else if (strcmp(a, "--lanes") == 0) {
            lanes = (int)fwm__parse_long(a, v, 1, 1 << 16);
        } else if (strcmp(a, "--max-tokens") == 0) {
            max_tokens = fwm__parse_long(a, v, 1, 1L << 40);
        } else if (strcmp(a, "--max-windows") == 0) {
            max_windows = fwm__parse_long(a, v, 0, 1L << 40);
        } else if (strcmp(a, "--threads") == 0) {
            threads = (int)fwm__parse_long(a, v, 1, 1024);
        } else {
            fprintf(stderr, "error: unknown option %s (see --help)\n", a);
            return 2;
        }
        i++;
    }
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
