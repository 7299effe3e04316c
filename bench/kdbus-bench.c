/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * kdbus-bench: drives one bus (any: kdbusd, dbus-daemon, dbus-broker) with one workload
 * and prints rates. It forks its peers (the service, or the signal receivers) so that each
 * is a separate process with its own connection, as real peers are.
 *
 *   call:   a client calls org.kdbus.Bench.Ping on the service through the bus; the service
 *           replies. --inflight 1 is a round-trip latency test, --inflight 64 keeps 64 calls
 *           outstanding (pipelined throughput).
 *           --payload / --reply-payload size the bodies (1 MiB each: the large-message
 *           workload); with --inflight 1 the RESULT line has the round trip's p50 and p99.
 *   signal: one sender broadcasts org.kdbus.Bench.Tick; --receivers N peers each hold a match
 *           rule for it. Flow control goes OUTSIDE the bus (a pipe): each receiver acks every
 *           --window signals, the sender keeps at most two windows outstanding, so the bus
 *           never holds more than 2 windows per receiver and no bus hits its quotas.
 *           --idle-peers P --idle-rules N: P more peers hold N match rules between them
 *           (N/P each) on interfaces nothing sends (org.kdbus.BenchIdle<p>, member M<k>):
 *           what rules that cannot match cost a broadcast.
 *   connect: connection churn: connect, SASL EXTERNAL, Hello, wait for its reply, close;
 *           again and again (no peers).
 *
 * --relay: the address is bench/kdbus-relay's (no SASL, no Hello, no driver calls; the
 * client says it is the hub, the peers that they are peers): the same bytes with no bus.
 * The connect workload speaks SASL and Hello to it as to a bus; the relay answers with
 * fixed lines and a Hello reply of its own, checking nothing (the floor of a connection).
 *
 * Each run: a ping round trip (proves the bus works), --warmup operations, then --repeat
 * timed rounds of --count operations; the last line is a RESULT line for scripts.
 * With --alloc-file (the counter file of bench/malloc-count.so preloaded into the bus) it
 * also reports the bus's allocations per operation over the timed rounds.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "bench/bench-conn.h"
#include "bench/malloc-count.h"
#include "wire/protocol.h"

#define BENCH_NAME "org.kdbus.Bench"
#define BENCH_PATH "/org/kdbus/Bench"
#define BENCH_MAX_REPEAT 100
#define BENCH_MAX_RECEIVERS 128
#define BENCH_MAX_IDLE_PEERS 1000
#define BENCH_MAX_PAYLOAD (64u << 20)

typedef struct Options {
        const char *address;
        const char *client_address;     /* the call client's way in (a sandbox's socket) */
        const char *workload;
        const char *alloc_file;
        double seconds;
        unsigned inflight;
        unsigned long count;
        unsigned long warmup;
        unsigned repeat;
        unsigned receivers;
        unsigned idle_peers;
        unsigned long idle_rules;
        unsigned window;
        unsigned payload;
        unsigned reply_payload;
        bool relay;
        bool poll;                      /* peers wait in poll(), not in read() */
} Options;

static void freep(void *p) {
        free(*(void **) p);
}
#define _cleanup_free_ __attribute__((cleanup(freep)))

static const volatile MallocCount *alloc_counter;

/* --seconds: a timed round stops sending at this time (0: run the full --count) */
static double round_deadline;

/* round-trip times of the timed rounds with one call in flight (percentiles) */
static double *lat;
static size_t n_lat, cap_lat;
static bool lat_on;

static void lat_add(double us) {
        if (!lat_on)
                return;
        if (n_lat == cap_lat) {
                size_t cap = cap_lat ? 2 * cap_lat : 4096;
                double *p = realloc(lat, cap * sizeof(double));

                if (!p)
                        return;         /* percentiles from fewer samples */
                lat = p;
                cap_lat = cap;
        }
        lat[n_lat++] = us;
}

static BenchConnOpts conn_opts(const Options *o, char role) {
        size_t big = (size_t) (o->payload > o->reply_payload ? o->payload : o->reply_payload);

        return (BenchConnOpts) {
                .relay_role = o->relay ? role : 0,
                .wait_poll = o->poll,
                .in_cap = big + 4096 > BENCH_CONN_IN ? big + 4096 : BENCH_CONN_IN,
        };
}

