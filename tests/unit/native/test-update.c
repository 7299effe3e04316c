/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * UPDATE (attach flags, description) and BUS_CREATOR_INFO, like kdbus's selftests
 * (test-attach-flags.c, test-bus.c): the new flags apply to the next message, bad and
 * duplicate items are refused without changing anything, policy-holder items EOPNOTSUPP.
 */
#include <unistd.h>
#include "conn-fixture.h"

/* UPDATE with up to two u64 items (type 0: none) and an optional description. */
static int update(TestPeer *p, uint64_t t1, uint64_t v1, uint64_t t2, uint64_t v2,
                  const char *description) {
        uint8_t buf[512] __attribute__((aligned(8))) = { 0 };
        struct kdbus_cmd *cmd = (void *)buf;
        struct kdbus_item *item = cmd->items;

        if (t1) {
                item->size = KDBUS_ITEM_HEADER_SIZE + 8;
                item->type = t1;
                item->data64[0] = v1;
                item = KDBUS_ITEM_NEXT(item);
        }
        if (t2) {
                item->size = KDBUS_ITEM_HEADER_SIZE + 8;
                item->type = t2;
                item->data64[0] = v2;
                item = KDBUS_ITEM_NEXT(item);
        }
        if (description) {
                item->size = KDBUS_ITEM_HEADER_SIZE + strlen(description) + 1;
                item->type = KDBUS_ITEM_CONN_DESCRIPTION;
                strcpy(item->str, description);
                item = KDBUS_ITEM_NEXT(item);
        }
        cmd->size = (uint64_t)((uint8_t *)item - buf);
        return peer_cmd(p, KDBUS_CMD_UPDATE, cmd, cmd->size);
}

/* an item type as a bit of a set */
#define BIT(type) ((type) == KDBUS_ITEM_ATTACH_FLAGS_SEND ? 1ull << 63 : \
                   1ull << (((type) - KDBUS_ITEM_TIMESTAMP) & 31))

/* a -> b, the metadata item types b got after PAYLOAD_OFF, as a bit set of type - base. */
static uint64_t a_to_b_items(NFixture *n, uint32_t serial) {
        TestMsg t = { .type = WIRE_MSG_METHOD_CALL, .serial = serial, .destination = ":1.2",
                      .member = "M", .flags = WIRE_FLAG_NO_REPLY_EXPECTED };
        const struct kdbus_msg *km;
        const struct kdbus_item *item;
        uint64_t set = 0;

        g_assert_cmpint(peer_send(&n->a, &t, &(TestSend){ .dst_id = n->b.id, .msg_flags = ~0ull,
                                                          .memfd_idx = -1 }), ==, 0);
        g_assert_cmpint(peer_recv(&n->b, 0, 0, &km, NULL), ==, 0);
        for (item = KDBUS_ITEM_NEXT(km->items); (const uint8_t *)item < (const uint8_t *)km + km->size;
             item = KDBUS_ITEM_NEXT(item))
                set |= BIT(item->type);
        return set;
}

static void test_update_flags(NFixture *n, gconstpointer ctx) {
        struct kdbus_cmd_info info = { .size = sizeof(info), .id = 1,
                                       .attach_flags = KDBUS_ATTACH_CONN_DESCRIPTION };
        const struct kdbus_info *ki;

        test_attach_send = 0;
        peer_hello(&n->f, &n->a, 0);                    /* :1.1 consents to nothing */
        test_attach_send = _KDBUS_ATTACH_ALL;
        peer_hello(&n->f, &n->b, 0);                    /* :1.2 wants nothing */
        g_assert_cmpuint(a_to_b_items(n, 1), ==, 0);
        /* b now wants CREDS: a declines */
        g_assert_cmpint(update(&n->b, KDBUS_ITEM_ATTACH_FLAGS_RECV, KDBUS_ATTACH_CREDS, 0, 0, NULL),
                        ==, 0);
        g_assert_cmpuint(a_to_b_items(n, 2), ==, BIT(KDBUS_ITEM_ATTACH_FLAGS_SEND));
        /* a consents (ANY = every flag) */
        g_assert_cmpint(update(&n->a, KDBUS_ITEM_ATTACH_FLAGS_SEND, _KDBUS_ATTACH_ANY, 0, 0,
                               "renamed"), ==, 0);
        g_assert_cmpuint(n->a.nc->attach_flags_send, ==, _KDBUS_ATTACH_ALL);
        g_assert_cmpuint(a_to_b_items(n, 3), ==, BIT(KDBUS_ITEM_CREDS));
        g_assert_cmpint(peer_cmd(&n->b, KDBUS_CMD_CONN_INFO, &info, sizeof(info)), ==, 0);
        ki = (const void *)(n->b.pool + info.offset);
        g_assert_cmpuint(ki->items[0].type, ==, KDBUS_ITEM_CONN_DESCRIPTION);
        g_assert_cmpstr(ki->items[0].str, ==, "renamed");

        /* bad input changes nothing */
        g_assert_cmpint(update(&n->a, KDBUS_ITEM_ATTACH_FLAGS_SEND, 0, KDBUS_ITEM_ATTACH_FLAGS_SEND,
                               0, NULL), ==, -EINVAL);           /* duplicate */
        g_assert_cmpint(update(&n->a, KDBUS_ITEM_ATTACH_FLAGS_SEND, 0, KDBUS_ITEM_ATTACH_FLAGS_RECV,
                               1ull << 40, NULL), ==, -EINVAL);  /* unknown bit */
        g_assert_cmpint(update(&n->a, KDBUS_ITEM_ATTACH_FLAGS_SEND, 0, KDBUS_ITEM_BLOOM_MASK, 0,
                               NULL), ==, -EINVAL);
        g_assert_cmpint(update(&n->a, KDBUS_ITEM_ATTACH_FLAGS_SEND, 0, KDBUS_ITEM_POLICY_ACCESS,
                               0, NULL), ==, -EOPNOTSUPP);
        g_assert_cmpint(update(&n->a, KDBUS_ITEM_ATTACH_FLAGS_SEND, 0, 0, 0, ""), ==, -EINVAL);
        /* a description as HELLO takes it (kdbus_item_validate_name()) */
        g_assert_cmpint(update(&n->a, KDBUS_ITEM_ATTACH_FLAGS_SEND, 0, 0, 0, "renamed."), ==,
                        -EINVAL);
        g_assert_cmpint(update(&n->a, KDBUS_ITEM_ATTACH_FLAGS_SEND, 0, 0, 0, "re named"), ==,
                        -EINVAL);
        g_assert_cmpint(update(&n->a, KDBUS_ITEM_ATTACH_FLAGS_SEND, 0, 0, 0,
                               "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"),
                        ==, -ENAMETOOLONG);
        g_assert_cmpuint(n->a.nc->attach_flags_send, ==, _KDBUS_ATTACH_ALL);
        g_assert_cmpstr(n->a.nc->description, ==, "renamed");
        {
                struct kdbus_cmd cmd = { .size = sizeof(cmd), .flags = 1 };

                g_assert_cmpint(peer_cmd(&n->a, KDBUS_CMD_UPDATE, &cmd, sizeof(cmd)), ==, -EINVAL);
        }
        /* an empty UPDATE is fine */
        g_assert_cmpint(update(&n->a, 0, 0, 0, 0, NULL), ==, 0);
}

