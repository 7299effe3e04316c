/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * sd_notify for kdbusd. The bus takes NOTIFY_SOCKET out of its environment at start, so that
 * services it activates do not inherit it (they would report to systemd in the bus's name; a
 * dbus-daemon does not pass it on either), and keeps the address for its own messages.
 */
#include "util/macro.h"

void proxy_notify_init(void);
_printf_(1, 2) void proxy_notify(const char *fmt, ...);
