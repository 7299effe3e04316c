/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * kdbusctl monitor [--pcap=FILE] [--count=N] [MATCH...]: turn the connection into a monitor
 * with org.freedesktop.DBus.Monitoring.BecomeMonitor and print, or capture, every message
 * the bus copies to it. The capture holds the bytes exactly as received (kdbusctl-pcap.c).
 *
 * Once BecomeMonitor has succeeded, "Monitoring ADDRESS" goes to stderr (unless --quiet):
 * scripts wait for it before they make traffic. SIGINT and SIGTERM end the capture cleanly
 * with exit 0; every record is flushed as it is written, so the file is always readable.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "tools/kdbusctl.h"
#include "wire/protocol.h"

static volatile sig_atomic_t monitor_stop;

static void on_signal(int sig) {
        (void) sig;
        monitor_stop = 1;
}

static uint64_t now_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static const char *type_str(uint8_t t) {
        switch (t) {
        case WIRE_MSG_METHOD_CALL: return "method_call";
        case WIRE_MSG_METHOD_RETURN: return "method_return";
        case WIRE_MSG_ERROR: return "error";
        case WIRE_MSG_SIGNAL: return "signal";
        default: return "unknown";
        }
}

static void print_message(const CtlMsg *m, uint64_t usec) {
        const WireHeader *h = &m->hdr;

        printf("%s time=%llu.%06llu sender=%s -> destination=%s serial=%u", type_str(h->type),
               (unsigned long long)(usec / 1000000u), (unsigned long long)(usec % 1000000u),
               h->sender ? h->sender : "(none)", h->destination ? h->destination : "(none)",
               h->serial);
        if (h->reply_serial)
                printf(" reply_serial=%u", h->reply_serial);
        if (h->path)
                printf(" path=%s", h->path);
        if (h->interface)
                printf(" interface=%s", h->interface);
        if (h->member)
                printf(" member=%s", h->member);
        if (h->error_name)
                printf(" error_name=%s", h->error_name);
        if (h->n_fds)
                printf(" unix_fds=%u", h->n_fds);
        printf("\n");
        if (h->signature[0]) {
                printf("  ");
                if (ctl_print_body(stdout, m->data, h))
                        printf("(body not printable)\n");
        }
        fflush(stdout);
}

/*
 * Becoming a monitor makes the connection lose its unique name, and the bus tells it so
 * with a NameLost addressed to it (dbus-daemon and kdbusd alike). That is not traffic on
 * the bus, so neither the text output nor the capture shows it.
 */
static bool is_own_name_lost(const CtlConn *c, const CtlMsg *m) {
        const WireHeader *h = &m->hdr;

        return h->type == WIRE_MSG_SIGNAL && h->sender && h->destination && h->member &&
               h->interface && !strcmp(h->sender, WIRE_DRIVER_NAME) &&
               !strcmp(h->interface, WIRE_DRIVER_INTERFACE) && !strcmp(h->member, "NameLost") &&
               !strcmp(h->destination, c->unique_name);
}

static int become_monitor(CtlConn *c, char **rules, int n_rules) {
        CtlMsg reply = CTL_MSG_NULL(reply);
        WireWriter w;
        uint32_t flags = 0;
        int r;

        wire_writer_init(&w);
        (void) wire_writer_open(&w, 'a', "s");
        for (int i = 0; i < n_rules; ++i)
                (void) wire_writer_append_basic(&w, 's', rules[i]);
        (void) wire_writer_close(&w);
        (void) wire_writer_append_basic(&w, 'u', &flags);
        if (w.error) {
                fprintf(stderr, "kdbusctl monitor: a match rule is not a valid string\n");
                wire_writer_deinit(&w);
                return -EINVAL;
        }
        r = ctl_conn_call(c, WIRE_DRIVER_NAME, WIRE_DRIVER_PATH,
                          "org.freedesktop.DBus.Monitoring", "BecomeMonitor", &w,
                          CTL_DEFAULT_TIMEOUT_MS, &reply);
        wire_writer_deinit(&w);
        if (r < 0)
                return r;
        if (reply.hdr.type == WIRE_MSG_ERROR) {
                fprintf(stderr, "kdbusctl: %s: BecomeMonitor failed: %s\n", c->address,
                        ctl_msg_error_text(&reply));
                ctl_msg_deinit(&reply);
                return -EPERM;
        }
        ctl_msg_deinit(&reply);
        return 0;
}

