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
#include "util/list.h"
#include "util/macro.h"

typedef struct Bus Bus;
typedef struct BridgeConn BridgeConn;
typedef struct BridgeCreds BridgeCreds;
typedef struct BridgeMsg BridgeMsg;
typedef struct BridgePool BridgePool;
typedef struct BusEndpoint BusEndpoint;
typedef struct NativeConn NativeConn;
struct kdbus_cmd_hello;
struct kdbus_item;

typedef struct NativeConnOps {
        /* The receive list went from empty to non-empty (with @readable_each: a message
         * was added to it): wake the peer. */
        void (*readable)(NativeConn *nc, void *userdata);
        /* A SEND with SYNC_REPLY finished: @error (0 or -errno) and, on success, where the
         * reply lies in the pool; @fds (owned by the callee now) go with it. */
        void (*sync_done)(NativeConn *nc, void *userdata, int error, uint64_t offset,
                          uint64_t size, int *fds, unsigned n_fds);
        /* The bus ended the connection (its bus or endpoint went; not BYEBYE and not
         * native_conn_free()): commands fail ECONNRESET from now on. May be NULL. */
        void (*disconnected)(NativeConn *nc, void *userdata);
} NativeConnOps;

/* One notification item of a match entry (NAME_ADD/REMOVE/CHANGE, ID_ADD/REMOVE). */
typedef struct NativeNotifyRule {
        uint64_t type;                  /* KDBUS_ITEM_NAME_ADD ... KDBUS_ITEM_ID_REMOVE */
        uint64_t old_id;                /* NAME_*: KDBUS_MATCH_ID_ANY or an id */
        uint64_t new_id;                /* NAME_*, and the id of ID_*: ANY or an id */
        char *name;                     /* NAME_*: NULL for any name */
} NativeNotifyRule;

/* A match entry of the peer: the core rule it became, found again by the cookie. An entry
 * with notification items has no core rule (kdbus ANDs an entry's rules, and a notification
 * rule never matches a connection's message); it matches the bus's notifications when every
 * notification item does and it has no other item. */
typedef struct NativeMatch {
        List link;                      /* NativeConn.matches */
        uint64_t cookie;
        struct BridgeMatchRule *rule;   /* owned by the core (freed at disconnect), or NULL */
        NativeNotifyRule *notify;       /* owned */
        unsigned n_notify;
        bool notify_only;               /* no BLOOM_MASK / NAME / ID item beside them */
} NativeMatch;

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
                                         * for a notification (charged to no account) */
} NativeEntry;

/* What the bus read from /proc of the peer at HELLO (bridge/native-meta.c). */
typedef struct NativeMeta {
        char *comm;                     /* PID_COMM (and TID_COMM: the tid is not known) */
        char *exe;
        char *cmdline;                  /* NUL-separated arguments */
        size_t cmdline_len;
        char *cgroup;
        bool have_caps;
        uint64_t caps[4];               /* inheritable, permitted, effective, bounding */
        bool have_audit;
        uint32_t loginuid;
        uint32_t sessionid;
        /* for CAPS across user namespaces (kdbus_meta_export_caps): the user namespace
         * the capabilities hold in, and the euid that may own a namespace below it */
        uint64_t userns_ino;            /* 0: not known */
        bool have_euid;
        uint32_t euid;
        /* AUXGROUPS read per message (the Groups: line of /proc/<pid>/status) */
        bool have_groups;
        uint32_t *groups;
        unsigned n_groups;
} NativeMeta;

/* What a privileged HELLO said of the peer instead of the bus's capture (kdbus's faked
 * metadata, for a bus proxy connecting on behalf of its clients): only these items, as
 * given, are attached for it; no /proc item (bridge/native-meta.c). */
typedef struct NativeFakeMeta {
        bool have_creds;
        bool have_pids;
        struct kdbus_creds creds;
        struct kdbus_pids pids;
        char *seclabel;                 /* NULL: no SECLABEL item */
} NativeFakeMeta;

/* One line of a uid_map / gid_map: ids first..first+count-1 inside are lower.. outside. */
typedef struct NativeNsMap {
        uint32_t first;
        uint32_t lower;
        uint32_t count;
} NativeNsMap;

