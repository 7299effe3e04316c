/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * What the driver's files share (driver.c: dispatch, routing, notifications, replies;
 * driver-names.c: the name and credential methods; driver-introspect.c: Introspectable
 * and Properties). Not a contract: nothing outside compat/ includes it.
 *
 * A method handler answers its call itself (driver_reply() or driver_error()) and returns 0, or
 * returns a negative errno (fatal), or BRIDGE_E_QUOTA when the caller's own queue is full
 * (the caller is then dropped, as it does not read its replies).
 */
#include <stdbool.h>
#include <stdint.h>
#include "compat/driver.h"
#include "compat/errors.h"
#include "wire/reader.h"
#include "wire/writer.h"

struct Driver {
        Bus *bus;
        uint32_t serial;                /* the last serial the bus used; never 0 on the wire */
        char machine_id[33];            /* from /etc/machine-id; "" if unreadable */
        DriverReloadFn reload;          /* ReloadConfig; NULL: nothing to reload */
        void *reload_userdata;
        uint32_t stats_serial;          /* GetConnectionStats answered (Debug.Stats "Serial") */
        uint32_t stats_serial_bus;      /* GetStats answered */
        bool in_hello;                  /* driver_method_hello() reports NameOwnerChanged */
        struct BusActivation *activation;       /* NULL: activation not enabled */
        const struct DriverActivationOps *activation_ops;
        void *activation_userdata;
        char **systemd_units;           /* ActivationRequests waiting for systemd to appear */
        size_t n_systemd_units;
        BridgeMsg **systemd_env;        /* SetEnvironment calls waiting for systemd too */
        size_t n_systemd_env;
        bool systemd_activation;        /* --systemd-activation: Features lists it */
        BridgeMsg *capture_msg;         /* a message that starts a service: monitors see it */
        BridgeConn *capture_sender;     /* after the ActivationRequest (driver-activation.c) */
        uint32_t error_serial;          /* the serial the last error from the bus answered:
                                         * a call answered with an error is not shown to
                                         * eavesdroppers (dbus-daemon) */
        BridgeConn *error_dst;          /* ... and to whom (compared only, not referenced) */
};

/* AccessDenied "rejected attempt to call @what by connection :1.N (uid=U pid=P comm="...")
 * with uid U" unless @caller is root or the bus's own user (never through a custom
 * endpoint), as dbus-daemon's privilege check. Return: 0 (privileged), 1 (answered), or a
 * negative errno. */
int driver_refuse_unprivileged(Driver *driver, BridgeConn *caller, BridgeMsg *call,
                               const char *what);

typedef int (*DriverMethodFn)(Driver *driver, BridgeConn *caller, BridgeMsg *call,
                              WireReader *args);

typedef struct DriverMethod {
        const char *member;
        const char *in;                 /* the exact body signature it takes */
        DriverMethodFn fn;
        bool privileged;                /* only on the driver's path, only for the bus's uid
                                         * or root (checked before the signature) */
        bool bus_wide;                  /* tells about (or acts on) the whole bus: never
                                         * through a custom endpoint, whose peers see only
                                         * what its policy shows (checked first) */
} DriverMethod;

/* Replies and errors to @caller for @call; 0, -errno, BRIDGE_E_QUOTA. */
int driver_reply(Driver *driver, BridgeConn *caller, BridgeMsg *call, WireWriter *body);
int driver_reply_fd(Driver *driver, BridgeConn *caller, BridgeMsg *call, WireWriter *body,
                    int fd);
int driver_reply_empty(Driver *driver, BridgeConn *caller, BridgeMsg *call);
int driver_reply_basic(Driver *driver, BridgeConn *caller, BridgeMsg *call, char type,
                       const void *value);
int driver_error(Driver *driver, BridgeConn *caller, BridgeMsg *call, CompatErrorDomain domain,
                 int code, const char *a, const char *b, const char *c);

/* A unicast message of the bus to @dst; a full queue: BRIDGE_E_QUOTA. */
int driver_emit_to(Driver *driver, BridgeConn *dst, WireMsgSpec *spec, const WireWriter *body);
/* A broadcast signal of the bus. Return: 0 or -ENOMEM. */
int driver_emit_signal(Driver *driver, WireMsgSpec *spec, const WireWriter *body);
/* The transport drops @conn (it does not read what the bus sends). */
void driver_kick_conn(BridgeConn *conn);
/* Route a message not for the driver, answering the core's refusal (driver.c). */
int driver_route(Driver *driver, BridgeConn *sender, BridgeMsg *msg);

/* The active connection @name (unique or well-known) resolves to; NULL for invalid names. */
BridgeConn *driver_lookup(Driver *driver, const char *name);
/* The same, as @caller may see it (a custom endpoint's SEE policy). */
BridgeConn *driver_lookup_for(Driver *driver, const BridgeConn *caller, const char *name);
bool driver_is_driver_name(const char *name);

/* driver-emit.c: what the driver sends (the functions above are there too) */
#define DRIVER_ERROR_TEXT_MAX 1536      /* fits a 1024-byte rule quoted in a message */
uint32_t driver_next_serial(Driver *driver);
int driver_msg_build(const WireMsgSpec *spec, const WireWriter *body, BridgeMsg **ret);
/* The bus's message to @dst (NULL: a broadcast), with @fd (owned) and without the bus as
 * sender when @anonymous. Return: 0, -errno, BRIDGE_E_QUOTA. */
