/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The libc functions libkdbus-preload.so stands in for (see preload/preload.h): open()
 * of a kdbusfs node, ioctl(), mmap(), close() and the dup family on its fds, and the
 * readiness calls (poll, ppoll, select, pselect, epoll_ctl). Every other fd goes to libc
 * untouched.
 */
/* we define both open() and open64() (and mmap, fcntl): the build's 64-bit file offsets
 * would rename the first into the second */
#undef _FILE_OFFSET_BITS
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include "kdbus/kdbus.h"
#include "preload/preload.h"

#define EXPORT __attribute__((visibility("default")))

/* fd numbers the table covers; a kdbus handle above it is refused (EMFILE) */
#define PRELOAD_MAX_FD 65536

static int (*real_open)(const char *, int, ...);
static int (*real_openat)(int, const char *, int, ...);
static int (*real_ioctl)(int, unsigned long, ...);
static void *(*real_mmap)(void *, size_t, int, int, int, off_t);
int (*preload_real_close)(int);
static int (*real_dup)(int);
static int (*real_dup2)(int, int);
static int (*real_dup3)(int, int, int);
static int (*real_fcntl)(int, int, ...);
static int (*real_poll)(struct pollfd *, nfds_t, int);
static int (*real_ppoll)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *);
static int (*real_epoll_ctl)(int, int, int, struct epoll_event *);

static PreloadHandle *handles[PRELOAD_MAX_FD];
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;

static void *preload_sym(const char *name) {
        return dlsym(RTLD_NEXT, name);
}

/* After a fork() both processes may hold every handle: none is ended by one's close(). */
static void preload_atfork_prepare(void) {
        (void) pthread_mutex_lock(&table_lock);
        for (int fd = 0; fd < PRELOAD_MAX_FD; fd++)
                if (handles[fd])
                        handles[fd]->shared = true;
        (void) pthread_mutex_unlock(&table_lock);
}

/* A forked child has one thread: a lock some other thread of the parent held is free. */
static void preload_atfork_child(void) {
        preload_pid_forget();
        preload_freed_forget_all();
        (void) pthread_mutex_init(&table_lock, NULL);
        /* each handle once (dup()s share it): the child's requests get channels of its
         * own; the parent's attached sockets, held RECV and kept message are the parent's */
        for (int fd = 0; fd < PRELOAD_MAX_FD; fd++) {
                PreloadHandle *h = handles[fd];

                if (!h || h->chan0_lock_seen)
                        continue;
                h->chan0_lock_seen = true;
                (void) pthread_mutex_init(&h->lock, NULL);
                (void) pthread_mutex_init(&h->recv_lock, NULL);
                (void) pthread_mutex_init(&h->chan[0].lock, NULL);
                preload_chans_close(h);
                h->chan0_foreign = true;
                h->armed = -1;
                preload_prefetch_drop(h);
        }
        for (int fd = 0; fd < PRELOAD_MAX_FD; fd++)
                if (handles[fd])
                        handles[fd]->chan0_lock_seen = false;
}

__attribute__((constructor)) static void preload_init(void) {
        if (real_epoll_ctl)
                return;
        real_open = preload_sym("open");
        real_openat = preload_sym("openat");
        real_ioctl = preload_sym("ioctl");
        real_mmap = preload_sym("mmap");
        preload_real_close = preload_sym("close");
        real_dup = preload_sym("dup");
        real_dup2 = preload_sym("dup2");
        real_dup3 = preload_sym("dup3");
        real_fcntl = preload_sym("fcntl");
        real_poll = preload_sym("poll");
        real_ppoll = preload_sym("ppoll");
        (void) pthread_atfork(preload_atfork_prepare, NULL, preload_atfork_child);
        __atomic_store_n(&real_epoll_ctl, preload_sym("epoll_ctl"), __ATOMIC_RELEASE);
}

/* Another library's constructor may call us before ours ran. */
#define PRELOAD_READY() do { if (!__atomic_load_n(&real_epoll_ctl, __ATOMIC_ACQUIRE)) \
                                preload_init(); } while (0)

PreloadHandle *preload_handle_get(int fd) {
        PreloadHandle *h;

        if (fd < 0 || fd >= PRELOAD_MAX_FD)
                return NULL;
        __atomic_load(&handles[fd], &h, __ATOMIC_ACQUIRE);
        return h;
}

