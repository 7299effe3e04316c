/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * Config tree: everything a dbus-daemon busconfig file (with its includes expanded) says, as
 * plain data, before any interpretation. This is stage 2 of 3 (policy-xml/README.md): the loader
 * (loader.c) fills it, a policy compiler reads it, the dump prints it canonically.
 *
 * Invariants:
 *  - Every node carries the ConfigLoc (file, line) of the element it came from; the file
 *    strings are owned by the Config (config->files) and live as long as it does.
 *  - Order is document order after include expansion: an <include> contributes its nodes at
 *    the place of the <include> element. A compiler needs that order (later rules win).
 *  - Values are stored as written (no "*" folding, no user/group lookup, no name
 *    validation): dbus-daemon accepts any string there, and resolving users is the
 *    compiler's job at (re)load time, not the parser's.
 *  - Single-valued elements (<type>, <user>, <pidfile>, <servicehelper>, <limit name=X>,
 *    <apparmor>) keep the last occurrence, as dbus-daemon does; the others accumulate.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "util/macro.h"

enum {
        _CONFIG_E_SUCCESS,
        CONFIG_E_INVALID,               /* the configuration is invalid; a diagnostic says
                                         * file:line and why */
        _CONFIG_E_N,
};

typedef enum ConfigDiagLevel {
        CONFIG_DIAG_ERROR,              /* the load fails */
        CONFIG_DIAG_WARNING,            /* dbus-daemon warns and goes on; so do we */
} ConfigDiagLevel;

/* Receives every diagnostic; @file and @line say where, @message has no trailing newline. */
typedef void (*ConfigDiagFn)(void *userdata, ConfigDiagLevel level, const char *file,
                             unsigned line, const char *message);

typedef struct ConfigLoc {
        const char *file;               /* owned by the Config */
        unsigned line;
} ConfigLoc;

typedef struct ConfigString {
        char *value;                    /* NULL: element absent */
        ConfigLoc loc;
} ConfigString;

typedef struct ConfigFlag {
        bool set;                       /* the empty element (<fork/>, <syslog/>, ...) was seen */
        ConfigLoc loc;
} ConfigFlag;

typedef enum ConfigServiceDirKind {
        CONFIG_SERVICEDIR_PATH,                 /* <servicedir>path</servicedir> */
        CONFIG_SERVICEDIR_STANDARD_SESSION,     /* <standard_session_servicedirs/> */
        CONFIG_SERVICEDIR_STANDARD_SYSTEM,      /* <standard_system_servicedirs/> */
} ConfigServiceDirKind;

typedef struct ConfigServiceDir {
        ConfigServiceDirKind kind;
        char *path;                     /* PATH only: made absolute against the file's dir */
        ConfigLoc loc;
} ConfigServiceDir;

/* dbus-daemon 1.14's <limit name="..."> names, in its documentation's order. */
typedef enum ConfigLimitId {
        CONFIG_LIMIT_MAX_INCOMING_BYTES,
        CONFIG_LIMIT_MAX_INCOMING_UNIX_FDS,
        CONFIG_LIMIT_MAX_OUTGOING_BYTES,
        CONFIG_LIMIT_MAX_OUTGOING_UNIX_FDS,
        CONFIG_LIMIT_MAX_MESSAGE_SIZE,
        CONFIG_LIMIT_MAX_MESSAGE_UNIX_FDS,
        CONFIG_LIMIT_SERVICE_START_TIMEOUT,
        CONFIG_LIMIT_AUTH_TIMEOUT,
        CONFIG_LIMIT_PENDING_FD_TIMEOUT,
        CONFIG_LIMIT_MAX_COMPLETED_CONNECTIONS,
        CONFIG_LIMIT_MAX_INCOMPLETE_CONNECTIONS,
        CONFIG_LIMIT_MAX_CONNECTIONS_PER_USER,
        CONFIG_LIMIT_MAX_PENDING_SERVICE_STARTS,
        CONFIG_LIMIT_MAX_NAMES_PER_CONNECTION,
        CONFIG_LIMIT_MAX_MATCH_RULES_PER_CONNECTION,
        CONFIG_LIMIT_MAX_REPLIES_PER_CONNECTION,
        CONFIG_LIMIT_REPLY_TIMEOUT,
        /* the Containers1 interface's limits: dbus-daemon accepts them even where it is built
         * without containers (as Debian's is); kdbusd has no Containers1 either, so they are
         * read, kept and dumped but bound nothing */
        CONFIG_LIMIT_MAX_CONTAINERS,
        CONFIG_LIMIT_MAX_CONTAINERS_PER_USER,
        CONFIG_LIMIT_MAX_CONTAINER_METADATA_BYTES,
        CONFIG_LIMIT_MAX_CONNECTIONS_PER_CONTAINER,
        _CONFIG_LIMIT_N,
} ConfigLimitId;

