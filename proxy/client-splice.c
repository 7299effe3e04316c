/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The pipe path of a large byte array (see client-splice.h for what and when).
 *
 * Invariants:
 *   - client_in_piped(c): c->in_msg is being read, its bytes [0, in_pipe_from) are in
 *     in_msg->data (the stamped header, the array's length word, maybe a few contents
 *     bytes), [in_pipe_from, in_msg_filled) are in the pipe, in that order, nothing else.
 *   - A pipe goes back to the server's spare list only empty; one that may hold bytes
 *     (its client went mid-message, or a write failed) is closed.
 *   - The pipe's bytes are read into the message (client_splice_fill()) before anyone
 *     but the destination's splice could look at them: right after the dispatch, in the
 *     same turn, before any write of the loop.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/sockios.h>
#include "bridge/bus.h"
#include "bridge/msg.h"
#include "proxy/client-splice.h"
#include "proxy/client.h"
#include "proxy/fd-limit.h"
#include "proxy/server.h"
#include "util/error.h"
#include "wire/message.h"

uint64_t client_splice_bytes_spliced;
uint64_t client_splice_bytes_filled;

void client_splice_pipes_deinit(ClientSplicePipes *p) {
        while (p->n_spare) {
                --p->n_spare;
                (void) close(p->spare[p->n_spare][0]);
                (void) close(p->spare[p->n_spare][1]);
        }
}

/* A pipe for @c's array. Return: true if it has one now. */
static bool splice_pipe_take(ProxyClient *c) {
        ClientSplicePipes *p = &c->server->splice;
        int fds[2];

        if (p->n_spare) {
                --p->n_spare;
                c->in_pipe[0] = p->spare[p->n_spare][0];
                c->in_pipe[1] = p->spare[p->n_spare][1];
                ++p->n_used;
                return true;
        }
        if (p->unavailable || p->n_used >= CLIENT_SPLICE_MAX_PIPES)
                return false;
        if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) < 0)
                return false;   /* EMFILE, ENFILE: the in-memory path does without */
        if (fd_limit_in_reserve(fds[1])) {
                /* the last fds are the connected peers' (proxy/fd-limit.h) */
                (void) close(fds[0]);
                (void) close(fds[1]);
                return false;
        }
        if (fcntl(fds[1], F_SETPIPE_SZ, CLIENT_SPLICE_PIPE) < 0) {
                /* EPERM: over pipe-max-size or the user's pipe-user-pages-soft; a default
                 * pipe (16 pages) would fill after 64 KiB and be emptied by a copy every
                 * time. Asked again only by a new server (a reload does not retry). */
                if (errno == EPERM)
                        p->unavailable = true;
                (void) close(fds[0]);
                (void) close(fds[1]);
                return false;
        }
        c->in_pipe[0] = fds[0];
        c->in_pipe[1] = fds[1];
        ++p->n_used;
        return true;
}

/* @c's pipe goes back (@empty: it holds nothing) or is closed. */
static void splice_pipe_put(ProxyClient *c, bool empty) {
        ClientSplicePipes *p = &c->server->splice;

        if (!client_in_piped(c))
                return;
        --p->n_used;
        if (empty && p->n_spare < CLIENT_SPLICE_KEEP) {
                p->spare[p->n_spare][0] = c->in_pipe[0];
                p->spare[p->n_spare][1] = c->in_pipe[1];
                ++p->n_spare;
        } else {
                (void) close(c->in_pipe[0]);
                (void) close(c->in_pipe[1]);
        }
        c->in_pipe[0] = c->in_pipe[1] = -1;
}

void client_splice_abort(ProxyClient *c) {
        splice_pipe_put(c, false);
}

/* Is @d a classic peer with nothing to write, so that a message queued to it now is written
 * now, from its first byte? */
static bool splice_dest_is_idle(const ProxyClient *d) {
        return d->state == CLIENT_STATE_RUNNING && d->is_unix && !d->close_pending &&
               !d->write_blocked && !d->out_n && d->sasl_out_end == d->sasl_out_start &&
               d->conn && d->conn->active;
}

