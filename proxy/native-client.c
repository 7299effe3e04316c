/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Native clients (proxy/native-client.h), beside the listener that accepted them
 * (proxy/native-listener.c): one SOCK_SEQPACKET connection each, strictly request/reply. The first
 * command must be HELLO; its reply passes two fds: the pool memfd (the peer can map it
 * read-only only: bridge/pool.c seals it) and the wakeup eventfd. A SEND with SYNC_REPLY
 * holds its reply back until the core delivers the answer (NativeConnOps.sync_done); while
 * it waits, the client's socket is not read, as a thread blocked in ioctl() would not send
 * anything either; it stays in epoll all the same (no epoll_ctl per call): if it becomes
 * readable, the peer either closed (its call ends now) or sent from another thread, and only
 * then is it taken out of epoll until the answer.
 *
 * KDBUS_WIRE_BATCH (our extension, include/kdbus/kdbus.h; for peers whose HELLO had
 * KDBUS_HELLO_WIRE_BATCH): FREEs of earlier slices and one command in one datagram, its
 * reply prefixed with struct kdbus_wire_batch_reply, so that a call costs a peer one round
 * trip instead of two or three. With KDBUS_WIRE_BATCH_HOLD_RECV its RECV is held while
 * nothing waits: the reply goes out when something is queued (readable() schedules
 * @held_defer, so that the RECV runs from the loop, never inside a delivery of the core),
 * instead of the wakeup eventfd being written and the peer coming back with a RECV. The
 * socket of a held RECV stays in epoll: a closing peer is dropped at once, and a datagram
 * from another of its threads ends the hold (answered first, as RECV answers then). With
 * KDBUS_WIRE_BATCH_THEN_RECV the held RECV follows the batch's SEND (a service's reply and
 * its wait for the next call in one datagram).
 *
 * A reply that cannot be written at once (the peer does not read its socket) ends the
 * client: peers wait for each reply, so a full socket means a broken peer. A datagram that
 * does not fit (MSG_TRUNC/MSG_CTRUNC) is answered with EMSGSIZE.
 */

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>
#include "bridge/bus.h"
#include "bridge/conn.h"
#include "bridge/endpoint.h"
#include "bridge/meta.h"
#include "bridge/policy.h"
#include "kdbus/kdbus.h"
#include "native/command.h"
#include "native/conn.h"
#include "native/meta.h"
#include "proxy/bus-instance.h"
#include "proxy/config.h"
#include "proxy/endpoint.h"
#include "proxy/native-client.h"
#include "proxy/native-client-internal.h"
#include "proxy/native-listener.h"
#include "proxy/peer-creds.h"
#include "proxy/proc-reader.h"
#include "proxy/server.h"
#include "util/error.h"

/* fds one request may carry: the FDS item plus some memfds */
#define NATIVE_MAX_REQUEST_FDS 32u
#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif
#ifndef SO_PASSPIDFD
#define SO_PASSPIDFD 76
#endif
#ifndef SCM_PIDFD
#define SCM_PIDFD 0x04
#endif
#ifndef SCM_SECURITY
#define SCM_SECURITY 0x03
#endif
/* the longest LSM label per-message capture takes from SCM_SECURITY (as SO_PEERSEC's) */
#define NATIVE_MAX_SECLABEL 4095u


/**
 * native_client_free() - close one native client (it leaves the bus)
 * @c:          the client or NULL
 */
void native_client_free(NativeClient *c) {
        NativeClient *ch;

        if (!c)
                return;
        /* the channels share the connection: they go before it */
        while ((ch = list_first_entry(&c->chans, NativeClient, chan_link)))
                native_client_free(ch);
        if (c->owner) {
                native_conn_sync_detach(c->nc, c);
                c->nc = NULL;           /* the owner's */
        }
        list_unlink(&c->chan_link);
        list_unlink(&c->link);
        list_unlink(&c->held_link);
        /* kdbus: the endpoint lives as long as the handle that made it */
        c->owned_endpoint = proxy_endpoint_free(c->owned_endpoint);
        c->instance = bus_instance_free(c->instance);   /* the bus ends with its handle */
        c->io = loop_source_free(c->io);
        c->cancel_io = loop_source_free(c->cancel_io);
        c->held_cancel_io = loop_source_free(c->held_cancel_io);
        c->held_defer = loop_source_free(c->held_defer);
        c->held_cancel_fd = fd_close(c->held_cancel_fd);
        c->nc = native_conn_free(c->nc);
        peer_creds_deinit(&c->creds);
        free(c->joined);
        c->fd = fd_close(c->fd);
        c->wake_fd = fd_close(c->wake_fd);
        free(c);
}

static int native_client_uncork(NativeClient *c);

/* Send one reply datagram, with @batch (a KDBUS_WIRE_BATCH's result, or NULL) before the
 * struct; in a KDBUS_WIRE_BATCH_RECV_JOIN batch the first is kept for a RECV answer to
 * join (native_client_uncork()). Return: 0 or -errno (the client is to be closed). */
