/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * A real kdbusd (KDBUSD from meson) with a legacy and a native socket, and native peers
 * on it through libkdbus: the fixture of the conformance tests organised like kdbus's
 * selftests (test-selftests-*.c; the map is docs/kdbus-selftests.md).
 *
 * A test's ctx is NULL (kdbusd --session) or the text of a configuration file. Teardown
 * checks that kdbusd exits 0 on SIGTERM, so a sanitizer report in the bus fails the test.
 *
 * Waiting: a native SEND is answered after the bus routed it, so whether a message from a
 * native sender reached a native receiver can be checked with RECV right after the SEND
 * returned (no sleep, no timeout). Waits (kdbus_conn_wait) bound only what must come.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include "libkdbus/libkdbus.h"
#include "util/macro.h"
#include "wire/message.h"
#include "wire/protocol.h"
#include "wire/writer.h"
#include <glib.h>

#define KPOOL (256u * 1024u)

/* A configuration open to every uid (for tests with unprivileged peers in children). */
static const char kbus_open_conf[] _unused_ =
        "<busconfig>\n"
        "  <type>session</type>\n"
        "  <listen>unix:tmpdir=/tmp</listen>\n"
        "  <auth>EXTERNAL</auth>\n"
        "  <policy context=\"default\">\n"
        "    <allow user=\"*\"/>\n"
        "    <allow send_destination=\"*\" eavesdrop=\"true\"/>\n"
        "    <allow eavesdrop=\"true\"/>\n"
        "    <allow own=\"*\"/>\n"
        "  </policy>\n"
        "</busconfig>\n";

typedef struct KBus {
        char *dir;
        char *native;
        char *legacy;
        GPid pid;
} KBus;

/* kdbusd goes when the test process dies, even on a failed assertion */
static _unused_ void kbus_child_setup(gpointer data) {
        (void) prctl(PR_SET_PDEATHSIG, SIGTERM);
}

static _unused_ void kbus_setup(KBus *b, gconstpointer ctx) {
        const char *exe = g_getenv("KDBUSD"), *config = ctx;
        g_autofree char *native_arg = NULL, *legacy_arg = NULL, *conf_arg = NULL;
        const char *argv[8];
        unsigned i, n = 0;

        g_assert_nonnull(exe);
        b->dir = g_dir_make_tmp("kdbus-selftest-XXXXXX", NULL);
        g_assert_nonnull(b->dir);
        b->native = g_build_filename(b->dir, "native", NULL);
        b->legacy = g_build_filename(b->dir, "legacy", NULL);
        native_arg = g_strdup_printf("--native=unix:path=%s", b->native);
        legacy_arg = g_strdup_printf("--address=unix:path=%s", b->legacy);
        argv[n++] = exe;
        if (config) {
                g_autofree char *conf = g_build_filename(b->dir, "bus.conf", NULL);

                g_assert_true(g_file_set_contents(conf, config, -1, NULL));
                conf_arg = g_strdup_printf("--config-file=%s", conf);
                argv[n++] = conf_arg;
        } else {
                argv[n++] = "--session";
        }
        argv[n++] = "--nofork";
        argv[n++] = legacy_arg;
        argv[n++] = native_arg;
        argv[n] = NULL;
        g_assert_true(g_spawn_async(NULL, (char **)argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD,
                                    kbus_child_setup, NULL, &b->pid, NULL));
        for (i = 0; i < 1000 && !g_file_test(b->native, G_FILE_TEST_EXISTS); ++i)
                g_usleep(10000);
        g_assert_true(g_file_test(b->native, G_FILE_TEST_EXISTS));
}

static _unused_ void kbus_teardown(KBus *b, gconstpointer ctx) {
        int status;

        (void) kill(b->pid, SIGTERM);
        g_assert_cmpint(waitpid(b->pid, &status, 0), ==, b->pid);
        g_spawn_close_pid(b->pid);
        /* a sanitizer report (halt_on_error) or a crash shows here */
        g_assert_true(WIFEXITED(status));
        g_assert_cmpint(WEXITSTATUS(status), ==, 0);
        (void) unlink(b->native);
        (void) unlink(b->legacy);
        {
                g_autofree char *conf = g_build_filename(b->dir, "bus.conf", NULL);

                (void) unlink(conf);
        }
        (void) rmdir(b->dir);
        g_free(b->dir);
        g_free(b->native);
        g_free(b->legacy);
}

