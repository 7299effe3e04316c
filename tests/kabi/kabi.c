/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * kabi-test's tools (kabi.h): the kernel interface as a kdbus program reaches it (ioctl,
 * BUS_MAKE through DIR/control, HELLO and the pool's mapping), a minimal dbus1 writer and
 * reader for the payloads, SEND/RECV/FREE as the cases use them.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <grp.h>
#include <linux/capability.h>
#include "kdbus/kdbus.h"
#include "kabi.h"

const char *root;
int failed_line;

/* ioctl() as kdbus's sample code wraps it: 0 or -errno */
int kio(int fd, unsigned long cmd, void *arg) {
        return ioctl(fd, cmd, arg) < 0 ? -errno : 0;
}

/* BUS_MAKE through DIR/control with @access (KDBUS_MAKE_ACCESS_*). */
int bus_make(Bus *b, const char *name, uint64_t access) {
        struct {
                struct kdbus_cmd cmd;
                struct { uint64_t size, type; struct kdbus_bloom_parameter p; } bloom;
                struct { uint64_t size, type; char str[64]; } name;
        } m;
        char path[512];
        static unsigned n;
        int r;

        memset(&m, 0, sizeof(m));
        (void) snprintf(path, sizeof(path), "%s/control", root);
        b->control = open(path, O_RDWR | O_CLOEXEC);
        if (b->control < 0)
                return -errno;
        m.bloom.size = sizeof(m.bloom);
        m.bloom.type = KDBUS_ITEM_BLOOM_PARAMETER;
        m.bloom.p.size = 64;
        m.bloom.p.n_hash = 1;
        m.name.type = KDBUS_ITEM_MAKE_NAME;
        (void) snprintf(m.name.str, sizeof(m.name.str), "%u-%s-%d-%u", getuid(), name,
                        getpid(), n++);
        m.name.size = KDBUS_ITEM_HEADER_SIZE + strlen(m.name.str) + 1;
        m.cmd.flags = access;
        m.cmd.size = sizeof(m.cmd) + sizeof(m.bloom) + KDBUS_ALIGN8(m.name.size);
        r = kio(b->control, KDBUS_CMD_BUS_MAKE, &m);
        if (r < 0)
                return r;
        (void) snprintf(b->dir, sizeof(b->dir), "%s/%s", root, m.name.str);
        (void) snprintf(b->path, sizeof(b->path), "%s/bus", b->dir);
        return 0;
}

int hello_flags(const char *path, uint64_t flags, Conn *c) {
        struct kdbus_cmd_hello h;
        struct kdbus_cmd_free f;
        int r;

        c->fd = open(path, O_RDWR | O_CLOEXEC);
        if (c->fd < 0)
                return -errno;
        memset(&h, 0, sizeof(h));
        h.size = sizeof(h);
        h.flags = flags | KDBUS_HELLO_ACCEPT_FD;
        h.attach_flags_send = _KDBUS_ATTACH_ALL;       /* as kdbus-test offers */
        h.attach_flags_recv = _KDBUS_ATTACH_ALL;
        h.pool_size = POOL;
        r = kio(c->fd, KDBUS_CMD_HELLO, &h);
        if (r < 0)
                return r;
        c->id = h.id;
        memset(&f, 0, sizeof(f));
        f.size = sizeof(f);
        f.offset = h.offset;
        (void) kio(c->fd, KDBUS_CMD_FREE, &f);
        c->pool = mmap(NULL, POOL, PROT_READ, MAP_SHARED, c->fd, 0);
        return c->pool == MAP_FAILED ? -errno : 0;
}

int hello(const char *path, Conn *c) {
        return hello_flags(path, 0, c);
}

void conn_close(Conn *c) {
        if (c->pool && c->pool != MAP_FAILED)
                (void) munmap((void *)c->pool, POOL);
        if (c->fd >= 0)
                (void) close(c->fd);
        c->fd = -1;
}

void w_pad(W *w, size_t a) {
        while (w->n % a)
                w->b[w->n++] = 0;
}

void w_u32(W *w, uint32_t v) {
        w_pad(w, 4);
        memcpy(w->b + w->n, &v, 4);
        w->n += 4;
}

void w_str(W *w, const char *s) {
        w_u32(w, (uint32_t)strlen(s));
        memcpy(w->b + w->n, s, strlen(s) + 1);
        w->n += strlen(s) + 1;
}

