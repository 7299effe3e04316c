/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Service activation: reading and watching service directories, spawning and reaping
 * services (see activation.h). What dbus-daemon 1.14.10 does, checked with test .service
 * files, and done the same here:
 *
 *   - The first directory (in configuration order) that provides a name wins; a file that
 *     does not parse, or has no Exec, is skipped (logged here, with file:line). In
 *     $XDG_RUNTIME_DIR/dbus-1/services (standard session list) a file counts only if it is
 *     named NAME.service, and that directory is not watched (dbus-daemon(1)).
 *   - The service runs with the bus's environment plus UpdateActivationEnvironment's
 *     variables, DBUS_STARTER_ADDRESS (the first listen address, with the guid),
 *     DBUS_STARTER_BUS_TYPE (<type> as written; none without one), and
 *     DBUS_SESSION_BUS_ADDRESS on a session bus,
 *     DBUS_SYSTEM_BUS_ADDRESS on a system bus (as dbus-daemon 1.14: a service that connects
 *     to "the system bus" must find this one).
 *   - A program that cannot be executed: Spawn.ExecFailed; exiting non-zero before the name
 *     appears: Spawn.ChildExited "exited with status N"; killed: Spawn.ChildSignaled;
 *     exiting 0 without the name, or still running after service_start_timeout: TimedOut
 *     (the process is then killed).
 *
 * Unlike dbus-daemon, the ExecFailed text names the program that is missing, not only the
 * service. As dbus-daemon, a service is started through a babysitter (proxy/babysitter.h),
 * which reports its end until it has taken its name and then lets it go to init.
 * Babysitters are reaped through a pidfd, so no SIGCHLD handling is needed.
 *
 * With <servicehelper> the bus runs HELPER NAME instead (compat/launch-helper.h): the helper
 * reads the .service file itself and its exit status is one of dbus-daemon's helper codes,
 * answered with dbus-daemon's error plus the reason it wrote on its pipe.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "bridge/bus.h"
#include "compat/activation-service.h"
#include "compat/driver-activation.h"
#include "compat/driver.h"
#include "compat/launch-helper.h"
#include "policy-xml/config.h"
#include "proxy/activation.h"
#include "proxy/babysitter.h"
#include "proxy/config.h"
#include "proxy/fd-limit.h"
#include "proxy/file-stamp.h"
#include "proxy/listener.h"
#include "proxy/log.h"
#include "proxy/server.h"
#include "util/error.h"

#define ERROR_PREFIX "org.freedesktop.DBus.Error."
#define SERVICE_FILE_MAX (64u * 1024u)  /* a .service file is a few lines */
#define HELPER_REASON_FD 3              /* where a <servicehelper> finds its reason pipe */

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

extern char **environ;

typedef struct ServiceEntry {
        ActivationService *svc;
        char *path;
        FileStamp stamp;                /* the file as it was read */
} ServiceEntry;

/* A service being started. */
typedef struct Start {
        List link;                      /* ProxyActivation.starts */
        ProxyActivation *act;
        char *name;
        char *program;                  /* argv[0], for messages */
        char *unit;                     /* started through systemd: SystemdService= */
        pid_t pid;                      /* the babysitter (not the service) */
        int pidfd;
        int sitter;                     /* our end of the babysitter's socket */
        int errfd;                      /* the service writes exec's errno here */
        int reasonfd;                   /* <servicehelper>: its reason pipe (launch-helper.h) */
        LoopSource *child;
        LoopSource *timer;
        bool over;                      /* answered; waits only to reap the process */
} Start;

struct ProxyActivation {
        Server *server;
        bool system_bus;
        char *type;                     /* the configuration's <type>, NULL: none */
        bool systemd;
        char **dirs;                    /* the service directories, in order */
        char *runtime_dir;              /* $XDG_RUNTIME_DIR/dbus-1/services of the standard
                                         * session list: strict file names, not watched */
        ServiceEntry *services;
        size_t n_services;
        FileStamp *dir_stamps;          /* dirs as they were last read */
        size_t n_dir_stamps;
        bool dirs_unread;               /* dirs replaced by a reload whose reading failed:
                                         * dir_stamps describe the old ones */
        char **env;                     /* UpdateActivationEnvironment: "K=V", NULL-terminated */
        size_t n_env;
        char address[4300];             /* DBUS_STARTER_ADDRESS */
        List starts;
        int inotify_fd;
        LoopSource *inotify;
        LoopSource *rescan;             /* defer: coalesces a burst of directory events */
};

static char **strv_push(char ***v, size_t *n, char *s) {
        char **p = realloc(*v, (*n + 2) * sizeof(char *));

        if (!p)
                return NULL;
        p[(*n)++] = s;
        p[*n] = NULL;
        *v = p;
        return p;
}

/* Append @base/@sub (or @base alone when @sub is NULL) unless it is listed already. */
static int dirs_add(char ***v, size_t *n, const char *base, const char *sub) {
        size_t i, len;
        char *s;

        if (!base || !*base)
                return 0;
        len = strlen(base);
        while (len > 1 && base[len - 1] == '/')
                --len;
        if (asprintf(&s, "%.*s%s%s", (int)len, base, sub ? "/" : "", sub ? sub : "") < 0)
                return error_origin(-ENOMEM);
        for (i = 0; i < *n; ++i)
                if (strcmp((*v)[i], s) == 0) {
                        free(s);
                        return 0;
                }
        if (!strv_push(v, n, s)) {
                free(s);
                return error_origin(-ENOMEM);
        }
        return 0;
}

