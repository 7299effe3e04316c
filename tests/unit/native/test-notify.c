/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * kdbus's notifications to native peers, like kdbus's selftests (test-match.c,
 * test-sync.c, test-timeout.c): ID_ADD / ID_REMOVE and NAME_ADD / NAME_REMOVE /
 * NAME_CHANGE to the peers whose MATCH_ADD asked for them, REPLY_DEAD / REPLY_TIMEOUT to an
 * asynchronous caller, EPIPE / ETIMEDOUT for a SYNC_REPLY; legacy peers keep the
 * handler's reports (the fixture's event log).
 */
#include "native-fixture.h"

#define CALL(dst, ser) { .type = WIRE_MSG_METHOD_CALL, .serial = (ser), .destination = (dst), \
                         .interface = "t.I", .member = "Call" }

typedef struct NFixture {
        Fixture f;
        TestPeer a, b, c;
} NFixture;

static void nsetup(NFixture *n, gconstpointer ctx) {
        BusLimits l;

        bus_limits_init_session(&l);
        l.reply_timeout_usec = 1000;
        fixture_setup_limits(&n->f, &l);
}

static void nteardown(NFixture *n, gconstpointer ctx) {
        if (n->a.nc)
                peer_free(&n->a);
        if (n->b.nc)
                peer_free(&n->b);
        if (n->c.nc)
                peer_free(&n->c);
        fixture_teardown(&n->f, ctx);
}

/* MATCH_ADD of one notification item (and a bloom mask item if @with_mask). */
static int match_notify(TestPeer *p, uint64_t cookie, uint64_t type, uint64_t old_id,
                        uint64_t new_id, const char *name, bool with_mask) {
        uint8_t buf[512] __attribute__((aligned(8))) = { 0 };
        struct kdbus_cmd_match *cmd = (void *)buf;
        struct kdbus_item *item = cmd->items;

        cmd->cookie = cookie;
        item->type = type;
        if (type == KDBUS_ITEM_ID_ADD || type == KDBUS_ITEM_ID_REMOVE) {
                item->size = KDBUS_ITEM_HEADER_SIZE + sizeof(struct kdbus_notify_id_change);
                item->id_change.id = new_id;
        } else {
                item->size = KDBUS_ITEM_HEADER_SIZE + sizeof(struct kdbus_notify_name_change);
                item->name_change.old_id.id = old_id;
                item->name_change.new_id.id = new_id;
                if (name) {
                        strcpy(item->name_change.name, name);
                        item->size += strlen(name) + 1;
                }
        }
        item = KDBUS_ITEM_NEXT(item);
        if (with_mask) {
                item->size = KDBUS_ITEM_HEADER_SIZE + BUS_BLOOM_SIZE;
                item->type = KDBUS_ITEM_BLOOM_MASK;
                item = KDBUS_ITEM_NEXT(item);
        }
        cmd->size = (uint64_t)((uint8_t *)item - buf);
        return peer_cmd(p, KDBUS_CMD_MATCH_ADD, cmd, cmd->size);
}

/* RECV one kernel message; its only item must be of @type. Return: the item. */
static const struct kdbus_item *recv_kernel(TestPeer *p, uint64_t type, uint64_t dst_id) {
        const struct kdbus_msg *km;

        g_assert_cmpint(peer_recv(p, 0, 0, &km, NULL), ==, 0);
        g_assert_cmpuint(km->src_id, ==, KDBUS_SRC_ID_KERNEL);
        g_assert_cmpuint(km->dst_id, ==, dst_id);
        g_assert_cmpuint(km->payload_type, ==, KDBUS_PAYLOAD_KERNEL);
        g_assert_cmpuint(km->items[0].type, ==, type);
        /* the item, and the TIMESTAMP kdbus put on every kernel message */
        g_assert_cmpuint(KDBUS_ITEM_NEXT(km->items)->type, ==, KDBUS_ITEM_TIMESTAMP);
        g_assert_cmpuint(km->size, ==, sizeof(*km) + KDBUS_ALIGN8(km->items[0].size) +
                                       KDBUS_ITEM_SIZE(sizeof(struct kdbus_timestamp)));
        return km->items;
}

