/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * kdbus's name policy on the core: the policy database (bridge/name-acl.c), custom
 * endpoints (bridge/endpoint.c, name-policy.c, native/endpoint.c) for legacy and native
 * connections, and policy holders. Like kdbus's test-policy / test-endpoint selftests, on
 * the core directly. Connections of the bridge fixture have uid 1000 + i (unprivileged:
 * the bus's owner is this process's euid, or 0).
 */
#include <fcntl.h>
#include "bridge/endpoint.h"
#include "bridge/match.h"
#include "bridge/name-acl.h"
#include "bridge/policy.h"
#include "native-fixture.h"
#include "native/conn.h"
#include "native/endpoint.h"

#define CALL(dst, ser) { .type = WIRE_MSG_METHOD_CALL, .serial = (ser), .destination = (dst), \
                         .interface = "t.I", .member = "Call" }

typedef struct NFixture {
        Fixture f;
        TestPeer a, b;
        BusEndpoint *ep;
} NFixture;

static void nsetup(NFixture *n, gconstpointer ctx) {
        fixture_setup(&n->f, ctx);
        n->f.bus->owner_uid = 4242;     /* a uid no test connection has */
}

static void nteardown(NFixture *n, gconstpointer ctx) {
        if (n->a.nc)
                peer_free(&n->a);
        if (n->b.nc)
                peer_free(&n->b);
        if (n->ep)
                bus_endpoint_close(n->ep);
        n->ep = bus_endpoint_unref(n->ep);
        fixture_teardown(&n->f, ctx);
}

/* Items for name_acl_db_set(): "n:NAME", "u:UID:ACCESS", "g:GID:ACCESS", "w:ACCESS",
 * and for the xdg mode "c:RULE", "b:RULE". */
typedef struct Items {
        uint8_t buf[2048] __attribute__((aligned(8)));
        size_t size;
} Items;

static void items_build(Items *it, const char *const *spec) {
        memset(it, 0, sizeof(*it));
        for (; *spec; ++spec) {
                struct kdbus_item *item = (void *)(it->buf + it->size);
                unsigned id = 0, access = 0;

                if ((*spec)[0] == 'n') {
                        item->type = KDBUS_ITEM_NAME;
                        item->size = KDBUS_ITEM_HEADER_SIZE + strlen(*spec + 2) + 1;
                        strcpy(item->str, *spec + 2);
                } else if ((*spec)[0] == 'c' || (*spec)[0] == 'b') {
                        /* "c:RULE" / "b:RULE": xdg-dbus-proxy's --call / --broadcast */
                        struct kdbus_policy_rule *pr = (void *)item->data;

                        item->type = KDBUS_ITEM_POLICY_RULE;
                        item->size = KDBUS_ITEM_HEADER_SIZE + sizeof(*pr) + strlen(*spec + 2) + 1;
                        pr->type = (*spec)[0] == 'c' ? KDBUS_POLICY_RULE_CALL :
                                                       KDBUS_POLICY_RULE_BROADCAST;
                        strcpy(pr->rule, *spec + 2);
                } else {
                        item->type = KDBUS_ITEM_POLICY_ACCESS;
                        item->size = KDBUS_ITEM_HEADER_SIZE + sizeof(struct kdbus_policy_access);
                        if ((*spec)[0] == 'w') {
                                g_assert_cmpint(sscanf(*spec, "w:%u", &access), ==, 1);
                                item->policy_access.type = KDBUS_POLICY_ACCESS_WORLD;
                        } else {
                                g_assert_cmpint(sscanf(*spec + 2, "%u:%u", &id, &access), ==, 2);
                                item->policy_access.type = (*spec)[0] == 'u' ?
                                        KDBUS_POLICY_ACCESS_USER : KDBUS_POLICY_ACCESS_GROUP;
                        }
                        item->policy_access.id = id;
                        /* specs give levels 1..3 (see, talk, own); kdbus's ABI counts
                         * from KDBUS_POLICY_SEE = 0 */
                        item->policy_access.access = (uint64_t)access - 1;
                }
                it->size += KDBUS_ALIGN8(item->size);
        }
}

static int db_set(NameAclDb *db, const void *owner, unsigned max, bool wild,
                  const char *const *spec) {
        Items it;

        items_build(&it, spec);
        return name_acl_db_set(db, (const void *)it.buf, it.size, max, wild, owner);
}

#define SEE NAME_ACL_SEE
#define TALK NAME_ACL_TALK
#define OWN NAME_ACL_OWN

/* ---- the database ---- */

static void test_db(NFixture *n, gconstpointer ctx) {
        gid_t groups[] = { 50, 60 };
        BridgeCreds u1000 = { .uid = 1000, .gid = 100, .groups = groups, .n_groups = 2 };
        BridgeCreds u2000 = { .uid = 2000, .gid = 200 };
        NameAclDb *db;
        int o1, o2;

        g_assert_cmpint(name_acl_db_new(&db), ==, 0);
        g_assert_cmpint(db_set(db, &o1, 0, true, (const char *[]){
                "n:org.a", "u:1000:1", "g:60:2", "w:1",
                "n:org.w.*", "u:2000:3",
                "n:org.w.x", "u:1000:1", NULL }), ==, 0);
        /* the highest level granted: uid SEE, supplementary group TALK */
        g_assert_cmpuint(name_acl_db_query(db, "org.a", &u1000), ==, TALK);
        g_assert_cmpuint(name_acl_db_query(db, "org.a", &u2000), ==, SEE);
        /* a wildcard covers one more element; an exact entry decides alone */
        g_assert_cmpuint(name_acl_db_query(db, "org.w.y", &u2000), ==, OWN);
        g_assert_cmpuint(name_acl_db_query(db, "org.w.y.z", &u2000), ==, NAME_ACL_NONE);
        g_assert_cmpuint(name_acl_db_query(db, "org.w", &u2000), ==, NAME_ACL_NONE);
        g_assert_cmpuint(name_acl_db_query(db, "org.w.x", &u2000), ==, NAME_ACL_NONE);
        g_assert_cmpuint(name_acl_db_query(db, "org.w.x", &u1000), ==, SEE);
        g_assert_cmpuint(name_acl_db_query(db, "org.none", &u1000), ==, NAME_ACL_NONE);

        /* errors leave the db unchanged */
        g_assert_cmpint(db_set(db, &o1, 0, true, (const char *[]){ "u:1000:1", NULL }), ==, -EINVAL);
        g_assert_cmpint(db_set(db, &o1, 0, true, (const char *[]){ "n:nodots", NULL }), ==, -EINVAL);
        g_assert_cmpint(db_set(db, &o1, 0, true, (const char *[]){ "n:org.q", "u:1:4", NULL }),
                        ==, -EINVAL);
        g_assert_cmpint(db_set(db, &o1, 0, false, (const char *[]){ "n:org.q.*", NULL }),
                        ==, -EINVAL);
        g_assert_cmpint(db_set(db, &o1, 1, true, (const char *[]){ "n:org.q", "n:org.r", NULL }),
                        ==, -E2BIG);
        g_assert_cmpint(db_set(db, &o1, 0, true, (const char *[]){ "n:org.q", "n:org.q", NULL }),
                        ==, -EEXIST);
        g_assert_cmpint(db_set(db, &o2, 0, true, (const char *[]){ "n:org.a", NULL }), ==, -EEXIST);
        g_assert_cmpuint(db->n_entries, ==, 3);
        g_assert_cmpuint(name_acl_db_query(db, "org.a", &u1000), ==, TALK);

        /* another owner's names coexist; set replaces one owner's entries, remove drops them */
        g_assert_cmpint(db_set(db, &o2, 0, true, (const char *[]){ "n:org.b", "w:3", NULL }), ==, 0);
        g_assert_cmpint(db_set(db, &o1, 0, true, (const char *[]){ "n:org.c", "w:2", NULL }), ==, 0);
        g_assert_cmpuint(name_acl_db_query(db, "org.a", &u1000), ==, NAME_ACL_NONE);
        g_assert_cmpuint(name_acl_db_query(db, "org.c", &u1000), ==, TALK);
        name_acl_db_remove_owner(db, &o2);
        g_assert_cmpuint(name_acl_db_query(db, "org.b", &u1000), ==, NAME_ACL_NONE);
        g_assert_cmpuint(db->n_entries, ==, 1);
        name_acl_db_free(db);
}

