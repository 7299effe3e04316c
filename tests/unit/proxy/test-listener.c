/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Accepting (proxy/listener.c) on the real server and loop, the test playing the clients
 * on a path socket in a temporary directory: a client that spoke with its connect() is
 * answered in the wakeup that accepts it; a single connection is accepted alone, a storm
 * (the listener ready in consecutive wakeups) in bursts, and every connection of a storm
 * is answered; a client that hung up in the same wakeup is freed by its end; what a client
 * does not wait for (epoll_ctl(), SO_PEERGROUPS) comes after the answer it waits for.
 *
 * Linked with -Wl,--wrap=epoll_ctl,--wrap=getsockopt,--wrap=ioctl: the bus's calls go
 * through the wrappers below, which note whether the newest test client's answer was
 * already written.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <linux/sockios.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include "bridge/limits.h"
#include "proxy/address.h"
#include "proxy/listener.h"
#include "proxy/server.h"
#include <glib.h>

#define STORM 40

#ifndef SO_PEERGROUPS
#define SO_PEERGROUPS 59
#endif

int __real_epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev);
int __wrap_epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev);
int __real_getsockopt(int fd, int level, int name, void *val, socklen_t *len);
int __wrap_getsockopt(int fd, int level, int name, void *val, socklen_t *len);
int __real_ioctl(int fd, unsigned long request, void *arg);
int __wrap_ioctl(int fd, unsigned long request, void *arg);

/* The test's end of the newest client (-1: not watching), and what the bus did meanwhile:
 * client socket epoll_ctl()s, SO_PEERGROUPS reads and SIOCINQ asks, and how many of them
 * came before that client's answer was in its socket. */
static int watch_fd = -1;
static unsigned n_calls, n_before_answer, n_del;

static void note_call(void) {
        int n = 0;

        if (watch_fd < 0)
                return;
        ++n_calls;
        if (__real_ioctl(watch_fd, FIONREAD, &n) < 0 || n == 0)
                ++n_before_answer;
}

int __wrap_ioctl(int fd, unsigned long request, void *arg) {
        if (request == SIOCINQ)
                note_call();
        return __real_ioctl(fd, request, arg);
}

int __wrap_epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev) {
        if (op != EPOLL_CTL_MOD)
                note_call();
        if (op == EPOLL_CTL_DEL && watch_fd >= 0)
                ++n_del;
        return __real_epoll_ctl(epfd, op, fd, ev);
}

int __wrap_getsockopt(int fd, int level, int name, void *val, socklen_t *len) {
        if (level == SOL_SOCKET && name == SO_PEERGROUPS)
                note_call();
        return __real_getsockopt(fd, level, name, val, len);
}

typedef struct Fixture {
        Server *s;
        char dir[64];
        char path[96];
} Fixture;

static void setup(Fixture *f, gconstpointer ctx) {
        _cleanup_(address_list_freep) AddressList *al = NULL;
        BusLimits limits;
        char addr[256], err[256];

        bus_limits_init_session(&limits);
        g_assert_cmpint(server_new(&limits, &f->s), ==, 0);
        snprintf(f->dir, sizeof(f->dir), "/tmp/kdbus-test-listener.XXXXXX");
        g_assert_nonnull(mkdtemp(f->dir));
        snprintf(f->path, sizeof(f->path), "%s/bus", f->dir);
        snprintf(addr, sizeof(addr), "unix:path=%s", f->path);
        g_assert_cmpint(address_list_parse(addr, &al), ==, 0);
        g_assert_cmpint(listener_new_from_address(f->s, &al->entries[0], err, sizeof(err)), ==, 0);
}

static void teardown(Fixture *f, gconstpointer ctx) {
        f->s = server_free(f->s);
        (void) rmdir(f->dir);
}

/* A client that connected and sent its AUTH line (not yet accepted). */
static int client_connect_auth(Fixture *f) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        char line[64];
        int fd;

        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        g_assert_cmpint(fd, >=, 0);
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", f->path);
        g_assert_cmpint(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), ==, 0);
        /* "\0AUTH EXTERNAL <uid in hex>\r\n" */
        {
                char uid[16], hex[33] = "";

                snprintf(uid, sizeof(uid), "%u", (unsigned)getuid());
                for (size_t i = 0; uid[i]; ++i)
                        snprintf(hex + 2 * i, sizeof(hex) - 2 * i, "%02x", (unsigned char)uid[i]);
                line[0] = '\0';
                snprintf(line + 1, sizeof(line) - 1, "AUTH EXTERNAL %s\r\n", hex);
        }
        g_assert_cmpint(send(fd, line, 1 + strlen(line + 1), MSG_NOSIGNAL), ==,
                        (ssize_t)(1 + strlen(line + 1)));
        return fd;
}

/* Whether the bus answered @fd's AUTH with OK (already, without waiting). */
static bool client_has_ok(int fd) {
        char buf[128];
        ssize_t n = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);

        if (n <= 0)
                return false;
        buf[n] = '\0';
        g_assert_true(g_str_has_prefix(buf, "OK "));
        return true;
}

