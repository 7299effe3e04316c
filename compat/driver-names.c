/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The driver's methods about names and who is behind them: RequestName, ReleaseName,
 * ListNames, ListQueuedOwners, NameHasOwner, GetNameOwner, StartServiceByName, and the
 * GetConnection* credential queries.
 *
 * Checks come in dbus-daemon's order: a name that is not a valid bus name, then a unique
 * name, then org.freedesktop.DBus itself. The driver's own name resolves to the bus
 * process (its uid and pid), as dbus-daemon answers. Lookups of invalid names simply find
 * nobody (NameHasNoOwner), also as dbus-daemon does.
 *
 * There is no activation yet: StartServiceByName of a name without owner (and of any
 * unique name or org.freedesktop.DBus) is ServiceUnknown, and the only activatable name is
 * the driver's.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "bridge/bus.h"
#include "bridge/conn.h"
#include "bridge/endpoint.h"
#include "bridge/msg.h"
#include "bridge/names.h"
#include "bridge/policy.h"
#include "compat/driver-internal.h"
#include "util/error.h"
#include "wire/names.h"
#include "wire/protocol.h"

/* Results of RequestName, ReleaseName and StartServiceByName (D-Bus specification). */
enum {
        REQUEST_NAME_REPLY_PRIMARY_OWNER = 1,
        REQUEST_NAME_REPLY_IN_QUEUE = 2,
        REQUEST_NAME_REPLY_EXISTS = 3,
        REQUEST_NAME_REPLY_ALREADY_OWNER = 4,
        RELEASE_NAME_REPLY_RELEASED = 1,
        RELEASE_NAME_REPLY_NON_EXISTENT = 2,
        RELEASE_NAME_REPLY_NOT_OWNER = 3,
        START_REPLY_ALREADY_RUNNING = 2,
};

static int driver_read_name(WireReader *args, const char **ret) {
        int r = wire_reader_read_basic(args, 's', ret);

        return r ? error_fold(r) : 0;
}

/**
 * driver_method_request_name() - RequestName(s name, u flags) -> u result
 * @driver:     the driver
 * @caller:     the calling connection
 * @call:       the call (its signature already checked)
 * @args:       a reader at the call's first argument
 *
 * Answers the call itself. Return: 0, a negative errno, or BRIDGE_E_QUOTA (the caller's
 * queue is full).
 */
int driver_method_request_name(Driver *driver, BridgeConn *caller, BridgeMsg *call,
                               WireReader *args) {
        const char *name;
        uint32_t flags, result;
        char limit[16];
        int r;

        r = driver_read_name(args, &name);
        if (!r)
                r = wire_reader_read_basic(args, 'u', &flags);
        if (r)
                return error_fold(r);

        if (!wire_bus_name_is_valid(name, strlen(name)))
                return driver_error(driver, caller, call, COMPAT_DOMAIN_COMPAT,
                                    COMPAT_E_ACQUIRE_INVALID, name, NULL, NULL);
        if (name[0] == ':')
                return driver_error(driver, caller, call, COMPAT_DOMAIN_COMPAT,
                                    COMPAT_E_ACQUIRE_UNIQUE, name, NULL, NULL);
        if (driver_is_driver_name(name))
                return driver_error(driver, caller, call, COMPAT_DOMAIN_COMPAT,
                                    COMPAT_E_ACQUIRE_DRIVER, caller->unique_name, name, NULL);

        /* unknown flag bits are ignored, as dbus-daemon does */
        r = bridge_name_acquire(caller, name, flags & (BRIDGE_NAME_ALLOW_REPLACEMENT |
                                                       BRIDGE_NAME_REPLACE_EXISTING |
                                                       BRIDGE_NAME_DO_NOT_QUEUE));
        switch (r) {
        case 0:
                result = REQUEST_NAME_REPLY_PRIMARY_OWNER;
                break;
        case NAME_E_IN_QUEUE:
                result = REQUEST_NAME_REPLY_IN_QUEUE;
                break;
        case NAME_E_EXISTS:
                result = REQUEST_NAME_REPLY_EXISTS;
                break;
        case NAME_E_ALREADY_OWNER:
                result = REQUEST_NAME_REPLY_ALREADY_OWNER;
                break;
        case NAME_E_QUOTA:
                (void) snprintf(limit, sizeof(limit), "%u",
                                (unsigned)driver->bus->limits.max_names_per_connection);
                return driver_error(driver, caller, call, COMPAT_DOMAIN_NAME, r,
                                    caller->unique_name, limit, NULL);
        case NAME_E_ACCESS_DENIED:
                return driver_error(driver, caller, call, COMPAT_DOMAIN_NAME, r,
                                    bridge_conn_get_denial(caller), NULL, NULL);
        default:
                return r < 0 ? error_trace(r) : error_fold(r);
        }
        return driver_reply_basic(driver, caller, call, 'u', &result);
}

