/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * kdbusd's command line, modelled on dbus-daemon's so it can stand in for it. The
 * configuration is a dbus-daemon busconfig file (proxy/config.c): --config-file=FILE,
 * --system (/usr/share/dbus-1/system.conf) or --session (/usr/share/dbus-1/session.conf, or
 * a built-in equivalent when that file is absent). The command line wins over the file:
 * --address replaces every <listen>, --fork/--nofork override <fork/>, --nopidfile drops
 * <pidfile>, --syslog* / --nosyslog override <syslog/>.
 *
 * --fork forks first (the loop and its fds belong to the child alone), the child sets
 * everything up and prints the address and pid, and only then the parent exits, with the
 * child's verdict: a caller that reads the address from the parent's stdout can connect at once.
 */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "bridge/limits.h"
#include "compat/driver.h"
#include "policy-xml/config.h"
#include "proxy/activation.h"
#include "proxy/address.h"
#include "proxy/args.h"
#include "proxy/config.h"
#include "proxy/config-watch.h"
#include "proxy/fd-limit.h"
#include "proxy/listener.h"
#include "proxy/log.h"
#include "proxy/kdbusfs.h"
#include "proxy/native-listener.h"
#include "proxy/native-options.h"
#include "proxy/notify.h"
#include "proxy/privileges.h"
#include "proxy/server.h"
#include "util/error.h"

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

static int listen_on(Server *s, const char *address, const ConfigLoc *loc) {
        _cleanup_(address_list_freep) AddressList *list = NULL;
        char err[4400] = "", where[1100] = "";
        size_t i;
        int r;

        if (loc)
                snprintf(where, sizeof(where), "%s:%u: <listen>: ", loc->file, loc->line);
        r = address_list_parse(address, &list);
        if (r) {
                fprintf(stderr, "kdbusd: %sinvalid address \"%s\": %s\n", where, address,
                        r < 0 ? strerror(-r) : address_strerror(r));
                return -1;
        }
        for (i = 0; i < list->n_entries; ++i) {
                err[0] = '\0';
                r = listener_new_from_address(s, &list->entries[i], err, sizeof(err));
                if (r) {
                        fprintf(stderr, "kdbusd: Failed to start message bus: %s%s\n", where,
                                err[0] ? err : strerror(r < 0 ? -r : EINVAL));
                        return -1;
                }
        }
        return 0;
}

/*
 * --address replaces every <listen>, as with dbus-daemon; without it, sockets passed by
 * systemd (LISTEN_FDS) replace them too (dbus-daemon would bind the <listen>s and leave the
 * passed sockets unserved; binding the same path again would steal systemd's socket), else
 * every <listen> of the configuration is bound. @ret_print gets
 * what --print-address prints (NULL: the first listener): dbus-daemon runs one server per
 * <listen> and prints each one's first address, the last <listen> first, joined by ';'.
 */
static int setup_listeners(Server *s, const Args *a, const Config *t, char **ret_print) {
        _cleanup_(freep) char *print = NULL;
        char err[4400] = "";
        size_t i;
        int r;

        if (a->address)
                return listen_on(s, a->address, NULL);
        r = listener_new_from_systemd(s, err, sizeof(err));
        if (r < 0) {
                fprintf(stderr, "kdbusd: %s\n", err);
                return -1;
        }
        if (r > 0)
                return 0;
        if (t->n_listen == 0) {
                fprintf(stderr, "kdbusd: Failed to start message bus: the configuration needs "
                        "one or more <listen> elements giving addresses (or use --address)\n");
                return -1;
        }
        for (i = 0; i < t->n_listen; ++i) {
                List *before = list_last(&s->listeners), *first;
                char *p = NULL;

                if (listen_on(s, t->listen[i].value, &t->listen[i].loc) < 0)
                        return -1;
                first = before ? before->next : list_first(&s->listeners);
                if (!first || first == &s->listeners)
                        continue;
                if (asprintf(&p, "%s,guid=%s%s%s",
                             list_entry(first, ProxyListener, link)->address, s->guid,
                             print ? ";" : "", print ? print : "") < 0) {
                        fprintf(stderr, "kdbusd: out of memory\n");
                        return -1;
                }
                free(print);
                print = p;
        }
        *ret_print = steal_ptr(&print);
        return 0;
}