typedef struct ConfigLimit {
        bool set;
        uint64_t value;                 /* 0 .. LONG_MAX, as dbus-daemon parses it */
        ConfigLoc loc;
} ConfigLimit;

/* Returns the limit's XML name, or NULL for an invalid id. */
const char *config_limit_to_string(ConfigLimitId id);
/* Returns the id, or -1 if @name is not a limit dbus-daemon knows. */
int config_limit_from_string(const char *name);

typedef enum ConfigTristate {
        CONFIG_UNSET,
        CONFIG_FALSE,
        CONFIG_TRUE,
} ConfigTristate;

typedef enum ConfigMessageType {
        CONFIG_MESSAGE_UNSET,
        CONFIG_MESSAGE_ANY,             /* "*" */
        CONFIG_MESSAGE_METHOD_CALL,
        CONFIG_MESSAGE_METHOD_RETURN,
        CONFIG_MESSAGE_ERROR,
        CONFIG_MESSAGE_SIGNAL,
} ConfigMessageType;

/* The string attributes of <allow>/<deny>; the index into ConfigRule.str. */
typedef enum ConfigRuleAttr {
        CONFIG_ATTR_SEND_DESTINATION,
        CONFIG_ATTR_SEND_DESTINATION_PREFIX,
        CONFIG_ATTR_SEND_INTERFACE,
        CONFIG_ATTR_SEND_MEMBER,
        CONFIG_ATTR_SEND_ERROR,
        CONFIG_ATTR_SEND_PATH,
        CONFIG_ATTR_RECEIVE_SENDER,
        CONFIG_ATTR_RECEIVE_INTERFACE,
        CONFIG_ATTR_RECEIVE_MEMBER,
        CONFIG_ATTR_RECEIVE_ERROR,
        CONFIG_ATTR_RECEIVE_PATH,
        CONFIG_ATTR_OWN,
        CONFIG_ATTR_OWN_PREFIX,
        CONFIG_ATTR_USER,
        CONFIG_ATTR_GROUP,
        _CONFIG_ATTR_N,
} ConfigRuleAttr;

/* Returns the attribute's XML name, or NULL for an invalid value. */
const char *config_rule_attr_to_string(ConfigRuleAttr attr);

/*
 * What a rule is about, derived by the loader from which attributes are present (the loader
 * already rejected the combinations dbus-daemon rejects).
 */
typedef enum ConfigRuleKind {
        CONFIG_RULE_SEND,               /* some send_* attribute */
        CONFIG_RULE_RECEIVE,            /* some receive_* attribute, or only eavesdrop=
                                         * (Debian's session.conf: <allow eavesdrop="true"/>
                                         * "Allow everything to be received") */
        CONFIG_RULE_OWN,                /* own= or own_prefix= */
        CONFIG_RULE_USER,               /* user=: who may connect */
        CONFIG_RULE_GROUP,              /* group=: who may connect */
} ConfigRuleKind;

#define CONFIG_MAX_FDS_LIMIT 33554432u   /* dbus-daemon's accepted range for min_fds/max_fds */

typedef struct ConfigRule {
        bool allow;                     /* <allow> or <deny> */
        ConfigRuleKind kind;
        char *str[_CONFIG_ATTR_N];      /* NULL: attribute absent */
        ConfigMessageType send_type;
        ConfigMessageType receive_type;
        ConfigTristate send_requested_reply;
        ConfigTristate receive_requested_reply;
        ConfigTristate send_broadcast;
        ConfigTristate eavesdrop;
        ConfigTristate log;             /* "true" -> TRUE, any other value -> FALSE */
        bool has_min_fds;
        bool has_max_fds;
        uint32_t min_fds;
        uint32_t max_fds;
        ConfigLoc loc;
} ConfigRule;