/* @fd now names @h too (a dup); the previous handle of @fd loses that name. */
static void preload_handle_alias(int fd, PreloadHandle *h);

static void preload_handle_unref(PreloadHandle *h) {
        if (--h->refs)
                return;
        preload_handle_forget(h);
        preload_chans_close(h);
        preload_prefetch_drop(h);
        (void) pthread_mutex_destroy(&h->chan[0].lock);
        if (h->pool_fd >= 0)
                (void) preload_real_close(h->pool_fd);
        if (h->wake_fd >= 0)
                (void) preload_real_close(h->wake_fd);
        if (h->ring)
                (void) munmap(h->ring, KDBUS_WIRE_FREE_RING_BYTES);
        (void) pthread_mutex_destroy(&h->lock);
        (void) pthread_mutex_destroy(&h->recv_lock);
        free(h);
}

/* Forget the name @fd (it is being closed or replaced). */
static void preload_handle_drop(int fd) {
        PreloadHandle *h;

        if (fd < 0 || fd >= PRELOAD_MAX_FD)
                return;
        (void) pthread_mutex_lock(&table_lock);
        h = handles[fd];
        if (h) {
                __atomic_store_n(&handles[fd], NULL, __ATOMIC_RELEASE);
                preload_handle_unref(h);
        }
        (void) pthread_mutex_unlock(&table_lock);
}

static void preload_handle_alias(int fd, PreloadHandle *h) {
        PreloadHandle *old;

        if (fd < 0 || fd >= PRELOAD_MAX_FD)
                return;
        (void) pthread_mutex_lock(&table_lock);
        old = handles[fd];
        h->refs++;
        __atomic_store_n(&handles[fd], h, __ATOMIC_RELEASE);
        if (old)
                preload_handle_unref(old);
        (void) pthread_mutex_unlock(&table_lock);
}

/**
 * preload_sock_sndbuf() - room for one datagram with kdbus's largest SEND
 * @fd:         a request socket (a handle's, or a thread's channel)
 *
 * 2 MiB of PAYLOAD_VEC bytes and a 32 KiB command: the default send buffer (about 208 KiB)
 * refused larger datagrams with EMSGSIZE. The kernel doubles the value and caps it at
 * net.core.wmem_max.
 */
void preload_sock_sndbuf(int fd) {
        int sndbuf = (2 << 20) + (64 << 10);

        (void) setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
}

/*
 * @path is a unix socket: if it is a kdbus node of kdbusd (SOCK_SEQPACKET), connect to it.
 * Return: the fd, -1 with errno ENXIO (not ours: what open() of a socket says), or -1 with
 * errno as connect() failed (EACCES: the node's mode, as kdbusfs's).
 */
static int preload_open_node(int dirfd, const char *path, int flags) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        PreloadHandle *h;
        const char *base;
        int fd, opath = -1, r;

        bool direct = strlen(path) < sizeof(sa.sun_path) && (path[0] == '/' || dirfd == AT_FDCWD);

        if (direct)
                strcpy(sa.sun_path, path);
        else {
                /* a long or dirfd-relative path: connect through /proc/self/fd */
                opath = real_openat(dirfd, path, O_PATH | O_CLOEXEC);
                if (opath < 0)
                        return -1;
                (void) snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d", opath);
        }
        fd = socket(AF_UNIX, SOCK_SEQPACKET | ((flags & O_CLOEXEC) ? SOCK_CLOEXEC : 0), 0);
        if (fd < 0) {
                r = errno;
                goto fail;
        }
        preload_sock_sndbuf(fd);
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
                r = errno == EPROTOTYPE || errno == ECONNREFUSED ? ENXIO : errno;
                (void) preload_real_close(fd);
                goto fail;
        }
        if (opath >= 0)
                (void) preload_real_close(opath);
        if (fd >= PRELOAD_MAX_FD) {
                (void) preload_real_close(fd);
                errno = EMFILE;
                return -1;
        }
        h = calloc(1, sizeof(*h));
        if (!h) {
                (void) preload_real_close(fd);
                errno = ENOMEM;
                return -1;
        }
        (void) pthread_mutex_init(&h->lock, NULL);
        (void) pthread_mutex_init(&h->recv_lock, NULL);
        (void) pthread_mutex_init(&h->chan[0].lock, NULL);
        h->chan[0].sock = -1;
        h->n_chans = 1;
        h->armed = -1;
        /* further channels connect to the same node (not through /proc/self/fd, whose
         * O_PATH fd is gone; a relative path would follow chdir(): absolute only) */
        if (direct && path[0] == '/')
                h->addr = sa;
        h->sock = fd;
        h->pool_fd = -1;
        h->wake_fd = -1;
        base = strrchr(path, '/');
        h->control = !strcmp(base ? base + 1 : path, "control");
        preload_handle_alias(fd, h);
        return fd;