static double now_s(void) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

static uint64_t allocs_now(void) {
        if (!alloc_counter)
                return 0;
        return alloc_counter->n_malloc + alloc_counter->n_calloc + alloc_counter->n_realloc +
               alloc_counter->n_memalign;
}

static int map_alloc_file(const char *path) {
        void *p;
        int fd;

        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
                fprintf(stderr, "kdbus-bench: --alloc-file %s: %s (is malloc-count.so preloaded "
                        "into the bus with BENCH_MALLOC_COUNT_FILE set?)\n", path, strerror(errno));
                return -errno;
        }
        p = mmap(NULL, sizeof(MallocCount), PROT_READ, MAP_SHARED, fd, 0);
        (void) close(fd);
        if (p == MAP_FAILED)
                return -errno;
        alloc_counter = p;
        if (alloc_counter->magic != MALLOC_COUNT_MAGIC) {
                fprintf(stderr, "kdbus-bench: --alloc-file %s: not a malloc-count file\n", path);
                return -EINVAL;
        }
        return 0;
}

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;

        return (x > y) - (x < y);
}

static int wait_bytes(int fd, size_t n) {
        char buf[BENCH_MAX_RECEIVERS];

        while (n) {
                ssize_t k = read(fd, buf, n < sizeof(buf) ? n : sizeof(buf));

                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        return k < 0 ? -errno : -EPIPE;
                n -= (size_t) k;
        }
        return 0;
}

static void say(int fd) {
        if (write(fd, "x", 1) != 1)
                _exit(3);
}

/* ---- call workload ---- */

static int service_run(const Options *o, int ready_fd) {
        BenchConnOpts opts = conn_opts(o, 'p');
        uint8_t body[64], *reply_body = NULL;
        BenchConn c;
        BenchMsg m;
        size_t n;
        int r;

        if (o->reply_payload) {
                reply_body = calloc(1, 4 + (size_t) o->reply_payload);
                if (!reply_body)
                        return -ENOMEM;
                memcpy(reply_body, &o->reply_payload, 4);
        }
        r = bench_conn_open(&c, o->address, &opts);
        if (r < 0)
                return r;
        if (!o->relay) {
                n = bench_body_string(body, sizeof(body), BENCH_NAME, true, 4 /* DO_NOT_QUEUE */);
                r = bench_conn_call_driver(&c, "RequestName", "su", body, (uint32_t) n, &m);
                if (r < 0)
                        return r;
        }
        say(ready_fd);
        for (;;) {
                bool block = true;

                for (;;) {
                        BenchMsgSpec reply = { .type = WIRE_MSG_METHOD_RETURN };

                        r = bench_conn_next(&c, block, &m);
                        if (r < 0)
                                return r;
                        if (r == 0)
                                break;
                        block = false;
                        if (m.type != WIRE_MSG_METHOD_CALL ||
                            (m.flags & WIRE_FLAG_NO_REPLY_EXPECTED) || (!m.sender && !o->relay))
                                continue;
                        reply.reply_serial = m.serial;
                        reply.destination = m.sender;
                        if (reply_body) {
                                reply.signature = "ay";
                                reply.body = reply_body;
                                reply.body_len = 4 + o->reply_payload;
                                r = (int) bench_conn_send_direct(&c, &reply);
                        } else {
                                r = (int) bench_conn_queue(&c, &reply);
                        }
                        if (r < 0)
                                return r;
                }
                r = bench_conn_flush(&c);
                if (r < 0)
                        return r;
        }
}

