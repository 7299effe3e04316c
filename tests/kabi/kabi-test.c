/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * kabi-test: a program written only against the kdbus kernel interface (open() of kdbusfs
 * nodes, ioctl(), mmap(), poll()/select()/epoll, close(), dup(), fork(); no libkdbus), run
 * under libkdbus-preload.so against kdbusd --kdbusfs=DIR (tests/kabi/run-kabi.py starts
 * both). One case per area of kdbus's selftests (tools/testing/selftests/kdbus of kdbus's
 * final tree: bus-make, hello, byebye, message, fd passing, endpoint, monitor, names,
 * priority, memory access, timeout, sync, free, connection info, writable pool, match),
 * each on a bus of its own made through DIR/control, as kdbus-test does.
 *
 *   kabi-test --root DIR [CASE...]
 *   kabi-test --root DIR --serve               (a service for legacy clients, interop.py)
 *   kabi-test --root DIR --call BUS NAME       (a client of a dbus-python service)
 *
 * Prints "ok"/"FAIL" per case and exits 1 if any failed. Messages carry dbus1 payloads,
 * but those of the case "opaque" (kdbus-test's kind: strings, padding, a memfd of text).
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "kdbus/kdbus.h"
#include "kabi.h"



/* ---- the cases ---- */

/* bus-make: the nodes' modes, control's and the bus node's handle states */
static int t_bus_make(void) {
        struct kdbus_cmd_hello h = { .size = sizeof(h), .pool_size = POOL };
        char path[600];
        struct stat st;
        Bus b, b2;
        int fd;

        (void) snprintf(path, sizeof(path), "%s/control", root);
        CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0666);
        CHECK(access(path, W_OK) == 0);
        CHECK(bus_make(&b, "make", KDBUS_MAKE_ACCESS_WORLD) == 0);
        CHECK(stat(b.path, &st) == 0 && (st.st_mode & 0777) == 0666);
        /* the control handle made a bus: nothing else now */
        CHECK(kio(b.control, KDBUS_CMD_HELLO, &h) == -EBADFD);
        CHECK(poll1(b.control, POLLIN, 0) == (POLLERR | POLLHUP));
        CHECK(mmap(NULL, POOL, PROT_READ, MAP_SHARED, b.control, 0) == MAP_FAILED &&
              errno == EBADFD);
        /* HELLO on control, BUS_MAKE on a bus node: EBADFD; an unknown ioctl ENOTTY */
        fd = open(path, O_RDWR | O_CLOEXEC);
        CHECK(fd >= 0);
        CHECK(kio(fd, KDBUS_CMD_HELLO, &h) == -EBADFD);
        CHECK(kio(fd, _IOW(KDBUS_IOCTL_MAGIC, 0x7f, struct kdbus_cmd), &h) == -ENOTTY);
        close(fd);
        fd = open(b.path, O_RDWR | O_CLOEXEC);
        CHECK(fd >= 0);
        {
                struct kdbus_cmd c = { .size = sizeof(c) };

                CHECK(kio(fd, KDBUS_CMD_BUS_MAKE, &c) == -EBADFD);
        }
        close(fd);
        /* no access flags: the bus node is its owner's only */
        CHECK(bus_make(&b2, "private", 0) == 0);
        CHECK(stat(b2.path, &st) == 0 && (st.st_mode & 0777) == 0600);
        /* the bus goes with its control handle, before close() returns (kdbus's release) */
        close(b2.control);
        CHECK(stat(b2.path, &st) < 0 && errno == ENOENT);
        close(b.control);
        return 0;
}

/* hello: EFAULT for memory the kernel could not read, kdbus's flags only */
static int t_hello(void) {
        uint64_t raw[16] __attribute__((aligned(8))) = { 0 };
        struct kdbus_cmd_hello *h = (void *)raw;
        Bus b;
        int fd;

        CHECK(bus_make(&b, "hello", KDBUS_MAKE_ACCESS_WORLD) == 0);
        fd = open(b.path, O_RDWR | O_CLOEXEC);
        CHECK(fd >= 0);
        CHECK(kio(fd, KDBUS_CMD_HELLO, (uint8_t *)raw + 1) == -EFAULT);
        CHECK(kio(fd, KDBUS_CMD_HELLO, (void *)8) == -EFAULT);
        /* before HELLO: no pool, a connection's commands are EBADFD */
        CHECK(mmap(NULL, POOL, PROT_READ, MAP_SHARED, fd, 0) == MAP_FAILED && errno == EBADFD);
        h->size = sizeof(*h);
        h->pool_size = POOL;
        h->flags = 1ull << 32;
        CHECK(kio(fd, KDBUS_CMD_HELLO, h) == -EINVAL);
        /* kdbusd's own HELLO extensions are not kdbus's */
        h->flags = 1ull << 61;
        CHECK(kio(fd, KDBUS_CMD_HELLO, h) == -EINVAL);
        h->flags = KDBUS_HELLO_ACCEPT_FD;
        h->size = 1;
        CHECK(kio(fd, KDBUS_CMD_HELLO, h) == -EINVAL);
        h->size = 1u << 20;
        CHECK(kio(fd, KDBUS_CMD_HELLO, h) == -EMSGSIZE);
        h->size = sizeof(*h);
        CHECK(kio(fd, KDBUS_CMD_HELLO, h) == 0);
        CHECK(h->id > 0 && h->flags == KDBUS_HELLO_ACCEPT_FD);
        CHECK(kio(fd, KDBUS_CMD_HELLO, h) == -EBADFD);
        /* NEGOTIATE shows kdbus's flags, not kdbusd's extensions */
        {
                Conn n;
                struct kdbus_cmd_hello q = { .size = sizeof(q), .pool_size = POOL,
                                             .flags = KDBUS_FLAG_NEGOTIATE };

                n.fd = open(b.path, O_RDWR | O_CLOEXEC);
                CHECK(kio(n.fd, KDBUS_CMD_HELLO, &q) == 0);
                CHECK(q.flags & KDBUS_HELLO_MONITOR);
                CHECK(!(q.flags & (KDBUS_HELLO_WIRE_BATCH | KDBUS_HELLO_CAPTURE_PER_MESSAGE)));
                close(n.fd);
        }
        close(fd);
        close(b.control);
        return 0;
}

/* writable-pool: the pool maps read-only only */
static int t_writable_pool(void) {
        Bus b;
        Conn c;
        void *p;

        CHECK(bus_make(&b, "pool", KDBUS_MAKE_ACCESS_WORLD) == 0);
        CHECK(hello(b.path, &c) == 0);
        CHECK(mmap(NULL, POOL, PROT_READ | PROT_WRITE, MAP_SHARED, c.fd, 0) == MAP_FAILED &&
              errno == EPERM);
        p = mmap(NULL, POOL, PROT_READ, MAP_SHARED, c.fd, 0);
        CHECK(p != MAP_FAILED);
        CHECK(mprotect(p, POOL, PROT_READ | PROT_WRITE) < 0);
        CHECK(munmap(p, POOL) == 0);
        CHECK(mmap(NULL, POOL * 2, PROT_READ, MAP_SHARED, c.fd, 0) == MAP_FAILED &&
              errno == EFAULT);
        conn_close(&c);
        close(b.control);
        return 0;
}

