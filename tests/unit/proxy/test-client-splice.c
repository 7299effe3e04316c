/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Large byte arrays spliced through the bus (proxy/client-splice.h), on the real core and
 * driver with socketpairs as peers. What a receiver reads is byte for byte what the
 * in-memory path gives (the same scenario run with the pipe path off): calls, replies,
 * signals to one peer, either byte order, with an fd. A receiver that does not read gets
 * what fits at once and the rest from memory, and the sender goes on meanwhile; a sender
 * that hangs up mid-array delivers nothing and leaves the receiver's stream intact; a
 * receiver that is gone or cannot be written to costs the sender nothing; a monitor gets
 * the bytes (the array is not spliced then); a pipe that fills up before the array is in
 * is emptied into memory; a wrong length word drops the sender, as on the in-memory path.
 */
#include <sys/mman.h>
#include "proxy/client-splice.h"
#include "tests/unit/proxy/client-peers.h"
#include "tests/unit/wire/raw.h"

#define BIG (1024u * 1024u)

/* Byte @i of the array seeded @seed. */
static uint8_t pattern(size_t i, uint8_t seed) {
        return (uint8_t)(i * 31u + (i >> 11) + seed);
}

typedef struct BigSpec {
        bool be;
        uint8_t type;                   /* call, return or signal */
        const char *dest;
        uint32_t reply_serial;
        uint32_t n_fds;
        size_t n;                       /* array bytes */
        uint8_t seed;
        int32_t len_delta;              /* added to the length word (invalid when not 0) */
} BigSpec;

/* A message whose body is one `ay` of spec->n bytes (pattern()). */
static uint8_t *build_big(Peer *p, const BigSpec *spec, size_t *ret_size) {
        uint8_t *chunk = g_malloc(spec->n);
        size_t i;
        Raw r;

        raw_init(&r, spec->be, spec->type, 0, ++p->serial);
        raw_field_s(&r, 1, "o", "/big");
        if (spec->type == WIRE_MSG_SIGNAL)
                raw_field_s(&r, 2, "s", "org.example.Big");
        if (spec->type != WIRE_MSG_METHOD_RETURN)
                raw_field_s(&r, 3, "s", "Take");
        if (spec->reply_serial)
                raw_field_u(&r, 5, spec->reply_serial);
        raw_field_s(&r, 6, "s", spec->dest);
        raw_field_s(&r, 8, "g", "ay");
        if (spec->n_fds)
                raw_field_u(&r, 9, spec->n_fds);
        raw_fields_end(&r);
        raw_u32(&r, (uint32_t)((int64_t)spec->n + spec->len_delta));
        for (i = 0; i < spec->n; ++i)
                chunk[i] = pattern(i, spec->seed);
        raw_bytes(&r, chunk, spec->n);
        g_free(chunk);
        return raw_finish(&r, ret_size);
}

/* Run the loop and read @p until a whole message is there; it goes to *ret (g_free). */
static void wait_msg(Fixture *f, Peer *p, WireHeader *ret_hdr, uint8_t **ret) {
        unsigned i;

        for (i = 0; i < 2000; ++i) {
                if (peer_take_msg(p, ret_hdr, ret))
                        return;
                g_assert_cmpint(loop_run_once(f->s->loop, 0), >=, 0);
                g_assert_true(peer_recv(p));
        }
        g_assert_not_reached();
}

/* Send all of @data while nobody reads: the loop runs whenever the socket is full. */
static void send_unread(Fixture *f, Peer *p, const uint8_t *data, size_t size) {
        size_t done = 0;

        while (done < size) {
                ssize_t n = send(p->fd, data + done, size - done, MSG_NOSIGNAL);

                if (n < 0 && errno == EAGAIN) {
                        g_assert_cmpint(loop_run_once(f->s->loop, 0), >=, 0);
                        continue;
                }
                g_assert_cmpint(n, >, 0);
                done += (size_t)n;
        }
}

/* @p calls the driver's GetId and gets the answer as its next message. */
static void expect_get_id(Fixture *f, Peer *p) {
        WireHeader h;
        uint8_t *data;

        peer_send_call(p, "GetId");
        wait_msg(f, p, &h, &data);
        g_assert_cmpint(h.type, ==, WIRE_MSG_METHOD_RETURN);
        g_assert_cmpuint(h.reply_serial, ==, p->serial);
        g_assert_cmpstr(h.signature, ==, "s");
        g_free(data);
}

