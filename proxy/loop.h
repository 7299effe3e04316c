/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * kdbusd's event loop: one thread, one epoll instance, level-triggered io sources, one-shot
 * timers, defer sources and signals (signalfd). Every call proxy/ makes to a loop is here;
 * nothing in proxy/ includes sd-event.
 *
 * One wakeup = one epoll_wait() whose events are ALL dispatched before the next wait, then
 * the timers that are due, then the enabled defer sources. The work per wakeup is O(ready):
 * each ready fd is polled by the kernel once per wakeup, and one callback runs for it. (With
 * sd-event, one source is dispatched per sd_event_run() and each run starts with an
 * epoll_wait(): N ready fds cost N waits each re-polling all N, O(N²) -- 8,000 peers closing
 * at once took 4.4 s; see docs/loop.md.)
 *
 * Level-triggered on purpose: a source that does not drain its fd (a client with a full
 * input buffer, a listener that accepts a bounded batch) is simply reported again at the
 * next wakeup, so fairness needs no "may have more" bookkeeping beside the kernel's; each
 * client's per-wakeup budget is enforced by the server (proxy/server.c).
 *
 * A source freed while the loop dispatches is unhooked at once (no callback runs for it any
 * more, its fd leaves epoll) and its memory is released after the dispatch, so events of
 * the same batch that still point at it are skipped safely.
 *
 * Times are CLOCK_MONOTONIC microseconds. loop_now() is the time of the current wakeup.
 */
#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include "util/macro.h"

typedef struct Loop Loop;
typedef struct LoopSource LoopSource;

typedef int (*LoopIoFn)(LoopSource *s, int fd, uint32_t revents, void *userdata);
typedef int (*LoopTimeFn)(LoopSource *s, uint64_t usec, void *userdata);
typedef int (*LoopDeferFn)(LoopSource *s, void *userdata);
typedef int (*LoopSignalFn)(LoopSource *s, const struct signalfd_siginfo *si, void *userdata);

typedef enum LoopEnable {
        LOOP_OFF,
        LOOP_ON,
        LOOP_ONESHOT,           /* defer and time sources: off again once dispatched */
} LoopEnable;

/* Events one epoll_wait() takes at most; more ready fds are served at the next wakeup. */
#define LOOP_EVENTS_MAX 1024u

int loop_new(Loop **ret);
Loop *loop_ref(Loop *l);
Loop *loop_unref(Loop *l);
DEFINE_CLEANUP(Loop *, loop_unref);

uint64_t loop_now(Loop *l);
/* Counts wakeups; a source can tell whether something happened in the current one. */
uint64_t loop_iteration(Loop *l);

/* Io sources start enabled with @events (EPOLLIN, EPOLLOUT); the fd stays the caller's. */
int loop_add_io(Loop *l, LoopSource **ret, int fd, uint32_t events, LoopIoFn fn,
                void *userdata);
/* The same, off: not in the epoll set (no syscall) until loop_source_set_enabled() puts it
 * there, e.g. after what the caller writes first (issue #16: a new connection's OK). */
int loop_add_io_off(Loop *l, LoopSource **ret, int fd, uint32_t events, LoopIoFn fn,
                    void *userdata);
/* A one-shot timer at @usec (UINT64_MAX: off until loop_timer_set()). */
int loop_add_time(Loop *l, LoopSource **ret, uint64_t usec, LoopTimeFn fn, void *userdata);
/* A defer source runs once per wakeup while on; it starts off. */
int loop_add_defer(Loop *l, LoopSource **ret, LoopDeferFn fn, void *userdata);
/* @sig must be blocked (sigprocmask) by the caller. */
int loop_add_signal(Loop *l, LoopSource **ret, int sig, LoopSignalFn fn, void *userdata);

LoopSource *loop_source_free(LoopSource *s);
DEFINE_CLEANUP(LoopSource *, loop_source_free);
/* Frees an io source whose fd the caller closes next and of which no other process holds a
 * copy: the close takes it out of the epoll set, no EPOLL_CTL_DEL (issue #16). */
LoopSource *loop_io_free_closing(LoopSource *s);
int loop_source_set_enabled(LoopSource *s, LoopEnable enabled);
int loop_io_set_events(LoopSource *s, uint32_t events);
/* Arms (or, with @usec == UINT64_MAX, disarms) a one-shot timer. */
int loop_timer_set(LoopSource *s, uint64_t usec);

/* One wakeup: wait at most @timeout_usec (UINT64_MAX: until something happens), dispatch. */
int loop_run_once(Loop *l, uint64_t timeout_usec);
/* Until loop_exit(). Return: the exit code, or a negative errno. */
int loop_run(Loop *l);
void loop_exit(Loop *l, int code);
