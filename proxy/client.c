/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A classic D-Bus client: bytes in -> SASL -> framed, validated, stamped messages into the
 * driver; the core's queue for this peer -> sendmsg() (proxy/client-out.c).
 *
 * Invariants:
 *   - Nothing here is freed from inside a core callback (queue_nonempty, kick) or while a
 *     message of this client is being dispatched: a client that must go is flagged
 *     (close_pending), its io source stops, and it goes on the server's closing list;
 *     server_close_some() frees it.
 *   - in[in_start, in_end) is unprocessed input; the buffer is CLIENT_IN_DEFAULT bytes
 *     or more while a larger header came in (see client_in_grow()).
 *   - With in_msg set, the next in_msg->size - in_msg_filled bytes of the stream belong to
 *     it and are read to in_msg->data + in_msg_filled; the input buffer is empty then and
 *     takes what follows in the same read.
 *   - in_fds[0, n_in_fds) are received fds not yet claimed by a message, in arrival order.
 *   - out_ring holds references to messages taken off the core queue, in order; the head
 *     has out_offset bytes written. A message with fds starts a sendmsg() of its own
 *     (when out_offset == 0), so the fds travel with its first byte.
 *   - The io source waits for EPOLLIN only while there is buffer room, no EOF and no close
 *     pending, and for EPOLLOUT only after EAGAIN; with nothing to wait for it is off, so a
 *     hung-up socket cannot spin the loop.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>
#include <linux/sockios.h>
#include "bridge/bus.h"
#include "bridge/conn.h"
#include "bridge/msg.h"
#include "compat/driver.h"
#include "proxy/client.h"
#include "proxy/client-splice.h"
#include "proxy/config.h"
#include "proxy/fd-limit.h"
#include "proxy/peer-creds.h"
#include "proxy/server.h"
#include "util/error.h"
#include "wire/endian.h"
#include "wire/message.h"
#include "wire/protocol.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif

void client_log(ProxyClient *c, int level, const char *fmt, ...) {
        ProxyLogPeer peer = {
                .unique_name = c->conn ? c->conn->unique_name : NULL,
                .pid = c->pid,
                .uid = c->uid,
        };
        char text[1024];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(text, sizeof(text), fmt, ap);
        va_end(ap);
        proxy_log_peer(level, &c->log_limit, loop_now(c->server->loop), &peer, "%s", text);
}

static void client_mark_dirty(ProxyClient *c) {
        server_mark_dirty(c->server, c);
}


/**
 * client_close_later() - stop serving the client now, tear it down later
 * @c:          the client
 *
 * Nothing more is read from it or written to it; what the loop still reports for it is
 * ignored until its fd leaves the epoll set (its teardown, or client_unwatch() when its
 * slice is not in this wakeup). On the bus it stays what it was (names, match rules, its queue)
 * until server_close_some() tears it down, as if its hangup had come then.
 */
void client_close_later(ProxyClient *c) {
        if (c->state == CLIENT_STATE_AUTH && c->server->n_authenticating)
                --c->server->n_authenticating;
        c->state = CLIENT_STATE_CLOSING;
        c->close_pending = true;
        list_unlink(&c->ready_link);
        client_update_events(c);
        server_mark_closing(c->server, c);
}

/**
 * client_unwatch() - take a closing client's fd out of the epoll set
 * @c:          the client, close_pending
 *
 * A closing client stays in the epoll set until its teardown removes it (after the
 * wakeup's writes: the epoll_ctl() is not in front of another peer's answer, issue #16);
 * server_close_some() calls this for those whose slice is not in this wakeup, so that the
 * loop does not report them again while they wait.
 */
void client_unwatch(ProxyClient *c) {
        if (c->io)
                (void) loop_source_set_enabled(c->io, LOOP_OFF);
        c->io_events = 0;
        c->close_unwatched = true;
}

static int client_on_fd_timeout(LoopSource *source, uint64_t usec, void *userdata) {
        ProxyClient *c = userdata;

        c->fd_timer_armed = false;
        if (c->close_pending || !c->n_in_fds)
                return 0;
        client_log(c, LOG_WARNING, "Disconnecting: it sent file descriptors and not the rest "
                   "of the message that carries them within %llu ms (pending_fd_timeout)",
                   (unsigned long long)(c->server->bus->limits.pending_fd_timeout_usec / 1000));
        client_close_later(c);
        return 0;
}

/*
 * As dbus-daemon: fds that arrived without their whole message may wait in the bus for at
 * most pending_fd_timeout, counted from the moment some became pending; then the sender is
 * dropped (they pin resources in the bus). More bytes or fds do not restart the clock.
 */
static void client_update_fd_timer(ProxyClient *c) {
        uint64_t when;
        int r;

        if (!c->n_in_fds || c->close_pending) {
                if (c->fd_timer_armed)
                        (void) loop_timer_set(c->fd_timer, UINT64_MAX);
                c->fd_timer_armed = false;
                return;
        }
        if (c->fd_timer_armed)
                return;
        when = loop_now(c->server->loop);
        when += MIN(c->server->bus->limits.pending_fd_timeout_usec, UINT64_MAX - 1 - when);
        if (c->fd_timer)
                r = loop_timer_set(c->fd_timer, when);
        else
                r = loop_add_time(c->server->loop, &c->fd_timer, when, client_on_fd_timeout, c);
        if (r < 0) {
                client_log(c, LOG_ERR, "Disconnecting: cannot arm the pending_fd_timeout "
                           "timer: %s", strerror(-r));
                client_close_later(c);
                return;
        }
        c->fd_timer_armed = true;
}

