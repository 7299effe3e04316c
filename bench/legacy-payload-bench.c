/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * legacy-payload-bench: large payloads on the classic (dbus1) path, the counterpart of
 * kdbus-native-bench --workload memfd. A libdbus service and a libdbus client on any bus
 * address; the client calls the service with one `ay` body of --size bytes and waits for
 * the empty reply (one call in flight), for --seconds, --repeat rounds; prints calls/s and
 * MB/s of payload per round and the median. Every byte crosses the bus twice (client ->
 * bus -> service), which is what the native memfd path avoids.
 *
 * --inflight N: N calls outstanding instead of one (pipelined calls: whenever replies come,
 * one new call per reply), the classic path's counterpart of kdbus-native-bench --workload
 * pipeline.
 *
 * --calls N (one in flight): each round makes exactly N calls instead of running --seconds,
 * for an instruction count of the bus taken over two counts (bench/native-callgrind.sh).
 *
 * Usage: legacy-payload-bench --address ADDR --size BYTES [--seconds S] [--repeat N]
 *                             [--bus-pid PID] [--inflight N] [--calls N]
 * --bus-pid: also the bus's CPU time (utime + stime of /proc/PID/stat) per call over the
 * timed rounds, as kdbus-native-bench reports it; the peers' (client and service) always.
 */
#include <dbus/dbus.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "bench/bench-stat.h"

#define SERVICE "org.kdbus.bench.Payload"

static DBusConnection *connect_bus(const char *address) {
        DBusError err = DBUS_ERROR_INIT;
        DBusConnection *c = dbus_connection_open_private(address, &err);

        if (!c || !dbus_bus_register(c, &err)) {
                fprintf(stderr, "legacy-payload-bench: cannot connect to %s: %s\n", address,
                        err.message ? err.message : "out of memory");
                exit(1);
        }
        /* the bus's limits apply, not libdbus's default 32 MiB per message */
        dbus_connection_set_max_message_size(c, 128 * 1024 * 1024);
        dbus_connection_set_max_received_size(c, 256L * 1024 * 1024);
        return c;
}

static _Noreturn void serve(const char *address, int ready_fd) {
        DBusConnection *c = connect_bus(address);
        DBusError err = DBUS_ERROR_INIT;

        if (dbus_bus_request_name(c, SERVICE, DBUS_NAME_FLAG_DO_NOT_QUEUE, &err) !=
            DBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER) {
                fprintf(stderr, "legacy-payload-bench: cannot own %s\n", SERVICE);
                exit(1);
        }
        (void) !write(ready_fd, "r", 1);
        close(ready_fd);
        while (dbus_connection_read_write(c, -1)) {
                DBusMessage *m;

                while ((m = dbus_connection_pop_message(c))) {
                        if (dbus_message_get_type(m) == DBUS_MESSAGE_TYPE_METHOD_CALL) {
                                DBusMessage *r = dbus_message_new_method_return(m);

                                if (!r || !dbus_connection_send(c, r, NULL))
                                        exit(1);
                                dbus_message_unref(r);
                        }
                        dbus_message_unref(m);
                }
        }
        exit(0);
}

/* One call of @call (a copy: a sent message keeps its serial), not waited for. */
static bool call_queue(DBusConnection *conn, DBusMessage *call) {
        DBusMessage *copy = dbus_message_copy(call);
        bool ok = copy && dbus_connection_send(conn, copy, NULL);

        if (copy)
                dbus_message_unref(copy);
        return ok;
}

/* --inflight calls outstanding until @seconds after @start; *@in_flight carries over
 * between rounds. Return: the replies counted, or -1 (an error reply, the bus gone). */
static long run_pipelined(DBusConnection *conn, DBusMessage *call, int inflight, double start,
                          double seconds, int *in_flight) {
        long calls = 0;

        for (;;) {
                DBusMessage *m;

                for (; *in_flight < inflight; ++*in_flight)
                        if (!call_queue(conn, call))
                                return -1;
                if (bench_now() - start >= seconds)
                        return calls;
                if (!dbus_connection_read_write(conn, -1))
                        return -1;
                while ((m = dbus_connection_pop_message(conn))) {
                        int type = dbus_message_get_type(m);

                        dbus_message_unref(m);
                        if (type == DBUS_MESSAGE_TYPE_ERROR)
                                return -1;
                        if (type == DBUS_MESSAGE_TYPE_METHOD_RETURN) {
                                --*in_flight;
                                ++calls;
                        }
                }
        }
}

