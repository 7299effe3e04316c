/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Native connections: HELLO, delivery into the pool, RECV, FREE, BYEBYE and the command
 * dispatcher (SEND is in native/send.c, names and info in native/names.c, the waiting
 * SYNC_REPLYs in native/sync.c).
 *
 * Delivery: the BridgeConn's queue is the core's; this transport empties it into the pool
 * as soon as something is queued (queue_nonempty), writing each message once as a
 * kdbus_msg. The written messages wait on @recv_list until RECV hands out their offsets.
 *
 * Quota, per (receiver, sending account) as in kdbus: NATIVE_MAX_MSGS_PER_USER messages,
 * NATIVE_MAX_FDS_PER_USER fds and bridge_pool_quota_allows()'s share of the pool, counting
 * what the account has in the pool and in the core's queue. It is checked when the core
 * accepts a message (native_conn_quota_check(), from bridge/conn.c), as kdbus checked it
 * when it wrote into the pool, not when the message is written here: a message accepted
 * is never held back by its user's share later, so one user's backlog cannot stop another
 * user's messages, and the receiver gets them in the order the bus accepted them. Nothing
 * waits for free space: as kdbus's kdbus_pool_slice_alloc(), a peer's message that finds
 * no free range (slices the receiver has not FREEd) is refused at once (EXFULL), and the
 * bus's own messages and monitor copies that find none are lost and counted in
 * dropped_msgs. Exception, so that a receiver with nothing queued takes any message it has
 * room for: with nothing in the pool and the core's queue the quota is not applied. The
 * bus's own messages are not charged.
 *
 * A broadcast the core could not queue (it kicks the receiver) is counted in dropped_msgs
 * instead of disconnecting: in kdbus a broadcast never fails its sender, and the receiver
 * learns how many it lost with its next RECV.
 */
#include <assert.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "bridge/bus-internal.h"
#include "bridge/bus.h"
#include "bridge/conn.h"
#include "bridge/endpoint.h"
#include "bridge/meta.h"
#include "bridge/monitor.h"
#include "bridge/msg.h"
#include "bridge/names.h"
#include "bridge/ns.h"
#include "bridge/pool.h"
#include "bridge/reply.h"
#include "kdbus/kdbus.h"
#include "native/command.h"
#include "native/conn.h"
#include "native/holder.h"
#include "native/items.h"
#include "native/match.h"
#include "native/meta.h"
#include "native/names.h"
#include "native/notify.h"
#include "native/send.h"
#include "native/special.h"
#include "native/update.h"
#include "util/error.h"
#include "wire/protocol.h"

static void native_bridge_queue_nonempty(BridgeConn *conn, void *userdata) {
        native_conn_drain(userdata);
}

/**
 * native_conn_count_drop() - a message lost for @nc
 * @nc:         the connection
 *
 * Counted for its next RECV; and news for a poller, as kdbus raised POLLIN for it: the
 * first loss since the last RECV makes the connection readable (the wakeup eventfd, a
 * held RECV answered with the count), so a RECV that the preload library answers EAGAIN
 * itself while the eventfd is quiet never hides a count.
 */
void native_conn_count_drop(NativeConn *nc) {
        if (nc->dropped_msgs++ == 0 && nc->ops && nc->ops->readable)
                nc->ops->readable(nc, nc->userdata);
}

static void native_bridge_kick(BridgeConn *conn, void *userdata) {
        native_conn_count_drop(userdata);
}

static void native_bridge_disconnected(BridgeConn *conn, void *userdata) {
        NativeConn *nc = userdata;

        if (!nc->freeing && !nc->byebye && nc->ops && nc->ops->disconnected)
                nc->ops->disconnected(nc, nc->userdata);
}

static int native_bridge_quota_check(const BridgeConn *conn, void *userdata,
                                     const BridgeMsg *msg) {
        return native_conn_quota_check(userdata, msg);
}

static int native_bridge_unqueue(BridgeConn *conn, void *userdata, const char *name,
                                 BridgeMsg ***msgs, size_t *n, size_t *cap) {
        return native_conn_unqueue(userdata, name, msgs, n, cap);
}

/* What the core asks of a native connection: a broadcast it could not queue (kick) and a
 * message an activator could not hand over (dropped) are counted for the next RECV; kdbus's
 * rules where they differ from dbus-daemon's (BRIDGE_RULE_*, kdbus's pending-call limit). */
static const BridgeConnOps native_bridge_ops = {
        .queue_nonempty = native_bridge_queue_nonempty,
        .kick = native_bridge_kick,
        .disconnected = native_bridge_disconnected,
        .quota_check = native_bridge_quota_check,
        .unqueue = native_bridge_unqueue,
        .dropped = native_bridge_kick,
        .reply_lost = native_notify_reply_lost,
        .reply_undelivered = native_notify_reply_undelivered,
        .shown_creds = native_conn_shown_creds,
        .rules = BRIDGE_RULE_MEMFDS_AS_IS | BRIDGE_RULE_NAMES_OLDEST_FIRST |
                 BRIDGE_RULE_REPLY_SLOT_USED_UP | BRIDGE_RULE_SIGNALS_BY_MATCH |
                 BRIDGE_RULE_MONITOR_FDS_BLANKED | BRIDGE_RULE_MONITOR_PEERS_ONLY,
        .max_replies = NATIVE_MAX_REQUESTS_PENDING,
};

/**
 * native_errno_from_bridge() - kdbus's errno for an outcome of the core
 * @r:          0, a negative errno, or a BRIDGE_E_* / NAME_E_* code
 *
 * Return: 0 or a negative errno.
 */
int native_errno_from_bridge(int r) {
        switch (r) {
        case 0:
                return 0;
        case BRIDGE_E_NAME_UNKNOWN:     return -ESRCH;
        case BRIDGE_E_PEER_UNKNOWN:     return -ENXIO;
        case BRIDGE_E_QUOTA:            return -ENOBUFS;
        case BRIDGE_E_POOL_FULL:        return -EXFULL;
        case BRIDGE_E_FDS_REFUSED:      return -ECOMM;
        case BRIDGE_E_REPLY_UNEXPECTED: return -EBADSLT;
        case BRIDGE_E_REPLIES_QUOTA:    return -EMLINK;
        case BRIDGE_E_NOT_ACTIVE:       return -ECONNRESET;
        case BRIDGE_E_CONN_QUOTA:       return -EMFILE;
        case BRIDGE_E_ACCESS_DENIED:    return -EPERM;  /* kdbus: no TALK (or XML policy) */
        case BRIDGE_E_BAD_BODY:         return -EBADMSG;
        case BRIDGE_E_FDS_QUOTA:        return -EMFILE; /* kdbus_conn_quota_inc() */
        case BRIDGE_E_MSG_TOO_LARGE:    return -EMSGSIZE;
        default:
                return r < 0 ? r : -EIO;
        }
}

