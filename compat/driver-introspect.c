/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * org.freedesktop.DBus.Introspectable and .Properties of the driver.
 *
 * The introspection data describes exactly what driver.c dispatches (keep the two in step:
 * tests/unit/compat/test-driver checks that every method listed here answers). The
 * properties are those of the specification: Features (optional bus features we
 * implement: ActivatableServicesChanged, emitted by compat/driver-activation.c when a
 * service directory changes, and HeaderFiltering, the stamper dropping header fields of
 * unknown codes, wire/stamp.c; and SystemdActivation when --systemd-activation is on,
 * driver_activation_set_systemd()) and Interfaces (extra interfaces on /org/freedesktop/DBus beyond the
 * required ones: Monitoring and Debug.Stats). Both are read-only. The
 * ActivatableServicesChanged signal is in the XML as in dbus-daemon's (issue #5 emits it).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bridge/conn.h"
#include "bridge/msg.h"
#include "compat/driver-internal.h"
#include "util/error.h"
#include "wire/protocol.h"

static const char *const driver_features[] = {
        "ActivatableServicesChanged",
        "HeaderFiltering",
        NULL
};
/* With --systemd-activation dbus-daemon lists one more, last (as 1.14.10 orders them). */
static const char *const driver_features_systemd[] = {
        "ActivatableServicesChanged",
        "HeaderFiltering",
        "SystemdActivation",
        NULL
};
static const char *const driver_extra_interfaces[] = {
        "org.freedesktop.DBus.Monitoring",
        "org.freedesktop.DBus.Debug.Stats",
        NULL
};

/*
 * The XML, byte for byte as dbus-daemon 1.14.10 writes it (diffed against its answers):
 * the interfaces in its order, .Properties only on the driver's path, and on the path's
 * ancestors ("/", "/org", "/org/freedesktop") a child node leading to the driver.
 */
#define XML_HEAD                                                                                \
        "<!DOCTYPE node PUBLIC \"-//freedesktop//DTD D-BUS Object Introspection 1.0//EN\"\n"    \
        "\"http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd\">\n"                   \
        "<node>\n"
#define XML_IN(t)  "      <arg direction=\"in\" type=\"" t "\"/>\n"
#define XML_OUT(t) "      <arg direction=\"out\" type=\"" t "\"/>\n"
#define XML_ARG(t) "      <arg type=\"" t "\"/>\n"
#define XML_METHOD(name, args) "    <method name=\"" name "\">\n" args "    </method>\n"
#define XML_SIGNAL(name, args) "    <signal name=\"" name "\">\n" args "    </signal>\n"
#define XML_CONST_PROPERTY(name, t)                                                             \
        "    <property name=\"" name "\" type=\"" t "\" access=\"read\">\n"                     \
        "      <annotation name=\"org.freedesktop.DBus.Property.EmitsChangedSignal\" "          \
        "value=\"const\"/>\n"                                                                   \
        "    </property>\n"

static const char xml_iface_dbus[] =
        "  <interface name=\"org.freedesktop.DBus\">\n"
        XML_METHOD("Hello", XML_OUT("s"))
        XML_METHOD("RequestName", XML_IN("s") XML_IN("u") XML_OUT("u"))
        XML_METHOD("ReleaseName", XML_IN("s") XML_OUT("u"))
        XML_METHOD("StartServiceByName", XML_IN("s") XML_IN("u") XML_OUT("u"))
        XML_METHOD("UpdateActivationEnvironment", XML_IN("a{ss}"))
        XML_METHOD("NameHasOwner", XML_IN("s") XML_OUT("b"))
        XML_METHOD("ListNames", XML_OUT("as"))
        XML_METHOD("ListActivatableNames", XML_OUT("as"))
        XML_METHOD("AddMatch", XML_IN("s"))
        XML_METHOD("RemoveMatch", XML_IN("s"))
        XML_METHOD("GetNameOwner", XML_IN("s") XML_OUT("s"))
        XML_METHOD("ListQueuedOwners", XML_IN("s") XML_OUT("as"))
        XML_METHOD("GetConnectionUnixUser", XML_IN("s") XML_OUT("u"))
        XML_METHOD("GetConnectionUnixProcessID", XML_IN("s") XML_OUT("u"))
        XML_METHOD("GetAdtAuditSessionData", XML_IN("s") XML_OUT("ay"))
        XML_METHOD("GetConnectionSELinuxSecurityContext", XML_IN("s") XML_OUT("ay"))
        XML_METHOD("ReloadConfig", "")
        XML_METHOD("GetId", XML_OUT("s"))
        XML_METHOD("GetConnectionCredentials", XML_IN("s") XML_OUT("a{sv}"))
        XML_CONST_PROPERTY("Features", "as")
        XML_CONST_PROPERTY("Interfaces", "as")
        XML_SIGNAL("NameOwnerChanged", XML_ARG("s") XML_ARG("s") XML_ARG("s"))
        XML_SIGNAL("NameLost", XML_ARG("s"))
        XML_SIGNAL("NameAcquired", XML_ARG("s"))
        XML_SIGNAL("ActivatableServicesChanged", "")
        "  </interface>\n";

