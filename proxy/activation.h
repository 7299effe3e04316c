/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * Service activation, the I/O half (the decisions are in bridge/activation and
 * compat/driver-activation): the service directories of the configuration (with
 * dbus-daemon's standard session and system lists) are read and watched with inotify;
 * services are spawned with the activation environment, reaped through a pidfd on the
 * loop and timed out after service_start_timeout. With --systemd-activation, services with
 * SystemdService= are started by asking systemd (ActivationRequest signal) instead.
 */
#include <stdbool.h>
#include "util/macro.h"

typedef struct Server Server;
typedef struct ProxyActivation ProxyActivation;

/*
 * Enable activation on @s (its config, listeners and guid must be set). Return: 0 or a
 * negative errno (logged).
 */
int proxy_activation_new(Server *s, bool systemd_activation, ProxyActivation **ret);
ProxyActivation *proxy_activation_free(ProxyActivation *a);
DEFINE_CLEANUP(ProxyActivation *, proxy_activation_free);

/* dbus-daemon's standard directory lists, expanded from the environment, NULL-terminated
 * (free with activation_strv_free()). Return: 0 or -ENOMEM. */
int proxy_activation_standard_dirs(bool system, char ***ret);