static void test_id(NFixture *n, gconstpointer ctx) {
        const struct kdbus_item *item;
        struct kdbus_cmd_match rm = { .size = sizeof(rm), .cookie = 1 };

        peer_hello(&n->f, &n->a, 0);
        g_assert_cmpint(match_notify(&n->a, 1, KDBUS_ITEM_ID_ADD, 0, KDBUS_MATCH_ID_ANY, NULL,
                                     false), ==, 0);
        /* our transport extensions are not shown: kdbus had no such flags */
        peer_hello(&n->f, &n->b, KDBUS_HELLO_ACCEPT_FD | KDBUS_HELLO_CAPTURE_PER_MESSAGE |
                                 KDBUS_HELLO_WIRE_BATCH);
        g_assert_cmpuint(n->a.n_readable, ==, 1);
        item = recv_kernel(&n->a, KDBUS_ITEM_ID_ADD, KDBUS_DST_ID_BROADCAST);
        g_assert_cmpuint(item->id_change.id, ==, n->b.id);
        g_assert_cmpuint(item->id_change.flags, ==, KDBUS_HELLO_ACCEPT_FD);
        g_assert_cmpint(peer_free_offset(&n->a, (uint64_t)((const uint8_t *)item -
                        n->a.pool) - sizeof(struct kdbus_msg)), ==, 0);
        {
                struct kdbus_cmd_info ci = { .size = sizeof(ci), .id = n->b.id };
                const struct kdbus_info *ki;

                g_assert_cmpint(peer_cmd(&n->a, KDBUS_CMD_CONN_INFO, &ci, sizeof(ci)), ==, 0);
                ki = (const void *)(n->a.pool + ci.offset);
                g_assert_cmpuint(ki->flags, ==, KDBUS_HELLO_ACCEPT_FD);
                g_assert_cmpint(peer_free_offset(&n->a, ci.offset), ==, 0);
        }
        /* ID_REMOVE of b only */
        g_assert_cmpint(match_notify(&n->a, 2, KDBUS_ITEM_ID_REMOVE, 0, n->b.id, NULL, false),
                        ==, 0);
        peer_hello(&n->f, &n->c, 0);
        item = recv_kernel(&n->a, KDBUS_ITEM_ID_ADD, KDBUS_DST_ID_BROADCAST);
        g_assert_cmpuint(item->id_change.id, ==, n->c.id);
        g_assert_cmpuint(item->id_change.flags, ==, 0);
        peer_free(&n->c);
        g_assert_cmpint(peer_recv(&n->a, 0, 0, NULL, NULL), ==, -EAGAIN);
        peer_free(&n->b);
        item = recv_kernel(&n->a, KDBUS_ITEM_ID_REMOVE, KDBUS_DST_ID_BROADCAST);
        g_assert_cmpuint(item->id_change.id, ==, 2);
        /* after MATCH_REMOVE: nothing */
        g_assert_cmpint(peer_cmd(&n->a, KDBUS_CMD_MATCH_REMOVE, &rm, sizeof(rm)), ==, 0);
        peer_hello(&n->f, &n->b, 0);
        g_assert_cmpint(peer_recv(&n->a, 0, 0, NULL, NULL), ==, -EAGAIN);
        /* the handler (legacy peers' NameOwnerChanged) still saw everything */
        g_assert_nonnull(strstr(n->f.ev.log->str, "added :1.2;"));
        g_assert_nonnull(strstr(n->f.ev.log->str, "removed :1.2;"));
}

