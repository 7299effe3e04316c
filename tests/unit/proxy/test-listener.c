/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Accepting (proxy/listener.c) on the real server and loop, the test playing the clients
 * on a path socket in a temporary directory: a client that spoke with its connect() is
 * answered in the wakeup that accepts it; a single connection is accepted alone, a storm
 * (the listener ready in consecutive wakeups) in bursts, and every connection of a storm
 * is answered; a client that hung up in the same wakeup is freed by its end.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include "bridge/limits.h"
#include "proxy/address.h"
#include "proxy/listener.h"
#include "proxy/server.h"
#include <glib.h>

#define STORM 40

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

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
#define T(name, fn) g_test_add("/proxy/listener/" name, Fixture, NULL, setup, fn, teardown)
        T("answer-at-accept", test_answer_at_accept);
        T("storm", test_storm);
        T("close-and-connect", test_close_and_connect);
#undef T
        return g_test_run();
}
