/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * kdbus's special connections on the core, like kdbus's selftests test-monitor.c and
 * test-activator.c: a monitor sees unicasts and broadcasts of native and legacy peers and
 * cannot send, own names or match, and nobody sees or reaches it; an activator takes the
 * messages for its name while it has no owner, hands them (and their reply slots) to the
 * first owner and gets them back when the owner goes; LIST_ACTIVATORS; privilege and HELLO
 * checks.
 */
#include <fcntl.h>
#include "native-fixture.h"
#include "native/conn.h"

#define CALL(dst, ser) { .type = WIRE_MSG_METHOD_CALL, .serial = (ser), .destination = (dst), \
                         .interface = "t.I", .member = "Call" }

typedef struct NFixture {
        Fixture f;
        TestPeer a, m, act;
} NFixture;

static void nsetup(NFixture *n, gconstpointer ctx) {
        fixture_setup(&n->f, ctx);
}

static void nteardown(NFixture *n, gconstpointer ctx) {
        if (n->a.nc)
                peer_free(&n->a);
        if (n->m.nc)
                peer_free(&n->m);
        if (n->act.nc)
                peer_free(&n->act);
        fixture_teardown(&n->f, ctx);
}

/* HELLO with @flags and, if @name, a NAME item, as @uid, with CAP_IPC_OWNER if @cap. */
static int hello_special_cap(Fixture *f, TestPeer *p, uint64_t flags, const char *name,
                             uid_t uid, bool cap) {
        uint8_t buf[512] __attribute__((aligned(8))) = { 0 };
        struct kdbus_cmd_hello *hello = (void *)buf;
        BridgeCreds creds = { .uid = uid, .gid = 1000, .pidfd = -1, .cap_ipc_owner = cap };
        int r;

        hello->flags = flags;
        hello->pool_size = TEST_POOL_SIZE;
        hello->attach_flags_send = _KDBUS_ATTACH_ALL;
        hello->size = sizeof(*hello);
        if (name) {
                hello->items[0].size = KDBUS_ITEM_HEADER_SIZE + strlen(name) + 1;
                hello->items[0].type = KDBUS_ITEM_NAME;
                strcpy(hello->items[0].str, name);
                hello->size += KDBUS_ALIGN8(hello->items[0].size);
        }
        memset(p, 0, sizeof(*p));
        p->sync_error = 1;
        r = test_native_hello(f->bus, &creds, hello, hello->size, &test_peer_ops, p, &p->nc);
        if (r)
                return r;
        p->id = hello->id;
        p->pool = mmap(NULL, TEST_POOL_SIZE, PROT_READ, MAP_SHARED, native_conn_pool_fd(p->nc), 0);
        g_assert_true(p->pool != MAP_FAILED);
        return 0;
}

static int hello_special(Fixture *f, TestPeer *p, uint64_t flags, const char *name, uid_t uid) {
        return hello_special_cap(f, p, flags, name, uid, false);
}

/* RECV the next message of @p: its header in *ret_hdr; the kdbus_msg returned. */
static const struct kdbus_msg *recv_msg(TestPeer *p, WireHeader *ret_hdr) {
        const struct kdbus_msg *km;
        size_t size;

        g_assert_cmpint(peer_recv(p, 0, 0, &km, NULL), ==, 0);
        (void) msg_payload(km, &size, ret_hdr);
        return km;
}

/* UPDATE with one item of @type: a u64 @value, or for POLICY_ACCESS a kdbus_policy_access
 * (user @value, SEE). Return: UPDATE's result. */
static int update_item(TestPeer *p, uint64_t type, uint64_t value) {
        uint8_t buf[128] __attribute__((aligned(8))) = { 0 };
        struct kdbus_cmd *cmd = (void *)buf;
        struct kdbus_item *item = cmd->items;

        item->type = type;
        if (type == KDBUS_ITEM_POLICY_ACCESS) {
                item->size = KDBUS_ITEM_HEADER_SIZE + sizeof(struct kdbus_policy_access);
                item->policy_access.type = KDBUS_POLICY_ACCESS_USER;
                item->policy_access.access = KDBUS_POLICY_SEE;
                item->policy_access.id = value;
        } else {
                item->size = KDBUS_ITEM_HEADER_SIZE + sizeof(uint64_t);
                item->data64[0] = value;
        }
        cmd->size = sizeof(*cmd) + KDBUS_ALIGN8(item->size);
        return peer_cmd(p, KDBUS_CMD_UPDATE, cmd, cmd->size);
}

/* CONN_INFO by @id and/or @name (NULL: none); *ret_id the record's id. Return: its result. */
static int info_of(TestPeer *p, uint64_t id, const char *name, uint64_t *ret_id) {
        uint8_t buf[256] __attribute__((aligned(8))) = { 0 };
        struct kdbus_cmd_info *cmd = (void *)buf;
        int r;

        cmd->size = sizeof(*cmd);
        cmd->id = id;
        if (name) {
                cmd->items[0].size = KDBUS_ITEM_HEADER_SIZE + strlen(name) + 1;
                cmd->items[0].type = KDBUS_ITEM_NAME;
                strcpy(cmd->items[0].str, name);
                cmd->size += KDBUS_ALIGN8(cmd->items[0].size);
        }
        r = peer_cmd(p, KDBUS_CMD_CONN_INFO, cmd, cmd->size);
        if (r)
                return r;
        *ret_id = ((const struct kdbus_info *)(p->pool + cmd->offset))->id;
        g_assert_cmpint(peer_free_offset(p, cmd->offset), ==, 0);
        return 0;
}