/* message: SEND reads the program's memory (EFAULT where it cannot), RECV, FREE; poll
 * is level-triggered */
static int t_message(void) {
        const struct kdbus_msg *m, *m2;
        Bus b;
        Conn a, c;
        W w;
        char dest[32];
        size_t n, pg;
        uint8_t *two;

        CHECK(bus_make(&b, "msg", KDBUS_MAKE_ACCESS_WORLD) == 0);
        CHECK(hello(b.path, &a) == 0 && hello(b.path, &c) == 0);
        CHECK(poll1(c.fd, POLLIN, 0) == 0);
        CHECK(poll1(c.fd, POLLIN | POLLOUT, 0) == POLLOUT);
        (void) snprintf(dest, sizeof(dest), ":1.%" PRIu64, c.id);
        n = dbus1(&w, 1, 7, 0, dest, "Ping", "hello");
        /* unreadable payload or message: EFAULT, nothing sent */
        CHECK(send_raw(&a, c.id, 7, 0, KDBUS_MSG_EXPECT_REPLY, 0, 16, n, 0, 1000000000, NULL,
                       0, NULL) == -EFAULT);
        {
                struct kdbus_cmd_send s = { .size = sizeof(s), .msg_address = 4096 };

                CHECK(kio(a.fd, KDBUS_CMD_SEND, &s) == -EFAULT);
        }
        /* off the stack (the library copies stack memory itself): a payload that runs
         * into an inaccessible page, a message or a command in one: EFAULT, nothing sent */
        pg = (size_t)sysconf(_SC_PAGESIZE);
        two = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        CHECK(two != MAP_FAILED && mprotect(two + pg, pg, PROT_NONE) == 0);
        memcpy(two + pg - 8, w.b, 8);
        CHECK(send_raw(&a, c.id, 7, 0, KDBUS_MSG_EXPECT_REPLY, 0, (uintptr_t)(two + pg - 8),
                       n, 0, 0, NULL, 0, NULL) == -EFAULT);
        {
                struct kdbus_cmd_send s = { .size = sizeof(s),
                                            .msg_address = (uintptr_t)(two + pg) };

                CHECK(kio(a.fd, KDBUS_CMD_SEND, &s) == -EFAULT);
                CHECK(kio(a.fd, KDBUS_CMD_SEND, two + pg) == -EFAULT);
        }
        CHECK(recv_msg(&c, 0, 0, NULL) == -EAGAIN);
        memcpy(two, w.b, n);
        CHECK(send_raw(&a, c.id, 7, 0, KDBUS_MSG_EXPECT_REPLY, 0, (uintptr_t)two, n, 0,
                       1000000000, NULL, 0, NULL) == 0);
        CHECK(munmap(two, 2 * pg) == 0);
        CHECK(call_noreply(&a, &c, 8, 0) == 0);
        CHECK(poll1(c.fd, POLLIN, 1000) == POLLIN);
        CHECK(recv_msg(&c, 0, 0, &m) == 0);
        CHECK(m->src_id == a.id && m->cookie == 7 && m->payload_type == KDBUS_PAYLOAD_DBUS);
        /* one left: still readable (level-triggered), then not */
        CHECK(poll1(c.fd, POLLIN, 0) == POLLIN);
        CHECK(recv_msg(&c, 0, 0, &m2) == 0 && m2->cookie == 8);
        CHECK(poll1(c.fd, POLLIN, 0) == 0);
        CHECK(free_at(&c, m) == 0 && free_at(&c, m2) == 0);
        CHECK(free_at(&c, m) == -ENXIO);
        /* PEEK keeps it readable */
        CHECK(call_noreply(&a, &c, 9, 0) == 0);
        CHECK(recv_msg(&c, KDBUS_RECV_PEEK, 0, &m) == 0 && m->cookie == 9);
        CHECK(poll1(c.fd, POLLIN, 0) == POLLIN);
        CHECK(free_at(&c, m) == 0);
        CHECK(recv_msg(&c, KDBUS_RECV_DROP, 0, NULL) == 0);
        CHECK(poll1(c.fd, POLLIN, 0) == 0);
        conn_close(&a);
        conn_close(&c);
        close(b.control);
        return 0;
}

/* dropped: a broadcast lost for a connection (larger than its whole pool) makes it
 * readable, as kdbus raised POLLIN; RECV says EAGAIN with the count, then EAGAIN alone with
 * the struct as kdbus writes it (the library answers that one itself); notifications over
 * the bus's quota at a reader are lost and counted too */
static int t_dropped(void) {
        struct kdbus_cmd_hello h = { .size = sizeof(h), .flags = KDBUS_HELLO_ACCEPT_FD,
                                     .pool_size = 4096 };
        struct kdbus_cmd_recv rc = { .size = sizeof(rc) };
        Bus b;
        Conn a;
        int fd;

        CHECK(bus_make(&b, "dropped", KDBUS_MAKE_ACCESS_WORLD) == 0);
        CHECK(hello(b.path, &a) == 0);
        fd = open(b.path, O_RDWR | O_CLOEXEC);
        CHECK(fd >= 0 && kio(fd, KDBUS_CMD_HELLO, &h) == 0);
        {
                /* an empty pool: the broadcast larger than it is lost and counted */
                struct kdbus_cmd_free f = { .size = sizeof(f), .offset = h.offset };

                CHECK(kio(fd, KDBUS_CMD_FREE, &f) == 0);
        }
        CHECK(match_all(fd) == 0);
        CHECK(send_big_broadcast(&a) == 0);
        CHECK(poll1(fd, POLLIN, 1000) == POLLIN);
        CHECK(kio(fd, KDBUS_CMD_RECV, &rc) == -EAGAIN);
        CHECK(rc.dropped_msgs == 1 && (rc.return_flags & KDBUS_RECV_RETURN_DROPPED_MSGS));
        CHECK(poll1(fd, POLLIN, 0) == 0);
        memset(&rc, 0xff, sizeof(rc));
        rc.size = sizeof(rc);
        rc.flags = 0;
        CHECK(kio(fd, KDBUS_CMD_RECV, &rc) == -EAGAIN);
        CHECK(rc.return_flags == 0 && rc.dropped_msgs == 0 && rc.msg.offset == 4096 &&
              rc.msg.msg_size == 0 && rc.msg.return_flags == 0);
        /* the bus's notifications count on an account of their own at each reader, with a
         * user's limit (kdbus_conn_quota_inc(), KDBUS_USER_KERNEL_ID): 256 kept, then lost */
        {
                struct {
                        struct kdbus_cmd_match cmd;
                        struct { uint64_t size, type; struct kdbus_notify_id_change c; } id;
                } mi;
                struct kdbus_cmd bye = { .size = sizeof(bye) };
                unsigned i;
                Conn t;

                memset(&mi, 0, sizeof(mi));
                mi.cmd.size = sizeof(mi);
                mi.id.size = sizeof(mi.id);
                mi.id.c.id = KDBUS_MATCH_ID_ANY;
                mi.cmd.cookie = 2;
                mi.id.type = KDBUS_ITEM_ID_ADD;
                CHECK(kio(a.fd, KDBUS_CMD_MATCH_ADD, &mi) == 0);
                mi.cmd.cookie = 3;
                mi.id.type = KDBUS_ITEM_ID_REMOVE;
                CHECK(kio(a.fd, KDBUS_CMD_MATCH_ADD, &mi) == 0);
                /* 129 peers come and go (BYEBYE: their ID_REMOVE is sent when it returns) */
                for (i = 0; i < 129; i++) {
                        CHECK(hello(b.path, &t) == 0 && kio(t.fd, KDBUS_CMD_BYEBYE, &bye) == 0);
                        conn_close(&t);
                }
                memset(&rc, 0, sizeof(rc));
                rc.size = sizeof(rc);
                CHECK(kio(a.fd, KDBUS_CMD_RECV, &rc) == 0 && rc.dropped_msgs == 2 &&
                      (rc.return_flags & KDBUS_RECV_RETURN_DROPPED_MSGS));
                for (i = 1;; i++) {
                        struct kdbus_cmd_free f = { .size = sizeof(f), .offset = rc.msg.offset };

                        CHECK(kio(a.fd, KDBUS_CMD_FREE, &f) == 0);
                        memset(&rc, 0, sizeof(rc));
                        rc.size = sizeof(rc);
                        if (kio(a.fd, KDBUS_CMD_RECV, &rc) == -EAGAIN)
                                break;
                        CHECK(rc.dropped_msgs == 0);
                }
                CHECK(i == 256);
        }
        close(fd);
        conn_close(&a);
        close(b.control);
        return 0;
}