/**
 * driver_method_release_name() - ReleaseName(s name) -> u result
 * @driver:     the driver
 * @caller:     the calling connection
 * @call:       the call (its signature already checked)
 * @args:       a reader at the call's first argument
 *
 * Answers the call itself. Return: 0, a negative errno, or BRIDGE_E_QUOTA (the caller's
 * queue is full).
 */
int driver_method_release_name(Driver *driver, BridgeConn *caller, BridgeMsg *call,
                               WireReader *args) {
        const char *name;
        uint32_t result;
        int r;

        r = driver_read_name(args, &name);
        if (r)
                return r;

        if (!wire_bus_name_is_valid(name, strlen(name)))
                return driver_error(driver, caller, call, COMPAT_DOMAIN_COMPAT,
                                    COMPAT_E_RELEASE_INVALID, name, NULL, NULL);
        if (name[0] == ':')
                return driver_error(driver, caller, call, COMPAT_DOMAIN_COMPAT,
                                    COMPAT_E_RELEASE_UNIQUE, name, NULL, NULL);
        if (driver_is_driver_name(name))
                return driver_error(driver, caller, call, COMPAT_DOMAIN_COMPAT,
                                    COMPAT_E_RELEASE_DRIVER, name, NULL, NULL);

        /* a name a custom endpoint hides does not exist for its peers */
        r = bridge_conn_can_see_name(caller, name) ? bridge_name_release(caller, name) :
                                                     NAME_E_NON_EXISTENT;
        switch (r) {
        case 0:
                result = RELEASE_NAME_REPLY_RELEASED;
                break;
        case NAME_E_NON_EXISTENT:
                result = RELEASE_NAME_REPLY_NON_EXISTENT;
                break;
        case NAME_E_NOT_OWNER:
                result = RELEASE_NAME_REPLY_NOT_OWNER;
                break;
        default:
                return r < 0 ? error_trace(r) : error_fold(r);
        }
        return driver_reply_basic(driver, caller, call, 'u', &result);
}

/**
 * driver_method_list_queued_owners() - ListQueuedOwners(s name) -> as unique names, primary owner first
 * @driver:     the driver
 * @caller:     the calling connection
 * @call:       the call (its signature already checked)
 * @args:       a reader at the call's first argument
 *
 * Answers the call itself. Return: 0, a negative errno, or BRIDGE_E_QUOTA (the caller's
 * queue is full).
 */
int driver_method_list_queued_owners(Driver *driver, BridgeConn *caller, BridgeMsg *call,
                                     WireReader *args) {
        const char *name;
        BridgeName *bn = NULL;
        BridgeConn *conn = NULL;
        WireWriter w;
        List *pos;
        int r;

        r = driver_read_name(args, &name);
        if (r)
                return r;

        if (!driver_is_driver_name(name)) {
                if (name[0] == ':')
                        conn = driver_lookup_for(driver, caller, name);
                else if (wire_bus_name_is_valid(name, strlen(name)) &&
                         bridge_conn_can_see_name(caller, name))
                        bn = bus_find_name(driver->bus, name);
                if (!conn && (!bn || list_is_empty(&bn->owners)))
                        return driver_error(driver, caller, call, COMPAT_DOMAIN_COMPAT,
                                            COMPAT_E_NO_OWNER_OWNERS, name, NULL, NULL);
        }

        wire_writer_init(&w);
        (void) wire_writer_open(&w, 'a', "s");
        if (bn) {
                list_for_each(pos, &bn->owners) {
                        BridgeNameOwner *o = list_entry(pos, BridgeNameOwner, name_link);

                        (void) wire_writer_append_basic(&w, 's', o->conn->unique_name);
                }
        } else {
                (void) wire_writer_append_basic(&w, 's', conn ? conn->unique_name : name);
        }
        (void) wire_writer_close(&w);
        r = driver_reply(driver, caller, call, &w);
        wire_writer_deinit(&w);
        return r;
}

/**
 * driver_method_list_names() - ListNames() -> as: the driver, the well-known names, the unique names
 * @driver:     the driver
 * @caller:     the calling connection
 * @call:       the call (its signature already checked)
 * @args:       a reader at the call's first argument
 *
 * Answers the call itself. Return: 0, a negative errno, or BRIDGE_E_QUOTA (the caller's
 * queue is full).
 */
