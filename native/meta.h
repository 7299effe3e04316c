/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/* Metadata items of native peers under the consent rule (native/meta.c): what the bus
 * captured (bridge/meta.h, bridge/ns.h) written as kdbus items. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "bridge/meta.h"
#include "kdbus/kdbus.h"
#include "util/macro.h"

typedef struct Bus Bus;
typedef struct BridgeConn BridgeConn;
typedef struct BridgeCreds BridgeCreds;
typedef struct BridgeMsg BridgeMsg;
typedef struct NativeConn NativeConn;
struct kdbus_item;

/* What a privileged HELLO said of the peer instead of the bus's capture (kdbus's faked
 * metadata, for a bus proxy connecting on behalf of its clients): only these items, as
 * given, are attached for it; no /proc item (native/meta.c). */
typedef struct NativeFakeMeta {
        bool have_creds;
        bool have_pids;
        struct kdbus_creds creds;
        struct kdbus_pids pids;
        char *seclabel;                 /* NULL: no SECLABEL item */
} NativeFakeMeta;

/* What the bus captured for one message of a KDBUS_HELLO_CAPTURE_PER_MESSAGE sender at
 * SEND (BridgeMsg.sender_meta): SCM_CREDENTIALS, and /proc read through SCM_PIDFD. */
typedef struct NativeMsgMeta {
        bool have_creds;
        uint32_t uid;
        uint32_t gid;
        uint32_t pid;
        BridgeMeta *proc;               /* NULL: not captured (no pidfd, process gone) */
        char *seclabel;                 /* SCM_SECURITY (SO_PASSSEC), NULL: none came */
} NativeMsgMeta;

/* At HELLO: @nc's /proc items and namespaces (the bus's reader). Return: 0 or -ENOMEM. */
int native_meta_capture(NativeConn *nc);
/* Take HELLO's CREDS, PIDS or SECLABEL @item into *@fake (made on first use).
 * Return: 0, -EINVAL (a wrong size, a label that is no string, an item twice), -ENOMEM. */
int native_fake_meta_add(NativeFakeMeta **fake, const struct kdbus_item *item);
NativeFakeMeta *native_fake_meta_free(NativeFakeMeta *fake);
DEFINE_CLEANUP(NativeFakeMeta *, native_fake_meta_free);
/* The credentials the bus shows of @conn to others (the driver's GetConnectionUnixUser /
 * ...ProcessID / ...Credentials): its own, or what its privileged HELLO stood in with (no
 * groups and no pidfd then: those would be the stand-in's). A shallow copy: the pointers
 * stay @conn's. BridgeConnOps.shown_creds of a native connection (@userdata its NativeConn). */
bool native_conn_shown_creds(const BridgeConn *conn, void *userdata, BridgeCreds *ret);
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
size_t native_meta_proc_size(uint64_t attach, const BridgeMeta *m);
uint8_t *native_meta_proc_write(uint8_t *p, uint64_t attach, const BridgeMeta *m,
                                const Bus *bus, const NativeConn *receiver);
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

uint64_t native_attach_flags(uint64_t wanted, const BridgeConn *sender, uint64_t *ret_declined);
/* Does @receiver ask for any metadata we attach? If not, no sender's is looked at. */
bool native_meta_wanted(const NativeConn *receiver);
uint64_t native_attach_flags_for(const NativeConn *receiver, uint64_t wanted,
                                 const BridgeConn *sender, uint64_t *ret_declined);
int native_attach_check(const Bus *bus, uint64_t *send, uint64_t *recv);
/* @m: the message the metadata goes with (its per-message capture), or NULL; @receiver:
 * whose namespaces the ids are shown in, or NULL (the bus's). */
size_t native_meta_size(uint64_t attach, uint64_t declined, const BridgeConn *sender,
                        const BridgeMsg *m);
uint8_t *native_meta_write(uint8_t *p, uint64_t attach, uint64_t declined, Bus *bus,
                           const BridgeConn *sender, const BridgeMsg *m,
                           const NativeConn *receiver);