static void entry_free(NativeConn *nc, NativeEntry *e, bool release_slice) {
        assert(nc->n_entries > 0);
        list_unlink(&e->link);
        --nc->n_entries;
        /* a notification (no msg) was charged to the bus's account too, without fds */
        bridge_quota_discharge(&nc->pool_quota, e->sender_account, e->slice->size,
                               e->msg ? e->msg->n_fds : 0);
        if (release_slice)
                bridge_pool_unqueue(nc->pool, e->slice);        /* kept if PEEKed */
        else
                bridge_pool_publish(nc->pool, e->slice);
        bridge_msg_unref(e->msg);
        if (!nc->spare_entry)
                nc->spare_entry = e;
        else
                free(e);
}

NativeEntry *native_entry_new(NativeConn *nc) {
        NativeEntry *e = nc->spare_entry;

        if (!e)
                return calloc(1, sizeof(*e));
        nc->spare_entry = NULL;
        memset(e, 0, sizeof(*e));
        return e;
}

/**
 * native_conn_hello() - HELLO: a new native connection with its pool
 * @bus:        the bus
 * @creds:      the peer's credentials, captured at connect (taken on success)
 * @cmd:        the peer's kdbus_cmd_hello, updated in place (id, bus_flags, offset,
 *              items_size, id128)
 * @size:       bytes available at @cmd
 * @ops:        the transport's callbacks
 * @userdata:   for them
 * @ret:        the connection
 *
 * The bloom parameters go into the pool as a BLOOM_PARAMETER item at cmd->offset; the
 * peer FREEs that slice.
 *
 * Return: 0, 1 (KDBUS_FLAG_NEGOTIATE: cmd->flags says the known flags, nothing is made),
 * or -EINVAL, -ENAMETOOLONG (a CONN_DESCRIPTION over 63 bytes), -EOPNOTSUPP (also: @bus
 * does not number unique names kdbus's way, BUS_NAMING_KDBUS), -EMFILE, -ENOMEM and other
 * errnos for the peer.
 */
int native_conn_hello(Bus *bus, BridgeCreds *creds, struct kdbus_cmd_hello *cmd, size_t size,
                      const NativeConnOps *ops, void *userdata, NativeConn **ret) {
        return native_conn_hello_on(bus, NULL, creds, cmd, size, ops, userdata, ret);
}

static int hello_on(Bus *bus, BusEndpoint *ep, BridgeCreds *creds,
                    struct kdbus_cmd_hello *cmd, size_t size, const NativeConnOps *ops,
                    void *userdata, NativeConn **ret);

/**
 * native_conn_hello_on() - HELLO through a custom endpoint
 * @bus:        the bus
 * @ep:         the endpoint the peer came through, or NULL
 * @creds:      as native_conn_hello()
 * @cmd:        as native_conn_hello()
 * @size:       as native_conn_hello()
 * @ops:        as native_conn_hello()
 * @userdata:   as native_conn_hello()
 * @ret:        as native_conn_hello()
 *
 * KDBUS_FLAG_NEGOTIATE: cmd->flags says the flags known, no connection is made (kdbus's
 * kdbus_cmd_hello() returns before kdbus_conn_new(); the handle stays unset).
 *
 * Return: as native_conn_hello(); 1 (NEGOTIATE answered, *ret untouched); -ECONNRESET if
 * @ep was closed.
 */
int native_conn_hello_on(Bus *bus, BusEndpoint *ep, BridgeCreds *creds,
                         struct kdbus_cmd_hello *cmd, size_t size, const NativeConnOps *ops,
                         void *userdata, NativeConn **ret) {
        void *copy;
        int r;

        r = native_items_negotiate_head(cmd, size, sizeof(*cmd), &copy);
        if (r)
                return r;
        r = hello_on(bus, ep, creds, copy ? copy : (void *)cmd, size, ops, userdata, ret);
        native_items_negotiate_done(cmd, size, sizeof(*cmd), copy);
        return r;
}