/* ---- endpoints, legacy connections ---- */

static void make_endpoint(NFixture *n, const char *const *policy) {
        Items it;

        g_assert_cmpint(bus_endpoint_new(n->f.bus, 1000, "1000-sandbox", &n->ep), ==, 0);
        items_build(&it, policy);
        g_assert_cmpint(bus_endpoint_update(n->ep, (const void *)it.buf, it.size), ==, 0);
}

/* Connection @i through the endpoint (not hello'd by the fixture). */
static BridgeConn *ep_conn(NFixture *n, unsigned i) {
        BridgeConn *c = fixture_conn_uid(&n->f, i, -1, 0, false);

        bridge_conn_set_endpoint(c, n->ep);
        g_assert_cmpint(bridge_conn_hello(c), ==, 0);
        return c;
}

static void add_match_all(BridgeConn *c) {
        BridgeMatchKeys keys = { .type = 0, .eavesdrop = true };
        BridgeMatchRule *rule = NULL;

        g_assert_cmpint(bridge_match_rule_new(&keys, &rule), ==, 0);
        g_assert_cmpint(bridge_conn_add_match(c, rule), ==, 0);
}

static void test_endpoint_make(NFixture *n, gconstpointer ctx) {
        BusEndpoint *ep = NULL;

        g_assert_cmpint(bus_endpoint_new(n->f.bus, 1000, "1001-x", &ep), ==, -EINVAL);
        g_assert_cmpint(bus_endpoint_new(n->f.bus, 1000, "1000-", &ep), ==, -EINVAL);
        g_assert_cmpint(bus_endpoint_new(n->f.bus, 1000, "1000-a/b", &ep), ==, -EINVAL);
        /* kdbus_item_validate_name(): '-' and '.' not last */
        g_assert_cmpint(bus_endpoint_new(n->f.bus, 1000, "1000-a-", &ep), ==, -EINVAL);
        g_assert_cmpint(bus_endpoint_new(n->f.bus, 1000, "1000-a.", &ep), ==, -EINVAL);
        g_assert_cmpint(bus_endpoint_new(n->f.bus, 1000, "1000-ok_1.x", &n->ep), ==, 0);
        g_assert_cmpint(bus_endpoint_new(n->f.bus, 1000, "1000-ok_1.x", &ep), ==, -EEXIST);
        g_assert_true(bus_find_endpoint(n->f.bus, "1000-ok_1.x") == n->ep);
        g_assert_null(ep);
}