static int native_client_reply_batch(NativeClient *c, int error,
                                     const struct kdbus_wire_batch_reply *batch,
                                     const void *data, size_t size, const int *fds,
                                     unsigned n_fds) {
        size_t bsize = batch ? sizeof(*batch) : 0;
        struct kdbus_wire_reply hdr = { .error = error, .size = bsize + size };
        struct iovec iov[4] = { { &hdr, sizeof(hdr) } };
        union {
                struct cmsghdr cmsg;
                uint8_t buf[CMSG_SPACE(sizeof(int) * NATIVE_MAX_REQUEST_FDS)];
        } control;
        struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 1 };
        size_t total = sizeof(hdr) + bsize + size;
        ssize_t n;

        if (c->join && !c->joined_size) {
                /* the first reply of a RECV_JOIN batch: kept for a RECV answer to join
                 * (not one that passes fds: the joined answer's are the datagram's) */
                c->join = false;
                if (batch && !n_fds && total > c->joined_cap) {
                        uint8_t *p = realloc(c->joined, total);

                        if (p) {
                                c->joined = p;
                                c->joined_cap = total;
                        }
                }
                if (batch && !n_fds && total <= c->joined_cap) {
                        memcpy(c->joined, &hdr, sizeof(hdr));
                        memcpy(c->joined + sizeof(hdr), batch, bsize);
                        if (size)
                                memcpy(c->joined + sizeof(hdr) + bsize, data, size);
                        c->joined_size = total;
                        c->join = true;
                        return 0;
                }
        } else if (c->joined_size) {
                struct kdbus_wire_reply *first = (void *)c->joined;
                struct kdbus_wire_batch_reply *fb = (void *)(first + 1);

                c->join = false;
                if (batch && size == sizeof(struct kdbus_cmd_recv)) {
                        /* the RECV answer joins: the first reply's size covers it */
                        first->size += total;
                        fb->return_flags |= KDBUS_WIRE_RETURN_JOINED;
                        iov[mh.msg_iovlen++] = iov[0];
                        iov[0] = (struct iovec){ c->joined, c->joined_size };
                        total += c->joined_size;
                } else {
                        int r = native_client_uncork(c);

                        if (r < 0)
                                return r;
                }
        }
        if (batch)
                iov[mh.msg_iovlen++] = (struct iovec){ (void *)batch, bsize };
        if (size)
                iov[mh.msg_iovlen++] = (struct iovec){ (void *)data, size };

        if (n_fds) {
                if (n_fds > NATIVE_MAX_REQUEST_FDS)
                        return -EINVAL;
                memset(&control, 0, sizeof(control));
                mh.msg_control = &control;
                mh.msg_controllen = CMSG_SPACE(sizeof(int) * n_fds);
                control.cmsg.cmsg_level = SOL_SOCKET;
                control.cmsg.cmsg_type = SCM_RIGHTS;
                control.cmsg.cmsg_len = CMSG_LEN(sizeof(int) * n_fds);
                memcpy(CMSG_DATA(&control.cmsg), fds, sizeof(int) * n_fds);
        }
        n = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (c->joined_size && iov[0].iov_base == c->joined)
                c->joined_size = 0;
        if (n < 0)
                return -errno;
        return (size_t)n == total ? 0 : -EIO;
}

/* The first reply of a KDBUS_WIRE_BATCH_RECV_JOIN batch that no RECV answer joined goes
 * alone. Return: 0 or -errno (the client is to be closed). */
static int native_client_uncork(NativeClient *c) {
        ssize_t n = 0;
        size_t size = c->joined_size;

        c->join = false;
        if (!size)
                return 0;
        n = send(c->fd, c->joined, size, MSG_NOSIGNAL | MSG_DONTWAIT);
        c->joined_size = 0;
        if (n < 0)
                return -errno;
        return (size_t)n == size ? 0 : -EIO;
}

/* Send one reply datagram. Return: 0 or -errno (the client is to be closed). */
int native_client_reply(NativeClient *c, int error, const void *data, size_t size,
                               const int *fds, unsigned n_fds) {
        return native_client_reply_batch(c, error, NULL, data, size, fds, n_fds);
}

/* A batch's result, its return flags as of now. */
static struct kdbus_wire_batch_reply native_client_batch_result(NativeClient *c, int free_error,
                                                                uint64_t n_freed) {
        return (struct kdbus_wire_batch_reply){
                .free_error = free_error,
                .n_freed = n_freed,
                .return_flags = native_conn_recv_empty(c->nc) ? KDBUS_WIRE_RETURN_RECV_EMPTY : 0,
        };
}

static void native_client_kill(NativeClient *c, int r) {
        proxy_log_peer(LOG_INFO, &c->log_limit, loop_now(c->listener->server->loop), NULL,
                       "native peer (fd %d) dropped: %s", c->fd, strerror(-r));
        native_client_free(c);
}

static void native_client_wake(NativeClient *c) {
        uint64_t one = 1;

        /* the connection's eventfd (HELLO passed the owner's); an eventfd counter cannot
         * overflow in practice; EAGAIN would mean it is pending */
        (void) write(native_client_owner(c)->wake_fd, &one, sizeof(one));
}

/* Held RECVs with something to look at (a message queued, the connection ended): answered
 * by native_listener_flush_held() at the end of the callback that queued it (a native
 * client's, or server_flush()'s of a legacy client's or the timer's), or else by the
 * client's @held_defer one loop turn later. */
static List native_held_ready = LIST_INIT(native_held_ready);

static void native_client_held_poke(NativeClient *c) {
        if (!list_is_linked(&c->held_link))
                list_append(&native_held_ready, &c->held_link);
        (void) loop_source_set_enabled(c->held_defer, LOOP_ONESHOT);
}

/* Poke the held RECVs of the connection @c owns, on any of its channels. Return: any. */
static bool native_client_held_poke_all(NativeClient *c) {
        NativeClient *ch;
        List *pos;
        bool any = c->held;

        if (c->held)
                native_client_held_poke(c);
        list_for_each(pos, &c->chans) {
                ch = list_entry(pos, NativeClient, chan_link);
                if (ch->held) {
                        native_client_held_poke(ch);
                        any = true;
                }
        }
        return any;
}

static void native_client_readable(NativeConn *nc, void *userdata) {
        /* a held RECV is the wakeup: answered after the core is done (we may be inside
         * it, in the middle of a delivery); the first that runs takes the message, the
         * others see nothing and stay held */
        if (!native_client_held_poke_all(userdata))
                native_client_wake(userdata);
}

static void native_client_disconnected(NativeConn *nc, void *userdata) {
        /* the held RECVs answer ECONNRESET now */
        (void) native_client_held_poke_all(userdata);
}

/* The cancel fd of a held RECV goes (dup'ed by native_client_held_arm()). */
static void native_client_held_disarm(NativeClient *c) {
        c->held_cancel_io = loop_source_free(c->held_cancel_io);
        c->held_cancel_fd = fd_close(c->held_cancel_fd);
}

/* The hold is over: its sources and cancel fd go; a message still waiting gets the
 * eventfd written, as the hold may have swallowed its wakeup. */
