/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * kdbusd and RLIMIT_NOFILE. Each classic peer costs one fd (its socket; its pidfd is
 * fetched only when GetConnectionCredentials asks for ProcessFD), so the number of peers
 * is bounded by the soft limit, which fd_limit_raise() lifts at start to the hard limit
 * (root: to at least FD_LIMIT_ENOUGH), as dbus-daemon does; activated services get the
 * limit kdbusd was started with (fd_limit_restore()).
 *
 * Near the limit a new peer is refused, never left hanging: the last FD_LIMIT_RESERVE
 * fds below the limit are kept for the peers already connected (fds they pass, activation
 * pipes, a reload's files); a peer accepted into that reserve authenticates and gets its
 * Hello answered org.freedesktop.DBus.Error.LimitsExceeded, then it is closed; and when
 * accept() itself fails with EMFILE, a spare fd held for the purpose is given up for a
 * moment so the pending connection can be accepted and closed (with a log line), instead
 * of staying in the backlog.
 */
#include <stdbool.h>
#include <stdint.h>

#define FD_LIMIT_ENOUGH 65536u

/* Raise the soft limit (once, at start); opens the spare fd. Return: the new soft limit. */
uint64_t fd_limit_raise(void);
/* The soft limit in force (as of fd_limit_raise(), or getrlimit() if it was not called). */
uint64_t fd_limit_get(void);
/* How many fds below the limit are kept for the connected peers. */
unsigned fd_limit_reserve(void);
/* Is @fd, just opened, inside the reserve (fds are allocated lowest first, so the fds in
 * use are at least @fd + 1)? */
bool fd_limit_in_reserve(int fd);
/* After EMFILE/ENFILE from accept on @listen_fd: accept and close pending connections
 * with the spare fd's slot. Return: how many were refused, -errno if there is no spare. */
int fd_limit_refuse_pending(int listen_fd);
/* In a child before exec: the soft limit kdbusd was started with. */
void fd_limit_restore(void);
