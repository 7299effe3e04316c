/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * The binary layout of kdbus's final UAPI, written for kdbus-compat from kdbus's
 * documentation (kdbus.txt and the kdbus.*(7) pages). Every structure is a sequence of
 * 64-bit fields (a few 32-bit pairs), 8-byte aligned, with a leading @size that covers the
 * struct plus its trailing items. tests/unit/native/test-abi.c pins every size and offset.
 *
 * Differences from the kernel ABI, because kdbusd speaks it over a SOCK_SEQPACKET socket and
 * not through ioctl() (libkdbus/ hides all of them; see docs/native.md):
 *  - The command codes below keep kdbus's ioctl numbers and are sent in front of the
 *    command struct (struct kdbus_wire_request) instead of being passed to ioctl().
 *  - Addresses in the caller's memory (kdbus_cmd_send.msg_address, kdbus_vec.address of a
 *    PAYLOAD_VEC) are byte offsets into the same datagram, since the bus cannot read the
 *    caller's memory.
 *  - File descriptors (FDS, PAYLOAD_MEMFD) travel as SCM_RIGHTS; in the items they are
 *    indices into the datagram's fd array. Received fds arrive with the RECV reply, in the
 *    order of the message's FDS item; the pool holds -1 in their place.
 *
 * Plain C11 with fixed-width types and no dependency on the rest of the tree.
 */
#include <stdint.h>
#include <linux/ioctl.h>

/* ---- special ids ---- */
#define KDBUS_IOCTL_MAGIC               0x95
#define KDBUS_SRC_ID_KERNEL             (0)             /* messages from the bus itself */
#define KDBUS_DST_ID_NAME               (0)             /* destination given as DST_NAME */
#define KDBUS_MATCH_ID_ANY              (~0ULL)
#define KDBUS_DST_ID_BROADCAST          (~0ULL)
#define KDBUS_FLAG_NEGOTIATE            (1ULL << 63)    /* ask which flags are known */

/* ---- item payloads ---- */

/* ID_ADD / ID_REMOVE notifications, and the halves of a NAME_* notification. */
struct kdbus_notify_id_change {
        uint64_t id;
        uint64_t flags;                 /* KDBUS_HELLO_* of that connection */
};

struct kdbus_notify_name_change {
        struct kdbus_notify_id_change old_id;
        struct kdbus_notify_id_change new_id;
        char name[];
};

/* CREDS: all ids are 64-bit in the final ABI. */
struct kdbus_creds {
        uint64_t uid;
        uint64_t euid;
        uint64_t suid;
        uint64_t fsuid;
        uint64_t gid;
        uint64_t egid;
        uint64_t sgid;
        uint64_t fsgid;
};

struct kdbus_pids {
        uint64_t pid;
        uint64_t tid;
        uint64_t ppid;
};

struct kdbus_caps {
        uint32_t last_cap;
        uint32_t caps[];                /* 4 sets: inheritable, permitted, effective, bounding */
};

struct kdbus_audit {
        uint32_t sessionid;
        uint32_t loginuid;
};

struct kdbus_timestamp {
        uint64_t seqnum;
        uint64_t monotonic_ns;
        uint64_t realtime_ns;
};

/* PAYLOAD_VEC (address in the sender) and PAYLOAD_OFF (offset from the message start). */
struct kdbus_vec {
        uint64_t size;
        union {
                uint64_t address;
                uint64_t offset;
        };
};

struct kdbus_bloom_parameter {
        uint64_t size;                  /* bytes, a multiple of 8 */
        uint64_t n_hash;                /* hash functions per entry */
};

struct kdbus_bloom_filter {
        uint64_t generation;
        uint64_t data[];
};

/* PAYLOAD_MEMFD: a sealed memfd and the range of it that is payload. */
struct kdbus_memfd {
        uint64_t start;
        uint64_t size;
        int fd;
        uint32_t __pad;
};

/* NAME / OWNED_NAME / MAKE_NAME with flags */
struct kdbus_name {
        uint64_t flags;
        char name[];
};

enum kdbus_policy_access_type {
        _KDBUS_POLICY_ACCESS_NULL,
        KDBUS_POLICY_ACCESS_USER,
        KDBUS_POLICY_ACCESS_GROUP,
        KDBUS_POLICY_ACCESS_WORLD,
};

/* kdbus's final values: SEE is 0 (each level implies the ones below it) */
enum kdbus_policy_type {
        KDBUS_POLICY_SEE = 0,
        KDBUS_POLICY_TALK,
        KDBUS_POLICY_OWN,
};

struct kdbus_policy_access {
        uint64_t type;                  /* enum kdbus_policy_access_type */
        uint64_t access;                /* enum kdbus_policy_type */
        uint64_t id;                    /* uid or gid */
};

/* kdbus-compat's extension (not in kdbus): what a KDBUS_ITEM_POLICY_RULE lets through */
enum kdbus_policy_rule_type {
        _KDBUS_POLICY_RULE_NULL,
        KDBUS_POLICY_RULE_CALL,         /* method calls to the name's owner */
        KDBUS_POLICY_RULE_BROADCAST,    /* broadcast signals from the name's owner */
};