static int hello_on(Bus *bus, BusEndpoint *ep, BridgeCreds *creds,
                    struct kdbus_cmd_hello *cmd, size_t size, const NativeConnOps *ops,
                    void *userdata, NativeConn **ret) {
        const NativeCommand *def = native_command_find(KDBUS_CMD_HELLO);
        _cleanup_(native_conn_freep) NativeConn *nc = NULL;
        struct kdbus_item *item;
        BridgePoolSlice *slice;
        const char *description = NULL, *name = NULL;
        _cleanup_(native_fake_meta_freep) NativeFakeMeta *fake = NULL;
        unsigned conn_flags = 0;
        int r;

        r = native_command_check(def, (const struct kdbus_cmd *)cmd, size);
        if (r)
                return r;
        KDBUS_ITEMS_FOREACH(item, cmd->items, cmd->size - sizeof(*cmd)) {
                size_t len = item->size - KDBUS_ITEM_HEADER_SIZE;

                switch (item->type) {
                case KDBUS_ITEM_POLICY_ACCESS:
                        /* kdbus takes them from any HELLO and uses them only for a policy
                         * holder or an activator (native_holder_set() checks those) */
                        if (len != sizeof(struct kdbus_policy_access))
                                return -EINVAL;
                        break;
                case KDBUS_ITEM_CONN_DESCRIPTION:
                        r = native_item_name_check(item);
                        if (r)
                                return r;
                        if (description)
                                return -EINVAL;
                        description = item->str;
                        break;
                case KDBUS_ITEM_NAME:
                        /* one NAME (activators, policy holders) */
                        if (name || len < 2 || len > 256 || item->str[len - 1] != '\0' ||
                            strlen(item->str) != len - 1)
                                return -EINVAL;
                        name = item->str;
                        break;
                case KDBUS_ITEM_CREDS:
                case KDBUS_ITEM_PIDS:
                case KDBUS_ITEM_SECLABEL:
                        r = native_fake_meta_add(&fake, item);
                        if (r)
                                return r;
                        break;
                default:
                        return -EINVAL;
                }
        }
        /* kdbus checks the items before it answers NEGOTIATE */
        if (cmd->flags & KDBUS_FLAG_NEGOTIATE) {
                cmd->flags = def->negotiate;
                cmd->return_flags = 0;
                return 1;
        }
        /* a native peer forms a connection's name from its id as kdbus does (":1.<id>"):
         * only a bus that names every peer that way (bus_set_naming(), set by the front
         * end before anyone connects) gives it names that mean the same connection to
         * every peer; on any other bus it would read names that do not */
        if (bus->naming != BUS_NAMING_KDBUS)
                return -EOPNOTSUPP;
        /* kdbus: nobody is privileged on a custom endpoint, and monitors are refused there */
        if (ep && (cmd->flags & KDBUS_HELLO_MONITOR))
                return -EOPNOTSUPP;
        if (ep && (cmd->flags & (KDBUS_HELLO_ACTIVATOR | KDBUS_HELLO_POLICY_HOLDER)))
                return -EPERM;
        r = native_special_hello_check(bus, creds, cmd->flags, name);
        if (r)
                return r;
        /* kdbus_conn_new(): only the privileged may stand in for somebody else (a bus proxy
         * connecting for its clients); nobody is privileged on a custom endpoint */
        if (fake && (ep || !bus_creds_privileged(bus, creds)))
                return -EPERM;
        /* unknown bits EINVAL, the bus's required ones missing ECONNREFUSED (kdbus) */
        r = native_attach_check(bus, &cmd->attach_flags_send, &cmd->attach_flags_recv);
        if (r)
                return r;
        if (cmd->flags & KDBUS_HELLO_ACCEPT_FD)
                conn_flags |= BRIDGE_CONN_ACCEPT_FDS;

        nc = calloc(1, sizeof(*nc));
        if (!nc)
                return -ENOMEM;
        list_init(&nc->recv_list);
        list_init(&nc->matches);
        nc->next_send_pidfd = -1;
        nc->hello_flags = cmd->flags;
        nc->attach_flags_send = cmd->attach_flags_send;
        nc->attach_flags_recv = cmd->attach_flags_recv;
        nc->ops = ops;
        nc->userdata = userdata;
        nc->fake = steal_ptr(&fake);
        if (description) {
                nc->description = strdup(description);
                if (!nc->description)
                        return -ENOMEM;
        }

        r = bridge_pool_new(cmd->pool_size, &nc->pool);
        if (r == POOL_E_BAD_SIZE)
                return -EINVAL;
        if (r)
                return error_trace(r);
        if (ep && !ep->bus)
                return -ECONNRESET;     /* kdbus: ESHUTDOWN on a node being removed */
        bus_add_observer(bus, &native_bus_observer);    /* kdbus's notifications */
        r = bridge_conn_new(bus, creds, conn_flags, &native_bridge_ops, nc, &nc->conn);
        if (r)
                return native_errno_from_bridge(r);
        native_meta_recv_account(bus, 0, nc->attach_flags_recv);       /* undone at free */
        ++bus->n_native_conns;                                          /* this one too */
        if (ep)
                bridge_conn_set_endpoint(nc->conn, ep);
        r = native_meta_capture(nc);
        if (r)
                return r;

        /* the bloom parameters first: the slice is the peer's to FREE */
        r = bridge_pool_alloc(nc->pool, KDBUS_ITEM_SIZE(sizeof(struct kdbus_bloom_parameter)),
                              false, &slice);
        if (r)
                return r == POOL_E_NO_SPACE ? -EINVAL : r;
        item = bridge_pool_ptr(nc->pool, slice);
        item->size = KDBUS_ITEM_HEADER_SIZE + sizeof(struct kdbus_bloom_parameter);
        item->type = KDBUS_ITEM_BLOOM_PARAMETER;
        item->bloom_parameter.size = nc->conn->bus->bloom.size;
        item->bloom_parameter.n_hash = nc->conn->bus->bloom.n_hash;

        if (cmd->flags & KDBUS_HELLO_POLICY_HOLDER)
                nc->conn->flags |= BRIDGE_CONN_POLICY_HOLDER;
        /* an activator's entries first: its name must not be announced if they fail */
        if (cmd->flags & KDBUS_HELLO_ACTIVATOR) {
                r = native_activator_policy_set(nc, cmd->items, cmd->size - sizeof(*cmd));
                if (r)
                        return r;
        }
        r = native_special_hello(nc, name);
        if (r)
                return r;
        if (cmd->flags & KDBUS_HELLO_POLICY_HOLDER) {
                r = native_holder_set(nc, cmd->items, cmd->size - sizeof(*cmd));
                if (r)
                        return r;
        }

        cmd->return_flags = 0;
        cmd->bus_flags = bus->bus_flags;        /* kdbus: the BUS_MAKE flags */
        cmd->id = nc->conn->id;
        cmd->offset = slice->offset;
        cmd->items_size = item->size;
        memcpy(cmd->id128, bus->id, sizeof(cmd->id128));
        *ret = steal_ptr(&nc);
        return 0;
}

/**
 * native_conn_free() - disconnect (if still connected) and free
 * @nc:         the connection or NULL
 *
 * Return: NULL.
 */
NativeConn *native_conn_free(NativeConn *nc) {
        NativeEntry *e;

        if (!nc)
                return NULL;
        nc->freeing = true;
        native_holder_drop(nc);
        if (nc->conn) {
                if (nc->conn->bus) {    /* NULL: the bus went first */
                        native_meta_recv_account(nc->conn->bus, nc->attach_flags_recv, 0);
                        --nc->conn->bus->n_native_conns;
                }
                bridge_conn_disconnect(nc->conn);
                nc->conn->ops = NULL;
                nc->conn->userdata = NULL;
        }
        while ((e = list_first_entry(&nc->recv_list, NativeEntry, link)))
                entry_free(nc, e, true);
        /* n_entries counts recv_list, and each entry's slice was released with it */
        assert(nc->n_entries == 0);
        assert(!nc->pool || nc->pool->queued == 0);
        bridge_quota_table_deinit(&nc->pool_quota);
        native_conn_matches_clear(nc);  /* the rules went with the disconnect */
        nc->conn = bridge_conn_unref(nc->conn);
        nc->pool = bridge_pool_free(nc->pool);
        for (unsigned i = 0; i < nc->n_sync; i++)
                nc->sync[i].cancel_fd = fd_close(nc->sync[i].cancel_fd);
        nc->n_sync = 0;
        bridge_meta_free(nc->meta);
        native_fake_meta_free(nc->fake);
        bridge_ns_free(nc->ns);
        free(nc->description);
        free(nc->spare_entry);
        bridge_msg_unref(nc->quota_sized.msg);
        free(nc);
        return NULL;
}

