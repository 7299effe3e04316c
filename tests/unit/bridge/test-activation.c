/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bridge/activation: the set of activatable names (order, replacement), one start per name
 * however many messages wait, FIFO hand-over, max_pending_service_starts, a leaving sender
 * loses its entries, names dropped from the set while waited for.
 */
#include <glib.h>
#include "bridge/activation.h"
#include "fixture.h"

static BridgeMsg *call_to(BridgeConn *sender, const char *dest, uint32_t serial) {
        TestMsg t = { .type = WIRE_MSG_METHOD_CALL, .serial = serial, .destination = dest,
                      .path = "/", .interface = "org.example.I", .member = "M" };

        return test_msg_new(sender, &t);
}

static void queue(BusActivation *a, const char *name, BridgeConn *c, uint32_t serial,
                  bool start_request, int want, bool want_start) {
        BridgeMsg *m = call_to(c, name, serial);
        bool start = !want_start;

        g_assert_cmpint(bus_activation_queue(a, name, c, m, start_request, &start), ==, want);
        if (want == 0)
                g_assert_cmpint(start, ==, want_start);
        bridge_msg_unref(m);
}

static GString *listed(BusActivation *a) {
        GString *s = g_string_new(NULL);
        BusActivationName *n;

        bus_activation_for_each(n, a)
                if (n->listed)
                        g_string_append_printf(s, "%s%s", s->len ? "," : "", n->name);
        return s;
}

static void test_set_names(Fixture *f, gconstpointer ctx) {
        const char *first[] = { "b.b", "a.a", "b.b", "c.c" }, *second[] = { "c.c", "d.d" };
        BusActivation *a = NULL;
        GString *s;

        g_assert_cmpint(bus_activation_new(f->bus, &a), ==, 0);
        g_assert_false(bus_activation_is_activatable(a, "a.a"));
        g_assert_cmpint(bus_activation_set_names(a, first, 4), ==, 0);
        s = listed(a);
        g_assert_cmpstr(s->str, ==, "b.b,a.a,c.c");
        g_string_free(s, TRUE);
        g_assert_cmpuint(a->n_names, ==, 3);
        g_assert_true(bus_activation_is_activatable(a, "a.a"));
        g_assert_cmpint(bus_activation_set_names(a, second, 2), ==, 0);
        s = listed(a);
        g_assert_cmpstr(s->str, ==, "c.c,d.d");
        g_string_free(s, TRUE);
        g_assert_false(bus_activation_is_activatable(a, "a.a"));
        g_assert_cmpint(bus_activation_set_names(a, NULL, 0), ==, 0);
        g_assert_cmpuint(a->n_names, ==, 0);
        bus_activation_free(a);
}

static void test_queue_fifo(Fixture *f, gconstpointer ctx) {
        const char *names[] = { "org.example.S" };
        BridgeConn *c0 = fixture_conn(f, 0), *c1 = fixture_conn(f, 1);
        BusActivationEntry *e;
        BusActivation *a = NULL;
        uint32_t want[] = { 10, 20, 11 };
        unsigned i;

        g_assert_cmpint(bus_activation_new(f->bus, &a), ==, 0);
        g_assert_cmpint(bus_activation_set_names(a, names, 1), ==, 0);
        queue(a, "org.example.X", c0, 1, false, BUS_ACTIVATION_E_NOT_ACTIVATABLE, false);
        queue(a, "org.example.S", c0, 10, false, 0, true);       /* first: start it */
        g_assert_true(bus_activation_is_starting(a, "org.example.S"));
        queue(a, "org.example.S", c1, 20, true, 0, false);       /* already starting */
        queue(a, "org.example.S", c0, 11, false, 0, false);
        g_assert_cmpuint(c0->n_refs, >=, 2);                    /* entries hold the sender */

        g_assert_true(bus_activation_end(a, "org.example.S"));
        g_assert_false(bus_activation_is_starting(a, "org.example.S"));
        for (i = 0; i < G_N_ELEMENTS(want); ++i) {
                e = bus_activation_pop(a, "org.example.S");
                g_assert_nonnull(e);
                g_assert_cmpuint(e->msg->hdr.serial, ==, want[i]);
                g_assert_true(e->sender == (want[i] == 20 ? c1 : c0));
                g_assert_cmpint(e->start_request, ==, want[i] == 20);
                bus_activation_entry_free(e);
        }
        g_assert_null(bus_activation_pop(a, "org.example.S"));
        /* nothing was starting any more: a second end reports nothing */
        g_assert_false(bus_activation_end(a, "org.example.S"));
        /* the next message starts it again */
        queue(a, "org.example.S", c0, 12, false, 0, true);
        bus_activation_free(a);         /* drops the entry and its references */
}

