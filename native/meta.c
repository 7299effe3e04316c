/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Metadata items of native peers' messages and CONN_INFO records, under the consent rule:
 * an item is attached only if the receiver asked for it (attach_flags_recv, CONN_INFO's
 * attach_flags) AND the sender consented (attach_flags_send of a native sender; a legacy
 * sender consents to what the driver's GetConnectionCredentials gives anyone anyway:
 * CREDS, PIDS, AUXGROUPS, SECLABEL). TIMESTAMP is the bus's own and needs no consent.
 *
 * Everything comes from the bus, never from the sender: CREDS, PIDS, AUXGROUPS and
 * SECLABEL as captured at connect (SO_PEERCRED, the primary group, SO_PEERSEC) or, with
 * per-message capture, with each SEND (SCM_CREDENTIALS, /proc/<pid>/status, SCM_SECURITY:
 * native_meta_capture_msg()); PID_COMM,
 * TID_COMM, EXE, CMDLINE, CGROUP, CAPS and AUDIT read at HELLO from /proc/<pid> of the pid
 * captured at connect, and kept only if the peer's pidfd still refers to a live process
 * afterwards (so the pid was not reused by someone else while we read); without a pidfd
 * they are not captured. CONN_DESCRIPTION is HELLO's. OWNED_NAME: the names the sender
 * owns when the message is delivered (kdbus: when sent; the bus delivers at once unless
 * the receiver's pool is full).
 *
 * "Declined" is visible: if the receiver asked for items the sender did not consent to,
 * the message (or record) carries a KDBUS_ITEM_ATTACH_FLAGS_SEND item whose u64 holds
 * exactly those declined KDBUS_ATTACH_* bits, right after TIMESTAMP (first if none). Items the bus could not capture (no pidfd,
 * the process gone) are simply missing, as in kdbus.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "bridge/bus.h"
#include "bridge/conn.h"
#include "bridge/meta.h"
#include "bridge/msg.h"
#include "bridge/names.h"
#include "bridge/ns.h"
#include "kdbus/kdbus.h"
#include "native/conn.h"
#include "native/meta.h"
#include "native/names.h"
#include "util/error.h"

/* What native_meta_write() knows how to attach. */
#define META_SUPPORTED (KDBUS_ATTACH_TIMESTAMP | KDBUS_ATTACH_CREDS | KDBUS_ATTACH_PIDS |   \
                        KDBUS_ATTACH_AUXGROUPS | KDBUS_ATTACH_NAMES | KDBUS_ATTACH_TID_COMM | \
                        KDBUS_ATTACH_PID_COMM | KDBUS_ATTACH_EXE | KDBUS_ATTACH_CMDLINE |    \
                        KDBUS_ATTACH_CGROUP | KDBUS_ATTACH_CAPS | KDBUS_ATTACH_SECLABEL |    \
                        KDBUS_ATTACH_AUDIT | KDBUS_ATTACH_CONN_DESCRIPTION)
#define LEGACY_CONSENT (KDBUS_ATTACH_CREDS | KDBUS_ATTACH_PIDS | KDBUS_ATTACH_AUXGROUPS |     \
                        KDBUS_ATTACH_SECLABEL)
/* kdbus's final rule: what it grants every receiver, and what follows /proc access */
#define META_IMPLICIT (KDBUS_ATTACH_CONN_DESCRIPTION | KDBUS_ATTACH_TIMESTAMP |              \
                       KDBUS_ATTACH_NAMES | KDBUS_ATTACH_AUXGROUPS | KDBUS_ATTACH_CREDS |     \
                       KDBUS_ATTACH_PIDS)
#define META_PROC (KDBUS_ATTACH_TID_COMM | KDBUS_ATTACH_PID_COMM | KDBUS_ATTACH_SECLABEL |      \
                   KDBUS_ATTACH_CMDLINE | KDBUS_ATTACH_CGROUP | KDBUS_ATTACH_AUDIT |            \
                   KDBUS_ATTACH_CAPS | KDBUS_ATTACH_EXE)
/* 4 capability sets (inheritable, permitted, effective, bounding) of 64 bits */
#define META_CAP_WORDS 2u

/* The namespaces ids are shown in for @nc (NULL: the bus's). */
static const BridgeNs *nc_ns(const NativeConn *nc) {
        return nc ? nc->ns : NULL;
}

/* The namespaces of @conn's process (NULL: the bus's, or not captured: a legacy peer). */
static const BridgeNs *conn_ns(const BridgeConn *conn) {
        return nc_ns(conn ? native_conn_from_bridge(conn) : NULL);
}

/**
 * native_meta_capture() - read the /proc metadata and namespaces of @nc's peer at HELLO
 * @nc:         the new connection (its BridgeConn's creds hold pid and pidfd)
 *
 * Failures leave items out; nothing here fails HELLO (but -ENOMEM).
 *
 * Return: 0 or -ENOMEM.
 */
