/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The bus's /proc reader (BridgeProcReader, bridge/meta.h): what the core captures of a
 * peer's process (native metadata items) and its namespaces (bridge/ns.h) is read here, so
 * that the core does no I/O. Installed on a bus by its native listener
 * (proxy/native-listener.c); the unit tests of the native commands install it too.
 *
 * Every read is best effort: what cannot be read is left out (the item is missing for the
 * receiver, as in kdbus), and a capture is kept only if the peer's pidfd still names a live
 * process after the read, so that a pid reused meanwhile cannot lend another process's
 * items. The namespaces (see bridge/ns.c for what they are used for): the user namespace
 * (/proc/<pid>/ns/user) and, when it is another than the bus's, uid_map, gid_map, the
 * overflow ids and the chain of user namespaces up to the bus's with each one's owner
 * (NS_GET_PARENT, NS_GET_OWNER_UID); the pid namespaces from its own up to the bus's with
 * its pid in each (NSpid of /proc/<pid>/status).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "bridge/meta.h"
#include "bridge/ns.h"
#include "kdbus/kdbus.h"
#include "proxy/proc-reader.h"

#ifndef NS_GET_PARENT
#define NS_GET_PARENT _IO(0xb7, 0x2)
#endif
#ifndef NS_GET_OWNER_UID
#define NS_GET_OWNER_UID _IO(0xb7, 0x4)
#endif
/* nesting of user namespaces is limited to 32 by the kernel */
#define NS_MAX_USER_LEVELS 33u
/* nesting of pid namespaces is limited to 32 by the kernel */
#define NS_MAX_PID_LEVELS 33u
#define NS_MAX_MAP_LINES 340u
/* CAP_IPC_OWNER's bit (linux/capability.h), kdbus's privilege */
#define PROC_CAP_IPC_OWNER 15

/* Read at most @max bytes of /proc/@pid/@what; @one_line: a file of one short line, which
 * /proc hands out whole in the first read(2) (one syscall less per file: per-message
 * capture pays each). Return: a malloc'd buffer (NUL appended, *ret_len without it) or
 * NULL. */
static char *proc_read_full(pid_t pid, const char *what, size_t max, bool one_line,
                            size_t *ret_len) {
        char path[64], *buf;
        ssize_t n;
        size_t len = 0;
        int fd;

        (void) snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, what);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return NULL;
        buf = malloc(max + 1);
        if (!buf) {
                (void) close(fd);
                return NULL;
        }
        while (len < max && (n = read(fd, buf + len, max - len)) > 0) {
                len += (size_t)n;
                if (one_line)
                        break;
        }
        (void) close(fd);
        buf[len] = '\0';
        if (ret_len)
                *ret_len = len;
        return buf;
}

static char *proc_read(pid_t pid, const char *what, size_t max, size_t *ret_len) {
        return proc_read_full(pid, what, max, false, ret_len);
}

/* comm, loginuid, sessionid: one line each, short */
static char *proc_line(pid_t pid, const char *what) {
        char *s = proc_read_full(pid, what, 4096, true, NULL);

        if (s)
                s[strcspn(s, "\n")] = '\0';
        return s;
}

/* "CapInh:\t0000...": the 64-bit value after @key in /proc/<pid>/status. */
static bool status_cap(const char *status, const char *key, uint64_t *ret) {
        const char *p = strstr(status, key);

        if (!p)
                return false;
        *ret = strtoull(p + strlen(key), NULL, 16);
        return true;
}

/* "Groups:\t1 2 3": the supplementary groups in /proc/<pid>/status (the reader's ids). */
static void status_groups(const char *status, BridgeMeta *m) {
        const char *p = strstr(status, "\nGroups:");
        const char *eol;
        unsigned n = 0;

        if (!p)
                return;
        p += 8;
        eol = strchr(p, '\n');
        if (!eol)
                eol = p + strlen(p);
        /* one id per blank-separated word: at most (length + 1) / 2 of them */
        m->groups = calloc((size_t)(eol - p) / 2 + 1, sizeof(*m->groups));
        if (!m->groups)
                return;
        while (p < eol) {
                char *end;
                unsigned long g = strtoul(p, &end, 10);

                if (end == p || end > eol)
                        break;
                m->groups[n++] = (uint32_t)g;
                p = end;
        }
        m->n_groups = n;
        m->have_groups = true;
}

/**
 * proc_read_meta() - the /proc items of a process, pidfd-checked (BridgeProcReader.read_meta)
 * @pid:        its pid in the bus's namespace
 * @pidfd:      a pidfd of the same process (the check that @pid was not reused)
 * @what:       the KDBUS_ATTACH_* items to read (others stay missing): per-message
 *              capture reads only what some receiver could be given
 * @ret:        the items, or NULL: none captured (no pid or pidfd, the process gone)
 *
 * Failures leave items out. Return: 0 or -ENOMEM.
 */