/**
 * proxy_activation_standard_dirs() - dbus-daemon's standard service directories
 * @system:     the system list (else the session list)
 * @ret:        the directories, in order
 *
 * Session: $XDG_RUNTIME_DIR/dbus-1/services, $XDG_DATA_HOME (or ~/.local/share)/dbus-1/
 * services, each of $XDG_DATA_DIRS (or /usr/local/share:/usr/share)/dbus-1/services, then
 * /usr/share/dbus-1/services. System: /usr/local/share, /usr/share, /lib
 * (dbus-1/system-services under each). Duplicates are listed once.
 *
 * Return: 0 or -ENOMEM.
 */
int proxy_activation_standard_dirs(bool system, char ***ret) {
        char **v = NULL, *copy = NULL, *tok, *save = NULL;
        const char *e;
        size_t n = 0;
        int r = 0;

        if (system) {
                /* the same list the launch helper searches */
                for (size_t i = 0; !r && launch_helper_system_dirs[i]; ++i)
                        r = dirs_add(&v, &n, launch_helper_system_dirs[i], NULL);
        } else {
                r = dirs_add(&v, &n, getenv("XDG_RUNTIME_DIR"), "dbus-1/services");
                e = getenv("XDG_DATA_HOME");
                if (!r && e && *e)
                        r = dirs_add(&v, &n, e, "dbus-1/services");
                else if (!r)
                        r = dirs_add(&v, &n, getenv("HOME"), ".local/share/dbus-1/services");
                e = getenv("XDG_DATA_DIRS");
                copy = strdup(e && *e ? e : "/usr/local/share/:/usr/share/");
                if (!copy)
                        r = error_origin(-ENOMEM);
                for (tok = copy ? strtok_r(copy, ":", &save) : NULL; tok && !r;
                     tok = strtok_r(NULL, ":", &save))
                        r = dirs_add(&v, &n, tok, "dbus-1/services");
                free(copy);
                if (!r)
                        r = dirs_add(&v, &n, "/usr/share", "dbus-1/services");
        }
        if (!r && !v && !strv_push(&v, &n, NULL))
                r = error_origin(-ENOMEM);
        if (r) {
                activation_strv_free(v);
                return r;
        }
        *ret = v;
        return 0;
}

static void services_clear(ProxyActivation *a) {
        size_t i;

        for (i = 0; i < a->n_services; ++i) {
                activation_service_free(a->services[i].svc);
                free(a->services[i].path);
        }
        free(a->services);
        a->services = NULL;
        a->n_services = 0;
}

static const ServiceEntry *service_find(const ProxyActivation *a, const char *name) {
        size_t i;

        for (i = 0; i < a->n_services; ++i)
                if (strcmp(a->services[i].svc->name, name) == 0)
                        return &a->services[i];
        return NULL;
}

/* Read one file (bounded), stamped as read. Return: 0, 1 (unreadable or too big: logged),
 * -ENOMEM. */
static int read_small_file(const char *path, char **ret, size_t *ret_size, FileStamp *stamp) {
        struct timespec taken = file_stamp_now();
        _cleanup_(fd_closep) int fd = -1;
        _cleanup_(freep) char *buf = NULL;
        size_t size = 0;
        struct stat st;
        ssize_t n;

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0) {
                proxy_log(LOG_WARNING, "Cannot read service file \"%s\": %m, ignoring", path);
                return 1;
        }
        file_stamp_set(stamp, fstat(fd, &st) == 0 ? &st : NULL, taken);
        buf = malloc(SERVICE_FILE_MAX + 1);
        if (!buf)
                return error_origin(-ENOMEM);
        while ((n = read(fd, buf + size, SERVICE_FILE_MAX + 1 - size)) > 0) {
                size += (size_t)n;
                if (size > SERVICE_FILE_MAX) {
                        proxy_log(LOG_WARNING, "Service file \"%s\" is larger than %u bytes, "
                                  "ignoring", path, SERVICE_FILE_MAX);
                        return 1;
                }
        }
        if (n < 0) {
                proxy_log(LOG_WARNING, "Cannot read service file \"%s\": %m, ignoring", path);
                return 1;
        }
        *ret = steal_ptr(&buf);
        *ret_size = size;
        return 0;
}

static const char *servicehelper(const ProxyActivation *a);

static bool is_runtime_dir(const ProxyActivation *a, const char *dir) {
        return a->runtime_dir && strcmp(a->runtime_dir, dir) == 0;
}

