/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * The native front end's socket handling: a SOCK_SEQPACKET listener (kdbusd --native=
 * unix:path=PATH) and its clients. Each datagram from a client is one kdbus command
 * (struct kdbus_wire_request, then the command struct; fds as SCM_RIGHTS); each answer is
 * one datagram (struct kdbus_wire_reply: 0 or -errno, then the struct as the bus updated
 * it; fds as SCM_RIGHTS). The semantics live in native/conn.h; this file only moves
 * bytes and fds, and gives the peer a wakeup eventfd with HELLO (the bus writes to it when
 * the receive queue becomes non-empty; the peer polls it, then RECVs until EAGAIN).
 * See docs/native.md for the protocol.
 */
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "proxy/log.h"
#include "proxy/loop.h"
#include "util/list.h"
#include "util/macro.h"

typedef struct Server Server;
typedef struct NativeListener NativeListener;
struct BusEndpoint;

/* A native socket and its clients (proxy/native-client.h). */
struct NativeListener {
        Server *server;
        int fd;
        LoopSource *io;
        char *path;                     /* unlinked at free */
        List clients;                   /* NativeClient */
        uint8_t *buf;                   /* one request, KDBUS_WIRE_MAX_DATAGRAM, 8-aligned:
                                         * the clients read into it in turn */
        ProxyLogLimit log_limit;
        struct BusEndpoint *endpoint;   /* a custom endpoint's native socket (a reference) */
        bool control;                   /* a kdbusfs control node: BUS_MAKE only */
};

/*
 * Listen on @address ("unix:path=/some/path"; the socket file is created, and removed
 * again when the listener is freed). Return: 0, -EINVAL (an address we do not serve,
 * with a message on stderr), or a negative errno.
 */
int native_listener_new(Server *server, const char *address, NativeListener **ret);
/*
 * The native socket of the custom endpoint @ep at @path (created with @mode, owned by
 * @uid:@gid, removed when freed). Return: 0, -EEXIST, -ENAMETOOLONG, or a negative errno.
 */
int native_listener_new_endpoint(Server *server, const char *path, struct BusEndpoint *ep,
                                 mode_t mode, uid_t uid, gid_t gid, NativeListener **ret);
/*
 * A kdbusfs control node at @path (proxy/kdbusfs.h): BUS_MAKE only; its buses are a domain
 * of their own. Return: 0, -EEXIST, -ENAMETOOLONG, or a negative errno.
 */
int native_listener_new_control(Server *server, const char *path, NativeListener **ret);
/* Answers the held RECVs (KDBUS_WIRE_BATCH_HOLD_RECV) that a delivery made ready, of all
 * native listeners; server_flush() calls it. */
void native_listener_flush_held(void);
/* The directory of @l's socket (malloc'd into *ret): custom endpoints get theirs there.
 * Return: 0 or -ENOMEM. */
int native_listener_dir(const NativeListener *l, char **ret);
/* Closes every native client (they disconnect from the bus) and the socket. */
NativeListener *native_listener_free(NativeListener *l);
DEFINE_CLEANUP(NativeListener *, native_listener_free);
