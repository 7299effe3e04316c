/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The error table (see errors.h). One array per domain, indexed by code; a code without an
 * entry (a gap, or a code from a newer module) falls back to ...Error.Failed, so a lookup
 * never fails. tests/unit/compat/test-errors checks that every code of every domain has its
 * own entry.
 *
 * The templates reproduce what dbus-daemon 1.14 answers in the same case (checked against
 * it with the same calls); where dbus-daemon's text has a typo (a missing space) we write
 * it correctly.
 */
#include <stdio.h>
#include "bridge/conn.h"
#include "bridge/names.h"
#include "compat/errors.h"
#include "compat/match-rule.h"
#include "util/macro.h"
#include "wire/message.h"

#define E(s) "org.freedesktop.DBus.Error." s

static const CompatError compat_error_failed = { E("Failed"), "%s" };

static const CompatError compat_errors[_COMPAT_E_N] = {
        [COMPAT_E_NOT_REGISTERED] = { E("AccessDenied"),
                "Client tried to send a message other than Hello without being registered" },
        [COMPAT_E_UNKNOWN_TYPE] = { E("AccessDenied"),
                "Message bus will not accept messages of unknown type\n" },
        [COMPAT_E_HELLO_TWICE] = { E("Failed"), "Already handled an Hello message" },
        [COMPAT_E_UNKNOWN_METHOD] = { E("UnknownMethod"),
                "org.freedesktop.DBus does not understand message %s" },
        [COMPAT_E_UNKNOWN_INTERFACE] = { E("UnknownInterface"),
                "org.freedesktop.DBus does not understand message %s" },
        [COMPAT_E_WRONG_ARGS] = { E("InvalidArgs"),
                "Call to %s has wrong args (%s, expected %s)\n" },
        [COMPAT_E_ACQUIRE_INVALID] = { E("InvalidArgs"), "Requested bus name \"%s\" is not valid" },
        [COMPAT_E_ACQUIRE_UNIQUE] = { E("InvalidArgs"),
                "Cannot acquire a service starting with ':' such as \"%s\"" },
        [COMPAT_E_ACQUIRE_DRIVER] = { E("InvalidArgs"),
                "Connection \"%s\" is not allowed to own the service \"%s\" because it is "
                "reserved for D-Bus' use only" },
        [COMPAT_E_RELEASE_INVALID] = { E("InvalidArgs"), "Given bus name \"%s\" is not valid" },
        [COMPAT_E_RELEASE_UNIQUE] = { E("InvalidArgs"),
                "Cannot release a service starting with ':' such as \"%s\"" },
        [COMPAT_E_RELEASE_DRIVER] = { E("InvalidArgs"),
                "Cannot release the %s service because it is owned by the bus" },
        [COMPAT_E_NO_OWNER_OWNER] = { E("NameHasNoOwner"),
                "Could not get owner of name '%s': no such name" },
        [COMPAT_E_NO_OWNER_OWNERS] = { E("NameHasNoOwner"),
                "Could not get owners of name '%s': no such name" },
        [COMPAT_E_NO_OWNER_UID] = { E("NameHasNoOwner"),
                "Could not get UID of name '%s': no such name" },
        [COMPAT_E_NO_OWNER_PID] = { E("NameHasNoOwner"),
                "Could not get PID of name '%s': no such name" },
        [COMPAT_E_NO_OWNER_CREDS] = { E("NameHasNoOwner"),
                "Could not get credentials of name '%s': no such name" },
        [COMPAT_E_NO_OWNER_SECLABEL] = { E("NameHasNoOwner"),
                "Could not get security context of name '%s': no such name" },
        [COMPAT_E_NO_OWNER_ADT] = { E("NameHasNoOwner"),
                "Could not get audit session data of name '%s': no such name" },
        [COMPAT_E_PID_UNKNOWN] = { E("UnixProcessIdUnknown"), "Could not determine PID for '%s'" },
        [COMPAT_E_UID_UNKNOWN] = { E("Failed"), "Could not determine UID for '%s'" },
        [COMPAT_E_SELINUX_UNKNOWN] = { E("SELinuxSecurityContextUnknown"),
                "Could not determine security context for '%s'" },
        [COMPAT_E_ADT_UNKNOWN] = { E("AdtAuditDataUnknown"),
                "Could not determine audit session data for '%s'" },
        [COMPAT_E_SERVICE_UNKNOWN] = { E("ServiceUnknown"),
                "The name %s was not provided by any .service files" },
        [COMPAT_E_NAME_NOT_EXIST] = { E("NameHasNoOwner"), "Name \"%s\" does not exist" },
        [COMPAT_E_INTERFACE_NOT_FOUND] = { E("UnknownInterface"), "Interface \"%s\" not found" },
        [COMPAT_E_PROPERTY_UNKNOWN] = { E("UnknownProperty"), "Property \"%s.%s\" not found" },
        [COMPAT_E_PROPERTY_READ_ONLY] = { E("PropertyReadOnly"),
                "Property '%s.%s' cannot be set" },
        [COMPAT_E_NO_REPLY_DISCONNECTED] = { E("NoReply"),
                "Message recipient disconnected from message bus without replying" },
        [COMPAT_E_NO_REPLY_TIMEOUT] = { E("NoReply"),
                "Message did not receive a reply (timeout by message bus)" },
        [COMPAT_E_NO_MACHINE_ID] = { E("Failed"),
                "Unable to read the machine ID of this system (/etc/machine-id)" },
        [COMPAT_E_RELOAD_FAILED] = { E("Failed"), "%s" },
        [COMPAT_E_RELOAD_NOT_FOUND] = { E("FileNotFound"), "%s" },
        [COMPAT_E_COMPLETED_QUOTA] = { E("LimitsExceeded"),
                "The maximum number of active connections has been reached" },
        [COMPAT_E_NOT_CANONICAL_PATH] = { E("AccessDenied"),
                "Method '%s' is only available at the canonical object path "
                "'/org/freedesktop/DBus'" },
        [COMPAT_E_NOT_PRIVILEGED] = { E("AccessDenied"),
                "rejected attempt to call %s by connection %s with uid %s" },
        /* the next two are libdbus's answers inside dbus-daemon (see driver.c) */
        [COMPAT_E_PEER_UNKNOWN_METHOD] = { E("UnknownMethod"),
                "Unknown method invoked on org.freedesktop.DBus.Peer interface" },
        [COMPAT_E_NO_DESTINATION] = { E("UnknownMethod"),
                "Method \"%s\" with signature \"%s\" on interface \"%s\" doesn't exist\n" },
        [COMPAT_E_MONITOR_FLAGS] = { E("InvalidArgs"),
                "BecomeMonitor does not support any flags yet" },
        [COMPAT_E_STATS_DRIVER] = { E("InvalidArgs"),
                "GetConnectionStats is not meaningful for the message bus \"%s\" itself" },
        [COMPAT_E_NO_OWNER_STATS] = { E("NameHasNoOwner"),
                "Could not get statistics of name '%s': no such name" },
        [COMPAT_E_ENDPOINT_BUS_WIDE] = { E("AccessDenied"),
                "%s tells about the whole bus and is not available to connection %s through "
                "custom endpoint \"%s\"" },
        [COMPAT_E_ENDPOINT_NO_TALK] = { E("AccessDenied"),
                "\"%s\" is not running and connection %s may see it but not talk to it (or "
                "start it) through custom endpoint \"%s\"" },
};