static void native_client_held_end(NativeClient *c) {
        c->held = false;
        c->nc->readable_each = false;
        native_client_held_disarm(c);
        list_unlink(&c->held_link);
        (void) loop_source_set_enabled(c->held_defer, LOOP_OFF);
        if (!native_conn_recv_empty(c->nc))
                native_client_wake(c);
}

/*
 * Is RECV's answer @r (@cmd its struct) one a held RECV waits on? EAGAIN: nothing to
 * receive, or with KDBUS_RECV_USE_PRIORITY nothing at or above its threshold (then held
 * until a message RECV takes comes; those below it stay). Not when there is a dropped
 * count to report, nor while a message waits in the core's queue for pool space (it needs
 * the peer's FREE: the peer hears EAGAIN now).
 */
static bool native_client_recv_waits(NativeClient *c, int r, const struct kdbus_cmd_recv *cmd) {
        return r == -EAGAIN && !(cmd->return_flags & KDBUS_RECV_RETURN_DROPPED_MSGS) &&
               native_conn_queue_empty(c->nc);
}

static void native_client_sync_done(NativeConn *nc, void *userdata, void *waiter, int error,
                                    uint64_t offset, uint64_t size, int *fds, unsigned n_fds) {
        NativeClient *c = waiter;       /* the channel whose SEND waits */
        struct kdbus_cmd_send *cmd;
        unsigned i;
        int r;

        /* a SYNC_REPLY held back for want of room may go (after this returns: the loop
         * reads it) */
        native_client_sync_resume(userdata);
        cmd = c && c->sync_waits ? (void *)c->sync_cmd : NULL;
        /* the core closes the cancel fd after this returns */
        if (c)
                c->cancel_io = loop_source_free(c->cancel_io);
        if (!cmd) {
                for (i = 0; i < n_fds; ++i)
                        (void) close(fds[i]);
                free(fds);
                return;
        }
        cmd->reply.offset = offset;
        cmd->reply.msg_size = size;
        if (c->sync_batch) {
                struct kdbus_wire_batch_reply b = native_client_batch_result(c, 0,
                                                                             c->sync_n_freed);

                r = native_client_reply_batch(c, error, &b, cmd, sizeof(*cmd), fds, n_fds);
        } else
                r = native_client_reply(c, error, cmd, sizeof(*cmd), fds, n_fds);
        for (i = 0; i < n_fds; ++i)
                (void) close(fds[i]);
        free(fds);
        c->sync_waits = false;
        if (r < 0) {
                c->dead = true;
                return;
        }
        /* read commands again if they were held back (native_client_io; the loop calls us
         * back, we are inside the core here); a no-op when the source stayed on */
        (void) loop_source_set_enabled(c->io, LOOP_ON);
}

static const NativeConnOps native_client_ops = {
        .readable = native_client_readable,
        .sync_done = native_client_sync_done,
        .disconnected = native_client_disconnected,
};

/*
 * Run the held RECV again; answer it unless it still has nothing and not @end (a message
 * that woke it went elsewhere, e.g. an activator's to the name's new owner).
 * @error: answer this instead, with nothing received (the cancel fd: ECANCELED).
 * Return: 0, or -errno: close the client.
 */
static int native_client_held_answer(NativeClient *c, bool end, int error) {
        struct kdbus_cmd_recv cmd = { .size = sizeof(cmd), .flags = c->held_flags,
                                      .priority = c->held_priority };
        struct kdbus_wire_batch_reply b;
        size_t reply_size = sizeof(cmd);
        int *fds = NULL;
        unsigned n_fds = 0, i;
        int r, q;

        if (!c->held)
                return 0;
        if (error)
                r = error;
        else {
                r = native_conn_command_recv(c->nc, &cmd, sizeof(cmd), &reply_size, &fds,
                                             &n_fds);
                if (!end && native_client_recv_waits(c, r, &cmd))
                        return 0;
        }
        native_client_held_end(c);
        b = native_client_batch_result(c, 0, c->held_n_freed);
        if (c->held_then)
                b.return_flags |= KDBUS_WIRE_RETURN_RECV;
        q = native_client_reply_batch(c, r, &b, &cmd, reply_size, fds, n_fds);
        for (i = 0; i < n_fds; ++i)
                (void) close(fds[i]);
        free(fds);
        return q;
}

/**
 * native_client_flush_held() - answer the held RECVs that have something to look at
 *
 * Those a delivery made ready (see native_held_ready), of every native listener; the
 * native callbacks call it last, server_flush() (the legacy clients' and the timer's
 * callbacks) too, so that a held RECV is answered in the loop turn of the message that
 * came; the per-client defer source is the fallback. A client whose reply fails is freed.
 */
void native_client_flush_held(void) {
        NativeClient *c;
        int r;

        while ((c = list_first_entry(&native_held_ready, NativeClient, held_link))) {
                list_unlink(&c->held_link);
                (void) loop_source_set_enabled(c->held_defer, LOOP_OFF);
                r = native_client_held_answer(c, false, 0);
                if (r < 0 || c->dead)
                        native_client_kill(c, r < 0 ? r : -EPIPE);
        }
}

/* A held RECV had something to look at and no native callback answered it. */
static int native_client_held_ready(LoopSource *src, void *userdata) {
        NativeClient *c = userdata;
        Server *s = c->listener->server;

        server_update_time(s);
        native_client_flush_held();
        server_rearm_timer(s);
        return 0;
}

/* The held RECV's cancel fd became readable: ECANCELED, nothing received. */
static int native_client_held_cancel(LoopSource *src, int fd, uint32_t revents,
                                     void *userdata) {
        NativeClient *c = userdata;
        int r;

        r = native_client_held_answer(c, true, -ECANCELED);
        if (r < 0)
                native_client_kill(c, r);
        return 0;
}

/*
 * Before anything of a KDBUS_WIRE_BATCH_HOLD_RECV batch runs: its cancel fd @cancel_fd
 * (borrowed) dup'ed and polled; the client's defer source made once.
 * Return: 0, -EINVAL (epoll refuses the fd: kdbus's "no poll method"), or -errno: close
 * the client.
 */
