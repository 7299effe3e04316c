/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * A native connection: a BridgeConn whose transport is a receive pool (bridge/pool.h) and
 * whose peer speaks kdbus's commands (include/kdbus/kdbus.h). The commands are executed
 * here, like system calls: each takes the command struct as the peer sent it, updates it in
 * place as kdbus writes back into the caller's struct, and returns 0 or the negative errno
 * kdbus would have made the ioctl() fail with. Those errnos are the command's *result* for
 * the peer, not failures of the bus (-ENOMEM included: the peer sees ENOMEM, the bus runs on).
 *
 * Messages: the core carries dbus1 messages (BridgeMsg). A native SEND carries a dbus1
 * message as its PAYLOAD_VEC bytes, or its header as PAYLOAD_VEC bytes and body parts in
 * sealed memfds, which the message keeps as references (bridge/msg.h) and native
 * receivers get as PAYLOAD_MEMFD items; its kdbus fields must agree with the dbus1 header
 * (cookie = serial, cookie_reply = reply serial, EXPECT_REPLY = method call expecting a
 * reply, destination = dst_id or DST_NAME). The bus stamps SENDER and routes it like any
 * other message, so legacy peers receive it unchanged. Toward a native peer, each message
 * queued to its BridgeConn is written once into its pool, at delivery, as a kdbus_msg with
 * a PAYLOAD_OFF item pointing at the dbus1 bytes behind the items (and an FDS item). RECV
 * then only hands out the slice offset. See docs/native.md.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "bridge/quota.h"
#include "kdbus/kdbus.h"
#include "native/meta.h"
#include "util/list.h"
#include "util/macro.h"
#include "wire/message.h"

typedef struct Bus Bus;
typedef struct BridgeConn BridgeConn;
typedef struct BridgeCreds BridgeCreds;
typedef struct BridgeMsg BridgeMsg;
typedef struct BridgeNs BridgeNs;
typedef struct BridgePool BridgePool;
typedef struct BusEndpoint BusEndpoint;
typedef struct NativeConn NativeConn;
typedef struct NativeCommandIo NativeCommandIo;
struct kdbus_cmd_hello;
struct kdbus_item;

/* SYNC_REPLY SENDs of one connection waiting at once; the transport holds a further one
 * back until one ends (proxy/native-chan.c) */
#define NATIVE_MAX_SYNC 16u

/* A SEND with SYNC_REPLY waiting for its answer. */
typedef struct NativeSync {
        uint64_t cookie;
        int cancel_fd;                  /* its CANCEL_FD (owned), -1: none; the transport
                                         * watches it and calls native_conn_sync_cancel() */
        void *waiter;                   /* the transport's (native_conn_sync_wait()) */
} NativeSync;

typedef struct NativeConnOps {
        /* The receive list went from empty to non-empty (with @readable_each: a message
         * was added to it), or a first message since the last RECV was lost
         * (native_conn_count_drop()): wake the peer. */
        void (*readable)(NativeConn *nc, void *userdata);
        /* A SEND with SYNC_REPLY finished: @error (0 or -errno) and, on success, where the
         * reply lies in the pool; @fds (owned by the callee now) go with it. @waiter: who
         * waits for it, as native_conn_sync_wait() named it (NULL: nobody any more). */
        void (*sync_done)(NativeConn *nc, void *userdata, void *waiter, int error,
                          uint64_t offset, uint64_t size, int *fds, unsigned n_fds);
        /* The bus ended the connection (its bus or endpoint went; not BYEBYE and not
         * native_conn_free()): commands fail ECONNRESET from now on. May be NULL. */
        void (*disconnected)(NativeConn *nc, void *userdata);
} NativeConnOps;

/* A message written into the pool and not received yet. */
typedef struct NativeEntry {
        List link;                      /* NativeConn.recv_list, delivery order */
        struct BridgePoolSlice *slice;
        int64_t priority;
        uint64_t sender_account;        /* quota account (bridge/quota.h): the sender's
                                         * uid, or for a sender on a custom endpoint 1 << 32 |
                                         * its id (kdbus charges an endpoint's peers to the
                                         * endpoint) */
        BridgeMsg *msg;                 /* one reference: its fds go out with RECV; NULL
                                         * for a notification (charged to the bus's
                                         * account, BRIDGE_QUOTA_ACCOUNT_BUS) */
} NativeEntry;

