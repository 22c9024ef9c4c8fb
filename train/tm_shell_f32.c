/* tm_shell_f32.c - the trainer models' shell (tm_shell.h) in float. */
#include "tm_shell.h"

#include <stdlib.h>
#include <string.h>

#define FWM_REAL_DOUBLE 0
#include "real_template.h"
#include "tm_shell_impl.h"
