/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * kdbusd's command line, modelled on dbus-daemon's so it can stand in for it. What is not
 * there yet is refused loudly rather than pretended: XML configuration (--system,
 * --config-file) is not supported yet; --session uses a built-in equivalent of the session
 * configuration (listen on unix:tmpdir=/tmp, EXTERNAL auth, session limits).
 *
 * --fork forks first (sd-event objects do not survive fork), the child sets everything up
 * and prints the address and pid, and only then the parent exits, with the child's
 * verdict: a caller that reads the address from the parent's stdout can connect at once.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <systemd/sd-daemon.h>
#include "bridge/limits.h"
#include "proxy/address.h"
#include "proxy/listener.h"
#include "proxy/log.h"
#include "proxy/server.h"
#include "util/error.h"

typedef struct Args {
        bool session;
        const char *address;
        int print_address_fd;           /* -1: do not print */
        int print_pid_fd;
        bool fork;
        bool systemd_activation;
        ProxyLogTarget log_target;
} Args;

static void help(void) {
        printf("kdbusd [--version] [--session] [--system] [--config-file=FILE]\n"
               "       [--print-address[=DESCRIPTOR]] [--print-pid[=DESCRIPTOR]]\n"
               "       [--address=ADDRESS] [--nopidfile] [--nosyslog] [--syslog]\n"
               "       [--syslog-only] [--nofork] [--fork] [--systemd-activation]\n\n"
               "A D-Bus message bus with kdbus semantics; the command line is dbus-daemon's.\n"
               "  --session             built-in session bus configuration\n"
               "                        (listen on unix:tmpdir=/tmp unless --address)\n"
               "  --system, --config-file=FILE\n"
               "                        not supported yet (XML configuration)\n"
               "  --address=ADDRESS     listen on ADDRESS (';'-separated list of unix:path=,\n"
               "                        unix:abstract=, unix:dir=, unix:tmpdir=,\n"
               "                        unix:runtime=yes, systemd:)\n"
               "  --print-address[=FD]  print the first listening address (with guid) to FD\n"
               "                        (default stdout)\n"
               "  --print-pid[=FD]      print the pid to FD (default stdout)\n"
               "  --fork / --nofork     daemonize after listening / stay in the foreground\n"
               "                        (default)\n"
               "  --nopidfile           accepted; there is no pid file without configuration\n"
               "  --systemd-activation  accepted; sockets passed in LISTEN_FDS are always\n"
               "                        used when no --address is given; service activation\n"
               "                        is not implemented yet\n"
               "  --syslog / --syslog-only / --nosyslog\n"
               "                        log to the journal and stderr / journal only / stderr\n"
               "  --version, --help\n");
}

static int parse_fd(const char *s, int *ret) {
        char *end;
        long v;

        errno = 0;
        v = strtol(s, &end, 10);
        if (errno || end == s || *end || v < 0 || v > 65535)
                return -EINVAL;
        *ret = (int)v;
        return 0;
}

enum {
        ARG_SESSION = 0x100,
        ARG_SYSTEM,
        ARG_CONFIG_FILE,
        ARG_ADDRESS,
        ARG_PRINT_ADDRESS,
        ARG_PRINT_PID,
        ARG_NOFORK,
        ARG_FORK,
        ARG_NOPIDFILE,
        ARG_VERSION,
        ARG_HELP,
        ARG_SYSTEMD_ACTIVATION,
        ARG_SYSLOG,
        ARG_SYSLOG_ONLY,
        ARG_NOSYSLOG,
        ARG_INTROSPECT,
};

