/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * Bus instances (kdbus's BUS_MAKE): a new bus in the same process, made by any user
 * through a native handle that did not say HELLO. It is a Server of its own (its own Bus:
 * names, ids, no policy; its own driver) on the same loop, with two sockets in a directory
 * named after it, next to the socket the handle came through (DIR):
 *
 *   DIR/<uid>-<name>/bus          native (kdbus ABI, as --native=)
 *   DIR/<uid>-<name>/bus.dbus1    legacy D-Bus (unix:path=...), for unchanged clients
 *
 * kdbus's layout (/sys/fs/kdbus/<uid>-<name>/bus), without a filesystem of its own. The
 * directory and sockets belong to the creator: sockets 0600, 0660 with MAKE_ACCESS_GROUP,
 * 0666 with MAKE_ACCESS_WORLD (the directory 0700 / 0750 / 0755), so the kernel's file
 * permissions decide who may connect, as kdbus's node modes did. The creator is the bus's
 * owner (Bus.owner_uid: it may open monitors and activators there). Freeing the instance
 * (its handle closed) closes every connection, removes both sockets and the directory.
 */
#include <sys/types.h>

typedef struct BusInstance BusInstance;
typedef struct NativeBusMake NativeBusMake;
typedef struct Server Server;

/* Socket names inside the instance's directory. */
#define BUS_INSTANCE_NATIVE "bus"
#define BUS_INSTANCE_LEGACY "bus.dbus1"

/*
 * Make the instance @mk asks for in @dir, owned by @uid / @gid (@pid: the maker, for
 * BUS_CREATOR_INFO), on @parent's loop; @domain: the kdbusfs domain (proxy/kdbusfs.h) whose
 * control node made it, NULL for kdbusd's --native socket.
 * Return: 0, -EEXIST (the directory exists: a bus of that name), -ENAMETOOLONG, or a
 * negative errno.
 */
int bus_instance_new(Server *parent, const char *dir, const NativeBusMake *mk, uid_t uid,
                     gid_t gid, pid_t pid, const void *domain, BusInstance **ret);
/* The instance's bus (the core's Bus, owned by the instance). */
struct Bus *bus_instance_bus(const BusInstance *bi);
/* Disconnect everyone, remove the sockets and the directory. Return: NULL. */
BusInstance *bus_instance_free(BusInstance *bi);