static void test_names(NFixture *n, gconstpointer ctx) {
        const struct kdbus_item *item;

        peer_hello(&n->f, &n->a, 0);
        peer_hello(&n->f, &n->b, 0);
        peer_hello(&n->f, &n->c, 0);
        g_assert_cmpint(match_notify(&n->a, 1, KDBUS_ITEM_NAME_ADD, KDBUS_MATCH_ID_ANY,
                                     KDBUS_MATCH_ID_ANY, "t.Name", false), ==, 0);
        g_assert_cmpint(match_notify(&n->a, 2, KDBUS_ITEM_NAME_CHANGE, n->b.id,
                                     KDBUS_MATCH_ID_ANY, NULL, false), ==, 0);
        g_assert_cmpint(match_notify(&n->a, 3, KDBUS_ITEM_NAME_REMOVE, KDBUS_MATCH_ID_ANY,
                                     KDBUS_MATCH_ID_ANY, NULL, false), ==, 0);
        /* a name the NAME_ADD entry does not ask for */
        g_assert_cmpint(peer_name(&n->b, KDBUS_CMD_NAME_ACQUIRE, "t.Other", 0, NULL), ==, 0);
        g_assert_cmpint(peer_recv(&n->a, 0, 0, NULL, NULL), ==, -EAGAIN);
        g_assert_cmpint(peer_name(&n->b, KDBUS_CMD_NAME_ACQUIRE, "t.Name",
                                  KDBUS_NAME_ALLOW_REPLACEMENT, NULL), ==, 0);
        item = recv_kernel(&n->a, KDBUS_ITEM_NAME_ADD, KDBUS_DST_ID_BROADCAST);
        g_assert_cmpuint(item->name_change.old_id.id, ==, 0);
        g_assert_cmpuint(item->name_change.new_id.id, ==, n->b.id);
        g_assert_cmpstr(item->name_change.name, ==, "t.Name");
        /* c takes it over from b */
        g_assert_cmpint(peer_name(&n->c, KDBUS_CMD_NAME_ACQUIRE, "t.Name",
                                  KDBUS_NAME_REPLACE_EXISTING, NULL), ==, 0);
        item = recv_kernel(&n->a, KDBUS_ITEM_NAME_CHANGE, KDBUS_DST_ID_BROADCAST);
        g_assert_cmpuint(item->name_change.old_id.id, ==, n->b.id);
        g_assert_cmpuint(item->name_change.new_id.id, ==, n->c.id);
        g_assert_cmpstr(item->name_change.name, ==, "t.Name");
        g_assert_cmpint(peer_name(&n->c, KDBUS_CMD_NAME_RELEASE, "t.Name", 0, NULL), ==, 0);
        item = recv_kernel(&n->a, KDBUS_ITEM_NAME_REMOVE, KDBUS_DST_ID_BROADCAST);
        g_assert_cmpuint(item->name_change.old_id.id, ==, n->c.id);
        g_assert_cmpuint(item->name_change.new_id.id, ==, 0);
        /* b going away removes t.Other; its unique name is no NAME_* notification */
        peer_free(&n->b);
        item = recv_kernel(&n->a, KDBUS_ITEM_NAME_REMOVE, KDBUS_DST_ID_BROADCAST);
        g_assert_cmpstr(item->name_change.name, ==, "t.Other");
        g_assert_cmpint(peer_recv(&n->a, 0, 0, NULL, NULL), ==, -EAGAIN);
        g_assert_nonnull(strstr(n->f.ev.log->str, "t.Name"));
}

/* The next NAME_* notification of @p: @type, the ids and name flags of both sides. */
static void expect_name(TestPeer *p, uint64_t type, const char *name, uint64_t old_id,
                        uint64_t old_flags, uint64_t new_id, uint64_t new_flags) {
        const struct kdbus_item *item = recv_kernel(p, type, KDBUS_DST_ID_BROADCAST);

        g_assert_cmpstr(item->name_change.name, ==, name);
        g_assert_cmpuint(item->name_change.old_id.id, ==, old_id);
        g_assert_cmphex(item->name_change.old_id.flags, ==, old_flags);
        g_assert_cmpuint(item->name_change.new_id.id, ==, new_id);
        g_assert_cmphex(item->name_change.new_id.flags, ==, new_flags);
        g_assert_cmpint(peer_free_offset(p, (uint64_t)((const uint8_t *)item - p->pool) -
                                         sizeof(struct kdbus_msg)), ==, 0);
}

/*
 * kdbus's names.c put the owners' name flags in NAME_* items: the saved ALLOW_REPLACEMENT /
 * QUEUE of each side's last request and PRIMARY (never REPLACE_EXISTING, never HELLO
 * flags), for every transition: acquire, replacement, queue takeover on release, release,
 * exit; a legacy owner's RequestName flags translated (no DO_NOT_QUEUE: QUEUE).
 */