void w_field(W *w, uint8_t code, char sig, const char *s, uint32_t u) {
        w_pad(w, 8);
        w->b[w->n++] = code;
        w->b[w->n++] = 1;
        w->b[w->n++] = (uint8_t)sig;
        w->b[w->n++] = 0;
        if (sig == 'u')
                w_u32(w, u);
        else if (sig == 'g') {
                w->b[w->n++] = (uint8_t)strlen(s);
                memcpy(w->b + w->n, s, strlen(s) + 1);
                w->n += strlen(s) + 1;
        } else
                w_str(w, s);
}

/* type 1 call, 2 return, 4 signal; @arg: one string argument or NULL */
size_t dbus1_full(W *w, uint8_t type, uint32_t serial, uint32_t reply_serial,
                  const char *path, const char *iface, const char *dest,
                  const char *member, const char *arg, uint32_t n_fds) {
        size_t fields_len, body_start;
        uint32_t body_len = 0;

        memset(w, 0, sizeof(*w));
        w->b[0] = 'l';
        w->b[1] = type;
        w->b[2] = type == 1 ? 0 : 1;    /* NO_REPLY_EXPECTED except calls */
        w->b[3] = 1;
        w->n = 16;
        memcpy(w->b + 8, &serial, 4);
        if (type == 1 || type == 4) {
                w_field(w, 1, 'o', path, 0);
                w_field(w, 2, 's', iface, 0);
                w_field(w, 3, 's', member, 0);
        }
        if (reply_serial)
                w_field(w, 5, 'u', NULL, reply_serial);
        if (dest)
                w_field(w, 6, 's', dest, 0);
        if (arg)
                w_field(w, 8, 'g', "s", 0);
        if (n_fds)
                w_field(w, 9, 'u', NULL, n_fds);
        fields_len = w->n - 16;
        memcpy(w->b + 12, &(uint32_t){ (uint32_t)fields_len }, 4);
        w_pad(w, 8);
        body_start = w->n;
        if (arg) {
                w_str(w, arg);
                body_len = (uint32_t)(w->n - body_start);
        }
        memcpy(w->b + 4, &body_len, 4);
        return w->n;
}

size_t dbus1_fds(W *w, uint8_t type, uint32_t serial, uint32_t reply_serial,
                 const char *dest, const char *member, const char *arg,
                 uint32_t n_fds) {
        return dbus1_full(w, type, serial, reply_serial, "/org/example", "org.example.Kabi",
                          dest, member, arg, n_fds);
}

size_t dbus1(W *w, uint8_t type, uint32_t serial, uint32_t reply_serial,
             const char *dest, const char *member, const char *arg) {
        return dbus1_fds(w, type, serial, reply_serial, dest, member, arg, 0);
}

int dbus1_read(const struct kdbus_msg *m, R *r) {
        static uint8_t b[65536];
        size_t n = 0, pos, end, body;
        uint32_t flen, u;

        memset(r, 0, sizeof(*r));
        for (const struct kdbus_item *it = m->items;
             (const uint8_t *)it < (const uint8_t *)m + m->size;
             it = (const void *)((const uint8_t *)it + KDBUS_ALIGN8(it->size)))
                if (it->type == KDBUS_ITEM_PAYLOAD_OFF) {
                        if (n + it->vec.size > sizeof(b))
                                return -1;
                        memcpy(b + n, (const uint8_t *)m + it->vec.offset, it->vec.size);
                        n += it->vec.size;
                }
        if (n < 16 || b[0] != 'l')
                return -1;
        r->type = b[1];
        memcpy(&r->serial, b + 8, 4);
        memcpy(&flen, b + 12, 4);
        pos = 16;
        end = 16 + flen;
        while (pos < end) {
                uint8_t code, slen;
                char sig;

                pos = (pos + 7) & ~(size_t)7;
                if (pos + 4 > end)
                        break;
                code = b[pos];
                slen = b[pos + 1];
                sig = (char)b[pos + 2];
                pos += 3 + slen;
                if (sig == 'u') {
                        pos = (pos + 3) & ~(size_t)3;
                        pos += 4;
                } else if (sig == 'g') {
                        pos += 1 + b[pos] + 1;
                } else {
                        pos = (pos + 3) & ~(size_t)3;
                        memcpy(&u, b + pos, 4);
                        if (code == 3 && u < sizeof(r->member))
                                memcpy(r->member, b + pos + 4, u);
                        pos += 4 + u + 1;
                }
        }
        body = (end + 7) & ~(size_t)7;
        if (body + 4 <= n) {
                memcpy(&u, b + body, 4);
                if (u < sizeof(r->arg) && body + 4 + u < n) {
                        memcpy(r->arg, b + body + 4, u);
                        r->has_arg = true;
                }
        }
        return 0;
}

