/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libkdbus: kdbus commands over kdbusd's SOCK_SEQPACKET native socket. Each call sends
 * one request datagram and reads the one reply; the socket is blocking, so a SEND with
 * SYNC_REPLY blocks until the answer, as the ioctl did.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include "libkdbus/libkdbus.h"
#include "util/macro.h"
#include "util/siphash24.h"

#define LIBKDBUS_MAX_FDS 32u

static void conn_drop_fds(KdbusConn *c) {
        unsigned i;

        for (i = 0; i < c->n_recv_fds; ++i)
                (void) close(c->recv_fds[i]);
        c->n_recv_fds = 0;
}

/**
 * kdbus_conn_open() - connect to a native socket
 * @path:       the path kdbusd --native=unix:path= listens on
 * @ret:        the connection
 *
 * Return: 0, -ENOMEM, -ENAMETOOLONG, or connect()'s errno.
 */
int kdbus_conn_open(const char *path, KdbusConn **ret) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        KdbusConn *c;
        int r;

        if (strlen(path) >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        strcpy(sa.sun_path, path);
        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->wake_fd = -1;
        c->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
                r = -errno;
                kdbus_conn_close(c);
                return r;
        }
        *ret = c;
        return 0;
}

/**
 * kdbus_conn_close() - close everything
 * @c:          the connection or NULL
 *
 * Return: NULL.
 */
KdbusConn *kdbus_conn_close(KdbusConn *c) {
        if (!c)
                return NULL;
        conn_drop_fds(c);
        if (c->pool)
                (void) munmap((void *)c->pool, c->pool_size);
        c->fd = fd_close(c->fd);
        c->wake_fd = fd_close(c->wake_fd);
        free(c);
        return NULL;
}

/* Send @iov as one datagram with @fds. */
static int conn_sendv(KdbusConn *c, struct iovec *iov, unsigned n_iov, const int *fds,
                      unsigned n_fds) {
        union {
                struct cmsghdr cmsg;
                uint8_t buf[CMSG_SPACE(sizeof(int) * LIBKDBUS_MAX_FDS)];
        } control;
        struct msghdr mh = { .msg_iov = iov, .msg_iovlen = n_iov };

        if (n_fds > LIBKDBUS_MAX_FDS)
                return -EMFILE;
        if (n_fds) {
                memset(&control, 0, sizeof(control));
                mh.msg_control = &control;
                mh.msg_controllen = CMSG_SPACE(sizeof(int) * n_fds);
                control.cmsg.cmsg_level = SOL_SOCKET;
                control.cmsg.cmsg_type = SCM_RIGHTS;
                control.cmsg.cmsg_len = CMSG_LEN(sizeof(int) * n_fds);
                memcpy(CMSG_DATA(&control.cmsg), fds, sizeof(int) * n_fds);
        }
        if (sendmsg(c->fd, &mh, MSG_NOSIGNAL) < 0)
                return -errno;
        return 0;
}

/* Read one reply: its error, the struct into @out (at most @out_size), fds to recv_fds;
 * @batch: the reply of a KDBUS_WIRE_BATCH, whose kdbus_wire_batch_reply goes there. */
static int conn_read_reply(KdbusConn *c, void *out, size_t out_size,
                           struct kdbus_wire_batch_reply *batch) {
        union {
                struct cmsghdr cmsg;
                uint8_t buf[CMSG_SPACE(sizeof(int) * LIBKDBUS_MAX_FDS)];
        } control;
        struct kdbus_wire_reply hdr;
        struct kdbus_wire_batch_reply pre = { 0 };
        uint8_t body[512] __attribute__((aligned(8)));
        struct iovec iov[3] = { { &hdr, sizeof(hdr) } };
        struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 1, .msg_control = &control,
                             .msg_controllen = sizeof(control) };
        size_t skip = batch ? sizeof(pre) : 0;
        struct cmsghdr *cm;
        ssize_t n;

        if (batch) {
                *batch = pre;
                iov[mh.msg_iovlen++] = (struct iovec){ &pre, sizeof(pre) };
        }
        iov[mh.msg_iovlen++] = (struct iovec){ body, sizeof(body) };
        conn_drop_fds(c);
        do
                n = recvmsg(c->fd, &mh, MSG_CMSG_CLOEXEC);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;
        if (n == 0)
                return -ECONNRESET;
        for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
                if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
                        unsigned k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int), i;

                        for (i = 0; i < k; ++i) {
                                int fd;

                                memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
                                if (c->n_recv_fds < ELEMENTSOF(c->recv_fds))
                                        c->recv_fds[c->n_recv_fds++] = fd;
                                else
                                        (void) close(fd);
                        }
                }
        if ((size_t)n < sizeof(hdr) + skip || hdr.size != (size_t)n - sizeof(hdr) ||
            (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)))
                return -EBADMSG;
        if (batch)
                *batch = pre;
        if (out && hdr.size > skip)
                memcpy(out, body, MIN(out_size, (size_t)hdr.size - skip));
        return (int)hdr.error;
}

/*
 * Send the request @iov (a kdbus_wire_request and its struct, @size bytes in all) and read
 * its reply into @out. On a batching connection, or with @batch_flags, it goes as a
 * KDBUS_WIRE_BATCH with the held-back FREEs before it (those done, and one that failed,
 * are forgotten).
 */
