/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * kdbus-launch-helper SERVICE_NAME: system bus activation through a setuid helper, as
 * dbus-daemon-launch-helper does it (dbus-daemon(1), <servicehelper>). The bus runs as an
 * unprivileged <user> and cannot start a service as another user; this program, installed
 * setuid root and executable only by the bus's group, does it for the bus, and trusts
 * nothing the bus hands it but the service name:
 *
 *   1. the environment is cleared but for DBUS_STARTER_ADDRESS and DBUS_STARTER_BUS_TYPE;
 *   2. the system bus configuration is read from a path fixed at build time
 *      (LAUNCH_HELPER_CONFIG), never from an argument or the environment;
 *   3. only the configuration's <user> may run it (the real uid), and it must be root by
 *      its setuid bit;
 *   4. the .service file is NAME.service in the configuration's system service directories
 *      (<servicedir>, <standard_system_servicedirs/>), first found wins; its Name= must be
 *      NAME and it must have User= and Exec=;
 *   5. it becomes User= (initgroups, setgid, setuid), changes to / and execs Exec=.
 *
 * Every failure exits with the dbus-daemon launch helper code for it (compat/launch-helper.h;
 * the bus turns it into dbus-daemon's Spawn.* error) after writing one line that says why
 * to stderr (the bus's log) and, when the bus gave one, to the reason pipe.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "compat/activation-service.h"
#include "compat/launch-helper.h"
#include "policy-xml/config.h"
#include "policy-xml/loader.h"
#include "wire/names.h"

#ifndef LAUNCH_HELPER_CONFIG
#define LAUNCH_HELPER_CONFIG "/usr/share/dbus-1/system.conf"   /* kdbusd --system's */
#endif

#define SERVICE_FILE_MAX (64u * 1024u)

static int reason_fd = -1;

/* Say why on stderr and the reason pipe, and exit with @code. */
__attribute__((__noreturn__, __format__(__printf__, 2, 3)))
static void fail(int code, const char *fmt, ...) {
        char line[1024];
        va_list ap;
        int n;

        va_start(ap, fmt);
        n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
        va_end(ap);
        if (n < 0)
                n = 0;
        if ((size_t)n > sizeof(line) - 2)
                n = (int)sizeof(line) - 2;
        line[n++] = '\n';
        line[n] = '\0';
        fprintf(stderr, "kdbus-launch-helper: %s", line);
        if (reason_fd >= 0)
                (void) !write(reason_fd, line, (size_t)n);
        exit(code);
}

/* The bus's reason pipe, if it named one that is a pipe: close-on-exec from now on. */
static void open_reason_fd(void) {
        const char *e = getenv(LAUNCH_HELPER_REASON_FD_ENV);
        struct stat st;
        char *end;
        long fd;

        if (!e)
                return;
        errno = 0;
        fd = strtol(e, &end, 10);
        if (errno || *end || fd < 3 || fd > 1024 || fstat((int)fd, &st) < 0 ||
            !S_ISFIFO(st.st_mode))
                return;
        if (fcntl((int)fd, F_SETFD, FD_CLOEXEC) < 0)
                return;
        reason_fd = (int)fd;
}

/* Keep DBUS_STARTER_ADDRESS and DBUS_STARTER_BUS_TYPE, drop everything else. */
static void clean_environment(void) {
        const char *keep[] = { "DBUS_STARTER_ADDRESS", "DBUS_STARTER_BUS_TYPE" };
        char *values[2] = { NULL, NULL };
        size_t i;

        for (i = 0; i < 2; ++i) {
                const char *v = getenv(keep[i]);

                if (v && !(values[i] = strdup(v)))
                        fail(LAUNCH_HELPER_EXIT_NO_MEMORY, "out of memory");
        }
        if (clearenv() != 0)
                fail(LAUNCH_HELPER_EXIT_SETUP_FAILED, "cannot clear the environment");
        for (i = 0; i < 2; ++i)
                if (values[i] && setenv(keep[i], values[i], 1) < 0)
                        fail(LAUNCH_HELPER_EXIT_NO_MEMORY, "out of memory");
}

typedef struct Diag {
        char first[512];
} Diag;

static void on_diag(void *userdata, ConfigDiagLevel level, const char *file, unsigned line,
                    const char *message) {
        Diag *d = userdata;

        if (level == CONFIG_DIAG_ERROR && !d->first[0])
                (void) snprintf(d->first, sizeof(d->first), "%s:%u: %s", file ? file : "?",
                                line, message);
}

/* Read @path (at most SERVICE_FILE_MAX). Return: 0, or an errno (ENOENT: not there). */
static int read_file(const char *path, char **ret, size_t *ret_size) {
        char *buf;
        size_t size = 0;
        ssize_t n;
        int fd, err;

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return errno;
        buf = malloc(SERVICE_FILE_MAX + 1);
        if (!buf)
                fail(LAUNCH_HELPER_EXIT_NO_MEMORY, "out of memory");
        while ((n = read(fd, buf + size, SERVICE_FILE_MAX + 1 - size)) > 0)
                if ((size += (size_t)n) > SERVICE_FILE_MAX)
                        break;
        err = n < 0 ? errno : size > SERVICE_FILE_MAX ? EFBIG : 0;
        (void) close(fd);
        if (err) {
                free(buf);
                return err;
        }
        *ret = buf;
        *ret_size = size;
        return 0;
}

/* Try @dir/@name.service. Return: true when found (*ret_path, *ret_data set). */
static bool try_dir(const char *dir, const char *name, char **ret_path, char **ret_data,
                    size_t *ret_size) {
        char *path;
        int err;

        if (asprintf(&path, "%s/%s.service", dir, name) < 0)
                fail(LAUNCH_HELPER_EXIT_NO_MEMORY, "out of memory");
        err = read_file(path, ret_data, ret_size);
        if (err == ENOENT || err == ENOTDIR) {
                free(path);
                return false;
        }
        if (err)
                fail(LAUNCH_HELPER_EXIT_FILE_INVALID, "cannot read %s: %s", path,
                     err == EFBIG ? "larger than 64 KiB" : strerror(err));
        *ret_path = path;
        return true;
}

/* NAME.service in the configuration's system service directories, in order. */
static void find_service(const Config *tree, const char *name, char **ret_path,
                         char **ret_data, size_t *ret_size) {
        char searched[512] = "";
        size_t i, j, len = 0;

        for (i = 0; i < tree->n_servicedirs; ++i) {
                const ConfigServiceDir *d = &tree->servicedirs[i];
                const char *one[] = { d->path, NULL };
                const char *const *dirs = one;

                if (d->kind == CONFIG_SERVICEDIR_STANDARD_SESSION)
                        continue;       /* a session list means nothing to a system bus */
                if (d->kind == CONFIG_SERVICEDIR_STANDARD_SYSTEM)
                        dirs = launch_helper_system_dirs;
                for (j = 0; dirs[j]; ++j) {
                        if (try_dir(dirs[j], name, ret_path, ret_data, ret_size))
                                return;
                        if (len < sizeof(searched))
                                len += (size_t)snprintf(searched + len, sizeof(searched) - len,
                                                        "%s%s", len ? ", " : "", dirs[j]);
                }
        }
        fail(LAUNCH_HELPER_EXIT_SERVICE_NOT_FOUND, "no %s.service in the system service "
             "directories of %s (%s)", name, LAUNCH_HELPER_CONFIG,
             searched[0] ? searched : "none configured");
}

int main(int argc, char **argv) {
        ConfigLoadOptions opts = { .diag = on_diag };
        ActivationService *svc = NULL;
        Config *tree = NULL;
        Diag diag = { .first = "" };
        struct passwd *bus_pw, *pw;
        char **exec_argv = NULL, *path = NULL, *data = NULL, err[512];
        const char *name;
        size_t size = 0;
        int r;

        open_reason_fd();
        if (argc != 2)
                fail(LAUNCH_HELPER_EXIT_INVALID_ARGS, "usage: %s SERVICE_NAME (run by the "
                     "system bus for <servicehelper>)", argc > 0 ? argv[0] : "kdbus-launch-helper");
        name = argv[1];
        clean_environment();

        opts.userdata = &diag;
        r = config_load_file(LAUNCH_HELPER_CONFIG, &opts, &tree);
        if (r < 0)
                fail(LAUNCH_HELPER_EXIT_NO_MEMORY, "cannot load %s: %s", LAUNCH_HELPER_CONFIG,
                     strerror(-r));
        if (r)
                fail(LAUNCH_HELPER_EXIT_CONFIG_INVALID, "%s", diag.first[0] ? diag.first :
                     "the system bus configuration is invalid");
        if (!tree->user.value || !*tree->user.value)
                fail(LAUNCH_HELPER_EXIT_CONFIG_INVALID, "%s has no <user>: the helper serves "
                     "only a bus that runs as an unprivileged user", LAUNCH_HELPER_CONFIG);
        bus_pw = getpwnam(tree->user.value);
        if (!bus_pw)
                fail(LAUNCH_HELPER_EXIT_CONFIG_INVALID, "<user>%s</user> of %s: no such user",
                     tree->user.value, LAUNCH_HELPER_CONFIG);
        if (getuid() != bus_pw->pw_uid)
                fail(LAUNCH_HELPER_EXIT_PERMISSIONS_INVALID, "run by uid %lu: only the bus "
                     "user %s (uid %lu) may run it", (unsigned long)getuid(), tree->user.value,
                     (unsigned long)bus_pw->pw_uid);
        if (geteuid() != 0)
                fail(LAUNCH_HELPER_EXIT_PERMISSIONS_INVALID, "not running as root: install "
                     "it setuid root, mode 4750, group of the bus user %s", tree->user.value);
        if (!wire_well_known_name_is_valid(name, strlen(name)))
                fail(LAUNCH_HELPER_EXIT_NAME_INVALID, "\"%s\" is not a well-known bus name",
                     name);

        find_service(tree, name, &path, &data, &size);
        r = activation_service_parse(data, size, path, &svc, err, sizeof(err));
        if (r < 0)
                fail(LAUNCH_HELPER_EXIT_NO_MEMORY, "out of memory");
        if (r)
                fail(LAUNCH_HELPER_EXIT_FILE_INVALID, "%s", err);
        if (strcmp(svc->name, name) != 0)
                fail(LAUNCH_HELPER_EXIT_FILE_INVALID, "%s: Name=%s, not %s", path, svc->name,
                     name);
        if (!svc->user || !*svc->user)
                fail(LAUNCH_HELPER_EXIT_FILE_INVALID, "%s: no User=: a system service must "
                     "say which user runs it", path);
        r = activation_exec_split(svc->exec, &exec_argv, err, sizeof(err));
        if (r < 0)
                fail(LAUNCH_HELPER_EXIT_NO_MEMORY, "out of memory");
        if (r)
                fail(LAUNCH_HELPER_EXIT_FILE_INVALID, "%s: Exec=%s", path, err);

        pw = getpwnam(svc->user);
        if (!pw)
                fail(LAUNCH_HELPER_EXIT_SETUP_FAILED, "no user \"%s\" (User= of %s)", svc->user,
                     path);
        if (initgroups(pw->pw_name, pw->pw_gid) < 0)
                fail(LAUNCH_HELPER_EXIT_SETUP_FAILED, "cannot set the groups of %s: %m",
                     svc->user);
        if (setgid(pw->pw_gid) < 0)
                fail(LAUNCH_HELPER_EXIT_SETUP_FAILED, "cannot set gid %lu: %m",
                     (unsigned long)pw->pw_gid);
        if (setuid(pw->pw_uid) < 0)
                fail(LAUNCH_HELPER_EXIT_SETUP_FAILED, "cannot set uid %lu: %m",
                     (unsigned long)pw->pw_uid);
        if (chdir("/") < 0)
                fail(LAUNCH_HELPER_EXIT_SETUP_FAILED, "cannot change to /: %m");

        /* from here on a status is the service's own (the pipe closes at exec) */
        if (reason_fd >= 0)
                (void) !write(reason_fd, LAUNCH_HELPER_EXEC_MARK,
                              sizeof(LAUNCH_HELPER_EXEC_MARK) - 1);
        execvp(exec_argv[0], exec_argv);
        fail(LAUNCH_HELPER_EXIT_EXEC_FAILED, "cannot execute %s (Exec= of %s, as %s): %m",
             exec_argv[0], path, svc->user);
}