int native_meta_capture(NativeConn *nc) {
        const BridgeCreds *c = &nc->conn->creds;
        int r;

        if (c->pid <= 0 || c->pidfd < 0)
                return 0;
        r = bridge_ns_read(nc->conn->bus->proc, c->pid, &nc->ns);
        if (r)
                return r;
        r = bridge_meta_read(nc->conn->bus->proc, c->pid, c->pidfd,
                             META_PROC | KDBUS_ATTACH_PIDS, &nc->meta);
        if (r)
                return r;
        if (!nc->meta) {        /* the process went: its pid may name another one now */
                bridge_ns_free(nc->ns);
                nc->ns = NULL;
        }
        return 0;
}

/**
 * native_fake_meta_add() - one of a privileged HELLO's CREDS, PIDS, SECLABEL items
 * @fake:       the connection's faked metadata, made on the first item
 * @item:       the item (its header checked by native_items_check())
 *
 * Return: 0, -EINVAL (a payload of the wrong size, a label that is no NUL-terminated
 * string, an item twice), -ENOMEM.
 */
int native_fake_meta_add(NativeFakeMeta **fake, const struct kdbus_item *item) {
        size_t len = item->size - KDBUS_ITEM_HEADER_SIZE;
        NativeFakeMeta *f = *fake;

        if (!f) {
                f = calloc(1, sizeof(*f));
                if (!f)
                        return -ENOMEM;
                *fake = f;
        }
        switch (item->type) {
        case KDBUS_ITEM_CREDS:
                if (f->have_creds || len != sizeof(f->creds))
                        return -EINVAL;
                memcpy(&f->creds, &item->creds, sizeof(f->creds));
                f->have_creds = true;
                return 0;
        case KDBUS_ITEM_PIDS:
                if (f->have_pids || len != sizeof(f->pids))
                        return -EINVAL;
                memcpy(&f->pids, &item->pids, sizeof(f->pids));
                f->have_pids = true;
                return 0;
        case KDBUS_ITEM_SECLABEL:
                if (f->seclabel || len < 2 || item->str[len - 1] != '\0' ||
                    strlen(item->str) != len - 1)
                        return -EINVAL;
                f->seclabel = strdup(item->str);
                return f->seclabel ? 0 : -ENOMEM;
        default:
                return -EINVAL;
        }
}

NativeFakeMeta *native_fake_meta_free(NativeFakeMeta *fake) {
        if (fake) {
                free(fake->seclabel);
                free(fake);
        }
        return NULL;
}

/**
 * native_conn_shown_creds() - the credentials shown of @conn to others
 * (BridgeConnOps.shown_creds of a native connection)
 * @conn:       a native connection
 * @userdata:   its NativeConn
 * @ret:        its BridgeCreds, or those its privileged HELLO gave (a shallow copy)
 *
 * Return: true if a privileged HELLO stood in (*ret are not @conn's own).
 */
bool native_conn_shown_creds(const BridgeConn *conn, void *userdata, BridgeCreds *ret) {
        const NativeConn *nc = userdata;
        const NativeFakeMeta *f = nc->fake;

        *ret = conn->creds;
        if (!f)
                return false;
        if (f->have_creds) {
                ret->uid = (uid_t)f->creds.uid;
                ret->gid = (gid_t)f->creds.gid;
        }
        if (f->have_pids)
                ret->pid = (pid_t)f->pids.pid;
        ret->pidfd = -1;
        ret->groups = NULL;
        ret->n_groups = 0;
        ret->seclabel = f->seclabel;
        return true;
}

/* A sender with faked metadata gives only what it faked, and the connection's own items
 * (names, description) and the bus's timestamp: kdbus collected nothing from /proc for it. */
static uint64_t meta_mask(const NativeConn *sn, uint64_t attach) {
        const NativeFakeMeta *f = sn ? sn->fake : NULL;

        if (!f)
                return attach;
        return attach & ((f->have_creds ? KDBUS_ATTACH_CREDS : 0) |
                         (f->have_pids ? KDBUS_ATTACH_PIDS : 0) |
                         (f->seclabel ? KDBUS_ATTACH_SECLABEL : 0) | KDBUS_ATTACH_NAMES |
                         KDBUS_ATTACH_CONN_DESCRIPTION | KDBUS_ATTACH_TIMESTAMP);
}

/* CAP_SYS_PTRACE: may read any process's /proc entries (ptrace_may_access) */
#define META_CAP_SYS_PTRACE 19

/*
 * What @receiver could read in /proc about @sender anyway (kdbus's final rule, Bus
 * attach_rule BUS_ATTACH_KDBUS): the /proc items (META_PROC) of itself; of a process it
 * may ptrace (same uid, or CAP_SYS_PTRACE in its effective set as captured at HELLO, or
 * uid 0 when that set is unknown) all of them; of anyone else all but EXE
 * (/proc/<pid>/exe needs ptrace access) if the bus's /proc has no hidepid (kdbusd reads
 * its mount options: Bus.proc_public), else none. A sender whose pid the receiver's pid
 * namespace cannot see gets none (kdbus: "not visible in the receiver namespace").
 */
