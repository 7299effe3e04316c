/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * include/kdbus/kdbus.h against the layout kdbus's documentation gives: every struct is a
 * run of 64-bit fields, so each size and offset follows from the field order the
 * kdbus.*(7) pages list. Checked at compile time; the run-time cases check the values
 * the documentation gives for flags, item types and command numbers.
 */
#include <stddef.h>
#include <glib.h>
#include "kdbus/kdbus.h"

#define OFF(type, field, n) _Static_assert(offsetof(struct type, field) == (n), #type "." #field)
#define SIZE(type, n) _Static_assert(sizeof(struct type) == (n), "sizeof " #type)

SIZE(kdbus_item, 80);                   /* 16 of header + the largest payload, kdbus_creds */
OFF(kdbus_item, data, 16);
OFF(kdbus_item, id, 16);
OFF(kdbus_item, vec, 16);
SIZE(kdbus_notify_id_change, 16);
SIZE(kdbus_notify_name_change, 32);
SIZE(kdbus_creds, 64);                  /* 8 ids, 64-bit each in the final ABI */
SIZE(kdbus_pids, 24);
SIZE(kdbus_caps, 4);
SIZE(kdbus_audit, 8);
SIZE(kdbus_timestamp, 24);
SIZE(kdbus_vec, 16);
SIZE(kdbus_bloom_parameter, 16);
SIZE(kdbus_bloom_filter, 8);
SIZE(kdbus_memfd, 24);
OFF(kdbus_memfd, fd, 16);
SIZE(kdbus_name, 8);
SIZE(kdbus_policy_access, 24);

SIZE(kdbus_msg, 64);
OFF(kdbus_msg, flags, 8);
OFF(kdbus_msg, priority, 16);
OFF(kdbus_msg, dst_id, 24);
OFF(kdbus_msg, src_id, 32);
OFF(kdbus_msg, payload_type, 40);
OFF(kdbus_msg, cookie, 48);
OFF(kdbus_msg, cookie_reply, 56);
OFF(kdbus_msg, timeout_ns, 56);
OFF(kdbus_msg, items, 64);

SIZE(kdbus_msg_info, 24);
SIZE(kdbus_cmd_send, 56);
OFF(kdbus_cmd_send, msg_address, 24);
OFF(kdbus_cmd_send, reply, 32);
SIZE(kdbus_cmd_recv, 64);
OFF(kdbus_cmd_recv, priority, 24);
OFF(kdbus_cmd_recv, dropped_msgs, 32);
OFF(kdbus_cmd_recv, msg, 40);
SIZE(kdbus_cmd_free, 32);
OFF(kdbus_cmd_free, offset, 24);

SIZE(kdbus_cmd_hello, 96);
OFF(kdbus_cmd_hello, attach_flags_send, 24);
OFF(kdbus_cmd_hello, attach_flags_recv, 32);
OFF(kdbus_cmd_hello, bus_flags, 40);
OFF(kdbus_cmd_hello, id, 48);
OFF(kdbus_cmd_hello, pool_size, 56);
OFF(kdbus_cmd_hello, offset, 64);
OFF(kdbus_cmd_hello, items_size, 72);
OFF(kdbus_cmd_hello, id128, 80);
SIZE(kdbus_info, 24);
SIZE(kdbus_cmd_list, 40);
OFF(kdbus_cmd_list, list_size, 32);
SIZE(kdbus_cmd_info, 56);
OFF(kdbus_cmd_info, attach_flags, 32);
OFF(kdbus_cmd_info, info_size, 48);
SIZE(kdbus_cmd_match, 32);
OFF(kdbus_cmd_match, cookie, 24);
SIZE(kdbus_cmd, 24);
SIZE(kdbus_item_list, 8);
SIZE(kdbus_wire_request, 16);
SIZE(kdbus_wire_reply, 16);
/* our KDBUS_WIRE_BATCH framing (not kdbus's): a peer built against it must keep working */
SIZE(kdbus_wire_batch, 16);
OFF(kdbus_wire_batch, flags, 8);
OFF(kdbus_wire_batch, offsets, 16);
SIZE(kdbus_wire_batch_reply, 32);
OFF(kdbus_wire_batch_reply, return_flags, 16);

