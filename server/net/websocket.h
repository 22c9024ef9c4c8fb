/* websocket.h - msgpack-RPC over WebSocket: one more transport under the connection object.
 *
 * The HTTP port (http.c) hands an upgraded libwebsockets connection here; it becomes an ordinary
 * fwm__connection (connection.c) whose bytes come from WebSocket messages instead of a libuv stream,
 * so methods, limits, backpressure, authentication and timeouts are the very same code. One binary
 * message carries exactly one msgpack-RPC message, both ways; a text message, one larger than
 * max-message-bytes, or one that does not hold exactly one msgpack-RPC message fails the connection
 * with the `protocol` error notification, then a close. Loop thread only.
 */
#ifndef FWM_SERVER_WEBSOCKET_H
#define FWM_SERVER_WEBSOCKET_H

#include <stdbool.h>
#include <stddef.h>

#include "connection.h"

struct lws;

/* A WebSocket connection was established on `wsi`: its connection, or NULL (refused: the caller
 * closes the wsi). `authenticated`: it presented the token in an Authorization header. */
fwm__connection *fwm__ws_open(fwm__server *server, struct lws *wsi, bool authenticated);
/* Bytes of an incoming WebSocket message (LWS_CALLBACK_RECEIVE). */
void fwm__ws_receive(fwm__connection *c, const void *bytes, size_t length);
/* The wsi may be written (LWS_CALLBACK_SERVER_WRITEABLE): -1 asks lws to close it. */
int fwm__ws_writable(fwm__connection *c);
/* libwebsockets closed the wsi (LWS_CALLBACK_CLOSED): the connection ends now. */
void fwm__ws_closed(fwm__connection *c);

#endif