static uint64_t meta_proc_visible(const NativeConn *receiver, const BridgeConn *sender) {
        const BridgeCreds *rc, *sc = &sender->creds;
        const BridgeMeta *rm;

        if (!receiver)
                return 0;
        rc = &receiver->conn->creds;
        rm = receiver->meta;
        if (receiver->conn == sender || (rc->pid > 0 && rc->pid == sc->pid))
                return META_PROC;
        if (!bridge_ns_pid_visible(nc_ns(receiver), conn_ns(sender), sender->creds.pid))
                return 0;
        if (rc->uid == sc->uid ||
            (rm && rm->have_caps ? (rm->caps[2] >> META_CAP_SYS_PTRACE) & 1 : rc->uid == 0))
                return META_PROC;
        return sender->bus->proc_public ? META_PROC & ~(uint64_t)KDBUS_ATTACH_EXE : 0;
}

/**
 * native_attach_flags_for() - the metadata of @sender that @receiver may see
 * @receiver:   the native connection that gets it (NULL: not known; then nothing is granted
 *              through /proc visibility)
 * @wanted:     KDBUS_ATTACH_* the receiver asked for
 * @sender:     the connection the metadata is about (NULL: the bus)
 * @ret_declined: the bits of @wanted the sender refused (NULL: not wanted)
 *
 * Bus.attach_rule BUS_ATTACH_OPT_IN: @wanted ∩ the sender's consent. BUS_ATTACH_KDBUS:
 * @wanted ∩ (consent ∪ the basic items kdbus always grants (CREDS, PIDS, AUXGROUPS,
 * NAMES, CONN_DESCRIPTION, TIMESTAMP) ∪ what @receiver could read in /proc anyway).
 *
 * Return: the KDBUS_ATTACH_* to attach (native_meta_size/_write).
 */
uint64_t native_attach_flags_for(const NativeConn *receiver, uint64_t wanted,
                                 const BridgeConn *sender, uint64_t *ret_declined) {
        const NativeConn *sn;
        uint64_t consent = KDBUS_ATTACH_TIMESTAMP;

        wanted &= META_SUPPORTED;
        if (sender) {
                sn = native_conn_from_bridge(sender);
                consent |= sn ? sn->attach_flags_send : LEGACY_CONSENT;
                if (sender->bus->attach_rule == BUS_ATTACH_KDBUS) {
                        consent |= META_IMPLICIT;
                        if (wanted & ~consent & META_PROC)
                                consent |= meta_proc_visible(receiver, sender);
                }
        }
        if (ret_declined)
                *ret_declined = sender ? wanted & ~consent : 0;
        return wanted & consent;
}

/* native_attach_flags_for() of nothing wanted is nothing, whoever sent: no metadata item
 * and no ATTACH_FLAGS_SEND (declined) item, the size native_meta_size() gives is 0. */
bool native_meta_wanted(const NativeConn *receiver) {
        return receiver->attach_flags_recv & META_SUPPORTED;
}

/* The same for a receiver that is not known (no /proc visibility granted). */
uint64_t native_attach_flags(uint64_t wanted, const BridgeConn *sender, uint64_t *ret_declined) {
        return native_attach_flags_for(NULL, wanted, sender, ret_declined);
}

/**
 * native_attach_check() - the attach flags of HELLO / UPDATE
 * @bus:        the bus (its attach_flags_req)
 * @send:       attach_flags_send as given; _KDBUS_ATTACH_ANY becomes every known flag
 * @recv:       attach_flags_recv as given, likewise (NULL: not given)
 *
 * Return: 0, -EINVAL (unknown bits), or -ECONNREFUSED (@send lacks one of the bus's
 * required flags: HELLO's errno in kdbus; UPDATE turns it into EINVAL as kdbus does).
 */
int native_attach_check(const Bus *bus, uint64_t *send, uint64_t *recv) {
        uint64_t *v[2] = { send, recv };
        unsigned i;

        for (i = 0; i < 2; ++i) {
                if (!v[i])
                        continue;
                if (*v[i] == _KDBUS_ATTACH_ANY)
                        *v[i] = _KDBUS_ATTACH_ALL;
                if (*v[i] & ~(uint64_t)_KDBUS_ATTACH_ALL)
                        return -EINVAL;
        }
        if (send && (bus->attach_flags_req & ~*send))
                return -ECONNREFUSED;
        return 0;
}

static size_t str_item_size(const char *s) {
        return s ? KDBUS_ITEM_SIZE(strlen(s) + 1) : 0;
}

/* The per-message capture of @m, if its sender asked for one. */
static const NativeMsgMeta *msg_meta(const BridgeMsg *m) {
        return m && m->sender_meta_free == native_msg_meta_free ? m->sender_meta : NULL;
}

