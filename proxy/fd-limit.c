/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * RLIMIT_NOFILE: raised at start, a reserve for the connected peers, a spare fd to refuse
 * connections with at EMFILE (see fd-limit.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>
#include "proxy/fd-limit.h"
#include "proxy/log.h"
#include "util/macro.h"

static struct rlimit fd_limit_saved = { RLIM_INFINITY, RLIM_INFINITY };
static bool fd_limit_have_saved;
static uint64_t fd_limit_soft;
static int fd_limit_spare = -1;

static int fd_limit_spare_open(void) {
        if (fd_limit_spare < 0)
                fd_limit_spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
        return fd_limit_spare;
}

/**
 * fd_limit_raise() - lift the soft RLIMIT_NOFILE to the hard one
 *
 * As dbus-daemon: root (CAP_SYS_RESOURCE) first makes sure of at least FD_LIMIT_ENOUGH,
 * raising the hard limit if needed; then the soft limit goes up to the hard one. Failures
 * are logged and leave the limit as it was.
 * Return: the soft limit now in force.
 */
uint64_t fd_limit_raise(void) {
        struct rlimit lim;

        if (getrlimit(RLIMIT_NOFILE, &lim) < 0)
                return fd_limit_get();
        if (!fd_limit_have_saved) {
                fd_limit_saved = lim;
                fd_limit_have_saved = true;
        }
        if (geteuid() == 0) {
                struct rlimit want = lim;

                if (want.rlim_cur != RLIM_INFINITY && want.rlim_cur < FD_LIMIT_ENOUGH)
                        want.rlim_cur = FD_LIMIT_ENOUGH;
                if (want.rlim_max != RLIM_INFINITY && want.rlim_max < want.rlim_cur)
                        want.rlim_max = want.rlim_cur;
                if (setrlimit(RLIMIT_NOFILE, &want) == 0)
                        lim = want;
        }
        if (lim.rlim_cur < lim.rlim_max) {
                struct rlimit want = { lim.rlim_max, lim.rlim_max };

                if (setrlimit(RLIMIT_NOFILE, &want) == 0)
                        lim = want;
                else
                        proxy_log(LOG_WARNING, "Cannot raise the soft fd limit from %llu to "
                                  "the hard limit %llu: %s, ignoring",
                                  (unsigned long long)lim.rlim_cur,
                                  (unsigned long long)lim.rlim_max, strerror(errno));
        }
        fd_limit_soft = lim.rlim_cur;
        (void) fd_limit_spare_open();
        return fd_limit_soft;
}

/**
 * fd_limit_get() - the soft RLIMIT_NOFILE
 *
 * Return: the limit, UINT64_MAX for none.
 */
uint64_t fd_limit_get(void) {
        struct rlimit lim;

        if (!fd_limit_soft) {
                if (getrlimit(RLIMIT_NOFILE, &lim) < 0)
                        return UINT64_MAX;
                fd_limit_soft = lim.rlim_cur == RLIM_INFINITY ? UINT64_MAX : lim.rlim_cur;
        }
        return fd_limit_soft;
}

/**
 * fd_limit_reserve() - the fds kept below the limit for the connected peers
 *
 * A sixteenth of the limit, at least 8, at most 256: 64 at systemd's default 1,024.
 * Return: the number.
 */
unsigned fd_limit_reserve(void) {
        uint64_t soft = fd_limit_get();

        return (unsigned)MIN(MAX(soft / 16, (uint64_t)8), (uint64_t)256);
}

/**
 * fd_limit_in_reserve() - whether a new fd leaves fewer than the reserve free
 * @fd:         an fd just opened (accept)
 *
 * Return: true if @fd is among the last fd_limit_reserve() below the limit.
 */
bool fd_limit_in_reserve(int fd) {
        uint64_t soft = fd_limit_get();

        return fd >= 0 && soft != UINT64_MAX && (uint64_t)fd + fd_limit_reserve() >= soft;
}

/**
 * fd_limit_refuse_pending() - close pending connections when accept() fails with EMFILE
 * @listen_fd:  the listening socket
 *
 * The spare fd is closed so one accept() can succeed, the connection is closed at once
 * (its client sees the end of the stream, not a silent wait), and the spare reopened;
 * at most 32 a call. Return: how many were refused, or -EMFILE when there was no spare
 * (the caller pauses accepting instead).
 */
int fd_limit_refuse_pending(int listen_fd) {
        int n = 0, fd;

        while (n < 32) {
                if (fd_limit_spare < 0)
                        return n ? n : -EMFILE;
                fd_limit_spare = fd_close(fd_limit_spare);
                fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
                if (fd >= 0) {
                        (void) close(fd);
                        ++n;
                }
                (void) fd_limit_spare_open();
                if (fd < 0)
                        break;
        }
        return n;
}

/**
 * fd_limit_restore() - the soft limit kdbusd was started with (in a child before exec)
 *
 * A service started with a soft limit above 1,024 may break if it uses select().
 */
void fd_limit_restore(void) {
        if (fd_limit_have_saved)
                (void) setrlimit(RLIMIT_NOFILE, &fd_limit_saved);
}
