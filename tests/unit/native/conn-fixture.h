/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * Two native peers on the core (native-fixture.h) for the command tests of test-conn.c and
 * test-hello.c.
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
        fixture_teardown(&n->f, ctx);
}