static void test_endpoint_legacy(NFixture *n, gconstpointer ctx) {
        BridgeConn *a = fixture_conn(&n->f, 0), *b = fixture_conn(&n->f, 1);
        BridgeConn *c = fixture_conn(&n->f, 2), *s;
        uint32_t serial;
        TestMsg sig = { .type = WIRE_MSG_SIGNAL, .interface = "t.I", .member = "Sig" };
        TestMsg reply = { .type = WIRE_MSG_METHOD_RETURN, .reply_serial = 5 };
        TestMsg noc = { .type = WIRE_MSG_SIGNAL, .interface = "org.freedesktop.DBus",
                        .member = "NameOwnerChanged", .path = "/org/freedesktop/DBus" };
        BridgeMsg *m;

        g_assert_cmpint(bridge_name_acquire(a, "org.a", 0), ==, 0);
        g_assert_cmpint(bridge_name_acquire(b, "org.b", 0), ==, 0);
        g_assert_cmpint(bridge_name_acquire(c, "org.c", 0), ==, 0);
        make_endpoint(n, (const char *[]){ "n:org.a", "w:2", "n:org.b", "w:1",
                                           "n:org.mine.*", "u:1003:3", NULL });
        s = ep_conn(n, 3);
        add_match_all(s);

        /* SEE: names, and connections through one of their names */
        g_assert_true(bridge_conn_can_see_name(s, "org.a"));
        g_assert_true(bridge_conn_can_see_name(s, "org.b"));
        g_assert_false(bridge_conn_can_see_name(s, "org.c"));
        g_assert_true(bridge_conn_can_see_conn(s, b));
        g_assert_false(bridge_conn_can_see_conn(s, c));
        g_assert_true(bridge_conn_can_see_conn(s, s));
        g_assert_true(bridge_conn_can_see_name(a, "org.c"));   /* off the endpoint: all */

        /* TALK: the allowed service, by name and by unique name; its reply passes */
        g_assert_cmpint(test_send(s, &(TestMsg)CALL("org.a", 5)), ==, 0);
        g_assert_cmpstr(test_pop(a, NULL), ==, "Call");
        reply.destination = s->unique_name;
        g_assert_cmpint(test_send(a, &reply), ==, 0);
        g_assert_cmpstr(test_pop(s, &serial), ==, "(reply)");
        g_assert_cmpuint(serial, ==, 5);
        g_assert_cmpint(test_send(s, &(TestMsg)CALL(a->unique_name, 6)), ==, 0);
        g_assert_cmpstr(test_pop(a, NULL), ==, "Call");
        /* seen but not talkable: AccessDenied with a text; hidden: as if nobody owned it */
        g_assert_cmpint(test_send(s, &(TestMsg)CALL("org.b", 7)), ==, BRIDGE_E_ACCESS_DENIED);
        g_assert_nonnull(strstr(bridge_conn_get_denial(s), "not allowed to talk to \"org.b\""));
        g_assert_cmpint(test_send(s, &(TestMsg)CALL("org.c", 8)), ==, BRIDGE_E_NAME_UNKNOWN);
        g_assert_cmpint(test_send(s, &(TestMsg)CALL(c->unique_name, 9)), ==, BRIDGE_E_PEER_UNKNOWN);
        g_assert_cmpstr(test_pop(b, NULL), ==, "");
        g_assert_cmpstr(test_pop(c, NULL), ==, "");
        /* a unicast signal needs TALK as a call does: to a SEE-only or hidden peer it is
         * dropped without an answer (xdg-dbus-proxy drops it too) */
        sig.destination = "org.b";
        g_assert_cmpint(test_send(s, &sig), ==, 0);
        sig.destination = b->unique_name;
        g_assert_cmpint(test_send(s, &sig), ==, 0);
        g_assert_cmpstr(test_pop(b, NULL), ==, "");
        sig.destination = "org.a";
        g_assert_cmpint(test_send(s, &sig), ==, 0);
        g_assert_cmpstr(test_pop(a, NULL), ==, "Sig");
        sig.destination = NULL;
        /* no eavesdropping through an endpoint (its rule says eavesdrop='true') */
        g_assert_cmpint(test_send(a, &(TestMsg)CALL("org.c", 12)), ==, 0);
        g_assert_cmpstr(test_pop(c, NULL), ==, "Call");
        g_assert_cmpstr(test_pop(s, NULL), ==, "");
        /* others may call into the sandbox */
        g_assert_cmpint(test_send(c, &(TestMsg)CALL(s->unique_name, 10)), ==, 0);
        g_assert_cmpstr(test_pop(s, NULL), ==, "Call");

        /* OWN: only what the endpoint grants */
        g_assert_cmpint(bridge_name_acquire(s, "org.a", 0), ==, NAME_E_ACCESS_DENIED);
        g_assert_nonnull(strstr(bridge_conn_get_denial(s), "not allowed to own the service"));
        g_assert_cmpint(bridge_name_acquire(s, "org.mine.app", 0), ==, 0);

        /* broadcasts: only from senders it may talk to */
        g_assert_cmpint(test_send(c, &sig), ==, 0);
        g_assert_cmpstr(test_pop(s, NULL), ==, "");
        g_assert_cmpint(test_send(b, &sig), ==, 0);
        g_assert_cmpstr(test_pop(s, NULL), ==, "");
        g_assert_cmpint(test_send(a, &sig), ==, 0);
        g_assert_cmpstr(test_pop(s, NULL), ==, "Sig");
        /* the bus's NameOwnerChanged: only for names it sees; never for unique names */
        noc.args[0] = "org.c", noc.args[1] = "", noc.args[2] = ":1.3";
        m = test_msg_new(NULL, &noc);
        g_assert_cmpint(bus_broadcast(n->f.bus, m), ==, 0);
        bridge_msg_unref(m);
        g_assert_cmpstr(test_pop(s, NULL), ==, "");
        noc.args[0] = ":1.3", noc.args[1] = "", noc.args[2] = ":1.3";
        m = test_msg_new(NULL, &noc);
        g_assert_cmpint(bus_broadcast(n->f.bus, m), ==, 0);
        bridge_msg_unref(m);
        g_assert_cmpstr(test_pop(s, NULL), ==, "");
        noc.args[0] = "org.b", noc.args[1] = "", noc.args[2] = ":1.2";
        m = test_msg_new(NULL, &noc);
        g_assert_cmpint(bus_broadcast(n->f.bus, m), ==, 0);
        bridge_msg_unref(m);
        g_assert_cmpstr(test_pop(s, NULL), ==, "NameOwnerChanged");

        /* a new policy applies at once; closing disconnects the sandbox */
        g_assert_cmpint(bus_endpoint_update(n->ep, NULL, 0), ==, 0);
        g_assert_cmpint(test_send(s, &(TestMsg)CALL("org.a", 11)), ==, BRIDGE_E_NAME_UNKNOWN);
        bus_endpoint_close(n->ep);
        g_assert_false(bridge_conn_is_active(s));
        g_assert_null(bus_find_endpoint(n->f.bus, "1000-sandbox"));
        g_assert_true(bridge_conn_is_active(a));
}

/* xdg-dbus-proxy's rule language on an endpoint (kdbus-proxy's), enforced by the bus on
 * its live state: wildcards covering the name itself and every depth, --call and
 * --broadcast rules, callers visible while connected, --sloppy-names, updates at once. */