/* A peer's namespaces where they differ from the bus's (bridge/native-ns.c). */
typedef struct NativeNs {
        bool own_userns;                /* another user namespace: ids go through the maps */
        NativeNsMap *uid_map;
        NativeNsMap *gid_map;
        unsigned n_uid_map;
        unsigned n_gid_map;
        uint32_t overflow_uid;
        uint32_t overflow_gid;
        unsigned n_pidns;               /* pid namespaces from its own ([0]) to the bus's */
        uint64_t *pidns_ino;
        uint32_t *pidns_pid;            /* its pid in each */
        /* user namespaces from its own ([0]) up to the bus's, with each one's owner uid as
         * the bus sees it (NS_GET_OWNER_UID): how CAPS are shown to it */
        unsigned n_userns;
        uint64_t *userns_ino;
        uint32_t *userns_owner;
} NativeNs;

/* What the bus captured for one message of a KDBUS_HELLO_CAPTURE_PER_MESSAGE sender at
 * SEND (BridgeMsg.sender_meta): SCM_CREDENTIALS, and /proc read through SCM_PIDFD. */
typedef struct NativeMsgMeta {
        bool have_creds;
        uint32_t uid;
        uint32_t gid;
        uint32_t pid;
        NativeMeta *proc;               /* NULL: not captured (no pidfd, process gone) */
        char *seclabel;                 /* SCM_SECURITY (SO_PASSSEC), NULL: none came */
} NativeMsgMeta;

struct NativeConn {
        BridgeConn *conn;               /* one reference */
        BridgePool *pool;
        uint64_t hello_flags;           /* KDBUS_HELLO_* */
        uint64_t attach_flags_send;
        uint64_t attach_flags_recv;
        const NativeConnOps *ops;
        void *userdata;
        char *description;              /* HELLO's CONN_DESCRIPTION, or NULL */
        NativeMeta *meta;               /* NULL: not captured (no pidfd, process gone) */
        NativeFakeMeta *fake;           /* a privileged HELLO's CREDS / PIDS / SECLABEL
                                         * items, or NULL (native-meta.c) */
        NativeNs *ns;                   /* NULL: the bus's namespaces (or not captured) */
        /* KDBUS_HELLO_CAPTURE_PER_MESSAGE: the next SEND's creds and pidfd, handed over by
         * the transport (native_conn_set_send_creds()) */
        NativeMsgMeta next_send;
        int next_send_pidfd;            /* borrowed for the command; -1 */

        List recv_list;                 /* NativeEntry */
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

        /* a SEND with SYNC_REPLY waiting for its answer */
        bool sync_pending;
        uint64_t sync_cookie;
        uint64_t sync_dst_id;
        int sync_cancel_fd;             /* its CANCEL_FD (owned), -1: none; the transport
                                         * watches it and calls native_conn_sync_cancel() */
};

/* At most this many messages, and fds in them, of one sending user wait in one receiver
 * (kdbus: KDBUS_CONN_MAX_MSGS, KDBUS_CONN_MAX_FDS_PER_USER). */
#define NATIVE_MAX_MSGS_PER_USER 256u
#define NATIVE_MAX_FDS_PER_USER 16u

/* kdbus's pool quota for @msg's sending account at @nc, counting what it has in the pool
 * and in the core's queue: 0, BRIDGE_E_QUOTA (messages, bytes) or BRIDGE_E_FDS_QUOTA. */
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

/* The pool's memfd, to be handed to the peer after HELLO (the bus keeps its own). */
int native_conn_pool_fd(const NativeConn *nc);

/* Is @command one of kdbus's 16 commands (the others: ENOTTY in every handle state). */
bool native_command_is_known(uint64_t command);

/*
 * Execute one command other than HELLO. @buf holds the command struct (and, for SEND, the
 * kdbus_msg and payload bytes it points at by offset); @fds are the fds that came with it
 * (borrowed: the callee dups what it keeps). On return *ret_reply_size says how many bytes
 * of @buf to send back, and *ret_fds and *ret_n_fds (owned by the caller, may be NULL/0) the
 * fds to pass with the reply. A SEND with SYNC_REPLY returns 1: no reply now, it comes
 * through NativeConnOps.sync_done.
 *
 * Return: 0, 1 (SYNC_REPLY pending), or a negative errno for the peer.
 */
int native_conn_command(NativeConn *nc, uint64_t command, void *buf, size_t size,
                        const int *fds, unsigned n_fds, size_t *ret_reply_size,
                        int **ret_fds, unsigned *ret_n_fds);

/* The FREEs of a KDBUS_WIRE_BATCH: each exactly a FREE command; stops at the first that
 * fails. Return: 0 or its -errno; *ret_n_freed: how many were done. */
int native_conn_free_slices(NativeConn *nc, const uint64_t *offsets, size_t n,
                            size_t *ret_n_freed);