/* The /proc items that go with @m from @sn: captured with the message, or at HELLO. */
static const BridgeMeta *meta_proc(const NativeConn *sn, const BridgeMsg *m) {
        const NativeMsgMeta *mm = msg_meta(m);

        if (mm)
                return mm->proc;
        return sn ? sn->meta : NULL;
}

/* AUXGROUPS: read with @m (per-message capture), else the connection's. */
static unsigned meta_n_groups(const BridgeConn *sender, const BridgeMsg *m) {
        const NativeMsgMeta *mm = msg_meta(m);

        if (mm)
                return mm->proc && mm->proc->have_groups ? mm->proc->n_groups : 0;
        return sender->creds.n_groups;
}

static uint32_t meta_group(const BridgeConn *sender, const BridgeMsg *m, unsigned i) {
        const NativeMsgMeta *mm = msg_meta(m);

        return mm ? mm->proc->groups[i] : (uint32_t)sender->creds.groups[i];
}

/* SECLABEL: SCM_SECURITY of @m's datagram (per-message capture; NULL if none came), else
 * the connection's (SO_PEERSEC). */
static const char *meta_seclabel(const BridgeConn *sender, const BridgeMsg *m) {
        const NativeConn *sn = native_conn_from_bridge(sender);
        const NativeMsgMeta *mm = msg_meta(m);

        if (sn && sn->fake)
                return sn->fake->seclabel;
        return mm ? mm->seclabel : sender->creds.seclabel;
}

static uint8_t *put_item(uint8_t *p, uint64_t type, const void *data, size_t len) {
        struct kdbus_item *item = (void *)p;

        item->size = KDBUS_ITEM_HEADER_SIZE + len;
        item->type = type;
        if (len)
                memcpy(item->data, data, len);
        return p + KDBUS_ALIGN8(item->size);
}

static uint8_t *put_str(uint8_t *p, uint64_t type, const char *s) {
        return s ? put_item(p, type, s, strlen(s) + 1) : p;
}

/**
 * native_meta_proc_size() - the size of the /proc items of @m that @attach asks for
 * @attach:     KDBUS_ATTACH_* (TID_COMM, PID_COMM, EXE, CMDLINE, CGROUP, CAPS, AUDIT count)
 * @m:          what was read (NULL: nothing)
 *
 * Return: bytes native_meta_proc_write() writes.
 */
size_t native_meta_proc_size(uint64_t attach, const BridgeMeta *m) {
        size_t sz = 0;

        if (!m)
                return 0;
        if (attach & KDBUS_ATTACH_TID_COMM)
                sz += str_item_size(m->comm);
        if (attach & KDBUS_ATTACH_PID_COMM)
                sz += str_item_size(m->comm);
        if (attach & KDBUS_ATTACH_EXE)
                sz += str_item_size(m->exe);
        if (m->cmdline && (attach & KDBUS_ATTACH_CMDLINE))
                sz += KDBUS_ITEM_SIZE(m->cmdline_len);
        if (attach & KDBUS_ATTACH_CGROUP)
                sz += str_item_size(m->cgroup);
        if (m->have_caps && (attach & KDBUS_ATTACH_CAPS))
                sz += KDBUS_ITEM_SIZE(sizeof(uint32_t) * (1 + 4 * META_CAP_WORDS));
        if (m->have_audit && (attach & KDBUS_ATTACH_AUDIT))
                sz += KDBUS_ITEM_SIZE(sizeof(struct kdbus_audit));
        return sz;
}

/**
 * native_meta_proc_write() - write the /proc items of @m that @attach asks for at @p
 * @p:          where (8-aligned, native_meta_proc_size() bytes, zeroed)
 * @attach:     KDBUS_ATTACH_*
 * @m:          what was read (NULL: nothing)
 * @receiver:   CAPS and AUDIT's loginuid as its user namespace sees them; NULL: the bus's
 *
 * Return: the end of what was written.
 */
