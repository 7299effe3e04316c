/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The metadata items of native/meta.c with real credentials (this process: its pid,
 * a pidfd of it, /proc/self as the reference): everything kdbus attaches, under the
 * consent rule, "declined" said in an ATTACH_FLAGS_SEND item, nothing from /proc when the
 * pidfd's process is gone, and HELLO's CONN_DESCRIPTION checked.
 */
#include <sys/syscall.h>
#include <sys/wait.h>
#include "conn-fixture.h"
#include "native/conn.h"

/* HELLO with real credentials of @pid (a pidfd of it) and an optional description. */
static int hello_real(Fixture *f, TestPeer *p, pid_t pid, uint64_t send, uint64_t recv,
                      const char *description, size_t desc_len) {
        uint8_t buf[512] __attribute__((aligned(8))) = { 0 };
        struct kdbus_cmd_hello *hello = (void *)buf;
        BridgeCreds creds = { .uid = getuid(), .gid = getgid(), .pid = pid };
        int r;

        hello->size = sizeof(*hello);
        hello->pool_size = TEST_POOL_SIZE;
        hello->attach_flags_send = send;
        hello->attach_flags_recv = recv;
        if (description) {
                hello->items[0].type = KDBUS_ITEM_CONN_DESCRIPTION;
                hello->items[0].size = KDBUS_ITEM_HEADER_SIZE + desc_len;
                memcpy(hello->items[0].str, description, desc_len);
                hello->size += KDBUS_ALIGN8(hello->items[0].size);
        }
        creds.pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
        g_assert_cmpint(creds.pidfd, >=, 0);
        creds.groups = g_new(gid_t, 2);
        creds.groups[0] = 5;
        creds.groups[1] = 6;
        creds.n_groups = 2;
        creds.seclabel = strdup("unconfined");
        memset(p, 0, sizeof(*p));
        p->sync_error = 1;
        r = test_native_hello(f->bus, &creds, hello, hello->size, &test_peer_ops, p, &p->nc);
        if (r) {
                (void) close(creds.pidfd);
                g_free(creds.groups);
                free(creds.seclabel);
                return r;
        }
        p->id = hello->id;
        p->pool = mmap(NULL, TEST_POOL_SIZE, PROT_READ, MAP_SHARED, native_conn_pool_fd(p->nc), 0);
        g_assert_true(p->pool != MAP_FAILED);
        return 0;
}

static const struct kdbus_item *find_item(const struct kdbus_item *items, const uint8_t *end,
                                          uint64_t type) {
        const struct kdbus_item *item;

        for (item = items; (const uint8_t *)item < end; item = KDBUS_ITEM_NEXT(item))
                if (item->type == type)
                        return item;
        return NULL;
}

#define MSG_ITEM(km, type) find_item((km)->items, (const uint8_t *)(km) + (km)->size, (type))

/* a sends a call to b; b receives it. */
static const struct kdbus_msg *a_to_b(NFixture *n, uint32_t serial) {
        TestMsg t = { .type = WIRE_MSG_METHOD_CALL, .serial = serial, .destination = ":1.2",
                      .member = "M", .flags = WIRE_FLAG_NO_REPLY_EXPECTED };
        const struct kdbus_msg *km;

        t.destination = n->b.id == 2 ? ":1.2" : ":1.1";
        g_assert_cmpint(peer_send(&n->a, &t, &(TestSend){ .dst_id = n->b.id, .msg_flags = ~0ull,
                                                          .memfd_idx = -1 }), ==, 0);
        g_assert_cmpint(peer_recv(&n->b, 0, 0, &km, NULL), ==, 0);
        return km;
}