/* true when RECV would answer EAGAIN now: nothing in the pool or the core's queue
 * (KDBUS_WIRE_RETURN_RECV_EMPTY). No drain, so safe inside a delivery. */
bool native_conn_recv_empty(NativeConn *nc);
/* true when nothing waits in the core's queue (for pool space); the pool may hold some. */
bool native_conn_queue_empty(NativeConn *nc);

/* End the pending SYNC_REPLY: NativeConnOps.sync_done with these, then the cancel fd is
 * closed. (native-conn.c; used by delivery and reply_lost.) */
void native_conn_sync_finish(NativeConn *nc, int error, uint64_t offset, uint64_t size,
                             int *fds, unsigned n_fds);
/* The pending SYNC_REPLY's CANCEL_FD became readable: the call is forgotten (a late reply
 * finds no slot) and the SEND fails ECANCELED, as in kdbus. No-op without one pending. */
void native_conn_sync_cancel(NativeConn *nc);

/* Write queued messages into the pool (after FREE made room); called internally too. */
void native_conn_drain(NativeConn *nc);

/* Take the messages for @name off the receive list (bridge/activator.c). Return: 0, -ENOMEM. */
int native_conn_unqueue(NativeConn *nc, const char *name, BridgeMsg ***msgs, size_t *n,
                        size_t *cap);

/* From bridge/native-send.c: SEND. */
int native_conn_send(NativeConn *nc, void *buf, size_t size, const int *fds, unsigned n_fds);
/* From bridge/native-names.c: NAME_ACQUIRE, NAME_RELEASE, LIST, CONN_INFO. */
int native_conn_name_acquire(NativeConn *nc, void *buf, size_t size);
int native_conn_name_release(NativeConn *nc, void *buf, size_t size);
int native_conn_list(NativeConn *nc, void *buf, size_t size);
int native_conn_info(NativeConn *nc, void *buf, size_t size);

/* From bridge/native-update.c: UPDATE, BUS_CREATOR_INFO. */
int native_conn_update(NativeConn *nc, void *buf, size_t size);
int native_conn_bus_creator_info(NativeConn *nc, void *buf, size_t size);

/* From bridge/native-holder.c: policy holders and activators (their entries are
 * Bus.holder_policy). */
int native_holder_set(NativeConn *nc, const struct kdbus_item *items, size_t items_size);
int native_activator_policy_set(NativeConn *nc, const struct kdbus_item *items,
                                size_t items_size);
void native_holder_drop(NativeConn *nc);
bool native_holder_may(const NativeConn *nc, uint64_t command);

struct kdbus_cmd;

/* From bridge/native-endpoint.c: ENDPOINT_MAKE (on a handle without HELLO) and
 * ENDPOINT_UPDATE (by the handle that made the endpoint). */
int native_endpoint_make(Bus *bus, const BridgeCreds *creds, const BusEndpoint *via,
                         void *buf, size_t size, uint64_t *ret_flags, BusEndpoint **ret);
int native_endpoint_update(BusEndpoint *ep, void *buf, size_t size);

/* Every item in @size bytes from @items is at least a header long and inside: 0 or -EINVAL. */
int native_items_check(const void *items, size_t size);

/* kdbus_item_validate_name() for a MAKE_NAME or CONN_DESCRIPTION item: 0, -EINVAL or
 * -ENAMETOOLONG. */
int native_item_name_check(const struct kdbus_item *item);

/* The command at @cmd (items from @items_at) without its KDBUS_ITEM_NEGOTIATE item:
 * *ret_copy NULL (it has none) or a copy to run the command on, then handed to
 * native_items_negotiate_done(). 0, -EINVAL or -ENOMEM. */
int native_items_negotiate(const void *cmd, size_t size, size_t items_at, void **ret_copy);
/* Copy the fixed struct of @copy back to @cmd (cmd->size as sent) and free @copy. */
void native_items_negotiate_done(void *cmd, size_t size, size_t struct_size, void *copy);

/* The struct kdbus_cmd that BUS_MAKE and ENDPOINT_MAKE share: its size, the MAKE_ACCESS_*
 * flags (NEGOTIATE answered: 1), its items' bounds. 0, 1 or -EINVAL. */
int native_make_cmd_check(struct kdbus_cmd *cmd, size_t size);

/* From bridge/native-match.c: MATCH_ADD, MATCH_REMOVE; the records of a closed connection. */
int native_conn_match_add(NativeConn *nc, void *buf, size_t size);
int native_conn_match_remove(NativeConn *nc, void *buf, size_t size);
void native_conn_matches_clear(NativeConn *nc);