static void test_name_flags(NFixture *n, gconstpointer ctx) {
        const uint64_t P = KDBUS_NAME_PRIMARY, AR = KDBUS_NAME_ALLOW_REPLACEMENT,
                       Q = KDBUS_NAME_QUEUE;
        BridgeConn *l;
        uint64_t rf, b_id;

        peer_hello(&n->f, &n->a, 0);
        peer_hello(&n->f, &n->b, KDBUS_HELLO_ACCEPT_FD);
        peer_hello(&n->f, &n->c, 0);
        l = fixture_conn(&n->f, 0);
        g_assert_cmpint(match_notify(&n->a, 1, KDBUS_ITEM_NAME_ADD, KDBUS_MATCH_ID_ANY,
                                     KDBUS_MATCH_ID_ANY, NULL, false), ==, 0);
        g_assert_cmpint(match_notify(&n->a, 2, KDBUS_ITEM_NAME_CHANGE, KDBUS_MATCH_ID_ANY,
                                     KDBUS_MATCH_ID_ANY, NULL, false), ==, 0);
        g_assert_cmpint(match_notify(&n->a, 3, KDBUS_ITEM_NAME_REMOVE, KDBUS_MATCH_ID_ANY,
                                     KDBUS_MATCH_ID_ANY, NULL, false), ==, 0);

        /* acquire: the new side's saved flags | PRIMARY, REPLACE_EXISTING not kept */
        g_assert_cmpint(peer_name(&n->b, KDBUS_CMD_NAME_ACQUIRE, "t.F",
                                  KDBUS_NAME_REPLACE_EXISTING | KDBUS_NAME_ALLOW_REPLACEMENT |
                                  KDBUS_NAME_QUEUE, &rf), ==, 0);
        expect_name(&n->a, KDBUS_ITEM_NAME_ADD, "t.F", 0, 0, n->b.id, P | AR | Q);
        /* queued: no notification */
        g_assert_cmpint(peer_name(&n->c, KDBUS_CMD_NAME_ACQUIRE, "t.F", KDBUS_NAME_QUEUE, &rf),
                        ==, 0);
        g_assert_cmphex(rf, ==, KDBUS_NAME_QUEUE | KDBUS_NAME_IN_QUEUE | KDBUS_NAME_ACQUIRED);
        g_assert_cmpint(peer_recv(&n->a, 0, 0, NULL, NULL), ==, -EAGAIN);
        /* a legacy owner replaces b (RequestName REPLACE_EXISTING | DO_NOT_QUEUE): b's
         * flags as they were, the legacy side PRIMARY only; b requeued */
        g_assert_cmpint(bridge_name_acquire(l, "t.F", BRIDGE_NAME_REPLACE_EXISTING |
                                                      BRIDGE_NAME_DO_NOT_QUEUE), ==, 0);
        expect_name(&n->a, KDBUS_ITEM_NAME_CHANGE, "t.F", n->b.id, P | AR | Q, l->id, P);
        /* release: the queue's head takes over with its own saved flags */
        g_assert_cmpint(bridge_name_release(l, "t.F"), ==, 0);
        expect_name(&n->a, KDBUS_ITEM_NAME_CHANGE, "t.F", l->id, P, n->b.id, P | AR | Q);
        g_assert_cmpint(peer_name(&n->b, KDBUS_CMD_NAME_RELEASE, "t.F", 0, NULL), ==, 0);
        expect_name(&n->a, KDBUS_ITEM_NAME_CHANGE, "t.F", n->b.id, P | AR | Q, n->c.id, P | Q);
        /* exit: NAME_REMOVE with the leaving owner's flags */
        peer_free(&n->c);
        expect_name(&n->a, KDBUS_ITEM_NAME_REMOVE, "t.F", n->c.id, P | Q, 0, 0);

        /* legacy RequestName 0 (queueing allowed) and ALLOW_REPLACEMENT; native without
         * flags: PRIMARY only */
        g_assert_cmpint(bridge_name_acquire(l, "t.G", 0), ==, 0);
        expect_name(&n->a, KDBUS_ITEM_NAME_ADD, "t.G", 0, 0, l->id, P | Q);
        g_assert_cmpint(bridge_name_acquire(l, "t.H", BRIDGE_NAME_ALLOW_REPLACEMENT), ==, 0);
        expect_name(&n->a, KDBUS_ITEM_NAME_ADD, "t.H", 0, 0, l->id, P | AR | Q);
        g_assert_cmpint(peer_name(&n->b, KDBUS_CMD_NAME_ACQUIRE, "t.I", 0, NULL), ==, 0);
        expect_name(&n->a, KDBUS_ITEM_NAME_ADD, "t.I", 0, 0, n->b.id, P);
        /* the primary owner asking again replaces its saved flags, no error and no
         * notification (kdbus_name_update()) */
        g_assert_cmpint(peer_name(&n->b, KDBUS_CMD_NAME_ACQUIRE, "t.I",
                                  KDBUS_NAME_ALLOW_REPLACEMENT, NULL), ==, 0);
        g_assert_cmpint(peer_recv(&n->a, 0, 0, NULL, NULL), ==, -EAGAIN);
        b_id = n->b.id;
        peer_free(&n->b);
        expect_name(&n->a, KDBUS_ITEM_NAME_REMOVE, "t.I", b_id, P | AR, 0, 0);
        bridge_conn_disconnect(l);
        expect_name(&n->a, KDBUS_ITEM_NAME_REMOVE, "t.H", l->id, P | AR | Q, 0, 0);
        expect_name(&n->a, KDBUS_ITEM_NAME_REMOVE, "t.G", l->id, P | Q, 0, 0);
        g_assert_cmpint(peer_recv(&n->a, 0, 0, NULL, NULL), ==, -EAGAIN);
}