static void test_all_items(NFixture *n, gconstpointer ctx) {
        g_autofree char *comm = NULL, *cmdline = NULL, *status = NULL, *exe = NULL;
        const struct kdbus_item *item;
        const struct kdbus_msg *km;
        gsize cmdline_len;
        uint64_t eff;
        const char *p;

        g_assert_cmpint(hello_real(&n->f, &n->a, getpid(), _KDBUS_ATTACH_ALL, 0, "svc-a", 6), ==, 0);
        g_assert_cmpint(hello_real(&n->f, &n->b, getpid(), 0, _KDBUS_ATTACH_ALL, NULL, 0), ==, 0);
        g_assert_cmpint(peer_name(&n->a, KDBUS_CMD_NAME_ACQUIRE, "t.Meta", 0, NULL), ==, 0);
        km = a_to_b(n, 3);

        g_assert_null(MSG_ITEM(km, KDBUS_ITEM_ATTACH_FLAGS_SEND));      /* nothing declined */
        g_assert_nonnull(MSG_ITEM(km, KDBUS_ITEM_CREDS));
        item = MSG_ITEM(km, KDBUS_ITEM_PIDS);
        g_assert_cmpuint(item->pids.pid, ==, (uint64_t)getpid());
        item = MSG_ITEM(km, KDBUS_ITEM_AUXGROUPS);
        g_assert_cmpuint(item->size, ==, KDBUS_ITEM_HEADER_SIZE + 16);
        g_assert_cmpuint(item->data64[0], ==, 5);
        g_assert_cmpuint(item->data64[1], ==, 6);
        item = MSG_ITEM(km, KDBUS_ITEM_OWNED_NAME);
        g_assert_cmpstr(item->name.name, ==, "t.Meta");
        /* with the owner's name flags (kdbus_meta_conn_collect_names()) */
        g_assert_cmpuint(item->name.flags & KDBUS_NAME_PRIMARY, ==, KDBUS_NAME_PRIMARY);

        g_assert_true(g_file_get_contents("/proc/self/comm", &comm, NULL, NULL));
        comm[strcspn(comm, "\n")] = '\0';
        g_assert_cmpstr(MSG_ITEM(km, KDBUS_ITEM_PID_COMM)->str, ==, comm);
        g_assert_cmpstr(MSG_ITEM(km, KDBUS_ITEM_TID_COMM)->str, ==, comm);
        exe = g_file_read_link("/proc/self/exe", NULL);
        g_assert_cmpstr(MSG_ITEM(km, KDBUS_ITEM_EXE)->str, ==, exe);
        g_assert_true(g_file_get_contents("/proc/self/cmdline", &cmdline, &cmdline_len, NULL));
        item = MSG_ITEM(km, KDBUS_ITEM_CMDLINE);
        g_assert_cmpuint(item->size - KDBUS_ITEM_HEADER_SIZE, ==, cmdline_len);
        g_assert_cmpmem(item->str, cmdline_len, cmdline, cmdline_len);
        g_assert_cmpint(MSG_ITEM(km, KDBUS_ITEM_CGROUP)->str[0], ==, '/');

        g_assert_true(g_file_get_contents("/proc/self/status", &status, NULL, NULL));
        p = strstr(status, "CapEff:");
        g_assert_nonnull(p);
        eff = g_ascii_strtoull(p + 7, NULL, 16);
        item = MSG_ITEM(km, KDBUS_ITEM_CAPS);
        g_assert_cmpuint(item->caps.last_cap, ==, 63);
        g_assert_cmpuint(item->caps.caps[4], ==, (uint32_t)eff);        /* effective, low */
        g_assert_cmpuint(item->caps.caps[5], ==, (uint32_t)(eff >> 32));
        g_assert_cmpstr(MSG_ITEM(km, KDBUS_ITEM_SECLABEL)->str, ==, "unconfined");
        if (g_file_test("/proc/self/loginuid", G_FILE_TEST_EXISTS))
                g_assert_nonnull(MSG_ITEM(km, KDBUS_ITEM_AUDIT));
        g_assert_cmpstr(MSG_ITEM(km, KDBUS_ITEM_CONN_DESCRIPTION)->str, ==, "svc-a");
}

