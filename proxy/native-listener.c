/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The native listener: a SOCK_SEQPACKET socket (kdbusd --native=unix:path=PATH, a custom
 * endpoint's or a bus instance's) whose accepted peers become native clients
 * (proxy/native-client.c, which speaks the protocol). The listener installs the bus's
 * /proc reader (proxy/proc-reader.c): its peers' metadata is read from there.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include "bridge/bus.h"
#include "bridge/endpoint.h"
#include "kdbus/kdbus.h"
#include "proxy/native-client.h"
#include "proxy/native-listener.h"
#include "proxy/proc-reader.h"
#include "proxy/server.h"
#include "util/error.h"

/**
 * native_listener_dir() - the directory the bus's native socket is in
 * @l:          the listener
 * @ret:        the directory (malloc'd): custom endpoints get their sockets there
 *
 * Return: 0 or -ENOMEM.
 */
int native_listener_dir(const NativeListener *l, char **ret) {
        const char *slash = strrchr(l->path, '/');
        char *dir;

        if (!slash)
                dir = strdup(".");
        else if (slash == l->path)
                dir = strdup("/");
        else
                dir = strndup(l->path, (size_t)(slash - l->path));
        if (!dir)
                return -ENOMEM;
        *ret = dir;
        return 0;
}

static int native_listener_io(LoopSource *src, int fd, uint32_t revents, void *userdata) {
        NativeListener *l = userdata;
        int cfd;

        cfd = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (cfd < 0) {
                if (errno != EAGAIN && errno != EINTR)
                        proxy_log_peer(LOG_WARNING, &l->log_limit, loop_now(l->server->loop), NULL,
                                       "native listener %s: accept: %m, ignoring", l->path);
                return 0;
        }
        (void) native_client_new(l, cfd);       /* a client we cannot take is closed */
        return 0;
}

