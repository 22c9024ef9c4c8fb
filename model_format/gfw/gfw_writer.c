/* gfw_writer.c - fwm__gfw_model_write: a complete `gfw` model file from hyperparameters, a
 * vocabulary and F32 tensors, written atomically; checked with the reader's rules first, assembled
 * in memory, parsed back as a self-check (the body is arch_writer_impl.h, shared with the other
 * architectures; writer_common.h does what the FWM's writer does too). */
#include "gfw/gfw_schema.h"

#define FWM_ARCH_WRITER gfw
#define FWM_ARCH_WRITER_UPPER GFW
#include "arch_writer_impl.h"
