/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Client I/O on the real core and driver, in-process: a Server with its loop, clients on
 * socketpairs, the test playing the peers. Covers pipelined authentication, input that
 * trickles in byte by byte, the per-iteration budget, messages larger than the read
 * buffer, fd passing (and refusal without NEGOTIATE_UNIX_FD), delivery of what a peer sent
 * before it hung up, a bystander during a storm of hangups (teardowns in slices),
 * disconnection on malformed input, and the auth timer freed once Hello has succeeded.
 * Large messages are read in place (into their own message, not through a grown input
 * buffer) and checked as any other: header at once, body and fds when complete.
 */
#include <sys/mman.h>
#include <sys/resource.h>
#include "tests/unit/proxy/client-peers.h"

static void test_pipelined(Fixture *f, gconstpointer ctx) {
        GByteArray *b = auth_bytes(true);
        WireHeader h;
        uint8_t *data;
        char ok[64];

        append_call(b, &f->a, "Hello");
        append_call(b, &f->a, "GetId");
        peer_send(&f->a, b->data, b->len);
        g_byte_array_free(b, TRUE);
        pump(f);
        g_assert_true(peer_recv(&f->a));
        snprintf(ok, sizeof(ok), "OK %s\r\n", f->s->guid);
        peer_expect_line(&f->a, ok);
        peer_expect_line(&f->a, "AGREE_UNIX_FD\r\n");
        g_assert_true(peer_take_msg(&f->a, &h, &data));
        g_assert_cmpuint(h.reply_serial, ==, 1);
        g_free(data);
        g_assert_true(peer_take_msg(&f->a, &h, &data));
        g_assert_cmpstr(h.member, ==, "NameAcquired");
        g_free(data);
        g_assert_true(peer_take_msg(&f->a, &h, &data));
        g_assert_cmpuint(h.reply_serial, ==, 2);
        g_assert_cmpstr(h.signature, ==, "s");
        /* the body is the bus id, which is not the server's guid (as dbus-daemon) */
        g_assert_cmpint(memcmp(data + h.body_offset + 4, f->s->guid, 32), !=, 0);
        for (unsigned k = 0; k < 16; ++k) {
                char hex[3];

                snprintf(hex, sizeof(hex), "%02x", f->s->bus->id[k]);
                g_assert_cmpint(memcmp(data + h.body_offset + 4 + 2 * k, hex, 2), ==, 0);
        }
        g_free(data);
        g_assert_false(peer_take_msg(&f->a, &h, &data));
}

static void test_trickle(Fixture *f, gconstpointer ctx) {
        GByteArray *b = auth_bytes(false);
        WireHeader h;
        uint8_t *data;
        size_t i;

        append_call(b, &f->a, "Hello");
        append_call(b, &f->a, "GetId");
        for (i = 0; i < b->len; ++i) {
                peer_send(&f->a, b->data + i, 1);
                g_assert_cmpint(loop_run_once(f->s->loop, 0), >=, 0);
        }
        g_byte_array_free(b, TRUE);
        pump(f);
        g_assert_true(peer_recv(&f->a));
        g_assert_true(g_str_has_prefix((const char *)f->a.in->data, "OK "));
        g_byte_array_remove_range(f->a.in, 0, 37);
        g_assert_true(peer_take_msg(&f->a, &h, &data));
        g_free(data);
        g_assert_true(peer_take_msg(&f->a, &h, &data));
        g_free(data);
        g_assert_true(peer_take_msg(&f->a, &h, &data));
        g_assert_cmpuint(h.reply_serial, ==, 2);
        g_free(data);
}

static unsigned peer_count_replies(Peer *p) {
        unsigned n = 0;
        WireHeader h;
        uint8_t *data;

        g_assert_true(peer_recv(p));
        while (peer_take_msg(p, &h, &data)) {
                ++n;
                g_free(data);
        }
        return n;
}

/* A peer with a full input queue delays another peer's call by at most one budget: one
 * wakeup serves both (every ready fd is dispatched), the flooder with one budget only
 * (its leftover input waits for the next wakeup on the ready list), and so on for each
 * wakeup until the flood is done. */