fail:
        if (opath >= 0)
                (void) preload_real_close(opath);
        errno = r;
        return -1;
}

/* open()/openat() of @path: a kdbus node, or libc's. */
static int preload_open_common(int dirfd, const char *path, int flags, mode_t mode) {
        struct stat st;
        int fd;

        fd = real_openat(dirfd, path, flags, mode);
        if (fd >= 0 || errno != ENXIO || (flags & (O_CREAT | O_PATH | O_DIRECTORY)))
                return fd;
        /* the kernel refuses to open a socket with ENXIO: kdbusd's nodes are sockets */
        if (fstatat(dirfd, path, &st, 0) < 0 || !S_ISSOCK(st.st_mode)) {
                errno = ENXIO;
                return -1;
        }
        return preload_open_node(dirfd, path, flags);
}

static mode_t open_mode(int flags, va_list ap) {
        return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? va_arg(ap, mode_t) : 0;
}

EXPORT int open(const char *path, int flags, ...) {
        PRELOAD_READY();
        va_list ap;
        mode_t mode;

        va_start(ap, flags);
        mode = open_mode(flags, ap);
        va_end(ap);
        return preload_open_common(AT_FDCWD, path, flags, mode);
}

EXPORT int open64(const char *path, int flags, ...) {
        PRELOAD_READY();
        va_list ap;
        mode_t mode;

        va_start(ap, flags);
        mode = open_mode(flags, ap);
        va_end(ap);
        return preload_open_common(AT_FDCWD, path, flags, mode);
}

EXPORT int openat(int dirfd, const char *path, int flags, ...) {
        PRELOAD_READY();
        va_list ap;
        mode_t mode;

        va_start(ap, flags);
        mode = open_mode(flags, ap);
        va_end(ap);
        return preload_open_common(dirfd, path, flags, mode);
}

EXPORT int openat64(int dirfd, const char *path, int flags, ...) {
        PRELOAD_READY();
        va_list ap;
        mode_t mode;

        va_start(ap, flags);
        mode = open_mode(flags, ap);
        va_end(ap);
        return preload_open_common(dirfd, path, flags, mode);
}

EXPORT int ioctl(int fd, unsigned long request, ...) {
        PRELOAD_READY();
        PreloadHandle *h = preload_handle_get(fd);
        va_list ap;
        void *arg;
        int r;

        va_start(ap, request);
        arg = va_arg(ap, void *);
        va_end(ap);
        if (!h)
                return real_ioctl(fd, request, arg);
        r = preload_ioctl(h, fd, request, arg);
        if (r < 0) {
                errno = -r;
                return -1;
        }
        return 0;
}

/* kdbus_pool_mmap(): a connection's pool only, never writable, inside the pool. */
EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
        PRELOAD_READY();
        PreloadHandle *h = preload_handle_get(fd);

        if (!h)
                return real_mmap(addr, len, prot, flags, fd, off);
        if (h->type != PRELOAD_HANDLE_CONNECTED) {
                errno = EBADFD;
                return MAP_FAILED;
        }
        if (prot & PROT_WRITE) {
                errno = EPERM;
                return MAP_FAILED;
        }
        if (off < 0 || (uint64_t)off + len > h->pool_size) {
                errno = EFAULT;
                return MAP_FAILED;
        }
        return real_mmap(addr, len, prot, flags, h->pool_fd, off);
}

EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
        PRELOAD_READY();
        return mmap(addr, len, prot, flags, fd, off);
}

EXPORT int close(int fd) {
        PreloadHandle *h;

        PRELOAD_READY();
        h = preload_handle_get(fd);
        if (h) {
                if (h->refs == 1)
                        preload_handle_close(h, fd);
                preload_handle_drop(fd);
        }
        return preload_real_close(fd);
}

