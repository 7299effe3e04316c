/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The native command dispatcher: kdbus's 16 commands in one table, as compat/driver.c
 * keeps the driver's methods. Each entry says what every command's head must be (its fixed
 * struct, the flags it takes, the item types it takes) and which handler runs it; the
 * checks run here, in kdbus's order (kdbus_args_parse(): the struct, NEGOTIATE, the flags,
 * then every item's bounds and type before the command looks at any of them), so a
 * handler only checks what is its own and walks its items with KDBUS_ITEMS_FOREACH
 * (include/kdbus/kdbus.h).
 *
 * The order of a connected handle's command (native_conn_command()), each step's errno:
 * an unknown command ENOTTY; HELLO, BUS_MAKE, ENDPOINT_MAKE EBADFD (a handle's first
 * command, also after BYEBYE); after BYEBYE or when the bus dropped the connection
 * ECONNRESET; a buffer shorter than the struct EINVAL; KDBUS_FLAG_NEGOTIATE answered with
 * the known flags and nothing done; fds with anything but SEND EINVAL; a NEGOTIATE item
 * taken out (native_items_negotiate()); a monitor's, an activator's or a policy holder's
 * command it may not run EOPNOTSUPP; ENDPOINT_UPDATE EBADFD; then the table's checks
 * (EINVAL) and the handler.
 *
 * Error convention: native/command.h.
 */
#include <errno.h>
#include "bridge/conn.h"
#include "kdbus/kdbus.h"
#include "native/command.h"
#include "native/conn.h"
#include "native/holder.h"
#include "native/items.h"
#include "native/match.h"
#include "native/names.h"
#include "native/send.h"
#include "native/special.h"
#include "native/update.h"
#include "util/macro.h"

static const uint64_t items_hello[] = {
        KDBUS_ITEM_POLICY_ACCESS, KDBUS_ITEM_CONN_DESCRIPTION, KDBUS_ITEM_NAME,
        KDBUS_ITEM_CREDS, KDBUS_ITEM_PIDS, KDBUS_ITEM_SECLABEL, 0,
};
static const uint64_t items_send[] = { KDBUS_ITEM_CANCEL_FD, 0 };
static const uint64_t items_name[] = { KDBUS_ITEM_NAME, 0 };
static const uint64_t items_match_add[] = {
        KDBUS_ITEM_BLOOM_MASK, KDBUS_ITEM_NAME, KDBUS_ITEM_ID, KDBUS_ITEM_NAME_ADD,
        KDBUS_ITEM_NAME_REMOVE, KDBUS_ITEM_NAME_CHANGE, KDBUS_ITEM_ID_ADD,
        KDBUS_ITEM_ID_REMOVE, 0,
};
static const uint64_t items_update[] = {
        KDBUS_ITEM_ATTACH_FLAGS_SEND, KDBUS_ITEM_ATTACH_FLAGS_RECV,
        KDBUS_ITEM_CONN_DESCRIPTION, KDBUS_ITEM_NAME, KDBUS_ITEM_POLICY_ACCESS, 0,
};

/* The HELLO flags we know: kdbus's four and our two extensions. */
#define NATIVE_HELLO_FLAGS (KDBUS_HELLO_ACCEPT_FD | KDBUS_HELLO_ACTIVATOR | \
                            KDBUS_HELLO_POLICY_HOLDER | KDBUS_HELLO_MONITOR | \
                            KDBUS_HELLO_CAPTURE_PER_MESSAGE | KDBUS_HELLO_WIRE_BATCH)
#define MAKE_FLAGS (KDBUS_MAKE_ACCESS_GROUP | KDBUS_MAKE_ACCESS_WORLD)
#define NATIVE_RECV_FLAGS (KDBUS_RECV_PEEK | KDBUS_RECV_DROP | KDBUS_RECV_USE_PRIORITY)

/* The order is only that of native_command_find()'s search: the three commands of every
 * call first. */