uint8_t *native_meta_proc_write(uint8_t *p, uint64_t attach, const BridgeMeta *m,
                                const Bus *bus, const NativeConn *receiver) {
        if (!m)
                return p;
        if (attach & KDBUS_ATTACH_TID_COMM)
                p = put_str(p, KDBUS_ITEM_TID_COMM, m->comm);   /* the tid is not known */
        if (attach & KDBUS_ATTACH_PID_COMM)
                p = put_str(p, KDBUS_ITEM_PID_COMM, m->comm);
        if (attach & KDBUS_ATTACH_EXE)
                p = put_str(p, KDBUS_ITEM_EXE, m->exe);
        if (m->cmdline && (attach & KDBUS_ATTACH_CMDLINE))
                p = put_item(p, KDBUS_ITEM_CMDLINE, m->cmdline, m->cmdline_len);
        if (attach & KDBUS_ATTACH_CGROUP)
                p = put_str(p, KDBUS_ITEM_CGROUP, m->cgroup);
        if (m->have_caps && (attach & KDBUS_ATTACH_CAPS)) {
                uint32_t caps[1 + 4 * META_CAP_WORDS];
                uint64_t shown[4];
                unsigned i;

                /* as the receiver's user namespace sees them (bridge_ns_caps()) */
                bridge_ns_caps(bus->proc, nc_ns(receiver), m->userns_ino, m->have_euid, m->euid, m->caps, shown);
                caps[0] = 63;   /* last_cap: the sets are given as 64 bits each */
                for (i = 0; i < 4; ++i) {
                        caps[1 + 2 * i] = (uint32_t)shown[i];
                        caps[2 + 2 * i] = (uint32_t)(shown[i] >> 32);
                }
                p = put_item(p, KDBUS_ITEM_CAPS, caps, sizeof(caps));
        }
        if (m->have_audit && (attach & KDBUS_ATTACH_AUDIT)) {
                struct kdbus_audit a = { .sessionid = m->sessionid,
                                         .loginuid = bridge_ns_uid(nc_ns(receiver), m->loginuid) };

                p = put_item(p, KDBUS_ITEM_AUDIT, &a, sizeof(a));
        }
        return p;
}

/**
 * native_meta_groups_size() - the size of an AUXGROUPS item of groups captured at connect
 * @attach:     KDBUS_ATTACH_* (only AUXGROUPS counts)
 * @groups:     the groups (a connection's creds, or a bus instance's maker's)
 * @n_groups:   how many (0: no item)
 *
 * Return: bytes native_meta_groups_write() writes.
 */
size_t native_meta_groups_size(uint64_t attach, const gid_t *groups, unsigned n_groups) {
        if (!(attach & KDBUS_ATTACH_AUXGROUPS) || !n_groups || !groups)
                return 0;
        return KDBUS_ITEM_SIZE(n_groups * sizeof(uint64_t));
}

/**
 * native_meta_groups_write() - write the AUXGROUPS item of groups captured at connect
 * @p:          where (8-aligned, native_meta_groups_size() bytes)
 * @attach:     KDBUS_ATTACH_* (only AUXGROUPS counts)
 * @groups:     the groups
 * @n_groups:   how many
 * @receiver:   the ids as its user namespace sees them (NULL: as the bus sees them)
 *
 * Return: the end of what was written.
 */
uint8_t *native_meta_groups_write(uint8_t *p, uint64_t attach, const gid_t *groups,
                                  unsigned n_groups, const NativeConn *receiver) {
        struct kdbus_item *item = (void *)p;
        unsigned i;

        if (!native_meta_groups_size(attach, groups, n_groups))
                return p;
        item->size = KDBUS_ITEM_HEADER_SIZE + n_groups * sizeof(uint64_t);
        item->type = KDBUS_ITEM_AUXGROUPS;
        for (i = 0; i < n_groups; ++i)
                item->data64[i] = bridge_ns_gid(nc_ns(receiver), (uint32_t)groups[i]);
        return p + KDBUS_ALIGN8(item->size);
}

/**
 * native_meta_seclabel_size() - the size of a SECLABEL item
 * @attach:     KDBUS_ATTACH_* (only SECLABEL counts)
 * @label:      the label (NULL: none, no item)
 *
 * Return: bytes native_meta_seclabel_write() writes.
 */
size_t native_meta_seclabel_size(uint64_t attach, const char *label) {
        return (attach & KDBUS_ATTACH_SECLABEL) ? str_item_size(label) : 0;
}

/**
 * native_meta_seclabel_write() - write a SECLABEL item
 * @p:          where (8-aligned, native_meta_seclabel_size() bytes)
 * @attach:     KDBUS_ATTACH_* (only SECLABEL counts)
 * @label:      the label (NULL: none)
 *
 * Return: the end of what was written.
 */
uint8_t *native_meta_seclabel_write(uint8_t *p, uint64_t attach, const char *label) {
        return (attach & KDBUS_ATTACH_SECLABEL) ? put_str(p, KDBUS_ITEM_SECLABEL, label) : p;
}

