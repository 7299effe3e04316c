/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Server states and transitions are the specification's (WaitingForAuth, WaitingForData,
 * WaitingForBegin), plus the initial NUL byte before them and DONE after BEGIN:
 *
 *   AUTH EXTERNAL <hex>  -> OK <guid> (uid matches) | REJECTED EXTERNAL
 *   AUTH EXTERNAL        -> DATA, then DATA [<hex>] -> OK | REJECTED
 *   AUTH <other>/AUTH    -> REJECTED EXTERNAL [ANONYMOUS]
 *   CANCEL, ERROR        -> REJECTED (back to WaitingForAuth) where the spec says so
 *   NEGOTIATE_UNIX_FD    -> AGREE_UNIX_FD after OK on an fd-capable socket, else ERROR
 *   BEGIN                -> done after OK; before OK the spec says disconnect
 *   anything else        -> ERROR, state unchanged
 *
 * Commands are case-sensitive. A line must end in "\r\n"; a line is at most SASL_LINE_MAX
 * bytes, so a peer cannot make us buffer without bound, and after SASL_MAX_REJECTS failed
 * attempts it is dropped. The auth timeout is the transport's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "proxy/sasl.h"

static const char *const sasl_errors[_SASL_E_N] = {
        [_SASL_E_SUCCESS] = "success",
        [SASL_E_NO_NUL] = "the first byte was not the NUL credentials byte",
        [SASL_E_LINE_TOO_LONG] = "authentication line longer than 16 KiB",
        [SASL_E_EARLY_BEGIN] = "BEGIN before successful authentication",
        [SASL_E_TOO_MANY_REJECTS] = "too many failed authentication attempts",
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
 * @allow_anonymous:    whether ANONYMOUS is offered
 * @guid:               32 hex digits, sent with OK
 */
void sasl_server_init(SaslServer *s, uid_t peer_uid, bool unix_fds_possible, bool allow_anonymous,
                      const char *guid) {
        *s = (SaslServer){
                .state = SASL_STATE_WAIT_NUL,
                .peer_uid = peer_uid,
                .unix_fds_possible = unix_fds_possible,
                .allow_anonymous = allow_anonymous,
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

        /* the caller guarantees SASL_REPLY_MAX bytes of room */
        memcpy(o->buf + o->len, line, n);
        o->len += n;
}

static void sasl_out_rejected(SaslServer *s, SaslOut *o) {
        sasl_out_line(o, s->allow_anonymous ? "REJECTED EXTERNAL ANONYMOUS\r\n"
                                            : "REJECTED EXTERNAL\r\n");
}

static void sasl_out_ok(SaslServer *s, SaslOut *o) {
        sasl_out_line(o, "OK ");
        sasl_out_line(o, s->guid);
        sasl_out_line(o, "\r\n");
        s->state = SASL_STATE_WAIT_BEGIN;
}

static int sasl_hex(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

/* Is the hex-encoded identity [hex, hex+n) the peer's uid (decimal, no sign or padding
 * beyond what strtoul accepts)? Empty means "whatever the socket says". */
static bool sasl_external_matches(const SaslServer *s, const char *hex, size_t n) {
        char id[32];
        size_t i, len = n / 2;
        unsigned long long v = 0;

        if (s->peer_uid == (uid_t)-1)
                return false;
        if (n == 0)
                return true;
        if (n % 2 || len >= sizeof(id))
                return false;
        for (i = 0; i < len; ++i) {
                int hi = sasl_hex(hex[2 * i]), lo = sasl_hex(hex[2 * i + 1]);

                if (hi < 0 || lo < 0)
                        return false;
                id[i] = (char)(hi << 4 | lo);
                if (id[i] < '0' || id[i] > '9')
                        return false;
                v = v * 10 + (unsigned long long)(id[i] - '0');
                if (v > (uid_t)-1)
                        return false;
        }
        return v == (unsigned long long)s->peer_uid;
}

/* Split a line into the command and the rest after one space. */
static bool sasl_is_cmd(const char *line, size_t n, const char *cmd, const char **ret_arg,
                        size_t *ret_arg_len) {
        size_t k = strlen(cmd);

        if (n < k || memcmp(line, cmd, k) != 0)
                return false;
        if (n == k) {
                *ret_arg = line + n;
                *ret_arg_len = 0;
                return true;
        }
        if (line[k] != ' ')
                return false;
        *ret_arg = line + k + 1;
        *ret_arg_len = n - k - 1;
        return true;
}

static int sasl_reject(SaslServer *s, SaslOut *o) {
        s->state = SASL_STATE_WAIT_AUTH;
        if (++s->n_rejects >= SASL_MAX_REJECTS)
                return SASL_E_TOO_MANY_REJECTS;
        sasl_out_rejected(s, o);
        return 0;
}

static int sasl_try_external(SaslServer *s, SaslOut *o, const char *resp, size_t n) {
        if (sasl_external_matches(s, resp, n)) {
                sasl_out_ok(s, o);
                return 0;
        }
        return sasl_reject(s, o);
}

static int sasl_handle_auth(SaslServer *s, SaslOut *o, const char *arg, size_t n) {
        const char *sp = memchr(arg, ' ', n);
        size_t mlen = sp ? (size_t)(sp - arg) : n;
        const char *resp = sp ? sp + 1 : NULL;
        size_t rlen = sp ? n - mlen - 1 : 0;

        if (mlen == 8 && memcmp(arg, "EXTERNAL", 8) == 0) {
                if (!resp) {
                        /* no initial response: ask for it; empty DATA means "use the socket's" */
                        sasl_out_line(o, "DATA\r\n");
                        s->state = SASL_STATE_WAIT_DATA;
                        return 0;
                }
                return sasl_try_external(s, o, resp, rlen);
        }
        if (mlen == 9 && memcmp(arg, "ANONYMOUS", 9) == 0 && s->allow_anonymous) {
                /* the trace string is informational only */
                s->anonymous = true;
                sasl_out_ok(s, o);
                return 0;
        }
        return sasl_reject(s, o);
}

static int sasl_handle_line(SaslServer *s, SaslOut *o, const char *line, size_t n) {
        const char *arg;
        size_t alen;

        switch (s->state) {
        case SASL_STATE_WAIT_AUTH:
                if (sasl_is_cmd(line, n, "AUTH", &arg, &alen))
                        return sasl_handle_auth(s, o, arg, alen);
                if (sasl_is_cmd(line, n, "BEGIN", &arg, &alen))
                        return SASL_E_EARLY_BEGIN;
                if (sasl_is_cmd(line, n, "ERROR", &arg, &alen))
                        return sasl_reject(s, o);
                break;
        case SASL_STATE_WAIT_DATA:
                if (sasl_is_cmd(line, n, "DATA", &arg, &alen))
                        return sasl_try_external(s, o, arg, alen);
                if (sasl_is_cmd(line, n, "BEGIN", &arg, &alen))
                        return SASL_E_EARLY_BEGIN;
                if (sasl_is_cmd(line, n, "CANCEL", &arg, &alen) ||
                    sasl_is_cmd(line, n, "ERROR", &arg, &alen))
                        return sasl_reject(s, o);
                break;
        case SASL_STATE_WAIT_BEGIN:
                if (n == 5 && memcmp(line, "BEGIN", 5) == 0) {
                        s->state = SASL_STATE_DONE;
                        return 0;
                }
                if (n == 17 && memcmp(line, "NEGOTIATE_UNIX_FD", 17) == 0) {
                        if (s->unix_fds_possible) {
                                s->unix_fds_agreed = true;
                                sasl_out_line(o, "AGREE_UNIX_FD\r\n");
                        } else {
                                sasl_out_line(o, "ERROR \"fd passing is not supported on this "
                                              "transport\"\r\n");
                        }
                        return 0;
                }
                if (sasl_is_cmd(line, n, "CANCEL", &arg, &alen) ||
                    sasl_is_cmd(line, n, "ERROR", &arg, &alen)) {
                        s->unix_fds_agreed = false;
                        s->anonymous = false;
                        return sasl_reject(s, o);
                }
                break;
        case SASL_STATE_WAIT_NUL:
        case SASL_STATE_DONE:
                break;
        }
        sasl_out_line(o, "ERROR \"unknown or unexpected command\"\r\n");
        return 0;
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
 * SASL_E_TOO_MANY_REJECTS (the peer must be disconnected).
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