static void test_fair(Fixture *f, gconstpointer ctx) {
        GByteArray *b = g_byte_array_new();
        unsigned i, n_a, n_calls = 10 * SERVER_CLIENT_BUDGET;
        WireHeader h;
        uint8_t *data;

        peer_hello(f, &f->a, false);
        peer_hello(f, &f->b, false);
        for (i = 0; i < n_calls; ++i)
                append_call(b, &f->a, "GetId");
        g_assert_cmpint(send(f->a.fd, b->data, b->len, MSG_NOSIGNAL), ==, (ssize_t)b->len);
        g_byte_array_free(b, TRUE);
        peer_send_call(&f->b, "GetId");

        g_assert_cmpint(loop_run_once(f->s->loop, 0), >=, 0);
        g_assert_true(peer_recv(&f->b));
        g_assert_true(peer_take_msg(&f->b, &h, &data));
        g_assert_cmpuint(h.reply_serial, ==, 2);
        g_free(data);
        n_a = peer_count_replies(&f->a);
        g_assert_cmpuint(n_a, >, 0);
        g_assert_cmpuint(n_a, <=, SERVER_CLIENT_BUDGET);
        /* one budget per wakeup, until the flood is done */
        for (i = 0; i < 100 && n_a < n_calls; ++i) {
                unsigned k;

                g_assert_cmpint(loop_run_once(f->s->loop, 0), >=, 0);
                k = peer_count_replies(&f->a);
                g_assert_cmpuint(k, <=, SERVER_CLIENT_BUDGET);
                n_a += k;
        }
        g_assert_cmpuint(n_a, ==, n_calls);
}

static void test_budget(Fixture *f, gconstpointer ctx) {
        GByteArray *b = g_byte_array_new();
        unsigned i, n = 0, n_calls = 10 * SERVER_CLIENT_BUDGET + 7;
        WireHeader h;
        uint8_t *data;

        peer_hello(f, &f->a, false);
        for (i = 0; i < n_calls; ++i)
                append_call(b, &f->a, "GetId");
        peer_send(&f->a, b->data, b->len);
        g_byte_array_free(b, TRUE);
        /* one iteration cannot answer everything: the budget leaves the rest for later */
        g_assert_cmpint(loop_run_once(f->s->loop, 0), >=, 0);
        g_assert_true(peer_recv(&f->a));
        while (peer_take_msg(&f->a, &h, &data)) {
                ++n;
                g_free(data);
        }
        g_assert_cmpuint(n, <=, SERVER_CLIENT_BUDGET);
        for (i = 0; i < 200 && n < n_calls; ++i) {
                pump(f);
                g_assert_true(peer_recv(&f->a));
                while (peer_take_msg(&f->a, &h, &data)) {
                        ++n;
                        g_assert_cmpuint(h.reply_serial, ==, n + 1);
                        g_free(data);
                }
        }
        g_assert_cmpuint(n, ==, n_calls);
}

/* The first string of @data's body (NameOwnerChanged's name). */
static const char *body_string(const WireHeader *h, const uint8_t *data) {
        return (const char *)data + h->body_offset + 4;
}

/*
 * More peers than one epoll_wait() returns (LOOP_EVENTS_MAX) close at once, then a
 * bystander calls: its answer comes after at most one slice of teardowns for each wakeup
 * before the one that reads its call (the teardowns wait on the closing list, a slice per
 * wakeup), not after every teardown of those wakeups (the old loop: 1,024 NameOwnerChanged
 * before the answer). Counted, not timed: the bystander watches NameOwnerChanged and
 * counts those that come before its answer on its own socket. The peers' teardowns then
 * come in the order they closed.
 */