/**
 * native_conn_from_bridge() - the native connection behind a core connection
 * @conn:       any connection
 *
 * Return: the NativeConn, or NULL for a legacy peer.
 */
NativeConn *native_conn_from_bridge(const BridgeConn *conn) {
        return conn->ops == &native_bridge_ops ? conn->userdata : NULL;
}

/**
 * native_conn_free_ring_fd() - the pool's free ring (KDBUS_WIRE_FREE_RING), made on demand
 * @nc:         the connection
 *
 * Return: its memfd (owned by the pool), or a negative errno.
 */
int native_conn_free_ring_fd(NativeConn *nc) {
        return bridge_pool_ring_fd(nc->pool);
}

/**
 * native_conn_pool_fd() - the pool's memfd
 * @nc:         the connection
 *
 * Return: the fd (owned by the pool).
 */
int native_conn_pool_fd(const NativeConn *nc) {
        return nc->pool->fd;
}

/* Duplicate @m's fds for the peer: the FDS item's (only for a peer with ACCEPT_FD: a
 * monitor without it gets its messages with the FDS item's -1s alone), then one per memfd
 * part (in the order of the PAYLOAD_MEMFD items). Return: 0 or -errno. */
static int msg_dup_fds(const NativeConn *nc, const BridgeMsg *m, int **ret_fds,
                       unsigned *ret_n) {
        unsigned first = nc->hello_flags & KDBUS_HELLO_ACCEPT_FD ? 0 : m ? m->n_fds : 0;
        unsigned i, n = 0, total;
        int *fds;

        *ret_fds = NULL;
        *ret_n = 0;
        if (!m)                 /* a notification from the bus */
                return 0;
        total = m->n_fds - first;
        for (i = 0; i < m->n_parts; ++i)
                total += m->parts[i].memfd >= 0;
        if (!total)
                return 0;
        fds = calloc(total, sizeof(int));
        if (!fds)
                return -ENOMEM;
        for (i = first; i < m->n_fds + m->n_parts; ++i) {
                int fd = i < m->n_fds ? m->fds[i] : m->parts[i - m->n_fds].memfd;

                if (fd < 0)
                        continue;
                fds[n] = fcntl(fd, F_DUPFD_CLOEXEC, 3);
                if (fds[n] < 0) {
                        int r = -errno;

                        while (n--)
                                (void) close(fds[n]);
                        free(fds);
                        return r;
                }
                ++n;
        }
        *ret_fds = fds;
        *ret_n = n;
        return 0;
}

/* The payload items of @m: one PAYLOAD_OFF (the inline head), then per part a
 * PAYLOAD_MEMFD or PAYLOAD_OFF; *ret_bytes: the inline bytes behind the items (8-aligned
 * per item). Return: the items' size. */
static uint64_t msg_payload_items_size(const BridgeMsg *m, uint64_t *ret_bytes) {
        uint64_t items = KDBUS_ITEM_SIZE(sizeof(struct kdbus_vec)), bytes;
        unsigned i;

        /* the head as the bus stamped it: the bus has one numbering of unique names
         * (bridge/bus.h), so a native receiver reads the names every peer reads */
        bytes = m->n_parts ? ALIGN8(m->head_size) : ALIGN8(m->size);
        for (i = 0; i < m->n_parts; ++i) {
                if (m->parts[i].memfd >= 0) {
                        items += KDBUS_ITEM_SIZE(sizeof(struct kdbus_memfd));
                } else {
                        items += KDBUS_ITEM_SIZE(sizeof(struct kdbus_vec));
                        bytes += ALIGN8(m->parts[i].size);
                }
        }
        *ret_bytes = bytes;
        return items;
}

/* Write the payload items at @item and their inline bytes from @bytes_at (an offset from
 * @km). The memfds' fd fields hold -1: the fds come with the RECV reply. Return: the next
 * item. */
static struct kdbus_item *msg_write_payload(struct kdbus_msg *km, struct kdbus_item *item,
                                            const BridgeMsg *m, uint64_t bytes_at) {
        size_t head_size;
        const uint8_t *head = bridge_msg_head(m, &head_size);
        unsigned i;

        item->size = KDBUS_ITEM_HEADER_SIZE + sizeof(struct kdbus_vec);
        item->type = KDBUS_ITEM_PAYLOAD_OFF;
        item->vec.offset = bytes_at;
        item->vec.size = head_size;
        memcpy((uint8_t *)km + bytes_at, head, head_size);
        /* no stale pool bytes in the padding */
        memset((uint8_t *)km + bytes_at + head_size, 0, ALIGN8(head_size) - head_size);
        bytes_at += ALIGN8(head_size);
        item = KDBUS_ITEM_NEXT(item);
        for (i = 0; i < m->n_parts; ++i) {
                const BridgeMsgPart *part = &m->parts[i];

                if (part->memfd >= 0) {
                        item->size = KDBUS_ITEM_HEADER_SIZE + sizeof(struct kdbus_memfd);
                        item->type = KDBUS_ITEM_PAYLOAD_MEMFD;
                        item->memfd.start = part->offset;
                        item->memfd.size = part->size;
                        item->memfd.fd = -1;
                } else {
                        item->size = KDBUS_ITEM_HEADER_SIZE + sizeof(struct kdbus_vec);
                        item->type = KDBUS_ITEM_PAYLOAD_OFF;
                        item->vec.offset = bytes_at;
                        item->vec.size = part->size;
                        memcpy((uint8_t *)km + bytes_at, m->tail + part->offset, part->size);
                        memset((uint8_t *)km + bytes_at + part->size, 0,
                               ALIGN8(part->size) - part->size);
                        bytes_at += ALIGN8(part->size);
                }
                item = KDBUS_ITEM_NEXT(item);
        }
        return item;
}