/* Like dbus-daemon: refuse to start over an existing pid file (another bus may be running). */
static int pidfile_write(const char *path, const ConfigLoc *loc) {
        char text[32];
        int fd;

        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0) {
                if (errno == EEXIST)
                        fprintf(stderr, "kdbusd: The pid file \"%s\" exists (%s:%u), if the "
                                "message bus is not running, remove this file\n", path,
                                loc->file, loc->line);
                else
                        fprintf(stderr, "kdbusd: cannot create the pid file \"%s\" (%s:%u): "
                                "%m\n", path, loc->file, loc->line);
                return -1;
        }
        snprintf(text, sizeof(text), "%d\n", (int)getpid());
        if (write_all(fd, text) < 0) {
                fprintf(stderr, "kdbusd: cannot write the pid file \"%s\": %m\n", path);
                (void) close(fd);
                (void) unlink(path);
                return -1;
        }
        (void) close(fd);
        return 0;
}

/* Close the --print-* descriptors (one given for both is closed once); stdio stays. */
static void print_fds_close(Args *a) {
        if (a->print_address_fd > STDERR_FILENO)
                (void) close(a->print_address_fd);
        if (a->print_pid_fd > STDERR_FILENO && a->print_pid_fd != a->print_address_fd)
                (void) close(a->print_pid_fd);
        a->print_address_fd = a->print_pid_fd = -1;
}

/*
 * The --print-* descriptors must be open before we open any of our own: printing to (and
 * then closing) one of the bus's own descriptors would break the bus.
 */
static int print_fds_check(const Args *a) {
        const int fds[2] = { a->print_address_fd, a->print_pid_fd };

        for (size_t i = 0; i < 2; ++i) {
                if (fds[i] < 0 || fcntl(fds[i], F_GETFD) >= 0)
                        continue;
                fprintf(stderr, "kdbusd: cannot print the %s to fd %d: %m (the caller must "
                        "pass it open)\n", i == 0 ? "address" : "pid", fds[i]);
                return -1;
        }
        return 0;
}

/*
 * --print-address and --print-pid, then the descriptors are closed (not stdout or stderr),
 * as dbus-daemon does: a launcher reads the pipe to its end (dbus-run-session, dbus-launch,
 * at-spi-bus-launcher), which comes only when every copy is closed.
 */
static int print_info(Server *s, Args *a, const char *listen_print) {
        char text[16384] = "";
        int r = 0;
        List *l;

        if (a->print_address_fd >= 0) {
                /* like dbus-daemon: the first listener's address only, with the bus guid */
                l = list_first(&s->listeners);
                if (listen_print)
                        snprintf(text, sizeof(text), "%s\n", listen_print);
                else
                        snprintf(text, sizeof(text), "%s,guid=%s\n",
                                 l ? list_entry(l, ProxyListener, link)->address : "",
                                 s->guid);
                if (write_all(a->print_address_fd, text) < 0) {
                        fprintf(stderr, "kdbusd: cannot print the address to fd %d: %m\n",
                                a->print_address_fd);
                        r = -1;
                }
        }
        if (r == 0 && a->print_pid_fd >= 0) {
                snprintf(text, sizeof(text), "%d\n", (int)getpid());
                if (write_all(a->print_pid_fd, text) < 0) {
                        fprintf(stderr, "kdbusd: cannot print the pid to fd %d: %m\n",
                                a->print_pid_fd);
                        r = -1;
                }
        }
        print_fds_close(a);
        return r;
}

/*
 * A caller may start us with stdin, stdout or stderr closed (test-dbus-daemon-fork.sh does,
 * `<&- >&- 2>&-`): the first sockets would then take fds 0-2, and daemonizing, which points
 * them at /dev/null, would close the bus's own listener. Hold them with /dev/null first, as
 * dbus-daemon does. Fds the caller asked us to print to (--print-address=8) are not touched.
 */
static void std_fds_hold(void) {
        for (int fd = STDIN_FILENO; fd <= STDERR_FILENO; ++fd) {
                int null;

                if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
                        continue;
                null = open("/dev/null", O_RDWR);       /* the lowest free fd: @fd */
                if (null >= 0 && null != fd) {
                        (void) dup2(null, fd);
                        (void) close(null);
                }
        }
}