static void test_close_storm(Fixture *f, gconstpointer ctx) {
        unsigned n = LOOP_EVENTS_MAX + 200, i, got = 0, before = UINT_MAX;
        struct rlimit rl;
        Peer *peers;
        WireHeader h;
        uint8_t *data;

        g_assert_cmpint(getrlimit(RLIMIT_NOFILE, &rl), ==, 0);
        if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < 2 * n + 64) {
                g_test_skip("the hard fd limit is too low for 2 fds per peer");
                return;
        }
        rl.rlim_cur = MAX(rl.rlim_cur, (rlim_t)(2 * n + 64));
        g_assert_cmpint(setrlimit(RLIMIT_NOFILE, &rl), ==, 0);

        peer_hello(f, &f->b, false);
        add_match(f, &f->b, "type='signal',member='NameOwnerChanged'");
        peers = g_new0(Peer, n);
        for (i = 0; i < n; ++i) {
                peer_connect(f, &peers[i]);
                peer_hello(f, &peers[i], false);
                /* the arrival's NameOwnerChanged */
                g_assert_cmpuint(peer_count_replies(&f->b), ==, 1);
        }

        for (i = 0; i < n; ++i)
                peer_close(&peers[i]);
        peer_send_call(&f->b, "GetId");
        for (i = 0; i < 1000 && (before == UINT_MAX || got < n); ++i) {
                g_assert_cmpint(loop_run_once(f->s->loop, 0), >=, 0);
                g_assert_true(peer_recv(&f->b));
                while (peer_take_msg(&f->b, &h, &data)) {
                        if (h.type == WIRE_MSG_METHOD_RETURN) {
                                before = got;
                        } else {
                                g_assert_cmpstr(h.member, ==, "NameOwnerChanged");
                                g_assert_cmpuint(got, <, n);
                                g_assert_cmpstr(body_string(&h, data), ==,
                                                peers[got].unique_name);
                                ++got;
                        }
                        g_free(data);
                }
        }
        g_test_message("before %u", before);
        g_assert_cmpuint(before, <=, SERVER_CLOSE_BUDGET * (n / LOOP_EVENTS_MAX));
        g_assert_cmpuint(got, ==, n);
        g_assert_cmpuint(f->s->n_clients, ==, 2);
        g_free(peers);
}

static void test_large_and_eof(Fixture *f, gconstpointer ctx) {
        static const size_t sizes[] = { 100, 70000, 300000, 3 * 1024 * 1024 };
        WireHeader h;
        uint8_t *data;
        size_t size, i;
        bool open = true;
        unsigned got = 0;

        peer_hello(f, &f->a, false);
        peer_hello(f, &f->b, false);
        add_match(f, &f->b, "type='signal',interface='org.example.T'");

        for (i = 0; i < G_N_ELEMENTS(sizes); ++i) {
                WireWriter w;
                uint8_t *blob = g_malloc0(sizes[i]);

                blob[sizes[i] - 1] = (uint8_t)i;
                wire_writer_init(&w);
                g_assert_cmpint(wire_writer_open(&w, 'a', "y"), ==, 0);
                for (size = 0; size < sizes[i]; ++size)
                        (void) wire_writer_append_basic(&w, 'y', &blob[size]);
                g_assert_cmpint(wire_writer_close(&w), ==, 0);
                data = build(&f->a, WIRE_MSG_SIGNAL, NULL, "/t", "org.example.T", "Big", &w, 0,
                             &size);
                wire_writer_deinit(&w);
                peer_send(&f->a, data, size);
                free(data);
                g_free(blob);
        }
        /* the sender hangs up at once: what it sent is still delivered */
        close(f->a.fd);
        f->a.fd = -1;
        for (i = 0; i < 500 && got < G_N_ELEMENTS(sizes); ++i) {
                g_assert_cmpint(loop_run_once(f->s->loop, 0), >=, 0);
                open = peer_recv(&f->b);
                g_assert_true(open);
                while (got < G_N_ELEMENTS(sizes) && peer_take_msg(&f->b, &h, &data)) {
                        if (h.type == WIRE_MSG_SIGNAL && h.interface &&
                            strcmp(h.interface, "org.example.T") == 0) {
                                g_assert_cmpuint(h.body_size, ==, 4 + sizes[got]);
                                g_assert_cmpuint(data[h.body_offset + 4 + sizes[got] - 1], ==, got);
                                g_assert_cmpstr(h.sender, ==, f->a.unique_name);
                                ++got;
                        }
                        g_free(data);
                }
        }
        g_assert_cmpuint(got, ==, G_N_ELEMENTS(sizes));
}

/* The first client: peer a's (connected first). */
static ProxyClient *client_a(Fixture *f) {
        return container_of(list_first(&f->s->clients), ProxyClient, link);
}