void client_update_events(ProxyClient *c) {
        uint32_t events = 0;
        int r;

        client_update_fd_timer(c);
        /* a new client enters the epoll set after its first answer (client_start()), a
         * closing one leaves it at its teardown (client_unwatch()) */
        if (!c->io || c->starting || c->close_pending)
                return;
        /* room after compaction (client_in_prepare() runs before each read) */
        if (!c->close_pending && !c->eof && !c->close_after_flush &&
            c->in_end - c->in_start < c->in_cap)
                events |= EPOLLIN;
        if (c->write_blocked && !c->close_pending)
                events |= EPOLLOUT;
        if (events == c->io_events)
                return;
        if (events)
                (void) loop_io_set_events(c->io, events);
        r = loop_source_set_enabled(c->io, events ? LOOP_ON : LOOP_OFF);
        if (r < 0) {
                /* not in the epoll set (EPOLL_CTL_ADD: ENOMEM, ENOSPC at max_user_watches):
                 * it would never be served */
                client_log(c, LOG_ERR, "Disconnecting: cannot watch its socket: %s "
                           "(fs.epoll.max_user_watches?)", strerror(-r));
                client_close_later(c);
                return;
        }
        c->io_events = events;
}

static void client_on_queue_nonempty(BridgeConn *conn, void *userdata) {
        ProxyClient *c = userdata;

        /* no I/O here: we may be inside another client's dispatch */
        if (!c || c->close_pending || c->write_blocked)
                return;
        client_mark_dirty(c);
}

static void client_on_kick(BridgeConn *conn, void *userdata) {
        ProxyClient *c = userdata;

        if (!c || c->close_pending)
                return;
        client_log(c, LOG_WARNING, "Disconnecting: the bus dropped this peer (it does not read "
                   "its messages fast enough?)");
        client_close_later(c);
}

/*
 * One fd per peer: no pidfd is held for a classic peer. GetConnectionCredentials'
 * ProcessFD asks for one then: SO_PEERPIDFD (Linux >= 6.5) gives a pidfd of the very
 * process that connected, or ESRCH once it is gone; before 6.5, pidfd_open() of the pid
 * SO_PEERCRED recorded (racy, as it was when we opened it at connect).
 */
static int client_get_pidfd(BridgeConn *conn, void *userdata) {
        ProxyClient *c = userdata;
        socklen_t len;
        int pidfd = -1;
        long r;

        if (!c || c->fd < 0)
                return -ENOENT;
        len = sizeof(pidfd);
        if (getsockopt(c->fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) == 0 && pidfd >= 0)
                return pidfd;
        if (errno != ENOPROTOOPT && errno != EINVAL)
                return -errno;
        if (c->pid <= 0)
                return -ENOENT;
        r = syscall(SYS_pidfd_open, c->pid, 0);
        return r >= 0 ? (int)r : -errno;
}

static const BridgeConnOps client_conn_ops = {
        .queue_nonempty = client_on_queue_nonempty,
        .kick = client_on_kick,
        .get_pidfd = client_get_pidfd,
};

ProxyClient *client_of_conn(BridgeConn *conn) {
        return conn && conn->ops == &client_conn_ops ? conn->userdata : NULL;
}

/* Ensure room to read into; a buffer drained after a large message shrinks back. */
static int client_in_prepare(ProxyClient *c) {
        if (!c->in) {
                /* released while idle (client_in_release()) */
                c->in = malloc(c->in_cap);
                if (!c->in)
                        return error_origin(-ENOMEM);
                c->in_start = c->in_end = 0;
                return 0;
        }
        if (c->in_start == c->in_end) {
                c->in_start = c->in_end = 0;
                if (c->in_cap > CLIENT_IN_KEEP) {
                        uint8_t *p = realloc(c->in, CLIENT_IN_DEFAULT);

                        if (p) {
                                c->in = p;
                                c->in_cap = CLIENT_IN_DEFAULT;
                        }
                }
        } else if (c->in_start > 0 && c->in_cap - c->in_end < c->in_cap / 2) {
                memmove(c->in, c->in + c->in_start, c->in_end - c->in_start);
                c->in_end -= c->in_start;
                c->in_start = 0;
        }
        return 0;
}

/* Make the buffer hold at least @size bytes from in_start (one large message). */
static int client_in_grow(ProxyClient *c, size_t size) {
        size_t have = c->in_end - c->in_start;
        uint8_t *p;

        if (size <= c->in_cap - c->in_start)
                return 0;
        if (size <= c->in_cap) {
                memmove(c->in, c->in + c->in_start, have);
                c->in_start = 0;
                c->in_end = have;
                return 0;
        }
        /* room for the next large message too, as long as the result is kept anyway */
        if (size < CLIENT_IN_KEEP)
                size = MIN((size_t)CLIENT_IN_KEEP, 2 * size);
        p = malloc(size);
        if (!p)
                return error_origin(-ENOMEM);
        memcpy(p, c->in + c->in_start, have);
        free(c->in);
        c->in = p;
        c->in_cap = size;
        c->in_start = 0;
        c->in_end = have;
        return 0;
}