static int conn_transact_flags(KdbusConn *c, struct iovec *iov, unsigned n_iov, size_t size,
                               const int *fds, unsigned n_fds, void *out, size_t out_size,
                               uint64_t batch_flags) {
        struct kdbus_wire_request outer = { .command = KDBUS_WIRE_BATCH };
        struct kdbus_wire_batch b = { .n_free = c->n_free_later, .flags = batch_flags };
        struct kdbus_wire_batch_reply res;
        struct iovec v[8];
        uint64_t done;
        unsigned i;
        int r;

        if (!c->batch && !batch_flags) {
                r = conn_sendv(c, iov, n_iov, fds, n_fds);
                return r ? r : conn_read_reply(c, out, out_size, NULL);
        }
        if (n_iov > ELEMENTSOF(v) - 3)
                return -EINVAL;
        outer.size = sizeof(b) + b.n_free * sizeof(uint64_t) + size;
        v[0] = (struct iovec){ &outer, sizeof(outer) };
        v[1] = (struct iovec){ &b, sizeof(b) };
        v[2] = (struct iovec){ c->free_later, b.n_free * sizeof(uint64_t) };
        for (i = 0; i < n_iov; ++i)
                v[3 + i] = iov[i];
        r = conn_sendv(c, v, 3 + n_iov, fds, n_fds);
        if (r)
                return r;
        /* without KDBUS_HELLO_WIRE_BATCH the bus answers a batch as an unknown command
         * (ENOTTY, no batch part) */
        if (!c->batch)
                return conn_read_reply(c, NULL, 0, NULL);
        r = conn_read_reply(c, out, out_size, &res);
        done = res.n_freed + (res.free_error ? 1 : 0);
        if (done > c->n_free_later)
                return -EBADMSG;
        memmove(c->free_later, c->free_later + done,
                (c->n_free_later - done) * sizeof(uint64_t));
        c->n_free_later -= (unsigned)done;
        c->wire_return_flags = res.return_flags;
        return r;
}

/**
 * kdbus_conn_command() - one raw command
 * @c:          the connection
 * @command:    KDBUS_CMD_* (not SEND: kdbus_conn_send())
 * @cmd:        the command struct; cmd->size bytes are sent; the reply is written back
 * @cmd_size:   room at @cmd for the reply
 * @fds:        fds to pass
 * @n_fds:      their number
 *
 * Return: 0 or a negative errno.
 */
int kdbus_conn_command(KdbusConn *c, uint64_t command, void *cmd, size_t cmd_size,
                       const int *fds, unsigned n_fds) {
        uint64_t size;
        struct kdbus_wire_request req;
        struct iovec iov[2];
        int r;

        memcpy(&size, cmd, sizeof(size));
        if (size > cmd_size)
                return -EINVAL;
        req.command = command;
        req.size = size;
        iov[0] = (struct iovec){ &req, sizeof(req) };
        iov[1] = (struct iovec){ cmd, size };
        r = conn_sendv(c, iov, 2, fds, n_fds);
        if (r)
                return r;
        return conn_read_reply(c, cmd, cmd_size, NULL);
}

/**
 * kdbus_bus_make() - make a bus instance through a handle without HELLO
 * @c:          the handle (kdbus_conn_open())
 * @name:       "<uid>-<name>", the caller's uid
 * @flags:      KDBUS_MAKE_ACCESS_GROUP / _WORLD
 *
 * Return: 0 or the negative errno of BUS_MAKE (EINVAL, ENAMETOOLONG, EEXIST, EMFILE, EBADFD,
 * ...).
 */
int kdbus_bus_make(KdbusConn *c, const char *name, uint64_t flags) {
        return kdbus_bus_make_bloom(c, name, flags, 64, 8);
}

/**
 * kdbus_bus_make_bloom() - kdbus_bus_make() with the instance's bloom parameters
 * @c:          the handle (kdbus_conn_open())
 * @name:       "<uid>-<name>", the caller's uid
 * @flags:      KDBUS_MAKE_ACCESS_GROUP / _WORLD
 * @bloom_size: bytes of every bloom filter on the bus (kdbus: 8..4096, a multiple of 8)
 * @n_hash:     hash functions per entry (>= 1)
 *
 * Return: 0 or the negative errno of BUS_MAKE (EINVAL for parameters out of bounds).
 */
int kdbus_bus_make_bloom(KdbusConn *c, const char *name, uint64_t flags, uint64_t bloom_size,
                         uint64_t n_hash) {
        uint8_t buf[256] __attribute__((aligned(8))) = { 0 };
        struct kdbus_cmd *cmd = (void *)buf;
        struct kdbus_item *item = cmd->items;
        size_t len = strlen(name) + 1;

        if (KDBUS_ITEM_SIZE(len) + KDBUS_ITEM_SIZE(sizeof(struct kdbus_bloom_parameter)) +
            KDBUS_ITEM_SIZE(sizeof(uint64_t)) + sizeof(*cmd) > sizeof(buf))
                return -ENAMETOOLONG;
        cmd->flags = flags;
        item->size = KDBUS_ITEM_HEADER_SIZE + len;
        item->type = KDBUS_ITEM_MAKE_NAME;
        memcpy(item->str, name, len);
        item = KDBUS_ITEM_NEXT(item);
        item->size = KDBUS_ITEM_HEADER_SIZE + sizeof(struct kdbus_bloom_parameter);
        item->type = KDBUS_ITEM_BLOOM_PARAMETER;
        item->bloom_parameter.size = bloom_size;
        item->bloom_parameter.n_hash = n_hash;
        item = KDBUS_ITEM_NEXT(item);
        /* what the maker shows of itself in BUS_CREATOR_INFO: its ids and pid */
        item->size = KDBUS_ITEM_HEADER_SIZE + sizeof(uint64_t);
        item->type = KDBUS_ITEM_ATTACH_FLAGS_SEND;
        item->data64[0] = KDBUS_ATTACH_CREDS | KDBUS_ATTACH_PIDS;
        item = KDBUS_ITEM_NEXT(item);
        cmd->size = (uint64_t)((uint8_t *)item - buf);
        return kdbus_conn_command(c, KDBUS_CMD_BUS_MAKE, cmd, cmd->size, NULL, 0);
}