int driver_emit_full(Driver *driver, BridgeConn *dst, WireMsgSpec *spec,
                     const WireWriter *body, int fd, bool anonymous);
/* An org.freedesktop.DBus signal of up to three string arguments to @dst (NULL: broadcast). */
int driver_signal(Driver *driver, BridgeConn *dst, const char *member, const char *s1,
                  const char *s2, const char *s3);
int driver_send_error(Driver *driver, BridgeConn *dst, uint32_t reply_serial,
                      CompatErrorDomain domain, int code, const char *a, const char *b,
                      const char *c);
void driver_kick(BridgeConn *conn);
int driver_name_owner_changed(Driver *driver, const char *name, const char *old_owner,
                              const char *new_owner);

/* driver-names.c */
int driver_method_request_name(Driver *driver, BridgeConn *caller, BridgeMsg *call,
                               WireReader *args);
int driver_method_release_name(Driver *driver, BridgeConn *caller, BridgeMsg *call,
                               WireReader *args);
int driver_method_list_queued_owners(Driver *driver, BridgeConn *caller, BridgeMsg *call,
                                     WireReader *args);
int driver_method_list_names(Driver *driver, BridgeConn *caller, BridgeMsg *call,
                             WireReader *args);
int driver_method_name_has_owner(Driver *driver, BridgeConn *caller, BridgeMsg *call,
                                 WireReader *args);
int driver_method_get_name_owner(Driver *driver, BridgeConn *caller, BridgeMsg *call,
                                 WireReader *args);
int driver_method_get_unix_user(Driver *driver, BridgeConn *caller, BridgeMsg *call,
                                WireReader *args);
int driver_method_get_unix_pid(Driver *driver, BridgeConn *caller, BridgeMsg *call,
                               WireReader *args);
int driver_method_get_credentials(Driver *driver, BridgeConn *caller, BridgeMsg *call,
                                  WireReader *args);
int driver_method_get_selinux_context(Driver *driver, BridgeConn *caller, BridgeMsg *call,
                                      WireReader *args);
int driver_method_get_adt_audit_data(Driver *driver, BridgeConn *caller, BridgeMsg *call,
                                     WireReader *args);

/* driver-activation.c */
int driver_method_start_service_by_name(Driver *driver, BridgeConn *caller, BridgeMsg *call,
                                        WireReader *args);
int driver_method_list_activatable_names(Driver *driver, BridgeConn *caller, BridgeMsg *call,
                                         WireReader *args);
int driver_method_update_activation_environment(Driver *driver, BridgeConn *caller,
                                                BridgeMsg *call, WireReader *args);
int driver_activation_autostart(Driver *driver, BridgeConn *sender, BridgeMsg *msg);
/* Before routing, while a monitor is on: a message that will start a service. Return: 0
 * (not such a message: route it), 1 (handled), or a negative errno. */
int driver_activation_route_first(Driver *driver, BridgeConn *sender, BridgeMsg *msg);
/* org.freedesktop.systemd1.Activator.ActivationFailure to the bus: dbus-daemon 1.14.10 shows
 * it to monitors after the errors it causes (test-monitor /monitor/activation). */
bool driver_activation_is_failure_signal(const BridgeMsg *msg);
int driver_activation_name_owned(Driver *driver, const char *name, BridgeConn *owner);
void driver_activation_conn_removed(Driver *driver, BridgeConn *conn);
/* Broadcast ActivatableServicesChanged (a reload, a native activator came or went).
 * Return: 0 or -ENOMEM. */
int driver_activation_emit_changed(Driver *driver);
/* A signal sent to the bus: systemd's ActivationFailure is handled, the rest ignored. */
int driver_activation_signal(Driver *driver, BridgeConn *sender, BridgeMsg *msg);
void driver_activation_deinit(Driver *driver);

/* driver-introspect.c */
/* The introspection XML for @path (to free()). Return: 0 or -ENOMEM. */
int driver_introspect_xml(const char *path, char **ret_xml);
int driver_method_introspect(Driver *driver, BridgeConn *caller, BridgeMsg *call,
                             WireReader *args);
int driver_method_properties_get(Driver *driver, BridgeConn *caller, BridgeMsg *call,
                                 WireReader *args);
int driver_method_properties_get_all(Driver *driver, BridgeConn *caller, BridgeMsg *call,
                                     WireReader *args);
int driver_method_properties_set(Driver *driver, BridgeConn *caller, BridgeMsg *call,
                                 WireReader *args);

/* driver-monitor.c */
int driver_method_become_monitor(Driver *driver, BridgeConn *caller, BridgeMsg *call,
                                 WireReader *args);

/* driver-stats.c */
int driver_method_get_stats(Driver *driver, BridgeConn *caller, BridgeMsg *call,
                            WireReader *args);
int driver_method_get_connection_stats(Driver *driver, BridgeConn *caller, BridgeMsg *call,
                                       WireReader *args);
int driver_method_get_all_match_rules(Driver *driver, BridgeConn *caller, BridgeMsg *call,
                                      WireReader *args);
