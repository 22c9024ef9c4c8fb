/* fwm_f64.c - the trainer's model in double (the gradient check's reference precision). */
#include "fwm_model.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fast_math.h"
#include "fwm_error.h"
#include "fwm_rng.h"

#define FWM_REAL_DOUBLE 1
#include "real_template.h"
#include "vector_ops_impl.h"
#include "shared_kernels_impl.h"
#include "fwm_kernels_impl.h"
#include "fwm_forward_impl.h"
#include "fwm_backward_impl.h"