/* message-prio: USE_PRIORITY takes the lowest value first */
static int t_prio(void) {
        const struct kdbus_msg *m;
        Bus b;
        Conn a, c;

        CHECK(bus_make(&b, "prio", KDBUS_MAKE_ACCESS_WORLD) == 0);
        CHECK(hello(b.path, &a) == 0 && hello(b.path, &c) == 0);
        CHECK(call_noreply(&a, &c, 1, 25) == 0);
        CHECK(call_noreply(&a, &c, 2, -600) == 0);
        CHECK(call_noreply(&a, &c, 3, 10) == 0);
        CHECK(recv_msg(&c, KDBUS_RECV_USE_PRIORITY, -1000, NULL) == -EAGAIN);
        CHECK(recv_msg(&c, KDBUS_RECV_USE_PRIORITY, 20, &m) == 0 && m->cookie == 2);
        CHECK(free_at(&c, m) == 0);
        CHECK(recv_msg(&c, KDBUS_RECV_USE_PRIORITY, 20, &m) == 0 && m->cookie == 3);
        CHECK(free_at(&c, m) == 0);
        CHECK(recv_msg(&c, 0, 0, &m) == 0 && m->cookie == 1);
        CHECK(free_at(&c, m) == 0);
        conn_close(&a);
        conn_close(&c);
        close(b.control);
        return 0;
}

/* byebye and the bus going: POLLERR|POLLHUP, then ECONNRESET */
static int t_byebye(void) {
        struct kdbus_cmd bye = { .size = sizeof(bye) };
        Bus b;
        Conn a, c;

        CHECK(bus_make(&b, "bye", KDBUS_MAKE_ACCESS_WORLD) == 0);
        CHECK(hello(b.path, &a) == 0 && hello(b.path, &c) == 0);
        CHECK(call_noreply(&a, &c, 1, 0) == 0);
        CHECK(kio(c.fd, KDBUS_CMD_BYEBYE, &bye) == -EBUSY);
        CHECK(recv_msg(&c, KDBUS_RECV_DROP, 0, NULL) == 0);
        CHECK(kio(c.fd, KDBUS_CMD_BYEBYE, &bye) == 0);
        CHECK(poll1(c.fd, POLLIN, 0) == (POLLERR | POLLHUP));
        CHECK(recv_msg(&c, 0, 0, NULL) == -ECONNRESET);
        conn_close(&c);
        /* the bus goes (its control handle closed): a waiting poll wakes with HUP */
        close(b.control);
        CHECK(poll1(a.fd, POLLIN, 2000) == (POLLERR | POLLHUP));
        CHECK(recv_msg(&a, 0, 0, NULL) == -ECONNRESET);
        conn_close(&a);
        return 0;
}

/* names: acquire, queue, list, release */
static int t_names(void) {
        struct {
                struct kdbus_cmd cmd;
                struct { uint64_t size, type; char str[32]; } name;
        } q;
        struct kdbus_cmd_list l = { .size = sizeof(l), .flags = KDBUS_LIST_NAMES };
        Bus b;
        Conn a, c;
        bool found = false;

        CHECK(bus_make(&b, "names", KDBUS_MAKE_ACCESS_WORLD) == 0);
        CHECK(hello(b.path, &a) == 0 && hello(b.path, &c) == 0);
        memset(&q, 0, sizeof(q));
        q.name.type = KDBUS_ITEM_NAME;
        strcpy(q.name.str, "org.example.Kabi");
        q.name.size = KDBUS_ITEM_HEADER_SIZE + strlen(q.name.str) + 1;
        q.cmd.size = sizeof(q.cmd) + KDBUS_ALIGN8(q.name.size);
        CHECK(kio(a.fd, KDBUS_CMD_NAME_ACQUIRE, &q) == 0);
        CHECK(q.cmd.return_flags & KDBUS_NAME_ACQUIRED);
        q.cmd.flags = 0;
        CHECK(kio(c.fd, KDBUS_CMD_NAME_ACQUIRE, &q) == -EEXIST);
        q.cmd.flags = KDBUS_NAME_QUEUE;
        CHECK(kio(c.fd, KDBUS_CMD_NAME_ACQUIRE, &q) == 0);
        CHECK(q.cmd.return_flags & KDBUS_NAME_IN_QUEUE);
        CHECK(kio(a.fd, KDBUS_CMD_LIST, &l) == 0);
        for (const struct kdbus_info *i = (const void *)(a.pool + l.offset);
             (const uint8_t *)i < a.pool + l.offset + l.list_size;
             i = (const void *)((const uint8_t *)i + KDBUS_ALIGN8(i->size)))
                if (i->id == a.id)
                        found = true;
        CHECK(found);
        CHECK(free_at(&a, a.pool + l.offset) == 0);
        q.cmd.flags = 0;
        CHECK(kio(a.fd, KDBUS_CMD_NAME_RELEASE, &q) == 0);
        CHECK(kio(a.fd, KDBUS_CMD_NAME_RELEASE, &q) == -EADDRINUSE ||
              kio(a.fd, KDBUS_CMD_NAME_RELEASE, &q) == -ESRCH);
        conn_close(&a);
        conn_close(&c);
        close(b.control);
        return 0;
}

/* NAME_ACQUIRE of @name on @fd with @flags. Return: 0 or -errno. */
static int name_acquire(int fd, const char *name, uint64_t flags) {
        struct {
                struct kdbus_cmd cmd;
                struct { uint64_t size, type; char str[40]; } name;
        } q;

        memset(&q, 0, sizeof(q));
        q.cmd.flags = flags;
        q.name.type = KDBUS_ITEM_NAME;
        strcpy(q.name.str, name);
        q.name.size = KDBUS_ITEM_HEADER_SIZE + strlen(name) + 1;
        q.cmd.size = sizeof(q.cmd) + KDBUS_ALIGN8(q.name.size);
        return kio(fd, KDBUS_CMD_NAME_ACQUIRE, &q);
}

