/* stm_writer.c - fwm__stm_model_write: a complete `stm` model file from hyperparameters, a
 * vocabulary and F32 tensors, written atomically; checked with the reader's rules first, assembled
 * in memory, parsed back as a self-check (the body is arch_writer_impl.h, shared with the other
 * architectures; writer_common.h does what the FWM's writer does too). */
#include "stm/stm_schema.h"

#define FWM_ARCH_WRITER stm
#define FWM_ARCH_WRITER_UPPER STM
#include "arch_writer_impl.h"
