/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A peer's credentials from its socket, read once at connect. The classic front end takes
 * the whole set (peer_creds_read()); the native one takes its own mix (proxy/native-client.c:
 * a pidfd kept for HELLO, the primary group only) and shares the label and privilege reads.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "proxy/peer-creds.h"
#include "proxy/proc-reader.h"
#include "util/error.h"
#include "util/macro.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif
#ifndef SO_PEERGROUPS
#define SO_PEERGROUPS 59
#endif

/* Longest LSM label taken (SELinux contexts are far shorter); a longer one is no label. */
#define PEER_SECLABEL_MAX 4095

/* No security module labels sockets, and none can be loaded later: never ask again. */
static bool peersec_unsupported;

/**
 * peer_creds_read_seclabel() - the peer's LSM label at connect
 * @fd:         the connected socket
 * @ret:        the label (malloc'd), or NULL when there is none
 *
 * Return: 0 or -ENOMEM.
 */
int peer_creds_read_seclabel(int fd, char **ret) {
        char label[PEER_SECLABEL_MAX + 1];
        socklen_t len = sizeof(label) - 1;
        int sr;

        *ret = NULL;
        sr = peersec_unsupported ? -ENOPROTOOPT :
             getsockopt(fd, SOL_SOCKET, SO_PEERSEC, label, &len) < 0 ? -errno : 0;
        if (sr == -ENOPROTOOPT)
                peersec_unsupported = true;     /* a syscall less per connection */
        if (sr < 0 || len == 0)
                return 0;
        label[len] = '\0';
        *ret = strdup(label);
        return *ret ? 0 : error_origin(-ENOMEM);
}

/**
 * peer_creds_cap_ipc_owner() - kdbus's privilege (BridgeCreds.cap_ipc_owner) at connect
 * @fd:         the connected socket
 * @pid:        the peer's pid from SO_PEERCRED
 *
 * CAP_IPC_OWNER in the bus's user namespace, read through the socket's own pidfd (held
 * only for the read: one fd per peer). None before Linux 6.5 (no SO_PEERPIDFD): a pid
 * alone is not trusted.
 */
bool peer_creds_cap_ipc_owner(int fd, pid_t pid) {
        socklen_t len = sizeof(int);
        int pidfd = -1;
        bool r;

        if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) < 0 || pidfd < 0)
                return false;
        r = proxy_proc_cap_ipc_owner(pid, pidfd);
        (void) close(pidfd);
        return r;
}

/**
 * peer_creds_read_groups() - a classic peer's groups
 * @fd:         the connected socket
 * @creds:      its credentials from peer_creds_read() (no groups yet): gets the groups
 *
 * SO_PEERGROUPS gives the groups of the process that connected, as at connect(), whenever
 * it is asked; so it can be asked after the peer's first answer was written (issue #16).
 * No supplementary groups (or no SO_PEERGROUPS): the group list is the gid, which is what
 * dbus-daemon reports for the peer from the user database.
 *
 * Return: 0 or -ENOMEM.
 */
int peer_creds_read_groups(int fd, BridgeCreds *creds) {
        gid_t gbuf[64];
        socklen_t len = sizeof(gbuf);

        if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, gbuf, &len) == 0) {
                creds->n_groups = len / sizeof(gid_t);
                if (creds->n_groups) {
                        creds->groups = malloc(len);
                        if (!creds->groups)
                                return error_origin(-ENOMEM);
                        memcpy(creds->groups, gbuf, len);
                }
        } else if (errno == ERANGE && len > 0) {
                creds->groups = malloc(len);
                if (!creds->groups)
                        return error_origin(-ENOMEM);
                if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, creds->groups, &len) == 0) {
                        creds->n_groups = len / sizeof(gid_t);
                } else {
                        free(creds->groups);
                        creds->groups = NULL;
                }
        }
        if (creds->n_groups == 0) {
                free(creds->groups);
                creds->groups = malloc(sizeof(gid_t));
                if (!creds->groups)
                        return error_origin(-ENOMEM);
                creds->groups[0] = creds->gid;
                creds->n_groups = 1;
        }
        return 0;
}

/**
 * peer_creds_read() - a classic peer's credentials
 * @fd:         the connected socket
 * @ret:        uid, gid, pid and label; no groups yet (peer_creds_read_groups()); no pidfd
 *              (-1: taken when asked, client_get_pidfd()); cap_ipc_owner is the caller's
 *
 * Return: 0 or -errno (SO_PEERCRED failed, -ENOMEM).
 */
int peer_creds_read(int fd, BridgeCreds *ret) {
        BridgeCreds creds = { .uid = (uid_t)-1, .gid = (gid_t)-1, .pidfd = -1 };
        struct ucred uc;
        socklen_t len = sizeof(uc);
        int r;

        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) < 0)
                return error_origin(-errno);
        creds.uid = uc.uid;
        creds.gid = uc.gid;
        creds.pid = uc.pid;

        r = peer_creds_read_seclabel(fd, &creds.seclabel);
        if (r < 0) {
                peer_creds_deinit(&creds);
                return r;
        }
        *ret = creds;
        return 0;
}

/* What the peer_creds_read*() functions took: the groups, the label, a pidfd. */
void peer_creds_deinit(BridgeCreds *creds) {
        creds->pidfd = fd_close(creds->pidfd);
        free(creds->groups);
        creds->groups = NULL;
        free(creds->seclabel);
        creds->seclabel = NULL;
}