/* kdbus-compat's extension (not in kdbus): xdg-dbus-proxy's --call / --broadcast RULE,
 * "[METHOD][@PATH]" (METHOD "*", "org.foo.*", "org.foo", "org.foo.Bar.Method"; PATH an
 * object path, or one followed by a slash and a star for its subtree), NUL-terminated */
struct kdbus_policy_rule {
        uint64_t type;                  /* enum kdbus_policy_rule_type */
        char rule[];
};

/* What metadata a connection sends / wants; bit n is item type _KDBUS_ITEM_ATTACH_BASE + n. */
enum kdbus_attach_flags {
        KDBUS_ATTACH_TIMESTAMP          = 1ULL << 0,
        KDBUS_ATTACH_CREDS              = 1ULL << 1,
        KDBUS_ATTACH_PIDS               = 1ULL << 2,
        KDBUS_ATTACH_AUXGROUPS          = 1ULL << 3,
        KDBUS_ATTACH_NAMES              = 1ULL << 4,
        KDBUS_ATTACH_TID_COMM           = 1ULL << 5,
        KDBUS_ATTACH_PID_COMM           = 1ULL << 6,
        KDBUS_ATTACH_EXE                = 1ULL << 7,
        KDBUS_ATTACH_CMDLINE            = 1ULL << 8,
        KDBUS_ATTACH_CGROUP             = 1ULL << 9,
        KDBUS_ATTACH_CAPS               = 1ULL << 10,
        KDBUS_ATTACH_SECLABEL           = 1ULL << 11,
        KDBUS_ATTACH_AUDIT              = 1ULL << 12,
        KDBUS_ATTACH_CONN_DESCRIPTION   = 1ULL << 13,
        _KDBUS_ATTACH_ALL               = (1ULL << 14) - 1,
        _KDBUS_ATTACH_ANY               = ~0ULL,
};

enum kdbus_item_type {
        _KDBUS_ITEM_NULL,
        _KDBUS_ITEM_USER_BASE,
        KDBUS_ITEM_NEGOTIATE = _KDBUS_ITEM_USER_BASE,
        KDBUS_ITEM_PAYLOAD_VEC,
        KDBUS_ITEM_PAYLOAD_OFF,
        KDBUS_ITEM_PAYLOAD_MEMFD,
        KDBUS_ITEM_FDS,
        KDBUS_ITEM_CANCEL_FD,
        KDBUS_ITEM_BLOOM_PARAMETER,
        KDBUS_ITEM_BLOOM_FILTER,
        KDBUS_ITEM_BLOOM_MASK,
        KDBUS_ITEM_DST_NAME,
        KDBUS_ITEM_MAKE_NAME,
        KDBUS_ITEM_ATTACH_FLAGS_SEND,
        KDBUS_ITEM_ATTACH_FLAGS_RECV,
        KDBUS_ITEM_ID,
        KDBUS_ITEM_NAME,
        KDBUS_ITEM_DST_ID,

        /* metadata, in the order of the KDBUS_ATTACH_* bits */
        _KDBUS_ITEM_ATTACH_BASE = 0x1000,
        KDBUS_ITEM_TIMESTAMP = _KDBUS_ITEM_ATTACH_BASE,
        KDBUS_ITEM_CREDS,
        KDBUS_ITEM_PIDS,
        KDBUS_ITEM_AUXGROUPS,
        KDBUS_ITEM_OWNED_NAME,
        KDBUS_ITEM_TID_COMM,
        KDBUS_ITEM_PID_COMM,
        KDBUS_ITEM_EXE,
        KDBUS_ITEM_CMDLINE,
        KDBUS_ITEM_CGROUP,
        KDBUS_ITEM_CAPS,
        KDBUS_ITEM_SECLABEL,
        KDBUS_ITEM_AUDIT,
        KDBUS_ITEM_CONN_DESCRIPTION,

        _KDBUS_ITEM_POLICY_BASE = 0x2000,
        KDBUS_ITEM_POLICY_ACCESS = _KDBUS_ITEM_POLICY_BASE,
        /* kdbus-compat's extension (not in kdbus): a struct kdbus_policy_rule after a
         * NAME of ENDPOINT_UPDATE with KDBUS_ENDPOINT_POLICY_XDG */
        KDBUS_ITEM_POLICY_RULE = _KDBUS_ITEM_POLICY_BASE + 0x100,
        /* kdbus-compat's extension (not in kdbus): a struct kdbus_endpoint_info after
         * each endpoint's MAKE_NAME in the answer to KDBUS_CMD_ENDPOINT_LIST */
        KDBUS_ITEM_ENDPOINT_INFO,

        /* notifications the bus generates */
        _KDBUS_ITEM_KERNEL_BASE = 0x8000,
        KDBUS_ITEM_NAME_ADD = _KDBUS_ITEM_KERNEL_BASE,
        KDBUS_ITEM_NAME_REMOVE,
        KDBUS_ITEM_NAME_CHANGE,
        KDBUS_ITEM_ID_ADD,
        KDBUS_ITEM_ID_REMOVE,
        KDBUS_ITEM_REPLY_TIMEOUT,
        KDBUS_ITEM_REPLY_DEAD,
};