/* From bridge/native-notify.c: kdbus's notifications (KDBUS_SRC_ID_KERNEL messages), called
 * by the bus's notification helpers (bridge/bus.c) next to the installed handler. */
void native_notify_id(Bus *bus, BridgeConn *conn, bool added);
void native_notify_name(Bus *bus, const char *name, BridgeConn *old_owner, unsigned old_flags,
                        BridgeConn *new_owner, unsigned new_flags);
/* One NAME_* notification with the ids and flags given (activators: bridge/activator.c). */
void native_notify_name_change(Bus *bus, uint64_t type, const char *name, uint64_t old_id,
                               uint64_t old_flags, uint64_t new_id, uint64_t new_flags);
/* The name flags kdbus reported for an activator holding its name (no owner has it). */
#define NATIVE_ACTIVATOR_NAME_FLAGS (KDBUS_NAME_ACTIVATOR | KDBUS_NAME_PRIMARY)
/* From bridge/native-names.c: the kdbus name flags of an owner that asked with BRIDGE_NAME_*
 * @flags, @primary or queued; of @bus's activator for @name (IN_QUEUE while an owner has it). */
uint64_t native_name_flags(unsigned flags, bool primary);
uint64_t native_activator_name_flags(Bus *bus, const char *name);
/* A call of @caller will get no reply. Return: true if @caller is native and was told (a
 * REPLY_TIMEOUT / REPLY_DEAD message, or its SYNC_REPLY fails ETIMEDOUT / EPIPE); false
 * for a legacy caller, which gets the handler's dbus1 error. */
bool native_notify_reply_lost(BridgeConn *caller, uint32_t serial, bool timed_out);
/* The answer to @caller's call @serial could not be delivered (@bridge_error, a positive
 * BRIDGE_E_*): a caller blocked in SYNC_REPLY on it gets the errno, EREMOTEIO for fds it
 * refuses (kdbus_conn_entry_sync_attach()). Nothing for others. */
void native_notify_reply_undelivered(BridgeConn *caller, uint32_t serial, int bridge_error);
/* Does @m's notification rules match the notification @item? */
bool native_match_notify(const NativeMatch *m, const struct kdbus_item *item);
void native_match_free(NativeMatch *m);

/* Metadata under the consent rule; see bridge/native-meta.c. */
int native_meta_capture(NativeConn *nc);
void native_meta_free(NativeMeta *m);
/* Take HELLO's CREDS, PIDS or SECLABEL @item into *@fake (made on first use).
 * Return: 0, -EINVAL (a wrong size, a label that is no string, an item twice), -ENOMEM. */
int native_fake_meta_add(NativeFakeMeta **fake, const struct kdbus_item *item);
NativeFakeMeta *native_fake_meta_free(NativeFakeMeta *fake);
DEFINE_CLEANUP(NativeFakeMeta *, native_fake_meta_free);
/* The credentials the bus shows of @conn to others (the driver's GetConnectionUnixUser /
 * ...ProcessID / ...Credentials): its own, or what its privileged HELLO stood in with (no
 * groups and no pidfd then: those would be the stand-in's). A shallow copy: the pointers
 * stay @conn's. */
void native_conn_shown_creds(const BridgeConn *conn, BridgeCreds *ret);
/* Whether @conn's shown credentials are those a privileged HELLO gave (not its own). */
bool native_conn_creds_faked(const BridgeConn *conn);
/* /proc items of @pid (those of the KDBUS_ATTACH_* in @what), kept only if @pidfd still
 * names a live process afterwards.
 * Return: 0 (*ret NULL if nothing could be captured) or -ENOMEM. */
int native_meta_read_proc(pid_t pid, int pidfd, uint64_t what, NativeMeta **ret);
/* The transport's per-datagram credentials for the next command of a
 * KDBUS_HELLO_CAPTURE_PER_MESSAGE peer (@pidfd borrowed, -1: none); @have false: none came. */
void native_conn_set_send_creds(NativeConn *nc, bool have, uint32_t uid, uint32_t gid,
                                uint32_t pid, int pidfd, const char *seclabel);
/* The receive masks of the bus's native connections changed from @old to @new (0: none):
 * the per-bit counts per-message capture reads (native_meta_capture_msg). */
void native_meta_recv_account(Bus *bus, uint64_t old, uint64_t new);
/* Attach the per-message capture of @nc's SEND to @m. Return: 0 or -ENOMEM. */
int native_meta_capture_msg(NativeConn *nc, BridgeMsg *m);
/* The /proc items of @m (TID_COMM, PID_COMM, EXE, CMDLINE, CGROUP, CAPS, AUDIT) that
 * @attach asks for: their size, and writing them at @p (CAPS and AUDIT's loginuid as
 * @receiver's user namespace sees them, NULL: the bus's). */
