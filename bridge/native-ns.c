/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Ids of native peers' metadata as seen from the receiver's user and pid namespaces.
 *
 * The bus runs in its own namespaces; the kernel gives it every peer's uid, gid and pid
 * translated into them (SO_PEERCRED, SCM_CREDENTIALS). A receiver in another user
 * namespace would read the same ids differently in its own /proc, and kdbus showed each
 * receiver the ids as its namespaces see them (from_kuid_munged, pid_nr_ns). So at HELLO
 * the bus reads, for each native peer (pidfd-checked like the rest of /proc, see
 * native-meta.c):
 *
 * - whether its user namespace is another than the bus's (/proc/<pid>/ns/user), and then
 *   its uid_map and gid_map, whose second column is given in the namespace of the reader,
 *   the bus's: an id the bus sees is shown to that receiver as the first column's
 *   counterpart, or as the overflow id (/proc/sys/kernel/overflow{u,g}id, 65534) if its
 *   namespace does not map it, as the kernel does;
 * - its pid namespaces from its own up to the bus's (NS_GET_PARENT) with its pid in each
 *   (NSpid of /proc/<pid>/status). A sender's pid is shown to a receiver as the sender's
 *   pid in the receiver's pid namespace, found by that namespace's inode in the sender's
 *   chain; 0 if the receiver cannot see the sender (kdbus: pid_nr_ns() is 0 then), which
 *   also hides the /proc items under the kdbus attach rule.
 *
 * - its user namespaces from its own up to the bus's (NS_GET_PARENT), with the owner uid of
 *   each (NS_GET_OWNER_UID): CAPS are shown to a receiver as kdbus did
 *   (kdbus_meta_export_caps): verbatim if the receiver's user namespace is the sender's or
 *   below it, all of them (but the inheritable set) if on the way down from the sender's a
 *   namespace was made by the sender's euid, none otherwise (a receiver above or beside).
 *
 * These are the receiver's namespaces at HELLO, kept for the connection's life, as kdbus
 * kept the opener's credentials (f_cred: its user namespace) and the HELLO task's pid
 * (its pid namespace): a receiver that unshares or setns()es later is still shown ids as
 * at HELLO. A sender's ids need no such care (the bus gets them in its own namespace from
 * the kernel); its user namespace matters for CAPS only and is read with its /proc items
 * (at HELLO, or per message with KDBUS_HELLO_CAPTURE_PER_MESSAGE: native-meta.c).
 *
 * A peer whose namespaces were not captured (no pidfd, a legacy peer, the process gone)
 * counts as living in the bus's namespaces: a receiver there sees ids unchanged; a
 * receiver in a child pid namespace sees such a sender's pid as 0 (the bus cannot tell
 * whether the receiver's namespace contains it).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>
#include "bridge/conn.h"
#include "bridge/native-conn.h"
#include "util/error.h"

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

static bool ns_ino(const char *path, uint64_t *ret) {
        struct stat st;

        if (stat(path, &st) < 0)
                return false;
        *ret = st.st_ino;
        return true;
}

