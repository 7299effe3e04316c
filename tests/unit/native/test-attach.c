/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The bus options of native metadata on the core (native/meta.c, bridge/ns.c):
 * kdbus's final attach rule (Bus.attach_rule BUS_ATTACH_KDBUS: basic credentials always,
 * /proc items where the receiver could read them: same process, same uid, ptrace-capable,
 * no hidepid but EXE) against the default opt-in rule; the bus's required attach flags
 * (HELLO ECONNREFUSED, UPDATE EINVAL); per-message capture (KDBUS_HELLO_CAPTURE_PER_MESSAGE
 * with the transport's per-datagram creds and pidfd); ids shown through the receiver's
 * user and pid namespaces. Senders are child processes of the test (real pids and pidfds,
 * their own comm).
 */
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include "bridge/ns.h"
#include "native-fixture.h"
#include "native/conn.h"
#include "native/meta.h"
#include "proxy/proc-reader.h"

#define PROC_ITEMS (KDBUS_ATTACH_PID_COMM | KDBUS_ATTACH_EXE | KDBUS_ATTACH_CMDLINE |           \
                    KDBUS_ATTACH_CGROUP | KDBUS_ATTACH_CAPS | KDBUS_ATTACH_TID_COMM)

typedef struct AFixture {
        Fixture f;
        TestPeer a, b;
        pid_t child[2];
} AFixture;

/* A child that sleeps until killed, with @comm as its name. */
static pid_t sleeper(const char *comm) {
        int p[2];
        char x;
        pid_t pid;

        g_assert_cmpint(pipe(p), ==, 0);
        pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0) {
                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                (void) prctl(PR_SET_NAME, comm);
                if (write(p[1], "r", 1) != 1)
                        _exit(1);
                for (;;)
                        pause();
        }
        (void) close(p[1]);
        g_assert_cmpint(read(p[0], &x, 1), ==, 1);      /* its comm is set */
        (void) close(p[0]);
        return pid;
}

static void asetup(AFixture *t, gconstpointer ctx) {
        fixture_setup(&t->f, ctx);
        t->child[0] = sleeper("meta-sender");
        t->child[1] = sleeper("meta-other");
}

static void ateardown(AFixture *t, gconstpointer ctx) {
        unsigned i;

        if (t->a.nc)
                peer_free(&t->a);
        if (t->b.nc)
                peer_free(&t->b);
        for (i = 0; i < 2; ++i) {
                (void) kill(t->child[i], SIGKILL);
                (void) waitpid(t->child[i], NULL, 0);
        }
        fixture_teardown(&t->f, ctx);
}

/* HELLO as process @pid (with a pidfd of it, or none if @pid <= 0) with uid @uid. */
static int hello_as(AFixture *t, TestPeer *p, pid_t pid, uid_t uid, uint64_t flags,
                    uint64_t send, uint64_t recv) {
        struct kdbus_cmd_hello hello = { .size = sizeof(hello), .flags = flags,
                                         .pool_size = TEST_POOL_SIZE,
                                         .attach_flags_send = send, .attach_flags_recv = recv };
        BridgeCreds creds = { .uid = uid, .gid = uid, .pid = pid > 0 ? pid : 0, .pidfd = -1 };
        int r;

        if (pid > 0) {
                creds.pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
                g_assert_cmpint(creds.pidfd, >=, 0);
        }
        creds.groups = g_new(gid_t, 1);
        creds.groups[0] = uid;
        creds.n_groups = 1;
        memset(p, 0, sizeof(*p));
        p->sync_error = 1;
        r = test_native_hello(t->f.bus, &creds, &hello, sizeof(hello), &test_peer_ops, p, &p->nc);
        if (r) {
                if (creds.pidfd >= 0)
                        (void) close(creds.pidfd);
                g_free(creds.groups);
                return r;
        }
        p->id = hello.id;
        p->pool = mmap(NULL, TEST_POOL_SIZE, PROT_READ, MAP_SHARED, native_conn_pool_fd(p->nc), 0);
        g_assert_true(p->pool != MAP_FAILED);
        return 0;
}

