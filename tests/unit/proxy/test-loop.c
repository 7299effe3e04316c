/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * proxy/loop.c: one wakeup dispatches every ready fd (not one per wakeup), a source freed by
 * another's callback in the same batch is never called, timers fire once in order and a
 * timer re-armed for "now" from its callback waits for the next wakeup, defer sources run
 * once per wakeup (ONESHOT once), signals arrive through their source, loop_exit() stops;
 * an fd closed after loop_io_free_closing() (no EPOLL_CTL_DEL) is never reported again, also
 * not when it hung up, and its number is watched afresh when a new socket gets it.
 */
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>
#include "proxy/loop.h"
#include <glib.h>

#define N_PAIRS 300u            /* more than one batch would need with one event a wakeup */

typedef struct Pair {
        int fd[2];
        LoopSource *io;
        unsigned calls;
        struct Pair *victim;    /* freed from this one's callback */
} Pair;

static int on_io(LoopSource *s, int fd, uint32_t revents, void *userdata) {
        Pair *p = userdata;
        char c;

        ++p->calls;
        g_assert_cmpint(read(fd, &c, 1), ==, 1);
        if (p->victim) {
                p->victim->io = loop_source_free(p->victim->io);
                (void) close(p->victim->fd[0]);
                p->victim->fd[0] = -1;
        }
        return 0;
}

static void test_batch(void) {
        Pair *pairs = g_new0(Pair, N_PAIRS);
        Loop *l = NULL;
        unsigned i, called = 0;

        g_assert_cmpint(loop_new(&l), ==, 0);
        for (i = 0; i < N_PAIRS; ++i) {
                g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
                                           0, pairs[i].fd), ==, 0);
                g_assert_cmpint(loop_add_io(l, &pairs[i].io, pairs[i].fd[0], EPOLLIN, on_io,
                                            &pairs[i]), ==, 0);
                g_assert_cmpint(write(pairs[i].fd[1], "x", 1), ==, 1);
        }
        /* each pair frees its neighbour: half of them are called, and never a freed one */
        for (i = 0; i + 1 < N_PAIRS; i += 2)
                pairs[i].victim = &pairs[i + 1];
        for (i = 0; i + 1 < N_PAIRS; i += 2)
                pairs[i + 1].victim = &pairs[i];
        g_assert_cmpint(loop_run_once(l, 0), ==, 0);
        for (i = 0; i < N_PAIRS; ++i) {
                g_assert_cmpuint(pairs[i].calls, <=, 1);
                called += pairs[i].calls;
                /* a called pair's neighbour was freed before its turn */
                if (pairs[i].calls)
                        g_assert_cmpuint(pairs[i].victim->calls, ==, 0);
        }
        g_assert_cmpuint(called, ==, N_PAIRS / 2);
        /* nothing left to read: a second wakeup calls nobody */
        g_assert_cmpint(loop_run_once(l, 0), ==, 0);
        for (i = 0; i < N_PAIRS; ++i) {
                called -= pairs[i].calls;
                pairs[i].io = loop_source_free(pairs[i].io);
                if (pairs[i].fd[0] >= 0)
                        (void) close(pairs[i].fd[0]);
                (void) close(pairs[i].fd[1]);
        }
        g_assert_cmpuint(called, ==, 0);
        l = loop_unref(l);
        g_free(pairs);
}

typedef struct Timers {
        Loop *loop;
        LoopSource *t[3];
        unsigned order[8], n;
        bool rearm;
} Timers;

static int on_time(LoopSource *s, uint64_t usec, void *userdata) {
        Timers *t = userdata;
        unsigned i;

        for (i = 0; i < 3; ++i)
                if (t->t[i] == s)
                        t->order[t->n++] = i;
        if (t->rearm && s == t->t[0]) {
                t->rearm = false;
                g_assert_cmpint(loop_timer_set(s, loop_now(t->loop)), ==, 0);
        }
        return 0;
}

static void test_free_closing(void) {
        Pair a = { .fd = { -1, -1 } }, b = { .fd = { -1, -1 } };
        Loop *l = NULL;
        int old;

        g_assert_cmpint(loop_new(&l), ==, 0);
        g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, a.fd),
                        ==, 0);
        g_assert_cmpint(loop_add_io(l, &a.io, a.fd[0], EPOLLIN, on_io, &a), ==, 0);
        g_assert_cmpint(write(a.fd[1], "x", 1), ==, 1);
        (void) close(a.fd[1]);                  /* ready and hung up: reported until it goes */
        old = a.fd[0];
        a.io = loop_io_free_closing(a.io);
        (void) close(a.fd[0]);
        g_assert_cmpint(loop_run_once(l, 0), ==, 0);
        g_assert_cmpuint(a.calls, ==, 0);

        /* the same number for another socket: ADD works, its events are its own */
        g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, b.fd),
                        ==, 0);
        g_assert_true(b.fd[0] == old || b.fd[1] == old);
        if (b.fd[1] == old) {
                int t = b.fd[0];

                b.fd[0] = b.fd[1];
                b.fd[1] = t;
        }
        g_assert_cmpint(loop_add_io(l, &b.io, b.fd[0], EPOLLIN, on_io, &b), ==, 0);
        g_assert_cmpint(loop_run_once(l, 0), ==, 0);
        g_assert_cmpuint(b.calls, ==, 0);
        g_assert_cmpint(write(b.fd[1], "y", 1), ==, 1);
        g_assert_cmpint(loop_run_once(l, 0), ==, 0);
        g_assert_cmpuint(b.calls, ==, 1);
        g_assert_cmpuint(a.calls, ==, 0);
        b.io = loop_source_free(b.io);
        (void) close(b.fd[0]);
        (void) close(b.fd[1]);
        loop_unref(l);
}