/* An item: 16 bytes of header, then the payload; the next item starts 8-aligned. */
struct kdbus_item {
        uint64_t size;                  /* header + payload, without the trailing padding */
        uint64_t type;                  /* enum kdbus_item_type */
        union {
                uint8_t data[0];
                uint32_t data32[0];
                uint64_t data64[0];
                char str[0];
                uint64_t id;
                struct kdbus_vec vec;
                struct kdbus_creds creds;
                struct kdbus_pids pids;
                struct kdbus_audit audit;
                struct kdbus_caps caps;
                struct kdbus_timestamp timestamp;
                struct kdbus_name name;
                struct kdbus_bloom_parameter bloom_parameter;
                struct kdbus_bloom_filter bloom_filter;
                struct kdbus_memfd memfd;
                int fds[0];
                struct kdbus_notify_name_change name_change;
                struct kdbus_notify_id_change id_change;
                struct kdbus_policy_access policy_access;
        };
};

#define KDBUS_ITEM_HEADER_SIZE          16u
#define KDBUS_ALIGN8(l)                 (((l) + 7u) & ~(__typeof__(l))7u)
#define KDBUS_ITEM_SIZE(payload)        KDBUS_ALIGN8((payload) + KDBUS_ITEM_HEADER_SIZE)
#define KDBUS_ITEM_NEXT(item) \
        ((struct kdbus_item *)((uint8_t *)(item) + KDBUS_ALIGN8((item)->size)))
/* Each item in the @size bytes from @first, whose bounds were checked before (every item
 * inside, at least a header long). Not kdbus's UAPI: the one item loop of this tree. */
#define KDBUS_ITEMS_FOREACH(item, first, size)                                          \
        for ((item) = (first);                                                          \
             (const uint8_t *)(item) < (const uint8_t *)(first) + (size);               \
             (item) = KDBUS_ITEM_NEXT(item))

/* What NEGOTIATE and some replies return: a bare list of items. */
struct kdbus_item_list {
        uint64_t size;
        struct kdbus_item items[];
};

/* ---- messages ---- */

enum kdbus_msg_flags {
        KDBUS_MSG_EXPECT_REPLY          = 1ULL << 0,
        KDBUS_MSG_NO_AUTO_START         = 1ULL << 1,
        KDBUS_MSG_SIGNAL                = 1ULL << 2,
};

/* "DBusDBus" in ASCII: the payload is D-Bus marshalled. 0: a bus notification. */
enum kdbus_payload_type {
        KDBUS_PAYLOAD_KERNEL,
        KDBUS_PAYLOAD_DBUS              = 0x4442757344427573ULL,
};

struct kdbus_msg {
        uint64_t size;
        uint64_t flags;                 /* KDBUS_MSG_* */
        int64_t priority;               /* USE_PRIORITY: lower values are received first */
        uint64_t dst_id;                /* id, KDBUS_DST_ID_NAME or KDBUS_DST_ID_BROADCAST */
        uint64_t src_id;                /* filled in by the bus */
        uint64_t payload_type;          /* enum kdbus_payload_type */
        uint64_t cookie;                /* the sender's serial of this message */
        union {
                uint64_t timeout_ns;    /* calls: absolute CLOCK_MONOTONIC deadline */
                uint64_t cookie_reply;  /* replies: the cookie answered */
        };
        struct kdbus_item items[];
} __attribute__((__aligned__(8)));

/* Where a message was placed in the pool. */
struct kdbus_msg_info {
        uint64_t offset;
        uint64_t msg_size;
        uint64_t return_flags;          /* KDBUS_RECV_RETURN_* */
};

enum kdbus_send_flags {
        KDBUS_SEND_SYNC_REPLY           = 1ULL << 0,
};

struct kdbus_cmd_send {
        uint64_t size;
        uint64_t flags;                 /* KDBUS_SEND_* */
        uint64_t return_flags;
        uint64_t msg_address;           /* over the socket: offset of the kdbus_msg in the datagram */
        struct kdbus_msg_info reply;    /* SYNC_REPLY: where the reply was placed */
        struct kdbus_item items[];      /* CANCEL_FD */
} __attribute__((__aligned__(8)));

enum kdbus_recv_flags {
        KDBUS_RECV_PEEK                 = 1ULL << 0,
        KDBUS_RECV_DROP                 = 1ULL << 1,
        KDBUS_RECV_USE_PRIORITY         = 1ULL << 2,
};

enum kdbus_recv_return_flags {
        KDBUS_RECV_RETURN_INCOMPLETE_FDS = 1ULL << 0,
        KDBUS_RECV_RETURN_DROPPED_MSGS  = 1ULL << 1,
};

struct kdbus_cmd_recv {
        uint64_t size;
        uint64_t flags;                 /* KDBUS_RECV_* */
        uint64_t return_flags;
        int64_t priority;               /* USE_PRIORITY: take the message of the lowest
                                         * value if it is at most this (else EAGAIN);
                                         * not with DROP (EINVAL) */
        uint64_t dropped_msgs;          /* broadcasts lost since the last RECV */
        struct kdbus_msg_info msg;
        struct kdbus_item items[];
} __attribute__((__aligned__(8)));

