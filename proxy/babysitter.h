/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * Activated services are started through a babysitter, as dbus-daemon starts them: the bus
 * forks a babysitter, which forks the service and waits for it. Until the service has taken
 * its name the babysitter reports how it ended; once the bus lets go (closes its end of the
 * babysitter's socket, or exits), the babysitter exits without waiting, and the service, a grandchild of
 * the bus, is re-parented to init (or the nearest subreaper) as dbus-daemon's services are:
 * a service is never the bus's child, and a bus restart does not find its services among
 * its children.
 */
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* How the service ended, as waitid() tells it (CLD_EXITED / CLD_KILLED / CLD_DUMPED). */
typedef struct BabysitterStatus {
        int code;
        int status;
} BabysitterStatus;

/*
 * Fork a babysitter that forks a grandchild running @run(@userdata) (which must exec or
 * _exit, never return). Of the bus's descriptors the grandchild gets only the @n_keep (at
 * most 4; -1: none) of @keep, the babysitter only its socket; both have dropped the others
 * when this returns, so no other process holds a peer's socket (kdbusd closes one without
 * EPOLL_CTL_DEL, proxy/loop.h). Return: 0 with the babysitter's pid in @ret_pid and the
 * bus's end of its socket in @ret_fd (O_CLOEXEC); or a negative errno (-ECHILD: the
 * babysitter died at once; nothing runs).
 */
int babysitter_spawn(void (*run)(void *userdata), void *userdata, const int *keep,
                     size_t n_keep, pid_t *ret_pid, int *ret_fd);

/*
 * After the babysitter exited: how the service ended. Return: 0 (@ret set), or -ENODATA
 * when the babysitter reported nothing (it was released, or killed itself).
 */
int babysitter_status(int fd, BabysitterStatus *ret);

/* Ask the babysitter to SIGKILL the service (it then reports its end as usual). */
void babysitter_kill(int fd);