static void test_bus_creator_info(NFixture *n, gconstpointer ctx) {
        struct kdbus_cmd_info info = { .size = sizeof(info),
                                       .attach_flags = KDBUS_ATTACH_CREDS | KDBUS_ATTACH_PIDS |
                                                       KDBUS_ATTACH_EXE };
        g_autofree char *name = g_strdup_printf("%u-kdbus", (unsigned)geteuid());
        const struct kdbus_info *ki;
        const struct kdbus_item *item;

        peer_hello(&n->f, &n->a, 0);
        g_assert_cmpint(peer_cmd(&n->a, KDBUS_CMD_BUS_CREATOR_INFO, &info, sizeof(info)), ==, 0);
        ki = (const void *)(n->a.pool + info.offset);
        g_assert_cmpuint(ki->size, ==, info.info_size);
        /* kdbus_cmd_bus_creator_info(): id (0 here: below every connection id, as kdbus's
         * bus id was), the BUS_MAKE flags (none: kdbusd's own bus), MAKE_NAME as a plain
         * string item */
        g_assert_cmpuint(ki->id, ==, 0);
        g_assert_cmpuint(ki->flags, ==, 0);
        item = ki->items;
        g_assert_cmpuint(item->type, ==, KDBUS_ITEM_MAKE_NAME);
        g_assert_cmpuint(item->size, ==, KDBUS_ITEM_HEADER_SIZE + strlen(name) + 1);
        g_assert_cmpstr(item->str, ==, name);
        item = KDBUS_ITEM_NEXT(item);
        /* the bus's bloom parameters, as HELLO gives them (our addition to kdbus's info) */
        g_assert_cmpuint(item->type, ==, KDBUS_ITEM_BLOOM_PARAMETER);
        g_assert_cmpuint(item->bloom_parameter.size, ==, BUS_BLOOM_SIZE);
        g_assert_cmpuint(item->bloom_parameter.n_hash, ==, BUS_BLOOM_N_HASH);
        item = KDBUS_ITEM_NEXT(item);
        g_assert_cmpuint(item->type, ==, KDBUS_ITEM_ATTACH_FLAGS_SEND);
        g_assert_cmpuint(item->data64[0], ==, KDBUS_ATTACH_EXE);
        item = KDBUS_ITEM_NEXT(item);
        g_assert_cmpuint(item->type, ==, KDBUS_ITEM_CREDS);
        g_assert_cmpuint(item->creds.uid, ==, getuid());
        item = KDBUS_ITEM_NEXT(item);
        g_assert_cmpuint(item->type, ==, KDBUS_ITEM_PIDS);
        g_assert_cmpuint(item->pids.pid, ==, (uint64_t)getpid());
        g_assert_cmpuint((const uint8_t *)KDBUS_ITEM_NEXT(item) - (const uint8_t *)ki, ==, ki->size);
        g_assert_cmpint(peer_free_offset(&n->a, info.offset), ==, 0);
        /* bad input */
        info.flags = 1;
        g_assert_cmpint(peer_cmd(&n->a, KDBUS_CMD_BUS_CREATOR_INFO, &info, sizeof(info)), ==, -EINVAL);
        info.flags = 0;
        info.attach_flags = 1ull << 50;
        g_assert_cmpint(peer_cmd(&n->a, KDBUS_CMD_BUS_CREATOR_INFO, &info, sizeof(info)), ==, -EINVAL);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
#define ADD(path, fn) g_test_add("/native/" path, NFixture, NULL, nsetup, fn, nteardown)
        ADD("update/attach-flags-description", test_update_flags);
        ADD("update/bus-creator-info", test_bus_creator_info);
        return g_test_run();
}
