/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The loop's fixed sources: a defer source that gives clients with leftover input another
 * budget; the reply-timeout timer armed from bus_next_deadline(); SIGTERM/SIGINT (clean
 * exit) and SIGHUP; a defer source that flushes dirty clients when a callback did not
 * (server_flush(): one batch of writes for every dirty client, and the held RECVs of
 * native peers that this turn's messages answer); and a defer source that tears down the
 * clients that must go, one slice per wakeup.
 *
 * Fairness: a wakeup dispatches every ready fd (proxy/loop.c); each client then handles
 * at most SERVER_CLIENT_BUDGET messages of that wakeup, either in its io callback or, for
 * input already buffered, from the ready list -- never both: a client put on the ready
 * list in this wakeup gets its next budget in the next one. So between two turns of any
 * client, every other ready client is served once, one budget each.
 * Each callback here and in client.c calls server_flush() last, so a reply goes out right
 * after the call that caused it, not after the whole wakeup's batch.
 *
 * Closing: a client that must go (it hung up, was kicked, broke the protocol) is served no
 * more at once (nothing more is read from it or written to it; its fd leaves the epoll set
 * at its teardown, or at the end of the slice if that is not in this wakeup) and goes on
 * @closing (server_mark_closing()); its teardown
 * (bridge_conn_disconnect(): its names released with their NameOwnerChanged and NameLost,
 * its match rules, its queue, its callers' NoReply; then close()) runs from the close
 * defer, SERVER_CLOSE_BUDGET clients per wakeup, oldest first, while the loop keeps
 * polling with timeout 0. Until its slice comes the peer is on the bus as before, as if
 * its hangup had arrived later. So thousands of peers closing at once delay another peer's call by one slice per wakeup
 * instead of all their teardowns (docs/loop.md, "Closing peers"). A hangup itself is
 * looked at by the close defer too, before its slice (server_mark_hangup()), so it is not
 * in front of the other ready peers' answers either.
 */
#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include "bridge/bus.h"
#include "compat/driver.h"
#include "proxy/client.h"
#include "proxy/config.h"
#include "proxy/listener.h"
#include "proxy/log.h"
#include "proxy/native-listener.h"
#include "proxy/server.h"
#include "util/error.h"
#include "util/hex.h"

/**
 * server_update_time() - hand the loop's cached time to the core
 * @s:          the server
 */
void server_update_time(Server *s) {
        s->bus->now_usec = loop_now(s->loop);
}

/**
 * server_rearm_timer() - arm the reply-timeout timer for the core's next deadline
 * @s:          the server
 *
 * Lazily: only a deadline earlier than the one armed moves the timer. A later one, or none
 * (the call was answered), leaves it as it is: it fires early, bus_dispatch_timeouts()
 * finds nothing due, and it is armed again for what is due then (or stays off). With one
 * call in flight and a 25 s deadline per call (libkdbus's, native SEND's timeout_ns) that
 * is one timerfd_settime() per 25 s instead of two per call (arm, disarm).
 */
void server_rearm_timer(Server *s) {
        uint64_t usec;

        if (!bus_next_deadline(s->bus, &usec))
                return;
        if (!usec)
                usec = 1;
        if (usec >= s->timer_usec)
                return;
        if (loop_timer_set(s->timer, usec) >= 0)
                s->timer_usec = usec;
}

/**
 * server_mark_ready() - give @c another turn at its buffered input next iteration
 * @s:          the server
 * @c:          the client
 */
void server_mark_ready(Server *s, ProxyClient *c) {
        if (list_is_linked(&c->ready_link))
                return;
        c->ready_iteration = loop_iteration(s->loop);
        list_append(&s->ready, &c->ready_link);
        (void) loop_source_set_enabled(s->ready_source, LOOP_ON);
}

/**
 * server_mark_dirty() - @c has output to flush or must be closed
 * @s:          the server
 * @c:          the client
 */
void server_mark_dirty(Server *s, ProxyClient *c) {
        if (list_is_linked(&c->dirty_link))
                return;
        if (list_is_empty(&s->dirty))
                (void) loop_source_set_enabled(s->flush_source, LOOP_ON);
        list_append(&s->dirty, &c->dirty_link);
}

/**
 * server_mark_closing() - @c must go: it is torn down after those before it
 * @s:          the server
 * @c:          the client, served no more (client_close_later())
 *
 * Enabled from a callback, the close defer runs in the same wakeup, after the io.
 */
void server_mark_closing(Server *s, ProxyClient *c) {
        list_unlink(&c->dirty_link);
        if (list_is_empty(&s->closing))
                (void) loop_source_set_enabled(s->close_source, LOOP_ON);
        list_append(&s->closing, &c->dirty_link);
}

/**
 * server_mark_hangup() - @c hung up: see to it after the wakeup's other io
 * @s:          the server
 * @c:          the client
 *
 * What it left to read, and its teardown, come after the answers the other ready peers
 * wait for (issue #16: in connection churn the one that hung up is reported in the wakeup
 * that accepts the next, before it); the close defer takes it in the same wakeup.
 */
void server_mark_hangup(Server *s, ProxyClient *c) {
        if (list_is_linked(&c->hangup_link))
                return;
        (void) loop_source_set_enabled(s->close_source, LOOP_ON);
        list_append(&s->hangups, &c->hangup_link);
}

/**
 * server_flush() - write out the dirty clients
 * @s:          the server
 *
 * Call it last in a loop callback: a native client whose held RECV's answer cannot be
 * written may be freed here (a classic one only by server_close_some()).
 */
void server_flush(Server *s) {
        List *l;

        server_update_time(s);
        while ((l = list_first(&s->dirty))) {
                ProxyClient *c = list_entry(l, ProxyClient, dirty_link);

                list_unlink(l);
                client_flush(c);
        }
        (void) loop_source_set_enabled(s->flush_source, LOOP_OFF);
        /* native peers' held RECVs that this turn's messages answer, in this turn too */
        native_listener_flush_held();
        server_rearm_timer(s);
}

/**
 * server_close_some() - tear down the oldest clients that must go
 * @s:          the server
 * @max:        how many at most (UINT_MAX: all, when their fds are needed now)
 *
 * In the order they went, so their NameOwnerChanged come in that order; what the
 * teardowns queued for others (NameOwnerChanged, NameLost, NameAcquired of the next
 * owner, NoReply errors) is written by the server_flush() the caller does next.
 */
void server_close_some(Server *s, unsigned max) {
        List *l;

        server_update_time(s);
        while (max-- && (l = list_first(&s->closing))) {
                list_unlink(l);
                (void) client_reap(list_entry(l, ProxyClient, dirty_link));
        }
        /* those left wait for a later slice out of the epoll set; the ones that went on
         * the list since the last slice are at its end */
        for (l = list_last(&s->closing); l && l != &s->closing; l = l->prev) {
                ProxyClient *c = list_entry(l, ProxyClient, dirty_link);

                if (c->close_unwatched)
                        break;
                client_unwatch(c);
        }
        if (list_is_empty(&s->closing))
                (void) loop_source_set_enabled(s->close_source, LOOP_OFF);
}

/* One slice of teardowns per wakeup; while some are left the defer stays on, so the loop
 * polls with timeout 0 and serves what else came before the next slice. */
static int server_on_close(LoopSource *source, void *userdata) {
        Server *s = userdata;
        List *l;

        server_update_time(s);
        while ((l = list_first(&s->hangups))) {
                list_unlink(l);
                client_hangup(list_entry(l, ProxyClient, hangup_link));
        }
        server_close_some(s, SERVER_CLOSE_BUDGET);
        server_flush(s);
        return 0;
}

static int server_on_flush(LoopSource *source, void *userdata) {
        server_flush(userdata);
        return 0;
}

static int server_on_ready(LoopSource *source, void *userdata) {
        Server *s = userdata;
        uint64_t now = loop_iteration(s->loop);
        List *l;

        server_update_time(s);
        /* in list order, those marked before this wakeup: one budget per client and wakeup;
         * those that run out again go to the back (server_mark_ready() appends) */
        while ((l = list_first(&s->ready))) {
                ProxyClient *c = list_entry(l, ProxyClient, ready_link);

                if (c->ready_iteration == now)
                        break;
                list_unlink(l);
                client_process(c);
        }
        if (list_is_empty(&s->ready))
                (void) loop_source_set_enabled(s->ready_source, LOOP_OFF);
        server_flush(s);
        return 0;
}

/*
 * glibc keeps freed memory in the heap (kdbusd sets M_TRIM_THRESHOLD to 64 MiB so large
 * messages do not pay their page faults twice, proxy/main.c), so after a flood to a slow
 * receiver the bus would keep its peak RSS. Once such a queue drained or its client went,
 * malloc_trim() gives the free pages back, a second later so that a flood that goes on
 * does not trim each time its queue empties.
 */
static int server_on_trim(LoopSource *source, uint64_t usec, void *userdata) {
        Server *s = userdata;

        bus_trim(s->bus);
        (void) malloc_trim(0);
        return 0;
}

/**
 * server_trim_later() - give freed memory back to the system in a moment
 * @s:          the server
 */
void server_trim_later(Server *s) {
        uint64_t when = loop_now(s->loop) + SERVER_TRIM_DELAY_USEC;

        if (!s->trim_timer) {
                if (loop_add_time(s->loop, &s->trim_timer, when, server_on_trim, s) < 0)
                        s->trim_timer = NULL;
                return;
        }
        (void) loop_timer_set(s->trim_timer, when);
}

static int server_on_timer(LoopSource *source, uint64_t usec, void *userdata) {
        Server *s = userdata;
        int r;

        s->timer_usec = UINT64_MAX;     /* a one-shot: off now */
        server_update_time(s);
        r = bus_dispatch_timeouts(s->bus);
        if (r < 0)
                proxy_log(LOG_ERR, "Expiring pending replies failed: %s, ignoring",
                          strerror(-r));
        server_flush(s);
        return 0;
}

static int server_on_signal(LoopSource *source, const struct signalfd_siginfo *si,
                            void *userdata) {
        Server *s = userdata;

        if (si->ssi_signo == SIGHUP) {
                bool not_found = false;
                char msg[1024];

                /* what ReloadConfig does (the configuration, and the service directories
                 * when activation is on), as in dbus-daemon; the reload logs its outcome,
                 * on failure the running configuration stays */
                server_update_time(s);
                (void) driver_reload(s->driver, &not_found, msg, sizeof(msg));
                server_flush(s);
                return 0;
        }
        /* dbus-daemon says nothing here: dbus-run-session, GTestDBus and the like stop their
         * bus with SIGTERM at every end, in front of the user */
        proxy_log(LOG_DEBUG, "Exiting on %s", si->ssi_signo == SIGTERM ? "SIGTERM" : "SIGINT");
        loop_exit(s->loop, 0);
        return 0;
}

/**
 * server_new() - the loop, the bus core with its driver, and the fixed sources
 * @limits:     the bus limits
 * @ret:        the server
 *
 * Blocks SIGTERM, SIGINT, SIGHUP (they arrive through the loop) and ignores SIGPIPE.
 * Return: 0 or a negative errno.
 */
/* @n random bytes into @buf. */
static int server_random(uint8_t *buf, size_t n) {
        size_t done = 0;
        ssize_t k;

        while (done < n) {
                k = getrandom(buf + done, n - done, 0);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return error_origin(-errno);
                }
                done += (size_t)k;
        }
        return 0;
}

/* The bus, driver, guid and loop sources of a server whose loop is set. */
static int server_init(Server *s, const BusLimits *limits) {
        uint8_t raw[16];
        uint32_t now;
        unsigned i;
        int r;

        s->auth_mechs = SASL_MECH_EXTERNAL;
        r = bus_new(limits, &s->bus);
        if (r < 0)
                return error_trace(r);
        s->bus->log = proxy_log_sink;
        r = driver_new(s->bus, &s->driver);
        if (r < 0)
                return error_trace(r);
        /* the server's guid (SASL OK, the printed address) is its own id, not the bus id
         * GetId answers (dbus-daemon: the DBusServer's guid and the bus uuid differ); as
         * the specification suggests for UUIDs, its last 4 bytes are the time (big endian) */
        r = server_random(raw, 12);
        if (r < 0)
                return error_trace(r);
        now = (uint32_t)time(NULL);
        for (i = 0; i < 4; ++i)
                raw[12 + i] = (uint8_t)(now >> (24 - 8 * i));
        hex_encode(raw, sizeof(raw), s->guid);

        r = loop_add_defer(s->loop, &s->flush_source, server_on_flush, s);
        if (r < 0)
                return error_trace(r);
        r = loop_add_defer(s->loop, &s->ready_source, server_on_ready, s);
        if (r < 0)
                return error_trace(r);
        r = loop_add_defer(s->loop, &s->close_source, server_on_close, s);
        if (r < 0)
                return error_trace(r);
        r = loop_add_time(s->loop, &s->timer, UINT64_MAX, server_on_timer, s);
        if (r < 0)
                return error_trace(r);
        s->timer_usec = UINT64_MAX;
        return 0;
}

static Server *server_alloc(void) {
        Server *s = calloc(1, sizeof(*s));

        if (!s)
                return NULL;
        list_init(&s->listeners);
        list_init(&s->clients);
        list_init(&s->dirty);
        list_init(&s->ready);
        list_init(&s->closing);
        list_init(&s->hangups);
        return s;
}

int server_new(const BusLimits *limits, Server **ret) {
        _cleanup_(server_freep) Server *s = NULL;
        sigset_t mask;
        int r;

        s = server_alloc();
        if (!s)
                return error_origin(-ENOMEM);
        r = loop_new(&s->loop);
        if (r < 0)
                return error_trace(r);
        r = server_init(s, limits);
        if (r < 0)
                return r;

        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGHUP);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                return error_origin(-errno);
        (void) signal(SIGPIPE, SIG_IGN);
        r = loop_add_signal(s->loop, &s->sigterm, SIGTERM, server_on_signal, s);
        if (r >= 0)
                r = loop_add_signal(s->loop, &s->sigint, SIGINT, server_on_signal, s);
        if (r >= 0)
                r = loop_add_signal(s->loop, &s->sighup, SIGHUP, server_on_signal, s);
        if (r < 0)
                return error_trace(r);

        *ret = steal_ptr(&s);
        return 0;
}

