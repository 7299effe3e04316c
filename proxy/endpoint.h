/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * The sockets of a custom endpoint (bridge/endpoint.h): the core holds the endpoint and its
 * policy, this opens its two entrances next to the bus's native socket, in the same
 * directory DIR:
 *
 *   DIR/<uid>-<name>          native (kdbus ABI over SOCK_SEQPACKET, as --native=)
 *   DIR/<uid>-<name>.dbus1    legacy D-Bus (unix:path=...), for unchanged clients
 *
 * Both belong to the endpoint's creator, mode 0600, 0660 with MAKE_ACCESS_GROUP, 0666 with
 * MAKE_ACCESS_WORLD (kdbus's endpoint node modes). Everybody who connects through either
 * gets the endpoint's filtered view. Freeing the ProxyEndpoint (its owner handle went away)
 * removes both sockets, closes every client that came through them and closes the
 * endpoint in the core.
 */
#include <stdint.h>
#include <sys/types.h>

typedef struct BusEndpoint BusEndpoint;
typedef struct ProxyEndpoint ProxyEndpoint;
typedef struct Server Server;

/* Suffix of an endpoint's legacy socket. */
#define PROXY_ENDPOINT_LEGACY_SUFFIX ".dbus1"

/*
 * Open @ep's sockets in @dir (a reference on @ep is taken). @access: KDBUS_MAKE_ACCESS_*.
 * Return: 0, -EEXIST (a file has one of the names), -ENAMETOOLONG, or a negative errno.
 */
int proxy_endpoint_new(Server *server, const char *dir, BusEndpoint *ep, uint64_t access,
                       uid_t uid, gid_t gid, ProxyEndpoint **ret);
/*
 * @ep's legacy clients come through @fd, a listening AF_UNIX stream socket its maker bound
 * where it chose (taken, also on failure); no other socket is made. Return: 0, -ENOTSOCK,
 * -EINVAL (not a listening AF_UNIX stream socket), or a negative errno.
 */
int proxy_endpoint_new_fd(Server *server, int fd, BusEndpoint *ep, ProxyEndpoint **ret);
/* Close the sockets and their clients, close the endpoint. Return: NULL. */
ProxyEndpoint *proxy_endpoint_free(ProxyEndpoint *pe);
BusEndpoint *proxy_endpoint_get(const ProxyEndpoint *pe);