/*
 * @a: the destination (or sender) concerned, or for BRIDGE_E_QUOTA dbus-daemon's description
 * of the message (type="…", sender="…" (uid=… pid=…) interface=… destination=…);
 * @b: the limit, as text, where one applies
 */
static const CompatError bridge_errors[_BRIDGE_E_N] = {
        [BRIDGE_E_NAME_UNKNOWN] = { E("ServiceUnknown"),
                "The name %s was not provided by any .service files" },
        [BRIDGE_E_PEER_UNKNOWN] = { E("ServiceUnknown"),
                "The name %s was not provided by any .service files" },
        [BRIDGE_E_QUOTA] = { E("LimitsExceeded"),
                "Rejected: destination has a full message queue, 0 matched rules; %s" },
        [BRIDGE_E_FDS_REFUSED] = { E("NotSupported"),
                "Tried to send message with Unix file descriptors to a client that doesn't "
                "support that." },
        [BRIDGE_E_REPLY_UNEXPECTED] = { E("AccessDenied"),
                "Rejected send message: a reply to \"%s\" that answers no pending call" },
        [BRIDGE_E_REPLIES_QUOTA] = { E("LimitsExceeded"),
                "The maximum number of pending replies per connection has been reached" },
        [BRIDGE_E_MATCH_QUOTA] = { E("LimitsExceeded"),
                "Connection \"%s\" is not allowed to add more match rules (increase limits in "
                "configuration file if required; max_match_rules_per_connection=%s)" },
        [BRIDGE_E_MATCH_NOT_FOUND] = { E("MatchRuleNotFound"),
                "The given match rule wasn't found and can't be removed" },
        [BRIDGE_E_NOT_ACTIVE] = { E("AccessDenied"),
                "Client tried to send a message other than Hello without being registered" },
        [BRIDGE_E_ALREADY_ACTIVE] = { E("Failed"), "Already handled an Hello message" },
        /* @a: the uid */
        [BRIDGE_E_CONN_QUOTA] = { E("LimitsExceeded"),
                "The maximum number of active connections for UID %s has been reached" },
        /* @a: dbus-daemon's text, from bridge_conn_get_denial() */
        [BRIDGE_E_ACCESS_DENIED] = { E("AccessDenied"), "%s" },
        /* native activators only (HELLO's EEXIST); no legacy request leads here */
        [BRIDGE_E_NAME_TAKEN] = { E("Failed"), "Name \"%s\" has an activator already" },
        /* only native senders meet it (kdbus's EBADMSG); named for completeness */
        [BRIDGE_E_BAD_BODY] = { E("InvalidArgs"),
                "The message body in the sender's memfd does not match its signature" },
        /* a legacy sender's fds to a native receiver over kdbus's 16 per user; @a as for
         * BRIDGE_E_QUOTA */
        [BRIDGE_E_FDS_QUOTA] = { E("LimitsExceeded"),
                "Rejected: the destination holds the 16 unix fds one user may queue to a "
                "native (kdbus) connection; %s" },
        /* only native senders meet it (EMSGSIZE); named for completeness */
        [BRIDGE_E_MSG_TOO_LARGE] = { E("LimitsExceeded"),
                "The message in the sender's memfd exceeds the bus's max_message_size" },
        /* a legacy sender's message to a native receiver whose pool has no room for it
         * now; @a as for BRIDGE_E_QUOTA */
        [BRIDGE_E_POOL_FULL] = { E("LimitsExceeded"),
                "Rejected: the destination's kdbus pool has no free range for the message "
                "until it frees what it received; %s" },
};