static int native_client_held_arm(NativeClient *c, int cancel_fd) {
        Loop *loop = c->listener->server->loop;
        int r;

        if (!c->held_defer) {
                r = loop_add_defer(loop, &c->held_defer, native_client_held_ready, c);
                if (r < 0)
                        return r;
                r = loop_source_set_enabled(c->held_defer, LOOP_OFF);
                if (r < 0)
                        return r;
        }
        if (cancel_fd < 0)
                return 0;
        c->held_cancel_fd = fcntl(cancel_fd, F_DUPFD_CLOEXEC, 3);
        if (c->held_cancel_fd < 0)
                return -errno;
        r = loop_add_io(loop, &c->held_cancel_io, c->held_cancel_fd, EPOLLIN,
                        native_client_held_cancel, c);
        if (r < 0)
                native_client_held_disarm(c);
        return r == -EPERM ? -EINVAL : r;
}

/*
 * Per-message capture (KDBUS_HELLO_CAPTURE_PER_MESSAGE): every later datagram of the peer
 * carries SCM_CREDENTIALS (SO_PASSCRED) and SCM_PIDFD (SO_PASSPIDFD, Linux >= 6.5). The
 * peer sends its next command only after HELLO's reply, so none comes without them.
 * Without SO_PASSPIDFD the pidfd is opened from the datagram's pid (racy: the pid may be
 * reused before), which is said once in the log.
 */
int native_client_pass_creds(NativeClient *c) {
        int one = 1;

        if (setsockopt(c->fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) < 0)
                return error_origin(-errno);
        /* SCM_SECURITY: the label when it sent; without a labelling LSM none comes, as
         * SO_PEERSEC gives none at connect */
        (void) setsockopt(c->fd, SOL_SOCKET, SO_PASSSEC, &one, sizeof(one));
        if (setsockopt(c->fd, SOL_SOCKET, SO_PASSPIDFD, &one, sizeof(one)) < 0) {
                static bool told;

                if (!told)
                        proxy_log(LOG_WARNING, "native peer (fd %d): per-message capture without "
                                  "SO_PASSPIDFD (%s; Linux >= 6.5 has it): the pidfd of each "
                                  "message is opened from its SCM_CREDENTIALS pid, which may "
                                  "have been reused", c->fd, strerror(errno));
                told = true;
                c->pidfd_fallback = true;
        }
        c->per_message = true;
        return 0;
}

static int native_client_hello(NativeClient *c, void *cmd, size_t size) {
        _cleanup_(policy_snapshot_freep) PolicySnapshot *snapshot = NULL;
        Server *s = c->listener->server;
        int fds[2];
        int r;

        /* the XML policy covers native peers as it does legacy ones: its connect rules
         * first (a refused user's HELLO fails EPERM, kdbus's errno for a policy refusal,
         * and nobody hears of it), then the snapshot the send/receive/own checks use */
        r = proxy_config_admit_creds(s, &c->creds, &snapshot);
        if (r == 0)
                r = native_conn_hello_on(s->bus, c->listener->endpoint, &c->creds, cmd, size,
                                         &native_client_ops, c, &c->nc);
        else if (r == 1)
                r = -EPERM;
        if (r == 1)             /* NEGOTIATE: the known flags, the handle stays unset */
                return native_client_reply(c, 0, cmd, sizeof(struct kdbus_cmd_hello), NULL, 0);
        if (r == 0 && snapshot)
                bridge_conn_set_policy(c->nc->conn, steal_ptr(&snapshot));
        if (r)
                return native_client_reply(c, r, cmd, MIN(size, sizeof(struct kdbus_cmd_hello)),
                                           NULL, 0);
        if (c->nc->hello_flags & KDBUS_HELLO_CAPTURE_PER_MESSAGE) {
                r = native_client_pass_creds(c);
                if (r < 0)
                        return r;
        }
        fds[0] = native_conn_pool_fd(c->nc);
        fds[1] = c->wake_fd;
        return native_client_reply(c, 0, cmd, sizeof(struct kdbus_cmd_hello), fds, 2);
}

/* The CANCEL_FD of a waiting SYNC_REPLY became readable: the SEND fails ECANCELED. */
static int native_client_cancel(LoopSource *src, int fd, uint32_t revents, void *userdata) {
        NativeClient *c = userdata;
        Server *s = c->listener->server;

        server_update_time(s);
        native_conn_sync_cancel(c->nc, c);      /* sync_done frees this source */
        server_rearm_timer(s);
        if (c->dead)
                native_client_kill(c, -EPIPE);
        native_client_flush_held();
        return 0;
}

/*
 * One command of a connected peer; @batch: it came in a KDBUS_WIRE_BATCH whose FREEs were
 * done (@n_freed of them), so the reply carries a kdbus_wire_batch_reply.
 * Return: 0, or -errno: close the client.
 */
static int native_client_run(NativeClient *c, uint64_t command, uint8_t *cmd, size_t size,
                             const int *fds, unsigned n_fds, bool batch, uint64_t n_freed) {
        size_t reply_size;
        int *out_fds = NULL;
        unsigned n_out = 0, i;
        int r, q, cancel_fd;

        r = native_conn_command(c->nc, command, cmd, size, fds, n_fds, &reply_size,
                                &out_fds, &n_out);
        if (r == 1) {
                /* SYNC_REPLY: keep the struct until the answer; the socket stays in epoll
                 * (native_client_io holds back whatever comes meanwhile) */
                _Static_assert(sizeof(c->sync_cmd) == sizeof(struct kdbus_cmd_send),
                              "the SEND struct is whole 8-byte words");
                memcpy(c->sync_cmd, cmd, sizeof(c->sync_cmd));
                c->sync_waits = true;
                c->sync_batch = batch;
                c->sync_n_freed = n_freed;
                cancel_fd = native_conn_sync_wait(c->nc, c);
                if (cancel_fd >= 0) {
                        r = loop_add_io(c->listener->server->loop, &c->cancel_io,
                                        cancel_fd, EPOLLIN, native_client_cancel, c);
                        if (r < 0) {
                                /* epoll refuses it (EPERM): kdbus's "no poll method" */
                                native_conn_sync_cancel(c->nc, c);
                                return r == -EPERM ? 0 : r;
                        }
                }
                return 0;
        }
        /* the receiver's held RECV first: it is what the call waits for, the sender's
         * answer is not (a client freed meanwhile cannot be @c or share its connection) */
        if (command == KDBUS_CMD_SEND && !c->owner && list_is_empty(&c->chans))
                native_client_flush_held();
        if (batch) {
                struct kdbus_wire_batch_reply b = native_client_batch_result(c, 0, n_freed);

                q = native_client_reply_batch(c, r, &b, cmd, reply_size, out_fds, n_out);
        } else
                q = native_client_reply(c, r, cmd, reply_size, out_fds, n_out);
        for (i = 0; i < n_out; ++i)
                (void) close(out_fds[i]);
        free(out_fds);
        return q;
}

