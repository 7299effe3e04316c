/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: the native (kdbus ABI) commands on the bus core (native/), as the
 * native socket hands them over: a byte buffer of exactly the datagram's size, which the
 * command may answer into (its fixed struct). Two peers on one bus: A, whose commands come
 * from the input, and B, a well-behaved peer (a name, a match entry for everything) that
 * receives, answers and frees. The input is a list of records, each
 *
 *     u8 op, u8 arg, u16 len (little endian), len bytes
 *
 *   op 0: A runs command[arg] on the bytes as they are;
 *   op 1: the same with the struct's size field set to len (a consistent header gets the
 *         parser further);
 *   op 2: A sends B a well-formed dbus1 message built here (arg: call / signal / broadcast,
 *         by id or by name, expecting a reply, SYNC_REPLY), the bytes its `ay` body;
 *   op 3: B receives what waits and answers calls, frees everything;
 *   op 4: A receives with RECV flags from arg (PEEK, DROP, USE_PRIORITY) and frees;
 *   op 5: B takes or gives back a name (so names, queues and notifications move);
 *   op 6: B sends A a signal or call.
 *
 * Beyond "no crash, no leak, no overrun" (ASan; the command buffer is exactly len bytes)
 * it checks that every command answers 0, 1 (SYNC_REPLY pending) or a negative errno, and
 * that a reply never claims more than the buffer.
 */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "bridge/bus.h"
#include "bridge/conn.h"
#include "bridge/pool.h"
#include "kdbus/kdbus.h"
#include "native/command.h"
#include "native/conn.h"
#include "wire/message.h"
#include "wire/protocol.h"
#include "wire/writer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define POOL_SIZE (64u * 1024u)
#define NEVER UINT64_MAX

static const uint64_t commands[] = {
        KDBUS_CMD_SEND, KDBUS_CMD_RECV, KDBUS_CMD_FREE, KDBUS_CMD_NAME_ACQUIRE,
        KDBUS_CMD_NAME_RELEASE, KDBUS_CMD_LIST, KDBUS_CMD_CONN_INFO, KDBUS_CMD_BUS_CREATOR_INFO,
        KDBUS_CMD_UPDATE, KDBUS_CMD_MATCH_ADD, KDBUS_CMD_MATCH_REMOVE, KDBUS_CMD_BYEBYE,
        KDBUS_CMD_ENDPOINT_UPDATE, KDBUS_CMD_HELLO, 0x1234,
};

static void fds_close(int *fds, unsigned n) {
        while (n)
                (void) close(fds[--n]);
        free(fds);
}

static void peer_readable(NativeConn *nc, void *userdata) {
}

static void peer_sync_done(NativeConn *nc, void *userdata, void *waiter, int error,
                           uint64_t offset, uint64_t size, int *fds, unsigned n_fds) {
        fds_close(fds, n_fds);
}

static const NativeConnOps peer_ops = {
        .readable = peer_readable,
        .sync_done = peer_sync_done,
};

/* Run one command on a private copy of exactly @len bytes. Return: its result. */
static int run(NativeConn *nc, uint64_t command, const uint8_t *bytes, size_t len) {
        uint8_t *buf = malloc(len ? len : 1);   /* malloc: 16-aligned, as the socket's */
        size_t reply_size = 0;
        int *fds = NULL;
        unsigned n_fds = 0;
        int r;

        assert(buf);
        memcpy(buf, bytes, len);
        r = native_conn_command(nc, command, buf, len, NULL, 0, &reply_size, &fds, &n_fds);
        assert(r == 0 || r == 1 || (r < 0 && r > -4096));
        assert(reply_size <= len);
        fds_close(fds, n_fds);
        free(buf);
        return r;
}

static NativeConn *hello(Bus *bus, uid_t uid, uint64_t flags) {
        struct kdbus_cmd_hello cmd = { .size = sizeof(cmd), .flags = flags,
                                       .attach_flags_send = _KDBUS_ATTACH_ALL,
                                       .attach_flags_recv = _KDBUS_ATTACH_ALL,
                                       .pool_size = POOL_SIZE };
        BridgeCreds creds = { .uid = uid, .gid = uid, .pid = getpid(), .pidfd = -1 };
        NativeConn *nc = NULL;

        if (native_conn_hello(bus, &creds, &cmd, sizeof(cmd), &peer_ops, NULL, &nc))
                return NULL;
        return nc;
}