static void test_declined(NFixture *n, gconstpointer ctx) {
        struct kdbus_cmd_info info = { .size = sizeof(info), .id = 1,
                                       .attach_flags = KDBUS_ATTACH_EXE | KDBUS_ATTACH_CMDLINE |
                                                       KDBUS_ATTACH_CONN_DESCRIPTION };
        const struct kdbus_info *ki;
        const struct kdbus_msg *km;
        const struct kdbus_item *item;

        g_assert_cmpint(hello_real(&n->f, &n->a, getpid(),
                                   KDBUS_ATTACH_EXE | KDBUS_ATTACH_CONN_DESCRIPTION, 0, "svc", 4),
                        ==, 0);
        g_assert_cmpint(hello_real(&n->f, &n->b, getpid(), 0, _KDBUS_ATTACH_ALL, NULL, 0), ==, 0);
        km = a_to_b(n, 3);
        g_assert_nonnull(MSG_ITEM(km, KDBUS_ITEM_EXE));
        g_assert_nonnull(MSG_ITEM(km, KDBUS_ITEM_CONN_DESCRIPTION));
        g_assert_null(MSG_ITEM(km, KDBUS_ITEM_CMDLINE));
        g_assert_null(MSG_ITEM(km, KDBUS_ITEM_CREDS));
        g_assert_null(MSG_ITEM(km, KDBUS_ITEM_PID_COMM));
        item = MSG_ITEM(km, KDBUS_ITEM_ATTACH_FLAGS_SEND);
        g_assert_nonnull(item);
        g_assert_cmpuint(item->data64[0], ==, _KDBUS_ATTACH_ALL & ~(uint64_t)(KDBUS_ATTACH_EXE |
                         KDBUS_ATTACH_CONN_DESCRIPTION | KDBUS_ATTACH_TIMESTAMP));
        /* CONN_INFO: the same rule */
        g_assert_cmpint(peer_cmd(&n->b, KDBUS_CMD_CONN_INFO, &info, sizeof(info)), ==, 0);
        ki = (const void *)(n->b.pool + info.offset);
        item = find_item(ki->items, (const uint8_t *)ki + ki->size, KDBUS_ITEM_ATTACH_FLAGS_SEND);
        g_assert_cmpuint(item->data64[0], ==, KDBUS_ATTACH_CMDLINE);
        g_assert_nonnull(find_item(ki->items, (const uint8_t *)ki + ki->size, KDBUS_ITEM_EXE));
        g_assert_cmpstr(find_item(ki->items, (const uint8_t *)ki + ki->size,
                                  KDBUS_ITEM_CONN_DESCRIPTION)->str, ==, "svc");
        g_assert_cmpuint(info.info_size, ==, ki->size);
}

/* The pid of a process that is gone by HELLO: nothing from /proc (the pid may be anyone's) */
static void test_process_gone(NFixture *n, gconstpointer ctx) {
        const struct kdbus_msg *km;
        uint8_t buf[256] __attribute__((aligned(8))) = { 0 };
        struct kdbus_cmd_hello *hello = (void *)buf;
        BridgeCreds creds = { .uid = getuid(), .gid = getgid() };
        int status;
        pid_t pid;

        pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0)
                _exit(0);
        creds.pid = pid;
        creds.pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
        g_assert_cmpint(creds.pidfd, >=, 0);
        g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
        hello->size = sizeof(*hello);
        hello->pool_size = TEST_POOL_SIZE;
        hello->attach_flags_send = _KDBUS_ATTACH_ALL;
        memset(&n->a, 0, sizeof(n->a));
        g_assert_cmpint(test_native_hello(n->f.bus, &creds, hello, hello->size, &test_peer_ops,
                                          &n->a, &n->a.nc), ==, 0);
        n->a.id = hello->id;
        n->a.pool = mmap(NULL, TEST_POOL_SIZE, PROT_READ, MAP_SHARED,
                         native_conn_pool_fd(n->a.nc), 0);
        g_assert_null(n->a.nc->meta);
        g_assert_cmpint(hello_real(&n->f, &n->b, getpid(), 0, _KDBUS_ATTACH_ALL, NULL, 0), ==, 0);
        km = a_to_b(n, 4);
        g_assert_nonnull(MSG_ITEM(km, KDBUS_ITEM_CREDS));       /* captured at connect */
        g_assert_null(MSG_ITEM(km, KDBUS_ITEM_EXE));
        g_assert_null(MSG_ITEM(km, KDBUS_ITEM_CMDLINE));
        g_assert_null(MSG_ITEM(km, KDBUS_ITEM_PID_COMM));
        g_assert_null(MSG_ITEM(km, KDBUS_ITEM_ATTACH_FLAGS_SEND));      /* consented, not known */
}

static void test_bad_description(NFixture *n, gconstpointer ctx) {
        /* no NUL, an empty one, a NUL inside */
        g_assert_cmpint(hello_real(&n->f, &n->a, getpid(), 0, 0, "abc", 3), ==, -EINVAL);
        g_assert_cmpint(hello_real(&n->f, &n->a, getpid(), 0, 0, "", 1), ==, -EINVAL);
        g_assert_cmpint(hello_real(&n->f, &n->a, getpid(), 0, 0, "a\0b", 4), ==, -EINVAL);
        g_assert_null(n->a.nc);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
#define ADD(path, fn) g_test_add("/native/" path, NFixture, NULL, nsetup, fn, nteardown)
        ADD("meta/all-items", test_all_items);
        ADD("meta/declined", test_declined);
        ADD("meta/process-gone", test_process_gone);
        ADD("meta/bad-description", test_bad_description);
        return g_test_run();
}