static int proc_read_meta(pid_t pid, int pidfd, uint64_t what, BridgeMeta **ret) {
        BridgeMeta *m;
        char *status;
        char exe[4096], path[64];
        ssize_t n;

        *ret = NULL;
        if (pid <= 0 || pidfd < 0)
                return 0;
        m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        if (what & (KDBUS_ATTACH_PID_COMM | KDBUS_ATTACH_TID_COMM))
                m->comm = proc_line(pid, "comm");
        if (what & KDBUS_ATTACH_EXE) {
                (void) snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
                n = readlink(path, exe, sizeof(exe) - 1);
                if (n > 0) {
                        exe[n] = '\0';
                        m->exe = strdup(exe);
                }
        }
        if (what & KDBUS_ATTACH_CMDLINE) {
                m->cmdline = proc_read(pid, "cmdline", 64 * 1024, &m->cmdline_len);
                if (m->cmdline && !m->cmdline_len) {    /* a kernel thread or a zombie: none */
                        free(m->cmdline);
                        m->cmdline = NULL;
                }
        }
        if (what & KDBUS_ATTACH_PIDS) {
                /* "pid (comm) state ppid ...": comm may hold spaces and parentheses */
                char *stat = proc_line(pid, "stat"), *end = stat ? strrchr(stat, ')') : NULL;
                unsigned long ppid;

                if (end && sscanf(end + 1, " %*c %lu", &ppid) == 1) {
                        m->have_ppid = true;
                        m->ppid = (uint32_t)ppid;
                }
                free(stat);
        }
        if (what & KDBUS_ATTACH_CGROUP)
                m->cgroup = proc_read(pid, "cgroup", 4096, NULL);
        if (m->cgroup) {
                /* the unified hierarchy's line "0::/path"; else the first line's path */
                char *u = strncmp(m->cgroup, "0::", 3) == 0 ? m->cgroup :
                          strstr(m->cgroup, "\n0::"), *s;

                if (u)
                        s = u + (u[0] == '\n' ? 4 : 3);
                else {
                        m->cgroup[strcspn(m->cgroup, "\n")] = '\0';
                        s = strrchr(m->cgroup, ':');
                        if (s)
                                ++s;
                }
                if (s) {
                        s[strcspn(s, "\n")] = '\0';
                        memmove(m->cgroup, s, strlen(s) + 1);
                } else {
                        free(m->cgroup);
                        m->cgroup = NULL;
                }
        }
        status = what & (KDBUS_ATTACH_CAPS | KDBUS_ATTACH_AUXGROUPS) ?
                 proc_read(pid, "status", 16 * 1024, NULL) : NULL;
        if (status && (what & KDBUS_ATTACH_CAPS)) {
                const char *uid = strstr(status, "\nUid:");
                struct stat st;

                m->have_caps = status_cap(status, "CapInh:", &m->caps[0]) &&
                               status_cap(status, "CapPrm:", &m->caps[1]) &&
                               status_cap(status, "CapEff:", &m->caps[2]) &&
                               status_cap(status, "CapBnd:", &m->caps[3]);
                /* "Uid: real effective saved fs": the euid that may own a namespace */
                if (uid) {
                        char *end;
                        unsigned long v;

                        (void) strtoul(uid + 5, &end, 10);
                        v = strtoul(end, &end, 10);
                        m->have_euid = true;
                        m->euid = (uint32_t)v;
                }
                /* the user namespace the sets hold in */
                (void) snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
                if (stat(path, &st) == 0)
                        m->userns_ino = st.st_ino;
        }
        if (status && (what & KDBUS_ATTACH_AUXGROUPS))
                status_groups(status, m);
        free(status);
        if (what & KDBUS_ATTACH_AUDIT) {
                char *login = proc_line(pid, "loginuid"), *session = proc_line(pid,
                                                                                 "sessionid");

                if (login && session) {
                        m->have_audit = true;
                        m->loginuid = (uint32_t)strtoul(login, NULL, 10);
                        m->sessionid = (uint32_t)strtoul(session, NULL, 10);
                }
                free(login);
                free(session);
        }
        /* the pid was the peer's at connect; it is still the peer's if the pidfd's process
         * lives now, after we read (a pid is not reused while its process lives) */
        if (syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) < 0) {
                bridge_meta_free(m);
                return 0;
        }
        *ret = m;
        return 0;
}