/*
 * An opaque payload (bridge/msg.h; native/send.c made it: the sender's kdbus_msg with its
 * items as kdbus kept them, then 8-aligned the payload bytes) as kdbus_staging_emit()
 * wrote it: the kdbus_msg and its items, the metadata items 8-aligned after them (size
 * covers both), the payload 8-aligned after that, each PAYLOAD_OFF's offset (but a NULL
 * vec's ~0) now counted from the message's start. The sender's fields stay as it wrote
 * them (dst_id too: 0 for a send by name, as kdbus), src_id is the sender's id.
 */
static void msg_write_opaque(const BridgeMsg *m, struct kdbus_msg *km, uint64_t msg_size) {
        const struct kdbus_msg *okm = (const void *)m->opaque;
        uint64_t head = ALIGN8(okm->size), payload_at = ALIGN8(msg_size);
        uint64_t bytes = m->opaque_size - head;
        struct kdbus_item *item;

        /* no stale pool bytes in the gaps (the metadata's place is among them, zeroed as
         * native_meta_write() wants it) and the padding; the payload is copied, not
         * cleared first */
        memcpy(km, okm, okm->size);
        memset((uint8_t *)km + okm->size, 0, payload_at - okm->size);
        km->size = msg_size;
        KDBUS_ITEMS_FOREACH(item, km->items, okm->size - sizeof(*okm))
                if (item->type == KDBUS_ITEM_PAYLOAD_OFF && item->vec.offset != UINT64_MAX)
                        item->vec.offset += payload_at;
        memcpy((uint8_t *)km + payload_at, m->opaque + head, bytes);
        memset((uint8_t *)km + payload_at + bytes, 0, ALIGN8(payload_at + bytes) - payload_at - bytes);
}

/* The kdbus_msg for @m as @nc sees it, at @slice: header, PAYLOAD_OFF, FDS, metadata of
 * @sender (@attach), the payload. */
static void msg_write(NativeConn *nc, const BridgeMsg *m, BridgePoolSlice *slice,
                      uint64_t msg_size, uint64_t attach, uint64_t declined,
                      const BridgeConn *sender) {
        struct kdbus_msg *km = bridge_pool_ptr(nc->pool, slice);
        const WireHeader *h = &m->hdr;
        struct kdbus_item *item;
        unsigned i;

        if (m->opaque) {
                const struct kdbus_msg *okm = (const void *)m->opaque;

                msg_write_opaque(m, km, msg_size);
                (void) native_meta_write((uint8_t *)km + ALIGN8(okm->size), attach, declined,
                                         nc->conn->bus, sender, m, nc);
                return;
        }
        memset(km, 0, msg_size);
        km->size = msg_size;
        km->priority = m->priority;
        km->src_id = m->sender_id ? m->sender_id : KDBUS_SRC_ID_KERNEL;
        km->dst_id = h->destination ? nc->conn->id : KDBUS_DST_ID_BROADCAST;
        if (h->destination && bridge_conn_is_monitor(nc->conn))
                km->dst_id = native_monitor_dst_id(nc->conn->bus, h->destination);
        km->payload_type = KDBUS_PAYLOAD_DBUS;
        km->cookie = h->serial;
        if (h->type == WIRE_MSG_METHOD_CALL && !(h->flags & WIRE_FLAG_NO_REPLY_EXPECTED))
                km->flags |= KDBUS_MSG_EXPECT_REPLY;
        if (h->flags & WIRE_FLAG_NO_AUTO_START)
                km->flags |= KDBUS_MSG_NO_AUTO_START;
        if (h->type == WIRE_MSG_SIGNAL)
                km->flags |= KDBUS_MSG_SIGNAL;
        if (h->type == WIRE_MSG_METHOD_RETURN || h->type == WIRE_MSG_ERROR)
                km->cookie_reply = h->reply_serial;

        item = msg_write_payload(km, km->items, m, msg_size);
        if (m->n_fds) {
                item->size = KDBUS_ITEM_HEADER_SIZE + m->n_fds * sizeof(int);
                item->type = KDBUS_ITEM_FDS;
                /* the fds themselves travel with the RECV reply, in this order */
                for (i = 0; i < m->n_fds; ++i)
                        item->fds[i] = -1;
                item = KDBUS_ITEM_NEXT(item);
        }
        (void) native_meta_write((uint8_t *)item, attach, declined, nc->conn->bus, sender, m, nc);
}


/* The sizes of @m's kdbus_msg as @nc gets it from @sender: *ret_msg_size (header, items,
 * metadata), and what the slice takes with the inline payload behind. */
static uint64_t msg_slice_size(const NativeConn *nc, const BridgeMsg *m, const BridgeConn *sender,
                               uint64_t *ret_msg_size, uint64_t *ret_attach,
                               uint64_t *ret_declined) {
        uint64_t msg_size, bytes, meta = 0;

        /* a receiver that wants nothing gets nothing from anyone (native_meta_wanted()):
         * neither metadata nor the declined flags, whatever the sender consented to */
        *ret_attach = 0;
        *ret_declined = 0;
        if (native_meta_wanted(nc)) {
                *ret_attach = native_attach_flags_for(nc, nc->attach_flags_recv, sender,
                                                      ret_declined);
                meta = native_meta_size(*ret_attach, *ret_declined, sender, m);
        }
        if (m->opaque) {
                const struct kdbus_msg *okm = (const void *)m->opaque;

                msg_size = meta ? ALIGN8(okm->size) + meta : okm->size;
                *ret_msg_size = msg_size;
                return ALIGN8(ALIGN8(msg_size) + m->opaque_size - ALIGN8(okm->size));
        }
        msg_size = sizeof(struct kdbus_msg) + msg_payload_items_size(m, &bytes);
        if (m->n_fds)
                msg_size += KDBUS_ITEM_SIZE(m->n_fds * sizeof(int));
        msg_size += meta;
        *ret_msg_size = msg_size;
        return ALIGN8(msg_size + bytes);
}

/* The sender whose metadata goes with @m to @nc: NULL for the bus's own messages and when
 * @nc asks for none (then it gets none from anyone, see native_meta_wanted(), and the
 * hash lookup per delivered message is saved). */
