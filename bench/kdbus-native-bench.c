/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * kdbus-native-bench: native (libkdbus) peers on kdbusd's --native socket.
 *
 *   call:  a client calls a native service (SYNC_REPLY, one call in flight) with a body
 *          "ay" of 8 bytes inline; the service answers an empty method return. calls/s.
 *   memfd: the same call whose body "ay" of --size bytes is a sealed memfd (the header
 *          inline, the body passed on by reference); the service maps the memfd and reads
 *          its first and last byte, as a receiver that uses the data in place would.
 *          calls/s and MB/s of payload.
 *   pipeline: the calls of `call` without SYNC_REPLY, --inflight N of them outstanding: the
 *          client RECVs a reply (batched: a RECV the bus holds until one comes; --plain:
 *          RECV, and the wakeup eventfd when nothing waits), FREEs it and sends the next.
 *
 * Each round runs --seconds (with --calls N, the call and memfd workloads: exactly N calls
 * instead, for an instruction count of the bus taken over two counts); --repeat rounds; the RESULT line gives the median. With
 * --bus-pid, the bus's CPU time (utime + stime from /proc/PID/stat) per call over the
 * timed rounds is reported too; the peers' (client and service) always.
 *
 * Metadata: --client-hello-flags (e.g. 0x1000000000000000, KDBUS_HELLO_CAPTURE_PER_MESSAGE) and
 * --client-attach-send (the client's consent) and --service-attach-recv (what the service
 * asks for), KDBUS_ATTACH_* numbers: what each call costs the bus with metadata.
 *
 * By default both peers say HELLO with KDBUS_HELLO_WIRE_BATCH (kdbusd's extension): the
 * client's FREE of a reply rides with its next SEND, the service's FREE of a call with its
 * reply, and the service sends its reply and waits for the next call in one datagram
 * (KDBUS_WIRE_BATCH_THEN_RECV | KDBUS_WIRE_BATCH_HOLD_RECV: the bus answers the held RECV
 * when a message comes, no eventfd; --service-wait reply-held, the default).
 * --service-wait held: the reply's SEND, then a held RECV of its own (two datagrams).
 * --service-wait eventfd: the service goes back to the wakeup eventfd when the reply's
 * batch result says nothing else waits (KDBUS_WIRE_RETURN_RECV_EMPTY) instead of asking
 * RECV for EAGAIN (the batched mode before the held RECV).
 * --plain: kdbus's commands only, one datagram round trip each (SEND, RECV, FREE), the
 * service on the eventfd.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "bench/bench-kmsg.h"
#include "bench/bench-stat.h"
#include "libkdbus/libkdbus.h"
#include "wire/endian.h"
#include "wire/message.h"
#include "wire/writer.h"

#define POOL (1u << 20)
#define MAX_REPEAT 50

typedef struct Options {
        const char *native;
        const char *workload;
        size_t size;
        double seconds;
        unsigned long calls;                    /* 0: rounds of --seconds */
        unsigned repeat;
        unsigned inflight;                      /* pipeline: calls outstanding */
        int bus_pid;
        uint64_t client_hello_flags;
        uint64_t client_attach_send;            /* UINT64_MAX: libkdbus's default */
        uint64_t service_attach_recv;           /* UINT64_MAX: libkdbus's default */
        bool plain;                             /* no KDBUS_HELLO_WIRE_BATCH */
        int wait;                               /* WAIT_*: how the service waits */
} Options;

enum {
        WAIT_REPLY_HELD,        /* its reply's SEND with a held RECV after it */
        WAIT_HELD,              /* a held RECV after its reply */
        WAIT_EVENTFD,           /* the eventfd, then RECV */
};

/* UPDATE one attach-flags item (ATTACH_FLAGS_SEND or _RECV) unless @flags is UINT64_MAX. */
static int update_attach(KdbusConn *c, uint64_t type, uint64_t flags) {
        uint8_t buf[512] __attribute__((aligned(8))) = { 0 };
        struct kdbus_cmd *cmd = (void *)buf;
        struct kdbus_item *item = (void *)(buf + sizeof(*cmd));

        if (flags == UINT64_MAX)
                return 0;
        cmd->size = sizeof(*cmd) + KDBUS_ITEM_SIZE(8);
        item->size = KDBUS_ITEM_HEADER_SIZE + 8;
        item->type = type;
        item->data64[0] = flags;
        return kdbus_conn_command(c, KDBUS_CMD_UPDATE, cmd, cmd->size, NULL, 0);
}

static int connect_peer(const char *path, uint64_t hello_flags, uint64_t send, uint64_t recv,
                        KdbusConn **ret) {
        KdbusConn *c = NULL;
        int r;

        r = kdbus_conn_open(path, &c);
        if (r == 0)
                r = kdbus_conn_hello(c, hello_flags, POOL);
        if (r == 0)
                r = update_attach(c, KDBUS_ITEM_ATTACH_FLAGS_SEND, send);
        if (r == 0)
                r = update_attach(c, KDBUS_ITEM_ATTACH_FLAGS_RECV, recv);
        if (r) {
                fprintf(stderr, "kdbus-native-bench: HELLO / UPDATE on %s: %s\n", path, strerror(-r));
                kdbus_conn_close(c);
                return r;
        }
        *ret = c;
        return 0;
}

/* The service: answer every call; touch a memfd body's first and last byte. */
static int service_run(const Options *o, int ready_fd) {
        const struct kdbus_msg *next = NULL;    /* what the last reply's RECV got */
        KdbusConn *c;
        uint64_t id;
        bool idle = false;
        int r;

        r = connect_peer(o->native, o->plain ? 0 : KDBUS_HELLO_WIRE_BATCH, UINT64_MAX,
                         o->service_attach_recv, &c);
        if (r)
                return r;
        id = c->id;
        if (write(ready_fd, &id, sizeof(id)) != sizeof(id))
                return -EIO;
        for (;;) {
                const struct kdbus_msg *m;
                KdbusPart parts[4];
                WireMsgSpec spec = { .type = WIRE_MSG_METHOD_RETURN };
                KdbusSend s = { .memfd = -1 };
                char dest[32];
                uint8_t *reply = NULL;
                size_t size;
                int n, i;

                if (next) {
                        m = next;
                        next = NULL;
                        goto got;
                }
                if (o->wait != WAIT_EVENTFD) {
                        /* answered when a call comes (EAGAIN: a dropped count) */
                        r = kdbus_conn_recv_held(c, 0, 0, -1, &m, NULL);
                        if (r == -EAGAIN)
                                continue;
                        if (r)
                                return r;
                        goto got;
                }
                if (idle) {
                        /* the last reply's batch result said nothing waits */
                        r = kdbus_conn_wait(c, -1);
                        if (r)
                                return r;
                        idle = false;
                }
                r = kdbus_conn_recv(c, 0, 0, &m, NULL);
                if (r == -EAGAIN) {
                        r = kdbus_conn_wait(c, -1);
                        if (r)
                                return r;
                        continue;
                }
                if (r)
                        return r;
got:
                n = kdbus_msg_parts(c, m, parts, 4);
                for (i = 0; i < n; ++i) {
                        volatile uint8_t sink;
                        uint8_t *map;

                        if (parts[i].memfd < 0 || !parts[i].size)
                                continue;
                        map = mmap(NULL, parts[i].start + parts[i].size, PROT_READ, MAP_SHARED,
                                   parts[i].memfd, 0);
                        if (map == MAP_FAILED)
                                return -errno;
                        sink = map[parts[i].start];
                        sink = map[parts[i].start + parts[i].size - 1];
                        (void) sink;
                        (void) munmap(map, parts[i].start + parts[i].size);
                }
                if (m->flags & KDBUS_MSG_EXPECT_REPLY) {
                        snprintf(dest, sizeof(dest), ":1.%llu", (unsigned long long) m->src_id);
                        spec.serial = (uint32_t) m->cookie;
                        spec.reply_serial = (uint32_t) m->cookie;
                        spec.destination = dest;
                        r = wire_message_build(&spec, NULL, &reply, &size);
                        if (r)
                                return -EINVAL;
                        s.dst_id = m->src_id;
                        s.cookie = m->cookie;
                        s.cookie_reply = m->cookie;
                        /* done with @m: with batching its FREE rides with the reply */
                        r = kdbus_conn_free_later(c, kdbus_conn_offset(c, m));
                        if (r == 0 && o->wait == WAIT_REPLY_HELD) {
                                bool sent;

                                r = kdbus_conn_send_recv_held(c, &s, reply, size, &next, &sent);
                                if (r == -EAGAIN && sent)       /* a dropped count */
                                        r = 0;
                        } else if (r == 0)
                                r = kdbus_conn_send(c, &s, reply, size, NULL);
                        free(reply);
                        if (r)
                                return r;
                        idle = c->batch && (c->wire_return_flags & KDBUS_WIRE_RETURN_RECV_EMPTY);
                        continue;
                }
                r = kdbus_conn_free(c, kdbus_conn_offset(c, m));
                if (r)
                        return r;
        }
}

/* The client's call, sent again and again with a new serial. */
typedef struct Call {
        uint64_t service_id;
        uint8_t *data;
        size_t size;
        int memfd;                      /* -1: the body is inline */
        size_t memfd_size;
        uint32_t serial;
} Call;

static int call_send(KdbusConn *c, Call *k, uint64_t send_flags, struct kdbus_msg_info *ret) {
        KdbusSend s = { .dst_id = k->service_id, .send_flags = send_flags, .memfd = k->memfd,
                        .memfd_start = 0, .memfd_size = k->memfd_size };
        int r;

        if (++k->serial == 0)
                k->serial = 1;
        wire_store32(k->data + 8, false, k->serial);
        r = kdbus_send_from_dbus1(&s, k->data, k->size);
        return r ? r : kdbus_conn_send(c, &s, k->data, k->size, ret);
}

/* One reply to a pipelined call: RECV (batched: held by the bus until a reply comes;
 * plain: the eventfd when nothing waits). Return: 1 (a reply, FREEd), 0 (none yet), -errno */
static int pipeline_reply(KdbusConn *c, bool plain, uint64_t service_id) {
        const struct kdbus_msg *m;
        int r = plain ? kdbus_conn_recv(c, 0, 0, &m, NULL) :
                        kdbus_conn_recv_held(c, 0, 0, -1, &m, NULL);

        if (r == -EAGAIN)       /* plain: nothing waits; batched: a dropped count */
                return plain ? kdbus_conn_wait(c, -1) : 0;
        if (r)
                return r;
        if (m->src_id != service_id || !m->cookie_reply) {
                fprintf(stderr, "kdbus-native-bench: unexpected message from %llu\n",
                        (unsigned long long) m->src_id);
                return -EBADMSG;
        }
        r = kdbus_conn_free_later(c, kdbus_conn_offset(c, m));
        return r ? r : 1;
}

/* --inflight calls outstanding until --seconds after @t0; *@in_flight carries over */
static int pipeline_round(const Options *o, KdbusConn *c, Call *k, double t0,
                          unsigned *in_flight, unsigned long *ret_n) {
        unsigned long n = 0;
        int r;

        for (;;) {
                for (; *in_flight < o->inflight; ++*in_flight) {
                        r = call_send(c, k, 0, NULL);
                        if (r)
                                return r;
                }
                if (bench_now() - t0 >= o->seconds)
                        break;
                r = pipeline_reply(c, o->plain, k->service_id);
                if (r < 0)
                        return r;
                if (r > 0) {
                        --*in_flight;
                        ++n;
                }
        }
        *ret_n = n;
        return 0;
}

/* @peers: this process and the service, whose CPU per call is reported as the peers' */
static int client_run(const Options *o, uint64_t service_id, const int *peers) {
        bool memfd = !strcmp(o->workload, "memfd"), pipeline = !strcmp(o->workload, "pipeline");
        double rates[MAX_REPEAT];
        unsigned long total_calls = 0;
        long cpu0, cpu1, peer0 = -1, peer1;
        size_t body_offset;
        Call k = { .service_id = service_id, .memfd = -1, .serial = 1 };
        KdbusConn *c;
        char dest[32];
        unsigned i, in_flight = 0;
        int r;

        r = connect_peer(o->native, o->client_hello_flags |
                         (o->plain ? 0 : KDBUS_HELLO_WIRE_BATCH), o->client_attach_send, UINT64_MAX,
                         &c);
        if (r)
                return r;
        snprintf(dest, sizeof(dest), ":1.%llu", (unsigned long long) service_id);
        /* with a memfd: the header inline, the body in the memfd */
        k.data = bench_kmsg_call(dest, memfd ? o->size : 8, !memfd, &k.size, &body_offset);
        if (!k.data)
                return -EINVAL;
        if (memfd) {
                k.memfd = bench_kmsg_memfd(o->size);
                if (k.memfd < 0)
                        return k.memfd;
                k.memfd_size = 4 + o->size;
        }
        cpu0 = o->bus_pid ? bench_cpu_ticks(o->bus_pid) : -1;
        for (i = 0; i < o->repeat + 1; ++i) {     /* round 0: warm-up */
                double t0 = bench_now(), t;
                unsigned long n = 0;

                if (i == 1) {
                        cpu0 = o->bus_pid ? bench_cpu_ticks(o->bus_pid) : -1;
                        peer0 = bench_cpu_ticks_sum(peers, 2);
                }
                if (pipeline)
                        r = pipeline_round(o, c, &k, t0, &in_flight, &n);
                else
                        do {
                                struct kdbus_msg_info reply;

                                r = call_send(c, &k, KDBUS_SEND_SYNC_REPLY, &reply);
                                if (r == 0)     /* with batching: with the next SEND */
                                        r = kdbus_conn_free_later(c, reply.offset);
                                ++n;
                        } while (r == 0 && (o->calls ? n < o->calls :
                                                        bench_now() - t0 < o->seconds));
                t = bench_now();
                if (r) {
                        fprintf(stderr, "kdbus-native-bench: call: %s\n", strerror(-r));
                        return r;
                }
                if (i == 0)     /* for per-call counts of a tracer attached throughout */
                        printf("warm-up: %lu calls\n", n);
                if (i > 0) {
                        rates[i - 1] = (double) n / (t - t0);
                        total_calls += n;
                        printf("round %u/%u: %lu calls, %.0f/s", i, o->repeat, n, rates[i - 1]);
                        if (memfd)
                                printf(", %.1f MB/s", rates[i - 1] * (double) o->size / 1e6);
                        printf("\n");
                }
        }
        cpu1 = o->bus_pid ? bench_cpu_ticks(o->bus_pid) : -1;
        peer1 = bench_cpu_ticks_sum(peers, 2);
        while (in_flight) {     /* the last replies, before the service goes */
                r = pipeline_reply(c, o->plain, k.service_id);
                if (r < 0)
                        return r;
                in_flight -= (unsigned) r;
        }
        {
                double med = bench_median(rates, o->repeat);
                double cpu_us = bench_cpu_us_per_call(cpu0, cpu1, total_calls);

                printf("RESULT native-%s%s size=%zu inflight=%u median=%.0f min=%.0f max=%.0f MBps=%.1f "
                       "bus_cpu_us_per_call=%.2f peers_cpu_us_per_call=%.2f\n", o->workload,
                       o->plain ? "-plain" : o->wait == WAIT_REPLY_HELD ? "-reply-held" :
                       o->wait == WAIT_HELD ? "-held" : "-eventfd",
                       memfd ? o->size : 8, pipeline ? o->inflight : 1, med,
                       rates[0], rates[o->repeat - 1],
                       memfd ? med * (double) o->size / 1e6 : 0.0, cpu_us,
                       bench_cpu_us_per_call(peer0, peer1, total_calls));
        }
        if (k.memfd >= 0)
                (void) close(k.memfd);
        free(k.data);
        kdbus_conn_close(c);
        return 0;
}

int main(int argc, char **argv) {
        static const struct option opts[] = {
                { "native", required_argument, NULL, 'n' },
                { "workload", required_argument, NULL, 'w' },
                { "size", required_argument, NULL, 's' },
                { "seconds", required_argument, NULL, 't' },
                { "repeat", required_argument, NULL, 'r' },
                { "bus-pid", required_argument, NULL, 'p' },
                { "inflight", required_argument, NULL, 'i' },
                { "client-hello-flags", required_argument, NULL, 'H' },
                { "client-attach-send", required_argument, NULL, 'S' },
                { "service-attach-recv", required_argument, NULL, 'R' },
                { "plain", no_argument, NULL, 'P' },
                { "service-wait", required_argument, NULL, 'W' },
                { "calls", required_argument, NULL, 'c' },
                {}
        };
        Options o = { .workload = "call", .size = 1u << 20, .seconds = 1, .repeat = 5,
                      .inflight = 64,
                      .client_attach_send = UINT64_MAX, .service_attach_recv = UINT64_MAX };
        const char *wait = "reply-held";
        uint64_t service_id;
        int c, ready[2], r;
        pid_t pid;

        while ((c = getopt_long(argc, argv, "", opts, NULL)) >= 0) {
                switch (c) {
                case 'n': o.native = optarg; break;
                case 'w': o.workload = optarg; break;
                case 's': o.size = strtoul(optarg, NULL, 10); break;
                case 't': o.seconds = strtod(optarg, NULL); break;
                case 'r': o.repeat = (unsigned) strtoul(optarg, NULL, 10); break;
                case 'p': o.bus_pid = atoi(optarg); break;
                case 'i': o.inflight = (unsigned) strtoul(optarg, NULL, 10); break;
                case 'H': o.client_hello_flags = strtoull(optarg, NULL, 0); break;
                case 'S': o.client_attach_send = strtoull(optarg, NULL, 0); break;
                case 'R': o.service_attach_recv = strtoull(optarg, NULL, 0); break;
                case 'P': o.plain = true; break;
                case 'W': wait = optarg; break;
                case 'c': o.calls = strtoul(optarg, NULL, 10); break;
                default: return 2;
                }
        }
        o.wait = o.plain || !strcmp(wait, "eventfd") ? WAIT_EVENTFD :
                 !strcmp(wait, "held") ? WAIT_HELD : WAIT_REPLY_HELD;
        if (!o.native || (strcmp(o.workload, "call") && strcmp(o.workload, "memfd") &&
                          strcmp(o.workload, "pipeline")) || !o.inflight || o.inflight > 1024 ||
            (o.calls && !strcmp(o.workload, "pipeline")) ||
            (strcmp(wait, "reply-held") && strcmp(wait, "held") && strcmp(wait, "eventfd")) ||
            !o.repeat || o.repeat > MAX_REPEAT || !o.size || o.size > (100u << 20) ||
            !(o.seconds > 0)) {
                fputs("usage: kdbus-native-bench --native PATH [--workload call|pipeline|memfd] "
                      "[--inflight N (pipeline, 1-1024)] "
                      "[--size BYTES] [--seconds S] [--repeat N] [--bus-pid PID] "
                      "[--client-hello-flags N] [--client-attach-send N] "
                      "[--service-attach-recv N] [--plain] "
                      "[--service-wait reply-held|held|eventfd] [--calls N (call, memfd)]\n",
                      stderr);
                return 2;
        }
        if (pipe2(ready, O_CLOEXEC) < 0)
                return 1;
        pid = fork();
        if (pid == 0) {
                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                r = service_run(&o, ready[1]);
                fprintf(stderr, "kdbus-native-bench: service: %s\n", strerror(-r));
                _exit(1);
        }
        (void) close(ready[1]);
        if (read(ready[0], &service_id, sizeof(service_id)) != sizeof(service_id)) {
                fprintf(stderr, "kdbus-native-bench: the service did not come up\n");
                return 1;
        }
        r = client_run(&o, service_id, (const int[]){ (int) getpid(), (int) pid });
        (void) kill(pid, SIGTERM);
        (void) waitpid(pid, NULL, 0);
        return r ? 1 : 0;
}