static bool ns_ino(const char *path, uint64_t *ret) {
        struct stat st;

        if (stat(path, &st) < 0)
                return false;
        *ret = st.st_ino;
        return true;
}

/* "first lower count" lines. Return: the number of lines read (0: none or unreadable). */
static unsigned ns_read_map(pid_t pid, const char *which, BridgeNsMap **ret) {
        char path[64], line[128];
        BridgeNsMap *map;
        unsigned n = 0;
        FILE *f;

        *ret = NULL;
        (void) snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, which);
        f = fopen(path, "re");
        if (!f)
                return 0;
        map = calloc(NS_MAX_MAP_LINES, sizeof(*map));
        while (map && n < NS_MAX_MAP_LINES && fgets(line, sizeof(line), f)) {
                unsigned long first, lower, count;

                if (sscanf(line, "%lu %lu %lu", &first, &lower, &count) != 3)
                        continue;
                map[n].first = (uint32_t)first;
                map[n].lower = (uint32_t)lower;
                map[n].count = (uint32_t)count;
                ++n;
        }
        (void) fclose(f);
        if (!n) {
                free(map);
                return 0;
        }
        *ret = map;
        return n;
}

static uint32_t ns_read_overflow(const char *which) {
        char path[64], buf[32] = "";
        FILE *f;

        (void) snprintf(path, sizeof(path), "/proc/sys/kernel/%s", which);
        f = fopen(path, "re");
        if (f) {
                if (!fgets(buf, sizeof(buf), f))
                        buf[0] = '\0';
                (void) fclose(f);
        }
        return buf[0] ? (uint32_t)strtoul(buf, NULL, 10) : 65534u;
}

/* The pid namespaces of @pid from its own upwards, with its pid in each. */
static int ns_read_pids(BridgeNs *ns, pid_t pid) {
        char path[64], *status = NULL, *p;
        uint32_t pids[NS_MAX_PID_LEVELS];
        unsigned n = 0, i;
        size_t len = 0;
        FILE *f;
        int fd;

        (void) snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
        f = fopen(path, "re");
        if (!f)
                return 0;
        while (getline(&status, &len, f) > 0)
                if (strncmp(status, "NSpid:", 6) == 0)
                        break;
        (void) fclose(f);
        if (!status || strncmp(status, "NSpid:", 6)) {
                free(status);
                return 0;
        }
        /* outermost (the /proc mount's, the bus's) first, its own last */
        for (p = status + 6; n < NS_MAX_PID_LEVELS; ) {
                char *end;
                unsigned long v = strtoul(p, &end, 10);

                if (end == p)
                        break;
                pids[n++] = (uint32_t)v;
                p = end;
        }
        free(status);
        if (!n)
                return 0;
        ns->pidns_ino = calloc(n, sizeof(*ns->pidns_ino));
        ns->pidns_pid = calloc(n, sizeof(*ns->pidns_pid));
        if (!ns->pidns_ino || !ns->pidns_pid)
                return -ENOMEM;
        (void) snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        for (i = 0; fd >= 0 && i < n; ++i) {
                struct stat st;
                int parent;

                if (fstat(fd, &st) < 0)
                        break;
                ns->pidns_ino[i] = st.st_ino;
                ns->pidns_pid[i] = pids[n - 1 - i];
                ns->n_pidns = i + 1;
                if (i + 1 == n)
                        break;
                parent = ioctl(fd, NS_GET_PARENT);
                (void) close(fd);
                fd = parent;
        }
        if (fd >= 0)
                (void) close(fd);
        return 0;
}

/**
 * proc_bus_userns() - the bus's own user namespace (BridgeProcReader.bus_userns)
 *
 * kdbusd never changes its namespaces, so this is read once.
 *
 * Return: its inode, 0 if /proc/self/ns/user cannot be read.
 */
static uint64_t proc_bus_userns(void) {
        static uint64_t ino;

        if (!ino && !ns_ino("/proc/self/ns/user", &ino))
                ino = 0;
        return ino;
}

/* The user namespaces of @pid from its own up to the bus's (or as far as NS_GET_PARENT
 * lets us: EPERM above the bus's), with each one's owner. */
