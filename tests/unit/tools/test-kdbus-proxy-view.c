/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The filtering proxy's view (tools/kdbus-proxy-view.c): the rules of kdbusd's xdg-mode
 * endpoints over the owners the proxy tracks; nothing sticky.
 */
#include <glib.h>
#include "kdbus/kdbus.h"
#include "tools/kdbus-proxy-args.h"
#include "tools/kdbus-proxy-view.h"
#include "wire/protocol.h"

/* A view of the rules in @argv (after ADDRESS PATH), its own unique name ":1.1". */
static void view_of(ProxyView *v, ProxyArgs *a, const char *const *argv) {
        char err[256];
        int argc = 0;

        while (argv[argc])
                ++argc;
        g_assert_cmpint(proxy_args_parse(a, argc, (char *const *)argv, err, sizeof(err)), ==, 0);
        g_assert_cmpint(proxy_view_init(v, &a->buses[0]), ==, 0);
        v->self = g_strdup(":1.1");
}

static void view_done(ProxyView *v, ProxyArgs *a) {
        g_free(v->self);
        v->self = NULL;
        proxy_view_deinit(v);
        proxy_args_deinit(a);
}

static const char *const flatpak[] = {
        "kdbus-proxy", "unix:path=/x", "/p", "--filter", "--own=org.example.App.*",
        "--see=org.example.Seen", "--call=org.freedesktop.portal.*=*",
        "--broadcast=org.freedesktop.portal.*=@/org/freedesktop/portal/*", NULL,
};

/* --own=NAME.* is NAME and every name below it, at any depth (xdg-dbus-proxy's meaning) */
static void test_levels(void) {
        ProxyArgs a = PROXY_ARGS_NULL;
        ProxyView v;

        view_of(&v, &a, flatpak);
        g_assert_cmpuint(proxy_view_level(&v, "org.example.App"), ==, NAME_ACL_OWN);
        g_assert_cmpuint(proxy_view_level(&v, "org.example.App.A.B"), ==, NAME_ACL_OWN);
        g_assert_cmpuint(proxy_view_level(&v, "org.example.Application"), ==, 0);
        g_assert_cmpuint(proxy_view_level(&v, "org.example.Seen"), ==, NAME_ACL_SEE);
        /* a --call rule counts as TALK for the name itself */
        g_assert_cmpuint(proxy_view_level(&v, "org.freedesktop.portal.Desktop"), ==,
                         NAME_ACL_TALK);
        g_assert_true(proxy_view_covers(&v, "org.example.Seen"));
        g_assert_false(proxy_view_covers(&v, "org.example.Hidden"));
        view_done(&v, &a);
}

/* an owner is visible while it owns a visible name, never after */
static void test_not_sticky(void) {
        ProxyArgs a = PROXY_ARGS_NULL;
        ProxyView v;

        view_of(&v, &a, flatpak);
        g_assert_false(proxy_view_can_see_unique(&v, ":1.7"));
        g_assert_cmpint(proxy_view_set_owner(&v, "org.example.Seen", ":1.7"), ==, 0);
        g_assert_true(proxy_view_can_see_unique(&v, ":1.7"));
        g_assert_cmpint(proxy_view_may_send(&v, ":1.7", WIRE_MSG_METHOD_CALL, "/", "a.b", "C"),
                        ==, PROXY_VIEW_E_DENIED);
        g_assert_cmpint(proxy_view_set_owner(&v, "org.example.Seen", ""), ==, 0);
        g_assert_false(proxy_view_can_see_unique(&v, ":1.7"));
        g_assert_cmpint(proxy_view_may_send(&v, ":1.7", WIRE_MSG_METHOD_CALL, "/", "a.b", "C"),
                        ==, PROXY_VIEW_E_HIDDEN);
        /* the owner leaving the bus drops its names */
        g_assert_cmpint(proxy_view_set_owner(&v, "org.freedesktop.portal.Desktop", ":1.8"), ==, 0);
        proxy_view_forget_unique(&v, ":1.8");
        g_assert_null(proxy_view_owner(&v, "org.freedesktop.portal.Desktop"));
        view_done(&v, &a);
}