/*
 * The RECV of a KDBUS_WIRE_BATCH_HOLD_RECV batch (its cancel fd armed): run now; held
 * while it has nothing to take (native_client_recv_waits(): EAGAIN, also with messages
 * below a USE_PRIORITY threshold; a message waiting in the core's queue for pool space
 * needs the peer's FREE, so it hears EAGAIN now).
 * Return: 0, or -errno: close the client.
 */
static int native_client_recv_hold(NativeClient *c, uint8_t *cmd, size_t size,
                                   uint64_t n_freed, bool then) {
        struct kdbus_wire_batch_reply b;
        size_t reply_size;
        int *fds = NULL;
        unsigned n_fds = 0, i;
        int r, q;

        r = native_conn_command_recv(c->nc, (struct kdbus_cmd_recv *)(void *)cmd, size,
                                     &reply_size, &fds, &n_fds);
        /* EAGAIN: RECV's own checks passed, its struct is whole */
        if (size >= sizeof(struct kdbus_cmd_recv) &&
            native_client_recv_waits(c, r, (const void *)cmd)) {
                const struct kdbus_cmd_recv *rc = (const void *)cmd;

                c->held_flags = rc->flags;
                c->held_priority = rc->priority;
                c->held_n_freed = n_freed;
                c->held_then = then;
                c->held = true;
                /* by priority: every new message may be the one it waits for */
                c->nc->readable_each = rc->flags & KDBUS_RECV_USE_PRIORITY;
                return 0;
        }
        native_client_held_disarm(c);
        b = native_client_batch_result(c, 0, n_freed);
        if (then)
                b.return_flags |= KDBUS_WIRE_RETURN_RECV;
        q = native_client_reply_batch(c, r, &b, cmd, reply_size, fds, n_fds);
        for (i = 0; i < n_fds; ++i)
                (void) close(fds[i]);
        free(fds);
        return q;
}

/*
 * A KDBUS_WIRE_BATCH_THEN_RECV batch's SEND (no SYNC_REPLY), then, if it succeeded, its
 * held RECV (no flags): one reply, the SEND's if it failed, else the RECV's.
 * Return: 0, or -errno: close the client.
 */
static int native_client_send_recv(NativeClient *c, uint8_t *cmd, size_t size, const int *fds,
                                   unsigned n_fds, uint64_t n_freed) {
        struct kdbus_cmd_recv rc = { .size = sizeof(rc) };
        struct kdbus_wire_batch_reply b;
        size_t reply_size;
        int *out = NULL;
        unsigned n_out = 0, i;
        int r;

        /* SEND hands out no fds, and no SYNC_REPLY wait (1) without the flag */
        r = native_conn_command(c->nc, KDBUS_CMD_SEND, cmd, size, fds, n_fds, &reply_size,
                                &out, &n_out);
        for (i = 0; i < n_out; ++i)
                (void) close(out[i]);
        free(out);
        if (r) {
                native_client_held_disarm(c);
                b = native_client_batch_result(c, 0, n_freed);
                return native_client_reply_batch(c, r < 0 ? r : -EIO, &b, cmd, reply_size,
                                                 NULL, 0);
        }
        return native_client_recv_hold(c, (uint8_t *)&rc, sizeof(rc), n_freed, true);
}

/* A KDBUS_WIRE_BATCH_RECV_JOIN batch is done (@r: its result so far): what waits goes
 * alone. Return: 0, or -errno: close the client. */
static int native_client_join_end(NativeClient *c, int r) {
        if (r < 0) {
                c->join = false;
                c->joined_size = 0;
                return r;
        }
        return native_client_uncork(c);
}

/*
 * KDBUS_WIRE_BATCH: the FREEs, then the command (include/kdbus/kdbus.h). A malformed batch
 * or a failed FREE is answered with the batch reply alone, the command not run.
 * Return: 0, or -errno: close the client.
 */