static void test_limit(Fixture *f, gconstpointer ctx) {
        const char *names[] = { "a.a", "b.b", "c.c" };
        BusLimits limits;
        BusActivation *a = NULL;
        BridgeConn *c0;

        bus_limits_init_session(&limits);
        limits.max_pending_service_starts = 2;
        fixture_setup_limits(f, &limits);
        c0 = fixture_conn(f, 0);
        g_assert_cmpint(bus_activation_new(f->bus, &a), ==, 0);
        g_assert_cmpint(bus_activation_set_names(a, names, 3), ==, 0);
        queue(a, "a.a", c0, 1, false, 0, true);
        queue(a, "b.b", c0, 2, false, 0, true);
        queue(a, "c.c", c0, 3, false, BUS_ACTIVATION_E_LIMIT, false);
        queue(a, "a.a", c0, 4, false, 0, false);        /* joins a start: no new one */
        g_assert_cmpuint(a->n_starting, ==, 2);
        bus_activation_end(a, "b.b");
        queue(a, "c.c", c0, 5, false, 0, true);
        bus_activation_free(a);
}

static void test_conn_removed(Fixture *f, gconstpointer ctx) {
        const char *names[] = { "a.a" };
        BridgeConn *c0 = fixture_conn(f, 0), *c1 = fixture_conn(f, 1);
        BusActivation *a = NULL;
        BusActivationEntry *e;

        g_assert_cmpint(bus_activation_new(f->bus, &a), ==, 0);
        g_assert_cmpint(bus_activation_set_names(a, names, 1), ==, 0);
        queue(a, "a.a", c0, 1, false, 0, true);
        queue(a, "a.a", c1, 2, false, 0, false);
        queue(a, "a.a", c0, 3, false, 0, false);
        bridge_conn_disconnect(c0);
        bus_activation_conn_removed(a, c0);
        g_assert_cmpuint(c0->n_refs, ==, 1);            /* only the fixture's */
        g_assert_true(bus_activation_end(a, "a.a"));
        e = bus_activation_pop(a, "a.a");
        g_assert_nonnull(e);
        g_assert_true(e->sender == c1);
        bus_activation_entry_free(e);
        g_assert_null(bus_activation_pop(a, "a.a"));
        bus_activation_free(a);
}

static void test_name_dropped_while_starting(Fixture *f, gconstpointer ctx) {
        const char *names[] = { "a.a" };
        BridgeConn *c0 = fixture_conn(f, 0);
        BusActivation *a = NULL;
        BusActivationEntry *e;

        g_assert_cmpint(bus_activation_new(f->bus, &a), ==, 0);
        g_assert_cmpint(bus_activation_set_names(a, names, 1), ==, 0);
        queue(a, "a.a", c0, 1, false, 0, true);
        g_assert_cmpint(bus_activation_set_names(a, NULL, 0), ==, 0);
        g_assert_false(bus_activation_is_activatable(a, "a.a"));
        /* the start goes on: more messages may join it, and it still ends */
        g_assert_true(bus_activation_is_starting(a, "a.a"));
        queue(a, "a.a", c0, 2, false, 0, false);
        g_assert_true(bus_activation_end(a, "a.a"));
        e = bus_activation_pop(a, "a.a");
        bus_activation_entry_free(e);
        e = bus_activation_pop(a, "a.a");
        g_assert_nonnull(e);
        bus_activation_entry_free(e);
        g_assert_null(bus_activation_pop(a, "a.a"));
        /* now it is gone for good */
        queue(a, "a.a", c0, 3, false, BUS_ACTIVATION_E_NOT_ACTIVATABLE, false);
        bus_activation_free(a);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add("/bridge/activation/set-names", Fixture, NULL, fixture_setup, test_set_names,
                   fixture_teardown);
        g_test_add("/bridge/activation/queue-fifo", Fixture, NULL, fixture_setup,
                   test_queue_fifo, fixture_teardown);
        g_test_add("/bridge/activation/limit", Fixture, NULL, NULL, test_limit,
                   fixture_teardown);
        g_test_add("/bridge/activation/conn-removed", Fixture, NULL, fixture_setup,
                   test_conn_removed, fixture_teardown);
        g_test_add("/bridge/activation/name-dropped-while-starting", Fixture, NULL,
                   fixture_setup, test_name_dropped_while_starting, fixture_teardown);
        return g_test_run();
}