static void test_endpoint_xdg(NFixture *n, gconstpointer ctx) {
        BridgeConn *portal = fixture_conn(&n->f, 0), *svc = fixture_conn(&n->f, 1);
        BridgeConn *bc = fixture_conn(&n->f, 2), *hidden = fixture_conn(&n->f, 3), *s;
        TestMsg call = { .type = WIRE_MSG_METHOD_CALL, .serial = 20, .destination = "org.call.Svc",
                         .path = "/obj/x", .interface = "org.call.I", .member = "Allowed" };
        TestMsg sig = { .type = WIRE_MSG_SIGNAL, .interface = "t.I", .member = "Sig" };
        TestMsg noc = { .type = WIRE_MSG_SIGNAL, .interface = "org.freedesktop.DBus",
                        .member = "NameOwnerChanged", .path = "/org/freedesktop/DBus" };
        const char *const rules[] = { "n:org.example.App.*", "w:3",
                                      "n:org.freedesktop.portal.*", "w:2",
                                      "n:org.call.*", "c:org.call.I.Allowed@/obj/*",
                                      "n:org.bc.Sender", "b:@/sig/*", NULL };
        char hidden_name[24];
        BridgeMsg *m;
        Items it;

        g_assert_cmpint(bridge_name_acquire(portal, "org.freedesktop.portal.Desktop", 0), ==, 0);
        g_assert_cmpint(bridge_name_acquire(svc, "org.call.Svc", 0), ==, 0);
        g_assert_cmpint(bridge_name_acquire(bc, "org.bc.Sender", 0), ==, 0);
        g_assert_cmpint(bus_endpoint_new(n->f.bus, 1000, "1000-xdg", &n->ep), ==, 0);
        items_build(&it, rules);
        /* rules need the xdg mode */
        g_assert_cmpint(bus_endpoint_update(n->ep, (const void *)it.buf, it.size), ==, -EINVAL);
        g_assert_cmpint(bus_endpoint_update_flags(n->ep, BUS_ENDPOINT_POLICY_XDG,
                                                  (const void *)it.buf, it.size), ==, 0);
        s = fixture_conn_uid(&n->f, 4, -1, 0, false);
        bridge_conn_set_endpoint(s, n->ep);
        g_assert_cmpint(bridge_conn_hello(s), ==, 0);
        add_match_all(s);

        /* "a.b.*" covers a.b and every name below it (kdbus's covers one element) */
        g_assert_cmpint(bridge_name_acquire(s, "org.example.App", 0), ==, 0);
        g_assert_cmpint(bridge_name_acquire(s, "org.example.App.Sub.Deep", 0), ==, 0);
        g_assert_cmpint(bridge_name_acquire(s, "org.example.Apple", 0), ==, NAME_E_ACCESS_DENIED);
        g_assert_true(bridge_conn_can_see_name(s, "org.freedesktop.portal"));
        g_assert_true(bridge_conn_can_see_name(s, "org.freedesktop.portal.Desktop"));
        g_assert_false(bridge_conn_can_see_name(s, "org.freedesktop.portalx"));
        /* a name with only rules is visible */
        g_assert_true(bridge_conn_can_see_name(s, "org.call.Svc"));
        g_assert_true(bridge_conn_can_see_conn(s, svc));

        /* --call: only the methods and paths the rule names */
        g_assert_cmpint(test_send(s, &call), ==, 0);
        g_assert_cmpstr(test_pop(svc, NULL), ==, "Allowed");
        call.member = "Other";
        g_assert_cmpint(test_send(s, &call), ==, BRIDGE_E_ACCESS_DENIED);
        call.member = "Allowed", call.path = "/elsewhere";
        g_assert_cmpint(test_send(s, &call), ==, BRIDGE_E_ACCESS_DENIED);
        call.path = "/obj";
        g_assert_cmpint(test_send(s, &call), ==, 0);
        g_assert_cmpstr(test_pop(svc, NULL), ==, "Allowed");
        /* TALK: anything */
        call.destination = "org.freedesktop.portal.Desktop", call.member = "Any";
        g_assert_cmpint(test_send(s, &call), ==, 0);
        g_assert_cmpstr(test_pop(portal, NULL), ==, "Any");

        /* --broadcast: only what the rule names; TALK: all */
        sig.path = "/sig/a";
        g_assert_cmpint(test_send(bc, &sig), ==, 0);
        g_assert_cmpstr(test_pop(s, NULL), ==, "Sig");
        sig.path = "/other";
        g_assert_cmpint(test_send(bc, &sig), ==, 0);
        g_assert_cmpstr(test_pop(s, NULL), ==, "");
        g_assert_cmpint(test_send(portal, &sig), ==, 0);
        g_assert_cmpstr(test_pop(s, NULL), ==, "Sig");
        /* and a broadcast rule gives no calls */
        call.destination = "org.bc.Sender";
        g_assert_cmpint(test_send(s, &call), ==, BRIDGE_E_ACCESS_DENIED);

        /* a hidden peer that calls the sandbox becomes visible to it while connected: its
         * unique name, unicast signals back; no calls (SEE, not TALK) */
        g_strlcpy(hidden_name, hidden->unique_name, sizeof(hidden_name));
        g_assert_false(bridge_conn_can_see_conn(s, hidden));
        call.destination = s->unique_name, call.member = "In";
        g_assert_cmpint(test_send(hidden, &call), ==, 0);
        g_assert_cmpstr(test_pop(s, NULL), ==, "In");
        g_assert_true(bridge_conn_can_see_conn(s, hidden));
        sig.destination = hidden_name;
        g_assert_cmpint(test_send(s, &sig), ==, 0);
        g_assert_cmpstr(test_pop(hidden, NULL), ==, "Sig");
        sig.destination = NULL;
        call.destination = hidden_name, call.member = "Back";
        g_assert_cmpint(test_send(s, &call), ==, BRIDGE_E_ACCESS_DENIED);
        /* the bus tells it when the caller leaves, and nothing stays granted */
        noc.args[0] = hidden_name, noc.args[1] = hidden_name, noc.args[2] = "";
        m = test_msg_new(NULL, &noc);
        g_assert_cmpint(bus_broadcast(n->f.bus, m), ==, 0);
        bridge_msg_unref(m);
        g_assert_cmpstr(test_pop(s, NULL), ==, "NameOwnerChanged");
        bridge_conn_disconnect(hidden);
        g_assert_cmpint(test_send(s, &call), ==, BRIDGE_E_PEER_UNKNOWN);
        m = test_msg_new(NULL, &noc);
        g_assert_cmpint(bus_broadcast(n->f.bus, m), ==, 0);
        bridge_msg_unref(m);
        g_assert_cmpstr(test_pop(s, NULL), ==, "");

        /* --sloppy-names: every unique name visible */
        g_assert_false(bridge_conn_can_see_conn(s, fixture_conn(&n->f, 5)));
        g_assert_cmpint(bus_endpoint_update_flags(n->ep, BUS_ENDPOINT_POLICY_XDG |
                                                  BUS_ENDPOINT_SLOPPY_NAMES,
                                                  (const void *)it.buf, it.size), ==, 0);
        g_assert_true(bridge_conn_can_see_conn(s, n->f.c[5]));

        /* an update applies at once: without its --own, the app cannot take its name again */
        items_build(&it, (const char *const[]){ "n:org.freedesktop.portal.*", "w:2", NULL });
        g_assert_cmpint(bus_endpoint_update_flags(n->ep, BUS_ENDPOINT_POLICY_XDG,
                                                  (const void *)it.buf, it.size), ==, 0);
        g_assert_cmpint(bridge_name_acquire(s, "org.example.App.Two", 0), ==, NAME_E_ACCESS_DENIED);
        g_assert_false(bridge_conn_can_see_name(s, "org.call.Svc"));
}