static int scan_dir(ProxyActivation *a, const char *dir, ServiceEntry **services,
                    size_t *n_services) {
        bool strict = is_runtime_dir(a, dir);
        DIR *d = opendir(dir);
        struct dirent *de;
        int r = 0;

        if (!d)
                return 0;       /* missing directories are normal */
        while (r >= 0 && (de = readdir(d))) {
                _cleanup_(freep) char *path = NULL, *data = NULL;
                ActivationService *svc = NULL;
                FileStamp stamp;
                char err[512];
                size_t len = strlen(de->d_name), size, i;
                ServiceEntry *p;

                if (len <= 8 || strcmp(de->d_name + len - 8, ".service") != 0)
                        continue;
                if (asprintf(&path, "%s/%s", dir, de->d_name) < 0) {
                        path = NULL;
                        r = error_origin(-ENOMEM);
                        break;
                }
                r = read_small_file(path, &data, &size, &stamp);
                if (r) {
                        r = r < 0 ? r : 0;
                        continue;
                }
                r = activation_service_parse(data, size, path, &svc, err, sizeof(err));
                if (r) {
                        if (r > 0)
                                proxy_log(LOG_WARNING, "%s, ignoring", err);
                        r = r < 0 ? r : 0;
                        continue;
                }
                /* dbus-daemon: in the runtime directory the file must be NAME.service */
                if (strict && (len - 8 != strlen(svc->name) ||
                               strncmp(de->d_name, svc->name, len - 8) != 0)) {
                        proxy_log(LOG_NOTICE, "%s: service \"%s\" must be in \"%s.service\" "
                                  "in this directory, ignoring", path, svc->name, svc->name);
                        activation_service_free(svc);
                        continue;
                }
                /* as dbus-daemon: a launch helper looks for NAME.service only */
                if (!strict && a->system_bus && servicehelper(a) &&
                    (len - 8 != strlen(svc->name) ||
                     strncmp(de->d_name, svc->name, len - 8) != 0))
                        proxy_log(LOG_WARNING, "Service file \"%s\" should have been named "
                                  "\"%s.service\" and will not work with system bus activation",
                                  path, svc->name);
                for (i = 0; i < *n_services; ++i)
                        if (strcmp((*services)[i].svc->name, svc->name) == 0)
                                break;
                if (i < *n_services) {
                        proxy_log(LOG_NOTICE, "%s: service \"%s\" is already provided by %s, "
                                  "ignoring", path, svc->name, (*services)[i].path);
                        activation_service_free(svc);
                        continue;
                }
                p = realloc(*services, (*n_services + 1) * sizeof(*p));
                if (!p) {
                        activation_service_free(svc);
                        r = error_origin(-ENOMEM);
                        break;
                }
                *services = p;
                p[(*n_services)++] = (ServiceEntry){ .svc = svc, .path = steal_ptr(&path),
                                                     .stamp = stamp };
        }
        closedir(d);
        return r;
}

/* Read every directory again and give the driver the names. */
static int activation_load(ProxyActivation *a, bool emit_changed) {
        ServiceEntry *services = NULL;
        const char **names = NULL;
        FileStamp *stamps;
        size_t n_services = 0, n_dirs = 0, i;
        char **dir;
        int r = 0;

        while (a->dirs[n_dirs])
                ++n_dirs;
        stamps = calloc(n_dirs + 1, sizeof(*stamps));
        if (!stamps)
                return error_origin(-ENOMEM);
        for (i = 0, dir = a->dirs; *dir && r >= 0; ++dir, ++i) {
                file_stamp_take(&stamps[i], *dir);
                r = scan_dir(a, *dir, &services, &n_services);
        }
        if (r >= 0) {
                names = calloc(n_services + 1, sizeof(*names));
                if (!names)
                        r = error_origin(-ENOMEM);
        }
        if (r >= 0) {
                for (i = 0; i < n_services; ++i)
                        names[i] = services[i].svc->name;
                server_update_time(a->server);
                r = driver_activation_set_names(a->server->driver, names, n_services,
                                                emit_changed);
        }
        free(names);
        if (r < 0) {
                free(stamps);
                for (i = 0; i < n_services; ++i) {
                        activation_service_free(services[i].svc);
                        free(services[i].path);
                }
                free(services);
                return error_trace(r);
        }
        services_clear(a);
        a->services = services;
        a->n_services = n_services;
        free(a->dir_stamps);
        a->dir_stamps = stamps;
        a->n_dir_stamps = n_dirs;
        a->dirs_unread = false;
        return 0;
}

/*
 * As dbus-daemon before it starts a service: a known name's file must still be there as it
 * was read, and an unknown name makes it look at the directories again. Whatever may have
 * changed since the last reading (file-stamp.h) has every directory read again, without
 * ActivatableServicesChanged (dbus-daemon sends it only for a reload or a watched change,
 * which comes here too, later, through on_rescan()).
 */
static int hook_refresh(void *userdata, const char *name) {
        ProxyActivation *a = userdata;
        const ServiceEntry *e = service_find(a, name);
        bool stale = false;
        size_t i;
        int r;

        if (e)
                stale = file_stamp_changed(&e->stamp, e->path);
        if (!e)
                stale = a->dirs_unread;
        for (i = 0; !e && !stale && i < a->n_dir_stamps; ++i)
                stale = file_stamp_changed(&a->dir_stamps[i], a->dirs[i]);
        if (!stale)
                return 0;
        r = activation_load(a, false);
        return r < 0 ? error_trace(r) : 1;
}

static Start *start_free(Start *st) {
        if (!st)
                return NULL;
        list_unlink(&st->link);
        loop_source_free(st->child);
        loop_source_free(st->timer);
        if (st->pidfd >= 0)
                (void) close(st->pidfd);
        if (st->sitter >= 0)
                (void) close(st->sitter);
        if (st->errfd >= 0)
                (void) close(st->errfd);
        if (st->reasonfd >= 0)
                (void) close(st->reasonfd);
        free(st->name);
        free(st->program);
        free(st->unit);
        free(st);
        return NULL;
}

static Start *start_find(ProxyActivation *a, const char *name) {
        List *l;

        list_for_each(l, &a->starts) {
                Start *st = list_entry(l, Start, link);

                if (!st->over && strcmp(st->name, name) == 0)
                        return st;
        }
        return NULL;
}

/* Answer the waiting callers and keep the record only until the process is reaped. */
static void start_fail(Start *st, const char *error_name, const char *text) {
        Server *s = st->act->server;
        int r;

        st->over = true;
        st->timer = loop_source_free(st->timer);
        proxy_log(LOG_NOTICE, "Activated service '%s' failed: %s", st->name, text);
        server_update_time(s);
        r = driver_activation_failed(s->driver, st->name, error_name, text);
        server_rearm_timer(s);
        if (r < 0)
                proxy_log(LOG_ERR, "Cannot answer the callers of '%s': %s", st->name,
                          strerror(-r));
}

