/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * UPDATE and BUS_CREATOR_INFO of native peers.
 *
 * UPDATE takes ATTACH_FLAGS_SEND / ATTACH_FLAGS_RECV items (one u64 each; kdbus's
 * _KDBUS_ATTACH_ANY stands for every known flag, other unknown bits are EINVAL) and, as an
 * extension of kdbus (which set it at HELLO only), a CONN_DESCRIPTION item. NAME and
 * POLICY_ACCESS items replace a policy holder's entries (native/holder.c); from any
 * other connection: EOPNOTSUPP, as are attach flags from a policy holder and
 * ATTACH_FLAGS_SEND from an activator (kdbus_cmd_update(); an activator may change what it
 * receives, and an empty UPDATE is fine from anyone).
 * The command is all or nothing: everything is checked before anything changes. New
 * attach flags apply to messages written into pools from then on.
 *
 * BUS_CREATOR_INFO writes a kdbus_info into the caller's pool, as kdbus_cmd_bus_creator_info()
 * does: flags are the bus's BUS_MAKE flags (MAKE_ACCESS_*; 0 for kdbusd's own bus, which no
 * BUS_MAKE made), id is 0. kdbus gave the bus's id, drawn from the counter of its domain
 * that also numbers the connections, so it was below every connection id on the bus and
 * equal to none; our connection ids count from 1 per bus, and 0 is the one value that
 * keeps both properties. Then a MAKE_NAME item, a plain string (header and the
 * NUL-terminated name, as BUS_MAKE takes it; not a struct kdbus_name): the instance's
 * "<uid>-<name>", or "<uid>-kdbus" for kdbusd's own bus (which has no name), and
 * of the bus process's credentials CREDS and PIDS as far as attach_flags ask; the bus
 * consents to nothing else, said by an ATTACH_FLAGS_SEND item like any declined metadata
 * (native/meta.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "bridge/bus.h"
#include "bridge/conn.h"
#include "bridge/pool.h"
#include "kdbus/kdbus.h"
#include "native/conn.h"
#include "native/holder.h"
#include "native/items.h"
#include "native/meta.h"
#include "native/update.h"
#include "util/error.h"

/* An attach-flags value of a peer: 0 or -EINVAL; *ret the flags. */
static int attach_value(uint64_t v, uint64_t *ret) {
        if (v == _KDBUS_ATTACH_ANY)
                v = _KDBUS_ATTACH_ALL;
        if (v & ~(uint64_t)_KDBUS_ATTACH_ALL)
                return -EINVAL;
        *ret = v;
        return 0;
}

/**
 * native_conn_update() - UPDATE: attach flags and description
 * @nc:         the connection
 * @buf:        kdbus_cmd with items
 * @size:       bytes at @buf
 * @io:         the command's fds (none for this one)
 *
 * Return: 0, or -EINVAL (bad item, duplicate, unknown flags, bad policy), -ENAMETOOLONG
 * (a description over 63 bytes), -EOPNOTSUPP (policy items from an ordinary connection,
 * attach flags from a policy holder, ATTACH_FLAGS_SEND from an activator), -E2BIG
 * (a holder's second name), -EEXIST (another holder's name), -ENOMEM.
 */
int native_conn_update(NativeConn *nc, void *buf, size_t size, NativeCommandIo *io) {
        struct kdbus_cmd *cmd = buf;
        const struct kdbus_item *item;
        uint64_t send = nc->attach_flags_send, recv = nc->attach_flags_recv;
        bool have_send = false, have_recv = false, have_policy = false;
        const char *description = NULL;
        char *copy = NULL;
        int r;

        KDBUS_ITEMS_FOREACH(item, cmd->items, cmd->size - sizeof(*cmd)) {
                size_t len = item->size - KDBUS_ITEM_HEADER_SIZE;

                switch (item->type) {
                case KDBUS_ITEM_ATTACH_FLAGS_SEND:
                        if (have_send || len != sizeof(uint64_t) ||
                            attach_value(item->data64[0], &send))
                                return -EINVAL;
                        have_send = true;
                        break;
                case KDBUS_ITEM_ATTACH_FLAGS_RECV:
                        if (have_recv || len != sizeof(uint64_t) ||
                            attach_value(item->data64[0], &recv))
                                return -EINVAL;
                        have_recv = true;
                        break;
                case KDBUS_ITEM_CONN_DESCRIPTION:
                        /* HELLO's rule (kdbus_item_validate_name()) */
                        r = native_item_name_check(item);
                        if (r)
                                return r;
                        if (description)
                                return -EINVAL;
                        description = item->str;
                        break;
                case KDBUS_ITEM_NAME:
                case KDBUS_ITEM_POLICY_ACCESS:
                        if (!(nc->hello_flags & KDBUS_HELLO_POLICY_HOLDER))
                                return -EOPNOTSUPP;
                        have_policy = true;
                        break;
                default:
                        return -EINVAL;
                }
        }
        /* kdbus_cmd_update(): a policy holder has no attach flags (it neither sends nor
         * receives), an activator only receives (its ATTACH_FLAGS_RECV is taken) */
        if ((have_send || have_recv) && (nc->hello_flags & KDBUS_HELLO_POLICY_HOLDER))
                return -EOPNOTSUPP;
        if (have_send && (nc->hello_flags & KDBUS_HELLO_ACTIVATOR))
                return -EOPNOTSUPP;
        /* kdbus: a sender may not drop what the bus requires (EINVAL here, not HELLO's
         * ECONNREFUSED) */
        if (have_send && native_attach_check(nc->conn->bus, &send, NULL))
                return -EINVAL;
        if (description) {
                copy = strdup(description);
                if (!copy)
                        return -ENOMEM;
        }
        if (have_policy) {
                r = native_holder_set(nc, cmd->items, cmd->size - sizeof(*cmd));
                if (r) {
                        free(copy);
                        return r;
                }
        }
        if (copy) {
                free(nc->description);
                nc->description = copy;
        }
        nc->attach_flags_send = send;
        native_meta_recv_account(nc->conn->bus, nc->attach_flags_recv, recv);
        nc->attach_flags_recv = recv;
        cmd->return_flags = 0;
        return 0;
}

/**
 * native_conn_bus_creator_info() - BUS_CREATOR_INFO
 * @nc:         the connection asking
 * @buf:        kdbus_cmd_info (attach_flags; no items); offset and info_size written
 * @size:       bytes at @buf
 * @io:         the command's fds (none for this one)
 *
 * The info holds MAKE_NAME, BLOOM_PARAMETER (the bus's; not in kdbus), the declined
 * attach flags (ATTACH_FLAGS_SEND) and, as asked and offered, the maker's CREDS / PIDS,
 * AUXGROUPS and SECLABEL (captured at connect), /proc items (read at BUS_MAKE).
 *
 * Return: 0, or -EINVAL, -ENOBUFS (no room in the pool), -ENOMEM.
 */
int native_conn_bus_creator_info(NativeConn *nc, void *buf, size_t size,
                                 NativeCommandIo *io) {
        struct kdbus_cmd_info *cmd = buf;
        uint64_t attach, declined, wanted, offer;
        struct kdbus_item *item;
        BridgePoolSlice *slice;
        struct kdbus_info *info;
        Bus *bus = nc->conn->bus;
        char name[sizeof(bus->make_name) + 32];
        size_t name_len, total;
        uint8_t *p;
        int r;

        if (attach_value(cmd->attach_flags, &wanted))
                return -EINVAL;
        /* what the maker offers (BUS_MAKE's ATTACH_FLAGS_SEND, kdbus's attach_flags_owner;
         * kdbusd's own bus: its process's CREDS and PIDS); of that the bus has CREDS, PIDS,
         * AUXGROUPS and SECLABEL as the handle's connect captured them and the /proc items
         * read at BUS_MAKE (Bus.creator_meta), the rest is missing */
        offer = bus->make_name[0] ? bus->attach_flags_owner :
                (uint64_t)(KDBUS_ATTACH_CREDS | KDBUS_ATTACH_PIDS);
        attach = wanted & offer;
        declined = wanted & ~offer & ~(uint64_t)KDBUS_ATTACH_TIMESTAMP;
        if (bus->make_name[0])
                name_len = (size_t)snprintf(name, sizeof(name), "%s", bus->make_name) + 1;
        else
                name_len = (size_t)snprintf(name, sizeof(name), "%u-kdbus",
                                            (unsigned)geteuid()) + 1;
        total = sizeof(*info) + KDBUS_ITEM_SIZE(name_len) +
                KDBUS_ITEM_SIZE(sizeof(struct kdbus_bloom_parameter));
        if (declined)
                total += KDBUS_ITEM_SIZE(sizeof(uint64_t));
        if (attach & KDBUS_ATTACH_CREDS)
                total += KDBUS_ITEM_SIZE(sizeof(struct kdbus_creds));
        if (attach & KDBUS_ATTACH_PIDS)
                total += KDBUS_ITEM_SIZE(sizeof(struct kdbus_pids));
        total += native_meta_groups_size(attach, bus->creator_groups, bus->n_creator_groups);
        total += native_meta_proc_size(attach, bus->creator_meta);
        total += native_meta_seclabel_size(attach, bus->creator_seclabel);
        r = bridge_pool_alloc(nc->pool, total, false, &slice);
        if (r == POOL_E_NO_SPACE)
                return -ENOBUFS;
        if (r)
                return r;
        info = bridge_pool_ptr(nc->pool, slice);
        memset(info, 0, slice->size);
        info->size = total;
        /* kdbus_cmd_bus_creator_info(): the bus's id (0 here, see above) and its BUS_MAKE
         * flags; MAKE_NAME a plain string item, as BUS_MAKE took it */
        info->id = 0;
        info->flags = bus->bus_flags;
        item = info->items;
        item->size = KDBUS_ITEM_HEADER_SIZE + name_len;
        item->type = KDBUS_ITEM_MAKE_NAME;
        memcpy(item->str, name, name_len);
        p = (uint8_t *)item + KDBUS_ALIGN8(item->size);
        /* our addition (kdbus's had none): the bus's bloom parameters, as HELLO gives them */
        item = (void *)p;
        item->size = KDBUS_ITEM_HEADER_SIZE + sizeof(struct kdbus_bloom_parameter);
        item->type = KDBUS_ITEM_BLOOM_PARAMETER;
        item->bloom_parameter.size = bus->bloom.size;
        item->bloom_parameter.n_hash = bus->bloom.n_hash;
        p += KDBUS_ALIGN8(item->size);
        if (declined) {
                item = (void *)p;
                item->size = KDBUS_ITEM_HEADER_SIZE + sizeof(uint64_t);
                item->type = KDBUS_ITEM_ATTACH_FLAGS_SEND;
                item->data64[0] = declined;
                p += KDBUS_ALIGN8(item->size);
        }
        if (attach & KDBUS_ATTACH_CREDS) {
                item = (void *)p;
                item->size = KDBUS_ITEM_HEADER_SIZE + sizeof(struct kdbus_creds);
                item->type = KDBUS_ITEM_CREDS;
                if (bus->make_name[0]) {
                        /* the maker's, captured at connect: its ids as one */
                        item->creds.uid = item->creds.euid = item->creds.suid =
                                item->creds.fsuid = bus->creator_uid;
                        item->creds.gid = item->creds.egid = item->creds.sgid =
                                item->creds.fsgid = bus->creator_gid;
                } else {
                        item->creds.uid = getuid();
                        item->creds.euid = item->creds.suid = item->creds.fsuid = geteuid();
                        item->creds.gid = getgid();
                        item->creds.egid = item->creds.sgid = item->creds.fsgid = getegid();
                }
                p += KDBUS_ALIGN8(item->size);
        }
        if (attach & KDBUS_ATTACH_PIDS) {
                item = (void *)p;
                item->size = KDBUS_ITEM_HEADER_SIZE + sizeof(struct kdbus_pids);
                item->type = KDBUS_ITEM_PIDS;
                item->pids.pid = bus->make_name[0] ? (uint64_t)bus->creator_pid :
                                                     (uint64_t)getpid();
                item->pids.ppid = bus->make_name[0] ? 0 : (uint64_t)getppid();
                p += KDBUS_ALIGN8(item->size);
        }
        /* in CONN_INFO's order; the groups, CAPS and AUDIT's loginuid as the asking
         * connection's user namespace sees them */
        p = native_meta_groups_write(p, attach, bus->creator_groups, bus->n_creator_groups,
                                     nc);
        p = native_meta_proc_write(p, attach & ~(uint64_t)KDBUS_ATTACH_AUDIT, bus->creator_meta,
                                   bus, nc);
        p = native_meta_seclabel_write(p, attach, bus->creator_seclabel);
        p = native_meta_proc_write(p, attach & KDBUS_ATTACH_AUDIT, bus->creator_meta, bus, nc);
        cmd->return_flags = 0;
        cmd->offset = slice->offset;
        cmd->info_size = total;
        return 0;
}