static const NativeCommand native_commands[] = {
        /* a connection's */
        { KDBUS_CMD_SEND, "SEND", sizeof(struct kdbus_cmd_send), KDBUS_SEND_SYNC_REPLY, 0,
          NATIVE_ITEMS_LISTED, items_send, false, native_conn_send },
        { KDBUS_CMD_FREE, "FREE", sizeof(struct kdbus_cmd_free), 0, 0,
          NATIVE_ITEMS_ANY, NULL, false, native_conn_free_slice },
        { KDBUS_CMD_RECV, "RECV", sizeof(struct kdbus_cmd_recv), NATIVE_RECV_FLAGS, 0,
          NATIVE_ITEMS_NONE, NULL, false, native_conn_recv },
        { KDBUS_CMD_BYEBYE, "BYEBYE", sizeof(struct kdbus_cmd), 0, 0,
          NATIVE_ITEMS_UNCHECKED, NULL, false, native_conn_byebye },
        { KDBUS_CMD_NAME_ACQUIRE, "NAME_ACQUIRE", sizeof(struct kdbus_cmd),
          KDBUS_NAME_REPLACE_EXISTING | KDBUS_NAME_ALLOW_REPLACEMENT | KDBUS_NAME_QUEUE, 0,
          NATIVE_ITEMS_LISTED, items_name, false, native_conn_name_acquire },
        { KDBUS_CMD_NAME_RELEASE, "NAME_RELEASE", sizeof(struct kdbus_cmd), 0, 0,
          NATIVE_ITEMS_LISTED, items_name, false, native_conn_name_release },
        { KDBUS_CMD_LIST, "LIST", sizeof(struct kdbus_cmd_list),
          KDBUS_LIST_UNIQUE | KDBUS_LIST_NAMES | KDBUS_LIST_ACTIVATORS | KDBUS_LIST_QUEUED, 0,
          NATIVE_ITEMS_NONE, NULL, false, native_conn_list },
        /* NEGOTIATE answers the attach flags, which go in attach_flags, not in flags */
        { KDBUS_CMD_CONN_INFO, "CONN_INFO", sizeof(struct kdbus_cmd_info), 0, _KDBUS_ATTACH_ALL,
          NATIVE_ITEMS_LISTED, items_name, false, native_conn_info },
        { KDBUS_CMD_BUS_CREATOR_INFO, "BUS_CREATOR_INFO", sizeof(struct kdbus_cmd_info), 0, 0,
          NATIVE_ITEMS_NONE, NULL, false, native_conn_bus_creator_info },
        { KDBUS_CMD_MATCH_ADD, "MATCH_ADD", sizeof(struct kdbus_cmd_match), KDBUS_MATCH_REPLACE,
          0, NATIVE_ITEMS_LISTED, items_match_add, false, native_conn_match_add },
        { KDBUS_CMD_MATCH_REMOVE, "MATCH_REMOVE", sizeof(struct kdbus_cmd_match), 0, 0,
          NATIVE_ITEMS_NONE, NULL, false, native_conn_match_remove },
        { KDBUS_CMD_UPDATE, "UPDATE", sizeof(struct kdbus_cmd), 0, 0,
          NATIVE_ITEMS_LISTED, items_update, false, native_conn_update },
        /* an endpoint owner's command (proxy/native-listener.c): EBADFD on a connection */
        { KDBUS_CMD_ENDPOINT_UPDATE, "ENDPOINT_UPDATE", sizeof(struct kdbus_cmd), 0, 0,
          NATIVE_ITEMS_ANY, NULL, false, NULL },
        /* a handle's first command (proxy/native-listener.c runs them) */
        { KDBUS_CMD_HELLO, "HELLO", sizeof(struct kdbus_cmd_hello),
          NATIVE_HELLO_FLAGS | KDBUS_FLAG_NEGOTIATE, NATIVE_HELLO_FLAGS,
          NATIVE_ITEMS_LISTED, items_hello, true, NULL },
        { KDBUS_CMD_BUS_MAKE, "BUS_MAKE", sizeof(struct kdbus_cmd), MAKE_FLAGS, 0,
          NATIVE_ITEMS_ANY, NULL, true, NULL },
        { KDBUS_CMD_ENDPOINT_MAKE, "ENDPOINT_MAKE", sizeof(struct kdbus_cmd), MAKE_FLAGS, 0,
          NATIVE_ITEMS_ANY, NULL, true, NULL },
};

/**
 * native_command_find() - the table's entry for a command
 * @command:    KDBUS_CMD_* as the peer sent it
 *
 * Return: the entry, or NULL for a command kdbus did not have.
 */
const NativeCommand *native_command_find(uint64_t command) {
        size_t i;

        for (i = 0; i < ELEMENTSOF(native_commands); ++i)
                if (native_commands[i].command == command)
                        return &native_commands[i];
        return NULL;
}

/**
 * native_command_is_known() - is @command one of kdbus's commands
 * @command:    KDBUS_CMD_* as the peer sent it
 *
 * kdbus answers ENOTTY for an ioctl it does not know, whatever state the handle is in.
 *
 * Return: true for the 16 commands of kdbus's UAPI.
 */
bool native_command_is_known(uint64_t command) {
        return native_command_find(command) != NULL;
}

