/* catbabi_dump.c - print the trainer's catbAbI vocabulary and a digest of each split's stream, for
 * check_catbabi.py to compare with its own independent reading of the files.
 *   catbabi_dump DATA_DIR FOLDER
 * Output: "word ID TEXT" lines, then "split NAME SAMPLES TOKENS DIGEST" where TOKENS counts the
 * unshuffled stream ([<eos>] + words per sample) and DIGEST = fold of h = h * 1000003 + id mod 2^64
 * over it. */
#include <inttypes.h>
#include <stdio.h>

#include "catbabi_stream.h"

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: catbabi_dump DATA_DIR FOLDER\n");
        return 2;
    }
    fwm__catbabi data;
    fwm_error err;
    if (fwm__catbabi_load(&data, argv[1], argv[2], NULL, NULL, NULL, &err) != FWM_OK) {
        fprintf(stderr, "error: %s\n", err.message);
        return 1;
    }
    for (uint32_t i = 0; i < data.vocab.count; i++)
        printf("word %u %s\n", i, data.vocab.words[i]);
    for (int s = 0; s < FWM__SPLIT_COUNT; s++) {
        const fwm__catbabi_split *sp = &data.splits[s];
        uint64_t h = 0, tokens = 0;
        for (size_t k = 0; k < sp->n_samples; k++) {
            h = h * 1000003u + data.eos_id;
            tokens++;
            for (uint32_t i = 0; i < sp->lengths[k]; i++, tokens++)
                h = h * 1000003u + sp->words[sp->starts[k] + i];
        }
        printf("split %s %zu %" PRIu64 " %" PRIu64 "\n", fwm__split_names[s], sp->n_samples, tokens,
               h);
    }
    fwm__catbabi_release(&data);
    return 0;
}