/*
 * A <servicehelper> exited with @status: was it the helper (true: @reason gets what it said,
 * for launch_helper_exit_error()'s text) or the service it had exec'd (false)? Our helper
 * marks the exec on the reason pipe; a helper that writes nothing there (dbus-daemon's) is
 * taken at its word, as dbus-daemon does.
 */
static bool helper_failed(Start *st, int status, const char **ret_name, char *text,
                          size_t n_text) {
        char buf[1024], code_text[256];
        const char *why = buf;
        ssize_t n;
        size_t len = 0;

        while (len < sizeof(buf) - 1 &&
               (n = read(st->reasonfd, buf + len, sizeof(buf) - 1 - len)) > 0)
                len += (size_t)n;
        buf[len] = '\0';
        if (strncmp(buf, LAUNCH_HELPER_EXEC_MARK, strlen(LAUNCH_HELPER_EXEC_MARK)) == 0) {
                why += strlen(LAUNCH_HELPER_EXEC_MARK);
                if (!*why)
                        return false;   /* the service itself exited */
        }
        len = strcspn(why, "\n");
        *ret_name = launch_helper_exit_error(status, code_text, sizeof(code_text));
        if (len)
                (void) snprintf(text, n_text, "%s: %.*s", code_text, (int)len, why);
        else
                (void) snprintf(text, n_text, "%s", code_text);
        return true;
}

/* The babysitter exited: how did the service end? As waitid() says, in @si. */
static void service_status(Start *st, siginfo_t *si) {
        BabysitterStatus bs;

        if (babysitter_status(st->sitter, &bs) == 0) {
                si->si_code = bs.code;
                si->si_status = bs.status;
        } else if (si->si_code == CLD_EXITED) {
                /* released, or it could not fork: as a service that exits 0 unnamed */
                si->si_status = 0;
        }
}

static int on_child(LoopSource *src, int fd, uint32_t revents, void *userdata) {
        Start *st = userdata;
        siginfo_t si = { .si_pid = 0 };
        const char *error_name = NULL;
        char text[1024];
        int err = 0;

        if (waitid(P_PIDFD, (id_t)st->pidfd, &si, WEXITED | WNOHANG) < 0 || si.si_pid == 0)
                return 0;
        if (!st->over) {
                service_status(st, &si);
                if (read(st->errfd, &err, sizeof(err)) == (ssize_t)sizeof(err) && err) {
                        (void) snprintf(text, sizeof(text), "Failed to execute program %s "
                                        "(service %s): %s", st->program, st->name,
                                        strerror(err));
                        start_fail(st, ERROR_PREFIX "Spawn.ExecFailed", text);
                } else if (si.si_code == CLD_EXITED && si.si_status != 0 &&
                           st->reasonfd >= 0 && helper_failed(st, si.si_status, &error_name,
                                                              text, sizeof(text))) {
                        start_fail(st, error_name, text);
                } else if (si.si_code == CLD_EXITED && si.si_status != 0) {
                        (void) snprintf(text, sizeof(text), "Process %s exited with status %d",
                                        st->name, si.si_status);
                        start_fail(st, ERROR_PREFIX "Spawn.ChildExited", text);
                } else if (si.si_code == CLD_KILLED || si.si_code == CLD_DUMPED) {
                        (void) snprintf(text, sizeof(text), "Process %s received signal %d",
                                        st->name, si.si_status);
                        start_fail(st, ERROR_PREFIX "Spawn.ChildSignaled", text);
                } else {
                        /* exit 0 without the name: dbus-daemon waits for the timeout */
                        st->child = loop_source_free(st->child);
                        return 0;
                }
        }
        start_free(st);
        return 0;
}

static int on_timeout(LoopSource *src, uint64_t usec, void *userdata) {
        Start *st = userdata;
        char text[1024];

        (void) snprintf(text, sizeof(text), "Failed to activate service '%s': timed out "
                        "(service_start_timeout=%llums)", st->name,
                        (unsigned long long)(st->act->server->bus->limits
                                             .service_start_timeout_usec / 1000));
        if (st->sitter >= 0)
                babysitter_kill(st->sitter);
        start_fail(st, ERROR_PREFIX "TimedOut", text);
        if (!st->child)
                start_free(st); /* already exited (status 0) */
        return 0;
}

/*
 * The environment of a spawned service: ours, then UpdateActivationEnvironment's, then the
 * bus's variables; a later entry replaces an earlier one with the same key. The strings
 * are borrowed (from environ, a->env and @extra); only the array is allocated.
 */
