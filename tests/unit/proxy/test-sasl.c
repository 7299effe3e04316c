/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The SASL server state machine: every command in every state with dbus-daemon 1.14's
 * answers, malformed and overlong lines, pipelined input (bytes after BEGIN stay
 * unconsumed), output backpressure, DBUS_COOKIE_SHA1 against a keyring of the test's own
 * (the hash computed with GLib's SHA-1). tests/integration/policy/sasl.py compares the same
 * dialogues with dbus-daemon itself.
 */
#include <errno.h>
#include <glib.h>
#include <string.h>
#include "proxy/sasl.h"

#define GUID "0123456789abcdef0123456789abcdef"
#define UID_HEX_1000 "31303030"         /* "1000" */

typedef struct Fixture {
        SaslServer s;
        char out[8192];
        size_t out_len;
        size_t consumed;
} Fixture;

static void setup(Fixture *f, gconstpointer ctx) {
        sasl_server_init(&f->s, 1000, true, SASL_MECH_EXTERNAL, NULL, GUID);
}

static void setup_anon(Fixture *f, gconstpointer ctx) {
        sasl_server_init(&f->s, 1000, false, SASL_MECH_EXTERNAL | SASL_MECH_ANONYMOUS, NULL,
                         GUID);
}

/* a keyring with one cookie, id 42; "random" bytes are 0x11 */
#define COOKIE "00112233445566778899aabbccddeeff0011223344556677"
static int fake_best(void *userdata, uint32_t *ret_id, char ret_cookie[SASL_COOKIE_MAX + 1]) {
        if (userdata)
                return -ENOENT;                 /* a keyring that cannot be used */
        *ret_id = 42;
        strcpy(ret_cookie, COOKIE);
        return 0;
}
static int fake_find(void *userdata, uint32_t id, char ret_cookie[SASL_COOKIE_MAX + 1]) {
        if (id != 42)
                return -ENOENT;
        strcpy(ret_cookie, COOKIE);
        return 0;
}
static int fake_random(void *userdata, void *buf, size_t n) {
        memset(buf, 0x11, n);
        return 0;
}
static const SaslCookieOps fake_keyring = {
        .best = fake_best, .find = fake_find, .random = fake_random,
        .uid = 1000, .user_name = "alice",
};
static const SaslCookieOps broken_keyring = {
        .best = fake_best, .find = fake_find, .random = fake_random,
        .uid = 1000, .user_name = "alice", .userdata = (void *)1,
};

static void setup_cookie(Fixture *f, gconstpointer ctx) {
        sasl_server_init(&f->s, 1000, true, SASL_MECH_ALL, ctx ? ctx : &fake_keyring, GUID);
}

/* Feed @in (with explicit length), return the code; f->out holds the replies as a string. */
static int feed_n(Fixture *f, const char *in, size_t n) {
        int r;

        r = sasl_server_feed(&f->s, in, n, f->out, sizeof(f->out) - 1, &f->consumed, &f->out_len);
        f->out[f->out_len] = '\0';
        return r;
}

static int feed(Fixture *f, const char *in) {
        return feed_n(f, in, strlen(in));
}

static void start(Fixture *f) {
        g_assert_cmpint(feed_n(f, "\0", 1), ==, 0);
        g_assert_cmpuint(f->consumed, ==, 1);
        g_assert_cmpint(f->s.state, ==, SASL_STATE_WAIT_AUTH);
}

static void test_nul_required(Fixture *f, gconstpointer ctx) {
        g_assert_cmpint(feed(f, "AUTH EXTERNAL " UID_HEX_1000 "\r\n"), ==, SASL_E_NO_NUL);
        g_assert_cmpuint(f->consumed, ==, 0);
}

static void test_empty_input(Fixture *f, gconstpointer ctx) {
        g_assert_cmpint(feed_n(f, "", 0), ==, 0);
        g_assert_cmpuint(f->consumed, ==, 0);
        g_assert_cmpint(f->s.state, ==, SASL_STATE_WAIT_NUL);
}

static void test_external_ok(Fixture *f, gconstpointer ctx) {
        start(f);
        g_assert_cmpint(feed(f, "AUTH EXTERNAL " UID_HEX_1000 "\r\n"), ==, 0);
        g_assert_cmpstr(f->out, ==, "OK " GUID "\r\n");
        g_assert_cmpint(f->s.state, ==, SASL_STATE_WAIT_BEGIN);
        g_assert_cmpint(feed(f, "BEGIN\r\n"), ==, 0);
        g_assert_cmpstr(f->out, ==, "");
        g_assert_cmpuint(f->consumed, ==, 7);
        g_assert_true(sasl_server_is_done(&f->s));
        g_assert_false(f->s.unix_fds_agreed);
}

static void test_external_wrong_uid(Fixture *f, gconstpointer ctx) {
        start(f);
        g_assert_cmpint(feed(f, "AUTH EXTERNAL 30\r\n"), ==, 0);    /* uid 0 */
        g_assert_cmpstr(f->out, ==, "REJECTED EXTERNAL\r\n");
        g_assert_cmpint(f->s.state, ==, SASL_STATE_WAIT_AUTH);
        /* uppercase hex is fine; "1000" again */
        g_assert_cmpint(feed(f, "AUTH EXTERNAL 31303030\r\n"), ==, 0);
        g_assert_cmpstr(f->out, ==, "OK " GUID "\r\n");
}

static void test_external_bad_hex(Fixture *f, gconstpointer ctx) {
        static const char *const wrong[] = {
                "AUTH EXTERNAL 3\r\n",                  /* odd length: "0" */
                "AUTH EXTERNAL 2d31\r\n",               /* "-1" */
                "AUTH EXTERNAL 3130303020\r\n",         /* "1000 " */
                "AUTH EXTERNAL 31303030303030303030303030303030303030303030\r\n", /* huge */
                "AUTH EXTERNAL 616c696365\r\n",         /* "alice": EXTERNAL wants a number */
        };
        static const char *const not_hex[] = {
                "AUTH EXTERNAL zz\r\n",
                "AUTH EXTERNAL 3x30\r\n",
                "AUTH EXTERNAL 31303030 \r\n",          /* a blank behind the digits */
        };
        static const char *const right[] = {
                "AUTH EXTERNAL 2b31303030\r\n",         /* "+1000", as strtoul reads it */
                "AUTH EXTERNAL 3031373530\r\n",         /* "01750": octal 1000 */
                "AUTH  EXTERNAL  31303030\r\n",         /* blanks between words */
                "AUTH\tEXTERNAL\t31303030\r\n",
        };
        unsigned i;

        start(f);
        for (i = 0; i < G_N_ELEMENTS(wrong); ++i) {
                g_assert_cmpint(feed(f, wrong[i]), ==, 0);
                g_assert_cmpstr(f->out, ==, "REJECTED EXTERNAL\r\n");
                f->s.n_rejects = 0;
        }
        for (i = 0; i < G_N_ELEMENTS(not_hex); ++i) {
                g_assert_cmpint(feed(f, not_hex[i]), ==, 0);
                g_assert_cmpstr(f->out, ==, "ERROR \"Invalid hex encoding\"\r\n");
                g_assert_cmpint(f->s.state, ==, SASL_STATE_WAIT_AUTH);
        }
        for (i = 0; i < G_N_ELEMENTS(right); ++i) {
                g_assert_cmpint(feed(f, right[i]), ==, 0);
                g_assert_cmpstr(f->out, ==, "OK " GUID "\r\n");
                g_assert_cmpint(feed(f, "CANCEL\r\n"), ==, 0);
                f->s.n_rejects = 0;
        }
}

static void test_external_data_exchange(Fixture *f, gconstpointer ctx) {
        start(f);
        g_assert_cmpint(feed(f, "AUTH EXTERNAL\r\n"), ==, 0);
        g_assert_cmpstr(f->out, ==, "DATA\r\n");
        g_assert_cmpint(f->s.state, ==, SASL_STATE_WAIT_DATA);
        /* empty DATA: "the identity my socket has" */
        g_assert_cmpint(feed(f, "DATA\r\n"), ==, 0);
        g_assert_cmpstr(f->out, ==, "OK " GUID "\r\n");
}

static void test_external_data_with_uid(Fixture *f, gconstpointer ctx) {
        start(f);
        g_assert_cmpint(feed(f, "AUTH EXTERNAL\r\nDATA " UID_HEX_1000 "\r\n"), ==, 0);
        g_assert_cmpstr(f->out, ==, "DATA\r\nOK " GUID "\r\n");
}

static void test_external_data_wrong(Fixture *f, gconstpointer ctx) {
        start(f);
        g_assert_cmpint(feed(f, "AUTH EXTERNAL\r\nDATA 30\r\n"), ==, 0);
        g_assert_cmpstr(f->out, ==, "DATA\r\nREJECTED EXTERNAL\r\n");
        g_assert_cmpint(f->s.state, ==, SASL_STATE_WAIT_AUTH);
}

static void test_external_unknown_uid(Fixture *f, gconstpointer ctx) {
        sasl_server_init(&f->s, (uid_t)-1, true, SASL_MECH_EXTERNAL, NULL, GUID);
        start(f);
        /* no socket credentials: EXTERNAL cannot work, rejected at once */
        g_assert_cmpint(feed(f, "AUTH EXTERNAL\r\nDATA\r\n"), ==, 0);
        g_assert_cmpstr(f->out, ==, "REJECTED EXTERNAL\r\n"
                        "ERROR \"Not currently in an auth conversation\"\r\n");
}

static void test_wait_data_commands(Fixture *f, gconstpointer ctx) {
        start(f);
        g_assert_cmpint(feed(f, "AUTH EXTERNAL\r\n"), ==, 0);
        g_assert_cmpint(feed(f, "FOO\r\n"), ==, 0);
        g_assert_cmpstr(f->out, ==, "ERROR \"Unknown command\"\r\n");
        g_assert_cmpint(feed(f, "AUTH EXTERNAL\r\n"), ==, 0);
        g_assert_cmpstr(f->out, ==, "ERROR \"Sent AUTH while another AUTH in progress\"\r\n");
        g_assert_cmpint(feed(f, "NEGOTIATE_UNIX_FD\r\n"), ==, 0);
        g_assert_cmpstr(f->out, ==, "ERROR \"Need to authenticate first\"\r\n");
        g_assert_cmpint(feed(f, "DATA zz\r\n"), ==, 0);
        g_assert_cmpstr(f->out, ==, "ERROR \"Invalid hex encoding\"\r\n");
        g_assert_cmpint(f->s.state, ==, SASL_STATE_WAIT_DATA);
        g_assert_cmpint(feed(f, "CANCEL\r\n"), ==, 0);
        g_assert_cmpstr(f->out, ==, "REJECTED EXTERNAL\r\n");
        g_assert_cmpint(f->s.state, ==, SASL_STATE_WAIT_AUTH);
        g_assert_cmpint(feed(f, "AUTH EXTERNAL\r\nERROR \"whatever\"\r\n"), ==, 0);
        g_assert_cmpstr(f->out, ==, "DATA\r\nREJECTED EXTERNAL\r\n");
        g_assert_cmpint(feed(f, "AUTH EXTERNAL\r\n"), ==, 0);
        g_assert_cmpint(feed(f, "BEGIN\r\n"), ==, SASL_E_EARLY_BEGIN);
}

static void test_wait_auth_commands(Fixture *f, gconstpointer ctx) {
        start(f);
        g_assert_cmpint(feed(f, "AUTH\r\n"), ==, 0);
        g_assert_cmpstr(f->out, ==, "REJECTED EXTERNAL\r\n");
        g_assert_cmpint(feed(f, "AUTH DBUS_COOKIE_SHA1 31303030\r\n"), ==, 0);
        g_assert_cmpstr(f->out, ==, "REJECTED EXTERNAL\r\n");   /* not offered here */
        g_assert_cmpint(feed(f, "AUTH ANONYMOUS\r\n"), ==, 0);
        g_assert_cmpstr(f->out, ==, "REJECTED EXTERNAL\r\n");
        f->s.n_rejects = 0;
        g_assert_cmpint(feed(f, "ERROR\r\n"), ==, 0);
        g_assert_cmpstr(f->out, ==, "REJECTED EXTERNAL\r\n");
        g_assert_cmpint(feed(f, "DATA 31\r\n"), ==, 0);
        g_assert_cmpstr(f->out, ==, "ERROR \"Not currently in an auth conversation\"\r\n");
        g_assert_cmpint(feed(f, "CANCEL\r\n"), ==, 0);
        g_assert_cmpstr(f->out, ==, "ERROR \"Not currently in an auth conversation\"\r\n");
        g_assert_cmpint(feed(f, "NEGOTIATE_UNIX_FD\r\n"), ==, 0);
        g_assert_cmpstr(f->out, ==, "ERROR \"Need to authenticate first\"\r\n");
        g_assert_cmpint(feed(f, "auth EXTERNAL " UID_HEX_1000 "\r\n"), ==, 0);   /* case */
        g_assert_cmpstr(f->out, ==, "ERROR \"Unknown command\"\r\n");
        g_assert_cmpint(feed(f, "AUTHEXTERNAL\r\n"), ==, 0);
        g_assert_cmpstr(f->out, ==, "ERROR \"Unknown command\"\r\n");
        g_assert_cmpint(feed(f, "OK\r\n"), ==, 0);            /* the client's words */
        g_assert_cmpstr(f->out, ==, "ERROR \"Unknown command\"\r\n");
        g_assert_cmpint(feed(f, "\r\n"), ==, 0);
        g_assert_cmpstr(f->out, ==, "ERROR \"Unknown command\"\r\n");
        g_assert_cmpint(feed(f, "AUTH \xc3\xa9\r\n"), ==, 0);
        g_assert_cmpstr(f->out, ==, "ERROR \"Command contained non-ASCII\"\r\n");
        g_assert_cmpint(f->s.state, ==, SASL_STATE_WAIT_AUTH);
        g_assert_cmpint(feed(f, "BEGIN\r\n"), ==, SASL_E_EARLY_BEGIN);
}

static void test_wait_begin_commands(Fixture *f, gconstpointer ctx) {
        start(f);
        g_assert_cmpint(feed(f, "AUTH EXTERNAL " UID_HEX_1000 "\r\n"), ==, 0);
        g_assert_cmpint(feed(f, "AUTH EXTERNAL " UID_HEX_1000 "\r\n"), ==, 0);
        g_assert_cmpstr(f->out, ==, "ERROR \"Sent AUTH while expecting BEGIN\"\r\n");
        g_assert_cmpint(feed(f, "DATA\r\n"), ==, 0);
        g_assert_cmpstr(f->out, ==, "ERROR \"Sent DATA while expecting BEGIN\"\r\n");
        g_assert_cmpint(feed(f, "BEGINNOW\r\n"), ==, 0);
        g_assert_cmpstr(f->out, ==, "ERROR \"Unknown command\"\r\n");
        g_assert_cmpint(feed(f, "NEGOTIATE_UNIX_FD\r\n"), ==, 0);
        g_assert_cmpstr(f->out, ==, "AGREE_UNIX_FD\r\n");
        g_assert_true(f->s.unix_fds_agreed);
        /* CANCEL after OK starts over and forgets the agreement */
        g_assert_cmpint(feed(f, "CANCEL\r\n"), ==, 0);
        g_assert_cmpstr(f->out, ==, "REJECTED EXTERNAL\r\n");
        g_assert_false(f->s.unix_fds_agreed);
        g_assert_cmpint(f->s.state, ==, SASL_STATE_WAIT_AUTH);
        g_assert_cmpint(feed(f, "AUTH EXTERNAL " UID_HEX_1000 "\r\nERROR\r\n"), ==, 0);
        g_assert_cmpstr(f->out, ==, "OK " GUID "\r\nREJECTED EXTERNAL\r\n");
}

static void test_unix_fd_not_possible(Fixture *f, gconstpointer ctx) {
        sasl_server_init(&f->s, 1000, false, SASL_MECH_EXTERNAL, NULL, GUID);
        start(f);
        g_assert_cmpint(feed(f, "AUTH EXTERNAL " UID_HEX_1000 "\r\nNEGOTIATE_UNIX_FD\r\n"), ==, 0);
        g_assert_cmpstr(f->out, ==, "OK " GUID "\r\nERROR \"Unix FD passing not supported, not "
                        "authenticated or otherwise not possible\"\r\n");
        g_assert_false(f->s.unix_fds_agreed);
}

static void test_anonymous(Fixture *f, gconstpointer ctx) {
        start(f);
        g_assert_cmpint(feed(f, "AUTH\r\n"), ==, 0);
        g_assert_cmpstr(f->out, ==, "REJECTED EXTERNAL ANONYMOUS\r\n");
        g_assert_cmpint(feed(f, "AUTH ANONYMOUS 7472616365\r\nBEGIN\r\n"), ==, 0);
        g_assert_cmpstr(f->out, ==, "OK " GUID "\r\n");
        g_assert_true(f->s.anonymous);
        g_assert_true(sasl_server_is_done(&f->s));
}

/* a trace that is not UTF-8 is refused; the transport decides about <allow_anonymous/> */
static void test_anonymous_bad_trace(Fixture *f, gconstpointer ctx) {
        start(f);
        g_assert_cmpint(feed(f, "AUTH ANONYMOUS ff\r\n"), ==, 0);
        g_assert_cmpstr(f->out, ==, "REJECTED EXTERNAL ANONYMOUS\r\n");
        g_assert_false(f->s.anonymous);
        g_assert_cmpint(feed(f, "AUTH ANONYMOUS c3a9\r\n"), ==, 0);  /* "é" */
        g_assert_cmpstr(f->out, ==, "OK " GUID "\r\n");
}

/* The server's DATA: hex("org_freedesktop_general 42 <32 digits of 0x11>"). */
static char *cookie_challenge_line(void) {
        const char *text = "org_freedesktop_general 42 11111111111111111111111111111111";
        GString *s = g_string_new("DATA ");

        for (const char *p = text; *p; ++p)
                g_string_append_printf(s, "%02x", (unsigned char)*p);
        g_string_append(s, "\r\n");
        return g_string_free(s, FALSE);
}

/* The client's DATA for @client_challenge with the hash of @cookie. */
static char *cookie_answer_line(const char *client_challenge, const char *cookie) {
        g_autofree char *in = g_strdup_printf("11111111111111111111111111111111:%s:%s",
                                              client_challenge, cookie);
        g_autofree char *hash = g_compute_checksum_for_string(G_CHECKSUM_SHA1, in, -1);
        g_autofree char *text = g_strdup_printf("%s %s", client_challenge, hash);
        GString *s = g_string_new("DATA ");

        for (const char *p = text; *p; ++p)
                g_string_append_printf(s, "%02x", (unsigned char)*p);
        g_string_append(s, "\r\n");
        return g_string_free(s, FALSE);
}

static void test_cookie(Fixture *f, gconstpointer ctx) {
        g_autofree char *challenge = cookie_challenge_line();
        g_autofree char *good = cookie_answer_line("c0ffee", COOKIE);
        g_autofree char *bad = cookie_answer_line("c0ffee", "0000");

        start(f);
        g_assert_cmpint(feed(f, "AUTH\r\n"), ==, 0);
        g_assert_cmpstr(f->out, ==, "REJECTED EXTERNAL DBUS_COOKIE_SHA1 ANONYMOUS\r\n");
        /* by uid and by name; the hash of another cookie is refused */
        g_assert_cmpint(feed(f, "AUTH DBUS_COOKIE_SHA1 " UID_HEX_1000 "\r\n"), ==, 0);
        g_assert_cmpstr(f->out, ==, challenge);
        g_assert_cmpint(f->s.state, ==, SASL_STATE_WAIT_DATA);
        g_assert_cmpint(feed(f, bad), ==, 0);
        g_assert_cmpstr(f->out, ==, "REJECTED EXTERNAL DBUS_COOKIE_SHA1 ANONYMOUS\r\n");
        g_assert_cmpint(feed(f, "AUTH DBUS_COOKIE_SHA1 616c696365\r\n"), ==, 0);
        g_assert_cmpstr(f->out, ==, challenge);
        g_assert_cmpint(feed(f, good), ==, 0);
        g_assert_cmpstr(f->out, ==, "OK " GUID "\r\n");
        g_assert_cmpint(feed(f, "BEGIN\r\n"), ==, 0);
        g_assert_true(sasl_server_is_done(&f->s));
        g_assert_false(f->s.anonymous);
}

static void test_cookie_refused(Fixture *f, gconstpointer ctx) {
        g_autofree char *challenge = cookie_challenge_line();
        const char *rejected = "REJECTED EXTERNAL DBUS_COOKIE_SHA1 ANONYMOUS\r\n";

        start(f);
        /* not the bus's user (its keyring is not ours to read), or nobody */
        g_assert_cmpint(feed(f, "AUTH DBUS_COOKIE_SHA1 30\r\n"), ==, 0);
        g_assert_cmpstr(f->out, ==, rejected);
        g_assert_cmpint(feed(f, "AUTH DBUS_COOKIE_SHA1 626f62\r\n"), ==, 0);     /* "bob" */
        g_assert_cmpstr(f->out, ==, rejected);
        g_assert_cmpint(feed(f, "AUTH DBUS_COOKIE_SHA1\r\n"), ==, 0);
        g_assert_cmpstr(f->out, ==, rejected);
        f->s.n_rejects = 0;
        /* answers without a blank, or with an empty half */
        g_assert_cmpint(feed(f, "AUTH DBUS_COOKIE_SHA1 " UID_HEX_1000 "\r\n"), ==, 0);
        g_assert_cmpstr(f->out, ==, challenge);
        g_assert_cmpint(feed(f, "DATA 616263\r\n"), ==, 0);                  /* "abc" */
        g_assert_cmpstr(f->out, ==, rejected);
        g_assert_cmpint(feed(f, "AUTH DBUS_COOKIE_SHA1 " UID_HEX_1000 "\r\n"), ==, 0);
        g_assert_cmpint(feed(f, "CANCEL\r\n"), ==, 0);
        g_assert_cmpstr(f->out, ==, rejected);
        g_assert_cmpint(f->s.state, ==, SASL_STATE_WAIT_AUTH);
}

static void test_cookie_no_keyring(Fixture *f, gconstpointer ctx) {
        start(f);
        g_assert_cmpint(feed(f, "AUTH DBUS_COOKIE_SHA1 " UID_HEX_1000 "\r\n"), ==, 0);
        g_assert_cmpstr(f->out, ==, "REJECTED EXTERNAL DBUS_COOKIE_SHA1 ANONYMOUS\r\n");
}

static void test_pipelined(Fixture *f, gconstpointer ctx) {
        static const char in[] = "\0AUTH EXTERNAL " UID_HEX_1000 "\r\nNEGOTIATE_UNIX_FD\r\n"
                                 "BEGIN\r\nl\1\0\1AUTH EXTERNAL 30\r\n";
        size_t n = sizeof(in) - 1;

        g_assert_cmpint(feed_n(f, in, n), ==, 0);
        g_assert_cmpstr(f->out, ==, "OK " GUID "\r\nAGREE_UNIX_FD\r\n");
        g_assert_true(sasl_server_is_done(&f->s));
        g_assert_true(f->s.unix_fds_agreed);
        /* everything after BEGIN\r\n is the message stream */
        g_assert_cmpuint(f->consumed, ==, (size_t)(strstr(in + 1, "BEGIN\r\n") - in) + 7);
        g_assert_cmpint(in[f->consumed], ==, 'l');
        /* once done, nothing more is consumed */
        g_assert_cmpint(feed(f, "AUTH EXTERNAL 30\r\n"), ==, 0);
        g_assert_cmpuint(f->consumed, ==, 0);
        g_assert_cmpstr(f->out, ==, "");
}

static void test_byte_by_byte(Fixture *f, gconstpointer ctx) {
        static const char in[] = "\0AUTH EXTERNAL " UID_HEX_1000 "\r\nBEGIN\r\n";
        GString *all = g_string_new(NULL);
        size_t pos = 0, end = 1;

        /* grow the window one byte at a time, as a slow writer would deliver it */
        while (!sasl_server_is_done(&f->s)) {
                g_assert_cmpuint(end, <=, sizeof(in) - 1);
                g_assert_cmpint(feed_n(f, in + pos, end - pos), ==, 0);
                g_string_append(all, f->out);
                pos += f->consumed;
                ++end;
        }
        g_assert_cmpuint(pos, ==, sizeof(in) - 1);
        g_assert_cmpstr(all->str, ==, "OK " GUID "\r\n");
        g_string_free(all, TRUE);
}

static void test_bare_newline(Fixture *f, gconstpointer ctx) {
        start(f);
        /* "\n" alone does not end a line: "\nBEGIN" is part of the hex data */
        g_assert_cmpint(feed(f, "AUTH EXTERNAL " UID_HEX_1000 "\nBEGIN\r\n"), ==, 0);
        g_assert_cmpstr(f->out, ==, "ERROR \"Invalid hex encoding\"\r\n");
        g_assert_false(sasl_server_is_done(&f->s));
}

static void test_embedded_nul(Fixture *f, gconstpointer ctx) {
        static const char in[] = "AUTH EXTERNAL 31\0" "303030\r\n";

        start(f);
        g_assert_cmpint(feed_n(f, in, sizeof(in) - 1), ==, 0);
        g_assert_cmpstr(f->out, ==, "ERROR \"Command contained non-ASCII\"\r\n");
}

static void test_line_too_long(Fixture *f, gconstpointer ctx) {
        char *big = g_malloc(SASL_LINE_MAX + 16);

        start(f);
        memset(big, 'A', SASL_LINE_MAX + 16);
        /* incomplete and short of the limit: wait */
        g_assert_cmpint(feed_n(f, big, SASL_LINE_MAX - 1), ==, 0);
        g_assert_cmpuint(f->consumed, ==, 0);
        /* at the limit without "\r\n": drop */
        g_assert_cmpint(feed_n(f, big, SASL_LINE_MAX), ==, SASL_E_LINE_TOO_LONG);
        /* a line of exactly the limit, "\r\n" included, is accepted (and unknown) */
        big[SASL_LINE_MAX - 2] = '\r';
        big[SASL_LINE_MAX - 1] = '\n';
        g_assert_cmpint(feed_n(f, big, SASL_LINE_MAX + 16), ==, 0);
        g_assert_cmpuint(f->consumed, ==, SASL_LINE_MAX);
        g_assert_cmpstr(f->out, ==, "ERROR \"Unknown command\"\r\n");
        g_free(big);
}

static void test_too_many_rejects(Fixture *f, gconstpointer ctx) {
        unsigned i;

        start(f);
        for (i = 0; i + 1 < SASL_MAX_REJECTS; ++i)
                g_assert_cmpint(feed(f, "AUTH EXTERNAL 30\r\n"), ==, 0);
        /* the last REJECTED is still sent, then the peer goes (dbus-daemon: the 6th) */
        g_assert_cmpint(feed(f, "AUTH EXTERNAL 30\r\n"), ==, SASL_E_TOO_MANY_REJECTS);
        g_assert_cmpstr(f->out, ==, "REJECTED EXTERNAL\r\n");
        g_assert_cmpuint(SASL_MAX_REJECTS, ==, 6);
}

static void test_output_backpressure(Fixture *f, gconstpointer ctx) {
        GString *in = g_string_new("");
        char out[SASL_REPLY_MAX + 40];
        size_t consumed, out_len;
        unsigned i;

        start(f);
        for (i = 0; i < 10; ++i)
                g_string_append(in, "FOO\r\n");
        /* room for two replies only: two lines consumed, the rest waits */
        g_assert_cmpint(sasl_server_feed(&f->s, in->str, in->len, out, sizeof(out), &consumed,
                                         &out_len), ==, 0);
        g_assert_cmpuint(consumed, ==, 10);
        g_assert_cmpuint(out_len, ==, 2 * strlen("ERROR \"Unknown command\"\r\n"));
        /* no room at all: nothing consumed */
        g_assert_cmpint(sasl_server_feed(&f->s, in->str, in->len, out, SASL_REPLY_MAX - 1,
                                         &consumed, &out_len), ==, 0);
        g_assert_cmpuint(consumed, ==, 0);
        g_assert_cmpuint(out_len, ==, 0);
        g_string_free(in, TRUE);
}

static void test_strerror(Fixture *f, gconstpointer ctx) {
        int i;

        for (i = 0; i < _SASL_E_N; ++i)
                g_assert_nonnull(sasl_strerror(i));
        g_assert_cmpstr(sasl_strerror(SASL_E_LINE_TOO_LONG), ==,
                        "authentication line longer than 16 KiB");
        g_assert_cmpstr(sasl_strerror(-1), ==, "unknown authentication error");
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
#define T(name, fn) g_test_add("/proxy/sasl/" name, Fixture, NULL, setup, fn, NULL)
        T("nul-required", test_nul_required);
        T("empty-input", test_empty_input);
        T("external-ok", test_external_ok);
        T("external-wrong-uid", test_external_wrong_uid);
        T("external-bad-hex", test_external_bad_hex);
        T("external-data-exchange", test_external_data_exchange);
        T("external-data-with-uid", test_external_data_with_uid);
        T("external-data-wrong", test_external_data_wrong);
        T("external-unknown-uid", test_external_unknown_uid);
        T("wait-data-commands", test_wait_data_commands);
        T("wait-auth-commands", test_wait_auth_commands);
        T("wait-begin-commands", test_wait_begin_commands);
        T("unix-fd-not-possible", test_unix_fd_not_possible);
        T("pipelined", test_pipelined);
        T("byte-by-byte", test_byte_by_byte);
        T("bare-newline", test_bare_newline);
        T("embedded-nul", test_embedded_nul);
        T("line-too-long", test_line_too_long);
        T("too-many-rejects", test_too_many_rejects);
        T("output-backpressure", test_output_backpressure);
        T("strerror", test_strerror);
#undef T
        g_test_add("/proxy/sasl/anonymous", Fixture, NULL, setup_anon, test_anonymous, NULL);
        g_test_add("/proxy/sasl/anonymous-bad-trace", Fixture, NULL, setup_anon,
                   test_anonymous_bad_trace, NULL);
        g_test_add("/proxy/sasl/cookie", Fixture, NULL, setup_cookie, test_cookie, NULL);
        g_test_add("/proxy/sasl/cookie-refused", Fixture, NULL, setup_cookie,
                   test_cookie_refused, NULL);
        g_test_add("/proxy/sasl/cookie-no-keyring", Fixture, &broken_keyring, setup_cookie,
                   test_cookie_no_keyring, NULL);
        return g_test_run();
}
