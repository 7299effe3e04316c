/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * Two native peers on the core (native-fixture.h), for the command tests of test-conn.c,
 * test-hello.c, test-memfd.c, test-meta.c and test-update.c. Teardown restores what the
 * next HELLO consents to and asks for, and its extra items.
 */
#include "native-fixture.h"

#define CALL(dst, ser) { .type = WIRE_MSG_METHOD_CALL, .serial = (ser), .destination = (dst), \
                         .interface = "t.I", .member = "Call" }

typedef struct NFixture {
        Fixture f;
        TestPeer a, b;
} NFixture;

static void nsetup(NFixture *n, gconstpointer ctx) {
        fixture_setup(&n->f, ctx);
}

static void nteardown(NFixture *n, gconstpointer ctx) {
        if (n->a.nc)
                peer_free(&n->a);
        if (n->b.nc)
                peer_free(&n->b);
        test_attach_send = _KDBUS_ATTACH_ALL;
        test_attach_recv = 0;
        test_hello_extra = NULL;
        test_hello_extra_size = 0;
        fixture_teardown(&n->f, ctx);
}