struct kdbus_cmd_free {
        uint64_t size;
        uint64_t flags;
        uint64_t return_flags;
        uint64_t offset;                /* a slice offset returned by the bus */
        struct kdbus_item items[];
} __attribute__((__aligned__(8)));

/* ---- connections ---- */

enum kdbus_hello_flags {
        KDBUS_HELLO_ACCEPT_FD           = 1ULL << 0,
        KDBUS_HELLO_ACTIVATOR           = 1ULL << 1,
        KDBUS_HELLO_POLICY_HOLDER       = 1ULL << 2,
        KDBUS_HELLO_MONITOR             = 1ULL << 3,
        /* Our two extensions sit at bits kdbus never gave a HELLO flag: bit 32 is the
         * "faulty flag" of kdbus's own hello selftest (EINVAL expected), so they start
         * high, below KDBUS_FLAG_NEGOTIATE (bit 63). */
        /* kdbus-compat's extension (not in kdbus): the bus captures this peer's CREDS,
         * PIDS and /proc items per message, at SEND, from the datagram's SCM_CREDENTIALS
         * and SCM_PIDFD, instead of once at connect (docs/native.md, Metadata) */
        KDBUS_HELLO_CAPTURE_PER_MESSAGE = 1ULL << 60,
        /* kdbus-compat's extension (not in kdbus): this peer may send KDBUS_WIRE_BATCH
         * datagrams (FREEs carried with the next command; see the socket framing below
         * and docs/native.md, "Batched commands") */
        KDBUS_HELLO_WIRE_BATCH          = 1ULL << 61,
};

struct kdbus_cmd_hello {
        uint64_t size;
        uint64_t flags;                 /* KDBUS_HELLO_* */
        uint64_t return_flags;
        uint64_t attach_flags_send;     /* KDBUS_ATTACH_* this peer consents to send */
        uint64_t attach_flags_recv;     /* KDBUS_ATTACH_* this peer wants to receive */
        uint64_t bus_flags;             /* returned */
        uint64_t id;                    /* returned: the connection id */
        uint64_t pool_size;             /* a multiple of the page size */
        uint64_t offset;                /* returned: items in the pool (BLOOM_PARAMETER) */
        uint64_t items_size;            /* returned: their size */
        uint8_t id128[16];              /* returned: the bus id */
        struct kdbus_item items[];
} __attribute__((__aligned__(8)));

/* A connection's or the bus creator's description, in the pool. */
struct kdbus_info {
        uint64_t size;
        uint64_t id;
        uint64_t flags;
        struct kdbus_item items[];
} __attribute__((__aligned__(8)));

enum kdbus_list_flags {
        KDBUS_LIST_UNIQUE               = 1ULL << 0,
        KDBUS_LIST_NAMES                = 1ULL << 1,
        KDBUS_LIST_ACTIVATORS           = 1ULL << 2,
        KDBUS_LIST_QUEUED               = 1ULL << 3,
};

struct kdbus_cmd_list {
        uint64_t size;
        uint64_t flags;                 /* KDBUS_LIST_* */
        uint64_t return_flags;
        uint64_t offset;                /* returned: a sequence of kdbus_info in the pool */
        uint64_t list_size;             /* returned */
        struct kdbus_item items[];
} __attribute__((__aligned__(8)));

struct kdbus_cmd_info {
        uint64_t size;
        uint64_t flags;
        uint64_t return_flags;
        uint64_t id;                    /* the connection, or 0 with a NAME item */
        uint64_t attach_flags;          /* metadata wanted */
        uint64_t offset;                /* returned: the kdbus_info in the pool */
        uint64_t info_size;             /* returned */
        struct kdbus_item items[];
} __attribute__((__aligned__(8)));

enum kdbus_cmd_match_flags {
        KDBUS_MATCH_REPLACE             = 1ULL << 0,
};

struct kdbus_cmd_match {
        uint64_t size;
        uint64_t flags;
        uint64_t return_flags;
        uint64_t cookie;                /* chosen by the peer; MATCH_REMOVE names it */
        struct kdbus_item items[];      /* BLOOM_MASK, NAME, ID, NAME_ADD, ... */
} __attribute__((__aligned__(8)));

enum kdbus_make_flags {
        KDBUS_MAKE_ACCESS_GROUP         = 1ULL << 0,
        KDBUS_MAKE_ACCESS_WORLD         = 1ULL << 1,
        /* kdbus-compat's extension (not in kdbus), ENDPOINT_MAKE: the one fd sent with the
         * command is a listening AF_UNIX stream socket, bound wherever its maker chose; the
         * endpoint's legacy (D-Bus) clients come through it, and no socket files are made
         * in the bus's directory (kdbus-proxy, docs/native.md "Custom endpoints") */
        KDBUS_MAKE_LEGACY_FD            = 1ULL << 62,
};

