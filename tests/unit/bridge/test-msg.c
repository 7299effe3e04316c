/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * BridgeMsg: stamping in one allocation, the header derived for the new bytes, plain
 * copies, wrapping built messages, references and fds; the bus's buffer cache: reuse,
 * its bound, large messages past it, poisoning under ASan, a cache that outlives its bus.
 */
#include "tests/unit/bridge/fixture.h"
#if defined(__SANITIZE_ADDRESS__)
#define TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TEST_ASAN 1
#endif
#endif
#ifdef TEST_ASAN
#include <sanitizer/asan_interface.h>
#endif

static void test_stamped(Fixture *f, gconstpointer ctx) {
        WireMsgSpec spec = { .type = WIRE_MSG_SIGNAL, .serial = 3, .path = "/p", .interface = "t.I",
                             .member = "M", .sender = ":9.forged" };
        uint8_t *data = NULL;
        size_t size;
        WireHeader hdr, again;
        BridgeMsg *m = NULL, *copy = NULL;
        WireWriter w;

        wire_writer_init(&w);
        g_assert_cmpint(wire_writer_append_basic(&w, 's', "arg"), ==, 0);
        g_assert_cmpint(wire_message_build(&spec, &w, &data, &size), ==, 0);
        wire_writer_deinit(&w);
        g_assert_cmpint(wire_message_parse(data, size, 0, 0, &hdr), ==, 0);

        g_assert_cmpint(bridge_msg_new_stamped(data, &hdr, ":1.42", 42, &m), ==, 0);
        g_assert_false(m->data_separate);
        g_assert_true(m->data >= (uint8_t *)(m + 1));   /* one allocation: bytes follow */
        g_assert_cmpuint(m->sender_id, ==, 42);
        g_assert_cmpstr(m->hdr.sender, ==, ":1.42");
        g_assert_true((const uint8_t *)m->hdr.sender > m->data &&
                      (const uint8_t *)m->hdr.sender < m->data + m->size);
        g_assert_true((const uint8_t *)m->hdr.member > m->data &&
                      (const uint8_t *)m->hdr.member < m->data + m->size);
        g_assert_cmpuint(m->hdr.total_size, ==, m->size);
        g_assert_cmpuint(m->hdr.serial, ==, 3);
        /* the whole stamped message is valid, body included */
        g_assert_cmpint(wire_message_parse(m->data, m->size, 0, 0, &again), ==, 0);
        g_assert_cmpstr(again.signature, ==, "s");

        g_assert_cmpint(bridge_msg_new_stamped(data, &hdr, NULL, 0, &copy), ==, 0);
        g_assert_cmpuint(copy->size, ==, size);
        g_assert_cmpmem(copy->data, size, data, size);
        g_assert_cmpstr(copy->hdr.sender, ==, ":9.forged");

        g_assert_true(bridge_msg_ref(m) == m);
        g_assert_cmpuint(m->n_refs, ==, 2);
        g_assert_null(bridge_msg_unref(m));
        g_assert_null(bridge_msg_unref(m));
        bridge_msg_unref(copy);
        g_assert_null(bridge_msg_ref(NULL));
        g_assert_null(bridge_msg_unref(NULL));

        /* wrapping takes the bytes */
        g_assert_cmpint(bridge_msg_new_take(data, size, 0, &m), ==, 0);
        g_assert_true(m->data == data);
        g_assert_true(m->data_separate);
        g_assert_cmpstr(m->hdr.member, ==, "M");
        bridge_msg_unref(m);

        data = g_malloc0(32);
        g_assert_cmpint(bridge_msg_new_take(data, 32, 0, &m), ==, -EINVAL);
        g_free(data);
}

/* A large "ay" message read in place: with only its head in memory (the array's contents
 * passed on elsewhere, proxy/client-splice.c) the verdict and header are those of the
 * whole message's check; a wrong length word is found from the head alone. */
