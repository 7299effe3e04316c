/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * One classic D-Bus client socket: authentication, framing and validation of what it
 * sends, and writing out what the core queued for it.
 *
 * Input: one bounded buffer filled by large recvmsg() calls; fds that arrive (SCM_RIGHTS)
 * go to an fd queue, and each message takes from its front as many as its UNIX_FDS says.
 * A large message (CLIENT_IN_DIRECT or more) that did not come whole is read straight into
 * its own BridgeMsg once its header is in (zero-copy ingress: the bytes go from the socket
 * to where the message lives, as a relay's would, not through the buffer and a copy);
 * the input buffer is grown only for a header that does not fit it (up to the bus's
 * max_message_size; kept while at most CLIENT_IN_KEEP). After such a message the next read
 * into the empty buffer is only CLIENT_IN_HEAD bytes, so that the next large message's
 * head, the part that must go through the buffer, is a few KiB and not 64 KiB. The
 * contents of a large byte array to one idle classic peer do not come into memory at all:
 * they are spliced through a pipe (proxy/client-splice.h).
 * Output: messages are taken off the BridgeConn queue into a small fixed ring (no
 * allocation) and written with one sendmsg() carrying as many as fit (the socket's send
 * buffer is raised to CLIENT_SNDBUF, so a 1 MiB message fits one); a message with fds
 * always starts a sendmsg, so its fds arrive with its first byte.
 */
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include "bridge/conn.h"
#include "proxy/loop.h"
#include "proxy/log.h"
#include "proxy/sasl.h"
#include "util/list.h"
#include "wire/message.h"

typedef struct BridgeMsg BridgeMsg;
typedef struct Server Server;
typedef struct ProxyClient ProxyClient;

typedef enum ClientState {
        CLIENT_STATE_AUTH,
        CLIENT_STATE_RUNNING,           /* after BEGIN (Hello is the driver's business) */
        CLIENT_STATE_CLOSING,
        _CLIENT_STATE_N,
} ClientState;

#define CLIENT_IN_DEFAULT (64u * 1024u)         /* input buffer, and the size of one read */
#define CLIENT_IN_KEEP (1024u * 1024u)          /* a grown buffer up to this size is kept */
#define CLIENT_IN_DIRECT (32u * 1024u)          /* messages this large are read in place */
#define CLIENT_IN_HEAD (4u * 1024u)             /* a read into the empty buffer after one */
#define CLIENT_SNDBUF (1024 * 1024)             /* SO_SNDBUF at the first large message */
#define CLIENT_OUT_RING 128u                    /* messages taken off the core queue at once */
#define CLIENT_OUT_RING_BYTES (1024u * 1024u)   /* ... or this many bytes */
#define CLIENT_MAX_FDS_QUEUED 1024u             /* fds received but not yet claimed */
#define CLIENT_SASL_OUT 512u            /* SASL replies not yet written */

struct ProxyClient {
        Server *server;
        int fd;
        ClientState state;
        bool is_unix;
        bool eof;                       /* the peer closed its end (we still process input) */
        bool write_blocked;             /* EAGAIN: waiting for EPOLLOUT */
        bool close_pending;             /* off the loop; torn down by server_close_some() */
        bool refuse_fd_limit;           /* accepted into the fd reserve: its Hello is refused */
        bool close_after_flush;         /* read nothing more, close once all is written */
        bool held_much;                 /* its queue held SERVER_TRIM_AFTER bytes or more
                                         * since it last drained (server_trim_later()) */
        bool sndbuf_raised;             /* SO_SNDBUF is CLIENT_SNDBUF (a large message came) */
        bool in_large;                  /* its last message was read in place: the next read
                                         * into the empty buffer takes CLIENT_IN_HEAD bytes */
        bool starting;                  /* accepted, not yet in the epoll set (client_start()) */
        bool close_unwatched;           /* closing, out of the epoll set (client_unwatch()) */
        uint32_t io_events;             /* what the io source currently waits for */
        LoopSource *io;
        LoopSource *auth_timer;
        LoopSource *fd_timer;           /* pending_fd_timeout, while in_fds holds fds */
        bool fd_timer_armed;
        BridgeConn *conn;
        SaslServer sasl;
        List link;                      /* Server.clients */
        List dirty_link;                /* Server.dirty */
        List ready_link;                /* Server.ready */
        List hangup_link;               /* Server.hangups */
        uint64_t ready_iteration;       /* the wakeup in which it went on Server.ready */
        ProxyLogLimit log_limit;
        pid_t pid;
        uid_t uid;

        uint8_t *in;                    /* NULL while idle: in_cap bytes at the next read */
        size_t in_cap, in_start, in_end;
        WireFieldMemo field_memo;       /* its last valid names (wire_message_parse_memo()) */
        BridgeMsg *in_msg;              /* a large message being read into its own buffer */
        size_t in_msg_filled;           /* its bytes there so far (of in_msg->size) */
        int in_pipe[2];                 /* its byte array's contents arrive here, not in
                                         * in_msg (proxy/client-splice.h); -1: none */
        size_t in_pipe_from;            /* the pipe holds in_msg's bytes from here to
                                         * in_msg_filled */
        int *in_fds;
        unsigned n_in_fds, in_fds_cap;

        char sasl_out[CLIENT_SASL_OUT];
        size_t sasl_out_start, sasl_out_end;

        BridgeMsg *out_ring[CLIENT_OUT_RING];
        unsigned out_head, out_n;       /* ring of messages taken off the core queue */
        size_t out_ring_bytes;
        size_t out_offset;              /* bytes of the head message already written */
};

/* The fds of @m for sendmsg(): the SCM_RIGHTS control message in @mh and @control. */
typedef union ClientControl {
        struct cmsghdr h;
        uint8_t buf[CMSG_SPACE(sizeof(int) * 253)];
} ClientControl;
void client_msg_control(struct msghdr *mh, ClientControl *control, const BridgeMsg *m);
/* Append @m (a reference taken by the caller) to what is written next. */
void client_out_push(ProxyClient *c, BridgeMsg *m);
/* Drop the head of what is written next (written, or the client goes). */
void client_out_pop(ProxyClient *c);
/* Wait in the loop for what @c can take now (input room, EPOLLOUT after EAGAIN). */
void client_update_events(ProxyClient *c);
/* A log line about @c (its name, pid, uid; rate-limited per peer). */
void client_log(ProxyClient *c, int level, const char *fmt, ...) _printf_(3, 4);
/* The classic client behind @conn, or NULL (another transport). */
ProxyClient *client_of_conn(BridgeConn *conn);

static inline bool client_in_piped(const ProxyClient *c) {
        return c->in_pipe[0] >= 0;
}

/* Takes @fd (closes it on failure). Return: 0, negative errno; the peer may be refused
 * (quota), then 0 with *ret NULL. */
int client_new(Server *server, int fd, bool is_unix, ProxyClient **ret);
void client_start(ProxyClient *c);
ProxyClient *client_free(ProxyClient *c);

/* Process buffered input with a fresh budget (from the server's ready list). */
void client_process(ProxyClient *c);
/* Its hangup, reported by the loop earlier in this wakeup (from the server's hangups). */
void client_hangup(ProxyClient *c);
/* Write out what is queued (from the server's post source). */
void client_flush(ProxyClient *c);
/* Close now if a close is pending (server_close_some()). Returns true if freed. */
bool client_reap(ProxyClient *c);
/* Nothing more is read from or written to @c; it is closed later (safe inside callbacks). */
void client_close_later(ProxyClient *c);
/* A closing @c leaves the epoll set before its teardown (server_close_some()). */
void client_unwatch(ProxyClient *c);