/* SEND of @data (one PAYLOAD_VEC at @vec_addr, the program's pointer) to @dst. */
int send_raw(Conn *c, uint64_t dst, uint64_t cookie, uint64_t cookie_reply,
             uint64_t msg_flags, int64_t priority, uint64_t vec_addr, size_t size,
             uint64_t send_flags, int64_t timeout_ns, const int *fds, unsigned n_fds,
             struct kdbus_cmd_send *ret) {
        uint64_t buf[64] = { 0 };
        struct kdbus_msg *m = (void *)buf;
        struct kdbus_item *it = m->items;
        struct kdbus_cmd_send cmd = { .size = sizeof(cmd), .flags = send_flags };
        struct timespec now;
        int r;

        m->dst_id = dst;
        m->src_id = c->id;
        m->cookie = cookie;
        m->cookie_reply = cookie_reply;
        m->flags = msg_flags;
        m->priority = priority;
        m->payload_type = KDBUS_PAYLOAD_DBUS;
        if (timeout_ns) {
                clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
                m->timeout_ns = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec +
                                (uint64_t)timeout_ns;
        }
        it->type = KDBUS_ITEM_PAYLOAD_VEC;
        it->size = KDBUS_ITEM_HEADER_SIZE + sizeof(struct kdbus_vec);
        it->vec.address = vec_addr;
        it->vec.size = size;
        it = KDBUS_ITEM_NEXT(it);
        if (n_fds) {
                it->type = KDBUS_ITEM_FDS;
                it->size = KDBUS_ITEM_HEADER_SIZE + n_fds * sizeof(int);
                memcpy(it->fds, fds, n_fds * sizeof(int));
                it = KDBUS_ITEM_NEXT(it);
        }
        m->size = (uint64_t)((uint8_t *)it - (uint8_t *)m);
        cmd.msg_address = (uintptr_t)m;
        r = kio(c->fd, KDBUS_CMD_SEND, &cmd);
        if (ret)
                *ret = cmd;
        return r;
}

/* A SYNC_REPLY call of @a to @c ("Ping", cookie @cookie, deadline @timeout_ns away). */
int sync_call(Conn *a, const Conn *c, uint64_t cookie, int64_t timeout_ns,
                     struct kdbus_cmd_send *ret) {
        W w;
        char dest[32];
        size_t n;

        (void) snprintf(dest, sizeof(dest), ":1.%" PRIu64, c->id);
        n = dbus1(&w, 1, (uint32_t)cookie, 0, dest, "Ping", NULL);
        return send_raw(a, c->id, cookie, 0, KDBUS_MSG_EXPECT_REPLY, 0, (uintptr_t)w.b, n,
                        KDBUS_SEND_SYNC_REPLY, timeout_ns, NULL, 0, ret);
}

/* a call without expected reply (NO_REPLY_EXPECTED) */
int call_noreply(Conn *c, const Conn *dst, uint64_t cookie, int64_t prio) {
        W w;
        char dest[32];
        size_t n;

        (void) snprintf(dest, sizeof(dest), ":1.%" PRIu64, dst->id);
        n = dbus1(&w, 1, (uint32_t)cookie, 0, dest, "Ping", NULL);
        w.b[2] = 1;
        return send_raw(c, dst->id, cookie, 0, 0, prio, (uintptr_t)w.b, n, 0, 0, NULL, 0, NULL);
}

int recv_msg(Conn *c, uint64_t flags, int64_t prio, const struct kdbus_msg **ret) {
        struct kdbus_cmd_recv r = { .size = sizeof(r), .flags = flags, .priority = prio };
        int q = kio(c->fd, KDBUS_CMD_RECV, &r);

        if (q == 0 && ret)
                *ret = (const void *)(c->pool + r.msg.offset);
        return q;
}

int free_at(Conn *c, const void *p) {
        struct kdbus_cmd_free f = { .size = sizeof(f),
                                    .offset = (uint64_t)((const uint8_t *)p - c->pool) };

        return kio(c->fd, KDBUS_CMD_FREE, &f);
}

/* SEND of @size opaque bytes at @p from @c to @dst (a native receiver takes them as they
 * are). */