static void test_match_rules(NFixture *n, gconstpointer ctx) {
        uint8_t buf[256] __attribute__((aligned(8))) = { 0 };
        struct kdbus_cmd_match *cmd = (void *)buf;
        const struct kdbus_item *item;

        peer_hello(&n->f, &n->a, 0);
        /* an entry's rules are ANDed: a bloom mask or a second type matches no notification */
        g_assert_cmpint(match_notify(&n->a, 1, KDBUS_ITEM_ID_ADD, 0, KDBUS_MATCH_ID_ANY, NULL,
                                     true), ==, 0);
        cmd->size = sizeof(*cmd) + 2 * KDBUS_ITEM_SIZE(sizeof(struct kdbus_notify_id_change));
        cmd->cookie = 2;
        cmd->items[0].size = KDBUS_ITEM_HEADER_SIZE + sizeof(struct kdbus_notify_id_change);
        cmd->items[0].type = KDBUS_ITEM_ID_ADD;
        cmd->items[0].id_change.id = KDBUS_MATCH_ID_ANY;
        item = KDBUS_ITEM_NEXT(&cmd->items[0]);
        memcpy((void *)item, &cmd->items[0], cmd->items[0].size);
        ((struct kdbus_item *)item)->type = KDBUS_ITEM_ID_REMOVE;
        g_assert_cmpint(peer_cmd(&n->a, KDBUS_CMD_MATCH_ADD, cmd, cmd->size), ==, 0);
        peer_hello(&n->f, &n->b, 0);
        peer_free(&n->b);
        g_assert_cmpint(peer_recv(&n->a, 0, 0, NULL, NULL), ==, -EAGAIN);
        /* the bloom entry is no notification-only entry: broadcasts still reach it */
        g_assert_cmpint(peer_recv(&n->a, 0, 0, NULL, NULL), ==, -EAGAIN);

        /* bad input */
        memset(buf, 0, sizeof(buf));
        cmd->size = sizeof(*cmd) + KDBUS_ITEM_SIZE(4);
        cmd->items[0].size = KDBUS_ITEM_HEADER_SIZE + 4;
        cmd->items[0].type = KDBUS_ITEM_ID_ADD;
        g_assert_cmpint(peer_cmd(&n->a, KDBUS_CMD_MATCH_ADD, cmd, cmd->size), ==, -EINVAL);
        cmd->items[0].type = KDBUS_ITEM_NAME_ADD;
        g_assert_cmpint(peer_cmd(&n->a, KDBUS_CMD_MATCH_ADD, cmd, cmd->size), ==, -EINVAL);
        /* a name without its NUL, and an invalid name */
        cmd->items[0].size = KDBUS_ITEM_HEADER_SIZE + sizeof(struct kdbus_notify_name_change) + 3;
        memcpy(cmd->items[0].name_change.name, "a.b", 3);
        cmd->size = sizeof(*cmd) + KDBUS_ALIGN8(cmd->items[0].size);
        g_assert_cmpint(peer_cmd(&n->a, KDBUS_CMD_MATCH_ADD, cmd, cmd->size), ==, -EINVAL);
        memcpy(cmd->items[0].name_change.name, "ab", 3);
        g_assert_cmpint(peer_cmd(&n->a, KDBUS_CMD_MATCH_ADD, cmd, cmd->size), ==, -EINVAL);
        /* REPLACE swaps a notification entry */
        g_assert_cmpint(match_notify(&n->a, 1, KDBUS_ITEM_ID_ADD, 0, KDBUS_MATCH_ID_ANY, NULL,
                                     false), ==, 0);
        {
                struct kdbus_cmd_match rm = { .size = sizeof(rm), .cookie = 1 };

                g_assert_cmpint(peer_cmd(&n->a, KDBUS_CMD_MATCH_REMOVE, &rm, sizeof(rm)), ==, 0);
                g_assert_cmpint(peer_cmd(&n->a, KDBUS_CMD_MATCH_REMOVE, &rm, sizeof(rm)), ==,
                                -EBADSLT);
        }
        peer_hello(&n->f, &n->b, 0);
        g_assert_cmpint(peer_recv(&n->a, 0, 0, NULL, NULL), ==, -EAGAIN);
}