/* Only NAME_E_QUOTA is an error; the others are RequestName/ReleaseName result codes. */
static const CompatError name_errors[_NAME_E_N] = {
        [NAME_E_IN_QUEUE] = { E("Failed"), "Name \"%s\" is queued for" },
        [NAME_E_EXISTS] = { E("Failed"), "Name \"%s\" is owned by another connection" },
        [NAME_E_ALREADY_OWNER] = { E("Failed"), "Name \"%s\" is already owned by the caller" },
        [NAME_E_QUOTA] = { E("LimitsExceeded"),
                "Connection \"%s\" is not allowed to own more services (increase limits in "
                "configuration file if required; max_names_per_connection=%s)" },
        [NAME_E_NON_EXISTENT] = { E("NameHasNoOwner"), "Name \"%s\" does not exist" },
        [NAME_E_NOT_OWNER] = { E("Failed"), "Name \"%s\" is not owned by the caller" },
        /* @a: dbus-daemon's text, from bridge_conn_get_denial() */
        [NAME_E_ACCESS_DENIED] = { E("AccessDenied"), "%s" },
};

/* @a defaults to wire_strerror(code) */
static const CompatError wire_errors[_WIRE_E_N] = {
        [WIRE_E_AGAIN] = { E("InvalidArgs"), "Incomplete message: %s" },
        [WIRE_E_BAD_ENDIAN] = { E("InvalidArgs"), "Invalid message: %s" },
        [WIRE_E_BAD_VERSION] = { E("InvalidArgs"), "Invalid message: %s" },
        [WIRE_E_BAD_TYPE] = { E("InvalidArgs"), "Invalid message: %s" },
        [WIRE_E_TOO_LARGE] = { E("LimitsExceeded"), "Message too large: %s" },
        [WIRE_E_BAD_SERIAL] = { E("InvalidArgs"), "Invalid message: %s" },
        [WIRE_E_BAD_FIELD] = { E("InvalidArgs"), "Invalid message header: %s" },
        [WIRE_E_MISSING_FIELD] = { E("InvalidArgs"), "Invalid message header: %s" },
        [WIRE_E_BAD_PATH] = { E("InvalidArgs"), "Invalid object path: %s" },
        [WIRE_E_BAD_INTERFACE] = { E("InvalidArgs"), "Invalid interface name: %s" },
        [WIRE_E_BAD_MEMBER] = { E("InvalidArgs"), "Invalid member name: %s" },
        [WIRE_E_BAD_ERROR_NAME] = { E("InvalidArgs"), "Invalid error name: %s" },
        [WIRE_E_BAD_BUS_NAME] = { E("InvalidArgs"), "Invalid bus name: %s" },
        [WIRE_E_BAD_SIGNATURE] = { E("InvalidSignature"), "Invalid signature: %s" },
        [WIRE_E_BAD_STRING] = { E("InvalidArgs"), "Invalid string: %s" },
        [WIRE_E_BAD_BOOLEAN] = { E("InvalidArgs"), "Invalid boolean: %s" },
        [WIRE_E_BAD_PADDING] = { E("InvalidArgs"), "Invalid message: %s" },
        [WIRE_E_TRUNCATED] = { E("InvalidArgs"), "Invalid message: %s" },
        [WIRE_E_TRAILING] = { E("InvalidArgs"), "Invalid message: %s" },
        [WIRE_E_BAD_FD_INDEX] = { E("InvalidArgs"), "Invalid Unix fd: %s" },
        [WIRE_E_TOO_DEEP] = { E("LimitsExceeded"), "Message nested too deeply: %s" },
        [WIRE_E_BAD_VARIANT] = { E("InvalidArgs"), "Invalid variant: %s" },
        [WIRE_E_BAD_DICT] = { E("InvalidArgs"), "Invalid dict entry: %s" },
        [WIRE_E_LOCAL_PATH] = { E("AccessDenied"), "Reserved path or interface: %s" },
        [WIRE_E_NOT_DBUS] = { E("InvalidArgs"), "Invalid message: %s" },
};