/**
 * ctl_cmd_monitor() - the monitor command. Return: CTL_EXIT_*.
 */
int ctl_cmd_monitor(const CtlOptions *o, int argc, char **argv) {
        enum { ARG_PCAP = 0x100, ARG_COUNT };
        static const struct option options[] = {
                { "pcap", required_argument, NULL, ARG_PCAP },
                { "count", required_argument, NULL, ARG_COUNT },
                {}
        };
        _cleanup_(ctl_conn_freep) CtlConn *c = NULL;
        struct sigaction sa = { .sa_handler = on_signal };
        sigset_t stop;
        const char *pcap_path = NULL;
        unsigned long count = 0, seen = 0;
        FILE *pcap = NULL;
        int opt, r, ret = CTL_EXIT_FAILED;

        optind = 0;
        while ((opt = getopt_long(argc, argv, "+", options, NULL)) >= 0) {
                switch (opt) {
                case ARG_PCAP:
                        pcap_path = optarg;
                        break;
                case ARG_COUNT: {
                        char *end;

                        count = strtoul(optarg, &end, 10);
                        if (!*optarg || *end || *optarg == '-' || count == 0) {
                                fprintf(stderr, "kdbusctl monitor: --count=\"%s\": expected a "
                                        "positive number\n", optarg);
                                return CTL_EXIT_USAGE;
                        }
                        break;
                }
                default:
                        return CTL_EXIT_USAGE;
                }
        }
        if (pcap_path) {
                pcap = strcmp(pcap_path, "-") ? fopen(pcap_path, "we") : stdout;
                if (!pcap) {
                        fprintf(stderr, "kdbusctl monitor: cannot open \"%s\" for writing: %m\n",
                                pcap_path);
                        return CTL_EXIT_FAILED;
                }
        }
        if (ctl_conn_open(o->address, &c) < 0) {
                ret = CTL_EXIT_CONNECT;
                goto out;
        }
        c->lenient_fds = true;
        if (become_monitor(c, argv + optind, argc - optind) < 0)
                goto out;
        if (pcap && ctl_pcap_write_header(pcap) < 0) {
                fprintf(stderr, "kdbusctl monitor: cannot write \"%s\": %m\n", pcap_path);
                goto out;
        }
        /* block the stop signals except inside ppoll(): see wait_readable() */
        sigemptyset(&stop);
        sigaddset(&stop, SIGINT);
        sigaddset(&stop, SIGTERM);
        (void) sigprocmask(SIG_BLOCK, &stop, &c->sigmask);
        c->has_sigmask = true;
        (void) sigaction(SIGINT, &sa, NULL);
        (void) sigaction(SIGTERM, &sa, NULL);
        if (!o->quiet)
                fprintf(stderr, "Monitoring %s\n", c->address);

        while (!monitor_stop) {
                CtlMsg m = CTL_MSG_NULL(m);
                uint64_t usec;

                r = ctl_conn_recv(c, -1, &m);
                if (r == -EINTR)
                        continue;
                if (r == -ECONNRESET) {
                        fprintf(stderr, "kdbusctl: %s: the bus closed the connection\n",
                                c->address);
                        goto out;
                }
                if (r < 0)
                        goto out;
                if (is_own_name_lost(c, &m)) {
                        ctl_msg_deinit(&m);
                        continue;
                }
                usec = now_usec();
                if (pcap) {
                        r = ctl_pcap_write_record(pcap, m.data, m.size, usec);
                        if (r < 0) {
                                fprintf(stderr, "kdbusctl monitor: cannot write \"%s\": %s\n",
                                        pcap_path, strerror(-r));
                                ctl_msg_deinit(&m);
                                goto out;
                        }
                } else {
                        print_message(&m, usec);
                }
                ctl_msg_deinit(&m);
                if (count && ++seen >= count)
                        break;
        }
        ret = CTL_EXIT_OK;
out:
        if (pcap && pcap != stdout)
                (void) fclose(pcap);
        return ret;
}
