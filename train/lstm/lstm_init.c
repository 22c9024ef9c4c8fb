/* lstm_init.c - the LSTM baseline's initial weights (see lstm_model.h). */
#include <math.h>

#include "fwm_rng.h"
#include "lstm_model.h"

void fwm__lstm_init_weights(const fwm_lstm_hparams *hp, uint64_t seed, float *const *tensors)
{
    size_t count = fwm_lstm_tensor_count(hp), last = count - 1;
    double k = 1.0 / sqrt((double)hp->hidden_size);
    for (size_t i = 0; i < count; i++) {
        char name[48];
        uint64_t rows, cols;
        fwm_lstm_tensor_at(hp, i, name, &rows, &cols);
        size_t n = (size_t)(rows * cols);
        fwm__rng rng;
        fwm__rng_seed(&rng, seed, i);
        /* token_embd and output.weight as AWD-LSTM; the layers as PyTorch's nn.LSTM */
        double a = i == 0 || i == last - 1 ? 0.1 : k;
        for (size_t j = 0; j < n; j++)
            tensors[i][j] = i == last ? 0.0f : (float)fwm__rng_uniform(&rng, -a, a);
    }
}