/* A signal with an `ay` body of @n bytes, its last byte @tag; spoofs SENDER with @sender. */
static uint8_t *build_big_signal(Peer *p, size_t n, uint8_t tag, const char *sender,
                                 uint32_t n_fds, size_t *ret_size) {
        WireMsgSpec spec = {
                .type = WIRE_MSG_SIGNAL, .serial = ++p->serial, .path = "/t",
                .interface = "org.example.T", .member = "Big", .sender = sender, .n_fds = n_fds,
        };
        uint8_t one = 0, *small = NULL, *data;
        uint32_t body_size = (uint32_t)(4 + n), len = (uint32_t)n;
        WireWriter w;
        WireHeader h;
        size_t size;

        /* built with a 1-byte array, then the array made @n bytes long (host byte order) */
        wire_writer_init(&w);
        g_assert_cmpint(wire_writer_open(&w, 'a', "y"), ==, 0);
        g_assert_cmpint(wire_writer_append_basic(&w, 'y', &one), ==, 0);
        g_assert_cmpint(wire_writer_close(&w), ==, 0);
        g_assert_cmpint(wire_message_build(&spec, &w, &small, &size), ==, 0);
        wire_writer_deinit(&w);
        g_assert_cmpint(wire_message_parse(small, size, n_fds, 0, &h), ==, 0);
        data = calloc(1, h.body_offset + 4 + n);
        g_assert_nonnull(data);
        memcpy(data, small, h.body_offset);
        memcpy(data + 4, &body_size, 4);
        memcpy(data + h.body_offset, &len, 4);
        data[h.body_offset + 4 + n - 1] = tag;
        free(small);
        *ret_size = h.body_offset + 4 + n;
        return data;
}

/* Wait for b's next signal from org.example.T; its bytes in *ret_data (g_free). */
static void peer_b_signal(Fixture *f, WireHeader *ret_hdr, uint8_t **ret_data) {
        unsigned i;

        for (i = 0; i < 1000; ++i) {
                while (peer_take_msg(&f->b, ret_hdr, ret_data)) {
                        if (ret_hdr->type == WIRE_MSG_SIGNAL && ret_hdr->interface &&
                            !strcmp(ret_hdr->interface, "org.example.T"))
                                return;
                        g_free(*ret_data);
                }
                g_assert_cmpint(loop_run_once(f->s->loop, 0), >=, 0);
                g_assert_true(peer_recv(&f->b));
        }
        g_assert_not_reached();
}

/*
 * A large message that arrives in pieces goes straight into its own buffer: the input
 * buffer stays at its default size (it grew to the message's size before), the header is
 * stamped (a spoofed SENDER replaced), the body arrives whole; a header that trickles in
 * byte by byte takes the same path once it is complete; small messages behind it in the
 * same write are read with its tail and delivered in order.
 */
static void test_large_in_place(Fixture *f, gconstpointer ctx) {
        static const size_t sizes[] = { CLIENT_IN_DIRECT, 300000, 3 * 1024 * 1024 + 3 };
        ProxyClient *ca;
        WireHeader h;
        uint8_t *data, *m;
        size_t size, i, off;

        peer_hello(f, &f->a, false);
        peer_hello(f, &f->b, false);
        add_match(f, &f->b, "type='signal',interface='org.example.T'");
        ca = client_a(f);
        for (i = 0; i < G_N_ELEMENTS(sizes); ++i) {
                GByteArray *b = g_byte_array_new();
                size_t small;

                m = build_big_signal(&f->a, sizes[i], (uint8_t)(i + 1), ":1.999", 0, &size);
                g_byte_array_append(b, m, (guint)size);
                free(m);
                m = build_big_signal(&f->a, 8, 0x77, NULL, 0, &small);
                g_byte_array_append(b, m, (guint)small);
                free(m);
                /* the fixed header and the first field byte by byte, then chunks */
                for (off = 0; off < 24; ++off) {
                        peer_send(&f->a, b->data + off, 1);
                        g_assert_cmpint(loop_run_once(f->s->loop, 0), >=, 0);
                }
                while (off < b->len) {
                        size_t n = MIN((size_t)b->len - off, (size_t)50000 + 777 * i);

                        peer_send(&f->a, b->data + off, n);
                        off += n;
                        g_assert_cmpint(loop_run_once(f->s->loop, 0), >=, 0);
                        (void) peer_recv(&f->b);
                        g_assert_cmpuint(ca->in_cap, ==, CLIENT_IN_DEFAULT);
                }
                g_byte_array_free(b, TRUE);
                peer_b_signal(f, &h, &data);
                g_assert_cmpuint(h.body_size, ==, 4 + sizes[i]);
                g_assert_cmpuint(data[h.body_offset + 4 + sizes[i] - 1], ==, i + 1);
                g_assert_cmpuint(data[h.body_offset + 4], ==, 0);
                g_assert_cmpstr(h.sender, ==, f->a.unique_name);
                g_free(data);
                peer_b_signal(f, &h, &data);
                g_assert_cmpuint(h.body_size, ==, 4 + 8);
                g_assert_cmpuint(data[h.body_offset + 4 + 7], ==, 0x77);
                g_free(data);
                g_assert_cmpuint(ca->in_cap, ==, CLIENT_IN_DEFAULT);
                g_assert_null(ca->in_msg);
        }
}

