/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The driver: where every message of a legacy client enters the bus, and the peer named
 * org.freedesktop.DBus. Behaviour follows dbus-daemon 1.14, checked call by call:
 *
 *   - Before Hello (driver_handle_unregistered()): a Hello method call to the driver
 *     registers; anything else to the driver is answered AccessDenied, the connection kept,
 *     with DESTINATION ":not.active.yet" as dbus-daemon writes it; a method call without
 *     destination gets its usual answer; anything else drops the peer.
 *   - Messages of a type the specification does not define (driver_refuse_unknown_type())
 *     are not delivered: without destination they vanish, to a name nobody owns they get
 *     ServiceUnknown, to the bus or an existing peer AccessDenied, whatever the flags.
 *   - The driver answers every method call addressed to it, NO_REPLY_EXPECTED or not
 *     (dbus-daemon does); signals, replies and errors sent to it are ignored. Everything it
 *     sends carries NO_REPLY_EXPECTED, unicasts also DESTINATION, like dbus-daemon's.
 *   - The org.freedesktop.DBus, .Peer and .Introspectable interfaces answer on every
 *     object path; .Properties only on /org/freedesktop/DBus. A call without interface is
 *     looked up by member in all of them. An unknown member of a known interface is
 *     UnknownMethod, an unknown interface UnknownInterface.
 *   - A method call without destination is answered as libdbus inside dbus-daemon answers
 *     it (driver_answer_no_destination()); eavesdroppers see it first.
 *   - Routing failures are answered with an error to the sender whatever the message type
 *     and flags (dbus-daemon does so even for signals and NO_REPLY_EXPECTED calls), except
 *     a reply nobody waits for: the core refuses it and we drop it silently, which is what
 *     its sender sees on dbus-daemon's session bus too (dbus-broker also drops it).
 *   - UpdateActivationEnvironment is privileged: only on /org/freedesktop/DBus, only for
 *     root or the bus's own uid (checked before its arguments, as dbus-daemon does).
 *   - Order, as each connection sees it: NameLost to the old owner, NameOwnerChanged, then
 *     NameAcquired to the new owner, then the method reply; for Hello the reply first, then
 *     NameAcquired of the unique name.
 *
 * Every message the bus emits takes the next value of one counter as its serial (never 0).
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "bridge/activation.h"
#include "bridge/bus.h"
#include "bridge/conn.h"
#include "bridge/endpoint.h"
#include "bridge/match.h"
#include "bridge/monitor.h"
#include "bridge/msg.h"
#include "bridge/names.h"
#include "bridge/policy.h"
#include "compat/driver-internal.h"
#include "compat/match-rule.h"
#include "util/error.h"
#include "util/hex.h"
#include "wire/names.h"
#include "wire/protocol.h"

static bool streq0(const char *a, const char *b) {
        return a && b && strcmp(a, b) == 0;
}

/**
 * driver_is_driver_name() - is @name "org.freedesktop.DBus"?
 * @name:       a name, or NULL
 *
 * Return: true for the driver's own name.
 */
bool driver_is_driver_name(const char *name) {
        return streq0(name, WIRE_DRIVER_NAME);
}

/* ---- notifications from the core ---- */

static int driver_notify_conn_added(void *userdata, BridgeConn *conn) {
        Driver *driver = userdata;

        /* for Hello, driver_method_hello() reports it after the reply (dbus-daemon's order) */
        if (driver->in_hello)
                return 0;
        return error_trace(driver_name_owner_changed(driver, conn->unique_name, "",
                                                     conn->unique_name));
}

static int driver_notify_conn_removed(void *userdata, BridgeConn *conn) {
        Driver *driver = userdata;
        int r;

        driver_activation_conn_removed(driver, conn);

        /* the peer is gone: only monitors see its NameLost, as on dbus-daemon */
        r = driver_signal(driver, conn, "NameLost", conn->unique_name, NULL, NULL);
        if (r < 0)
                return error_trace(r);
        return error_trace(driver_name_owner_changed(driver, conn->unique_name,
                                                     conn->unique_name, ""));
}

static int driver_notify_name_changed(void *userdata, const char *name, BridgeConn *old_owner,
                                      BridgeConn *new_owner) {
        Driver *driver = userdata;
        int r;

        /* dbus-daemon's order: NameLost, NameOwnerChanged, NameAcquired */
        if (old_owner) {
                r = driver_signal(driver, old_owner, "NameLost", name, NULL, NULL);
                if (r)
                        return error_trace(r);
        }
        r = driver_name_owner_changed(driver, name, old_owner ? old_owner->unique_name : "",
                                      new_owner ? new_owner->unique_name : "");
        if (r)
                return error_trace(r);
        if (new_owner) {
                r = driver_signal(driver, new_owner, "NameAcquired", name, NULL, NULL);
                if (r)
                        return error_trace(r);
                /* what waited for the name goes to it now, as dbus-daemon does */
                r = driver_activation_name_owned(driver, name, new_owner);
                if (r)
                        return error_trace(r);
        }
        return 0;
}

