/* address.h - TCP addresses of --listen and --http: "HOST:PORT" or "[IPV6]:PORT" parsed, a bound
 * address written back as "scheme://IP:PORT", and the rule that a non-loopback address needs a
 * token (or --insecure, then warned about).
 */
#ifndef FWM_SERVER_NET_ADDRESS_H
#define FWM_SERVER_NET_ADDRESS_H

#include <stddef.h>
#include <sys/socket.h>

#include "server.h"

/* Parse "HOST:PORT" or "[IPV6]:PORT" (after tcp://) into `addr`; 1 after printing why (naming --flag). */
int fwm__address_parse_tcp(const char *spec, const char *text, const char *flag, struct sockaddr_storage *addr);
/* "scheme://IP:PORT" of a bound address. */
void fwm__address_format(const struct sockaddr_storage *bound, const char *scheme, char *out, size_t size);
/* A non-loopback address needs a token or --insecure (then warned about); 1 after printing why. */
int fwm__address_check_exposure(fwm__server *server, const struct sockaddr_storage *bound, const char *address,
                                const char *flag);

#endif