/*
 * After a large message read in place, the next read into the empty input buffer takes
 * CLIENT_IN_HEAD bytes: of a second large message that is all in the socket only its head
 * goes through the buffer (and is copied into the message), the rest is read in place. The
 * first large message after small ones still comes with a full read; a small message after
 * a large one is delivered as before and makes the reads full-size again.
 */
static void test_large_head(Fixture *f, gconstpointer ctx) {
        static const size_t n = 100000, first = 60000;  /* first: fits the socket buffer */
        static const bool head_only[] = { false, true, true, false };
        ProxyClient *ca;
        WireHeader h;
        uint8_t *data, *m;
        size_t size, i;

        peer_hello(f, &f->a, false);
        peer_hello(f, &f->b, false);
        add_match(f, &f->b, "type='signal',interface='org.example.T'");
        ca = client_a(f);
        for (i = 0; i < G_N_ELEMENTS(head_only); ++i) {
                if (i == 3) {
                        /* a small one in between */
                        m = build_big_signal(&f->a, 8, 0x55, NULL, 0, &size);
                        peer_send(&f->a, m, size);
                        free(m);
                        peer_b_signal(f, &h, &data);
                        g_assert_cmpuint(data[h.body_offset + 4 + 7], ==, 0x55);
                        g_free(data);
                        g_assert_false(ca->in_large);
                }
                m = build_big_signal(&f->a, n, (uint8_t)(i + 1), NULL, 0, &size);
                peer_send(&f->a, m, first);
                g_assert_cmpint(loop_run_once(f->s->loop, 0), >=, 0);
                g_assert_nonnull(ca->in_msg);
                /* the stamped SENDER adds a few dozen bytes */
                if (head_only[i])
                        g_assert_cmpuint(ca->in_msg_filled, <=, CLIENT_IN_HEAD + 64);
                else
                        g_assert_cmpuint(ca->in_msg_filled, >=, first);
                peer_send(&f->a, m + first, size - first);
                free(m);
                peer_b_signal(f, &h, &data);
                g_assert_cmpuint(h.body_size, ==, 4 + n);
                g_assert_cmpuint(data[h.body_offset + 4 + n - 1], ==, i + 1);
                g_assert_cmpstr(h.sender, ==, f->a.unique_name);
                g_free(data);
                g_assert_null(ca->in_msg);
                g_assert_true(ca->in_large);
        }
}

/* fds that came with the first bytes of a large message travel with it. */
static void test_large_fds(Fixture *f, gconstpointer ctx) {
        static const char text[] = "beside a large body";
        WireHeader h;
        uint8_t *data, *m;
        size_t size;
        char buf[64] = "";
        int memfd;

        peer_hello(f, &f->a, true);
        peer_hello(f, &f->b, true);
        add_match(f, &f->b, "type='signal',interface='org.example.T'");
        memfd = memfd_create("test", MFD_CLOEXEC);
        g_assert_cmpint(write(memfd, text, sizeof(text)), ==, (ssize_t)sizeof(text));
        m = build_big_signal(&f->a, 500000, 9, NULL, 1, &size);
        peer_send_fds(&f->a, m, 4096, &memfd, 1);
        close(memfd);
        g_assert_cmpint(loop_run_once(f->s->loop, 0), >=, 0);
        g_assert_nonnull(client_a(f)->in_msg);
        peer_send(&f->a, m + 4096, size - 4096);
        free(m);
        peer_b_signal(f, &h, &data);
        g_assert_cmpuint(h.n_fds, ==, 1);
        g_assert_cmpuint(data[h.body_offset + 4 + 500000 - 1], ==, 9);
        g_free(data);
        g_assert_cmpuint(f->b.n_fds, ==, 1);
        g_assert_cmpint(pread(f->b.fds[0], buf, sizeof(buf), 0), ==, (ssize_t)sizeof(text));
        g_assert_cmpstr(buf, ==, text);
}

