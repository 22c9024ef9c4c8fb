/* fwm_f32.c - the trainer's model in float with single-precision BLAS (training, evaluation). */
#include "fwm_model.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fast_math.h"
#include "fwm_error.h"
#include "fwm_rng.h"

#define FWM_REAL_DOUBLE 0
#include "real_template.h"
#include "vector_ops_impl.h"
#include "shared_kernels_impl.h"
#include "fwm_kernels_impl.h"
#include "fwm_forward_impl.h"
#include "fwm_backward_impl.h"
