/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * kdbus-kabi-bench: a client and a service written only against kdbus's kernel interface
 * (open() of kdbusfs nodes, ioctl(), mmap() of the pool, poll(); no libkdbus), as an
 * unmodified kdbus program is. Run under libkdbus-preload.so against kdbusd --kdbusfs=DIR
 * (bench/native.sh: the library is preloaded into this program only):
 *
 *   LD_PRELOAD=build/preload/libkdbus-preload.so kdbus-kabi-bench --root DIR ...
 *
 * It makes a bus of its own through DIR/control (BUS_MAKE), forks the service (HELLO,
 * NAME_ACQUIRE org.kdbus.Bench, then: poll, RECV until EAGAIN, answer each call with an
 * empty method return, FREE), and the client calls org.kdbus.Bench.Ping by name
 * (DST_NAME) with a body "ay":
 *
 *   call:     8 bytes inline, one call in flight: SEND with EXPECT_REPLY, poll, RECV,
 *             FREE (what a plain kdbus program does); --sync: SEND with SYNC_REPLY (the
 *             reply's offset comes back with the SEND), FREE.
 *   pipeline: the same calls, --inflight N of them outstanding: whenever poll says POLLIN,
 *             RECV until EAGAIN, FREE each reply and SEND the next call.
 *   memfd:    --size bytes in a sealed memfd (PAYLOAD_MEMFD; the dbus1 header inline, its
 *             body by reference), one call in flight as `call` (--sync as there); the
 *             service maps the memfd it received and reads the body's first and last byte,
 *             as kdbus-native-bench --workload memfd does.
 *
 * Each round runs --seconds (with --calls N, the call and memfd workloads: exactly N calls
 * instead, for an instruction count of the bus taken over two counts), after a warm-up
 * round; --repeat rounds; the RESULT line gives
 * the median calls/s (as kdbus-native-bench's) and, with --bus-pid, the bus's CPU time
 * (utime + stime from /proc/PID/stat) per call over the timed rounds; the peers' (client
 * and service, the preload library's work included) too.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "bench/bench-kmsg.h"
#include "bench/bench-stat.h"
#include "kdbus/kdbus.h"
#include "wire/endian.h"
#include "wire/message.h"
#include "wire/writer.h"

#define POOL (8u << 20)
#define SERVICE "org.kdbus.Bench"
#define MAX_REPEAT 50
#define MAX_INFLIGHT 1024
#define CALL_TIMEOUT_NS 30000000000ull  /* the absolute deadline a call carries: now + 30 s */

typedef struct Options {
        const char *root;
        const char *workload;
        size_t size;
        double seconds;
        unsigned long calls;    /* 0: rounds of --seconds */
        unsigned repeat;
        unsigned inflight;
        int bus_pid;
        bool sync;
} Options;

typedef struct Conn {
        int fd;
        uint64_t id;
        const uint8_t *pool;
} Conn;

/* A call ready to SEND: the kdbus_msg with its items, pointing at the dbus1 bytes. */
typedef struct Call {
        uint64_t buf[64];               /* struct kdbus_msg and its items, 8-aligned */
        struct kdbus_msg *msg;
        uint8_t *dbus1;                 /* the PAYLOAD_VEC bytes (header, inline body) */
        uint32_t serial;
} Call;

/* ioctl() as kdbus's own sample code wraps it: 0 or -errno */
static int kio(int fd, unsigned long cmd, void *arg) {
        return ioctl(fd, cmd, arg) < 0 ? -errno : 0;
}

static int fail(const char *what, int r) {
        fprintf(stderr, "kdbus-kabi-bench: %s: %s\n", what, strerror(-r));
        return r;
}

/* BUS_MAKE "<uid>-kbench-<pid>" through @root/control; the bus lives while @ret_control
 * is open. @ret_path: the bus node. */
static int bus_make(const char *root, int *ret_control, char *ret_path, size_t n) {
        struct {
                struct kdbus_cmd cmd;
                struct { uint64_t size, type; struct kdbus_bloom_parameter p; } bloom;
                struct { uint64_t size, type; char str[64]; } name;
        } m;
        char path[4096];
        int fd, r;

        memset(&m, 0, sizeof(m));
        (void) snprintf(path, sizeof(path), "%s/control", root);
        fd = open(path, O_RDWR | O_CLOEXEC);
        if (fd < 0)
                return fail(path, -errno);
        m.bloom.size = sizeof(m.bloom);
        m.bloom.type = KDBUS_ITEM_BLOOM_PARAMETER;
        m.bloom.p.size = 64;
        m.bloom.p.n_hash = 1;
        m.name.type = KDBUS_ITEM_MAKE_NAME;
        (void) snprintf(m.name.str, sizeof(m.name.str), "%u-kbench-%d", (unsigned) getuid(),
                        (int) getpid());
        m.name.size = KDBUS_ITEM_HEADER_SIZE + strlen(m.name.str) + 1;
        m.cmd.size = sizeof(m.cmd) + sizeof(m.bloom) + KDBUS_ALIGN8(m.name.size);
        r = kio(fd, KDBUS_CMD_BUS_MAKE, &m);
        if (r < 0) {
                (void) close(fd);
                return fail("BUS_MAKE", r);
        }
        (void) snprintf(ret_path, n, "%s/%s/bus", root, m.name.str);
        *ret_control = fd;
        return 0;
}

static int conn_free(const Conn *c, const void *p) {
        struct kdbus_cmd_free f = { .size = sizeof(f),
                                    .offset = (uint64_t) ((const uint8_t *) p - c->pool) };

        return kio(c->fd, KDBUS_CMD_FREE, &f);
}

/* open() the bus node, HELLO, mmap() the pool (read-only, as kdbus maps it) */
static int conn_hello(const char *path, Conn *ret) {
        struct kdbus_cmd_hello h = {
                .size = sizeof(h), .flags = KDBUS_HELLO_ACCEPT_FD, .pool_size = POOL,
                /* consent to what libkdbus consents to, so both benchmarks cost the same;
                 * nobody asks for metadata (attach_flags_recv 0) */
                .attach_flags_send = KDBUS_ATTACH_TIMESTAMP | KDBUS_ATTACH_CREDS |
                                     KDBUS_ATTACH_PIDS | KDBUS_ATTACH_AUXGROUPS |
                                     KDBUS_ATTACH_SECLABEL,
        };
        Conn c = { .fd = open(path, O_RDWR | O_CLOEXEC) };
        void *pool;
        int r;

        if (c.fd < 0)
                return fail(path, -errno);
        r = kio(c.fd, KDBUS_CMD_HELLO, &h);
        if (r < 0) {
                (void) close(c.fd);
                return fail("HELLO", r);
        }
        pool = mmap(NULL, POOL, PROT_READ, MAP_SHARED, c.fd, 0);
        if (pool == MAP_FAILED) {
                r = -errno;
                (void) close(c.fd);
                return fail("mmap of the pool", r);
        }
        c.pool = pool;
        c.id = h.id;
        r = conn_free(&c, c.pool + h.offset);   /* HELLO's items */
        if (r < 0)
                return fail("FREE of HELLO's items", r);
        *ret = c;
        return 0;
}

/* RECV one message: 0 (in @ret), -EAGAIN (none waits) or -errno */
static int conn_recv(const Conn *c, const struct kdbus_msg **ret) {
        struct kdbus_cmd_recv r = { .size = sizeof(r) };
        int q = kio(c->fd, KDBUS_CMD_RECV, &r);

        if (q == 0)
                *ret = (const void *) (c->pool + r.msg.offset);
        return q;
}

static int conn_wait(const Conn *c) {
        struct pollfd p = { .fd = c->fd, .events = POLLIN };

        for (;;) {
                if (poll(&p, 1, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                return p.revents & (POLLERR | POLLHUP) ? -ECONNRESET : 0;
        }
}

static int name_acquire(const Conn *c, const char *name) {
        struct {
                struct kdbus_cmd cmd;
                struct { uint64_t size, type; char str[64]; } name;
        } q;

        memset(&q, 0, sizeof(q));
        q.name.type = KDBUS_ITEM_NAME;
        (void) snprintf(q.name.str, sizeof(q.name.str), "%s", name);
        q.name.size = KDBUS_ITEM_HEADER_SIZE + strlen(q.name.str) + 1;
        q.cmd.size = sizeof(q.cmd) + KDBUS_ALIGN8(q.name.size);
        return kio(c->fd, KDBUS_CMD_NAME_ACQUIRE, &q);
}

/* SEND the kdbus_msg @m; @flags KDBUS_SEND_*; with SYNC_REPLY the reply in @ret_reply */
static int conn_send(const Conn *c, struct kdbus_msg *m, uint64_t flags,
                     const struct kdbus_msg **ret_reply) {
        struct kdbus_cmd_send s = { .size = sizeof(s), .flags = flags,
                                    .msg_address = (uintptr_t) m };
        int r;

        m->src_id = c->id;
        r = kio(c->fd, KDBUS_CMD_SEND, &s);
        if (r == 0 && ret_reply)
                *ret_reply = (const void *) (c->pool + s.reply.offset);
        return r;
}

static struct kdbus_item *item_append(struct kdbus_item *it, uint64_t type, uint64_t size) {
        it->type = type;
        it->size = KDBUS_ITEM_HEADER_SIZE + size;
        return it;
}

/* Touch what a message carries as a receiver using it would (a memfd body's first and last
 * byte) and close the fds RECV installed for it. */
static int msg_consume(const struct kdbus_msg *m) {
        const struct kdbus_item *it;
        int r = 0;

        KDBUS_ITEMS_FOREACH(it, m->items, m->size - offsetof(struct kdbus_msg, items)) {
                if (it->type == KDBUS_ITEM_PAYLOAD_MEMFD) {
                        volatile uint8_t sink;
                        uint8_t *map;
                        size_t len = it->memfd.start + it->memfd.size;

                        if (it->memfd.fd < 0)
                                return -EBADF;
                        map = mmap(NULL, len, PROT_READ, MAP_SHARED, it->memfd.fd, 0);
                        if (map == MAP_FAILED)
                                r = -errno;
                        else {
                                if (it->memfd.size) {
                                        sink = map[it->memfd.start];
                                        sink = map[len - 1];
                                        (void) sink;
                                }
                                (void) munmap(map, len);
                        }
                        (void) close(it->memfd.fd);
                } else if (it->type == KDBUS_ITEM_FDS) {
                        size_t i, n = (it->size - KDBUS_ITEM_HEADER_SIZE) / sizeof(int);

                        for (i = 0; i < n; ++i)
                                if (it->fds[i] >= 0)
                                        (void) close(it->fds[i]);
                }
        }
        return r;
}

/* The dbus1 message type of @m (its first PAYLOAD_OFF's byte 1), or 0 */
static uint8_t msg_dbus1_type(const struct kdbus_msg *m) {
        const struct kdbus_item *it;

        KDBUS_ITEMS_FOREACH(it, m->items, m->size - offsetof(struct kdbus_msg, items))
                if (it->type == KDBUS_ITEM_PAYLOAD_OFF && it->vec.size >= 16)
                        return ((const uint8_t *) m)[it->vec.offset + 1];
        return 0;
}

/* The service's answer to the call @m: an empty method return, SENT. */
static int service_reply(const Conn *c, const struct kdbus_msg *m, uint32_t serial) {
        uint64_t buf[64] = { 0 };       /* a kdbus_msg and its items (a kdbus_item is 80 bytes) */
        struct kdbus_msg *r = (void *) buf;
        struct kdbus_item *it = r->items;
        char dest[32];
        WireMsgSpec spec = { .type = WIRE_MSG_METHOD_RETURN, .serial = serial,
                             .reply_serial = (uint32_t) m->cookie, .destination = dest };
        uint8_t *data = NULL;
        size_t size;
        int q;

        snprintf(dest, sizeof(dest), ":1.%llu", (unsigned long long) m->src_id);
        if (wire_message_build(&spec, NULL, &data, &size))
                return -ENOMEM;
        r->dst_id = m->src_id;
        r->payload_type = KDBUS_PAYLOAD_DBUS;
        r->cookie = serial;
        r->cookie_reply = m->cookie;
        item_append(it, KDBUS_ITEM_PAYLOAD_VEC, sizeof(struct kdbus_vec));
        it->vec.address = (uintptr_t) data;
        it->vec.size = size;
        it = KDBUS_ITEM_NEXT(it);
        r->size = (uint64_t) ((uint8_t *) it - (uint8_t *) r);
        q = conn_send(c, r, 0, NULL);
        free(data);
        return q;
}

/* The service: poll, RECV until EAGAIN, answer every call, FREE. */
static int service_run(const char *bus, int ready_fd) {
        uint32_t serial = 0;
        Conn c;
        int r;

        r = conn_hello(bus, &c);
        if (r)
                return r;
        r = name_acquire(&c, SERVICE);
        if (r)
                return fail("NAME_ACQUIRE " SERVICE, r);
        if (write(ready_fd, &c.id, sizeof(c.id)) != sizeof(c.id))
                return -EIO;
        for (;;) {
                const struct kdbus_msg *m;

                r = conn_wait(&c);
                if (r)
                        return fail("service: poll", r);
                while ((r = conn_recv(&c, &m)) == 0) {
                        r = msg_consume(m);
                        if (r == 0 && (m->flags & KDBUS_MSG_EXPECT_REPLY)) {
                                if (++serial == 0)
                                        serial = 1;
                                r = service_reply(&c, m, serial);
                        }
                        if (r == 0)
                                r = conn_free(&c, m);
                        if (r)
                                return fail("service: reply", r);
                }
                if (r != -EAGAIN)
                        return fail("service: RECV", r);
        }
}

/* The call: kdbus_msg to SERVICE by name, PAYLOAD_VEC of the dbus1 header (and inline
 * body), the memfd @memfd (-1: none) holding a body of @n bytes. */
static int call_init(Call *call, size_t n, int memfd) {
        struct kdbus_item *it;
        size_t size, body_offset;

        memset(call, 0, sizeof(*call));
        call->dbus1 = bench_kmsg_call(SERVICE, n, memfd < 0, &size, &body_offset);
        if (!call->dbus1)
                return -ENOMEM;
        call->msg = (void *) call->buf;
        call->msg->dst_id = KDBUS_DST_ID_NAME;
        call->msg->flags = KDBUS_MSG_EXPECT_REPLY;
        call->msg->payload_type = KDBUS_PAYLOAD_DBUS;
        it = item_append(call->msg->items, KDBUS_ITEM_PAYLOAD_VEC, sizeof(struct kdbus_vec));
        it->vec.address = (uintptr_t) call->dbus1;
        it->vec.size = size;
        it = KDBUS_ITEM_NEXT(it);
        if (memfd >= 0) {
                item_append(it, KDBUS_ITEM_PAYLOAD_MEMFD, sizeof(struct kdbus_memfd));
                it->memfd.start = 0;
                it->memfd.size = 4 + n;
                it->memfd.fd = memfd;
                it = KDBUS_ITEM_NEXT(it);
        }
        item_append(it, KDBUS_ITEM_DST_NAME, sizeof(SERVICE));
        memcpy(it->str, SERVICE, sizeof(SERVICE));
        it = KDBUS_ITEM_NEXT(it);
        call->msg->size = (uint64_t) ((uint8_t *) it - (uint8_t *) call->msg);
        return 0;
}

/* Send the next call: a new serial (the dbus1 header's and the cookie), a fresh deadline. */
static int call_send(const Conn *c, Call *call, bool sync, const struct kdbus_msg **ret_reply) {
        struct timespec now;

        if (++call->serial == 0)
                call->serial = 1;
        wire_store32(call->dbus1 + 8, false, call->serial);
        call->msg->cookie = call->serial;
        clock_gettime(CLOCK_MONOTONIC, &now);
        call->msg->timeout_ns = (uint64_t) now.tv_sec * 1000000000ull + (uint64_t) now.tv_nsec +
                                CALL_TIMEOUT_NS;
        return conn_send(c, call->msg, sync ? KDBUS_SEND_SYNC_REPLY : 0, ret_reply);
}

/* A received reply: from the service, a method return; consumed and FREEd. */
static int reply_take(const Conn *c, const struct kdbus_msg *m, uint64_t service_id) {
        uint8_t type = msg_dbus1_type(m);
        int r;

        if (m->src_id != service_id || type != 2) {
                fprintf(stderr, "kdbus-kabi-bench: unexpected message from %llu (dbus1 type %u, "
                        "reply to %llu): the call failed?\n", (unsigned long long) m->src_id,
                        type, (unsigned long long) m->cookie_reply);
                (void) conn_free(c, m);
                return -EBADMSG;
        }
        r = msg_consume(m);
        return r ? r : conn_free(c, m);
}

/* One call in flight until @deadline: SEND, then SYNC_REPLY's answer or poll + RECV. */
static int run_one(const Conn *c, Call *call, const Options *o, uint64_t service_id,
                   double t0, unsigned long *ret_n) {
        unsigned long n = 0;
        int r;

        do {
                const struct kdbus_msg *m;

                r = call_send(c, call, o->sync, &m);
                if (r)
                        return fail("SEND", r);
                while (!o->sync && (r = conn_recv(c, &m)) == -EAGAIN) {
                        r = conn_wait(c);
                        if (r)
                                return fail("poll", r);
                }
                if (r)
                        return fail("RECV", r);
                r = reply_take(c, m, service_id);
                if (r)
                        return r;
                ++n;
        } while (o->calls ? n < o->calls : bench_now() - t0 < o->seconds);
        *ret_n = n;
        return 0;
}

/* --inflight calls outstanding until @deadline; *@in_flight carries over between rounds. */
static int run_pipeline(const Conn *c, Call *call, const Options *o, uint64_t service_id,
                        double t0, unsigned *in_flight, unsigned long *ret_n) {
        unsigned long n = 0;
        int r;

        for (;;) {
                const struct kdbus_msg *m;

                for (; *in_flight < o->inflight; ++*in_flight) {
                        r = call_send(c, call, false, NULL);
                        if (r)
                                return fail("SEND", r);
                }
                if (bench_now() - t0 >= o->seconds)
                        break;
                r = conn_wait(c);
                if (r)
                        return fail("poll", r);
                while ((r = conn_recv(c, &m)) == 0) {
                        r = reply_take(c, m, service_id);
                        if (r)
                                return r;
                        --*in_flight;
                        ++n;
                }
                if (r != -EAGAIN)
                        return fail("RECV", r);
        }
        *ret_n = n;
        return 0;
}

/* Collect the replies still outstanding (the service must not be killed mid-reply). */
static int drain(const Conn *c, uint64_t service_id, unsigned in_flight) {
        while (in_flight) {
                const struct kdbus_msg *m;
                int r = conn_recv(c, &m);

                if (r == -EAGAIN)
                        r = conn_wait(c);
                else if (r == 0) {
                        r = reply_take(c, m, service_id);
                        --in_flight;
                }
                if (r)
                        return r;
        }
        return 0;
}

/* @peers: this process and the service, whose CPU per call is reported as the peers' */
static int client_run(const Options *o, const char *bus, uint64_t service_id, const int *peers) {
        bool memfd = !strcmp(o->workload, "memfd"), pipeline = !strcmp(o->workload, "pipeline");
        double rates[MAX_REPEAT];
        unsigned long total = 0;
        unsigned i, in_flight = 0;
        long cpu0 = -1, cpu1, peer0 = -1, peer1;
        Call call;
        Conn c;
        int fd = -1, r;

        r = conn_hello(bus, &c);
        if (r)
                return r;
        if (memfd) {
                fd = bench_kmsg_memfd(o->size);
                if (fd < 0)
                        return fail("memfd", fd);
        }
        r = call_init(&call, memfd ? o->size : 8, fd);
        if (r)
                return fail("building the call", r);
        for (i = 0; i < o->repeat + 1; ++i) {   /* round 0: warm-up */
                double t0 = bench_now();
                unsigned long n = 0;

                if (i == 1) {
                        cpu0 = o->bus_pid ? bench_cpu_ticks(o->bus_pid) : -1;
                        peer0 = bench_cpu_ticks_sum(peers, 2);
                }
                r = pipeline ? run_pipeline(&c, &call, o, service_id, t0, &in_flight, &n) :
                               run_one(&c, &call, o, service_id, t0, &n);
                if (r)
                        return r;
                if (i == 0) {
                        printf("warm-up: %lu calls\n", n);
                        continue;
                }
                rates[i - 1] = (double) n / (bench_now() - t0);
                total += n;
                printf("round %u/%u: %lu calls, %.0f/s", i, o->repeat, n, rates[i - 1]);
                if (memfd)
                        printf(", %.1f MB/s", rates[i - 1] * (double) o->size / 1e6);
                printf("\n");
        }
        cpu1 = o->bus_pid ? bench_cpu_ticks(o->bus_pid) : -1;
        peer1 = bench_cpu_ticks_sum(peers, 2);
        r = drain(&c, service_id, in_flight);
        if (r)
                return fail("collecting the last replies", r);
        {
                double med = bench_median(rates, o->repeat);

                printf("RESULT kabi-%s%s size=%zu inflight=%u median=%.0f min=%.0f max=%.0f "
                       "MBps=%.1f bus_cpu_us_per_call=%.2f peers_cpu_us_per_call=%.2f\n",
                       o->workload,
                       o->sync ? "-sync" : "", memfd ? o->size : 8, pipeline ? o->inflight : 1,
                       med, rates[0], rates[o->repeat - 1],
                       memfd ? med * (double) o->size / 1e6 : 0.0,
                       bench_cpu_us_per_call(cpu0, cpu1, total),
                       bench_cpu_us_per_call(peer0, peer1, total));
        }
        if (fd >= 0)
                (void) close(fd);
        free(call.dbus1);
        (void) munmap((void *) c.pool, POOL);
        (void) close(c.fd);
        return 0;
}

int main(int argc, char **argv) {
        static const struct option opts[] = {
                { "root", required_argument, NULL, 'd' },
                { "workload", required_argument, NULL, 'w' },
                { "size", required_argument, NULL, 's' },
                { "seconds", required_argument, NULL, 't' },
                { "repeat", required_argument, NULL, 'r' },
                { "inflight", required_argument, NULL, 'i' },
                { "bus-pid", required_argument, NULL, 'p' },
                { "sync", no_argument, NULL, 'S' },
                { "calls", required_argument, NULL, 'c' },
                {}
        };
        Options o = { .workload = "call", .size = 1u << 20, .seconds = 1, .repeat = 5,
                      .inflight = 64 };
        char bus[4096];
        uint64_t service_id;
        int opt, ready[2], control, r;
        pid_t pid;

        while ((opt = getopt_long(argc, argv, "", opts, NULL)) >= 0) {
                switch (opt) {
                case 'd': o.root = optarg; break;
                case 'w': o.workload = optarg; break;
                case 's': o.size = strtoul(optarg, NULL, 10); break;
                case 't': o.seconds = strtod(optarg, NULL); break;
                case 'r': o.repeat = (unsigned) strtoul(optarg, NULL, 10); break;
                case 'i': o.inflight = (unsigned) strtoul(optarg, NULL, 10); break;
                case 'p': o.bus_pid = atoi(optarg); break;
                case 'S': o.sync = true; break;
                case 'c': o.calls = strtoul(optarg, NULL, 10); break;
                default: return 2;
                }
        }
        if (!o.root || (strcmp(o.workload, "call") && strcmp(o.workload, "pipeline") &&
                        strcmp(o.workload, "memfd")) ||
            (o.sync && !strcmp(o.workload, "pipeline")) ||
            (o.calls && !strcmp(o.workload, "pipeline")) ||
            !o.repeat || o.repeat > MAX_REPEAT || !o.inflight || o.inflight > MAX_INFLIGHT ||
            !o.size || o.size > (100u << 20) || !(o.seconds > 0)) {
                fputs("usage: kdbus-kabi-bench --root DIR [--workload call|pipeline|memfd] "
                      "[--sync (call, memfd)] [--inflight N (pipeline, 1-1024)] "
                      "[--size BYTES (memfd)] [--seconds S] [--repeat N (1-50)] "
                      "[--calls N (call, memfd)] [--bus-pid PID]\n", stderr);
                return 2;
        }
        if (bus_make(o.root, &control, bus, sizeof(bus)))
                return 1;
        if (pipe2(ready, O_CLOEXEC) < 0)
                return 1;
        pid = fork();
        if (pid == 0) {
                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                (void) close(control);  /* the bus is the parent's: it goes when it exits */
                r = service_run(bus, ready[1]);
                _exit(r ? 1 : 0);
        }
        (void) close(ready[1]);
        if (pid < 0 || read(ready[0], &service_id, sizeof(service_id)) != sizeof(service_id)) {
                fprintf(stderr, "kdbus-kabi-bench: the service did not come up\n");
                return 1;
        }
        r = client_run(&o, bus, service_id, (const int[]){ (int) getpid(), (int) pid });
        (void) kill(pid, SIGTERM);
        (void) waitpid(pid, NULL, 0);
        (void) close(control);
        return r ? 1 : 0;
}