/**
 * kdbus_conn_hello() - HELLO, map the pool, read the bloom parameters
 * @c:          an opened connection
 * @flags:      KDBUS_HELLO_*
 * @pool_size:  a multiple of the page size
 *
 * Return: 0 or a negative errno.
 */
int kdbus_conn_hello(KdbusConn *c, uint64_t flags, uint64_t pool_size) {
        return kdbus_conn_hello_name(c, flags, pool_size, NULL);
}

/**
 * kdbus_conn_hello_name() - HELLO with a NAME item (activators, policy holders)
 * @c:          an opened connection
 * @flags:      KDBUS_HELLO_*
 * @pool_size:  a multiple of the page size
 * @name:       the NAME item's name, or NULL for none (kdbus_conn_hello())
 *
 * Return: 0 or a negative errno.
 */
int kdbus_conn_hello_name(KdbusConn *c, uint64_t flags, uint64_t pool_size, const char *name) {
        union {
                struct kdbus_item item;
                uint8_t buf[KDBUS_ITEM_HEADER_SIZE + 264];
        } it;
        size_t len;

        if (!name)
                return kdbus_conn_hello_items(c, flags, pool_size, NULL, 0);
        len = strlen(name) + 1;
        if (len > 256)
                return -EINVAL;
        memset(&it, 0, sizeof(it));
        it.item.size = KDBUS_ITEM_HEADER_SIZE + len;
        it.item.type = KDBUS_ITEM_NAME;
        memcpy(it.item.str, name, len);
        return kdbus_conn_hello_items(c, flags, pool_size, &it.item,
                                      KDBUS_ALIGN8(it.item.size));
}

/**
 * kdbus_conn_hello_items() - HELLO with items
 * @c:          an opened connection
 * @flags:      KDBUS_HELLO_*
 * @pool_size:  a multiple of the page size
 * @items:      8-aligned kdbus_items (NAME, CONN_DESCRIPTION, POLICY_ACCESS, and for the
 *              privileged CREDS / PIDS / SECLABEL to stand in for another), or NULL
 * @items_size: their bytes, at most LIBKDBUS_HELLO_ITEMS_MAX
 *
 * Return: 0 or a negative errno.
 */
int kdbus_conn_hello_items(KdbusConn *c, uint64_t flags, uint64_t pool_size,
                           const struct kdbus_item *items, size_t items_size) {
        union {
                struct kdbus_cmd_hello cmd;
                uint8_t buf[sizeof(struct kdbus_cmd_hello) + LIBKDBUS_HELLO_ITEMS_MAX];
        } u = { .cmd = {
                .size = sizeof(struct kdbus_cmd_hello), .flags = flags, .pool_size = pool_size,
                /* consent to what the driver gives anyone about a legacy peer anyway; exe,
                 * cmdline, cgroup, caps ... only if the program asks (kdbus_conn_command) */
                .attach_flags_send = KDBUS_ATTACH_TIMESTAMP | KDBUS_ATTACH_CREDS |
                                     KDBUS_ATTACH_PIDS | KDBUS_ATTACH_AUXGROUPS |
                                     KDBUS_ATTACH_SECLABEL,
        } };
        struct kdbus_cmd_hello hello;
        const struct kdbus_item *item;
        void *map;
        int r;

        if (items_size > LIBKDBUS_HELLO_ITEMS_MAX || items_size % 8)
                return -EINVAL;
        if (items_size)
                memcpy(u.cmd.items, items, items_size);
        u.cmd.size += items_size;
        r = kdbus_conn_command(c, KDBUS_CMD_HELLO, &u, u.cmd.size, NULL, 0);
        hello = u.cmd;
        if (r)
                return r;
        if (c->n_recv_fds != 2)
                return -EBADMSG;
        map = mmap(NULL, pool_size, PROT_READ, MAP_SHARED, c->recv_fds[0], 0);
        if (map == MAP_FAILED)
                return -errno;
        (void) close(c->recv_fds[0]);
        c->wake_fd = c->recv_fds[1];
        c->n_recv_fds = 0;
        c->pool = map;
        c->pool_size = pool_size;
        c->id = hello.id;
        c->batch = !!(flags & KDBUS_HELLO_WIRE_BATCH);
        c->accept_fds = !!(flags & KDBUS_HELLO_ACCEPT_FD);
        memcpy(c->id128, hello.id128, sizeof(c->id128));
        if (hello.offset >= pool_size || hello.items_size > pool_size - hello.offset)
                return -EBADMSG;
        for (item = kdbus_item_first(c->pool + hello.offset, 0, hello.items_size); item;
             item = kdbus_item_next(c->pool + hello.offset, hello.items_size, item))
                if (item->type == KDBUS_ITEM_BLOOM_PARAMETER) {
                        c->bloom_size = item->bloom_parameter.size;
                        c->bloom_n_hash = item->bloom_parameter.n_hash;
                }
        /* a policy holder may not FREE (kdbus): the slice stays in its pool */
        if (flags & KDBUS_HELLO_POLICY_HOLDER)
                return 0;
        return kdbus_conn_free(c, hello.offset);
}