/*
 * Fork; the parent waits for the child's verdict on @ret_notify_fd and exits with it. The
 * parent lets go of the --print-* descriptors first: the child prints and closes them, and
 * a launcher reading them waits for the last copy to close.
 */
static int daemonize_start(Args *a, int *ret_notify_fd) {
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
                print_fds_close(a);
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

/*
 * The forked bus lets go of the caller's stdin, stdout and stderr, as dbus-daemon's does: a
 * caller that reads them to the end (a shell's $(...), a test's pipe) must not wait for the
 * bus to exit. With --nosyslog its log lines are then lost, as with dbus-daemon; setting
 * DBUS_DEBUG_OUTPUT keeps stderr for debugging, as there.
 */
static void daemonize_finish(int notify_fd) {
        const char *debug = getenv("DBUS_DEBUG_OUTPUT");
        int null;

        (void) chdir("/");
        null = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null >= 0) {
                (void) dup2(null, STDIN_FILENO);
                (void) dup2(null, STDOUT_FILENO);
                if (!debug || !debug[0])
                        (void) dup2(null, STDERR_FILENO);
                if (null > STDERR_FILENO)
                        (void) close(null);
        }
        (void) write_all(notify_fd, "y");
        (void) close(notify_fd);
}

static const char *config_path(const Args *a) {
        switch (a->config) {
        case ARGS_CONFIG_SYSTEM:
                return PROXY_CONFIG_SYSTEM_PATH;
        case ARGS_CONFIG_SESSION:
                /* the built-in equivalent (NULL) when the machine has no session.conf */
                return access(PROXY_CONFIG_SESSION_PATH, F_OK) == 0 ?
                       PROXY_CONFIG_SESSION_PATH : NULL;
        default:
                return a->config_file;
        }
}

/*
 * Large messages (a MiB-sized body read from a dbus1 socket, or a memfd read for a legacy
 * receiver) are allocated and freed once per message. glibc serves them with fresh mmap()s or
 * trims them off the heap top right after free(), so every such message paid its page faults
 * twice (the input buffer and the message's copy): 9 ms of bus CPU per 1 MiB call, 90% in
 * page faults (bench/payload.sh, perf). Keeping them in the heap for reuse cuts that to
 * 0.8 ms. The cost: up to KDBUSD_MALLOC_TRIM bytes of freed memory stay mapped after a burst
 * of large messages.
 */
#define KDBUSD_MALLOC_MMAP (32 * 1024 * 1024)
#define KDBUSD_MALLOC_TRIM (64 * 1024 * 1024)

static void malloc_tune(void) {
        (void) mallopt(M_MMAP_THRESHOLD, KDBUSD_MALLOC_MMAP);
        (void) mallopt(M_TRIM_THRESHOLD, KDBUSD_MALLOC_TRIM);
}

/* the --kdbusfs views, freed before the server */
typedef struct KdbusfsSet {
        Kdbusfs *fs[ARGS_MAX_KDBUSFS];
        unsigned n;
} KdbusfsSet;

static void kdbusfs_free_allp(KdbusfsSet *set) {
        for (unsigned i = 0; i < set->n; i++)
                set->fs[i] = kdbusfs_free(set->fs[i]);
}

