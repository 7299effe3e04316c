/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A native handle that makes things instead of joining a bus (proxy/native-client.c hands
 * these over before HELLO): ENDPOINT_MAKE / ENDPOINT_UPDATE of an endpoint's owner, our
 * endpoint list / update extensions, and BUS_MAKE of a bus instance's owner. Kept apart
 * from the connection's request path (native-client.c) because they share none of its
 * state but the handle's credentials and listener.
 */

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include "bridge/bus.h"
#include "bridge/endpoint.h"
#include "bridge/meta.h"
#include "kdbus/kdbus.h"
#include "native/busmake.h"
#include "native/endpoint.h"
#include "proxy/bus-instance.h"
#include "proxy/endpoint.h"
#include "proxy/native-client-internal.h"
#include "proxy/native-listener.h"
#include "proxy/proc-reader.h"
#include "proxy/server.h"
#include "util/error.h"

/*
 * kdbus's endpoint-owner handle: ENDPOINT_MAKE on a handle without HELLO makes it the
 * endpoint's owner; from then on it may only ENDPOINT_UPDATE (EBADFD for anything else,
 * as kdbus). Return: 0, or -errno: close the client.
 */
int native_client_endpoint_cmd(NativeClient *c, uint64_t command, uint8_t *cmd,
                                      size_t size, const int *fds, unsigned n_fds) {
        NativeListener *l = c->listener;
        _cleanup_(freep) char *dir = NULL;
        BusEndpoint *ep = NULL;
        uint64_t access = 0;
        bool legacy_fd;
        int r, fd;

        /* KDBUS_MAKE_LEGACY_FD: exactly one fd, the maker's listening socket; else none */
        legacy_fd = command == KDBUS_CMD_ENDPOINT_MAKE && size >= sizeof(struct kdbus_cmd) &&
                    (((const struct kdbus_cmd *)(const void *)cmd)->flags & KDBUS_MAKE_LEGACY_FD);
        if (n_fds != (legacy_fd ? 1u : 0u))
                return native_client_reply(c, -EINVAL, NULL, 0, NULL, 0);
        if (command == KDBUS_CMD_ENDPOINT_UPDATE && c->owned_endpoint) {
                r = native_endpoint_update(proxy_endpoint_get(c->owned_endpoint), cmd, size);
                return native_client_reply(c, r, cmd, MIN(size, sizeof(struct kdbus_cmd)), NULL, 0);
        }
        if (command != KDBUS_CMD_ENDPOINT_MAKE || c->owned_endpoint)
                return native_client_reply(c, -EBADFD, NULL, 0, NULL, 0);

        r = native_endpoint_make(l->server->bus, &c->creds, l->endpoint, cmd, size, &access, &ep);
        if (r == 1)
                r = 0;                  /* NEGOTIATE: the handle stays unset */
        else if (r == 0 && legacy_fd) {
                /* the maker's own socket, wherever it bound it (kdbus-proxy's PATH) */
                fd = fcntl(fds[0], F_DUPFD_CLOEXEC, 3);
                r = fd < 0 ? -errno : proxy_endpoint_new_fd(l->server, fd, ep,
                                                            &c->owned_endpoint);
                if (r == -ENOTSOCK)
                        r = -EINVAL;
                if (r < 0)
                        bus_endpoint_close(ep);
                bus_endpoint_unref(ep);
        } else if (r == 0) {
                r = native_listener_dir(l, &dir);
                if (r == 0)
                        r = proxy_endpoint_new(l->server, dir, ep, access, c->creds.uid,
                                               c->creds.gid, &c->owned_endpoint);
                if (r < 0)
                        proxy_log_peer(LOG_NOTICE, &c->log_limit, loop_now(l->server->loop), NULL,
                                       "native peer (fd %d): cannot open the sockets of endpoint "
                                       "\"%s\" in %s: %s, refusing ENDPOINT_MAKE", c->fd,
                                       ep->name, dir ? dir : "?", strerror(-r));
                if (r < 0)
                        bus_endpoint_close(ep);
                bus_endpoint_unref(ep);         /* the ProxyEndpoint holds its own */
        }
        return native_client_reply(c, r, cmd, MIN(size, sizeof(struct kdbus_cmd)), NULL, 0);
}

