/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Namespace translation: ids of peers' metadata as seen from the receiver's user and pid
 * namespaces. The namespaces themselves are read by the bus's /proc reader (bridge/meta.h,
 * proxy/proc-reader.c); this file only translates.
 *
 * The bus runs in its own namespaces; the kernel gives it every peer's uid, gid and pid
 * translated into them (SO_PEERCRED, SCM_CREDENTIALS). A receiver in another user
 * namespace would read the same ids differently in its own /proc, and kdbus showed each
 * receiver the ids as its namespaces see them (from_kuid_munged, pid_nr_ns). So at HELLO
 * the bus reads, for each native peer (pidfd-checked like the rest of /proc, see
 * native/meta.c; the reading is proxy/proc-reader.c's):
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
 * (at HELLO, or per message with KDBUS_HELLO_CAPTURE_PER_MESSAGE: native/meta.c).
 *
 * A peer whose namespaces were not captured (no pidfd, a legacy peer, the process gone)
 * counts as living in the bus's namespaces: a receiver there sees ids unchanged; a
 * receiver in a child pid namespace sees such a sender's pid as 0 (the bus cannot tell
 * whether the receiver's namespace contains it).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "bridge/meta.h"
#include "bridge/ns.h"

/**
 * bridge_ns_read() - read @pid's namespaces through a bus's /proc reader
 * @proc:       the reader (Bus.proc; NULL: nothing is read)
 * @pid:        the peer's pid (as the bus sees it)
 * @ret:        the result, NULL if the peer lives in the bus's namespaces
 *
 * The caller checks afterwards that @pid still is the peer (pidfd), as for /proc items.
 *
 * Return: 0 or -ENOMEM.
 */
int bridge_ns_read(const BridgeProcReader *proc, pid_t pid, BridgeNs **ret) {
        *ret = NULL;
        if (!proc || !proc->read_ns)
                return 0;
        return proc->read_ns(pid, ret);
}

/* Frees @ns (NULL allowed). */
void bridge_ns_free(BridgeNs *ns) {
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

static uint32_t ns_map(const BridgeNsMap *map, unsigned n, uint32_t overflow, uint32_t id) {
        unsigned i;

        for (i = 0; i < n; ++i)
                if (id >= map[i].lower && id - map[i].lower < map[i].count)
                        return map[i].first + (id - map[i].lower);
        return overflow;
}

/**
 * bridge_ns_id_to_bus() - an id given by a peer in user namespace @ns, as the bus sees it
 * @ns:         the peer's namespaces (NULL, or not another user namespace: ids unchanged)
 * @gid:        @id is a group id (gid_map), else a user id (uid_map)
 * @id:         the id inside @ns
 * @ret:        the bus's id
 *
 * The reverse of bridge_ns_uid(), as kdbus's make_kuid(current_user_ns(), id).
 *
 * Return: 0, or -EINVAL if @ns's map does not hold @id.
 */
int bridge_ns_id_to_bus(const BridgeNs *ns, bool gid, uint32_t id, uint32_t *ret) {
        const BridgeNsMap *map;
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
 * bridge_ns_uid() - a uid the bus sees, as a receiver's user namespace sees it
 * @ns:         the receiver's namespaces, or NULL (the bus's view)
 * @uid:        the id in the bus's namespace
 *
 * Return: the id, or the overflow uid if @ns does not map it.
 */
uint32_t bridge_ns_uid(const BridgeNs *ns, uint32_t uid) {
        if (!ns || !ns->own_userns || uid == UINT32_MAX)
                return uid;
        return ns_map(ns->uid_map, ns->n_uid_map, ns->overflow_uid, uid);
}

/* The same for a gid. */
uint32_t bridge_ns_gid(const BridgeNs *ns, uint32_t gid) {
        if (!ns || !ns->own_userns || gid == UINT32_MAX)
                return gid;
        return ns_map(ns->gid_map, ns->n_gid_map, ns->overflow_gid, gid);
}

/**
 * bridge_ns_pid() - a sender's process id @pid as a receiver's pid namespace sees it
 * @rns:        the receiver's namespaces, or NULL (the bus's view)
 * @sns:        the sender's (whose pid it is), or NULL (the bus's namespaces)
 * @pid:        the pid in the bus's namespace
 *
 * Return: the pid, or 0 if the receiver cannot see the process.
 */
uint32_t bridge_ns_pid(const BridgeNs *rns, const BridgeNs *sns, uint32_t pid) {
        unsigned i;

        if (!rns || rns->n_pidns <= 1 || !pid)
                return pid;             /* the receiver lives in the bus's pid namespace */
        if (!sns)
                return 0;               /* a sender in the bus's namespace, as far as we know */
        for (i = 0; i < sns->n_pidns; ++i)
                if (sns->pidns_ino[i] == rns->pidns_ino[0])
                        return sns->pidns_pid[i];
        return 0;
}

/**
 * bridge_ns_pid_visible() - could a receiver see a sender's process in its /proc?
 * @rns:        the receiver's namespaces (NULL: the bus's)
 * @sns:        the sender's (NULL: the bus's)
 * @pid:        the sender's pid as the bus sees it
 *
 * Return: true if @pid has a number in the receiver's pid namespace.
 */
bool bridge_ns_pid_visible(const BridgeNs *rns, const BridgeNs *sns, pid_t pid) {
        if (pid <= 0)
                return false;
        return bridge_ns_pid(rns, sns, (uint32_t)pid) != 0;
}

/**
 * bridge_ns_caps() - a sender's capabilities as a receiver's user namespace sees them
 * @proc:       the bus's reader (it knows the bus's user namespace; NULL: unknown)
 * @ns:         the receiver's namespaces, or NULL (the bus's view)
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
void bridge_ns_caps(const BridgeProcReader *proc, const BridgeNs *ns, uint64_t userns, bool have_euid,
                    uint32_t euid, const uint64_t caps[4], uint64_t ret[4]) {
        uint64_t bus = proc && proc->bus_userns ? proc->bus_userns() : 0;
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
                        ret[1] = ret[2] = ret[3] = proc && proc->cap_all ? proc->cap_all() :
                                                   UINT64_MAX;
                        return;
                }
        }
        memset(ret, 0, 4 * sizeof(uint64_t));
}