/* Return: 0 run, 1 exit successfully (help/version), -1 exit with failure. */
static int parse_args(int argc, char **argv, Args *a) {
        static const struct option options[] = {
                { "session", no_argument, NULL, ARG_SESSION },
                { "system", no_argument, NULL, ARG_SYSTEM },
                { "config-file", required_argument, NULL, ARG_CONFIG_FILE },
                { "address", required_argument, NULL, ARG_ADDRESS },
                { "print-address", optional_argument, NULL, ARG_PRINT_ADDRESS },
                { "print-pid", optional_argument, NULL, ARG_PRINT_PID },
                { "nofork", no_argument, NULL, ARG_NOFORK },
                { "fork", no_argument, NULL, ARG_FORK },
                { "nopidfile", no_argument, NULL, ARG_NOPIDFILE },
                { "version", no_argument, NULL, ARG_VERSION },
                { "help", no_argument, NULL, ARG_HELP },
                { "systemd-activation", no_argument, NULL, ARG_SYSTEMD_ACTIVATION },
                { "syslog", no_argument, NULL, ARG_SYSLOG },
                { "syslog-only", no_argument, NULL, ARG_SYSLOG_ONLY },
                { "nosyslog", no_argument, NULL, ARG_NOSYSLOG },
                { "introspect", no_argument, NULL, ARG_INTROSPECT },
                {}
        };
        int c;

        while ((c = getopt_long(argc, argv, "", options, NULL)) >= 0) {
                switch (c) {
                case ARG_SESSION:
                        a->session = true;
                        break;
                case ARG_SYSTEM:
                        fprintf(stderr, "kdbusd: --system needs the XML configuration "
                                "(/usr/share/dbus-1/system.conf), which is not supported yet; "
                                "use --session [--address=...]\n");
                        return -1;
                case ARG_CONFIG_FILE:
                        fprintf(stderr, "kdbusd: --config-file=%s: XML configuration files are "
                                "not supported yet; use --session [--address=...]\n", optarg);
                        return -1;
                case ARG_ADDRESS:
                        a->address = optarg;
                        break;
                case ARG_PRINT_ADDRESS:
                        a->print_address_fd = 1;
                        if (optarg && parse_fd(optarg, &a->print_address_fd) < 0) {
                                fprintf(stderr, "kdbusd: --print-address: \"%s\" is not a file "
                                        "descriptor number\n", optarg);
                                return -1;
                        }
                        break;
                case ARG_PRINT_PID:
                        a->print_pid_fd = 1;
                        if (optarg && parse_fd(optarg, &a->print_pid_fd) < 0) {
                                fprintf(stderr, "kdbusd: --print-pid: \"%s\" is not a file "
                                        "descriptor number\n", optarg);
                                return -1;
                        }
                        break;
                case ARG_NOFORK:
                        a->fork = false;
                        break;
                case ARG_FORK:
                        a->fork = true;
                        break;
                case ARG_NOPIDFILE:
                        break;
                case ARG_VERSION:
                        printf("kdbusd (kdbus-compat) 0.1\n");
                        return 1;
                case ARG_HELP:
                        help();
                        return 1;
                case ARG_SYSTEMD_ACTIVATION:
                        a->systemd_activation = true;
                        break;
                case ARG_SYSLOG:
                        a->log_target = PROXY_LOG_JOURNAL;
                        break;
                case ARG_SYSLOG_ONLY:
                        a->log_target = PROXY_LOG_JOURNAL_ONLY;
                        break;
                case ARG_NOSYSLOG:
                        a->log_target = PROXY_LOG_STDERR;
                        break;
                case ARG_INTROSPECT:
                        fprintf(stderr, "kdbusd: --introspect is not supported yet\n");
                        return -1;
                default:
                        fprintf(stderr, "kdbusd: try --help\n");
                        return -1;
                }
        }
        if (optind < argc) {
                fprintf(stderr, "kdbusd: unexpected argument \"%s\"\n", argv[optind]);
                return -1;
        }
        if (!a->session) {
                fprintf(stderr, "kdbusd: no configuration given: use --session (--system and "
                        "--config-file need XML configuration, which is not supported yet)\n");
                return -1;
        }
        return 0;
}

static int write_all(int fd, const char *s) {
        size_t n = strlen(s);

        while (n > 0) {
                ssize_t k = write(fd, s, n);

                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                s += k;
                n -= (size_t)k;
        }
        return 0;
}