static const struct kdbus_item *msg_item(const struct kdbus_msg *km, uint64_t type) {
        const struct kdbus_item *item;

        for (item = km->items; (const uint8_t *)item < (const uint8_t *)km + km->size;
             item = KDBUS_ITEM_NEXT(item))
                if (item->type == type)
                        return item;
        return NULL;
}

/* a sends b a call without reply (a signal would need a match entry at b); b gets it. */
static const struct kdbus_msg *a_to_b(AFixture *t) {
        g_autofree char *dest = g_strdup_printf(":1.%llu", (unsigned long long)t->b.id);
        TestMsg m = { .type = WIRE_MSG_METHOD_CALL, .serial = 9, .destination = dest,
                      .interface = "t.I", .member = "S", .flags = WIRE_FLAG_NO_REPLY_EXPECTED };
        const struct kdbus_msg *km;

        g_assert_cmpint(peer_send(&t->a, &m, &(TestSend){ .dst_id = t->b.id, .msg_flags = ~0ull,
                        .memfd_idx = -1 }), ==, 0);
        g_assert_cmpint(peer_recv(&t->b, 0, 0, &km, NULL), ==, 0);
        return km;
}

static uint64_t declined(const struct kdbus_msg *km) {
        const struct kdbus_item *item = msg_item(km, KDBUS_ITEM_ATTACH_FLAGS_SEND);

        return item ? item->data64[0] : 0;
}

/* The default rule: a sender consenting to nothing gives nothing, all of it declined. */
static void test_opt_in(AFixture *t, gconstpointer ctx) {
        const struct kdbus_msg *km;

        g_assert_cmpint(hello_as(t, &t->a, t->child[0], 2000, 0, 0, 0), ==, 0);
        g_assert_cmpint(hello_as(t, &t->b, getpid(), 2000, 0, 0,
                                 KDBUS_ATTACH_CREDS | KDBUS_ATTACH_PIDS | PROC_ITEMS), ==, 0);
        km = a_to_b(t);
        g_assert_cmpuint(declined(km), ==, KDBUS_ATTACH_CREDS | KDBUS_ATTACH_PIDS | PROC_ITEMS);
        g_assert_null(msg_item(km, KDBUS_ITEM_CREDS));
        g_assert_null(msg_item(km, KDBUS_ITEM_PID_COMM));
}

/* kdbus's rule: CREDS/PIDS always; /proc items to a receiver of the same uid. */
static void test_kdbus_same_uid(AFixture *t, gconstpointer ctx) {
        const struct kdbus_msg *km;

        t->f.bus->attach_rule = BUS_ATTACH_KDBUS;
        g_assert_cmpint(hello_as(t, &t->a, t->child[0], 2000, 0, 0, 0), ==, 0);
        g_assert_cmpint(hello_as(t, &t->b, -1, 2000, 0, 0,
                                 KDBUS_ATTACH_CREDS | KDBUS_ATTACH_PIDS | PROC_ITEMS), ==, 0);
        km = a_to_b(t);
        g_assert_cmpuint(declined(km), ==, 0);
        g_assert_cmpuint(msg_item(km, KDBUS_ITEM_CREDS)->creds.uid, ==, 2000);
        g_assert_cmpuint(msg_item(km, KDBUS_ITEM_PIDS)->pids.pid, ==, (uint64_t)t->child[0]);
        g_assert_cmpstr(msg_item(km, KDBUS_ITEM_PID_COMM)->str, ==, "meta-sender");
        g_assert_nonnull(msg_item(km, KDBUS_ITEM_EXE));
}

/* Another uid: no /proc items unless /proc is public (then all but EXE) or the receiver
 * may ptrace (uid 0 without known caps, or CAP_SYS_PTRACE as captured). */