static int native_client_batch(NativeClient *c, uint8_t *buf, size_t size, const int *fds,
                               unsigned n_fds) {
        const struct kdbus_wire_batch *b = (const void *)buf;
        const struct kdbus_wire_request *req;
        struct kdbus_wire_batch_reply res;
        size_t head, n_freed = 0;
        bool hold, then, arm, join;
        int r;

        if (size < sizeof(*b) ||
            (b->flags & ~(uint64_t)(KDBUS_WIRE_BATCH_HOLD_RECV | KDBUS_WIRE_BATCH_THEN_RECV |
                                    KDBUS_WIRE_BATCH_ARM_RECV | KDBUS_WIRE_BATCH_RECV_JOIN)) ||
            b->n_free > KDBUS_WIRE_BATCH_MAX_FREE)
                goto malformed;
        hold = b->flags & KDBUS_WIRE_BATCH_HOLD_RECV;
        then = b->flags & KDBUS_WIRE_BATCH_THEN_RECV;
        arm = b->flags & KDBUS_WIRE_BATCH_ARM_RECV;
        join = b->flags & KDBUS_WIRE_BATCH_RECV_JOIN;
        head = sizeof(*b) + b->n_free * sizeof(uint64_t);
        if (size < head + sizeof(*req))
                goto malformed;
        req = (const void *)(buf + head);
        if (req->size != size - head - sizeof(*req))
                goto malformed;
        /* a second RECV answer joins: the held one of ARM_RECV, or a plain RECV's next */
        if (join && !arm && (hold || then || req->command != KDBUS_CMD_RECV))
                goto malformed;
        /* a held RECV after the SEND: a SEND without SYNC_REPLY (its fds are the SEND's) */
        if (then) {
                const struct kdbus_cmd_send *snd = (const void *)(buf + head + sizeof(*req));

                if (!hold || req->command != KDBUS_CMD_SEND || req->size < sizeof(*snd) ||
                    (snd->flags & KDBUS_SEND_SYNC_REPLY))
                        goto malformed;
        }
        /* a held RECV: RECV only, its one fd at most the cancel fd, which epoll must take
         * (checked before anything runs) */
        else if (hold && (req->command != KDBUS_CMD_RECV || n_fds > 1))
                goto malformed;
        /* the command answered, then a RECV held: not with the other two, not after a
         * RECV or a SYNC_REPLY (whose answer comes later) */
        if (arm) {
                const struct kdbus_cmd_send *snd = (const void *)(buf + head + sizeof(*req));

                if (hold || then || req->command == KDBUS_CMD_RECV ||
                    (req->command == KDBUS_CMD_SEND && (req->size < sizeof(*snd) ||
                                                        (snd->flags & KDBUS_SEND_SYNC_REPLY))))
                        goto malformed;
                r = native_client_held_arm(c, -1);
                if (r < 0)
                        return r;
        }
        if (hold) {
                r = native_client_held_arm(c, !then && n_fds ? fds[0] : -1);
                if (r == -EINVAL)
                        goto malformed;
                if (r < 0)
                        return r;
        }
        r = native_conn_free_slices(c->nc, b->offsets, b->n_free, &n_freed);
        if (r) {
                native_client_held_disarm(c);
                res = native_client_batch_result(c, r, n_freed);
                return native_client_reply_batch(c, r, &res, NULL, 0, NULL, 0);
        }
        if (then)
                return native_client_send_recv(c, buf + head + sizeof(*req), req->size, fds,
                                               n_fds, n_freed);
        if (arm) {
                struct kdbus_cmd_recv rc = { .size = sizeof(rc) };

                /* a join only when something waits already (the hold is answered at
                 * once): a call's wait for its reply costs no copy of the answer */
                c->join = join && !native_conn_recv_empty(c->nc);
                r = native_client_run(c, req->command, buf + head + sizeof(*req), req->size,
                                      fds, n_fds, true, n_freed);
                if (r >= 0 && !c->dead && !c->closing)
                        r = native_client_recv_hold(c, (uint8_t *)&rc, sizeof(rc), 0, true);
                return native_client_join_end(c, r);
        }
        if (join) {
                const struct kdbus_cmd_recv *rc = (const void *)(buf + head + sizeof(*req));
                bool plain = req->size >= sizeof(*rc) && rc->flags == 0;

                c->join = true;
                r = native_client_run(c, req->command, buf + head + sizeof(*req), req->size,
                                      fds, n_fds, true, n_freed);
                /* it took a message (without fds: its reply waits in @joined), more wait */
                if (r >= 0 && plain && c->joined_size &&
                    ((const struct kdbus_wire_reply *)(const void *)c->joined)->error == 0 &&
                    !native_conn_recv_empty(c->nc)) {
                        struct kdbus_cmd_recv next = { .size = sizeof(next) };

                        r = native_client_run(c, KDBUS_CMD_RECV, (uint8_t *)&next,
                                              sizeof(next), NULL, 0, true, 0);
                }
                return native_client_join_end(c, r);
        }
        if (hold)
                return native_client_recv_hold(c, buf + head + sizeof(*req), req->size,
                                               n_freed, false);
        return native_client_run(c, req->command, buf + head + sizeof(*req), req->size, fds,
                                 n_fds, true, n_freed);

malformed:
        res = native_client_batch_result(c, -EINVAL, 0);
        return native_client_reply_batch(c, -EINVAL, &res, NULL, 0, NULL, 0);
}

