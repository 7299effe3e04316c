/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * kdbus's name policy under allocation failure (HACKING.md, Allocation failure): the policy database
 * (set, replace), endpoints (make, update, a connection through one, a denied send and
 * acquire with their texts) and policy holders. The n-th malloc/calloc/realloc of the
 * statically linked code fails, for n = 0, 1, ... until a run needs no failure; every step
 * must succeed or return -ENOMEM, leak nothing (ASan) and leave the previous state in
 * force.
 */
#include <errno.h>
#include "bridge/endpoint.h"
#include "bridge/name-acl.h"
#include "bridge/policy.h"
#include "native-fixture.h"

#include "tests/unit/oom-wrap.h"

/* NAME "org.n<i>" (or "org.w<i>.*") with a USER and a WORLD entry, @n times. */
static size_t build_items(uint8_t *buf, unsigned n, unsigned access) {
        size_t at = 0;
        unsigned i;

        for (i = 0; i < n; ++i) {
                struct kdbus_item *item = (void *)(buf + at);
                struct kdbus_policy_access a = { .type = KDBUS_POLICY_ACCESS_USER, .id = 1003,
                                                 .access = access };

                item->type = KDBUS_ITEM_NAME;
                (void) sprintf(item->str, i % 2 ? "org.w%u.*" : "org.n%u", i);
                item->size = KDBUS_ITEM_HEADER_SIZE + strlen(item->str) + 1;
                at += KDBUS_ALIGN8(item->size);
                item = (void *)(buf + at);
                item->type = KDBUS_ITEM_POLICY_ACCESS;
                item->size = KDBUS_ITEM_HEADER_SIZE + sizeof(a);
                memcpy(&item->policy_access, &a, sizeof(a));
                at += KDBUS_ALIGN8(item->size);
                a.type = KDBUS_POLICY_ACCESS_WORLD;
                item = (void *)(buf + at);
                item->type = KDBUS_ITEM_POLICY_ACCESS;
                item->size = KDBUS_ITEM_HEADER_SIZE + sizeof(a);
                memcpy(&item->policy_access, &a, sizeof(a));
                at += KDBUS_ALIGN8(item->size);
        }
        return at;
}

/* One run; *ret_hit: the armed failure happened. */
static void run(int fail_at, bool *ret_hit) {
        static uint8_t items[4096] __attribute__((aligned(8)));
        BridgeCreds c1003 = { .uid = 1003, .gid = 1003 };
        NameAclDb *db = NULL;
        BusEndpoint *ep = NULL;
        BridgeConn *svc, *s;
        Fixture f;
        size_t size;
        int r;

        fixture_setup(&f, NULL);
        f.bus->owner_uid = 4242;
        svc = fixture_conn(&f, 0);
        g_assert_cmpint(bridge_name_acquire(svc, "org.n0", 0), ==, 0);
        g_assert_cmpint(name_acl_db_new(&db), ==, 0);
        size = build_items(items, 4, KDBUS_POLICY_OWN);
        g_assert_cmpint(name_acl_db_set(db, (void *)items, size, 0, true, &f), ==, 0);

        oom_arm(fail_at);

        /* replace: all or nothing */
        size = build_items(items, 6, KDBUS_POLICY_SEE);
        r = name_acl_db_set(db, (void *)items, size, 0, true, &f);
        g_assert_true(r == 0 || r == -ENOMEM);
        g_assert_cmpuint(name_acl_db_query(db, "org.n0", &c1003), ==,
                         r ? NAME_ACL_OWN : NAME_ACL_SEE);
        g_assert_cmpuint(db->n_entries, ==, r ? 4 : 6);

        /* an endpoint, its policy, a connection through it that is denied */
        r = bus_endpoint_new(f.bus, 1000, "1000-oom", &ep);
        g_assert_true(r == 0 || r == -ENOMEM);
        if (r == 0) {
                size = build_items(items, 2, KDBUS_POLICY_SEE);
                r = bus_endpoint_update(ep, (void *)items, size);
                g_assert_true(r == 0 || r == -ENOMEM);
                g_assert_cmpuint(ep->policy->n_entries, ==, r ? 0 : 2);
                BridgeCreds creds = { .uid = 1001, .gid = 1001, .pidfd = -1 };

                s = NULL;
                r = bridge_conn_new(f.bus, &creds, 0, &test_conn_ops, &f.t[1], &f.c[1]);
                g_assert_true(r == 0 || r == -ENOMEM);
                if (r == 0) {
                        s = f.c[1];
                        bridge_conn_set_endpoint(s, ep);
                        r = bridge_conn_hello(s);
                        g_assert_true(r == 0 || r == -ENOMEM);
                }
                if (r == 0) {
                        /* building the message is the test's business: not counted */
                        int left = oom_countdown;
                        BridgeMsg *m;

                        oom_disarm();
                        m = test_msg_new(s, &(TestMsg){ .type = WIRE_MSG_METHOD_CALL,
                                                        .destination = "org.n0" });
                        oom_countdown = left;
                        r = bridge_conn_send(s, m);
                        bridge_msg_unref(m);
                        /* org.n0 is SEE-only (or hidden, when the update failed) */
                        g_assert_true(r == BRIDGE_E_ACCESS_DENIED || r == BRIDGE_E_NAME_UNKNOWN ||
                                      r == -ENOMEM);
                        r = bridge_name_acquire(s, "org.n2", 0);
                        g_assert_true(r == NAME_E_ACCESS_DENIED || r == -ENOMEM);
                }
                bus_endpoint_close(ep);
                g_assert_false(s && bridge_conn_is_active(s));
                ep = bus_endpoint_unref(ep);
        }

        *ret_hit = oom_hit;
        oom_disarm();
        name_acl_db_free(db);
        fixture_teardown(&f, NULL);
}

static void test_oom(void) {
        bool hit = true;
        int n;

        for (n = 0; hit; ++n) {
                g_assert_cmpint(n, <, 1000);
                run(n, &hit);
        }
        g_test_message("%d allocation points failed in turn", n - 1);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/native/endpoint/oom", test_oom);
        return g_test_run();
}