int main(int argc, char **argv) {
        const char *address = NULL;
        double seconds = 1.0, rates[64], med;
        long size = 1024 * 1024;
        int repeat = 3, pipefd[2], bus_pid = 0, inflight = 1, in_flight = 0;
        long total_calls = 0, cpu0 = -1, cpu1 = -1, peer0, peer1, fixed_calls = 0;
        char c;
        pid_t pid;

        for (int i = 1; i + 1 < argc; i += 2) {
                if (!strcmp(argv[i], "--address"))
                        address = argv[i + 1];
                else if (!strcmp(argv[i], "--size"))
                        size = atol(argv[i + 1]);
                else if (!strcmp(argv[i], "--seconds"))
                        seconds = atof(argv[i + 1]);
                else if (!strcmp(argv[i], "--repeat"))
                        repeat = atoi(argv[i + 1]);
                else if (!strcmp(argv[i], "--bus-pid"))
                        bus_pid = atoi(argv[i + 1]);
                else if (!strcmp(argv[i], "--inflight"))
                        inflight = atoi(argv[i + 1]);
                else if (!strcmp(argv[i], "--calls"))
                        fixed_calls = atol(argv[i + 1]);
                else
                        break;
        }
        if (!address || size <= 0 || repeat < 1 || repeat > 64 || seconds <= 0 || inflight < 1 ||
            inflight > 1024 || fixed_calls < 0 || (fixed_calls && inflight > 1)) {
                fprintf(stderr, "usage: %s --address ADDR --size BYTES [--seconds S] [--repeat N (1-64)] [--bus-pid PID] [--inflight N (1-1024)] [--calls N (one in flight: N calls a round instead of S seconds)]\n",
                        argv[0]);
                return 2;
        }
        if (pipe(pipefd) < 0)
                return 1;
        pid = fork();
        if (pid == 0) {
                close(pipefd[0]);
                serve(address, pipefd[1]);
        }
        close(pipefd[1]);
        if (read(pipefd[0], &c, 1) != 1) {
                fprintf(stderr, "legacy-payload-bench: the service did not start\n");
                return 1;
        }

        DBusConnection *conn = connect_bus(address);
        unsigned char *payload = calloc(1, (size_t)size);
        DBusMessage *call = dbus_message_new_method_call(SERVICE, "/", SERVICE, "Take");

        if (!payload || !call ||
            !dbus_message_append_args(call, DBUS_TYPE_ARRAY, DBUS_TYPE_BYTE, &payload, (int)size,
                                      DBUS_TYPE_INVALID))
                return 1;
        if (bus_pid)
                cpu0 = bench_cpu_ticks(bus_pid);
        peer0 = bench_cpu_ticks_sum((const int[]){ (int)getpid(), (int)pid }, 2);
        for (int r = 0; r < repeat; ++r) {
                double start = bench_now(), end;
                long calls = 0;

                if (inflight > 1) {
                        calls = run_pipelined(conn, call, inflight, start, seconds, &in_flight);
                        if (calls < 0) {
                                fprintf(stderr, "legacy-payload-bench: a pipelined call failed\n");
                                kill(pid, SIGTERM);
                                return 1;
                        }
                        end = bench_now();
                } else do {
                        DBusError err = DBUS_ERROR_INIT;
                        DBusMessage *copy = dbus_message_copy(call);
                        DBusMessage *reply = copy ? dbus_connection_send_with_reply_and_block(
                                                            conn, copy, 60000, &err) : NULL;

                        if (!reply) {
                                fprintf(stderr, "legacy-payload-bench: call %ld failed: %s\n",
                                        calls, err.message ? err.message : "out of memory");
                                kill(pid, SIGTERM);
                                return 1;
                        }
                        dbus_message_unref(reply);
                        dbus_message_unref(copy);
                        ++calls;
                        end = bench_now();
                } while (fixed_calls ? calls < fixed_calls : end - start < seconds);
                rates[r] = (double)calls / (end - start);
                total_calls += calls;
                printf("round %d: %.1f calls/s, %.0f MB/s\n", r + 1, rates[r],
                       rates[r] * (double)size / 1e6);
        }
        if (bus_pid)
                cpu1 = bench_cpu_ticks(bus_pid);
        peer1 = bench_cpu_ticks_sum((const int[]){ (int)getpid(), (int)pid }, 2);
        med = bench_median(rates, (unsigned)repeat);
        if (cpu0 >= 0 && cpu1 >= 0 && total_calls)
                printf("bus_cpu_us_per_call: %.2f\n",
                       bench_cpu_us_per_call(cpu0, cpu1, (unsigned long)total_calls));
        if (peer0 >= 0 && peer1 >= 0 && total_calls)
                printf("peers_cpu_us_per_call: %.2f\n",
                       bench_cpu_us_per_call(peer0, peer1, (unsigned long)total_calls));
        printf("median: %.1f calls/s, %.0f MB/s (size %ld, %d in flight)\n", med,
               med * (double)size / 1e6, size, inflight);
        kill(pid, SIGTERM);
        waitpid(pid, NULL, 0);
        dbus_message_unref(call);
        dbus_connection_close(conn);
        dbus_connection_unref(conn);
        free(payload);
        return 0;
}