typedef struct NobodyTry {
        const char *path;
        const char *own;
        uint64_t dst_id;
} NobodyTry;

static void nobody_try_fn(const void *ctx, int res[2]) {
        const NobodyTry *t = ctx;
        Conn u;

        if (hello(t->path, &u) == 0) {
                res[0] = -name_acquire(u.fd, t->own, 0);
                res[1] = -send_raw(&u, t->dst_id, 1, 0, 0, 0, (uintptr_t)"x", 1, 0, 0, NULL, 0,
                                   NULL);
        }
}

/* As uid/gid 65534: HELLO on @path, own @own, send to @dst_id. Return: the two results as
 * one number (own * 1000 + send, errnos positive), or -1. */
static int nobody_try(const char *path, const char *own, uint64_t dst_id) {
        NobodyTry t = { .path = path, .own = own, .dst_id = dst_id };

        return as_nobody(false, nobody_try_fn, &t);
}

/* policy: kdbus's default on a bus (BUS_MAKE): the unprivileged own only names a policy
 * holder grants them and talk to another user only through a holder's entry for one of
 * its names (kdbus_conn_policy_own_name(), kdbus_conn_policy_talk()); as root only */
static int t_policy(void) {
        struct {
                struct kdbus_cmd_hello h;
                struct { uint64_t size, type; char str[24]; } name;
                struct { uint64_t size, type; struct kdbus_policy_access a; } own;
                uint64_t more[16];
        } hh;
        Bus b;
        Conn a, holder;
        int r;

        if (getuid() != 0)
                return 0;       /* needs another uid */
        CHECK(bus_make(&b, "policy", KDBUS_MAKE_ACCESS_WORLD) == 0);
        CHECK(chmod(b.dir, 0755) == 0);        /* for uid 65534 (run-kabi.py opens DIR) */
        CHECK(hello(b.path, &a) == 0);
        CHECK(name_acquire(a.fd, "org.example.Root", 0) == 0);
        /* no entry: OWN and TALK to root's connection denied */
        r = nobody_try(b.path, "org.example.Mine", a.id);
        CHECK(r == EPERM * 1000 + EPERM);
        /* a holder's entries: OWN of org.example.Mine, TALK to org.example.Root */
        memset(&hh, 0, sizeof(hh));
        holder.fd = open(b.path, O_RDWR | O_CLOEXEC);
        CHECK(holder.fd >= 0);
        hh.h.flags = KDBUS_HELLO_POLICY_HOLDER;
        hh.h.pool_size = POOL;
        hh.name.type = KDBUS_ITEM_NAME;
        strcpy(hh.name.str, "org.example.Mine");
        hh.name.size = KDBUS_ITEM_HEADER_SIZE + strlen(hh.name.str) + 1;
        hh.own.type = KDBUS_ITEM_POLICY_ACCESS;
        hh.own.size = sizeof(hh.own);
        hh.own.a = (struct kdbus_policy_access){ .type = KDBUS_POLICY_ACCESS_WORLD,
                                                 .access = KDBUS_POLICY_OWN };
        hh.h.size = sizeof(hh.h) + sizeof(hh.name) + sizeof(hh.own);
        CHECK(kio(holder.fd, KDBUS_CMD_HELLO, &hh) == 0);
        CHECK(nobody_try(b.path, "org.example.Mine", a.id) == 0 * 1000 + EPERM);
        {
                struct {
                        struct kdbus_cmd cmd;
                        struct { uint64_t size, type; char str[24]; } name;
                        struct { uint64_t size, type; struct kdbus_policy_access a; } talk;
                } u;

                memset(&u, 0, sizeof(u));
                u.cmd.size = sizeof(u);
                u.name.type = KDBUS_ITEM_NAME;
                strcpy(u.name.str, "org.example.Root");
                u.name.size = KDBUS_ITEM_HEADER_SIZE + strlen(u.name.str) + 1;
                u.talk.type = KDBUS_ITEM_POLICY_ACCESS;
                u.talk.size = sizeof(u.talk);
                u.talk.a = (struct kdbus_policy_access){ .type = KDBUS_POLICY_ACCESS_WORLD,
                                                         .access = KDBUS_POLICY_TALK };
                /* a holder's UPDATE replaces its entries: Root's TALK, then Mine's OWN */
                CHECK(kio(holder.fd, KDBUS_CMD_UPDATE, &u) == 0);
                CHECK(nobody_try(b.path, "org.example.Mine", a.id) == EPERM * 1000 + 0);
        }
        close(holder.fd);
        conn_close(&a);
        close(b.control);
        return 0;
}

/* connection-info */
static int t_conn_info(void) {
        struct kdbus_cmd_info i = { .size = sizeof(i),
                                    .attach_flags = KDBUS_ATTACH_CREDS | KDBUS_ATTACH_PIDS };
        const struct kdbus_info *info;
        const struct kdbus_item *it, *pids = NULL;
        Bus b;
        Conn a, c;

        CHECK(bus_make(&b, "info", KDBUS_MAKE_ACCESS_WORLD) == 0);
        CHECK(hello(b.path, &a) == 0 && hello(b.path, &c) == 0);
        i.id = c.id;
        CHECK(kio(a.fd, KDBUS_CMD_CONN_INFO, &i) == 0);
        info = (const void *)(a.pool + i.offset);
        CHECK(info->id == c.id);
        /* PIDS: pid, the thread that said HELLO (here the main one), the parent */
        for (it = info->items; (const uint8_t *)it < (const uint8_t *)info + info->size;
             it = (const void *)((const uint8_t *)it + KDBUS_ALIGN8(it->size)))
                if (it->type == KDBUS_ITEM_PIDS)
                        pids = it;
        CHECK(pids && pids->pids.pid == (uint64_t)getpid() &&
              pids->pids.tid == (uint64_t)getpid() && pids->pids.ppid == (uint64_t)getppid());
        CHECK(free_at(&a, info) == 0);
        i.id = 12345;
        CHECK(kio(a.fd, KDBUS_CMD_CONN_INFO, &i) == -ENXIO);
        conn_close(&a);
        conn_close(&c);
        close(b.control);
        return 0;
}