/* What a message takes in a receiver's pool (native/conn.c's msg_slice_size()) */
typedef struct NativeSliceSize {
        BridgeMsg *msg;                 /* a reference (so that the pointer names that
                                         * message only), or NULL */
        const BridgeConn *sender;       /* whose metadata goes with it, or NULL */
        uint64_t total, msg_size, attach, declined;
} NativeSliceSize;

struct NativeConn {
        BridgeConn *conn;               /* one reference */
        BridgePool *pool;
        uint64_t hello_flags;           /* KDBUS_HELLO_* */
        uint64_t attach_flags_send;
        uint64_t attach_flags_recv;
        const NativeConnOps *ops;
        void *userdata;
        char *description;              /* HELLO's CONN_DESCRIPTION, or NULL */
        BridgeMeta *meta;               /* NULL: not captured (no pidfd, process gone) */
        NativeFakeMeta *fake;           /* a privileged HELLO's CREDS / PIDS / SECLABEL
                                         * items, or NULL (native/meta.c) */
        BridgeNs *ns;                   /* NULL: the bus's namespaces (or not captured) */
        /* KDBUS_HELLO_CAPTURE_PER_MESSAGE: the next SEND's creds and pidfd, handed over by
         * the transport (native_conn_set_send_creds()) */
        NativeMsgMeta next_send;
        int next_send_pidfd;            /* borrowed for the command; -1 */

        WireFieldMemo field_memo;       /* the last valid names of its SENDs' dbus1
                                         * headers (wire_message_parse_memo()) */
        List recv_list;                 /* NativeEntry */
        /* the sizes native_conn_quota_check() found for the message it last let in, for
         * the drain right after (the core queues it next): computed once per delivery */
        NativeSliceSize quota_sized;
        NativeEntry *spare_entry;       /* the last one freed, for the next message
                                         * (native_entry_new()) */
        BridgeQuotaTable pool_quota;    /* recv_list's messages per sending account:
                                         * slice bytes, fds, messages */
        List matches;                   /* NativeMatch */
        unsigned n_entries;
        uint64_t dropped_msgs;          /* broadcasts lost since the last RECV */
        bool byebye;                    /* BYEBYE done: every command fails ECONNRESET */
        bool freeing;                   /* in native_conn_free(): no more callbacks */
        bool readable_each;             /* the transport waits for a message of some
                                         * priority: readable() after every message put
                                         * into the pool, not only the first */

        /* SENDs with SYNC_REPLY waiting for their answers (kdbus: each ioctl waited on
         * its own; several threads of a connection at once) */
        NativeSync sync[NATIVE_MAX_SYNC];
        unsigned n_sync;
};

/* At most this many messages, and fds in them, of one sending user wait in one receiver
 * (kdbus: KDBUS_CONN_MAX_MSGS, KDBUS_CONN_MAX_FDS_PER_USER). */
#define NATIVE_MAX_MSGS_PER_USER 256u
/* HELLO flags that say how a peer talks to the bus (our extensions), not what it is: never
 * shown to others (ID_* notifications, LIST, CONN_INFO), where kdbus had no such bits */
#define NATIVE_HELLO_TRANSPORT_FLAGS (KDBUS_HELLO_CAPTURE_PER_MESSAGE | KDBUS_HELLO_WIRE_BATCH)
#define NATIVE_MAX_FDS_PER_USER 16u

/* A zeroed NativeEntry for @nc's recv_list (entry_free() gives it back), or NULL. */
NativeEntry *native_entry_new(NativeConn *nc);

/* kdbus's pool quota for @msg's sending account at @nc, counting what it has in the pool
 * and in the core's queue, and room in the pool now: 0, BRIDGE_E_QUOTA (messages, bytes),
 * BRIDGE_E_FDS_QUOTA or BRIDGE_E_POOL_FULL (no free range: kdbus's EXFULL). */
int native_conn_quota_check(NativeConn *nc, const BridgeMsg *msg);

/**
 * Return: 0, or a negative errno for the peer: -EINVAL (bad struct, flags, items or pool
 * size), -EPERM (monitor or activator without privilege), -EOPNOTSUPP (policy holder),
 * -EEXIST (the name has an activator already), -EMFILE (too many connections for this
 * user), -ENOMEM.
 */
int native_conn_hello(Bus *bus, BridgeCreds *creds, struct kdbus_cmd_hello *cmd, size_t size,
                      const NativeConnOps *ops, void *userdata, NativeConn **ret);
/* HELLO through the custom endpoint @ep (NULL: the bus's own): the connection sees the
 * bus as @ep's policy lets it (bridge/endpoint.h). Same returns. */
