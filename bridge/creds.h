/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/* A peer's credentials, as its transport captured them at connect (bridge/conn.h keeps them
 * per connection; the name ACL, bridge/name-acl.h, decides on them). */
#include <stdbool.h>
#include <sys/types.h>

/* Credentials captured once, when the peer connected (SO_PEERCRED, SO_PEERGROUPS, ...). */
typedef struct BridgeCreds {
        uid_t uid;
        gid_t gid;
        pid_t pid;                      /* 0: unknown */
        int pidfd;                      /* -1: none (then BridgeConnOps.get_pidfd, if any,
                                         * fetches one when asked); owned by the connection */
        gid_t *groups;                  /* owned */
        unsigned n_groups;
        char *seclabel;                 /* owned, NUL-terminated; NULL: none */
        bool uid_unknown;               /* authenticated ANONYMOUS: the driver shows no uid
                                         * and no groups (dbus-daemon); policy and quotas
                                         * still use @uid, the socket's */
        bool cap_ipc_owner;             /* CAP_IPC_OWNER effective in the bus's user
                                         * namespace at connect (kdbus's privilege; read by
                                         * the front end only for a uid other than the bus
                                         * owner's, bus_creds_privileged()) */
} BridgeCreds;
