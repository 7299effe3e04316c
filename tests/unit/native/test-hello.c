/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * HELLO and BYEBYE on the core, as kdbus's final kdbus_cmd_hello() / kdbus_conn_new() took
 * them: flags, the pool, items (CONN_DESCRIPTION's name rules, POLICY_ACCESS, NEGOTIATE),
 * NEGOTIATE, the privileged stand-in's CREDS / PIDS / SECLABEL, and BYEBYE's EBUSY.
 */
#include <fcntl.h>
#include "conn-fixture.h"
#include "native/command.h"
#include "native/conn.h"

static void test_hello(NFixture *n, gconstpointer ctx) {
        const struct kdbus_item *item;
        TestPeer bad;
        uint64_t offset;

        peer_hello(&n->f, &n->a, KDBUS_HELLO_ACCEPT_FD);
        peer_hello(&n->f, &n->b, 0);
        g_assert_cmpuint(n->b.id, ==, n->a.id + 1);
        assert_log(&n->f, "added :1.1;added :1.2;");
        g_assert_true(bus_find_conn_by_name(n->f.bus, ":1.2") == n->b.nc->conn);

        /* the bloom parameters are in the pool, for the peer to FREE */
        offset = 0;             /* the first slice of the pool */
        item = (const void *)(n->a.pool + offset);
        g_assert_cmpuint(item->type, ==, KDBUS_ITEM_BLOOM_PARAMETER);
        g_assert_cmpuint(item->bloom_parameter.size, ==, BUS_BLOOM_SIZE);
        g_assert_cmpuint(item->bloom_parameter.n_hash, ==, BUS_BLOOM_N_HASH);
        g_assert_cmpint(peer_free_offset(&n->a, offset), ==, 0);
        g_assert_cmpint(peer_free_offset(&n->a, offset), ==, -ENXIO);

        g_assert_cmpint(peer_hello_full(&n->f, &bad, 1u << 20, TEST_POOL_SIZE, 1), ==, -EINVAL);
        g_assert_cmpint(peer_hello_full(&n->f, &bad, 0, 1000, 1), ==, -EINVAL);
        g_assert_cmpint(peer_hello_full(&n->f, &bad, 0, 0, 1), ==, -EINVAL);
        /* an activator needs its NAME item (kdbus); test-special.c has the rest */
        g_assert_cmpint(peer_hello_full(&n->f, &bad, KDBUS_HELLO_ACTIVATOR, TEST_POOL_SIZE, 1),
                        ==, -EINVAL);
        /* kdbus's hello selftest: its "faulty flag" (our extensions are elsewhere) */
        g_assert_cmpint(peer_hello_full(&n->f, &bad, 1ULL << 32, TEST_POOL_SIZE, 1), ==, -EINVAL);
        assert_log(&n->f, "");
}

/* HELLO with one item of @type and @len payload bytes from @data (none if @data is NULL).
 * Return: HELLO's result; *cmd as the bus left it. On success the connection is freed. */
static int hello_item(Fixture *f, uint64_t flags, uint64_t type, const void *data, size_t len,
                      struct kdbus_cmd_hello *ret_cmd) {
        uint8_t buf[512] __attribute__((aligned(8))) = { 0 };
        struct kdbus_cmd_hello *hello = (void *)buf;
        BridgeCreds creds = { .uid = 2000, .gid = 1000, .pidfd = -1 };
        NativeConn *nc = NULL;
        int r;

        hello->size = sizeof(*hello);
        hello->flags = flags;
        hello->pool_size = TEST_POOL_SIZE;
        if (data) {
                hello->items[0].size = KDBUS_ITEM_HEADER_SIZE + len;
                hello->items[0].type = type;
                memcpy(hello->items[0].data, data, len);
                hello->size += KDBUS_ALIGN8(hello->items[0].size);
        }
        r = test_native_hello(f->bus, &creds, hello, hello->size, &test_peer_ops, NULL, &nc);
        if (ret_cmd)
                *ret_cmd = *hello;
        g_assert_true(!nc == (r != 0));
        native_conn_free(nc);
        return r;
}

/* kdbus_item_validate_name() on CONN_DESCRIPTION; POLICY_ACCESS and NEGOTIATE items */
static void test_hello_items(NFixture *n, gconstpointer ctx) {
        struct kdbus_policy_access acc = { .type = KDBUS_POLICY_ACCESS_WORLD,
                                           .access = KDBUS_POLICY_SEE };
        uint64_t types[2] = { KDBUS_ITEM_NAME, 0x7777 };
        char longest[64];
        struct kdbus_cmd_hello out;

#define DESC(s) hello_item(&n->f, 0, KDBUS_ITEM_CONN_DESCRIPTION, (s), sizeof(s), NULL)
        g_assert_cmpint(DESC("a"), ==, 0);
        g_assert_cmpint(DESC("my-conn.v1_2"), ==, 0);
        g_assert_cmpint(DESC("a-"), ==, -EINVAL);
        g_assert_cmpint(DESC(".a"), ==, -EINVAL);
        g_assert_cmpint(DESC("a b"), ==, -EINVAL);
        g_assert_cmpint(DESC("a/b"), ==, -EINVAL);
        g_assert_cmpint(DESC(""), ==, -EINVAL);
#undef DESC
        memset(longest, 'x', 63);
        longest[63] = '\0';
        g_assert_cmpint(hello_item(&n->f, 0, KDBUS_ITEM_CONN_DESCRIPTION, longest, 64, NULL),
                        ==, 0);
        g_assert_cmpint(hello_item(&n->f, 0, KDBUS_ITEM_CONN_DESCRIPTION, "xxxxxxxxxxxxxxxxxxxx"
                                   "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", 66, NULL),
                        ==, -ENAMETOOLONG);
        /* accepted from any HELLO, used only by policy holders and activators */
        g_assert_cmpint(hello_item(&n->f, 0, KDBUS_ITEM_POLICY_ACCESS, &acc, sizeof(acc), NULL),
                        ==, 0);
        g_assert_cmpint(hello_item(&n->f, 0, KDBUS_ITEM_POLICY_ACCESS, &acc, 8, NULL), ==,
                        -EINVAL);
        /* kdbus_args_parse(): one NEGOTIATE item in any command; the size comes back as sent */
        g_assert_cmpint(hello_item(&n->f, 0, KDBUS_ITEM_NEGOTIATE, types, sizeof(types), &out),
                        ==, 0);
        g_assert_cmpuint(out.size, ==, sizeof(out) + KDBUS_ITEM_SIZE(sizeof(types)));
        g_assert_cmpint(hello_item(&n->f, 0, KDBUS_ITEM_NEGOTIATE, types, 4, NULL), ==, -EINVAL);
        /* NEGOTIATE: the known flags, no connection */
        fixture_log_reset(&n->f);
        g_assert_cmpint(hello_item(&n->f, KDBUS_FLAG_NEGOTIATE | KDBUS_HELLO_ACCEPT_FD, 0, NULL,
                                   0, &out), ==, 1);
        g_assert_cmpuint(out.flags, ==, KDBUS_HELLO_ACCEPT_FD | KDBUS_HELLO_ACTIVATOR |
                         KDBUS_HELLO_POLICY_HOLDER | KDBUS_HELLO_MONITOR |
                         KDBUS_HELLO_CAPTURE_PER_MESSAGE | KDBUS_HELLO_WIRE_BATCH);
        g_assert_cmpuint(out.id, ==, 0);
        assert_log(&n->f, "");
}

/* One NEGOTIATE item is taken by every command (kdbus_args_parse()); a second is EINVAL. */
static void test_negotiate_item(NFixture *n, gconstpointer ctx) {
        uint8_t buf[512] __attribute__((aligned(8))) = { 0 };
        struct kdbus_cmd_recv *rc = (void *)buf;
        struct kdbus_item *item = (void *)(buf + sizeof(*rc));
        struct kdbus_cmd_info *info = (void *)buf;
        size_t sz;

        peer_hello(&n->f, &n->a, 0);
        item->size = KDBUS_ITEM_HEADER_SIZE + sizeof(uint64_t);
        item->type = KDBUS_ITEM_NEGOTIATE;
        item->data64[0] = KDBUS_ITEM_NAME;
        rc->size = sz = sizeof(*rc) + KDBUS_ITEM_SIZE(sizeof(uint64_t));
        g_assert_cmpint(peer_cmd(&n->a, KDBUS_CMD_RECV, rc, rc->size), ==, -EAGAIN);
        g_assert_cmpuint(rc->size, ==, sz);
        /* twice */
        memcpy((uint8_t *)item + KDBUS_ALIGN8(item->size), item, KDBUS_ALIGN8(item->size));
        rc->size += KDBUS_ALIGN8(item->size);
        g_assert_cmpint(peer_cmd(&n->a, KDBUS_CMD_RECV, rc, rc->size), ==, -EINVAL);

        /* CONN_INFO with one, then a NAME: the NAME still counts */
        memset(buf, 0, sizeof(buf));
        item = (void *)info->items;
        item->size = KDBUS_ITEM_HEADER_SIZE;
        item->type = KDBUS_ITEM_NEGOTIATE;
        item = KDBUS_ITEM_NEXT(item);
        item->size = KDBUS_ITEM_HEADER_SIZE + 4;
        item->type = KDBUS_ITEM_NAME;
        strcpy(item->str, "t.x");
        info->size = sizeof(*info) + KDBUS_ITEM_HEADER_SIZE + KDBUS_ALIGN8(item->size);
        g_assert_cmpint(peer_cmd(&n->a, KDBUS_CMD_CONN_INFO, info, info->size), ==, -ESRCH);
        g_assert_cmpint(peer_name(&n->a, KDBUS_CMD_NAME_ACQUIRE, "t.x", 0, NULL), ==, 0);
        g_assert_cmpint(peer_cmd(&n->a, KDBUS_CMD_CONN_INFO, info, info->size), ==, 0);
        g_assert_cmpint(peer_free_offset(&n->a, info->offset), ==, 0);

        {
                /* SEND with one: the message behind the command is found where it is */
                TestMsg t = CALL(":1.2", 7);
                TestSend ts = { .dst_id = 2, .msg_flags = ~0ull, .memfd_idx = -1 };
                const size_t neg = KDBUS_ITEM_HEADER_SIZE;
                size_t payload_size, dsize, reply_size;
                g_autofree uint8_t *payload = NULL, *d = NULL, *d2 = NULL;
                struct kdbus_cmd_send *sc;
                struct kdbus_msg *km;
                int *fds;
                unsigned n_fds;

                peer_hello(&n->f, &n->b, 0);
                payload = test_dbus1(&t, 0, &payload_size);
                d = test_send_datagram(&t, &ts, payload, payload_size, &dsize);
                d2 = g_malloc0(dsize + neg);
                memcpy(d2, d, sizeof(*sc));
                item = (void *)(d2 + sizeof(*sc));
                item->size = KDBUS_ITEM_HEADER_SIZE;
                item->type = KDBUS_ITEM_NEGOTIATE;
                memcpy(d2 + sizeof(*sc) + neg, d + sizeof(*sc), dsize - sizeof(*sc));
                sc = (void *)d2;
                sc->size += neg;
                sc->msg_address += neg;
                km = (void *)(d2 + sc->msg_address);
                km->items[0].vec.offset += neg;         /* the inline payload moved too */
                g_assert_cmpint(native_conn_command(n->a.nc, KDBUS_CMD_SEND, d2, dsize + neg,
                                                    NULL, 0, &reply_size, &fds, &n_fds), ==, 0);
                g_assert_cmpuint(sc->size, ==, sizeof(*sc) + neg);
                g_assert_cmpint(peer_recv(&n->b, 0, 0, NULL, NULL), ==, 0);
        }
}

static void test_byebye(NFixture *n, gconstpointer ctx) {
        struct kdbus_cmd cmd = { .size = sizeof(cmd) };
        TestMsg t = CALL(":1.1", 5);

        peer_hello(&n->f, &n->a, 0);
        peer_hello(&n->f, &n->b, 0);
        g_assert_cmpint(peer_send(&n->b, &t, &(TestSend){ .dst_id = n->a.id, .msg_flags = ~0ull,
                                                          .memfd_idx = -1 }), ==, 0);
        /* kdbus: BYEBYE with messages waiting fails */
        g_assert_cmpint(peer_cmd(&n->a, KDBUS_CMD_BYEBYE, &cmd, sizeof(cmd)), ==, -EBUSY);
        g_assert_cmpint(peer_recv(&n->a, KDBUS_RECV_DROP, 0, NULL, NULL), ==, 0);
        fixture_log_reset(&n->f);
        g_assert_cmpint(peer_cmd(&n->a, KDBUS_CMD_BYEBYE, &cmd, sizeof(cmd)), ==, 0);
        /* the native caller waiting for a reply learns at once, kdbus's way (REPLY_DEAD,
         * tests/unit/native/test-notify.c), not through the handler's dbus1 NoReply */
        assert_log(&n->f, "removed :1.1;");
        {
                const struct kdbus_msg *km;

                g_assert_cmpint(peer_recv(&n->b, 0, 0, &km, NULL), ==, 0);
                g_assert_cmpuint(km->src_id, ==, KDBUS_SRC_ID_KERNEL);
                g_assert_cmpuint(km->items[0].type, ==, KDBUS_ITEM_REPLY_DEAD);
                g_assert_cmpuint(km->cookie_reply, ==, 5);
        }
        g_assert_cmpint(peer_cmd(&n->a, KDBUS_CMD_BYEBYE, &cmd, sizeof(cmd)), ==, -ECONNRESET);
        g_assert_cmpint(peer_recv(&n->a, 0, 0, NULL, NULL), ==, -ECONNRESET);
}

/* A privileged HELLO's CREDS, PIDS and SECLABEL items stand in for the bus's capture
 * (kdbus_conn_new(): a bus proxy connecting for its clients); receivers get those, and no
 * /proc item; an unprivileged HELLO with them: EPERM; a malformed one: EINVAL. */
static void test_fake_meta(NFixture *n, gconstpointer ctx) {
        uint8_t items[256] __attribute__((aligned(8))) = { 0 };
        struct kdbus_item *item = (void *)items;
        struct kdbus_creds fc = { 4201, 4202, 4203, 4204, 4301, 4302, 4303, 4304 };
        struct kdbus_pids fp = { 77, 78, 1 };
        const struct kdbus_msg *km;
        const struct kdbus_item *got;
        TestMsg t = CALL(":1.1", 3);
        TestPeer proxy;
        size_t size;

        item->size = KDBUS_ITEM_HEADER_SIZE + sizeof(fc);
        item->type = KDBUS_ITEM_CREDS;
        memcpy(&item->creds, &fc, sizeof(fc));
        item = KDBUS_ITEM_NEXT(item);
        item->size = KDBUS_ITEM_HEADER_SIZE + sizeof(fp);
        item->type = KDBUS_ITEM_PIDS;
        memcpy(&item->pids, &fp, sizeof(fp));
        item = KDBUS_ITEM_NEXT(item);
        item->size = KDBUS_ITEM_HEADER_SIZE + sizeof("fake_t");
        item->type = KDBUS_ITEM_SECLABEL;
        memcpy(item->str, "fake_t", sizeof("fake_t"));
        item = KDBUS_ITEM_NEXT(item);
        size = (size_t)((uint8_t *)item - items);

        test_attach_recv = KDBUS_ATTACH_CREDS | KDBUS_ATTACH_PIDS | KDBUS_ATTACH_SECLABEL |
                           KDBUS_ATTACH_PID_COMM | KDBUS_ATTACH_AUXGROUPS;
        peer_hello(&n->f, &n->b, 0);                            /* :1.1 */
        test_attach_recv = 0;
        test_hello_extra = items;
        test_hello_extra_size = size;
        /* uid 2000: not privileged */
        g_assert_cmpint(peer_hello_full(&n->f, &proxy, 0, TEST_POOL_SIZE, 2000), ==, -EPERM);
        g_assert_cmpint(peer_hello_full(&n->f, &proxy, 0, TEST_POOL_SIZE, 0), ==, 0);
        test_hello_extra = NULL;
        test_hello_extra_size = 0;

        t.flags = WIRE_FLAG_NO_REPLY_EXPECTED;
        g_assert_cmpint(peer_send(&proxy, &t, &(TestSend){ .dst_id = n->b.id, .msg_flags = ~0ull,
                                                           .memfd_idx = -1 }), ==, 0);
        g_assert_cmpint(peer_recv(&n->b, 0, 0, &km, NULL), ==, 0);
        for (got = KDBUS_ITEM_NEXT(km->items); got->type != KDBUS_ITEM_CREDS;
             got = KDBUS_ITEM_NEXT(got))
                g_assert_true((const uint8_t *)got < (const uint8_t *)km + km->size);
        g_assert_cmpmem(&got->creds, sizeof(fc), &fc, sizeof(fc));
        got = KDBUS_ITEM_NEXT(got);
        g_assert_cmpuint(got->type, ==, KDBUS_ITEM_PIDS);
        g_assert_cmpuint(got->pids.pid, ==, 77);
        g_assert_cmpuint(got->pids.tid, ==, 78);
        g_assert_cmpuint(got->pids.ppid, ==, 1);
        got = KDBUS_ITEM_NEXT(got);
        g_assert_cmpuint(got->type, ==, KDBUS_ITEM_SECLABEL);
        g_assert_cmpstr(got->str, ==, "fake_t");
        /* nothing from /proc and no groups: kdbus collected nothing for it */
        g_assert_cmpuint((const uint8_t *)KDBUS_ITEM_NEXT(got) - (const uint8_t *)km, ==,
                         km->size);
        peer_free(&proxy);

        /* a wrong payload size, or an item twice: EINVAL */
        g_assert_cmpint(hello_item(&n->f, 0, KDBUS_ITEM_PIDS, &fp, sizeof(fp) - 8, NULL), ==,
                        -EINVAL);
        memcpy(items + size, items, KDBUS_ALIGN8(KDBUS_ITEM_HEADER_SIZE + sizeof(fc)));
        test_hello_extra = items;
        test_hello_extra_size = size + KDBUS_ALIGN8(KDBUS_ITEM_HEADER_SIZE + sizeof(fc));
        g_assert_cmpint(peer_hello_full(&n->f, &proxy, 0, TEST_POOL_SIZE, 0), ==, -EINVAL);
        test_hello_extra = NULL;
        test_hello_extra_size = 0;
}

static void test_negotiate(NFixture *n, gconstpointer ctx) {
        struct kdbus_cmd_recv rc = { .size = sizeof(rc), .flags = KDBUS_FLAG_NEGOTIATE };

        peer_hello(&n->f, &n->a, 0);
        g_assert_cmpint(peer_cmd(&n->a, KDBUS_CMD_RECV, &rc, sizeof(rc)), ==, 0);
        g_assert_cmpuint(rc.flags, ==, KDBUS_RECV_PEEK | KDBUS_RECV_DROP | KDBUS_RECV_USE_PRIORITY);
}

/* Native peers HELLO only on a bus that numbers unique names kdbus's way for every peer
 * (bridge/bus.h): on a bus numbered dbus-daemon's way a native peer's ":1.<id>" would name
 * another connection than its legacy peers' names. kdbusd's native sockets set the
 * numbering up first; a bus without that refuses, it does not convert. */
static void test_hello_naming(NFixture *n, gconstpointer ctx) {
        _cleanup_(bus_freep) Bus *bus = NULL;
        struct kdbus_cmd_hello hello = { .size = sizeof(hello), .pool_size = TEST_POOL_SIZE,
                                         .attach_flags_send = _KDBUS_ATTACH_ALL };
        BridgeCreds creds = { .uid = 2000, .gid = 1000, .pidfd = -1 };
        NativeConn *nc = NULL;
        TestPeer p = { 0 };

        g_assert_cmpint(bus_new(NULL, &bus), ==, 0);
        g_assert_cmpint(bus->naming, ==, BUS_NAMING_DBUS_DAEMON);
        g_assert_cmpint(test_native_hello(bus, &creds, &hello, sizeof(hello), &test_peer_ops, &p,
                                          &nc), ==, -EOPNOTSUPP);
        g_assert_null(nc);
        g_assert_cmpuint(bus->next_conn_id, ==, 1);     /* nobody was given a name */
        g_assert_cmpint(bus_set_naming(bus, BUS_NAMING_KDBUS), ==, 0);
        g_assert_cmpint(test_native_hello(bus, &creds, &hello, sizeof(hello), &test_peer_ops, &p,
                                          &nc), ==, 0);
        g_assert_cmpstr(nc->conn->unique_name, ==, ":1.1");
        g_assert_cmpint(bus_set_naming(bus, BUS_NAMING_DBUS_DAEMON), ==, -EBUSY);
        nc = native_conn_free(nc);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
#define ADD(path, fn) g_test_add("/native/" path, NFixture, NULL, nsetup, fn, nteardown)
        ADD("hello/basic", test_hello);
        ADD("hello/byebye", test_byebye);
        ADD("hello/negotiate", test_negotiate);
        ADD("hello/items", test_hello_items);
        ADD("hello/negotiate-item", test_negotiate_item);
        ADD("hello/naming", test_hello_naming);
        ADD("metadata/fake", test_fake_meta);
        return g_test_run();
}
