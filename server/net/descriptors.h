/* descriptors.h - file descriptors for connections: the open-file limit, the spare descriptor held
 * so a connection can be refused politely when they run out, and accept failures (counted, and
 * logged at most every 5 s). Shared by the listeners (listen.c, socket.c) and the HTTP port (http.c).
 * Loop thread only.
 */
#ifndef FWM_SERVER_NET_DESCRIPTORS_H
#define FWM_SERVER_NET_DESCRIPTORS_H

#include <stdbool.h>

#include "server.h"

/* Raise RLIMIT_NOFILE's soft limit to the hard one; warn when max-connections cannot fit under it. */
void fwm__descriptors_raise_limit(fwm__server *server);
/* Take / give back the spare descriptor (/dev/null). */
void fwm__descriptors_open_spare(fwm__server *server);
void fwm__descriptors_close_spare(fwm__server *server);
/* Whether one more file descriptor can be opened now (probed with a duplicate of the spare). */
bool fwm__descriptors_left(fwm__server *server);
/* Count a connection that could not be accepted (libuv status) and log it, at most every 5 s. */
void fwm__descriptors_accept_error(fwm__server *server, int status);

#endif