typedef enum ConfigPolicyKind {
        CONFIG_POLICY_DEFAULT,          /* context="default" */
        CONFIG_POLICY_MANDATORY,        /* context="mandatory" */
        CONFIG_POLICY_USER,             /* user="name|uid|*" */
        CONFIG_POLICY_GROUP,            /* group="name|gid|*" */
        CONFIG_POLICY_AT_CONSOLE,       /* at_console="true|false" */
} ConfigPolicyKind;

typedef struct ConfigPolicy {
        ConfigPolicyKind kind;
        char *name;                     /* USER/GROUP: as written, unresolved */
        bool at_console;                /* AT_CONSOLE: the value */
        ConfigRule *rules;              /* document order */
        size_t n_rules;
        ConfigLoc loc;
} ConfigPolicy;

typedef struct ConfigAssociate {        /* <selinux><associate own= context=/></selinux> */
        char *own;
        char *context;
        ConfigLoc loc;
} ConfigAssociate;

typedef enum ConfigApparmorMode {
        CONFIG_APPARMOR_UNSET,
        CONFIG_APPARMOR_ENABLED,
        CONFIG_APPARMOR_DISABLED,
        CONFIG_APPARMOR_REQUIRED,
} ConfigApparmorMode;

/**
 * struct Config - one loaded configuration, includes expanded
 * @type:               <type>, last wins
 * @user:               <user>, last wins
 * @pidfile:            <pidfile>, last wins
 * @servicehelper:      <servicehelper>, last wins
 * @fork:               <fork/>
 * @keep_umask:         <keep_umask/>
 * @syslog:             <syslog/>
 * @allow_anonymous:    <allow_anonymous/>
 * @listen:             every <listen>, in order
 * @auth:               every <auth>, in order
 * @servicedirs:        <servicedir> and the standard_*_servicedirs markers, in order
 * @policies:           every <policy>, in order (several with the same context are normal)
 * @limits:             <limit>, indexed by ConfigLimitId, last wins per name
 * @associations:       <selinux><associate/>, in order
 * @apparmor:           <apparmor mode=>, last wins; @apparmor_loc where
 * @files:              every file name used in a ConfigLoc (owned)
 */
typedef struct Config {
        ConfigString type;
        ConfigString user;
        ConfigString pidfile;
        ConfigString servicehelper;
        ConfigFlag fork;
        ConfigFlag keep_umask;
        ConfigFlag syslog;
        ConfigFlag allow_anonymous;
        ConfigString *listen;
        size_t n_listen;
        ConfigString *auth;
        size_t n_auth;
        ConfigServiceDir *servicedirs;
        size_t n_servicedirs;
        ConfigPolicy *policies;
        size_t n_policies;
        ConfigLimit limits[_CONFIG_LIMIT_N];
        ConfigAssociate *associations;
        size_t n_associations;
        ConfigApparmorMode apparmor;
        ConfigLoc apparmor_loc;
        char **files;
        size_t n_files;
        /* the directories of the <includedir>s, resolved, whether they exist or not (what a
         * bus watches, as dbus-daemon watches them) */
        ConfigString *includedirs;
        size_t n_includedirs;
} Config;

int config_new(Config **ret_config);
Config *config_free(Config *config);
DEFINE_CLEANUP(Config *, config_free);

/* Building blocks for the loader; each returns 0 or -ENOMEM. */
int config_intern_file(Config *config, const char *file, const char **ret_file);
int config_string_set(ConfigString *s, const char *value, size_t n, ConfigLoc loc);
int config_append_string(ConfigString **array, size_t *n, const char *value, ConfigLoc loc);
int config_append_servicedir(Config *config, ConfigServiceDirKind kind, const char *path,
                             ConfigLoc loc);
int config_append_policy(Config *config, ConfigPolicy **ret_policy);
int config_policy_append_rule(ConfigPolicy *policy, ConfigRule **ret_rule);
int config_append_associate(Config *config, const char *own, const char *context,
                            ConfigLoc loc);
void config_rule_deinit(ConfigRule *rule);
int config_merge(Config *dst, Config *src);

enum {
        CONFIG_DUMP_LOCATIONS = 1u << 0,        /* append "# file:line" to every line */
};

int config_dump_to_file(const Config *config, unsigned flags, FILE *f);
int config_dump(const Config *config, unsigned flags, char **ret_text);