/* The AUTH that came with the connect is answered by the wakeup that accepts: the listener
 * reads the new socket at once, not after the next epoll_wait() returns it. */
static void test_answer_at_accept(Fixture *f, gconstpointer ctx) {
        int fd = client_connect_auth(f);

        g_assert_cmpint(loop_run_once(f->s->loop, 1000000), >=, 0);
        g_assert_true(client_has_ok(fd));
        (void) close(fd);
}

/* One connection per wakeup, unless the listener was ready the wakeup before: then up to
 * 32. Every connection of the storm is answered, none is left in the backlog. */
static void test_storm(Fixture *f, gconstpointer ctx) {
        int fds[STORM];
        unsigned i, answered = 0, turns;

        for (i = 0; i < STORM; ++i)
                fds[i] = client_connect_auth(f);

        g_assert_cmpint(loop_run_once(f->s->loop, 1000000), >=, 0);
        for (i = 0; i < STORM; ++i)
                if (client_has_ok(fds[i]))
                        ++answered;
        g_assert_cmpuint(answered, ==, 1);      /* not a storm yet: one accepted */

        g_assert_cmpint(loop_run_once(f->s->loop, 1000000), >=, 0);
        for (i = 0; i < STORM; ++i)
                if (client_has_ok(fds[i]))
                        ++answered;
        g_assert_cmpuint(answered, ==, 1 + 32); /* ready again at once: a burst */

        for (turns = 0; answered < STORM && turns < 10; ++turns) {
                g_assert_cmpint(loop_run_once(f->s->loop, 1000000), >=, 0);
                for (i = 0; i < STORM; ++i)
                        if (client_has_ok(fds[i]))
                                ++answered;
        }
        g_assert_cmpuint(answered, ==, STORM);
        for (i = 0; i < STORM; ++i)
                (void) close(fds[i]);
}

/* A client that hung up and a new one in the same wakeup (connection churn): the new one is
 * answered, and the one that went is freed by the end of that wakeup all the same. */
static void test_close_and_connect(Fixture *f, gconstpointer ctx) {
        int old = client_connect_auth(f), fd;

        g_assert_cmpint(loop_run_once(f->s->loop, 1000000), >=, 0);
        g_assert_true(client_has_ok(old));
        g_assert_cmpuint(f->s->n_clients, ==, 1);
        (void) close(old);
        fd = client_connect_auth(f);
        g_assert_cmpint(loop_run_once(f->s->loop, 1000000), >=, 0);
        g_assert_true(client_has_ok(fd));
        g_assert_cmpuint(f->s->n_clients, ==, 1);
        (void) close(fd);
        g_assert_cmpint(loop_run_once(f->s->loop, 1000000), >=, 0);
        g_assert_cmpuint(f->s->n_clients, ==, 0);
}

/* Connection churn (issue #16): in the wakeup that accepts a client and answers its AUTH,
 * the client's SO_PEERGROUPS and its EPOLL_CTL_ADD come after the OK it waits for; a client
 * that hung up in the same wakeup is looked at (SIOCINQ) and torn down after it too, and
 * its socket leaves the epoll set with its close(), no EPOLL_CTL_DEL (no other process
 * holds it). */
static void test_answer_first(Fixture *f, gconstpointer ctx) {
        int old = client_connect_auth(f), fd;

        watch_fd = old;
        n_calls = n_before_answer = n_del = 0;
        g_assert_cmpint(loop_run_once(f->s->loop, 1000000), >=, 0);
        g_assert_cmpuint(n_calls, ==, 2);               /* SO_PEERGROUPS, ADD */
        g_assert_cmpuint(n_before_answer, ==, 0);
        g_assert_true(client_has_ok(old));
        /* a wakeup for it (as its Hello's): epoll then reports its hangup before the
         * listener, as in the churn benchmark */
        g_assert_cmpint(send(old, "BEGIN\r\n", 7, MSG_NOSIGNAL), ==, 7);
        g_assert_cmpint(loop_run_once(f->s->loop, 1000000), >=, 0);

        (void) close(old);
        fd = client_connect_auth(f);
        watch_fd = fd;
        n_calls = n_before_answer = 0;
        g_assert_cmpint(loop_run_once(f->s->loop, 1000000), >=, 0);
        g_assert_cmpuint(n_calls, ==, 3);               /* + the old one's SIOCINQ */
        g_assert_cmpuint(n_before_answer, ==, 0);
        g_assert_true(client_has_ok(fd));
        g_assert_cmpuint(f->s->n_clients, ==, 1);       /* the old one is gone */
        g_assert_cmpuint(n_del, ==, 0);
        watch_fd = -1;
        (void) close(fd);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
#define T(name, fn) g_test_add("/proxy/listener/" name, Fixture, NULL, setup, fn, teardown)
        T("answer-at-accept", test_answer_at_accept);
        T("storm", test_storm);
        T("close-and-connect", test_close_and_connect);
        T("answer-first", test_answer_first);
#undef T
        return g_test_run();
}