static int driver_notify_reply_lost(void *userdata, BridgeConn *caller, uint32_t serial,
                                    bool timed_out, const char *callee_name) {
        Driver *driver = userdata;
        int r;

        if (!bridge_conn_is_active(caller))
                return 0;
        /* dbus-daemon sends these from the bus, not on behalf of the callee */
        r = driver_send_error(driver, caller, serial, COMPAT_DOMAIN_COMPAT,
                              timed_out ? COMPAT_E_NO_REPLY_TIMEOUT :
                                          COMPAT_E_NO_REPLY_DISCONNECTED,
                              callee_name, NULL, NULL);
        if (r == BRIDGE_E_QUOTA)
                driver_kick(caller);
        else if (r > 0 && r != BRIDGE_E_NOT_ACTIVE)
                return error_fold(r);
        return r < 0 ? error_trace(r) : 0;
}

/*
 * A copy the policy denied (bridge_policy_check_copy()): dbus-daemon 1.14.10 makes the
 * AccessDenied error, from the bus to the sender (to itself for a message of the bus),
 * shows it to its monitors and sends it to nobody.
 */
static int driver_notify_copy_denied(void *userdata, const BridgeConn *sender,
                                     const BridgeMsg *msg, const char *text) {
        Driver *driver = userdata;
        _cleanup_(bridge_msg_unrefp) BridgeMsg *m = NULL;
        WireMsgSpec spec = {
                .type = WIRE_MSG_ERROR,
                .flags = WIRE_FLAG_NO_REPLY_EXPECTED,
                .reply_serial = msg->hdr.serial,
                .destination = sender ? sender->unique_name : WIRE_DRIVER_NAME,
                .error_name = "org.freedesktop.DBus.Error.AccessDenied",
                .sender = WIRE_DRIVER_NAME,
        };
        WireWriter w;
        int r;

        spec.serial = driver_next_serial(driver);
        wire_writer_init(&w);
        (void) wire_writer_append_basic(&w, 's', text);
        r = driver_msg_build(&spec, &w, &m);
        wire_writer_deinit(&w);
        if (r < 0)
                return r;
        return error_trace(bus_monitor_capture(driver->bus, NULL, m, NULL));
}

/* A native activator came or went: its name is (no longer) in ListActivatableNames. */
static int driver_notify_activatable_changed(void *userdata) {
        return error_trace(driver_activation_emit_changed(userdata));
}

static const BusNotifyOps driver_notify_ops = {
        .conn_added = driver_notify_conn_added,
        .conn_removed = driver_notify_conn_removed,
        .name_changed = driver_notify_name_changed,
        .reply_lost = driver_notify_reply_lost,
        .copy_denied = driver_notify_copy_denied,
        .activatable_changed = driver_notify_activatable_changed,
};

/* ---- org.freedesktop.DBus methods that are not about names ---- */

static int driver_method_hello(Driver *driver, BridgeConn *caller, BridgeMsg *call,
                               WireReader *args) {
        int r;

        if (bridge_conn_is_active(caller))
                return driver_error(driver, caller, call, COMPAT_DOMAIN_COMPAT,
                                    COMPAT_E_HELLO_TWICE, NULL, NULL, NULL);

        /* as dbus-daemon: Hello fails once max_completed_connections peers are registered
         * (the peer stays connected, unregistered) */
        if (driver->bus->conns_by_id.n_entries >= driver->bus->limits.max_completed_connections)
                return driver_error(driver, caller, call, COMPAT_DOMAIN_COMPAT,
                                    COMPAT_E_COMPLETED_QUOTA, NULL, NULL, NULL);

        driver->in_hello = true;
        r = bridge_conn_hello(caller);
        driver->in_hello = false;
        if (r == BRIDGE_E_ALREADY_ACTIVE)
                return driver_error(driver, caller, call, COMPAT_DOMAIN_COMPAT,
                                    COMPAT_E_HELLO_TWICE, NULL, NULL, NULL);
        if (r == BRIDGE_E_CONN_QUOTA) {
                /* as dbus-daemon: the peer stays connected, unregistered, and may retry */
                char uid[24];

                (void) snprintf(uid, sizeof(uid), "%lu", (unsigned long)caller->creds.uid);
                return driver_error(driver, caller, call, COMPAT_DOMAIN_BRIDGE, r, uid, NULL,
                                    NULL);
        }
        if (r)
                return error_fold(r);

        /* monitors see the Hello call as dbus-daemon shows it: from the new unique name */
        if (!list_is_empty(&driver->bus->monitors)) {
                _cleanup_(bridge_msg_unrefp) BridgeMsg *copy = NULL;

                r = bridge_msg_new_stamped(call->data, &call->hdr, caller->unique_name,
                                           caller->id, &copy);
                if (r < 0)
                        return error_trace(r);
                if (r == 0) {
                        r = bus_monitor_capture(driver->bus, caller, copy, NULL);
                        if (r < 0)
                                return error_trace(r);
                }
        }

        /* dbus-daemon's order: the reply, NameOwnerChanged, then NameAcquired */
        r = driver_reply_basic(driver, caller, call, 's', caller->unique_name);
        if (r)
                return error_trace(r);
        r = driver_name_owner_changed(driver, caller->unique_name, "", caller->unique_name);
        if (r)
                return error_trace(r);
        return driver_signal(driver, caller, "NameAcquired", caller->unique_name, NULL, NULL);
}

