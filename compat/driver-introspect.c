/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * org.freedesktop.DBus.Introspectable and .Properties of the driver.
 *
 * The introspection data describes exactly what driver.c dispatches (keep the two in step:
 * tests/unit/compat/test-driver checks that every method listed here answers). The
 * properties are those of the specification: Features (optional bus features we
 * implement; none of the specification's list yet: no systemd activation, no header
 * filtering guarantee) and Interfaces (extra interfaces on /org/freedesktop/DBus beyond
 * the required ones; Monitoring and Debug.Stats are not there yet). Both are read-only.
 */
#include <stdio.h>
#include <string.h>
#include "bridge/conn.h"
#include "bridge/msg.h"
#include "compat/driver-internal.h"
#include "util/error.h"
#include "wire/protocol.h"

static const char *const driver_features[] = { NULL };
static const char *const driver_extra_interfaces[] = { NULL };

const char driver_introspection_xml[] =
        "<!DOCTYPE node PUBLIC \"-//freedesktop//DTD D-BUS Object Introspection 1.0//EN\"\n"
        "\"http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd\">\n"
        "<node>\n"
        " <interface name=\"org.freedesktop.DBus\">\n"
        "  <method name=\"Hello\"><arg direction=\"out\" type=\"s\"/></method>\n"
        "  <method name=\"RequestName\"><arg direction=\"in\" type=\"s\"/>"
        "<arg direction=\"in\" type=\"u\"/><arg direction=\"out\" type=\"u\"/></method>\n"
        "  <method name=\"ReleaseName\"><arg direction=\"in\" type=\"s\"/>"
        "<arg direction=\"out\" type=\"u\"/></method>\n"
        "  <method name=\"StartServiceByName\"><arg direction=\"in\" type=\"s\"/>"
        "<arg direction=\"in\" type=\"u\"/><arg direction=\"out\" type=\"u\"/></method>\n"
        "  <method name=\"UpdateActivationEnvironment\">"
        "<arg direction=\"in\" type=\"a{ss}\"/></method>\n"
        "  <method name=\"NameHasOwner\"><arg direction=\"in\" type=\"s\"/>"
        "<arg direction=\"out\" type=\"b\"/></method>\n"
        "  <method name=\"ListNames\"><arg direction=\"out\" type=\"as\"/></method>\n"
        "  <method name=\"ListActivatableNames\"><arg direction=\"out\" type=\"as\"/></method>\n"
        "  <method name=\"AddMatch\"><arg direction=\"in\" type=\"s\"/></method>\n"
        "  <method name=\"RemoveMatch\"><arg direction=\"in\" type=\"s\"/></method>\n"
        "  <method name=\"GetNameOwner\"><arg direction=\"in\" type=\"s\"/>"
        "<arg direction=\"out\" type=\"s\"/></method>\n"
        "  <method name=\"ListQueuedOwners\"><arg direction=\"in\" type=\"s\"/>"
        "<arg direction=\"out\" type=\"as\"/></method>\n"
        "  <method name=\"GetConnectionUnixUser\"><arg direction=\"in\" type=\"s\"/>"
        "<arg direction=\"out\" type=\"u\"/></method>\n"
        "  <method name=\"GetConnectionUnixProcessID\"><arg direction=\"in\" type=\"s\"/>"
        "<arg direction=\"out\" type=\"u\"/></method>\n"
        "  <method name=\"GetAdtAuditSessionData\"><arg direction=\"in\" type=\"s\"/>"
        "<arg direction=\"out\" type=\"ay\"/></method>\n"
        "  <method name=\"GetConnectionSELinuxSecurityContext\">"
        "<arg direction=\"in\" type=\"s\"/><arg direction=\"out\" type=\"ay\"/></method>\n"
        "  <method name=\"ReloadConfig\"/>\n"
        "  <method name=\"GetId\"><arg direction=\"out\" type=\"s\"/></method>\n"
        "  <method name=\"GetConnectionCredentials\"><arg direction=\"in\" type=\"s\"/>"
        "<arg direction=\"out\" type=\"a{sv}\"/></method>\n"
        "  <property name=\"Features\" type=\"as\" access=\"read\">"
        "<annotation name=\"org.freedesktop.DBus.Property.EmitsChangedSignal\" "
        "value=\"const\"/></property>\n"
        "  <property name=\"Interfaces\" type=\"as\" access=\"read\">"
        "<annotation name=\"org.freedesktop.DBus.Property.EmitsChangedSignal\" "
        "value=\"const\"/></property>\n"
        "  <signal name=\"NameOwnerChanged\"><arg type=\"s\"/><arg type=\"s\"/>"
        "<arg type=\"s\"/></signal>\n"
        "  <signal name=\"NameLost\"><arg type=\"s\"/></signal>\n"
        "  <signal name=\"NameAcquired\"><arg type=\"s\"/></signal>\n"
        " </interface>\n"
        " <interface name=\"org.freedesktop.DBus.Properties\">\n"
        "  <method name=\"Get\"><arg direction=\"in\" type=\"s\"/><arg direction=\"in\" type=\"s\"/>"
        "<arg direction=\"out\" type=\"v\"/></method>\n"
        "  <method name=\"GetAll\"><arg direction=\"in\" type=\"s\"/>"
        "<arg direction=\"out\" type=\"a{sv}\"/></method>\n"
        "  <method name=\"Set\"><arg direction=\"in\" type=\"s\"/><arg direction=\"in\" type=\"s\"/>"
        "<arg direction=\"in\" type=\"v\"/></method>\n"
        "  <signal name=\"PropertiesChanged\"><arg type=\"s\"/><arg type=\"a{sv}\"/>"
        "<arg type=\"as\"/></signal>\n"
        " </interface>\n"
        " <interface name=\"org.freedesktop.DBus.Introspectable\">\n"
        "  <method name=\"Introspect\"><arg direction=\"out\" type=\"s\"/></method>\n"
        " </interface>\n"
        " <interface name=\"org.freedesktop.DBus.Peer\">\n"
        "  <method name=\"Ping\"/>\n"
        "  <method name=\"GetMachineId\"><arg direction=\"out\" type=\"s\"/></method>\n"
        " </interface>\n"
        "</node>\n";