static void test_kdbus_other_uid(AFixture *t, gconstpointer ctx) {
        const struct kdbus_msg *km;
        uint64_t want = KDBUS_ATTACH_CREDS | KDBUS_ATTACH_PIDS | PROC_ITEMS;

        t->f.bus->attach_rule = BUS_ATTACH_KDBUS;
        t->f.bus->proc_public = false;
        g_assert_cmpint(hello_as(t, &t->a, t->child[0], 2000, 0, 0, 0), ==, 0);
        g_assert_cmpint(hello_as(t, &t->b, -1, 3000, 0, 0, want), ==, 0);
        km = a_to_b(t);
        g_assert_cmpuint(declined(km), ==, PROC_ITEMS);
        g_assert_nonnull(msg_item(km, KDBUS_ITEM_CREDS));
        g_assert_null(msg_item(km, KDBUS_ITEM_PID_COMM));
        /* the sender consents to PID_COMM: that is enough under any rule */
        t->a.nc->attach_flags_send = KDBUS_ATTACH_PID_COMM;
        km = a_to_b(t);
        g_assert_cmpuint(declined(km), ==, PROC_ITEMS & ~(uint64_t)KDBUS_ATTACH_PID_COMM);
        g_assert_cmpstr(msg_item(km, KDBUS_ITEM_PID_COMM)->str, ==, "meta-sender");
        t->a.nc->attach_flags_send = 0;
        t->f.bus->proc_public = true;
        km = a_to_b(t);
        g_assert_cmpuint(declined(km), ==, KDBUS_ATTACH_EXE);
        g_assert_nonnull(msg_item(km, KDBUS_ITEM_CMDLINE));
        peer_free(&t->b);
        /* root with unknown caps; then this process (root, CAP_SYS_PTRACE) by its caps */
        t->f.bus->proc_public = false;
        g_assert_cmpint(hello_as(t, &t->b, -1, 0, 0, 0, want), ==, 0);
        km = a_to_b(t);
        g_assert_cmpuint(declined(km), ==, 0);
        peer_free(&t->b);
        g_assert_cmpint(hello_as(t, &t->b, getpid(), 3000, 0, 0, want), ==, 0);
        g_assert_true(t->b.nc->meta && t->b.nc->meta->have_caps);
        km = a_to_b(t);
        g_assert_cmpuint(declined(km),
                         ==, (t->b.nc->meta->caps[2] >> 19) & 1 ? 0 : PROC_ITEMS);
}

/* The bus's required attach flags: HELLO ECONNREFUSED, UPDATE EINVAL; unknown bits EINVAL. */
static void test_required(AFixture *t, gconstpointer ctx) {
        uint8_t buf[512] __attribute__((aligned(8))) = { 0 };
        struct kdbus_cmd *up = (void *)buf;
        struct kdbus_item *ui = (void *)(buf + sizeof(*up));
        uint64_t req = KDBUS_ATTACH_CREDS | KDBUS_ATTACH_PIDS;

        t->f.bus->attach_flags_req = req;
        g_assert_cmpint(hello_as(t, &t->a, -1, 2000, 0, KDBUS_ATTACH_CREDS, 0), ==,
                        -ECONNREFUSED);
        g_assert_cmpint(hello_as(t, &t->a, -1, 2000, 0, 1ULL << 40, 0), ==, -EINVAL);
        g_assert_cmpint(hello_as(t, &t->a, -1, 2000, 0, req, 1ULL << 40), ==, -EINVAL);
        g_assert_cmpint(hello_as(t, &t->a, -1, 2000, 0, req, 0), ==, 0);
        g_assert_cmpint(hello_as(t, &t->b, -1, 2000, 0, _KDBUS_ATTACH_ANY, 0), ==, 0);
        g_assert_cmpuint(t->b.nc->attach_flags_send, ==, _KDBUS_ATTACH_ALL);
        up->size = sizeof(*up) + KDBUS_ITEM_SIZE(8);
        ui->size = KDBUS_ITEM_HEADER_SIZE + 8;
        ui->type = KDBUS_ITEM_ATTACH_FLAGS_SEND;
        ui->data64[0] = KDBUS_ATTACH_PIDS;
        g_assert_cmpint(peer_cmd(&t->a, KDBUS_CMD_UPDATE, up, up->size), ==, -EINVAL);
        g_assert_cmpuint(t->a.nc->attach_flags_send, ==, req);
        ui->data64[0] = req | KDBUS_ATTACH_EXE;
        g_assert_cmpint(peer_cmd(&t->a, KDBUS_CMD_UPDATE, up, up->size), ==, 0);
        g_assert_cmpuint(t->a.nc->attach_flags_send, ==, req | KDBUS_ATTACH_EXE);
}