/* LIST UNIQUE (| @extra): how many records, and is @id among them? */
static unsigned list_count(TestPeer *p, uint64_t extra, uint64_t id, bool *ret_found,
                           uint64_t *ret_name_flags) {
        struct kdbus_cmd_list list = { .size = sizeof(list), .flags = KDBUS_LIST_UNIQUE | extra };
        const uint8_t *at, *end;
        unsigned n = 0;

        *ret_found = false;
        g_assert_cmpint(peer_cmd(p, KDBUS_CMD_LIST, &list, sizeof(list)), ==, 0);
        at = p->pool + list.offset;
        end = at + list.list_size;
        while (at < end) {
                const struct kdbus_info *info = (const void *)at;

                if (info->id == id) {
                        *ret_found = true;
                        if (ret_name_flags && info->size > sizeof(*info))
                                *ret_name_flags = info->items[0].name.flags;
                }
                ++n;
                at += KDBUS_ALIGN8(info->size);
        }
        g_assert_cmpint(peer_free_offset(p, list.offset), ==, 0);
        return n;
}

static void test_monitor_hello(NFixture *n, gconstpointer ctx) {
        Fixture *f = &n->f;

        f->bus->owner_uid = 1500;
        /* kdbus: the bus owner's uid (or CAP_IPC_OWNER) only */
        g_assert_cmpint(hello_special(f, &n->m, KDBUS_HELLO_MONITOR, NULL, 2000), ==, -EPERM);
        /* one kind at a time; a NAME only for activators */
        g_assert_cmpint(hello_special(f, &n->m, KDBUS_HELLO_MONITOR | KDBUS_HELLO_ACTIVATOR,
                                      "t.Name", 1500), ==, -EINVAL);
        g_assert_cmpint(hello_special(f, &n->m, KDBUS_HELLO_MONITOR, "t.Name", 1500), ==, -EINVAL);
        g_assert_cmpint(hello_special(f, &n->m, KDBUS_HELLO_ACTIVATOR, NULL, 1500), ==, -EINVAL);
        g_assert_cmpint(hello_special(f, &n->m, 0, "t.Name", 1500), ==, -EINVAL);
        /* kdbus_ep_is_owner(): uid 0 is nothing special, CAP_IPC_OWNER is */
        g_assert_cmpint(hello_special(f, &n->m, KDBUS_HELLO_MONITOR, NULL, 0), ==, -EPERM);
        g_assert_cmpint(hello_special_cap(f, &n->m, KDBUS_HELLO_MONITOR, NULL, 2000, true), ==,
                        0);
        peer_free(&n->m);
        g_assert_cmpint(hello_special(f, &n->m, KDBUS_HELLO_MONITOR, NULL, 1500), ==, 0);
        /* announced to nobody: no conn_added (the legacy handler's view) */
        assert_log(f, "");
}

static void test_monitor_sees_all(NFixture *n, gconstpointer ctx) {
        Fixture *f = &n->f;
        BridgeConn *c0 = fixture_conn(f, 0), *c1 = fixture_conn(f, 1);
        TestMsg legacy_call = CALL(":1.2", 5), sig = { .type = WIRE_MSG_SIGNAL, .serial = 6,
                                                       .member = "Changed" };
        TestMsg native_call = CALL(":1.1", 7), native_sig = { .type = WIRE_MSG_SIGNAL,
                                                              .serial = 8, .member = "Sig" };
        TestSend to_c0 = { .dst_id = 1, .msg_flags = ~0ull, .memfd_idx = -1 };
        TestSend bcast = { .dst_id = KDBUS_DST_ID_BROADCAST, .msg_flags = ~0ull, .memfd_idx = -1 };
        const struct kdbus_msg *km;
        WireHeader h;

        peer_hello(f, &n->a, KDBUS_HELLO_ACCEPT_FD);            /* id 3 */
        g_assert_cmpint(hello_special(f, &n->m, KDBUS_HELLO_MONITOR, NULL, 0), ==, 0);
        g_assert_cmpuint(n->m.id, ==, 4);
        fixture_log_reset(f);

        g_assert_cmpint(test_send(c0, &legacy_call), ==, 0);   /* legacy unicast */
        g_assert_cmpint(test_send(c1, &sig), ==, 0);           /* legacy broadcast */
        g_assert_cmpint(peer_send(&n->a, &native_call, &to_c0), ==, 0);
        g_assert_cmpint(peer_send(&n->a, &native_sig, &bcast), ==, 0);
        g_assert_cmpuint(n->m.n_readable, ==, 1);

        km = recv_msg(&n->m, &h);
        g_assert_cmpuint(km->src_id, ==, 1);
        g_assert_cmpuint(km->dst_id, ==, 2);                    /* the real destination */
        g_assert_cmpuint(h.serial, ==, 5);
        g_assert_cmpint(peer_free_offset(&n->m, (const uint8_t *)km - n->m.pool), ==, 0);
        km = recv_msg(&n->m, &h);
        g_assert_cmpuint(km->src_id, ==, 2);
        g_assert_cmpuint(km->dst_id, ==, KDBUS_DST_ID_BROADCAST);
        g_assert_cmpstr(h.member, ==, "Changed");
        g_assert_cmpint(peer_free_offset(&n->m, (const uint8_t *)km - n->m.pool), ==, 0);
        km = recv_msg(&n->m, &h);
        g_assert_cmpuint(km->src_id, ==, 3);
        g_assert_cmpuint(km->dst_id, ==, 1);
        g_assert_true(km->flags & KDBUS_MSG_EXPECT_REPLY);
        g_assert_cmpint(peer_free_offset(&n->m, (const uint8_t *)km - n->m.pool), ==, 0);
        km = recv_msg(&n->m, &h);
        g_assert_cmpuint(km->src_id, ==, 3);
        g_assert_cmpuint(km->dst_id, ==, KDBUS_DST_ID_BROADCAST);
        g_assert_cmpstr(h.member, ==, "Sig");
        g_assert_cmpint(peer_free_offset(&n->m, (const uint8_t *)km - n->m.pool), ==, 0);
        g_assert_cmpint(peer_recv(&n->m, 0, 0, NULL, NULL), ==, -EAGAIN);
        /* the receivers got theirs as ever */
        g_assert_cmpuint(c1->queued_msgs, ==, 1);
        g_assert_cmpuint(c0->queued_msgs, ==, 1);

        /* a message with an fd: the monitor (no ACCEPT_FD) gets it, its FDS item -1 and no
         * fd passed, as kdbus queued it and installed nothing; the receiver its fd */
        {
                TestMsg with_fd = CALL(":1.5", 9);
                int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
                const struct kdbus_item *item;
                TestPeer b;

                peer_hello(f, &b, KDBUS_HELLO_ACCEPT_FD);       /* id 5 */
                g_assert_cmpint(fd, >=, 0);
                /* the monitor's copy of b's ID_ADD first */
                g_assert_cmpint(peer_recv(&n->m, 0, 0, &km, NULL), ==, 0);
                g_assert_cmpuint(km->items[0].type, ==, KDBUS_ITEM_ID_ADD);
                g_assert_cmpint(peer_free_offset(&n->m, (const uint8_t *)km - n->m.pool), ==, 0);
                with_fd.flags = WIRE_FLAG_NO_REPLY_EXPECTED;
                g_assert_cmpint(peer_send_fds(&n->a, &with_fd, &(TestSend){ .dst_id = 5,
                                .msg_flags = ~0ull, .memfd_idx = -1,
                                .fd_idx = (const int[]){ 0 }, .n_fd_idx = 1 }, &fd, 1), ==, 0);
                (void) close(fd);
                km = recv_msg(&n->m, &h);
                g_assert_cmpuint(km->dst_id, ==, 5);
                g_assert_cmpuint(n->m.n_fds, ==, 0);
                for (item = km->items; item->type != KDBUS_ITEM_FDS;
                     item = KDBUS_ITEM_NEXT(item))
                        g_assert_true((const uint8_t *)item < (const uint8_t *)km + km->size);
                g_assert_cmpint(item->fds[0], ==, -1);
                g_assert_cmpint(peer_free_offset(&n->m, (const uint8_t *)km - n->m.pool), ==, 0);
                g_assert_cmpint(peer_recv(&b, 0, 0, &km, NULL), ==, 0);
                g_assert_cmpuint(b.n_fds, ==, 1);
                peer_free(&b);
        }
}

