/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * kdbus-relay: the physical reference for bench/run.sh. An epoll program that moves the
 * same bytes a bus moves between the same sockets, with no bus logic at all: no SASL, no
 * parsing, no routing, no stamping. Whatever a bus does beyond this costs time the relay
 * does not spend, so "kdbusd / relay" says how close the bus is to the sockets' own limit.
 *
 *   kdbus-relay --listen PATH [--sndbuf BYTES]
 *
 * --sndbuf: SO_SNDBUF of every accepted socket, as a bus sets it on its peers' sockets
 * (bench/run.sh passes kdbusd's CLIENT_SNDBUF), so that the reference moves the bytes
 * through the same socket buffers as the bus it is compared with.
 *
 * Each connection's first byte says its role: 'c' the hub (kdbus-bench's client or signal
 * sender), anything else a peer (the service, the signal receivers). Bytes from the hub go
 * to every peer, bytes from a peer go to the hub: a call reaches the service, its reply the
 * client, a signal every receiver. Only one peer may talk back at a time (kdbus-bench's
 * topology: one service; receivers never write); two would interleave their streams, so
 * the relay refuses that and exits.
 *
 * A connection whose first byte is SASL's NUL (kdbus-bench's connect workload: connect,
 * AUTH EXTERNAL, BEGIN + Hello, close) is greeted instead: its AUTH line is answered with a
 * fixed OK line, its BEGIN + Hello with the Hello's reply and NameAcquired, built by the
 * benchmark's codec as a bus would send them; then it is closed when it hangs up. Nothing is
 * checked (no credentials asked, no parsing beyond the Hello's serial), no state is kept:
 * the floor of a connection's cost in the sockets, the kernel and the client (bus/relay
 * ratio of the connect workload).
 *
 * Like a bus, the relay reads a source in large chunks into one buffer, writes that buffer
 * to each destination (one write per destination: the kernel copies it per socket, as it
 * does for a bus's writev of a shared message) and does not read the source again until
 * every destination took it: backpressure instead of unbounded queues. One thread, one
 * epoll set, level-triggered.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include "bench/bench-wire.h"
#include "wire/protocol.h"

#define RELAY_BUF (256u * 1024u)        /* a bus's large read, the bench client's buffer */
#define RELAY_MAX_CONNS 1024u

typedef struct Conn Conn;
struct Conn {
        int fd;
        int role;                       /* 0: not yet known, 'c': hub, 'p': peer,
                                         * 'g': greeted (SASL, Hello) */
        uint8_t *buf;                   /* what was read from this connection */
        size_t len;                     /* valid bytes in buf; 0: nothing pending */
        unsigned owed;                  /* destinations that have not taken buf yet */
        Conn *from;                     /* as a destination: whose buffer it is taking */
        size_t off;                     /* ... and how much of it it took */
        uint32_t events;
};

static int epfd = -1;
static int sndbuf;
static Conn *conns[RELAY_MAX_CONNS];
static unsigned n_conns;
static Conn *hub;
/* closed during one epoll batch, freed after it (later events of the batch may name them) */
static Conn *dead[RELAY_MAX_CONNS];
static unsigned n_dead;
static unsigned n_greeted;

static void conn_events(Conn *c, uint32_t events) {
        struct epoll_event ev = { .events = events, .data.ptr = c };

        if (events == c->events)
                return;
        if (epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev) < 0) {
                perror("kdbus-relay: epoll_ctl");
                exit(1);
        }
        c->events = events;
}

/* Reading @c resumes once nothing of its buffer is owed; writing waits only while owed. */
static void conn_update(Conn *c) {
        uint32_t events = 0;

        if (!c->owed)
                events |= EPOLLIN;
        if (c->from)
                events |= EPOLLOUT;
        conn_events(c, events);
}

static void conn_close(Conn *c);

/* The destination @d took all of its source's buffer. */
static void dest_done(Conn *d) {
        Conn *s = d->from;

        d->from = NULL;
        d->off = 0;
        conn_update(d);
        if (s && --s->owed == 0) {
                s->len = 0;
                conn_update(s);
        }
}

/* Write what @d still owes of its source's buffer. Return: false if @d was closed. */
static bool dest_write(Conn *d) {
        Conn *s = d->from;

        while (d->off < s->len) {
                ssize_t k = send(d->fd, s->buf + d->off, s->len - d->off,
                                 MSG_DONTWAIT | MSG_NOSIGNAL);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0 && errno == EAGAIN) {
                        conn_update(d);
                        return true;
                }
                if (k < 0) {
                        conn_close(d);
                        return false;
                }
                d->off += (size_t) k;
        }
        dest_done(d);
        return true;
}

