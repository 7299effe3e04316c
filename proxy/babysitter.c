/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The babysitter between the bus and an activated service (see babysitter.h). It talks to
 * the bus over a socketpair: the bus writes BABYSITTER_KILL to have the service killed (the
 * start timed out) and closes its end to release the service; the babysitter writes one
 * BabysitterStatus when the service ends first, then exits.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "proxy/babysitter.h"
#include "util/error.h"

#define BABYSITTER_KILL 'k'
#define BABYSITTER_READY 'r'    /* it holds no descriptor of the bus's but its own any more */
#define BABYSITTER_KEEP_MAX 4

/* Close every descriptor but stdio and the @n_keep of @keep (sorted here): the babysitter
 * and the service must not hold the bus's sockets (a client the bus drops would not see
 * its connection end; kdbusd closes a peer's socket without EPOLL_CTL_DEL, proxy/loop.h). */
static void close_all_but(int *keep, size_t n_keep) {
        unsigned from = 3;

        for (size_t i = 1; i < n_keep; ++i)
                for (size_t j = i; j > 0 && keep[j - 1] > keep[j]; --j) {
                        int t = keep[j];

                        keep[j] = keep[j - 1];
                        keep[j - 1] = t;
                }
        for (size_t i = 0; i < n_keep; ++i) {
                if ((unsigned)keep[i] > from)
                        (void) close_range(from, (unsigned)keep[i] - 1, 0);
                if ((unsigned)keep[i] + 1 > from)
                        from = (unsigned)keep[i] + 1;
        }
        (void) close_range(from, ~0u, 0);
}

/* In the babysitter: never returns. @keep: @fd, then what the service needs. */
__attribute__((__noreturn__)) static void babysit(int fd, void (*run)(void *userdata),
                                                  void *userdata, int *keep, size_t n_keep) {
        BabysitterStatus st = { .code = 0 };
        siginfo_t si = { .si_pid = 0 };
        struct pollfd p[2];
        sigset_t all;
        pid_t pid;
        int pidfd;

        (void) sigemptyset(&all);
        (void) sigprocmask(SIG_SETMASK, &all, NULL);
        for (int i = 1; i < NSIG; ++i)
                (void) signal(i, SIG_DFL);
        /* before the service is forked, so that it never holds them either; then the bus
         * may go on (babysitter_spawn() waits for this byte) */
        close_all_but(keep, n_keep);
        if (write(fd, &(char){ BABYSITTER_READY }, 1) != 1)
                _exit(127);
        pid = fork();
        if (pid < 0)
                _exit(127);
        if (pid == 0) {
                (void) close(fd);
                run(userdata);
                _exit(127);
        }
        for (size_t i = 0; i < n_keep; ++i)
                if (keep[i] != fd)
                        (void) close(keep[i]);
        pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
        if (pidfd < 0) {
                /* cannot watch it: report as soon as it ends, never release it early */
                (void) waitid(P_PID, (id_t)pid, &si, WEXITED);
                goto report;
        }
        p[0] = (struct pollfd){ .fd = pidfd, .events = POLLIN };
        p[1] = (struct pollfd){ .fd = fd, .events = POLLIN };
        for (;;) {
                char c;
                ssize_t n;

                if (poll(p, 2, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        _exit(127);
                }
                if (p[0].revents) {
                        (void) waitid(P_PID, (id_t)pid, &si, WEXITED);
                        break;
                }
                n = read(fd, &c, 1);
                if (n < 0 && (errno == EINTR || errno == EAGAIN))
                        continue;
                if (n <= 0)
                        _exit(0);       /* released: the service goes to init */
                if (c == BABYSITTER_KILL)
                        (void) kill(pid, SIGKILL);
        }
report:
        st.code = si.si_code;
        st.status = si.si_status;
        (void) !write(fd, &st, sizeof(st));
        _exit(0);
}

int babysitter_spawn(void (*run)(void *userdata), void *userdata, const int *keep,
                     size_t n_keep, pid_t *ret_pid, int *ret_fd) {
        int sv[2], all[1 + BABYSITTER_KEEP_MAX], r;
        size_t n_all = 0;
        ssize_t n;
        pid_t pid;
        char b;

        if (n_keep > BABYSITTER_KEEP_MAX)
                return error_origin(-EINVAL);
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
                return error_origin(-errno);
        all[n_all++] = sv[1];
        for (size_t i = 0; i < n_keep; ++i)
                if (keep[i] >= 0)
                        all[n_all++] = keep[i];
        pid = fork();
        if (pid < 0) {
                r = -errno;
                (void) close(sv[0]);
                (void) close(sv[1]);
                return error_origin(r);
        }
        if (pid == 0) {
                (void) close(sv[0]);
                babysit(sv[1], run, userdata, all, n_all);
        }
        (void) close(sv[1]);
        /* until the babysitter dropped its copies of the bus's descriptors: from then on no
         * other process holds them (a fork and a close_range(), well under a millisecond) */
        do
                n = read(sv[0], &b, 1);
        while (n < 0 && errno == EINTR);
        if (n != 1 || b != BABYSITTER_READY) {
                /* it died first: reaped, it holds nothing any more */
                (void) close(sv[0]);
                (void) waitpid(pid, NULL, 0);
                return error_origin(-ECHILD);
        }
        *ret_pid = pid;
        *ret_fd = sv[0];
        return 0;
}

int babysitter_status(int fd, BabysitterStatus *ret) {
        BabysitterStatus st;
        ssize_t n;

        do
                n = recv(fd, &st, sizeof(st), MSG_DONTWAIT);
        while (n < 0 && errno == EINTR);
        if (n != (ssize_t)sizeof(st))
                return -ENODATA;
        *ret = st;
        return 0;
}

void babysitter_kill(int fd) {
        const char c = BABYSITTER_KILL;

        (void) !send(fd, &c, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
}