int driver_method_list_names(Driver *driver, BridgeConn *caller, BridgeMsg *call,
                             WireReader *args) {
        Bus *bus = driver->bus;
        HashNode *node, *tmp;
        WireWriter w;
        size_t i;
        List *pos;
        int r;

        wire_writer_init(&w);
        (void) wire_writer_open(&w, 'a', "s");
        (void) wire_writer_append_basic(&w, 's', WIRE_DRIVER_NAME);
        hash_table_for_each(node, tmp, &bus->names, i) {
                BridgeName *bn = container_of(node, BridgeName, node);

                if (!list_is_empty(&bn->owners) && bridge_conn_can_see_name(caller, bn->name))
                        (void) wire_writer_append_basic(&w, 's', bn->name);
        }
        list_for_each(pos, &bus->conns) {
                BridgeConn *conn = list_entry(pos, BridgeConn, bus_link);

                /* monitors and native activators have no unique name to show */
                if (bridge_conn_is_visible(conn) && bridge_conn_can_see_conn(caller, conn))
                        (void) wire_writer_append_basic(&w, 's', conn->unique_name);
        }
        (void) wire_writer_close(&w);
        r = driver_reply(driver, caller, call, &w);
        wire_writer_deinit(&w);
        return r;
}

/**
 * driver_method_name_has_owner() - NameHasOwner(s name) -> b
 * @driver:     the driver
 * @caller:     the calling connection
 * @call:       the call (its signature already checked)
 * @args:       a reader at the call's first argument
 *
 * Answers the call itself. Return: 0, a negative errno, or BRIDGE_E_QUOTA (the caller's
 * queue is full).
 */
int driver_method_name_has_owner(Driver *driver, BridgeConn *caller, BridgeMsg *call,
                                 WireReader *args) {
        const char *name;
        uint32_t has;
        int r;

        r = driver_read_name(args, &name);
        if (r)
                return r;
        has = driver_is_driver_name(name) || driver_lookup_for(driver, caller, name);
        return driver_reply_basic(driver, caller, call, 'b', &has);
}

/**
 * driver_method_get_name_owner() - GetNameOwner(s name) -> s unique name
 * @driver:     the driver
 * @caller:     the calling connection
 * @call:       the call (its signature already checked)
 * @args:       a reader at the call's first argument
 *
 * Answers the call itself. Return: 0, a negative errno, or BRIDGE_E_QUOTA (the caller's
 * queue is full).
 */
int driver_method_get_name_owner(Driver *driver, BridgeConn *caller, BridgeMsg *call,
                                 WireReader *args) {
        const char *name;
        BridgeConn *conn;
        int r;

        r = driver_read_name(args, &name);
        if (r)
                return r;
        if (driver_is_driver_name(name))
                return driver_reply_basic(driver, caller, call, 's', WIRE_DRIVER_NAME);
        conn = driver_lookup_for(driver, caller, name);
        if (!conn)
                return driver_error(driver, caller, call, COMPAT_DOMAIN_COMPAT,
                                    COMPAT_E_NO_OWNER_OWNER, name, NULL, NULL);
        return driver_reply_basic(driver, caller, call, 's', conn->unique_name);
}

/*
 * The connection a GetConnection* call asks about. *ret_conn is NULL for the driver itself.
 * Answers NameHasNoOwner with @no_owner itself; then returns 1 through *ret_answered.
 */
static int driver_resolve_subject(Driver *driver, BridgeConn *caller, BridgeMsg *call,
                                  WireReader *args, int no_owner, const char **ret_name,
                                  BridgeConn **ret_conn, bool *ret_answered) {
        const char *name;
        BridgeConn *conn = NULL;
        int r;

        r = driver_read_name(args, &name);
        if (r)
                return r;
        if (!driver_is_driver_name(name)) {
                conn = driver_lookup_for(driver, caller, name);
                if (!conn) {
                        *ret_answered = true;
                        return driver_error(driver, caller, call, COMPAT_DOMAIN_COMPAT, no_owner,
                                            name, NULL, NULL);
                }
        }
        *ret_answered = false;
        *ret_name = name;
        *ret_conn = conn;
        return 0;
}

/**
 * driver_method_get_unix_user() - GetConnectionUnixUser(s name) -> u uid
 * @driver:     the driver
 * @caller:     the calling connection
 * @call:       the call (its signature already checked)
 * @args:       a reader at the call's first argument
 *
 * Answers the call itself. Return: 0, a negative errno, or BRIDGE_E_QUOTA (the caller's
 * queue is full).
 */