/* The monitor's next message is the bus's notification @type to @dst_id: its item. */
static const struct kdbus_item *mon_notification(TestPeer *m, uint64_t type, uint64_t dst_id,
                                                 uint64_t cookie_reply) {
        const struct kdbus_msg *km;

        g_assert_cmpint(peer_recv(m, 0, 0, &km, NULL), ==, 0);
        g_assert_cmpuint(km->src_id, ==, KDBUS_SRC_ID_KERNEL);
        g_assert_cmpuint(km->payload_type, ==, KDBUS_PAYLOAD_KERNEL);
        g_assert_cmpuint(km->items[0].type, ==, type);
        g_assert_cmpuint(km->dst_id, ==, dst_id);
        g_assert_cmpuint(km->cookie_reply, ==, cookie_reply);
        g_assert_cmpint(peer_free_offset(m, (const uint8_t *)km - m->pool), ==, 0);
        return &km->items[0];   /* still readable: the pool is mapped */
}

/*
 * kdbus_bus_eavesdrop(): a monitor gets every notification of the bus, without a match
 * entry: ID_ADD / ID_REMOVE and NAME_* (broadcast), REPLY_TIMEOUT / REPLY_DEAD (with the
 * caller's id as destination); the peers themselves get only what they asked for.
 */
static void test_monitor_notifications(NFixture *n, gconstpointer ctx) {
        Fixture *f = &n->f;
        TestMsg call5 = CALL(":1.5", 5), call6 = CALL(":1.5", 6);
        TestSend to_b = { .dst_id = 5, .msg_flags = ~0ull, .memfd_idx = -1 };
        const struct kdbus_item *item;
        const struct kdbus_msg *km;
        WireHeader h;

        f->bus->now_usec = 1000000000ull;
        (void) fixture_conn(f, 0);                              /* ids 1 and 2: legacy */
        (void) fixture_conn(f, 1);
        peer_hello(f, &n->a, 0);                                /* id 3 */
        g_assert_cmpint(hello_special(f, &n->m, KDBUS_HELLO_MONITOR, NULL, 0), ==, 0);
        peer_hello(f, &n->act, 0);                              /* id 5: an ordinary peer */
        item = mon_notification(&n->m, KDBUS_ITEM_ID_ADD, KDBUS_DST_ID_BROADCAST, 0);
        g_assert_cmpuint(item->id_change.id, ==, 5);

        g_assert_cmpint(peer_name(&n->a, KDBUS_CMD_NAME_ACQUIRE, "t.Watched", 0, NULL), ==, 0);
        item = mon_notification(&n->m, KDBUS_ITEM_NAME_ADD, KDBUS_DST_ID_BROADCAST, 0);
        g_assert_cmpuint(item->name_change.old_id.id, ==, 0);
        g_assert_cmpuint(item->name_change.new_id.id, ==, 3);
        g_assert_cmpstr(item->name_change.name, ==, "t.Watched");

        /* a call that times out: the monitor sees it, then the caller's REPLY_TIMEOUT */
        to_b.timeout_ns = (f->bus->now_usec + 1000) * 1000;
        g_assert_cmpint(peer_send(&n->a, &call5, &to_b), ==, 0);
        km = recv_msg(&n->m, &h);
        g_assert_cmpuint(h.serial, ==, 5);
        g_assert_cmpint(peer_free_offset(&n->m, (const uint8_t *)km - n->m.pool), ==, 0);
        f->bus->now_usec += 2000;
        g_assert_cmpint(bus_dispatch_timeouts(f->bus), ==, 0);
        (void) mon_notification(&n->m, KDBUS_ITEM_REPLY_TIMEOUT, 3, 5);
        (void) mon_notification(&n->a, KDBUS_ITEM_REPLY_TIMEOUT, 3, 5);

        /* a call whose callee goes: REPLY_DEAD to the caller, ID_REMOVE to everyone */
        to_b.timeout_ns = 0;
        g_assert_cmpint(peer_send(&n->a, &call6, &to_b), ==, 0);
        km = recv_msg(&n->m, &h);
        g_assert_cmpuint(h.serial, ==, 6);
        g_assert_cmpint(peer_free_offset(&n->m, (const uint8_t *)km - n->m.pool), ==, 0);
        peer_free(&n->act);
        /* (kdbus queued REPLY_DEAD first; the core reports the id gone first, as
         * dbus-daemon sends NameOwnerChanged before NoReply) */
        item = mon_notification(&n->m, KDBUS_ITEM_ID_REMOVE, KDBUS_DST_ID_BROADCAST, 0);
        g_assert_cmpuint(item->id_change.id, ==, 5);
        (void) mon_notification(&n->m, KDBUS_ITEM_REPLY_DEAD, 3, 6);
        (void) mon_notification(&n->a, KDBUS_ITEM_REPLY_DEAD, 3, 6);

        g_assert_cmpint(peer_name(&n->a, KDBUS_CMD_NAME_RELEASE, "t.Watched", 0, NULL), ==, 0);
        item = mon_notification(&n->m, KDBUS_ITEM_NAME_REMOVE, KDBUS_DST_ID_BROADCAST, 0);
        g_assert_cmpuint(item->name_change.old_id.id, ==, 3);
        g_assert_cmpint(peer_recv(&n->m, 0, 0, NULL, NULL), ==, -EAGAIN);
        /* a asked for no ID / NAME notifications */
        g_assert_cmpint(peer_recv(&n->a, 0, 0, NULL, NULL), ==, -EAGAIN);
}

