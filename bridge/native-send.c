/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * SEND of a native peer. The datagram holds the kdbus_cmd_send, the kdbus_msg at
 * cmd->msg_address (an offset into the datagram, not a pointer) and the bytes the
 * PAYLOAD_VEC items point at (offsets again; offset 0 with a size means that many zero
 * bytes, as a NULL address meant padding in kdbus). PAYLOAD_MEMFD parts are read from
 * sealed memfds. The parts, in item order, must form exactly one dbus1 message, which is
 * validated like any message from a legacy peer; its header must agree with the kdbus
 * fields (see native-conn.h). Then the bus stamps SENDER and routes it through the core.
 *
 * fds: the FDS item and PAYLOAD_MEMFD carry indices into the fds of the datagram; the
 * message keeps duplicates of the FDS ones (at most KDBUS_MSG_MAX_FDS).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "bridge/activator.h"
#include "bridge/bus.h"
#include "bridge/conn.h"
#include "bridge/msg.h"
#include "bridge/native-conn.h"
#include "bridge/reply.h"
#include "kdbus/kdbus.h"
#include "util/error.h"
#include "wire/message.h"
#include "wire/protocol.h"

/* The seals a PAYLOAD_MEMFD must carry: nobody can change it after the send. */
#define NATIVE_MEMFD_SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE)
#define NATIVE_MAX_PARTS 64u

typedef struct SendParts {
        const uint8_t *ptr[NATIVE_MAX_PARTS];   /* NULL: zero bytes */
        uint64_t len[NATIVE_MAX_PARTS];
        void *map[NATIVE_MAX_PARTS];            /* memfd mappings to unmap */
        size_t map_len[NATIVE_MAX_PARTS];
        unsigned n;
        uint64_t total;
        int msg_fds[KDBUS_MSG_MAX_FDS];         /* duplicates, owned until taken */
        unsigned n_msg_fds;
        const char *dst_name;
} SendParts;

static void send_parts_clear(SendParts *p) {
        unsigned i;

        for (i = 0; i < p->n; ++i)
                if (p->map[i])
                        (void) munmap(p->map[i], p->map_len[i]);
        for (i = 0; i < p->n_msg_fds; ++i)
                (void) close(p->msg_fds[i]);
        p->n = 0;
        p->n_msg_fds = 0;
}

static int parts_add(SendParts *p, const uint8_t *ptr, uint64_t len, void *map, size_t map_len) {
        if (p->n >= NATIVE_MAX_PARTS)
                return -E2BIG;
        if (len > KDBUS_WIRE_MAX_DATAGRAM * 16ull || p->total + len > WIRE_MAX_MESSAGE_SIZE)
                return -EMSGSIZE;
        p->ptr[p->n] = ptr;
        p->len[p->n] = len;
        p->map[p->n] = map;
        p->map_len[p->n] = map_len;
        ++p->n;
        p->total += len;
        return 0;
}

static int part_memfd(SendParts *p, const struct kdbus_memfd *mf, const int *fds,
                      unsigned n_fds) {
        int fd, seals;
        struct stat st;
        void *map;

        if (mf->fd < 0 || (unsigned)mf->fd >= n_fds || mf->__pad)
                return -EINVAL;
        fd = fds[mf->fd];
        seals = fcntl(fd, F_GET_SEALS);
        if (seals < 0)
                return -EMEDIUMTYPE;            /* not a memfd */
        if ((seals & NATIVE_MEMFD_SEALS) != NATIVE_MEMFD_SEALS)
                return -ETXTBSY;                /* kdbus: a memfd that is not sealed */
        if (fstat(fd, &st) < 0)
                return -errno;
        if (mf->size == 0 || mf->start > (uint64_t)st.st_size ||
            mf->size > (uint64_t)st.st_size - mf->start)
                return -EINVAL;
        map = mmap(NULL, mf->start + mf->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED)
                return -errno;
        return parts_add(p, (uint8_t *)map + mf->start, mf->size, map, mf->start + mf->size);
}