static bool type_listed(const uint64_t *types, uint64_t type) {
        for (; *types; ++types)
                if (*types == type)
                        return true;
        return false;
}

/**
 * native_command_check() - the head every command of @def's kind must have
 * @def:        the table's entry
 * @cmd:        the command (without its NEGOTIATE item)
 * @size:       bytes at @cmd (the datagram's command part)
 *
 * cmd->size at least the fixed struct and within @size (exactly the struct for a command
 * without items), no flag but those it takes, every item within cmd->size and at least a
 * header long (native_items_check()) and of a type it takes.
 *
 * Return: 0 or -EINVAL.
 */
int native_command_check(const NativeCommand *def, const struct kdbus_cmd *cmd, size_t size) {
        const struct kdbus_item *item;
        size_t items_size;

        if (size < def->struct_size || cmd->size < def->struct_size || cmd->size > size)
                return -EINVAL;
        if (cmd->flags & ~def->flags)
                return -EINVAL;
        items_size = cmd->size - def->struct_size;
        switch (def->item_rule) {
        case NATIVE_ITEMS_NONE:
                return items_size ? -EINVAL : 0;
        case NATIVE_ITEMS_UNCHECKED:
                return 0;
        case NATIVE_ITEMS_ANY:
                return native_items_check((const uint8_t *)cmd + def->struct_size, items_size);
        case NATIVE_ITEMS_LISTED:
                if (native_items_check((const uint8_t *)cmd + def->struct_size, items_size))
                        return -EINVAL;
                KDBUS_ITEMS_FOREACH(item, (const void *)((const uint8_t *)cmd + def->struct_size),
                                    items_size)
                        if (!type_listed(def->items, item->type))
                                return -EINVAL;
                return 0;
        }
        return -EINVAL;
}

/* May @nc run @command: not what a monitor, activator or policy holder may not do. */
static bool command_may(const NativeConn *nc, uint64_t command) {
        return native_special_may(nc, command) && native_holder_may(nc, command);
}

/*
 * Run a connected handle's command: what a monitor, activator or policy holder may not do
 * EOPNOTSUPP, ENDPOINT_UPDATE EBADFD, the table's checks, the handler.
 */
static int command_run(NativeConn *nc, const NativeCommand *def, void *buf, size_t size,
                       NativeCommandIo *io) {
        int r;

        if (!native_special_may(nc, def->command))
                return -EOPNOTSUPP;     /* kdbus: monitors and activators only receive */
        if (!native_holder_may(nc, def->command))
                return -EOPNOTSUPP;     /* kdbus: a policy holder is no ordinary connection */
        if (!def->run)
                return -EBADFD;         /* kdbus: an endpoint owner's command */
        r = native_command_check(def, buf, size);
        if (r)
                return r;
        return def->run(nc, buf, size, io);
}

/**
 * native_conn_command() - execute one command of a connected peer
 * @nc:         the connection
 * @command:    KDBUS_CMD_*
 * @buf:        the command struct (8-aligned), updated in place
 * @size:       bytes at @buf
 * @fds:        fds that came with the command (borrowed)
 * @n_fds:      their number
 * @ret_reply_size: bytes of @buf to send back (the fixed part of the struct)
 * @ret_fds:    fds to pass with the reply (owned by the caller), or NULL
 * @ret_n_fds:  their number
 *
 * KDBUS_FLAG_NEGOTIATE in the flags: nothing is done, the flags the command knows are
 * written to cmd->flags.
 *
 * Return: 0, 1 (SEND with SYNC_REPLY: the answer comes through sync_done), or a negative
 * errno for the peer (ENOTTY for an unknown command, EBADFD for HELLO, BUS_MAKE,
 * ENDPOINT_MAKE and ENDPOINT_UPDATE, ECONNRESET after BYEBYE or when the
 * bus dropped the connection, the handler's).
 */
