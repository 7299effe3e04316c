/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Request channels of a native connection (include/kdbus/kdbus.h, KDBUS_WIRE_ATTACH): a
 * further socket to the same node that proves it holds the connection's pool memfd takes
 * the connection's commands too, answered on it, so that a peer's threads and forked
 * children have requests of their own in the bus at once, as kdbus's parallel ioctls on
 * one file. The channel borrows its owner's NativeConn (proxy/native-client.c routes the
 * connection's callbacks to the channel concerned); the owner's end closes its channels.
 */
#include <errno.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include "kdbus/kdbus.h"
#include "native/conn.h"
#include "proxy/loop.h"
#include "proxy/native-client-internal.h"
#include "proxy/native-listener.h"

/*
 * KDBUS_WIRE_ATTACH (include/kdbus/kdbus.h): this socket becomes a further request channel
 * of the connection @cmd names, on the same node, if the one fd is that connection's pool.
 * Return: 0, or -errno: close the client.
 */
int native_client_attach(NativeClient *c, const uint8_t *cmd, size_t size,
                                const int *fds, unsigned n_fds) {
        const struct kdbus_wire_attach *a = (const void *)cmd;
        NativeClient *o = NULL;
        struct stat st_fd, st_pool;
        List *pos;
        int r;

        if (size != sizeof(*a) || n_fds != 1)
                return native_client_reply(c, -EINVAL, NULL, 0, NULL, 0);
        if (c->nc || c->owned_endpoint || c->instance)
                return native_client_reply(c, -EBADFD, NULL, 0, NULL, 0);
        list_for_each(pos, &c->listener->clients) {
                NativeClient *x = list_entry(pos, NativeClient, link);

                if (x != c && !x->owner && x->nc && !x->closing && x->nc->conn->id == a->id) {
                        o = x;
                        break;
                }
        }
        if (!o || fstat(fds[0], &st_fd) < 0 ||
            fstat(native_conn_pool_fd(o->nc), &st_pool) < 0 ||
            st_fd.st_dev != st_pool.st_dev || st_fd.st_ino != st_pool.st_ino)
                return native_client_reply(c, -ENXIO, NULL, 0, NULL, 0);
        if (o->per_message) {
                r = native_client_pass_creds(c);
                if (r < 0)
                        return r;
        }
        c->owner = o;
        c->nc = o->nc;
        list_append(&o->chans, &c->chan_link);
        return native_client_reply(c, 0, NULL, 0, NULL, 0);
}

/*
 * A channel's next datagram is a SEND with SYNC_REPLY while NATIVE_MAX_SYNC of the
 * connection's wait (each channel's own, at once, as kdbus's ioctls): it stays unread, the
 * channel off, until one ends (native_client_sync_resume()). Return: held back.
 */
bool native_client_sync_blocked(NativeClient *c) {
        uint64_t buf[96];
        const struct kdbus_wire_request *req = (const void *)buf;
        const struct kdbus_cmd_send *snd;
        size_t off = sizeof(*req);
        ssize_t n;

        if (!c->nc || c->nc->n_sync < NATIVE_MAX_SYNC || c->sync_waits)
                return false;
        n = recv(c->fd, buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT);
        if (n < (ssize_t)sizeof(*req))
                return false;
        if (req->command == KDBUS_WIRE_BATCH) {
                const struct kdbus_wire_batch *b = (const void *)((const uint8_t *)buf + off);

                if ((size_t)n < off + sizeof(*b) || b->n_free > KDBUS_WIRE_BATCH_MAX_FREE)
                        return false;
                off += sizeof(*b) + b->n_free * sizeof(uint64_t);
                req = (const void *)((const uint8_t *)buf + off);
                off += sizeof(*req);
        }
        snd = (const void *)((const uint8_t *)buf + off);
        if ((size_t)n < off + sizeof(*snd) || req->command != KDBUS_CMD_SEND ||
            !(snd->flags & KDBUS_SEND_SYNC_REPLY))
                return false;
        c->sync_deferred = true;
        (void) loop_source_set_enabled(c->io, LOOP_OFF);
        return true;
}

/* The connection's SYNC_REPLY ended: channels held back by native_client_sync_blocked()
 * are read again. */
void native_client_sync_resume(NativeClient *o) {
        NativeClient *ch;
        List *pos;

        if (o->sync_deferred) {
                o->sync_deferred = false;
                (void) loop_source_set_enabled(o->io, LOOP_ON);
        }
        list_for_each(pos, &o->chans) {
                ch = list_entry(pos, NativeClient, chan_link);
                if (ch->sync_deferred) {
                        ch->sync_deferred = false;
                        (void) loop_source_set_enabled(ch->io, LOOP_ON);
                }
        }
}