static void test_incoming_bytes(Fixture *f, gconstpointer ctx) {
        WireMsgSpec spec = { .type = WIRE_MSG_METHOD_CALL, .serial = 5, .path = "/p",
                             .member = "M", .destination = ":1.7" };
        uint8_t *data = NULL, blob[1000];
        size_t size, filled, full_filled, i;
        WireHeader hh;
        WireWriter w;

        for (i = 0; i < sizeof(blob); ++i)
                blob[i] = (uint8_t)(i * 13);
        wire_writer_init(&w);
        g_assert_cmpint(wire_writer_open(&w, 'a', "y"), ==, 0);
        for (i = 0; i < sizeof(blob); ++i)
                g_assert_cmpint(wire_writer_append_basic(&w, 'y', &blob[i]), ==, 0);
        g_assert_cmpint(wire_writer_close(&w), ==, 0);
        g_assert_cmpint(wire_message_build(&spec, &w, &data, &size), ==, 0);
        wire_writer_deinit(&w);
        g_assert_cmpint(wire_message_parse(data, size, 0, 0, &hh), ==, 0);
        for (int bad = 0; bad < 2; ++bad) {
                size_t head = hh.body_offset + 16;
                BridgeMsg *m = NULL, *whole = NULL;
                WireHeader h;

                if (bad)
                        data[hh.body_offset] ^= 1;      /* 999 or 1001 in either order */
                g_assert_cmpint(wire_message_parse(data, head, 0, WIRE_PARSE_HEADER_ONLY, &h),
                                ==, 0);
                g_assert_cmpint(bridge_msg_new_incoming(NULL, data, head, &h, ":1.42", 42, &m,
                                                        &filled), ==, 0);
                g_assert_cmpint(bridge_msg_new_incoming(NULL, data, head, &h, ":1.42", 42,
                                                        &whole, &full_filled), ==, 0);
                memcpy(whole->data + full_filled, data + head, size - head);
                g_assert_cmpint(bridge_msg_incoming_done_bytes(m, 0, filled), ==,
                                bridge_msg_incoming_done(whole, 0));
                if (!bad) {
                        g_assert_cmpuint(m->hdr.total_size, ==, whole->hdr.total_size);
                        g_assert_cmpuint(m->hdr.body_offset, ==, whole->hdr.body_offset);
                        g_assert_cmpuint(m->hdr.body_size, ==, sizeof(blob) + 4);
                        g_assert_cmpstr(m->hdr.sender, ==, ":1.42");
                        g_assert_cmpstr(m->hdr.destination, ==, ":1.7");
                        g_assert_cmpstr(m->hdr.signature, ==, "ay");
                        g_assert_true((const uint8_t *)m->hdr.member > m->data &&
                                      (const uint8_t *)m->hdr.member < m->data + filled);
                }
                bridge_msg_unref(m);
                bridge_msg_unref(whole);
        }
        free(data);
}

static void test_fds(Fixture *f, gconstpointer ctx) {
        BridgeMsg *m;
        int *fds = g_new(int, 2), a = dup(0), b = dup(0);

        fixture_conn(f, 0);
        m = test_msg_new(f->c[0], &(TestMsg){ .type = WIRE_MSG_SIGNAL });
        fds[0] = a;
        fds[1] = b;
        bridge_msg_take_fds(m, fds, 2);
        g_assert_cmpuint(m->n_fds, ==, 2);
        bridge_msg_ref(m);
        bridge_msg_unref(m);
        g_assert_cmpint(fcntl(a, F_GETFD), >=, 0);
        bridge_msg_unref(m);
        g_assert_cmpint(fcntl(a, F_GETFD), <, 0);
        g_assert_cmpint(fcntl(b, F_GETFD), <, 0);
}