static int build_env(ProxyActivation *a, bool helper, char *extra[4], char ***ret) {
        const char *which = !a->type ? NULL : strcmp(a->type, "system") == 0 ? "SYSTEM" :
                            strcmp(a->type, "session") == 0 ? "SESSION" : NULL;
        char **env = NULL;
        size_t n = 0, i, j, k;

        /* as dbus-daemon: DBUS_STARTER_BUS_TYPE is <type> as written (at-spi2's bus is
         * "accessibility"), and only a session or a system bus claims to be "the" session
         * or system bus: a service of any other bus keeps the session bus it inherited
         * (at-spi2-registryd asks the session bus for the accessibility bus) */
        if (asprintf(&extra[0], "DBUS_STARTER_ADDRESS=%s", a->address) < 0 ||
            (a->type && asprintf(&extra[1], "DBUS_STARTER_BUS_TYPE=%s", a->type) < 0) ||
            (which && asprintf(&extra[2], "DBUS_%s_BUS_ADDRESS=%s", which, a->address) < 0) ||
            (helper && asprintf(&extra[3], "%s=%d", LAUNCH_HELPER_REASON_FD_ENV,
                                HELPER_REASON_FD) < 0))
                return error_origin(-ENOMEM);
        for (i = 0; environ && environ[i]; ++i)
                if (!strv_push(&env, &n, environ[i]))
                        goto oom;
        for (i = 0; i < a->n_env; ++i)
                if (!strv_push(&env, &n, a->env[i]))
                        goto oom;
        for (i = 0; i < 4; ++i)
                if (extra[i] && !strv_push(&env, &n, extra[i]))
                        goto oom;
        if (!env && !strv_push(&env, &n, NULL))
                goto oom;
        for (i = k = 0; i < n; ++i) {
                size_t klen = strcspn(env[i], "=");

                for (j = i + 1; j < n; ++j)
                        if (strncmp(env[i], env[j], klen + 1) == 0)
                                break;
                if (j == n)
                        env[k++] = env[i];
        }
        env[k] = NULL;
        *ret = env;
        return 0;
oom:
        free(env);
        return error_origin(-ENOMEM);
}

/* In the child: never returns. @reasonfd >= 0: run the <servicehelper> in @argv, with
 * @reasonfd as its fd HELPER_REASON_FD. */
__attribute__((__noreturn__)) static void child_exec(ProxyActivation *a,
                                                     const ActivationService *svc, char **argv,
                                                     char **env, int errfd, int reasonfd) {
        sigset_t all;
        int fd, err, i;

        (void) sigemptyset(&all);
        (void) sigprocmask(SIG_SETMASK, &all, NULL);
        for (i = 1; i < NSIG; ++i)
                (void) signal(i, SIG_DFL);
        (void) setsid();
        fd_limit_restore();
        fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (fd >= 0 && fd != STDIN_FILENO) {
                (void) dup2(fd, STDIN_FILENO);
                (void) close(fd);
        }
        if (reasonfd >= 0) {
                /* out of the way of fd HELPER_REASON_FD first, then put the pipe there
                 * (dup2 leaves the copy open across exec) */
                if (errfd == HELPER_REASON_FD)
                        errfd = fcntl(errfd, F_DUPFD_CLOEXEC, HELPER_REASON_FD + 1);
                if (reasonfd == HELPER_REASON_FD)
                        (void) fcntl(reasonfd, F_SETFD, 0);
                else if (dup2(reasonfd, HELPER_REASON_FD) < 0)
                        _exit(127);
        } else if (svc->user && a->system_bus && getuid() == 0) {
                struct passwd *pw = getpwnam(svc->user);

                if (!pw || initgroups(pw->pw_name, pw->pw_gid) < 0 || setgid(pw->pw_gid) < 0 ||
                    setuid(pw->pw_uid) < 0) {
                        err = pw ? errno : ESRCH;
                        (void) !write(errfd, &err, sizeof(err));
                        _exit(127);
                }
        }
        execvpe(argv[0], argv, env);
        err = errno;
        (void) !write(errfd, &err, sizeof(err));
        _exit(127);
}

/* What the service's process needs (run in the babysitter's child). */
typedef struct ChildArgs {
        ProxyActivation *a;
        const ActivationService *svc;
        char **argv;
        char **env;
        int errfd;
        int reasonfd;
} ChildArgs;

/* Of the bus's descriptors it has only @errfd and @reasonfd (babysitter_spawn()). */
static void child_run(void *userdata) {
        ChildArgs *c = userdata;

        child_exec(c->a, c->svc, c->argv, c->env, c->errfd, c->reasonfd);
}

/* The configuration's <servicehelper>, or NULL. */
static const char *servicehelper(const ProxyActivation *a) {
        const Config *tree = a->server->config ? a->server->config->tree : NULL;

        return tree && tree->servicehelper.value && *tree->servicehelper.value ?
               tree->servicehelper.value : NULL;
}

/* argv of the <servicehelper> @helper for @name: HELPER NAME, as dbus-daemon runs it. */
static int helper_argv(const char *helper, const char *name, char ***ret) {
        char **v = calloc(3, sizeof(char *));

        if (!v || !(v[0] = strdup(helper)) || !(v[1] = strdup(name))) {
                activation_strv_free(v);
                return error_origin(-ENOMEM);
        }
        *ret = v;
        return 0;
}

