/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * kdbusctl bus-make and kdbusctl endpoint make a kdbus object that lives as long as the
 * handle that made it: both hold the handle until a signal, the bus's hangup, or (with
 * --stdin) end of input. The signals are taken before the object exists, so a signal that
 * comes early cannot kill the tool between making the object and waiting on it.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/signalfd.h>
#include "tools/kdbusctl.h"

int ctl_hold_signals(const char *tool) {
        sigset_t mask;
        int sfd;

        sigemptyset(&mask);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGHUP);
        sigprocmask(SIG_BLOCK, &mask, NULL);
        sfd = signalfd(-1, &mask, SFD_CLOEXEC);
        if (sfd < 0)
                fprintf(stderr, "kdbusctl %s: signalfd: %s\n", tool, strerror(errno));
        return sfd;
}

void ctl_hold_until_done(int signal_fd, int handle_fd, bool use_stdin) {
        struct pollfd pfd[3] = {
                { .fd = signal_fd, .events = POLLIN },
                { .fd = handle_fd, .events = POLLIN },  /* kdbusd goes: HUP */
                { .fd = STDIN_FILENO, .events = POLLIN },
        };

        for (;;) {
                char junk[256];

                if (poll(pfd, use_stdin ? 3 : 2, -1) < 0 && errno != EINTR)
                        break;
                if (pfd[0].revents || pfd[1].revents)
                        break;
                if (pfd[2].revents && read(STDIN_FILENO, junk, sizeof(junk)) <= 0)
                        break;
        }
}
