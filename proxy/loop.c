/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The event loop (see loop.h for the contract and docs/loop.md for why it is ours).
 *
 * Invariants:
 *   - An io or signal source is in the epoll set exactly while it is enabled and alive
 *     (in_epoll); its epoll data is the source itself.
 *   - A timer is in the heap exactly while it is armed (heap_index != UINT_MAX), or on the
 *     wakeup's due list while it waits for its callback (due).
 *   - An enabled defer source is linked on Loop.defers, or on the wakeup's batch while its
 *     callback is pending.
 *   - A source freed during a dispatch (dispatching > 0) is dead: unhooked from everything,
 *     linked on Loop.dead, and freed when the outermost dispatch ends.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>
#include "proxy/loop.h"
#include "util/error.h"
#include "util/list.h"

typedef enum LoopSourceType {
        LOOP_SOURCE_IO,
        LOOP_SOURCE_TIME,
        LOOP_SOURCE_DEFER,
        LOOP_SOURCE_SIGNAL,
} LoopSourceType;

struct LoopSource {
        Loop *loop;
        LoopSourceType type;
        LoopEnable enabled;
        bool dead;
        bool in_epoll;
        bool due;                       /* time: on the wakeup's due list */
        int fd;                         /* io: the caller's; signal: our signalfd */
        uint32_t events;                /* io: what we wait for */
        unsigned heap_index;            /* time: in Loop.heap, UINT_MAX: not armed */
        uint64_t usec;                  /* time: when */
        List link;                      /* defer: Loop.defers / batch; time: due list; dead */
        void *userdata;
        union {
                LoopIoFn io;
                LoopTimeFn time;
                LoopDeferFn defer;
                LoopSignalFn signal;
        } fn;
};

struct Loop {
        unsigned n_ref;
        int epoll_fd;
        int timer_fd;                   /* CLOCK_MONOTONIC, for the earliest timer */
        uint64_t timer_armed;           /* what timer_fd is set to, UINT64_MAX: off */
        uint64_t now;
        uint64_t iteration;
        bool have_now;
        bool exiting;
        int exit_code;
        unsigned dispatching;
        LoopSource **heap;              /* armed timers, min-heap on usec */
        unsigned n_heap, heap_cap;
        List defers;                    /* enabled defer sources */
        List due;                       /* timers whose callback runs in this wakeup */
        List dead;                      /* sources freed during a dispatch */
        struct epoll_event events[LOOP_EVENTS_MAX];
};

static uint64_t loop_clock(void) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/**
 * loop_new() - an empty loop
 * @ret:        the loop
 *
 * Return: 0 or a negative errno.
 */
int loop_new(Loop **ret) {
        Loop *l;
        int r;

        l = calloc(1, sizeof(*l));
        if (!l)
                return error_origin(-ENOMEM);
        l->n_ref = 1;
        list_init(&l->defers);
        list_init(&l->due);
        list_init(&l->dead);
        l->timer_armed = UINT64_MAX;
        l->timer_fd = -1;
        l->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
        if (l->epoll_fd >= 0)
                l->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
        if (l->timer_fd >= 0) {
                struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };

                if (epoll_ctl(l->epoll_fd, EPOLL_CTL_ADD, l->timer_fd, &ev) == 0) {
                        *ret = l;
                        return 0;
                }
        }
        r = error_origin(-errno);
        l->timer_fd = fd_close(l->timer_fd);
        l->epoll_fd = fd_close(l->epoll_fd);
        free(l);
        return r;
}

/**
 * loop_ref() - take a reference
 * @l:          the loop, or NULL
 *
 * Return: @l.
 */
Loop *loop_ref(Loop *l) {
        if (l)
                ++l->n_ref;
        return l;
}

/**
 * loop_unref() - drop a reference; the last one frees the loop
 * @l:          the loop, or NULL
 *
 * Every source holds a reference, so the loop outlives its sources.
 * Return: NULL.
 */
Loop *loop_unref(Loop *l) {
        if (!l || --l->n_ref > 0)
                return NULL;
        l->timer_fd = fd_close(l->timer_fd);
        l->epoll_fd = fd_close(l->epoll_fd);
        free(l->heap);
        free(l);
        return NULL;
}

/**
 * loop_now() - the time of the current wakeup
 * @l:          the loop
 *
 * Return: CLOCK_MONOTONIC in microseconds (the current time before the first wakeup).
 */