static const BridgeConn *msg_sender_for(const NativeConn *nc, const BridgeMsg *m) {
        if (!m->sender_id || !native_meta_wanted(nc))
                return NULL;
        return bus_find_conn(nc->conn->bus, m->sender_id);
}

/**
 * native_conn_quota_check() - kdbus's pool quota for one more message of a sending account
 * @nc:         the receiver
 * @msg:        the message, its quota_account set (bridge_conn_send())
 *
 * What the account holds counts both in the pool (written, not received) and in the core's
 * queue (accepted, waiting for free space). Not applied to the bus's own messages, nor when
 * the receiver has nothing queued at all (a message larger than a user's share then still
 * reaches a receiver that has room for it).
 *
 * Return: 0, BRIDGE_E_QUOTA (NATIVE_MAX_MSGS_PER_USER messages, or the byte share: kdbus's
 * ENOBUFS), BRIDGE_E_FDS_QUOTA (more than NATIVE_MAX_FDS_PER_USER fds: EMFILE) or
 * BRIDGE_E_POOL_FULL (no free range for it in the pool now: EXFULL).
 */
int native_conn_quota_check(NativeConn *nc, const BridgeMsg *msg) {
        NativeSliceSize *sz = &nc->quota_sized;
        BridgeQuotaUse pool, queue;
        uint64_t total;

        sz->msg = bridge_msg_unref(sz->msg);
        if (!msg->sender_id || msg->quota_account == BRIDGE_QUOTA_ACCOUNT_BUS)
                return 0;
        sz->sender = msg_sender_for(nc, msg);
        total = sz->total = msg_slice_size(nc, msg, sz->sender, &sz->msg_size, &sz->attach,
                                           &sz->declined);
        if (!list_is_empty(&nc->recv_list) || bridge_conn_queue_peek(nc->conn)) {
                pool = bridge_quota_get(&nc->pool_quota, msg->quota_account);
                queue = bridge_quota_get(&nc->conn->quota, msg->quota_account);
                if (pool.msgs + queue.msgs >= NATIVE_MAX_MSGS_PER_USER)
                        return BRIDGE_E_QUOTA;
                if (pool.fds + queue.fds + msg->n_fds > NATIVE_MAX_FDS_PER_USER)
                        return BRIDGE_E_FDS_QUOTA;
                if (!bridge_pool_quota_allows(nc->pool, pool.bytes + queue.bytes, total))
                        return BRIDGE_E_QUOTA;
        }
        /* kdbus had no queue in front of the pool: kdbus_pool_slice_alloc() found room
         * for the message at once or its SEND failed EXFULL */
        if (!bridge_pool_fits(nc->pool, total))
                return BRIDGE_E_POOL_FULL;
        /* a message is const to the transport, its reference count is not */
        sz->msg = bridge_msg_ref((BridgeMsg *)msg);
        return 0;
}

/* The cookie a reply answers: kdbus's 64 bits for an opaque one, else its REPLY_SERIAL. */
static uint64_t msg_cookie_reply(const BridgeMsg *m) {
        if (m->opaque)
                return ((const struct kdbus_msg *)(const void *)m->opaque)->cookie_reply;
        return m->hdr.reply_serial;
}

/*
 * Write @m into the pool (its quota and room were checked when the core accepted it);
 * @sized: its sizes if the quota check computed them just before (nothing changed since),
 * or NULL.
 * Return: 0 (delivered or dropped) or -ENOMEM (left queued).
 */
static int native_conn_deliver(NativeConn *nc, BridgeMsg *m, const NativeSliceSize *sized) {
        const BridgeConn *sender;
        uint64_t msg_size, total, attach, declined;
        BridgePoolSlice *slice;
        NativeEntry *e;
        int r, i;

        if (sized) {
                sender = sized->sender;
                total = sized->total;
                msg_size = sized->msg_size;
                attach = sized->attach;
                declined = sized->declined;
        } else {
                sender = msg_sender_for(nc, m);
                total = msg_slice_size(nc, m, sender, &msg_size, &attach, &declined);
        }
        r = bridge_pool_alloc(nc->pool, total, true, &slice);
        if (r == POOL_E_NO_SPACE) {
                /* a peer's message was checked to fit when it was accepted; the bus's own
                 * and a monitor's copies are lost and counted, as kdbus's failed
                 * kdbus_conn_entry_insert() raised lost_count */
                native_conn_count_drop(nc);
                return 0;
        }
        if (r)
                return error_trace(r);
        msg_write(nc, m, slice, msg_size, attach, declined, sender);

        if (nc->n_sync &&
            (m->hdr.type == WIRE_MSG_METHOD_RETURN || m->hdr.type == WIRE_MSG_ERROR) &&
            (i = native_conn_sync_find(nc, msg_cookie_reply(m))) >= 0) {
                int *fds;
                unsigned n_fds;

                bridge_pool_publish(nc->pool, slice);
                r = msg_dup_fds(nc, m, &fds, &n_fds);
                /* msg_size: the slice's, as kdbus_pool_slice_publish() reports it */
                native_conn_sync_finish(nc, (unsigned)i, r, slice->offset, slice->size, fds,
                                        n_fds);
                return 0;
        }

        e = native_entry_new(nc);
        if (!e || bridge_quota_charge(&nc->pool_quota, m->quota_account, slice->size,
                                      m->n_fds) < 0) {
                free(e);
                bridge_pool_release(nc->pool, slice);
                return error_origin(-ENOMEM);
        }
        e->slice = slice;
        e->priority = m->priority;
        e->sender_account = m->quota_account;
        e->msg = bridge_msg_ref(m);
        list_append(&nc->recv_list, &e->link);
        ++nc->n_entries;
        return 0;
}

/**
 * native_conn_unqueue() - take the messages for @name off the receive list
 * @nc:         the connection
 * @name:       a well-known name
 * @msgs:       array to append them to (a reference each), realloc'd as needed
 * @n:          its length
 * @cap:        its capacity
 *
 * For moving messages between an activator and a name's owner (bridge/activator.c):
 * written into the pool, not received (PEEKed ones too), DESTINATION @name, oldest first.
 * Their slices go back to the pool.
 *
 * Return: 0 or -ENOMEM (what was taken so far stays in @msgs).
 */