static void source_forward(Conn *s) {
        Conn *dests[RELAY_MAX_CONNS];
        unsigned n = 0, i;

        if (s->role == 'c') {
                for (i = 0; i < n_conns; i++)
                        if (conns[i]->role == 'p')
                                dests[n++] = conns[i];
        } else if (hub) {
                dests[n++] = hub;
        }
        for (i = 0; i < n; i++) {
                if (dests[i]->from) {
                        fprintf(stderr, "kdbus-relay: two peers write to one destination at "
                                "once; the relay serves kdbus-bench's one-talker topology only\n");
                        exit(1);
                }
        }
        s->owed = n;
        if (!n) {
                s->len = 0;     /* nobody to take it: dropped, as a bus drops an unmatched signal */
                return;
        }
        for (i = 0; i < n; i++) {
                dests[i]->from = s;
                dests[i]->off = 0;
                (void) dest_write(dests[i]);
        }
        /* stop reading only if a destination could not take it all at once: switching
         * EPOLLIN off and on again around writes that complete cost two epoll_ctl() per
         * chunk, 20 per 1 MiB call + reply, which no bus makes */
        conn_update(s);
}

/* A greeted connection's input @p[0..@n): its AUTH line, then BEGIN and its Hello (in one
 * read from kdbus-bench; anything else closes it). */
