/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A classic client's way out: the messages taken off the core's queue for this peer (its
 * out_ring, in order) and its pending SASL replies, written with as few sendmsg() calls as
 * the iovec array allows. A message with fds starts a sendmsg() of its own, so the fds
 * travel with its first byte; a partly written head message keeps out_offset. The input
 * side, SASL and the client's life are in proxy/client.c.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include "bridge/conn.h"
#include "bridge/msg.h"
#include "proxy/client.h"
#include "proxy/server.h"
#include "util/macro.h"

#define CLIENT_IOV_MAX 256u             /* messages (and SASL replies) per sendmsg() */

void client_out_pop(ProxyClient *c) {
        BridgeMsg *m = c->out_ring[c->out_head];

        c->out_ring_bytes -= m->size;
        c->out_ring[c->out_head] = NULL;
        c->out_head = (c->out_head + 1) % CLIENT_OUT_RING;
        --c->out_n;
        c->out_offset = 0;
        bridge_msg_unref(m);
}

void client_out_push(ProxyClient *c, BridgeMsg *m) {
        assert(c->out_n < CLIENT_OUT_RING);
        c->out_ring[(c->out_head + c->out_n) % CLIENT_OUT_RING] = m;
        ++c->out_n;
        c->out_ring_bytes += m->size;
}

static void client_out_refill(ProxyClient *c) {
        BridgeMsg *m;

        if (!c->conn)
                return;
        if (c->conn->queued_bytes >= SERVER_TRIM_AFTER)
                c->held_much = true;
        while (c->out_n < CLIENT_OUT_RING &&
               (c->out_n == 0 || c->out_ring_bytes < CLIENT_OUT_RING_BYTES) &&
               (m = bridge_conn_queue_take(c->conn)))
                client_out_push(c, m);
}

void client_msg_control(struct msghdr *mh, ClientControl *control, const BridgeMsg *m) {
        struct cmsghdr *cmsg;

        mh->msg_control = control;
        mh->msg_controllen = CMSG_SPACE(sizeof(int) * m->n_fds);
        memset(control, 0, mh->msg_controllen);        /* padding too */
        cmsg = CMSG_FIRSTHDR(mh);
        cmsg->cmsg_level = SOL_SOCKET;
        cmsg->cmsg_type = SCM_RIGHTS;
        cmsg->cmsg_len = CMSG_LEN(sizeof(int) * m->n_fds);
        memcpy(CMSG_DATA(cmsg), m->fds, sizeof(int) * m->n_fds);
}

/**
 * client_flush() - write out pending authentication replies and queued messages
 * @c:          the client
 *
 * Each sendmsg() carries as many messages as the iovec array holds, up to the next message
 * with fds. Stops at EAGAIN (then waits for EPOLLOUT) or when nothing is left.
 */
void client_flush(ProxyClient *c) {
        ClientControl control;
        struct iovec iov[CLIENT_IOV_MAX];

        while (!c->close_pending && !c->write_blocked) {
                struct msghdr mh = { 0 };
                BridgeMsg *fds_msg = NULL;
                size_t total = 0, left;
                unsigned n_iov = 0, i;
                ssize_t n;

                client_out_refill(c);
                if (c->sasl_out_end > c->sasl_out_start) {
                        iov[n_iov].iov_base = c->sasl_out + c->sasl_out_start;
                        iov[n_iov].iov_len = c->sasl_out_end - c->sasl_out_start;
                        total += iov[n_iov++].iov_len;
                }
                for (i = 0; i < c->out_n && n_iov < CLIENT_IOV_MAX; ++i) {
                        BridgeMsg *m = c->out_ring[(c->out_head + i) % CLIENT_OUT_RING];
                        size_t off = i == 0 ? c->out_offset : 0;

                        if (m->size >= CLIENT_IN_DIRECT && !c->sndbuf_raised) {
                                /* room in the kernel for a large message: it goes out with
                                 * one sendmsg() from the shared message, not a sendmsg() and
                                 * an EPOLLOUT wakeup per default socket buffer (~200 KiB).
                                 * Asked at the first large message, so a peer that sends
                                 * none costs no syscall; the kernel caps it (wmem_max). */
                                (void) setsockopt(c->fd, SOL_SOCKET, SO_SNDBUF,
                                                  &(int){ CLIENT_SNDBUF }, sizeof(int));
                                c->sndbuf_raised = true;
                        }

                        if (m->n_fds && off == 0) {
                                if (n_iov > 0)
                                        break;
                                if (m->n_fds > 253) {
                                        client_log(c, LOG_ERR, "Disconnecting: cannot pass "
                                                   "%u fds in one message", m->n_fds);
                                        client_close_later(c);
                                        return;
                                }
                                fds_msg = m;
                        }
                        iov[n_iov].iov_base = m->data + off;
                        iov[n_iov].iov_len = m->size - off;
                        total += iov[n_iov++].iov_len;
                }
                if (n_iov == 0)
                        break;

                mh.msg_iov = iov;
                mh.msg_iovlen = n_iov;
                if (fds_msg)
                        client_msg_control(&mh, &control, fds_msg);
                n = sendmsg(c->fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN) {
                                c->write_blocked = true;
                                break;
                        }
                        if (errno != EPIPE && errno != ECONNRESET)
                                client_log(c, LOG_INFO, "Disconnecting: write failed: %s",
                                           strerror(errno));
                        client_close_later(c);
                        return;
                }

                left = (size_t)n;
                if (c->sasl_out_end > c->sasl_out_start) {
                        size_t k = MIN(left, c->sasl_out_end - c->sasl_out_start);

                        c->sasl_out_start += k;
                        left -= k;
                }
                while (left > 0 && c->out_n > 0) {
                        BridgeMsg *m = c->out_ring[c->out_head];
                        size_t rest = m->size - c->out_offset;

                        if (left < rest) {
                                c->out_offset += left;
                                break;
                        }
                        left -= rest;
                        client_out_pop(c);
                }
                if ((size_t)n < total) {
                        /* the socket buffer is full: EPOLLOUT tells when to go on */
                        c->write_blocked = true;
                        break;
                }
        }
        /* authentication replies may have made room for more lines */
        if (!c->close_pending && c->state == CLIENT_STATE_AUTH && c->in_end > c->in_start)
                server_mark_ready(c->server, c);
        if (c->held_much && !c->out_n && !bridge_conn_queue_peek(c->conn)) {
                /* a flood to this peer is over: give its memory back to the system */
                c->held_much = false;
                server_trim_later(c->server);
        }
        if (c->close_after_flush && !c->close_pending && !c->write_blocked && !c->out_n &&
            c->sasl_out_end == c->sasl_out_start && !bridge_conn_queue_peek(c->conn)) {
                client_close_later(c);
                return;
        }
        client_update_events(c);
}