EXPORT int dup(int fd) {
        PRELOAD_READY();
        PreloadHandle *h = preload_handle_get(fd);
        int r = real_dup(fd);

        if (r >= 0 && h)
                preload_handle_alias(r, h);
        return r;
}

EXPORT int dup2(int fd, int fd2) {
        PRELOAD_READY();
        PreloadHandle *h = preload_handle_get(fd);
        int r = real_dup2(fd, fd2);

        if (r >= 0 && fd != fd2) {
                if (h)
                        preload_handle_alias(r, h);
                else
                        preload_handle_drop(r);
        }
        return r;
}

EXPORT int dup3(int fd, int fd2, int flags) {
        PRELOAD_READY();
        PreloadHandle *h = preload_handle_get(fd);
        int r = real_dup3(fd, fd2, flags);

        if (r >= 0) {
                if (h)
                        preload_handle_alias(r, h);
                else
                        preload_handle_drop(r);
        }
        return r;
}

EXPORT int fcntl(int fd, int cmd, ...) {
        PRELOAD_READY();
        PreloadHandle *h = preload_handle_get(fd);
        va_list ap;
        long arg;
        int r;

        va_start(ap, cmd);
        arg = va_arg(ap, long);
        va_end(ap);
        r = real_fcntl(fd, cmd, arg);
        if (r >= 0 && h && (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC))
                preload_handle_alias(r, h);
        return r;
}

EXPORT int fcntl64(int fd, int cmd, ...) {
        PRELOAD_READY();
        va_list ap;
        long arg;

        va_start(ap, cmd);
        arg = va_arg(ap, long);
        va_end(ap);
        return fcntl(fd, cmd, arg);
}

/*
 * kdbus_handle_poll(): what a handle shows by itself, without waiting: POLLERR|POLLHUP
 * for one that is no connection or whose connection ended, POLLOUT always. Return: the
 * events that are ready now (of @events, plus ERR/HUP).
 */
static short preload_poll_now(const PreloadHandle *h, short events) {
        if (h->type != PRELOAD_HANDLE_CONNECTED || h->byebye)
                return POLLERR | POLLHUP;
        return events & (POLLOUT | POLLWRNORM);
}

/* @a - @b, or zero if @b is later */
static struct timespec ts_left(const struct timespec *a, const struct timespec *b) {
        struct timespec d = { a->tv_sec - b->tv_sec, a->tv_nsec - b->tv_nsec };

        if (d.tv_nsec < 0) {
                d.tv_nsec += 1000000000L;
                d.tv_sec--;
        }
        if (d.tv_sec < 0)
                d = (struct timespec){ 0, 0 };
        return d;
}

/*
 * poll() with kdbus handles: each stands for its wakeup eventfd (POLLIN while messages
 * wait), its socket (POLLHUP when kdbusd closed it: the bus or the connection is gone)
 * and, when the call would wait, the socket of a held RECV armed for it
 * (preload/preload-chan.c): the message comes there, kept for the program's RECV.
 */