/* @n calls with at most @inflight outstanding. */
static int call_batch(BenchConn *c, uint8_t *call, size_t call_size, unsigned long n,
                      unsigned inflight, const char *service, unsigned long *ret_done) {
        unsigned long sent = 0, done = 0;
        double t_sent = now_s();
        BenchMsg m;
        int r;

        while (sent < n && sent < inflight) {
                int64_t s = bench_conn_queue_raw(c, call, call_size);

                if (s < 0)
                        return (int) s;
                sent++;
        }
        r = bench_conn_flush(c);
        if (r < 0)
                return r;
        while (done < n) {
                bool block = true;

                for (;;) {
                        r = bench_conn_next(c, block, &m);
                        if (r < 0)
                                return r;
                        if (r == 0)
                                break;
                        block = false;
                        if (m.type == WIRE_MSG_ERROR) {
                                fprintf(stderr, "kdbus-bench: call failed: %s\n",
                                        m.error_name ? m.error_name : "?");
                                return -EREMOTEIO;
                        }
                        if (m.type != WIRE_MSG_METHOD_RETURN)
                                continue;
                        /* count only real replies: from the service, to a call we sent
                         * (through the relay nobody stamps a sender) */
                        if ((service && (!m.sender || strcmp(m.sender, service))) ||
                            !m.reply_serial || m.reply_serial > c->serial) {
                                fprintf(stderr, "kdbus-bench: unexpected reply from %s "
                                        "(reply serial %u)\n", m.sender ? m.sender : "?",
                                        m.reply_serial);
                                return -EBADMSG;
                        }
                        done++;
                        if (inflight == 1) {
                                double t = now_s();

                                lat_add((t - t_sent) * 1e6);
                                t_sent = t;
                        }
                        if (sent < n && round_deadline > 0 && now_s() >= round_deadline)
                                n = sent;       /* time is up: drain what is in flight */
                        if (sent < n) {
                                int64_t s = bench_conn_queue_raw(c, call, call_size);

                                if (s < 0)
                                        return (int) s;
                                sent++;
                        }
                }
                r = bench_conn_flush(c);
                if (r < 0)
                        return r;
        }
        if (ret_done)
                *ret_done = done;
        return 0;
}

static int run_calls(const Options *o, double *rates, unsigned long *ops, uint64_t *allocs) {
        BenchConnOpts opts = conn_opts(o, 'c');
        _cleanup_free_ uint8_t *payload = calloc(1, 4 + (size_t) o->payload);
        size_t call_cap = 4096 + (size_t) o->payload;
        _cleanup_free_ uint8_t *call = malloc(call_cap);
        BenchMsgSpec spec = {
                .type = WIRE_MSG_METHOD_CALL,
                .path = BENCH_PATH,
                .interface = BENCH_NAME,
                .member = "Ping",
                .destination = BENCH_NAME,
                .signature = "ay",
                .body = payload,
                .body_len = 4 + o->payload,
        };
        char service[256];
        uint8_t body[64];
        BenchConn c;
        BenchMsg m;
        size_t call_size, n;
        unsigned i;
        int r;

        if (!payload || !call)
                return -ENOMEM;
        memcpy(payload, &o->payload, 4);
        call_size = bench_msg_build(call, call_cap, &spec);
        if (!call_size)
                return -E2BIG;
        r = bench_conn_open(&c, o->client_address ? o->client_address : o->address, &opts);
        if (r < 0)
                return r;
        if (!o->relay) {
                n = bench_body_string(body, sizeof(body), BENCH_NAME, false, 0);
                r = bench_conn_call_driver(&c, "GetNameOwner", "s", body, (uint32_t) n, &m);
                if (r < 0)
                        return r;
                if (m.body_len < 5 || m.body_len - 4 > sizeof(service))
                        return -EBADMSG;
                memcpy(service, m.body + 4, m.body_len - 4);
        }
        /* the ping: proves the bus routes to the service before anything is timed */
        r = call_batch(&c, call, call_size, 1, 1, o->relay ? NULL : service, NULL);
        if (r < 0) {
                fprintf(stderr, "kdbus-bench: ping round trip through %s failed\n", o->address);
                return r;
        }
        r = call_batch(&c, call, call_size, o->warmup, o->inflight, o->relay ? NULL : service, NULL);
        if (r < 0)
                return r;
        for (i = 0; i < o->repeat; i++) {
                uint64_t a0 = allocs_now();
                double t0 = now_s();
                unsigned long done;

                round_deadline = o->seconds > 0 ? t0 + o->seconds : 0;
                lat_on = true;
                r = call_batch(&c, call, call_size, o->count, o->inflight,
                               o->relay ? NULL : service, &done);
                lat_on = false;
                round_deadline = 0;
                if (r < 0)
                        return r;
                rates[i] = (double) done / (now_s() - t0);
                ops[i] = done;
                allocs[i] = allocs_now() - a0;
        }
        bench_conn_close(&c);
        return 0;
}