/* kdbus-compat's extension (not in kdbus): one endpoint in KDBUS_CMD_ENDPOINT_LIST */
struct kdbus_endpoint_info {
        uint64_t flags;                 /* enum kdbus_endpoint_flags in force */
        uint64_t uid;                   /* its maker */
        uint64_t n_conns;               /* connections that came through it */
};

/* kdbus-compat's extension (not in kdbus): ENDPOINT_UPDATE flags */
enum kdbus_endpoint_flags {
        /* xdg-dbus-proxy's policy language: a NAME "a.b.*" covers a.b and every name below
         * it, at any depth, and every entry that covers a name counts (the highest level
         * wins); NAMEs may carry KDBUS_ITEM_POLICY_RULEs; a peer that called a connection
         * of the endpoint is visible to it while connected */
        KDBUS_ENDPOINT_POLICY_XDG       = 1ULL << 59,
        /* xdg-dbus-proxy's --sloppy-names: every unique name is visible (SEE) */
        KDBUS_ENDPOINT_SLOPPY_NAMES     = 1ULL << 60,
        /* xdg-dbus-proxy without --filter: the endpoint filters nothing (its peers are
         * still unprivileged and cannot eavesdrop) */
        KDBUS_ENDPOINT_UNFILTERED       = 1ULL << 61,
};

enum kdbus_name_flags {
        KDBUS_NAME_REPLACE_EXISTING     = 1ULL << 0,
        KDBUS_NAME_ALLOW_REPLACEMENT    = 1ULL << 1,
        KDBUS_NAME_QUEUE                = 1ULL << 2,
        KDBUS_NAME_IN_QUEUE             = 1ULL << 3,
        KDBUS_NAME_ACTIVATOR            = 1ULL << 4,
        KDBUS_NAME_PRIMARY              = 1ULL << 5,
        KDBUS_NAME_ACQUIRED             = 1ULL << 6,
};

/* The generic command: BUS_MAKE, ENDPOINT_*, UPDATE, BYEBYE, NAME_ACQUIRE/RELEASE. */
struct kdbus_cmd {
        uint64_t size;
        uint64_t flags;
        uint64_t return_flags;
        struct kdbus_item items[];
} __attribute__((__aligned__(8)));

/* ---- command codes: kdbus's ioctl numbers ---- */
/* As kdbus's final UAPI header numbers them, grouped by the object that owns the handle:
 * bus owner 0x00-0x0f, endpoint owner 0x10-0x1f, connection 0x80-0xff (kdbus regrouped
 * them so in 2015; the earlier numbers, HELLO 0x20 and so on, are gone). */
#define KDBUS_CMD_BUS_MAKE               _IOW(KDBUS_IOCTL_MAGIC, 0x00, struct kdbus_cmd)
#define KDBUS_CMD_ENDPOINT_MAKE          _IOW(KDBUS_IOCTL_MAGIC, 0x10, struct kdbus_cmd)
#define KDBUS_CMD_ENDPOINT_UPDATE        _IOW(KDBUS_IOCTL_MAGIC, 0x11, struct kdbus_cmd)
/* kdbus-compat's extension (not in kdbus), on a handle without HELLO: the caller's
 * endpoints (everybody's for the privileged), each as MAKE_NAME, ENDPOINT_INFO, then its
 * policy as ENDPOINT_UPDATE takes it; the answer replaces the struct kdbus_cmd sent, as
 * far as the buffer holds it (its size field: the size of the whole answer) */
#define KDBUS_CMD_ENDPOINT_LIST          _IOWR(KDBUS_IOCTL_MAGIC, 0x1f, struct kdbus_cmd)
#define KDBUS_CMD_HELLO                  _IOWR(KDBUS_IOCTL_MAGIC, 0x80, struct kdbus_cmd_hello)
#define KDBUS_CMD_UPDATE                 _IOW(KDBUS_IOCTL_MAGIC, 0x81, struct kdbus_cmd)
#define KDBUS_CMD_BYEBYE                 _IOW(KDBUS_IOCTL_MAGIC, 0x82, struct kdbus_cmd)
#define KDBUS_CMD_FREE                   _IOW(KDBUS_IOCTL_MAGIC, 0x83, struct kdbus_cmd_free)
#define KDBUS_CMD_CONN_INFO              _IOR(KDBUS_IOCTL_MAGIC, 0x84, struct kdbus_cmd_info)
#define KDBUS_CMD_BUS_CREATOR_INFO       _IOR(KDBUS_IOCTL_MAGIC, 0x85, struct kdbus_cmd_info)
#define KDBUS_CMD_LIST                   _IOR(KDBUS_IOCTL_MAGIC, 0x86, struct kdbus_cmd_list)
#define KDBUS_CMD_SEND                   _IOW(KDBUS_IOCTL_MAGIC, 0x90, struct kdbus_cmd_send)
#define KDBUS_CMD_RECV                   _IOR(KDBUS_IOCTL_MAGIC, 0x91, struct kdbus_cmd_recv)
#define KDBUS_CMD_NAME_ACQUIRE           _IOW(KDBUS_IOCTL_MAGIC, 0xa0, struct kdbus_cmd)
#define KDBUS_CMD_NAME_RELEASE           _IOW(KDBUS_IOCTL_MAGIC, 0xa1, struct kdbus_cmd)
#define KDBUS_CMD_MATCH_ADD              _IOW(KDBUS_IOCTL_MAGIC, 0xb0, struct kdbus_cmd_match)
#define KDBUS_CMD_MATCH_REMOVE           _IOW(KDBUS_IOCTL_MAGIC, 0xb1, struct kdbus_cmd_match)