/* Walk the message's items into @p. Return: 0 or -errno for the peer. */
static int send_collect(SendParts *p, const uint8_t *buf, size_t size,
                        const struct kdbus_msg *km, const int *fds, unsigned n_fds) {
        const struct kdbus_item *item;
        unsigned i, n;
        int r;

        r = native_items_check(km->items, km->size - sizeof(*km));
        if (r)
                return r;
        for (item = km->items; (const uint8_t *)item < (const uint8_t *)km + km->size;
             item = KDBUS_ITEM_NEXT(item)) {
                uint64_t payload = item->size - KDBUS_ITEM_HEADER_SIZE;

                switch (item->type) {
                case KDBUS_ITEM_PAYLOAD_VEC:
                        if (payload != sizeof(struct kdbus_vec))
                                return -EINVAL;
                        if (item->vec.offset == 0) {
                                r = parts_add(p, NULL, item->vec.size, NULL, 0);
                        } else {
                                if (item->vec.offset > size || item->vec.size > size - item->vec.offset)
                                        return -EFAULT;
                                r = parts_add(p, buf + item->vec.offset, item->vec.size, NULL, 0);
                        }
                        if (r)
                                return r;
                        break;
                case KDBUS_ITEM_PAYLOAD_MEMFD:
                        if (payload != sizeof(struct kdbus_memfd))
                                return -EINVAL;
                        r = part_memfd(p, &item->memfd, fds, n_fds);
                        if (r)
                                return r;
                        break;
                case KDBUS_ITEM_FDS:
                        n = payload / sizeof(int);
                        if (payload % sizeof(int) || p->n_msg_fds)
                                return -EEXIST;
                        if (n > KDBUS_MSG_MAX_FDS)
                                return -EMFILE;
                        for (i = 0; i < n; ++i) {
                                if (item->fds[i] < 0 || (unsigned)item->fds[i] >= n_fds)
                                        return -EBADF;
                                p->msg_fds[i] = fcntl(fds[item->fds[i]], F_DUPFD_CLOEXEC, 3);
                                if (p->msg_fds[i] < 0)
                                        return -errno;
                                p->n_msg_fds = i + 1;
                        }
                        break;
                case KDBUS_ITEM_DST_NAME:
                        if (payload < 2 || item->str[payload - 1] != '\0' ||
                            strlen(item->str) != payload - 1 || p->dst_name)
                                return -EINVAL;
                        p->dst_name = item->str;
                        break;
                case KDBUS_ITEM_BLOOM_FILTER:
                        /* the bus computes the filter from the dbus1 header itself */
                        break;
                default:
                        return -EINVAL;
                }
        }
        return 0;
}

/* The header against the kdbus fields. Return: 0 or -errno. */
static int send_check_header(NativeConn *nc, const struct kdbus_msg *km, const WireHeader *h,
                             const SendParts *p) {
        bool expect = h->type == WIRE_MSG_METHOD_CALL && !(h->flags & WIRE_FLAG_NO_REPLY_EXPECTED);
        bool reply = h->type == WIRE_MSG_METHOD_RETURN || h->type == WIRE_MSG_ERROR;
        BridgeConn *owner;

        if (km->cookie != h->serial || !!(km->flags & KDBUS_MSG_EXPECT_REPLY) != expect ||
            !!(km->flags & KDBUS_MSG_SIGNAL) != (h->type == WIRE_MSG_SIGNAL))
                return -EINVAL;
        if (reply && km->cookie_reply != h->reply_serial)
                return -EINVAL;
        if (h->n_fds != p->n_msg_fds)
                return -EINVAL;

        if (km->dst_id == KDBUS_DST_ID_BROADCAST) {
                if (expect || p->n_msg_fds)
                        return -ENOTUNIQ;
                if (h->destination || h->type != WIRE_MSG_SIGNAL || p->dst_name)
                        return -EINVAL;
                return 0;
        }
        if (!h->destination)
                return -EINVAL;
        if (km->dst_id == KDBUS_DST_ID_NAME) {
                if (!p->dst_name)
                        return -EDESTADDRREQ;
                return strcmp(p->dst_name, h->destination) ? -EINVAL : 0;
        }
        if (p->dst_name && strcmp(p->dst_name, h->destination))
                return -EINVAL;
        if (h->destination[0] == ':') {
                char expected[sizeof(nc->conn->unique_name)];

                (void) snprintf(expected, sizeof(expected), ":1.%llu",
                                (unsigned long long)km->dst_id);
                return strcmp(expected, h->destination) ? -EINVAL : 0;
        }
        owner = bus_find_conn_by_name(nc->conn->bus, h->destination);
        if (owner && owner->id != km->dst_id)
                return -EREMCHG;
        return 0;
}

/*
 * The items of the kdbus_cmd_send: at most one CANCEL_FD (one int: an index into the
 * datagram's fds, as for FDS). kdbus wants a pollable file; regular files and directories
 * are always "readable" to poll(2) here, so they are refused as kdbus refuses files
 * without a poll method. Return: 0 (*ret_fd: the fd, borrowed, or -1) or -errno.
 */