int driver_method_get_unix_user(Driver *driver, BridgeConn *caller, BridgeMsg *call,
                                WireReader *args) {
        const char *name;
        BridgeConn *conn;
        bool answered;
        uint32_t uid;
        int r;

        r = driver_resolve_subject(driver, caller, call, args, COMPAT_E_NO_OWNER_UID, &name,
                                   &conn, &answered);
        if (r || answered)
                return r;
        if (conn) {
                BridgeCreds shown;

                bridge_conn_shown_creds(conn, &shown);
                if (shown.uid_unknown)
                        return driver_error(driver, caller, call, COMPAT_DOMAIN_COMPAT,
                                            COMPAT_E_UID_UNKNOWN, name, NULL, NULL);
                uid = (uint32_t)shown.uid;
        } else {
                uid = (uint32_t)getuid();
        }
        return driver_reply_basic(driver, caller, call, 'u', &uid);
}

/**
 * driver_method_get_unix_pid() - GetConnectionUnixProcessID(s name) -> u pid
 * @driver:     the driver
 * @caller:     the calling connection
 * @call:       the call (its signature already checked)
 * @args:       a reader at the call's first argument
 *
 * Answers the call itself. Return: 0, a negative errno, or BRIDGE_E_QUOTA (the caller's
 * queue is full).
 */
int driver_method_get_unix_pid(Driver *driver, BridgeConn *caller, BridgeMsg *call,
                               WireReader *args) {
        const char *name;
        BridgeConn *conn;
        bool answered;
        uint32_t pid;
        int r;

        r = driver_resolve_subject(driver, caller, call, args, COMPAT_E_NO_OWNER_PID, &name,
                                   &conn, &answered);
        if (r || answered)
                return r;
        if (conn) {
                BridgeCreds shown;

                bridge_conn_shown_creds(conn, &shown);
                pid = (uint32_t)shown.pid;
        } else {
                pid = (uint32_t)getpid();
        }
        if (pid == 0)
                return driver_error(driver, caller, call, COMPAT_DOMAIN_COMPAT,
                                    COMPAT_E_PID_UNKNOWN, name, NULL, NULL);
        return driver_reply_basic(driver, caller, call, 'u', &pid);
}

static void driver_append_entry_u(WireWriter *w, const char *key, uint32_t value) {
        (void) wire_writer_open(w, '{', NULL);
        (void) wire_writer_append_basic(w, 's', key);
        (void) wire_writer_open(w, 'v', "u");
        (void) wire_writer_append_basic(w, 'u', &value);
        (void) wire_writer_close(w);
        (void) wire_writer_close(w);
}

/**
 * driver_method_get_credentials() - GetConnectionCredentials(s name) -> a{sv}
 * @driver:     the driver
 * @caller:     the calling connection
 * @call:       the call (its signature already checked)
 * @args:       a reader at the call's first argument
 *
 * Answers the call itself. Return: 0, a negative errno, or BRIDGE_E_QUOTA (the caller's
 * queue is full).
 */
