/* address.c - TCP addresses of --listen and --http (address.h). */
#include "address.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool is_loopback(const struct sockaddr *sa) {
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
    }
    if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        return IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
    }
    return false;
}

int fwm__address_parse_tcp(const char *spec, const char *text, const char *flag, struct sockaddr_storage *addr) {
    char host[256];
    const char *colon;
    if (spec[0] == '[') {
        const char *close = strchr(spec, ']');
        if (!close || close[1] != ':') goto bad;
        snprintf(host, sizeof host, "%.*s", (int)(close - spec - 1), spec + 1);
        colon = close + 1;
    } else {
        colon = strrchr(spec, ':');
        if (!colon) goto bad;
        snprintf(host, sizeof host, "%.*s", (int)(colon - spec), spec);
    }
    char *end = NULL;
    long port = strtol(colon + 1, &end, 10);
    if (!end || *end != '\0' || end == colon + 1 || port < 0 || port > 65535) goto bad;
    if (strcmp(host, "localhost") == 0) snprintf(host, sizeof host, "127.0.0.1");
    memset(addr, 0, sizeof *addr);
    if (uv_ip4_addr(host, (int)port, (struct sockaddr_in *)addr) != 0 &&
        uv_ip6_addr(host, (int)port, (struct sockaddr_in6 *)addr) != 0) {
        fprintf(stderr, "fwm-serve: --%s %s: '%s' is not a numeric IPv4/IPv6 address\n", flag, text, host);
        return 1;
    }
    return 0;
bad:
    fprintf(stderr, "fwm-serve: --%s %s: expected tcp://HOST:PORT%s\n", flag, text,
            strcmp(flag, "listen") == 0 ? " or unix:PATH" : "");
    return 1;
}

void fwm__address_format(const struct sockaddr_storage *bound, const char *scheme, char *out, size_t size) {
    char ip[64] = "?";
    if (bound->ss_family == AF_INET6) {
        uv_ip6_name((const struct sockaddr_in6 *)bound, ip, sizeof ip);
        snprintf(out, size, "%s://[%s]:%d", scheme, ip, ntohs(((const struct sockaddr_in6 *)bound)->sin6_port));
    } else {
        uv_ip4_name((const struct sockaddr_in *)bound, ip, sizeof ip);
        snprintf(out, size, "%s://%s:%d", scheme, ip, ntohs(((const struct sockaddr_in *)bound)->sin_port));
    }
}

int fwm__address_check_exposure(fwm__server *s, const struct sockaddr_storage *bound, const char *address,
                                const char *flag) {
    if (is_loopback((const struct sockaddr *)bound) || s->auth_token) return 0;
    if (!s->config->insecure) {
        fprintf(stderr, "fwm-serve: --%s %s: not a loopback address, and the server has no token: anyone who "
                        "can reach it could use every session. Give --auth-token-file FILE (or --insecure to "
                        "serve it without authentication)\n", flag, address);
        return 1;
    }
    fwm__server_log(s, "WARNING: %s is not a loopback address: the server is reachable from the network "
                       "and has no authentication (--insecure)", address);
    return 0;
}