/* a calls b with @send_flags; the call waits in b's queue. */
static void call_b_queued(NFixture *n, uint64_t send_flags, int expect) {
        TestMsg t = CALL(":1.2", 11);

        peer_hello(&n->f, &n->a, 0);
        peer_hello(&n->f, &n->b, 0);
        g_assert_cmpint(peer_send(&n->a, &t, &(TestSend){ .dst_id = 2, .msg_flags = ~0ull,
                        .memfd_idx = -1, .send_flags = send_flags }), ==, expect);
}

/* a calls b with @send_flags; returns after the call reached b. */
static void call_b(NFixture *n, uint64_t send_flags, int expect) {
        const struct kdbus_msg *km;

        call_b_queued(n, send_flags, expect);
        g_assert_cmpint(peer_recv(&n->b, 0, 0, &km, NULL), ==, 0);
        g_assert_cmpint(peer_free_offset(&n->b, n->b.nc ? (uint64_t)((const uint8_t *)km -
                                         n->b.pool) : 0), ==, 0);
}

static void test_reply_dead(NFixture *n, gconstpointer ctx) {
        const struct kdbus_item *item;
        const struct kdbus_msg *km;

        call_b(n, 0, 0);
        peer_free(&n->b);
        item = recv_kernel(&n->a, KDBUS_ITEM_REPLY_DEAD, n->a.id);
        km = (const void *)((const uint8_t *)item - sizeof(*km));
        g_assert_cmpuint(km->cookie_reply, ==, 11);
        g_assert_cmpuint(item->size, ==, KDBUS_ITEM_HEADER_SIZE);
        g_assert_null(strstr(n->f.ev.log->str, "lost"));        /* no dbus1 NoReply */
        g_assert_cmpint(peer_recv(&n->a, 0, 0, NULL, NULL), ==, -EAGAIN);
}

static void test_reply_timeout(NFixture *n, gconstpointer ctx) {
        const struct kdbus_item *item;
        const struct kdbus_msg *km;

        call_b(n, 0, 0);
        n->f.bus->now_usec += 999;
        g_assert_cmpint(bus_dispatch_timeouts(n->f.bus), ==, 0);
        g_assert_cmpint(peer_recv(&n->a, 0, 0, NULL, NULL), ==, -EAGAIN);
        n->f.bus->now_usec += 1;
        g_assert_cmpint(bus_dispatch_timeouts(n->f.bus), ==, 0);
        item = recv_kernel(&n->a, KDBUS_ITEM_REPLY_TIMEOUT, n->a.id);
        km = (const void *)((const uint8_t *)item - sizeof(*km));
        g_assert_cmpuint(km->cookie_reply, ==, 11);
        g_assert_null(strstr(n->f.ev.log->str, "lost"));
        /* a late answer has no slot any more */
        peer_free(&n->b);
        g_assert_cmpint(peer_recv(&n->a, 0, 0, NULL, NULL), ==, -EAGAIN);
}

static void test_sync_callee_gone(NFixture *n, gconstpointer ctx) {
        call_b(n, KDBUS_SEND_SYNC_REPLY, 1);
        g_assert_cmpint(n->a.sync_error, ==, 1);
        peer_free(&n->b);
        /* the callee went: EPIPE (kdbus_conn_disconnect()), not the caller's ECONNRESET */
        g_assert_cmpint(n->a.sync_error, ==, -EPIPE);
        g_assert_cmpint(peer_recv(&n->a, 0, 0, NULL, NULL), ==, -EAGAIN);
        g_assert_cmpuint(n->a.nc->n_sync, ==, 0);
}

static void test_sync_timeout(NFixture *n, gconstpointer ctx) {
        call_b(n, KDBUS_SEND_SYNC_REPLY, 1);
        n->f.bus->now_usec += 1000;
        g_assert_cmpint(bus_dispatch_timeouts(n->f.bus), ==, 0);
        g_assert_cmpint(n->a.sync_error, ==, -ETIMEDOUT);
        g_assert_cmpint(peer_recv(&n->a, 0, 0, NULL, NULL), ==, -EAGAIN);
}