/* Per-message capture: the datagram's creds and pidfd, not those of connect. */
static void test_per_message(AFixture *t, gconstpointer ctx) {
        uint64_t want = KDBUS_ATTACH_CREDS | KDBUS_ATTACH_PIDS | KDBUS_ATTACH_PID_COMM;
        const struct kdbus_msg *km;
        int pidfd_other = (int)syscall(SYS_pidfd_open, t->child[1], 0);
        int pidfd_gone, status;
        pid_t gone = fork();

        g_assert_cmpint(gone, >=, 0);
        if (gone == 0)
                _exit(0);
        pidfd_gone = (int)syscall(SYS_pidfd_open, gone, 0);
        g_assert_cmpint(pidfd_gone, >=, 0);
        g_assert_cmpint(waitpid(gone, &status, 0), ==, gone);

        g_assert_cmpint(pidfd_other, >=, 0);
        g_assert_cmpint(hello_as(t, &t->a, t->child[0], 2000, KDBUS_HELLO_CAPTURE_PER_MESSAGE,
                                 _KDBUS_ATTACH_ALL, 0), ==, 0);
        g_assert_cmpint(hello_as(t, &t->b, -1, 2000, 0, 0, want), ==, 0);
        /* what the socket says about this datagram: another uid, another process */
        native_conn_set_send_creds(t->a.nc, true, 4242, 4343, (uint32_t)t->child[1], pidfd_other, NULL);
        km = a_to_b(t);
        g_assert_cmpuint(msg_item(km, KDBUS_ITEM_CREDS)->creds.uid, ==, 4242);
        g_assert_cmpuint(msg_item(km, KDBUS_ITEM_CREDS)->creds.egid, ==, 4343);
        g_assert_cmpuint(msg_item(km, KDBUS_ITEM_PIDS)->pids.pid, ==, (uint64_t)t->child[1]);
        g_assert_cmpstr(msg_item(km, KDBUS_ITEM_PID_COMM)->str, ==, "meta-other");
        /* the pidfd's process went before the read ended: no /proc items (missing, not
         * declined), the pid may name another process */
        native_conn_set_send_creds(t->a.nc, true, 4242, 4343, (uint32_t)t->child[1], pidfd_gone, NULL);
        km = a_to_b(t);
        g_assert_null(msg_item(km, KDBUS_ITEM_PID_COMM));
        g_assert_cmpuint(declined(km), ==, 0);
        /* no creds with the datagram: the connection's, and no /proc items */
        native_conn_set_send_creds(t->a.nc, false, 0, 0, 0, -1, NULL);
        km = a_to_b(t);
        g_assert_cmpuint(msg_item(km, KDBUS_ITEM_CREDS)->creds.uid, ==, 2000);
        g_assert_null(msg_item(km, KDBUS_ITEM_PID_COMM));
        /* without the HELLO flag the datagram's creds are not used */
        peer_free(&t->a);
        g_assert_cmpint(hello_as(t, &t->a, t->child[0], 2000, 0, _KDBUS_ATTACH_ALL, 0), ==, 0);
        native_conn_set_send_creds(t->a.nc, true, 4242, 4343, (uint32_t)t->child[1], pidfd_other, NULL);
        km = a_to_b(t);
        g_assert_cmpuint(msg_item(km, KDBUS_ITEM_CREDS)->creds.uid, ==, 2000);
        g_assert_cmpstr(msg_item(km, KDBUS_ITEM_PID_COMM)->str, ==, "meta-sender");
        (void) close(pidfd_other);
        (void) close(pidfd_gone);
}