/* Read a dbus1 uint32 at @p in the message's endianness. */
static uint32_t dbus1_u32(const uint8_t *p, bool big) {
        return big ? (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3] :
                     (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

/**
 * kdbus_send_from_dbus1() - the kdbus fields a dbus1 message implies
 * @s:          msg_flags, cookie, cookie_reply are set; timeout_ns for a call, if 0
 * @data:       the message
 * @size:       its size
 *
 * Return: 0, -EBADMSG, or the errno of clock_gettime().
 */
int kdbus_send_from_dbus1(KdbusSend *s, const void *data, size_t size) {
        const uint8_t *p = data;
        size_t pos, end;
        bool big;
        uint8_t type, flags;

        if (size < 16 || (p[0] != 'l' && p[0] != 'B'))
                return -EBADMSG;
        big = p[0] == 'B';
        type = p[1];
        flags = p[2];
        s->cookie = dbus1_u32(p + 8, big);
        s->cookie_reply = 0;
        s->msg_flags = 0;
        if (type == 1 && !(flags & 0x1)) {
                s->msg_flags |= KDBUS_MSG_EXPECT_REPLY;
                if (!s->timeout_ns) {
                        struct timespec now;

                        if (clock_gettime(CLOCK_MONOTONIC, &now) < 0)
                                return -errno;
                        s->timeout_ns = (uint64_t)now.tv_sec * 1000000000ull +
                                        (uint64_t)now.tv_nsec + LIBKDBUS_CALL_TIMEOUT_NS;
                }
        }
        if (flags & 0x2)
                s->msg_flags |= KDBUS_MSG_NO_AUTO_START;
        if (type == 4)
                s->msg_flags |= KDBUS_MSG_SIGNAL;
        end = 16 + (size_t)dbus1_u32(p + 12, big);
        if (end > size)
                return -EBADMSG;
        /* header fields: (code, signature, value), each 8-aligned; we need REPLY_SERIAL */
        for (pos = 16; pos < end;) {
                uint8_t code, siglen;
                char sig;

                pos = ALIGN8(pos);
                if (pos + 4 > end)
                        break;
                code = p[pos];
                siglen = p[pos + 1];
                if (siglen != 1)
                        return -EBADMSG;
                sig = (char)p[pos + 2];
                pos += 4;
                switch (sig) {
                case 'u':
                        pos = ALIGN_TO(pos, 4);
                        if (pos + 4 > end)
                                return -EBADMSG;
                        if (code == 5)
                                s->cookie_reply = dbus1_u32(p + pos, big);
                        pos += 4;
                        break;
                case 's':
                case 'o':
                        pos = ALIGN_TO(pos, 4);
                        if (pos + 4 > end)
                                return -EBADMSG;
                        pos += 4 + (size_t)dbus1_u32(p + pos, big) + 1;
                        break;
                case 'g':
                        if (pos + 1 > end)
                                return -EBADMSG;
                        pos += 1 + (size_t)p[pos] + 1;
                        break;
                default:
                        return -EBADMSG;
                }
        }
        return 0;
}

/* SEND @s as a request (with @batch_flags: a batch); the reply struct to @out. */
static int conn_send(KdbusConn *c, const KdbusSend *s, const void *data, size_t size,
                     uint64_t batch_flags, void *out, size_t out_size) {
        size_t msg_size = sizeof(struct kdbus_msg), cmd_size, total;
        int fds[LIBKDBUS_MAX_FDS];
        struct kdbus_wire_request *req;
        struct kdbus_cmd_send *cmd;
        struct kdbus_msg *km;
        struct kdbus_item *item;
        unsigned n_fds = 0, i;
        bool memfd = s->memfd >= 0;
        uint64_t bloom_size = s->bloom_size ? s->bloom_size : c->bloom_size;
        uint8_t *buf;
        int r;

        if (s->n_fds > KDBUS_MSG_MAX_FDS)
                return -EMFILE;
        /* kdbus refuses a PAYLOAD_VEC of size 0 (EINVAL): none when nothing is inline */
        if (size)
                msg_size += KDBUS_ITEM_SIZE(sizeof(struct kdbus_vec));
        if (memfd)
                msg_size += KDBUS_ITEM_SIZE(sizeof(struct kdbus_memfd));
        if (s->dst_name)
                msg_size += KDBUS_ITEM_SIZE(strlen(s->dst_name) + 1);
        if (s->n_fds)
                msg_size += KDBUS_ITEM_SIZE(s->n_fds * sizeof(int));
        if (s->bloom_filter)
                msg_size += KDBUS_ITEM_SIZE(sizeof(struct kdbus_bloom_filter) + bloom_size);
        cmd_size = sizeof(*cmd) + (s->cancel_fd ? KDBUS_ITEM_SIZE(sizeof(int)) : 0);
        total = sizeof(*req) + cmd_size + msg_size + ALIGN8(size);
        buf = calloc(1, total);
        if (!buf)
                return -ENOMEM;
        req = (void *)buf;
        req->command = KDBUS_CMD_SEND;
        req->size = total - sizeof(*req);
        cmd = (void *)(buf + sizeof(*req));
        cmd->size = cmd_size;
        cmd->flags = s->send_flags;
        cmd->msg_address = cmd_size;                    /* offsets count from the struct */
        km = (void *)((uint8_t *)cmd + cmd_size);
        km->size = msg_size;
        km->flags = s->msg_flags;
        km->priority = s->priority;
        km->dst_id = s->dst_id;
        km->payload_type = KDBUS_PAYLOAD_DBUS;
        km->cookie = s->cookie;
        /* one field in kdbus (a union): the deadline of a call expecting a reply, else
         * the cookie answered; kdbus refuses a broadcast with either (ENOTUNIQ) */
        km->cookie_reply = s->cookie_reply ? s->cookie_reply :
                           (s->msg_flags & KDBUS_MSG_EXPECT_REPLY) ? s->timeout_ns : 0;
        item = km->items;
        for (i = 0; i < s->n_fds; ++i)
                fds[n_fds++] = s->fds[i];
        /* the header (and what else @data holds) inline, then the memfd's range */
        if (size) {
                item->size = KDBUS_ITEM_HEADER_SIZE + sizeof(struct kdbus_vec);
                item->type = KDBUS_ITEM_PAYLOAD_VEC;
                item->vec.offset = cmd_size + msg_size;
                item->vec.size = size;
                memcpy((uint8_t *)cmd + item->vec.offset, data, size);
                item = KDBUS_ITEM_NEXT(item);
        }
        if (memfd) {
                item->size = KDBUS_ITEM_HEADER_SIZE + sizeof(struct kdbus_memfd);
                item->type = KDBUS_ITEM_PAYLOAD_MEMFD;
                item->memfd.fd = (int)n_fds;
                item->memfd.start = s->memfd_start;
                item->memfd.size = s->memfd_size;
                fds[n_fds++] = s->memfd;
                item = KDBUS_ITEM_NEXT(item);
        }
        if (s->dst_name) {
                item->size = KDBUS_ITEM_HEADER_SIZE + strlen(s->dst_name) + 1;
                item->type = KDBUS_ITEM_DST_NAME;
                strcpy(item->str, s->dst_name);
                item = KDBUS_ITEM_NEXT(item);
        }
        if (s->bloom_filter) {
                item->size = KDBUS_ITEM_HEADER_SIZE + sizeof(struct kdbus_bloom_filter) +
                             bloom_size;
                item->type = KDBUS_ITEM_BLOOM_FILTER;
                item->bloom_filter.generation = s->bloom_generation;
                memcpy(item->bloom_filter.data, s->bloom_filter, bloom_size);
                item = KDBUS_ITEM_NEXT(item);
        }
        if (s->n_fds) {
                item->size = KDBUS_ITEM_HEADER_SIZE + s->n_fds * sizeof(int);
                item->type = KDBUS_ITEM_FDS;
                for (i = 0; i < s->n_fds; ++i)
                        item->fds[i] = (int)i;
        }
        if (s->cancel_fd) {
                item = cmd->items;
                item->size = KDBUS_ITEM_HEADER_SIZE + sizeof(int);
                item->type = KDBUS_ITEM_CANCEL_FD;
                item->fds[0] = (int)n_fds;      /* an index into the datagram's fds */
                fds[n_fds++] = *s->cancel_fd;
        }
        r = conn_transact_flags(c, &(struct iovec){ buf, total }, 1, total, fds, n_fds, out,
                                out_size, batch_flags);
        free(buf);
        return r;
}

/**
 * kdbus_conn_send() - SEND a dbus1 message
 * @c:          the connection
 * @s:          destination, flags, cookies, fds
 * @data:       the dbus1 message (unused when @s->memfd >= 0)
 * @size:       its size
 * @ret_reply:  with SYNC_REPLY: where the reply is in the pool
 *
 * Return: 0 or a negative errno.
 */
int kdbus_conn_send(KdbusConn *c, const KdbusSend *s, const void *data, size_t size,
                    struct kdbus_msg_info *ret_reply) {
        struct kdbus_cmd_send back = { 0 };
        int r;

        r = conn_send(c, s, data, size, 0, &back, sizeof(back));
        if (r == 0 && ret_reply)
                *ret_reply = back.reply;
        return r;
}

/**
 * kdbus_conn_send_recv_held() - SEND, then a held RECV, in one datagram
 * @c:          the connection (HELLO with KDBUS_HELLO_WIRE_BATCH; ENOTTY otherwise)
 * @s:          as kdbus_conn_send(), without SYNC_REPLY (EINVAL)
 * @data:       as kdbus_conn_send()
 * @size:       as kdbus_conn_send()
 * @ret_msg:    the message the RECV got, in the pool
 * @ret_sent:   set in any case (may be NULL): whether the SEND was done, i.e. whether a
 *              failure is the RECV's (true) or the SEND's (false)
 *
 * KDBUS_WIRE_BATCH_THEN_RECV | KDBUS_WIRE_BATCH_HOLD_RECV (include/kdbus/kdbus.h): a
 * service's answer to one call and its wait for the next. The held-back FREEs ride with
 * it. Blocks as kdbus_conn_recv_held() once the SEND succeeded.
 *
 * Return: 0, or a negative errno: the SEND's, or the RECV's as kdbus_conn_recv_held().
 */
int kdbus_conn_send_recv_held(KdbusConn *c, const KdbusSend *s, const void *data, size_t size,
                              const struct kdbus_msg **ret_msg, bool *ret_sent) {
        union {
                struct kdbus_cmd_send send;
                struct kdbus_cmd_recv recv;
        } back;
        int r;

        memset(&back, 0, sizeof(back));
        if (ret_sent)
                *ret_sent = false;
        if (s->send_flags & KDBUS_SEND_SYNC_REPLY)
                return -EINVAL;
        c->wire_return_flags = 0;       /* a reply that never came marks nothing */
        r = conn_send(c, s, data, size, KDBUS_WIRE_BATCH_THEN_RECV | KDBUS_WIRE_BATCH_HOLD_RECV,
                      &back, sizeof(back));
        if (!c->batch || !(c->wire_return_flags & KDBUS_WIRE_RETURN_RECV))
                return r ? r : -EBADMSG;        /* the SEND's failure (0: not ours) */
        if (ret_sent)
                *ret_sent = true;
        if (r)
                return r;
        if (back.recv.msg.offset >= c->pool_size)
                return -EBADMSG;
        if (ret_msg)
                *ret_msg = (const void *)(c->pool + back.recv.msg.offset);
        return 0;
}

/* RECV, held by the bus with @batch_flags KDBUS_WIRE_BATCH_HOLD_RECV (then @cancel_fd, or
 * -1, goes with it); the message's offset checked against the pool. */
static int conn_recv(KdbusConn *c, uint64_t flags, int64_t priority, int cancel_fd,
                     uint64_t batch_flags, const struct kdbus_msg **ret_msg,
                     uint64_t *ret_dropped) {
        struct kdbus_cmd_recv cmd = { .size = sizeof(cmd), .flags = flags, .priority = priority };
        struct kdbus_wire_request req = { .command = KDBUS_CMD_RECV, .size = sizeof(cmd) };
        struct iovec iov[2] = { { &req, sizeof(req) }, { &cmd, sizeof(cmd) } };
        int r;

        r = conn_transact_flags(c, iov, 2, sizeof(req) + sizeof(cmd), &cancel_fd,
                                cancel_fd >= 0 ? 1 : 0, &cmd, sizeof(cmd), batch_flags);
        if (ret_dropped)
                *ret_dropped = cmd.dropped_msgs;
        if (r)
                return r;
        if (ret_msg)
                *ret_msg = NULL;
        if (flags & KDBUS_RECV_DROP)
                return 0;       /* nothing handed out: the offset is the pool's size */
        if (cmd.msg.offset >= c->pool_size)
                return -EBADMSG;
        if (ret_msg)
                *ret_msg = (const void *)(c->pool + cmd.msg.offset);
        return 0;
}

/**
 * kdbus_conn_recv() - RECV
 * @c:          the connection
 * @flags:      KDBUS_RECV_*
 * @priority:   with KDBUS_RECV_USE_PRIORITY
 * @ret_msg:    the message in the pool (not with DROP)
 * @ret_dropped: broadcasts lost since the last RECV (may be NULL)
 *
 * Return: 0, -EAGAIN (nothing waits, or with USE_PRIORITY nothing at or above @priority:
 * a value at most @priority), or another negative errno.
 */
int kdbus_conn_recv(KdbusConn *c, uint64_t flags, int64_t priority,
                    const struct kdbus_msg **ret_msg, uint64_t *ret_dropped) {
        return conn_recv(c, flags, priority, -1, 0, ret_msg, ret_dropped);
}

/**
 * kdbus_conn_recv_held() - RECV that waits for a message (KDBUS_WIRE_BATCH_HOLD_RECV)
 * @c:          the connection (HELLO with KDBUS_HELLO_WIRE_BATCH; ENOTTY otherwise)
 * @flags:      KDBUS_RECV_*
 * @priority:   with KDBUS_RECV_USE_PRIORITY
 * @cancel_fd:  readable: the wait ends with ECANCELED (as SYNC_REPLY's CANCEL_FD); -1: none
 * @ret_msg:    the message in the pool (not with DROP)
 * @ret_dropped: broadcasts lost since the last RECV (may be NULL)
 *
 * The held-back FREEs ride with it. Blocks until the bus answers: a message, ECANCELED,
 * EAGAIN with a dropped count, ECONNRESET; or EAGAIN when another thread sent a command on
 * the connection meanwhile (the bus answers the held RECV first). KdbusConn's
 * wire_return_flags say whether more messages wait (no KDBUS_WIRE_RETURN_RECV_EMPTY).
 *
 * Return: 0, or a negative errno.
 */
int kdbus_conn_recv_held(KdbusConn *c, uint64_t flags, int64_t priority, int cancel_fd,
                         const struct kdbus_msg **ret_msg, uint64_t *ret_dropped) {
        return conn_recv(c, flags, priority, cancel_fd, KDBUS_WIRE_BATCH_HOLD_RECV, ret_msg,
                         ret_dropped);
}

int kdbus_conn_free(KdbusConn *c, uint64_t offset) {
        struct kdbus_cmd_free cmd = { .size = sizeof(cmd), .offset = offset };

        return kdbus_conn_command(c, KDBUS_CMD_FREE, &cmd, sizeof(cmd), NULL, 0);
}

int kdbus_conn_free_later(KdbusConn *c, uint64_t offset) {
        int r;

        if (!c->batch)
                return kdbus_conn_free(c, offset);
        if (c->n_free_later == ELEMENTSOF(c->free_later)) {
                r = kdbus_conn_free_flush(c);
                if (r)
                        return r;
        }
        c->free_later[c->n_free_later++] = offset;
        return 0;
}

int kdbus_conn_free_flush(KdbusConn *c) {
        while (c->n_free_later) {
                uint64_t offset = c->free_later[0];
                int r;

                memmove(c->free_later, c->free_later + 1, --c->n_free_later * sizeof(uint64_t));
                r = kdbus_conn_free(c, offset);
                if (r)
                        return r;
        }
        return 0;
}

int kdbus_conn_wait(KdbusConn *c, int timeout_ms) {
        struct pollfd p = { .fd = c->wake_fd, .events = POLLIN };
        uint64_t v;
        int r;

        r = kdbus_conn_free_flush(c);
        if (r)
                return r;
        r = poll(&p, 1, timeout_ms);
        if (r < 0)
                return -errno;
        if (r == 0)
                return -ETIMEDOUT;
        (void) read(c->wake_fd, &v, sizeof(v));
        return 0;
}

static int name_cmd(KdbusConn *c, uint64_t command, const char *name, uint64_t flags,
                    uint64_t *ret_return_flags) {
        uint8_t buf[sizeof(struct kdbus_cmd) + KDBUS_ITEM_HEADER_SIZE + 256]
                __attribute__((aligned(8))) = { 0 };
        struct kdbus_cmd *cmd = (void *)buf;
        size_t len = strlen(name) + 1;
        int r;

        if (len > 256)
                return -EINVAL;
        cmd->flags = flags;
        cmd->items[0].size = KDBUS_ITEM_HEADER_SIZE + len;
        cmd->items[0].type = KDBUS_ITEM_NAME;
        memcpy(cmd->items[0].str, name, len);
        cmd->size = sizeof(*cmd) + KDBUS_ALIGN8(cmd->items[0].size);
        r = kdbus_conn_command(c, command, cmd, sizeof(buf), NULL, 0);
        if (ret_return_flags)
                *ret_return_flags = cmd->return_flags;
        return r;
}

int kdbus_conn_name_acquire(KdbusConn *c, const char *name, uint64_t flags,
                            uint64_t *ret_return_flags) {
        return name_cmd(c, KDBUS_CMD_NAME_ACQUIRE, name, flags, ret_return_flags);
}

int kdbus_conn_name_release(KdbusConn *c, const char *name) {
        return name_cmd(c, KDBUS_CMD_NAME_RELEASE, name, 0, NULL);
}

int kdbus_conn_byebye(KdbusConn *c) {
        struct kdbus_cmd cmd = { .size = sizeof(cmd) };

        return kdbus_conn_command(c, KDBUS_CMD_BYEBYE, &cmd, sizeof(cmd), NULL, 0);
}

/**
 * kdbus_item_first() - the first item of a struct, or NULL
 * @start:      the struct
 * @header:     the size of its fixed part
 * @size:       its size field
 *
 * Return: the item, or NULL if there is none or it does not fit.
 */
const struct kdbus_item *kdbus_item_first(const void *start, size_t header, uint64_t size) {
        const struct kdbus_item *item = (const void *)((const uint8_t *)start + header);

        if (size < header + KDBUS_ITEM_HEADER_SIZE || item->size < KDBUS_ITEM_HEADER_SIZE ||
            item->size > size - header)
                return NULL;
        return item;
}

const struct kdbus_item *kdbus_item_next(const void *start, uint64_t size,
                                         const struct kdbus_item *item) {
        uint64_t at = (uint64_t)((const uint8_t *)item - (const uint8_t *)start) +
                      KDBUS_ALIGN8(item->size);

        return kdbus_item_first((const uint8_t *)start + at, 0, at < size ? size - at : 0);
}

const struct kdbus_item *kdbus_msg_find(const struct kdbus_msg *m, uint64_t type) {
        const struct kdbus_item *item;

        for (item = kdbus_item_first(m, sizeof(*m), m->size); item;
             item = kdbus_item_next(m, m->size, item))
                if (item->type == type)
                        return item;
        return NULL;
}

int kdbus_msg_payload(const struct kdbus_msg *m, const uint8_t **ret_data, size_t *ret_size) {
        const struct kdbus_item *item = kdbus_msg_find(m, KDBUS_ITEM_PAYLOAD_OFF);

        if (!item || item->size < KDBUS_ITEM_HEADER_SIZE + sizeof(struct kdbus_vec))
                return -EBADMSG;
        *ret_data = (const uint8_t *)m + item->vec.offset;
        *ret_size = item->vec.size;
        return 0;
}

/**
 * kdbus_msg_parts() - the payload parts of a received message
 * @c:          the connection whose last RECV (or sync reply) gave @m: its fds are the memfds
 * @m:          the message in the pool
 * @parts:      where to put them
 * @max:        room there
 *
 * The fds of the RECV reply are the FDS item's first (with ACCEPT_FD only), then one per
 * PAYLOAD_MEMFD item.
 * Return: the number of parts, -EBADMSG, or -E2BIG.
 */
int kdbus_msg_parts(const KdbusConn *c, const struct kdbus_msg *m, KdbusPart *parts,
                    unsigned max) {
        const struct kdbus_item *item;
        unsigned n = 0, memfd_idx = 0;

        item = kdbus_msg_find(m, KDBUS_ITEM_FDS);
        if (item && c->accept_fds)
                memfd_idx = (unsigned)((item->size - KDBUS_ITEM_HEADER_SIZE) / sizeof(int));
        for (item = kdbus_item_first(m, sizeof(*m), m->size); item;
             item = kdbus_item_next(m, m->size, item)) {
                if (item->type != KDBUS_ITEM_PAYLOAD_OFF && item->type != KDBUS_ITEM_PAYLOAD_MEMFD)
                        continue;
                if (n >= max)
                        return -E2BIG;
                if (item->type == KDBUS_ITEM_PAYLOAD_OFF) {
                        uint64_t at = kdbus_conn_offset(c, m);

                        if (item->size < KDBUS_ITEM_HEADER_SIZE + sizeof(struct kdbus_vec) ||
                            item->vec.offset > c->pool_size - at ||
                            item->vec.size > c->pool_size - at - item->vec.offset)
                                return -EBADMSG;
                        parts[n++] = (KdbusPart){ .data = (const uint8_t *)m + item->vec.offset,
                                                  .memfd = -1, .size = item->vec.size };
                } else {
                        if (item->size < KDBUS_ITEM_HEADER_SIZE + sizeof(struct kdbus_memfd) ||
                            memfd_idx >= c->n_recv_fds)
                                return -EBADMSG;
                        parts[n++] = (KdbusPart){ .memfd = c->recv_fds[memfd_idx++],
                                                  .start = item->memfd.start,
                                                  .size = item->memfd.size };
                }
        }
        return (int)n;
}

/**
 * kdbus_msg_copy_payload() - the whole dbus1 message of a received message
 * @c:          the connection (see kdbus_msg_parts())
 * @m:          the message
 * @ret:        a new malloc()ed buffer
 * @ret_size:   its size
 *
 * Return: 0, -EBADMSG, -E2BIG, -ENOMEM, -EIO.
 */
int kdbus_msg_copy_payload(const KdbusConn *c, const struct kdbus_msg *m, uint8_t **ret,
                           size_t *ret_size) {
        KdbusPart parts[1 + 2 * KDBUS_MSG_MAX_MEMFD_ITEMS];
        uint64_t total = 0, at = 0;
        uint8_t *buf;
        int n, i;

        n = kdbus_msg_parts(c, m, parts, ELEMENTSOF(parts));
        if (n < 0)
                return n;
        for (i = 0; i < n; ++i)
                total += parts[i].size;
        buf = malloc(total ? total : 1);
        if (!buf)
                return -ENOMEM;
        for (i = 0; i < n; ++i) {
                uint64_t done = 0;

                if (parts[i].data)
                        memcpy(buf + at, parts[i].data, parts[i].size);
                while (!parts[i].data && done < parts[i].size) {
                        ssize_t k = pread(parts[i].memfd, buf + at + done, parts[i].size - done,
                                          (off_t)(parts[i].start + done));

                        if (k < 0 && errno == EINTR)
                                continue;
                        if (k <= 0) {
                                free(buf);
                                return -EIO;
                        }
                        done += (uint64_t)k;
                }
                at += parts[i].size;
        }
        *ret = buf;
        *ret_size = total;
        return 0;
}

int kdbus_conn_match_add(KdbusConn *c, uint64_t cookie, uint64_t flags, const uint64_t *mask,
                         uint64_t sender_id) {
        size_t msize = mask ? c->bloom_size : 0, total;
        struct kdbus_cmd_match *cmd;
        struct kdbus_item *item;
        int r;

        total = sizeof(*cmd) + (mask ? KDBUS_ITEM_SIZE(msize) : 0) +
                (sender_id != KDBUS_MATCH_ID_ANY ? KDBUS_ITEM_SIZE(sizeof(uint64_t)) : 0);
        cmd = calloc(1, total);
        if (!cmd)
                return -ENOMEM;
        cmd->size = total;
        cmd->flags = flags;
        cmd->cookie = cookie;
        item = cmd->items;
        if (mask) {
                item->size = KDBUS_ITEM_HEADER_SIZE + msize;
                item->type = KDBUS_ITEM_BLOOM_MASK;
                memcpy(item->data64, mask, msize);
                item = KDBUS_ITEM_NEXT(item);
        }
        if (sender_id != KDBUS_MATCH_ID_ANY) {
                item->size = KDBUS_ITEM_HEADER_SIZE + sizeof(uint64_t);
                item->type = KDBUS_ITEM_ID;
                item->id = sender_id;
        }
        r = kdbus_conn_command(c, KDBUS_CMD_MATCH_ADD, cmd, total, NULL, 0);
        free(cmd);
        return r;
}

int kdbus_conn_match_remove(KdbusConn *c, uint64_t cookie) {
        struct kdbus_cmd_match cmd = { .size = sizeof(cmd), .cookie = cookie };

        return kdbus_conn_command(c, KDBUS_CMD_MATCH_REMOVE, &cmd, sizeof(cmd), NULL, 0);
}

/* The bus's fixed, public SipHash keys: "kdbus-compat-bl" and the key index. */
static const uint8_t bloom_keys[4][16] = {
        { 'k', 'd', 'b', 'u', 's', '-', 'c', 'o', 'm', 'p', 'a', 't', '-', 'b', 'l', '0' },
        { 'k', 'd', 'b', 'u', 's', '-', 'c', 'o', 'm', 'p', 'a', 't', '-', 'b', 'l', '1' },
        { 'k', 'd', 'b', 'u', 's', '-', 'c', 'o', 'm', 'p', 'a', 't', '-', 'b', 'l', '2' },
        { 'k', 'd', 'b', 'u', 's', '-', 'c', 'o', 'm', 'p', 'a', 't', '-', 'b', 'l', '3' },
};

#define BLOOM_ENTRY_MAX 1024u

void kdbus_bloom_add(uint64_t *bloom, uint64_t size, uint64_t n_hash, const char *prefix,
                     const char *value) {
        char buf[BLOOM_ENTRY_MAX];
        uint64_t nbits = size * 8, i, h = 0, n_idx;
        unsigned bits = 0, have = 0, key = 0;
        size_t p = strlen(prefix), n;

        if (size < 8 || size > 4096 || size % 8)
                return;                 /* not a geometry a bus can have (BUS_MAKE: EINVAL) */
        while ((UINT64_C(1) << bits) < nbits)
                ++bits;
        /* the indices repeat after one cycle through the 4 keys: more set no other bit */
        n_idx = 4 * (64 / bits);
        if (n_hash < n_idx)
                n_idx = n_hash;
        if (p > sizeof(buf) - 1)
                p = sizeof(buf) - 1;
        memcpy(buf, prefix, p);
        buf[p++] = ':';
        n = MIN(strlen(value), sizeof(buf) - p);
        memcpy(buf + p, value, n);
        for (i = 0; i < n_idx; ++i) {
                uint64_t bit;

                if (have < bits) {
                        h = siphash24(buf, p + n, bloom_keys[key % 4]);
                        ++key;
                        have = 64;
                }
                bit = (h & ((UINT64_C(1) << bits) - 1)) % nbits;
                h >>= bits;
                have -= bits;
                bloom[bit / 64] |= UINT64_C(1) << (bit % 64);
        }
}