/* ---- signal workload ---- */

static int receiver_run(const Options *o, int ready_fd, int ack_fd) {
        const char *rule = "type='signal',interface='" BENCH_NAME "',member='Tick'";
        BenchConnOpts opts = conn_opts(o, 'p');
        uint8_t body[256];
        unsigned long got = 0;
        BenchConn c;
        BenchMsg m;
        size_t n;
        int r;

        r = bench_conn_open(&c, o->address, &opts);
        if (r < 0)
                return r;
        if (!o->relay) {
                n = bench_body_string(body, sizeof(body), rule, false, 0);
                r = bench_conn_call_driver(&c, "AddMatch", "s", body, (uint32_t) n, &m);
                if (r < 0)
                        return r;
        }
        say(ready_fd);
        for (;;) {
                r = bench_conn_next(&c, true, &m);
                if (r < 0)
                        return r;
                if (m.type != WIRE_MSG_SIGNAL || !m.member || strcmp(m.member, "Tick"))
                        continue;
                if (++got % o->window == 0)
                        say(ack_fd);
        }
}

/* An idle peer: its share of --idle-rules rules that no signal of the bench matches. */
static int idle_run(const Options *o, unsigned peer, int ready_fd) {
        unsigned long k, n_rules = o->idle_rules / o->idle_peers +
                                   (peer < o->idle_rules % o->idle_peers);
        uint8_t body[256];
        BenchConn c;
        BenchMsg m;
        size_t n;
        int r;

        r = bench_conn_open(&c, o->address, NULL);
        if (r < 0)
                return r;
        for (k = 0; k < n_rules; k++) {
                char rule[128];

                (void) snprintf(rule, sizeof(rule),
                                "type='signal',interface='%sIdle%u',member='M%lu'", BENCH_NAME,
                                peer, k);
                n = bench_body_string(body, sizeof(body), rule, false, 0);
                r = bench_conn_call_driver(&c, "AddMatch", "s", body, (uint32_t) n, &m);
                if (r < 0)
                        return r;
        }
        say(ready_fd);
        for (;;) {
                r = bench_conn_next(&c, true, &m);
                if (r < 0)
                        return r;
        }
}

static int signal_batch(BenchConn *c, uint8_t *sig, size_t sig_size, unsigned long n,
                        const Options *o, int ack_fd, unsigned long *ret_done) {
        unsigned long windows = n / o->window, w, i;
        int r;

        for (w = 0; w < windows; w++) {
                if (w > 0 && round_deadline > 0 && now_s() >= round_deadline) {
                        windows = w;
                        break;
                }
                for (i = 0; i < o->window; i++) {
                        int64_t s = bench_conn_queue_raw(c, sig, sig_size);

                        if (s < 0)
                                return (int) s;
                }
                r = bench_conn_flush(c);
                if (r < 0)
                        return r;
                if (w > 0) {            /* the previous window must have arrived everywhere */
                        r = wait_bytes(ack_fd, o->receivers);
                        if (r < 0)
                                return r;
                }
        }
        if (ret_done)
                *ret_done = windows * o->window;
        return windows ? wait_bytes(ack_fd, o->receivers) : 0;
}

static int run_signals(const Options *o, double *rates, unsigned long *ops, uint64_t *allocs,
                       int ack_fd) {
        BenchConnOpts opts = conn_opts(o, 'c');
        _cleanup_free_ uint8_t *payload = calloc(1, 4 + (size_t) o->payload);
        size_t sig_cap = 4096 + (size_t) o->payload;
        _cleanup_free_ uint8_t *sig = malloc(sig_cap);
        BenchMsgSpec spec = {
                .type = WIRE_MSG_SIGNAL,
                .path = BENCH_PATH,
                .interface = BENCH_NAME,
                .member = "Tick",
                .signature = "ay",
                .body = payload,
                .body_len = 4 + o->payload,
        };
        BenchConn c;
        size_t sig_size;
        unsigned i;
        int r;

        if (!payload || !sig)
                return -ENOMEM;
        memcpy(payload, &o->payload, 4);
        sig_size = bench_msg_build(sig, sig_cap, &spec);
        if (!sig_size)
                return -E2BIG;
        r = bench_conn_open(&c, o->address, &opts);
        if (r < 0)
                return r;
        /* one window as the "ping": every receiver must see it */
        r = signal_batch(&c, sig, sig_size, o->window, o, ack_fd, NULL);
        if (r < 0)
                return r;
        r = signal_batch(&c, sig, sig_size, o->warmup, o, ack_fd, NULL);
        if (r < 0)
                return r;
        for (i = 0; i < o->repeat; i++) {
                uint64_t a0 = allocs_now();
                double t0 = now_s();
                unsigned long done;

                round_deadline = o->seconds > 0 ? t0 + o->seconds : 0;
                r = signal_batch(&c, sig, sig_size, o->count, o, ack_fd, &done);
                round_deadline = 0;
                if (r < 0)
                        return r;
                rates[i] = (double) done / (now_s() - t0);
                ops[i] = done;
                allocs[i] = allocs_now() - a0;
        }
        bench_conn_close(&c);
        return 0;
}