/* @data (a message from the bus) carries the array spec->n bytes seeded spec->seed. */
static void assert_big(const WireHeader *h, const uint8_t *data, const BigSpec *spec) {
        size_t i;

        g_assert_cmpuint(h->body_size, ==, 4 + spec->n);
        g_assert_cmpstr(h->signature, ==, "ay");
        for (i = 0; i < spec->n; ++i)
                if (data[h->body_offset + 4 + i] != pattern(i, spec->seed))
                        g_assert_cmpuint(i, ==, spec->n);       /* the first wrong byte */
}

enum { V_CALL, V_CALL_BE, V_REPLY, V_REPLY_BE, V_SIGNAL, V_FDS, _V_N };

/*
 * One variant in a fresh bus: a sends b a large array (V_REPLY: b answers a's small call
 * with one); the receiver's bytes (and its fd's contents) go to @out.
 */
static void run_variant(unsigned v, bool splice, GByteArray *out, uint64_t *ret_spliced) {
        static const char text[] = "beside a large array";
        uint64_t before = client_splice_bytes_spliced;
        Fixture g = { 0 };
        BigSpec spec = { .be = v == V_CALL_BE || v == V_REPLY_BE, .type = WIRE_MSG_METHOD_CALL,
                         .n = BIG, .seed = (uint8_t)v };
        Peer *from = &g.a, *to = &g.b;
        WireHeader h;
        uint8_t *m, *data;
        size_t size;
        char buf[64] = "";
        int memfd = -1;

        setup(&g, NULL);
        g.s->splice.unavailable = !splice;
        peer_hello(&g, &g.a, true);
        peer_hello(&g, &g.b, true);
        spec.dest = g.b.unique_name;
        if (v == V_REPLY || v == V_REPLY_BE) {
                /* a's call, then b's large reply to it */
                size_t call_size;
                uint8_t *call = build(&g.a, WIRE_MSG_METHOD_CALL, g.b.unique_name, "/q",
                                      NULL, "Ask", NULL, 0, &call_size);

                peer_send(&g.a, call, call_size);
                free(call);
                wait_msg(&g, &g.b, &h, &data);
                g_assert_cmpstr(h.member, ==, "Ask");
                g_free(data);
                spec.type = WIRE_MSG_METHOD_RETURN;
                spec.reply_serial = g.a.serial;
                spec.dest = g.a.unique_name;
                from = &g.b;
                to = &g.a;
        } else if (v == V_SIGNAL) {
                spec.type = WIRE_MSG_SIGNAL;
        }
        if (v == V_FDS) {
                spec.n_fds = 1;
                memfd = memfd_create("test", MFD_CLOEXEC);
                g_assert_cmpint(write(memfd, text, sizeof(text)), ==, (ssize_t)sizeof(text));
        }
        m = build_big(from, &spec, &size);
        /* the header and a little of the array, then the rest: the pipe path's case */
        peer_send_fds(from, m, 4096, &memfd, memfd >= 0 ? 1 : 0);
        if (memfd >= 0)
                close(memfd);
        g_assert_cmpint(loop_run_once(g.s->loop, 0), >=, 0);
        peer_send(from, m + 4096, size - 4096);
        free(m);
        wait_msg(&g, to, &h, &data);
        g_assert_cmpstr(h.sender, ==, from->unique_name);
        assert_big(&h, data, &spec);
        g_byte_array_append(out, data, h.total_size);
        g_free(data);
        if (v == V_FDS) {
                g_assert_cmpuint(to->n_fds, ==, 1);
                g_assert_cmpint(pread(to->fds[0], buf, sizeof(buf), 0), ==, (ssize_t)sizeof(text));
                g_byte_array_append(out, (const uint8_t *)buf, sizeof(text));
        }
        /* both stay connected, their streams in step */
        expect_get_id(&g, &g.a);
        expect_get_id(&g, &g.b);
        g_assert_cmpuint(g.s->splice.n_used, ==, 0);
        *ret_spliced = client_splice_bytes_spliced - before;
        teardown(&g, NULL);
}

