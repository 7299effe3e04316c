/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * libkdbus: a small client library for kdbusd's native front end. It speaks the kdbus ABI
 * (include/kdbus/kdbus.h) over the SOCK_SEQPACKET socket kdbusd --native=unix:path=...
 * listens on: one datagram per command, one per reply (see docs/native.md). It hides the
 * differences from the ioctl ABI: pointers become datagram offsets, fds travel as
 * SCM_RIGHTS (fd fields are indices), and the fds of a received message come with the RECV
 * reply (KdbusConn.recv_fds) instead of being installed into the pool's FDS item.
 *
 * Every call returns 0 or a negative errno: the kdbus errno of the command, or of the
 * socket. No allocation beyond the connection and the reply buffers.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "kdbus/kdbus.h"

typedef struct KdbusConn {
        int fd;                         /* the socket */
        int wake_fd;                    /* readable when messages wait (after HELLO) */
        const uint8_t *pool;            /* read-only mapping of the receive pool */
        size_t pool_size;
        uint64_t id;                    /* our connection id */
        uint8_t id128[16];              /* the bus id */
        uint64_t bloom_size;
        uint64_t bloom_n_hash;
        /* fds of the last RECV or sync reply, owned: the FDS item's, then one per
         * PAYLOAD_MEMFD item (kdbus_msg_parts()) */
        int recv_fds[KDBUS_MSG_MAX_FDS + KDBUS_MSG_MAX_MEMFD_ITEMS];
        unsigned n_recv_fds;
        /* HELLO with KDBUS_HELLO_WIRE_BATCH (kdbusd's extension): kdbus_conn_send() and
         * kdbus_conn_recv() go as KDBUS_WIRE_BATCH, carrying the FREEs that
         * kdbus_conn_free_later() held back, and tell wire_return_flags */
        bool batch;
        /* HELLO with KDBUS_HELLO_ACCEPT_FD: without it the bus passes no FDS item fds (a
         * monitor's messages keep their FDS item of -1s), only memfds */
        bool accept_fds;
        uint64_t wire_return_flags;     /* KDBUS_WIRE_RETURN_* of the last batched command */
        uint64_t free_later[KDBUS_WIRE_BATCH_MAX_FREE];
        unsigned n_free_later;
} KdbusConn;

/* Connect to the socket at @path (no HELLO yet). */
int kdbus_conn_open(const char *path, KdbusConn **ret);
/* Close the socket, unmap the pool, close the fds still held. Return: NULL. */
KdbusConn *kdbus_conn_close(KdbusConn *c);

/*
 * One raw command: @cmd (its size field set) is sent, and the struct the bus writes back
 * replaces it (at most @cmd_size bytes). For SEND, use kdbus_conn_send(). Received fds go
 * to c->recv_fds (the previous ones are closed first).
 */
int kdbus_conn_command(KdbusConn *c, uint64_t command, void *cmd, size_t cmd_size,
                       const int *fds, unsigned n_fds);

/*
 * BUS_MAKE on a handle that did not say HELLO: a bus instance named @name ("<uid>-..."),
 * @flags KDBUS_MAKE_ACCESS_*, with the bloom parameters 64 bytes, 8 hashes. It
 * lives while @c stays open; its sockets are DIR/@name/bus (native) and
 * DIR/@name/bus.dbus1 (legacy), DIR being the directory of the socket @c is on. The maker
 * offers its CREDS and PIDS to BUS_CREATOR_INFO (ATTACH_FLAGS_SEND) and requires nothing.
 */
int kdbus_bus_make(KdbusConn *c, const char *name, uint64_t flags);
/* The same with the instance's bloom parameters (HELLO on it reports them). */
int kdbus_bus_make_bloom(KdbusConn *c, const char *name, uint64_t flags, uint64_t bloom_size,
                         uint64_t n_hash);

/* HELLO, map the pool read-only, read the bloom parameters and FREE their slice. With
 * KDBUS_HELLO_WIRE_BATCH in @flags (kdbusd's extension, include/kdbus/kdbus.h) commands
 * may be batched (KdbusConn.batch; a bus that does not know the flag: EINVAL). */
int kdbus_conn_hello(KdbusConn *c, uint64_t flags, uint64_t pool_size);
/* The same with a NAME item (@name: an activator's name; NULL: none). */
int kdbus_conn_hello_name(KdbusConn *c, uint64_t flags, uint64_t pool_size, const char *name);
/* The same with any items (8-aligned, at most LIBKDBUS_HELLO_ITEMS_MAX bytes). */
#define LIBKDBUS_HELLO_ITEMS_MAX 1024u
int kdbus_conn_hello_items(KdbusConn *c, uint64_t flags, uint64_t pool_size,
                           const struct kdbus_item *items, size_t items_size);

