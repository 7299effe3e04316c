/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The request channels of a handle and its held RECV (preload/preload.h).
 *
 * Channels: kdbus's ioctls on one file ran in parallel (a thread's BYEBYE ended another's
 * SYNC_REPLY), while a socket answers its requests in order. So a request takes a free
 * channel of the handle: its own socket first, else one attached to the connection
 * (KDBUS_WIRE_ATTACH, with the pool memfd as proof), made when every channel is busy, up to
 * PRELOAD_CHAN_MAX; only then does it wait for one. A fork child's requests never go on
 * the socket it shares with its parent (replies would reach either process): it attaches
 * its own.
 *
 * Held RECV: a plain program waits for a message with poll() and then asks RECV; through
 * sockets that is a wakeup of the eventfd and a round trip. Instead the library arms a RECV
 * that kdbusd holds (KDBUS_WIRE_BATCH_HOLD_RECV from poll(), or KDBUS_WIRE_BATCH_ARM_RECV
 * riding on a SEND), and the message comes on the channel's socket with the wakeup; it is
 * kept as the handle's prefetch and handed to the program's next RECV. At most one channel
 * is armed and at most one answer kept, so messages keep their order. A request on the
 * armed channel reads the held answer first (kdbusd answers it before the request). Not for
 * a program that used RECV flags (PEEK, DROP, priorities look at the queue itself), nor
 * on a handle shared with another process.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>
#include "kdbus/kdbus.h"
#include "preload/preload.h"

int preload_wire_send(int sock, struct iovec *iov, unsigned n_iov, const int *fds,
                      unsigned n_fds) {
        union {
                struct cmsghdr cm;
                uint8_t buf[CMSG_SPACE(sizeof(int) * 253u)];
        } ctl;
        struct msghdr mh = { .msg_iov = iov, .msg_iovlen = n_iov };
        struct cmsghdr *cm;
        ssize_t n;

        if (n_fds > 253u)
                return -E2BIG;
        if (n_fds) {
                memset(&ctl, 0, CMSG_SPACE(sizeof(int) * n_fds));
                mh.msg_control = ctl.buf;
                mh.msg_controllen = CMSG_SPACE(sizeof(int) * n_fds);
                cm = CMSG_FIRSTHDR(&mh);
                cm->cmsg_level = SOL_SOCKET;
                cm->cmsg_type = SCM_RIGHTS;
                cm->cmsg_len = CMSG_LEN(sizeof(int) * n_fds);
                memcpy(CMSG_DATA(cm), fds, sizeof(int) * n_fds);
        }
        do
                n = sendmsg(sock, &mh, MSG_NOSIGNAL);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return errno == EPIPE || errno == ECONNREFUSED ? -ECONNRESET : -errno;
        return 0;
}