static int ns_read_users(BridgeNs *ns, pid_t pid) {
        uint64_t bus = proc_bus_userns();
        char path[64];
        int fd;

        ns->userns_ino = calloc(NS_MAX_USER_LEVELS, sizeof(*ns->userns_ino));
        ns->userns_owner = calloc(NS_MAX_USER_LEVELS, sizeof(*ns->userns_owner));
        if (!ns->userns_ino || !ns->userns_owner)
                return -ENOMEM;
        (void) snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        while (fd >= 0 && ns->n_userns < NS_MAX_USER_LEVELS) {
                struct stat st;
                uid_t owner = (uid_t)-1;
                int parent;

                if (fstat(fd, &st) < 0)
                        break;
                if (ioctl(fd, NS_GET_OWNER_UID, &owner) < 0)
                        owner = (uid_t)-1;
                ns->userns_ino[ns->n_userns] = st.st_ino;
                ns->userns_owner[ns->n_userns] = (uint32_t)owner;
                ++ns->n_userns;
                if (st.st_ino == bus)
                        break;
                parent = ioctl(fd, NS_GET_PARENT);
                (void) close(fd);
                fd = parent;
        }
        if (fd >= 0)
                (void) close(fd);
        return 0;
}

/**
 * proc_read_ns() - read @pid's namespaces as far as they differ from the bus's
 * (BridgeProcReader.read_ns)
 * @pid:        the peer's pid (as the bus sees it)
 * @ret:        the result, NULL if the peer lives in the bus's namespaces
 *
 * The caller checks afterwards that @pid still is the peer (pidfd), as for /proc items.
 *
 * Return: 0 or -ENOMEM.
 */
static int proc_read_ns(pid_t pid, BridgeNs **ret) {
        BridgeNs *ns;
        uint64_t mine = 0, theirs = 0;
        char path[64];
        int r;

        *ret = NULL;
        ns = calloc(1, sizeof(*ns));
        if (!ns)
                return -ENOMEM;
        (void) snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
        if (ns_ino("/proc/self/ns/user", &mine) && ns_ino(path, &theirs) && mine != theirs) {
                ns->own_userns = true;
                ns->n_uid_map = ns_read_map(pid, "uid_map", &ns->uid_map);
                ns->n_gid_map = ns_read_map(pid, "gid_map", &ns->gid_map);
                ns->overflow_uid = ns_read_overflow("overflowuid");
                ns->overflow_gid = ns_read_overflow("overflowgid");
                r = ns_read_users(ns, pid);
                if (r) {
                        bridge_ns_free(ns);
                        return r;
                }
        }
        r = ns_read_pids(ns, pid);
        if (r) {
                bridge_ns_free(ns);
                return r;
        }
        if (!ns->own_userns && ns->n_pidns <= 1) {
                bridge_ns_free(ns);             /* the bus's namespaces: nothing to do */
                return 0;
        }
        *ret = ns;
        return 0;
}

/* The bits of capabilities 0..cap_last_cap (/proc/sys/kernel/cap_last_cap, read once). */
static uint64_t proc_cap_all(void) {
        static uint64_t all;

        if (!all) {
                unsigned last = ns_read_overflow("cap_last_cap");

                /* ns_read_overflow() answers 65534 when the file is unreadable */
                all = last >= 63 ? UINT64_MAX : (UINT64_C(1) << (last + 1)) - 1;
        }
        return all;
}

/**
 * proxy_proc_cap_ipc_owner() - had @pid CAP_IPC_OWNER in the bus's user namespace?
 * @pid:        the peer's pid (SO_PEERCRED)
 * @pidfd:      a pidfd of that very process (SO_PEERPIDFD), or -1
 *
 * kdbus's privilege test (kdbus_ep_is_privileged(): file_ns_capable(CAP_IPC_OWNER) in the
 * domain's user namespace) as far as /proc tells it: the effective set has the capability
 * and the peer's user namespace is the bus's (a capability held in a user namespace of
 * its own counts only there). Read at connect, as kdbus judged the opener's credentials.
 * Without a pidfd of the peer nothing is trusted: a pid reused after its process went
 * could lend a stranger's capabilities.
 *
 * Return: true if so, false if not or if it cannot be told.
 */
bool proxy_proc_cap_ipc_owner(pid_t pid, int pidfd) {
        uint64_t eff = 0, ino = 0, bus = proc_bus_userns();
        char path[64], *status;
        bool has;

        if (pid <= 0 || pidfd < 0 || !bus)
                return false;
        status = proc_read(pid, "status", 16 * 1024, NULL);
        has = status && status_cap(status, "CapEff:", &eff) &&
              ((eff >> PROC_CAP_IPC_OWNER) & 1);
        free(status);
        if (!has)
                return false;
        (void) snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
        if (!ns_ino(path, &ino) || ino != bus)
                return false;
        /* still the peer's process after the reads (see proc_read_meta()) */
        return syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) == 0;
}

const BridgeProcReader proxy_proc_reader = {
        .read_meta = proc_read_meta,
        .read_ns = proc_read_ns,
        .bus_userns = proc_bus_userns,
        .cap_all = proc_cap_all,
};
