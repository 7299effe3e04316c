/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Server states are the specification's (WaitingForAuth, WaitingForData, WaitingForBegin),
 * plus the initial NUL byte before them and DONE after BEGIN. What each command gets in each
 * state, the error texts and the reading of a line are dbus-daemon 1.14.10's, checked
 * against it (tests/integration/policy/sasl.py runs the same dialogues on both):
 *
 *   a line with a NUL or a byte above 127     -> ERROR "Command contained non-ASCII"
 *   the command is the first word; blanks (space, tab) between words are skipped, so
 *   "AUTH  EXTERNAL  30" is AUTH EXTERNAL with "30"; commands are case-sensitive
 *   WaitingForAuth:  AUTH -> the mechanism (not offered: REJECTED <offered>; its data not
 *                    hex: ERROR "Invalid hex encoding"); AUTH alone -> REJECTED; DATA,
 *                    CANCEL -> ERROR "Not currently in an auth conversation"; ERROR ->
 *                    REJECTED; NEGOTIATE_UNIX_FD -> ERROR "Need to authenticate first";
 *                    BEGIN -> disconnect; anything else -> ERROR "Unknown command"
 *   WaitingForData:  DATA -> the mechanism; AUTH -> ERROR "Sent AUTH while another AUTH in
 *                    progress"; CANCEL, ERROR -> REJECTED; NEGOTIATE_UNIX_FD -> ERROR "Need
 *                    to authenticate first"; BEGIN -> disconnect; else "Unknown command"
 *   WaitingForBegin: BEGIN -> done; NEGOTIATE_UNIX_FD -> AGREE_UNIX_FD (or an ERROR on a
 *                    socket without fds); AUTH/DATA -> ERROR "Sent AUTH/DATA while expecting
 *                    BEGIN"; CANCEL, ERROR -> REJECTED; else "Unknown command"
 *
 * REJECTED lists the offered mechanisms in dbus-daemon's order (EXTERNAL DBUS_COOKIE_SHA1
 * ANONYMOUS); the SASL_MAX_REJECTS-th REJECTED is sent and the peer then dropped. A line is
 * at most SASL_LINE_MAX bytes, so a peer cannot make us buffer without bound. The auth
 * timeout is the transport's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "proxy/sasl.h"
#include "util/hex.h"
#include "util/sha1.h"

static const char *const sasl_errors[_SASL_E_N] = {
        [_SASL_E_SUCCESS] = "success",
        [SASL_E_NO_NUL] = "the first byte was not the NUL credentials byte",
        [SASL_E_LINE_TOO_LONG] = "authentication line longer than 16 KiB",
        [SASL_E_EARLY_BEGIN] = "BEGIN before successful authentication",
        [SASL_E_TOO_MANY_REJECTS] = "too many failed authentication attempts",
};

/* In dbus-daemon's order: REJECTED lists them so. */
static const struct {
        SaslMech mech;
        const char *name;
} sasl_mechs[] = {
        { SASL_MECH_EXTERNAL, "EXTERNAL" },
        { SASL_MECH_COOKIE, "DBUS_COOKIE_SHA1" },
        { SASL_MECH_ANONYMOUS, "ANONYMOUS" },
};

/**
 * sasl_strerror() - human text for a SASL_E_* code
 * @code:       the code
 *
 * Return: a static string.
 */
const char *sasl_strerror(int code) {
        if (code < 0 || code >= _SASL_E_N)
                return "unknown authentication error";
        return sasl_errors[code];
}

/**
 * sasl_server_init() - start an authentication conversation
 * @s:                  the state
 * @peer_uid:           the uid SO_PEERCRED reported, or (uid_t)-1
 * @unix_fds_possible:  whether NEGOTIATE_UNIX_FD may be agreed
 * @mechs:              the SaslMech set offered
 * @cookie:             the keyring for DBUS_COOKIE_SHA1, or NULL; borrowed
 * @guid:               32 hex digits, sent with OK
 */
void sasl_server_init(SaslServer *s, uid_t peer_uid, bool unix_fds_possible, unsigned mechs,
                      const SaslCookieOps *cookie, const char *guid) {
        *s = (SaslServer){
                .state = SASL_STATE_WAIT_NUL,
                .peer_uid = peer_uid,
                .unix_fds_possible = unix_fds_possible,
                .mechs = mechs & SASL_MECH_ALL,
                .cookie = cookie,
        };
        snprintf(s->guid, sizeof(s->guid), "%s", guid);
}

