/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A native connection's waiting SYNC_REPLYs (native/conn.h, NativeConn.sync): a SEND with
 * SYNC_REPLY holds one slot until its reply, its timeout, its CANCEL_FD or the caller's
 * BYEBYE ends it, and up to NATIVE_MAX_SYNC threads of one connection wait at once, each
 * for its own answer, in any order. The transport names the waiter
 * (native_conn_sync_wait()) and learns of the end through NativeConnOps.sync_done.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>
#include "bridge/conn.h"
#include "bridge/reply.h"
#include "native/conn.h"
#include "util/macro.h"

/**
 * native_conn_sync_find() - the waiting SYNC_REPLY of a call
 * @nc:         the caller
 * @cookie:     the call's cookie (reply slots compare its low 32 bits)
 *
 * Return: its index in @nc->sync, or -1.
 */
int native_conn_sync_find(const NativeConn *nc, uint64_t cookie) {
        for (unsigned i = 0; i < nc->n_sync; i++)
                if ((uint32_t)nc->sync[i].cookie == (uint32_t)cookie)
                        return (int)i;
        return -1;
}

/**
 * native_conn_sync_finish() - a waiting SYNC_REPLY is over
 * @nc:         the caller
 * @i:          its index in @nc->sync
 * @error:      0 or -errno for its SEND
 * @offset:     where the reply is in the pool (with @error 0)
 * @size:       its kdbus_msg size
 * @fds:        the reply's fds (malloc'd array, handed to sync_done), or NULL
 * @n_fds:      their number
 */
void native_conn_sync_finish(NativeConn *nc, unsigned i, int error, uint64_t offset,
                             uint64_t size, int *fds, unsigned n_fds) {
        NativeSync s = nc->sync[i];

        /* out of the table first: sync_done may start the next one */
        nc->sync[i] = nc->sync[--nc->n_sync];
        if (nc->ops && nc->ops->sync_done)
                nc->ops->sync_done(nc, nc->userdata, s.waiter, error, offset, size, fds, n_fds);
        else {
                while (n_fds)
                        (void) close(fds[--n_fds]);
                free(fds);
        }
        /* after sync_done: the transport stopped watching it there */
        fd_close(s.cancel_fd);
}

/* The waiting SYNC_REPLY of @waiter, or -1. */
static int sync_of(const NativeConn *nc, void *waiter) {
        for (unsigned i = 0; i < nc->n_sync; i++)
                if (nc->sync[i].waiter == waiter)
                        return (int)i;
        return -1;
}

/**
 * native_conn_sync_wait() - name who waits for the SYNC_REPLY just sent
 * @nc:         the caller
 * @waiter:     the transport's, handed back with sync_done
 *
 * native_conn_command() answered 1 for a SEND with SYNC_REPLY: its entry is the last one.
 *
 * Return: its CANCEL_FD (owned by @nc) for the transport to watch, or -1.
 */
int native_conn_sync_wait(NativeConn *nc, void *waiter) {
        assert(nc->n_sync > 0);
        nc->sync[nc->n_sync - 1].waiter = waiter;
        return nc->sync[nc->n_sync - 1].cancel_fd;
}

/**
 * native_conn_sync_detach() - the waiter of a SYNC_REPLY goes
 * @nc:         the caller
 * @waiter:     as given to native_conn_sync_wait()
 *
 * The call stays (its answer or timeout ends it), its end reaches sync_done with NULL.
 */
void native_conn_sync_detach(NativeConn *nc, void *waiter) {
        int i = sync_of(nc, waiter);

        if (i >= 0)
                nc->sync[i].waiter = NULL;
}

/**
 * native_conn_sync_cancel() - CANCEL_FD fired: fail a waiting SYNC_REPLY with ECANCELED
 * @nc:         the caller
 * @waiter:     as given to native_conn_sync_wait()
 *
 * The reply slot goes too (kdbus unlinks it), so a late answer is refused (EBADSLT) and
 * nothing reaches the caller's pool.
 */
void native_conn_sync_cancel(NativeConn *nc, void *waiter) {
        int i = sync_of(nc, waiter);

        if (i < 0)
                return;
        bridge_reply_free(bus_find_reply_of_caller(nc->conn->bus, nc->conn,
                                                   (uint32_t)nc->sync[i].cookie));
        native_conn_sync_finish(nc, (unsigned)i, -ECANCELED, 0, 0, NULL, 0);
}