/* kdbus: an endpoint's connections count on the endpoint's account, not their uid's */
static void test_endpoint_accounting(NFixture *n, gconstpointer ctx) {
        BusLimits limits;
        BridgeConn *c;
        unsigned i;

        bus_limits_init_session(&limits);
        limits.max_connections_per_user = 2;
        fixture_teardown(&n->f, ctx);
        fixture_setup_limits(&n->f, &limits);
        n->f.bus->owner_uid = 4242;
        make_endpoint(n, (const char *[]){ NULL });

        (void) fixture_conn_uid(&n->f, 0, 1000, 0, true);
        (void) fixture_conn_uid(&n->f, 1, 1000, 0, true);
        c = fixture_conn_uid(&n->f, 2, 1000, 0, false);
        g_assert_cmpint(bridge_conn_hello(c), ==, BRIDGE_E_CONN_QUOTA);
        /* the user's connections are used up; the endpoint has its own two */
        for (i = 3; i < 6; ++i) {
                c = fixture_conn_uid(&n->f, i, 1000, 0, false);
                bridge_conn_set_endpoint(c, n->ep);
                g_assert_cmpint(bridge_conn_hello(c), ==, i < 5 ? 0 : BRIDGE_E_CONN_QUOTA);
        }
        bridge_conn_disconnect(n->f.c[3]);
        g_assert_cmpint(bridge_conn_hello(n->f.c[5]), ==, 0);
        g_assert_cmpint(bridge_conn_hello(n->f.c[2]), ==, BRIDGE_E_CONN_QUOTA);
        bridge_conn_disconnect(n->f.c[0]);
        g_assert_cmpint(bridge_conn_hello(n->f.c[2]), ==, 0);
}

/* The pool quota of a native receiver counts an endpoint's senders on the endpoint's
 * account: a sandbox of uid U does not eat into what U's other peers may queue (kdbus). */
static void test_endpoint_pool_quota(NFixture *n, gconstpointer ctx) {
        BridgeConn *c = fixture_conn_uid(&n->f, 0, 1003, 0, true), *s;
        TestMsg call = { .type = WIRE_MSG_METHOD_CALL, .flags = WIRE_FLAG_NO_REPLY_EXPECTED,
                         .destination = "org.rcvA", .interface = "t.I", .member = "Call" };
        unsigned i, k;
        int r;

        peer_hello(&n->f, &n->a, 0);
        peer_hello(&n->f, &n->b, 0);
        g_assert_cmpint(peer_name(&n->a, KDBUS_CMD_NAME_ACQUIRE, "org.rcvA", 0, NULL), ==, 0);
        g_assert_cmpint(peer_name(&n->b, KDBUS_CMD_NAME_ACQUIRE, "org.rcvB", 0, NULL), ==, 0);
        make_endpoint(n, (const char *[]){ "n:org.rcvB", "w:2", NULL });
        s = fixture_conn_uid(&n->f, 1, 1003, 0, false);
        bridge_conn_set_endpoint(s, n->ep);
        g_assert_cmpint(bridge_conn_hello(s), ==, 0);

        /* how many of uid 1003's messages a fresh pool takes before its share is used up */
        for (k = 0; k < 400; ++k) {
                call.serial = 100 + k;
                r = test_send(c, &call);
                if (r == BRIDGE_E_QUOTA)
                        break;
                g_assert_cmpint(r, ==, 0);
        }
        g_assert_null(bridge_conn_queue_peek(n->a.nc->conn));
        g_assert_cmpuint(k, ==, n->a.nc->n_entries);
        g_assert_cmpuint(k, <, NATIVE_MAX_MSGS_PER_USER);      /* the byte share ran out */

        /* as many to B, all written; then the same uid through the endpoint: written too */
        call.destination = "org.rcvB";
        for (i = 0; i < k; ++i) {
                call.serial = 1000 + i;
                g_assert_cmpint(test_send(c, &call), ==, 0);
        }
        g_assert_null(bridge_conn_queue_peek(n->b.nc->conn));
        call.serial = 2000;
        g_assert_cmpint(test_send(c, &call), ==, BRIDGE_E_QUOTA);
        call.serial = 1;
        g_assert_cmpint(test_send(s, &call), ==, 0);
        g_assert_null(bridge_conn_queue_peek(n->b.nc->conn));
        g_assert_cmpuint(n->b.nc->n_entries, ==, k + 1);
}

/* ---- endpoints, native connections ---- */

/* ENDPOINT_MAKE of @name as @uid (with CAP_IPC_OWNER if @cap) through @via (NULL: none). */
static int ep_make_cmd_cap(NFixture *n, uid_t uid, bool cap, const BusEndpoint *via,
                           const char *name, uint64_t flags, BusEndpoint **ret) {
        uint8_t buf[256] __attribute__((aligned(8))) = { 0 };
        struct kdbus_cmd *cmd = (void *)buf;
        BridgeCreds creds = { .uid = uid, .gid = uid, .pidfd = -1, .cap_ipc_owner = cap };
        uint64_t got = 0;
        int r;

        cmd->flags = flags;
        cmd->items[0].size = KDBUS_ITEM_HEADER_SIZE + strlen(name) + 1;
        cmd->items[0].type = KDBUS_ITEM_MAKE_NAME;
        strcpy(cmd->items[0].str, name);
        cmd->size = sizeof(*cmd) + KDBUS_ALIGN8(cmd->items[0].size);
        r = native_endpoint_make(n->f.bus, &creds, via, buf, cmd->size, &got, ret);
        if (r == 0)
                g_assert_cmpuint(got, ==, flags);
        return r;
}

static int ep_make_cmd(NFixture *n, uid_t uid, const BusEndpoint *via, const char *name,
                       uint64_t flags, BusEndpoint **ret) {
        return ep_make_cmd_cap(n, uid, false, via, name, flags, ret);
}

static int ep_update_cmd(BusEndpoint *ep, const char *const *spec) {
        uint8_t buf[2048 + sizeof(struct kdbus_cmd)] __attribute__((aligned(8))) = { 0 };
        struct kdbus_cmd *cmd = (void *)buf;
        Items it;

        items_build(&it, spec);
        memcpy(cmd->items, it.buf, it.size);
        cmd->size = sizeof(*cmd) + it.size;
        return native_endpoint_update(ep, buf, cmd->size);
}

static void peer_hello_ep(NFixture *n, TestPeer *p, BusEndpoint *ep, uid_t uid) {
        struct kdbus_cmd_hello hello = { .size = sizeof(hello), .pool_size = TEST_POOL_SIZE,
                                         .flags = KDBUS_HELLO_ACCEPT_FD };
        BridgeCreds creds = { .uid = uid, .gid = uid, .pidfd = -1 };

        memset(p, 0, sizeof(*p));
        g_assert_cmpint(test_native_hello_on(n->f.bus, ep, &creds, &hello, sizeof(hello),
                                             &test_peer_ops, p, &p->nc), ==, 0);
        p->id = hello.id;
        p->pool = mmap(NULL, TEST_POOL_SIZE, PROT_READ, MAP_SHARED, native_conn_pool_fd(p->nc), 0);
        g_assert_true(p->pool != MAP_FAILED);
}