/* sync: SYNC_REPLY waits for the answer from another process */
static int t_sync(void) {
        const struct kdbus_msg *m;
        struct kdbus_cmd_send ret;
        Bus b;
        Conn a, c;
        W w;
        char dest[32];
        size_t n;
        pid_t pid;
        int st;

        CHECK(bus_make(&b, "sync", KDBUS_MAKE_ACCESS_WORLD) == 0);
        CHECK(hello(b.path, &a) == 0 && hello(b.path, &c) == 0);
        pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) {
                /* the service: answer one call, through the inherited connection */
                W r;
                char to[32];
                size_t rn;

                if (poll1(c.fd, POLLIN, 5000) != POLLIN || recv_msg(&c, 0, 0, &m) < 0)
                        _exit(1);
                (void) snprintf(to, sizeof(to), ":1.%" PRIu64, m->src_id);
                rn = dbus1(&r, 2, 100, (uint32_t)m->cookie, to, NULL, "pong");
                if (send_raw(&c, m->src_id, 100, m->cookie, 0, 0, (uintptr_t)r.b, rn, 0, 0,
                             NULL, 0, NULL) < 0)
                        _exit(2);
                _exit(0);
        }
        (void) snprintf(dest, sizeof(dest), ":1.%" PRIu64, c.id);
        n = dbus1(&w, 1, 5, 0, dest, "Ping", NULL);
        CHECK(send_raw(&a, c.id, 5, 0, KDBUS_MSG_EXPECT_REPLY, 0, (uintptr_t)w.b, n,
                       KDBUS_SEND_SYNC_REPLY, 5000000000, NULL, 0, &ret) == 0);
        m = (const void *)(a.pool + ret.reply.offset);
        CHECK(m->cookie_reply == 5 && m->src_id == c.id);
        CHECK(free_at(&a, m) == 0);
        CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
        /* nobody answers: the absolute deadline ends it */
        n = dbus1(&w, 1, 6, 0, dest, "Ping", NULL);
        CHECK(send_raw(&a, c.id, 6, 0, KDBUS_MSG_EXPECT_REPLY, 0, (uintptr_t)w.b, n,
                       KDBUS_SEND_SYNC_REPLY, 100000000, NULL, 0, &ret) == -ETIMEDOUT);
        conn_close(&a);
        conn_close(&c);
        close(b.control);
        return 0;
}

/* timeout: an unanswered call's REPLY_TIMEOUT notification; at most 128 pending calls */
static int t_timeout(void) {
        const struct kdbus_msg *m;
        Bus b;
        Conn a, c;

        CHECK(bus_make(&b, "timeout", KDBUS_MAKE_ACCESS_WORLD) == 0);
        CHECK(hello(b.path, &a) == 0 && hello(b.path, &c) == 0);
        {
                W w;
                char dest[32];
                size_t n;

                (void) snprintf(dest, sizeof(dest), ":1.%" PRIu64, c.id);
                n = dbus1(&w, 1, 3, 0, dest, "Ping", NULL);
                CHECK(send_raw(&a, c.id, 3, 0, KDBUS_MSG_EXPECT_REPLY, 0, (uintptr_t)w.b, n, 0,
                               100000000, NULL, 0, NULL) == 0);
        }
        CHECK(poll1(a.fd, POLLIN, 3000) == POLLIN);
        CHECK(recv_msg(&a, 0, 0, &m) == 0);
        CHECK(m->src_id == KDBUS_SRC_ID_KERNEL && m->cookie_reply == 3);
        CHECK(m->items[0].type == KDBUS_ITEM_REPLY_TIMEOUT);
        CHECK(free_at(&a, m) == 0);
        /* a caller waits for at most 128 replies (KDBUS_CONN_MAX_REQUESTS_PENDING): the
         * 129th call is EMLINK (kdbus-test message-quota, with timeouts that outlast it) */
        {
                unsigned i;

                for (i = 0; i < 128; i++)
                        CHECK(send_raw(&a, c.id, 100 + i, 0, KDBUS_MSG_EXPECT_REPLY, 0,
                                       (uintptr_t)"x", 1, 0, 60000000000ll, NULL, 0,
                                       NULL) == 0);
                CHECK(send_raw(&a, c.id, 300, 0, KDBUS_MSG_EXPECT_REPLY, 0, (uintptr_t)"x", 1,
                               0, 60000000000ll, NULL, 0, NULL) == -EMLINK);
        }
        conn_close(&a);
        conn_close(&c);
        close(b.control);
        return 0;
}

/* fd-passing: fds travel; a kdbus handle does not (EOPNOTSUPP), a closed fd is EBADF */
static int t_fd_passing(void) {
        const struct kdbus_msg *m;
        Bus b;
        Conn a, c;
        W w;
        char dest[32];
        size_t n;
        int p[2], bad = 1000;

        CHECK(bus_make(&b, "fds", KDBUS_MAKE_ACCESS_WORLD) == 0);
        CHECK(hello(b.path, &a) == 0 && hello(b.path, &c) == 0);
        CHECK(pipe(p) == 0);
        (void) snprintf(dest, sizeof(dest), ":1.%" PRIu64, c.id);
        n = dbus1_fds(&w, 1, 4, 0, dest, "Ping", NULL, 2);
        w.b[2] = 1;
        {
                int two[2] = { p[0], bad };

                CHECK(send_raw(&a, c.id, 4, 0, 0, 0, (uintptr_t)w.b, n, 0, 0, two, 2, NULL) ==
                      -EBADF);
                two[1] = c.fd;
                CHECK(send_raw(&a, c.id, 4, 0, 0, 0, (uintptr_t)w.b, n, 0, 0, two, 2, NULL) ==
                      -EOPNOTSUPP);
        }
        CHECK(send_raw(&a, c.id, 4, 0, 0, 0, (uintptr_t)w.b, n, 0, 0, p, 2, NULL) == 0);
        CHECK(recv_msg(&c, 0, 0, &m) == 0 && m->cookie == 4);
        {
                const struct kdbus_item *fitem = NULL;
                char x = 'x', y = 0;

                for (const struct kdbus_item *it = m->items;
                     (const uint8_t *)it < (const uint8_t *)m + m->size;
                     it = (const void *)((const uint8_t *)it + KDBUS_ALIGN8(it->size)))
                        if (it->type == KDBUS_ITEM_FDS &&
                            it->size == KDBUS_ITEM_HEADER_SIZE + 2 * sizeof(int))
                                fitem = it;
                CHECK(fitem);
                /* installed before RECV returned, their numbers in the slice (kdbus) */
                CHECK(fitem->fds[0] >= 0 && fitem->fds[1] >= 0);
                CHECK(fitem->fds[0] != p[0] && fitem->fds[1] != p[1]);
                CHECK(fcntl(fitem->fds[0], F_GETFD) == FD_CLOEXEC);
                CHECK(write(fitem->fds[1], &x, 1) == 1 && read(p[0], &y, 1) == 1 && y == 'x');
                close(fitem->fds[0]);
                close(fitem->fds[1]);
        }
        CHECK(free_at(&c, m) == 0);
        close(p[0]);
        close(p[1]);
        conn_close(&a);
        conn_close(&c);
        close(b.control);
        return 0;
}

/* opaque payloads: kdbus carried any payload as bytes; kdbus-test sends strings, NULL vecs
 * of padding and memfds of text. What arrives is the sender's items in its order, the
 * vecs' bytes in the pool, the fds installed where they belong. */