int native_conn_unqueue(NativeConn *nc, const char *name, BridgeMsg ***msgs, size_t *n,
                        size_t *cap) {
        List *pos, *tmp;

        list_for_each_safe(pos, tmp, &nc->recv_list) {
                NativeEntry *e = container_of(pos, NativeEntry, link);

                if (!e->msg || !e->msg->hdr.destination || strcmp(e->msg->hdr.destination, name))
                        continue;
                if (*n == *cap) {
                        size_t c = *cap ? 2 * *cap : 16;
                        BridgeMsg **m = realloc(*msgs, c * sizeof(*m));

                        if (!m)
                                return error_origin(-ENOMEM);
                        *msgs = m;
                        *cap = c;
                }
                (*msgs)[(*n)++] = bridge_msg_ref(e->msg);
                entry_free(nc, e, true);
        }
        return 0;
}

/**
 * native_conn_drain() - move what the core queued into the pool
 * @nc:         the connection
 *
 * Stops at the first message that does not fit now (quota or space). Wakes the peer when
 * the receive list became non-empty.
 */
void native_conn_drain(NativeConn *nc) {
        bool was_empty;
        unsigned n_before;
        NativeSliceSize sized = { 0 };
        BridgeMsg *m;

        /* the quota check's sizes hold for the first message only if it is the one the
         * check was for and nothing ran in between: the drain the core's queueing of it
         * starts; any later drain finds them gone */
        if (nc->quota_sized.msg) {
                sized = nc->quota_sized;
                nc->quota_sized.msg = NULL;
        }
        /* most drains (RECV's and FREE's) find nothing queued */
        if (!nc->conn || list_is_empty(&nc->conn->queue)) {
                if (sized.msg)
                        bridge_msg_unref(sized.msg);
                return;
        }
        was_empty = list_is_empty(&nc->recv_list);
        n_before = nc->n_entries;
        while ((m = bridge_conn_queue_peek(nc->conn))) {
                bool first = sized.msg == m;

                if (sized.msg)          /* the queue holds @m */
                        sized.msg = bridge_msg_unref(sized.msg);
                if (native_conn_deliver(nc, m, first ? &sized : NULL))
                        break;
                bridge_conn_queue_pop(nc->conn);
        }
        if (sized.msg)
                bridge_msg_unref(sized.msg);
        /* (a SYNC_REPLY's answer goes to sync_done, not into the list) */
        if (((was_empty && !list_is_empty(&nc->recv_list)) ||
             (nc->readable_each && nc->n_entries > n_before)) && nc->ops && nc->ops->readable)
                nc->ops->readable(nc, nc->userdata);
}

/*
 * The message RECV takes: the first; with KDBUS_RECV_USE_PRIORITY the one of the highest
 * priority, which in kdbus is the lowest value (the first of equals), if that value is at
 * most @cmd's priority; NULL otherwise (kdbus: EAGAIN, as for an empty queue).
 */
static NativeEntry *recv_pick(NativeConn *nc, const struct kdbus_cmd_recv *cmd) {
        NativeEntry *best = NULL;
        List *pos;

        if (!(cmd->flags & KDBUS_RECV_USE_PRIORITY))
                return list_first_entry(&nc->recv_list, NativeEntry, link);
        list_for_each(pos, &nc->recv_list) {
                NativeEntry *e = container_of(pos, NativeEntry, link);

                if (!best || e->priority < best->priority)
                        best = e;
        }
        return best && best->priority <= cmd->priority ? best : NULL;
}

/*
 * A call DROPped unread will get no answer from @nc: as kdbus_cmd_recv() does, its reply
 * slot goes and its caller (@caller_id, the call's @serial) learns at once (REPLY_DEAD, or
 * EPIPE for a SYNC_REPLY; a legacy caller gets the driver's NoReply) instead of waiting
 * for the timeout.
 */
static void drop_fail_call(NativeConn *nc, uint64_t caller_id, uint32_t serial) {
        Bus *bus = nc->conn->bus;
        BridgeConn *caller;
        BridgeReply *reply;

        caller = bus_find_conn(bus, caller_id);
        if (!caller)
                return;                 /* gone: its slots went with it */
        reply = bus_find_reply(bus, caller, nc->conn, serial);
        if (!reply)
                return;                 /* answered already, timed out, or another callee's */
        bridge_reply_free(reply);
        (void) bus_notify_reply_lost(bus, caller, serial, false, nc->conn->unique_name);
}

static void recv_drop_fail_call(NativeConn *nc, const BridgeMsg *m) {
        if (m->hdr.type != WIRE_MSG_METHOD_CALL || (m->hdr.flags & WIRE_FLAG_NO_REPLY_EXPECTED))
                return;
        drop_fail_call(nc, m->sender_id, m->hdr.serial);
}

/**
 * native_conn_drop_received() - KDBUS_WIRE_DROP: a message the peer received, dropped unread
 * @nc:         the connection
 * @offset:     its slice (handed out by RECV, not PEEKed only)
 *
 * libkdbus-preload.so received the message with a held RECV and its program DROPs it: as
 * RECV's DROP, the slice goes and a call expecting a reply fails for its caller at once.
 * The kdbus_msg is read from the pool as the bus wrote it (the peer cannot write there):
 * its sender and cookie name the reply slot, which must be one of calls to @nc.
 *
 * Return: 0 or -ENXIO (no received slice of the peer there).
 */
int native_conn_drop_received(NativeConn *nc, uint64_t offset) {
        BridgePoolSlice *s = bridge_pool_find(nc->pool, offset);
        const struct kdbus_msg *km;

        if (!s || !s->peer || s->queued || s->size < sizeof(*km))
                return -ENXIO;
        km = bridge_pool_ptr(nc->pool, s);
        if ((km->flags & KDBUS_MSG_EXPECT_REPLY) && km->src_id != KDBUS_SRC_ID_KERNEL)
                drop_fail_call(nc, km->src_id, (uint32_t)km->cookie);
        return bridge_pool_free_offset(nc->pool, offset) ? -ENXIO : 0;
}

/**
 * native_conn_recv() - RECV (the dispatcher checked its head: no items)
 * @nc:         the connection
 * @buf:        kdbus_cmd_recv, updated (msg, dropped_msgs, return_flags)
 * @size:       bytes at @buf
 * @io:         the message's fds go with the reply (io->ret_fds)
 *
 * Return: 0, -EINVAL (DROP with USE_PRIORITY), -EAGAIN (nothing to receive), -ENOMEM.
 */