uint64_t loop_now(Loop *l) {
        if (!l->have_now) {
                l->now = loop_clock();
                l->have_now = true;
        }
        return l->now;
}

/**
 * loop_iteration() - the number of the current wakeup
 * @l:          the loop
 *
 * Return: a counter incremented by each loop_run_once().
 */
uint64_t loop_iteration(Loop *l) {
        return l->iteration;
}

static void heap_swap(Loop *l, unsigned a, unsigned b) {
        LoopSource *t = l->heap[a];

        l->heap[a] = l->heap[b];
        l->heap[b] = t;
        l->heap[a]->heap_index = a;
        l->heap[b]->heap_index = b;
}

static void heap_up(Loop *l, unsigned i) {
        while (i > 0) {
                unsigned p = (i - 1) / 2;

                if (l->heap[p]->usec <= l->heap[i]->usec)
                        break;
                heap_swap(l, p, i);
                i = p;
        }
}

static void heap_down(Loop *l, unsigned i) {
        for (;;) {
                unsigned a = 2 * i + 1, b = a + 1, m = i;

                if (a < l->n_heap && l->heap[a]->usec < l->heap[m]->usec)
                        m = a;
                if (b < l->n_heap && l->heap[b]->usec < l->heap[m]->usec)
                        m = b;
                if (m == i)
                        break;
                heap_swap(l, i, m);
                i = m;
        }
}

static void heap_remove(Loop *l, LoopSource *s) {
        unsigned i = s->heap_index;

        if (i == UINT_MAX)
                return;
        s->heap_index = UINT_MAX;
        if (i != --l->n_heap) {
                l->heap[i] = l->heap[l->n_heap];
                l->heap[i]->heap_index = i;
                heap_down(l, i);
                heap_up(l, i);
        }
}

static int heap_insert(Loop *l, LoopSource *s) {
        if (l->n_heap == l->heap_cap) {
                unsigned cap = MAX(64u, l->heap_cap * 2);
                LoopSource **p = realloc(l->heap, cap * sizeof(*p));

                if (!p)
                        return error_origin(-ENOMEM);
                l->heap = p;
                l->heap_cap = cap;
        }
        s->heap_index = l->n_heap;
        l->heap[l->n_heap++] = s;
        heap_up(l, s->heap_index);
        return 0;
}

static int source_new(Loop *l, LoopSourceType type, void *userdata, LoopSource **ret) {
        LoopSource *s;

        s = calloc(1, sizeof(*s));
        if (!s)
                return error_origin(-ENOMEM);
        s->loop = loop_ref(l);
        s->type = type;
        s->fd = -1;
        s->heap_index = UINT_MAX;
        s->userdata = userdata;
        list_init(&s->link);
        *ret = s;
        return 0;
}

static int source_epoll_update(LoopSource *s, bool on) {
        struct epoll_event ev = { .events = s->events, .data.ptr = s };

        if (!on) {
                if (s->in_epoll)
                        (void) epoll_ctl(s->loop->epoll_fd, EPOLL_CTL_DEL, s->fd, NULL);
                s->in_epoll = false;
                return 0;
        }
        if (epoll_ctl(s->loop->epoll_fd, s->in_epoll ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, s->fd,
                      &ev) < 0)
                return error_origin(-errno);
        s->in_epoll = true;
        return 0;
}

/* The new io or signal source @s enters the epoll set; on failure it is freed. */
static int source_watch(LoopSource *s, uint32_t events, LoopSource **ret) {
        int r;

        s->events = events;
        s->enabled = LOOP_ON;
        r = source_epoll_update(s, true);
        if (r < 0) {
                loop_source_free(s);
                return r;
        }
        *ret = s;
        return 0;
}

/**
 * loop_add_io_off() - an fd to watch later
 * @l:          the loop
 * @ret:        the source, off: not in the epoll set until loop_source_set_enabled()
 * @fd:         the fd (not taken: free the source before closing it)
 * @events:     as for loop_add_io()
 * @fn:         called with the events that occurred
 * @userdata:   for @fn
 *
 * Return: 0 or -ENOMEM.
 */
int loop_add_io_off(Loop *l, LoopSource **ret, int fd, uint32_t events, LoopIoFn fn,
                    void *userdata) {
        LoopSource *s;
        int r;

        r = source_new(l, LOOP_SOURCE_IO, userdata, &s);
        if (r < 0)
                return r;
        s->fd = fd;
        s->fn.io = fn;
        s->events = events;
        *ret = s;
        return 0;
}