static int t_opaque(void) {
        static const char ref[] = "0123456789_0";
        uint64_t buf[64] = { 0 };
        struct kdbus_msg *m = (void *)buf;
        struct kdbus_item *it = m->items;
        struct kdbus_cmd_send cmd = { .size = sizeof(cmd) };
        const struct kdbus_msg *r;
        const struct kdbus_item *ri;
        const uint8_t *data;
        struct stat st;
        Bus b;
        Conn a, c;
        int p[2], memfd;

        CHECK(bus_make(&b, "opaque", KDBUS_MAKE_ACCESS_WORLD) == 0);
        CHECK(hello(b.path, &a) == 0 && hello(b.path, &c) == 0);
        CHECK(pipe(p) == 0);
        memfd = memfd_create("kabi", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        CHECK(memfd >= 0 && write(memfd, "kdbus memfd 1234567", 19) == 19);
        CHECK(fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE |
                                        F_SEAL_SEAL) == 0);
        m->dst_id = c.id;
        m->cookie = 0x1234abcd5678eeffull;
        m->payload_type = KDBUS_PAYLOAD_DBUS;
        it->type = KDBUS_ITEM_PAYLOAD_VEC;
        it->size = KDBUS_ITEM_HEADER_SIZE + sizeof(struct kdbus_vec);
        it->vec.address = (uintptr_t)ref;
        it->vec.size = sizeof(ref);
        it = KDBUS_ITEM_NEXT(it);
        it->type = KDBUS_ITEM_PAYLOAD_VEC;      /* padding: address 0 */
        it->size = KDBUS_ITEM_HEADER_SIZE + sizeof(struct kdbus_vec);
        it->vec.size = KDBUS_ALIGN8(sizeof(ref)) - sizeof(ref);
        it = KDBUS_ITEM_NEXT(it);
        it->type = KDBUS_ITEM_PAYLOAD_MEMFD;
        it->size = KDBUS_ITEM_HEADER_SIZE + sizeof(struct kdbus_memfd);
        it->memfd.fd = memfd;
        it->memfd.size = 16;
        it = KDBUS_ITEM_NEXT(it);
        it->type = KDBUS_ITEM_FDS;
        it->size = KDBUS_ITEM_HEADER_SIZE + sizeof(int);
        it->fds[0] = p[1];
        it = KDBUS_ITEM_NEXT(it);
        m->size = (uint64_t)((uint8_t *)it - (uint8_t *)m);
        cmd.msg_address = (uintptr_t)m;
        CHECK(kio(a.fd, KDBUS_CMD_SEND, &cmd) == 0);
        CHECK(recv_msg(&c, 0, 0, &r) == 0);
        CHECK(r->cookie == 0x1234abcd5678eeffull && r->src_id == a.id &&
              r->payload_type == KDBUS_PAYLOAD_DBUS);
        ri = r->items;
        CHECK(ri->type == KDBUS_ITEM_PAYLOAD_OFF && ri->vec.size == sizeof(ref));
        data = (const uint8_t *)r + ri->vec.offset;
        CHECK(memcmp(data, ref, sizeof(ref)) == 0);
        ri = KDBUS_ITEM_NEXT(ri);
        CHECK(ri->type == KDBUS_ITEM_PAYLOAD_OFF && ri->vec.offset == ~0ull);
        ri = KDBUS_ITEM_NEXT(ri);
        CHECK(ri->type == KDBUS_ITEM_PAYLOAD_MEMFD && ri->memfd.size == 16);
        /* the memfd and the FDS item's fd each where it belongs, installed at RECV */
        CHECK(fcntl(ri->memfd.fd, F_GET_SEALS) > 0);
        {
                char got[16];

                CHECK(pread(ri->memfd.fd, got, 16, 0) == 16 &&
                      memcmp(got, "kdbus memfd 1234", 16) == 0);
        }
        close(ri->memfd.fd);
        ri = KDBUS_ITEM_NEXT(ri);
        CHECK(ri->type == KDBUS_ITEM_FDS && ri->fds[0] >= 0);
        CHECK(fstat(ri->fds[0], &st) == 0 && S_ISFIFO(st.st_mode));
        close(ri->fds[0]);
        CHECK(free_at(&c, r) == 0);
        /* no payload at all */
        memset(buf, 0, sizeof(buf));
        m->size = sizeof(*m);
        m->dst_id = c.id;
        m->cookie = 2;
        m->payload_type = KDBUS_PAYLOAD_DBUS;
        CHECK(kio(a.fd, KDBUS_CMD_SEND, &cmd) == 0);
        CHECK(recv_msg(&c, 0, 0, &r) == 0 && r->cookie == 2 && free_at(&c, r) == 0);
        /* a PAYLOAD_VEC larger than a socket's default send buffer (about 208 KiB; kdbus
         * took up to 2 MiB): 400 KiB to an idle receiver, intact */
        {
                size_t n = 400u << 10, i;
                uint8_t *big = malloc(n);

                CHECK(big);
                for (i = 0; i < n; i++)
                        big[i] = (uint8_t)(i * 7 + i / 4096);
                memset(buf, 0, sizeof(buf));
                m->dst_id = c.id;
                m->cookie = 3;
                m->payload_type = KDBUS_PAYLOAD_DBUS;
                m->items[0].type = KDBUS_ITEM_PAYLOAD_VEC;
                m->items[0].size = KDBUS_ITEM_HEADER_SIZE + sizeof(struct kdbus_vec);
                m->items[0].vec.address = (uintptr_t)big;
                m->items[0].vec.size = n;
                m->size = sizeof(*m) + m->items[0].size;
                CHECK(kio(a.fd, KDBUS_CMD_SEND, &cmd) == 0);
                CHECK(recv_msg(&c, 0, 0, &r) == 0 && r->cookie == 3 &&
                      r->items[0].type == KDBUS_ITEM_PAYLOAD_OFF &&
                      r->items[0].vec.size == n &&
                      memcmp((const uint8_t *)r + r->items[0].vec.offset, big, n) == 0);
                CHECK(free_at(&c, r) == 0);
                free(big);
        }
        close(p[0]);
        close(p[1]);
        close(memfd);
        conn_close(&a);
        conn_close(&c);
        close(b.control);
        return 0;
}

/* match: broadcasts reach only connections with a matching entry */
static int t_match(void) {
        const struct kdbus_msg *m;
        Bus b;
        Conn a, c, d;
        W w;
        size_t n;

        CHECK(bus_make(&b, "match", KDBUS_MAKE_ACCESS_WORLD) == 0);
        CHECK(hello(b.path, &a) == 0 && hello(b.path, &c) == 0 && hello(b.path, &d) == 0);
        CHECK(match_all(c.fd) == 0);
        n = dbus1(&w, 4, 11, 0, NULL, "Changed", NULL);
        CHECK(send_broadcast(&a, 11, KDBUS_PAYLOAD_DBUS, w.b, n) == 0);
        CHECK(poll1(c.fd, POLLIN, 1000) == POLLIN);
        CHECK(recv_msg(&c, 0, 0, &m) == 0 && m->cookie == 11 &&
              m->dst_id == KDBUS_DST_ID_BROADCAST);
        CHECK(free_at(&c, m) == 0);
        CHECK(recv_msg(&d, 0, 0, NULL) == -EAGAIN);
        {
                struct kdbus_cmd_match rm = { .size = sizeof(rm), .cookie = 1 };

                CHECK(kio(c.fd, KDBUS_CMD_MATCH_REMOVE, &rm) == 0);
                CHECK(kio(c.fd, KDBUS_CMD_MATCH_REMOVE, &rm) == -EBADSLT);
        }
        conn_close(&a);
        conn_close(&c);
        conn_close(&d);
        close(b.control);
        return 0;
}