static void test_item_types(void) {
        g_assert_cmpuint(KDBUS_ITEM_NEGOTIATE, ==, 1);
        g_assert_cmpuint(KDBUS_ITEM_PAYLOAD_VEC, ==, 2);
        g_assert_cmpuint(KDBUS_ITEM_PAYLOAD_OFF, ==, 3);
        g_assert_cmpuint(KDBUS_ITEM_PAYLOAD_MEMFD, ==, 4);
        g_assert_cmpuint(KDBUS_ITEM_FDS, ==, 5);
        g_assert_cmpuint(KDBUS_ITEM_BLOOM_MASK, ==, 9);
        g_assert_cmpuint(KDBUS_ITEM_DST_NAME, ==, 10);
        g_assert_cmpuint(KDBUS_ITEM_DST_ID, ==, 16);
        g_assert_cmpuint(KDBUS_ITEM_TIMESTAMP, ==, 0x1000);
        g_assert_cmpuint(KDBUS_ITEM_CONN_DESCRIPTION, ==, 0x100d);
        g_assert_cmpuint(KDBUS_ITEM_POLICY_ACCESS, ==, 0x2000);
        g_assert_cmpuint(KDBUS_ITEM_NAME_ADD, ==, 0x8000);
        g_assert_cmpuint(KDBUS_ITEM_REPLY_DEAD, ==, 0x8006);
        /* kdbus_policy_access.access: kdbus's final enum starts at SEE = 0 (no NULL
         * value, unlike the access types) */
        g_assert_cmpuint(KDBUS_POLICY_SEE, ==, 0);
        g_assert_cmpuint(KDBUS_POLICY_TALK, ==, 1);
        g_assert_cmpuint(KDBUS_POLICY_OWN, ==, 2);
        g_assert_cmpuint(KDBUS_POLICY_ACCESS_USER, ==, 1);
        g_assert_cmpuint(KDBUS_POLICY_ACCESS_WORLD, ==, 3);
}

/* Each metadata item type is its attach flag's bit index above the attach base. */
static void test_attach_flags_match_items(void) {
        static const struct { uint64_t flag, item; } map[] = {
                { KDBUS_ATTACH_TIMESTAMP, KDBUS_ITEM_TIMESTAMP },
                { KDBUS_ATTACH_CREDS, KDBUS_ITEM_CREDS },
                { KDBUS_ATTACH_PIDS, KDBUS_ITEM_PIDS },
                { KDBUS_ATTACH_AUXGROUPS, KDBUS_ITEM_AUXGROUPS },
                { KDBUS_ATTACH_NAMES, KDBUS_ITEM_OWNED_NAME },
                { KDBUS_ATTACH_TID_COMM, KDBUS_ITEM_TID_COMM },
                { KDBUS_ATTACH_PID_COMM, KDBUS_ITEM_PID_COMM },
                { KDBUS_ATTACH_EXE, KDBUS_ITEM_EXE },
                { KDBUS_ATTACH_CMDLINE, KDBUS_ITEM_CMDLINE },
                { KDBUS_ATTACH_CGROUP, KDBUS_ITEM_CGROUP },
                { KDBUS_ATTACH_CAPS, KDBUS_ITEM_CAPS },
                { KDBUS_ATTACH_SECLABEL, KDBUS_ITEM_SECLABEL },
                { KDBUS_ATTACH_AUDIT, KDBUS_ITEM_AUDIT },
                { KDBUS_ATTACH_CONN_DESCRIPTION, KDBUS_ITEM_CONN_DESCRIPTION },
        };
        uint64_t all = 0;
        size_t i;

        for (i = 0; i < G_N_ELEMENTS(map); ++i) {
                g_assert_cmpuint(map[i].flag, ==, 1ULL << (map[i].item - _KDBUS_ITEM_ATTACH_BASE));
                all |= map[i].flag;
        }
        g_assert_cmpuint(all, ==, _KDBUS_ATTACH_ALL);
}

static void test_flags(void) {
        g_assert_cmpuint(KDBUS_NAME_REPLACE_EXISTING | KDBUS_NAME_ALLOW_REPLACEMENT |
                         KDBUS_NAME_QUEUE, ==, 7);
        g_assert_cmpuint(KDBUS_NAME_ACQUIRED, ==, 64);
        g_assert_cmpuint(KDBUS_HELLO_MONITOR, ==, 8);
        g_assert_cmpuint(KDBUS_RECV_USE_PRIORITY, ==, 4);
        g_assert_cmpuint(KDBUS_LIST_QUEUED, ==, 8);
        g_assert_cmpuint(KDBUS_MSG_SIGNAL, ==, 4);
        g_assert_cmpuint(KDBUS_FLAG_NEGOTIATE, ==, 0x8000000000000000ULL);
        /* "DBusDBus" as a big-endian number, so reversed in memory on x86 */
        g_assert_cmpmem(&(uint64_t){ KDBUS_PAYLOAD_DBUS }, 8, "suBDsuBD", 8);
}