static int client_fds_push(ProxyClient *c, const int *fds, unsigned n) {
        unsigned i;

        if (c->n_in_fds + n > CLIENT_MAX_FDS_QUEUED)
                return -EMFILE;
        if (c->n_in_fds + n > c->in_fds_cap) {
                unsigned cap = MAX(c->in_fds_cap * 2, MAX(16u, c->n_in_fds + n));
                int *p = realloc(c->in_fds, cap * sizeof(int));

                if (!p)
                        return error_origin(-ENOMEM);
                c->in_fds = p;
                c->in_fds_cap = cap;
        }
        for (i = 0; i < n; ++i)
                c->in_fds[c->n_in_fds++] = fds[i];
        return 0;
}

/*
 * How much to read into the input buffer. A peer that sends large messages usually sends
 * more of them: after one, the next read into the empty buffer takes only CLIENT_IN_HEAD
 * bytes. Everything of a large message that is read into the buffer (its header, and the
 * body bytes that came with it) is copied into the message when its header is complete,
 * and with a full-size read that was up to 64 KiB of each MiB: 6 % more copying than the
 * socket's own (perf, bench/README.md "Large messages"). A small message after a large
 * one costs one more recvmsg() at most.
 */
static size_t client_in_room(const ProxyClient *c) {
        size_t room = c->in_cap - c->in_end;

        return c->in_large && c->in_start == c->in_end ? MIN(room, (size_t)CLIENT_IN_HEAD) : room;
}