/**
 * server_new_instance() - a server for a bus instance (BUS_MAKE), on @parent's loop
 * @parent:     the server whose loop and limits it shares
 * @owner:      the instance's creator (Bus.owner_uid: monitors, activators)
 * @ret:        the server: its own bus and driver, no listeners, no configuration, no
 *              signal handlers (the parent's end the process, and with it the instance)
 *
 * Return: 0 or a negative errno.
 */
int server_new_instance(Server *parent, uid_t owner, Server **ret) {
        _cleanup_(server_freep) Server *s = NULL;
        int r;

        s = server_alloc();
        if (!s)
                return error_origin(-ENOMEM);
        s->loop = loop_ref(parent->loop);
        r = server_init(s, &parent->bus->limits);
        if (r < 0)
                return r;
        s->bus->owner_uid = owner;
        *ret = steal_ptr(&s);
        return 0;
}

/**
 * server_run() - run the loop until a signal asks to exit
 * @s:          the server
 *
 * Return: the exit code given to loop_exit() (0), or a negative errno.
 */
int server_run(Server *s) {
        int r;

        r = loop_run(s->loop);
        if (r < 0)
                return error_trace(r);
        return r;
}

/**
 * server_free() - disconnect every client, close every listener, free the core
 * @s:          the server, or NULL
 *
 * Return: NULL.
 */
Server *server_free(Server *s) {
        List *l;

        if (!s)
                return NULL;
        while ((l = list_first(&s->clients)))
                client_free(list_entry(l, ProxyClient, link));
        while ((l = list_first(&s->listeners)))
                listener_free(list_entry(l, ProxyListener, link));
        client_splice_pipes_deinit(&s->splice);
        s->driver = driver_free(s->driver);
        s->bus = bus_free(s->bus);
        s->config = proxy_config_free(s->config);
        s->flush_source = loop_source_free(s->flush_source);
        s->ready_source = loop_source_free(s->ready_source);
        s->close_source = loop_source_free(s->close_source);
        s->timer = loop_source_free(s->timer);
        s->trim_timer = loop_source_free(s->trim_timer);
        s->sigterm = loop_source_free(s->sigterm);
        s->sigint = loop_source_free(s->sigint);
        s->sighup = loop_source_free(s->sighup);
        s->loop = loop_unref(s->loop);
        free(s);
        return NULL;
}