/* What receivers read is the in-memory path's, byte for byte; the array was spliced. */
static void test_identical(Fixture *f, gconstpointer ctx) {
        unsigned v;

        for (v = 0; v < _V_N; ++v) {
                GByteArray *mem = g_byte_array_new(), *piped = g_byte_array_new();
                uint64_t spliced_mem, spliced;

                run_variant(v, false, mem, &spliced_mem);
                run_variant(v, true, piped, &spliced);
                g_assert_cmpuint(spliced_mem, ==, 0);
                g_assert_cmpuint(spliced, >=, BIG - 4096);
                g_assert_cmpuint(piped->len, ==, mem->len);
                g_assert_true(memcmp(piped->data, mem->data, mem->len) == 0);
                g_byte_array_free(mem, TRUE);
                g_byte_array_free(piped, TRUE);
        }
        current = f;
}

/*
 * A receiver that does not read: what its socket takes at once is spliced, the rest is
 * read from the pipe into memory and written when it reads. The sender is answered
 * meanwhile; a second large array to the busy receiver takes the in-memory path; a small
 * message after them comes after them.
 */
static void test_slow_receiver(Fixture *f, gconstpointer ctx) {
        BigSpec one = { .type = WIRE_MSG_METHOD_CALL, .n = 3 * BIG, .seed = 7 };
        BigSpec two = { .type = WIRE_MSG_METHOD_CALL, .n = BIG, .seed = 8 };
        uint64_t spliced = client_splice_bytes_spliced, filled = client_splice_bytes_filled;
        WireHeader h;
        uint8_t *m, *data;
        size_t size;

        peer_hello(f, &f->a, false);
        peer_hello(f, &f->b, false);
        one.dest = two.dest = f->b.unique_name;
        m = build_big(&f->a, &one, &size);
        send_unread(f, &f->a, m, size);
        free(m);
        pump(f);
        g_assert_cmpuint(client_splice_bytes_spliced - spliced, >, 0);
        g_assert_cmpuint(client_splice_bytes_spliced - spliced, <, 3 * BIG);
        g_assert_cmpuint(client_splice_bytes_filled - filled, >, 0);
        g_assert_cmpuint(f->s->splice.n_used, ==, 0);
        expect_get_id(f, &f->a);

        spliced = client_splice_bytes_spliced;
        m = build_big(&f->a, &two, &size);
        send_unread(f, &f->a, m, size);
        free(m);
        m = build(&f->a, WIRE_MSG_METHOD_CALL, f->b.unique_name, "/q", NULL, "After", NULL, 0,
                  &size);
        send_unread(f, &f->a, m, size);
        free(m);
        pump(f);
        expect_get_id(f, &f->a);
        g_assert_cmpuint(client_splice_bytes_spliced, ==, spliced);

        wait_msg(f, &f->b, &h, &data);
        g_assert_cmpstr(h.sender, ==, f->a.unique_name);
        assert_big(&h, data, &one);
        g_free(data);
        wait_msg(f, &f->b, &h, &data);
        assert_big(&h, data, &two);
        g_free(data);
        wait_msg(f, &f->b, &h, &data);
        g_assert_cmpstr(h.member, ==, "After");
        g_free(data);
}

/* The sender hangs up with half its array sent: the receiver gets nothing of it. */
static void test_sender_gone(Fixture *f, gconstpointer ctx) {
        BigSpec spec = { .type = WIRE_MSG_METHOD_CALL, .n = BIG, .seed = 3 };
        WireHeader h;
        uint8_t *m, *data;
        size_t size;

        peer_hello(f, &f->a, false);
        peer_hello(f, &f->b, false);
        spec.dest = f->b.unique_name;
        m = build_big(&f->a, &spec, &size);
        peer_send(&f->a, m, size / 2);
        free(m);
        pump(f);
        g_assert_cmpuint(f->s->splice.n_used, ==, 1);
        close(f->a.fd);
        f->a.fd = -1;
        pump(f);
        g_assert_cmpuint(f->s->splice.n_used, ==, 0);
        g_assert_cmpuint(f->s->n_clients, ==, 1);
        g_assert_true(peer_recv(&f->b));
        g_assert_false(peer_take_msg(&f->b, &h, &data));
        expect_get_id(f, &f->b);
}

/*
 * The receiver goes mid-array (hung up; or only its reading end shut, so that the bus
 * finds out when it writes): the sender's next message is read and answered, and what it
 * is told is what the in-memory path tells it.
 */