/* The size of the metadata items for @attach (and the declined item for @declined). */
size_t native_meta_size(uint64_t attach, uint64_t declined, const BridgeConn *sender,
                        const BridgeMsg *msg) {
        const NativeConn *sn = sender ? native_conn_from_bridge(sender) : NULL;
        const BridgeMeta *m = meta_proc(sn, msg);
        size_t sz = 0;

        attach = meta_mask(sn, attach);
        if (declined)
                sz += KDBUS_ITEM_SIZE(sizeof(uint64_t));
        if (attach & KDBUS_ATTACH_TIMESTAMP)
                sz += KDBUS_ITEM_SIZE(sizeof(struct kdbus_timestamp));
        if (!sender)
                return sz;
        if (attach & KDBUS_ATTACH_CREDS)
                sz += KDBUS_ITEM_SIZE(sizeof(struct kdbus_creds));
        if (attach & KDBUS_ATTACH_PIDS)
                sz += KDBUS_ITEM_SIZE(sizeof(struct kdbus_pids));
        if (msg_meta(msg)) {
                if ((attach & KDBUS_ATTACH_AUXGROUPS) && meta_n_groups(sender, msg))
                        sz += KDBUS_ITEM_SIZE(meta_n_groups(sender, msg) * sizeof(uint64_t));
        } else {
                sz += native_meta_groups_size(attach, sender->creds.groups,
                                              sender->creds.n_groups);
        }
        if (attach & KDBUS_ATTACH_NAMES) {
                const List *pos;

                list_for_each(pos, &sender->owned) {
                        const BridgeNameOwner *o = container_of(pos, BridgeNameOwner, conn_link);

                        if (bridge_name_primary(o->name) == sender)
                                sz += KDBUS_ITEM_SIZE(sizeof(struct kdbus_name) +
                                                      strlen(o->name->name) + 1);
                }
        }
        sz += native_meta_proc_size(attach & ~(uint64_t)KDBUS_ATTACH_AUDIT, m);
        sz += native_meta_seclabel_size(attach, meta_seclabel(sender, msg));
        sz += native_meta_proc_size(attach & KDBUS_ATTACH_AUDIT, m);
        if (sn && (attach & KDBUS_ATTACH_CONN_DESCRIPTION))
                sz += str_item_size(sn->description);
        return sz;
}

/* The TIMESTAMP item, if @attach asks for it: last, as kdbus_meta_export() wrote it. */
static uint8_t *meta_timestamp_write(uint8_t *p, uint64_t attach, const Bus *bus) {
        struct kdbus_item *item = (void *)p;

        if (!(attach & KDBUS_ATTACH_TIMESTAMP))
                return p;
        item->size = KDBUS_ITEM_HEADER_SIZE + sizeof(struct kdbus_timestamp);
        item->type = KDBUS_ITEM_TIMESTAMP;
        item->timestamp.seqnum = bus->n_messages_routed;
        item->timestamp.monotonic_ns = bus->now_usec * 1000;
        return p + KDBUS_ALIGN8(item->size);
}

/**
 * native_meta_write() - write the metadata items of @sender at @p
 * @p:          where (8-aligned, native_meta_size() bytes, zeroed)
 * @attach:     from native_attach_flags()
 * @declined:   from native_attach_flags() (0: no declined item)
 * @bus:        for the timestamp (the loop's cached time, and a sequence number)
 * @sender:     whose metadata (NULL: the bus; then only TIMESTAMP)
 * @msg:        the message it goes with: its per-message capture (CREDS, PIDS, /proc
 *              items) replaces the connection's; NULL: the connection's
 * @receiver:   the ids are shown as its user and pid namespaces see them (bridge/ns.c);
 *              NULL: as the bus sees them
 *
 * Return: the end of what was written.
 */