/* Parse the rule of AddMatch/RemoveMatch; answers the error itself (*ret_answered). */
static int driver_parse_match(Driver *driver, BridgeConn *caller, BridgeMsg *call,
                              WireReader *args, char *buf, size_t buf_size,
                              BridgeMatchKeys *ret_keys, bool *ret_answered) {
        const char *rule, *error = NULL;
        int r;

        r = wire_reader_read_basic(args, 's', &rule);
        if (r)
                return error_fold(r);
        r = match_rule_parse(rule, buf, buf_size, ret_keys, &error);
        if (r > 0) {
                *ret_answered = true;
                return driver_error(driver, caller, call, COMPAT_DOMAIN_MATCH_RULE, r, error,
                                    NULL, NULL);
        }
        *ret_answered = false;
        return error_trace(r);
}

static int driver_method_add_match(Driver *driver, BridgeConn *caller, BridgeMsg *call,
                                   WireReader *args) {
        _cleanup_(bridge_match_rule_freep) BridgeMatchRule *rule = NULL;
        char buf[MATCH_RULE_MAX_LEN + 1], limit[16];
        BridgeMatchKeys keys;
        bool answered;
        int r;

        r = driver_parse_match(driver, caller, call, args, buf, sizeof(buf), &keys, &answered);
        if (r || answered)
                return r;
        /* dbus-daemon 1.14: eavesdropping is for root and the bus's user only, whatever
         * the policy's eavesdrop= rules say (the rule is parsed first) */
        if (keys.eavesdrop) {
                r = driver_refuse_unprivileged(driver, caller, call, "AddMatch");
                if (r)
                        return r < 0 ? error_trace(r) : 0;
        }

        r = bridge_match_rule_new(&keys, &rule);
        if (r)
                return error_trace(r);
        r = bridge_conn_add_match(caller, steal_ptr(&rule));
        if (r == BRIDGE_E_MATCH_QUOTA) {
                (void) snprintf(limit, sizeof(limit), "%" PRIu32,
                                driver->bus->limits.max_match_rules_per_connection);
                return driver_error(driver, caller, call, COMPAT_DOMAIN_BRIDGE, r,
                                    caller->unique_name, limit, NULL);
        }
        if (r)
                return error_fold(r);
        return driver_reply_empty(driver, caller, call);
}

static int driver_method_remove_match(Driver *driver, BridgeConn *caller, BridgeMsg *call,
                                      WireReader *args) {
        char buf[MATCH_RULE_MAX_LEN + 1];
        BridgeMatchKeys keys;
        bool answered;
        int r;

        r = driver_parse_match(driver, caller, call, args, buf, sizeof(buf), &keys, &answered);
        if (r || answered)
                return r;

        r = bridge_conn_remove_match(caller, &keys);
        if (r == BRIDGE_E_MATCH_NOT_FOUND)
                return driver_error(driver, caller, call, COMPAT_DOMAIN_BRIDGE, r, NULL, NULL,
                                    NULL);
        if (r)
                return error_fold(r);
        return driver_reply_empty(driver, caller, call);
}

static int driver_method_get_id(Driver *driver, BridgeConn *caller, BridgeMsg *call,
                                WireReader *args) {
        char hex[2 * sizeof(driver->bus->id) + 1];

        hex_encode(driver->bus->id, sizeof(driver->bus->id), hex);
        return driver_reply_basic(driver, caller, call, 's', hex);
}

/* No configuration file is loaded yet, so reloading it is a successful no-op. */
/**
 * driver_set_reload() - what ReloadConfig runs
 * @driver:     the driver
 * @fn:         reloads the configuration; NULL: ReloadConfig just succeeds
 * @userdata:   passed to @fn
 */
void driver_set_reload(Driver *driver, DriverReloadFn fn, void *userdata) {
        driver->reload = fn;
        driver->reload_userdata = userdata;
}

/**
 * driver_reload() - run what ReloadConfig runs
 * @driver:             the driver
 * @ret_not_found:      set when the refusal is a missing file
 * @msg:                the reason of a refusal ("file:line: why")
 * @n_msg:              its size
 *
 * The front end calls this on SIGHUP, so that a signal reloads exactly what ReloadConfig
 * reloads (the configuration, and with activation the service directories), as
 * dbus-daemon 1.14.10 does.
 *
 * Return: 0 (reloaded, or nothing to reload), 1 (refused), or a negative errno.
 */