static int spawn(ProxyActivation *a, const ServiceEntry *e, char *error_name, size_t n_error_name,
                 char *text, size_t n_text) {
        char **argv = NULL, **env = NULL, *extra[4] = { NULL, NULL, NULL, NULL }, err[512];
        int pipefd[2] = { -1, -1 }, reason[2] = { -1, -1 }, r;
        const char *helper = servicehelper(a);
        Start *st = NULL;
        pid_t pid;

        /* as dbus-daemon 1.14.10: a helper serves only services that name their user */
        if (helper && !e->svc->user) {
                (void) snprintf(error_name, n_error_name, ERROR_PREFIX "Spawn.FileInvalid");
                (void) snprintf(text, n_text, "Cannot do system-bus activation with no user "
                                "(%s has no User=)", e->path);
                return 1;
        }
        /* with a helper, the helper reads the .service file and runs Exec= itself */
        if (helper)
                r = helper_argv(helper, e->svc->name, &argv);
        else
                r = activation_exec_split(e->svc->exec, &argv, err, sizeof(err));
        if (r > 0) {
                (void) snprintf(error_name, n_error_name, ERROR_PREFIX "Spawn.FileInvalid");
                (void) snprintf(text, n_text, "%s: Exec=%s", e->path, err);
                return 1;
        }
        if (r < 0)
                return error_trace(r);
        r = build_env(a, helper != NULL, extra, &env);
        if (r < 0)
                goto out;
        st = calloc(1, sizeof(*st));
        if (!st || !(st->name = strdup(e->svc->name)) || !(st->program = strdup(argv[0]))) {
                r = error_origin(-ENOMEM);
                goto out;
        }
        st->act = a;
        st->pidfd = st->sitter = st->errfd = st->reasonfd = -1;
        list_init(&st->link);
        if (pipe2(pipefd, O_CLOEXEC) < 0 ||
            (helper && pipe2(reason, O_CLOEXEC | O_NONBLOCK) < 0)) {
                r = error_origin(-errno);
                goto out;
        }
        if (helper)
                proxy_log(LOG_INFO, "Activating service name='%s' (%s) through %s",
                          e->svc->name, e->path, helper);
        else
                proxy_log(LOG_INFO, "Activating service name='%s' (%s)", e->svc->name,
                          e->path);
        r = babysitter_spawn(child_run, &(ChildArgs){ .a = a, .svc = e->svc, .argv = argv,
                                                      .env = env, .errfd = pipefd[1],
                                                      .reasonfd = reason[1] },
                             (const int[]){ pipefd[1], reason[1] }, 2, &pid, &st->sitter);
        if (r < 0) {
                (void) snprintf(error_name, n_error_name, ERROR_PREFIX "Spawn.ForkFailed");
                (void) snprintf(text, n_text, "Cannot fork to start %s: %s", e->svc->name,
                                strerror(-r));
                r = 1;
                goto out;
        }
        (void) close(pipefd[1]);
        pipefd[1] = -1;
        st->pid = pid;
        st->errfd = pipefd[0];
        pipefd[0] = -1;
        st->reasonfd = reason[0];
        reason[0] = -1;
        st->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
        if (st->pidfd < 0) {
                r = error_origin(-errno);
                babysitter_kill(st->sitter);
                (void) waitpid(pid, NULL, 0);
                goto out;
        }
        r = loop_add_io(a->server->loop, &st->child, st->pidfd, EPOLLIN, on_child, st);
        if (r >= 0)
                r = loop_add_time(a->server->loop, &st->timer, loop_now(a->server->loop) +
                                  a->server->bus->limits.service_start_timeout_usec,
                                  on_timeout, st);
        if (r < 0) {
                babysitter_kill(st->sitter);
                (void) waitid(P_PIDFD, (id_t)st->pidfd, NULL, WEXITED);
                goto out;
        }
        list_append(&a->starts, &st->link);
        st = NULL;
        r = 0;
out:
        if (pipefd[0] >= 0)
                (void) close(pipefd[0]);
        if (pipefd[1] >= 0)
                (void) close(pipefd[1]);
        if (reason[0] >= 0)
                (void) close(reason[0]);
        if (reason[1] >= 0)
                (void) close(reason[1]);
        start_free(st);
        free(env);
        free(extra[0]);
        free(extra[1]);
        free(extra[2]);
        free(extra[3]);
        activation_strv_free(argv);
        return r;
}

/*
 * --systemd-activation: systemd starts the unit (ActivationRequest); we only time it. For
 * org.freedesktop.systemd1 itself (@unit NULL) there is nothing to ask: systemd will come.
 */
static int start_via_systemd(ProxyActivation *a, const char *name, const char *unit) {
        Start *st;
        int r;

        st = calloc(1, sizeof(*st));
        if (!st)
                return error_origin(-ENOMEM);
        st->act = a;
        st->pidfd = st->sitter = st->errfd = st->reasonfd = -1;
        list_init(&st->link);
        st->name = strdup(name);
        st->unit = unit ? strdup(unit) : NULL;
        if (!st->name || (unit && !st->unit)) {
                start_free(st);
                return error_origin(-ENOMEM);
        }
        r = loop_add_time(a->server->loop, &st->timer, loop_now(a->server->loop) +
                          a->server->bus->limits.service_start_timeout_usec, on_timeout, st);
        if (r >= 0 && unit) {
                proxy_log(LOG_INFO, "Activating via systemd: service name='%s' unit='%s'",
                          name, unit);
                server_update_time(a->server);
                r = driver_activation_request_systemd(a->server->driver, unit);
        }
        if (r < 0) {
                start_free(st);
                return error_trace(r);
        }
        list_append(&a->starts, &st->link);
        return 0;
}

static void hook_systemd_failed(void *userdata, const char *unit, const char *error_name,
                                const char *text) {
        ProxyActivation *a = userdata;
        List *l, *t;

        list_for_each_safe(l, t, &a->starts) {
                Start *st = list_entry(l, Start, link);

                if (st->over || !st->unit || strcmp(st->unit, unit) != 0)
                        continue;
                start_fail(st, error_name, text);
                if (!st->child)
                        start_free(st);
        }
}

static int hook_start(void *userdata, const char *name, char *error_name, size_t n_error_name,
                      char *text, size_t n_text) {
        ProxyActivation *a = userdata;
        const ServiceEntry *e = service_find(a, name);

        if (!e) {
                (void) snprintf(error_name, n_error_name, ERROR_PREFIX "ServiceUnknown");
                (void) snprintf(text, n_text, "The name %s was not provided by any .service "
                                "files", name);
                return 1;
        }
        if (start_find(a, name))
                return 0;
        if (a->systemd && strcmp(name, "org.freedesktop.systemd1") == 0)
                return start_via_systemd(a, name, NULL);
        if (a->systemd && e->svc->systemd_service)
                return start_via_systemd(a, name, e->svc->systemd_service);
        return spawn(a, e, error_name, n_error_name, text, n_text);
}