/* What a SEND needs besides the payload. */
typedef struct KdbusSend {
        uint64_t dst_id;                /* id, KDBUS_DST_ID_NAME, KDBUS_DST_ID_BROADCAST */
        const char *dst_name;           /* with KDBUS_DST_ID_NAME (or to check an id) */
        uint64_t msg_flags;             /* KDBUS_MSG_* */
        uint64_t send_flags;            /* KDBUS_SEND_SYNC_REPLY */
        int64_t priority;
        uint64_t cookie;
        uint64_t cookie_reply;          /* for replies */
        uint64_t timeout_ns;            /* for calls expecting a reply: the absolute
                                         * CLOCK_MONOTONIC deadline, never 0 (kdbus:
                                         * EINVAL); LIBKDBUS_DEADLINE_NEVER: none */
        const int *fds;                 /* FDS item */
        unsigned n_fds;
        /* >= 0: a sealed memfd (F_SEAL_SHRINK|GROW|WRITE|SEAL) whose range [memfd_start,
         * memfd_start + memfd_size) follows the bytes @data as the rest of the message:
         * @data must hold at least the whole dbus1 header (the bus routes by it), the
         * memfd then holds body bytes, which the bus passes on without reading them to
         * native receivers */
        int memfd;
        uint64_t memfd_start;
        uint64_t memfd_size;
        const int *cancel_fd;           /* SYNC_REPLY: a CANCEL_FD item for *cancel_fd (the
                                         * call fails ECANCELED once it is readable); NULL */
        /* a BLOOM_FILTER item (signals only): @bloom_size bytes (0: the bus's, from HELLO)
         * built with kdbus_bloom_add() and the bus's parameters; the bus adds its own
         * entries to it. NULL: none (the bus computes the filter alone) */
        const uint64_t *bloom_filter;
        uint64_t bloom_size;
        uint64_t bloom_generation;
} KdbusSend;

/* A call's timeout_ns that never expires (the bus's reply timeout still applies). */
#define LIBKDBUS_DEADLINE_NEVER UINT64_MAX
/* The timeout kdbus_send_from_dbus1() gives a method call: sd-bus's default, 25 s. */
#define LIBKDBUS_CALL_TIMEOUT_NS (25ull * 1000000000ull)

/*
 * Fill @s's msg_flags, cookie and cookie_reply from the dbus1 message @data (either
 * endianness). A method call expecting a reply whose @s->timeout_ns is 0 gets the deadline
 * now + LIBKDBUS_CALL_TIMEOUT_NS, since kdbus refuses a call without one (EINVAL); set
 * timeout_ns before (or after) to choose another. Return: 0 or -EBADMSG.
 */
int kdbus_send_from_dbus1(KdbusSend *s, const void *data, size_t size);

/*
 * SEND the dbus1 message @data as PAYLOAD_VEC (followed by @s->memfd as PAYLOAD_MEMFD). With
 * SYNC_REPLY, waits for the reply and stores where it is in *ret_reply (may be NULL
 * otherwise); its fds go to c->recv_fds.
 */
int kdbus_conn_send(KdbusConn *c, const KdbusSend *s, const void *data, size_t size,
                    struct kdbus_msg_info *ret_reply);

/* RECV; *ret_msg points into the pool (FREE msg offset when done). With
 * KDBUS_RECV_USE_PRIORITY the message of the lowest priority value, if that is <= @priority
 * (-EAGAIN otherwise, as when nothing waits). */
int kdbus_conn_recv(KdbusConn *c, uint64_t flags, int64_t priority,
                    const struct kdbus_msg **ret_msg, uint64_t *ret_dropped);
/* RECV that the bus holds until a message comes (kdbusd's KDBUS_WIRE_BATCH_HOLD_RECV,
 * include/kdbus/kdbus.h; needs KdbusConn.batch): blocks; @cancel_fd (-1: none) readable
 * ends it with ECANCELED. Return: as kdbus_conn_recv(), or -ECANCELED. */
int kdbus_conn_recv_held(KdbusConn *c, uint64_t flags, int64_t priority, int cancel_fd,
                         const struct kdbus_msg **ret_msg, uint64_t *ret_dropped);
/* SEND (no SYNC_REPLY), then a held RECV, in one datagram (KDBUS_WIRE_BATCH_THEN_RECV):
 * a service's answer and its wait for the next call. *@ret_sent: whether an error is the
 * RECV's (the SEND was done) or the SEND's. */