/* Connect (retrying while the socket is bound but not listening yet); no HELLO. */
static _unused_ KdbusConn *kopen(KBus *b) {
        KdbusConn *c = NULL;
        unsigned i;
        int r;

        for (i = 0; (r = kdbus_conn_open(b->native, &c)) == -ECONNREFUSED && i < 500; ++i)
                g_usleep(10000);
        g_assert_cmpint(r, ==, 0);
        return c;
}

static _unused_ KdbusConn *kpeer_pool(KBus *b, uint64_t flags, uint64_t pool_size) {
        KdbusConn *c = kopen(b);

        g_assert_cmpint(kdbus_conn_hello(c, flags, pool_size), ==, 0);
        return c;
}

static _unused_ KdbusConn *kpeer(KBus *b, uint64_t flags) {
        return kpeer_pool(b, flags, KPOOL);
}

/* RECV with DROP until the queue is empty (the driver's NameAcquired, say). */
static _unused_ void kdrop_all(KdbusConn *c) {
        int r;

        while ((r = kdbus_conn_recv(c, KDBUS_RECV_DROP, 0, NULL, NULL)) == 0)
                ;
        g_assert_cmpint(r, ==, -EAGAIN);
}

/* ":1.<id>" in a static buffer (one at a time) */
static _unused_ const char *kunique(uint64_t id) {
        static char buf[32];

        g_snprintf(buf, sizeof(buf), ":1.%llu", (unsigned long long)id);
        return buf;
}

/* A dbus1 message without SENDER; @args: NULL-terminated string arguments (or NULL). */
static _unused_ uint8_t *kbuild(uint8_t type, uint32_t serial, uint32_t reply_serial,
                                const char *dest, const char *member, const char *const *args,
                                size_t *ret_size) {
        WireMsgSpec spec = { .type = type, .serial = serial, .reply_serial = reply_serial,
                             .destination = dest };
        WireWriter w;
        uint8_t *data = NULL;

        if (type == WIRE_MSG_METHOD_CALL || type == WIRE_MSG_SIGNAL) {
                spec.path = "/org/example";
                spec.interface = "org.example.Test";
                spec.member = member;
        }
        if (type == WIRE_MSG_ERROR)
                spec.error_name = member;
        wire_writer_init(&w);
        for (; args && *args; ++args)
                g_assert_cmpint(wire_writer_append_basic(&w, 's', *args), ==, 0);
        g_assert_cmpint(wire_message_build(&spec, &w, &data, ret_size), ==, 0);
        wire_writer_deinit(&w);
        return data;
}

/* SEND a built dbus1 message; kdbus fields derived from its header. */
static _unused_ int ksend_dbus1(KdbusConn *c, uint64_t dst_id, const char *dst_name,
                                uint64_t send_flags, int64_t priority, const uint8_t *data,
                                size_t size, struct kdbus_msg_info *ret_reply) {
        KdbusSend s = { .dst_id = dst_id, .dst_name = dst_name, .send_flags = send_flags,
                        .priority = priority, .memfd = -1 };

        g_assert_cmpint(kdbus_send_from_dbus1(&s, data, size), ==, 0);
        return kdbus_conn_send(c, &s, data, size, ret_reply);
}

/* A method call with one string argument (@arg may be NULL) to a unique id or a name. */
static _unused_ int kcall(KdbusConn *c, uint64_t dst_id, const char *dst_name, uint32_t serial,
                 bool no_reply, const char *member, const char *arg, uint64_t send_flags,
                 struct kdbus_msg_info *ret_reply) {
        const char *args[] = { arg, NULL };
        const char *dest = dst_name ? dst_name : kunique(dst_id);
        g_autofree char *dest_copy = g_strdup(dest);
        uint8_t *data;
        size_t size;
        int r;

        data = kbuild(WIRE_MSG_METHOD_CALL, serial, 0, dest_copy, member, args, &size);
        if (no_reply)
                data[2] |= WIRE_FLAG_NO_REPLY_EXPECTED;         /* the header's flags byte */
        r = ksend_dbus1(c, dst_name ? KDBUS_DST_ID_NAME : dst_id, dst_name, send_flags, 0,
                        data, size, ret_reply);
        free(data);
        return r;
}