/* One request. Return: 0, or -errno: close the client. */
static int native_client_dispatch(NativeClient *c, uint8_t *buf, size_t n, const int *fds,
                                  unsigned n_fds) {
        const struct kdbus_wire_request *req = (const void *)buf;
        uint8_t *cmd = buf + sizeof(*req);
        size_t size = n - sizeof(*req);

        if (n < sizeof(*req) || req->size != size)
                return native_client_reply(c, -EINVAL, NULL, 0, NULL, 0);
        if (req->command == KDBUS_WIRE_ATTACH)
                return native_client_attach(c, cmd, size, fds, n_fds);
        /* our extension for libkdbus-preload.so's close(): end the handle now */
        if (req->command == KDBUS_WIRE_CLOSE) {
                if (size || n_fds)
                        return native_client_reply(c, -EINVAL, NULL, 0, NULL, 0);
                /* a channel ends alone */
                if (c->owner) {
                        c->closing = true;
                        return native_client_reply(c, 0, NULL, 0, NULL, 0);
                }
                while (!list_is_empty(&c->chans))
                        native_client_free(list_first_entry(&c->chans, NativeClient, chan_link));
                /* ended before the answer: when the peer hears it, the connection's
                 * ID_REMOVE was sent, the bus's nodes are gone */
                c->owned_endpoint = proxy_endpoint_free(c->owned_endpoint);
                c->instance = bus_instance_free(c->instance);
                c->nc = native_conn_free(c->nc);
                c->closing = true;
                return native_client_reply(c, 0, NULL, 0, NULL, 0);
        }
        /* kdbus's handle states: unknown ioctls ENOTTY in every state; a handle not set up
         * yet takes HELLO, BUS_MAKE or ENDPOINT_MAKE (anything else EBADFD); a bus or
         * endpoint owner's handle only its own commands (EBADFD) */
        /* our extensions on a handle that owns nothing: list the caller's endpoints,
         * update one of them by name (kdbusctl endpoint list / update) */
        if (!c->nc && !c->owned_endpoint && !c->instance &&
            (req->command == KDBUS_CMD_ENDPOINT_LIST ||
             req->command == KDBUS_CMD_ENDPOINT_UPDATE))
                return native_client_endpoint_admin(c, req->command, cmd, size, n_fds);
        if (!c->nc && !native_command_is_known(req->command))
                return native_client_reply(c, -ENOTTY, NULL, 0, NULL, 0);
        /* kdbusfs (proxy/kdbusfs.h): control makes buses and nothing else, a bus's or an
         * endpoint's node makes none (kdbus_handle_ioctl_control() / _ep(): EBADFD) */
        if (c->listener->control && req->command != KDBUS_CMD_BUS_MAKE && !c->instance)
                return native_client_reply(c, -EBADFD, NULL, 0, NULL, 0);
        if (c->listener->server->kdbusfs_domain && req->command == KDBUS_CMD_BUS_MAKE &&
            !c->nc && !c->owned_endpoint)
                return native_client_reply(c, -EBADFD, NULL, 0, NULL, 0);
        if (!c->nc && c->owned_endpoint)
                return native_client_endpoint_cmd(c, req->command, cmd, size, fds, n_fds);
        if (!c->nc && (c->instance || req->command == KDBUS_CMD_BUS_MAKE))
                return native_client_bus_make(c, cmd, size, n_fds);
        if (!c->nc && req->command == KDBUS_CMD_ENDPOINT_MAKE)
                return native_client_endpoint_cmd(c, req->command, cmd, size, fds, n_fds);
        if (!c->nc) {
                if (req->command != KDBUS_CMD_HELLO)
                        return native_client_reply(c, -EBADFD, NULL, 0, NULL, 0);
                if (n_fds)
                        return native_client_reply(c, -EINVAL, NULL, 0, NULL, 0);
                return native_client_hello(c, cmd, size);
        }
        if (req->command == KDBUS_WIRE_FDS && (c->nc->hello_flags & KDBUS_HELLO_WIRE_BATCH)) {
                const struct kdbus_wire_fds *wf = (const void *)cmd;
                int r = -EINVAL;

                if (size >= sizeof(*wf) && !n_fds && wf->n_fds <= KDBUS_MSG_MAX_FDS +
                    KDBUS_MSG_MAX_MEMFD_ITEMS && size == sizeof(*wf) + wf->n_fds * sizeof(int32_t))
                        r = native_conn_fds_publish(c->nc, wf->offset, wf->fds, wf->n_fds);
                return native_client_reply(c, r, NULL, 0, NULL, 0);
        }
        if (req->command == KDBUS_WIRE_FREE_RING && (c->nc->hello_flags & KDBUS_HELLO_WIRE_BATCH)) {
                int fd = size || n_fds ? -EINVAL : native_conn_free_ring_fd(c->nc);

                return native_client_reply(c, fd < 0 ? fd : 0, NULL, 0, &fd, fd < 0 ? 0 : 1);
        }
        if (req->command == KDBUS_WIRE_DROP && (c->nc->hello_flags & KDBUS_HELLO_WIRE_BATCH)) {
                const struct kdbus_wire_drop *d = (const void *)cmd;
                int r = size != sizeof(*d) || n_fds ? -EINVAL :
                        native_conn_drop_received(c->nc, d->offset);

                return native_client_reply(c, r, NULL, 0, NULL, 0);
        }
        /* without the HELLO flag a batch is an unknown command (ENOTTY), as before */
        if (req->command == KDBUS_WIRE_BATCH && (c->nc->hello_flags & KDBUS_HELLO_WIRE_BATCH))
                return native_client_batch(c, cmd, size, fds, n_fds);
        return native_client_run(c, req->command, cmd, size, fds, n_fds, false, 0);
}

