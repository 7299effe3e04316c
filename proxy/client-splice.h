/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * Large byte arrays through the bus without a copy in the bus (issue #16): a message whose
 * body is one `ay` is read as any large message up to the array's length word, and the
 * array's contents go from the sender's socket into a pipe (splice(): the kernel hands the
 * socket buffer's pages over by reference) and from the pipe into the destination's socket
 * (splice() again: the pages are attached, not copied). Everything but the contents is
 * read, checked and stamped as on the in-memory path, and a byte array's contents need no
 * check: its length word alone decides (wire_byte_array_body_check()).
 *
 * Store and forward as for any message: the whole array is in the pipe before the
 * message is dispatched, so a receiver never gets part of a message (a sender that hangs
 * up or stalls mid-body holds nobody's stream), and the sender's socket buffer is free as
 * soon as its bytes are in the pipe. The pipe is the message's only until it is delivered,
 * right after its dispatch, in the sender's turn: nothing else is written in between.
 *
 * The pipe path is taken for a message whose body signature is exactly "ay", with at least
 * CLIENT_SPLICE_MIN bytes of it still to come once its header is in, addressed to a classic
 * peer (unix socket) other than the sender. It ends in the destination's socket only if,
 * after the dispatch, that peer's queue was empty before and holds only this message, and
 * nobody else holds a reference (no monitor, no eavesdropper, no activation queue): then
 * the stamped header and the array's length word go out with one sendmsg() (the fds with
 * them) and the contents with splice(). In every other case, and whenever the destination
 * cannot take all of it at once, what is in the pipe is read into the message's own buffer
 * (one copy: what the in-memory path's read would have made) and the message goes on as
 * any other: a slow receiver does not hold the pipe or the sender. A pipe that fills up
 * before the array is complete (its slots, not its bytes, are the limit) is emptied the
 * same way and the rest read in place.
 *
 * A peer that sends file descriptors with a byte of an earlier message's array (not with
 * its own message's first byte, as the specification asks and every library does) loses
 * them here: splice() cannot pass them on, the kernel closes them. The message that
 * claims them is then short of fds and its sender is dropped, as for any fd count that
 * does not add up.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct BridgeMsg BridgeMsg;
typedef struct ProxyClient ProxyClient;
typedef struct Server Server;
typedef struct WireHeader WireHeader;

#define CLIENT_SPLICE_MIN (128u * 1024u)        /* array bytes still to come (bench/README.md) */
#define CLIENT_SPLICE_PIPE (1024 * 1024)        /* F_SETPIPE_SZ: /proc/sys/fs/pipe-max-size's
                                                 * default, what an unprivileged bus may ask */
#define CLIENT_SPLICE_MAX_PIPES 16u             /* pipes in use at once (2 fds, 1 MiB each) */
#define CLIENT_SPLICE_KEEP 2u                   /* empty pipes kept for the next message */

/* The server's pipes (embedded in Server, zero-initialised). */
typedef struct ClientSplicePipes {
        int spare[CLIENT_SPLICE_KEEP][2];
        unsigned n_spare;
        unsigned n_used;                        /* taken by clients */
        bool unavailable;                       /* F_SETPIPE_SZ refused: no pipe path */
} ClientSplicePipes;

void client_splice_pipes_deinit(ClientSplicePipes *p);

/* Array bytes this process spliced into destinations, and read back from pipes into
 * memory (tests: which way a message went). */
extern uint64_t client_splice_bytes_spliced;
extern uint64_t client_splice_bytes_filled;

/* c->in_msg was just begun (bridge_msg_new_incoming(), @hdr its header): take the pipe
 * path if it qualifies. */
void client_splice_begin(ProxyClient *c, const WireHeader *hdr);
/* client_read() while client_in_piped(). Return: as client_read(). */
int client_splice_read(ProxyClient *c);
/* The complete, checked message @m (c->in_msg before) is about to be dispatched: the peer
 * its contents can be spliced to, or NULL, and then they are in m->data now. Return: 0 or
 * a negative errno (the pipe could not be read). */
int client_splice_target(ProxyClient *c, BridgeMsg *m, ProxyClient **ret);
/* After the dispatch of @m to @d (client_splice_target()): deliver it, or put what is left in
 * the pipe into m->data. */
void client_splice_deliver(ProxyClient *c, ProxyClient *d, BridgeMsg *m);
/* @c goes: its pipe, with whatever it holds. */
void client_splice_abort(ProxyClient *c);