static _unused_ int kreply(KdbusConn *c, uint64_t dst_id, uint32_t serial, uint32_t reply_serial,
                  const char *arg) {
        const char *args[] = { arg, NULL };
        g_autofree char *dest = g_strdup(kunique(dst_id));
        uint8_t *data;
        size_t size;
        int r;

        data = kbuild(WIRE_MSG_METHOD_RETURN, serial, reply_serial, dest, NULL, args, &size);
        r = ksend_dbus1(c, dst_id, NULL, 0, 0, data, size, NULL);
        free(data);
        return r;
}

/* A broadcast signal org.example.Test.@member with string arguments @args. */
static _unused_ int ksignal(KdbusConn *c, uint32_t serial, const char *member,
                            const char *const *args) {
        uint8_t *data;
        size_t size;
        int r;

        data = kbuild(WIRE_MSG_SIGNAL, serial, 0, NULL, member, args, &size);
        r = ksend_dbus1(c, KDBUS_DST_ID_BROADCAST, NULL, 0, 0, data, size, NULL);
        free(data);
        return r;
}

/* Is @m a dbus1 message from the bus driver (NameAcquired, NameLost ...)? */
static _unused_ bool kmsg_is_driver(const struct kdbus_msg *m) {
        return m->src_id == KDBUS_SRC_ID_KERNEL && m->payload_type == KDBUS_PAYLOAD_DBUS;
}

/*
 * The next message, waiting up to @timeout_ms for one to come; messages of the bus driver
 * are FREEd and skipped if @skip_driver. Return: 0 or -EAGAIN (none came in time).
 */
static _unused_ int krecv_wait(KdbusConn *c, int timeout_ms, bool skip_driver,
                      const struct kdbus_msg **ret) {
        const struct kdbus_msg *m = NULL;
        int r;

        for (;;) {
                r = kdbus_conn_recv(c, 0, 0, &m, NULL);
                if (r == 0 && skip_driver && kmsg_is_driver(m)) {
                        g_assert_cmpint(kdbus_conn_free(c, kdbus_conn_offset(c, m)), ==, 0);
                        continue;
                }
                if (r != -EAGAIN)
                        break;
                if (timeout_ms <= 0 || kdbus_conn_wait(c, timeout_ms) == -ETIMEDOUT)
                        return -EAGAIN;
        }
        g_assert_cmpint(r, ==, 0);
        *ret = m;
        return 0;
}

/* The next message that is not the driver's (waiting up to 5 s), its header and args. */
static _unused_ const struct kdbus_msg *krecv(KdbusConn *c, WireHeader *hdr, WireArgs *args) {
        const struct kdbus_msg *m = NULL;
        const uint8_t *data;
        size_t size;

        g_assert_cmpint(krecv_wait(c, 5000, true, &m), ==, 0);
        if (m->payload_type == KDBUS_PAYLOAD_KERNEL)
                return m;
        g_assert_cmpint(kdbus_msg_payload(m, &data, &size), ==, 0);
        g_assert_cmpint(wire_message_parse(data, size, c->n_recv_fds, 0, hdr), ==, 0);
        if (args)
                g_assert_cmpint(wire_message_get_args(data, hdr, args), ==, 0);
        return m;
}

static _unused_ void kfree_msg(KdbusConn *c, const struct kdbus_msg *m) {
        g_assert_cmpint(kdbus_conn_free(c, kdbus_conn_offset(c, m)), ==, 0);
}

/* Nothing (but driver messages) is queued for @c right now. */
static _unused_ void kassert_empty(KdbusConn *c) {
        const struct kdbus_msg *m = NULL;

        if (krecv_wait(c, 0, true, &m) == 0)
                g_error("unexpected message: src %llu cookie %llu type %llu",
                        (unsigned long long)m->src_id, (unsigned long long)m->cookie,
                        (unsigned long long)m->payload_type);
}

