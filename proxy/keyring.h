/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * The DBUS_COOKIE_SHA1 keyring of the bus's own user, as the D-Bus specification describes
 * it and libdbus keeps it: ~/.dbus-keyrings/org_freedesktop_general (the directory 0700 and
 * the user's own, else it is not used), one cookie a line "ID CREATION-TIME HEX-COOKIE".
 * A cookie older than 5 minutes is not offered any more, a new one is added under the lock
 * file "<file>.lock" (created exclusively; waited for up to 32 x 250 ms, then taken as
 * stale, as libdbus does), cookies older than 7 minutes or more than 5 minutes in the future
 * are dropped; the file is replaced atomically (written beside it, renamed). Clients of the
 * same user (libdbus, GDBus, sd-bus) read the same file.
 */
#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>
#include "proxy/sasl.h"

typedef struct Keyring {
        bool ready;                     /* keyring_init() found the user */
        uid_t uid;
        char user[256];
        char dir[PATH_MAX];             /* ~/.dbus-keyrings */
        char file[PATH_MAX];            /* .../org_freedesktop_general */
} Keyring;

/*
 * The keyring of the effective user (call it after any privilege drop) and the ops SASL
 * uses with it. A user without a home directory gives ops whose cookies always fail.
 * Return: 0, or a negative errno (no such user).
 */
int keyring_init(Keyring *k, SaslCookieOps *ret_ops);