static void test_timers(void) {
        Timers t = { .rearm = true };
        uint64_t now;

        g_assert_cmpint(loop_new(&t.loop), ==, 0);
        now = loop_now(t.loop);
        g_assert_cmpint(loop_add_time(t.loop, &t.t[0], now + 20000, on_time, &t), ==, 0);
        g_assert_cmpint(loop_add_time(t.loop, &t.t[1], now + 10000, on_time, &t), ==, 0);
        g_assert_cmpint(loop_add_time(t.loop, &t.t[2], UINT64_MAX, on_time, &t), ==, 0);
        /* waits for the timerfd: both due after 20 ms, in order; t[0] re-armed for now */
        while (t.n < 2)
                g_assert_cmpint(loop_run_once(t.loop, UINT64_MAX), ==, 0);
        g_assert_cmpuint(t.n, ==, 2);
        g_assert_cmpuint(t.order[0], ==, 1);
        g_assert_cmpuint(t.order[1], ==, 0);
        g_assert_cmpuint(loop_now(t.loop), >=, now + 20000);
        g_assert_cmpint(loop_run_once(t.loop, UINT64_MAX), ==, 0);
        g_assert_cmpuint(t.n, ==, 3);
        g_assert_cmpuint(t.order[2], ==, 0);
        /* one-shot: nothing more; disarmed t[2] never fires */
        g_assert_cmpint(loop_run_once(t.loop, 30000), ==, 0);
        g_assert_cmpuint(t.n, ==, 3);
        g_assert_cmpint(loop_timer_set(t.t[2], now), ==, 0);
        g_assert_cmpint(loop_timer_set(t.t[2], UINT64_MAX), ==, 0);
        g_assert_cmpint(loop_run_once(t.loop, 0), ==, 0);
        g_assert_cmpuint(t.n, ==, 3);
        t.t[0] = loop_source_free(t.t[0]);
        t.t[1] = loop_source_free(t.t[1]);
        t.t[2] = loop_source_free(t.t[2]);
        t.loop = loop_unref(t.loop);
}

typedef struct Defers {
        Loop *loop;
        LoopSource *on, *once;
        unsigned n_on, n_once;
} Defers;

static int on_defer(LoopSource *s, void *userdata) {
        Defers *d = userdata;

        if (s == d->on) {
                if (++d->n_on == 3)
                        (void) loop_source_set_enabled(s, LOOP_OFF);
        } else {
                ++d->n_once;
        }
        return 0;
}

static int on_signal(LoopSource *s, const struct signalfd_siginfo *si, void *userdata) {
        Loop *l = userdata;

        g_assert_cmpuint(si->ssi_signo, ==, SIGUSR1);
        loop_exit(l, 42);
        return 0;
}

static void test_defer_signal_exit(void) {
        Defers d = { 0 };
        LoopSource *sig = NULL;
        sigset_t mask;
        unsigned i;

        g_assert_cmpint(loop_new(&d.loop), ==, 0);
        g_assert_cmpint(loop_add_defer(d.loop, &d.on, on_defer, &d), ==, 0);
        g_assert_cmpint(loop_add_defer(d.loop, &d.once, on_defer, &d), ==, 0);
        g_assert_cmpint(loop_source_set_enabled(d.on, LOOP_ON), ==, 0);
        g_assert_cmpint(loop_source_set_enabled(d.once, LOOP_ONESHOT), ==, 0);
        /* enabled defers make the wait 0: these cannot block */
        for (i = 0; i < 3; ++i)
                g_assert_cmpint(loop_run_once(d.loop, UINT64_MAX), ==, 0);
        for (i = 0; i < 2; ++i)
                g_assert_cmpint(loop_run_once(d.loop, 0), ==, 0);
        g_assert_cmpuint(d.n_on, ==, 3);
        g_assert_cmpuint(d.n_once, ==, 1);

        sigemptyset(&mask);
        sigaddset(&mask, SIGUSR1);
        g_assert_cmpint(sigprocmask(SIG_BLOCK, &mask, NULL), ==, 0);
        g_assert_cmpint(loop_add_signal(d.loop, &sig, SIGUSR1, on_signal, d.loop), ==, 0);
        g_assert_cmpint(kill(getpid(), SIGUSR1), ==, 0);
        g_assert_cmpint(loop_run(d.loop), ==, 42);
        sig = loop_source_free(sig);
        d.on = loop_source_free(d.on);
        d.once = loop_source_free(d.once);
        d.loop = loop_unref(d.loop);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/proxy/loop/batch", test_batch);
        g_test_add_func("/proxy/loop/timers", test_timers);
        g_test_add_func("/proxy/loop/free-closing", test_free_closing);
        g_test_add_func("/proxy/loop/defer-signal-exit", test_defer_signal_exit);
        return g_test_run();
}