/* A SEND datagram: cmd | kdbus_msg with a PAYLOAD_VEC (and a DST_NAME) | dbus1 bytes. */
static uint8_t *send_datagram(uint64_t dst_id, const char *dst_name, uint64_t msg_flags,
                              uint64_t send_flags, uint64_t cookie, uint64_t cookie_reply,
                              const uint8_t *msg, size_t msg_len, size_t *ret_size) {
        size_t km_size = sizeof(struct kdbus_msg) + KDBUS_ITEM_SIZE(sizeof(struct kdbus_vec)) +
                         (dst_name ? KDBUS_ITEM_SIZE(strlen(dst_name) + 1) : 0);
        size_t total = sizeof(struct kdbus_cmd_send) + km_size + KDBUS_ALIGN8(msg_len);
        uint8_t *buf = calloc(1, total);
        struct kdbus_cmd_send *cmd = (void *)buf;
        struct kdbus_msg *km;
        struct kdbus_item *item;

        assert(buf);
        cmd->size = sizeof(*cmd);
        cmd->flags = send_flags;
        cmd->msg_address = sizeof(*cmd);
        km = (void *)(buf + sizeof(*cmd));
        km->size = km_size;
        km->flags = msg_flags;
        km->dst_id = dst_id;
        km->payload_type = KDBUS_PAYLOAD_DBUS;
        km->cookie = cookie;
        if (msg_flags & KDBUS_MSG_EXPECT_REPLY)
                km->timeout_ns = NEVER;
        else
                km->cookie_reply = cookie_reply;
        item = km->items;
        item->size = KDBUS_ITEM_HEADER_SIZE + sizeof(struct kdbus_vec);
        item->type = KDBUS_ITEM_PAYLOAD_VEC;
        item->vec.offset = sizeof(*cmd) + km_size;
        item->vec.size = msg_len;
        memcpy(buf + item->vec.offset, msg, msg_len);
        if (dst_name) {
                item = KDBUS_ITEM_NEXT(item);
                item->size = KDBUS_ITEM_HEADER_SIZE + strlen(dst_name) + 1;
                item->type = KDBUS_ITEM_DST_NAME;
                strcpy(item->str, dst_name);
        }
        *ret_size = total;
        return buf;
}

/* Build and send a dbus1 message from @from; @body: its `ay`. Return: SEND's result. */
static int send_built(NativeConn *from, uint64_t dst_id, const char *dest, uint8_t type,
                      bool expect_reply, bool sync, uint32_t serial, uint32_t reply_serial,
                      const uint8_t *body, size_t body_len) {
        WireMsgSpec spec = { .type = type, .serial = serial, .reply_serial = reply_serial,
                             .path = "/fuzz", .interface = "org.fuzz.I", .member = "M",
                             .destination = dest };
        uint64_t msg_flags = 0;
        WireWriter w;
        uint8_t *msg = NULL, *dgram;
        size_t msg_len, dgram_len;
        int r;

        if (type == WIRE_MSG_METHOD_CALL && !expect_reply)
                spec.flags |= WIRE_FLAG_NO_REPLY_EXPECTED;
        if (type == WIRE_MSG_METHOD_RETURN)
                spec.path = spec.interface = spec.member = NULL;
        wire_writer_init(&w);
        if (wire_writer_open(&w, 'a', "y") == 0) {
                size_t i;

                for (i = 0; i < body_len; ++i)
                        (void) wire_writer_append_basic(&w, 'y', &body[i]);
                (void) wire_writer_close(&w);
        }
        r = wire_message_build(&spec, &w, &msg, &msg_len);
        wire_writer_deinit(&w);
        if (r)
                return -EINVAL;
        if (type == WIRE_MSG_METHOD_CALL && expect_reply)
                msg_flags |= KDBUS_MSG_EXPECT_REPLY;
        if (type == WIRE_MSG_SIGNAL)
                msg_flags |= KDBUS_MSG_SIGNAL;
        dgram = send_datagram(dst_id, dest && dest[0] != ':' ? dest : NULL, msg_flags,
                              sync ? KDBUS_SEND_SYNC_REPLY : 0, serial, reply_serial, msg,
                              msg_len, &dgram_len);
        r = run(from, KDBUS_CMD_SEND, dgram, dgram_len);
        free(dgram);
        free(msg);
        return r;
}

/* @nc receives what waits (RECV @flags), answering calls from @answer_as; frees all. */
static void drain(NativeConn *nc, uint64_t flags, NativeConn *answer_as) {
        unsigned guard;

        for (guard = 0; guard < 64; ++guard) {
                struct kdbus_cmd_recv rcv = { .size = sizeof(rcv), .flags = flags };
                struct kdbus_cmd_free fr = { .size = sizeof(fr) };
                size_t reply_size = 0;
                int *fds = NULL;
                unsigned n_fds = 0;
                const struct kdbus_msg *km;
                int r;

                r = native_conn_command(nc, KDBUS_CMD_RECV, &rcv, sizeof(rcv), NULL, 0,
                                        &reply_size, &fds, &n_fds);
                fds_close(fds, n_fds);
                if (r < 0)
                        return;
                if (rcv.msg.offset >= POOL_SIZE)        /* DROP: nothing handed out */
                        continue;
                km = (const void *)(nc->pool->map + rcv.msg.offset);
                if (answer_as && (km->flags & KDBUS_MSG_EXPECT_REPLY) && km->src_id)
                        (void) send_built(answer_as, km->src_id, NULL, WIRE_MSG_METHOD_RETURN,
                                          false, false, 1000 + guard, (uint32_t)km->cookie,
                                          NULL, 0);
                fr.offset = rcv.msg.offset;
                (void) native_conn_command(nc, KDBUS_CMD_FREE, &fr, sizeof(fr), NULL, 0,
                                           &reply_size, &fds, &n_fds);
                if (flags & KDBUS_RECV_PEEK)
                        return;         /* the same message again: once is enough */
        }
}