/* One datagram of @c (or its end). */
static void native_client_read(NativeClient *c) {
        NativeListener *l = c->listener;
        union {
                struct cmsghdr cmsg;
                uint8_t buf[CMSG_SPACE(sizeof(int) * NATIVE_MAX_REQUEST_FDS) +
                            CMSG_SPACE(sizeof(struct ucred)) + CMSG_SPACE(sizeof(int)) +
                            CMSG_SPACE(NATIVE_MAX_SECLABEL)];
        } control;
        struct iovec iov = { l->buf, KDBUS_WIRE_MAX_DATAGRAM };
        struct ucred uc = { 0 };
        bool have_uc = false;
        int pidfd = -1;
        char seclabel[NATIVE_MAX_SECLABEL + 1];
        bool have_label = false;
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &control,
                             .msg_controllen = sizeof(control) };
        int fds[NATIVE_MAX_REQUEST_FDS];
        unsigned n_fds = 0, i;
        struct cmsghdr *cm;
        ssize_t n;
        int r;

        if (native_client_sync_blocked(c))
                return;
        if (c->sync_waits) {
                /* readable while its SYNC_REPLY waits: a closed peer ends now (its call
                 * with it); a command from another of its threads waits for the answer,
                 * the source off until then (native_client_sync_done) */
                uint8_t b;

                n = recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
                if (n == 0)
                        native_client_free(c);
                else if (n < 0 && errno != EAGAIN && errno != EINTR)
                        native_client_kill(c, -errno);
                else if (n > 0)
                        (void) loop_source_set_enabled(c->io, LOOP_OFF);
                return;
        }
        n = recvmsg(c->fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
        if (n < 0) {
                if (errno == EAGAIN || errno == EINTR)
                        return;
                native_client_kill(c, -errno);
                return;
        }
        if (n == 0) {
                native_client_free(c);          /* the peer closed its end */
                return;
        }
        for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
                if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
                        unsigned k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);

                        for (i = 0; i < k && n_fds < NATIVE_MAX_REQUEST_FDS; ++i)
                                memcpy(&fds[n_fds++], CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
                        /* more than we take cannot come: MSG_CTRUNC; the rest would leak */
                } else if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_CREDENTIALS &&
                           cm->cmsg_len >= CMSG_LEN(sizeof(uc))) {
                        memcpy(&uc, CMSG_DATA(cm), sizeof(uc));
                        have_uc = true;
                } else if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_PIDFD &&
                           cm->cmsg_len >= CMSG_LEN(sizeof(int)) && pidfd < 0) {
                        memcpy(&pidfd, CMSG_DATA(cm), sizeof(int));
                } else if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_SECURITY &&
                           cm->cmsg_len > CMSG_LEN(0) && !have_label) {
                        /* the sender's LSM label when it sent (SO_PASSSEC); may or may not
                         * end in a NUL */
                        size_t len = MIN((size_t)(cm->cmsg_len - CMSG_LEN(0)),
                                         (size_t)NATIVE_MAX_SECLABEL);

                        memcpy(seclabel, CMSG_DATA(cm), len);
                        seclabel[len] = '\0';
                        have_label = seclabel[0] != '\0';
                }
        if (c->per_message && c->nc) {
                if (pidfd < 0 && c->pidfd_fallback && have_uc && uc.pid > 0) {
                        long p = syscall(SYS_pidfd_open, uc.pid, 0);

                        pidfd = p >= 0 ? (int)p : -1;
                }
                native_conn_set_send_creds(c->nc, have_uc, uc.uid, uc.gid, (uint32_t)uc.pid,
                                           pidfd, have_label ? seclabel : NULL);
        }

        server_update_time(l->server);
        /* another command while a RECV is held (another of the peer's threads): the
         * held RECV is answered first, as RECV answers now; replies keep the order */
        r = native_client_held_answer(c, true, 0);
        if (r == 0 && (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)))
                r = native_client_reply(c, -EMSGSIZE, NULL, 0, NULL, 0);
        else if (r == 0)
                r = native_client_dispatch(c, l->buf, (size_t)n, fds, n_fds);
        for (i = 0; i < n_fds; ++i)
                (void) close(fds[i]);
        if (pidfd >= 0)
                (void) close(pidfd);
        if (c->per_message && c->nc)    /* nothing borrowed outlives this datagram */
                native_conn_set_send_creds(c->nc, false, 0, 0, 0, -1, NULL);
        server_rearm_timer(l->server);
        if (r < 0 || c->dead)
                native_client_kill(c, r < 0 ? r : -EPIPE);
        else if (c->closing)
                native_client_free(c);
}

static int native_client_io(LoopSource *src, int fd, uint32_t revents, void *userdata) {
        native_client_read(userdata);
        /* the held RECVs this datagram gave something (the client may be gone now) */
        native_client_flush_held();
        return 0;
}

static int native_client_get_creds(int fd, const Bus *bus, BridgeCreds *creds) {
        struct ucred uc;
        socklen_t len = sizeof(uc);
        bool socket_pidfd;
        int r;

        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) < 0)
                return error_origin(-errno);
        creds->uid = uc.uid;
        creds->gid = uc.gid;
        creds->pid = uc.pid;
        creds->pidfd = -1;
        /* the pidfd lets HELLO check that /proc/<pid> is still the peer's (native/meta.c) */
        len = sizeof(creds->pidfd);
        socket_pidfd = getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &creds->pidfd, &len) == 0 &&
                       creds->pidfd >= 0;
        if (!socket_pidfd) {
                long pfd = uc.pid > 0 ? syscall(SYS_pidfd_open, uc.pid, 0) : -1;

                /* racy (the pid may be reused), the best a pre-6.5 kernel offers */
                creds->pidfd = pfd >= 0 ? (int)pfd : -1;
        }
        /* kdbus's privilege: the owner's uid is enough; else CAP_IPC_OWNER, trusted only
         * with the socket's own pidfd (not a racy pidfd_open()) */
        creds->cap_ipc_owner = uc.uid != bus->owner_uid && socket_pidfd &&
                               proxy_proc_cap_ipc_owner(uc.pid, creds->pidfd);
        /* SECLABEL: the peer's LSM label at connect, as the legacy front end takes it */
        r = peer_creds_read_seclabel(fd, &creds->seclabel);
        if (r < 0)
                return r;
        /* the primary group as group list, as the legacy front end does without
         * supplementary groups */
        creds->groups = malloc(sizeof(gid_t));
        if (!creds->groups)
                return error_origin(-ENOMEM);
        creds->groups[0] = uc.gid;
        creds->n_groups = 1;
        return 0;
}

/**
 * native_client_new() - a peer connected to @l's socket
 * @l:          the listener
 * @cfd:        the accepted socket (taken, also on failure)
 *
 * Its credentials are taken now (SO_PEERCRED, SO_PEERPIDFD, SO_PEERSEC), as kdbus took the
 * opener's; it is read from the loop until it goes.
 *
 * Return: 0, -ENOMEM, or a negative errno (the socket is closed then).
 */
int native_client_new(NativeListener *l, int cfd) {
        NativeClient *c;
        int r;

        c = calloc(1, sizeof(*c));
        if (!c) {
                (void) close(cfd);
                return -ENOMEM;
        }
        c->listener = l;
        c->fd = cfd;
        c->creds.pidfd = -1;
        c->held_cancel_fd = -1;
        list_init(&c->link);
        list_init(&c->held_link);
        list_init(&c->chans);
        list_init(&c->chan_link);
        c->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        r = c->wake_fd < 0 ? -errno : native_client_get_creds(cfd, l->server->bus, &c->creds);
        if (r == 0)
                r = loop_add_io(l->server->loop, &c->io, cfd, EPOLLIN, native_client_io, c);
        if (r < 0) {
                native_client_free(c);
                return r;
        }
        list_append(&l->clients, &c->link);
        return 0;
}

/**
 * native_client_free_all() - close every client of a listener
 * @clients:    NativeListener.clients
 */
void native_client_free_all(List *clients) {
        NativeClient *c;

        while ((c = list_first_entry(clients, NativeClient, link)))
                native_client_free(c);
}