typedef struct SaslOut {
        char *buf;
        size_t size;
        size_t len;
} SaslOut;

static void sasl_out_line(SaslOut *o, const char *line) {
        size_t n = strlen(line);

        /* the caller guarantees SASL_REPLY_MAX bytes of room, and no reply is longer */
        memcpy(o->buf + o->len, line, n);
        o->len += n;
}

static int sasl_error(SaslOut *o, const char *text) {
        sasl_out_line(o, "ERROR \"");
        sasl_out_line(o, text);
        sasl_out_line(o, "\"\r\n");
        return 0;
}

/* Forget the mechanism in progress (dbus-daemon's shutdown of a mechanism). */
static void sasl_reset_mech(SaslServer *s) {
        s->mech = 0;
        s->asked_identity = false;
        s->have_identity = false;
        s->anonymous = false;
        s->cookie_id = 0;
        s->challenge[0] = '\0';
}

static int sasl_reject(SaslServer *s, SaslOut *o) {
        size_t i;

        sasl_reset_mech(s);
        s->unix_fds_agreed = false;
        s->state = SASL_STATE_WAIT_AUTH;
        sasl_out_line(o, "REJECTED");
        for (i = 0; i < sizeof(sasl_mechs) / sizeof(sasl_mechs[0]); ++i) {
                if (s->mechs & sasl_mechs[i].mech) {
                        sasl_out_line(o, " ");
                        sasl_out_line(o, sasl_mechs[i].name);
                }
        }
        sasl_out_line(o, "\r\n");
        if (++s->n_rejects >= SASL_MAX_REJECTS)
                return SASL_E_TOO_MANY_REJECTS;
        return 0;
}

static int sasl_ok(SaslServer *s, SaslOut *o) {
        sasl_out_line(o, "OK ");
        sasl_out_line(o, s->guid);
        sasl_out_line(o, "\r\n");
        s->mech = 0;
        s->state = SASL_STATE_WAIT_BEGIN;
        return 0;
}

/* A user named as libdbus reads a uid: the whole text is a number for strtoul(base 0). */
static bool sasl_parse_uid(const char *text, uid_t *ret) {
        unsigned long v;
        char *end;

        if (!*text)
                return false;
        errno = 0;
        v = strtoul(text, &end, 0);
        if (*end || errno || v != (unsigned long)(uid_t)v)
                return false;
        *ret = (uid_t)v;
        return true;
}

/* EXTERNAL with decoded @data (@n bytes, NUL-terminated). */
static int sasl_external(SaslServer *s, SaslOut *o, const char *data, size_t n) {
        uid_t uid;

        if (s->peer_uid == (uid_t)-1)
                return sasl_reject(s, o);
        if (n > 0) {
                if (s->have_identity)
                        return sasl_reject(s, o);       /* a second identity */
                s->have_identity = true;
        }
        if (!s->have_identity && !s->asked_identity) {
                /* no identity yet: ask for one; an empty answer means "the socket's" */
                s->asked_identity = true;
                s->mech = SASL_MECH_EXTERNAL;
                s->state = SASL_STATE_WAIT_DATA;
                sasl_out_line(o, "DATA\r\n");
                return 0;
        }
        if (!s->have_identity)
                uid = s->peer_uid;
        else if (strlen(data) != n || !sasl_parse_uid(data, &uid))
                return sasl_reject(s, o);
        if (uid != s->peer_uid)
                return sasl_reject(s, o);
        return sasl_ok(s, o);
}