/**
 * loop_add_io() - watch an fd
 * @l:          the loop
 * @ret:        the source
 * @fd:         the fd (not taken: free the source before closing it)
 * @events:     EPOLLIN, EPOLLOUT (level-triggered); EPOLLHUP and EPOLLERR always come
 * @fn:         called with the events that occurred
 * @userdata:   for @fn
 *
 * Return: 0 or a negative errno.
 */
int loop_add_io(Loop *l, LoopSource **ret, int fd, uint32_t events, LoopIoFn fn,
                void *userdata) {
        LoopSource *s;
        int r;

        r = loop_add_io_off(l, &s, fd, events, fn, userdata);
        if (r < 0)
                return r;
        return source_watch(s, events, ret);
}

/**
 * loop_add_time() - a one-shot timer
 * @l:          the loop
 * @ret:        the source
 * @usec:       when (CLOCK_MONOTONIC µs); UINT64_MAX: not armed
 * @fn:         called once when due
 * @userdata:   for @fn
 *
 * Return: 0 or a negative errno.
 */
int loop_add_time(Loop *l, LoopSource **ret, uint64_t usec, LoopTimeFn fn, void *userdata) {
        LoopSource *s;
        int r;

        r = source_new(l, LOOP_SOURCE_TIME, userdata, &s);
        if (r < 0)
                return r;
        s->fn.time = fn;
        r = loop_timer_set(s, usec);
        if (r < 0) {
                loop_source_free(s);
                return r;
        }
        *ret = s;
        return 0;
}

/**
 * loop_add_defer() - a source that runs after each wakeup's io and timers while enabled
 * @l:          the loop
 * @ret:        the source, off
 * @fn:         the callback
 * @userdata:   for @fn
 *
 * Return: 0 or a negative errno.
 */
int loop_add_defer(Loop *l, LoopSource **ret, LoopDeferFn fn, void *userdata) {
        LoopSource *s;
        int r;

        r = source_new(l, LOOP_SOURCE_DEFER, userdata, &s);
        if (r < 0)
                return r;
        s->fn.defer = fn;
        *ret = s;
        return 0;
}

/**
 * loop_add_signal() - a signal, through a signalfd of its own
 * @l:          the loop
 * @ret:        the source
 * @sig:        the signal, blocked by the caller
 * @fn:         called once per delivered signal
 * @userdata:   for @fn
 *
 * Return: 0 or a negative errno.
 */
int loop_add_signal(Loop *l, LoopSource **ret, int sig, LoopSignalFn fn, void *userdata) {
        LoopSource *s;
        sigset_t mask;
        int r;

        r = source_new(l, LOOP_SOURCE_SIGNAL, userdata, &s);
        if (r < 0)
                return r;
        s->fn.signal = fn;
        sigemptyset(&mask);
        sigaddset(&mask, sig);
        s->fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
        if (s->fd < 0) {
                r = error_origin(-errno);
                loop_source_free(s);
                return r;
        }
        return source_watch(s, EPOLLIN, ret);
}

static void source_unhook(LoopSource *s) {
        (void) source_epoll_update(s, false);
        heap_remove(s->loop, s);
        list_unlink(&s->link);
        s->due = false;
        s->enabled = LOOP_OFF;
}

static void source_release(LoopSource *s) {
        if (s->type == LOOP_SOURCE_SIGNAL)
                s->fd = fd_close(s->fd);
        loop_unref(s->loop);
        free(s);
}

/**
 * loop_source_free() - stop a source and free it
 * @s:          the source, or NULL
 *
 * Safe inside any callback, for any source including the one dispatched.
 * Return: NULL.
 */
LoopSource *loop_source_free(LoopSource *s) {
        Loop *l;

        if (!s || s->dead)
                return NULL;
        l = s->loop;
        source_unhook(s);
        if (l->dispatching) {
                s->dead = true;
                list_append(&l->dead, &s->link);
                return NULL;
        }
        source_release(s);
        return NULL;
}