uint8_t *native_meta_write(uint8_t *p, uint64_t attach, uint64_t declined, Bus *bus,
                           const BridgeConn *sender, const BridgeMsg *msg,
                           const NativeConn *receiver) {
        const NativeConn *sn = sender ? native_conn_from_bridge(sender) : NULL;
        const BridgeMeta *m = meta_proc(sn, msg);
        const NativeMsgMeta *mm = msg_meta(msg);
        struct kdbus_item *item;
        uint32_t uid, gid, pid;

        attach = meta_mask(sn, attach);
        if (!sender)
                return meta_timestamp_write(p, attach, bus);
        if (declined)   /* first: what a receiver checks before relying on the rest */
                p = put_item(p, KDBUS_ITEM_ATTACH_FLAGS_SEND, &declined, sizeof(declined));
        /* captured at connect (SO_PEERCRED: the effective ids of that moment), or with
         * this message (SCM_CREDENTIALS: the ids the kernel vouched for at send) */
        uid = mm && mm->have_creds ? mm->uid : (uint32_t)sender->creds.uid;
        gid = mm && mm->have_creds ? mm->gid : (uint32_t)sender->creds.gid;
        pid = mm && mm->have_creds ? mm->pid : (uint32_t)sender->creds.pid;
        if ((attach & KDBUS_ATTACH_CREDS) && sn && sn->fake) {
                const struct kdbus_creds *fc = &sn->fake->creds;

                item = (void *)p;
                item->size = KDBUS_ITEM_HEADER_SIZE + sizeof(struct kdbus_creds);
                item->type = KDBUS_ITEM_CREDS;
                item->creds.uid = bridge_ns_uid(nc_ns(receiver), (uint32_t)fc->uid);
                item->creds.euid = bridge_ns_uid(nc_ns(receiver), (uint32_t)fc->euid);
                item->creds.suid = bridge_ns_uid(nc_ns(receiver), (uint32_t)fc->suid);
                item->creds.fsuid = bridge_ns_uid(nc_ns(receiver), (uint32_t)fc->fsuid);
                item->creds.gid = bridge_ns_gid(nc_ns(receiver), (uint32_t)fc->gid);
                item->creds.egid = bridge_ns_gid(nc_ns(receiver), (uint32_t)fc->egid);
                item->creds.sgid = bridge_ns_gid(nc_ns(receiver), (uint32_t)fc->sgid);
                item->creds.fsgid = bridge_ns_gid(nc_ns(receiver), (uint32_t)fc->fsgid);
                p += KDBUS_ALIGN8(item->size);
        } else if (attach & KDBUS_ATTACH_CREDS) {
                item = (void *)p;
                item->size = KDBUS_ITEM_HEADER_SIZE + sizeof(struct kdbus_creds);
                item->type = KDBUS_ITEM_CREDS;
                uid = bridge_ns_uid(nc_ns(receiver), uid);
                gid = bridge_ns_gid(nc_ns(receiver), gid);
                item->creds.uid = item->creds.euid = item->creds.suid = item->creds.fsuid = uid;
                item->creds.gid = item->creds.egid = item->creds.sgid = item->creds.fsgid = gid;
                p += KDBUS_ALIGN8(item->size);
        }
        if (attach & KDBUS_ATTACH_PIDS) {
                item = (void *)p;
                item->size = KDBUS_ITEM_HEADER_SIZE + sizeof(struct kdbus_pids);
                item->type = KDBUS_ITEM_PIDS;
                /* the connection's namespaces chain is for its own process; another
                 * process sending on it is shown only in the bus's pid namespace */
                if (sn && sn->fake) {
                        /* as given, in the bus's pid namespace */
                        item->pids.pid = bridge_ns_pid(nc_ns(receiver), NULL,
                                                       (uint32_t)sn->fake->pids.pid);
                        item->pids.tid = bridge_ns_pid(nc_ns(receiver), NULL,
                                                       (uint32_t)sn->fake->pids.tid);
                        item->pids.ppid = bridge_ns_pid(nc_ns(receiver), NULL,
                                                        (uint32_t)sn->fake->pids.ppid);
                } else {
                        item->pids.pid = bridge_ns_pid(nc_ns(receiver),
                                                       pid == (uint32_t)sender->creds.pid ?
                                                       conn_ns(sender) : NULL, pid);
                        /* kdbus: the thread that said HELLO (or sent); the bus sees the
                         * process only, so its main thread */
                        item->pids.tid = item->pids.pid;
                        if (m && m->have_ppid)
                                item->pids.ppid = bridge_ns_pid(nc_ns(receiver), NULL,
                                                                m->ppid);
                }
                p += KDBUS_ALIGN8(item->size);
        }
        if (!mm) {
                p = native_meta_groups_write(p, attach, sender->creds.groups,
                                             sender->creds.n_groups, receiver);
        } else if ((attach & KDBUS_ATTACH_AUXGROUPS) && meta_n_groups(sender, msg)) {
                unsigned i, n = meta_n_groups(sender, msg);

                item = (void *)p;
                item->size = KDBUS_ITEM_HEADER_SIZE + n * sizeof(uint64_t);
                item->type = KDBUS_ITEM_AUXGROUPS;
                for (i = 0; i < n; ++i)
                        item->data64[i] = bridge_ns_gid(nc_ns(receiver), meta_group(sender, msg, i));
                p += KDBUS_ALIGN8(item->size);
        }
        p = native_meta_proc_write(p, attach & ~(uint64_t)KDBUS_ATTACH_AUDIT, m, bus,
                                   receiver);
        p = native_meta_seclabel_write(p, attach, meta_seclabel(sender, msg));
        p = native_meta_proc_write(p, attach & KDBUS_ATTACH_AUDIT, m, bus, receiver);
        if (attach & KDBUS_ATTACH_NAMES) {
                const List *pos;

                list_for_each(pos, &sender->owned) {
                        const BridgeNameOwner *o = container_of(pos, BridgeNameOwner, conn_link);
                        size_t len = strlen(o->name->name) + 1;

                        if (bridge_name_primary(o->name) != sender)
                                continue;
                        item = (void *)p;
                        item->size = KDBUS_ITEM_HEADER_SIZE + sizeof(struct kdbus_name) + len;
                        item->type = KDBUS_ITEM_OWNED_NAME;
                        /* the owner's name flags, as LIST and CONN_INFO give them */
                        item->name.flags = native_name_flags(o->flags, true);
                        memcpy(item->name.name, o->name->name, len);
                        p += KDBUS_ALIGN8(item->size);
                }
        }
        if (sn && (attach & KDBUS_ATTACH_CONN_DESCRIPTION))
                p = put_str(p, KDBUS_ITEM_CONN_DESCRIPTION, sn->description);
        return meta_timestamp_write(p, attach, bus);
}