/* Is @data valid UTF-8 (no overlong forms, surrogates or values above U+10FFFF)? */
static bool sasl_is_utf8(const unsigned char *p, size_t n) {
        size_t i = 0, k, len;
        uint32_t c;

        while (i < n) {
                if (p[i] < 0x80) {
                        ++i;
                        continue;
                }
                if ((p[i] & 0xe0) == 0xc0) {
                        len = 2;
                        c = p[i] & 0x1f;
                } else if ((p[i] & 0xf0) == 0xe0) {
                        len = 3;
                        c = p[i] & 0x0f;
                } else if ((p[i] & 0xf8) == 0xf0) {
                        len = 4;
                        c = p[i] & 0x07;
                } else {
                        return false;
                }
                if (n - i < len)
                        return false;
                for (k = 1; k < len; ++k) {
                        if ((p[i + k] & 0xc0) != 0x80)
                                return false;
                        c = c << 6 | (p[i + k] & 0x3f);
                }
                if ((len == 2 && c < 0x80) || (len == 3 && c < 0x800) ||
                    (len == 4 && c < 0x10000) || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
                        return false;
                i += len;
        }
        return true;
}

static int sasl_anonymous(SaslServer *s, SaslOut *o, const char *data, size_t n) {
        /* the trace (an e-mail address or anything) is informational, but must be UTF-8 */
        if (!sasl_is_utf8((const unsigned char *)data, n))
                return sasl_reject(s, o);
        sasl_reset_mech(s);
        s->anonymous = true;
        return sasl_ok(s, o);
}

/* DBUS_COOKIE_SHA1, first step: @data names the user; answer the challenge. */
static int sasl_cookie_challenge(SaslServer *s, SaslOut *o, const char *data, size_t n) {
        const SaslCookieOps *c = s->cookie;
        char cookie[SASL_COOKIE_MAX + 1], text[160], hex[2 * sizeof(text) + 1];
        uint8_t raw[16];
        uid_t uid;
        int len;

        /* only the bus's own user: its keyring is the only one we may read */
        if (!c || n == 0 || strlen(data) != n)
                return sasl_reject(s, o);
        if (c->user_name && strcmp(data, c->user_name) == 0)
                uid = c->uid;
        else if (!sasl_parse_uid(data, &uid))
                return sasl_reject(s, o);
        if (uid != c->uid)
                return sasl_reject(s, o);
        if (c->best(c->userdata, &s->cookie_id, cookie) < 0 ||
            c->random(c->userdata, raw, sizeof(raw)) < 0)
                return sasl_reject(s, o);
        hex_encode(raw, sizeof(raw), s->challenge);
        len = snprintf(text, sizeof(text), "%s %u %s", SASL_COOKIE_CONTEXT,
                       (unsigned)s->cookie_id, s->challenge);
        if (len < 0 || (size_t)len >= sizeof(text))
                return sasl_reject(s, o);
        hex_encode(text, (size_t)len, hex);
        sasl_out_line(o, "DATA ");
        sasl_out_line(o, hex);
        sasl_out_line(o, "\r\n");
        s->mech = SASL_MECH_COOKIE;
        s->state = SASL_STATE_WAIT_DATA;
        return 0;
}

/* DBUS_COOKIE_SHA1, second step: "<client challenge> <sha1(ours:theirs:cookie) in hex>". */
static int sasl_cookie_answer(SaslServer *s, SaslOut *o, const char *data, size_t n) {
        const SaslCookieOps *c = s->cookie;
        char cookie[SASL_COOKIE_MAX + 1], want[2 * SHA1_DIGEST_SIZE + 1];
        uint8_t digest[SHA1_DIGEST_SIZE];
        size_t k, j;
        Sha1 h;

        for (k = 0; k < n && data[k] != ' ' && data[k] != '\t'; ++k)
                ;
        for (j = k; j < n && (data[j] == ' ' || data[j] == '\t'); ++j)
                ;
        if (k == n || k == 0 || j == n)
                return sasl_reject(s, o);
        if (c->find(c->userdata, s->cookie_id, cookie) < 0)
                return sasl_reject(s, o);
        sha1_init(&h);
        sha1_update(&h, s->challenge, strlen(s->challenge));
        sha1_update(&h, ":", 1);
        sha1_update(&h, data, k);
        sha1_update(&h, ":", 1);
        sha1_update(&h, cookie, strlen(cookie));
        sha1_final(&h, digest);
        hex_encode(digest, sizeof(digest), want);
        if (n - j != strlen(want) || memcmp(data + j, want, n - j) != 0)
                return sasl_reject(s, o);
        return sasl_ok(s, o);
}

/* The hex-encoded data [hex, hex+n) for @mech, in the current state. */
static int sasl_mech_data(SaslServer *s, SaslOut *o, unsigned mech, const char *hex, size_t n) {
        char data[SASL_LINE_MAX / 2 + 2];
        ssize_t len;

        len = hex_decode(hex, n, data);
        if (len < 0)
                return sasl_error(o, "Invalid hex encoding");
        data[len] = '\0';
        switch (mech) {
        case SASL_MECH_EXTERNAL:
                return sasl_external(s, o, data, (size_t)len);
        case SASL_MECH_ANONYMOUS:
                return sasl_anonymous(s, o, data, (size_t)len);
        case SASL_MECH_COOKIE:
                if (s->state == SASL_STATE_WAIT_DATA)
                        return sasl_cookie_answer(s, o, data, (size_t)len);
                return sasl_cookie_challenge(s, o, data, (size_t)len);
        }
        return sasl_reject(s, o);
}

/* The first word of [p, p+n) and the rest after the blanks behind it. */
static void sasl_split(const char *p, size_t n, size_t *ret_word, const char **ret_rest,
                       size_t *ret_rest_len) {
        size_t i, j;

        for (i = 0; i < n && p[i] != ' ' && p[i] != '\t'; ++i)
                ;
        for (j = i; j < n && (p[j] == ' ' || p[j] == '\t'); ++j)
                ;
        *ret_word = i;
        *ret_rest = p + j;
        *ret_rest_len = n - j;
}

static int sasl_handle_auth(SaslServer *s, SaslOut *o, const char *arg, size_t n) {
        const char *resp;
        size_t mlen, rlen, i;

        if (n == 0)
                return sasl_reject(s, o);
        sasl_split(arg, n, &mlen, &resp, &rlen);
        for (i = 0; i < sizeof(sasl_mechs) / sizeof(sasl_mechs[0]); ++i) {
                if ((s->mechs & sasl_mechs[i].mech) && strlen(sasl_mechs[i].name) == mlen &&
                    memcmp(arg, sasl_mechs[i].name, mlen) == 0) {
                        sasl_reset_mech(s);
                        return sasl_mech_data(s, o, sasl_mechs[i].mech, resp, rlen);
                }
        }
        return sasl_reject(s, o);
}

typedef enum SaslCmd {
        SASL_CMD_UNKNOWN,
        SASL_CMD_AUTH,
        SASL_CMD_CANCEL,
        SASL_CMD_BEGIN,
        SASL_CMD_DATA,
        SASL_CMD_ERROR,
        SASL_CMD_NEGOTIATE_UNIX_FD,
} SaslCmd;

static SaslCmd sasl_cmd(const char *word, size_t n) {
        static const struct {
                const char *name;
                SaslCmd cmd;
        } cmds[] = {
                { "AUTH", SASL_CMD_AUTH }, { "CANCEL", SASL_CMD_CANCEL },
                { "BEGIN", SASL_CMD_BEGIN }, { "DATA", SASL_CMD_DATA },
                { "ERROR", SASL_CMD_ERROR }, { "NEGOTIATE_UNIX_FD", SASL_CMD_NEGOTIATE_UNIX_FD },
        };
        size_t i;

        for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); ++i)
                if (strlen(cmds[i].name) == n && memcmp(word, cmds[i].name, n) == 0)
                        return cmds[i].cmd;
        return SASL_CMD_UNKNOWN;        /* also the client's REJECTED, OK, AGREE_UNIX_FD */
}