/* MATCH_ADD of one notification item (KDBUS_ITEM_ID_ADD ... NAME_CHANGE). */
static _unused_ int kmatch_notify(KdbusConn *c, uint64_t cookie, uint64_t type, uint64_t old_id,
                         uint64_t new_id, const char *name) {
        uint8_t buf[512] __attribute__((aligned(8))) = { 0 };
        struct kdbus_cmd_match *cmd = (void *)buf;
        struct kdbus_item *item = cmd->items;

        cmd->cookie = cookie;
        item->type = type;
        if (type == KDBUS_ITEM_ID_ADD || type == KDBUS_ITEM_ID_REMOVE) {
                item->size = KDBUS_ITEM_HEADER_SIZE + sizeof(struct kdbus_notify_id_change);
                item->id_change.id = new_id;
        } else {
                item->size = KDBUS_ITEM_HEADER_SIZE + sizeof(struct kdbus_notify_name_change);
                item->name_change.old_id.id = old_id;
                item->name_change.new_id.id = new_id;
                if (name) {
                        strcpy(item->name_change.name, name);
                        item->size += strlen(name) + 1;
                }
        }
        cmd->size = sizeof(*cmd) + KDBUS_ALIGN8(item->size);
        return kdbus_conn_command(c, KDBUS_CMD_MATCH_ADD, cmd, sizeof(buf), NULL, 0);
}

/* MATCH_ADD: broadcasts from the owner of well-known name @name (a NAME item). */
static _unused_ int kmatch_sender_name(KdbusConn *c, uint64_t cookie, const char *name) {
        uint8_t buf[512] __attribute__((aligned(8))) = { 0 };
        struct kdbus_cmd_match *cmd = (void *)buf;

        cmd->cookie = cookie;
        cmd->items[0].size = KDBUS_ITEM_HEADER_SIZE + strlen(name) + 1;
        cmd->items[0].type = KDBUS_ITEM_NAME;
        strcpy(cmd->items[0].str, name);
        cmd->size = sizeof(*cmd) + KDBUS_ALIGN8(cmd->items[0].size);
        return kdbus_conn_command(c, KDBUS_CMD_MATCH_ADD, cmd, sizeof(buf), NULL, 0);
}

/* RECV one kernel notification whose only item is of @type. Return: the item. */
static _unused_ const struct kdbus_item *krecv_notify(KdbusConn *c, uint64_t type) {
        const struct kdbus_msg *m = NULL;

        g_assert_cmpint(krecv_wait(c, 5000, true, &m), ==, 0);
        g_assert_cmpuint(m->src_id, ==, KDBUS_SRC_ID_KERNEL);
        g_assert_cmpuint(m->payload_type, ==, KDBUS_PAYLOAD_KERNEL);
        g_assert_cmpuint(m->items[0].type, ==, type);
        return m->items;
}

static _unused_ void kfree_item_msg(KdbusConn *c, const struct kdbus_item *item) {
        g_assert_cmpint(kdbus_conn_free(c, kdbus_conn_offset(c, item) -
                                        offsetof(struct kdbus_msg, items)), ==, 0);
}

/* A raw KDBUS_WIRE_BATCH datagram into @buf (8-aligned, room for it): FREE @offsets (@n of
 * them), then @command with batch @flags, its struct a kdbus_cmd_recv with @recv_flags.
 * Return: its size. */
static _unused_ size_t kbatch_build(uint8_t *buf, uint64_t flags, uint64_t command,
                                    uint64_t recv_flags, const uint64_t *offsets, unsigned n) {
        struct kdbus_wire_request outer = { .command = KDBUS_WIRE_BATCH };
        struct kdbus_wire_batch b = { .n_free = n, .flags = flags };
        struct kdbus_wire_request inner = { .command = command,
                                            .size = sizeof(struct kdbus_cmd_recv) };
        struct kdbus_cmd_recv cmd = { .size = sizeof(cmd), .flags = recv_flags };
        size_t pos = sizeof(outer);

        memcpy(buf + pos, &b, sizeof(b));
        pos += sizeof(b);
        if (n)
                memcpy(buf + pos, offsets, n * sizeof(uint64_t));
        pos += n * sizeof(uint64_t);
        memcpy(buf + pos, &inner, sizeof(inner));
        pos += sizeof(inner);
        memcpy(buf + pos, &cmd, sizeof(cmd));
        pos += sizeof(cmd);
        outer.size = pos - sizeof(outer);
        memcpy(buf, &outer, sizeof(outer));
        return pos;
}