/* ---- the socket framing of kdbusd's native front end ---- */

/*
 * One request datagram: this header, then the command struct (its @size bytes, items
 * included), then for SEND the kdbus_msg and PAYLOAD_VEC bytes the offsets point at.
 */
struct kdbus_wire_request {
        uint64_t command;               /* KDBUS_CMD_* */
        uint64_t size;                  /* bytes after this header */
};

/* One reply datagram: this header, then the command struct as the bus updated it. */
struct kdbus_wire_reply {
        int64_t error;                  /* 0 or a negative errno, as ioctl() would fail */
        uint64_t size;                  /* bytes after this header */
};

/*
 * kdbus-compat's extension (not in kdbus; only after a HELLO with KDBUS_HELLO_WIRE_BATCH,
 * ENOTTY otherwise): one request datagram that FREEs earlier slices and then runs one
 * command, so that a peer does not pay a datagram round trip per FREE. The request is
 *
 *   struct kdbus_wire_request { KDBUS_WIRE_BATCH, size }
 *   struct kdbus_wire_batch   { n_free, flags 0, offsets[n_free] }
 *   struct kdbus_wire_request { KDBUS_CMD_*, size } and that command's struct, as alone
 *
 * The FREEs are done in order, exactly as n_free FREE commands would be; at the first that
 * fails the rest and the command are not run. The reply is
 *
 *   struct kdbus_wire_reply       { error, size }
 *   struct kdbus_wire_batch_reply { free_error, n_freed, return_flags, 0 }
 *   the command's struct as the bus updated it (none if it was not run)
 *
 * where @error is the command's errno (or free_error when it was not run). A malformed
 * batch (sizes that do not add up, n_free over KDBUS_WIRE_BATCH_MAX_FREE, unknown flags,
 * KDBUS_WIRE_BATCH_HOLD_RECV or _THEN_RECV misused) is EINVAL in both fields, and nothing
 * is run. A SEND
 * with SYNC_REPLY in a batch gets this reply when its answer came.
 *
 * KDBUS_WIRE_BATCH_HOLD_RECV (also kdbus-compat's own): the command must be RECV (or a
 * SEND with KDBUS_WIRE_BATCH_THEN_RECV, below), and the datagram may carry one fd, a cancel fd as SYNC_REPLY's CANCEL_FD (readable: cancel;
 * one epoll cannot watch is EINVAL, found before anything runs), nothing else. When that
 * RECV would answer EAGAIN with nothing to report (no dropped_msgs, and nothing left in
 * front of the pool, which only a message the bus lacked memory to write can be: that is
 * answered EAGAIN at once, RECV_EMPTY clear), the bus holds its reply until a message is queued for the
 * connection (any: a call, a reply, a broadcast, a notification, a message an activator's
 * name brought), and then answers it as RECV would then; the batch reply's RECV_EMPTY says
 * whether more wait. A RECV with KDBUS_RECV_USE_PRIORITY is held the same way when only
 * messages below its threshold wait (RECV's EAGAIN): until one at or above it is queued;
 * those below stay for a later RECV. While a RECV is held, an arriving message answers it instead of
 * writing the wakeup eventfd; when the hold ends and messages are still waiting, the
 * eventfd is written, so a poller on it loses no wakeup. The hold ends with: a message
 * (the RECV's answer); the cancel fd (ECANCELED, nothing received); any datagram the peer
 * sends on the socket (another thread's command: the held RECV is answered first, as
 * RECV then answers, typically EAGAIN, and only then the new command is run); the
 * connection's end (ECONNRESET); the peer closing its socket.
 *
 * KDBUS_WIRE_BATCH_THEN_RECV (kdbus-compat's own), only with KDBUS_WIRE_BATCH_HOLD_RECV:
 * the command must be a SEND without SYNC_REPLY (its fds are the datagram's: no cancel fd
 * then). It runs as always; if it fails, the reply is its own (its errno and struct). If it
 * succeeds, a RECV without flags follows, held as above, and the reply is that RECV's (its
 * errno and struct kdbus_cmd_recv), marked KDBUS_WIRE_RETURN_RECV: a service's answer to
 * one call and its wait for the next go in one datagram.
 *
 * KDBUS_WIRE_BATCH_ARM_RECV (kdbus-compat's own; alone, without HOLD_RECV or THEN_RECV):
 * the command (any but RECV and a SEND with SYNC_REPLY; no cancel fd) runs and is answered
 * as in any batch; then, whatever its result, a RECV without flags is held on this socket
 * as with HOLD_RECV, and its answer is a second reply datagram (batch reply marked
 * KDBUS_WIRE_RETURN_RECV, then struct kdbus_cmd_recv), sent at once if something waits.
 * The RECV is armed exactly when the first reply's free_error is 0 (a malformed batch or
 * a failed FREE arms nothing). A program's SEND then gets its errno at once and the wait
 * for what comes next needs no further request: the peer reads the held answer when it
 * would have polled.
 *
 * KDBUS_WIRE_BATCH_RECV_JOIN (kdbus-compat's own): a second RECV answer joins the reply
 * datagram instead of coming as a datagram of its own (one sendmsg and one recvmsg less):
 * - with KDBUS_WIRE_BATCH_ARM_RECV: when the held RECV is answered at once (something
 *   waited), its answer joins the command's reply (if that passed no fds);
 * - with a RECV without flags (and neither HOLD_RECV, THEN_RECV nor ARM_RECV): when it
 *   received a message without fds and more wait, a second RECV without flags is run at
 *   once and its answer joins. The peer keeps it for the program's next RECV (one message
 *   taken ahead, as a held RECV's answer is).
 * With any other command it is EINVAL. A joined reply has KDBUS_WIRE_RETURN_JOINED in the
 * first batch reply and ends with the second answer as its own datagram would be:
 *
 *   struct kdbus_wire_reply       { error, size }
 *   struct kdbus_wire_batch_reply { 0, 0, return_flags, 0 } (RECV_EMPTY: after it)
 *   struct kdbus_cmd_recv         (exactly its size: no items)
 *
 * and every fd of the datagram is the second answer's.
 */
