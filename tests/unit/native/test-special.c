/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * kdbus's special connections on the core, like kdbus's selftests test-monitor.c and
 * test-activator.c: a monitor sees unicasts and broadcasts of native and legacy peers and
 * cannot send, own names or match, and nobody sees or reaches it; privilege and HELLO
 * checks.
 */
#include "native-fixture.h"

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

/* HELLO with @flags and, if @name, a NAME item, as @uid. */
static int hello_special(Fixture *f, TestPeer *p, uint64_t flags, const char *name, uid_t uid) {
        uint8_t buf[512] __attribute__((aligned(8))) = { 0 };
        struct kdbus_cmd_hello *hello = (void *)buf;
        BridgeCreds creds = { .uid = uid, .gid = 1000, .pidfd = -1 };
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
        r = native_conn_hello(f->bus, &creds, hello, hello->size, &test_peer_ops, p, &p->nc);
        if (r)
                return r;
        p->id = hello->id;
        p->pool = mmap(NULL, TEST_POOL_SIZE, PROT_READ, MAP_SHARED, native_conn_pool_fd(p->nc), 0);
        g_assert_true(p->pool != MAP_FAILED);
        return 0;
}

/* RECV the next message of @p: its header in *ret_hdr; the kdbus_msg returned. */
static const struct kdbus_msg *recv_msg(TestPeer *p, WireHeader *ret_hdr) {
        const struct kdbus_msg *km;
        size_t size;

        g_assert_cmpint(peer_recv(p, 0, 0, &km, NULL), ==, 0);
        (void) msg_payload(km, &size, ret_hdr);
        return km;
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
        /* kdbus: the bus owner's uid (or root) only */
        g_assert_cmpint(hello_special(f, &n->m, KDBUS_HELLO_MONITOR, NULL, 2000), ==, -EPERM);
        /* one kind at a time; a NAME only for activators */
        g_assert_cmpint(hello_special(f, &n->m, KDBUS_HELLO_MONITOR | KDBUS_HELLO_ACTIVATOR,
                                      "t.Name", 1500), ==, -EINVAL);
        g_assert_cmpint(hello_special(f, &n->m, KDBUS_HELLO_MONITOR, "t.Name", 1500), ==, -EINVAL);
        g_assert_cmpint(hello_special(f, &n->m, KDBUS_HELLO_ACTIVATOR, NULL, 1500), ==, -EINVAL);
        g_assert_cmpint(hello_special(f, &n->m, 0, "t.Name", 1500), ==, -EINVAL);
        g_assert_cmpint(hello_special(f, &n->m, KDBUS_HELLO_MONITOR, NULL, 0), ==, 0);
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

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
#define ADD(path, fn) g_test_add("/native/" path, NFixture, NULL, nsetup, fn, nteardown)
        ADD("monitor/hello", test_monitor_hello);
        ADD("monitor/sees-all", test_monitor_sees_all);
        ADD("monitor/cannot-send", test_monitor_cannot_send);
        return g_test_run();
}