static int send_cancel_fd(const struct kdbus_cmd_send *cmd, const int *fds, unsigned n_fds,
                          int *ret_fd) {
        const struct kdbus_item *item;
        struct stat st;
        int r;

        *ret_fd = -1;
        r = native_items_check(cmd->items, cmd->size - sizeof(*cmd));
        if (r)
                return r;
        for (item = cmd->items; (const uint8_t *)item < (const uint8_t *)cmd + cmd->size;
             item = KDBUS_ITEM_NEXT(item)) {
                if (item->type != KDBUS_ITEM_CANCEL_FD || *ret_fd >= 0 ||
                    item->size != KDBUS_ITEM_HEADER_SIZE + sizeof(int))
                        return -EINVAL;
                if (item->fds[0] < 0 || (unsigned)item->fds[0] >= n_fds)
                        return -EBADF;
                *ret_fd = fds[item->fds[0]];
                if (fstat(*ret_fd, &st) < 0)
                        return -errno;
                if (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode))
                        return -EINVAL;
        }
        return 0;
}

/**
 * native_conn_send() - SEND
 * @nc:         the sender
 * @buf:        the datagram's command part (kdbus_cmd_send first)
 * @size:       its size
 * @fds:        the datagram's fds (borrowed)
 * @n_fds:      their number
 *
 * Return: 0, 1 (SYNC_REPLY: the reply comes through sync_done), or a negative errno for
 * the peer: EINVAL (malformed, or header and kdbus fields disagree), EFAULT (an offset
 * outside the datagram), EBADMSG (the payload is not a valid dbus1 message), EOPNOTSUPP
 * (a payload type other than DBUS), ETXTBSY (a memfd not sealed), EMFILE (more than 16
 * fds), ENOTUNIQ (a broadcast expecting a reply or carrying fds), EDESTADDRREQ, EREMCHG,
 * ESRCH, ENXIO, EADDRNOTAVAIL (NO_AUTO_START to a name only an activator holds), ENOBUFS,
 * ECOMM, EBADSLT, EMLINK, ENOMEM; ETIMEDOUT (SYNC_REPLY whose timeout_ns passed), EBADF (a
 * CANCEL_FD index outside the datagram's fds).
 */
