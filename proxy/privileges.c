/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Privilege drop to the configuration's <user>. Like dbus-daemon: supplementary groups are
 * cleared, then gid and uid are set; a bus already running as that user changes nothing, and
 * one that cannot switch (not root) refuses to start rather than run as the wrong user. The
 * drop is checked (setuid(0) must fail afterwards) because a half-dropped bus is worse than
 * none.
 */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "proxy/privileges.h"

/**
 * proxy_drop_privileges() - become @user
 * @user:       a user name or a numeric uid, as in <user>
 * @loc:        where <user> was configured (for messages)
 *
 * Return: 0, or -1 after printing why to stderr.
 */
int proxy_drop_privileges(const char *user, const ConfigLoc *loc) {
        struct passwd *pw;
        uid_t uid;
        gid_t gid;

        errno = 0;
        pw = getpwnam(user);
        if (!pw) {
                char *end;
                unsigned long v;

                errno = 0;
                v = strtoul(user, &end, 10);
                if (user[0] >= '0' && user[0] <= '9' && !*end && !errno)
                        pw = getpwuid((uid_t)v);
        }
        if (!pw) {
                fprintf(stderr, "kdbusd: Failed to start message bus: %s:%u: <user>%s</user>: no "
                        "such user on this machine; create it or change the configuration\n",
                        loc->file, loc->line, user);
                return -1;
        }
        uid = pw->pw_uid;
        gid = pw->pw_gid;
        if (geteuid() == uid && getuid() == uid && getegid() == gid && getgid() == gid)
                return 0;
        if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 ||
            setresuid(uid, uid, uid) < 0) {
                fprintf(stderr, "kdbusd: Failed to start message bus: %s:%u: cannot become user "
                        "\"%s\" (uid %u, gid %u): %s; start the bus as root or as that user\n",
                        loc->file, loc->line, user, (unsigned)uid, (unsigned)gid,
                        strerror(errno));
                return -1;
        }
        if (uid != 0 && setuid(0) == 0) {
                fprintf(stderr, "kdbusd: Failed to start message bus: could regain root after "
                        "becoming \"%s\"; refusing to run\n", user);
                return -1;
        }
        return 0;
}