int native_conn_hello_on(Bus *bus, BusEndpoint *ep, BridgeCreds *creds,
                         struct kdbus_cmd_hello *cmd, size_t size, const NativeConnOps *ops,
                         void *userdata, NativeConn **ret);
/* Disconnects (if still connected) and frees. */
NativeConn *native_conn_free(NativeConn *nc);
DEFINE_CLEANUP(NativeConn *, native_conn_free);

/* The NativeConn behind @conn, or NULL for a legacy connection. */
NativeConn *native_conn_from_bridge(const BridgeConn *conn);
/* KDBUS_WIRE_DROP: the message at @offset, received (a held RECV's), dropped unread as
 * RECV's DROP would: its slice freed, a call's caller told. Return: 0 or -ENXIO. */
int native_conn_drop_received(NativeConn *nc, uint64_t offset);
/* The pool's free ring's memfd (owned by the pool), made on demand, or -errno. */
int native_conn_free_ring_fd(NativeConn *nc);

/* The pool's memfd, to be handed to the peer after HELLO (the bus keeps its own). */
int native_conn_pool_fd(const NativeConn *nc);

/* The FREEs of a KDBUS_WIRE_BATCH: each exactly a FREE command; stops at the first that
 * fails. Return: 0 or its -errno; *ret_n_freed: how many were done. */
int native_conn_free_slices(NativeConn *nc, const uint64_t *offsets, size_t n,
                            size_t *ret_n_freed);
/* true when RECV would answer EAGAIN now: nothing in the pool or the core's queue
 * (KDBUS_WIRE_RETURN_RECV_EMPTY). No drain, so safe inside a delivery. */
bool native_conn_recv_empty(NativeConn *nc);
/* A message lost for @nc: counted for its next RECV, the peer woken (kdbus's POLLIN). */
void native_conn_count_drop(NativeConn *nc);
/* The fd numbers a peer's received message got in its process, written into the slice at
 * @offset it holds (native/fds.c). Return: 0, -ENXIO, -EINVAL. */
int native_conn_fds_publish(NativeConn *nc, uint64_t offset, const int32_t *fds, size_t n);
/* true when nothing waits in the core's queue (for pool space); the pool may hold some. */
bool native_conn_queue_empty(NativeConn *nc);

/* The waiting SYNC_REPLY for the call @cookie (its low 32 bits: a reply slot's serial), or
 * -1. */
int native_conn_sync_find(const NativeConn *nc, uint64_t cookie);
/* End the waiting SYNC_REPLY @i: NativeConnOps.sync_done with these, then its cancel fd is
 * closed. (native/conn.c; used by delivery and reply_lost.) */
void native_conn_sync_finish(NativeConn *nc, unsigned i, int error, uint64_t offset,
                             uint64_t size, int *fds, unsigned n_fds);
/* The SYNC_REPLY SEND that native_conn_command() just answered 1 waits for @waiter (the
 * transport's, given back with sync_done). Return: its CANCEL_FD to watch, or -1. */
int native_conn_sync_wait(NativeConn *nc, void *waiter);
/* @waiter goes: its SYNC_REPLY's answer, if one comes, is nobody's (sync_done with NULL). */
void native_conn_sync_detach(NativeConn *nc, void *waiter);
/* @waiter's SYNC_REPLY's CANCEL_FD became readable: the call is forgotten (a late reply
 * finds no slot) and the SEND fails ECANCELED, as in kdbus. No-op without one waiting. */
void native_conn_sync_cancel(NativeConn *nc, void *waiter);

/* Write queued messages into the pool (after FREE made room); called internally too. */
void native_conn_drain(NativeConn *nc);

/* Take the messages for @name off the receive list (bridge/activator.c). Return: 0, -ENOMEM. */
int native_conn_unqueue(NativeConn *nc, const char *name, BridgeMsg ***msgs, size_t *n,
                        size_t *cap);

/* RECV, FREE and BYEBYE (the dispatcher, native/command.c, checked their heads).
 * Return: 0 or a negative errno for the peer. */
int native_conn_recv(NativeConn *nc, void *buf, size_t size, NativeCommandIo *io);
int native_conn_free_slice(NativeConn *nc, void *buf, size_t size, NativeCommandIo *io);
int native_conn_byebye(NativeConn *nc, void *buf, size_t size, NativeCommandIo *io);

/* Map a BRIDGE_E_* / NAME_E_* outcome to kdbus's errno (negative). */
int native_errno_from_bridge(int r);