/* monitor: the bus's owner may monitor, it sees a unicast between others and the bus's
 * notifications, never a dbus1 message from the bus itself (kdbus had no driver) */
static int t_monitor(void) {
        const struct kdbus_msg *m;
        Bus b;
        Conn a, c, d, mon;

        CHECK(bus_make(&b, "monitor", KDBUS_MAKE_ACCESS_WORLD) == 0);
        CHECK(hello(b.path, &a) == 0 && hello(b.path, &c) == 0);
        CHECK(hello_flags(b.path, KDBUS_HELLO_MONITOR, &mon) == 0);
        CHECK(hello(b.path, &d) == 0);         /* ID_ADD, not the driver's NameOwnerChanged */
        CHECK(call_noreply(&a, &c, 21, 0) == 0);
        CHECK(poll1(mon.fd, POLLIN, 1000) == POLLIN);
        CHECK(recv_msg(&mon, 0, 0, &m) == 0 && m->payload_type == KDBUS_PAYLOAD_KERNEL &&
              m->items[0].type == KDBUS_ITEM_ID_ADD && m->items[0].id_change.id == d.id);
        CHECK(free_at(&mon, m) == 0);
        CHECK(recv_msg(&mon, 0, 0, &m) == 0 && m->cookie == 21 && m->dst_id == c.id &&
              m->src_id == a.id);
        CHECK(free_at(&mon, m) == 0);
        CHECK(call_noreply(&mon, &c, 22, 0) == -EOPNOTSUPP);
        conn_close(&d);
        conn_close(&a);
        conn_close(&c);
        conn_close(&mon);
        close(b.control);
        return 0;
}

typedef struct NobodyEndpoint {
        const char *path;
        const char *tag;
} NobodyEndpoint;

static void nobody_endpoint_fn(const void *ctx, int res[2]) {
        const NobodyEndpoint *t = ctx;
        struct {
                struct kdbus_cmd cmd;
                struct { uint64_t size, type; char str[64]; } name;
        } e;
        Conn mon;
        int fd = open(t->path, O_RDWR | O_CLOEXEC);

        if (fd < 0)
                return;
        memset(&e, 0, sizeof(e));
        e.name.type = KDBUS_ITEM_MAKE_NAME;
        (void) snprintf(e.name.str, sizeof(e.name.str), "65534-%s", t->tag);
        e.name.size = KDBUS_ITEM_HEADER_SIZE + strlen(e.name.str) + 1;
        e.cmd.size = sizeof(e.cmd) + KDBUS_ALIGN8(e.name.size);
        res[0] = -kio(fd, KDBUS_CMD_ENDPOINT_MAKE, &e);
        res[1] = -hello_flags(t->path, KDBUS_HELLO_MONITOR, &mon);
        close(mon.fd);
}

/* As uid/gid 65534, with CAP_IPC_OWNER effective if @cap: ENDPOINT_MAKE of "65534-@tag" on
 * the bus node @path, then HELLO as a monitor. Return: the two results as one number
 * (make * 1000 + monitor, errnos positive), or -1. */
static int nobody_privileged(const char *path, const char *tag, bool cap) {
        NobodyEndpoint t = { .path = path, .tag = tag };

        return as_nobody(cap, nobody_endpoint_fn, &t);
}

/* endpoint: a custom endpoint's node in the bus's directory, its policy applies; who may
 * make one (kdbus_ep_is_owner(): the bus's owner or CAP_IPC_OWNER, else EPERM) */
static int t_endpoint(void) {
        struct {
                struct kdbus_cmd cmd;
                struct { uint64_t size, type; char str[64]; } name;
        } e;
        char path[700];
        struct stat st;
        Bus b;
        Conn c;
        int owner;

        CHECK(bus_make(&b, "ep", KDBUS_MAKE_ACCESS_WORLD) == 0);
        owner = open(b.path, O_RDWR | O_CLOEXEC);
        CHECK(owner >= 0);
        memset(&e, 0, sizeof(e));
        e.name.type = KDBUS_ITEM_MAKE_NAME;
        (void) snprintf(e.name.str, sizeof(e.name.str), "%u-kabi", getuid());
        e.name.size = KDBUS_ITEM_HEADER_SIZE + strlen(e.name.str) + 1;
        e.cmd.size = sizeof(e.cmd) + KDBUS_ALIGN8(e.name.size);
        e.cmd.flags = KDBUS_MAKE_ACCESS_WORLD;
        CHECK(kio(owner, KDBUS_CMD_ENDPOINT_MAKE, &e) == 0);
        (void) snprintf(path, sizeof(path), "%s/%s", b.dir, e.name.str);
        CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0666);
        CHECK(hello(path, &c) == 0);
        /* an endpoint's peers are never privileged: no monitor through it */
        {
                Conn mon;

                CHECK(hello_flags(path, KDBUS_HELLO_MONITOR, &mon) == -EOPNOTSUPP);
                close(mon.fd);
        }
        /* another uid: EPERM for both; with CAP_IPC_OWNER: both allowed (as root only) */
        if (getuid() == 0) {
                CHECK(chmod(b.dir, 0755) == 0);
                CHECK(nobody_privileged(b.path, "plain", false) == EPERM * 1000 + EPERM);
                CHECK(nobody_privileged(b.path, "capable", true) == 0);
        }
        conn_close(&c);
        close(owner);
        close(b.control);
        return 0;
}

/* dup, select, epoll, threads: the handle as a file */
static void *t_thread_send(void *p) {
        Conn **cc = p;

        return (void *)(intptr_t)call_noreply(cc[0], cc[1], 31, 0);
}

static int t_fdops(void) {
        const struct kdbus_msg *m;
        struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 77 }, out;
        Bus b;
        Conn a, c, *cc[2] = { &a, &c };
        pthread_t t;
        void *tr;
        fd_set rd;
        struct timeval tv = { 1, 0 };
        int ep, d;

        CHECK(bus_make(&b, "fdops", KDBUS_MAKE_ACCESS_WORLD) == 0);
        CHECK(hello(b.path, &a) == 0 && hello(b.path, &c) == 0);
        ep = epoll_create1(EPOLL_CLOEXEC);
        CHECK(ep >= 0);
        CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, c.fd, &ev) == 0);
        CHECK(epoll_wait(ep, &out, 1, 0) == 0);
        CHECK(pthread_create(&t, NULL, t_thread_send, cc) == 0);
        CHECK(pthread_join(t, &tr) == 0 && tr == NULL);
        CHECK(epoll_wait(ep, &out, 1, 1000) == 1 && out.data.u64 == 77);
        FD_ZERO(&rd);
        FD_SET(c.fd, &rd);
        CHECK(select(c.fd + 1, &rd, NULL, NULL, &tv) == 1 && FD_ISSET(c.fd, &rd));
        /* a dup is the same handle; it stays when the first fd is closed */
        d = dup(c.fd);
        CHECK(d >= 0);
        close(c.fd);
        c.fd = d;
        CHECK(recv_msg(&c, 0, 0, &m) == 0 && m->cookie == 31);
        CHECK(free_at(&c, m) == 0);
        CHECK(epoll_wait(ep, &out, 1, 0) == 0);
        close(ep);
        conn_close(&a);
        conn_close(&c);
        close(b.control);
        return 0;
}

