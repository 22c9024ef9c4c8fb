/* methods.h - the protocol's methods: check a decoded request's arguments, answer it at once
 * (hello, open, close, stats, errors) or turn it into a job for the session's queue.
 *
 * Loop thread only. Not for: delimiting or decoding bytes (protocol/rpc_scan.c, protocol/rpc_codec.c), running jobs
 * (sessions/jobs.c), or socket I/O (net/connection.c).
 */
#ifndef FWM_SERVER_METHODS_H
#define FWM_SERVER_METHODS_H

#include <stddef.h>
#include <stdint.h>

struct fwm__connection;

/* Handle one complete message (accepted by the pre-scanner) that arrived on `c`. */
void fwm__methods_dispatch(struct fwm__connection *c, const uint8_t *message, size_t length);

#endif