/* ---- connect workload ---- */

static int run_connects(const Options *o, double *rates, unsigned long *ops, uint64_t *allocs) {
        /* small buffers: the client's own cost per connection stays small */
        BenchConnOpts opts = { .in_cap = 16384, .out_cap = 4096 };
        unsigned long i, k;
        BenchConn c;
        int r;

        for (i = 0; i < 1 + o->warmup; i++) {   /* the first proves the bus answers */
                r = bench_conn_open(&c, o->address, &opts);
                bench_conn_close(&c);
                if (r < 0)
                        return r;
        }
        for (k = 0; k < o->repeat; k++) {
                uint64_t a0 = allocs_now();
                double t0 = now_s(), deadline = o->seconds > 0 ? t0 + o->seconds : 0;

                for (i = 0; i < o->count && !(deadline > 0 && i % 16 == 0 && now_s() >= deadline);
                     i++) {
                        r = bench_conn_open(&c, o->address, &opts);
                        bench_conn_close(&c);
                        if (r < 0)
                                return r;
                }
                rates[k] = (double) i / (now_s() - t0);
                ops[k] = i;
                allocs[k] = allocs_now() - a0;
        }
        return 0;
}

/* ---- driver ---- */

enum { PEER_SERVICE, PEER_RECEIVER, PEER_IDLE };

static pid_t spawn_peer(const Options *o, int role, unsigned idx, int ready_fd, int ack_fd) {
        pid_t pid = fork();
        int r;

        if (pid != 0)
                return pid;
        /* a peer must not outlive the benchmark, whatever happens to it */
        (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() == 1)
                _exit(1);
        r = role == PEER_RECEIVER ? receiver_run(o, ready_fd, ack_fd) :
            role == PEER_IDLE ? idle_run(o, idx, ready_fd) : service_run(o, ready_fd);
        _exit(r < 0 ? 2 : 0);
}

static void usage(FILE *f) {
        fputs("usage: kdbus-bench --address ADDR [--workload call|signal|connect] [--inflight N]\n"
              "         [--count N] [--warmup N] [--repeat N] [--receivers N] [--window N]\n"
              "         [--payload BYTES] [--reply-payload BYTES] [--seconds S]\n"
              "         [--alloc-file PATH] [--relay] [--idle-peers P --idle-rules N]\n"
              "         [--client-address ADDR] [--poll]\n"
              "  --seconds S: each timed round runs S seconds (at most --count operations)\n"
              "  --relay: ADDR is bench/kdbus-relay's (no SASL, Hello, driver calls;\n"
              "  connect: greeted with fixed answers)\n"
              "  --client-address: the call client connects there (a sandbox's filtered\n"
              "  socket), the service to --address\n"
              "  --poll: the peers wait for input in poll() (as sd-bus and libdbus do)\n"
              "  instead of blocking in read()\n"
              "  Prints one line per timed round and a final RESULT line:\n"
              "  RESULT <workload> median=<ops/s> min=<ops/s> max=<ops/s> us=<us/op at median>\n"
              "         allocs=<bus allocations per op, or -1 without --alloc-file>\n"
              "         [p50=<us> p99=<us>: round trips, calls with --inflight 1]\n", f);
}