int driver_method_get_credentials(Driver *driver, BridgeConn *caller, BridgeMsg *call,
                                  WireReader *args) {
        _cleanup_(fd_closep) int pidfd = -1;
        const char *name;
        BridgeConn *conn;
        bool answered;
        WireWriter w;
        unsigned i;
        int r;

        r = driver_resolve_subject(driver, caller, call, args, COMPAT_E_NO_OWNER_CREDS, &name,
                                   &conn, &answered);
        if (r || answered)
                return r;

        wire_writer_init(&w);
        (void) wire_writer_open(&w, 'a', "{sv}");
        if (!conn) {
                /* the bus itself: what dbus-daemon tells about itself, in its order */
                driver_append_entry_u(&w, "ProcessID", (uint32_t)getpid());
                driver_append_entry_u(&w, "UnixUserID", (uint32_t)getuid());
        } else {
                BridgeCreds shown;
                bool faked;
                const BridgeCreds *c = &shown;

                faked = bridge_conn_shown_creds(conn, &shown);
                /* keys in dbus-daemon 1.14's order (ProcessID, UnixUserID, UnixGroupIDs,
                 * LinuxSecurityLabel), which busctl --json and other dumps show as is;
                 * ProcessFD, which 1.14 lacks, beside ProcessID */
                if (c->pid > 0)
                        driver_append_entry_u(&w, "ProcessID", (uint32_t)c->pid);
                /* fetched now (a classic peer's bus holds no pidfd for it); none when the
                 * process is gone, or when a privileged native HELLO stood in for it */
                if (!faked && (caller->flags & BRIDGE_CONN_ACCEPT_FDS))
                        pidfd = bridge_conn_get_pidfd(conn);
                if (pidfd == -ENOMEM) {
                        wire_writer_deinit(&w);
                        return error_trace(pidfd);
                }
                if (pidfd < 0)
                        pidfd = -1;
                if (pidfd >= 0) {
                        uint32_t index = 0;

                        (void) wire_writer_open(&w, '{', NULL);
                        (void) wire_writer_append_basic(&w, 's', "ProcessFD");
                        (void) wire_writer_open(&w, 'v', "h");
                        (void) wire_writer_append_basic(&w, 'h', &index);
                        (void) wire_writer_close(&w);
                        (void) wire_writer_close(&w);
                }
                if (!c->uid_unknown)
                        driver_append_entry_u(&w, "UnixUserID", (uint32_t)c->uid);
                if (c->groups && !c->uid_unknown) {
                        (void) wire_writer_open(&w, '{', NULL);
                        (void) wire_writer_append_basic(&w, 's', "UnixGroupIDs");
                        (void) wire_writer_open(&w, 'v', "au");
                        (void) wire_writer_open(&w, 'a', "u");
                        for (i = 0; i < c->n_groups; ++i) {
                                uint32_t g = (uint32_t)c->groups[i];

                                (void) wire_writer_append_basic(&w, 'u', &g);
                        }
                        (void) wire_writer_close(&w);
                        (void) wire_writer_close(&w);
                        (void) wire_writer_close(&w);
                }
                if (c->seclabel) {
                        const char *p = c->seclabel;

                        /* as dbus-daemon: the label's bytes with its terminating NUL */
                        (void) wire_writer_open(&w, '{', NULL);
                        (void) wire_writer_append_basic(&w, 's', "LinuxSecurityLabel");
                        (void) wire_writer_open(&w, 'v', "ay");
                        (void) wire_writer_open(&w, 'a', "y");
                        do {
                                uint8_t byte = (uint8_t)*p;

                                (void) wire_writer_append_basic(&w, 'y', &byte);
                        } while (*p++);
                        (void) wire_writer_close(&w);
                        (void) wire_writer_close(&w);
                        (void) wire_writer_close(&w);
                }
        }
        (void) wire_writer_close(&w);
        r = driver_reply_fd(driver, caller, call, &w, steal_fd(&pidfd));
        wire_writer_deinit(&w);
        return r;
}

/* No SELinux support: dbus-daemon answers the same when SELinux is off. */
/**
 * driver_method_get_selinux_context() - GetConnectionSELinuxSecurityContext(s name): always the error
 * @driver:     the driver
 * @caller:     the calling connection
 * @call:       the call (its signature already checked)
 * @args:       a reader at the call's first argument
 *
 * Answers the call itself. Return: 0, a negative errno, or BRIDGE_E_QUOTA (the caller's
 * queue is full).
 */
int driver_method_get_selinux_context(Driver *driver, BridgeConn *caller, BridgeMsg *call,
                                      WireReader *args) {
        const char *name;
        BridgeConn *conn;
        bool answered;
        int r;

        r = driver_resolve_subject(driver, caller, call, args, COMPAT_E_NO_OWNER_SECLABEL,
                                   &name, &conn, &answered);
        if (r || answered)
                return r;
        return driver_error(driver, caller, call, COMPAT_DOMAIN_COMPAT, COMPAT_E_SELINUX_UNKNOWN,
                            name, NULL, NULL);
}

/* Solaris audit data does not exist on Linux: dbus-daemon always answers this error. */
/**
 * driver_method_get_adt_audit_data() - GetAdtAuditSessionData(s name): always the error
 * @driver:     the driver
 * @caller:     the calling connection
 * @call:       the call (its signature already checked)
 * @args:       a reader at the call's first argument
 *
 * Answers the call itself. Return: 0, a negative errno, or BRIDGE_E_QUOTA (the caller's
 * queue is full).
 */
int driver_method_get_adt_audit_data(Driver *driver, BridgeConn *caller, BridgeMsg *call,
                                     WireReader *args) {
        const char *name;
        BridgeConn *conn;
        bool answered;
        int r;

        r = driver_resolve_subject(driver, caller, call, args, COMPAT_E_NO_OWNER_ADT, &name,
                                   &conn, &answered);
        if (r || answered)
                return r;
        return driver_error(driver, caller, call, COMPAT_DOMAIN_COMPAT, COMPAT_E_ADT_UNKNOWN,
                            name, NULL, NULL);
}