static void test_monitor_cannot_send(NFixture *n, gconstpointer ctx) {
        Fixture *f = &n->f;
        TestMsg call = CALL(":1.1", 9);
        TestSend to_c0 = { .dst_id = 1, .msg_flags = ~0ull, .memfd_idx = -1 };
        struct kdbus_cmd_match match = { .size = sizeof(match), .cookie = 1 };
        struct kdbus_cmd bye = { .size = sizeof(bye) };
        bool found;

        (void) fixture_conn(f, 0);
        peer_hello(f, &n->a, 0);                                /* id 2 */
        g_assert_cmpint(hello_special(f, &n->m, KDBUS_HELLO_MONITOR, NULL, 0), ==, 0);

        /* kdbus: EOPNOTSUPP for everything that sends, owns, matches or leaves politely */
        g_assert_cmpint(peer_send(&n->m, &call, &to_c0), ==, -EOPNOTSUPP);
        g_assert_cmpint(peer_name(&n->m, KDBUS_CMD_NAME_ACQUIRE, "t.Mon", 0, NULL), ==,
                        -EOPNOTSUPP);
        g_assert_cmpint(peer_name(&n->m, KDBUS_CMD_NAME_RELEASE, "t.Mon", 0, NULL), ==,
                        -EOPNOTSUPP);
        g_assert_cmpint(peer_cmd(&n->m, KDBUS_CMD_MATCH_ADD, &match, sizeof(match)), ==,
                        -EOPNOTSUPP);
        g_assert_cmpint(peer_cmd(&n->m, KDBUS_CMD_BYEBYE, &bye, sizeof(bye)), ==, -EOPNOTSUPP);
        g_assert_cmpuint(f->c[0]->queued_msgs, ==, 0);

        /* invisible: not in LIST, not addressable by its id */
        g_assert_cmpuint(list_count(&n->a, 0, n->m.id, &found, NULL), ==, 2);
        g_assert_false(found);
        g_assert_cmpuint(list_count(&n->m, 0, n->m.id, &found, NULL), ==, 2);
        g_assert_false(found);
        {
                TestMsg to_mon = CALL(":1.3", 10);
                TestSend s = { .dst_id = n->m.id, .msg_flags = ~0ull, .memfd_idx = -1 };

                g_assert_cmpint(peer_send(&n->a, &to_mon, &s), ==, -ENXIO);
        }
        /* and its going is not announced either */
        fixture_log_reset(f);
        peer_free(&n->m);
        assert_log(f, "");
}

/* The id of the message at the head of legacy @c's queue (its serial), popped. */
static uint32_t pop_serial(BridgeConn *c) {
        BridgeMsg *m = bridge_conn_queue_peek(c);
        uint32_t serial;

        g_assert_nonnull(m);
        serial = m->hdr.serial;
        bridge_conn_queue_pop(c);
        return serial;
}