/*
 * A large message read in place is checked as a small one: an invalid body (a string
 * without its NUL) or a UNIX_FDS field without the fds is found when it is complete and
 * the sender is dropped, nothing is delivered; an invalid header is found as soon as it is
 * in, the body never waited for.
 */
static void test_large_invalid(Fixture *f, gconstpointer ctx) {
        static const size_t n = 200000;
        unsigned variant;

        for (variant = 0; variant < 3; ++variant) {
                Fixture g = { 0 };
                uint8_t *m;
                size_t size;
                WireHeader h;

                setup(&g, NULL);
                peer_hello(&g, &g.a, true);
                peer_hello(&g, &g.b, true);
                add_match(&g, &g.b, "type='signal',interface='org.example.T'");
                m = build_big_signal(&g.a, n, 1, NULL, variant == 1 ? 1 : 0, &size);
                g_assert_cmpint(wire_message_parse(m, size, 1, 0, &h), ==, 0);
                if (variant == 0) {
                        /* signature "ay" -> "s": the 200000-byte string has no NUL at its end */
                        uint8_t *sig = (uint8_t *)h.signature;

                        sig[-1] = 1;
                        sig[0] = 's';
                        sig[1] = 0;
                        m[h.body_offset + 4 + n - 1] = 'x';
                } else if (variant == 2) {
                        /* the member is not a valid name */
                        ((char *)h.member)[0] = '9';
                }
                if (variant == 2) {
                        /* only the header and a little of the body: the verdict needs no more */
                        peer_send(&g.a, m, h.body_offset + 100);
                } else {
                        peer_send(&g.a, m, size);
                }
                free(m);
                g_assert_true(peer_dropped(&g, &g.a));
                pump(&g);
                g_assert_true(peer_recv(&g.b));
                while (peer_take_msg(&g.b, &h, &m)) {
                        g_assert_cmpstr(h.interface, !=, "org.example.T");
                        g_free(m);
                }
                teardown(&g, NULL);
                current = f;
        }
}

static void test_fd_passing(Fixture *f, gconstpointer ctx) {
        static const char text[] = "through the bus";
        WireWriter w;
        WireHeader h;
        uint8_t *data;
        size_t size;
        uint32_t idx = 0;
        char buf[64] = "";
        int memfd, i;

        peer_hello(f, &f->a, true);
        peer_hello(f, &f->b, true);
        memfd = memfd_create("test", MFD_CLOEXEC);
        g_assert_cmpint(memfd, >=, 0);
        g_assert_cmpint(write(memfd, text, sizeof(text)), ==, (ssize_t)sizeof(text));

        wire_writer_init(&w);
        g_assert_cmpint(wire_writer_append_basic(&w, 'h', &idx), ==, 0);
        data = build(&f->a, WIRE_MSG_METHOD_CALL, f->b.unique_name, "/t", "org.example.T",
                     "TakeFd", &w, 1, &size);
        wire_writer_deinit(&w);
        peer_send_fds(&f->a, data, size, &memfd, 1);
        free(data);
        close(memfd);

        for (i = 0; i < 10 && f->b.n_fds == 0; ++i) {
                pump(f);
                g_assert_true(peer_recv(&f->b));
        }
        g_assert_cmpuint(f->b.n_fds, ==, 1);
        g_assert_true(peer_take_msg(&f->b, &h, &data));
        g_assert_cmpstr(h.member, ==, "TakeFd");
        g_assert_cmpuint(h.n_fds, ==, 1);
        g_free(data);
        g_assert_cmpint(pread(f->b.fds[0], buf, sizeof(buf), 0), ==, (ssize_t)sizeof(text));
        g_assert_cmpstr(buf, ==, text);
}

