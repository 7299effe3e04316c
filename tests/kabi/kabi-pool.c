/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The receive pool as kdbus had it (ipc/kdbus/pool.c, connection.c of its final tree),
 * through libkdbus-preload.so: no queue in front of the pool (a SEND that finds no free
 * range fails EXFULL at once, kdbus_pool_slice_alloc(); a FREE then brings nothing), and a
 * FREE's slice is free when FREE returns, also one the library answered itself while
 * poll() waits with a held RECV. The sender is another process, whose requests never
 * carry this one's FREEs.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "kdbus/kdbus.h"
#include "kabi.h"

/* A sender in a child process: told (dst, cookie, size) through a pipe, it SENDs that many
 * opaque bytes and writes back the SEND's result. */
typedef struct Sender {
        pid_t pid;
        int cmd;
        int res;
} Sender;

typedef struct SenderCmd {
        uint64_t dst, cookie, size;
} SenderCmd;

static uint8_t big[400 * 1024];

/* Forked before the receiver's HELLO: a handle open at a fork is shared, never armed. */
static int sender_start(Sender *s, const char *path) {
        int c[2], r[2];

        if (pipe(c) < 0 || pipe(r) < 0)
                return -1;
        s->pid = fork();
        if (s->pid < 0)
                return -1;
        if (s->pid == 0) {
                SenderCmd k;
                Conn me;
                int res;

                close(c[1]);
                close(r[0]);
                if (hello(path, &me) < 0)
                        _exit(1);
                while (read(c[0], &k, sizeof(k)) == sizeof(k)) {
                        res = k.size <= sizeof(big) ?
                              send_opaque(&me, k.dst, k.cookie, big, k.size) : -E2BIG;
                        if (write(r[1], &res, sizeof(res)) != sizeof(res))
                                _exit(1);
                }
                _exit(0);
        }
        close(c[0]);
        close(r[1]);
        s->cmd = c[1];
        s->res = r[0];
        return 0;
}

/* Return: the child's SEND result (0 or -errno), or -EIO (the child is gone). */
static int sender_send(Sender *s, uint64_t dst, uint64_t cookie, size_t size) {
        SenderCmd k = { dst, cookie, size };
        int res;

        if (write(s->cmd, &k, sizeof(k)) != sizeof(k) || read(s->res, &res, sizeof(res)) != sizeof(res))
                return -EIO;
        return res;
}

static int sender_stop(Sender *s) {
        int st;

        close(s->cmd);
        close(s->res);
        return waitpid(s->pid, &st, 0) == s->pid && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

/* The next message after poll() said POLLIN: its offset and slice size. */
static int recv_next(Conn *c, uint64_t cookie, struct kdbus_cmd_recv *r) {
        const struct kdbus_msg *m;
        int q;

        if (poll1(c->fd, POLLIN, 2000) != POLLIN)
                return -ETIMEDOUT;
        memset(r, 0, sizeof(*r));
        r->size = sizeof(*r);
        q = kio(c->fd, KDBUS_CMD_RECV, r);
        if (q < 0)
                return q;
        m = (const void *)(c->pool + r->msg.offset);
        return m->cookie == cookie ? 0 : -EBADMSG;
}

/*
 * pool-full: the receiver keeps what it received; the fourth message of 300 KiB finds no
 * room in its 1 MiB pool and its SEND is EXFULL at once (nothing waits, nothing comes
 * later); a FREE then brings nothing, and the same SEND passes.
 */
int t_pool_full(void) {
        struct kdbus_cmd_recv r, first = { 0 };
        struct kdbus_cmd_free f = { .size = sizeof(f) };
        Sender s;
        Bus b;
        Conn a;
        unsigned i;
        int q = 0;

        CHECK(bus_make(&b, "pfull", KDBUS_MAKE_ACCESS_WORLD) == 0);
        CHECK(sender_start(&s, b.path) == 0);
        CHECK(hello(b.path, &a) == 0);
        for (i = 0; i < 4; i++) {
                q = sender_send(&s, a.id, 1 + i, 300 * 1024);
                if (q)
                        break;
                CHECK(recv_next(&a, 1 + i, &r) == 0);
                if (i == 0)
                        first = r;
        }
        CHECK(i == 3 && q == -EXFULL);
        CHECK(poll1(a.fd, POLLIN, 100) == 0);
        f.offset = first.msg.offset;
        CHECK(kio(a.fd, KDBUS_CMD_FREE, &f) == 0);
        CHECK(poll1(a.fd, POLLIN, 100) == 0);
        CHECK(sender_send(&s, a.id, 9, 300 * 1024) == 0);
        CHECK(recv_next(&a, 9, &r) == 0);
        CHECK(sender_stop(&s) == 0);
        conn_close(&a);
        close(b.control);
        return 0;
}

/*
 * free-room: the pool full but for a small message the receiver then FREEs (the library
 * answers that FREE and does not send it; poll() then waits with a held RECV): a message
 * of the same size from another process fits at once, as the slice was free in kdbus when
 * FREE returned; and a second FREE of it is ENXIO.
 */
int t_free_room(void) {
        struct kdbus_cmd_recv r, small;
        struct kdbus_cmd_free f = { .size = sizeof(f) };
        uint64_t end, overhead, cookie = 2;
        Sender s;
        Bus b;
        Conn a;

        CHECK(bus_make(&b, "froom", KDBUS_MAKE_ACCESS_WORLD) == 0);
        CHECK(sender_start(&s, b.path) == 0);
        CHECK(hello(b.path, &a) == 0);
        CHECK(sender_send(&s, a.id, 1, 1024) == 0);
        CHECK(recv_next(&a, 1, &small) == 0);
        CHECK(small.msg.offset == 0 && small.msg.msg_size > 1024);
        /* the slices follow each other from 0; fill to the end exactly */
        overhead = small.msg.msg_size - 1024;
        end = small.msg.msg_size;
        while (POOL - end > overhead) {
                uint64_t n = POOL - end - overhead;

                if (n > 300 * 1024 && n - 300 * 1024 > overhead + 64)
                        n = 300 * 1024;
                CHECK(sender_send(&s, a.id, cookie, n) == 0);
                CHECK(recv_next(&a, cookie++, &r) == 0);
                CHECK(r.msg.offset == end);
                end += r.msg.msg_size;
        }
        CHECK(end == POOL);
        CHECK(sender_send(&s, a.id, cookie, 1024) == -EXFULL);
        f.offset = small.msg.offset;
        CHECK(kio(a.fd, KDBUS_CMD_FREE, &f) == 0);
        CHECK(poll1(a.fd, POLLIN, 50) == 0);
        CHECK(sender_send(&s, a.id, cookie, 1024) == 0);
        CHECK(recv_next(&a, cookie, &r) == 0 && r.msg.offset == 0);
        f.offset = r.msg.offset;
        CHECK(kio(a.fd, KDBUS_CMD_FREE, &f) == 0);
        CHECK(kio(a.fd, KDBUS_CMD_FREE, &f) == -ENXIO);
        CHECK(poll1(a.fd, POLLIN, 50) == 0);
        CHECK(kio(a.fd, KDBUS_CMD_FREE, &f) == -ENXIO);
        CHECK(sender_stop(&s) == 0);
        conn_close(&a);
        close(b.control);
        return 0;
}