/* BridgeMsg.sender_meta_free of a NativeMsgMeta. */
void native_msg_meta_free(void *meta) {
        NativeMsgMeta *mm = meta;

        if (!mm)
                return;
        bridge_meta_free(mm->proc);
        free(mm->seclabel);
        free(mm);
}

/**
 * native_conn_set_send_creds() - the credentials that came with the next datagram
 * @nc:         a KDBUS_HELLO_CAPTURE_PER_MESSAGE connection
 * @have:       SCM_CREDENTIALS came (false: none; CREDS/PIDS then are the connection's)
 * @uid:        its uid, gid and pid, as the kernel translated them for the bus
 * @gid:        -
 * @pid:        -
 * @pidfd:      SCM_PIDFD of the sending process, whose pid is @pid (borrowed until the
 *              command returns), -1
 * @seclabel:   SCM_SECURITY's label (borrowed likewise), NULL: none came
 */
void native_conn_set_send_creds(NativeConn *nc, bool have, uint32_t uid, uint32_t gid,
                                uint32_t pid, int pidfd, const char *seclabel) {
        nc->next_send.have_creds = have;
        nc->next_send.uid = uid;
        nc->next_send.gid = gid;
        nc->next_send.pid = pid;
        nc->next_send.proc = NULL;
        nc->next_send.seclabel = (char *)seclabel;
        nc->next_send_pidfd = pidfd;
}

/**
 * native_meta_recv_account() - keep the bus's per-bit counts of receive masks
 * @bus:        the bus
 * @old:        the connection's attach_flags_recv before (0: it was not counted)
 * @new:        after (0: it goes)
 */
void native_meta_recv_account(Bus *bus, uint64_t old, uint64_t new) {
        unsigned i;

        for (i = 0; i < 64; ++i) {
                if (old & (UINT64_C(1) << i))
                        --bus->native_recv_attach[i];
                if (new & (UINT64_C(1) << i))
                        ++bus->native_recv_attach[i];
        }
}

/* The KDBUS_ATTACH_* bits some native connection of @bus asks for (attach_flags_recv). */
static uint64_t meta_recv_union(const Bus *bus) {
        uint64_t u = 0;
        unsigned i;

        for (i = 0; i < 64; ++i)
                if (bus->native_recv_attach[i])
                        u |= UINT64_C(1) << i;
        return u;
}

/**
 * native_meta_capture_msg() - the per-message capture of a KDBUS_HELLO_CAPTURE_PER_MESSAGE
 * sender's SEND, attached to @m
 * @nc:         the sender (nc->next_send: what the transport got with the datagram)
 * @m:          the message
 *
 * CREDS and PIDS come from the datagram's SCM_CREDENTIALS, SECLABEL from its SCM_SECURITY;
 * the /proc items and AUXGROUPS are read from /proc/<pid> and kept if SCM_PIDFD's process
 * is alive after the read. That pidfd is the process of that pid: the kernel makes
 * SCM_PIDFD and SCM_CREDENTIALS' pid of one struct pid (and the fallback opens it from
 * that pid), which the transport vouches for (native_conn_set_send_creds()); while it
 * lives, the pid names no other process. Only what some receiver could be given is
 * read: items the sender consents to (or, under the kdbus rule, any) that some native
 * connection of the bus has in its attach_flags_recv (Bus.native_recv_attach); a receiver
 * that asks for more later gets them missing for messages sent before. Without a pidfd
 * they are missing, as at HELLO.
 *
 * Return: 0 or -ENOMEM.
 */
int native_meta_capture_msg(NativeConn *nc, BridgeMsg *m) {
        const Bus *bus = nc->conn->bus;
        NativeMsgMeta *mm;
        uint64_t what = nc->attach_flags_send;
        int r;

        mm = calloc(1, sizeof(*mm));
        if (!mm)
                return -ENOMEM;
        mm->have_creds = nc->next_send.have_creds;
        mm->uid = nc->next_send.uid;
        mm->gid = nc->next_send.gid;
        mm->pid = nc->next_send.pid;
        if (nc->next_send.seclabel) {
                mm->seclabel = strdup(nc->next_send.seclabel);
                if (!mm->seclabel) {
                        free(mm);
                        return -ENOMEM;
                }
        }
        if (bus->attach_rule == BUS_ATTACH_KDBUS)
                what |= META_PROC | META_IMPLICIT;
        what &= meta_recv_union(bus) & (META_PROC | KDBUS_ATTACH_AUXGROUPS | KDBUS_ATTACH_PIDS);
        if (mm->have_creds && mm->pid > 0 && what && nc->next_send_pidfd >= 0) {
                r = bridge_meta_read(bus->proc, (pid_t)mm->pid, nc->next_send_pidfd, what,
                                     &mm->proc);
                if (r) {
                        native_msg_meta_free(mm);
                        return r;
                }
        }
        m->sender_meta = mm;
        m->sender_meta_free = native_msg_meta_free;
        return 0;
}