/* A signal with a string of @body_len bytes as body, built and parsed; free() the bytes. */
static uint8_t *cache_msg_data(size_t body_len, WireHeader *ret_hdr) {
        WireMsgSpec spec = { .type = WIRE_MSG_SIGNAL, .serial = 5, .path = "/p",
                             .interface = "t.I", .member = "M" };
        uint8_t *data = NULL;
        char *body = g_strnfill(body_len, 'x');
        WireWriter w;
        size_t size;

        wire_writer_init(&w);
        g_assert_cmpint(wire_writer_append_basic(&w, 's', body), ==, 0);
        g_assert_cmpint(wire_message_build(&spec, &w, &data, &size), ==, 0);
        wire_writer_deinit(&w);
        g_free(body);
        g_assert_cmpint(wire_message_parse(data, size, 0, 0, ret_hdr), ==, 0);
        return data;
}

static void test_cache(Fixture *f, gconstpointer ctx) {
        BridgeMsgCache *cache = f->bus->msg_cache;
        BridgeMsg *m = NULL, *again = NULL, *many[300];
        WireHeader hdr, parsed;
        uint8_t *data = cache_msg_data(8, &hdr), *big;
        unsigned i, kept;

        g_assert_cmpuint(bridge_msg_cache_n_kept(cache), ==, 0);
        g_assert_cmpint(bridge_msg_new_stamped_cached(cache, data, &hdr, ":1.7", 7, &m), ==, 0);
        g_assert_true(m->cache == cache);
        /* the derived header is the one a parse of the stamped bytes gives */
        g_assert_cmpint(wire_message_parse(m->data, m->size, 0, 0, &parsed), ==, 0);
        g_assert_cmpuint(parsed.fields_size, ==, m->hdr.fields_size);
        g_assert_cmpuint(parsed.body_offset, ==, m->hdr.body_offset);
        g_assert_true(parsed.member == m->hdr.member && parsed.sender == m->hdr.sender);
        bridge_msg_unref(m);
        g_assert_cmpuint(bridge_msg_cache_n_kept(cache), ==, 1);
#ifdef TEST_ASAN
        /* a kept buffer is poisoned: a use after the last unref is still an ASan error */
        g_assert_true(__asan_address_is_poisoned(m));
        g_assert_true(__asan_address_is_poisoned((uint8_t *)m + 300));
#endif
        g_assert_cmpint(bridge_msg_new_stamped_cached(cache, data, &hdr, ":1.8", 8, &again), ==, 0);
        g_assert_true(again == m);              /* the same buffer, reused */
        g_assert_cmpuint(bridge_msg_cache_n_kept(cache), ==, 0);
        g_assert_cmpuint(again->n_refs, ==, 1);
        g_assert_cmpuint(again->n_fds, ==, 0);
        g_assert_false(again->has_bloom);
        g_assert_cmpstr(again->hdr.sender, ==, ":1.8");
        bridge_msg_unref(again);

        /* bounded: after a burst most buffers go back to malloc */
        for (i = 0; i < G_N_ELEMENTS(many); ++i)
                g_assert_cmpint(bridge_msg_new_stamped_cached(cache, data, &hdr, ":1.7", 7,
                                                              &many[i]), ==, 0);
        for (i = 0; i < G_N_ELEMENTS(many); ++i)
                bridge_msg_unref(many[i]);
        kept = bridge_msg_cache_n_kept(cache);
        g_assert_cmpuint(kept, >, 0);
        g_assert_cmpuint(kept, <, G_N_ELEMENTS(many));
        free(data);

        /* over the largest class: plain malloc, never kept */
        big = cache_msg_data(256 * 1024, &hdr);
        g_assert_cmpint(bridge_msg_new_stamped_cached(cache, big, &hdr, ":1.7", 7, &m), ==, 0);
        g_assert_null(m->cache);
        g_assert_cmpmem(m->data + m->hdr.body_offset, m->hdr.body_size,
                        big + hdr.body_offset, hdr.body_size);
        bridge_msg_unref(m);
        g_assert_cmpuint(bridge_msg_cache_n_kept(cache), ==, kept);
        free(big);
}