static void test_endpoint_native(NFixture *n, gconstpointer ctx) {
        BridgeConn *a = fixture_conn(&n->f, 0), *c = fixture_conn(&n->f, 1);
        struct kdbus_cmd_list list = { .size = sizeof(list), .flags = KDBUS_LIST_UNIQUE |
                                                                      KDBUS_LIST_NAMES };
        struct kdbus_cmd_info info = { .size = sizeof(info), .attach_flags = KDBUS_ATTACH_NAMES };
        struct kdbus_cmd bare = { .size = sizeof(bare) };
        const struct kdbus_info *ki;
        BusEndpoint *other = NULL;
        TestSend s = { .dst_id = KDBUS_DST_ID_NAME, .dst_name = "org.c", .msg_flags = ~0ull,
                       .memfd_idx = -1 };

        g_assert_cmpint(bridge_name_acquire(a, "org.a", 0), ==, 0);
        g_assert_cmpint(bridge_name_acquire(c, "org.c", 0), ==, 0);

        /* ENDPOINT_MAKE: any user (an endpoint only narrows), 16 at a time each unless
         * privileged (each is an account of its own); "<uid>-" prefix, unique */
        {
                BusEndpoint *mine[BUS_ENDPOINT_MAX_PER_USER + 1] = { NULL };
                char name[32];
                unsigned i;

                for (i = 0; i <= BUS_ENDPOINT_MAX_PER_USER; ++i) {
                        g_snprintf(name, sizeof(name), "1000-x%u", i);
                        g_assert_cmpint(ep_make_cmd(n, 1000, NULL, name, 0, &mine[i]), ==,
                                        i < BUS_ENDPOINT_MAX_PER_USER ? 0 : -EMFILE);
                }
                g_assert_cmpuint(bus_count_endpoints(n->f.bus, 1000), ==,
                                 BUS_ENDPOINT_MAX_PER_USER);
                /* one goes, another may come */
                bus_endpoint_close(mine[0]);
                mine[0] = bus_endpoint_unref(mine[0]);
                g_assert_cmpint(ep_make_cmd(n, 1000, NULL, "1000-x16", 0, &mine[16]), ==, 0);
                for (i = 0; i <= BUS_ENDPOINT_MAX_PER_USER; ++i) {
                        if (mine[i])
                                bus_endpoint_close(mine[i]);
                        bus_endpoint_unref(mine[i]);
                }
        }
        /* the LEGACY_FD extension passes (the front end takes the fd); unknown bits do not */
        g_assert_cmpint(ep_make_cmd(n, 1000, NULL, "1000-fd", KDBUS_MAKE_LEGACY_FD, &n->ep), ==, 0);
        bus_endpoint_close(n->ep);
        n->ep = bus_endpoint_unref(n->ep);
        g_assert_cmpint(ep_make_cmd(n, 4242, NULL, "1000-x", 0, &n->ep), ==, -EINVAL);
        g_assert_cmpint(ep_make_cmd(n, 4242, NULL, "4242-x", 1u << 5, &n->ep), ==, -EINVAL);
        /* the MAKE_NAME item as kdbus_item_validate_name() checks it: over 63 bytes
         * ENAMETOOLONG, before the prefix is looked at */
        g_assert_cmpint(ep_make_cmd(n, 4242, NULL, "4242-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
                                    "xxxxxxxxxxxxxxxxxxxxx", 0, &n->ep), ==, -ENAMETOOLONG);
        g_assert_cmpint(ep_make_cmd(n, 4242, NULL, "4242-x.", 0, &n->ep), ==, -EINVAL);
        g_assert_cmpint(ep_make_cmd(n, 4242, NULL, "4242-x", KDBUS_FLAG_NEGOTIATE, &n->ep), ==, 1);
        g_assert_null(bus_find_endpoint(n->f.bus, "4242-x"));
        g_assert_cmpint(ep_make_cmd(n, 4242, NULL, "4242-x", KDBUS_MAKE_ACCESS_WORLD, &n->ep), ==, 0);
        g_assert_cmpint(ep_make_cmd(n, 4242, NULL, "4242-x", 0, &other), ==, -EEXIST);
        g_assert_cmpint(ep_make_cmd(n, 0, n->ep, "0-y", 0, &other), ==, -EPERM);
        g_assert_cmpint(ep_update_cmd(n->ep, (const char *[]){ "u:1:1", NULL }), ==, -EINVAL);
        g_assert_cmpint(ep_update_cmd(n->ep, (const char *[]){ "n:org.a", "w:2", NULL }), ==, 0);

        peer_hello_ep(n, &n->a, n->ep, 1005);
        /* an ENDPOINT_* command on a connection: EBADFD (kdbus: wrong handle type) */
        g_assert_cmpint(peer_cmd(&n->a, KDBUS_CMD_ENDPOINT_UPDATE, &bare, sizeof(bare)), ==, -EBADFD);

        /* LIST: itself and the connection whose name it sees, that name only */
        g_assert_cmpint(peer_cmd(&n->a, KDBUS_CMD_LIST, &list, sizeof(list)), ==, 0);
        ki = (const void *)(n->a.pool + list.offset);
        g_assert_cmpuint(ki->id, ==, a->id);
        g_assert_cmpstr(ki->items[0].name.name, ==, "org.a");
        ki = (const void *)((const uint8_t *)ki + ki->size);
        g_assert_cmpuint(ki->id, ==, n->a.id);
        g_assert_cmpuint((const uint8_t *)ki + ki->size - (n->a.pool + list.offset), ==,
                         list.list_size);
        g_assert_cmpint(peer_free_offset(&n->a, list.offset), ==, 0);

        /* CONN_INFO: hidden ids and names do not exist */
        info.id = c->id;
        g_assert_cmpint(peer_cmd(&n->a, KDBUS_CMD_CONN_INFO, &info, sizeof(info)), ==, -ENXIO);
        info.id = a->id;
        g_assert_cmpint(peer_cmd(&n->a, KDBUS_CMD_CONN_INFO, &info, sizeof(info)), ==, 0);
        g_assert_cmpint(peer_free_offset(&n->a, info.offset), ==, 0);

        /* SEND to an existing name it may not talk to: EPERM, as kdbus; NAME_ACQUIRE: EPERM */
        g_assert_cmpint(peer_send(&n->a, &(TestMsg)CALL("org.c", 3), &s), ==, -EPERM);
        s.dst_name = "org.a";
        g_assert_cmpint(peer_send(&n->a, &(TestMsg)CALL("org.a", 4), &s), ==, 0);
        g_assert_cmpstr(test_pop(a, NULL), ==, "Call");
        g_assert_cmpint(peer_name(&n->a, KDBUS_CMD_NAME_ACQUIRE, "org.a", 0, NULL), ==, -EPERM);

        /* closing the endpoint ends its connections (ECONNRESET for their commands) */
        bus_endpoint_close(n->ep);
        g_assert_cmpint(peer_cmd(&n->a, KDBUS_CMD_LIST, &list, sizeof(list)), ==, -ECONNRESET);
        g_assert_cmpint(ep_update_cmd(n->ep, (const char *[]){ NULL }), ==, -ESHUTDOWN);
}