size_t native_meta_proc_size(uint64_t attach, const NativeMeta *m);
uint8_t *native_meta_proc_write(uint8_t *p, uint64_t attach, const NativeMeta *m,
                                const NativeConn *receiver);
/* AUXGROUPS of groups captured at connect (a connection's creds, a bus instance's maker's)
 * and SECLABEL items that @attach asks for: their size, and writing them at @p (the groups
 * as @receiver's user namespace sees them). */
size_t native_meta_groups_size(uint64_t attach, const gid_t *groups, unsigned n_groups);
uint8_t *native_meta_groups_write(uint8_t *p, uint64_t attach, const gid_t *groups,
                                  unsigned n_groups, const NativeConn *receiver);
size_t native_meta_seclabel_size(uint64_t attach, const char *label);
uint8_t *native_meta_seclabel_write(uint8_t *p, uint64_t attach, const char *label);
/* BridgeMsg.sender_meta's destructor. */
void native_msg_meta_free(void *meta);

/* Namespaces (bridge/native-ns.c). */
int native_ns_capture(pid_t pid, NativeNs **ret);
void native_ns_free(NativeNs *ns);
uint32_t native_ns_uid(const NativeConn *receiver, uint32_t uid);
uint32_t native_ns_gid(const NativeConn *receiver, uint32_t gid);
/* An id @id of the user namespace @ns (NULL: the bus's) as the bus sees it, into *ret
 * (@gid: a group id). Return: 0, or -EINVAL if @ns does not map it. */
int native_ns_id_to_bus(const NativeNs *ns, bool gid, uint32_t id, uint32_t *ret);
uint32_t native_ns_pid(const NativeConn *receiver, const BridgeConn *sender, uint32_t pid);
/* @caps (inheritable, permitted, effective, bounding) of a process in user namespace
 * @userns (0: the bus's) with effective uid @euid, as @receiver's user namespace sees
 * them (kdbus_meta_export_caps): written to @ret. */
void native_ns_caps(const NativeConn *receiver, uint64_t userns, bool have_euid, uint32_t euid,
                    const uint64_t caps[4], uint64_t ret[4]);
/* The inode of the bus's own user namespace (0 if unknown). */
uint64_t native_ns_bus_userns(void);
uint64_t native_attach_flags(uint64_t wanted, const BridgeConn *sender, uint64_t *ret_declined);
uint64_t native_attach_flags_for(const NativeConn *receiver, uint64_t wanted,
                                 const BridgeConn *sender, uint64_t *ret_declined);
int native_attach_check(const Bus *bus, uint64_t *send, uint64_t *recv);
/* Could @receiver's pid namespace see @sender's process? (bridge/native-ns.c) */
bool native_ns_pid_visible(const NativeConn *receiver, const BridgeConn *sender);
/* @m: the message the metadata goes with (its per-message capture), or NULL; @receiver:
 * whose namespaces the ids are shown in, or NULL (the bus's). */
size_t native_meta_size(uint64_t attach, uint64_t declined, const BridgeConn *sender,
                        const BridgeMsg *m);
uint8_t *native_meta_write(uint8_t *p, uint64_t attach, uint64_t declined, Bus *bus,
                           const BridgeConn *sender, const BridgeMsg *m,
                           const NativeConn *receiver);

/* From bridge/native-special.c: monitors and activators (kdbus's special connections). */
/* HELLO's flags and NAME item: -EINVAL (more than one kind, a NAME where none belongs or
 * none where one must be), -EPERM (not the bus's owner uid or root), -EOPNOTSUPP (policy
 * holders). */
int native_special_hello_check(const Bus *bus, const BridgeCreds *creds, uint64_t flags,
                               const char *name);
/* Activate @nc's connection as its HELLO flags say (ordinary, monitor, activator of
 * @name). Return: 0 or a negative errno for the peer. */
int native_special_hello(NativeConn *nc, const char *name);
/* May @nc (a monitor, an activator) run @command? */
bool native_special_may(const NativeConn *nc, uint64_t command);
/* The dst_id a monitor sees for a message to @destination. */
uint64_t native_monitor_dst_id(Bus *bus, const char *destination);

/* Map a BRIDGE_E_* / NAME_E_* outcome to kdbus's errno (negative). */
int native_errno_from_bridge(int r);