static void test_activator_hello(NFixture *n, gconstpointer ctx) {
        Fixture *f = &n->f;
        TestMsg call = CALL(":1.1", 9);
        TestSend to_c0 = { .dst_id = 1, .msg_flags = ~0ull, .memfd_idx = -1 };
        struct kdbus_cmd update = { .size = sizeof(update) };

        (void) fixture_conn(f, 0);
        fixture_log_reset(f);
        f->bus->owner_uid = 1500;
        g_assert_cmpint(hello_special(f, &n->act, KDBUS_HELLO_ACTIVATOR, "t.Svc", 2000), ==,
                        -EPERM);
        g_assert_cmpint(hello_special(f, &n->act, KDBUS_HELLO_ACTIVATOR, ":1.7", 1500), ==,
                        -EINVAL);
        g_assert_cmpint(hello_special(f, &n->act, KDBUS_HELLO_ACTIVATOR, "org.freedesktop.DBus",
                                      1500), ==, -EINVAL);
        g_assert_cmpint(hello_special(f, &n->act, KDBUS_HELLO_ACTIVATOR, "t.Svc", 1500), ==, 0);
        /* one activator per name (kdbus: EEXIST) */
        g_assert_cmpint(hello_special(f, &n->m, KDBUS_HELLO_ACTIVATOR, "t.Svc", 1500), ==, -EEXIST);
        g_assert_null(n->m.nc);
        assert_log(f, "");              /* not announced */

        /* it only receives */
        g_assert_cmpint(peer_send(&n->act, &call, &to_c0), ==, -EOPNOTSUPP);
        g_assert_cmpint(peer_name(&n->act, KDBUS_CMD_NAME_ACQUIRE, "t.Other", 0, NULL), ==,
                        -EOPNOTSUPP);
        g_assert_cmpint(peer_recv(&n->act, 0, 0, NULL, NULL), ==, -EAGAIN);
        /* kdbus_cmd_update(): an empty UPDATE and ATTACH_FLAGS_RECV are fine from an
         * activator, ATTACH_FLAGS_SEND and policy items are not */
        g_assert_cmpint(peer_cmd(&n->act, KDBUS_CMD_UPDATE, &update, sizeof(update)), ==, 0);
        g_assert_cmpint(update_item(&n->act, KDBUS_ITEM_ATTACH_FLAGS_RECV, KDBUS_ATTACH_CREDS),
                        ==, 0);
        g_assert_cmpuint(n->act.nc->attach_flags_recv, ==, KDBUS_ATTACH_CREDS);
        g_assert_cmpint(update_item(&n->act, KDBUS_ITEM_ATTACH_FLAGS_SEND, KDBUS_ATTACH_CREDS),
                        ==, -EOPNOTSUPP);
        g_assert_cmpint(update_item(&n->act, KDBUS_ITEM_POLICY_ACCESS, 0), ==, -EOPNOTSUPP);
        /* the name has no owner for anyone */
        g_assert_null(bus_find_conn_by_name(f->bus, "t.Svc"));
}

static void test_activator_move(NFixture *n, gconstpointer ctx) {
        Fixture *f = &n->f;
        BridgeConn *c0 = fixture_conn(f, 0), *c1 = fixture_conn(f, 1);
        TestMsg legacy_call = CALL("t.Svc", 5), native_call = CALL("t.Svc", 7);
        TestMsg no_start = CALL("t.Svc", 8);
        TestMsg reply = { .type = WIRE_MSG_METHOD_RETURN, .serial = 20, .reply_serial = 5,
                          .destination = ":1.1" };
        TestSend by_name = { .dst_id = KDBUS_DST_ID_NAME, .dst_name = "t.Svc", .msg_flags = ~0ull,
                             .memfd_idx = -1 };
        TestSend by_name_nas = { .dst_id = KDBUS_DST_ID_NAME, .dst_name = "t.Svc",
                                 .msg_flags = KDBUS_MSG_EXPECT_REPLY | KDBUS_MSG_NO_AUTO_START,
                                 .memfd_idx = -1 };

        peer_hello(f, &n->a, 0);                                /* id 3 */
        g_assert_cmpint(hello_special(f, &n->act, KDBUS_HELLO_ACTIVATOR, "t.Svc", 0), ==, 0);

        /* without owner: to the activator's pool */
        g_assert_cmpint(test_send(c0, &legacy_call), ==, 0);
        g_assert_cmpint(peer_send(&n->a, &native_call, &by_name), ==, 0);
        g_assert_cmpuint(n->act.n_readable, ==, 1);
        /* NO_AUTO_START: a name without owner (legacy: the driver's NameHasNoOwner; kdbus:
         * EADDRNOTAVAIL) */
        no_start.flags = WIRE_FLAG_NO_AUTO_START;
        g_assert_cmpint(test_send(c0, &no_start), ==, BRIDGE_E_NAME_UNKNOWN);
        g_assert_cmpint(peer_send(&n->a, &native_call, &by_name_nas), ==, -EADDRNOTAVAIL);
        fixture_log_reset(f);

        /* a real owner: the queued messages move to it, in order, with their reply slots */
        g_assert_cmpint(bridge_name_acquire(c1, "t.Svc", 0), ==, 0);
        assert_log(f, "name t.Svc ->:1.2;");
        g_assert_cmpint(peer_recv(&n->act, 0, 0, NULL, NULL), ==, -EAGAIN);
        g_assert_cmpuint(c1->queued_msgs, ==, 2);
        g_assert_cmpuint(pop_serial(c1), ==, 5);
        g_assert_cmpuint(pop_serial(c1), ==, 7);
        g_assert_cmpint(test_send(c1, &reply), ==, 0);         /* the slot moved with it */
        reply.reply_serial = 7;
        reply.destination = ":1.3";
        g_assert_cmpint(test_send(c1, &reply), ==, 0);

        /* the owner goes with a message for the name still queued: back to the activator */
        legacy_call.serial = 9;
        g_assert_cmpint(test_send(c0, &legacy_call), ==, 0);
        g_assert_cmpuint(c1->queued_msgs, ==, 1);
        fixture_log_reset(f);
        bridge_conn_disconnect(c1);
        g_assert_cmpuint(c1->queued_msgs, ==, 0);
        {
                WireHeader h;
                const struct kdbus_msg *km = recv_msg(&n->act, &h);

                g_assert_cmpuint(h.serial, ==, 9);
                g_assert_cmpuint(km->src_id, ==, 1);
        }
        /* no NoReply for the call: it waits at the activator, not lost */
        g_assert_null(strstr(f->ev.log->str, "lost"));
        /* the activator goes: now its caller hears its call is lost */
        fixture_log_reset(f);
        peer_free(&n->act);
        assert_log(f, "lost :1.1 9 gone :1.4;");
        (void) c0;
}