static void receiver_gone(bool splice, int how, GPtrArray *seen) {
        BigSpec spec = { .type = WIRE_MSG_METHOD_CALL, .n = BIG, .seed = 4 };
        Fixture g = { 0 };
        WireHeader h;
        uint8_t *m, *data;
        size_t size;
        unsigned i;

        setup(&g, NULL);
        g.s->splice.unavailable = !splice;
        peer_hello(&g, &g.a, false);
        peer_hello(&g, &g.b, false);
        spec.dest = g.b.unique_name;
        m = build_big(&g.a, &spec, &size);
        if (how == SHUT_RD)
                g_assert_cmpint(shutdown(g.b.fd, SHUT_RD), ==, 0);
        send_unread(&g, &g.a, m, size / 2);
        pump(&g);
        if (how != SHUT_RD) {
                close(g.b.fd);
                g.b.fd = -1;
                pump(&g);
        }
        send_unread(&g, &g.a, m + size / 2, size - size / 2);
        free(m);
        peer_send_call(&g.a, "GetId");
        for (i = 0; i < 200; ++i) {
                pump(&g);
                g_assert_true(peer_recv(&g.a));
                while (peer_take_msg(&g.a, &h, &data)) {
                        g_ptr_array_add(seen, g_strdup_printf("%u %s %s %u", h.type,
                                                              h.error_name ? h.error_name : "",
                                                              h.member ? h.member : "",
                                                              h.reply_serial));
                        g_free(data);
                        if (h.type == WIRE_MSG_METHOD_RETURN && h.reply_serial == g.a.serial)
                                i = 200;
                }
        }
        g_assert_cmpuint(g.s->splice.n_used, ==, 0);
        g_assert_cmpuint(g.s->n_clients, ==, 1);
        teardown(&g, NULL);
}