#define KDBUS_WIRE_BATCH                 _IOWR(KDBUS_IOCTL_MAGIC, 0xc0, struct kdbus_wire_batch)
#define KDBUS_WIRE_BATCH_MAX_FREE        64u

struct kdbus_wire_batch {
        uint64_t n_free;                /* slice offsets to FREE before the command */
        uint64_t flags;                 /* KDBUS_WIRE_BATCH_* */
        uint64_t offsets[];
};

enum kdbus_wire_batch_flags {
        /* the RECV of this batch waits for a message (see above); kdbus-compat's own */
        KDBUS_WIRE_BATCH_HOLD_RECV      = 1ULL << 0,
        /* a RECV follows the batch's SEND (see above); kdbus-compat's own */
        KDBUS_WIRE_BATCH_THEN_RECV      = 1ULL << 1,
        /* the command is answered now, then a RECV is held with a reply of its own
         * (see below); kdbus-compat's own */
        KDBUS_WIRE_BATCH_ARM_RECV       = 1ULL << 2,
        /* a second RECV answer joins the reply datagram (see above); kdbus-compat's own */
        KDBUS_WIRE_BATCH_RECV_JOIN      = 1ULL << 3,
};

enum kdbus_wire_return_flags {
        /* after the command nothing waited in the receive queue: RECV would say EAGAIN
         * (the wakeup eventfd is written when something arrives) */
        KDBUS_WIRE_RETURN_RECV_EMPTY    = 1ULL << 0,
        /* KDBUS_WIRE_BATCH_THEN_RECV: the SEND succeeded, the reply is the RECV's */
        KDBUS_WIRE_RETURN_RECV          = 1ULL << 1,
        /* KDBUS_WIRE_BATCH_RECV_JOIN: a second RECV answer ends the datagram */
        KDBUS_WIRE_RETURN_JOINED        = 1ULL << 2,
};

struct kdbus_wire_batch_reply {
        int64_t free_error;             /* 0, or the errno of the FREE that failed */
        uint64_t n_freed;               /* FREEs done (all of them when free_error is 0) */
        uint64_t return_flags;          /* KDBUS_WIRE_RETURN_* */
        uint64_t reserved;
};

/*
 * kdbus-compat's extension (only after a HELLO with KDBUS_HELLO_WIRE_BATCH, ENOTTY
 * otherwise), for libkdbus-preload.so: kdbus wrote the numbers a received message's fds got
 * in the receiver into its slice (the FDS item's ints, each PAYLOAD_MEMFD item's fd); the
 * fds come with the RECV (or SYNC_REPLY) reply, and the peer tells the bus their numbers:
 *
 *   struct kdbus_wire_request { KDBUS_WIRE_FDS, size }
 *   struct kdbus_wire_fds     { offset of the message's slice, n_fds, fds[n_fds] }
 *
 * in the reply's order (the FDS item's, for a receiver with ACCEPT_FD, then one per
 * PAYLOAD_MEMFD item). The reply is struct kdbus_wire_reply alone: 0, ENXIO (no slice the
 * peer holds there), EINVAL (another count, a malformed request).
 */
#define KDBUS_WIRE_FDS                   _IOW(KDBUS_IOCTL_MAGIC, 0xc1, struct kdbus_wire_fds)

struct kdbus_wire_fds {
        uint64_t offset;
        uint64_t n_fds;
        int32_t fds[];
};

/*
 * kdbus-compat's extension (any handle state), for libkdbus-preload.so: end this handle
 * now (its connection, the bus or endpoint it made), as the release of kdbus's file did,
 * and answer when that is done; then kdbusd closes its end. A close() of the last fd of a
 * kdbus handle was synchronous: the connection's ID_REMOVE had been sent when close()
 * returned. The request has no payload; the reply is struct kdbus_wire_reply, error 0.
 */