static void test_activator_list(NFixture *n, gconstpointer ctx) {
        Fixture *f = &n->f;
        uint64_t flags = 0;
        bool found;

        peer_hello(f, &n->a, 0);                                /* id 1 */
        g_assert_cmpint(hello_special(f, &n->act, KDBUS_HELLO_ACTIVATOR, "t.Svc", 0), ==, 0);
        g_assert_cmpint(hello_special(f, &n->m, KDBUS_HELLO_MONITOR, NULL, 0), ==, 0);
        /* kdbus's final kdbus_list_all(): the activator has an id record of its own (UNIQUE),
         * its name only with ACTIVATORS */
        g_assert_cmpuint(list_count(&n->a, 0, n->act.id, &found, &flags), ==, 2);
        g_assert_true(found);
        g_assert_cmpuint(flags, ==, 0);
        g_assert_cmpuint(list_count(&n->a, KDBUS_LIST_NAMES, n->act.id, &found, &flags), ==, 2);
        g_assert_true(found);
        g_assert_cmpuint(flags, ==, 0);
        g_assert_cmpuint(list_count(&n->a, KDBUS_LIST_ACTIVATORS | KDBUS_LIST_NAMES, n->act.id,
                                    &found, &flags), ==, 2);
        g_assert_true(found);
        /* it holds its name (no owner has it): kdbus's ACTIVATOR | PRIMARY */
        g_assert_cmpuint(flags, ==, KDBUS_NAME_ACTIVATOR | KDBUS_NAME_PRIMARY);
        /* the monitor never */
        g_assert_cmpuint(list_count(&n->a, KDBUS_LIST_ACTIVATORS, n->m.id, &found, NULL), ==, 2);
        g_assert_false(found);
}

/* kdbus_cmd_conn_info() finds every connection by id (kdbus_bus_find_conn_by_id():
 * monitors and activators too) and a name's activator while nobody owns the name. */
static void test_special_info(NFixture *n, gconstpointer ctx) {
        Fixture *f = &n->f;
        uint64_t id = 0;

        peer_hello(f, &n->a, 0);                                        /* id 1 */
        g_assert_cmpint(hello_special(f, &n->act, KDBUS_HELLO_ACTIVATOR, "t.Svc", 0), ==, 0);
        g_assert_cmpint(hello_special(f, &n->m, KDBUS_HELLO_MONITOR, NULL, 0), ==, 0);
        g_assert_cmpint(info_of(&n->a, n->act.id, NULL, &id), ==, 0);
        g_assert_cmpuint(id, ==, n->act.id);
        g_assert_cmpint(info_of(&n->a, n->m.id, NULL, &id), ==, 0);
        g_assert_cmpuint(id, ==, n->m.id);
        g_assert_cmpint(info_of(&n->a, 0, "t.Svc", &id), ==, 0);
        g_assert_cmpuint(id, ==, n->act.id);
        /* a name with an id: the name's owner must be that id */
        g_assert_cmpint(info_of(&n->a, n->act.id, "t.Svc", &id), ==, 0);
        g_assert_cmpint(info_of(&n->a, n->a.id, "t.Svc", &id), ==, -ESRCH);
        /* the owner comes first, the activator only stands in */
        g_assert_cmpint(peer_name(&n->a, KDBUS_CMD_NAME_ACQUIRE, "t.Svc", 0, NULL), ==, 0);
        g_assert_cmpint(info_of(&n->a, 0, "t.Svc", &id), ==, 0);
        g_assert_cmpuint(id, ==, n->a.id);
        g_assert_cmpint(info_of(&n->a, n->act.id, "t.Svc", &id), ==, -ESRCH);
        g_assert_cmpint(info_of(&n->a, n->m.id + 1, NULL, &id), ==, -ENXIO);
}

/* kdbus_cmd_free(): a policy holder may not FREE (it has nothing to receive) */
static void test_holder_free(NFixture *n, gconstpointer ctx) {
        g_assert_cmpint(hello_special(&n->f, &n->m, KDBUS_HELLO_POLICY_HOLDER, "t.Held", 0), ==,
                        0);
        g_assert_cmpint(peer_free_offset(&n->m, 0), ==, -EOPNOTSUPP);   /* HELLO's slice */
}

/*
 * Run @command (its fixed struct @cmd, @struct_size bytes, then @tail_size bytes native
 * code finds by offset, e.g. SEND's message) twice: as it is, and with a NEGOTIATE item
 * between the struct and the tail (cmd->size grown by it; kdbus_args_parse() takes one in
 * every command). The first takes native_conn_command()'s path for a struct without items
 * (native/command.c), the second the item walk: both answer the same. Return: the answer.
 */
