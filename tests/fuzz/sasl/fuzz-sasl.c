/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target for the SASL server (proxy/sasl.c). Input byte 0 picks the peer setup
 * (uid 1000 or unknown, fds possible, ANONYMOUS offered; EXTERNAL and DBUS_COOKIE_SHA1 always,
 * the cookie from a fixed keyring: id 42, cookie COOKIE, "random" bytes 0x11, so a seed can
 * carry a right answer); the rest is what the peer sends.
 * Checked: bounds of consumed/output, every reply is a whole "\r\n"-terminated line of at
 * most SASL_REPLY_MAX bytes, nothing is consumed after BEGIN, and feeding the input in
 * one piece or in small, output-starved pieces gives the same replies, state and verdict.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "proxy/sasl.h"

#define GUID "0123456789abcdef0123456789abcdef"
#define COOKIE "00112233445566778899aabbccddeeff0011223344556677"

static int fuzz_best(void *userdata, uint32_t *ret_id, char ret_cookie[SASL_COOKIE_MAX + 1]) {
        *ret_id = 42;
        memcpy(ret_cookie, COOKIE, sizeof(COOKIE));
        return 0;
}

static int fuzz_find(void *userdata, uint32_t id, char ret_cookie[SASL_COOKIE_MAX + 1]) {
        if (id != 42)
                abort();        /* the server asks only for the cookie it named */
        memcpy(ret_cookie, COOKIE, sizeof(COOKIE));
        return 0;
}

static int fuzz_random(void *userdata, void *buf, size_t n) {
        memset(buf, 0x11, n);
        return 0;
}

static const SaslCookieOps fuzz_keyring = {
        .best = fuzz_best, .find = fuzz_find, .random = fuzz_random,
        .uid = 1000, .user_name = "alice",
};

static void check_replies(const char *out, size_t n) {
        size_t start = 0, i;

        for (i = 0; i + 1 < n + 1; ++i) {
                if (i + 1 < n && out[i] == '\r' && out[i + 1] == '\n') {
                        if (i + 2 - start > SASL_REPLY_MAX)
                                abort();
                        start = i + 2;
                        ++i;
                }
        }
        if (start != n)
                abort();        /* a reply that is not a whole line */
}

typedef struct Run {
        SaslServer s;
        char out[1 << 16];
        size_t out_len;
        size_t consumed;
        int r;
} Run;

static void init(Run *run, uint8_t setup) {
        sasl_server_init(&run->s, setup & 1 ? (uid_t)-1 : 1000, setup & 2,
                         SASL_MECH_EXTERNAL | SASL_MECH_COOKIE | (setup & 4 ? SASL_MECH_ANONYMOUS : 0),
                         &fuzz_keyring, GUID);
        run->out_len = 0;
        run->consumed = 0;
        run->r = 0;
}

/* Feed [data, data+size) in pieces of at most @piece bytes, with output room @room. */
static void run_feed(Run *run, const uint8_t *data, size_t size, size_t piece, size_t room) {
        size_t avail_end = 0;

        for (;;) {
                size_t consumed, out_len, end, before = run->consumed;
                int r;

                avail_end = avail_end + piece < size ? avail_end + piece : size;
                end = avail_end;
                if (room > sizeof(run->out) - run->out_len)
                        room = sizeof(run->out) - run->out_len;
                r = sasl_server_feed(&run->s, data + run->consumed, end - run->consumed,
                                     run->out + run->out_len, room, &consumed, &out_len);
                if (consumed > end - run->consumed || out_len > room)
                        abort();
                check_replies(run->out + run->out_len, out_len);
                run->out_len += out_len;
                run->consumed += consumed;
                if (r) {
                        run->r = r;
                        return;
                }
                if (sasl_server_is_done(&run->s)) {
                        size_t c2, o2;

                        if (sasl_server_feed(&run->s, data + run->consumed, size - run->consumed,
                                             run->out, 0, &c2, &o2) != 0 || c2 || o2)
                                abort();
                        return;
                }
                if (run->consumed == before && avail_end == size && consumed == 0)
                        return;         /* waiting for input that will not come */
                if (sizeof(run->out) - run->out_len < SASL_REPLY_MAX)
                        return;         /* our own buffer is full */
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static Run a, b;
        uint8_t setup;

        if (size < 1 || size > 70000)
                return 0;
        setup = data[0];
        ++data;
        --size;

        init(&a, setup);
        run_feed(&a, data, size, size ? size : 1, sizeof(a.out));
        init(&b, setup);
        run_feed(&b, data, size, 1 + (setup >> 4), SASL_REPLY_MAX + (setup >> 3 & 1) * 50);

        /* only compare when neither side stopped for its own buffer's sake */
        if (a.out_len + SASL_REPLY_MAX <= sizeof(a.out) && b.out_len + SASL_REPLY_MAX <= sizeof(b.out)) {
                if (a.r != b.r || a.consumed != b.consumed || a.s.state != b.s.state ||
                    a.out_len != b.out_len || memcmp(a.out, b.out, a.out_len) != 0 ||
                    a.s.unix_fds_agreed != b.s.unix_fds_agreed)
                        abort();
        }
        if (a.s.unix_fds_agreed && !(setup & 2))
                abort();
        if (a.s.anonymous && !(setup & 4))
                abort();
        return 0;
}
