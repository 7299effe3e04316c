/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * kdbusd's configuration: a busconfig file (policy-xml/ loader) turned into what the bus runs
 * with — the BusLimits, the compiled PolicyDb, the auth decision and the process settings
 * (listen, pidfile, fork, keep_umask, syslog). Loading is all or nothing: a ProxyConfig
 * exists only if the whole file (with its includes) parsed, validated and compiled, so a
 * reload can build the new one completely before it touches the running bus.
 *
 * What is read once at start (as dbus-daemon does): type, listen, auth, pidfile, fork,
 * keep_umask, syslog, user. What a reload changes: the policy, the limits and
 * allow_anonymous (servicedirs are kept for activation, issue #5).
 */
#include <stdbool.h>
#include <stddef.h>
#include "bridge/limits.h"
#include "util/macro.h"

typedef struct Config Config;
typedef struct PolicyDb PolicyDb;
typedef struct Server Server;

#define PROXY_CONFIG_SYSTEM_PATH "/usr/share/dbus-1/system.conf"
#define PROXY_CONFIG_SESSION_PATH "/usr/share/dbus-1/session.conf"

/**
 * struct ProxyConfig - a loaded, validated, compiled configuration
 * @path:               the file it came from; NULL: the built-in session configuration
 * @tree:               the config tree (listen, pidfile, servicedirs, ... with file:line)
 * @limits:             dbus-daemon's built-in limits with the file's <limit>s on top
 * @policy:             the compiled policy (one reference); NULL when the compiler is not
 *                      available in this build (then nothing is checked, as said in the log)
 * @n_rules:            how many rules @policy holds
 * @auth_mechs:         the SaslMech set <auth> offers (all without one); read at start
 * @allow_anonymous:    <allow_anonymous/>: a peer that authenticated ANONYMOUS may stay
 */
typedef struct ProxyConfig {
        char *path;
        Config *tree;
        BusLimits limits;
        PolicyDb *policy;
        size_t n_rules;
        unsigned auth_mechs;
        bool allow_anonymous;
} ProxyConfig;

/**
 * struct ProxyConfigError - why a load failed
 * @text:       "file:line: message" of the first error
 * @not_found:  a file could not be opened because it does not exist (dbus-daemon answers
 *              ReloadConfig with ...Error.FileNotFound then, else ...Error.Failed)
 */
typedef struct ProxyConfigError {
        char text[1024];
        bool not_found;
} ProxyConfigError;

/*
 * Load @path (NULL: the built-in session configuration). Warnings are logged as they come.
 * Return: 0, -ENOMEM, or 1 with @ret_error filled (the configuration is invalid).
 */
int proxy_config_load(const char *path, ProxyConfig **ret, ProxyConfigError *ret_error);
ProxyConfig *proxy_config_free(ProxyConfig *c);
DEFINE_CLEANUP(ProxyConfig *, proxy_config_free);

/* Put @c's reloadable parts (policy, limits, allow_anonymous) on @s's bus. Return: 0 or
 * -ENOMEM (then nothing changed). */
int proxy_config_apply(Server *s, const ProxyConfig *c);

/*
 * Load @s->config's file again and, if it is valid, apply it and make it @s->config; if not,
 * keep everything as it is. Logs the outcome. Return: 0, -ENOMEM, or 1 with @ret_error.
 */
int proxy_config_reload(Server *s, ProxyConfigError *ret_error);

/* After authentication: may @conn's user connect (1: no), and its policy snapshot.
 * Return: 0, 1, or -ENOMEM. (config-peer.c) */
typedef struct BridgeConn BridgeConn;
int proxy_config_admit(Server *s, BridgeConn *conn);
/* Forget what config-peer.c cached of the user database (a reload). */
void proxy_config_peer_forget(void);
/* The same before there is a connection (the native front end, before HELLO); *ret: the
 * snapshot to give the connection, NULL without a policy. (config-peer.c) */
typedef struct BridgeCreds BridgeCreds;
typedef struct PolicySnapshot PolicySnapshot;
int proxy_config_admit_creds(Server *s, const BridgeCreds *cr, PolicySnapshot **ret);

/* proxy_config_reload() as the driver's ReloadConfig hook (DriverReloadFn); @userdata is
 * the Server. */
int proxy_config_reload_hook(void *userdata, bool *ret_not_found, char *msg, size_t n_msg);
