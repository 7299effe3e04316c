/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * proxy/babysitter.c: when babysitter_spawn() returns, neither the babysitter nor the
 * service holds a descriptor of the bus's but the ones handed on (kdbusd closes a peer's
 * socket without EPOLL_CTL_DEL, which is safe only while no other process holds a copy:
 * proxy/loop.h loop_io_free_closing()); the service's end is reported.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "proxy/babysitter.h"
#include <glib.h>

/* The descriptors open in /proc/@pid/fd (0: this process), but @skip, into @fds. */
static unsigned list_fds(pid_t pid, int skip, int *fds, unsigned max) {
        char path[64];
        struct dirent *de;
        unsigned n = 0;
        DIR *d;

        if (pid)
                snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
        else
                snprintf(path, sizeof(path), "/proc/self/fd");
        d = opendir(path);
        if (!d)
                return UINT32_MAX;
        while ((de = readdir(d))) {
                int fd;

                if (de->d_name[0] == '.')
                        continue;
                fd = atoi(de->d_name);
                if (fd == dirfd(d) || fd == skip || n == max)
                        continue;
                fds[n++] = fd;
        }
        closedir(d);
        return n;
}

/* The service: tells through @report (its only descriptor but stdio) what it holds. */
static void service(void *userdata) {
        int report = *(int *)userdata, fds[64];
        unsigned n = list_fds(0, report, fds, 64), others = 0;

        for (unsigned i = 0; i < n && n != UINT32_MAX; ++i)
                others += fds[i] > 2;
        (void) !write(report, &others, sizeof(others));
        _exit(0);
}

static void test_no_bus_fds(void) {
        int bus_sock[2], report[2], sitter, fds[64];
        unsigned n, others = UINT32_MAX;
        BabysitterStatus st;
        pid_t pid;
        siginfo_t si;

        /* stand-ins for the bus's peer sockets, O_CLOEXEC as kdbusd's are */
        g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, bus_sock), ==, 0);
        g_assert_cmpint(pipe2(report, O_CLOEXEC), ==, 0);
        g_assert_cmpint(babysitter_spawn(service, &report[1], (const int[]){ report[1], -1 }, 2,
                                         &pid, &sitter), ==, 0);
        (void) close(report[1]);

        /* the babysitter: stdio and its socket, nothing else, by now */
        n = list_fds(pid, -1, fds, 64);
        g_assert_cmpuint(n, !=, UINT32_MAX);
        for (unsigned i = 0; i < n; ++i)
                if (fds[i] > 2) {
                        struct stat a, b;
                        char link[64];

                        snprintf(link, sizeof(link), "/proc/%d/fd/%d", (int)pid, fds[i]);
                        g_assert_cmpint(stat(link, &a), ==, 0);
                        g_assert_cmpint(fstat(bus_sock[0], &b), ==, 0);
                        g_assert_false(a.st_ino == b.st_ino && a.st_dev == b.st_dev);
                        g_assert_cmpint(fstat(bus_sock[1], &b), ==, 0);
                        g_assert_false(a.st_ino == b.st_ino && a.st_dev == b.st_dev);
                }
        g_assert_cmpuint(n, <=, 4);

        /* the service: only the descriptor handed on */
        g_assert_cmpint(read(report[0], &others, sizeof(others)), ==, (ssize_t)sizeof(others));
        g_assert_cmpuint(others, ==, 0);

        /* the babysitter reports its end and exits */
        g_assert_cmpint(waitid(P_PID, (id_t)pid, &si, WEXITED), ==, 0);
        g_assert_cmpint(babysitter_status(sitter, &st), ==, 0);
        g_assert_cmpint(st.code, ==, CLD_EXITED);
        g_assert_cmpint(st.status, ==, 0);
        (void) close(sitter);
        (void) close(report[0]);
        (void) close(bus_sock[0]);
        (void) close(bus_sock[1]);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/proxy/babysitter/no-bus-fds", test_no_bus_fds);
        return g_test_run();
}