/* @a: the parser's explanation */
static const CompatError match_rule_errors[_MATCH_RULE_E_N] = {
        [MATCH_RULE_E_INVALID] = { E("MatchRuleInvalid"), "%s" },
        [MATCH_RULE_E_TOO_LONG] = { E("LimitsExceeded"), "%s" },
};

static const struct {
        const CompatError *table;
        int n;
} compat_error_domains[_COMPAT_DOMAIN_N] = {
        [COMPAT_DOMAIN_COMPAT] = { compat_errors, _COMPAT_E_N },
        [COMPAT_DOMAIN_BRIDGE] = { bridge_errors, _BRIDGE_E_N },
        [COMPAT_DOMAIN_NAME] = { name_errors, _NAME_E_N },
        [COMPAT_DOMAIN_WIRE] = { wire_errors, _WIRE_E_N },
        [COMPAT_DOMAIN_MATCH_RULE] = { match_rule_errors, _MATCH_RULE_E_N },
};

/**
 * compat_error_lookup() - the table entry of @code in @domain
 * @domain:     which module's code space @code is from
 * @code:       a positive code of that module
 *
 * Return: the entry; ...Error.Failed with the message "%s" for codes without one.
 */
const CompatError *compat_error_lookup(CompatErrorDomain domain, int code) {
        const CompatError *e;

        if ((unsigned)domain >= _COMPAT_DOMAIN_N || code <= 0 ||
            code >= compat_error_domains[domain].n)
                return &compat_error_failed;
        e = &compat_error_domains[domain].table[code];
        return e->name ? e : &compat_error_failed;
}

/**
 * compat_error_format() - error name and message for @code of @domain
 * @domain:     which module's code space @code is from
 * @code:       a positive code of that module
 * @a:          first string of the template (NULL: ""; WIRE domain: wire_strerror(@code))
 * @b:          second string
 * @c:          third string
 * @buf:        receives the message, NUL-terminated, truncated to @size
 * @size:       size of @buf (> 0)
 *
 * Return: the error name (static).
 */
const char *compat_error_format(CompatErrorDomain domain, int code, const char *a,
                                const char *b, const char *c, char *buf, size_t size) {
        const CompatError *e = compat_error_lookup(domain, code);

        if (!a && domain == COMPAT_DOMAIN_WIRE)
                a = wire_strerror(code);
        if (e == &compat_error_failed && !a)
                a = "Unexpected error";

        /* templates are compile-time constants of this file; every one takes <= 3 strings */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
        (void) snprintf(buf, size, e->format, a ?: "", b ?: "", c ?: "");
#pragma GCC diagnostic pop
        return e->name;
}
