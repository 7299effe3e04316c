/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A peer meets the configuration's policy once, right after it authenticated: may this user
 * connect at all (the user=/group= rules), and its PolicySnapshot (uid, groups, at_console
 * resolved once, never per message). A reload re-resolves the snapshots in the core
 * (bus_set_policy()) from the same facts; only the front end can learn them, so they are
 * gathered here: at_console as dbus-daemon decides it on a systemd machine (the user has a
 * seat, sd_uid_get_seats()) or else by /var/run/console/<user>, and the command line that
 * dbus-daemon quotes in its AccessDenied texts. Both are asked by the core only when
 * needed (PolicyPeerFacts): the console state for a policy with at_console rules, the
 * command line when a text first shows it; a connection under a policy without such rules
 * that is never denied costs neither (4 system calls of 18, issue #16).
 */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-login.h>
#include "bridge/conn.h"
#include "bridge/policy.h"
#include "proxy/config.h"
#include "proxy/server.h"
#include "util/error.h"

/*
 * User names by uid for the console check, as dbus-daemon's user database caches them
 * until a reload (proxy_config_peer_forget()): a connection of a known user costs no
 * reading of the user database (issue #16: connection churn). Names that do not fit are
 * not cached.
 */
#define PEER_NAMES_KEEP 8u
static struct {
        uid_t uid;
        char name[64];
} peer_names[PEER_NAMES_KEEP];
static unsigned n_peer_names, next_peer_name;

/* Whether this machine runs systemd: decided at boot, asked once. */
static int booted = -1;

/* The bus's own uid, asked once: peers are admitted only after the bus dropped its
 * privileges (proxy/main.c), and it never changes after that. */
static uid_t bus_uid = (uid_t)-1;

/**
 * proxy_config_peer_forget() - forget the cached user names (a reload: as dbus-daemon)
 */
void proxy_config_peer_forget(void) {
        n_peer_names = next_peer_name = 0;
}

static bool uid_name(uid_t uid, char *buf, size_t size) {
        struct passwd pw, *res = NULL;
        char pwbuf[4096];
        unsigned i;

        for (i = 0; i < n_peer_names; ++i)
                if (peer_names[i].uid == uid) {
                        size_t n = strlen(peer_names[i].name);

                        if (n >= size)
                                return false;
                        memcpy(buf, peer_names[i].name, n + 1);
                        return true;
                }
        if (getpwuid_r(uid, &pw, pwbuf, sizeof(pwbuf), &res) != 0 || !res)
                return false;
        snprintf(buf, size, "%s", res->pw_name);
        if (strlen(res->pw_name) < sizeof(peer_names[0].name)) {
                i = n_peer_names < PEER_NAMES_KEEP ? n_peer_names++ : next_peer_name++ % PEER_NAMES_KEEP;
                peer_names[i].uid = uid;
                snprintf(peer_names[i].name, sizeof(peer_names[i].name), "%s", res->pw_name);
        }
        return true;
}

static bool uid_is_at_console(uid_t uid) {
        static const char dir[] = "/var/run/console/";
        char path[sizeof(dir) - 1 + 4096];

        if (booted < 0)
                booted = sd_booted() > 0;
        if (booted)
                return sd_uid_get_seats(uid, 1, NULL) > 0;
        memcpy(path, dir, sizeof(dir) - 1);
        if (!uid_name(uid, path + sizeof(dir) - 1, sizeof(path) - (sizeof(dir) - 1)))
                return false;
        return access(path, F_OK) == 0;
}

/* The peer's command line with spaces for NULs, as dbus-daemon shows it, at most
 * POLICY_COMM_MAX bytes (@size is one more); "" if unknown. */
static void read_cmdline(pid_t pid, char *buf, size_t size) {
        char path[64];
        ssize_t n;
        int fd;

        buf[0] = '\0';
        if (pid <= 0)
                return;
        snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return;
        n = read(fd, buf, (size > POLICY_COMM_MAX ? POLICY_COMM_MAX + 1 : size) - 1);
        (void) close(fd);
        if (n <= 0) {
                buf[0] = '\0';
                return;
        }
        while (n > 0 && buf[n - 1] == '\0')
                --n;
        buf[n] = '\0';
        for (ssize_t i = 0; i < n; ++i)
                if (buf[i] == '\0')
                        buf[i] = ' ';
}

/* asked by the core when a db or a text needs them, not at every connect (issue #16) */
static const PolicyPeerFacts peer_facts = {
        .uid_at_console = uid_is_at_console,
        .read_comm = read_cmdline,
};

/**
 * proxy_config_admit_creds() - the policy's say on a peer, before it has a connection
 * @s:          the server
 * @cr:         the peer's credentials (captured at connect)
 * @ret:        its snapshot (NULL without a policy on the bus)
 *
 * Without a policy on the bus nothing is checked. Otherwise the user=/group= rules decide
 * whether the peer may connect (the bus's own uid may unless a rule says otherwise). The
 * native front end asks this before HELLO creates the connection, so that a refused peer
 * is never announced.
 *
 * Return: 0, 1 (the policy does not let this user connect), or -ENOMEM.
 */
int proxy_config_admit_creds(Server *s, const BridgeCreds *cr, PolicySnapshot **ret) {
        PolicyDb *db = s->config ? s->config->policy : NULL;   /* the one on the bus */
        _cleanup_(freep) gid_t *gids_heap = NULL;
        gid_t gids_stack[32], *gids = gids_stack;
        PolicyPeer peer;
        size_t n_gids;
        int r;

        *ret = NULL;
        if (!db)
                return 0;
        /* the primary group first, then the supplementary ones (dbus-daemon's group list) */
        n_gids = cr->n_groups + 1;
        if (n_gids > ELEMENTSOF(gids_stack)) {
                gids = gids_heap = malloc(n_gids * sizeof(gid_t));
                if (!gids)
                        return error_origin(-ENOMEM);
        }
        gids[0] = cr->gid;
        n_gids = 1;
        for (unsigned i = 0; i < cr->n_groups; ++i)
                if (cr->groups[i] != cr->gid)
                        gids[n_gids++] = cr->groups[i];

        if (bus_uid == (uid_t)-1)
                bus_uid = getuid();
        r = policy_db_check_connect(db, cr->uid, gids, n_gids, bus_uid);
        if (r == POLICY_E_ACCESS_DENIED)
                return 1;
        if (r < 0)
                return error_trace(r);
        peer = (PolicyPeer){
                .uid = cr->uid,
                .gids = gids,
                .n_gids = n_gids,
                .pid = cr->pid,
                .facts = &peer_facts,
        };
        r = policy_snapshot_new(db, &peer, ret);
        return r < 0 ? error_trace(r) : 0;
}

/**
 * proxy_config_admit() - the policy's say on a peer that just authenticated
 * @s:          the server
 * @conn:       the peer's connection (creds captured at connect)
 *
 * As proxy_config_admit_creds(); @conn gets the snapshot.
 *
 * Return: 0, 1 (the policy does not let this user connect), or -ENOMEM.
 */
int proxy_config_admit(Server *s, BridgeConn *conn) {
        PolicySnapshot *snapshot = NULL;
        int r;

        r = proxy_config_admit_creds(s, &conn->creds, &snapshot);
        if (r)
                return r;
        if (snapshot)
                bridge_conn_set_policy(conn, snapshot);
        return 0;
}
