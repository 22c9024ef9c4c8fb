/* socket.h - msgpack-RPC over a TCP or Unix socket: the connection's transport is a libuv stream,
 * read into the connection's reader as bytes arrive and written with uv_write. Accepting checks the
 * memory budget, the connection limit and the descriptors left; a connection refused for want of
 * one of them is told why (an `overloaded` error notification) and closed.
 * Loop thread only.
 */
#ifndef FWM_SERVER_NET_SOCKET_H
#define FWM_SERVER_NET_SOCKET_H

#include <uv.h>

#include "connection.h"

/* Accept a pending connection on `listener` (a TCP or Unix-socket listener). */
void fwm__socket_accept(fwm__server *server, uv_stream_t *listener);

#endif
