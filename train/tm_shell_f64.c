/* tm_shell_f64.c - the trainer models' shell (tm_shell.h) in double. */
#include "tm_shell.h"

#include <stdlib.h>
#include <string.h>

#define FWM_REAL_DOUBLE 1
#include "real_template.h"
#include "tm_shell_impl.h"