static const struct {
        const char *name;
        int (*run)(void);
} cases[] = {
        { "bus-make", t_bus_make },
        { "hello", t_hello },
        { "writable-pool", t_writable_pool },
        { "message", t_message },
        { "message-prio", t_prio },
        { "dropped", t_dropped },
        { "byebye", t_byebye },
        { "names", t_names },
        { "connection-info", t_conn_info },
        { "policy", t_policy },
        { "sync", t_sync },
        { "timeout", t_timeout },
        { "fd-passing", t_fd_passing },
        { "opaque", t_opaque },
        { "match", t_match },
        { "monitor", t_monitor },
        { "endpoint", t_endpoint },
        { "fdops", t_fdops },
        { "threads", t_threads },
        { "threads-sync", t_threads_sync },
        { "fork", t_fork },
        { "held", t_held },
        { "held-free", t_held_free },
        { "joined", t_joined },
        { "pool-full", t_pool_full },
        { "free-room", t_free_room },
        { "kept-drop", t_kept_drop },
        { "kept-prio", t_kept_prio },
        { "kept-count", t_kept_count },
};

/*
 * --serve: a service on the kernel interface alone, for legacy clients (dbus-send, gdbus,
 * busctl through the bus's .dbus1 socket): a bus of its own, the name org.example.Kabi,
 * Ping(s) answered "pong:<s>", Quit ends it. Prints "bus PATH" (the bus node) once ready.
 */
static int serve(void) {
        struct {
                struct kdbus_cmd cmd;
                struct { uint64_t size, type; char str[32]; } name;
        } q;
        const struct kdbus_msg *m;
        Bus b;
        Conn c;
        bool quit = false;

        CHECK(bus_make(&b, "svc", KDBUS_MAKE_ACCESS_WORLD) == 0);
        CHECK(hello(b.path, &c) == 0);
        memset(&q, 0, sizeof(q));
        q.name.type = KDBUS_ITEM_NAME;
        strcpy(q.name.str, "org.example.Kabi");
        q.name.size = KDBUS_ITEM_HEADER_SIZE + strlen(q.name.str) + 1;
        q.cmd.size = sizeof(q.cmd) + KDBUS_ALIGN8(q.name.size);
        CHECK(kio(c.fd, KDBUS_CMD_NAME_ACQUIRE, &q) == 0);
        printf("bus %s\n", b.path);
        fflush(stdout);
        while (!quit) {
                R r;
                W w;
                char to[32], out[300];
                size_t n;
                int e;

                CHECK(poll1(c.fd, POLLIN, 30000) == POLLIN);
                while ((e = recv_msg(&c, 0, 0, &m)) == 0) {
                        if (dbus1_read(m, &r) == 0 && r.type == 1 &&
                            (m->flags & KDBUS_MSG_EXPECT_REPLY)) {
                                (void) snprintf(to, sizeof(to), ":1.%" PRIu64, m->src_id);
                                (void) snprintf(out, sizeof(out), "pong:%s", r.arg);
                                n = dbus1(&w, 2, (uint32_t)m->cookie + 1000, (uint32_t)m->cookie,
                                          to, NULL, out);
                                CHECK(send_raw(&c, m->src_id, m->cookie + 1000, m->cookie, 0, 0,
                                               (uintptr_t)w.b, n, 0, 0, NULL, 0, NULL) == 0);
                        }
                        quit |= !strcmp(r.member, "Quit");
                        CHECK(free_at(&c, m) == 0);
                }
                CHECK(e == -EAGAIN);
        }
        conn_close(&c);
        close(b.control);
        return 0;
}

/*
 * --call BUS NAME: a client on the kernel interface alone calls NAME's Echo("kabi") on the
 * bus node BUS (a dbus-python service, tests/integration/py-service.py) with SYNC_REPLY,
 * by name (DST_NAME), and prints what it answered.
 */
static int call_echo(const char *bus, const char *name) {
        uint64_t buf[64] = { 0 };
        struct kdbus_msg *msg = (void *)buf;
        struct kdbus_item *it = msg->items;
        struct kdbus_cmd_send s = { .size = sizeof(s), .flags = KDBUS_SEND_SYNC_REPLY };
        const struct kdbus_msg *m;
        struct timespec now;
        Conn c;
        W w;
        R r;
        size_t n;

        CHECK(hello(bus, &c) == 0);
        n = dbus1_full(&w, 1, 1, 0, "/com/example/Obj", "com.example.Iface", name, "Echo",
                       "kabi", 0);
        clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
        msg->dst_id = KDBUS_DST_ID_NAME;
        msg->cookie = 1;
        msg->flags = KDBUS_MSG_EXPECT_REPLY;
        msg->payload_type = KDBUS_PAYLOAD_DBUS;
        msg->timeout_ns = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec +
                          5000000000ull;
        it->type = KDBUS_ITEM_PAYLOAD_VEC;
        it->size = KDBUS_ITEM_HEADER_SIZE + sizeof(struct kdbus_vec);
        it->vec.address = (uintptr_t)w.b;
        it->vec.size = n;
        it = KDBUS_ITEM_NEXT(it);
        it->type = KDBUS_ITEM_DST_NAME;
        it->size = KDBUS_ITEM_HEADER_SIZE + strlen(name) + 1;
        strcpy(it->str, name);
        it = KDBUS_ITEM_NEXT(it);
        msg->size = (uint64_t)((uint8_t *)it - (uint8_t *)msg);
        s.msg_address = (uintptr_t)msg;
        CHECK(kio(c.fd, KDBUS_CMD_SEND, &s) == 0);
        m = (const void *)(c.pool + s.reply.offset);
        CHECK(dbus1_read(m, &r) == 0 && r.type == 2 && r.has_arg);
        printf("echo: %s\n", r.arg);
        CHECK(free_at(&c, m) == 0);
        conn_close(&c);
        return 0;
}

int main(int argc, char **argv) {
        unsigned failed = 0, ran = 0;
        int i = 1;

        if (argc < 3 || strcmp(argv[1], "--root")) {
                fprintf(stderr, "usage: %s --root DIR [CASE...]\n", argv[0]);
                return 2;
        }
        root = argv[2];
        if (argc == 4 && !strcmp(argv[3], "--serve"))
                return serve() < 0 ? 1 : 0;
        if (argc == 6 && !strcmp(argv[3], "--call"))
                return call_echo(argv[4], argv[5]) < 0 ? 1 : 0;
        for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
                bool want = argc == 3;

                for (i = 3; i < argc; i++)
                        want |= !strcmp(argv[i], cases[k].name);
                if (!want)
                        continue;
                ran++;
                if (cases[k].run() < 0) {
                        printf("FAIL %s\n", cases[k].name);
                        failed++;
                } else
                        printf("ok %s\n", cases[k].name);
                fflush(stdout);
        }
        printf("%u of %u cases failed\n", failed, ran);
        return failed || !ran ? 1 : 0;
}