int native_conn_command(NativeConn *nc, uint64_t command, void *buf, size_t size,
                        const int *fds, unsigned n_fds, size_t *ret_reply_size,
                        int **ret_fds, unsigned *ret_n_fds) {
        const NativeCommand *def = native_command_find(command);
        NativeCommandIo io = { .fds = fds, .n_fds = n_fds };
        struct kdbus_cmd *cmd = buf;
        void *copy;
        int r;

        *ret_fds = NULL;
        *ret_n_fds = 0;
        /* what goes back: the fixed struct (a kdbus_cmd's worth for what is refused
         * before it is looked at) */
        *ret_reply_size = MIN(size, def && !def->setup ? def->struct_size : sizeof(*cmd));
        /* kdbus's handle: unknown ioctls ENOTTY, the setup commands (HELLO, BUS_MAKE,
         * ENDPOINT_MAKE) EBADFD once the handle is set up, before anything else is looked
         * at (also after BYEBYE); the connection's commands ECONNRESET after BYEBYE */
        if (!def)
                return -ENOTTY;
        if (def->setup)
                return -EBADFD;
        if (nc->byebye || !bridge_conn_is_active(nc->conn))
                return -ECONNRESET;
        if (size < sizeof(*cmd) || size < def->struct_size)
                return -EINVAL;
        /* the common case, the struct alone (no item), flags it takes (so no NEGOTIATE),
         * no fds but a SEND's: every check below passes but command_run()'s first three,
         * which are made here; the rest would only walk items there are none of (a
         * command's own checks run in its handler either way) */
        if (cmd->size == def->struct_size && !(cmd->flags & ~def->flags) && def->run &&
            (!n_fds || command == KDBUS_CMD_SEND)) {
                if (!command_may(nc, command))
                        return -EOPNOTSUPP;
                r = def->run(nc, buf, size, &io);
                *ret_fds = io.ret_fds;
                *ret_n_fds = io.ret_n_fds;
                return r;
        }
        if (cmd->flags & KDBUS_FLAG_NEGOTIATE) {
                cmd->flags = def->negotiate ? def->negotiate : def->flags;
                cmd->return_flags = 0;
                return 0;
        }
        if (n_fds && command != KDBUS_CMD_SEND)
                return -EINVAL;
        r = native_items_negotiate(cmd, size, def->struct_size, &copy);
        if (r)
                return r;
        r = command_run(nc, def, copy ? copy : buf, size, &io);
        native_items_negotiate_done(buf, size, def->struct_size, copy);
        *ret_fds = io.ret_fds;
        *ret_n_fds = io.ret_n_fds;
        return r;
}

/**
 * native_conn_command_free() - FREE of @offset, as native_conn_command() runs it
 * @nc:         the connection
 * @offset:     the slice
 *
 * The bare kdbus_cmd_free takes native_conn_command()'s path for a struct without items:
 * ECONNRESET, EOPNOTSUPP (a policy holder), then the handler.
 *
 * Return: 0, -ECONNRESET, -EOPNOTSUPP, -ENXIO.
 */
int native_conn_command_free(NativeConn *nc, uint64_t offset) {
        struct kdbus_cmd_free cmd = { .size = sizeof(cmd), .offset = offset };
        NativeCommandIo io = { 0 };

        if (nc->byebye || !bridge_conn_is_active(nc->conn))
                return -ECONNRESET;
        if (!command_may(nc, KDBUS_CMD_FREE))
                return -EOPNOTSUPP;
        return native_conn_free_slice(nc, &cmd, sizeof(cmd), &io);
}

/**
 * native_conn_command_recv() - RECV, as native_conn_command() runs it
 * @nc:         the connection
 * @cmd:        the kdbus_cmd_recv, updated
 * @size:       bytes at @cmd
 * @ret_reply_size: bytes of @cmd for the reply
 * @ret_fds:    as native_conn_command()'s
 * @ret_n_fds:  their number
 *
 * The struct alone with flags RECV takes (a held RECV the transport runs again) goes
 * straight to the state checks and the handler; anything else through
 * native_conn_command().
 *
 * Return: as native_conn_command() for KDBUS_CMD_RECV.
 */
int native_conn_command_recv(NativeConn *nc, struct kdbus_cmd_recv *cmd, size_t size,
                             size_t *ret_reply_size, int **ret_fds, unsigned *ret_n_fds) {
        NativeCommandIo io = { 0 };
        int r;

        if (size < sizeof(*cmd) || cmd->size != sizeof(*cmd) ||
            (cmd->flags & ~(uint64_t)NATIVE_RECV_FLAGS))
                return native_conn_command(nc, KDBUS_CMD_RECV, cmd, size, NULL, 0,
                                           ret_reply_size, ret_fds, ret_n_fds);
        *ret_reply_size = sizeof(*cmd);
        *ret_fds = NULL;
        *ret_n_fds = 0;
        if (nc->byebye || !bridge_conn_is_active(nc->conn))
                return -ECONNRESET;
        if (!command_may(nc, KDBUS_CMD_RECV))
                return -EOPNOTSUPP;
        r = native_conn_recv(nc, cmd, size, &io);
        *ret_fds = io.ret_fds;
        *ret_n_fds = io.ret_n_fds;
        return r;
}