/**
 * driver_method_introspect() - Introspectable.Introspect() -> s XML
 * @driver:     the driver
 * @caller:     the calling connection
 * @call:       the call (its signature already checked)
 * @args:       a reader at the call's first argument
 *
 * Answers the call itself. Return: 0, a negative errno, or BRIDGE_E_QUOTA (the caller's
 * queue is full).
 */
int driver_method_introspect(Driver *driver, BridgeConn *caller, BridgeMsg *call,
                             WireReader *args) {
        return driver_reply_basic(driver, caller, call, 's', driver_introspection_xml);
}

static const char *const *driver_property(const char *name) {
        if (strcmp(name, "Features") == 0)
                return driver_features;
        if (strcmp(name, "Interfaces") == 0)
                return driver_extra_interfaces;
        return NULL;
}

/* Reads "interface, property"; answers the error itself when either is unknown. */
static int driver_read_property(Driver *driver, BridgeConn *caller, BridgeMsg *call,
                                WireReader *args, bool set, const char *const **ret_value,
                                bool *ret_answered) {
        const char *iface, *prop;
        const char *const *value;
        int r;

        r = wire_reader_read_basic(args, 's', &iface);
        if (!r)
                r = wire_reader_read_basic(args, 's', &prop);
        if (r)
                return error_fold(r);

        *ret_answered = true;
        if (strcmp(iface, WIRE_DRIVER_INTERFACE) != 0)
                return driver_error(driver, caller, call, COMPAT_DOMAIN_COMPAT,
                                    COMPAT_E_INTERFACE_NOT_FOUND, iface, NULL, NULL);
        value = driver_property(prop);
        if (!value)
                return driver_error(driver, caller, call, COMPAT_DOMAIN_COMPAT,
                                    COMPAT_E_PROPERTY_UNKNOWN, iface, prop, NULL);
        if (set)
                return driver_error(driver, caller, call, COMPAT_DOMAIN_COMPAT,
                                    COMPAT_E_PROPERTY_READ_ONLY, iface, prop, NULL);
        *ret_answered = false;
        *ret_value = value;
        return 0;
}

