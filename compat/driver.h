/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * The classic D-Bus face of the bus: every message a legacy client sends enters here.
 * Messages to org.freedesktop.DBus are answered by the driver (Hello, RequestName,
 * AddMatch, GetConnectionCredentials, Peer, Introspectable, Properties, ...); everything
 * else goes to bridge_conn_send(), and the core's positive codes become the error replies
 * dbus-daemon gives (compat/errors.c). The driver also turns the core's notifications
 * into NameOwnerChanged / NameAcquired / NameLost and NoReply errors, in dbus-daemon's
 * order. No I/O: replies and signals are queued on BridgeConns.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "util/macro.h"

typedef struct Bus Bus;
typedef struct BridgeConn BridgeConn;
typedef struct BridgeMsg BridgeMsg;
typedef struct Driver Driver;

enum {
        _DRIVER_E_SUCCESS,
        DRIVER_E_DISCONNECT,            /* protocol violation: the transport drops this peer */
        _DRIVER_E_N,
};

/* Installs itself as @bus's notification handler. Return: 0 or -ENOMEM.
 * Free the driver before the bus (driver_free() uninstalls the handler). */
int driver_new(Bus *bus, Driver **ret);

/*
 * ReloadConfig calls this (the front end reloads its configuration). Return: 0 (reloaded),
 * 1 (refused: @msg says "file:line: why", *@ret_not_found if a file was missing), or a
 * negative errno (the reload failed; the running configuration stays).
 */
typedef int (*DriverReloadFn)(void *userdata, bool *ret_not_found, char *msg, size_t n_msg);
void driver_set_reload(Driver *driver, DriverReloadFn fn, void *userdata);
/* Run what ReloadConfig runs (SIGHUP does the same as in dbus-daemon). Return: as the
 * DriverReloadFn; 0 when none is set. */
int driver_reload(Driver *driver, bool *ret_not_found, char *msg, size_t n_msg);
Driver *driver_free(Driver *driver);
DEFINE_CLEANUP(Driver *, driver_free);

/**
 * driver_handle_message() - a validated, stamped message from @sender enters the bus
 *
 * @msg is borrowed: the core takes its own references. Before Hello, @msg must be stamped
 * without SENDER (the connection has no name yet).
 *
 * Return: 0 (handled: routed, answered, or answered with an error), DRIVER_E_DISCONNECT
 * (anything but a Hello method call to the driver before Hello; or @sender's own queue is
 * full of driver replies it does not read), or a negative errno (fatal).
 */
int driver_handle_message(Driver *driver, BridgeConn *sender, BridgeMsg *msg);

/* An error with any name and text from the bus to @dst (registered or not yet), answering
 * @reply_serial; the front end refuses a peer with it (fd limit). Return: 0, a negative
 * errno, or BRIDGE_E_QUOTA (@dst's queue is full). */
int driver_send_error_text(Driver *driver, BridgeConn *dst, uint32_t reply_serial,
                           const char *error_name, const char *text);
