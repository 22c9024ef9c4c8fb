/* trace_job.h - the `trace` method's work on a worker: step a copy of a session through the given
 * tokens and pack, for every step, what it wrote into the fast-weight memory and what each chained
 * read retrieved (fwm_session_trace), and optionally the memory after the last token
 * (docs/PROTOCOL.md, `trace`). The session itself is not changed, so nothing is logged. */
#ifndef FWM_SERVER_TRACE_JOB_H
#define FWM_SERVER_TRACE_JOB_H

#include <stdbool.h>

#include <msgpack.h>

#include "job_context.h"

/* Tokens one trace may step: its response grows with every step (about 2 KB each for the bundled
 * models), and methods/session_methods.c also bounds it by max-output-bytes before the job is queued. */
#define FWM_TRACE_MAX_TOKENS 256

/* Pack the response body (a map) of TRACE `job` on `entry` into `pk`. False when out of memory, with
 * nothing packed; everything is allocated before the first byte is written. */
bool fwm__trace_pack(fwm__job_context *ctx, const fwm__session_entry *entry, const fwm__job *job,
                     msgpack_packer *pk);

#endif
