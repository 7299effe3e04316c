/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A custom endpoint's two sockets (see proxy/endpoint.h). The legacy clients that came
 * through it are found by their BridgeConn's endpoint when it closes; the native ones are
 * the clients of its own NativeListener.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "bridge/conn.h"
#include "bridge/endpoint.h"
#include "kdbus/kdbus.h"
#include "proxy/client.h"
#include "proxy/endpoint.h"
#include "proxy/listener.h"
#include "proxy/native-listener.h"
#include "proxy/server.h"
#include "util/error.h"

struct ProxyEndpoint {
        Server *server;
        BusEndpoint *ep;                /* a reference */
        NativeListener *native;
        ProxyListener *legacy;
};

/**
 * proxy_endpoint_new() - open a custom endpoint's sockets
 * @server:     the server
 * @dir:        the directory of the bus's native socket
 * @ep:         the endpoint
 * @access:     KDBUS_MAKE_ACCESS_GROUP / _WORLD
 * @uid:        the sockets' owner (the creator)
 * @gid:        their group
 * @ret:        the sockets
 *
 * Return: 0, -EEXIST, -ENAMETOOLONG, or a negative errno.
 */
int proxy_endpoint_new(Server *server, const char *dir, BusEndpoint *ep, uint64_t access,
                       uid_t uid, gid_t gid, ProxyEndpoint **ret) {
        ProxyEndpoint *pe;
        mode_t mode = 0600;
        char path[4096];
        int r;

        if (access & (KDBUS_MAKE_ACCESS_GROUP | KDBUS_MAKE_ACCESS_WORLD))
                mode |= 0060;
        if (access & KDBUS_MAKE_ACCESS_WORLD)
                mode |= 0006;
        if ((size_t)snprintf(path, sizeof(path), "%s/%s%s", dir, ep->name,
                             PROXY_ENDPOINT_LEGACY_SUFFIX) >= sizeof(path))
                return -ENAMETOOLONG;
        pe = calloc(1, sizeof(*pe));
        if (!pe)
                return error_origin(-ENOMEM);
        pe->server = server;
        pe->ep = bus_endpoint_ref(ep);
        r = listener_new_endpoint(server, path, ep, mode, uid, gid, &pe->legacy);
        if (r == 0) {
                path[strlen(path) - strlen(PROXY_ENDPOINT_LEGACY_SUFFIX)] = '\0';
                r = native_listener_new_endpoint(server, path, ep, mode, uid, gid, &pe->native);
        }
        if (r < 0) {
                proxy_endpoint_free(pe);
                return r;
        }
        *ret = pe;
        return 0;
}

/**
 * proxy_endpoint_new_fd() - a custom endpoint whose only entrance is its maker's socket
 * @server:     the server
 * @fd:         a listening AF_UNIX stream socket (taken, also on failure)
 * @ep:         the endpoint
 * @ret:        the endpoint's sockets
 *
 * ENDPOINT_MAKE with KDBUS_MAKE_LEGACY_FD: legacy clients only, at the path the maker bound
 * (kdbus-proxy's PATH); no native socket, no file in the bus's directory.
 *
 * Return: 0, -ENOTSOCK, -EINVAL, or a negative errno.
 */
int proxy_endpoint_new_fd(Server *server, int fd, BusEndpoint *ep, ProxyEndpoint **ret) {
        ProxyEndpoint *pe;
        int r;

        pe = calloc(1, sizeof(*pe));
        if (!pe) {
                (void) close(fd);
                return error_origin(-ENOMEM);
        }
        pe->server = server;
        pe->ep = bus_endpoint_ref(ep);
        r = listener_new_endpoint_fd(server, fd, ep, &pe->legacy);
        if (r < 0) {
                proxy_endpoint_free(pe);
                return r;
        }
        *ret = pe;
        return 0;
}

/**
 * proxy_endpoint_free() - the owner is gone: close everything of the endpoint
 * @pe:         the sockets, or NULL
 *
 * Return: NULL.
 */
ProxyEndpoint *proxy_endpoint_free(ProxyEndpoint *pe) {
        List *pos, *tmp;

        if (!pe)
                return NULL;
        pe->legacy = listener_free(pe->legacy);
        pe->native = native_listener_free(pe->native);  /* its clients disconnect */
        list_for_each_safe(pos, tmp, &pe->server->clients) {
                ProxyClient *c = container_of(pos, ProxyClient, link);

                if (c->conn && c->conn->endpoint == pe->ep && !c->close_pending)
                        client_close_later(c);
        }
        bus_endpoint_close(pe->ep);
        bus_endpoint_unref(pe->ep);
        free(pe);
        return NULL;
}

/**
 * proxy_endpoint_get() - the endpoint in the core
 * @pe:         the sockets
 *
 * Return: the endpoint.
 */
BusEndpoint *proxy_endpoint_get(const ProxyEndpoint *pe) {
        return pe->ep;
}
