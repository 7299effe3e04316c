/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * <user>: the bus binds its sockets and writes its pid file with the privileges it was started
 * with, then becomes the configured user before it serves anyone (as dbus-daemon does).
 */
#include "policy-xml/config.h"

int proxy_drop_privileges(const char *user, const ConfigLoc *loc);