static int parse_ulong(const char *s, unsigned long max, unsigned long *ret) {
        char *end;
        unsigned long v;

        errno = 0;
        v = strtoul(s, &end, 10);
        if (errno || end == s || *end || v > max) {
                fprintf(stderr, "kdbus-bench: '%s' is not a number in 0..%lu\n", s, max);
                return -EINVAL;
        }
        *ret = v;
        return 0;
}

static int parse_options(int argc, char **argv, Options *o) {
        static const struct option opts[] = {
                { "address", required_argument, NULL, 'a' },
                { "client-address", required_argument, NULL, 'C' },
                { "workload", required_argument, NULL, 'w' },
                { "inflight", required_argument, NULL, 'i' },
                { "count", required_argument, NULL, 'n' },
                { "warmup", required_argument, NULL, 'W' },
                { "repeat", required_argument, NULL, 'r' },
                { "receivers", required_argument, NULL, 'R' },
                { "idle-peers", required_argument, NULL, 'P' },
                { "idle-rules", required_argument, NULL, 'N' },
                { "window", required_argument, NULL, 'x' },
                { "payload", required_argument, NULL, 'p' },
                { "reply-payload", required_argument, NULL, 'Y' },
                { "relay", no_argument, NULL, 'L' },
                { "poll", no_argument, NULL, 'O' },
                { "alloc-file", required_argument, NULL, 'A' },
                { "seconds", required_argument, NULL, 's' },
                { "help", no_argument, NULL, 'h' },
                {}
        };
        unsigned long v;
        char *end;
        int c, r = 0;

        *o = (Options) { .workload = "call", .inflight = 1, .count = 20000, .warmup = 2000,
                         .repeat = 5, .receivers = 1, .window = 64, .payload = 8 };
        while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
                switch (c) {
                case 'a': o->address = optarg; break;
                case 'C': o->client_address = optarg; break;
                case 'w': o->workload = optarg; break;
                case 'A': o->alloc_file = optarg; break;
                case 's':
                        o->seconds = strtod(optarg, &end);
                        if (*end || !(o->seconds > 0 && o->seconds <= 3600)) {
                                fprintf(stderr, "kdbus-bench: --seconds '%s': want 0 < s <= 3600\n",
                                        optarg);
                                return -EINVAL;
                        }
                        break;
                case 'i': r = parse_ulong(optarg, 4096, &v); o->inflight = (unsigned) v; break;
                case 'n': r = parse_ulong(optarg, 1ul << 40, &v); o->count = v; break;
                case 'W': r = parse_ulong(optarg, 1ul << 40, &v); o->warmup = v; break;
                case 'r': r = parse_ulong(optarg, BENCH_MAX_REPEAT, &v); o->repeat = (unsigned) v; break;
                case 'R': r = parse_ulong(optarg, BENCH_MAX_RECEIVERS, &v); o->receivers = (unsigned) v; break;
                case 'P': r = parse_ulong(optarg, BENCH_MAX_IDLE_PEERS, &v); o->idle_peers = (unsigned) v; break;
                case 'N': r = parse_ulong(optarg, 1000000, &v); o->idle_rules = v; break;
                case 'x': r = parse_ulong(optarg, 4096, &v); o->window = (unsigned) v; break;
                case 'p': r = parse_ulong(optarg, BENCH_MAX_PAYLOAD, &v); o->payload = (unsigned) v; break;
                case 'Y': r = parse_ulong(optarg, BENCH_MAX_PAYLOAD, &v); o->reply_payload = (unsigned) v; break;
                case 'L': o->relay = true; break;
                case 'O': o->poll = true; break;
                case 'h': usage(stdout); exit(0);
                default: usage(stderr); return -EINVAL;
                }
                if (r < 0)
                        return r;
        }
        if (!o->address || optind != argc || !o->repeat || !o->count || !o->inflight ||
            !o->window || !o->receivers || (o->idle_rules && !o->idle_peers)) {
                usage(stderr);
                return -EINVAL;
        }
        if (strcmp(o->workload, "call") && strcmp(o->workload, "signal") &&
            strcmp(o->workload, "connect")) {
                fprintf(stderr, "kdbus-bench: unknown workload '%s' (call, signal, connect)\n",
                        o->workload);
                return -EINVAL;
        }
        if (!strcmp(o->workload, "signal") && (o->count % o->window || o->warmup % o->window)) {
                fprintf(stderr, "kdbus-bench: --count and --warmup must be multiples of --window "
                        "(%u)\n", o->window);
                return -EINVAL;
        }
        return 0;
}