/* ---- policy holders ---- */

/* HELLO as a policy holder with @spec's items (see items_build()). */
static int holder_hello(NFixture *n, TestPeer *p, uid_t uid, const char *const *spec) {
        uint8_t buf[sizeof(struct kdbus_cmd_hello) + sizeof(Items)] __attribute__((aligned(8)));
        struct kdbus_cmd_hello *hello = (void *)buf;
        BridgeCreds creds = { .uid = uid, .gid = uid, .pidfd = -1 };
        Items it;

        items_build(&it, spec);
        memset(buf, 0, sizeof(buf));
        hello->flags = KDBUS_HELLO_POLICY_HOLDER;
        hello->pool_size = TEST_POOL_SIZE;
        memcpy(hello->items, it.buf, it.size);
        hello->size = sizeof(*hello) + it.size;
        memset(p, 0, sizeof(*p));
        return test_native_hello(n->f.bus, &creds, hello, hello->size, &test_peer_ops, p, &p->nc);
}

static int peer_update(TestPeer *p, const char *const *spec) {
        uint8_t buf[sizeof(struct kdbus_cmd) + sizeof(Items)] __attribute__((aligned(8))) = { 0 };
        struct kdbus_cmd *cmd = (void *)buf;
        Items it;

        items_build(&it, spec);
        memcpy(cmd->items, it.buf, it.size);
        cmd->size = sizeof(*cmd) + it.size;
        return peer_cmd(p, KDBUS_CMD_UPDATE, cmd, cmd->size);
}

static void test_holder(NFixture *n, gconstpointer ctx) {
        BridgeConn *c1 = fixture_conn(&n->f, 1), *c2 = fixture_conn(&n->f, 2);
        BridgeConn *root = fixture_conn_uid(&n->f, 3, 4242, 0, true);
        struct kdbus_cmd_recv recv = { .size = sizeof(recv) };
        uint8_t attach[512] __attribute__((aligned(8)));
        struct kdbus_cmd *upd = (void *)attach;
        TestPeer other;

        /* privileged only, exactly one NAME */
        g_assert_cmpint(holder_hello(n, &n->a, 1001, (const char *[]){ "n:org.held.*", "w:1",
                                                                       NULL }), ==, -EPERM);
        g_assert_cmpint(holder_hello(n, &n->a, 4242, (const char *[]){ "w:1", NULL }), ==, -EINVAL);
        g_assert_cmpint(holder_hello(n, &n->a, 4242, (const char *[]){ "n:org.held.*", "u:1001:3",
                                                                       "w:1", NULL }), ==, 0);
        g_assert_cmpint(holder_hello(n, &other, 4242, (const char *[]){ "n:org.held.*", "w:3",
                                                                        NULL }), ==, -EEXIST);

        /* OWN of covered names as the holder says; other names: the XML policy alone */
        g_assert_cmpint(bridge_name_acquire(c1, "org.held.x", 0), ==, 0);
        g_assert_cmpint(bridge_name_acquire(c2, "org.held.y", 0), ==, NAME_E_ACCESS_DENIED);
        g_assert_nonnull(strstr(bridge_conn_get_denial(c2), "policy holders'"));
        g_assert_cmpint(bridge_name_acquire(c2, "org.other", 0), ==, 0);
        g_assert_cmpint(bridge_name_acquire(root, "org.held.z", 0), ==, 0);    /* privileged */
        /* TALK: SEE only for the world; privileged callers pass */
        g_assert_cmpint(test_send(c2, &(TestMsg)CALL("org.held.x", 1)), ==, BRIDGE_E_ACCESS_DENIED);
        g_assert_cmpint(test_send(root, &(TestMsg)CALL("org.held.x", 2)), ==, 0);
        g_assert_cmpstr(test_pop(c1, NULL), ==, "Call");
        g_assert_cmpint(test_send(c1, &(TestMsg)CALL("org.other", 3)), ==, 0);
        g_assert_cmpstr(test_pop(c2, NULL), ==, "Call");

        /* UPDATE replaces the holder's entries; one name only; no attach flags */
        g_assert_cmpint(peer_update(&n->a, (const char *[]){ "n:org.held.*", "w:2", NULL }), ==, 0);
        g_assert_cmpint(test_send(c2, &(TestMsg)CALL("org.held.x", 4)), ==, 0);
        g_assert_cmpstr(test_pop(c1, NULL), ==, "Call");
        g_assert_cmpint(peer_update(&n->a, (const char *[]){ "n:org.a", "n:org.b", NULL }),
                        ==, -E2BIG);
        g_assert_cmpint(peer_update(&n->a, (const char *[]){ "n:bad", NULL }), ==, -EINVAL);
        memset(attach, 0, sizeof(attach));
        upd->size = sizeof(*upd) + KDBUS_ITEM_SIZE(8);
        ((struct kdbus_item *)(attach + sizeof(*upd)))->size = KDBUS_ITEM_HEADER_SIZE + 8;
        ((struct kdbus_item *)(attach + sizeof(*upd)))->type = KDBUS_ITEM_ATTACH_FLAGS_SEND;
        g_assert_cmpint(peer_cmd(&n->a, KDBUS_CMD_UPDATE, upd, upd->size), ==, -EOPNOTSUPP);
        g_assert_cmpint(test_send(c2, &(TestMsg)CALL("org.held.x", 5)), ==, 0);  /* unchanged */
        g_assert_cmpstr(test_pop(c1, NULL), ==, "Call");

        /* no ordinary connection: no SEND, RECV, names; nobody sends to it */
        g_assert_cmpint(peer_send(&n->a, &(TestMsg)CALL("org.other", 6),
                                  &(TestSend){ .dst_id = KDBUS_DST_ID_NAME, .dst_name = "org.other",
                                               .msg_flags = ~0ull, .memfd_idx = -1 }),
                        ==, -EOPNOTSUPP);
        g_assert_cmpint(peer_cmd(&n->a, KDBUS_CMD_RECV, &recv, sizeof(recv)), ==, -EOPNOTSUPP);
        g_assert_cmpint(peer_name(&n->a, KDBUS_CMD_NAME_ACQUIRE, "org.x.y", 0, NULL),
                        ==, -EOPNOTSUPP);
        g_assert_cmpint(test_send(c1, &(TestMsg)CALL(n->a.nc->conn->unique_name, 7)),
                        ==, BRIDGE_E_PEER_UNKNOWN);
        /* an ordinary connection has no policy to update */
        peer_hello(&n->f, &n->b, 0);
        g_assert_cmpint(peer_update(&n->b, (const char *[]){ "n:org.held.*", "w:3", NULL }),
                        ==, -EOPNOTSUPP);

        /* its entries live as long as it does */
        peer_free(&n->a);
        g_assert_cmpint(bridge_name_acquire(c2, "org.held.y", 0), ==, 0);
}

