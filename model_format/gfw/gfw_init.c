/* gfw_init.c - the Gated Fast Weights model's random initialisation (gfw_init.h). */
#include "gfw/gfw_init.h"

#include <math.h>

#include "fwm_rng.h"
#include "gfw/gfw_schema.h"

void fwm__gfw_init_weights(const fwm_gfw_hparams *hp, uint64_t seed,
                           float *const tensors[FWM_GFW_MAX_TENSORS]) {
    size_t n = fwm__gfw_tensor_count(hp);
    for (size_t i = 0; i < n; i++) {
        char name[48];
        uint64_t rows, cols;
        fwm__gfw_tensor_at(hp, i, name, &rows, &cols);
        double a = fwm__gfw_tensor_is_matrix(hp, i) ? sqrt(6.0 / ((double)rows + (double)cols)) : 0.0;
        fwm__rng rng;
        fwm__rng_seed(&rng, seed, i);
        for (uint64_t e = 0; e < rows * cols; e++)
            tensors[i][e] = a == 0.0 ? 0.0f : (float)fwm__rng_uniform(&rng, -a, a);
    }
}
