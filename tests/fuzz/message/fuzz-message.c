/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target for the message codec. The input is one message as it would arrive on a
 * socket. Invariants checked (abort on violation): framing agrees with parsing; a header
 * parse accepts whatever a full parse accepts, with the same header; get_args and a full
 * reader walk of an accepted message stay in bounds; a stamped message re-parses with the
 * same fields, our SENDER and the same body bytes. With FUZZ_DIFFERENTIAL defined (the
 * libFuzzer build), disagreements with libdbus-1 are counted and reported, not fatal:
 * libdbus is laxer in a few places.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef FUZZ_DIFFERENTIAL
#include <dbus/dbus.h>
#endif
#include "tests/unit/wire/header-same.h"
#include "wire/message.h"
#include "wire/reader.h"
#include "wire/stamp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define check(x)                                                                \
        do {                                                                    \
                if (!(x)) {                                                     \
                        fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #x); \
                        abort();                                                \
                }                                                               \
        } while (0)

static int streq_null(const char *a, const char *b) {
        return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* @a in @ma where @b is in @mb (both NULL: absent) */
static bool same_offset(const char *a, const uint8_t *ma, const char *b, const uint8_t *mb) {
        if (!a || !b)
                return !a && !b;
        return (const uint8_t *)a - ma == (const uint8_t *)b - mb;
}

static void walk(WireReader *r, unsigned depth) {
        char t;

        check(depth <= WIRE_READER_MAX_DEPTH);
        while ((t = wire_reader_peek(r))) {
                union {
                        uint64_t u;
                        const char *s;
                } v;

                switch (t) {
                case 'a':
                case '(':
                case '{':
                case 'v':
                        check(wire_reader_enter(r, t, NULL) == 0);
                        walk(r, depth + 1);
                        check(wire_reader_exit(r) == 0);
                        break;
                default:
                        check(wire_reader_read_basic(r, t, &v) == 0);
                        check(r->pos <= r->size);
                        break;
                }
        }
}

#ifdef FUZZ_DIFFERENTIAL
/* Report the first disagreement of each kind (our code x their verdict) once. */
static void differential(const uint8_t *data, size_t size, int ours, const WireHeader *h) {
        static bool reported[_WIRE_E_N][2];
        DBusMessage *m;
        DBusError err;
        size_t framed, i;
        int theirs;

        /* libdbus cannot be handed fds here, and takes the first message of a longer buffer */
        if (size > (size_t)INT32_MAX || (ours == 0 && h->n_fds > 0) ||
            wire_message_frame(data, size, &framed) != 0 || framed != size)
                return;
        dbus_error_init(&err);
        m = dbus_message_demarshal((const char *)data, (int)size, &err);
        theirs = m ? 0 : 1;
        if (m)
                dbus_message_unref(m);
        if ((ours == 0) != (theirs == 0) && !reported[ours][theirs]) {
                reported[ours][theirs] = true;
                fprintf(stderr, "differential: ours=%d (%s), libdbus=%s (%s), input:", ours,
                        wire_strerror(ours), theirs ? "reject" : "accept",
                        dbus_error_is_set(&err) ? err.message : "-");
                for (i = 0; i < size; ++i)
                        fprintf(stderr, "%s%02x", i % 32 ? "" : "\n  ", data[i]);
                fprintf(stderr, "\n");
        }
        dbus_error_free(&err);
}
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static const char sender[] = ":1.4294967295";
        WireHeader h, hs, h2, hd, hm;
        WireArgs args;
        WireReader r;
        uint8_t *st, *st2;
        size_t framed, st_size;
        int k, k_skip, k_frame;

        k_frame = wire_message_frame(data, size, &framed);
        k = wire_message_parse(data, size, WIRE_MAX_UNIX_FDS, 0, &h);
        k_skip = wire_message_parse(data, size, WIRE_MAX_UNIX_FDS, WIRE_PARSE_SKIP_BODY, &hs);
        (void) wire_message_parse(data, size, 0, 0, &h2);
        check(wire_strerror(k) != NULL);
        /* a peer's memo (kept across inputs, as across a peer's messages) changes no verdict
         * and no header: the first parse may record the field array, the second may hit */
        for (int i = 0; i < 2; ++i) {
                static WireFieldMemo memo;

                check(wire_message_parse_memo(data, size, WIRE_MAX_UNIX_FDS, 0, &memo, &hm) == k);
                if (k == 0) {
                        check(wire_header_same(&hm, &h));
                }
        }
#ifdef FUZZ_DIFFERENTIAL
        differential(data, size, k, &h);
#endif
        if (k != 0)
                return 0;

        check(k_frame == 0 && framed == size);
        check(k_skip == 0);
        check(hs.total_size == h.total_size && hs.body_offset == h.body_offset);
        check(streq_null(hs.path, h.path) && streq_null(hs.member, h.member));
        check(h.body_offset + (size_t)h.body_size == size);

        check(wire_message_get_args(data, &h, &args) == 0);
        check(args.n_args <= WIRE_MAX_MATCH_ARGS);

        wire_reader_init(&r, data, &h);
        walk(&r, 0);
        check(r.pos == h.body_size);

        st = malloc(wire_stamp_size_bound(&h, strlen(sender)));
        check(st);
        check(wire_message_stamp(data, &h, sender, st, &st_size) == 0);
        check(st_size <= wire_stamp_size_bound(&h, strlen(sender)));
        k = wire_message_parse(st, st_size, WIRE_MAX_UNIX_FDS, 0, &h2);
        if (k)
                fprintf(stderr, "stamped message rejected: %s\n", wire_strerror(k));
        check(k == 0);
        check(streq_null(h2.sender, sender));
        check(streq_null(h2.path, h.path) && streq_null(h2.interface, h.interface));
        check(streq_null(h2.member, h.member) && streq_null(h2.error_name, h.error_name));
        check(streq_null(h2.destination, h.destination));
        check(strcmp(h2.signature, h.signature) == 0);
        check(h2.serial == h.serial && h2.reply_serial == h.reply_serial);
        check(h2.n_fds == h.n_fds && h2.type == h.type && h2.flags == h.flags);
        check(h2.big_endian == h.big_endian && h2.body_size == h.body_size);
        check(memcmp(st + h2.body_offset, data + h.body_offset, h.body_size) == 0);

        /* the bus's one-pass stamp: the same bytes, and the header a parse finds in them */
        st2 = malloc(wire_stamp_size_bound(&h, strlen(sender)));
        check(st2);
        check(wire_message_stamp_derive(data, &h, sender, strlen(sender), st2, &hd) == 0);
        check(hd.total_size == st_size && memcmp(st2, st, st_size) == 0);
        check(hd.fields_size == h2.fields_size && hd.body_offset == h2.body_offset);
        check(hd.sender_field_offset == h2.sender_field_offset);
        check(hd.sender_field_size == h2.sender_field_size);
        check(same_offset(hd.path, st2, h2.path, st) && same_offset(hd.member, st2, h2.member, st));
        check(same_offset(hd.interface, st2, h2.interface, st));
        check(same_offset(hd.error_name, st2, h2.error_name, st));
        check(same_offset(hd.destination, st2, h2.destination, st));
        check(same_offset(hd.sender, st2, h2.sender, st));
        check(strcmp(hd.signature, h2.signature) == 0);
        free(st2);
        free(st);
        return 0;
}