/* The idle classic peer other than @c that @name reaches now, or NULL. */
static ProxyClient *splice_dest(ProxyClient *c, const char *name) {
        ProxyClient *d;

        if (!name)
                return NULL;
        d = client_of_conn(bus_find_conn_by_name(c->server->bus, name));
        return d && d != c && splice_dest_is_idle(d) && !bridge_conn_queue_peek(d->conn) ? d
                                                                                        : NULL;
}

/**
 * client_splice_begin() - take the pipe path for c->in_msg if it qualifies
 * @c:          the client; c->in_msg just begun, in_msg_filled bytes of it in memory
 * @hdr:        its header as the client sent it (WIRE_PARSE_HEADER_ONLY)
 *
 * The array's length word must be in memory already (it is checked at the end), and enough
 * of the array still to come that the pipe is worth its syscalls. The destination is
 * looked up now as well as at the end: a message to the driver or to a native peer would
 * only be copied out of the pipe again.
 */
void client_splice_begin(ProxyClient *c, const WireHeader *hdr) {
        BridgeMsg *m = c->in_msg;
        size_t body_offset = m->size - hdr->body_size;

        if (!c->is_unix || !wire_body_is_byte_array(hdr) ||
            c->in_msg_filled < body_offset + 4 ||
            m->size - c->in_msg_filled < CLIENT_SPLICE_MIN ||
            !splice_dest(c, hdr->destination) || !splice_pipe_take(c))
                return;
        c->in_pipe_from = c->in_msg_filled;
}

/*
 * Move what the pipe holds of @m (c->in_msg, or the message it was) into m->data, from
 * in_pipe_from + @done (@done bytes of the pipe's were spliced out) up to @end, and give
 * the pipe back. Return: 0 or a negative errno: the pipe did not give back what went in,
 * which only a kernel fault could cause; the missing bytes are zeroes then, so that no
 * receiver gets the bus's uninitialised memory, and the caller drops the sender.
 */
static int splice_fill(ProxyClient *c, BridgeMsg *m, size_t done, size_t end) {
        uint8_t *p = m->data + c->in_pipe_from + done;
        size_t left = end - c->in_pipe_from - done;

        while (left) {
                ssize_t n = read(c->in_pipe[0], p, left);

                if (n <= 0) {
                        int r = n < 0 ? -errno : -EIO;

                        memset(p, 0, left);
                        splice_pipe_put(c, false);
                        return error_origin(r);
                }
                p += n;
                left -= (size_t)n;
                client_splice_bytes_filled += (size_t)n;
        }
        splice_pipe_put(c, true);
        return 0;
}

/**
 * client_splice_read() - the next part of the array, into the pipe
 * @c:          the client, client_in_piped()
 *
 * Never more than the message's own bytes: what follows in the stream (and fds that come
 * with it) is the next message's, for recvmsg(). A pipe that is full (splice() finds room
 * for nothing while the socket holds bytes) is emptied into the message, which is read in
 * place from then on.
 * Return: as client_read().
 */
