/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the driver sends: its replies, errors and signals (NameOwnerChanged, NameAcquired,
 * NameLost), each with the next serial of the bus's one counter. A message of the bus is
 * built once and queued like any peer's (bridge_conn_send() is not involved: the driver
 * never needs the routing a peer's message takes), so the order every connection sees is
 * the order the driver emits in (compat/driver.c says which order that is). The name lookups
 * the driver's methods share (driver_lookup(), driver_lookup_for()) are here too.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "bridge/activation.h"
#include "bridge/bus.h"
#include "bridge/conn.h"
#include "bridge/endpoint.h"
#include "bridge/match.h"
#include "bridge/monitor.h"
#include "bridge/msg.h"
#include "bridge/names.h"
#include "bridge/policy.h"
#include "compat/driver-internal.h"
#include "compat/match-rule.h"
#include "util/error.h"
#include "util/hex.h"
#include "wire/names.h"
#include "wire/protocol.h"

uint32_t driver_next_serial(Driver *driver) {
        if (++driver->serial == 0)
                driver->serial = 1;
        return driver->serial;
}

/**
 * driver_msg_build() - a message of the bus, as a core message
 * @spec:       its header (serial and sender set by the caller)
 * @body:       its body, or NULL
 * @ret:        the message (one reference)
 *
 * Return: 0 or -errno (-EINVAL for a header or body the writer refused).
 */
int driver_msg_build(const WireMsgSpec *spec, const WireWriter *body, BridgeMsg **ret) {
        uint8_t *data = NULL;
        size_t size;
        int r;

        r = wire_message_build(spec, body, &data, &size);
        if (r)
                return error_fold(r);
        r = bridge_msg_new_take(data, size, 0, ret);
        if (r < 0) {
                free(data);
                return error_trace(r);
        }
        return 0;
}

/* A peer that does not read what the bus sends it must go: the transport drops it. */
void driver_kick(BridgeConn *conn) {
        if (conn->ops && conn->ops->kick)
                conn->ops->kick(conn, conn->userdata);
}

/**
 * driver_kick_conn() - the transport drops @conn
 * @conn:       a peer that does not read what the bus sends it
 */
void driver_kick_conn(BridgeConn *conn) {
        driver_kick(conn);
}

/*
 * Whether a message of the bus would reach nobody, so that it need not be built at all:
 * a unicast to a peer that is gone when no monitor could see it (*ret: BRIDGE_E_NOT_ACTIVE;
 * dbus-daemon shows monitors the NameLost signals of a leaving peer), or a broadcast when no
 * connection has a match rule and there is no monitor (*ret: 0; its serial is used up all
 * the same, so the serials of what the bus sends do not depend on who listens).
 */
static bool driver_emit_skip(Driver *driver, const BridgeConn *dst, int *ret) {
        if (dst) {
                *ret = BRIDGE_E_NOT_ACTIVE;
                return !bridge_conn_is_active(dst) && !bridge_conn_is_unregistered(dst) &&
                       list_is_empty(&driver->bus->monitors);
        }
        *ret = 0;
        if (bus_broadcast_has_audience(driver->bus))
                return false;
        (void) driver_next_serial(driver);
        return true;
}

/*
 * Build a message from the bus and queue it to @dst, or broadcast it if @dst is NULL.
 * @fd (or -1) is attached as the message's only fd and taken, also on failure.
 * Return: 0, -errno, or BRIDGE_E_QUOTA / BRIDGE_E_NOT_ACTIVE from a unicast.
 */
int driver_emit_full(Driver *driver, BridgeConn *dst, WireMsgSpec *spec,
                     const WireWriter *body, int fd, bool anonymous) {
        _cleanup_(bridge_msg_unrefp) BridgeMsg *m = NULL;
        _cleanup_(fd_closep) int fd_owned = fd;
        int r;

        if (driver_emit_skip(driver, dst, &r))
                return r;
        spec->serial = driver_next_serial(driver);
        spec->sender = anonymous ? NULL : WIRE_DRIVER_NAME;
        if (fd_owned >= 0)
                spec->n_fds = 1;

        r = driver_msg_build(spec, body, &m);
        if (r < 0)
                return r;
        if (fd_owned >= 0) {
                int *fds = malloc(sizeof(int));

                if (!fds)
                        return error_origin(-ENOMEM);
                fds[0] = steal_fd(&fd_owned);
                bridge_msg_take_fds(m, fds, 1);
        }

        if (!dst)
                return error_trace(bus_broadcast(driver->bus, m));
        if (!bridge_conn_is_active(dst) && !bridge_conn_is_unregistered(dst)) {
                r = bus_monitor_capture(driver->bus, NULL, m, NULL);
                return r < 0 ? error_trace(r) : BRIDGE_E_NOT_ACTIVE;
        }

        r = bridge_conn_queue_msg(dst, m);
        if (r < 0)
                return error_trace(r);
        return r;
}

