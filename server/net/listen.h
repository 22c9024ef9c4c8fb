/* listen.h - the msgpack-RPC listeners (--listen): TCP and Unix sockets bound, their connections
 * accepted (socket.c), and the port file (--port-file) that names every bound address.
 * Loop thread only.
 */
#ifndef FWM_SERVER_NET_LISTEN_H
#define FWM_SERVER_NET_LISTEN_H

#include "server.h"

/* Bind every --listen address (raising the open-file limit first). 0, or 1 after printing why. */
int fwm__listeners_open(fwm__server *server);
void fwm__listeners_close(fwm__server *server);
/* Write --port-file: the listeners' bound addresses, then `http_address` (NULL: none). 0, or 1
 * after printing why. */
int fwm__listeners_write_port_file(const fwm__server *server, const char *http_address);

#endif