static int cmp_strp(gconstpointer a, gconstpointer b) {
        return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_receiver_gone(Fixture *f, gconstpointer ctx) {
        static const int hows[] = { SHUT_RDWR, SHUT_RD };
        unsigned k, i;

        for (k = 0; k < G_N_ELEMENTS(hows); ++k) {
                GPtrArray *mem = g_ptr_array_new_with_free_func(g_free);
                GPtrArray *piped = g_ptr_array_new_with_free_func(g_free);
                uint64_t spliced = client_splice_bytes_spliced;

                receiver_gone(false, hows[k], mem);
                receiver_gone(true, hows[k], piped);
                /* SHUT_RD: the bus tried to splice and found it broken */
                if (hows[k] == SHUT_RD)
                        g_assert_cmpuint(client_splice_bytes_spliced, ==, spliced);
                g_assert_cmpuint(piped->len, ==, mem->len);
                g_assert_cmpuint(mem->len, >=, 1);
                /* the callee's NoReply and GetId's answer are independent: the pipe path
                 * finds the broken socket a read earlier (it reads no further than the
                 * message), so they may come in either order */
                g_ptr_array_sort(mem, cmp_strp);
                g_ptr_array_sort(piped, cmp_strp);
                for (i = 0; i < mem->len; ++i)
                        g_assert_cmpstr(piped->pdata[i], ==, mem->pdata[i]);
                g_ptr_array_free(mem, TRUE);
                g_ptr_array_free(piped, TRUE);
        }
        current = f;
}

/* A monitor needs the bytes too: the array is read into memory, both get the same bytes. */
static void test_monitor(Fixture *f, gconstpointer ctx) {
        BigSpec spec = { .type = WIRE_MSG_METHOD_CALL, .n = BIG, .seed = 5 };
        uint64_t spliced = client_splice_bytes_spliced;
        WireHeader h, mh;
        uint8_t *m, *data, *seen = NULL;
        Peer mon = { 0 };
        WireWriter w;
        size_t size;
        unsigned i;

        peer_hello(f, &f->a, false);
        peer_hello(f, &f->b, false);
        peer_connect(f, &mon);
        peer_hello(f, &mon, false);
        wire_writer_init(&w);
        g_assert_cmpint(wire_writer_open(&w, 'a', "s"), ==, 0);
        g_assert_cmpint(wire_writer_close(&w), ==, 0);
        g_assert_cmpint(wire_writer_append_basic(&w, 'u', &(uint32_t){ 0 }), ==, 0);
        m = build(&mon, WIRE_MSG_METHOD_CALL, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                  "org.freedesktop.DBus.Monitoring", "BecomeMonitor", &w, 0, &size);
        wire_writer_deinit(&w);
        peer_send(&mon, m, size);
        free(m);
        wait_msg(f, &mon, &h, &data);
        g_assert_cmpstr(h.error_name, ==, NULL);
        g_assert_cmpint(h.type, ==, WIRE_MSG_METHOD_RETURN);
        g_free(data);

        spec.dest = f->b.unique_name;
        m = build_big(&f->a, &spec, &size);
        peer_send(&f->a, m, 4096);
        pump(f);
        peer_send(&f->a, m + 4096, size - 4096);
        free(m);
        wait_msg(f, &f->b, &h, &data);
        assert_big(&h, data, &spec);
        for (i = 0; i < 2000 && !seen; ++i) {
                WireHeader x;
                uint8_t *d;

                pump(f);
                g_assert_true(peer_recv(&mon));
                while (!seen && peer_take_msg(&mon, &x, &d)) {
                        if (x.member && !strcmp(x.member, "Take")) {
                                seen = d;
                                mh = x;
                        } else {
                                g_free(d);
                        }
                }
        }
        g_assert_nonnull(seen);
        g_assert_cmpuint(mh.total_size, ==, h.total_size);
        g_assert_true(memcmp(seen, data, h.total_size) == 0);
        g_assert_cmpuint(client_splice_bytes_spliced, ==, spliced);
        g_free(seen);
        g_free(data);
        peer_close(&mon);
}

/* Many small writes fill the pipe's slots before the array is in: it is emptied into
 * memory and the rest read in place. */
static void test_pipe_full(Fixture *f, gconstpointer ctx) {
        BigSpec spec = { .type = WIRE_MSG_METHOD_CALL, .n = BIG + BIG / 2, .seed = 6 };
        uint64_t filled = client_splice_bytes_filled, spliced = client_splice_bytes_spliced;
        WireHeader h;
        uint8_t *m, *data;
        size_t size, off;

        peer_hello(f, &f->a, false);
        peer_hello(f, &f->b, false);
        spec.dest = f->b.unique_name;
        m = build_big(&f->a, &spec, &size);
        peer_send(&f->a, m, 4096);
        pump(f);
        g_assert_cmpuint(f->s->splice.n_used, ==, 1);
        for (off = 4096; off < size; off += 1000)
                send_unread(f, &f->a, m + off, MIN((size_t)1000, size - off));
        free(m);
        wait_msg(f, &f->b, &h, &data);
        assert_big(&h, data, &spec);
        g_free(data);
        g_assert_cmpuint(client_splice_bytes_filled - filled, >, 0);
        g_assert_cmpuint(client_splice_bytes_spliced, ==, spliced);
        g_assert_cmpuint(f->s->splice.n_used, ==, 0);
        expect_get_id(f, &f->a);
}

/* A length word that does not fit the body drops the sender; nothing is delivered. */
static void test_bad_length(Fixture *f, gconstpointer ctx) {
        static const int32_t deltas[] = { -1, 1, 64 * 1024 * 1024 };
        unsigned k;

        for (k = 0; k < G_N_ELEMENTS(deltas); ++k) {
                BigSpec spec = { .type = WIRE_MSG_METHOD_CALL, .n = BIG, .seed = 9,
                                 .len_delta = deltas[k] };
                Fixture g = { 0 };
                WireHeader h;
                uint8_t *m;
                size_t size;

                setup(&g, NULL);
                peer_hello(&g, &g.a, false);
                peer_hello(&g, &g.b, false);
                spec.dest = g.b.unique_name;
                m = build_big(&g.a, &spec, &size);
                peer_send(&g.a, m, 4096);
                pump(&g);
                g_assert_cmpuint(g.s->splice.n_used, ==, 1);
                send_unread(&g, &g.a, m + 4096, size - 4096);
                free(m);
                g_assert_true(peer_dropped(&g, &g.a));
                pump(&g);
                g_assert_cmpuint(g.s->splice.n_used, ==, 0);
                g_assert_true(peer_recv(&g.b));
                g_assert_false(peer_take_msg(&g.b, &h, &m));
                teardown(&g, NULL);
        }
        current = f;
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
#define T(name, fn) g_test_add("/proxy/client-splice/" name, Fixture, NULL, setup, fn, teardown)
        T("identical", test_identical);
        T("slow-receiver", test_slow_receiver);
        T("sender-gone", test_sender_gone);
        T("receiver-gone", test_receiver_gone);
        T("monitor", test_monitor);
        T("pipe-full", test_pipe_full);
        T("bad-length", test_bad_length);
#undef T
        return g_test_run();
}
