/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * Compiler: Config tree -> sealed PolicyDb (bridge/policy.h), stage 3 of 3 (policy-xml/README.md).
 *
 * What it does, as dbus-daemon 1.14 does when it reads a configuration:
 *  - groups the rules of every <policy> by context (default, group, user, at_console,
 *    mandatory), keeping document order inside each;
 *  - resolves user and group names (and numeric ids of existing users/groups) once, through
 *    the resolver in the options (NSS by default). An unknown user/group in <policy user=|
 *    group=> drops that whole <policy> with a warning, an unknown one in <allow|deny user=|
 *    group=> drops that rule with a warning ("*" is not special in <policy>: dbus-daemon
 *    warns "Unknown username \"*\""; it is in <allow user="*">);
 *  - folds "*" to "any" for send_destination, send_interface, send_member, send_error,
 *    send_path, receive_sender, receive_interface, receive_member, receive_error,
 *    receive_path, own, user, group; applies the requested_reply defaults (true for allow,
 *    false for deny) and min_fds/max_fds defaults.
 * Diagnostics are "file:line" + message through the options' callback; warnings never fail.
 */
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "policy-xml/config.h"

typedef struct PolicyDb PolicyDb;

/*
 * Resolve a user (@group false) or group name from a configuration file to an id. dbus-daemon
 * accepts a name the user database knows, or a number that is the id of a known user/group.
 * Return: true and *ret_id, or false if unknown.
 */
typedef bool (*PolicyResolveFn)(void *userdata, bool group, const char *name, uint32_t *ret_id);

/**
 * struct PolicyCompileOptions - how to compile
 * @resolve:    user/group resolver; NULL: NSS (getpwnam_r/getgrnam_r, getpwuid_r/getgrgid_r)
 * @resolve_userdata: passed to @resolve
 * @diag:       receives warnings and errors ("file:line" from the rule's ConfigLoc); NULL
 *              drops them
 * @userdata:   passed to @diag
 */
typedef struct PolicyCompileOptions {
        PolicyResolveFn resolve;
        void *resolve_userdata;
        ConfigDiagFn diag;
        void *userdata;
} PolicyCompileOptions;

/**
 * policy_compile() - build the policy of a loaded configuration
 * @config:     the configuration (config_load_file())
 * @options:    may be NULL (NSS, no diagnostics)
 * @ret_db:     a sealed db, one reference; written only on success
 *
 * Return: 0, -ENOMEM, or CONFIG_E_INVALID (a diagnostic names file:line and why).
 */
int policy_compile(const Config *config, const PolicyCompileOptions *options,
                   PolicyDb **ret_db);

/* The NSS resolver (the default). */
bool policy_resolve_nss(void *userdata, bool group, const char *name, uint32_t *ret_id);