int client_splice_read(ProxyClient *c) {
        ssize_t n;
        int queued = 0, r;

        n = splice(c->fd, NULL, c->in_pipe[1], NULL, c->in_msg->size - c->in_msg_filled,
                   SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
        if (n > 0) {
                c->in_msg_filled += (size_t)n;
                return 0;
        }
        if (n == 0)
                return 1;
        if (errno == EINTR)
                return 0;
        if (errno != EAGAIN)
                return -errno;
        if (ioctl(c->fd, SIOCINQ, &queued) < 0 || queued <= 0)
                return 0;
        r = splice_fill(c, c->in_msg, 0, c->in_msg_filled);
        /* the loop reports the socket readable again: the rest goes in place */
        return r < 0 ? r : 0;
}

/**
 * client_splice_target() - where the array goes, just before the dispatch
 * @c:          the client, client_in_piped(); @m its complete, checked message
 * @m:          the message (c->in_msg until now)
 * @ret:        the destination to splice to after the dispatch, or NULL: then the
 *              contents are in m->data on return
 *
 * Nothing reads a message's body during its dispatch but the driver (a call to the bus),
 * a native receiver (its pool) and match rules' arguments (of an "ay" body only the
 * length word, which is in memory): an idle classic destination excludes the first two.
 * Return: 0 or a negative errno (the pipe could not be read).
 */
int client_splice_target(ProxyClient *c, BridgeMsg *m, ProxyClient **ret) {
        ProxyClient *d = splice_dest(c, m->hdr.destination);

        *ret = d;
        return d ? 0 : splice_fill(c, m, 0, m->size);
}

/* Write @m's header part and splice its array to @d. Return: the bytes written, or a
 * negative errno (@d goes). */
static ssize_t splice_write(ProxyClient *c, ProxyClient *d, BridgeMsg *m) {
        struct iovec iov = { .iov_base = m->data, .iov_len = c->in_pipe_from };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
        ClientControl control;
        size_t done;
        ssize_t n;

        if (m->n_fds)
                client_msg_control(&mh, &control, m);
        do
                n = sendmsg(d->fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return errno == EAGAIN ? 0 : -errno;
        done = (size_t)n;
        if (done < c->in_pipe_from)
                return (ssize_t)done;
        while (done < m->size) {
                n = splice(c->in_pipe[0], NULL, d->fd, NULL, m->size - done,
                           SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        break;
                if (n <= 0)
                        return n < 0 ? -errno : -EIO;
                done += (size_t)n;
                client_splice_bytes_spliced += (size_t)n;
        }
        return (ssize_t)done;
}

static void splice_fill_or_drop(ProxyClient *c, BridgeMsg *m, size_t done) {
        int r = splice_fill(c, m, done, m->size);

        if (r < 0) {
                client_log(c, LOG_ERR, "Disconnecting: the pipe of its message of %zu bytes "
                           "gave back less than went in: %s", m->size, strerror(-r));
                client_close_later(c);
        }
}

/**
 * client_splice_deliver() - after the dispatch: the array to its destination
 * @c:          the sender, client_in_piped()
 * @d:          client_splice_target()'s destination
 * @m:          the dispatched message (the caller's reference)
 *
 * Spliced only if the dispatch queued @m to @d alone (its only reference besides ours is
 * @d's queue entry, and @d had nothing queued), written at once; what @d's socket does
 * not take now, and the whole array in any other case, is read from the pipe into m->data
 * and written from there as any message. Leaves @c without a pipe.
 */
void client_splice_deliver(ProxyClient *c, ProxyClient *d, BridgeMsg *m) {
        BridgeMsg *queued;
        ssize_t n;

        if (m->n_refs == 1) {
                /* dropped (an error went back to the sender): nobody needs the bytes */
                splice_pipe_put(c, false);
                return;
        }
        if (m->n_refs != 2 || !splice_dest_is_idle(d) || d->conn->queued_msgs != 1 ||
            bridge_conn_queue_peek(d->conn) != m) {
                splice_fill_or_drop(c, m, 0);
                return;
        }
        queued = bridge_conn_queue_take(d->conn);
        if (!d->sndbuf_raised) {
                (void) setsockopt(d->fd, SOL_SOCKET, SO_SNDBUF, &(int){ CLIENT_SNDBUF },
                                  sizeof(int));
                d->sndbuf_raised = true;
        }
        n = splice_write(c, d, m);
        if (n < 0) {
                if (n != -EPIPE && n != -ECONNRESET)
                        client_log(d, LOG_INFO, "Disconnecting: write failed: %s",
                                   strerror((int)-n));
                splice_pipe_put(c, false);
                bridge_msg_unref(queued);
                client_close_later(d);
                return;
        }
        if ((size_t)n == m->size) {
                splice_pipe_put(c, true);
                bridge_msg_unref(queued);
                return;
        }
        /* the socket is full: the rest from memory, when it has room (EPOLLOUT) */
        splice_fill_or_drop(c, m, (size_t)n > c->in_pipe_from ? (size_t)n - c->in_pipe_from : 0);
        client_out_push(d, queued);
        d->out_offset = (size_t)n;
        client_flush(d);
}
