/* http.h - the HTTP port (--http): Prometheus metrics, health, the model list, static files, and
 * msgpack-RPC over WebSocket, served by libwebsockets on the server's own libuv loop.
 *
 * The listening socket is the server's (bound, checked and accepted here like --listen's, so the
 * loopback rule, the connection limit and the out-of-descriptors refusal are the same); each accepted
 * socket is handed to libwebsockets, which parses HTTP and WebSocket within its limits (header bytes,
 * timeouts). A WebSocket at /rpc becomes an ordinary connection (websocket.h).
 * Not for: the metrics' names and text (stats/prometheus.c, given as server->render_metrics), the
 * connection itself (connection.c).
 */
#ifndef FWM_SERVER_HTTP_H
#define FWM_SERVER_HTTP_H

#include "server.h"

typedef struct fwm__http fwm__http;

/* Bind --http and start libwebsockets on the loop. Returns 0, or 1 after printing why. */
int fwm__http_open(fwm__server *server);
/* "http://IP:PORT" as bound. */
const char *fwm__http_address(const fwm__http *http);
/* Stop listening and begin destroying the lws context (its handles close on the loop). */
void fwm__http_close(fwm__server *server);
/* After the loop has ended: free what is left. */
void fwm__http_release(fwm__server *server);

#endif