int main(int argc, char **argv) {
        _cleanup_(server_freep) Server *s = NULL;
        _cleanup_(proxy_config_freep) ProxyConfig *config = NULL;
        _cleanup_(freep) char *listen_print = NULL;
        _cleanup_(native_listener_freep) NativeListener *native = NULL;        /* before s */
        _cleanup_(proxy_activation_freep) ProxyActivation *activation = NULL;   /* before s */
        _cleanup_(proxy_config_watch_freep) ProxyConfigWatch *config_watch = NULL; /* before s */
        _cleanup_(kdbusfs_free_allp) KdbusfsSet kdbusfs = { 0 };                /* before s */
        Args a = ARGS_NULL(a);
        ProxyConfigError err;
        const char *pidfile = NULL;
        bool do_fork;
        int notify_fd = -1, r, ret = EXIT_FAILURE;

        std_fds_hold();
        malloc_tune();
        r = args_parse(argc, argv, &a);
        if (r)
                return r > 0 ? EXIT_SUCCESS : EXIT_FAILURE;
        if (print_fds_check(&a) < 0)
                return EXIT_FAILURE;
        proxy_notify_init();
        proxy_log_set_target(a.log_target);
        /* as dbus-daemon: one fd per peer, as many peers as the hard limit allows */
        (void) fd_limit_raise();

        r = proxy_config_load(config_path(&a), &config, &err);
        if (r) {
                fprintf(stderr, "kdbusd: Failed to start message bus: %s\n",
                        r < 0 ? strerror(-r) : err.text);
                return EXIT_FAILURE;
        }
        if (!a.log_target_set && config->tree->syslog.set)
                proxy_log_set_target(a.log_target = PROXY_LOG_JOURNAL);
        do_fork = a.fork >= 0 ? a.fork : config->tree->fork.set;
        if (!a.nopidfile)
                pidfile = config->tree->pidfile.value;

        /* like dbus-daemon, a forked bus does not keep the caller's stderr (a caller that
         * reads it would wait forever): it logs to the journal unless told otherwise */
        if (do_fork && !a.log_target_set)
                proxy_log_set_target(a.log_target = PROXY_LOG_JOURNAL_ONLY);
        if (do_fork && daemonize_start(&a, &notify_fd) < 0) {
                fprintf(stderr, "kdbusd: cannot fork: %m\n");
                return EXIT_FAILURE;
        }
        if (do_fork && !config->tree->keep_umask.set)
                (void) umask(022);

        r = server_new(&config->limits, &s);
        if (r < 0) {
                fprintf(stderr, "kdbusd: cannot set up the bus: %s\n", strerror(-r));
                return EXIT_FAILURE;
        }
        native_options_apply(s->bus, a.attach_rule, a.attach_flags_req,
                             a.bloom.size ? &a.bloom : NULL, a.endpoints_privileged_only);
        r = proxy_config_apply(s, config);
        if (r < 0) {
                fprintf(stderr, "kdbusd: cannot install the configuration: %s\n",
                        strerror(-r));
                return EXIT_FAILURE;
        }
        if (setup_listeners(s, &a, config->tree, &listen_print) < 0)
                return EXIT_FAILURE;
        if (a.native_address && native_listener_new(s, a.native_address, &native) < 0)
                return EXIT_FAILURE;
        for (unsigned i = 0; i < a.n_kdbusfs; i++)
                if (kdbusfs_new(s, a.kdbusfs[i], &kdbusfs.fs[kdbusfs.n++]) < 0)
                        return EXIT_FAILURE;
        if (pidfile && pidfile_write(pidfile, &config->tree->pidfile.loc) < 0) {
                pidfile = NULL;
                return EXIT_FAILURE;
        }
        /* as dbus-daemon: sockets and pid file first, then the configured user */
        if (config->tree->user.value &&
            proxy_drop_privileges(config->tree->user.value, &config->tree->user.loc) < 0)
                goto out;
        s->config = steal_ptr(&config);
        driver_set_reload(s->driver, proxy_config_reload_hook, s);
        /* after the reload hook: activation wraps it to read its directories again */
        if (proxy_activation_new(s, a.systemd_activation, &activation) < 0) {
                fprintf(stderr, "kdbusd: cannot set up service activation\n");
                goto out;
        }
        /* the <includedir>s, watched as dbus-daemon watches them (without: SIGHUP still
         * reloads) */
        r = proxy_config_watch_new(s, &config_watch);
        if (r < 0)
                proxy_log(LOG_WARNING, "Cannot watch the configuration's directories: %s; "
                          "changes take effect on SIGHUP or ReloadConfig", strerror(-r));
        if (print_info(s, &a, listen_print) < 0)
                goto out;
        if (do_fork)
                daemonize_finish(notify_fd);
        proxy_notify("READY=1");

        r = server_run(s);
        proxy_notify("STOPPING=1");
        if (r < 0) {
                proxy_log(LOG_ERR, "The event loop failed: %s", strerror(-r));
                goto out;
        }
        ret = EXIT_SUCCESS;
out:
        if (pidfile)
                (void) unlink(pidfile);
        return ret;
}
