/* descriptors.c - file descriptors for connections (descriptors.h). */
#include "descriptors.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#define FD_MARGIN 32 /* descriptors besides connections: stdio, the loop's, listeners, the spare */
#define ACCEPT_LOG_INTERVAL_NS 5000000000ull

/* Raise RLIMIT_NOFILE's soft limit to the hard one; warn when max-connections cannot fit under it. */
void fwm__descriptors_raise_limit(fwm__server *s) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return;
    if (rl.rlim_cur < rl.rlim_max) {
        struct rlimit raised = {rl.rlim_max, rl.rlim_max};
        if (setrlimit(RLIMIT_NOFILE, &raised) == 0) rl.rlim_cur = rl.rlim_max;
    }
    s->fd_limit = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t)rl.rlim_cur;
    uint64_t want = (uint64_t)s->config->max_connections + FD_MARGIN;
    if (s->fd_limit < want)
        fwm__server_log(s, "WARNING: max-connections %zu needs about %llu file descriptors, but the open-file limit "
                           "(RLIMIT_NOFILE) is %llu: connections beyond it (less the server's own dozen or so "
                           "descriptors) are refused with 'overloaded' (raise the limit with ulimit -n, or lower "
                           "--max-connections)",
                        s->config->max_connections, (unsigned long long)want, (unsigned long long)s->fd_limit);
}

void fwm__descriptors_open_spare(fwm__server *s) {
    s->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    s->has_spare_fd = s->spare_fd >= 0;
}

void fwm__descriptors_close_spare(fwm__server *s) {
    if (s->has_spare_fd) close(s->spare_fd);
    s->has_spare_fd = false;
}

bool fwm__descriptors_left(fwm__server *s) {
    if (!s->has_spare_fd) fwm__descriptors_open_spare(s); /* lost in a trick: take it back first */
    int probe = s->has_spare_fd ? fcntl(s->spare_fd, F_DUPFD_CLOEXEC, 0) : -1;
    if (probe < 0) return errno != EMFILE && errno != ENFILE; /* another failure (no /dev/null): cannot tell */
    close(probe);
    return true;
}

void fwm__descriptors_accept_error(fwm__server *s, int status) {
    fwm__metrics *m = &s->metrics;
    m->accept_errors++;
    uint64_t now = fwm__now_ns();
    if (m->accept_log_ns && now - m->accept_log_ns < ACCEPT_LOG_INTERVAL_NS) {
        m->accept_errors_unlogged++;
        return;
    }
    fwm__server_log(s, "cannot accept a connection: %s (open-file limit %llu, %llu connections open; "
                       "%llu more failures since the last report, %llu in all; see stats accept_errors)",
                    uv_strerror(status), (unsigned long long)s->fd_limit, (unsigned long long)m->connections_open,
                    (unsigned long long)m->accept_errors_unlogged, (unsigned long long)m->accept_errors);
    m->accept_log_ns = now;
    m->accept_errors_unlogged = 0;
}
