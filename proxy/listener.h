/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * Listening sockets from D-Bus addresses: unix:path=, unix:abstract=, unix:dir=,
 * unix:tmpdir= (a path socket in the directory, as dbus-daemon 1.14 does), unix:runtime=yes
 * ($XDG_RUNTIME_DIR/bus), and sockets passed by systemd (LISTEN_FDS, or the "systemd:"
 * address). Each listener knows the address a client connects to, and unlinks its path
 * socket when freed.
 */
#include <stdbool.h>
#include <sys/types.h>
#include "proxy/log.h"
#include "proxy/loop.h"
#include "util/list.h"
#include "util/macro.h"

typedef struct AddressEntry AddressEntry;
typedef struct Server Server;

enum {
        _LISTENER_E_SUCCESS,
        LISTENER_E_UNSUPPORTED,         /* transport or key we do not serve (tcp, ...) */
        LISTENER_E_BAD_ADDRESS,         /* missing or conflicting keys */
        LISTENER_E_NO_RUNTIME_DIR,      /* runtime=yes without XDG_RUNTIME_DIR */
        _LISTENER_E_N,
};

typedef struct ProxyListener {
        Server *server;
        int fd;
        LoopSource *io;
        LoopSource *retry;              /* re-enables @io a while after EMFILE */
        uint64_t last_iteration;        /* the loop iteration of the last accepting wakeup */
        ProxyLogLimit log_limit;
        List link;                      /* Server.listeners */
        char *unlink_path;              /* path socket we created, removed at exit */
        dev_t unlink_dev;               /* ... if the path still is that socket */
        ino_t unlink_ino;
        char address[4200];             /* connectable address, without guid */
        struct BusEndpoint *endpoint;   /* a custom endpoint's legacy socket: its clients come
                                         * through it (a reference); NULL: the bus's own */
} ProxyListener;

/* Return: 0, negative errno (with a message in @err), or LISTENER_E_* (message in @err). */
int listener_new_from_address(Server *server, const AddressEntry *e, char *err, size_t err_size);
/* Adopt sockets passed by systemd. Return: how many (>= 0), or a negative errno. */
int listener_new_from_systemd(Server *server, char *err, size_t err_size);
/*
 * The legacy socket of the custom endpoint @ep at @path (created with @mode, owned by
 * @uid:@gid; removed when freed). Return: 0, -EEXIST (@path exists), or a negative errno.
 */
int listener_new_endpoint(Server *server, const char *path, struct BusEndpoint *ep, mode_t mode,
                          uid_t uid, gid_t gid, ProxyListener **ret);
/*
 * The legacy socket of @ep is @fd, a listening AF_UNIX stream socket its maker bound
 * (taken, also on failure; nothing is removed when freed). Return: 0, -ENOTSOCK, -EINVAL (not a
 * listening AF_UNIX stream socket), or a negative errno.
 */
int listener_new_endpoint_fd(Server *server, int fd, struct BusEndpoint *ep,
                             ProxyListener **ret);
ProxyListener *listener_free(ProxyListener *l);