static int sasl_handle_line(SaslServer *s, SaslOut *o, const char *line, size_t n) {
        const char *arg;
        size_t wlen, alen, i;
        SaslCmd cmd;

        for (i = 0; i < n; ++i)
                if (line[i] == '\0' || (unsigned char)line[i] > 127)
                        return sasl_error(o, "Command contained non-ASCII");
        sasl_split(line, n, &wlen, &arg, &alen);
        cmd = sasl_cmd(line, wlen);

        switch (s->state) {
        case SASL_STATE_WAIT_AUTH:
                switch (cmd) {
                case SASL_CMD_AUTH:
                        return sasl_handle_auth(s, o, arg, alen);
                case SASL_CMD_CANCEL:
                case SASL_CMD_DATA:
                        return sasl_error(o, "Not currently in an auth conversation");
                case SASL_CMD_BEGIN:
                        return SASL_E_EARLY_BEGIN;
                case SASL_CMD_ERROR:
                        return sasl_reject(s, o);
                case SASL_CMD_NEGOTIATE_UNIX_FD:
                        return sasl_error(o, "Need to authenticate first");
                case SASL_CMD_UNKNOWN:
                        break;
                }
                break;
        case SASL_STATE_WAIT_DATA:
                switch (cmd) {
                case SASL_CMD_AUTH:
                        return sasl_error(o, "Sent AUTH while another AUTH in progress");
                case SASL_CMD_CANCEL:
                case SASL_CMD_ERROR:
                        return sasl_reject(s, o);
                case SASL_CMD_DATA:
                        return sasl_mech_data(s, o, s->mech, arg, alen);
                case SASL_CMD_BEGIN:
                        return SASL_E_EARLY_BEGIN;
                case SASL_CMD_NEGOTIATE_UNIX_FD:
                        return sasl_error(o, "Need to authenticate first");
                case SASL_CMD_UNKNOWN:
                        break;
                }
                break;
        case SASL_STATE_WAIT_BEGIN:
                switch (cmd) {
                case SASL_CMD_AUTH:
                        return sasl_error(o, "Sent AUTH while expecting BEGIN");
                case SASL_CMD_DATA:
                        return sasl_error(o, "Sent DATA while expecting BEGIN");
                case SASL_CMD_BEGIN:
                        s->state = SASL_STATE_DONE;
                        return 0;
                case SASL_CMD_NEGOTIATE_UNIX_FD:
                        if (!s->unix_fds_possible)
                                return sasl_error(o, "Unix FD passing not supported, not "
                                                  "authenticated or otherwise not possible");
                        s->unix_fds_agreed = true;
                        sasl_out_line(o, "AGREE_UNIX_FD\r\n");
                        return 0;
                case SASL_CMD_CANCEL:
                case SASL_CMD_ERROR:
                        return sasl_reject(s, o);
                case SASL_CMD_UNKNOWN:
                        break;
                }
                break;
        case SASL_STATE_WAIT_NUL:
        case SASL_STATE_DONE:
                break;
        }
        return sasl_error(o, "Unknown command");
}

