/* stm_init.c - the STM's random initialisation (stm_init.h). */
#include "stm/stm_init.h"

#include <math.h>
#include <string.h>

#include "fwm_rng.h"

/* The constant every entry of tensor `name` takes, if it is drawn as a constant. */
static int constant_of(const fwm_stm_hparams *hp, const char *name, uint64_t e, uint64_t cols,
                       float *value) {
    if (strcmp(name, "stm.position.weight") == 0) *value = 1.0f / (float)hp->sentence_length;
    else if (strcmp(name, "stm.sam.norm.weight") == 0) *value = 1.0f;
    else if (strcmp(name, "stm.sam.norm.bias") == 0) *value = 0.0f;
    else if (strcmp(name, "stm.alpha") == 0)
        *value = e == 0 && hp->input_mode == FWM_STM_INPUT_SENTENCE ? 1.0f : 0.0f;
    else if (strcmp(name, "stm.answer.norm") == 0) *value = (e / cols) % 2 == 0 ? 1.0f : 0.0f;
    else if (strncmp(name, "stm.answer.", 11) == 0 && strstr(name, ".bias")) *value = 0.0f;
    else return 0;
    return 1;
}

/* The half-width of tensor `name`'s uniform draw. */
static double bound(const fwm_stm_hparams *hp, const char *name, uint64_t rows, uint64_t cols) {
    double E = hp->embedding_length, d = hp->memory_size, nq = hp->query_count, nr = hp->relation_length;
    if (strcmp(name, "token_embd.weight") == 0) return 0.1;
    if (strncmp(name, "stm.write", 9) == 0 || strncmp(name, "stm.value", 9) == 0 ||
        strncmp(name, "stm.select", 10) == 0)
        return 1.0 / sqrt(E);
    if (strncmp(name, "stm.gate", 8) == 0 || strncmp(name, "stm.sam.", 8) == 0) return 1.0 / sqrt(d);
    if (strncmp(name, "stm.transfer", 12) == 0) return 1.0 / sqrt(nq * d);
    if (strcmp(name, "stm.item.init") == 0) return 1.0 / sqrt(2 * d);
    if (strcmp(name, "stm.relation.init") == 0) return 1.0 / sqrt(2 * d + nq);
    if (strncmp(name, "stm.distill", 11) == 0) return 1.0 / d;
    if (strncmp(name, "stm.answer.", 11) == 0 ||
        (hp->input_mode == FWM_STM_INPUT_SENTENCE && strcmp(name, "output.weight") == 0))
        return sqrt(6.0 / ((double)rows + (double)cols)); /* Xavier uniform */
    return 1.0 / sqrt(nq * nr); /* word mode's output.weight and output.bias */
}

void fwm__stm_init_weights(const fwm_stm_hparams *hp, uint64_t seed,
                           float *const tensors[FWM_STM_MAX_TENSORS]) {
    size_t n = fwm__stm_tensor_count(hp);
    for (size_t i = 0; i < n; i++) {
        char name[48];
        uint64_t rows, cols;
        fwm__stm_tensor_at(hp, i, name, &rows, &cols);
        double a = bound(hp, name, rows, cols);
        fwm__rng rng;
        fwm__rng_seed(&rng, seed, i);
        for (uint64_t e = 0; e < rows * cols; e++) {
            float value;
            tensors[i][e] = constant_of(hp, name, e, cols, &value) ? value
                                                                   : (float)fwm__rng_uniform(&rng, -a, a);
        }
        if (strcmp(name, "stm.gate.bias") == 0)
            for (uint64_t e = hp->memory_size; e < rows; e++) tensors[i][e] += 1.0f; /* forget half */
    }
}