int preload_wire_recv(int sock, bool batch, int flags, PreloadReply *rep) {
        union {
                struct cmsghdr cm;
                uint8_t buf[CMSG_SPACE(sizeof(int) * PRELOAD_MAX_REPLY_FDS)];
        } ctl;
        struct iovec riov = { rep->buf, sizeof(rep->buf) };
        struct msghdr mh = { .msg_iov = &riov, .msg_iovlen = 1, .msg_control = ctl.buf,
                             .msg_controllen = sizeof(ctl.buf) };
        struct cmsghdr *cm;
        ssize_t n;
        size_t hdr = sizeof(struct kdbus_wire_reply);

        rep->n_fds = 0;
        rep->j_n_fds = 0;
        rep->joined = false;
        /* signals do not end the wait: the bus answers every request and the reply must
         * be read (kdbus restarted its ioctls too) */
        do
                n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | flags);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;
        for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
                if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
                        unsigned k = (unsigned)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
                        int *p = (int *)(void *)CMSG_DATA(cm);

                        for (unsigned i = 0; i < k; i++) {
                                if (rep->n_fds < PRELOAD_MAX_REPLY_FDS)
                                        rep->fds[rep->n_fds++] = p[i];
                                else
                                        (void) preload_real_close(p[i]);
                        }
                }
        /* the bus closed the socket: the connection is gone (kdbus: ECONNRESET) */
        if (n == 0)
                return -ECONNRESET;
        if ((size_t)n < hdr || (mh.msg_flags & MSG_TRUNC))
                return -EIO;
        rep->error = ((struct kdbus_wire_reply *)(void *)rep->buf)->error;
        rep->data = (uint8_t *)rep->buf + hdr;
        rep->size = (size_t)n - hdr;
        memset(&rep->batch, 0, sizeof(rep->batch));
        if (batch) {
                if (rep->size < sizeof(rep->batch))
                        return -EIO;
                memcpy(&rep->batch, rep->data, sizeof(rep->batch));
                rep->data += sizeof(rep->batch);
                rep->size -= sizeof(rep->batch);
        }
        if (batch && (rep->batch.return_flags & KDBUS_WIRE_RETURN_JOINED)) {
                /* a RECV answer ends it, as its own datagram would be; the fds are its */
                size_t tail = hdr + sizeof(rep->j_batch) + sizeof(struct kdbus_cmd_recv);
                const struct kdbus_cmd_recv *rc;
                const uint8_t *t;

                if (rep->size < tail)
                        return -EIO;
                t = rep->data + rep->size - tail;
                rep->joined = true;
                rep->j_error = ((const struct kdbus_wire_reply *)(const void *)t)->error;
                memcpy(&rep->j_batch, t + hdr, sizeof(rep->j_batch));
                /* 8-aligned: every part's size is a multiple of 8 */
                rc = (const void *)(t + hdr + sizeof(rep->j_batch));
                rep->j_return_flags = rc->return_flags;
                rep->j_dropped_msgs = rc->dropped_msgs;
                rep->j_msg = rc->msg;
                rep->size -= tail;
                memcpy(rep->j_fds, rep->fds, rep->n_fds * sizeof(int));
                rep->j_n_fds = rep->n_fds;
                rep->n_fds = 0;
        }
        return 0;
}

void preload_reply_close_fds(PreloadReply *rep) {
        for (unsigned i = 0; i < rep->n_fds; i++)
                (void) preload_real_close(rep->fds[i]);
        rep->n_fds = 0;
        for (unsigned i = 0; i < rep->j_n_fds; i++)
                (void) preload_real_close(rep->j_fds[i]);
        rep->j_n_fds = 0;
}

/* One round trip on a socket of our own (attaching). Return: 0 or -errno. */
static int preload_wire_call_plain(int sock, struct iovec *iov, const int *fds, unsigned n_fds) {
        PreloadReply *rep = calloc(1, sizeof(*rep));
        int r;

        if (!rep)
                return -ENOMEM;
        r = preload_wire_send(sock, iov, 1, fds, n_fds);
        if (r == 0)
                r = preload_wire_recv(sock, false, 0, rep);
        if (r == 0)
                r = (int)rep->error;
        preload_reply_close_fds(rep);
        free(rep);
        return r;
}

/* A new channel attached to @h's connection, locked. Return: its index, or -1 (at the
 * limit, no node address, or the bus refused). */
static int preload_chan_new(PreloadHandle *h) {
        struct {
                struct kdbus_wire_request req;
                struct kdbus_wire_attach at;
        } m = { { KDBUS_WIRE_ATTACH, sizeof(struct kdbus_wire_attach) }, { 0 } };
        struct iovec iov = { &m, sizeof(m) };
        int sock, i = -1;

        (void) pthread_mutex_lock(&h->lock);
        if (h->n_chans >= PRELOAD_CHAN_MAX || !h->addr.sun_path[0] || h->pool_fd < 0)
                goto out;
        sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        if (sock < 0)
                goto out;
        preload_sock_sndbuf(sock);
        m.at.id = h->id;
        if (connect(sock, (struct sockaddr *)&h->addr, sizeof(h->addr)) < 0 ||
            preload_wire_call_plain(sock, &iov, &h->pool_fd, 1) < 0) {
                (void) preload_real_close(sock);
                goto out;
        }
        i = (int)h->n_chans;
        h->chan[i].sock = sock;
        (void) pthread_mutex_init(&h->chan[i].lock, NULL);
        (void) pthread_mutex_lock(&h->chan[i].lock);
        __atomic_store_n(&h->n_chans, h->n_chans + 1, __ATOMIC_RELEASE);
out:
        (void) pthread_mutex_unlock(&h->lock);
        return i;
}