/* a caller is visible and may get signals while connected; calls still need TALK */
static void test_callers(void) {
        ProxyArgs a = PROXY_ARGS_NULL;
        ProxyView v;

        view_of(&v, &a, flatpak);
        g_assert_cmpint(proxy_view_add_caller(&v, ":1.9"), ==, 0);
        g_assert_true(proxy_view_can_see_unique(&v, ":1.9"));
        g_assert_cmpint(proxy_view_may_send(&v, ":1.9", WIRE_MSG_SIGNAL, "/", "a.b", "C"), ==, 0);
        g_assert_cmpint(proxy_view_may_send(&v, ":1.9", WIRE_MSG_METHOD_CALL, "/", "a.b", "C"),
                        ==, PROXY_VIEW_E_DENIED);
        proxy_view_forget_unique(&v, ":1.9");
        g_assert_false(proxy_view_can_see_unique(&v, ":1.9"));
        /* itself, always */
        g_assert_cmpint(proxy_view_may_send(&v, ":1.1", WIRE_MSG_METHOD_CALL, "/", "a.b", "C"),
                        ==, 0);
        view_done(&v, &a);
}

/* --call and --broadcast rules decide per message, on the receiver's (sender's) names */
static void test_rules(void) {
        static const char *const argv[] = {
                "kdbus-proxy", "unix:path=/x", "/p", "--filter",
                "--call=org.example.Svc=org.example.Svc.Get@/obj/*",
                "--broadcast=org.example.Svc=org.example.Svc.Changed@/obj", NULL,
        };
        ProxyArgs a = PROXY_ARGS_NULL;
        ProxyView v;

        view_of(&v, &a, argv);
        /* nobody owns it: the bus may start it for a message the rules let pass */
        g_assert_cmpint(proxy_view_may_send(&v, "org.example.Svc", WIRE_MSG_METHOD_CALL,
                                            "/obj/a", "org.example.Svc", "Get"), ==, 0);
        g_assert_cmpint(proxy_view_may_send(&v, "org.example.Svc", WIRE_MSG_METHOD_CALL,
                                            "/other", "org.example.Svc", "Get"), ==,
                        PROXY_VIEW_E_DENIED);
        g_assert_cmpint(proxy_view_set_owner(&v, "org.example.Svc", ":1.4"), ==, 0);
        g_assert_cmpint(proxy_view_may_send(&v, ":1.4", WIRE_MSG_METHOD_CALL, "/obj",
                                            "org.example.Svc", "Get"), ==, 0);
        g_assert_cmpint(proxy_view_may_send(&v, ":1.4", WIRE_MSG_METHOD_CALL, "/obj",
                                            "org.example.Svc", "Set"), ==, PROXY_VIEW_E_DENIED);
        g_assert_true(proxy_view_may_receive(&v, ":1.4", true, "/obj", "org.example.Svc",
                                             "Changed"));
        g_assert_false(proxy_view_may_receive(&v, ":1.4", true, "/obj/a", "org.example.Svc",
                                              "Changed"));
        g_assert_false(proxy_view_may_receive(&v, ":1.5", true, "/obj", "org.example.Svc",
                                              "Changed"));
        /* a unicast signal comes from a peer it may talk to (a rule counts) */
        g_assert_true(proxy_view_may_receive(&v, ":1.4", false, "/x", "a.b", "C"));
        g_assert_false(proxy_view_may_receive(&v, ":1.5", false, "/x", "a.b", "C"));
        view_done(&v, &a);
}

/* without --filter nothing is restricted */
static void test_unfiltered(void) {
        static const char *const argv[] = { "kdbus-proxy", "unix:path=/x", "/p", NULL };
        ProxyArgs a = PROXY_ARGS_NULL;
        ProxyView v;

        view_of(&v, &a, argv);
        g_assert_true(proxy_view_can_see_unique(&v, ":1.3"));
        g_assert_cmpint(proxy_view_may_send(&v, "org.x", WIRE_MSG_METHOD_CALL, "/", "a.b", "C"),
                        ==, 0);
        g_assert_true(proxy_view_may_receive(&v, ":1.3", true, "/", "a.b", "C"));
        view_done(&v, &a);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/kdbus-proxy-view/levels", test_levels);
        g_test_add_func("/kdbus-proxy-view/not-sticky", test_not_sticky);
        g_test_add_func("/kdbus-proxy-view/callers", test_callers);
        g_test_add_func("/kdbus-proxy-view/rules", test_rules);
        g_test_add_func("/kdbus-proxy-view/unfiltered", test_unfiltered);
        return g_test_run();
}