/**
 * loop_io_free_closing() - free an io source whose fd is closed right after
 * @s:          the io source, or NULL
 *
 * epoll forgets an fd when its file's last descriptor is closed, and a socket's file is
 * released before close() returns to the caller. So when the caller closes @s's fd next
 * and no other process holds a copy of it (kdbusd's peer sockets: they are O_CLOEXEC and
 * its only fork, the babysitter, drops its copies before babysitter_spawn() returns), the
 * EPOLL_CTL_DEL would be a syscall for nothing (issue #16: one of the 13 per connection).
 * Were another copy open, the kernel would go on reporting the fd with @s's freed memory
 * as its data: only for such fds.
 *
 * Return: NULL.
 */
LoopSource *loop_io_free_closing(LoopSource *s) {
        if (s && !s->dead && s->type == LOOP_SOURCE_IO)
                s->in_epoll = false;
        return loop_source_free(s);
}

/**
 * loop_source_set_enabled() - switch a source on or off
 * @s:          the source
 * @enabled:    LOOP_OFF, LOOP_ON, or LOOP_ONESHOT (defer and time sources)
 *
 * A timer switched on keeps the time it was armed for (loop_timer_set() arms it).
 * Return: 0 or a negative errno.
 */
int loop_source_set_enabled(LoopSource *s, LoopEnable enabled) {
        Loop *l = s->loop;
        int r;

        if (s->dead)
                return 0;
        switch (s->type) {
        case LOOP_SOURCE_IO:
        case LOOP_SOURCE_SIGNAL:
                enabled = enabled ? LOOP_ON : LOOP_OFF;
                if (!enabled == !s->enabled)
                        return 0;
                r = source_epoll_update(s, enabled);
                if (r < 0)
                        return r;
                break;
        case LOOP_SOURCE_TIME:
                if (!enabled) {
                        heap_remove(l, s);
                        list_unlink(&s->link);
                        s->due = false;
                } else if (s->heap_index == UINT_MAX && !s->due) {
                        r = heap_insert(l, s);
                        if (r < 0)
                                return r;
                }
                break;
        case LOOP_SOURCE_DEFER:
                if (!enabled)
                        list_unlink(&s->link);
                else if (!list_is_linked(&s->link))
                        list_append(&l->defers, &s->link);
                break;
        }
        s->enabled = enabled;
        return 0;
}

/**
 * loop_io_set_events() - change what an io source waits for
 * @s:          the io source
 * @events:     EPOLLIN, EPOLLOUT
 *
 * Return: 0 or a negative errno.
 */
int loop_io_set_events(LoopSource *s, uint32_t events) {
        if (s->dead || s->events == events)
                return 0;
        s->events = events;
        if (!s->in_epoll)
                return 0;
        return source_epoll_update(s, true);
}

/**
 * loop_timer_set() - arm a one-shot timer, or disarm it
 * @s:          the time source
 * @usec:       when; UINT64_MAX: disarm
 *
 * Return: 0 or a negative errno.
 */
int loop_timer_set(LoopSource *s, uint64_t usec) {
        if (s->dead)
                return 0;
        (void) loop_source_set_enabled(s, LOOP_OFF);
        if (usec == UINT64_MAX)
                return 0;
        s->usec = usec;
        return loop_source_set_enabled(s, LOOP_ONESHOT);
}

static void dispatch_io(Loop *l, unsigned n) {
        unsigned i;

        for (i = 0; i < n && !l->exiting; ++i) {
                LoopSource *s = l->events[i].data.ptr;
                uint32_t revents;
                uint64_t expirations;

                if (!s) {
                        /* the timerfd: dispatch_timers() looks at the heap */
                        (void) read(l->timer_fd, &expirations, sizeof(expirations));
                        l->timer_armed = UINT64_MAX;
                        continue;
                }
                if (s->dead || !s->enabled)
                        continue;
                revents = l->events[i].events & (s->events | EPOLLHUP | EPOLLERR);
                if (!revents)
                        continue;
                if (s->type == LOOP_SOURCE_IO) {
                        (void) s->fn.io(s, s->fd, revents, s->userdata);
                        continue;
                }
                for (;;) {
                        struct signalfd_siginfo si;

                        if (read(s->fd, &si, sizeof(si)) != (ssize_t)sizeof(si))
                                break;
                        (void) s->fn.signal(s, &si, s->userdata);
                        if (s->dead || !s->enabled)
                                break;
                }
        }
}

