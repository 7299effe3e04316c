/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * kdbusd --kdbusfs=DIR: kdbus's filesystem view in DIR, for programs written against the
 * kdbus kernel interface (through libkdbus-preload.so, preload/): the nodes are kdbusd's
 * native SOCK_SEQPACKET sockets where kdbusfs had character-less files.
 *
 *   DIR/control                      0666: BUS_MAKE only (EBADFD for HELLO, ENDPOINT_MAKE)
 *   DIR/<uid>-<bus>/bus              0600 / 0660 / 0666 by MAKE_ACCESS_*: HELLO,
 *                                    ENDPOINT_MAKE (BUS_MAKE EBADFD)
 *   DIR/<uid>-<bus>/<uid>-<endpoint> custom endpoints, modes as the bus node's
 *
 * (plus kdbusd's `.dbus1` legacy sockets beside them). Each DIR is a domain of its own, as
 * each kdbusfs mount was: its bus names, its per-user bus limit. A bus lives while the
 * control handle that made it stays open, as in kdbus.
 */
typedef struct Server Server;
typedef struct Kdbusfs Kdbusfs;

/*
 * Serve the view in @dir (made 0755 if missing; DIR/control must not exist) on @server's
 * loop. Return: 0, or a negative errno with a message on stderr naming @dir.
 */
int kdbusfs_new(Server *server, const char *dir, Kdbusfs **ret);
/* Ends the domain's buses and removes DIR/control (DIR stays). Return: NULL. */
Kdbusfs *kdbusfs_free(Kdbusfs *fs);
