/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * Namespace translation (bridge/ns.c): a peer's user and pid namespaces where they differ
 * from the bus's, read once by the bus's /proc reader (bridge/meta.h), and the ids and
 * capabilities of others as that peer's namespaces see them.
 */
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct BridgeProcReader BridgeProcReader;

/* One line of a uid_map / gid_map: ids first..first+count-1 inside are lower.. outside. */
typedef struct BridgeNsMap {
        uint32_t first;
        uint32_t lower;
        uint32_t count;
} BridgeNsMap;

/* A peer's namespaces where they differ from the bus's. */
typedef struct BridgeNs {
        bool own_userns;                /* another user namespace: ids go through the maps */
        BridgeNsMap *uid_map;
        BridgeNsMap *gid_map;
        unsigned n_uid_map;
        unsigned n_gid_map;
        uint32_t overflow_uid;
        uint32_t overflow_gid;
        unsigned n_pidns;               /* pid namespaces from its own ([0]) to the bus's */
        uint64_t *pidns_ino;
        uint32_t *pidns_pid;            /* its pid in each */
        /* user namespaces from its own ([0]) up to the bus's, with each one's owner uid as
         * the bus sees it (NS_GET_OWNER_UID): how CAPS are shown to it */
        unsigned n_userns;
        uint64_t *userns_ino;
        uint32_t *userns_owner;
} BridgeNs;

/* @pid's namespaces through @proc (a bus's reader, Bus.proc): 0 (*ret NULL: the bus's, or
 * no reader) or -ENOMEM. */
int bridge_ns_read(const BridgeProcReader *proc, pid_t pid, BridgeNs **ret);
void bridge_ns_free(BridgeNs *ns);

/* An id @id of the user namespace @ns (NULL: the bus's) as the bus sees it, into *ret
 * (@gid: a group id). Return: 0, or -EINVAL if @ns does not map it. */
int bridge_ns_id_to_bus(const BridgeNs *ns, bool gid, uint32_t id, uint32_t *ret);
/* A uid / gid the bus sees, as a receiver in @ns (NULL: the bus's) sees it. */
uint32_t bridge_ns_uid(const BridgeNs *ns, uint32_t uid);
uint32_t bridge_ns_gid(const BridgeNs *ns, uint32_t gid);
/* A pid of the sender in @sns as the receiver in @rns sees it (0: it cannot see it). */
uint32_t bridge_ns_pid(const BridgeNs *rns, const BridgeNs *sns, uint32_t pid);
bool bridge_ns_pid_visible(const BridgeNs *rns, const BridgeNs *sns, pid_t pid);
/* @caps (inheritable, permitted, effective, bounding) of a process in user namespace
 * @userns (0: the bus's) with effective uid @euid, as a receiver in @ns sees them
 * (kdbus_meta_export_caps): written to @ret. */
void bridge_ns_caps(const BridgeProcReader *proc, const BridgeNs *ns, uint64_t userns, bool have_euid,
                    uint32_t euid, const uint64_t caps[4], uint64_t ret[4]);