/* Ids through the receiver's namespaces (as the bus's /proc reader would have read them). */
static void test_namespaces(AFixture *t, gconstpointer ctx) {
        static const BridgeNsMap map[] = { { 0, 1000, 1 }, { 5000, 0, 1 } };
        uint64_t want = KDBUS_ATTACH_CREDS | KDBUS_ATTACH_PIDS | KDBUS_ATTACH_AUXGROUPS |
                        KDBUS_ATTACH_PID_COMM;
        const struct kdbus_msg *km;
        BridgeNs *rns, *sns;

        t->f.bus->attach_rule = BUS_ATTACH_KDBUS;
        g_assert_cmpint(hello_as(t, &t->a, t->child[0], 1000, 0, 0, 0), ==, 0);
        g_assert_cmpint(hello_as(t, &t->b, -1, 1000, 0, 0, want), ==, 0);
        /* the receiver in a user namespace mapping bus uid 1000 to 0 and 0 to 5000, and in
         * a child pid namespace (inode 77) of the bus's (inode 1) */
        rns = g_new0(BridgeNs, 1);
        rns->own_userns = true;
        rns->uid_map = g_memdup2(map, sizeof(map));
        rns->gid_map = g_memdup2(map, sizeof(map));
        rns->n_uid_map = rns->n_gid_map = 2;
        rns->overflow_uid = rns->overflow_gid = 65534;
        rns->n_pidns = 2;
        rns->pidns_ino = g_new(uint64_t, 2);
        rns->pidns_pid = g_new(uint32_t, 2);
        rns->pidns_ino[0] = 77;
        rns->pidns_ino[1] = 1;
        rns->pidns_pid[0] = 1;
        rns->pidns_pid[1] = 999;
        t->b.nc->ns = rns;
        /* a sender the receiver's pid namespace cannot see: pid 0, no /proc items */
        km = a_to_b(t);
        g_assert_cmpuint(msg_item(km, KDBUS_ITEM_CREDS)->creds.uid, ==, 0);
        g_assert_cmpuint(msg_item(km, KDBUS_ITEM_CREDS)->creds.fsgid, ==, 0);
        g_assert_cmpuint(msg_item(km, KDBUS_ITEM_AUXGROUPS)->data64[0], ==, 0);
        g_assert_cmpuint(msg_item(km, KDBUS_ITEM_PIDS)->pids.pid, ==, 0);
        g_assert_cmpuint(declined(km), ==, KDBUS_ATTACH_PID_COMM);
        /* the sender inside that pid namespace as pid 2 */
        sns = g_new0(BridgeNs, 1);
        sns->n_pidns = 2;
        sns->pidns_ino = g_new(uint64_t, 2);
        sns->pidns_pid = g_new(uint32_t, 2);
        sns->pidns_ino[0] = 77;
        sns->pidns_ino[1] = 1;
        sns->pidns_pid[0] = 2;
        sns->pidns_pid[1] = (uint32_t)t->child[0];
        t->a.nc->ns = sns;
        km = a_to_b(t);
        g_assert_cmpuint(msg_item(km, KDBUS_ITEM_PIDS)->pids.pid, ==, 2);
        g_assert_cmpuint(declined(km), ==, 0);          /* same uid, visible: /proc items */
        g_assert_cmpstr(msg_item(km, KDBUS_ITEM_PID_COMM)->str, ==, "meta-sender");
        /* bus uid 0 shows as 5000, an unmapped one as the overflow uid */
        t->a.nc->conn->creds.uid = 0;
        km = a_to_b(t);
        g_assert_cmpuint(msg_item(km, KDBUS_ITEM_CREDS)->creds.euid, ==, 5000);
        t->a.nc->conn->creds.uid = 2000;
        km = a_to_b(t);
        g_assert_cmpuint(msg_item(km, KDBUS_ITEM_CREDS)->creds.suid, ==, 65534);
        /* the bus's own view (no receiver) is untouched */
        g_assert_cmpuint(bridge_ns_uid(NULL, 2000), ==, 2000);
        g_assert_cmpuint(bridge_ns_pid(NULL, t->a.nc->ns, 1234), ==, 1234);
}