static void test_cache_outlives_bus(Fixture *f, gconstpointer ctx) {
        WireHeader hdr;
        uint8_t *data = cache_msg_data(100, &hdr);
        BridgeMsg *m = NULL, *kept = NULL;
        Bus *bus = NULL;

        g_assert_cmpint(bus_new(NULL, &bus), ==, 0);
        g_assert_cmpint(bridge_msg_new_stamped_cached(bus->msg_cache, data, &hdr, ":1.1", 1, &m),
                        ==, 0);
        g_assert_cmpint(bridge_msg_new_stamped_cached(bus->msg_cache, data, &hdr, ":1.1", 1,
                                                      &kept), ==, 0);
        bridge_msg_unref(kept);
        bus_free(bus);
        /* still whole; its buffer and the cache go when it dies (ASan checks for leaks) */
        g_assert_cmpstr(m->hdr.member, ==, "M");
        g_assert_cmpstr(m->hdr.sender, ==, ":1.1");
        bridge_msg_unref(m);
        free(data);
}

static void test_limits(Fixture *f, gconstpointer ctx) {
        BusLimits s, y;

        bus_limits_init_session(&s);
        bus_limits_init_system(&y);
        /* /usr/share/dbus-1/session.conf and dbus-daemon's built-in values */
        g_assert_cmpuint(s.max_incoming_bytes, ==, 1000000000);
        g_assert_cmpuint(s.max_names_per_connection, ==, 50000);
        g_assert_cmpuint(s.max_match_rules_per_connection, ==, 50000);
        g_assert_cmpuint(s.max_replies_per_connection, ==, 50000);
        g_assert_cmpuint(s.max_connections_per_user, ==, 100000);
        g_assert_cmpuint(s.auth_timeout_usec, ==, 240000000);
        g_assert_cmpuint(s.max_message_unix_fds, ==, 16);
        g_assert_cmpuint(y.max_incoming_bytes, ==, 133169152);
        g_assert_cmpuint(y.max_message_size, ==, 33554432);
        g_assert_cmpuint(y.max_outgoing_unix_fds, ==, 64);
        g_assert_cmpuint(y.max_names_per_connection, ==, 512);
        g_assert_cmpuint(y.max_replies_per_connection, ==, 128);
        g_assert_cmpuint(y.max_connections_per_user, ==, 256);
        g_assert_cmpuint(y.auth_timeout_usec, ==, 5000000);
        g_assert_cmpuint(y.reply_timeout_usec, ==, 0);
        g_assert_cmpuint(s.reply_timeout_usec, ==, 0);
        /* the default of bus_new() is the session's */
        g_assert_cmpmem(&f->bus->limits, sizeof(s), &s, sizeof(s));
        /* a random id */
        g_assert_false(f->bus->id[0] == 0 && f->bus->id[1] == 0 && f->bus->id[2] == 0 &&
                       f->bus->id[3] == 0 && f->bus->id[4] == 0);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add("/bridge/msg/stamped", Fixture, NULL, fixture_setup, test_stamped,
                   fixture_teardown);
        g_test_add("/bridge/msg/incoming-bytes", Fixture, NULL, fixture_setup,
                   test_incoming_bytes, fixture_teardown);
        g_test_add("/bridge/msg/fds", Fixture, NULL, fixture_setup, test_fds, fixture_teardown);
        g_test_add("/bridge/msg/cache", Fixture, NULL, fixture_setup, test_cache,
                   fixture_teardown);
        g_test_add("/bridge/msg/cache-outlives-bus", Fixture, NULL, fixture_setup,
                   test_cache_outlives_bus, fixture_teardown);
        g_test_add("/bridge/msg/limits", Fixture, NULL, fixture_setup, test_limits,
                   fixture_teardown);
        return g_test_run();
}
