/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The limits a bus starts with. Two sources, both checked on this machine (dbus 1.14.10):
 *
 *   - dbus-daemon's built-in defaults, which Debian's /usr/share/dbus-1/system.conf lists
 *     (commented out: system.conf sets none of them, so the system bus runs on them);
 *   - /usr/share/dbus-1/session.conf, which raises most of them to "practically infinite"
 *     for the session bus. `dbus-daemon --session` runs with those, so they are our session
 *     defaults.
 *
 * reply_timeout is not set by either file, and its built-in value means "never": a method
 * call left unanswered for 40 s on `dbus-daemon --session` got no NoReply from the bus (only
 * the client's own timeout fired). auth_timeout: 5 s built in, 240 s in session.conf.
 */
#include <string.h>
#include "bridge/limits.h"

#define MSEC (UINT64_C(1000))

/**
 * bus_limits_init_system() - dbus-daemon's built-in limits (what Debian's system bus uses)
 * @l:          filled completely
 */
void bus_limits_init_system(BusLimits *l) {
        memset(l, 0, sizeof(*l));
        l->max_incoming_bytes = UINT64_C(127) * 1024 * 1024;   /* 133169152 */
        l->max_outgoing_bytes = UINT64_C(127) * 1024 * 1024;
        l->max_outgoing_unix_fds = 64;
        l->max_message_size = 32u * 1024 * 1024;                /* 33554432 */
        l->max_message_unix_fds = 16;
        l->max_connections_per_user = 256;
        l->max_completed_connections = 2048;
        l->max_names_per_connection = 512;
        l->max_match_rules_per_connection = 512;
        l->max_replies_per_connection = 128;
        l->reply_timeout_usec = 0;                              /* never */
        l->auth_timeout_usec = 5000 * MSEC;
        l->max_incomplete_connections = 64;
        l->max_incoming_unix_fds = 64;
        l->max_pending_service_starts = 512;
        l->service_start_timeout_usec = 25000 * MSEC;
        l->pending_fd_timeout_usec = 150000 * MSEC;
}

/**
 * bus_limits_init_session() - the limits `dbus-daemon --session` runs with
 * @l:          filled completely: the built-in defaults with session.conf's <limit>s on top
 */
void bus_limits_init_session(BusLimits *l) {
        bus_limits_init_system(l);
        l->max_incoming_bytes = 1000000000;
        l->max_outgoing_bytes = 1000000000;
        l->max_outgoing_unix_fds = 250000000;
        l->max_message_size = 1000000000;
        l->auth_timeout_usec = 240000 * MSEC;
        l->max_completed_connections = 100000;
        l->max_incomplete_connections = 10000;
        l->max_connections_per_user = 100000;
        l->max_names_per_connection = 50000;
        l->max_match_rules_per_connection = 50000;
        l->max_replies_per_connection = 50000;
        l->max_incoming_unix_fds = 250000000;
        l->max_pending_service_starts = 10000;
        l->service_start_timeout_usec = 120000 * MSEC;
}