static int driver_emit(Driver *driver, BridgeConn *dst, WireMsgSpec *spec,
                       const WireWriter *body, int fd) {
        return driver_emit_full(driver, dst, spec, body, fd, false);
}

/**
 * driver_emit_signal() - broadcast a signal of the bus
 * @driver:     the driver
 * @spec:       the message (sender filled in here)
 * @body:       its body, or NULL
 *
 * Return: 0 or -ENOMEM.
 */
int driver_emit_signal(Driver *driver, WireMsgSpec *spec, const WireWriter *body) {
        return driver_emit(driver, NULL, spec, body, -1);
}

/**
 * driver_emit_to() - a message of the bus to @dst (signals the bus sends on its own)
 * @driver:     the driver
 * @dst:        the receiver
 * @spec:       the message (sender filled in here)
 * @body:       its body, or NULL
 *
 * Return: 0, -ENOMEM, BRIDGE_E_QUOTA or BRIDGE_E_NOT_ACTIVE.
 */
int driver_emit_to(Driver *driver, BridgeConn *dst, WireMsgSpec *spec, const WireWriter *body) {
        return driver_emit(driver, dst, spec, body, -1);
}

/* A signal to someone other than the caller: a full queue drops that peer, not the call. */
static int driver_emit_to_other(Driver *driver, BridgeConn *dst, WireMsgSpec *spec,
                                const WireWriter *body) {
        int r;

        r = driver_emit(driver, dst, spec, body, -1);
        if (r == BRIDGE_E_QUOTA)
                driver_kick(dst);
        else if (r > 0 && r != BRIDGE_E_NOT_ACTIVE)
                return error_fold(r);
        return r < 0 ? r : 0;
}

/**
 * driver_reply_fd() - answer @call of @caller with @body and one fd
 * @driver:     the driver
 * @caller:     the caller (the reply's destination)
 * @call:       the call answered
 * @body:       the reply's body, or NULL for none
 * @fd:         an fd to attach (taken, also on failure), or -1
 *
 * Return: 0, a negative errno, BRIDGE_E_QUOTA or BRIDGE_E_NOT_ACTIVE.
 */
int driver_reply_fd(Driver *driver, BridgeConn *caller, BridgeMsg *call, WireWriter *body,
                    int fd) {
        WireMsgSpec spec = {
                .type = WIRE_MSG_METHOD_RETURN,
                .flags = WIRE_FLAG_NO_REPLY_EXPECTED,
                .reply_serial = call->hdr.serial,
                .destination = caller->unique_name,
        };

        return driver_emit(driver, caller, &spec, body, fd);
}

/**
 * driver_reply() - answer @call of @caller with @body (NULL: empty)
 * @driver:     the driver
 * @caller:     the caller
 * @call:       the call answered
 * @body:       the body, or NULL
 *
 * Return: as driver_reply_fd().
 */
int driver_reply(Driver *driver, BridgeConn *caller, BridgeMsg *call, WireWriter *body) {
        return driver_reply_fd(driver, caller, call, body, -1);
}

/**
 * driver_reply_empty() - answer @call of @caller with an empty reply
 * @driver:     the driver
 * @caller:     the caller
 * @call:       the call answered
 *
 * Return: as driver_reply_fd().
 */
int driver_reply_empty(Driver *driver, BridgeConn *caller, BridgeMsg *call) {
        return driver_reply(driver, caller, call, NULL);
}

/**
 * driver_reply_basic() - answer @call of @caller with one basic value
 * @driver:     the driver
 * @caller:     the caller
 * @call:       the call answered
 * @type:       its type code
 * @value:      as for wire_writer_append_basic()
 *
 * Return: as driver_reply_fd().
 */
int driver_reply_basic(Driver *driver, BridgeConn *caller, BridgeMsg *call, char type,
                       const void *value) {
        WireWriter w;
        int r;

        wire_writer_init(&w);
        (void) wire_writer_append_basic(&w, type, value);
        r = driver_reply(driver, caller, call, &w);
        wire_writer_deinit(&w);
        return r;
}

/* What dbus-daemon 1.14.10 puts in DESTINATION of its answers before Hello. */
#define DRIVER_UNREGISTERED_NAME ":not.active.yet"

/* An error from the bus to @dst, answering its message @reply_serial. */
int driver_send_error(Driver *driver, BridgeConn *dst, uint32_t reply_serial,
                      CompatErrorDomain domain, int code, const char *a, const char *b,
                      const char *c) {
        char text[DRIVER_ERROR_TEXT_MAX];
        WireMsgSpec spec = {
                .type = WIRE_MSG_ERROR,
                .flags = WIRE_FLAG_NO_REPLY_EXPECTED,
                .reply_serial = reply_serial,
                .destination = dst->unique_name[0] ? dst->unique_name : DRIVER_UNREGISTERED_NAME,
        };
        WireWriter w;
        int r;

        spec.error_name = compat_error_format(domain, code, a, b, c, text, sizeof(text));
        driver->error_serial = reply_serial;
        driver->error_dst = dst;
        wire_writer_init(&w);
        (void) wire_writer_append_basic(&w, 's', text);
        r = driver_emit(driver, dst, &spec, &w, -1);
        wire_writer_deinit(&w);
        return r;
}

