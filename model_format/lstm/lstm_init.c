/* lstm_init.c - the LSTM baseline's random initialisation (lstm_init.h). */
#include "lstm/lstm_init.h"

#include <math.h>

#include "fwm_rng.h"

void fwm__lstm_init_weights(const fwm_lstm_hparams *hp, uint64_t seed,
                            float *const tensors[FWM_LSTM_MAX_TENSORS]) {
    size_t n = fwm__lstm_tensor_count(hp);
    double k = 1.0 / sqrt((double)hp->hidden_size);
    for (size_t i = 0; i < n; i++) {
        char name[48];
        uint64_t rows, cols;
        fwm__lstm_tensor_at(hp, i, name, &rows, &cols);
        double a = i == 0 || i == n - 2 ? 0.1 : i == n - 1 ? 0.0 : k;
        fwm__rng rng;
        fwm__rng_seed(&rng, seed, i);
        for (uint64_t e = 0; e < rows * cols; e++)
            tensors[i][e] = a == 0.0 ? 0.0f : (float)fwm__rng_uniform(&rng, -a, a);
    }
}