static const char xml_iface_properties[] =
        "  <interface name=\"org.freedesktop.DBus.Properties\">\n"
        XML_METHOD("Get", XML_IN("s") XML_IN("s") XML_OUT("v"))
        XML_METHOD("GetAll", XML_IN("s") XML_OUT("a{sv}"))
        XML_METHOD("Set", XML_IN("s") XML_IN("s") XML_IN("v"))
        XML_SIGNAL("PropertiesChanged",
                   "      <arg type=\"s\" name=\"interface_name\"/>\n"
                   "      <arg type=\"a{sv}\" name=\"changed_properties\"/>\n"
                   "      <arg type=\"as\" name=\"invalidated_properties\"/>\n")
        "  </interface>\n";

static const char xml_iface_introspectable[] =
        "  <interface name=\"org.freedesktop.DBus.Introspectable\">\n"
        XML_METHOD("Introspect", XML_OUT("s"))
        "  </interface>\n";

static const char xml_iface_monitoring[] =
        "  <interface name=\"org.freedesktop.DBus.Monitoring\">\n"
        XML_METHOD("BecomeMonitor", XML_IN("as") XML_IN("u"))
        "  </interface>\n";

static const char xml_iface_stats[] =
        "  <interface name=\"org.freedesktop.DBus.Debug.Stats\">\n"
        XML_METHOD("GetStats", XML_OUT("a{sv}"))
        XML_METHOD("GetConnectionStats", XML_IN("s") XML_OUT("a{sv}"))
        XML_METHOD("GetAllMatchRules", XML_OUT("a{sas}"))
        "  </interface>\n";

static const char xml_iface_peer[] =
        "  <interface name=\"org.freedesktop.DBus.Peer\">\n"
        XML_METHOD("GetMachineId", XML_OUT("s"))
        XML_METHOD("Ping", "")
        "  </interface>\n";

typedef struct IntrospectPart {
        const char *xml;
        bool driver_path_only;
} IntrospectPart;

/* dbus-daemon's order; interfaces it has only on the driver's path are marked so */
static const IntrospectPart xml_parts[] = {
        { xml_iface_dbus, false },
        { xml_iface_properties, true },
        { xml_iface_introspectable, false },
        { xml_iface_monitoring, true },
        { xml_iface_stats, true },
        { xml_iface_peer, false },
};

/*
 * The driver's path relative to @path when @path is a proper ancestor of it ("/" gives
 * "org/freedesktop/DBus", "/org/freedesktop" gives "DBus"), else NULL.
 */
static const char *driver_child_node(const char *path) {
        size_t len = strlen(path);

        if (strcmp(path, "/") == 0)
                return &WIRE_DRIVER_PATH[1];
        if (strncmp(WIRE_DRIVER_PATH, path, len) == 0 && WIRE_DRIVER_PATH[len] == '/')
                return &WIRE_DRIVER_PATH[len + 1];
        return NULL;
}