/*
 * Our extensions on a handle that owns nothing (kdbusctl endpoint list / update): the
 * handle stays unset. Return: 0, or -errno: close the client.
 */
int native_client_endpoint_admin(NativeClient *c, uint64_t command, uint8_t *cmd,
                                        size_t size, unsigned n_fds) {
        NativeListener *l = c->listener;
        void *answer = NULL;
        size_t answer_size = 0;
        int r;

        if (n_fds)
                return native_client_reply(c, -EINVAL, NULL, 0, NULL, 0);
        if (command == KDBUS_CMD_ENDPOINT_UPDATE) {
                r = native_endpoint_update_named(l->server->bus, &c->creds, l->endpoint, cmd,
                                                 size);
                return native_client_reply(c, r, cmd, MIN(size, sizeof(struct kdbus_cmd)),
                                           NULL, 0);
        }
        r = native_endpoint_list(l->server->bus, &c->creds, l->endpoint, &answer,
                                 &answer_size);
        r = native_client_reply(c, r, answer, answer_size, NULL, 0);
        free(answer);
        return r;
}

/*
 * kdbus's bus-owner handle: BUS_MAKE on a handle without HELLO makes a bus instance
 * (proxy/bus-instance.h) that lives as long as the handle's socket; the handle can do
 * nothing else then (EBADFD, as kdbus's control handle). Not through a custom endpoint
 * (EPERM): an endpoint's view is no place to make buses from. Return: 0, or -errno: close
 * the client.
 */
int native_client_bus_make(NativeClient *c, uint8_t *cmd, size_t size, unsigned n_fds) {
        NativeListener *l = c->listener;
        _cleanup_(freep) char *dir = NULL;
        NativeBusMake mk;
        int r;

        if (n_fds)
                return native_client_reply(c, -EINVAL, NULL, 0, NULL, 0);
        if (c->instance)
                return native_client_reply(c, -EBADFD, NULL, 0, NULL, 0);
        if (l->endpoint)
                return native_client_reply(c, -EPERM, NULL, 0, NULL, 0);
        r = native_bus_make_parse(&c->creds, cmd, size, &mk);
        if (r == 1)
                r = 0;                  /* NEGOTIATE: the handle stays unset */
        else if (r == 0) {
                r = native_listener_dir(l, &dir);
                if (r == 0)
                        r = bus_instance_new(l->server, dir, &mk, c->creds.uid, c->creds.gid,
                                             c->creds.pid, l->control ? l : NULL,
                                             &c->instance);
                /* kdbus kept the maker's metadata of BUS_MAKE's moment for BUS_CREATOR_INFO:
                 * the /proc items it offers, read now (pidfd-checked as at HELLO), and its
                 * AUXGROUPS and SECLABEL as the handle's connect captured them (a
                 * connection's at HELLO: not read from /proc) */
                if (r == 0)
                        r = bridge_meta_read(&proxy_proc_reader, c->creds.pid,
                                             c->creds.pidfd,
                                             mk.attach_owner & ~(uint64_t)KDBUS_ATTACH_AUXGROUPS,
                                             &bus_instance_bus(c->instance)->creator_meta);
                if (r == 0)
                        r = native_bus_make_capture(bus_instance_bus(c->instance), &c->creds,
                                                    mk.attach_owner);
                if (r < 0)
                        c->instance = bus_instance_free(c->instance);
                /* a taken name and the per-user limit are the peer's business */
                if (r < 0 && r != -EEXIST && r != -EMFILE)
                        proxy_log_peer(LOG_NOTICE, &c->log_limit, loop_now(l->server->loop), NULL,
                                       "native peer (fd %d, uid %u): cannot make bus \"%s\" in "
                                       "%s: %s, refusing BUS_MAKE", c->fd,
                                       (unsigned)c->creds.uid, mk.name, dir ? dir : "?",
                                       strerror(-r));
        }
        return native_client_reply(c, r, cmd, MIN(size, sizeof(struct kdbus_cmd)), NULL, 0);
}
