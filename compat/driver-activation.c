/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Activation methods and auto-start (see driver-activation.h). Behaviour checked against
 * dbus-daemon 1.14.10 with test .service files:
 *
 *   - StartServiceByName(name, flags): an activatable well-known name (a .service file or
 *     a native activator) with an owner answers 2 (ALREADY_RUNNING); without one it is
 *     started and answered 1 (SUCCESS) when the name gets its owner; anything else (also an
 *     owned name nothing could start, and the bus's own name) is ServiceUnknown "The name X
 *     was not provided by any .service files".
 *   - A message (any type) to a well-known name without owner and without NO_AUTO_START,
 *     when the name is activatable, waits in the core; the service is started once, however
 *     many messages wait. When the name appears they are routed in arrival order as if just
 *     sent (after NameOwnerChanged, before the owner's RequestName reply).
 *   - A failed start answers every waiting message and call with the reason: Spawn.ExecFailed,
 *     Spawn.ChildExited, Spawn.ChildSignaled, TimedOut, ... (the front end picks them).
 *   - Too many starts at once (max_pending_service_starts): LimitsExceeded.
 *   - ListActivatableNames lists org.freedesktop.DBus first, then the names.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bridge/activator.h"
#include "bridge/activation.h"
#include "bridge/bus.h"
#include "bridge/conn.h"
#include "bridge/endpoint.h"
#include "bridge/monitor.h"
#include "bridge/msg.h"
#include "bridge/policy.h"
#include "compat/driver-activation.h"
#include "compat/driver-internal.h"
#include "util/error.h"
#include "wire/names.h"
#include "wire/protocol.h"

#define ERROR_PREFIX "org.freedesktop.DBus.Error."
#define SYSTEMD_NAME "org.freedesktop.systemd1"
#define SYSTEMD_ACTIVATOR "org.freedesktop.systemd1.Activator"

/*
 * Monitors see a message that starts a service after what the bus sends to start it (the
 * ActivationRequest to systemd), as in dbus-daemon; driver_activation_route_first() holds
 * it back until then. Return: 0 or -ENOMEM.
 */
static int activation_flush_capture(Driver *driver) {
        BridgeMsg *m = driver->capture_msg;
        int r;

        if (!m)
                return 0;
        driver->capture_msg = NULL;
        r = bus_monitor_capture(driver->bus, driver->capture_sender, m, NULL);
        return r < 0 ? error_trace(r) : 0;
}

static int activation_build_systemd_request(Driver *driver, const char *unit, BridgeMsg **ret) {
        WireMsgSpec spec = {
                .type = WIRE_MSG_SIGNAL,
                .flags = WIRE_FLAG_NO_REPLY_EXPECTED,
                .path = WIRE_DRIVER_PATH,
                .interface = SYSTEMD_ACTIVATOR,
                .member = "ActivationRequest",
                .destination = SYSTEMD_NAME,
                .sender = WIRE_DRIVER_NAME,
        };
        WireWriter w;
        int r;

        spec.serial = driver_next_serial(driver);
        wire_writer_init(&w);
        (void) wire_writer_append_basic(&w, 's', unit);
        r = driver_msg_build(&spec, &w, ret);
        wire_writer_deinit(&w);
        return r;
}

/*
 * ActivationRequest(@unit) from the bus to systemd's connection. @seen: monitors saw it
 * when it was asked for (systemd was not on the bus yet): they do not see it again now.
 */
static int activation_send_systemd_request(Driver *driver, BridgeConn *systemd,
                                           const char *unit, bool seen) {
        _cleanup_(bridge_msg_unrefp) BridgeMsg *m = NULL;
        int r;

        r = activation_build_systemd_request(driver, unit, &m);
        if (r < 0)
                return error_trace(r);
        r = seen ? bus_monitor_queue_seen(systemd, m) : bridge_conn_queue_msg(systemd, m);
        if (r == BRIDGE_E_QUOTA) {
                driver_kick_conn(systemd);
                r = 0;
        }
        return r < 0 ? error_trace(r) : 0;
}

/**
 * driver_activation_request_systemd() - ask systemd to start @unit
 * @driver:     the driver
 * @unit:       the unit (SystemdService=)
 *
 * Return: 0 or -ENOMEM.
 */
int driver_activation_request_systemd(Driver *driver, const char *unit) {
        BridgeConn *systemd = bus_find_conn_by_name(driver->bus, SYSTEMD_NAME);
        char **v, *copy;

        int r;

        if (systemd) {
                r = activation_send_systemd_request(driver, systemd, unit, false);
                if (r >= 0)
                        r = activation_flush_capture(driver);
                return r < 0 ? error_trace(r) : 0;
        }
        /* systemd is not on the bus yet (early boot): the request waits for it; monitors
         * see it now, as dbus-daemon shows them its request to the name being started */
        if (!list_is_empty(&driver->bus->monitors)) {
                _cleanup_(bridge_msg_unrefp) BridgeMsg *m = NULL;

                r = activation_build_systemd_request(driver, unit, &m);
                if (r >= 0)
                        r = bus_monitor_capture(driver->bus, NULL, m, NULL);
                if (r >= 0)
                        r = activation_flush_capture(driver);
                if (r < 0)
                        return error_trace(r);
        }
        copy = strdup(unit);
        v = copy ? realloc(driver->systemd_units,
                           (driver->n_systemd_units + 1) * sizeof(char *)) : NULL;
        if (!v) {
                free(copy);
                return error_origin(-ENOMEM);
        }
        v[driver->n_systemd_units++] = copy;
        driver->systemd_units = v;
        return 0;
}

/* systemd took its name: send it the requests that waited. */
static int activation_flush_systemd(Driver *driver, BridgeConn *systemd) {
        size_t i;
        int r = 0;

        for (i = 0; i < driver->n_systemd_units; ++i) {
                if (r >= 0)
                        r = activation_send_systemd_request(driver, systemd,
                                                            driver->systemd_units[i], true);
                free(driver->systemd_units[i]);
        }
        free(driver->systemd_units);
        driver->systemd_units = NULL;
        driver->n_systemd_units = 0;
        for (i = 0; i < driver->n_systemd_env; ++i) {
                if (r >= 0) {
                        r = bridge_conn_queue_msg(systemd, driver->systemd_env[i]);
                        if (r == BRIDGE_E_QUOTA)
                                driver_kick_conn(systemd);
                        if (r > 0)
                                r = 0;
                }
                bridge_msg_unref(driver->systemd_env[i]);
        }
        free(driver->systemd_env);
        driver->systemd_env = NULL;
        driver->n_systemd_env = 0;
        return r;
}

/**
 * driver_activation_is_failure_signal() - is @msg systemd's ActivationFailure to the bus?
 * @msg:        a message addressed to the bus
 *
 * Return: true for the signal org.freedesktop.systemd1.Activator.ActivationFailure.
 */
bool driver_activation_is_failure_signal(const BridgeMsg *msg) {
        const WireHeader *h = &msg->hdr;

        return h->type == WIRE_MSG_SIGNAL && h->interface && h->member &&
               strcmp(h->interface, SYSTEMD_ACTIVATOR) == 0 &&
               strcmp(h->member, "ActivationFailure") == 0;
}

/**
 * driver_activation_signal() - a signal sent to the bus
 * @driver:     the driver
 * @sender:     who sent it
 * @msg:        the signal
 *
 * Only org.freedesktop.systemd1.Activator.ActivationFailure(s unit, s error, s message) from
 * the owner of org.freedesktop.systemd1 means anything: the starts of that unit fail with
 * systemd's error (an invalid error name reads as ...Error.Failed). Return: 0 or -errno.
 */
int driver_activation_signal(Driver *driver, BridgeConn *sender, BridgeMsg *msg) {
        const WireHeader *h = &msg->hdr;
        const char *unit, *error_name, *text;
        WireReader args;

        if (!driver->activation_ops || !driver->activation_ops->systemd_failed ||
            !h->interface || strcmp(h->interface, SYSTEMD_ACTIVATOR) != 0 ||
            strcmp(h->member, "ActivationFailure") != 0 || strcmp(h->signature, "sss") != 0 ||
            bus_find_conn_by_name(driver->bus, SYSTEMD_NAME) != sender)
                return 0;
        wire_reader_init(&args, msg->data, h);
        if (wire_reader_read_basic(&args, 's', &unit) ||
            wire_reader_read_basic(&args, 's', &error_name) ||
            wire_reader_read_basic(&args, 's', &text))
                return 0;
        if (!wire_error_name_is_valid(error_name, strlen(error_name)))
                error_name = ERROR_PREFIX "Failed";
        driver->activation_ops->systemd_failed(driver->activation_userdata, unit, error_name,
                                               text);
        return 0;
}

/**
 * driver_activation_deinit() - free the activation state of @driver
 * @driver:     the driver
 */
void driver_activation_deinit(Driver *driver) {
        size_t i;

        driver->activation = bus_activation_free(driver->activation);
        for (i = 0; i < driver->n_systemd_units; ++i)
                free(driver->systemd_units[i]);
        free(driver->systemd_units);
        driver->systemd_units = NULL;
        driver->n_systemd_units = 0;
        for (i = 0; i < driver->n_systemd_env; ++i)
                bridge_msg_unref(driver->systemd_env[i]);
        free(driver->systemd_env);
        driver->systemd_env = NULL;
        driver->n_systemd_env = 0;
}

/**
 * driver_set_activation() - enable activation
 * @driver:     the driver
 * @ops:        the front end's hooks
 * @userdata:   passed to @ops
 *
 * Return: 0 or -ENOMEM.
 */
int driver_set_activation(Driver *driver, const DriverActivationOps *ops, void *userdata) {
        int r;

        if (!driver->activation) {
                r = bus_activation_new(driver->bus, &driver->activation);
                if (r < 0)
                        return error_trace(r);
        }
        driver->activation_ops = ops;
        driver->activation_userdata = userdata;
        return 0;
}

/**
 * driver_activation_set_systemd() - say whether --systemd-activation is on
 * @driver:     the driver
 * @on:         --systemd-activation
 */
void driver_activation_set_systemd(Driver *driver, bool on) {
        driver->systemd_activation = on;
}

/**
 * driver_activation_set_names() - the names .service files provide
 * @driver:             the driver (activation enabled)
 * @names:              the names, in listing order
 * @n_names:            how many
 * @emit_changed:       broadcast ActivatableServicesChanged afterwards
 *
 * Return: 0 or -ENOMEM.
 */
int driver_activation_set_names(Driver *driver, const char *const *names, size_t n_names,
                                bool emit_changed) {
        int r;

        if (!driver->activation)
                return 0;
        r = bus_activation_set_names(driver->activation, names, n_names);
        if (r < 0)
                return error_trace(r);
        if (!emit_changed)
                return 0;
        return error_trace(driver_activation_emit_changed(driver));
}

/**
 * driver_activation_emit_changed() - broadcast ActivatableServicesChanged
 * @driver:     the driver
 *
 * After a reload of the .service files, and when a native activator comes or goes (its
 * name is in ListActivatableNames while it lives).
 *
 * Return: 0 or -ENOMEM.
 */
int driver_activation_emit_changed(Driver *driver) {
        WireMsgSpec spec = {
                .type = WIRE_MSG_SIGNAL,
                .flags = WIRE_FLAG_NO_REPLY_EXPECTED,
                .path = WIRE_DRIVER_PATH,
                .interface = WIRE_DRIVER_INTERFACE,
                .member = "ActivatableServicesChanged",
        };

        return error_trace(driver_emit_signal(driver, &spec, NULL));
}

/* Answer (or drop) one waiting entry with an error. */
static int activation_answer_error(Driver *driver, BusActivationEntry *e, const char *error_name,
                                   const char *text) {
        int r;

        if (!bridge_conn_is_active(e->sender))
                return 0;
        r = driver_send_error_text(driver, e->sender, e->msg->hdr.serial, error_name, text);
        if (r == BRIDGE_E_QUOTA) {
                driver_kick_conn(e->sender);
                return 0;
        }
        return r < 0 ? error_trace(r) : 0;
}

/**
 * driver_activation_failed() - answer everything waiting for @name with an error
 * @driver:     the driver
 * @name:       the name whose start failed
 * @error_name: the error to answer with
 * @text:       why
 *
 * Return: 0 or -ENOMEM.
 */
int driver_activation_failed(Driver *driver, const char *name, const char *error_name,
                             const char *text) {
        BusActivationEntry *e;
        int r;

        if (!driver->activation)
                return 0;
        r = activation_flush_capture(driver);   /* a start that failed at once */
        bus_activation_end(driver->activation, name);
        while ((e = bus_activation_pop(driver->activation, name))) {
                if (r >= 0)
                        r = activation_answer_error(driver, e, error_name, text);
                bus_activation_entry_free(e);
        }
        return error_trace(r);
}

/**
 * driver_activation_name_owned() - @name got the owner @owner: hand on what waited for it
 * @driver:     the driver
 * @name:       the name
 * @owner:      its new primary owner
 *
 * Return: 0 or a negative errno.
 */
int driver_activation_name_owned(Driver *driver, const char *name, BridgeConn *owner) {
        BusActivationEntry *e;
        uint32_t success = 1;     /* DBUS_START_REPLY_SUCCESS */
        int r = 0;

        if ((driver->n_systemd_units || driver->n_systemd_env) &&
            strcmp(name, SYSTEMD_NAME) == 0) {
                r = activation_flush_systemd(driver, owner);
                if (r < 0)
                        return error_trace(r);
        }
        if (!driver->activation || !bus_activation_end(driver->activation, name))
                return 0;
        if (driver->activation_ops && driver->activation_ops->started)
                driver->activation_ops->started(driver->activation_userdata, name);
        while ((e = bus_activation_pop(driver->activation, name))) {
                if (r >= 0 && bridge_conn_is_active(e->sender)) {
                        if (e->start_request) {
                                r = driver_reply_basic(driver, e->sender, e->msg, 'u', &success);
                                if (r == BRIDGE_E_QUOTA)
                                        driver_kick_conn(e->sender);
                        } else {
                                r = driver_route(driver, e->sender, e->msg);
                        }
                        if (r > 0)
                                r = 0;
                }
                bus_activation_entry_free(e);
        }
        return error_trace(r);
}

/**
 * driver_activation_conn_removed() - @conn left: forget what it waits with
 * @driver:     the driver
 * @conn:       the connection
 */
void driver_activation_conn_removed(Driver *driver, BridgeConn *conn) {
        if (driver->activation)
                bus_activation_conn_removed(driver->activation, conn);
}

/* Queue @msg of @sender for @name and start the service if nobody is starting it yet.
 * Return: 0 (queued, or answered with an error), or a negative errno. */
static int activation_request(Driver *driver, const char *name, BridgeConn *sender,
                              BridgeMsg *msg, bool start_request) {
        char error_name[256], text[1024];
        bool start = false;
        int r;

        r = bus_activation_queue(driver->activation, name, sender, msg, start_request, &start);
        if (r == BUS_ACTIVATION_E_LIMIT) {
                (void) snprintf(text, sizeof(text), "The maximum number of pending activations "
                                "has been reached, activation of %s failed "
                                "(max_pending_service_starts=%u)", name,
                                (unsigned)driver->bus->limits.max_pending_service_starts);
                return activation_flush_capture(driver) ?:
                       driver_send_error_text(driver, sender, msg->hdr.serial,
                                              ERROR_PREFIX "LimitsExceeded", text);
        }
        if (r)
                return r < 0 ? error_trace(r) : error_fold(r);
        /* monitors saw it when it was sent: delivering it later shows them nothing more,
         * as in dbus-daemon */
        msg->monitored = true;
        if (!start)
                return 0;
        if (!driver->activation_ops || !driver->activation_ops->start) {
                (void) snprintf(error_name, sizeof(error_name), ERROR_PREFIX "Spawn.Failed");
                (void) snprintf(text, sizeof(text), "Cannot start %s: this bus starts no "
                                "services", name);
                r = 1;
        } else {
                error_name[0] = text[0] = '\0';
                r = driver->activation_ops->start(driver->activation_userdata, name, error_name,
                                                  sizeof(error_name), text, sizeof(text));
        }
        if (r < 0)
                return error_trace(r);
        if (r > 0)
                return error_trace(driver_activation_failed(driver, name, error_name, text));
        return 0;
}

/*
 * Before a name is started or found not activatable, the front end makes the names current
 * (DriverActivationOps.refresh), as dbus-daemon looks at the files then; not while the name
 * is being started, when nothing is looked up. Return: 0, 1 (the names were set again), or
 * -ENOMEM.
 */
static int activation_refresh(Driver *driver, const char *name) {
        if (!driver->activation || !driver->activation_ops || !driver->activation_ops->refresh ||
            bus_activation_is_starting(driver->activation, name))
                return 0;
        return driver->activation_ops->refresh(driver->activation_userdata, name);
}

/**
 * driver_activation_autostart() - a message to @msg's destination, which has no owner
 * @driver:     the driver
 * @sender:     who sent it
 * @msg:        the message (NO_AUTO_START not set)
 *
 * Return: 1 (queued for activation, or answered), 0 (the name is not activatable: the
 * caller answers ServiceUnknown), or a negative errno.
 */
int driver_activation_autostart(Driver *driver, BridgeConn *sender, BridgeMsg *msg) {
        const char *name = msg->hdr.destination;
        int r;

        if (!driver->activation || !name || name[0] == ':')
                return 0;
        r = activation_refresh(driver, name);
        if (r < 0)
                return error_trace(r);
        if (!bus_activation_is_activatable(driver->activation, name) &&
            !bus_activation_is_starting(driver->activation, name))
                return 0;
        /* as dbus-daemon: the sender's send rules are checked before anything starts (the
         * receiver's rules are checked when the message is delivered) */
        r = bridge_policy_check_driver(sender, msg);
        if (r == BRIDGE_E_ACCESS_DENIED)
                r = activation_flush_capture(driver) ?: driver_send_error_text(driver, sender, msg->hdr.serial,
                                           ERROR_PREFIX "AccessDenied",
                                           bridge_conn_get_denial(sender));
        else if (r == 0)
                r = activation_request(driver, name, sender, msg, false);
        if (r == BRIDGE_E_QUOTA) {
                driver_kick_conn(sender);
                r = 0;
        }
        return r < 0 ? error_trace(r) : 1;
}

/**
 * driver_activation_route_first() - a message that will start a service, while monitored
 * @driver:     the driver
 * @sender:     who sent it
 * @msg:        the message, not yet routed
 *
 * dbus-daemon shows monitors the ActivationRequest it sends systemd before the message
 * that caused it; routing (bridge_conn_send()) would show them the message first. So a
 * message to an activatable name nobody owns (auto-start allowed) skips routing, which
 * could only answer "no owner", and goes to driver_activation_autostart() directly; the
 * monitors get it once the start is under way. Without monitors nothing differs.
 *
 * Return: 1 (handled), 0 (route it as usual), or a negative errno.
 */
int driver_activation_route_first(Driver *driver, BridgeConn *sender, BridgeMsg *msg) {
        const char *name = msg->hdr.destination;
        int r, k;

        if (list_is_empty(&driver->bus->monitors) || !driver->activation || !name ||
            name[0] == ':' || (msg->hdr.flags & WIRE_FLAG_NO_AUTO_START) ||
            !bridge_conn_is_active(sender) || bridge_conn_is_monitor(sender) ||
            bus_find_conn_by_name(driver->bus, name) || bus_find_activator(driver->bus, name) ||
            (!bus_activation_is_activatable(driver->activation, name) &&
             !bus_activation_is_starting(driver->activation, name)))
                return 0;
        driver->capture_msg = msg;
        driver->capture_sender = sender;
        r = driver_activation_autostart(driver, sender, msg);
        k = activation_flush_capture(driver);
        if (r >= 0 && k < 0)
                r = k;
        return r < 0 ? error_trace(r) : 1;
}

/**
 * driver_method_start_service_by_name() - StartServiceByName(s name, u flags) -> u
 * @driver:     the driver
 * @caller:     the calling connection
 * @call:       the call (its signature already checked)
 * @args:       a reader at the call's first argument
 *
 * 2 (ALREADY_RUNNING) for an owned activatable name, 1 (SUCCESS) once an activatable one
 * appears, else ServiceUnknown. Return: 0, a negative errno, or BRIDGE_E_QUOTA.
 */
int driver_method_start_service_by_name(Driver *driver, BridgeConn *caller, BridgeMsg *call,
                                        WireReader *args) {
        uint32_t flags, running = 2;    /* DBUS_START_REPLY_ALREADY_RUNNING */
        BridgeConn *activator;
        const char *name;
        int r;

        r = wire_reader_read_basic(args, 's', &name);
        if (!r)
                r = wire_reader_read_basic(args, 'u', &flags);
        if (r)
                return error_fold(r);

        /* dbus-daemon looks only at well-known names other than its own */
        /* a name a custom endpoint hides neither exists nor gets activated (kdbus) */
        if (!bridge_conn_can_see_name(caller, name))
                return driver_error(driver, caller, call, COMPAT_DOMAIN_COMPAT,
                                    COMPAT_E_SERVICE_UNKNOWN, name, NULL, NULL);
        /* seeing a name is not enough to start it: xdg-dbus-proxy 0.1.4 asks TALK for
         * StartServiceByName's arg0 (AccessDenied, running or not) */
        if (name[0] != ':' && !driver_is_driver_name(name) &&
            !bridge_conn_may_send_name(caller, name, NULL))
                return driver_error(driver, caller, call, COMPAT_DOMAIN_COMPAT,
                                    COMPAT_E_ENDPOINT_NO_TALK, name, caller->unique_name,
                                    caller->endpoint->name);
        /* as dbus-daemon: only a name something can start (a .service file or a native
         * activator) is answered at all; an owned name without one is ServiceUnknown too */
        activator = bus_find_activator(driver->bus, name);
        if (name[0] != ':' && !driver_is_driver_name(name) && !activator) {
                r = activation_refresh(driver, name);
                if (r < 0)
                        return error_trace(r);
        }
        if (name[0] == ':' || driver_is_driver_name(name) ||
            (!activator && !(driver->activation &&
                             (bus_activation_is_activatable(driver->activation, name) ||
                              bus_activation_is_starting(driver->activation, name)))))
                return driver_error(driver, caller, call, COMPAT_DOMAIN_COMPAT,
                                    COMPAT_E_SERVICE_UNKNOWN, name, NULL, NULL);
        if (driver_lookup(driver, name))
                return driver_reply_basic(driver, caller, call, 'u', &running);
        /* a native activator holds it: wake it as sd-bus's proxy did on kdbus (a Ping to the
         * name, which its activator queues) and answer 1 (SUCCESS) at once; callers'
         * messages wait at the activator until the service owns the name anyway */
        if (activator) {
                WireMsgSpec spec = {
                        .type = WIRE_MSG_METHOD_CALL, .flags = WIRE_FLAG_NO_REPLY_EXPECTED,
                        .path = "/", .interface = "org.freedesktop.DBus.Peer",
                        .member = "Ping", .destination = name,
                };
                uint32_t success = 1;   /* DBUS_START_REPLY_SUCCESS */

                r = driver_emit_to(driver, activator, &spec, NULL);
                if (r == BRIDGE_E_QUOTA)
                        driver_kick_conn(activator);
                else if (r < 0)
                        return error_trace(r);
                return driver_reply_basic(driver, caller, call, 'u', &success);
        }
        return activation_request(driver, name, caller, call, true);
}

/**
 * driver_method_list_activatable_names() - ListActivatableNames() -> as
 * @driver:     the driver
 * @caller:     the calling connection
 * @call:       the call
 * @args:       a reader at the call's first argument (none)
 *
 * Return: 0, a negative errno, or BRIDGE_E_QUOTA.
 */
int driver_method_list_activatable_names(Driver *driver, BridgeConn *caller, BridgeMsg *call,
                                         WireReader *args) {
        BusActivationName *n;
        WireWriter w;
        List *pos;
        int r;

        wire_writer_init(&w);
        (void) wire_writer_open(&w, 'a', "s");
        (void) wire_writer_append_basic(&w, 's', WIRE_DRIVER_NAME);
        if (driver->activation)
                bus_activation_for_each(n, driver->activation)
                        if (n->listed && bridge_conn_can_see_name(caller, n->name))
                                (void) wire_writer_append_basic(&w, 's', n->name);
        /* native activators' names too (once: a .service file may provide one as well) */
        list_for_each(pos, &driver->bus->activators) {
                BridgeActivator *a = container_of(pos, BridgeActivator, link);

                if ((!driver->activation ||
                     !bus_activation_is_activatable(driver->activation, a->name)) &&
                    bridge_conn_can_see_name(caller, a->name))
                        (void) wire_writer_append_basic(&w, 's', a->name);
        }
        (void) wire_writer_close(&w);
        r = driver_reply(driver, caller, call, &w);
        wire_writer_deinit(&w);
        return r;
}

/* Keep a SetEnvironment call for systemd until it appears. Return: 0 or -ENOMEM. */
static int activation_hold_environment(Driver *driver, WireMsgSpec *spec, WireWriter *w) {
        BridgeMsg *m = NULL, **v;
        int r;

        spec->serial = driver_next_serial(driver);
        spec->sender = WIRE_DRIVER_NAME;
        r = driver_msg_build(spec, w, &m);
        if (r < 0)
                return r;
        v = realloc(driver->systemd_env, (driver->n_systemd_env + 1) * sizeof(*v));
        if (!v) {
                bridge_msg_unref(m);
                return error_origin(-ENOMEM);
        }
        v[driver->n_systemd_env++] = m;
        driver->systemd_env = v;
        return 0;
}

/*
 * --systemd-activation: systemd starts the services, so dbus-daemon 1.14.10 passes the new
 * variables on to it, as the method call org.freedesktop.systemd1.Manager.SetEnvironment
 * (as "KEY=VALUE") to the owner's unique name, without expecting a reply; nothing while
 * systemd is not on the bus. Return: 0 or -ENOMEM.
 */
static int activation_forward_environment(Driver *driver, const char *const *pairs) {
        BridgeConn *systemd;
        WireMsgSpec spec = {
                .type = WIRE_MSG_METHOD_CALL,
                .flags = WIRE_FLAG_NO_REPLY_EXPECTED,
                .path = "/org/freedesktop/systemd1",
                .interface = "org.freedesktop.systemd1.Manager",
                .member = "SetEnvironment",
        };
        WireWriter w;
        int r = 0;

        if (!driver->systemd_activation)
                return 0;
        /* systemd not on the bus yet: the call waits for it, addressed to its well-known
         * name (as dbus-daemon's auto-started message does) */
        systemd = bus_find_conn_by_name(driver->bus, SYSTEMD_NAME);
        spec.destination = systemd ? systemd->unique_name : SYSTEMD_NAME;
        wire_writer_init(&w);
        (void) wire_writer_open(&w, 'a', "s");
        for (; pairs[0] && pairs[1] && r >= 0; pairs += 2) {
                char *kv;

                if (asprintf(&kv, "%s=%s", pairs[0], pairs[1]) < 0) {
                        r = error_origin(-ENOMEM);
                        break;
                }
                (void) wire_writer_append_basic(&w, 's', kv);
                free(kv);
        }
        (void) wire_writer_close(&w);
        if (r >= 0 && systemd)
                r = driver_emit_to(driver, systemd, &spec, &w);
        else if (r >= 0)
                r = activation_hold_environment(driver, &spec, &w);
        wire_writer_deinit(&w);
        if (r == BRIDGE_E_QUOTA) {
                driver_kick_conn(systemd);
                r = 0;
        }
        return r < 0 ? error_trace(r) : 0;
}

/**
 * driver_method_update_activation_environment() - UpdateActivationEnvironment(a{ss})
 * @driver:     the driver
 * @caller:     the calling connection (privileged: checked by the dispatcher)
 * @call:       the call
 * @args:       a reader at the call's first argument
 *
 * Return: 0, a negative errno, or BRIDGE_E_QUOTA.
 */
int driver_method_update_activation_environment(Driver *driver, BridgeConn *caller,
                                                BridgeMsg *call, WireReader *args) {
        _cleanup_(freep) const char **pairs = NULL;
        size_t n = 0, cap = 16;
        int r;

        pairs = calloc(cap + 1, sizeof(*pairs));
        if (!pairs)
                return error_origin(-ENOMEM);
        r = wire_reader_enter(args, 'a', "{ss}");
        while (!r && wire_reader_peek(args)) {
                const char *k, *v;

                r = wire_reader_enter(args, '{', "ss");
                if (!r)
                        r = wire_reader_read_basic(args, 's', &k);
                if (!r)
                        r = wire_reader_read_basic(args, 's', &v);
                if (!r)
                        r = wire_reader_exit(args);
                if (r)
                        break;
                if (n + 2 > cap) {
                        const char **p = realloc(pairs, (cap * 2 + 1) * sizeof(*pairs));

                        if (!p)
                                return error_origin(-ENOMEM);
                        pairs = p;
                        cap *= 2;
                }
                pairs[n++] = k;
                pairs[n++] = v;
                pairs[n] = NULL;
        }
        if (r)
                return error_fold(r);

        if (driver->activation_ops && driver->activation_ops->update_environment) {
                r = driver->activation_ops->update_environment(driver->activation_userdata,
                                                               pairs);
                if (r < 0)
                        return error_trace(r);
                if (r > 0)
                        return driver_send_error_text(driver, caller, call->hdr.serial,
                                                      ERROR_PREFIX "AccessDenied",
                                                      "Cannot change activation environment "
                                                      "on a system bus.");
        }
        r = activation_forward_environment(driver, pairs);
        if (r < 0)
                return error_trace(r);
        return driver_reply_empty(driver, caller, call);
}
