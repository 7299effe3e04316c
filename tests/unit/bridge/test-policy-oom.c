/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bridge/policy under allocation failure (HACKING.md, Allocation failure): building a db, sealing it,
 * snapshots, reload (bus_set_policy() is all or nothing), the checks and their texts. The
 * n-th malloc/calloc/realloc of the statically linked code fails, for n = 0, 1, ... until
 * a run needs no failure; every step must return -ENOMEM or succeed, leak nothing (ASan)
 * and leave the previous state usable.
 */
#include <errno.h>
#include <stdlib.h>
#include "bridge/policy.h"
#include "fixture.h"

#include "tests/unit/oom-wrap.h"

/* A db with @n rules of every kind, distinct strings. Return: 0 or -ENOMEM. */
static int build_db(unsigned n, PolicyDb **ret) {
        PolicyDb *db = NULL;
        char name[64], iface[64];
        unsigned i;
        int r;

        r = policy_db_new(&db);
        if (r < 0)
                return r;
        for (i = 0; i < n && r == 0; ++i) {
                PolicyRuleSpec send = { .allow = i % 2, .kind = POLICY_RULE_SEND, .name = name,
                                        .interface = iface, .max_fds = UINT32_MAX,
                                        .file = "oom.conf", .line = i };
                PolicyRuleSpec recv = { .allow = true, .kind = POLICY_RULE_RECEIVE,
                                        .member = "M", .path = "/", .max_fds = UINT32_MAX };
                PolicyRuleSpec own = { .allow = true, .kind = POLICY_RULE_OWN, .name = name,
                                       .name_is_prefix = true };

                (void) snprintf(name, sizeof(name), "org.n%u", i);
                (void) snprintf(iface, sizeof(iface), "org.i%u", i);
                r = policy_db_add_rule(db, POLICY_CONTEXT_DEFAULT, 0, &send);
                if (r == 0)
                        r = policy_db_add_rule(db, POLICY_CONTEXT_GROUP, i, &recv);
                if (r == 0)
                        r = policy_db_add_rule(db, POLICY_CONTEXT_USER, 1000, &own);
        }
        if (r == 0)
                r = policy_db_seal(db);
        if (r < 0) {
                policy_db_unref(db);
                return r;
        }
        *ret = db;
        return 0;
}

/* Everything once, @m prepared beforehand; the first -ENOMEM stops it. */
static int scenario(Fixture *f, BridgeMsg *m) {
        static const gid_t gids[] = { 1, 2, 3 };
        PolicyPeer peer = { .uid = 1000, .gids = gids, .n_gids = 3, .comm = "oom" };
        PolicySnapshot *s = NULL;
        PolicyDb *db = NULL, *db2 = NULL;
        char *text = NULL;
        int r;

        r = build_db(20, &db);
        if (r == 0)
                r = policy_snapshot_new(db, &peer, &s);
        if (r == 0) {
                bridge_conn_set_policy(f->c[0], s);
                s = NULL;
                r = policy_snapshot_new(db, &peer, &s);
        }
        if (r == 0) {
                bridge_conn_set_policy(f->c[1], s);
                s = NULL;
                r = bus_set_policy(f->bus, db);
        }
        if (r == 0)
                r = policy_db_dump(db, &text);
        free(text);
        text = NULL;
        if (r == 0) {
                r = bridge_conn_send(f->c[0], m);
                if (r > 0)      /* allowed or denied: both fine here */
                        r = 0;
        }
        if (r == 0) {
                r = bridge_policy_check_own(f->c[0], "org.n5.x");
                if (r > 0)
                        r = 0;
        }
        /* a reload: on failure the old db and snapshots stay */
        if (r == 0)
                r = build_db(5, &db2);
        if (r == 0) {
                const PolicyDb *before = policy_snapshot_get_db(f->c[0]->policy);

                r = bus_set_policy(f->bus, db2);
                if (r < 0)
                        g_assert_true(policy_snapshot_get_db(f->c[0]->policy) == before);
                else
                        g_assert_true(policy_snapshot_get_db(f->c[0]->policy) == db2);
        }
        policy_db_unref(db2);
        policy_db_unref(db);
        return r;
}

static void test_oom(void) {
        int n;

        for (n = 0;; ++n) {
                BridgeMsg *m;
                Fixture f;
                int r;

                fixture_setup(&f, NULL);
                fixture_conn(&f, 0);
                fixture_conn(&f, 1);
                m = test_msg_new(f.c[0], &(TestMsg){ .type = WIRE_MSG_METHOD_CALL,
                        .destination = ":1.2", .interface = "org.i3",
                        .flags = WIRE_FLAG_NO_REPLY_EXPECTED });
                oom_hit = false;
                oom_countdown = n;
                r = scenario(&f, m);
                oom_countdown = -1;
                bridge_msg_unref(m);
                g_assert_true(r == 0 || r == -ENOMEM);
                fixture_teardown(&f, NULL);
                if (!oom_hit) {
                        g_assert_cmpint(r, ==, 0);
                        g_test_message("%d allocation points", n);
                        break;
                }
        }
        g_assert_cmpint(n, >, 10);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/bridge/policy-oom/every-allocation", test_oom);
        return g_test_run();
}
