/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * The one table that turns expected outcomes into D-Bus errors: every positive code of
 * bridge/ (BRIDGE_E_*), the name registry (NAME_E_*), wire/ (WIRE_E_*), the match-rule
 * parser (MATCH_RULE_E_*) and the driver's own outcomes (COMPAT_E_*) has an
 * org.freedesktop.DBus.Error.* name and a message template. The messages say what
 * dbus-daemon says in the same situation (clients and test suites compare them), with the
 * offending name or value filled in.
 *
 * Positive codes of different modules overlap numerically, so a code is always looked up
 * with its domain.
 */
#include <stddef.h>

typedef enum CompatErrorDomain {
        COMPAT_DOMAIN_COMPAT,           /* COMPAT_E_*, below */
        COMPAT_DOMAIN_BRIDGE,           /* BRIDGE_E_* (bridge/conn.h) */
        COMPAT_DOMAIN_NAME,             /* NAME_E_* (bridge/names.h) */
        COMPAT_DOMAIN_WIRE,             /* WIRE_E_* (wire/message.h) */
        COMPAT_DOMAIN_MATCH_RULE,       /* MATCH_RULE_E_* (compat/match-rule.h) */
        _COMPAT_DOMAIN_N,
} CompatErrorDomain;

/* Outcomes of driver calls and routing that become error replies. */
enum {
        _COMPAT_E_SUCCESS,
        COMPAT_E_NOT_REGISTERED,        /* a message other than Hello before Hello */
        COMPAT_E_UNKNOWN_TYPE,          /* a message of a type the specification lacks */
        COMPAT_E_HELLO_TWICE,
        COMPAT_E_UNKNOWN_METHOD,        /* @a: member */
        COMPAT_E_UNKNOWN_INTERFACE,     /* @a: member */
        COMPAT_E_WRONG_ARGS,            /* @a: member, @b: signature sent, @c: expected */
        COMPAT_E_ACQUIRE_INVALID,       /* @a: name */
        COMPAT_E_ACQUIRE_UNIQUE,        /* @a: name */
        COMPAT_E_ACQUIRE_DRIVER,        /* @a: caller's unique name, @b: name */
        COMPAT_E_RELEASE_INVALID,       /* @a: name */
        COMPAT_E_RELEASE_UNIQUE,        /* @a: name */
        COMPAT_E_RELEASE_DRIVER,        /* @a: name */
        COMPAT_E_NO_OWNER_OWNER,        /* GetNameOwner; @a: name */
        COMPAT_E_NO_OWNER_OWNERS,       /* ListQueuedOwners */
        COMPAT_E_NO_OWNER_UID,          /* GetConnectionUnixUser */
        COMPAT_E_NO_OWNER_PID,          /* GetConnectionUnixProcessID */
        COMPAT_E_NO_OWNER_CREDS,        /* GetConnectionCredentials */
        COMPAT_E_NO_OWNER_SECLABEL,     /* GetConnectionSELinuxSecurityContext */
        COMPAT_E_NO_OWNER_ADT,          /* GetAdtAuditSessionData */
        COMPAT_E_PID_UNKNOWN,           /* @a: name */
        COMPAT_E_UID_UNKNOWN,           /* @a: name (an ANONYMOUS peer has no uid) */
        COMPAT_E_SELINUX_UNKNOWN,       /* @a: name */
        COMPAT_E_ADT_UNKNOWN,           /* @a: name */
        COMPAT_E_SERVICE_UNKNOWN,       /* no owner, not activatable; @a: name */
        COMPAT_E_NAME_NOT_EXIST,        /* no owner and NO_AUTO_START; @a: name */
        COMPAT_E_INTERFACE_NOT_FOUND,   /* Properties; @a: interface */
        COMPAT_E_PROPERTY_UNKNOWN,      /* @a: interface, @b: property */
        COMPAT_E_PROPERTY_READ_ONLY,    /* @a: interface, @b: property */
        COMPAT_E_NO_REPLY_DISCONNECTED, /* the callee left without answering */
        COMPAT_E_NO_REPLY_TIMEOUT,      /* the bus's reply timeout expired */
        COMPAT_E_NO_MACHINE_ID,         /* Peer.GetMachineId without a readable machine id */
        COMPAT_E_RELOAD_FAILED,         /* ReloadConfig: the new configuration is invalid; @a */
        COMPAT_E_RELOAD_NOT_FOUND,      /* ReloadConfig: a file of it is missing; @a */
        COMPAT_E_COMPLETED_QUOTA,       /* Hello beyond max_completed_connections */
        COMPAT_E_NOT_CANONICAL_PATH,    /* a privileged method off /org/freedesktop/DBus; @a */
        COMPAT_E_NOT_PRIVILEGED,        /* @a: method, @b: "<unique> (uid=… pid=…)", @c: uid */
        COMPAT_E_PEER_UNKNOWN_METHOD,   /* a call without destination: Peer, unknown member */
        COMPAT_E_NO_DESTINATION,        /* a call without destination; @a member, @b signature,
                                         * @c interface ("(null)" if none) */
        COMPAT_E_MONITOR_FLAGS,         /* BecomeMonitor with flags != 0 */
        COMPAT_E_STATS_DRIVER,          /* GetConnectionStats of the bus; @a: its name */
        COMPAT_E_NO_OWNER_STATS,        /* GetConnectionStats; @a: name */
        COMPAT_E_ENDPOINT_BUS_WIDE,     /* a method about the whole bus through a custom
                                         * endpoint; @a: interface.method, @b: unique name,
                                         * @c: the endpoint's name */
        COMPAT_E_ENDPOINT_NO_TALK,      /* starting or calling a name the endpoint lets it
                                         * see but not talk to; @a: the name, @b: unique
                                         * name, @c: the endpoint's name */
        _COMPAT_E_N,
};

typedef struct CompatError {
        const char *name;               /* org.freedesktop.DBus.Error.* */
        const char *format;             /* printf template, up to three %s: @a, @b, @c */
} CompatError;

/* The entry for @code of @domain; never NULL (unknown codes give ...Error.Failed). */
const CompatError *compat_error_lookup(CompatErrorDomain domain, int code);

/**
 * compat_error_format() - error name and message for @code of @domain
 * @a, @b, @c:  the strings the template names (NULL reads as ""); extra ones are ignored
 * @buf:        receives the message, truncated to @size
 *
 * Return: the error name (static).
 */
const char *compat_error_format(CompatErrorDomain domain, int code, const char *a,
                                const char *b, const char *c, char *buf, size_t size);