static void hook_started(void *userdata, const char *name) {
        ProxyActivation *a = userdata;
        Start *st = start_find(a, name);

        if (!st)
                return;
        /* the service runs on; stop timing it and let it go: its babysitter exits (reaped
         * by on_child) and the service is re-parented to init, as with dbus-daemon */
        st->over = true;
        st->timer = loop_source_free(st->timer);
        if (st->sitter >= 0) {
                (void) close(st->sitter);
                st->sitter = -1;
        }
        if (!st->child)
                start_free(st);
}

static int hook_update_environment(void *userdata, const char *const *pairs) {
        ProxyActivation *a = userdata;
        size_t i, j;

        if (a->system_bus)
                return 1;
        for (i = 0; pairs[i] && pairs[i + 1]; i += 2) {
                char *kv;

                if (!*pairs[i] || strchr(pairs[i], '='))
                        continue;       /* cannot be an environment variable */
                if (asprintf(&kv, "%s=%s", pairs[i], pairs[i + 1]) < 0)
                        return error_origin(-ENOMEM);
                for (j = 0; j < a->n_env; ++j)
                        if (strncmp(a->env[j], kv, strlen(pairs[i]) + 1) == 0)
                                break;
                if (j < a->n_env) {
                        free(a->env[j]);
                        a->env[j] = kv;
                } else if (!strv_push(&a->env, &a->n_env, kv)) {
                        free(kv);
                        return error_origin(-ENOMEM);
                }
        }
        return 0;
}

static const DriverActivationOps activation_ops = {
        .start = hook_start,
        .started = hook_started,
        .refresh = hook_refresh,
        .update_environment = hook_update_environment,
        .systemd_failed = hook_systemd_failed,
};

static int on_rescan(LoopSource *src, void *userdata) {
        ProxyActivation *a = userdata;
        int r;

        (void) loop_source_set_enabled(a->rescan, LOOP_OFF);
        r = activation_load(a, true);
        if (r < 0)
                proxy_log(LOG_ERR, "Cannot reload the service directories: %s, keeping the "
                          "old list", strerror(-r));
        return 0;
}

static int on_inotify(LoopSource *src, int fd, uint32_t revents, void *userdata) {
        ProxyActivation *a = userdata;
        char buf[4096];

        while (read(fd, buf, sizeof(buf)) > 0)
                ;
        (void) loop_source_set_enabled(a->rescan, LOOP_ONESHOT);
        return 0;
}

static int watch_dirs(ProxyActivation *a) {
        char **dir;
        int r;

        a->inotify_fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
        if (a->inotify_fd < 0)
                return error_origin(-errno);
        for (dir = a->dirs; *dir; ++dir)
                /* dbus-daemon's events: a file counts once it is closed after writing or
                 * moved in, never while it is being written (IN_CREATE would read it
                 * half-written and log it as broken) */
                if (!is_runtime_dir(a, *dir) && inotify_add_watch(a->inotify_fd, *dir,
                                      IN_CLOSE_WRITE | IN_DELETE | IN_MOVED_FROM |
                                      IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF |
                                      IN_ONLYDIR) < 0 && errno != ENOENT &&
                    errno != ENOTDIR && errno != EACCES)
                        proxy_log(LOG_WARNING, "Cannot watch service directory \"%s\": %m, "
                                  "ignoring", *dir);
        r = loop_add_io(a->server->loop, &a->inotify, a->inotify_fd, EPOLLIN, on_inotify, a);
        if (r >= 0)
                r = loop_add_defer(a->server->loop, &a->rescan, on_rescan, a);
        if (r >= 0)
                r = loop_source_set_enabled(a->rescan, LOOP_OFF);
        return r < 0 ? error_trace(r) : 0;
}