#define KDBUS_WIRE_CLOSE                 _IO(KDBUS_IOCTL_MAGIC, 0xc2)

/*
 * kdbus-compat's extension, for libkdbus-preload.so: a further request channel of a
 * connection, so that its threads and forked children each have requests of their own in
 * the bus at once (kdbus's ioctls on one file ran in parallel: a BYEBYE while another
 * thread waits in SYNC_REPLY). Sent as the first request on a new socket to the node the
 * connection was made on:
 *
 *   struct kdbus_wire_request { KDBUS_WIRE_ATTACH, size }
 *   struct kdbus_wire_attach  { id of the connection }
 *
 * with exactly one fd, the connection's pool memfd as HELLO passed it (holding it is the
 * proof of being the connection's peer). The reply is struct kdbus_wire_reply alone: 0, or
 * ENXIO (no such connection of this node, or the fd is not its pool), EBADFD (the socket
 * is a handle already), EINVAL (no or more fds, bad size). Then the socket takes every
 * command of the connection but HELLO (EBADFD), each answered on it, a held RECV and a
 * SYNC_REPLY of its own; KDBUS_WIRE_CLOSE or its close() end only the channel. The
 * connection's end (its first socket closed, the bus gone) closes its channels.
 */
#define KDBUS_WIRE_ATTACH                _IOW(KDBUS_IOCTL_MAGIC, 0xc3, struct kdbus_wire_attach)

struct kdbus_wire_attach {
        uint64_t id;
};

/*
 * kdbus-compat's extension (only after a HELLO with KDBUS_HELLO_WIRE_BATCH, ENOTTY
 * otherwise), for libkdbus-preload.so: kdbus's FREE returned when the slice was free, and
 * the next SEND to the connection could use the space. A FREE the peer answers itself (a
 * slice RECV or SYNC_REPLY handed out) is written into the connection's free ring, a page
 * both sides map read-write; the bus takes what it holds before anything that looks at
 * the pool (an allocation, a FREE, a SEND's room check), so the slice is free from the
 * moment FREE returned, without a request. The request has no payload and no fds; the
 * reply is struct kdbus_wire_reply with one fd, the ring's memfd (KDBUS_WIRE_FREE_RING_BYTES,
 * sealed against resizing), or EINVAL. The same ring for every request of the connection.
 *
 * The peer writes offsets[tail % KDBUS_WIRE_FREE_RING_SIZE] and then advances @tail
 * (release); it may write while tail - head < KDBUS_WIRE_FREE_RING_SIZE (@head read with
 * acquire), else it sends the FREE. The bus does each entry as a FREE (an offset the peer
 * does not hold is ignored) and advances @head. Nothing the peer writes there can free
 * anything but its own slices.
 */
#define KDBUS_WIRE_FREE_RING             _IO(KDBUS_IOCTL_MAGIC, 0xc4)
#define KDBUS_WIRE_FREE_RING_BYTES       4096u
#define KDBUS_WIRE_FREE_RING_SIZE        ((KDBUS_WIRE_FREE_RING_BYTES - 64u) / 8u)

struct kdbus_wire_free_ring {
        uint64_t head;                  /* the bus's: entries before it are done */
        uint64_t tail;                  /* the peer's: entries before it are written */
        uint64_t reserved[6];
        uint64_t offsets[KDBUS_WIRE_FREE_RING_SIZE];
};

/*
 * kdbus-compat's extension (only after a HELLO with KDBUS_HELLO_WIRE_BATCH, ENOTTY
 * otherwise), for libkdbus-preload.so: the program DROPs (RECV with KDBUS_RECV_DROP) a
 * message the library received already with a held RECV and keeps for it. As kdbus's
 * DROP, the message's slice goes and, if it is a call that expects a reply, its reply
 * slot goes and its caller is told at once (REPLY_DEAD; EPIPE for a SYNC_REPLY caller).
 *
 *   struct kdbus_wire_request { KDBUS_WIRE_DROP, size }
 *   struct kdbus_wire_drop    { offset of the message's slice }
 *
 * The reply is struct kdbus_wire_reply alone: 0, ENXIO (no message there the peer
 * received), EINVAL (a malformed request).
 */
#define KDBUS_WIRE_DROP                  _IOW(KDBUS_IOCTL_MAGIC, 0xc5, struct kdbus_wire_drop)

struct kdbus_wire_drop {
        uint64_t offset;
};

/* The largest datagram either side sends or accepts. */
#define KDBUS_WIRE_MAX_DATAGRAM         (8u * 1024u * 1024u)
/* At most this many fds per message (the final kdbus's limit). */
#define KDBUS_CONN_MAX_FDS_PER_USER     16u
#define KDBUS_MSG_MAX_FDS               16u
/* At most this many PAYLOAD_MEMFD items per message (E2BIG beyond; the final kdbus's limit).
 * Their fds come with the RECV reply after the FDS item's, so a reply carries at most
 * KDBUS_MSG_MAX_FDS + KDBUS_MSG_MAX_MEMFD_ITEMS fds. */
#define KDBUS_MSG_MAX_MEMFD_ITEMS       16u