int native_conn_send(NativeConn *nc, void *buf, size_t size, const int *fds, unsigned n_fds) {
        struct kdbus_cmd_send *cmd = buf;
        const struct kdbus_msg *km;
        _cleanup_(bridge_msg_unrefp) BridgeMsg *m = NULL;
        SendParts p = { .n = 0 };
        uint8_t *joined = NULL;
        const uint8_t *payload;
        WireHeader hdr;
        size_t frame;
        uint64_t deadline_usec = 0;
        unsigned i;
        int cancel_fd = -1, cancel_dup = -1;
        int r;

        if (cmd->size < sizeof(*cmd) || cmd->size > size)
                return -EINVAL;
        if (cmd->flags & ~(uint64_t)KDBUS_SEND_SYNC_REPLY)
                return -EINVAL;
        r = send_cancel_fd(cmd, fds, n_fds, &cancel_fd);
        if (r)
                return r;
        memset(&cmd->reply, 0, sizeof(cmd->reply));
        cmd->return_flags = 0;
        if (cmd->msg_address % 8 || cmd->msg_address < cmd->size ||
            cmd->msg_address > size || size - cmd->msg_address < sizeof(*km))
                return -EFAULT;
        km = (const void *)((uint8_t *)buf + cmd->msg_address);
        if (km->size < sizeof(*km) || km->size > size - cmd->msg_address)
                return -EINVAL;
        if (km->payload_type != KDBUS_PAYLOAD_DBUS)
                return -EOPNOTSUPP;
        if (km->flags & ~(uint64_t)(KDBUS_MSG_EXPECT_REPLY | KDBUS_MSG_NO_AUTO_START |
                                    KDBUS_MSG_SIGNAL))
                return -EINVAL;
        if ((cmd->flags & KDBUS_SEND_SYNC_REPLY) && !(km->flags & KDBUS_MSG_EXPECT_REPLY))
                return -EINVAL;
        if (km->src_id != 0 && km->src_id != nc->conn->id)
                return -EINVAL;
        /* timeout_ns (a union with cookie_reply) is the call's absolute CLOCK_MONOTONIC
         * deadline; 0 (kdbus: EINVAL) leaves only the bus's reply timeout */
        if ((km->flags & KDBUS_MSG_EXPECT_REPLY) && km->timeout_ns)
                deadline_usec = km->timeout_ns / 1000 + (km->timeout_ns % 1000 != 0);

        r = send_collect(&p, buf, size, km, fds, n_fds);
        if (r)
                goto out;
        if (p.total < 16) {
                r = -EBADMSG;
                goto out;
        }
        if (p.n == 1 && p.ptr[0]) {
                payload = p.ptr[0];
        } else {
                uint64_t at = 0;

                joined = malloc(p.total);
                if (!joined) {
                        r = -ENOMEM;
                        goto out;
                }
                for (i = 0; i < p.n; ++i) {
                        if (p.ptr[i])
                                memcpy(joined + at, p.ptr[i], p.len[i]);
                        else
                                memset(joined + at, 0, p.len[i]);
                        at += p.len[i];
                }
                payload = joined;
        }
        if (wire_message_frame(payload, p.total, &frame) || frame != p.total ||
            wire_message_parse(payload, p.total, p.n_msg_fds, 0, &hdr)) {
                r = -EBADMSG;
                goto out;
        }
        r = send_check_header(nc, km, &hdr, &p);
        if (r)
                goto out;

        r = bridge_msg_new_stamped_cached(nc->conn->bus->msg_cache, payload, &hdr,
                                          nc->conn->unique_name, nc->conn->id, &m);
        if (r) {
                r = r == WIRE_E_TOO_LARGE ? -EMSGSIZE : r < 0 ? r : -EIO;
                goto out;
        }
        m->priority = km->priority;
        m->reply_deadline_usec = deadline_usec;
        if (nc->hello_flags & KDBUS_HELLO_CAPTURE_PER_MESSAGE) {
                r = native_meta_capture_msg(nc, m);     /* the sender as it is now */
                if (r)
                        goto out;
        }
        if (p.n_msg_fds) {
                int *mfds = malloc(p.n_msg_fds * sizeof(int));

                if (!mfds) {
                        r = -ENOMEM;
                        goto out;
                }
                memcpy(mfds, p.msg_fds, p.n_msg_fds * sizeof(int));
                bridge_msg_take_fds(m, mfds, p.n_msg_fds);
                p.n_msg_fds = 0;
        }

        /* kdbus: a name held by an activator alone is no destination for NO_AUTO_START */
        if (hdr.destination &&
            ((km->flags & KDBUS_MSG_NO_AUTO_START) || (hdr.flags & WIRE_FLAG_NO_AUTO_START)) &&
            hdr.destination[0] != ':' && !bus_find_conn_by_name(nc->conn->bus, hdr.destination) &&
            bus_find_activator(nc->conn->bus, hdr.destination)) {
                r = -EADDRNOTAVAIL;
                goto out;
        }
        /* kdbus: a reply passes only through the reply slot its call opened, whatever a
         * dbus1 policy would let through for legacy peers */
        if (hdr.type == WIRE_MSG_METHOD_RETURN || hdr.type == WIRE_MSG_ERROR) {
                BridgeConn *dst = bus_find_conn_by_name(nc->conn->bus, hdr.destination);

                if (dst && !bus_find_reply(nc->conn->bus, dst, nc->conn, hdr.reply_serial)) {
                        r = -EBADSLT;
                        goto out;
                }
        }
        /* kdbus: a synchronous call whose deadline passed fails before it is sent */
        if ((cmd->flags & KDBUS_SEND_SYNC_REPLY) && deadline_usec &&
            deadline_usec <= nc->conn->bus->now_usec) {
                r = -ETIMEDOUT;
                goto out;
        }
        /* the bus keeps the cancel fd while the call waits: take it before sending */
        if ((cmd->flags & KDBUS_SEND_SYNC_REPLY) && cancel_fd >= 0) {
                cancel_dup = fcntl(cancel_fd, F_DUPFD_CLOEXEC, 3);
                if (cancel_dup < 0) {
                        r = -errno;
                        goto out;
                }
        }
        r = bridge_conn_send(nc->conn, m);
        /* the core answers a legacy peer on a custom endpoint as if a hidden name did not
         * exist; kdbus fails SEND to an existing one with EPERM (no TALK) */
        if ((r == BRIDGE_E_NAME_UNKNOWN || r == BRIDGE_E_PEER_UNKNOWN) && nc->conn->endpoint &&
            bus_find_conn_by_name(nc->conn->bus, hdr.destination))
                r = BRIDGE_E_ACCESS_DENIED;
        r = native_errno_from_bridge(r);
        if (r == 0 && (cmd->flags & KDBUS_SEND_SYNC_REPLY)) {
                nc->sync_pending = true;
                nc->sync_cookie = km->cookie;
                nc->sync_dst_id = km->dst_id;
                nc->sync_cancel_fd = cancel_dup;
                cancel_dup = -1;
                r = 1;
        }
out:
        fd_close(cancel_dup);
        free(joined);
        send_parts_clear(&p);
        return r;
}
