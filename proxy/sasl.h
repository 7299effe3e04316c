/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * The server side of D-Bus authentication (specification, "Authentication Protocol") as a
 * state machine that answers as dbus-daemon 1.14 does: bytes in, reply lines out, no
 * allocation. The client's transport feeds whatever it read; sasl_server_feed() consumes
 * whole lines only, stops right after "BEGIN\r\n" (the bytes behind it are the message
 * stream: pipelined auth), and consumes a line only when SASL_REPLY_MAX bytes of output room
 * are left, so output can never overflow: the caller writes the replies out and feeds again.
 *
 * Mechanisms (those of the configuration's <auth> list; all three without one):
 *   EXTERNAL: the claimed uid (hex-encoded, a number as strtoul(base 0) reads it), or empty
 *     to mean "the one my socket says", must equal the peer's SO_PEERCRED uid.
 *   DBUS_COOKIE_SHA1: the claimed user (uid or name) must be the bus's own user; the
 *     challenge and the cookie come from SaslCookieOps (proxy/keyring.c: the keyring in
 *     ~/.dbus-keyrings). Without ops the mechanism rejects.
 *   ANONYMOUS: always succeeds here (an optional UTF-8 trace); whether the bus keeps such a
 *     peer (<allow_anonymous/>) is the transport's decision after BEGIN, as in dbus-daemon.
 * NEGOTIATE_UNIX_FD is agreed only on sockets that can pass fds.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SASL_LINE_MAX 16384u            /* longest line accepted, "\r\n" included */
#define SASL_REPLY_MAX 256u             /* longest line the server sends */
#define SASL_MAX_REJECTS 6u             /* REJECTED answers before the peer is dropped
                                         * (dbus-daemon's max_failures) */
#define SASL_COOKIE_MAX 128u            /* longest cookie (hex digits) in a keyring */
#define SASL_COOKIE_CONTEXT "org_freedesktop_general"

enum {
        _SASL_E_SUCCESS,
        SASL_E_NO_NUL,                  /* the first byte was not the credentials NUL byte */
        SASL_E_LINE_TOO_LONG,           /* no "\r\n" within SASL_LINE_MAX bytes */
        SASL_E_EARLY_BEGIN,             /* BEGIN before OK: the spec says disconnect */
        SASL_E_TOO_MANY_REJECTS,        /* SASL_MAX_REJECTS failed attempts */
        _SASL_E_N,
};

typedef enum SaslMech {
        SASL_MECH_EXTERNAL = 1u << 0,
        SASL_MECH_COOKIE = 1u << 1,     /* DBUS_COOKIE_SHA1 */
        SASL_MECH_ANONYMOUS = 1u << 2,
        SASL_MECH_ALL = SASL_MECH_EXTERNAL | SASL_MECH_COOKIE | SASL_MECH_ANONYMOUS,
} SaslMech;

typedef enum SaslState {
        SASL_STATE_WAIT_NUL,
        SASL_STATE_WAIT_AUTH,
        SASL_STATE_WAIT_DATA,
        SASL_STATE_WAIT_BEGIN,
        SASL_STATE_DONE,
} SaslState;

/* The keyring behind DBUS_COOKIE_SHA1 (proxy/keyring.c; the fuzzer has its own). */
typedef struct SaslCookieOps {
        /* A cookie to challenge with (one recent enough, else a new one): 0, *ret_id and
         * @ret_cookie (hex digits, NUL-terminated), or a negative errno (REJECTED). */
        int (*best)(void *userdata, uint32_t *ret_id, char ret_cookie[SASL_COOKIE_MAX + 1]);
        /* The cookie with @id: 0, or a negative errno (gone: REJECTED). */
        int (*find)(void *userdata, uint32_t id, char ret_cookie[SASL_COOKIE_MAX + 1]);
        /* @n random bytes: 0 or a negative errno. */
        int (*random)(void *userdata, void *buf, size_t n);
        uid_t uid;                      /* the keyring's owner: the bus's user */
        const char *user_name;          /* its name, or NULL */
        void *userdata;
} SaslCookieOps;

typedef struct SaslServer {
        SaslState state;
        uid_t peer_uid;                 /* SO_PEERCRED; (uid_t)-1: unknown, EXTERNAL fails */
        bool unix_fds_possible;         /* the transport can carry fds */
        unsigned mechs;                 /* SaslMech offered */
        unsigned mech;                  /* the one in progress (WAIT_DATA), or 0 */
        bool unix_fds_agreed;           /* NEGOTIATE_UNIX_FD answered with AGREE_UNIX_FD */
        bool anonymous;                 /* authenticated with ANONYMOUS */
        bool asked_identity;            /* EXTERNAL: sent an empty DATA for the identity */
        bool have_identity;             /* EXTERNAL: an identity was given */
        unsigned n_rejects;
        size_t scan_pos;                /* bytes of the pending line known to hold no "\r\n" */
        char guid[33];                  /* 32 hex digits: the server's guid */
        const SaslCookieOps *cookie;    /* NULL: DBUS_COOKIE_SHA1 always rejects */
        uint32_t cookie_id;             /* DBUS_COOKIE_SHA1: the cookie of the challenge */
        char challenge[33];             /* ... and our challenge, 16 random bytes in hex */
} SaslServer;

const char *sasl_strerror(int code);

/*
 * @mechs: the SaslMech set offered (REJECTED lists them); @cookie: may be NULL.
 */
void sasl_server_init(SaslServer *s, uid_t peer_uid, bool unix_fds_possible, unsigned mechs,
                      const SaslCookieOps *cookie, const char *guid);

/**
 * Consume input. @in starts at the first byte not consumed so far (bytes passed before and
 * not consumed are passed again), so a line that trickles in is scanned only once. @out/@out_size is the room for replies; *ret_consumed and *ret_out_len
 * (bytes appended at @out) are always written. Stops after BEGIN (state DONE).
 * Return: 0 or SASL_E_* (drop the peer).
 */
int sasl_server_feed(SaslServer *s, const void *in, size_t in_size, char *out, size_t out_size,
                     size_t *ret_consumed, size_t *ret_out_len);

static inline bool sasl_server_is_done(const SaslServer *s) {
        return s->state == SASL_STATE_DONE;
}