static int cmd_both_paths(TestPeer *p, uint64_t command, const void *cmd, size_t struct_size,
                          const void *tail, size_t tail_size, const int *fds, unsigned n_fds) {
        enum { NEG = KDBUS_ITEM_HEADER_SIZE + sizeof(uint64_t) };
        uint64_t plain[64] = { 0 }, neg[64] = { 0 };
        struct kdbus_item *item = (void *)((uint8_t *)neg + struct_size);
        size_t size = struct_size + NEG + tail_size, reply_size;
        int *out = NULL, r0, r1;
        unsigned n_out = 0;

        g_assert_cmpuint(size, <=, sizeof(plain));
        /* the tail at the same offset in both: behind the item's room */
        memcpy(plain, cmd, struct_size);
        memcpy(neg, cmd, struct_size);
        if (tail_size) {
                memcpy((uint8_t *)plain + struct_size + NEG, tail, tail_size);
                memcpy((uint8_t *)neg + struct_size + NEG, tail, tail_size);
        }
        item->size = NEG;
        item->type = KDBUS_ITEM_NEGOTIATE;
        ((struct kdbus_cmd *)(void *)neg)->size += NEG;
        r0 = native_conn_command(p->nc, command, plain, size, fds, n_fds, &reply_size, &out,
                                 &n_out);
        g_assert_cmpuint(n_out, ==, 0);
        r1 = native_conn_command(p->nc, command, neg, size, fds, n_fds, &reply_size, &out,
                                 &n_out);
        g_assert_cmpuint(n_out, ==, 0);
        g_assert_cmpint(r0, ==, r1);
        return r0;
}

/* The SEND of a call to id 1 with its kdbus_msg and payload behind a NEGOTIATE item's
 * room (the PAYLOAD_VEC's offset moved with them), both ways. */
static int send_both_paths(TestPeer *p, uint64_t send_flags, const int *fds, unsigned n_fds) {
        enum { NEG = KDBUS_ITEM_HEADER_SIZE + sizeof(uint64_t) };
        TestMsg call = CALL(":1.1", 9);
        TestSend s = { .dst_id = 1, .msg_flags = ~0ull, .memfd_idx = -1 };
        size_t payload_size, size;
        uint8_t *payload = test_dbus1(&call, 0, &payload_size);
        uint8_t *dg = test_send_datagram(&call, &s, payload, payload_size, &size);
        struct kdbus_cmd_send *snd = (void *)dg;
        struct kdbus_msg *km = (void *)(dg + sizeof(*snd));
        int r;

        g_assert_cmpuint(snd->msg_address, ==, sizeof(*snd));
        g_assert_cmpuint(km->items[0].type, ==, KDBUS_ITEM_PAYLOAD_VEC);
        snd->flags = send_flags;
        snd->msg_address += NEG;
        km->items[0].vec.offset += NEG;
        r = cmd_both_paths(p, KDBUS_CMD_SEND, snd, sizeof(*snd), km, size - sizeof(*snd), fds,
                           n_fds);
        g_free(dg);
        free(payload);
        return r;
}

/*
 * The transport's own FREE and RECV (native_conn_command_free(), _recv()) answer as
 * native_conn_command() does; *ret_free and *ret_recv are the answers (RECV with @flags;
 * nothing may be waiting: neither takes a message).
 */
static void made_commands(TestPeer *p, uint64_t flags, int *ret_free, int *ret_recv) {
        struct kdbus_cmd_recv rc = { .size = sizeof(rc), .flags = flags }, rc2 = rc;
        struct kdbus_cmd_free fr = { .size = sizeof(fr), .offset = 8 };
        size_t reply_size, reply_size2;
        int *fds = NULL;
        unsigned n_fds = 0;

        *ret_free = native_conn_command_free(p->nc, 8);
        g_assert_cmpint(peer_cmd(p, KDBUS_CMD_FREE, &fr, sizeof(fr)), ==, *ret_free);
        *ret_recv = native_conn_command_recv(p->nc, &rc, sizeof(rc), &reply_size, &fds, &n_fds);
        g_assert_cmpuint(n_fds, ==, 0);
        g_assert_cmpint(native_conn_command(p->nc, KDBUS_CMD_RECV, &rc2, sizeof(rc2), NULL, 0,
                                            &reply_size2, &fds, &n_fds), ==, *ret_recv);
        g_assert_cmpuint(reply_size, ==, reply_size2);
        g_assert_cmpmem(&rc, sizeof(rc), &rc2, sizeof(rc2));
}

/* A command's bare struct (no item) skips native/command.c's item walks: it answers as
 * with an item, in each kind of connection, for good and bad input. */