/* Who may make an endpoint: kdbus_ep_is_owner() (the bus owner's uid or CAP_IPC_OWNER,
 * EPERM before the command is read) on a bus that says so, as bus instances do; any user
 * otherwise, the unprivileged (uid 0 without the capability among them) up to the quota. */
static void test_endpoint_make_privilege(NFixture *n, gconstpointer ctx) {
        BusEndpoint *eps[BUS_ENDPOINT_MAX_PER_USER + 1] = { NULL };
        BridgeCreds root = { .uid = 0, .pidfd = -1 }, capable = { .uid = 1000, .pidfd = -1,
                                                                  .cap_ipc_owner = true };
        char name[32];
        unsigned i;

        g_assert_false(bus_creds_privileged(n->f.bus, &root));
        g_assert_true(bus_creds_privileged(n->f.bus, &capable));
        /* kdbusd's own bus by default: anybody, root without the capability counted */
        for (i = 0; i <= BUS_ENDPOINT_MAX_PER_USER; ++i) {
                g_snprintf(name, sizeof(name), "0-r%u", i);
                g_assert_cmpint(ep_make_cmd(n, 0, NULL, name, 0, &eps[i]), ==,
                                i < BUS_ENDPOINT_MAX_PER_USER ? 0 : -EMFILE);
        }
        for (i = 0; i <= BUS_ENDPOINT_MAX_PER_USER; ++i) {
                if (eps[i])
                        bus_endpoint_close(eps[i]);
                eps[i] = bus_endpoint_unref(eps[i]);
        }

        n->f.bus->endpoints_privileged_only = true;
        g_assert_cmpint(ep_make_cmd(n, 1000, NULL, "1000-a", 0, &n->ep), ==, -EPERM);
        g_assert_cmpint(ep_make_cmd(n, 0, NULL, "0-a", 0, &n->ep), ==, -EPERM);
        /* kdbus looked at the handle first: a bad name, unknown flags, NEGOTIATE: EPERM */
        g_assert_cmpint(ep_make_cmd(n, 1000, NULL, "a", 1u << 5, &n->ep), ==, -EPERM);
        g_assert_cmpint(ep_make_cmd(n, 1000, NULL, "1000-a", KDBUS_FLAG_NEGOTIATE, &n->ep), ==,
                        -EPERM);
        g_assert_null(n->ep);
        /* the owner, and CAP_IPC_OWNER (no quota for either) */
        g_assert_cmpint(ep_make_cmd(n, 4242, NULL, "4242-a", 0, &n->ep), ==, 0);
        for (i = 0; i <= BUS_ENDPOINT_MAX_PER_USER; ++i) {
                g_snprintf(name, sizeof(name), "1000-c%u", i);
                g_assert_cmpint(ep_make_cmd_cap(n, 1000, true, NULL, name, 0, &eps[i]), ==, 0);
        }
        /* nobody from inside an endpoint */
        g_assert_cmpint(ep_make_cmd_cap(n, 1000, true, n->ep, "1000-d", 0, &eps[0]), ==, -EPERM);
        for (i = 0; i <= BUS_ENDPOINT_MAX_PER_USER; ++i) {
                bus_endpoint_close(eps[i]);
                bus_endpoint_unref(eps[i]);
        }
}

/* The transport hears when the bus ends a connection (its endpoint closed), so that a RECV
 * it holds (KDBUS_WIRE_BATCH_HOLD_RECV) can answer ECONNRESET; not for BYEBYE, not when it
 * frees the connection itself. */
static void test_endpoint_disconnected(NFixture *n, gconstpointer ctx) {
        struct kdbus_cmd_recv recv = { .size = sizeof(recv) };
        struct kdbus_cmd bye = { .size = sizeof(bye) };
        TestPeer c;

        g_assert_cmpint(bus_endpoint_new(n->f.bus, 1000, "1000-sandbox", &n->ep), ==, 0);
        peer_hello_ep(n, &n->a, n->ep, 1000);
        peer_hello_ep(n, &n->b, n->ep, 1000);
        peer_hello_ep(n, &c, n->ep, 1000);
        g_assert_cmpint(peer_cmd(&n->b, KDBUS_CMD_BYEBYE, &bye, sizeof(bye)), ==, 0);
        g_assert_cmpuint(n->b.n_disconnected, ==, 0);
        peer_free(&c);
        g_assert_cmpuint(c.n_disconnected, ==, 0);
        g_assert_cmpuint(n->a.n_disconnected, ==, 0);
        bus_endpoint_close(n->ep);
        g_assert_cmpuint(n->a.n_disconnected, ==, 1);
        g_assert_cmpuint(n->b.n_disconnected, ==, 0);
        g_assert_cmpint(peer_cmd(&n->a, KDBUS_CMD_RECV, &recv, sizeof(recv)), ==, -ECONNRESET);
        bus_endpoint_close(n->ep);              /* idempotent: no second call */
        peer_free(&n->a);
        g_assert_cmpuint(n->a.n_disconnected, ==, 1);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add("/native/policy/db", NFixture, NULL, nsetup, test_db, nteardown);
        g_test_add("/native/endpoint/make", NFixture, NULL, nsetup, test_endpoint_make, nteardown);
        g_test_add("/native/endpoint/xdg", NFixture, NULL, nsetup, test_endpoint_xdg, nteardown);
        g_test_add("/native/endpoint/legacy", NFixture, NULL, nsetup, test_endpoint_legacy,
                   nteardown);
        g_test_add("/native/endpoint/make-privilege", NFixture, NULL, nsetup,
                   test_endpoint_make_privilege, nteardown);
        g_test_add("/native/endpoint/native", NFixture, NULL, nsetup, test_endpoint_native,
                   nteardown);
        g_test_add("/native/endpoint/accounting", NFixture, NULL, nsetup,
                   test_endpoint_accounting, nteardown);
        g_test_add("/native/endpoint/pool-quota", NFixture, NULL, nsetup,
                   test_endpoint_pool_quota, nteardown);
        g_test_add("/native/holder/hello-update", NFixture, NULL, nsetup, test_holder, nteardown);
        g_test_add("/native/endpoint/disconnected", NFixture, NULL, nsetup,
                   test_endpoint_disconnected, nteardown);
        return g_test_run();
}