int send_opaque(Conn *c, uint64_t dst, uint64_t cookie, const void *p, size_t size) {
        uint64_t buf[64] = { 0 };      /* a kdbus_msg and an item (a kdbus_item is 80 bytes) */
        struct kdbus_msg *m = (void *)buf;
        struct kdbus_item *it = m->items;
        struct kdbus_cmd_send cmd = { .size = sizeof(cmd) };

        m->dst_id = dst;
        m->src_id = c->id;
        m->cookie = cookie;
        m->payload_type = 0x4b444253;   /* opaque */
        it->type = KDBUS_ITEM_PAYLOAD_VEC;
        it->size = KDBUS_ITEM_HEADER_SIZE + sizeof(struct kdbus_vec);
        it->vec.address = (uintptr_t)p;
        it->vec.size = size;
        it = KDBUS_ITEM_NEXT(it);
        m->size = (uint64_t)((uint8_t *)it - (uint8_t *)m);
        cmd.msg_address = (uintptr_t)m;
        return kio(c->fd, KDBUS_CMD_SEND, &cmd);
}

/* A match of @fd that takes every broadcast (an all-zero bloom mask). */
int match_all(int fd) {
        struct {
                struct kdbus_cmd_match cmd;
                struct { uint64_t size, type; uint64_t mask[8]; } bloom;
        } mt;

        memset(&mt, 0, sizeof(mt));
        mt.cmd.size = sizeof(mt);
        mt.cmd.cookie = 1;
        mt.bloom.type = KDBUS_ITEM_BLOOM_MASK;
        mt.bloom.size = sizeof(mt.bloom);
        return kio(fd, KDBUS_CMD_MATCH_ADD, &mt);
}

/* A broadcast signal of @c: @size bytes at @p of @payload_type, a bloom filter of 64. */
int send_broadcast(Conn *c, uint64_t cookie, uint64_t payload_type, const void *p, size_t size) {
        uint64_t buf[64] = { 0 };
        struct kdbus_msg *msg = (void *)buf;
        struct kdbus_item *it = msg->items;
        struct kdbus_cmd_send s = { .size = sizeof(s) };

        msg->dst_id = KDBUS_DST_ID_BROADCAST;
        msg->cookie = cookie;
        msg->flags = KDBUS_MSG_SIGNAL;
        msg->payload_type = payload_type;
        it->type = KDBUS_ITEM_PAYLOAD_VEC;
        it->size = KDBUS_ITEM_HEADER_SIZE + sizeof(struct kdbus_vec);
        it->vec.address = (uintptr_t)p;
        it->vec.size = size;
        it = KDBUS_ITEM_NEXT(it);
        it->type = KDBUS_ITEM_BLOOM_FILTER;
        it->size = KDBUS_ITEM_HEADER_SIZE + sizeof(struct kdbus_bloom_filter) + 64;
        it = KDBUS_ITEM_NEXT(it);
        msg->size = (uint64_t)((uint8_t *)it - (uint8_t *)msg);
        s.msg_address = (uintptr_t)msg;
        return kio(c->fd, KDBUS_CMD_SEND, &s);
}

/* A broadcast signal of @c with 8 KiB of opaque payload (larger than a 4 KiB pool). */
int send_big_broadcast(Conn *c) {
        static uint8_t big[8192];

        return send_broadcast(c, 1, 0x4b444253, big, sizeof(big));
}

short poll1(int fd, short events, int timeout) {
        struct pollfd p = { .fd = fd, .events = events };

        return poll(&p, 1, timeout) == 1 ? p.revents : 0;
}

/*
 * In a child as uid/gid 65534 (keeping CAP_IPC_OWNER effective if @cap): @fn(@ctx, res)
 * fills two results. Return: them as one number (res[0] * 1000 + res[1], errnos positive;
 * 99 for a step that did not run), or -1.
 */
int as_nobody(bool cap, void (*fn)(const void *ctx, int res[2]), const void *ctx) {
        int p[2], res[2] = { 99, 99 }, status;
        pid_t child;

        if (pipe(p) < 0)
                return -1;
        child = fork();
        if (child < 0)
                return -1;
        if (child == 0) {
                struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
                struct __user_cap_data_struct d[2] = { { 0 } };

                d[0].effective = d[0].permitted = 1u << CAP_IPC_OWNER;
                if ((!cap || prctl(PR_SET_KEEPCAPS, 1) == 0) && setgroups(0, NULL) == 0 &&
                    setresgid(65534, 65534, 65534) == 0 && setresuid(65534, 65534, 65534) == 0 &&
                    (!cap || syscall(SYS_capset, &h, d) == 0))
                        fn(ctx, res);
                (void) !write(p[1], res, sizeof(res));
                _exit(0);
        }
        close(p[1]);
        if (read(p[0], res, sizeof(res)) != sizeof(res))
                res[0] = res[1] = 99;
        close(p[0]);
        (void) waitpid(child, &status, 0);
        return res[0] * 1000 + res[1];
}
