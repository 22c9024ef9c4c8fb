/* mnm_init.c - the MNM baseline's random initialisation (mnm_init.h). */
#include "mnm/mnm_init.h"

#include <math.h>

#include "fwm_rng.h"

/* The half-width of tensor i's uniform draw; 0 for the standard normal embedding. */
static double bound(const fwm_mnm_hparams *hp, size_t i, uint64_t cols) {
    size_t mem_end = FWM_MNM_HEAD_TENSORS + (size_t)hp->memory_layers;
    if (i == 0) return 0.0;
    if (i <= 5) return 1.0 / sqrt((double)hp->hidden_size);  /* controller, interaction */
    if (i <= 7) return 1.0 / sqrt((double)hp->key_length);   /* rate */
    if (i <= 9) return 1.0 / sqrt((double)hp->value_length); /* targets */
    if (i < mem_end) return 1.0 / sqrt((double)cols);        /* the initial memory */
    if (i < mem_end + 2) return 1.0 / sqrt((double)hp->hidden_size + hp->value_length); /* W_o */
    return 1.0 / sqrt((double)hp->output_length);                                      /* W_s */
}

void fwm__mnm_init_weights(const fwm_mnm_hparams *hp, uint64_t seed,
                           float *const tensors[FWM_MNM_MAX_TENSORS]) {
    size_t n = fwm__mnm_tensor_count(hp);
    for (size_t i = 0; i < n; i++) {
        char name[48];
        uint64_t rows, cols;
        fwm__mnm_tensor_at(hp, i, name, &rows, &cols);
        double a = bound(hp, i, cols);
        fwm__rng rng;
        fwm__rng_seed(&rng, seed, i);
        for (uint64_t e = 0; e < rows * cols; e++)
            tensors[i][e] = a == 0.0 ? (float)fwm__rng_normal(&rng) : (float)fwm__rng_uniform(&rng, -a, a);
    }
}
