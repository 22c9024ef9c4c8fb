/* stm_f32.c - the STM's trainer model in float (training and evaluation). */
#include "stm_model.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fast_math.h"
#include "fwm_error.h"

#define FWM_REAL_DOUBLE 0
#include "real_template.h"
#include "shared_kernels_impl.h"
#include "vector_ops_impl.h"
#include "stm_forward_impl.h"
#include "stm_backward_impl.h"