int native_conn_recv(NativeConn *nc, void *buf, size_t size, NativeCommandIo *io) {
        struct kdbus_cmd_recv *cmd = buf;
        int **ret_fds = &io->ret_fds;
        unsigned *ret_n_fds = &io->ret_n_fds;
        NativeEntry *e;
        int r;

        /* kdbus refuses DROP by priority (its queue could not do it reliably) */
        if ((cmd->flags & KDBUS_RECV_DROP) && (cmd->flags & KDBUS_RECV_USE_PRIORITY))
                return -EINVAL;

        native_conn_drain(nc);
        cmd->return_flags = 0;
        cmd->dropped_msgs = 0;
        if (nc->dropped_msgs) {
                cmd->dropped_msgs = nc->dropped_msgs;
                cmd->return_flags |= KDBUS_RECV_RETURN_DROPPED_MSGS;
                nc->dropped_msgs = 0;
        }
        /* nothing handed out: kdbus_pool_publish_empty()'s offset, the pool's size */
        memset(&cmd->msg, 0, sizeof(cmd->msg));
        cmd->msg.offset = bridge_pool_no_slice(nc->pool);
        if (list_is_empty(&nc->recv_list))
                return -EAGAIN;
        e = recv_pick(nc, cmd);
        if (!e)
                return -EAGAIN;         /* nothing at or above the threshold */

        if (cmd->flags & KDBUS_RECV_DROP) {
                _cleanup_(bridge_msg_unrefp) BridgeMsg *m = bridge_msg_ref(e->msg);

                entry_free(nc, e, true);
                if (m)
                        recv_drop_fail_call(nc, m);
                native_conn_drain(nc);
                return 0;
        }
        /* (io's fds are NULL and 0 until then; most messages carry none) */
        r = e->msg && (e->msg->n_fds || e->msg->n_parts) ?
            msg_dup_fds(nc, e->msg, ret_fds, ret_n_fds) : 0;
        if (r) {
                if (r != -EMFILE && r != -ENFILE)
                        return r;
                /* kdbus hands out the message without the fds and says so */
                cmd->msg.return_flags |= KDBUS_RECV_RETURN_INCOMPLETE_FDS;
                cmd->return_flags |= KDBUS_RECV_RETURN_INCOMPLETE_FDS;
        }
        cmd->msg.offset = e->slice->offset;
        cmd->msg.msg_size = e->slice->size;     /* the slice's, as kdbus */
        if (cmd->flags & KDBUS_RECV_PEEK)
                bridge_pool_peek(nc->pool, e->slice);
        else {
                entry_free(nc, e, false);
                native_conn_drain(nc);
        }
        return 0;
}

/**
 * native_conn_free_slice() - FREE: give a slice of the pool back
 * @nc:         the connection
 * @buf:        kdbus_cmd_free (its items are not looked at)
 * @size:       bytes at @buf
 * @io:         the command's fds (none for this one)
 *
 * Return: 0 or -ENXIO (no slice handed out at that offset).
 */
int native_conn_free_slice(NativeConn *nc, void *buf, size_t size, NativeCommandIo *io) {
        struct kdbus_cmd_free *cmd = buf;

        if (bridge_pool_free_offset(nc->pool, cmd->offset))
                return -ENXIO;
        native_conn_drain(nc);
        return 0;
}

/**
 * native_conn_free_slices() - the FREEs of a KDBUS_WIRE_BATCH, in order
 * @nc:         the connection
 * @offsets:    slice offsets
 * @n:          their number
 * @ret_n_freed: how many were freed
 *
 * Each is exactly a FREE command (the same checks and errnos); the first that fails ends
 * the batch.
 *
 * Return: 0 or the negative errno of the FREE that failed.
 */
int native_conn_free_slices(NativeConn *nc, const uint64_t *offsets, size_t n,
                            size_t *ret_n_freed) {
        size_t i;

        for (i = 0; i < n; ++i) {
                int r = native_conn_command_free(nc, offsets[i]);

                if (r) {
                        *ret_n_freed = i;
                        return r;
                }
        }
        *ret_n_freed = n;
        return 0;
}

/**
 * native_conn_recv_empty() - would RECV surely answer EAGAIN now?
 * @nc:         the connection
 *
 * Nothing in the pool to receive and nothing in the core's queue (which RECV would move
 * into the pool first). Does not drain: it is asked from sync_done too, i.e. in the middle
 * of a delivery to @nc, where a drain would deliver the same message twice.
 *
 * Return: true when nothing waits to be received.
 */
bool native_conn_recv_empty(NativeConn *nc) {
        return list_is_empty(&nc->recv_list) && native_conn_queue_empty(nc);
}

/**
 * native_conn_queue_empty() - does nothing wait in the core's queue for pool space?
 * @nc:         the connection
 *
 * Return: true when every message for @nc is in its pool (or it has none).
 */
bool native_conn_queue_empty(NativeConn *nc) {
        return !nc->conn || !bridge_conn_queue_peek(nc->conn);
}

/**
 * native_conn_byebye() - BYEBYE: leave the bus, if nothing waits to be received
 * @nc:         the connection
 * @buf:        kdbus_cmd
 * @size:       bytes at @buf
 * @io:         the command's fds (none for this one)
 *
 * Return: 0 or -EBUSY (messages wait in the pool or the core's queue).
 */
int native_conn_byebye(NativeConn *nc, void *buf, size_t size, NativeCommandIo *io) {
        native_conn_drain(nc);
        if (!list_is_empty(&nc->recv_list) || bridge_conn_queue_peek(nc->conn))
                return -EBUSY;
        /* the SYNC_REPLYs other threads wait in end ECONNRESET, as kdbus woke them
         * (test-sync byebye), before the disconnect would call them lost replies (EPIPE);
         * their slots go */
        while (nc->n_sync) {
                bridge_reply_free(bus_find_reply_of_caller(nc->conn->bus, nc->conn,
                                                           (uint32_t)nc->sync[0].cookie));
                native_conn_sync_finish(nc, 0, -ECONNRESET, 0, 0, NULL, 0);
        }
        nc->byebye = true;
        bridge_conn_disconnect(nc->conn);
        native_conn_matches_clear(nc);
        return 0;
}
