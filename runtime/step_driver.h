/* step_driver.h - the step entry points every architecture but the FWM shares: one session, a
 * token sequence, or a batch of sessions, over the architecture's chunk step (its fwm__step_kernel
 * in arch_ops.h). Internal to libfwm.
 *
 * Each entry point checks everything first (step_checks.h, with the messages the FWM has always
 * given), then takes the step's scratch (on the stack when it is small, else one allocation), lets the
 * architecture lay its workspace over it, and runs the chunk step on up to kernel->chunk_sessions
 * sessions at a time: a single step is a chunk of one, a sequence a run of chunks of one, a batch
 * its sessions in order. The chunk steps batch their weight products across the chunk with
 * fwm__matvec_batch, whose arithmetic per element does not depend on the batch, so the three are
 * bit-identical by construction. The FWM has its own entry points (fwm/fwm_step.c), the hot path, over the
 * same checks. */
#ifndef FWM_RUNTIME_STEP_DRIVER_H
#define FWM_RUNTIME_STEP_DRIVER_H

#include <stddef.h>
#include <stdint.h>

#include "fwm/fwm.h"

struct fwm_session;

/* The room the driver gives an architecture's workspace struct (each static-asserts it fits). */
#define FWM_STEP_WORKSPACE_BYTES 512

/* The most scratch floats the driver keeps on its stack (64 KiB; an architecture's kernel may
 * choose fewer); larger scratch is allocated per call. */
#define FWM_STEP_STACK_FLOATS 16384

fwm_status fwm__driven_step(struct fwm_session *session, uint32_t token, float *logits, fwm_error *err);
fwm_status fwm__driven_step_sequence(struct fwm_session *session, const uint32_t *tokens, size_t count,
                                     float *logits, fwm_error *err);
fwm_status fwm__driven_batch_step(struct fwm_session *const *sessions, const uint32_t *tokens, size_t count,
                                  float *logits, fwm_error *err);

#endif