int driver_reload(Driver *driver, bool *ret_not_found, char *msg, size_t n_msg) {
        if (!driver->reload)
                return 0;
        return driver->reload(driver->reload_userdata, ret_not_found, msg, n_msg);
}

/* As dbus-daemon: a refused configuration is ...Error.Failed (FileNotFound for a missing
 * file) with the reason; the running configuration stays either way. */
static int driver_method_reload_config(Driver *driver, BridgeConn *caller, BridgeMsg *call,
                                       WireReader *args) {
        bool not_found = false;
        char msg[1024] = "";
        int r;

        r = driver_reload(driver, &not_found, msg, sizeof(msg));
        if (r < 0)
                snprintf(msg, sizeof(msg), "%s", strerror(-r));
        if (r)
                return driver_error(driver, caller, call, COMPAT_DOMAIN_COMPAT,
                                    not_found ? COMPAT_E_RELOAD_NOT_FOUND :
                                                COMPAT_E_RELOAD_FAILED, msg, NULL, NULL);
        return driver_reply_empty(driver, caller, call);
}

static int driver_method_ping(Driver *driver, BridgeConn *caller, BridgeMsg *call,
                              WireReader *args) {
        return driver_reply_empty(driver, caller, call);
}

static int driver_method_get_machine_id(Driver *driver, BridgeConn *caller, BridgeMsg *call,
                                        WireReader *args) {
        if (!driver->machine_id[0])
                return driver_error(driver, caller, call, COMPAT_DOMAIN_COMPAT,
                                    COMPAT_E_NO_MACHINE_ID, NULL, NULL, NULL);
        return driver_reply_basic(driver, caller, call, 's', driver->machine_id);
}

/* ---- dispatch ---- */

static const DriverMethod driver_methods_dbus[] = {
        { "Hello", "", driver_method_hello },
        { "RequestName", "su", driver_method_request_name },
        { "ReleaseName", "s", driver_method_release_name },
        { "StartServiceByName", "su", driver_method_start_service_by_name },
        { "UpdateActivationEnvironment", "a{ss}", driver_method_update_activation_environment,
          true },
        { "NameHasOwner", "s", driver_method_name_has_owner },
        { "ListNames", "", driver_method_list_names },
        { "ListActivatableNames", "", driver_method_list_activatable_names },
        { "AddMatch", "s", driver_method_add_match },
        { "RemoveMatch", "s", driver_method_remove_match },
        { "GetNameOwner", "s", driver_method_get_name_owner },
        { "ListQueuedOwners", "s", driver_method_list_queued_owners },
        { "GetConnectionUnixUser", "s", driver_method_get_unix_user },
        { "GetConnectionUnixProcessID", "s", driver_method_get_unix_pid },
        { "GetAdtAuditSessionData", "s", driver_method_get_adt_audit_data },
        { "GetConnectionSELinuxSecurityContext", "s", driver_method_get_selinux_context },
        { "ReloadConfig", "", driver_method_reload_config, .bus_wide = true },
        { "GetId", "", driver_method_get_id },
        { "GetConnectionCredentials", "s", driver_method_get_credentials },
        {}
};

static const DriverMethod driver_methods_monitoring[] = {
        { "BecomeMonitor", "asu", driver_method_become_monitor, true },
        {}
};

static const DriverMethod driver_methods_stats[] = {
        { "GetStats", "", driver_method_get_stats, .bus_wide = true },
        { "GetConnectionStats", "s", driver_method_get_connection_stats, .bus_wide = true },
        { "GetAllMatchRules", "", driver_method_get_all_match_rules, .bus_wide = true },
        {}
};

static const DriverMethod driver_methods_peer[] = {
        { "Ping", "", driver_method_ping },
        { "GetMachineId", "", driver_method_get_machine_id },
        {}
};

static const DriverMethod driver_methods_introspectable[] = {
        { "Introspect", "", driver_method_introspect },
        {}
};

static const DriverMethod driver_methods_properties[] = {
        { "Get", "ss", driver_method_properties_get },
        { "GetAll", "s", driver_method_properties_get_all },
        { "Set", "ssv", driver_method_properties_set },
        {}
};

static const struct {
        const char *name;
        bool driver_path_only;
        const DriverMethod *methods;
} driver_interfaces[] = {
        { WIRE_DRIVER_INTERFACE, false, driver_methods_dbus },
        { "org.freedesktop.DBus.Properties", true, driver_methods_properties },
        { "org.freedesktop.DBus.Introspectable", false, driver_methods_introspectable },
        { "org.freedesktop.DBus.Monitoring", true, driver_methods_monitoring },
        { "org.freedesktop.DBus.Debug.Stats", true, driver_methods_stats },
        { "org.freedesktop.DBus.Peer", false, driver_methods_peer },
};