/* Room for a NAME_ACQUIRE / NAME_RELEASE struct of one of names[]. */
#define NAME_CMD_MAX (sizeof(struct kdbus_cmd) + sizeof(struct kdbus_item) + 32)

/* A NAME_ACQUIRE / NAME_RELEASE struct for @name into @buf (8-aligned, NAME_CMD_MAX
 * bytes). Return: its size. */
static size_t name_cmd(uint8_t *buf, const char *name, uint64_t flags) {
        struct kdbus_cmd *cmd = (void *)buf;
        struct kdbus_item *item = cmd->items;

        memset(buf, 0, NAME_CMD_MAX);
        cmd->flags = flags;
        item->size = KDBUS_ITEM_HEADER_SIZE + strlen(name) + 1;
        item->type = KDBUS_ITEM_NAME;
        strcpy(item->str, name);
        cmd->size = sizeof(*cmd) + KDBUS_ALIGN8(item->size);
        return cmd->size;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static const char *const names[] = { "org.fuzz.A", "org.fuzz.B", "org.fuzz.C" };
        _cleanup_(bus_freep) Bus *bus = NULL;
        NativeConn *a, *b;
        uint32_t serial = 1;
        size_t pos = 0;

        if (bus_new(NULL, &bus) || bus_set_naming(bus, BUS_NAMING_KDBUS))
                return 0;
        b = hello(bus, 1000, KDBUS_HELLO_ACCEPT_FD);
        a = hello(bus, size && (data[0] & 1) ? 0 : 1000, KDBUS_HELLO_ACCEPT_FD);
        assert(a && b);
        {
                uint8_t acq[NAME_CMD_MAX] __attribute__((aligned(8)));
                struct kdbus_cmd_match match = { .size = sizeof(match), .cookie = 1 };

                assert(run(b, KDBUS_CMD_NAME_ACQUIRE, acq, name_cmd(acq, names[1], 0)) == 0);
                assert(run(b, KDBUS_CMD_MATCH_ADD, (const uint8_t *)&match, sizeof(match)) == 0);
        }

        while (pos + 4 <= size) {
                uint8_t op = data[pos], arg = data[pos + 1];
                size_t len = (size_t)data[pos + 2] | (size_t)data[pos + 3] << 8;
                const uint8_t *bytes = data + pos + 4;
                int r;

                pos += 4;
                if (len > size - pos)
                        len = size - pos;
                pos += len;
                switch (op % 7) {
                case 0:
                case 1: {
                        uint8_t *copy = malloc(len > 8 ? len : 8);

                        assert(copy);
                        memset(copy, 0, len > 8 ? len : 8);
                        memcpy(copy, bytes, len);
                        if (op % 7 == 1 && len >= 8) {
                                uint64_t sz = len;

                                memcpy(copy, &sz, sizeof(sz));
                        }
                        r = run(a, commands[arg % (sizeof(commands) / sizeof(commands[0]))],
                                copy, len);
                        free(copy);
                        break;
                }
                case 2: {
                        bool by_name = arg & 1, bcast = arg & 2, sig = arg & 4;
                        bool expect = arg & 8, sync = (arg & 16) && expect;

                        r = send_built(a, bcast ? KDBUS_DST_ID_BROADCAST :
                                          by_name ? KDBUS_DST_ID_NAME : b->conn->id,
                                       bcast ? NULL : by_name ? names[1 + (arg >> 5) % 2] :
                                                                ":1.1",
                                       sig || bcast ? WIRE_MSG_SIGNAL : WIRE_MSG_METHOD_CALL,
                                       expect && !sig && !bcast, sync && !sig && !bcast,
                                       serial++, 0, bytes, len);
                        break;
                }
                case 3:
                        drain(b, 0, b);
                        r = 0;
                        break;
                case 4:
                        drain(a, arg & (KDBUS_RECV_PEEK | KDBUS_RECV_DROP |
                                        KDBUS_RECV_USE_PRIORITY), NULL);
                        r = 0;
                        break;
                case 5: {
                        uint8_t n[NAME_CMD_MAX] __attribute__((aligned(8)));
                        size_t n_size = name_cmd(n, names[arg % 3],
                                                 arg & 4 ? KDBUS_NAME_QUEUE : 0);

                        r = run(b, arg & 8 ? KDBUS_CMD_NAME_RELEASE : KDBUS_CMD_NAME_ACQUIRE,
                                n, n_size);
                        break;
                }
                default:
                        r = send_built(b, a->conn->id, NULL,
                                       arg & 1 ? WIRE_MSG_SIGNAL : WIRE_MSG_METHOD_CALL, false,
                                       false, serial++, 0, bytes, len);
                        break;
                }
                /* a SYNC_REPLY waits: B answers it, or the call is cancelled */
                if (r == 1) {
                        drain(b, 0, b);
                        native_conn_sync_cancel(a, NULL);
                }
        }
        native_conn_free(a);
        native_conn_free(b);
        return 0;
}
