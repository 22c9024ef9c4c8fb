/* ar_dump.c - print the trainer's associative retrieval streams (train/ar_task.c) as text, for
 * check_ar_task.py to compare with the reference generator tests/reference/ar_task.py.
 *   ar_dump SEED MAX_STORAGES TRAIN VALID TEST
 * Output per split: "split NAME QUERIES CHARACTERS", then the input stream and the target stream,
 * one line each, as characters (the symbols of ar_task.h; the space as a space). */
#include <stdio.h>
#include <stdlib.h>

#include "ar_task.h"

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: ar_dump SEED MAX_STORAGES TRAIN VALID TEST\n");
        return 2;
    }
    fwm__ar_config config;
    fwm__ar_config_default(&config);
    config.seed = strtoull(argv[1], NULL, 10);
    config.max_storages = atoi(argv[2]);
    for (int s = 0; s < FWM__SPLIT_COUNT; s++)
        config.queries[s] = strtoull(argv[3 + s], NULL, 10);
    fwm__catbabi data;
    fwm_error err;
    if (fwm__ar_load(&data, &config, &err) != FWM_OK) {
        fprintf(stderr, "error: %s\n", err.message);
        return 1;
    }
    for (int s = 0; s < FWM__SPLIT_COUNT; s++) {
        const fwm__catbabi_split *sp = &data.splits[s];
        printf("split %s %zu %zu\n", fwm__split_names[s], sp->n_questions, sp->n_words);
        for (int line = 0; line < 2; line++) {
            const uint32_t *ids = line == 0 ? sp->words : sp->targets;
            for (size_t i = 0; i < sp->n_words; i++)
                putchar(ids[i] < FWM__AR_VOCAB_SIZE ? fwm__ar_symbols[ids[i]] : '?');
            putchar('\n');
        }
    }
    fwm__catbabi_release(&data);
    return 0;
}
