/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * NAME_ACQUIRE, NAME_RELEASE, LIST and CONN_INFO of native peers, on the one name registry
 * legacy peers use (bridge/names.h): a name a native service acquires is seen by
 * GetNameOwner and NameOwnerChanged of legacy clients, and the other way round.
 *
 * kdbus's name flags differ from dbus1's (REPLACE_EXISTING=1, ALLOW_REPLACEMENT=2, QUEUE=4
 * against dbus1's ALLOW_REPLACEMENT=1, REPLACE_EXISTING=2, DO_NOT_QUEUE=4); they are
 * translated here. return_flags as kdbus's final names.c (kdbus_name_update()): the
 * request's saved flags (ALLOW_REPLACEMENT, QUEUE) with PRIMARY or IN_QUEUE, and ACQUIRED
 * when the name was acquired or the caller queued by this very request; acquiring a name
 * one is already primary owner of is 0 without ACQUIRED (its saved flags replaced),
 * re-queueing while queued is 0 with IN_QUEUE and no ACQUIRED, and asking again without
 * QUEUE while queued leaves the queue: 0 with the saved flags alone.
 *
 * LIST and CONN_INFO write kdbus_info records into a pool slice the peer must FREE.
 */
#include <stdlib.h>
#include <string.h>
#include "bridge/activator.h"
#include "bridge/bus.h"
#include "bridge/conn.h"
#include "bridge/endpoint.h"
#include "bridge/monitor.h"
#include "bridge/names.h"
#include "bridge/pool.h"
#include "kdbus/kdbus.h"
#include "native/conn.h"
#include "native/items.h"
#include "native/meta.h"
#include "native/names.h"
#include "util/error.h"
#include "wire/names.h"

/* The NAME item of a kdbus_cmd: exactly one string; with @well_known a valid well-known
 * name (NAME_ACQUIRE; kdbus's NAME_RELEASE only looks the string up: ESRCH for any other).
 * Return: 0 or -errno. */
static int cmd_name(struct kdbus_cmd *cmd, bool well_known, const char **ret) {
        const struct kdbus_item *item;
        const char *name = NULL;

        KDBUS_ITEMS_FOREACH(item, cmd->items, cmd->size - sizeof(*cmd)) {
                size_t len = item->size - KDBUS_ITEM_HEADER_SIZE;

                if (name)
                        return -EINVAL;
                if (len < 2 || item->str[len - 1] != '\0' || strlen(item->str) != len - 1)
                        return -EINVAL;
                name = item->str;
        }
        if (!name || (well_known && !wire_well_known_name_is_valid(name, strlen(name))))
                return -EINVAL;
        *ret = name;
        return 0;
}

/**
 * native_conn_name_acquire() - NAME_ACQUIRE
 * @nc:         the connection
 * @buf:        kdbus_cmd with one NAME item; return_flags written
 * @size:       bytes at @buf
 * @io:         the command's fds (none for this one)
 *
 * Return: 0 (return_flags say primary or queued, and whether just now; neither: it left
 * the queue), or -EINVAL, -EPERM (org.freedesktop.DBus is the bus's, or the
 * policy denies it), -EEXIST, -E2BIG (too many names), -ECONNRESET, -ENOMEM.
 */
int native_conn_name_acquire(NativeConn *nc, void *buf, size_t size, NativeCommandIo *io) {
        struct kdbus_cmd *cmd = buf;
        uint64_t saved = cmd->flags & (KDBUS_NAME_ALLOW_REPLACEMENT | KDBUS_NAME_QUEUE);
        unsigned flags = 0, n_names;
        const char *name;
        int r;

        r = cmd_name(cmd, true, &name);
        if (r)
                return r;
        if (!strcmp(name, "org.freedesktop.DBus"))
                return -EPERM;
        if (cmd->flags & KDBUS_NAME_REPLACE_EXISTING)
                flags |= BRIDGE_NAME_REPLACE_EXISTING;
        if (cmd->flags & KDBUS_NAME_ALLOW_REPLACEMENT)
                flags |= BRIDGE_NAME_ALLOW_REPLACEMENT;
        if (!(cmd->flags & KDBUS_NAME_QUEUE))
                flags |= BRIDGE_NAME_DO_NOT_QUEUE;
        flags |= BRIDGE_NAME_KDBUS_QUEUE;       /* a waiter joins the queue's tail */

        cmd->return_flags = 0;
        n_names = nc->conn->n_names;    /* grows when this request queues it anew */
        r = bridge_name_acquire(nc->conn, name, flags);
        switch (r) {
        case 0:
                cmd->return_flags = saved | KDBUS_NAME_PRIMARY | KDBUS_NAME_ACQUIRED;
                return 0;
        case NAME_E_ALREADY_OWNER:
                /* kdbus_name_update(): "already the primary owner ... nothing to do" */
                cmd->return_flags = saved | KDBUS_NAME_PRIMARY;
                return 0;
        case NAME_E_IN_QUEUE:
                cmd->return_flags = saved | KDBUS_NAME_IN_QUEUE;
                if (nc->conn->n_names > n_names)
                        cmd->return_flags |= KDBUS_NAME_ACQUIRED;
                return 0;
        case NAME_E_EXISTS:
                cmd->return_flags = saved;
                /* kdbus_name_update(): a queued owner asking without QUEUE is taken off
                 * the queue, and that is no error */
                return nc->conn->n_names < n_names ? 0 : -EEXIST;
        case NAME_E_QUOTA:
                return -E2BIG;
        case NAME_E_ACCESS_DENIED:
                return -EPERM;          /* kdbus: no OWN (endpoint, holders, XML policy) */
        default:
                return native_errno_from_bridge(r);
        }
}

/**
 * native_conn_name_release() - NAME_RELEASE
 * @nc:         the connection
 * @buf:        kdbus_cmd with one NAME item
 * @size:       bytes at @buf
 * @io:         the command's fds (none for this one)
 *
 * Return: 0, or -EINVAL, -ESRCH (nobody owns it, or not a well-known name at all, as
 * kdbus), -EADDRINUSE (owned by another, and the caller is not queued for it).
 */
int native_conn_name_release(NativeConn *nc, void *buf, size_t size, NativeCommandIo *io) {
        struct kdbus_cmd *cmd = buf;
        const char *name;
        int r;

        r = cmd_name(cmd, false, &name);
        if (r)
                return r;
        cmd->return_flags = 0;
        r = bridge_name_release(nc->conn, name);
        switch (r) {
        case 0:
                return 0;
        case NAME_E_NON_EXISTENT:
                return -ESRCH;
        case NAME_E_NOT_OWNER:
                return -EADDRINUSE;
        default:
                return native_errno_from_bridge(r);
        }
}

/* The kdbus flags a connection said hello with (0 for legacy peers). */
static uint64_t conn_hello_flags(const BridgeConn *conn) {
        const NativeConn *peer = native_conn_from_bridge(conn);

        return peer ? peer->hello_flags & ~NATIVE_HELLO_TRANSPORT_FLAGS : 0;
}

/* Size of one OWNED_NAME item for @name. */
static size_t name_item_size(const char *name) {
        return KDBUS_ITEM_SIZE(sizeof(struct kdbus_name) + strlen(name) + 1);
}

static uint8_t *write_name_item(uint8_t *p, const char *name, uint64_t flags) {
        struct kdbus_item *item = (void *)p;
        size_t len = strlen(name) + 1;

        item->size = KDBUS_ITEM_HEADER_SIZE + sizeof(struct kdbus_name) + len;
        item->type = KDBUS_ITEM_OWNED_NAME;
        item->name.flags = flags;
        memcpy(item->name.name, name, len);
        return p + KDBUS_ALIGN8(item->size);
}

/* Which of @conn's names a record for @viewer lists (kdbus's kdbus_list_all()): primary
 * ones with NAMES, queued ones with QUEUED, those @viewer may see (a custom endpoint's SEE
 * policy). */
static bool owner_listed(const BridgeConn *viewer, const BridgeNameOwner *o,
                         uint64_t list_flags) {
        bool primary = bridge_name_primary(o->name) == o->conn;

        return (list_flags & (primary ? KDBUS_LIST_NAMES : KDBUS_LIST_QUEUED)) &&
               bridge_conn_can_see_name(viewer, o->name->name);
}

/* An activator's name is listed with ACTIVATORS (whether it holds or waits), if seen. */
static const char *activator_listed(const BridgeConn *viewer, const BridgeConn *conn,
                                    uint64_t list_flags) {
        const char *name = bridge_conn_activator_name(conn);

        return name && (list_flags & KDBUS_LIST_ACTIVATORS) &&
               bridge_conn_can_see_name(viewer, name) ? name : NULL;
}

/**
 * native_name_flags() - an owner's kdbus name flags, as kdbus's names.c kept them
 * @flags:      the BRIDGE_NAME_* flags of its last request (a native NAME_ACQUIRE's
 *              translated, or a legacy RequestName's)
 * @primary:    true: the primary owner; false: queued behind it
 *
 * kdbus saved ALLOW_REPLACEMENT and QUEUE of the last request (KDBUS_NAME_SAVED_MASK; not
 * REPLACE_EXISTING) and added PRIMARY or IN_QUEUE; these are what its NAME_* notifications,
 * LIST and CONN_INFO's OWNED_NAME items carry. A legacy RequestName without DO_NOT_QUEUE
 * asked to queue (QUEUE), as systemd's bus proxy translated it for kdbus.
 *
 * Return: the KDBUS_NAME_* flags.
 */
uint64_t native_name_flags(unsigned flags, bool primary) {
        uint64_t f = primary ? KDBUS_NAME_PRIMARY : KDBUS_NAME_IN_QUEUE;

        if (flags & BRIDGE_NAME_ALLOW_REPLACEMENT)
                f |= KDBUS_NAME_ALLOW_REPLACEMENT;
        if (!(flags & BRIDGE_NAME_DO_NOT_QUEUE))
                f |= KDBUS_NAME_QUEUE;
        return f;
}

/**
 * native_activator_name_flags() - the kdbus name flags of an activator's name
 * @bus:        the bus
 * @name:       the activator's name
 *
 * kdbus's names.c: ACTIVATOR with PRIMARY while it holds the name (no owner has it), with
 * IN_QUEUE while an owner has it (the activator waits behind the owners).
 *
 * Return: the KDBUS_NAME_* flags.
 */
uint64_t native_activator_name_flags(Bus *bus, const char *name) {
        return KDBUS_NAME_ACTIVATOR |
               (bus_find_conn_by_name(bus, name) ? KDBUS_NAME_IN_QUEUE : KDBUS_NAME_PRIMARY);
}

static uint64_t owner_kdbus_flags(const BridgeNameOwner *o) {
        return native_name_flags(o->flags, bridge_name_primary(o->name) == o->conn);
}

/* Size of @conn's record; 0 if LIST leaves it out. */
static size_t info_size(const BridgeConn *viewer, const BridgeConn *conn, uint64_t list_flags,
                        bool with_names) {
        size_t sz = sizeof(struct kdbus_info);
        unsigned n = 0;
        List *pos;

        list_for_each(pos, &conn->owned) {
                const BridgeNameOwner *o = container_of(pos, BridgeNameOwner, conn_link);

                if (!owner_listed(viewer, o, list_flags))
                        continue;
                ++n;
                if (with_names)
                        sz += name_item_size(o->name->name);
        }
        /* an activator's name, flagged KDBUS_NAME_ACTIVATOR (kdbus) */
        if (activator_listed(viewer, conn, list_flags)) {
                ++n;
                if (with_names)
                        sz += name_item_size(bridge_conn_activator_name(conn));
        }
        if (!(list_flags & KDBUS_LIST_UNIQUE) && !n)
                return 0;
        return sz;
}

static uint8_t *write_info(uint8_t *p, const BridgeConn *viewer, const BridgeConn *conn,
                           uint64_t list_flags, bool with_names) {
        struct kdbus_info *info = (void *)p;
        uint8_t *at = (uint8_t *)info->items;
        List *pos;

        info->id = conn->id;
        info->flags = conn_hello_flags(conn);
        if (with_names)
                list_for_each(pos, &conn->owned) {
                        const BridgeNameOwner *o = container_of(pos, BridgeNameOwner, conn_link);

                        if (owner_listed(viewer, o, list_flags))
                                at = write_name_item(at, o->name->name, owner_kdbus_flags(o));
                }
        if (with_names && activator_listed(viewer, conn, list_flags))
                at = write_name_item(at, bridge_conn_activator_name(conn),
                                     native_activator_name_flags(conn->bus,
                                                                 bridge_conn_activator_name(conn)));
        info->size = (uint64_t)(at - p);
        return at;
}

/* One LIST record at @p (NULL: none, only its size): @conn's id and hello flags, and an
 * OWNED_NAME item for @name (NULL: a bare id). Return: its size. */
static size_t list_record(uint8_t *p, const BridgeConn *conn, const char *name,
                          uint64_t name_flags) {
        size_t sz = sizeof(struct kdbus_info) + (name ? name_item_size(name) : 0);
        struct kdbus_info *info = (void *)p;

        if (!p)
                return sz;
        info->size = sz;
        info->id = conn->id;
        info->flags = conn_hello_flags(conn);
        if (name)
                (void) write_name_item((uint8_t *)info->items, name, name_flags);
        return sz;
}

/*
 * @conn's LIST records for @viewer at @p (NULL: only their size), as kdbus's final
 * kdbus_list_all(): one record per listed name (its activator name with ACTIVATORS, names
 * it is primary owner of with NAMES, those it waits for with QUEUED; names the viewer's
 * endpoint hides are left out), and a bare id record with UNIQUE when none was listed.
 * Return: their size.
 */
static size_t list_conn(uint8_t *p, const BridgeConn *viewer, const BridgeConn *conn,
                        uint64_t list_flags) {
        const char *activator = bridge_conn_activator_name(conn);
        size_t sz = 0;
        List *pos;

        if (activator && (list_flags & KDBUS_LIST_ACTIVATORS) &&
            bridge_conn_can_see_name(viewer, activator))
                sz += list_record(p ? p + sz : NULL, conn, activator,
                                  native_activator_name_flags(conn->bus, activator));
        list_for_each(pos, &conn->owned) {
                const BridgeNameOwner *o = container_of(pos, BridgeNameOwner, conn_link);

                if (owner_listed(viewer, o, list_flags))
                        sz += list_record(p ? p + sz : NULL, conn, o->name->name,
                                          owner_kdbus_flags(o));
        }
        if (!sz && (list_flags & KDBUS_LIST_UNIQUE))
                sz = list_record(p, conn, NULL, 0);
        return sz;
}

/* kdbus leaves monitors out of LIST (legacy BecomeMonitor ones too: they are invisible);
 * activators are listed (their name only with ACTIVATORS). */
static bool list_conn_listed(const BridgeConn *c) {
        if (bridge_conn_is_activator(c))
                return c->active;
        return bridge_conn_is_active(c) && !bridge_conn_is_monitor(c);
}

/**
 * native_conn_list() - LIST: connections and names, as kdbus_info records in the pool
 * @nc:         the connection
 * @buf:        kdbus_cmd_list; offset and list_size written
 * @size:       bytes at @buf
 * @io:         the command's fds (none for this one)
 *
 * As kdbus's final kdbus_list_all() (list_conn()): a record per listed name, each with one
 * OWNED_NAME item carrying the owner's name flags (native_name_flags(),
 * native_activator_name_flags()), so a connection with several names appears in several
 * records; with UNIQUE a bare record for a connection none of whose names was listed.
 * Monitors are never listed. Nothing to list: offset is the pool's size and list_size 0,
 * no slice (kdbus_pool_publish_empty()).
 *
 * Return: 0, or -EINVAL, -ENOBUFS (the pool has no room), -ENOMEM.
 */
int native_conn_list(NativeConn *nc, void *buf, size_t size, NativeCommandIo *io) {
        struct kdbus_cmd_list *cmd = buf;
        BridgePoolSlice *slice;
        size_t total = 0;
        uint8_t *p;
        List *pos;
        int r;

        cmd->return_flags = 0;
        list_for_each(pos, &nc->conn->bus->conns) {
                const BridgeConn *c = container_of(pos, BridgeConn, bus_link);

                if (list_conn_listed(c) && bridge_conn_can_see_conn(nc->conn, c))
                        total += list_conn(NULL, nc->conn, c, cmd->flags);
        }
        if (!total) {
                cmd->offset = bridge_pool_no_slice(nc->pool);
                cmd->list_size = 0;
                return 0;
        }
        r = bridge_pool_alloc(nc->pool, total, false, &slice);
        if (r == POOL_E_NO_SPACE)
                return -ENOBUFS;
        if (r)
                return r;
        p = bridge_pool_ptr(nc->pool, slice);
        memset(p, 0, slice->size);      /* padding included: a reused slice held other data */
        list_for_each(pos, &nc->conn->bus->conns) {
                const BridgeConn *c = container_of(pos, BridgeConn, bus_link);

                if (list_conn_listed(c) && bridge_conn_can_see_conn(nc->conn, c))
                        p += list_conn(p, nc->conn, c, cmd->flags);
        }
        cmd->offset = slice->offset;
        cmd->list_size = total;
        return 0;
}

/* The names CONN_INFO's NAMES gives, in LIST's terms. */
#define INFO_NAMES (KDBUS_LIST_UNIQUE | KDBUS_LIST_NAMES | KDBUS_LIST_ACTIVATORS)

/*
 * CONN_INFO's connection of @id: kdbus_bus_find_conn_by_id() finds every connection of the
 * bus, monitors and activators too, which are not in our id table.
 */
static BridgeConn *info_find_conn(Bus *bus, uint64_t id) {
        BridgeConn *conn = bus_find_conn(bus, id);
        List *pos;

        if (conn)
                return conn;
        list_for_each(pos, &bus->monitors) {
                conn = container_of(pos, BridgeConn, match_link);
                if (conn->id == id && conn->active)
                        return conn;
        }
        list_for_each(pos, &bus->activators) {
                BridgeActivator *a = container_of(pos, BridgeActivator, link);

                if (a->conn->id == id && a->conn->active)
                        return a->conn;
        }
        return NULL;
}

/**
 * native_conn_info() - CONN_INFO of a connection by id, or by a NAME item
 * @nc:         the connection asking
 * @buf:        kdbus_cmd_info; offset and info_size written
 * @size:       bytes at @buf
 * @io:         the command's fds (none for this one)
 *
 * With KDBUS_ATTACH_NAMES in attach_flags the record carries the names the connection
 * owns; the metadata items as far as the connection consented (native/meta.c).
 *
 * As kdbus_cmd_conn_info(): a NAME is looked up in the name registry only (its owner, else
 * its activator), and with a nonzero id as well the owner must be that id; an id alone finds
 * any connection, monitors and activators too.
 *
 * Return: 0, or -EINVAL (bad item, unknown attach flags, neither name nor id), -ENXIO (no
 * connection with that id, or one a custom endpoint's policy hides), -ESRCH (nobody owns
 * the name, it is hidden, or its owner is not the id given), -ENOBUFS, -ENOMEM.
 */
int native_conn_info(NativeConn *nc, void *buf, size_t size, NativeCommandIo *io) {
        struct kdbus_cmd_info *cmd = buf;
        const struct kdbus_item *item;
        const char *name = NULL;
        BridgePoolSlice *slice;
        BridgeConn *target;
        struct kdbus_info *info;
        uint64_t attach, declined;
        uint8_t *end;
        bool with_names;
        size_t total;
        int r;

        KDBUS_ITEMS_FOREACH(item, cmd->items, cmd->size - sizeof(*cmd)) {
                size_t len = item->size - KDBUS_ITEM_HEADER_SIZE;

                if (name || len < 1 ||
                    memchr(item->str, '\0', len) != item->str + len - 1)
                        return -EINVAL;
                name = item->str;
        }
        /* kdbus_sanitize_attach_flags(): unknown bits EINVAL (_KDBUS_ATTACH_ANY is all) */
        if (cmd->attach_flags != _KDBUS_ATTACH_ANY &&
            (cmd->attach_flags & ~(uint64_t)_KDBUS_ATTACH_ALL))
                return -EINVAL;
        if (name) {
                /* kdbus_cmd_conn_info(): the name registry only, no syntax check (a unique
                 * name or any other string is simply not there); its owner, or its activator
                 * while nobody owns it; with an id too, that must be the owner's. A name the
                 * endpoint policy hides does not exist. */
                target = name[0] == ':' ? NULL : bus_find_conn_by_name(nc->conn->bus, name);
                if (!target)
                        target = bus_find_activator(nc->conn->bus, name);
                if (!target || !bridge_conn_can_see_name(nc->conn, name) ||
                    (cmd->id && target->id != cmd->id))
                        return -ESRCH;
        } else if (cmd->id) {
                target = info_find_conn(nc->conn->bus, cmd->id);
                if (!target || !bridge_conn_can_see_conn(nc->conn, target))
                        return -ENXIO;
        } else
                return -EINVAL;         /* neither a name nor an id */

        with_names = cmd->attach_flags & KDBUS_ATTACH_NAMES;
        /* NAMES: write_info() lists the names it is the primary owner of and an activator's
         * name, not those it waits for (kdbus: the names a connection owns) */
        attach = native_attach_flags_for(nc, cmd->attach_flags & ~(uint64_t)KDBUS_ATTACH_NAMES,
                                         target, &declined) & ~(uint64_t)KDBUS_ATTACH_TIMESTAMP;
        total = info_size(nc->conn, target, INFO_NAMES, with_names) +
                native_meta_size(attach, declined, target, NULL);
        r = bridge_pool_alloc(nc->pool, total, false, &slice);
        if (r == POOL_E_NO_SPACE)
                return -ENOBUFS;
        if (r)
                return r;
        info = bridge_pool_ptr(nc->pool, slice);
        memset(info, 0, slice->size);
        end = write_info((uint8_t *)info, nc->conn, target, INFO_NAMES, with_names);
        end = native_meta_write(end, attach, declined, nc->conn->bus, target, NULL, nc);
        info->size = (uint64_t)(end - (uint8_t *)info);
        cmd->return_flags = 0;
        cmd->offset = slice->offset;
        cmd->info_size = total;
        return 0;
}
