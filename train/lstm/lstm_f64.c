/* lstm_f64.c - the LSTM baseline's trainer model in double (the gradient check's reference precision). */
#include "lstm_model.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fast_math.h"
#include "fwm_error.h"
#include "fwm_rng.h"

#define FWM_REAL_DOUBLE 1
#include "real_template.h"
#include "shared_kernels_impl.h"
#include "lstm_forward_impl.h"
#include "lstm_backward_impl.h"
