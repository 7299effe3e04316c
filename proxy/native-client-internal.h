/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * A native client's state (proxy/native-client.c), shared with its request channels
 * (proxy/native-chan.c: KDBUS_WIRE_ATTACH, one SYNC_REPLY per connection at a time).
 */
#include <stdbool.h>
#include <stdint.h>
#include "bridge/conn.h"
#include "kdbus/kdbus.h"
#include "proxy/log.h"
#include "proxy/native-client.h"
#include "util/list.h"

typedef struct BusInstance BusInstance;
typedef struct LoopSource LoopSource;
typedef struct NativeConn NativeConn;
typedef struct ProxyEndpoint ProxyEndpoint;

struct NativeClient {
        NativeListener *listener;
        List link;
        int fd;
        int wake_fd;
        LoopSource *io;
        NativeConn *nc;
        BridgeCreds creds;              /* until HELLO takes them */
        bool sync_waits;                /* a SYNC_REPLY waits with @sync_cmd */
        /* its SEND struct, kept here (no allocation per call; not the struct type, which
         * ends in a flexible array) */
        uint64_t sync_cmd[sizeof(struct kdbus_cmd_send) / sizeof(uint64_t)];
        bool sync_batch;                /* that SEND came in a KDBUS_WIRE_BATCH */
        uint64_t sync_n_freed;          /* whose FREEs were done */
        LoopSource *cancel_io;          /* its CANCEL_FD (the core owns the fd) */
        /* a RECV held by KDBUS_WIRE_BATCH_HOLD_RECV (native_client_held_*) */
        bool held;
        uint64_t held_flags;                    /* its kdbus_cmd_recv (no items) */
        int64_t held_priority;
        uint64_t held_n_freed;                  /* the FREEs of its batch */
        bool held_then;                         /* after a SEND: KDBUS_WIRE_RETURN_RECV */
        int held_cancel_fd;                     /* owned, -1: none */
        LoopSource *held_cancel_io;
        LoopSource *held_defer;                 /* ONESHOT: see native_held_ready */
        List held_link;                         /* on native_held_ready */
        /* KDBUS_WIRE_BATCH_RECV_JOIN: the batch's first reply waits here (the whole
         * datagram, no fds; @joined_size 0: none) for a RECV answer to join it
         * (native_client_uncork()); the buffer is kept for the next one */
        bool join;
        uint8_t *joined;
        size_t joined_size, joined_cap;
        bool dead;
        bool closing;                   /* KDBUS_WIRE_CLOSE answered: free it quietly */
        bool per_message;               /* KDBUS_HELLO_CAPTURE_PER_MESSAGE: SO_PASSCRED is on */
        bool pidfd_fallback;            /* no SO_PASSPIDFD (kernel < 6.5): pidfd_open() */
        ProxyLogLimit log_limit;
        ProxyEndpoint *owned_endpoint;  /* ENDPOINT_MAKE made this handle its owner */
        BusInstance *instance;          /* BUS_MAKE made this handle a bus's owner */
        /* KDBUS_WIRE_ATTACH: further request channels of one connection. A channel has
         * @owner (the socket that said HELLO) and borrows its @nc; the owner lists its
         * channels */
        NativeClient *owner;
        List chans;
        List chan_link;
        bool sync_deferred;             /* its next datagram is a SYNC_REPLY while
                                         * NATIVE_MAX_SYNC wait: not read until one ends */
};

/* The socket that made the connection @c is a request channel of (itself, mostly). */
static inline NativeClient *native_client_owner(NativeClient *c) {
        return c->owner ? c->owner : c;
}

/* Send one reply datagram. Return: 0 or -errno (the client is to be closed). */
int native_client_reply(NativeClient *c, int error, const void *data, size_t size,
                        const int *fds, unsigned n_fds);
/* KDBUS_HELLO_CAPTURE_PER_MESSAGE: every later datagram carries the sender's creds. */
int native_client_pass_creds(NativeClient *c);

/* proxy/native-chan.c */
int native_client_attach(NativeClient *c, const uint8_t *cmd, size_t size, const int *fds,
                         unsigned n_fds);
bool native_client_sync_blocked(NativeClient *c);
void native_client_sync_resume(NativeClient *o);

/* proxy/native-make.c: a handle without HELLO that makes an endpoint or a bus instance.
 * Return: 0, or -errno: close the client. */
int native_client_endpoint_cmd(NativeClient *c, uint64_t command, uint8_t *cmd, size_t size,
                               const int *fds, unsigned n_fds);
int native_client_endpoint_admin(NativeClient *c, uint64_t command, uint8_t *cmd, size_t size,
                                 unsigned n_fds);
int native_client_bus_make(NativeClient *c, uint8_t *cmd, size_t size, unsigned n_fds);
