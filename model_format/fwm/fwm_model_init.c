/* fwm_model_init.c - the released code's weight initialisation (see fwm_model_init.h). */
#include "fwm_model_init.h"

#include <math.h>

#include "fwm_model_shape.h"
#include "fwm_rng.h"

typedef enum init_kind { INIT_ZERO, INIT_UNIFORM, INIT_NORMAL } init_kind;

void fwm__model_init_weights(const fwm_hparams *hp, uint64_t seed,
                             float *const tensors[FWM_MAX_TENSORS]) {
    double h = hp->hidden_size, s = hp->memory_s, t = hp->memory_t, v = hp->vocab_size;
    double lstm_bound = 1.0 / sqrt(h);
    double memory_bound = sqrt(6.0 / (h + s));
    double out_bound = 1.0 / sqrt(t);
    for (int i = 0; i < fwm__tensor_count(hp); i++) {
        init_kind kind = INIT_UNIFORM;
        double scale = 0; /* bound of U(-scale, scale) or standard deviation */
        if (i >= FWM_TENSOR_COUNT) /* a lower layer: the LSTM baseline's, U(+-1/sqrt(H)) */
            scale = lstm_bound;
        else switch ((enum fwm_tensor_index)i) {
        case FWM_TENSOR_token_embd: kind = INIT_NORMAL, scale = 1.0; break;
        case FWM_TENSOR_lstm_weight_ih:
        case FWM_TENSOR_lstm_weight_hh: scale = lstm_bound; break;
        case FWM_TENSOR_lstm_bias: kind = INIT_ZERO; break;
        case FWM_TENSOR_write_weight:
        case FWM_TENSOR_read_weight: scale = memory_bound; break;
        case FWM_TENSOR_write_bias:
        case FWM_TENSOR_read_bias: scale = lstm_bound; break; /* default Linear init, fan_in H */
        case FWM_TENSOR_out_weight:
        case FWM_TENSOR_out_bias: scale = out_bound; break;
        case FWM_TENSOR_output_weight: kind = INIT_NORMAL, scale = sqrt(2.0 / (v + h)); break;
        default: break;
        }
        uint64_t rows, cols;
        fwm__tensor_shape(hp, i, &rows, &cols, NULL);
        uint64_t n = rows * cols;
        float *out = tensors[i];
        fwm__rng rng;
        fwm__rng_seed(&rng, seed, (uint64_t)i);
        for (uint64_t k = 0; k < n; k++) {
            double x = 0;
            if (kind == INIT_UNIFORM)
                x = fwm__rng_uniform(&rng, -scale, scale);
            else if (kind == INIT_NORMAL)
                x = scale * fwm__rng_normal(&rng);
            out[k] = (float)x;
        }
    }
}