/* Bind, chmod/chown, listen on @path. Return: 0, -EADDRINUSE, or a negative errno. */
static int native_listener_bind(Server *server, const char *path, mode_t mode, uid_t uid,
                                gid_t gid, NativeListener **ret) {
        _cleanup_(native_listener_freep) NativeListener *l = NULL;
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int r;

        if (strlen(path) >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        l = calloc(1, sizeof(*l));
        if (!l)
                return error_origin(-ENOMEM);
        l->server = server;
        l->fd = -1;
        /* the native peers' metadata is read from /proc (bridge/meta.h) */
        bus_set_proc_reader(server->bus, &proxy_proc_reader);
        list_init(&l->clients);
        l->buf = aligned_alloc(8, KDBUS_WIRE_MAX_DATAGRAM);
        if (!l->buf)
                return error_origin(-ENOMEM);
        strcpy(sa.sun_path, path);
        l->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (l->fd < 0)
                return error_origin(-errno);
        if (bind(l->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
                return -errno;
        l->path = strdup(path);         /* from now on unlinked at free */
        if (!l->path) {
                (void) unlink(path);
                return error_origin(-ENOMEM);
        }
        if (chmod(path, mode) < 0)
                return error_origin(-errno);
        /* EPERM: a bus not running as root cannot give the file to root (a privileged
         * creator); it stays the bus's, which root can use all the same */
        if (uid != (uid_t)-1 && chown(path, uid, gid) < 0 && errno != EPERM)
                return error_origin(-errno);
        if (listen(l->fd, 128) < 0)
                return error_origin(-errno);
        r = loop_add_io(server->loop, &l->io, l->fd, EPOLLIN, native_listener_io, l);
        if (r < 0)
                return error_trace(r);
        *ret = steal_ptr(&l);
        return 0;
}

/**
 * native_listener_new() - listen for native (kdbus ABI) peers
 * @server:     the server (its loop and bus)
 * @address:    "unix:path=PATH"
 * @ret:        the listener
 *
 * The bus numbers unique names kdbus's way from now on (bus_set_naming()).
 *
 * Return: 0, -EINVAL (unsupported address, message on stderr), -EBUSY (connections have
 * names in dbus-daemon's numbering already, message on stderr), or a negative errno.
 */
int native_listener_new(Server *server, const char *address, NativeListener **ret) {
        const char *path;
        int r;

        if (strncmp(address, "unix:path=", 10) || !address[10] || strchr(address + 10, ',')) {
                fprintf(stderr, "kdbusd: --native=%s: only unix:path=PATH is supported\n",
                        address);
                return -EINVAL;
        }
        path = address + 10;
        if (strlen(path) >= sizeof(((struct sockaddr_un *)NULL)->sun_path)) {
                fprintf(stderr, "kdbusd: --native=%s: path longer than %zu bytes\n", address,
                        sizeof(((struct sockaddr_un *)NULL)->sun_path) - 1);
                return -EINVAL;
        }
        /* native peers name connections kdbus's way: the bus numbers every peer's unique
         * name so (bridge/bus.h), legacy ones too; no connection has a name yet */
        r = bus_set_naming(server->bus, BUS_NAMING_KDBUS);
        if (r < 0) {
                fprintf(stderr, "kdbusd: --native=%s: connections already have unique names "
                        "in dbus-daemon's numbering: set the native socket up first\n", address);
                return r;
        }
        /* who may talk on the bus is the policy's business, as on the legacy socket */
        r = native_listener_bind(server, path, 0666, (uid_t)-1, (gid_t)-1, ret);
        if (r < 0)
                fprintf(stderr, "kdbusd: --native=%s: cannot listen: %s\n", address, strerror(-r));
        return r;
}

/**
 * native_listener_new_control() - a kdbusfs control node (proxy/kdbusfs.h)
 * @server:     the server (kdbusd's own bus: it owns the loop the instances run on)
 * @path:       DIR/control (must not exist)
 * @ret:        the listener
 *
 * Its handles take BUS_MAKE only (EBADFD for HELLO and ENDPOINT_MAKE, as kdbus's control
 * node); the buses made through it are its domain's, made in its directory.
 *
 * Return: 0, -EEXIST (@path exists), -ENAMETOOLONG, or a negative errno.
 */
int native_listener_new_control(Server *server, const char *path, NativeListener **ret) {
        NativeListener *l;
        int r;

        /* kdbus's control node: 0666, anyone may make a bus of their own */
        r = native_listener_bind(server, path, 0666, (uid_t)-1, (gid_t)-1, &l);
        if (r < 0)
                return r == -EADDRINUSE ? -EEXIST : r;
        l->control = true;
        *ret = l;
        return 0;
}

/**
 * native_listener_new_endpoint() - the native socket of a custom endpoint
 * @server:     the server
 * @path:       where (must not exist)
 * @ep:         the endpoint its clients come through (a reference is taken)
 * @mode:       the socket file's mode
 * @uid:        its owner
 * @gid:        its group
 * @ret:        the listener
 *
 * Return: 0, -EEXIST (@path exists), -ENAMETOOLONG, -EBUSY (the bus numbers unique
 * names dbus-daemon's way, and has given some: bus_set_naming()), or a negative errno.
 */
int native_listener_new_endpoint(Server *server, const char *path, BusEndpoint *ep, mode_t mode,
                                 uid_t uid, gid_t gid, NativeListener **ret) {
        NativeListener *l;
        int r;

        /* as native_listener_new(): a bus instance's before anyone connects; a custom
         * endpoint's bus has native peers, and so this numbering, already */
        r = bus_set_naming(server->bus, BUS_NAMING_KDBUS);
        if (r < 0)
                return r;
        r = native_listener_bind(server, path, mode, uid, gid, &l);
        if (r < 0)
                return r == -EADDRINUSE ? -EEXIST : r;
        l->endpoint = bus_endpoint_ref(ep);
        *ret = l;
        return 0;
}

/**
 * native_listener_free() - close the clients and the socket, remove the socket file
 * @l:          the listener or NULL
 *
 * Return: NULL.
 */
NativeListener *native_listener_free(NativeListener *l) {
        if (!l)
                return NULL;
        native_client_free_all(&l->clients);
        l->io = loop_source_free(l->io);
        l->fd = fd_close(l->fd);
        if (l->path)
                (void) unlink(l->path);
        free(l->path);
        free(l->buf);
        bus_endpoint_unref(l->endpoint);
        free(l);
        return NULL;
}

/**
 * native_listener_flush_held() - answer the held RECVs a delivery made ready, of every
 * native listener (native_client_flush_held())
 */
void native_listener_flush_held(void) {
        native_client_flush_held();
}
