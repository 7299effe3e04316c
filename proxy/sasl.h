/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * The server side of D-Bus authentication (specification, "Authentication Protocol") as a
 * pure state machine: bytes in, reply lines out, no I/O and no allocation. The client's
 * transport feeds whatever it read; sasl_server_feed() consumes whole lines only, stops
 * right after "BEGIN\r\n" (the bytes behind it are the message stream: pipelined auth), and
 * consumes a line only when SASL_REPLY_MAX bytes of output room are left, so output can
 * never overflow: the caller writes the replies out and feeds again.
 *
 * Mechanisms: EXTERNAL (the claimed uid, hex-encoded ASCII decimal, or empty to mean "the
 * one my socket says", must equal the peer's SO_PEERCRED uid), and ANONYMOUS only when
 * @allow_anonymous is set. NEGOTIATE_UNIX_FD is agreed only on sockets that can pass fds.
 */
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define SASL_LINE_MAX 16384u            /* longest line accepted, "\r\n" included */
#define SASL_REPLY_MAX 128u             /* longest line the server sends */
#define SASL_MAX_REJECTS 8u             /* failed attempts before the peer is dropped */

enum {
        _SASL_E_SUCCESS,
        SASL_E_NO_NUL,                  /* the first byte was not the credentials NUL byte */
        SASL_E_LINE_TOO_LONG,           /* no "\r\n" within SASL_LINE_MAX bytes */
        SASL_E_EARLY_BEGIN,             /* BEGIN before OK: the spec says disconnect */
        SASL_E_TOO_MANY_REJECTS,        /* SASL_MAX_REJECTS failed attempts */
        _SASL_E_N,
};

typedef enum SaslState {
        SASL_STATE_WAIT_NUL,
        SASL_STATE_WAIT_AUTH,
        SASL_STATE_WAIT_DATA,
        SASL_STATE_WAIT_BEGIN,
        SASL_STATE_DONE,
} SaslState;

typedef struct SaslServer {
        SaslState state;
        uid_t peer_uid;                 /* SO_PEERCRED; (uid_t)-1: unknown, EXTERNAL fails */
        bool unix_fds_possible;         /* the transport can carry fds */
        bool allow_anonymous;
        bool unix_fds_agreed;           /* NEGOTIATE_UNIX_FD answered with AGREE_UNIX_FD */
        bool anonymous;                 /* authenticated with ANONYMOUS */
        unsigned n_rejects;
        size_t scan_pos;                /* bytes of the pending line known to hold no "\r\n" */
        char guid[33];                  /* 32 hex digits of the bus id */
} SaslServer;

const char *sasl_strerror(int code);

void sasl_server_init(SaslServer *s, uid_t peer_uid, bool unix_fds_possible, bool allow_anonymous,
                      const char *guid);

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