/*
 * CAPS through user namespaces (bridge_ns_caps(), kdbus_meta_export_caps()): a receiver
 * whose chain is 30 (its own, owner uid 0) -> 20 (owner 1000) -> the bus's.
 */
static void test_caps_namespaces(AFixture *t, gconstpointer ctx) {
        const uint64_t caps[4] = { 0x1, 0x3, 0x2, 0xff }, none[4] = { 0 };
        uint64_t bus = proxy_proc_reader.bus_userns(), out[4];
        BridgeNs *rns;

        g_assert_cmpuint(bus, !=, 0);
        g_assert_cmpint(hello_as(t, &t->b, -1, 1000, 0, 0, 0), ==, 0);
        /* the receiver in the bus's namespace: verbatim from there, nothing from below */
        bridge_ns_caps(&proxy_proc_reader, t->b.nc->ns, 0, true, 0, caps, out);
        g_assert_cmpmem(out, sizeof(out), caps, sizeof(caps));
        bridge_ns_caps(&proxy_proc_reader, t->b.nc->ns, 20, true, 0, caps, out);
        g_assert_cmpmem(out, sizeof(out), none, sizeof(none));
        rns = g_new0(BridgeNs, 1);
        rns->own_userns = true;
        rns->n_userns = 3;
        rns->userns_ino = g_new(uint64_t, 3);
        rns->userns_owner = g_new(uint32_t, 3);
        rns->userns_ino[0] = 30;
        rns->userns_owner[0] = 0;
        rns->userns_ino[1] = 20;
        rns->userns_owner[1] = 1000;
        rns->userns_ino[2] = bus;
        rns->userns_owner[2] = 0;
        t->b.nc->ns = rns;
        /* a sender in namespace 20: 30 is below it and not made by its euid: verbatim */
        bridge_ns_caps(&proxy_proc_reader, t->b.nc->ns, 20, true, 5, caps, out);
        g_assert_cmpmem(out, sizeof(out), caps, sizeof(caps));
        /* ... made by its euid 0: everything but the inheritable set */
        bridge_ns_caps(&proxy_proc_reader, t->b.nc->ns, 20, true, 0, caps, out);
        g_assert_cmpuint(out[0], ==, 0);
        g_assert_cmpuint(out[1], ==, out[2]);
        g_assert_cmpuint(out[2], ==, out[3]);
        g_assert_cmpuint(out[2] & 0x3f, ==, 0x3f);
        /* a sender of the bus's namespace with euid 1000, owner of 20: everything */
        bridge_ns_caps(&proxy_proc_reader, t->b.nc->ns, 0, true, 1000, caps, out);
        g_assert_cmpuint(out[2] & 0x3f, ==, 0x3f);
        /* ... with another euid: verbatim (its namespace is an ancestor) */
        bridge_ns_caps(&proxy_proc_reader, t->b.nc->ns, 0, true, 7, caps, out);
        g_assert_cmpmem(out, sizeof(out), caps, sizeof(caps));
        /* a sender in a namespace beside the receiver's chain: nothing */
        bridge_ns_caps(&proxy_proc_reader, t->b.nc->ns, 99, true, 0, caps, out);
        g_assert_cmpmem(out, sizeof(out), none, sizeof(none));
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
#define ADD(path, fn) g_test_add("/native/attach/" path, AFixture, NULL, asetup, fn, ateardown)
        ADD("opt-in", test_opt_in);
        ADD("kdbus-rule-same-uid", test_kdbus_same_uid);
        ADD("kdbus-rule-other-uid", test_kdbus_other_uid);
        ADD("required-flags", test_required);
        ADD("per-message-capture", test_per_message);
        ADD("namespaces", test_namespaces);
        ADD("caps-namespaces", test_caps_namespaces);
        return g_test_run();
}