unsigned preload_chan_take(PreloadHandle *h, int fd, int *ret_sock) {
        unsigned first = h->chan0_foreign ? 1 : 0, n, i;
        int armed_free = -1, made;

        if (h->type == PRELOAD_HANDLE_CONNECTED) {
                n = __atomic_load_n(&h->n_chans, __ATOMIC_ACQUIRE);
                /* a free channel; one with a held RECV only if nothing else is free (the
                 * held answer comes first on it) */
                for (i = first; i < n; i++) {
                        if (pthread_mutex_trylock(&h->chan[i].lock) != 0)
                                continue;
                        if (__atomic_load_n(&h->armed, __ATOMIC_RELAXED) != (int)i) {
                                if (armed_free >= 0)
                                        (void) pthread_mutex_unlock(&h->chan[armed_free].lock);
                                goto got;
                        }
                        armed_free = (int)i;
                }
                if (armed_free >= 0) {
                        i = (unsigned)armed_free;
                        goto got;
                }
                made = preload_chan_new(h);
                if (made >= 0) {
                        i = (unsigned)made;
                        goto got;
                }
        }
        /* wait for one: the handle's own, in a fork child the first attached if any */
        i = first < __atomic_load_n(&h->n_chans, __ATOMIC_ACQUIRE) ? first : 0;
        (void) pthread_mutex_lock(&h->chan[i].lock);
got:
        *ret_sock = i == 0 ? fd : h->chan[i].sock;
        return i;
}

void preload_chan_release(PreloadHandle *h, unsigned ci) {
        (void) pthread_mutex_unlock(&h->chan[ci].lock);
}

/*
 * A RECV answer (@error, @rc; @fds, taken when kept) for the program's next RECV, @h->lock
 * held: a message, or a count of lost ones. The connection's end (ECONNRESET): POLLHUP.
 * Return: kept.
 */
static bool preload_prefetch_keep_locked(PreloadHandle *h, int64_t error,
                                         uint64_t return_flags, uint64_t dropped_msgs,
                                         const struct kdbus_msg_info *msg, int *fds,
                                         unsigned *n_fds) {
        if (error == -ECONNRESET) {
                /* the connection ended: poll says POLLHUP, requests ECONNRESET */
                __atomic_store_n(&h->byebye, true, __ATOMIC_RELAXED);
                return false;
        }
        if (h->pre.valid || !(error == 0 || (error == -EAGAIN &&
                                             (return_flags & KDBUS_RECV_RETURN_DROPPED_MSGS))))
                return false;
        h->pre.valid = true;
        h->pre.published = false;
        h->pre.error = (int)error;
        h->pre.return_flags = return_flags;
        h->pre.dropped_msgs = dropped_msgs;
        h->pre.msg = *msg;
        memcpy(h->pre.fds, fds, *n_fds * sizeof(int));
        h->pre.n_fds = *n_fds;
        *n_fds = 0;
        return true;
}

void preload_wake_set(PreloadHandle *h) {
        uint64_t one = 1;

        /* under the lock: a reader's clearing and its note are one step for a writer; an
         * epoll user may wait edge-triggered: every write is an edge for it */
        (void) pthread_mutex_lock(&h->lock);
        if (!h->wake_known || h->shared || __atomic_load_n(&h->epolled, __ATOMIC_RELAXED)) {
                (void) !write(h->wake_fd, &one, sizeof(one));
                h->wake_known = true;
        }
        (void) pthread_mutex_unlock(&h->lock);
}

ssize_t preload_wake_clear(PreloadHandle *h) {
        uint64_t v;
        ssize_t n;

        (void) pthread_mutex_lock(&h->lock);
        while ((n = read(h->wake_fd, &v, sizeof(v))) < 0 && errno == EINTR)
                ;
        h->wake_known = false;
        if (n < 0)
                n = -errno;
        (void) pthread_mutex_unlock(&h->lock);
        if (n < 0) {
                errno = (int)-n;
                return -1;
        }
        return n;
}

bool preload_joined_keep(PreloadHandle *h, PreloadReply *rep) {
        bool keep;

        (void) pthread_mutex_lock(&h->lock);
        keep = preload_prefetch_keep_locked(h, rep->j_error, rep->j_return_flags,
                                            rep->j_dropped_msgs, &rep->j_msg, rep->j_fds,
                                            &rep->j_n_fds);
        (void) pthread_mutex_unlock(&h->lock);
        return rep->j_error != -ECONNRESET &&
               (keep || !(rep->j_batch.return_flags & KDBUS_WIRE_RETURN_RECV_EMPTY));
}