static void dispatch_timers(Loop *l) {
        List *n;

        /* take what is due first: a callback that re-arms for "now" runs next wakeup */
        while (l->n_heap && l->heap[0]->usec <= l->now) {
                LoopSource *s = l->heap[0];

                heap_remove(l, s);
                s->due = true;
                list_append(&l->due, &s->link);
        }
        while (!l->exiting && (n = list_first(&l->due))) {
                LoopSource *s = list_entry(n, LoopSource, link);

                list_unlink(n);
                s->due = false;
                s->enabled = LOOP_OFF;
                (void) s->fn.time(s, s->usec, s->userdata);
        }
}

static void dispatch_defers(Loop *l) {
        List batch = LIST_INIT(batch), *n;

        /* this wakeup's defers only: one enabled from a defer callback runs next wakeup */
        if (list_is_empty(&l->defers))
                return;
        batch.next = l->defers.next;
        batch.prev = l->defers.prev;
        batch.next->prev = &batch;
        batch.prev->next = &batch;
        list_init(&l->defers);
        while (!l->exiting && (n = list_first(&batch))) {
                LoopSource *s = list_entry(n, LoopSource, link);

                list_unlink(n);
                if (s->enabled == LOOP_ONESHOT)
                        s->enabled = LOOP_OFF;
                else
                        list_append(&l->defers, &s->link);
                (void) s->fn.defer(s, s->userdata);
        }
        /* exiting: what did not run stays enabled */
        while ((n = list_first(&batch))) {
                list_unlink(n);
                list_append(&l->defers, n);
        }
}

/*
 * The timerfd is set to the earliest timer only when that is earlier than what it is set
 * to: a timer disarmed or moved later (a call answered before its deadline) costs no
 * syscall; the timerfd then fires early, nothing is due, and it is set again. A timer that
 * is already due makes the wait 0 instead.
 */
static int loop_timeout_ms(Loop *l, uint64_t timeout_usec) {
        struct itimerspec its = { { 0, 0 }, { 0, 0 } };
        uint64_t now, top, wait;

        if (l->n_heap) {
                top = l->heap[0]->usec;
                now = loop_clock();
                if (top <= now)
                        return 0;
                if (top < l->timer_armed) {
                        its.it_value.tv_sec = (time_t)(top / 1000000u);
                        its.it_value.tv_nsec = (long)(top % 1000000u) * 1000;
                        if (timerfd_settime(l->timer_fd, TFD_TIMER_ABSTIME, &its, NULL) == 0)
                                l->timer_armed = top;
                        else
                                timeout_usec = MIN(timeout_usec, top - now);
                }
        }
        if (!list_is_empty(&l->defers))
                return 0;
        if (timeout_usec == UINT64_MAX)
                return -1;
        wait = timeout_usec;
        /* rounded up: waking before the caller's time would only wait again */
        return (int)MIN((wait + 999) / 1000, (uint64_t)INT_MAX);
}

/**
 * loop_run_once() - one wakeup: wait, then dispatch every event it brought
 * @l:          the loop
 * @timeout_usec: the longest wait; UINT64_MAX: until an event, a timer or a defer
 *
 * Return: 0, or a negative errno (epoll_wait() failed).
 */
int loop_run_once(Loop *l, uint64_t timeout_usec) {
        List *n;
        int k;

        if (l->exiting)
                return 0;
        k = epoll_wait(l->epoll_fd, l->events, LOOP_EVENTS_MAX, loop_timeout_ms(l, timeout_usec));
        if (k < 0) {
                if (errno != EINTR)
                        return error_origin(-errno);
                k = 0;
        }
        l->now = loop_clock();
        l->have_now = true;
        ++l->iteration;

        loop_ref(l);
        ++l->dispatching;
        dispatch_io(l, (unsigned)k);
        dispatch_timers(l);
        dispatch_defers(l);
        if (--l->dispatching == 0) {
                while ((n = list_first(&l->dead))) {
                        list_unlink(n);
                        source_release(list_entry(n, LoopSource, link));
                }
        }
        loop_unref(l);
        return 0;
}

/**
 * loop_run() - run until loop_exit()
 * @l:          the loop
 *
 * Return: the code given to loop_exit(), or a negative errno.
 */
int loop_run(Loop *l) {
        int r;

        while (!l->exiting) {
                r = loop_run_once(l, UINT64_MAX);
                if (r < 0)
                        return r;
        }
        return l->exit_code;
}

/**
 * loop_exit() - make loop_run() return after the current callback
 * @l:          the loop
 * @code:       what loop_run() returns
 */
void loop_exit(Loop *l, int code) {
        l->exiting = true;
        l->exit_code = code;
}