/**
 * sasl_server_feed() - consume authentication input
 * @s:                  the state
 * @in:                 bytes the peer sent
 * @in_size:            how many
 * @out:                room for reply lines
 * @out_size:           its size
 * @ret_consumed:       how many bytes of @in were used (always written)
 * @ret_out_len:        how many bytes were written at @out (always written)
 *
 * Lines are consumed while a whole one is available and SASL_REPLY_MAX bytes of @out are
 * free; processing stops after BEGIN, leaving the rest of @in to the message stream.
 *
 * Return: 0, or SASL_E_NO_NUL, SASL_E_LINE_TOO_LONG, SASL_E_EARLY_BEGIN,
 * SASL_E_TOO_MANY_REJECTS (the peer must be disconnected; replies already in @out are
 * still meant for it).
 */
int sasl_server_feed(SaslServer *s, const void *in, size_t in_size, char *out, size_t out_size,
                     size_t *ret_consumed, size_t *ret_out_len) {
        const char *p = in;
        size_t pos = 0;
        SaslOut o = { .buf = out, .size = out_size, .len = 0 };
        int r = 0;

        if (s->state == SASL_STATE_WAIT_NUL && in_size > 0) {
                if (p[0] != '\0') {
                        r = SASL_E_NO_NUL;
                        goto out;
                }
                pos = 1;
                s->state = SASL_STATE_WAIT_AUTH;
        }

        while (s->state != SASL_STATE_DONE && s->state != SASL_STATE_WAIT_NUL &&
               o.size - o.len >= SASL_REPLY_MAX) {
                size_t avail = in_size - pos, scan = avail < SASL_LINE_MAX ? avail : SASL_LINE_MAX, i;
                const char *line = p + pos;
                bool found = false;

                /* a caller that passes less than before gets a full rescan */
                for (i = s->scan_pos < scan ? s->scan_pos : 0; i + 1 < scan; ++i) {
                        if (line[i] == '\r' && line[i + 1] == '\n') {
                                found = true;
                                break;
                        }
                }
                if (!found) {
                        if (avail >= SASL_LINE_MAX)
                                r = SASL_E_LINE_TOO_LONG;
                        else if (scan > 0)
                                s->scan_pos = scan - 1;
                        break;
                }
                s->scan_pos = 0;
                pos += i + 2;
                r = sasl_handle_line(s, &o, line, i);
                if (r)
                        break;
        }

out:
        *ret_consumed = pos;
        *ret_out_len = o.len;
        return r;
}