/* Return: 0 (read something, or nothing to read), 1 on EOF, negative errno (drop peer). */
static int client_read(ProxyClient *c) {
        union {
                struct cmsghdr h;
                uint8_t buf[CMSG_SPACE(sizeof(int) * 253)];
        } control;
        struct iovec iov[2];
        struct msghdr mh = { 0 };
        struct cmsghdr *cmsg;
        size_t n_iov = 0;
        ssize_t n;
        int r = 0;

        r = client_in_prepare(c);
        if (r < 0)
                return r;
        if (c->in_msg && client_in_piped(c))
                return client_splice_read(c);
        if (c->in_msg)          /* the rest of a large message first, in place */
                iov[n_iov++] = (struct iovec) {
                        .iov_base = c->in_msg->data + c->in_msg_filled,
                        .iov_len = c->in_msg->size - c->in_msg_filled,
                };
        if (c->in_end < c->in_cap)
                iov[n_iov++] = (struct iovec) {
                        .iov_base = c->in + c->in_end,
                        .iov_len = client_in_room(c),
                };
        if (!n_iov)
                return 0;
        mh.msg_iov = iov;
        mh.msg_iovlen = n_iov;
        mh.msg_control = &control;
        mh.msg_controllen = sizeof(control);

        n = recvmsg(c->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (n < 0) {
                if (errno == EAGAIN || errno == EINTR)
                        return 0;
                return -errno;
        }

        for (cmsg = CMSG_FIRSTHDR(&mh); cmsg; cmsg = CMSG_NXTHDR(&mh, cmsg)) {
                if (cmsg->cmsg_level == SOL_SOCKET && cmsg->cmsg_type == SCM_RIGHTS) {
                        unsigned k = (unsigned)((cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int));
                        int fds[253];
                        unsigned i;

                        memcpy(fds, CMSG_DATA(cmsg), k * sizeof(int));
                        if (!r)
                                r = client_fds_push(c, fds, k);
                        if (r)
                                for (i = 0; i < k; ++i)
                                        (void) close(fds[i]);
                }
        }
        if (r == -EMFILE) {
                client_log(c, LOG_WARNING, "Disconnecting: more than %u file descriptors sent "
                           "without messages that claim them", CLIENT_MAX_FDS_QUEUED);
                return -EPROTO;
        }
        if (r < 0)
                return r;
        if (mh.msg_flags & MSG_CTRUNC) {
                client_log(c, LOG_WARNING, "Disconnecting: file descriptors were lost in "
                           "transit (MSG_CTRUNC; is our fd limit too low?)");
                return -EPROTO;
        }
        if (n == 0)
                return 1;
        if (c->in_msg) {
                size_t k = MIN((size_t)n, c->in_msg->size - c->in_msg_filled);

                c->in_msg_filled += k;
                n -= (ssize_t)k;
        }
        c->in_end += (size_t)n;
        return 0;
}

static void client_protocol_error(ProxyClient *c, const char *what, int code,
                                  const char *(*strerr)(int)) {
        client_log(c, LOG_WARNING, "Disconnecting: %s: %s; the client sent invalid data "
                   "(fix the client or its D-Bus library)", what, strerr(code));
        client_close_later(c);
}

/* The peer's groups (SO_PEERGROUPS), once: after its first answer was written
 * (client_start()), or before the policy needs them if it authenticated at once (a client
 * that sends AUTH and BEGIN together). Return: 0, or -1 when the client is closing. */
static int client_read_groups(ProxyClient *c) {
        int r;

        if (!c->conn || c->conn->creds.groups)
                return 0;
        r = peer_creds_read_groups(c->fd, &c->conn->creds);
        if (r < 0) {
                client_log(c, LOG_ERR, "Disconnecting: cannot read its groups: %s",
                           strerror(-r));
                client_close_later(c);
                return -1;
        }
        return 0;
}

static void client_auth_done(ProxyClient *c) {
        if (c->server->n_authenticating)
                --c->server->n_authenticating;
        c->state = CLIENT_STATE_RUNNING;
        /* auth_timer keeps running: as dbus-daemon, it also bounds the time until Hello;
         * client_dispatch() frees it once Hello has succeeded */
        if (c->sasl.unix_fds_agreed)
                c->conn->flags |= BRIDGE_CONN_ACCEPT_FDS;
        c->conn->creds.uid_unknown = c->sasl.anonymous;
}

/* Return: true if progress was made. */
static bool client_process_auth(ProxyClient *c) {
        size_t consumed, out_len;
        int r;

        if (c->sasl_out_start == c->sasl_out_end)
                c->sasl_out_start = c->sasl_out_end = 0;
        r = sasl_server_feed(&c->sasl, c->in + c->in_start, c->in_end - c->in_start,
                             c->sasl_out + c->sasl_out_end, sizeof(c->sasl_out) - c->sasl_out_end,
                             &consumed, &out_len);
        c->in_start += consumed;
        c->sasl_out_end += out_len;
        if (out_len)
                client_mark_dirty(c);
        if (r) {
                client_log(c, LOG_NOTICE, "Disconnecting during authentication: %s",
                           sasl_strerror(r));
                client_close_later(c);
                return false;
        }
        if (sasl_server_is_done(&c->sasl)) {
                if (c->sasl.anonymous && !c->server->allow_anonymous) {
                        /* dbus-daemon: OK to ANONYMOUS, then the socket closes at BEGIN */
                        client_log(c, LOG_NOTICE, "Disconnecting: authenticated ANONYMOUS, "
                                   "but the configuration has no <allow_anonymous/>");
                        client_close_later(c);
                        return false;
                }
                client_auth_done(c);
                if (client_read_groups(c) < 0)
                        return false;
                /* the configuration's policy: may this user connect; its snapshot */
                r = proxy_config_admit(c->server, c->conn);
                if (r) {
                        if (r > 0)
                                client_log(c, LOG_NOTICE, "Disconnecting: the configuration's "
                                           "policy does not allow uid %u to connect",
                                           (unsigned)c->uid);
                        else
                                client_log(c, LOG_ERR, "Disconnecting: cannot set up the "
                                           "policy: %s", strerror(-r));
                        client_close_later(c);
                        return false;
                }
                return true;
        }
        /* no whole line left, or no room for a reply until client_flush() made some */
        return false;
}

static int client_take_fds(ProxyClient *c, unsigned n, int **ret) {
        int *fds;

        fds = malloc(n * sizeof(int));
        if (!fds)
                return error_origin(-ENOMEM);
        memcpy(fds, c->in_fds, n * sizeof(int));
        c->n_in_fds -= n;
        memmove(c->in_fds, c->in_fds + n, c->n_in_fds * sizeof(int));
        *ret = fds;
        return 0;
}

/*
 * The peer was accepted into the fd reserve (fd-limit.h): its first message (Hello) gets
 * LimitsExceeded, then it is closed once that is written. The log line is rate-limited
 * for all such peers together: at the limit they come in numbers.
 */
static void client_refuse_fd_limit(ProxyClient *c, const WireHeader *hdr) {
        static ProxyLogLimit limit = PROXY_LOG_LIMIT_NULL(limit);
        ProxyLogPeer peer = { .pid = c->pid, .uid = c->uid };
        char text[512];
        int r;

        (void) snprintf(text, sizeof(text), "The bus is at its file descriptor limit "
                        "(RLIMIT_NOFILE %llu, of which %u are kept for the connected peers); "
                        "the connection is refused. Raise the bus's limit (LimitNOFILE= in "
                        "its service unit, ulimit -n) or retry later",
                        (unsigned long long)fd_limit_get(), fd_limit_reserve());
        proxy_log_peer(LOG_WARNING, &limit, loop_now(c->server->loop), &peer,
                       "Refusing a connection: kdbusd is within %u fds of its fd limit "
                       "(RLIMIT_NOFILE %llu); its Hello is answered LimitsExceeded. Raise "
                       "LimitNOFILE= (ulimit -n)", fd_limit_reserve(),
                       (unsigned long long)fd_limit_get());
        c->close_after_flush = true;
        if (hdr->type == WIRE_MSG_METHOD_CALL && !(hdr->flags & WIRE_FLAG_NO_REPLY_EXPECTED)) {
                r = driver_send_error_text(c->server->driver, c->conn, hdr->serial,
                                           "org.freedesktop.DBus.Error.LimitsExceeded", text);
                if (r == 0)
                        return;
        }
        client_close_later(c);
}

/* What the bus checks of a valid message's fds before it takes it. Return: 0, -1 closing. */
static int client_check_fds(ProxyClient *c, const WireHeader *hdr) {
        Server *s = c->server;

        if (hdr->n_fds && !(c->conn->flags & BRIDGE_CONN_ACCEPT_FDS)) {
                client_log(c, LOG_WARNING, "Disconnecting: message carries file descriptors, "
                           "but fd passing was not negotiated (NEGOTIATE_UNIX_FD)");
                client_close_later(c);
                return -1;
        }
        if (hdr->n_fds > s->bus->limits.max_message_unix_fds) {
                client_log(c, LOG_WARNING, "Disconnecting: message carries %u file descriptors, "
                           "the limit is %u (max_message_unix_fds)", hdr->n_fds,
                           (unsigned)s->bus->limits.max_message_unix_fds);
                client_close_later(c);
                return -1;
        }
        return 0;
}

/* Give @m (taken) its fds and hand it to the driver. Return: 1 dispatched, -1 closing. */
static int client_dispatch(ProxyClient *c, BridgeMsg *msg) {
        _cleanup_(bridge_msg_unrefp) BridgeMsg *m = msg;
        const WireHeader *hdr = &m->hdr;
        int r;

        if (hdr->n_fds) {
                int *fds;

                r = client_take_fds(c, hdr->n_fds, &fds);
                if (r < 0) {
                        client_log(c, LOG_ERR, "Disconnecting: cannot take a message: %s",
                                   strerror(-r));
                        client_close_later(c);
                        return -1;
                }
                bridge_msg_take_fds(m, fds, hdr->n_fds);
        }

        r = driver_handle_message(c->server->driver, c->conn, m);
        if (r == DRIVER_E_DISCONNECT) {
                if (c->conn->flags & BRIDGE_CONN_MONITOR)
                        client_log(c, LOG_NOTICE, "Disconnecting: it became a monitor "
                                   "(BecomeMonitor) and then sent a message (type %u member "
                                   "\"%s\"); monitors may only receive", hdr->type,
                                   hdr->member ? hdr->member : "");
                else if (c->conn->active)
                        client_log(c, LOG_NOTICE, "Disconnecting: its queue of unread bus "
                                   "replies is full");
                else
                        client_log(c, LOG_NOTICE, "Disconnecting: before its Hello() call "
                                   "to org.freedesktop.DBus it sent a message to a peer or a "
                                   "broadcast: type %u member \"%s\" interface \"%s\" "
                                   "destination \"%s\"",
                                   hdr->type, hdr->member ? hdr->member : "",
                                   hdr->interface ? hdr->interface : "",
                                   hdr->destination ? hdr->destination : "");
                client_close_later(c);
                return -1;
        }
        if (r) {
                client_log(c, LOG_ERR, "Disconnecting: the bus failed to handle a message: %s",
                           strerror(r < 0 ? -r : EPROTO));
                client_close_later(c);
                return -1;
        }
        /* Registered (a successful Hello): the auth timeout no longer applies (dbus-daemon's
         * covers authentication and registration only), and an idle peer's armed timer cost
         * a timer per peer for its whole life and a removal at its teardown. */
        if (c->auth_timer && c->conn->active)
                c->auth_timer = loop_source_free(c->auth_timer);
        return 1;
}

/* The large message being read in place, if complete. Return: as client_process_one(). */
static int client_process_in_msg(ProxyClient *c) {
        _cleanup_(bridge_msg_unrefp) BridgeMsg *m = NULL;
        bool piped = client_in_piped(c);
        ProxyClient *d;
        int r;

        if (c->in_msg_filled < c->in_msg->size)
                return 0;
        m = steal_ptr(&c->in_msg);
        c->in_msg_filled = 0;
        r = piped ? bridge_msg_incoming_done_bytes(m, c->n_in_fds, c->in_pipe_from)
                  : bridge_msg_incoming_done(m, c->n_in_fds);
        if (r) {
                client_protocol_error(c, "invalid message", r, wire_strerror);
                return -1;
        }
        if (c->refuse_fd_limit) {
                client_refuse_fd_limit(c, &m->hdr);
                return -1;
        }
        if (client_check_fds(c, &m->hdr) < 0)
                return -1;
        if (!piped)
                return client_dispatch(c, steal_ptr(&m));
        /* its array's contents are in the pipe: see proxy/client-splice.h */
        r = client_splice_target(c, m, &d);
        if (r < 0) {
                client_log(c, LOG_ERR, "Disconnecting: cannot read a message of %zu bytes back "
                           "from its pipe: %s", m->size, strerror(-r));
                client_close_later(c);
                return -1;
        }
        r = client_dispatch(c, bridge_msg_ref(m));
        if (d)
                client_splice_deliver(c, d, m);
        return r;
}

/* A large message whose header is in: read the rest in place. Return: as client_process_one(). */
static int client_begin_in_msg(ProxyClient *c, const WireHeader *hdr) {
        size_t avail = c->in_end - c->in_start;
        int r;

        c->in_large = true;
        r = bridge_msg_new_incoming(c->server->bus->msg_cache, c->in + c->in_start, avail, hdr,
                                    c->conn->active ? c->conn->unique_name : NULL, c->conn->id,
                                    &c->in_msg, &c->in_msg_filled);
        c->in_start = c->in_end;
        if (r > 0) {
                client_protocol_error(c, "message too large once the bus adds the sender", r,
                                      wire_strerror);
                return -1;
        }
        if (r < 0) {
                client_log(c, LOG_ERR, "Disconnecting: out of memory for a message of %u bytes",
                           hdr->total_size);
                client_close_later(c);
                return -1;
        }
        client_splice_begin(c, hdr);
        return client_process_in_msg(c);
}

/* One message, if complete. Return: 1 dispatched, 0 need more input, -1 client closing. */
static int client_process_one(ProxyClient *c) {
        Server *s = c->server;
        _cleanup_(bridge_msg_unrefp) BridgeMsg *m = NULL;
        const uint8_t *data = c->in + c->in_start;
        size_t avail = c->in_end - c->in_start, size;
        WireHeader hdr;
        int r;

        if (c->in_msg)
                return client_process_in_msg(c);

        r = wire_message_frame(data, avail, &size);
        if (r == WIRE_E_AGAIN)
                return 0;
        if (r) {
                client_protocol_error(c, "malformed message", r, wire_strerror);
                return -1;
        }
        if (size > s->bus->limits.max_message_size) {
                client_log(c, LOG_WARNING, "Disconnecting: message of %zu bytes exceeds the "
                           "limit of %u bytes (max_message_size)", size,
                           (unsigned)s->bus->limits.max_message_size);
                client_close_later(c);
                return -1;
        }
        if (avail < size && size >= CLIENT_IN_DIRECT) {
                /* wire_message_frame() checked the byte order and the sizes */
                size_t head = ALIGN8(WIRE_FIXED_HEADER_SIZE +
                                     (size_t)wire_load32(data + 12, data[0] == WIRE_ENDIAN_BIG));

                if (avail >= head) {
                        /* the header's checks now, the body's and the fds' once it is in */
                        r = wire_message_parse(data, avail, SIZE_MAX, WIRE_PARSE_HEADER_ONLY,
                                               &hdr);
                        if (r) {
                                client_protocol_error(c, "invalid message", r, wire_strerror);
                                return -1;
                        }
                        return client_begin_in_msg(c, &hdr);
                }
                /* until the header is in, into the buffer (grown only for a huge header) */
                size = head;
        }
        if (avail < size) {
                r = client_in_grow(c, size);
                if (r < 0) {
                        client_log(c, LOG_ERR, "Disconnecting: out of memory for a message of "
                                   "%zu bytes", size);
                        client_close_later(c);
                        return -1;
                }
                return 0;
        }

        r = wire_message_parse_memo(data, size, c->n_in_fds, 0, &c->field_memo, &hdr);
        if (r) {
                client_protocol_error(c, "invalid message", r, wire_strerror);
                return -1;
        }
        if (c->refuse_fd_limit) {
                c->in_start += size;
                client_refuse_fd_limit(c, &hdr);
                return -1;
        }
        if (client_check_fds(c, &hdr) < 0)
                return -1;

        r = bridge_msg_new_stamped_cached(s->bus->msg_cache, data, &hdr,
                                          c->conn->active ? c->conn->unique_name : NULL,
                                          c->conn->id, &m);
        c->in_start += size;
        c->in_large = false;
        if (r > 0) {
                client_protocol_error(c, "message too large once the bus adds the sender", r,
                                      wire_strerror);
                return -1;
        }
        if (r < 0) {
                client_log(c, LOG_ERR, "Disconnecting: cannot take a message: %s", strerror(-r));
                client_close_later(c);
                return -1;
        }
        return client_dispatch(c, steal_ptr(&m));
}

/*
 * An idle peer holds no input buffer: a drained default-size one goes back to malloc (the
 * next read takes one again, usually the same chunk another peer just gave back), so 10,000
 * idle peers do not keep 10,000 partly touched 64 KiB buffers resident. A grown buffer
 * (client_in_grow()) is kept, for the next large message.
 */
static void client_in_release(ProxyClient *c) {
        /* (a large message being read in place still reads what follows into the buffer) */
        if (!c->in || c->in_msg || c->in_start != c->in_end || c->in_cap != CLIENT_IN_DEFAULT ||
            c->state != CLIENT_STATE_RUNNING)
                return;
        free(c->in);
        c->in = NULL;
        c->in_start = c->in_end = 0;
}

/**
 * client_process() - handle buffered input with a fresh budget
 * @c:          the client
 *
 * Authentication lines, then up to SERVER_CLIENT_BUDGET messages. With input left over
 * the client goes on the server's ready list; at EOF with nothing complete left it is
 * closed (later).
 */
void client_process(ProxyClient *c) {
        unsigned budget = SERVER_CLIENT_BUDGET;
        bool more = false;

        while (!c->close_pending && !c->close_after_flush && c->in) {
                if (c->state == CLIENT_STATE_AUTH) {
                        if (!client_process_auth(c))
                                break;
                        continue;
                }
                if (!budget) {
                        more = true;
                        break;
                }
                if (client_process_one(c) <= 0)
                        break;
                --budget;
        }

        if (c->close_pending)
                return;
        if (more)
                server_mark_ready(c->server, c);
        else if (c->eof)
                client_close_later(c);
        else
                client_in_release(c);
        client_update_events(c);
}

/*
 * The peer hung up (EPOLLHUP: a stream socket's peer closed or shut down both ways, so
 * nothing more can come) and nothing it sent is left to read: the end of the stream,
 * known without a read. An idle peer holds no input buffer (client_in_release()), and
 * reading its EOF would take a 64 KiB one first: in a storm of peers closing at once
 * that was a malloc() and its page faults for each of them.
 */
static bool client_hung_up(ProxyClient *c, uint32_t revents) {
        int n;

        return (revents & EPOLLHUP) && ioctl(c->fd, SIOCINQ, &n) == 0 && n == 0;
}

/* Handle @revents of the client's socket; the caller calls server_flush() after it. */
static void client_handle_io(ProxyClient *c, uint32_t revents) {
        int r;

        if (revents & EPOLLOUT) {
                c->write_blocked = false;
                client_flush(c);
        }
        if (!c->close_pending && (revents & (EPOLLIN | EPOLLHUP | EPOLLERR))) {
                r = client_hung_up(c, revents) ? 1 : client_read(c);
                if (r == -ECONNRESET)
                        r = 1;  /* the peer left with our replies unread: like EOF, what it
                                 * sent before still counts */
                if (r < 0) {
                        if (r != -EPROTO)
                                client_log(c, LOG_INFO, "Disconnecting: read failed: %s",
                                           strerror(-r));
                        client_close_later(c);
                } else {
                        if (r > 0)
                                c->eof = true;
                        /* already on the ready list: it keeps its turn there */
                        if (!list_is_linked(&c->ready_link))
                                client_process(c);
                }
        }
        client_update_events(c);
}

static int client_on_io(LoopSource *source, int fd, uint32_t revents, void *userdata) {
        ProxyClient *c = userdata;

        if (c->close_pending)
                return 0;       /* still in the epoll set until its teardown */
        if (revents & EPOLLHUP) {
                /* nothing more can come from it, nothing it waits for can reach it: after
                 * the other ready peers (client_hangup()) */
                server_mark_hangup(c->server, c);
                return 0;
        }
        server_update_time(c->server);
        client_handle_io(c, revents);
        /* a client that must go is out of the loop already and torn down later, a slice
         * per wakeup (server_close_some()), after what the other ready peers wait for,
         * e.g. the answer to a new connection's AUTH (issue #16: connection churn) or a
         * bystander's call during a storm of closes (issue #17) */
        if (!c->close_pending)
                server_flush(c->server);
        return 0;
}

/**
 * client_hangup() - a hangup the loop reported earlier in this wakeup
 * @c:          the client
 *
 * What it sent before is read and dispatched as at any other wakeup (a budget; the rest
 * from the ready list), then it is closed (later); with nothing left (EPOLLHUP and SIOCINQ
 * 0) without a read. The caller tears down and flushes next (server_on_close()).
 */
void client_hangup(ProxyClient *c) {
        if (!c->close_pending)
                client_handle_io(c, EPOLLIN | EPOLLHUP);
}

/**
 * client_start() - read what a freshly accepted client sent with its connect
 * @c:          the client (client_new() and its endpoint set)
 *
 * Clients speak first (the NUL byte and AUTH right after connect()), and by the time the
 * listener's wakeup accepted it the first line is usually there: reading it now answers
 * it in this wakeup, not after another epoll_wait() returns the new socket (issue #16:
 * connection churn). Nothing there yet costs one recvmsg() that finds EAGAIN. The answer
 * is written before what the client does not wait for: its groups (SO_PEERGROUPS) and
 * its place in the epoll set. The caller calls server_flush() (it may free @c).
 */
void client_start(ProxyClient *c) {
        client_handle_io(c, EPOLLIN);
        /* its answer first, then the epoll_ctl() that puts it in the epoll set: the client
         * waits for the one, not the other */
        if (!c->close_pending)
                client_flush(c);
        c->starting = false;
        if (!c->close_pending && client_read_groups(c) < 0)
                return;
        client_update_events(c);
}

static int client_on_auth_timeout(LoopSource *source, uint64_t usec, void *userdata) {
        ProxyClient *c = userdata;

        if (c->close_pending)
                return 0;
        if (c->state == CLIENT_STATE_AUTH) {
                client_log(c, LOG_NOTICE, "Disconnecting: not authenticated within the auth "
                           "timeout (auth_timeout)");
                client_close_later(c);
        } else if (c->conn && !bridge_conn_is_active(c->conn)) {
                /* as dbus-daemon, which drops connections not registered (Hello) in time,
                 * e.g. one whose Hello failed on max_connections_per_user */
                client_log(c, LOG_NOTICE, "Disconnecting: no successful Hello within the "
                           "auth timeout (auth_timeout)");
                client_close_later(c);
        }
        return 0;
}

/**
 * client_new() - set up a freshly accepted connection
 * @server:     the server
 * @fd:         the socket (taken; closed on failure or refusal)
 * @is_unix:    whether fds can pass
 * @ret:        the client, or NULL when the peer was refused (limits)
 *
 * Return: 0 or a negative errno.
 */
int client_new(Server *server, int fd, bool is_unix, ProxyClient **ret) {
        ProxyClient *c = NULL;
        BridgeCreds creds;
        uint64_t now;
        int r;

        *ret = NULL;
        if (server->n_authenticating >= server->bus->limits.max_incomplete_connections) {
                proxy_log(LOG_WARNING, "Refusing a connection: %u connections are still "
                          "authenticating (max_incomplete_connections)", server->n_authenticating);
                (void) close(fd);
                return 0;
        }
        r = peer_creds_read(fd, &creds);
        if (r < 0) {
                (void) close(fd);
                return r;
        }
        creds.cap_ipc_owner = is_unix && creds.uid != server->bus->owner_uid &&
                              peer_creds_cap_ipc_owner(fd, creds.pid);

        c = calloc(1, sizeof(*c));
        if (!c) {
                peer_creds_deinit(&creds);
                (void) close(fd);
                return error_origin(-ENOMEM);
        }
        c->server = server;
        c->fd = fd;
        c->in_pipe[0] = c->in_pipe[1] = -1;
        c->is_unix = is_unix;
        c->state = CLIENT_STATE_AUTH;
        c->pid = creds.pid;
        c->uid = creds.uid;
        c->refuse_fd_limit = fd_limit_in_reserve(fd);
        list_init(&c->link);
        list_init(&c->dirty_link);
        list_init(&c->ready_link);
        list_init(&c->hangup_link);
        list_append(&server->clients, &c->link);
        ++server->n_clients;
        ++server->n_authenticating;

        r = bridge_conn_new(server->bus, &creds, 0, &client_conn_ops, c, &c->conn);
        if (r) {
                /* max_connections_per_user is checked at Hello, as dbus-daemon does */
                peer_creds_deinit(&creds);
                client_free(c);
                return error_trace(r);
        }

        if (!server->keyring.ready && (server->auth_mechs & SASL_MECH_COOKIE))
                (void) keyring_init(&server->keyring, &server->cookie_ops);
        sasl_server_init(&c->sasl, c->uid, is_unix, server->auth_mechs,
                         server->keyring.ready ? &server->cookie_ops : NULL, server->guid);

        c->in_cap = CLIENT_IN_DEFAULT;  /* allocated by the first read */

        /* in the epoll set once client_start() wrote what it answers at once */
        c->starting = true;
        r = loop_add_io_off(server->loop, &c->io, fd, EPOLLIN, client_on_io, c);
        if (r < 0) {
                client_free(c);
                return error_trace(r);
        }
        now = loop_now(server->loop);
        r = loop_add_time(server->loop, &c->auth_timer,
                          now + MIN(server->bus->limits.auth_timeout_usec, UINT64_MAX - 1 - now),
                          client_on_auth_timeout, c);
        if (r < 0) {
                client_free(c);
                return error_trace(r);
        }

        *ret = c;
        return 0;
}

/**
 * client_free() - disconnect a client from the bus and free it
 * @c:          the client, or NULL
 *
 * Return: NULL.
 */
ProxyClient *client_free(ProxyClient *c) {
        unsigned i;

        if (!c)
                return NULL;
        if (c->state == CLIENT_STATE_AUTH && c->server->n_authenticating)
                --c->server->n_authenticating;
        c->state = CLIENT_STATE_CLOSING;
        c->close_pending = true;
        if (c->held_much || (c->conn && c->conn->queued_bytes >= SERVER_TRIM_AFTER))
                server_trim_later(c->server);
        if (c->conn) {
                bridge_conn_disconnect(c->conn);
                c->conn->userdata = NULL;
                c->conn = bridge_conn_unref(c->conn);
        }
        while (c->out_n)
                client_out_pop(c);
        client_splice_abort(c);
        c->in_msg = bridge_msg_unref(c->in_msg);
        for (i = 0; i < c->n_in_fds; ++i)
                (void) close(c->in_fds[i]);
        free(c->in_fds);
        free(c->in);
        /* the fd leaves the epoll set with its close() (no other process holds it) */
        c->io = loop_io_free_closing(c->io);
        c->auth_timer = loop_source_free(c->auth_timer);
        c->fd_timer = loop_source_free(c->fd_timer);
        c->fd = fd_close(c->fd);
        list_unlink(&c->link);
        list_unlink(&c->dirty_link);
        list_unlink(&c->ready_link);
        list_unlink(&c->hangup_link);
        --c->server->n_clients;
        free(c);
        return NULL;
}

/**
 * client_reap() - free the client if a close is pending
 * @c:          the client
 *
 * Return: true if it was freed.
 */
bool client_reap(ProxyClient *c) {
        if (!c->close_pending)
                return false;
        /* best effort: a peer we drop during authentication learns why (REJECTED, ERROR)
         * or at least sees the OK it earned; bus messages are not worth blocking for */
        if (c->sasl_out_end > c->sasl_out_start && !c->write_blocked)
                (void) send(c->fd, c->sasl_out + c->sasl_out_start,
                            c->sasl_out_end - c->sasl_out_start, MSG_DONTWAIT | MSG_NOSIGNAL);
        client_free(c);
        return true;
}