/* "first lower count" lines. Return: the number of lines read (0: none or unreadable). */
static unsigned ns_read_map(pid_t pid, const char *which, NativeNsMap **ret) {
        char path[64], line[128];
        NativeNsMap *map;
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
static int ns_read_pids(NativeNs *ns, pid_t pid) {
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
 * native_ns_bus_userns() - the bus's own user namespace
 *
 * kdbusd never changes its namespaces, so this is read once.
 *
 * Return: its inode, 0 if /proc/self/ns/user cannot be read.
 */
uint64_t native_ns_bus_userns(void) {
        static uint64_t ino;

        if (!ino && !ns_ino("/proc/self/ns/user", &ino))
                ino = 0;
        return ino;
}

/* The user namespaces of @pid from its own up to the bus's (or as far as NS_GET_PARENT
 * lets us: EPERM above the bus's), with each one's owner. */
static int ns_read_users(NativeNs *ns, pid_t pid) {
        uint64_t bus = native_ns_bus_userns();
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
 * native_ns_capture() - read @pid's namespaces as far as they differ from the bus's
 * @pid:        the peer's pid (as the bus sees it)
 * @ret:        the result, NULL if the peer lives in the bus's namespaces
 *
 * The caller checks afterwards that @pid still is the peer (pidfd), as for /proc items.
 *
 * Return: 0 or -ENOMEM.
 */
int native_ns_capture(pid_t pid, NativeNs **ret) {
        NativeNs *ns;
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
                        native_ns_free(ns);
                        return r;
                }
        }
        r = ns_read_pids(ns, pid);
        if (r) {
                native_ns_free(ns);
                return r;
        }
        if (!ns->own_userns && ns->n_pidns <= 1) {
                native_ns_free(ns);             /* the bus's namespaces: nothing to do */
                return 0;
        }
        *ret = ns;
        return 0;
}

/* Frees @ns (NULL allowed). */
void native_ns_free(NativeNs *ns) {
        if (!ns)
                return;
        free(ns->uid_map);
        free(ns->gid_map);
        free(ns->pidns_ino);
        free(ns->pidns_pid);
        free(ns->userns_ino);
        free(ns->userns_owner);
        free(ns);
}

static uint32_t ns_map(const NativeNsMap *map, unsigned n, uint32_t overflow, uint32_t id) {
        unsigned i;

        for (i = 0; i < n; ++i)
                if (id >= map[i].lower && id - map[i].lower < map[i].count)
                        return map[i].first + (id - map[i].lower);
        return overflow;
}

/**
 * native_ns_id_to_bus() - an id given by a peer in user namespace @ns, as the bus sees it
 * @ns:         the peer's namespaces (NULL, or not another user namespace: ids unchanged)
 * @gid:        @id is a group id (gid_map), else a user id (uid_map)
 * @id:         the id inside @ns
 * @ret:        the bus's id
 *
 * The reverse of native_ns_uid(), as kdbus's make_kuid(current_user_ns(), id).
 *
 * Return: 0, or -EINVAL if @ns's map does not hold @id.
 */
int native_ns_id_to_bus(const NativeNs *ns, bool gid, uint32_t id, uint32_t *ret) {
        const NativeNsMap *map;
        unsigned n, i;

        if (!ns || !ns->own_userns) {
                *ret = id;
                return 0;
        }
        map = gid ? ns->gid_map : ns->uid_map;
        n = gid ? ns->n_gid_map : ns->n_uid_map;
        for (i = 0; i < n; ++i)
                if (id >= map[i].first && id - map[i].first < map[i].count) {
                        *ret = map[i].lower + (id - map[i].first);
                        return 0;
                }
        return -EINVAL;
}

/**
 * native_ns_uid() - a uid the bus sees, as @receiver's user namespace sees it
 * @receiver:   the native receiver, or NULL (the bus's view)
 * @uid:        the id in the bus's namespace
 *
 * Return: the id, or the overflow uid if @receiver's namespace does not map it.
 */
uint32_t native_ns_uid(const NativeConn *receiver, uint32_t uid) {
        const NativeNs *ns = receiver ? receiver->ns : NULL;

        if (!ns || !ns->own_userns || uid == UINT32_MAX)
                return uid;
        return ns_map(ns->uid_map, ns->n_uid_map, ns->overflow_uid, uid);
}

/* The same for a gid. */
uint32_t native_ns_gid(const NativeConn *receiver, uint32_t gid) {
        const NativeNs *ns = receiver ? receiver->ns : NULL;

        if (!ns || !ns->own_userns || gid == UINT32_MAX)
                return gid;
        return ns_map(ns->gid_map, ns->n_gid_map, ns->overflow_gid, gid);
}

/**
 * native_ns_pid() - @sender's process id @pid as @receiver's pid namespace sees it
 * @receiver:   the native receiver, or NULL (the bus's view)
 * @sender:     whose pid it is (its captured namespaces), or NULL (the bus's namespaces)
 * @pid:        the pid in the bus's namespace
 *
 * Return: the pid, or 0 if @receiver cannot see the process.
 */
uint32_t native_ns_pid(const NativeConn *receiver, const BridgeConn *sender, uint32_t pid) {
        const NativeNs *rns = receiver ? receiver->ns : NULL, *sns;
        const NativeConn *sn;
        unsigned i;

        if (!rns || rns->n_pidns <= 1 || !pid)
                return pid;             /* the receiver lives in the bus's pid namespace */
        sn = sender ? native_conn_from_bridge(sender) : NULL;
        sns = sn ? sn->ns : NULL;
        if (!sns)
                return 0;               /* a sender in the bus's namespace, as far as we know */
        for (i = 0; i < sns->n_pidns; ++i)
                if (sns->pidns_ino[i] == rns->pidns_ino[0])
                        return sns->pidns_pid[i];
        return 0;
}

/**
 * native_ns_pid_visible() - could @receiver see @sender's process in its /proc?
 * @receiver:   the native receiver
 * @sender:     the sender
 *
 * Return: true if @sender's pid has a number in @receiver's pid namespace.
 */
bool native_ns_pid_visible(const NativeConn *receiver, const BridgeConn *sender) {
        if (sender->creds.pid <= 0)
                return false;
        return native_ns_pid(receiver, sender, (uint32_t)sender->creds.pid) != 0;
}

/* The bits of capabilities 0..cap_last_cap (/proc/sys/kernel/cap_last_cap, read once). */
static uint64_t ns_cap_all(void) {
        static uint64_t all;

        if (!all) {
                unsigned last = ns_read_overflow("cap_last_cap");

                /* ns_read_overflow() answers 65534 when the file is unreadable */
                all = last >= 63 ? UINT64_MAX : (UINT64_C(1) << (last + 1)) - 1;
        }
        return all;
}

/**
 * native_ns_caps() - a sender's capabilities as @receiver's user namespace sees them
 * @receiver:   the native receiver, or NULL (the bus's view)
 * @userns:     the sender's user namespace (inode; 0: the bus's)
 * @have_euid:  @euid is known
 * @euid:       the sender's effective uid (as the bus sees it)
 * @caps:       its inheritable, permitted, effective and bounding sets
 * @ret:        the four sets shown
 *
 * kdbus's rule (kdbus_meta_export_caps): walk from the receiver's user namespace up;
 * meeting the sender's: verbatim; meeting one whose parent is the sender's and whose owner
 * is the sender's euid: every capability (inheritable none), as the kernel grants the
 * owner of a namespace everything in it; reaching the bus's (kdbus: the initial one)
 * first: none.
 */
void native_ns_caps(const NativeConn *receiver, uint64_t userns, bool have_euid, uint32_t euid,
                    const uint64_t caps[4], uint64_t ret[4]) {
        const NativeNs *ns = receiver ? receiver->ns : NULL;
        uint64_t bus = native_ns_bus_userns();
        unsigned i;

        if (!userns)
                userns = bus;
        if (ns && ns->own_userns && !ns->n_userns) {
                memset(ret, 0, 4 * sizeof(uint64_t));   /* its chain could not be read */
                return;
        }
        if (!ns || !ns->own_userns) {
                /* the receiver lives in the bus's user namespace */
                for (i = 0; i < 4; ++i)
                        ret[i] = userns == bus ? caps[i] : 0;
                return;
        }
        for (i = 0; i < ns->n_userns; ++i) {
                if (ns->userns_ino[i] == userns) {
                        memcpy(ret, caps, 4 * sizeof(uint64_t));
                        return;
                }
                if (ns->userns_ino[i] == bus)
                        break;
                if (i + 1 < ns->n_userns && ns->userns_ino[i + 1] == userns && have_euid &&
                    ns->userns_owner[i] == euid) {
                        ret[0] = 0;
                        ret[1] = ret[2] = ret[3] = ns_cap_all();
                        return;
                }
        }
        memset(ret, 0, 4 * sizeof(uint64_t));
}