static const DriverMethod *driver_find_method(const DriverMethod *methods, const char *member) {
        for (; methods->member; ++methods)
                if (strcmp(methods->member, member) == 0)
                        return methods;
        return NULL;
}

static int driver_dispatch_call(Driver *driver, BridgeConn *caller, BridgeMsg *call) {
        const WireHeader *h = &call->hdr;
        bool on_driver_path = streq0(h->path, WIRE_DRIVER_PATH);
        const DriverMethod *method = NULL;
        const char *iface = NULL;
        bool interface_known = false;
        WireReader args;
        int r;
        size_t i;

        for (i = 0; i < ELEMENTSOF(driver_interfaces) && !method; ++i) {
                if (driver_interfaces[i].driver_path_only && !on_driver_path)
                        continue;
                if (h->interface && strcmp(h->interface, driver_interfaces[i].name) != 0)
                        continue;
                interface_known = true;
                method = driver_find_method(driver_interfaces[i].methods, h->member);
                iface = driver_interfaces[i].name;
        }

        if (!method)
                return driver_error(driver, caller, call, COMPAT_DOMAIN_COMPAT,
                                    interface_known || !h->interface ? COMPAT_E_UNKNOWN_METHOD :
                                                                       COMPAT_E_UNKNOWN_INTERFACE,
                                    h->member, NULL, NULL);

        /* a sandbox learns nothing of the bus beyond its endpoint's view: the statistics
         * count peers, names and rules it must not know of (xdg-dbus-proxy answers
         * AccessDenied too) */
        if (method->bus_wide && caller->endpoint) {
                char what[128];

                (void) snprintf(what, sizeof(what), "%s.%s", iface, h->member);
                return driver_error(driver, caller, call, COMPAT_DOMAIN_COMPAT,
                                    COMPAT_E_ENDPOINT_BUS_WIDE, what, caller->unique_name,
                                    caller->endpoint->name);
        }
        if (method->privileged) {
                if (!on_driver_path)
                        return driver_error(driver, caller, call, COMPAT_DOMAIN_COMPAT,
                                            COMPAT_E_NOT_CANONICAL_PATH, h->member, NULL, NULL);
                r = driver_refuse_unprivileged(driver, caller, call, h->member);
                if (r)
                        return r < 0 ? error_trace(r) : 0;
        }

        if (strcmp(h->signature, method->in) != 0)
                return driver_error(driver, caller, call, COMPAT_DOMAIN_COMPAT,
                                    COMPAT_E_WRONG_ARGS, h->member, h->signature, method->in);

        wire_reader_init(&args, call->data, h);
        return method->fn(driver, caller, call, &args);
}

/**
 * driver_refuse_unprivileged() - dbus-daemon's privilege check of a driver method
 * @driver:     the driver
 * @caller:     the calling connection
 * @call:       the call (answered with AccessDenied when refused)
 * @what:       the method named in the text
 *
 * Root and the bus's own user are privileged; nobody is through a custom endpoint (kdbus:
 * a sandbox must not become a monitor or an eavesdropper), nor an ANONYMOUS peer (no uid).
 *
 * Return: 0 (privileged), 1 (refused and answered), or a negative errno.
 */
int driver_refuse_unprivileged(Driver *driver, BridgeConn *caller, BridgeMsg *call,
                               const char *what) {
        char who[256], uid[16];
        int r;

        if (!caller->endpoint && !caller->creds.uid_unknown &&
            (caller->creds.uid == 0 || caller->creds.uid == getuid()))
                return 0;
        if (caller->policy)
                (void) snprintf(who, sizeof(who), "%s (%s)", caller->unique_name,
                                policy_snapshot_get_loginfo(caller->policy));
        else
                (void) snprintf(who, sizeof(who), "%s (uid=%u pid=%u)", caller->unique_name,
                                (unsigned)caller->creds.uid, (unsigned)caller->creds.pid);
        (void) snprintf(uid, sizeof(uid), "%u", (unsigned)caller->creds.uid);
        r = driver_error(driver, caller, call, COMPAT_DOMAIN_COMPAT, COMPAT_E_NOT_PRIVILEGED,
                         what, who, uid);
        return r < 0 ? error_trace(r) : 1;
}

/*
 * A method call without destination. In dbus-daemon it ends up on the daemon's own
 * libdbus connection object for the caller, whose built-in handlers answer it: Peer's Ping
 * and GetMachineId work (any signature), everything else is UnknownMethod. Those answers
 * carry neither SENDER nor DESTINATION, so neither do ours.
 */