/* RECV with DROP of a call that wants a reply: kdbus_cmd_recv() unlinks its reply slot and
 * tells the caller at once (REPLY_DEAD), not at the timeout; a late answer has no slot */
static void test_drop_reply_dead(NFixture *n, gconstpointer ctx) {
        TestMsg ret = { .type = WIRE_MSG_METHOD_RETURN, .serial = 5, .reply_serial = 11,
                        .destination = ":1.1" };
        const struct kdbus_item *item;
        const struct kdbus_msg *km;

        call_b_queued(n, 0, 0);
        g_assert_cmpint(peer_recv(&n->b, KDBUS_RECV_DROP, 0, NULL, NULL), ==, 0);
        item = recv_kernel(&n->a, KDBUS_ITEM_REPLY_DEAD, n->a.id);
        km = (const void *)((const uint8_t *)item - sizeof(*km));
        g_assert_cmpuint(km->cookie_reply, ==, 11);
        g_assert_cmpint(peer_send(&n->b, &ret, &(TestSend){ .dst_id = 1, .msg_flags = ~0ull,
                        .memfd_idx = -1 }), ==, -EBADSLT);
        n->f.bus->now_usec += 1000;
        g_assert_cmpint(bus_dispatch_timeouts(n->f.bus), ==, 0);
        g_assert_cmpint(peer_recv(&n->a, 0, 0, NULL, NULL), ==, -EAGAIN);
}

/* the same for a caller blocked in SYNC_REPLY: EPIPE (kdbus_sync_reply_wakeup()) */
static void test_drop_sync_epipe(NFixture *n, gconstpointer ctx) {
        call_b_queued(n, KDBUS_SEND_SYNC_REPLY, 1);
        g_assert_cmpint(peer_recv(&n->b, KDBUS_RECV_DROP, 0, NULL, NULL), ==, 0);
        g_assert_cmpint(n->a.sync_error, ==, -EPIPE);
        g_assert_cmpuint(n->a.nc->n_sync, ==, 0);
        g_assert_cmpint(peer_recv(&n->a, 0, 0, NULL, NULL), ==, -EAGAIN);
}

/* b answers a's call with an fd a refuses (ECOMM for b). kdbus_conn_reply() used the reply
 * slot up before delivering, so a second answer has no slot (EBADSLT). */
static void answer_refused(NFixture *n) {
        TestMsg ret = { .type = WIRE_MSG_METHOD_RETURN, .serial = 5, .reply_serial = 11,
                        .destination = ":1.1" };
        const int idx[1] = { 0 };
        int p[2];

        g_assert_cmpint(pipe2(p, O_CLOEXEC), ==, 0);
        g_assert_cmpint(peer_send_fds(&n->b, &ret, &(TestSend){ .dst_id = 1, .msg_flags = ~0ull,
                        .memfd_idx = -1, .fd_idx = idx, .n_fd_idx = 1 }, &p[0], 1), ==, -ECOMM);
        ret.serial = 6;
        g_assert_cmpint(peer_send(&n->b, &ret, &(TestSend){ .dst_id = 1, .msg_flags = ~0ull,
                        .memfd_idx = -1 }), ==, -EBADSLT);
        (void) close(p[0]);
        (void) close(p[1]);
}

/* a caller blocked in SYNC_REPLY is woken with EREMOTEIO (kdbus_conn_entry_sync_attach()) */
static void test_reply_undelivered_sync(NFixture *n, gconstpointer ctx) {
        call_b(n, KDBUS_SEND_SYNC_REPLY, 1);
        answer_refused(n);
        g_assert_cmpint(n->a.sync_error, ==, -EREMOTEIO);
        g_assert_cmpuint(n->a.nc->n_sync, ==, 0);
        g_assert_cmpint(peer_recv(&n->a, 0, 0, NULL, NULL), ==, -EAGAIN);
}

/* an asynchronous caller hears nothing, as from kdbus: no REPLY_DEAD, no later timeout */
static void test_reply_undelivered_async(NFixture *n, gconstpointer ctx) {
        call_b(n, 0, 0);
        answer_refused(n);
        n->f.bus->now_usec += 1000;
        g_assert_cmpint(bus_dispatch_timeouts(n->f.bus), ==, 0);
        g_assert_cmpint(peer_recv(&n->a, 0, 0, NULL, NULL), ==, -EAGAIN);
}