static void test_command_paths(NFixture *n, gconstpointer ctx) {
        Fixture *f = &n->f;
        struct kdbus_cmd_free fr = { .size = sizeof(fr), .offset = 8 };
        struct kdbus_cmd_recv rc = { .size = sizeof(rc) };
        struct kdbus_cmd bye = { .size = sizeof(bye) };
        struct kdbus_cmd_recv got;
        int r_free, r_recv;
        int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

        g_assert_cmpint(fd, >=, 0);
        (void) fixture_conn(f, 0);                              /* id 1 */
        peer_hello(f, &n->a, 0);                                /* id 2 */
        g_assert_cmpint(hello_special(f, &n->m, KDBUS_HELLO_MONITOR, NULL, 0), ==, 0);
        g_assert_cmpint(hello_special(f, &n->act, KDBUS_HELLO_POLICY_HOLDER, "t.Held", 0), ==,
                        0);
        /* what the monitor saw of the HELLOs: received, freed */
        while (peer_recv(&n->m, 0, 0, NULL, &got) == 0)
                g_assert_cmpint(peer_free_offset(&n->m, got.msg.offset), ==, 0);
        /* the transport's own FREE and RECV: as native_conn_command()'s */
        made_commands(&n->a, 0, &r_free, &r_recv);
        g_assert_cmpint(r_free, ==, -ENXIO);
        g_assert_cmpint(r_recv, ==, -EAGAIN);
        made_commands(&n->a, KDBUS_RECV_DROP | KDBUS_RECV_USE_PRIORITY, &r_free, &r_recv);
        g_assert_cmpint(r_recv, ==, -EINVAL);
        made_commands(&n->m, KDBUS_RECV_PEEK, &r_free, &r_recv);
        g_assert_cmpint(r_free, ==, -ENXIO);
        g_assert_cmpint(r_recv, ==, -EAGAIN);
        made_commands(&n->act, 0, &r_free, &r_recv);
        g_assert_cmpint(r_free, ==, -EOPNOTSUPP);
        g_assert_cmpint(r_recv, ==, -EOPNOTSUPP);
        /* a monitor receives, never sends; a policy holder does neither */
        g_assert_cmpint(cmd_both_paths(&n->m, KDBUS_CMD_RECV, &rc, sizeof(rc), NULL, 0, NULL, 0),
                        ==, -EAGAIN);
        g_assert_cmpint(cmd_both_paths(&n->m, KDBUS_CMD_FREE, &fr, sizeof(fr), NULL, 0, NULL, 0),
                        ==, -ENXIO);
        g_assert_cmpint(send_both_paths(&n->m, 0, NULL, 0), ==, -EOPNOTSUPP);
        g_assert_cmpint(cmd_both_paths(&n->m, KDBUS_CMD_BYEBYE, &bye, sizeof(bye), NULL, 0, NULL,
                                       0), ==, -EOPNOTSUPP);
        g_assert_cmpint(cmd_both_paths(&n->act, KDBUS_CMD_FREE, &fr, sizeof(fr), NULL, 0, NULL,
                                       0), ==, -EOPNOTSUPP);
        g_assert_cmpint(cmd_both_paths(&n->act, KDBUS_CMD_RECV, &rc, sizeof(rc), NULL, 0, NULL,
                                       0), ==, -EOPNOTSUPP);
        g_assert_cmpint(send_both_paths(&n->act, 0, NULL, 0), ==, -EOPNOTSUPP);
        /* an ordinary connection */
        g_assert_cmpint(cmd_both_paths(&n->a, KDBUS_CMD_FREE, &fr, sizeof(fr), NULL, 0, NULL, 0),
                        ==, -ENXIO);
        g_assert_cmpint(cmd_both_paths(&n->a, KDBUS_CMD_FREE, &fr, sizeof(fr), NULL, 0, &fd, 1),
                        ==, -EINVAL);           /* fds with anything but SEND */
        fr.flags = 1;
        g_assert_cmpint(cmd_both_paths(&n->a, KDBUS_CMD_FREE, &fr, sizeof(fr), NULL, 0, NULL, 0),
                        ==, -EINVAL);
        fr.flags = 0;
        g_assert_cmpint(cmd_both_paths(&n->a, KDBUS_CMD_RECV, &rc, sizeof(rc), NULL, 0, NULL, 0),
                        ==, -EAGAIN);
        rc.flags = KDBUS_RECV_DROP | KDBUS_RECV_USE_PRIORITY;
        g_assert_cmpint(cmd_both_paths(&n->a, KDBUS_CMD_RECV, &rc, sizeof(rc), NULL, 0, NULL, 0),
                        ==, -EINVAL);
        rc.flags = 1ull << 10;
        g_assert_cmpint(cmd_both_paths(&n->a, KDBUS_CMD_RECV, &rc, sizeof(rc), NULL, 0, NULL, 0),
                        ==, -EINVAL);
        rc.flags = 0;
        g_assert_cmpint(send_both_paths(&n->a, 0, NULL, 0), ==, 0);
        g_assert_cmpint(send_both_paths(&n->a, 1ull << 5, NULL, 0), ==, -EINVAL);
        /* a datagram's fd no FDS item names is not the message's */
        g_assert_cmpint(send_both_paths(&n->a, 0, &fd, 1), ==, 0);
        g_assert_cmpuint(f->c[0]->queued_msgs, ==, 4);
        /* after BYEBYE (the plain one leaves; the second finds it gone) */
        g_assert_cmpint(peer_recv(&n->a, 0, 0, NULL, NULL), ==, -EAGAIN);
        g_assert_cmpint(peer_cmd(&n->a, KDBUS_CMD_BYEBYE, &bye, sizeof(bye)), ==, 0);
        g_assert_cmpint(cmd_both_paths(&n->a, KDBUS_CMD_BYEBYE, &bye, sizeof(bye), NULL, 0, NULL,
                                       0), ==, -ECONNRESET);
        g_assert_cmpint(cmd_both_paths(&n->a, KDBUS_CMD_FREE, &fr, sizeof(fr), NULL, 0, NULL, 0),
                        ==, -ECONNRESET);
        g_assert_cmpint(cmd_both_paths(&n->a, KDBUS_CMD_RECV, &rc, sizeof(rc), NULL, 0, NULL, 0),
                        ==, -ECONNRESET);
        g_assert_cmpint(send_both_paths(&n->a, 0, NULL, 0), ==, -ECONNRESET);
        made_commands(&n->a, 0, &r_free, &r_recv);
        g_assert_cmpint(r_free, ==, -ECONNRESET);
        g_assert_cmpint(r_recv, ==, -ECONNRESET);
        (void) close(fd);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
#define ADD(path, fn) g_test_add("/native/" path, NFixture, NULL, nsetup, fn, nteardown)
        ADD("monitor/hello", test_monitor_hello);
        ADD("monitor/sees-all", test_monitor_sees_all);
        ADD("monitor/cannot-send", test_monitor_cannot_send);
        ADD("monitor/notifications", test_monitor_notifications);
        ADD("activator/hello", test_activator_hello);
        ADD("activator/move", test_activator_move);
        ADD("activator/list", test_activator_list);
        ADD("info/special", test_special_info);
        ADD("holder/no-free", test_holder_free);
        ADD("command/paths", test_command_paths);
        return g_test_run();
}
