/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * kdbus-floor: what synchronous requests cost on this machine, with no bus logic (issue
 * #18). A kdbus SEND through libkdbus-preload.so is one request datagram whose answer the
 * program waits for (its errno must be kdbus's), so a pipelined kdbus call costs at least
 * two of them (the caller's SEND, the service's reply SEND) however many calls are in
 * flight. This program measures exactly that and nothing else:
 *
 *   an "echo bus" on CPU --bus-cpu (0): one epoll loop over SOCK_SEQPACKET sockets,
 *   one recvmsg and one sendmsg per datagram, as kdbusd does per request;
 *   --peers N (2) peers on CPU --peer-cpu (1), each doing blocking round trips of one
 *   64-byte datagram (send, then a blocking recv), as a SEND ioctl does; with
 *   --depth D > 1 each keeps D datagrams outstanding instead (the pipelined floor: what a
 *   peer could do if it did not wait for each answer).
 *
 * It prints requests/s over all peers, and CPU time (utime + stime) and voluntary context
 * switches per request of the peers and of the echo. `calls/s <= requests/s / 2` is the
 * ceiling of a kdbus program's pipelined calls through the library on this machine;
 * bench/native.sh prints it beside the classic path's pipelined rate.
 *
 *   kdbus-floor [--peers N] [--depth D] [--seconds S] [--bus-cpu C] [--peer-cpu C]
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_PEERS 16

static double now_s(void) {
        struct timespec t;

        clock_gettime(CLOCK_MONOTONIC, &t);
        return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void pin(int cpu) {
        cpu_set_t s;

        CPU_ZERO(&s);
        CPU_SET(cpu, &s);
        (void) sched_setaffinity(0, sizeof(s), &s);
}

static double cpu_s(const struct rusage *u) {
        return (double)(u->ru_utime.tv_sec + u->ru_stime.tv_sec) +
               (double)(u->ru_utime.tv_usec + u->ru_stime.tv_usec) / 1e6;
}

/* The echo: answer every datagram on its socket until all peers hung up; then report its
 * own CPU and wakeups on @report. */
static int echo_run(const int *socks, int n, int report) {
        struct epoll_event ev[MAX_PEERS];
        char buf[256];
        unsigned long requests = 0;
        struct rusage u;
        int ep = epoll_create1(EPOLL_CLOEXEC), open = n;

        if (ep < 0)
                return 1;
        for (int i = 0; i < n; i++) {
                struct epoll_event e = { .events = EPOLLIN, .data.u32 = (uint32_t)i };

                if (epoll_ctl(ep, EPOLL_CTL_ADD, socks[i], &e) < 0)
                        return 1;
        }
        while (open) {
                int k = epoll_wait(ep, ev, MAX_PEERS, -1);

                for (int j = 0; j < k; j++) {
                        int s = socks[ev[j].data.u32];
                        ssize_t r = recv(s, buf, sizeof(buf), MSG_DONTWAIT);

                        if (r == 0) {
                                (void) epoll_ctl(ep, EPOLL_CTL_DEL, s, NULL);
                                open--;
                        } else if (r > 0 && send(s, buf, (size_t)r, MSG_NOSIGNAL) == r)
                                requests++;
                }
        }
        (void) getrusage(RUSAGE_SELF, &u);
        {
                double rep[3] = { (double)requests, cpu_s(&u), (double)u.ru_nvcsw };

                return write(report, rep, sizeof(rep)) == sizeof(rep) ? 0 : 1;
        }
}

/* One peer: round trips of one datagram for @seconds, @depth outstanding; the count on
 * @report. */
static int peer_run(int s, int depth, double seconds, int report) {
        char buf[256];
        unsigned long n = 0;
        double t0 = now_s();

        memset(buf, 1, sizeof(buf));
        for (int i = 0; i < depth; i++)
                if (send(s, buf, 64, MSG_NOSIGNAL) != 64)
                        return 1;
        while (now_s() - t0 < seconds) {
                if (recv(s, buf, sizeof(buf), 0) <= 0 || send(s, buf, 64, MSG_NOSIGNAL) != 64)
                        return 1;
                n++;
        }
        for (int i = 0; i < depth; i++)
                if (recv(s, buf, sizeof(buf), 0) <= 0)
                        return 1;
        return write(report, &n, sizeof(n)) == sizeof(n) ? 0 : 1;
}

int main(int argc, char **argv) {
        int peers = 2, depth = 1, bus_cpu = 0, peer_cpu = 1, sv[MAX_PEERS][2], rep[2];
        int echo_socks[MAX_PEERS];
        double seconds = 1, t0, t, echo[3];
        unsigned long total = 0;
        struct rusage u;
        pid_t echo_pid;

        for (int i = 1; i + 1 < argc; i += 2) {
                if (!strcmp(argv[i], "--peers"))
                        peers = atoi(argv[i + 1]);
                else if (!strcmp(argv[i], "--depth"))
                        depth = atoi(argv[i + 1]);
                else if (!strcmp(argv[i], "--seconds"))
                        seconds = atof(argv[i + 1]);
                else if (!strcmp(argv[i], "--bus-cpu"))
                        bus_cpu = atoi(argv[i + 1]);
                else if (!strcmp(argv[i], "--peer-cpu"))
                        peer_cpu = atoi(argv[i + 1]);
                else
                        break;
        }
        if (argc % 2 == 0 || peers < 1 || peers > MAX_PEERS || depth < 1 || depth > 64 ||
            seconds <= 0) {
                fputs("usage: kdbus-floor [--peers 1-16] [--depth 1-64] [--seconds S] "
                      "[--bus-cpu C] [--peer-cpu C]\n", stderr);
                return 2;
        }
        if (pipe(rep) < 0)
                return 1;
        for (int i = 0; i < peers; i++) {
                if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv[i]) < 0)
                        return 1;
                echo_socks[i] = sv[i][1];
        }
        echo_pid = fork();
        if (echo_pid < 0)
                return 1;
        if (echo_pid == 0) {
                pin(bus_cpu);
                for (int i = 0; i < peers; i++)
                        (void) close(sv[i][0]);
                _exit(echo_run(echo_socks, peers, rep[1]));
        }
        t0 = now_s();
        for (int i = 0; i < peers; i++) {
                pid_t p = fork();

                if (p < 0)
                        return 1;
                if (p == 0) {
                        pin(peer_cpu);
                        _exit(peer_run(sv[i][0], depth, seconds, rep[1]));
                }
        }
        for (int i = 0; i < peers; i++) {
                (void) close(sv[i][0]);
                (void) close(sv[i][1]);
        }
        for (int i = 0; i < peers; i++) {
                unsigned long n;
                int st;

                if (read(rep[0], &n, sizeof(n)) != sizeof(n))
                        return 1;
                total += n;
                (void) wait(&st);
        }
        t = now_s() - t0;
        /* the peers' usage (the echo is still running: not in RUSAGE_CHILDREN yet) */
        (void) getrusage(RUSAGE_CHILDREN, &u);
        if (read(rep[0], echo, sizeof(echo)) != sizeof(echo))
                return 1;
        (void) waitpid(echo_pid, NULL, 0);
        printf("RESULT floor peers=%d depth=%d requests_per_s=%.0f peers_cpu_us_per_request=%.2f "
               "peers_vcsw_per_request=%.2f echo_cpu_us_per_request=%.2f "
               "echo_vcsw_per_request=%.2f\n", peers, depth, (double)total / t,
               cpu_s(&u) / (double)total * 1e6, (double)u.ru_nvcsw / (double)total,
               echo[1] / echo[0] * 1e6, echo[2] / echo[0]);
        return 0;
}