/* mkdir @path 0700 unless it is a directory already. Return: 0 or a negative errno. */
static int make_private_dir(const char *path) {
        struct stat st;

        if (mkdir(path, 0700) == 0)
                return 0;
        if (errno != EEXIST)
                return -errno;
        if (stat(path, &st) < 0)
                return -errno;
        return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

/*
 * <standard_session_servicedirs/> with $XDG_RUNTIME_DIR set: as dbus-daemon 1.14.10 does
 * whenever it reads such a configuration (start and reload, whatever the bus type), make
 * $XDG_RUNTIME_DIR/dbus-1 and its services/ (0700; $XDG_RUNTIME_DIR itself must exist) so
 * clients can drop transient .service files there. Failing is only a warning: the bus runs
 * without that directory.
 */
static void make_runtime_dir(const char *services_dir) {
        _cleanup_(freep) char *parent = strdup(services_dir);
        const char *bad = services_dir;
        char *slash;
        int r;

        if (!parent)
                return;
        slash = strrchr(parent, '/');
        if (slash && slash != parent)
                *slash = '\0';
        r = make_private_dir(parent);
        if (r)
                bad = parent;
        else
                r = make_private_dir(services_dir);
        if (r)
                proxy_log(LOG_WARNING, "Cannot create the transient service directory: \"%s\": "
                          "%s; check $XDG_RUNTIME_DIR (\"%s\"); services cannot be added "
                          "there", bad, strerror(-r), getenv("XDG_RUNTIME_DIR"));
}

static int collect_dirs(ProxyActivation *a, const Config *tree) {
        size_t i, n = 0;
        int r = 0;

        for (i = 0; tree && i < tree->n_servicedirs && r >= 0; ++i) {
                const ConfigServiceDir *d = &tree->servicedirs[i];
                char **std = NULL, **p;

                if (d->kind == CONFIG_SERVICEDIR_PATH) {
                        r = dirs_add(&a->dirs, &n, d->path, NULL);
                        continue;
                }
                r = proxy_activation_standard_dirs(d->kind == CONFIG_SERVICEDIR_STANDARD_SYSTEM,
                                                   &std);
                if (r >= 0 && d->kind == CONFIG_SERVICEDIR_STANDARD_SESSION && !a->runtime_dir &&
                    getenv("XDG_RUNTIME_DIR") && *getenv("XDG_RUNTIME_DIR") && std && std[0]) {
                        a->runtime_dir = strdup(std[0]);
                        if (!a->runtime_dir)
                                r = error_origin(-ENOMEM);
                        else
                                make_runtime_dir(a->runtime_dir);
                }
                for (p = std; r >= 0 && p && *p; ++p)
                        r = dirs_add(&a->dirs, &n, *p, NULL);
                activation_strv_free(std);
        }
        if (r >= 0 && !a->dirs && !strv_push(&a->dirs, &n, NULL))
                r = error_origin(-ENOMEM);
        return r;
}

static void unwatch_dirs(ProxyActivation *a) {
        a->inotify = loop_source_free(a->inotify);
        a->rescan = loop_source_free(a->rescan);
        if (a->inotify_fd >= 0)
                (void) close(a->inotify_fd);
        a->inotify_fd = -1;
}

/*
 * ReloadConfig: the configuration first (proxy/config.c), then, as dbus-daemon does, the
 * service directories of the configuration now running are read again (also the runtime
 * directory, which is not watched) and ActivatableServicesChanged is sent.
 */
static int activation_reload_hook(void *userdata, bool *ret_not_found, char *msg,
                                  size_t n_msg) {
        ProxyActivation *a = userdata;
        char **old_dirs = a->dirs, *old_runtime = a->runtime_dir;
        int r, k;

        r = proxy_config_reload_hook(a->server, ret_not_found, msg, n_msg);
        if (r)
                return r;
        a->dirs = NULL;
        a->runtime_dir = NULL;
        k = collect_dirs(a, a->server->config ? a->server->config->tree : NULL);
        if (k < 0) {
                activation_strv_free(a->dirs);
                free(a->runtime_dir);
                a->dirs = old_dirs;
                a->runtime_dir = old_runtime;
        } else {
                activation_strv_free(old_dirs);
                free(old_runtime);
                a->dirs_unread = true;
                unwatch_dirs(a);
                k = watch_dirs(a);
        }
        if (k >= 0)
                k = activation_load(a, true);
        if (k < 0)
                proxy_log(LOG_ERR, "Cannot read the service directories again after the "
                          "reload: %s, keeping the old list", strerror(-k));
        return 0;
}

/**
 * proxy_activation_new() - enable activation on @s
 * @s:                  the server (config, listeners and guid set)
 * @systemd_activation: --systemd-activation
 * @ret:                the activation state (free it before @s)
 *
 * Return: 0 or a negative errno.
 */
int proxy_activation_new(Server *s, bool systemd_activation, ProxyActivation **ret) {
        _cleanup_(proxy_activation_freep) ProxyActivation *a = NULL;
        const Config *tree = s->config ? s->config->tree : NULL;
        List *l;
        int r;

        a = calloc(1, sizeof(*a));
        if (!a)
                return error_origin(-ENOMEM);
        a->server = s;
        a->inotify_fd = -1;
        a->systemd = systemd_activation;
        a->system_bus = tree && tree->type.value && strcmp(tree->type.value, "system") == 0;
        list_init(&a->starts);
        if (tree && tree->type.value && !(a->type = strdup(tree->type.value)))
                return error_origin(-ENOMEM);
        l = list_first(&s->listeners);
        (void) snprintf(a->address, sizeof(a->address), "%s,guid=%s",
                        l ? list_entry(l, ProxyListener, link)->address : "", s->guid);

        r = collect_dirs(a, tree);
        if (r >= 0)
                r = driver_set_activation(s->driver, &activation_ops, a);
        if (r >= 0)
                driver_activation_set_systemd(s->driver, systemd_activation);
        if (r >= 0)
                r = watch_dirs(a);
        if (r >= 0)
                r = activation_load(a, false);
        if (r < 0)
                return error_trace(r);
        driver_set_reload(s->driver, activation_reload_hook, a);
        *ret = steal_ptr(&a);
        return 0;
}

/**
 * proxy_activation_free() - stop activation (running services are left alone)
 * @a:          the state, or NULL
 *
 * Return: NULL.
 */
ProxyActivation *proxy_activation_free(ProxyActivation *a) {
        List *l, *t;
        size_t i;

        if (!a)
                return NULL;
        if (a->server && a->server->driver) {
                (void) driver_set_activation(a->server->driver, NULL, NULL);
                driver_set_reload(a->server->driver, proxy_config_reload_hook, a->server);
        }
        list_for_each_safe(l, t, &a->starts)
                start_free(list_entry(l, Start, link));
        unwatch_dirs(a);
        services_clear(a);
        free(a->dir_stamps);
        activation_strv_free(a->dirs);
        free(a->runtime_dir);
        free(a->type);
        for (i = 0; i < a->n_env; ++i)
                free(a->env[i]);
        free(a->env);
        free(a);
        return NULL;
}
