/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * legacy-payload-bench: large payloads on the classic (dbus1) path, the counterpart of
 * kdbus-native-bench --workload memfd. A libdbus service and a libdbus client on any bus
 * address; the client calls the service with one `ay` body of --size bytes and waits for
 * the empty reply (one call in flight), for --seconds, --repeat rounds; prints calls/s and
 * MB/s of payload per round and the median. Every byte crosses the bus twice (client ->
 * bus -> service), which is what the native memfd path avoids.
 *
 * Usage: legacy-payload-bench --address ADDR --size BYTES [--seconds S] [--repeat N]
 *                             [--bus-pid PID]
 * --bus-pid: also the bus's CPU time (utime + stime of /proc/PID/stat) per call over the
 * timed rounds, as kdbus-native-bench reports it.
 */
#include <dbus/dbus.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SERVICE "org.kdbus.bench.Payload"

static double now(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* the bus's utime + stime in clock ticks, or -1 */
static long bus_cpu_ticks(int pid) {
        char path[64], buf[1024], *p;
        unsigned long ut, st;
        FILE *f;
        size_t n;

        snprintf(path, sizeof(path), "/proc/%d/stat", pid);
        f = fopen(path, "re");
        if (!f)
                return -1;
        n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = 0;
        p = strrchr(buf, ')');
        if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
                return -1;
        return (long)(ut + st);
}

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

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *)a, y = *(const double *)b;

        return (x > y) - (x < y);
}

int main(int argc, char **argv) {
        const char *address = NULL;
        double seconds = 1.0, rates[64];
        long size = 1024 * 1024;
        int repeat = 3, pipefd[2], bus_pid = 0;
        long total_calls = 0, cpu0 = -1, cpu1 = -1;
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
                else
                        break;
        }
        if (!address || size <= 0 || repeat < 1 || repeat > 64 || seconds <= 0) {
                fprintf(stderr, "usage: %s --address ADDR --size BYTES [--seconds S] [--repeat N (1-64)] [--bus-pid PID]\n",
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
                cpu0 = bus_cpu_ticks(bus_pid);
        for (int r = 0; r < repeat; ++r) {
                double start = now(), end;
                long calls = 0;

                do {
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
                        end = now();
                } while (end - start < seconds);
                rates[r] = (double)calls / (end - start);
                total_calls += calls;
                printf("round %d: %.1f calls/s, %.0f MB/s\n", r + 1, rates[r],
                       rates[r] * (double)size / 1e6);
        }
        if (bus_pid)
                cpu1 = bus_cpu_ticks(bus_pid);
        qsort(rates, (size_t)repeat, sizeof(rates[0]), cmp_double);
        if (cpu0 >= 0 && cpu1 >= 0 && total_calls)
                printf("bus_cpu_us_per_call: %.2f\n", (double)(cpu1 - cpu0) * 1e6 /
                       (double)sysconf(_SC_CLK_TCK) / (double)total_calls);
        printf("median: %.1f calls/s, %.0f MB/s (size %ld)\n", rates[repeat / 2],
               rates[repeat / 2] * (double)size / 1e6, size);
        kill(pid, SIGTERM);
        waitpid(pid, NULL, 0);
        dbus_message_unref(call);
        dbus_connection_close(conn);
        dbus_connection_unref(conn);
        free(payload);
        return 0;
}