static int preload_ppoll(struct pollfd *fds, nfds_t n, const struct timespec *ts,
                         const sigset_t *mask) {
        struct pollfd *x;
        nfds_t n_x, i;
        int *rdhup, *held;
        struct timespec zero = { 0, 0 }, deadline = { 0, 0 }, left, t;
        bool any = false, now, waiting = !ts || ts->tv_sec || ts->tv_nsec;
        int r;

        for (i = 0; i < n; i++)
                if (preload_handle_get(fds[i].fd)) {
                        any = true;
                        break;
                }
        /* about to wait: the FREEs the library answered were done by now in kdbus (a
         * message may wait for that pool space); a few may stay on a handle with a held
         * RECV, they go with its next request */
        if (waiting)
                preload_flush_freed(NULL, true, true);
        if (!any)
                return real_ppoll(fds, n, ts, mask);
        /* x[0..n) the program's entries (a handle's as its eventfd), then the sockets */
        x = calloc(n * 3, sizeof(*x));
        rdhup = calloc(n * 2, sizeof(int));
        if (!x || !rdhup) {
                free(x);
                free(rdhup);
                errno = ENOMEM;
                return -1;
        }
        held = rdhup + n;
        if (ts) {
                (void) clock_gettime(CLOCK_MONOTONIC, &t);
                deadline.tv_sec = t.tv_sec + ts->tv_sec;
                deadline.tv_nsec = t.tv_nsec + ts->tv_nsec;
                if (deadline.tv_nsec >= 1000000000L) {
                        deadline.tv_nsec -= 1000000000L;
                        deadline.tv_sec++;
                }
        }
        left = ts ? *ts : zero;
        for (;;) {
                now = false;
                n_x = 0;
                for (i = 0; i < n; i++) {
                        PreloadHandle *h = preload_handle_get(fds[i].fd);

                        x[i] = fds[i];
                        rdhup[i] = held[i] = -1;
                        if (!h)
                                continue;
                        if (preload_poll_now(h, fds[i].events) ||
                            (h->pre.valid && (fds[i].events & (POLLIN | POLLRDNORM))))
                                now = true;
                        if (h->type != PRELOAD_HANDLE_CONNECTED || h->byebye) {
                                x[i].fd = -1;
                                continue;
                        }
                        x[i].fd = h->wake_fd;
                        x[i].events = fds[i].events & (POLLIN | POLLRDNORM);
                        rdhup[i] = (int)(n + n_x);
                        x[n + n_x++] = (struct pollfd){ .fd = fds[i].fd, .events = POLLRDHUP };
                        if (waiting && (fds[i].events & (POLLIN | POLLRDNORM)) && !now) {
                                int sock;

                                __atomic_store_n(&h->polled, true, __ATOMIC_RELAXED);
                                sock = preload_chan_arm(h, fds[i].fd);
                                if (sock >= 0) {
                                        held[i] = (int)(n + n_x);
                                        x[n + n_x++] = (struct pollfd){ .fd = sock,
                                                                        .events = POLLIN };
                                }
                        }
                }
                r = real_ppoll(x, n + n_x, now ? &zero : ts ? &left : NULL, mask);
                if (r < 0)
                        break;
                r = 0;
                for (i = 0; i < n; i++) {
                        PreloadHandle *h = preload_handle_get(fds[i].fd);
                        bool answer = false;

                        if (!h) {
                                fds[i].revents = x[i].revents;
                                r += fds[i].revents != 0;
                                continue;
                        }
                        if (held[i] >= 0 && (x[held[i]].revents & (POLLIN | POLLERR | POLLHUP))) {
                                preload_held_poll(h, x[held[i]].fd);
                                answer = true;
                        }
                        fds[i].revents = preload_poll_now(h, fds[i].events);
                        if (rdhup[i] >= 0 && !h->byebye) {
                                if (x[rdhup[i]].revents & (POLLHUP | POLLRDHUP | POLLERR)) {
                                        fds[i].revents = POLLERR | POLLHUP;
                                        /* the bus closed it: RECV and FREE go to the
                                         * bus now (ECONNRESET), not answered here */
                                        __atomic_store_n(&h->byebye, true, __ATOMIC_RELAXED);
                                } else if (h->pre.valid)
                                        fds[i].revents |= fds[i].events & (POLLIN | POLLRDNORM);
                                else if (x[i].revents & POLLIN) {
                                        /* while a RECV is held kdbusd answers it instead
                                         * of writing the eventfd: a count left there is
                                         * stale (another thread's notice of a kept
                                         * message someone received since) */
                                        if (held[i] >= 0 && !answer &&
                                            __atomic_load_n(&h->armed, __ATOMIC_RELAXED) >= 0)
                                                (void) preload_wake_clear(h);
                                        else
                                                fds[i].revents |= x[i].revents &
                                                                  (POLLIN | POLLRDNORM);
                                }
                        } else if (rdhup[i] >= 0)
                                fds[i].revents = POLLERR | POLLHUP;   /* ended just now */
                        r += fds[i].revents != 0;
                }
                /* nothing for the program (a held answer with nothing in it, a stale
                 * count): wait on for what is left of the timeout */
                if (r > 0 || now || !waiting)
                        break;
                if (ts) {
                        (void) clock_gettime(CLOCK_MONOTONIC, &t);
                        left = ts_left(&deadline, &t);
                        if (!left.tv_sec && !left.tv_nsec)
                                break;
                }
        }
        free(x);
        free(rdhup);
        return r;
}