static void greet(Conn *c, const uint8_t *p, size_t n) {
        static const char ok[] = "OK 0123456789abcdef0123456789abcdef\r\n";
        uint8_t out[512], body[64];
        BenchMsgSpec reply = {
                .type = WIRE_MSG_METHOD_RETURN, .flags = WIRE_FLAG_NO_REPLY_EXPECTED,
                .serial = 1, .signature = "s", .body = body,
        }, acquired = {
                .type = WIRE_MSG_SIGNAL, .flags = WIRE_FLAG_NO_REPLY_EXPECTED, .serial = 2,
                .path = "/org/freedesktop/DBus", .interface = "org.freedesktop.DBus",
                .member = "NameAcquired", .signature = "s", .body = body,
        };
        size_t len = 0, k;
        uint32_t serial, nlen;

        if (!c->len) {                          /* the AUTH line */
                c->len = 1;
                if (send(c->fd, ok, sizeof(ok) - 1, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
                        conn_close(c);
                return;
        }
        if (n < 7 + 16 || memcmp(p, "BEGIN\r\n", 7)) {
                conn_close(c);
                return;
        }
        memcpy(&serial, p + 7 + BENCH_MSG_SERIAL_OFFSET, 4);
        nlen = (uint32_t) snprintf((char *) body + 4, sizeof(body) - 4, ":1.%u", n_greeted++);
        memcpy(body, &nlen, 4);
        reply.reply_serial = serial;
        reply.body_len = acquired.body_len = 4 + nlen + 1;
        reply.destination = acquired.destination = (const char *) body + 4;
        for (BenchMsgSpec *m = &reply; m; m = m == &reply ? &acquired : NULL) {
                k = bench_msg_build(out + len, sizeof(out) - len, m);
                memcpy(out + len + k, body, m->body_len);
                len += k + m->body_len;
        }
        if (send(c->fd, out, len, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
                conn_close(c);
}

static void conn_read(Conn *c) {
        ssize_t k;

        if (!c->role || c->role == 'g') {       /* no 256 KiB buffer for a greeting */
                uint8_t first[4096];

                k = recv(c->fd, first, sizeof(first), MSG_DONTWAIT);
                if (k < 0 && (errno == EAGAIN || errno == EINTR))
                        return;
                if (k <= 0) {
                        conn_close(c);
                        return;
                }
                if (!c->role && first[0] == '\0')
                        c->role = 'g';
                if (c->role == 'g') {
                        greet(c, first, (size_t) k);
                        return;
                }
                c->buf = malloc(RELAY_BUF);
                if (!c->buf) {
                        fputs("kdbus-relay: out of memory\n", stderr);
                        exit(1);
                }
                c->role = first[0] == 'c' ? 'c' : 'p';
                if (c->role == 'c')
                        hub = c;
                c->len = (size_t) k - 1;
                memcpy(c->buf, first + 1, c->len);
                if (c->len)
                        source_forward(c);
                return;
        }
        k = recv(c->fd, c->buf, RELAY_BUF, MSG_DONTWAIT);
        if (k < 0 && (errno == EAGAIN || errno == EINTR))
                return;
        if (k <= 0) {
                conn_close(c);
                return;
        }
        c->len = (size_t) k;
        source_forward(c);
}

static void conn_close(Conn *c) {
        unsigned i;

        /* as a destination: its source owes it nothing more */
        if (c->from)
                dest_done(c);
        /* as a source: no destination goes on taking its buffer */
        for (i = 0; i < n_conns; i++)
                if (conns[i]->from == c) {
                        conns[i]->from = NULL;
                        conns[i]->off = 0;
                        conn_update(conns[i]);
                }
        for (i = 0; i < n_conns; i++)
                if (conns[i] == c) {
                        conns[i] = conns[--n_conns];
                        break;
                }
        if (hub == c)
                hub = NULL;
        (void) epoll_ctl(epfd, EPOLL_CTL_DEL, c->fd, NULL);
        (void) close(c->fd);
        c->fd = -1;
        dead[n_dead++] = c;
}

/* One connection per wakeup, as kdbusd takes them (epoll reports the rest again): no
 * accept4() that finds EAGAIN per connection of the connect workload. */
static void accept_one(int lfd) {
        {
                struct epoll_event ev = { .events = EPOLLIN };
                int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
                Conn *c;

                if (fd < 0)
                        return;
                c = calloc(1, sizeof(*c));
                if (!c || n_conns >= RELAY_MAX_CONNS) {
                        fprintf(stderr, "kdbus-relay: cannot take connection %u\n", n_conns);
                        exit(1);
                }
                c->fd = fd;
                c->events = EPOLLIN;
                if (sndbuf)
                        (void) setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
                ev.data.ptr = c;
                if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
                        perror("kdbus-relay: epoll_ctl");
                        exit(1);
                }
                conns[n_conns++] = c;
        }
}

int main(int argc, char **argv) {
        static const struct option opts[] = {
                { "listen", required_argument, NULL, 'l' },
                { "sndbuf", required_argument, NULL, 's' },
                { "help", no_argument, NULL, 'h' },
                {}
        };
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        struct epoll_event lev = { .events = EPOLLIN, .data.ptr = NULL };
        const char *path = NULL;
        int lfd, c;

        while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
                switch (c) {
                case 'l': path = optarg; break;
                case 's': sndbuf = atoi(optarg); break;
                case 'h':
                        puts("usage: kdbus-relay --listen PATH [--sndbuf BYTES]   (see bench/README.md)");
                        return 0;
                default: return 2;
                }
        }
        if (!path || optind != argc || strlen(path) >= sizeof(sa.sun_path)) {
                fputs("usage: kdbus-relay --listen PATH (a socket path that fits sun_path)\n", stderr);
                return 2;
        }
        memcpy(sa.sun_path, path, strlen(path) + 1);
        lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        (void) unlink(path);
        if (lfd < 0 || bind(lfd, (struct sockaddr *) &sa, sizeof(sa)) < 0 || listen(lfd, 128) < 0) {
                fprintf(stderr, "kdbus-relay: cannot listen on %s: %s\n", path, strerror(errno));
                return 1;
        }
        epfd = epoll_create1(EPOLL_CLOEXEC);
        if (epfd < 0 || epoll_ctl(epfd, EPOLL_CTL_ADD, lfd, &lev) < 0) {
                perror("kdbus-relay: epoll");
                return 1;
        }
        printf("unix:path=%s\n", path);         /* run.sh waits for this line */
        fflush(stdout);
        for (;;) {
                struct epoll_event evs[64];
                int n = epoll_wait(epfd, evs, 64, -1), i;

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        perror("kdbus-relay: epoll_wait");
                        return 1;
                }
                for (i = 0; i < n; i++) {
                        Conn *x = evs[i].data.ptr;

                        if (!x) {
                                accept_one(lfd);
                                continue;
                        }
                        if (x->fd < 0)
                                continue;       /* closed earlier in this batch */
                        if ((evs[i].events & EPOLLOUT) && x->from && !dest_write(x))
                                continue;
                        if ((evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) && !x->owed)
                                conn_read(x);
                }
                while (n_dead) {
                        Conn *x = dead[--n_dead];

                        free(x->buf);
                        free(x);
                }
        }
}