static void test_fds_not_negotiated(Fixture *f, gconstpointer ctx) {
        WireWriter w;
        uint8_t *data;
        size_t size;
        uint32_t idx = 0;
        int memfd, i;
        bool open = true;

        peer_hello(f, &f->a, false);
        memfd = memfd_create("test", MFD_CLOEXEC);
        wire_writer_init(&w);
        g_assert_cmpint(wire_writer_append_basic(&w, 'h', &idx), ==, 0);
        data = build(&f->a, WIRE_MSG_METHOD_CALL, "org.freedesktop.DBus", "/", "org.example.T",
                     "TakeFd", &w, 1, &size);
        wire_writer_deinit(&w);
        peer_send_fds(&f->a, data, size, &memfd, 1);
        free(data);
        close(memfd);
        for (i = 0; i < 10 && open; ++i) {
                pump(f);
                open = peer_recv(&f->a);
        }
        g_assert_false(open);
        g_assert_cmpuint(f->s->n_clients, ==, 1);
}

static void test_malformed(Fixture *f, gconstpointer ctx) {
        static const uint8_t junk[16] = "l\1\0\2\0\0\0\0\0\0\0\0\0\0\0\0";  /* version 2 */
        bool open = true;
        int i;

        peer_hello(f, &f->a, false);
        peer_send(&f->a, junk, sizeof(junk));
        for (i = 0; i < 10 && open; ++i) {
                pump(f);
                open = peer_recv(&f->a);
        }
        g_assert_false(open);
        /* the other client is unaffected */
        peer_hello(f, &f->b, false);
        g_assert_cmpuint(f->s->n_clients, ==, 1);
}

static void test_rejected(Fixture *f, gconstpointer ctx) {
        static const char in[] = "\0AUTH EXTERNAL 3939393939\r\nBEGIN\r\n";   /* uid 99999 */
        bool open = true;
        int i;

        if (getuid() == 99999)
                return;
        peer_send(&f->a, in, sizeof(in) - 1);
        for (i = 0; i < 10 && open; ++i) {
                pump(f);
                open = peer_recv(&f->a);
        }
        g_assert_false(open);
        g_assert_cmpuint(f->a.in->len, ==, strlen("REJECTED EXTERNAL\r\n"));
        peer_expect_line(&f->a, "REJECTED EXTERNAL\r\n");
}

/* The auth timer is armed until Hello has succeeded, then freed: an authenticated peer
 * that has not said Hello keeps it (dbus-daemon drops it when it runs out), a registered
 * one does not (it used to keep one armed timer per peer for its whole life). */
static void test_auth_timer(Fixture *f, gconstpointer ctx) {
        GByteArray *b = auth_bytes(false);
        unsigned armed = 0, n = 0;
        List *i;

        list_for_each(i, &f->s->clients)
                g_assert_nonnull(list_entry(i, ProxyClient, link)->auth_timer);
        peer_send(&f->a, b->data, b->len);
        g_byte_array_free(b, TRUE);
        peer_hello(f, &f->b, false);
        list_for_each(i, &f->s->clients) {
                ProxyClient *c = list_entry(i, ProxyClient, link);

                ++n;
                if (c->auth_timer) {
                        ++armed;
                        g_assert_cmpint(c->state, ==, CLIENT_STATE_RUNNING);
                        g_assert_false(c->conn->active);
                } else {
                        g_assert_true(c->conn->active);
                        g_assert_cmpstr(c->conn->unique_name, ==, f->b.unique_name);
                }
        }
        g_assert_cmpuint(n, ==, 2);
        g_assert_cmpuint(armed, ==, 1);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
#define T(name, fn) g_test_add("/proxy/client/" name, Fixture, NULL, setup, fn, teardown)
        T("pipelined", test_pipelined);
        T("trickle", test_trickle);
        T("budget", test_budget);
        T("fair", test_fair);
        T("close-storm", test_close_storm);
        T("large-and-eof", test_large_and_eof);
        T("large-in-place", test_large_in_place);
        T("large-head", test_large_head);
        T("large-fds", test_large_fds);
        T("large-invalid", test_large_invalid);
        T("fd-passing", test_fd_passing);
        T("fds-not-negotiated", test_fds_not_negotiated);
        T("malformed", test_malformed);
        T("rejected", test_rejected);
        T("auth-timer", test_auth_timer);
#undef T
        return g_test_run();
}