/**
 * driver_send_error_text() - an error of any name from the bus to @dst
 * @driver:             the driver
 * @dst:                the receiver
 * @reply_serial:       the serial of the message answered
 * @error_name:         the error name
 * @text:               the message
 *
 * Return: as driver_reply_fd().
 */
int driver_send_error_text(Driver *driver, BridgeConn *dst, uint32_t reply_serial,
                           const char *error_name, const char *text) {
        WireMsgSpec spec = {
                .type = WIRE_MSG_ERROR,
                .flags = WIRE_FLAG_NO_REPLY_EXPECTED,
                .reply_serial = reply_serial,
                .destination = dst->unique_name[0] ? dst->unique_name : DRIVER_UNREGISTERED_NAME,
                .error_name = error_name,
        };
        WireWriter w;
        int r;

        wire_writer_init(&w);
        (void) wire_writer_append_basic(&w, 's', text);
        r = driver_emit(driver, dst, &spec, &w, -1);
        wire_writer_deinit(&w);
        return r;
}

/**
 * driver_error() - answer @call of @caller with the error of @code (compat/errors.h)
 * @driver:     the driver
 * @caller:     the caller
 * @call:       the call answered
 * @domain:     the module @code is from
 * @code:       a positive code
 * @a:          first string of the message template
 * @b:          second string
 * @c:          third string
 *
 * Return: as driver_reply_fd().
 */
int driver_error(Driver *driver, BridgeConn *caller, BridgeMsg *call, CompatErrorDomain domain,
                 int code, const char *a, const char *b, const char *c) {
        return driver_send_error(driver, caller, call->hdr.serial, domain, code, a, b, c);
}

/**
 * driver_lookup() - the active connection behind @name
 * @driver:     the driver
 * @name:       a unique or well-known name, or any string
 *
 * Return: the connection, or NULL (nobody, or @name is not a valid bus name).
 */
BridgeConn *driver_lookup(Driver *driver, const char *name) {
        if (!wire_bus_name_is_valid(name, strlen(name)))
                return NULL;
        return bus_find_conn_by_name(driver->bus, name);
}

/**
 * driver_lookup_for() - the connection behind @name as @caller may see it
 * @driver:     the driver
 * @caller:     who asks
 * @name:       a unique or well-known name, or any string
 *
 * A caller that came through a custom endpoint sees only the names (and the connections
 * owning one) its endpoint's policy lets it see: others are answered as if nobody had them,
 * as kdbus pretends a hidden name does not exist (bridge/endpoint.h).
 *
 * Return: the connection, or NULL.
 */
BridgeConn *driver_lookup_for(Driver *driver, const BridgeConn *caller, const char *name) {
        BridgeConn *conn = driver_lookup(driver, name);

        if (conn && caller->endpoint &&
            (name[0] == ':' ? !bridge_conn_can_see_conn(caller, conn) :
                              !bridge_conn_can_see_name(caller, name)))
                return NULL;
        return conn;
}

/* Signals of the driver (path and interface are always the driver's). */
int driver_signal(Driver *driver, BridgeConn *dst, const char *member, const char *s1,
                  const char *s2, const char *s3) {
        WireMsgSpec spec = {
                .type = WIRE_MSG_SIGNAL,
                .flags = WIRE_FLAG_NO_REPLY_EXPECTED,   /* as on dbus-daemon's signals */
                .path = WIRE_DRIVER_PATH,
                .interface = WIRE_DRIVER_INTERFACE,
                .member = member,
                .destination = dst ? dst->unique_name : NULL,
        };
        WireWriter w;
        int r;

        /* NameOwnerChanged nobody listens to, NameLost to a peer that is gone: not even
         * the body is built (issue #16: connection churn) */
        if (driver_emit_skip(driver, dst, &r))
                return 0;
        wire_writer_init(&w);
        (void) wire_writer_append_basic(&w, 's', s1);
        if (s2) {
                (void) wire_writer_append_basic(&w, 's', s2);
                (void) wire_writer_append_basic(&w, 's', s3);
        }
        if (dst)
                r = driver_emit_to_other(driver, dst, &spec, &w);
        else
                r = driver_emit(driver, NULL, &spec, &w, -1);
        wire_writer_deinit(&w);
        return r;
}

int driver_name_owner_changed(Driver *driver, const char *name, const char *old_owner,
                              const char *new_owner) {
        return driver_signal(driver, NULL, "NameOwnerChanged", name, old_owner, new_owner);
}
