/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * The native command dispatcher (native/command.c): one table of kdbus's commands, each
 * with its fixed struct, the flags and the item types it takes, and its handler. The
 * checks every command shares run here, from the table, before the handler; a handler
 * checks only what is its own (an item's payload, a required item, combinations).
 *
 * Error convention of native/: every command returns 0 (1: a SYNC_REPLY answered later)
 * or the negative errno kdbus's ioctl() would have failed with. That errno is the peer's
 * result, not a failure of the bus: -ENOMEM included, it goes back to the peer and the bus
 * runs on. Outcomes of the core (positive BRIDGE_E_* / NAME_E_*, bridge/conn.h) are turned
 * into kdbus's errnos where a handler calls the core (native_errno_from_bridge()), so no
 * positive code leaves native/. See docs/native.md, "Commands".
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct NativeConn NativeConn;
struct kdbus_cmd;

/* The fds of one command: those that came with it and those that go with its reply. */
typedef struct NativeCommandIo {
        const int *fds;                 /* came with the command (borrowed) */
        unsigned n_fds;
        int *ret_fds;                   /* go with the reply (the caller's then), or NULL */
        unsigned ret_n_fds;
} NativeCommandIo;

/* How a command's items are checked before its handler runs. */
typedef enum NativeItemRule {
        NATIVE_ITEMS_NONE,              /* no item: cmd->size is the struct's */
        NATIVE_ITEMS_LISTED,            /* well-formed, each of a type in @items */
        NATIVE_ITEMS_ANY,               /* well-formed, any type (not looked at after) */
        NATIVE_ITEMS_UNCHECKED,         /* not looked at (BYEBYE, as it always was) */
} NativeItemRule;

typedef int (*NativeCommandRun)(NativeConn *nc, void *cmd, size_t size, NativeCommandIo *io);

typedef struct NativeCommand {
        uint64_t command;               /* KDBUS_CMD_* */
        const char *name;               /* for messages */
        size_t struct_size;             /* its fixed struct; the items follow */
        uint64_t flags;                 /* the flags it takes (others: EINVAL) */
        uint64_t negotiate;             /* KDBUS_FLAG_NEGOTIATE's answer, if not @flags */
        NativeItemRule item_rule;
        const uint64_t *items;          /* NATIVE_ITEMS_LISTED: the types, 0-terminated */
        bool setup;                     /* HELLO, BUS_MAKE, ENDPOINT_MAKE: a handle's first
                                         * command, EBADFD on a connection */
        NativeCommandRun run;           /* NULL: EBADFD on a connection (ENDPOINT_UPDATE is
                                         * an endpoint owner's command) */
} NativeCommand;

/* The table's entry for @command, or NULL: not one of kdbus's 16 commands (ENOTTY). */
const NativeCommand *native_command_find(uint64_t command);
/* Is @command one of kdbus's 16 commands (the others: ENOTTY in every handle state)? */
bool native_command_is_known(uint64_t command);
/* The checks @def says for the command at @cmd (@size bytes there): cmd->size within the
 * fixed struct and @size, the flags, the items. Return: 0 or -EINVAL. */
int native_command_check(const NativeCommand *def, const struct kdbus_cmd *cmd, size_t size);

/*
 * Execute one command other than HELLO. @buf holds the command struct (and, for SEND, the
 * kdbus_msg and payload bytes it points at by offset); @fds are the fds that came with it
 * (borrowed: the callee dups what it keeps). On return *ret_reply_size says how many bytes
 * of @buf to send back, and *ret_fds and *ret_n_fds (owned by the caller, may be NULL/0) the
 * fds to pass with the reply. A SEND with SYNC_REPLY returns 1: no reply now, it comes
 * through NativeConnOps.sync_done.
 *
 * Return: 0, 1 (SYNC_REPLY pending), or a negative errno for the peer.
 */
int native_conn_command(NativeConn *nc, uint64_t command, void *buf, size_t size,
                        const int *fds, unsigned n_fds, size_t *ret_reply_size,
                        int **ret_fds, unsigned *ret_n_fds);

struct kdbus_cmd_recv;
/*
 * native_conn_command() of the transport's own commands, exactly as that (the same checks
 * and errnos) without the table's lookup: FREE of @offset (a kdbus_cmd_free with nothing
 * else, as a KDBUS_WIRE_BATCH's FREEs are), and a RECV at @cmd (@size bytes, no fds with it;
 * its reply is sizeof(struct kdbus_cmd_recv) bytes of @cmd when @size has them).
 */
int native_conn_command_free(NativeConn *nc, uint64_t offset);
int native_conn_command_recv(NativeConn *nc, struct kdbus_cmd_recv *cmd, size_t size,
                             size_t *ret_reply_size, int **ret_fds, unsigned *ret_n_fds);