static int driver_answer_no_destination(Driver *driver, BridgeConn *caller, BridgeMsg *call) {
        const WireHeader *h = &call->hdr;
        WireMsgSpec spec = {
                .flags = WIRE_FLAG_NO_REPLY_EXPECTED,
                .reply_serial = h->serial,
        };
        char text[DRIVER_ERROR_TEXT_MAX];
        WireWriter w;
        int r, code = 0;

        wire_writer_init(&w);
        if (streq0(h->interface, "org.freedesktop.DBus.Peer") && streq0(h->member, "Ping")) {
                spec.type = WIRE_MSG_METHOD_RETURN;
        } else if (streq0(h->interface, "org.freedesktop.DBus.Peer") &&
                   streq0(h->member, "GetMachineId") && driver->machine_id[0]) {
                spec.type = WIRE_MSG_METHOD_RETURN;
                (void) wire_writer_append_basic(&w, 's', driver->machine_id);
        } else {
                if (streq0(h->interface, "org.freedesktop.DBus.Peer"))
                        code = streq0(h->member, "GetMachineId") ? COMPAT_E_NO_MACHINE_ID :
                                                                   COMPAT_E_PEER_UNKNOWN_METHOD;
                else
                        code = COMPAT_E_NO_DESTINATION;
                spec.type = WIRE_MSG_ERROR;
                spec.error_name = compat_error_format(COMPAT_DOMAIN_COMPAT, code, h->member,
                                                      h->signature, h->interface ?: "(null)",
                                                      text, sizeof(text));
                (void) wire_writer_append_basic(&w, 's', text);
        }
        r = driver_emit_full(driver, caller, &spec, &w, -1, true);
        wire_writer_deinit(&w);
        return r;
}

/* What dbus-daemon says about a message it refuses, in its words' order. */
static void driver_describe(const BridgeConn *sender, const BridgeMsg *msg, char *buf,
                            size_t size) {
        static const char *const types[] = { "invalid", "method_call", "method_return", "error",
                                             "signal" };
        const WireHeader *h = &msg->hdr;
        BridgeConn *dst = h->destination ? bus_find_conn_by_name(sender->bus, h->destination) :
                                           NULL;
        char dst_creds[64] = "";

        if (dst)
                (void) snprintf(dst_creds, sizeof(dst_creds), " (uid=%u pid=%u)",
                                (unsigned)dst->creds.uid, (unsigned)dst->creds.pid);
        (void) snprintf(buf, size,
                        "type=\"%s\", sender=\"%s\" (uid=%u pid=%u) interface=\"%s\" "
                        "member=\"%s\" error name=\"%s\" requested_reply=\"0\" "
                        "destination=\"%s\"%s",
                        h->type < ELEMENTSOF(types) ? types[h->type] : "unknown",
                        sender->unique_name, (unsigned)sender->creds.uid,
                        (unsigned)sender->creds.pid, h->interface ?: "(unset)",
                        h->member ?: "(unset)", h->error_name ?: "(unset)",
                        h->destination ?: "(unset)", dst_creds);
}

/* Not for the driver: hand it to the core and turn its refusal into dbus-daemon's error;
 * a well-known name without owner may be activatable (driver-activation.c). */
int driver_route(Driver *driver, BridgeConn *sender, BridgeMsg *msg) {
        const WireHeader *h = &msg->hdr;
        char limit[16], text[1024];
        int r, code;

        /* a name a custom endpoint hides does not exist for its peers: no activation either */
        if (sender->endpoint && h->destination && h->destination[0] != ':' &&
            !bridge_conn_can_see_name(sender, h->destination)) {
                code = (h->flags & WIRE_FLAG_NO_AUTO_START) ? COMPAT_E_NAME_NOT_EXIST :
                                                              COMPAT_E_SERVICE_UNKNOWN;
                return driver_send_error(driver, sender, h->serial, COMPAT_DOMAIN_COMPAT, code,
                                         h->destination, NULL, NULL);
        }
        /* monitored: a message that starts a service is shown after the ActivationRequest */
        r = driver_activation_route_first(driver, sender, msg);
        if (r)
                return r < 0 ? error_trace(r) : 0;
        r = bridge_conn_send(sender, msg);
        switch (r) {
        case 0:
                return 0;
        case BRIDGE_E_NAME_UNKNOWN:
                /* a name it only sees is not started for it (xdg-dbus-proxy denies the
                 * call before the bus could start anything) */
                if (sender->endpoint && h->destination[0] != ':' &&
                    !bridge_conn_may_send_name(sender, h->destination, msg))
                        return driver_send_error(driver, sender, h->serial,
                                                 COMPAT_DOMAIN_COMPAT, COMPAT_E_ENDPOINT_NO_TALK,
                                                 h->destination, sender->unique_name,
                                                 sender->endpoint->name);
                if (!(h->flags & WIRE_FLAG_NO_AUTO_START)) {
                        r = driver_activation_autostart(driver, sender, msg);
                        if (r)
                                return r < 0 ? error_trace(r) : 0;
                }
                /* fall through */
        case BRIDGE_E_PEER_UNKNOWN:
                code = (h->flags & WIRE_FLAG_NO_AUTO_START) ? COMPAT_E_NAME_NOT_EXIST :
                                                              COMPAT_E_SERVICE_UNKNOWN;
                return driver_send_error(driver, sender, h->serial, COMPAT_DOMAIN_COMPAT, code,
                                         h->destination, NULL, NULL);
        case BRIDGE_E_QUOTA:
        case BRIDGE_E_FDS_QUOTA:
        case BRIDGE_E_POOL_FULL:
                driver_describe(sender, msg, text, sizeof(text));
                return driver_send_error(driver, sender, h->serial, COMPAT_DOMAIN_BRIDGE, r,
                                         text, NULL, NULL);
        case BRIDGE_E_FDS_REFUSED:
                return driver_send_error(driver, sender, h->serial, COMPAT_DOMAIN_BRIDGE, r,
                                         h->destination, NULL, NULL);
        case BRIDGE_E_REPLIES_QUOTA:
                (void) snprintf(limit, sizeof(limit), "%" PRIu32,
                                driver->bus->limits.max_replies_per_connection);
                return driver_send_error(driver, sender, h->serial, COMPAT_DOMAIN_BRIDGE, r,
                                         sender->unique_name, limit, NULL);
        case BRIDGE_E_ACCESS_DENIED:
                return driver_send_error(driver, sender, h->serial, COMPAT_DOMAIN_BRIDGE, r,
                                         bridge_conn_get_denial(sender), NULL, NULL);
        case BRIDGE_E_REPLY_UNEXPECTED:
        case BRIDGE_E_NOT_ACTIVE:
                return 0;
        default:
                return r < 0 ? error_trace(r) : error_fold(r);
        }
}