/* The command codes are kdbus's final ioctl numbers (include/uapi/linux/kdbus.h of kdbus's
 * final tree, grouped by handle owner): magic 0x95, the command number, direction and the
 * size of the struct each takes. All seventeen, so a program built against kdbus's own
 * header reaches the same command here. */
static void test_commands(void) {
        g_assert_cmphex(KDBUS_CMD_BUS_MAKE, ==, 0x40189500);    /* _IOW, 24 bytes */
        g_assert_cmphex(KDBUS_CMD_ENDPOINT_MAKE, ==, 0x40189510);
        g_assert_cmphex(KDBUS_CMD_ENDPOINT_UPDATE, ==, 0x40189511);
        g_assert_cmphex(KDBUS_CMD_HELLO, ==, 0xc0609580);       /* _IOWR, 96 bytes */
        g_assert_cmphex(KDBUS_CMD_UPDATE, ==, 0x40189581);
        g_assert_cmphex(KDBUS_CMD_BYEBYE, ==, 0x40189582);
        g_assert_cmphex(KDBUS_CMD_FREE, ==, 0x40209583);        /* _IOW, 32 bytes */
        g_assert_cmphex(KDBUS_CMD_CONN_INFO, ==, 0x80389584);   /* _IOR, 56 bytes */
        g_assert_cmphex(KDBUS_CMD_BUS_CREATOR_INFO, ==, 0x80389585);
        g_assert_cmphex(KDBUS_CMD_LIST, ==, 0x80289586);        /* _IOR, 40 bytes */
        g_assert_cmphex(KDBUS_CMD_SEND, ==, 0x40389590);        /* _IOW, 56 bytes */
        g_assert_cmphex(KDBUS_CMD_RECV, ==, 0x80409591);        /* _IOR, 64 bytes */
        g_assert_cmphex(KDBUS_CMD_NAME_ACQUIRE, ==, 0x401895a0);
        g_assert_cmphex(KDBUS_CMD_NAME_RELEASE, ==, 0x401895a1);
        g_assert_cmphex(KDBUS_CMD_MATCH_ADD, ==, 0x402095b0);   /* _IOW, 32 bytes */
        g_assert_cmphex(KDBUS_CMD_MATCH_REMOVE, ==, 0x402095b1);
        /* ours, in a number kdbus never used */
        g_assert_cmphex(KDBUS_WIRE_BATCH, ==, 0xc01095c0);
        g_assert_cmpuint(KDBUS_HELLO_WIRE_BATCH, ==, 1ULL << 61);
        /* our extensions: high bits kdbus never used (its hello selftest takes bit 32 as
         * the faulty flag) */
        g_assert_cmpuint(KDBUS_HELLO_CAPTURE_PER_MESSAGE, ==, 1ULL << 60);
        g_assert_cmpuint(KDBUS_WIRE_RETURN_RECV_EMPTY, ==, 1);
        g_assert_cmpuint(KDBUS_WIRE_BATCH_MAX_FREE, ==, 64);
        /* KDBUS_WIRE_BATCH_HOLD_RECV: a batch flag (kdbus_wire_batch.flags, offset 8) */
        g_assert_cmpuint(KDBUS_WIRE_BATCH_HOLD_RECV, ==, 1);
        g_assert_cmpuint(KDBUS_WIRE_BATCH_THEN_RECV, ==, 2);
        g_assert_cmpuint(KDBUS_WIRE_RETURN_RECV, ==, 2);
}

static void test_item_size(void) {
        g_assert_cmpuint(KDBUS_ITEM_SIZE(0u), ==, 16);
        g_assert_cmpuint(KDBUS_ITEM_SIZE(1u), ==, 24);
        g_assert_cmpuint(KDBUS_ITEM_SIZE(sizeof(struct kdbus_vec)), ==, 32);
        g_assert_cmpuint(KDBUS_ITEM_SIZE(sizeof(struct kdbus_memfd)), ==, 40);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/native/abi/item-types", test_item_types);
        g_test_add_func("/native/abi/attach-flags", test_attach_flags_match_items);
        g_test_add_func("/native/abi/flags", test_flags);
        g_test_add_func("/native/abi/commands", test_commands);
        g_test_add_func("/native/abi/item-size", test_item_size);
        return g_test_run();
}