int preload_held_read(PreloadHandle *h, unsigned ci, int sock, bool dontwait, bool notify) {
        PreloadReply *rep = malloc(sizeof(*rep));
        bool keep = false;
        int r;

        if (!rep)
                return -ENOMEM;
        r = preload_wire_recv(sock, true, dontwait ? MSG_DONTWAIT : 0, rep);
        if (r == -EAGAIN || r == -EWOULDBLOCK) {
                free(rep);
                return -EAGAIN;
        }
        (void) pthread_mutex_lock(&h->lock);
        if (h->armed == (int)ci)
                __atomic_store_n(&h->armed, -1, __ATOMIC_RELAXED);
        if (r == -ECONNRESET)
                __atomic_store_n(&h->byebye, true, __ATOMIC_RELAXED);
        else if (r == 0 && rep->size >= sizeof(struct kdbus_cmd_recv)) {
                const struct kdbus_cmd_recv *rc = (const void *)rep->data;

                keep = preload_prefetch_keep_locked(h, rep->error, rc->return_flags,
                                                    rc->dropped_msgs, &rc->msg, rep->fds,
                                                    &rep->n_fds);
        }
        else if (r == 0 && rep->error == -ECONNRESET)
                __atomic_store_n(&h->byebye, true, __ATOMIC_RELAXED);
        (void) pthread_mutex_unlock(&h->lock);
        /* more wait behind it (kdbusd wrote the eventfd when the hold ended; a RECV may
         * have cleared that since), or a poller of another thread is to see the kept one */
        if (r == 0 && rep->error != -ECONNRESET &&
            (!(rep->batch.return_flags & KDBUS_WIRE_RETURN_RECV_EMPTY) || (keep && notify)))
                preload_wake_set(h);
        preload_reply_close_fds(rep);
        free(rep);
        return r < 0 ? r : 0;
}

int preload_chan_call(PreloadHandle *h, unsigned ci, int sock, struct iovec *iov,
                      unsigned n_iov, const int *fds, unsigned n_fds, bool batch,
                      PreloadReply *rep) {
        int r;

        rep->n_fds = 0;
        rep->j_n_fds = 0;
        r = preload_wire_send(sock, iov, n_iov, fds, n_fds);
        if (r < 0)
                return r;
        /* only the holder of the channel's lock changes whether it is armed */
        if (__atomic_load_n(&h->armed, __ATOMIC_RELAXED) == (int)ci) {
                r = preload_held_read(h, ci, sock, false, true);
                if (r < 0)
                        return r;
        }
        return preload_wire_recv(sock, batch, 0, rep);
}

bool preload_can_arm(const PreloadHandle *h) {
        /* an activator's messages move to the name's owner while it has not received
         * them: none may be taken ahead */
        return h->type == PRELOAD_HANDLE_CONNECTED && !h->shared && !h->recv_flags_seen &&
               !(h->hello_flags & KDBUS_HELLO_ACTIVATOR) &&
               !__atomic_load_n(&h->epolled, __ATOMIC_RELAXED) &&
               !__atomic_load_n(&h->byebye, __ATOMIC_RELAXED);
}

void preload_disarm(PreloadHandle *h, int fd) {
        /* a FREE of the pool's size (kdbus's "no slice": always 0) ends the hold */
        uint64_t m[(sizeof(struct kdbus_wire_request) + sizeof(struct kdbus_cmd_free)) / 8] = {
                KDBUS_CMD_FREE, sizeof(struct kdbus_cmd_free), sizeof(struct kdbus_cmd_free)
        };
        struct kdbus_cmd_free *f = (void *)(m + 2);
        struct iovec iov = { m, sizeof(m) };
        PreloadReply *rep;
        int ci = __atomic_load_n(&h->armed, __ATOMIC_RELAXED);

        if (ci < 0)
                return;
        (void) pthread_mutex_lock(&h->chan[ci].lock);
        rep = malloc(sizeof(*rep));
        if (rep && __atomic_load_n(&h->armed, __ATOMIC_RELAXED) == ci) {
                f->offset = h->pool_size;
                if (preload_chan_call(h, (unsigned)ci, ci ? h->chan[ci].sock : fd, &iov, 1,
                                      NULL, 0, false, rep) == 0)
                        preload_reply_close_fds(rep);
        }
        free(rep);
        (void) pthread_mutex_unlock(&h->chan[ci].lock);
}