/**
 * driver_introspect_xml() - the driver's introspection data for an object path
 * @path:       the called object path
 * @ret_xml:    the XML, NUL-terminated, for the caller to free()
 *
 * Return: 0 or -ENOMEM.
 */
int driver_introspect_xml(const char *path, char **ret_xml) {
        static const char node_fmt[] = "  <node name=\"%s\"/>\n";
        static const char tail[] = "</node>\n";
        bool on_driver_path = strcmp(path, WIRE_DRIVER_PATH) == 0;
        const char *child = driver_child_node(path);
        size_t i, len = strlen(XML_HEAD) + strlen(tail) + 1;
        char *xml, *p;

        for (i = 0; i < ELEMENTSOF(xml_parts); ++i)
                if (on_driver_path || !xml_parts[i].driver_path_only)
                        len += strlen(xml_parts[i].xml);
        if (child)
                len += strlen(node_fmt) + strlen(child);
        xml = malloc(len);
        if (!xml)
                return error_origin(-ENOMEM);

        p = stpcpy(xml, XML_HEAD);
        for (i = 0; i < ELEMENTSOF(xml_parts); ++i)
                if (on_driver_path || !xml_parts[i].driver_path_only)
                        p = stpcpy(p, xml_parts[i].xml);
        if (child)
                p += sprintf(p, node_fmt, child);
        (void) stpcpy(p, tail);
        *ret_xml = xml;
        return 0;
}

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
        _cleanup_(freep) char *xml = NULL;
        int r;

        r = driver_introspect_xml(call->hdr.path ?: "/", &xml);
        if (r)
                return error_trace(r);
        return driver_reply_basic(driver, caller, call, 's', xml);
}

static const char *const *driver_property(const Driver *driver, const char *name) {
        if (strcmp(name, "Features") == 0)
                return driver->systemd_activation ? driver_features_systemd : driver_features;
        if (strcmp(name, "Interfaces") == 0)
                return driver_extra_interfaces;
        return NULL;
}

/*
 * The interfaces dbus-daemon 1.14 has on its path besides its own: Properties there knows
 * them, with no property (GetAll: {}, Get and Set: UnknownProperty, not UnknownInterface).
 */
static bool driver_has_interface(const char *iface) {
        static const char *const ifaces[] = {
                "org.freedesktop.DBus.Introspectable",
                "org.freedesktop.DBus.Peer",
                "org.freedesktop.DBus.Properties",
        };
        size_t i;

        for (i = 0; i < ELEMENTSOF(ifaces); ++i)
                if (strcmp(iface, ifaces[i]) == 0)
                        return true;
        for (i = 0; driver_extra_interfaces[i]; ++i)
                if (strcmp(iface, driver_extra_interfaces[i]) == 0)
                        return true;
        return strcmp(iface, WIRE_DRIVER_INTERFACE) == 0;
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
        if (!driver_has_interface(iface))
                return driver_error(driver, caller, call, COMPAT_DOMAIN_COMPAT,
                                    COMPAT_E_INTERFACE_NOT_FOUND, iface, NULL, NULL);
        value = strcmp(iface, WIRE_DRIVER_INTERFACE) == 0 ? driver_property(driver, prop) : NULL;
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
        if (!driver_has_interface(iface))
                return driver_error(driver, caller, call, COMPAT_DOMAIN_COMPAT,
                                    COMPAT_E_INTERFACE_NOT_FOUND, iface, NULL, NULL);

        wire_writer_init(&w);
        (void) wire_writer_open(&w, 'a', "{sv}");
        for (i = 0; strcmp(iface, WIRE_DRIVER_INTERFACE) == 0 && i < ELEMENTSOF(props); ++i) {
                (void) wire_writer_open(&w, '{', NULL);
                (void) wire_writer_append_basic(&w, 's', props[i]);
                (void) wire_writer_open(&w, 'v', "as");
                (void) wire_writer_append_strv(&w, driver_property(driver, props[i]));
                (void) wire_writer_close(&w);
                (void) wire_writer_close(&w);
        }
        (void) wire_writer_close(&w);
        r = driver_reply(driver, caller, call, &w);
        wire_writer_deinit(&w);
        return r;
}
