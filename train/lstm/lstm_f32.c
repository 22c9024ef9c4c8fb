/* lstm_f32.c - the LSTM baseline's trainer model in float (single-precision BLAS: training, evaluation). */
#include "lstm_model.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fast_math.h"
#include "fwm_error.h"
#include "fwm_rng.h"

#define FWM_REAL_DOUBLE 0
#include "real_template.h"
#include "shared_kernels_impl.h"
#include "lstm_forward_impl.h"
#include "lstm_backward_impl.h"