/**
 * driver_method_properties_get() - Properties.Get(s interface, s property) -> v
 * @driver:     the driver
 * @caller:     the calling connection
 * @call:       the call (its signature already checked)
 * @args:       a reader at the call's first argument
 *
 * Answers the call itself. Return: 0, a negative errno, or BRIDGE_E_QUOTA (the caller's
 * queue is full).
 */
int driver_method_properties_get(Driver *driver, BridgeConn *caller, BridgeMsg *call,
                                 WireReader *args) {
        const char *const *value;
        bool answered;
        WireWriter w;
        int r;

        r = driver_read_property(driver, caller, call, args, false, &value, &answered);
        if (r || answered)
                return r;

        wire_writer_init(&w);
        (void) wire_writer_open(&w, 'v', "as");
        (void) wire_writer_append_strv(&w, value);
        (void) wire_writer_close(&w);
        r = driver_reply(driver, caller, call, &w);
        wire_writer_deinit(&w);
        return r;
}

/**
 * driver_method_properties_set() - Properties.Set(s interface, s property, v value): every property is read-only
 * @driver:     the driver
 * @caller:     the calling connection
 * @call:       the call (its signature already checked)
 * @args:       a reader at the call's first argument
 *
 * Answers the call itself. Return: 0, a negative errno, or BRIDGE_E_QUOTA (the caller's
 * queue is full).
 */
int driver_method_properties_set(Driver *driver, BridgeConn *caller, BridgeMsg *call,
                                 WireReader *args) {
        const char *const *value;
        bool answered;
        int r;

        r = driver_read_property(driver, caller, call, args, true, &value, &answered);
        if (r || answered)
                return r;
        return error_fold(1);   /* every known property is read-only: answered above */
}

/**
 * driver_method_properties_get_all() - Properties.GetAll(s interface) -> a{sv}
 * @driver:     the driver
 * @caller:     the calling connection
 * @call:       the call (its signature already checked)
 * @args:       a reader at the call's first argument
 *
 * Answers the call itself. Return: 0, a negative errno, or BRIDGE_E_QUOTA (the caller's
 * queue is full).
 */
int driver_method_properties_get_all(Driver *driver, BridgeConn *caller, BridgeMsg *call,
                                     WireReader *args) {
        static const char *const props[] = { "Features", "Interfaces" };
        const char *iface;
        WireWriter w;
        size_t i;
        int r;

        r = wire_reader_read_basic(args, 's', &iface);
        if (r)
                return error_fold(r);
        if (strcmp(iface, WIRE_DRIVER_INTERFACE) != 0)
                return driver_error(driver, caller, call, COMPAT_DOMAIN_COMPAT,
                                    COMPAT_E_INTERFACE_NOT_FOUND, iface, NULL, NULL);

        wire_writer_init(&w);
        (void) wire_writer_open(&w, 'a', "{sv}");
        for (i = 0; i < ELEMENTSOF(props); ++i) {
                (void) wire_writer_open(&w, '{', NULL);
                (void) wire_writer_append_basic(&w, 's', props[i]);
                (void) wire_writer_open(&w, 'v', "as");
                (void) wire_writer_append_strv(&w, driver_property(props[i]));
                (void) wire_writer_close(&w);
                (void) wire_writer_close(&w);
        }
        (void) wire_writer_close(&w);
        r = driver_reply(driver, caller, call, &w);
        wire_writer_deinit(&w);
        return r;
}