int preload_chan_arm(PreloadHandle *h, int fd) {
        /* a KDBUS_WIRE_BATCH (no FREEs, HOLD_RECV) around a plain kdbus_cmd_recv, built in
         * words: both structs end in flexible arrays */
        uint64_t m[(2 * sizeof(struct kdbus_wire_request) + sizeof(struct kdbus_wire_batch) +
                    sizeof(struct kdbus_cmd_recv)) / 8];
        struct kdbus_wire_request *breq = (void *)m, *req;
        struct kdbus_wire_batch *batch = (void *)(breq + 1);
        struct kdbus_cmd_recv *rc;
        struct iovec iov = { m, sizeof(m) };
        unsigned first = h->chan0_foreign ? 1 : 0, n, i;
        int armed, sock = -1;

        armed = __atomic_load_n(&h->armed, __ATOMIC_RELAXED);
        if (armed >= 0)
                return armed == 0 ? fd : h->chan[armed].sock;
        if (!preload_can_arm(h) || h->pre.valid)
                return -1;
        /* a RECV at kdbusd, or a SEND arming a hold, fills the prefetch: wait for it (one
         * request), then watch what it armed or see what it kept */
        (void) pthread_mutex_lock(&h->recv_lock);
        armed = __atomic_load_n(&h->armed, __ATOMIC_RELAXED);
        if (armed >= 0 || h->pre.valid) {
                /* another thread was quicker */
                (void) pthread_mutex_unlock(&h->recv_lock);
                return armed >= 0 ? (armed == 0 ? fd : h->chan[armed].sock) : -1;
        }
        n = __atomic_load_n(&h->n_chans, __ATOMIC_ACQUIRE);
        for (i = first; i < n; i++)
                if (pthread_mutex_trylock(&h->chan[i].lock) == 0)
                        break;
        if (i == n) {
                (void) pthread_mutex_unlock(&h->recv_lock);
                return -1;              /* every channel busy: the eventfd says it */
        }
        memset(m, 0, sizeof(m));
        req = (void *)((uint8_t *)batch + sizeof(*batch));
        rc = (void *)(req + 1);
        breq->command = KDBUS_WIRE_BATCH;
        breq->size = sizeof(m) - sizeof(*breq);
        batch->flags = KDBUS_WIRE_BATCH_HOLD_RECV;
        req->command = KDBUS_CMD_RECV;
        req->size = sizeof(*rc);
        rc->size = sizeof(*rc);
        sock = i == 0 ? fd : h->chan[i].sock;
        /* a count kdbusd wrote before is old news: what waits now answers the hold at
         * once (and the eventfd is written again if more wait behind it) */
        (void) preload_wake_clear(h);
        if (preload_wire_send(sock, &iov, 1, NULL, 0) == 0)
                __atomic_store_n(&h->armed, (int)i, __ATOMIC_RELAXED);
        else
                sock = -1;
        (void) pthread_mutex_unlock(&h->recv_lock);
        (void) pthread_mutex_unlock(&h->chan[i].lock);
        return sock;
}

void preload_held_poll(PreloadHandle *h, int sock) {
        int ci = __atomic_load_n(&h->armed, __ATOMIC_RELAXED);

        if (ci < 0 || pthread_mutex_trylock(&h->chan[ci].lock) != 0)
                return;
        /* still armed: the datagram is the held answer */
        if (__atomic_load_n(&h->armed, __ATOMIC_RELAXED) == ci)
                (void) preload_held_read(h, (unsigned)ci, sock, true, false);
        (void) pthread_mutex_unlock(&h->chan[ci].lock);
}

void preload_prefetch_drop(PreloadHandle *h) {
        if (!h->pre.published)
                for (unsigned i = 0; i < h->pre.n_fds; i++)
                        (void) preload_real_close(h->pre.fds[i]);
        h->pre.n_fds = 0;
        h->pre.valid = false;
}

void preload_chans_close(PreloadHandle *h) {
        for (unsigned i = 1; i < h->n_chans; i++) {
                (void) preload_real_close(h->chan[i].sock);
                (void) pthread_mutex_destroy(&h->chan[i].lock);
        }
        h->n_chans = 1;
        if (h->armed > 0)
                h->armed = -1;
}