int kdbus_conn_send_recv_held(KdbusConn *c, const KdbusSend *s, const void *data, size_t size,
                              const struct kdbus_msg **ret_msg, bool *ret_sent);
int kdbus_conn_free(KdbusConn *c, uint64_t offset);
/*
 * FREE @offset with the next kdbus_conn_send() / kdbus_conn_recv() (in the same datagram,
 * before that command), or at kdbus_conn_wait() / kdbus_conn_free_flush(); at once without
 * KdbusConn.batch. The slice stays allocated until then: do not hold it back longer if the
 * pool is small. A held-back FREE that fails (ENXIO) fails the command it rode with, which is
 * then not run; the FREEs after it stay held.
 */
int kdbus_conn_free_later(KdbusConn *c, uint64_t offset);
/* The held-back FREEs, now, one FREE each. Return: 0 or the first errno (that one dropped). */
int kdbus_conn_free_flush(KdbusConn *c);
/* Wait until a message may be waiting (the wakeup eventfd); @timeout_ms as poll(). The
 * held-back FREEs are done first (a message may be waiting for their room). */
int kdbus_conn_wait(KdbusConn *c, int timeout_ms);

int kdbus_conn_name_acquire(KdbusConn *c, const char *name, uint64_t flags,
                            uint64_t *ret_return_flags);
int kdbus_conn_name_release(KdbusConn *c, const char *name);
int kdbus_conn_byebye(KdbusConn *c);

/*
 * MATCH_ADD of one entry: broadcasts whose bloom filter contains @mask (bloom_size bytes,
 * NULL: no mask) from @sender_id (KDBUS_MATCH_ID_ANY: anyone).
 */
int kdbus_conn_match_add(KdbusConn *c, uint64_t cookie, uint64_t flags, const uint64_t *mask,
                         uint64_t sender_id);
int kdbus_conn_match_remove(KdbusConn *c, uint64_t cookie);

/*
 * Add the entry "@prefix:@value" to a bloom mask or filter of @size bytes with @n_hash hash
 * functions: the bus's parameters from HELLO (c->bloom_size, c->bloom_n_hash), which differ
 * between buses (kdbusd --native-bloom=, BUS_MAKE), never assumed. The same bits as kdbusd
 * sets for the filters of broadcasts: the
 * entries are message-type, interface, member, path, path-slash-prefix, sender (":1.<id>"),
 * arg<N>, arg0-dot-prefix (see bridge/bloom.c).
 */
void kdbus_bloom_add(uint64_t *bloom, uint64_t size, uint64_t n_hash, const char *prefix,
                     const char *value);

/* The offset of a pool pointer (for FREE). */
static inline uint64_t kdbus_conn_offset(const KdbusConn *c, const void *p) {
        return (uint64_t)((const uint8_t *)p - c->pool);
}

/* Items of a kdbus_msg / kdbus_info: for (item = first; item; item = next). */
const struct kdbus_item *kdbus_item_first(const void *start, size_t header, uint64_t size);
const struct kdbus_item *kdbus_item_next(const void *start, uint64_t size,
                                         const struct kdbus_item *item);
/* The first item of @type in @m, or NULL. */
const struct kdbus_item *kdbus_msg_find(const struct kdbus_msg *m, uint64_t type);
/* The dbus1 bytes of a received message (its PAYLOAD_OFF item). Return: 0 or -EBADMSG. */
int kdbus_msg_payload(const struct kdbus_msg *m, const uint8_t **ret_data, size_t *ret_size);

/* One part of a received message's payload, in order: bytes in the pool, or a memfd. */
typedef struct KdbusPart {
        const uint8_t *data;            /* PAYLOAD_OFF: in the pool; NULL for a memfd */
        int memfd;                      /* PAYLOAD_MEMFD: from c->recv_fds (owned by @c until
                                         * its next command; dup it to keep it), else -1 */
        uint64_t start;                 /* memfd: where the part starts in the file */
        uint64_t size;
} KdbusPart;

/*
 * The payload parts of @m, the message of the last RECV (or sync reply) on @c, at most
 * @max. Return: their number, or -EBADMSG (a part outside the pool, a memfd without fd),
 * -E2BIG (more than @max).
 */
int kdbus_msg_parts(const KdbusConn *c, const struct kdbus_msg *m, KdbusPart *parts,
                    unsigned max);
/* The whole dbus1 message of @m (parts concatenated, memfds read) in a new malloc()ed
 * buffer. Return: 0, -EBADMSG, -ENOMEM, -EIO. */
int kdbus_msg_copy_payload(const KdbusConn *c, const struct kdbus_msg *m, uint8_t **ret,
                           size_t *ret_size);