static int setup_listeners(Server *s, const Args *a) {
        _cleanup_(address_list_freep) AddressList *list = NULL;
        char err[4400] = "";
        size_t i;
        int r;

        if (!a->address) {
                r = listener_new_from_systemd(s, err, sizeof(err));
                if (r < 0) {
                        fprintf(stderr, "kdbusd: %s\n", err);
                        return -1;
                }
                if (r > 0)
                        return 0;
        }
        r = address_list_parse(a->address ? a->address : "unix:tmpdir=/tmp", &list);
        if (r) {
                fprintf(stderr, "kdbusd: invalid address \"%s\": %s\n", a->address,
                        r < 0 ? strerror(-r) : address_strerror(r));
                return -1;
        }
        for (i = 0; i < list->n_entries; ++i) {
                err[0] = '\0';
                r = listener_new_from_address(s, &list->entries[i], err, sizeof(err));
                if (r) {
                        fprintf(stderr, "kdbusd: Failed to start message bus: %s\n",
                                err[0] ? err : strerror(r < 0 ? -r : EINVAL));
                        return -1;
                }
        }
        return 0;
}

static int print_info(Server *s, const Args *a) {
        char text[16384] = "";
        List *l;

        if (a->print_address_fd >= 0) {
                /* like dbus-daemon: the first listener's address only, with the bus guid */
                l = list_first(&s->listeners);
                snprintf(text, sizeof(text), "%s,guid=%s\n",
                         l ? list_entry(l, ProxyListener, link)->address : "", s->guid);
                if (write_all(a->print_address_fd, text) < 0) {
                        fprintf(stderr, "kdbusd: cannot print the address to fd %d: %m\n",
                                a->print_address_fd);
                        return -1;
                }
        }
        if (a->print_pid_fd >= 0) {
                snprintf(text, sizeof(text), "%d\n", (int)getpid());
                if (write_all(a->print_pid_fd, text) < 0) {
                        fprintf(stderr, "kdbusd: cannot print the pid to fd %d: %m\n",
                                a->print_pid_fd);
                        return -1;
                }
        }
        return 0;
}

/* Fork; the parent waits for the child's verdict on @ret_notify_fd and exits with it. */
static int daemonize_start(int *ret_notify_fd) {
        int p[2];
        pid_t pid;
        char c;

        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        pid = fork();
        if (pid < 0)
                return -errno;
        if (pid > 0) {
                ssize_t n;

                (void) close(p[1]);
                do
                        n = read(p[0], &c, 1);
                while (n < 0 && errno == EINTR);
                _exit(n == 1 && c == 'y' ? EXIT_SUCCESS : EXIT_FAILURE);
        }
        (void) close(p[0]);
        (void) setsid();
        *ret_notify_fd = p[1];
        return 0;
}

static void daemonize_finish(int notify_fd, const Args *a) {
        int null;

        (void) chdir("/");
        null = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null >= 0) {
                (void) dup2(null, STDIN_FILENO);
                if (a->print_address_fd != STDOUT_FILENO || true)
                        (void) dup2(null, STDOUT_FILENO);
                if (a->log_target != PROXY_LOG_STDERR)
                        (void) dup2(null, STDERR_FILENO);
                if (null > STDERR_FILENO)
                        (void) close(null);
        }
        (void) write_all(notify_fd, "y");
        (void) close(notify_fd);
}

int main(int argc, char **argv) {
        _cleanup_(server_freep) Server *s = NULL;
        Args a = { .print_address_fd = -1, .print_pid_fd = -1, .log_target = PROXY_LOG_STDERR };
        BusLimits limits;
        int notify_fd = -1, r;

        r = parse_args(argc, argv, &a);
        if (r)
                return r > 0 ? EXIT_SUCCESS : EXIT_FAILURE;
        proxy_log_set_target(a.log_target);

        if (a.fork && daemonize_start(&notify_fd) < 0) {
                fprintf(stderr, "kdbusd: cannot fork: %m\n");
                return EXIT_FAILURE;
        }

        bus_limits_init_session(&limits);
        r = server_new(&limits, &s);
        if (r < 0) {
                fprintf(stderr, "kdbusd: cannot set up the bus: %s\n", strerror(-r));
                return EXIT_FAILURE;
        }
        if (setup_listeners(s, &a) < 0 || print_info(s, &a) < 0)
                return EXIT_FAILURE;
        if (a.fork)
                daemonize_finish(notify_fd, &a);
        (void) sd_notify(0, "READY=1");

        r = server_run(s);
        if (r < 0) {
                proxy_log(LOG_ERR, "The event loop failed: %s", strerror(-r));
                return EXIT_FAILURE;
        }
        return EXIT_SUCCESS;
}