/*
 * kdbus charged its notifications to a quota account of their own (KDBUS_USER_KERNEL_ID in
 * kdbus_conn_quota_inc()) with a user's limits: a reader holding 256 of them loses the
 * next ones (dropped_msgs), while a user's message still gets in on its own account
 * (kdbus-test message-quota, kdbus_test_notify_kernel_quota()).
 */
static void test_kernel_quota(NFixture *n, gconstpointer ctx) {
        TestMsg t = CALL(":1.1", 7);
        struct kdbus_cmd_recv rc;
        const struct kdbus_msg *km;
        unsigned i;

        t.flags = WIRE_FLAG_NO_REPLY_EXPECTED;
        g_assert_cmpint(peer_hello_full(&n->f, &n->a, 0, 1u << 20, 2000), ==, 0);
        peer_hello(&n->f, &n->b, 0);
        g_assert_cmpint(match_notify(&n->a, 1, KDBUS_ITEM_ID_ADD, 0, KDBUS_MATCH_ID_ANY, NULL,
                                     false), ==, 0);
        g_assert_cmpint(match_notify(&n->a, 2, KDBUS_ITEM_ID_REMOVE, 0, KDBUS_MATCH_ID_ANY,
                                     NULL, false), ==, 0);
        for (i = 0; i < NATIVE_MAX_MSGS_PER_USER / 2; ++i) {
                peer_hello(&n->f, &n->c, 0);
                peer_free(&n->c);
        }
        g_assert_cmpuint(n->a.nc->n_entries, ==, NATIVE_MAX_MSGS_PER_USER);
        g_assert_cmpint(peer_send(&n->b, &t, &(TestSend){ .dst_id = n->a.id, .msg_flags = ~0ull,
                                                          .memfd_idx = -1 }), ==, 0);
        /* three more notifications: lost */
        peer_free(&n->b);
        peer_hello(&n->f, &n->c, 0);
        peer_free(&n->c);
        g_assert_cmpuint(n->a.nc->n_entries, ==, NATIVE_MAX_MSGS_PER_USER + 1);
        g_assert_cmpint(peer_recv(&n->a, 0, 0, &km, &rc), ==, 0);
        g_assert_true(rc.return_flags & KDBUS_RECV_RETURN_DROPPED_MSGS);
        g_assert_cmpuint(rc.dropped_msgs, ==, 3);
        g_assert_cmpint(peer_free_offset(&n->a, rc.msg.offset), ==, 0);
        /* room again: the next one gets in */
        peer_hello(&n->f, &n->c, 0);
        for (i = 1; i < NATIVE_MAX_MSGS_PER_USER + 2; ++i) {
                g_assert_cmpint(peer_recv(&n->a, 0, 0, &km, &rc), ==, 0);
                g_assert_false(rc.return_flags & KDBUS_RECV_RETURN_DROPPED_MSGS);
                if (i == NATIVE_MAX_MSGS_PER_USER)
                        g_assert_cmpuint(km->src_id, ==, 2);    /* b's message, in order */
                else
                        g_assert_cmpuint(km->src_id, ==, KDBUS_SRC_ID_KERNEL);
                g_assert_cmpint(peer_free_offset(&n->a, rc.msg.offset), ==, 0);
        }
        g_assert_cmpint(peer_recv(&n->a, 0, 0, NULL, NULL), ==, -EAGAIN);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
#define ADD(path, fn) g_test_add("/native/" path, NFixture, NULL, nsetup, fn, nteardown)
        ADD("notify/id-add-remove", test_id);
        ADD("notify/name-add-change-remove", test_names);
        ADD("notify/name-flags", test_name_flags);
        ADD("notify/match-rules", test_match_rules);
        ADD("notify/reply-dead", test_reply_dead);
        ADD("notify/reply-timeout", test_reply_timeout);
        ADD("notify/sync-reply-epipe", test_sync_callee_gone);
        ADD("notify/sync-reply-etimedout", test_sync_timeout);
        ADD("notify/drop-reply-dead", test_drop_reply_dead);
        ADD("notify/drop-sync-epipe", test_drop_sync_epipe);
        ADD("notify/reply-undelivered-sync", test_reply_undelivered_sync);
        ADD("notify/reply-undelivered-async", test_reply_undelivered_async);
        ADD("notify/kernel-quota", test_kernel_quota);
        return g_test_run();
}