EXPORT int poll(struct pollfd *fds, nfds_t n, int timeout) {
        PRELOAD_READY();
        struct timespec ts;

        if (timeout < 0)
                return preload_ppoll(fds, n, NULL, NULL);
        ts.tv_sec = timeout / 1000;
        ts.tv_nsec = (long)(timeout % 1000) * 1000000L;
        return preload_ppoll(fds, n, &ts, NULL);
}

EXPORT int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *ts, const sigset_t *mask) {
        PRELOAD_READY();
        return preload_ppoll(fds, n, ts, mask);
}

/* select() as poll(), so kdbus handles are seen as poll sees them. */
static int preload_pselect(int nfds, fd_set *rd, fd_set *wr, fd_set *ex,
                           const struct timespec *ts, const sigset_t *mask) {
        struct pollfd *p;
        nfds_t n = 0;
        int r, fd;

        if (nfds < 0 || nfds > FD_SETSIZE) {
                errno = EINVAL;
                return -1;
        }
        p = calloc((size_t)nfds + 1, sizeof(*p));
        if (!p) {
                errno = ENOMEM;
                return -1;
        }
        for (fd = 0; fd < nfds; fd++) {
                short ev = 0;

                if (rd && FD_ISSET(fd, rd))
                        ev |= POLLIN;
                if (wr && FD_ISSET(fd, wr))
                        ev |= POLLOUT;
                if (ex && FD_ISSET(fd, ex))
                        ev |= POLLPRI;
                if (ev)
                        p[n++] = (struct pollfd){ .fd = fd, .events = ev };
        }
        r = preload_ppoll(p, n, ts, mask);
        if (r < 0) {
                free(p);
                return r;
        }
        if (rd)
                FD_ZERO(rd);
        if (wr)
                FD_ZERO(wr);
        if (ex)
                FD_ZERO(ex);
        r = 0;
        for (nfds_t i = 0; i < n; i++) {
                short re = p[i].revents;

                if (re & POLLNVAL) {
                        free(p);
                        errno = EBADF;
                        return -1;
                }
                /* as the kernel's select: hang-up and error count as readable */
                if (rd && (p[i].events & POLLIN) && (re & (POLLIN | POLLHUP | POLLERR))) {
                        FD_SET(p[i].fd, rd);
                        r++;
                }
                if (wr && (p[i].events & POLLOUT) && (re & (POLLOUT | POLLERR))) {
                        FD_SET(p[i].fd, wr);
                        r++;
                }
                if (ex && (p[i].events & POLLPRI) && (re & POLLPRI)) {
                        FD_SET(p[i].fd, ex);
                        r++;
                }
        }
        free(p);
        return r;
}

EXPORT int select(int nfds, fd_set *rd, fd_set *wr, fd_set *ex, struct timeval *tv) {
        PRELOAD_READY();
        struct timespec ts;

        if (!tv)
                return preload_pselect(nfds, rd, wr, ex, NULL, NULL);
        ts.tv_sec = tv->tv_sec;
        ts.tv_nsec = tv->tv_usec * 1000L;
        return preload_pselect(nfds, rd, wr, ex, &ts, NULL);
}

EXPORT int pselect(int nfds, fd_set *rd, fd_set *wr, fd_set *ex, const struct timespec *ts,
                   const sigset_t *mask) {
        PRELOAD_READY();
        return preload_pselect(nfds, rd, wr, ex, ts, mask);
}

/*
 * epoll: a connection is watched through its wakeup eventfd (EPOLLIN while messages
 * wait, EPOLLOUT always); a handle that is no connection cannot be (EPERM, as epoll says
 * for a file without poll support).
 */
EXPORT int epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev) {
        PRELOAD_READY();
        PreloadHandle *h = preload_handle_get(fd);

        if (!h)
                return real_epoll_ctl(epfd, op, fd, ev);
        if (h->type != PRELOAD_HANDLE_CONNECTED) {
                errno = EPERM;
                return -1;
        }
        /* epoll waits on the eventfd alone: no held RECV for this handle from now on, and
         * one armed already is ended (what it took is kept, the eventfd written) */
        __atomic_store_n(&h->epolled, true, __ATOMIC_RELAXED);
        preload_disarm(h, fd);
        return real_epoll_ctl(epfd, op, h->wake_fd, ev);
}