/*
 * A message of a type outside the specification's four (wire/ lets them in: the
 * specification says to ignore them). dbus-daemon 1.14.10 never delivers one: without
 * destination it vanishes; to a name nobody owns it is answered as a call would be
 * (ServiceUnknown); to the bus or any existing peer its security check answers
 * AccessDenied, NO_REPLY_EXPECTED or not.
 */
static int driver_refuse_unknown_type(Driver *driver, BridgeConn *sender, BridgeMsg *msg) {
        const WireHeader *h = &msg->hdr;
        int code;

        if (!h->destination)
                return 0;
        if (driver_is_driver_name(h->destination) ||
            bus_find_conn_by_name(driver->bus, h->destination))
                code = COMPAT_E_UNKNOWN_TYPE;
        else
                code = (h->flags & WIRE_FLAG_NO_AUTO_START) ? COMPAT_E_NAME_NOT_EXIST :
                                                              COMPAT_E_SERVICE_UNKNOWN;
        return driver_send_error(driver, sender, h->serial, COMPAT_DOMAIN_COMPAT, code,
                                 h->destination, NULL, NULL);
}

/*
 * Before Hello, as dbus-daemon 1.14.10 does it (checked with a raw client): messages to
 * the driver are answered and the connection stays (a Hello method call, with or without
 * interface, on any path, registers; with arguments it is InvalidArgs; a message of unknown
 * type is refused as such; anything else is AccessDenied "Client tried to send a message
 * other than Hello without being registered"); a method call without destination gets the
 * answer it gets after Hello; a message of unknown type without destination is ignored;
 * anything else (to a peer, a broadcast) drops the peer.
 */
static int driver_handle_unregistered(Driver *driver, BridgeConn *sender, BridgeMsg *msg) {
        const WireHeader *h = &msg->hdr;
        bool is_hello;

        if (h->type > WIRE_MSG_SIGNAL && (!h->destination || driver_is_driver_name(h->destination)))
                return driver_refuse_unknown_type(driver, sender, msg);
        if (!driver_is_driver_name(h->destination)) {
                if (!h->destination && h->type == WIRE_MSG_METHOD_CALL)
                        return driver_answer_no_destination(driver, sender, msg);
                return DRIVER_E_DISCONNECT;
        }
        is_hello = h->type == WIRE_MSG_METHOD_CALL && streq0(h->member, "Hello") &&
                   (!h->interface || strcmp(h->interface, WIRE_DRIVER_INTERFACE) == 0);
        if (!is_hello)
                return driver_error(driver, sender, msg, COMPAT_DOMAIN_COMPAT,
                                    COMPAT_E_NOT_REGISTERED, NULL, NULL, NULL);
        if (h->signature[0])
                return driver_error(driver, sender, msg, COMPAT_DOMAIN_COMPAT,
                                    COMPAT_E_WRONG_ARGS, "Hello", h->signature, "");
        return driver_method_hello(driver, sender, msg, NULL);
}

/**
 * driver_handle_message() - a validated, stamped message from @sender enters the bus
 * @driver:     the driver
 * @sender:     the connection it came from
 * @msg:        the message (borrowed; the core takes its own references)
 *
 * Return: 0 (handled: routed, answered, or answered with an error), DRIVER_E_DISCONNECT
 * (before Hello, a message to a peer or a broadcast; or @sender's queue is full of unread
 * driver replies),
 * or a negative errno (fatal).
 */