int main(int argc, char **argv) {
        double rates[BENCH_MAX_REPEAT], sorted[BENCH_MAX_REPEAT];
        uint64_t allocs[BENCH_MAX_REPEAT], total_allocs = 0;
        unsigned long ops[BENCH_MAX_REPEAT], total_ops = 0;
        pid_t peers[BENCH_MAX_RECEIVERS + BENCH_MAX_IDLE_PEERS];
        unsigned n_peers = 0, i;
        int ready[2], ack[2];
        bool signals, connects;
        const char *what;
        Options o;
        double median;
        int r;

        r = parse_options(argc, argv, &o);
        if (r < 0)
                return 1;
        if (o.alloc_file && map_alloc_file(o.alloc_file) < 0)
                return 1;
        signals = !strcmp(o.workload, "signal");
        connects = !strcmp(o.workload, "connect");
        what = signals ? "signals" : connects ? "connections" : "calls";
        if (pipe2(ready, O_CLOEXEC) < 0 || pipe2(ack, O_CLOEXEC) < 0) {
                perror("kdbus-bench: pipe2");
                return 1;
        }
        for (i = 0; i < (signals ? o.receivers : connects ? 0 : 1) + o.idle_peers; i++) {
                int role = i >= (signals ? o.receivers : connects ? 0 : 1) ? PEER_IDLE :
                           signals ? PEER_RECEIVER : PEER_SERVICE;

                peers[n_peers] = spawn_peer(&o, role, i - (role == PEER_IDLE ?
                                                           (signals ? o.receivers : connects ? 0 : 1) : 0),
                                            ready[1], ack[1]);
                if (peers[n_peers] < 0) {
                        perror("kdbus-bench: fork");
                        r = -errno;
                        goto out;
                }
                n_peers++;
        }
        (void) close(ready[1]);
        (void) close(ack[1]);
        ready[1] = ack[1] = -1;
        r = wait_bytes(ready[0], n_peers);
        if (r < 0) {
                fprintf(stderr, "kdbus-bench: a peer failed to connect to %s (see above)\n",
                        o.address);
                goto out;
        }
        r = signals ? run_signals(&o, rates, ops, allocs, ack[0])
            : connects ? run_connects(&o, rates, ops, allocs)
                       : run_calls(&o, rates, ops, allocs);
        if (r < 0) {
                fprintf(stderr, "kdbus-bench: %s workload on %s failed: %s\n", o.workload,
                        o.address, strerror(-r));
                goto out;
        }
        for (i = 0; i < o.repeat; i++) {
                printf("round %u/%u: %lu %s, %.0f/s (%.2f us each)", i + 1, o.repeat, ops[i],
                       what, rates[i], 1e6 / rates[i]);
                if (alloc_counter)
                        printf(", bus allocations %.2f per %.*s", (double) allocs[i] / (double) ops[i],
                               (int) strlen(what) - 1, what);
                printf("\n");
                total_allocs += allocs[i];
                total_ops += ops[i];
        }
        memcpy(sorted, rates, sizeof(double) * o.repeat);
        qsort(sorted, o.repeat, sizeof(double), cmp_double);
        median = o.repeat % 2 ? sorted[o.repeat / 2]
                              : (sorted[o.repeat / 2 - 1] + sorted[o.repeat / 2]) / 2;
        printf("RESULT %s median=%.0f min=%.0f max=%.0f us=%.2f allocs=%.3f", o.workload, median,
               sorted[0], sorted[o.repeat - 1], 1e6 / median,
               alloc_counter ? (double) total_allocs / (double) total_ops : -1.0);
        if (n_lat) {
                qsort(lat, n_lat, sizeof(double), cmp_double);
                printf(" p50=%.1f p99=%.1f", lat[n_lat / 2], lat[(n_lat * 99) / 100]);
        }
        printf("\n");
        fflush(stdout);
out:
        for (i = 0; i < n_peers; i++) {
                (void) kill(peers[i], SIGTERM);
                (void) waitpid(peers[i], NULL, 0);
        }
        return r < 0 ? 1 : 0;
}