int driver_handle_message(Driver *driver, BridgeConn *sender, BridgeMsg *msg) {
        const WireHeader *h = &msg->hdr;
        bool to_driver = driver_is_driver_name(h->destination), failure;
        int r;

        if (bridge_conn_is_monitor(sender))
                return DRIVER_E_DISCONNECT;     /* dbus-daemon: monitors may not send */
        if (msg->size > sender->peak_in_bytes)
                sender->peak_in_bytes = msg->size;
        if (msg->n_fds > sender->peak_in_fds)
                sender->peak_in_fds = msg->n_fds;
        if (!bridge_conn_is_active(sender)) {
                r = driver_handle_unregistered(driver, sender, msg);
                if (r == DRIVER_E_DISCONNECT)
                        return r;
        } else if (h->type > WIRE_MSG_SIGNAL) {
                r = driver_refuse_unknown_type(driver, sender, msg);
        } else if (!to_driver) {
                r = driver_route(driver, sender, msg);
                /* eavesdroppers have seen it; now the answer dbus-daemon gives */
                if (r == 0 && !h->destination && h->type == WIRE_MSG_METHOD_CALL)
                        r = driver_answer_no_destination(driver, sender, msg);
        } else {
                /* monitors see what is sent to the bus before its answer (systemd's
                 * ActivationFailure after the errors it causes, as in dbus-daemon) */
                failure = driver_activation_is_failure_signal(msg);
                r = failure ? 0 : bus_monitor_capture(driver->bus, sender, msg, NULL);
                if (r == 0 && h->type == WIRE_MSG_METHOD_CALL) {
                        /* the sender's send rules (system.conf denies some driver methods) */
                        r = bridge_policy_check_driver(sender, msg);
                        if (r == BRIDGE_E_ACCESS_DENIED)
                                r = driver_send_error(driver, sender, h->serial,
                                                      COMPAT_DOMAIN_BRIDGE, r,
                                                      bridge_conn_get_denial(sender), NULL, NULL);
                        else if (r == 0) {
                                driver->error_dst = NULL;
                                r = driver_dispatch_call(driver, sender, msg);
                                /* dbus-daemon offers a call the bus answered without an
                                 * error to eavesdroppers after its answer, the caller's
                                 * own eavesdrop rules included (AddMatch's own call) */
                                if (r == 0 && !(driver->error_dst == sender &&
                                                driver->error_serial == h->serial))
                                        r = bridge_conn_eavesdrop(sender, msg);
                        }
                }
                if (r == 0 && h->type == WIRE_MSG_SIGNAL)
                        r = driver_activation_signal(driver, sender, msg);
                if (r == 0 && failure)
                        r = bus_monitor_capture(driver->bus, sender, msg, NULL);
                /* other signals and replies to the driver: nobody listens */
        }

        if (r == BRIDGE_E_QUOTA)
                return DRIVER_E_DISCONNECT;
        if (r == BRIDGE_E_NOT_ACTIVE)
                return 0;
        if (r > 0)
                return error_fold(r);
        return error_trace(r);
}

static void driver_read_machine_id(Driver *driver) {
        _cleanup_(fd_closep) int fd = -1;
        char buf[64];
        ssize_t n;
        int i;

        driver->machine_id[0] = '\0';
        fd = open("/etc/machine-id", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return;
        n = read(fd, buf, sizeof(buf));
        if (n < 32)
                return;
        for (i = 0; i < 32; ++i)
                if (!((buf[i] >= '0' && buf[i] <= '9') || (buf[i] >= 'a' && buf[i] <= 'f')))
                        return;
        memcpy(driver->machine_id, buf, 32);
        driver->machine_id[32] = '\0';
}

/**
 * driver_new() - create the driver of @bus and install it as its notification handler
 * @bus:        the bus
 * @ret:        the driver
 *
 * Reads /etc/machine-id once, for Peer.GetMachineId. Return: 0 or -ENOMEM.
 */
int driver_new(Bus *bus, Driver **ret) {
        _cleanup_(driver_freep) Driver *driver = NULL;

        driver = calloc(1, sizeof(*driver));
        if (!driver)
                return error_origin(-ENOMEM);
        driver->bus = bus;
        driver_read_machine_id(driver);
        bus_set_notify(bus, &driver_notify_ops, driver);

        *ret = steal_ptr(&driver);
        return 0;
}

/**
 * driver_free() - uninstall and free the driver
 * @driver:     the driver, or NULL
 *
 * Return: NULL.
 */
Driver *driver_free(Driver *driver) {
        if (!driver)
                return NULL;
        if (driver->bus && driver->bus->notify_userdata == driver)
                bus_set_notify(driver->bus, NULL, NULL);
        driver_activation_deinit(driver);
        free(driver);
        return NULL;
}
