/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Metadata through a real kdbusd (KDBUSD from meson), with real processes:
 *
 * - credentials captured at connect stay the default: a helper that connects as root and
 *   then drops to nobody is still seen as root (privilege separation keeps working), and
 *   with KDBUS_HELLO_CAPTURE_PER_MESSAGE as nobody, with its new comm (SCM_CREDENTIALS,
 *   SCM_PIDFD per datagram);
 * - --native-attach-required (HELLO ECONNREFUSED) and bad option values;
 * - --native-attach-rule=kdbus between two unprivileged users of different uids;
 * - ids through namespaces: a receiver in its own user namespace (uid_map written by the
 *   test) sees senders' uids as that namespace maps them; a receiver in its own pid
 *   namespace sees a sender in it by its pid there and one outside as pid 0;
 * - SECLABEL as SO_PEERSEC gives it (none without a labelling LSM);
 * - CAPS through user namespaces (kdbus's rule: verbatim, all, or none), a receiver's
 *   namespaces bound at HELLO, a sender's followed with per-message capture;
 * - AUXGROUPS per message (setgroups() between two sends), and per-message capture reading
 *   only what some receiver asks for (kdbusd's rchar).
 *
 * The cases that change uids or namespaces need root and skip without it, or when the
 * machine forbids the namespace.
 */
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "libkdbus/libkdbus.h"
#include "wire/message.h"
#include "wire/protocol.h"
#include "wire/writer.h"
#include <glib.h>

#define POOL (256u * 1024u)

typedef struct MBus {
        char *dir;
        char *native;
        GPid pid;
} MBus;

static void child_setup(gpointer data) {
        (void) prctl(PR_SET_PDEATHSIG, SIGTERM);
}

/* A session bus that every uid may connect to (the tests use several). */
static const char bus_conf[] =
        "<busconfig><type>session</type><listen>unix:path=%s/legacy</listen>"
        "<auth>EXTERNAL</auth><policy context=\"default\"><allow user=\"*\"/>"
        "<allow send_destination=\"*\" eavesdrop=\"true\"/><allow eavesdrop=\"true\"/>"
        "<allow own=\"*\"/></policy></busconfig>";

/* kdbusd with bus_conf and @extra options; the directory is 0755 so other uids reach it. */
static void mbus_start(MBus *b, const char *extra) {
        const char *exe = g_getenv("KDBUSD");
        g_autofree char *native_arg = NULL, *conf = NULL, *conf_arg = NULL, *text = NULL;
        const char *argv[6];
        unsigned n = 0, i;

        g_assert_nonnull(exe);
        b->dir = g_dir_make_tmp("kdbus-meta-XXXXXX", NULL);
        g_assert_nonnull(b->dir);
        g_assert_cmpint(chmod(b->dir, 0755), ==, 0);
        b->native = g_build_filename(b->dir, "native", NULL);
        native_arg = g_strdup_printf("--native=unix:path=%s", b->native);
        conf = g_build_filename(b->dir, "bus.conf", NULL);
        text = g_strdup_printf(bus_conf, b->dir);
        g_assert_true(g_file_set_contents(conf, text, -1, NULL));
        conf_arg = g_strdup_printf("--config-file=%s", conf);
        argv[n++] = exe;
        argv[n++] = conf_arg;
        argv[n++] = "--nofork";
        argv[n++] = native_arg;
        if (extra)
                argv[n++] = extra;
        argv[n] = NULL;
        g_assert_true(g_spawn_async(NULL, (char **)argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD,
                                    child_setup, NULL, &b->pid, NULL));
        for (i = 0; i < 500; ++i) {
                KdbusConn *probe = NULL;

                if (kdbus_conn_open(b->native, &probe) == 0) {
                        kdbus_conn_close(probe);
                        break;
                }
                g_usleep(10000);
        }
        g_assert_cmpuint(i, <, 500);
}

static void mbus_stop(MBus *b) {
        int status;

        (void) kill(b->pid, SIGTERM);
        g_assert_cmpint(waitpid(b->pid, &status, 0), ==, b->pid);
        g_spawn_close_pid(b->pid);
        g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        (void) unlink(b->native);
        {
                g_autofree char *legacy = g_build_filename(b->dir, "legacy", NULL);
                g_autofree char *conf = g_build_filename(b->dir, "bus.conf", NULL);

                (void) unlink(legacy);
                (void) unlink(conf);
        }
        g_assert_cmpint(rmdir(b->dir), ==, 0);
        g_free(b->dir);
        g_free(b->native);
}

/* Connect and HELLO; no assertions (children use it). Return: 0 or -errno. */
static int connect_hello(const char *path, uint64_t flags, KdbusConn **ret) {
        KdbusConn *c = NULL;
        int r;

        r = kdbus_conn_open(path, &c);
        if (r)
                return r;
        r = kdbus_conn_hello(c, flags, POOL);
        if (r) {
                kdbus_conn_close(c);
                return r;
        }
        *ret = c;
        return 0;
}

/* UPDATE one attach-flags item (ATTACH_FLAGS_SEND or _RECV). */
static int update_attach(KdbusConn *c, uint64_t type, uint64_t flags) {
        uint8_t buf[512] __attribute__((aligned(8))) = { 0 };
        struct kdbus_cmd *cmd = (void *)buf;
        struct kdbus_item *item = (void *)(buf + sizeof(*cmd));

        cmd->size = sizeof(*cmd) + KDBUS_ITEM_SIZE(8);
        item->size = KDBUS_ITEM_HEADER_SIZE + 8;
        item->type = type;
        item->data64[0] = flags;
        return kdbus_conn_command(c, KDBUS_CMD_UPDATE, cmd, cmd->size, NULL, 0);
}

/* A message from @c to connection @dst: a call without reply (a signal would need a match
 * entry at @dst, kdbus_conn_unicast()). Return: 0 or -errno. */
static int signal_to(KdbusConn *c, uint64_t dst, uint32_t serial) {
        char dest[32];
        WireMsgSpec spec = { .type = WIRE_MSG_METHOD_CALL, .serial = serial, .path = "/t",
                             .interface = "t.Meta", .member = "Hi", .destination = dest,
                             .flags = WIRE_FLAG_NO_REPLY_EXPECTED };
        KdbusSend s = { .dst_id = dst, .memfd = -1 };
        WireWriter w;
        uint8_t *data = NULL;
        size_t size;
        int r;

        (void) snprintf(dest, sizeof(dest), ":1.%llu", (unsigned long long)dst);
        wire_writer_init(&w);
        r = wire_message_build(&spec, &w, &data, &size);
        wire_writer_deinit(&w);
        if (r)
                return -EINVAL;
        r = kdbus_send_from_dbus1(&s, data, size);
        if (r == 0)
                r = kdbus_conn_send(c, &s, data, size, NULL);
        free(data);
        return r;
}

/* The next message that is not the bus's (waiting up to 5 s). Return: 0 or -errno. */
static int recv_peer_msg(KdbusConn *c, const struct kdbus_msg **ret) {
        const struct kdbus_msg *m;
        int r;

        for (;;) {
                r = kdbus_conn_recv(c, 0, 0, &m, NULL);
                if (r == -EAGAIN) {
                        r = kdbus_conn_wait(c, 5000);
                        if (r)
                                return r;
                        continue;
                }
                if (r)
                        return r;
                if (m->src_id != KDBUS_SRC_ID_KERNEL && m->src_id != 0) {
                        *ret = m;
                        return 0;
                }
                (void) kdbus_conn_free(c, kdbus_conn_offset(c, m));
        }
}

static int drop_to(uid_t uid) {
        if (setgroups(0, NULL) < 0 || setresgid(uid, uid, uid) < 0 || setresuid(uid, uid, uid) < 0)
                return -errno;
        return 0;
}

static uint64_t item_u64(const struct kdbus_msg *m, uint64_t type) {
        const struct kdbus_item *item = kdbus_msg_find(m, type);

        if (!item)
                return UINT64_MAX;
        switch (type) {
        case KDBUS_ITEM_CREDS:
                return item->creds.uid;
        case KDBUS_ITEM_PIDS:
                return item->pids.pid;
        default:
                return item->data64[0];
        }
}

static char *read_line(FILE *f) {
        char buf[512];

        if (!fgets(buf, sizeof(buf), f))
                return g_strdup("");
        buf[strcspn(buf, "\n")] = '\0';
        return g_strdup(buf);
}

/*
 * A helper connects as root (comm "before"), consents to everything, drops to nobody
 * (comm "after") and sends to @r. Return what @r saw: uid, pid and comm in *ret_*.
 */
static void setuid_case(MBus *b, KdbusConn *r, uint64_t hello_flags, uint64_t *ret_uid,
                        uint64_t *ret_pid, char **ret_comm, pid_t *ret_helper) {
        const struct kdbus_msg *m;
        const struct kdbus_item *item;
        int status;
        pid_t pid;

        pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0) {
                KdbusConn *c = NULL;

                (void) prctl(PR_SET_NAME, "before");
                if (connect_hello(b->native, hello_flags, &c) ||
                    update_attach(c, KDBUS_ITEM_ATTACH_FLAGS_SEND, _KDBUS_ATTACH_ANY))
                        _exit(2);
                if (drop_to(65534))
                        _exit(3);
                (void) prctl(PR_SET_NAME, "after");
                _exit(signal_to(c, r->id, 7) ? 4 : 0);
        }
        g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
        g_assert_true(WIFEXITED(status));
        g_assert_cmpint(WEXITSTATUS(status), ==, 0);
        g_assert_cmpint(recv_peer_msg(r, &m), ==, 0);
        *ret_uid = item_u64(m, KDBUS_ITEM_CREDS);
        *ret_pid = item_u64(m, KDBUS_ITEM_PIDS);
        item = kdbus_msg_find(m, KDBUS_ITEM_PID_COMM);
        *ret_comm = g_strdup(item ? item->str : "(none)");
        *ret_helper = pid;
        g_assert_cmpint(kdbus_conn_free(r, kdbus_conn_offset(r, m)), ==, 0);
}

static void test_setuid_after_connect(void) {
        MBus b;
        KdbusConn *r = NULL;
        uint64_t uid, pid;
        g_autofree char *comm1 = NULL, *comm2 = NULL;
        pid_t helper;

        if (geteuid() != 0) {
                g_test_skip("needs root (the helper drops from root to nobody)");
                return;
        }
        mbus_start(&b, NULL);
        g_assert_cmpint(connect_hello(b.native, 0, &r), ==, 0);
        g_assert_cmpint(update_attach(r, KDBUS_ITEM_ATTACH_FLAGS_RECV, KDBUS_ATTACH_CREDS |
                                      KDBUS_ATTACH_PIDS | KDBUS_ATTACH_PID_COMM), ==, 0);
        /* default: as it was at connect */
        setuid_case(&b, r, 0, &uid, &pid, &comm1, &helper);
        g_test_message("connect-time capture: uid %llu, pid %llu, comm %s",
                       (unsigned long long)uid, (unsigned long long)pid, comm1);
        g_assert_cmpuint(uid, ==, 0);
        g_assert_cmpuint(pid, ==, (uint64_t)helper);
        g_assert_cmpstr(comm1, ==, "before");
        /* per-message capture: as it is when it sends */
        setuid_case(&b, r, KDBUS_HELLO_CAPTURE_PER_MESSAGE, &uid, &pid, &comm2, &helper);
        g_test_message("per-message capture: uid %llu, pid %llu, comm %s",
                       (unsigned long long)uid, (unsigned long long)pid, comm2);
        g_assert_cmpuint(uid, ==, 65534);
        g_assert_cmpuint(pid, ==, (uint64_t)helper);
        g_assert_cmpstr(comm2, ==, "after");
        kdbus_conn_close(r);
        mbus_stop(&b);
}

/* kdbusd with @arg must refuse to start, naming the problem. */
static void refused_option(const char *arg, const char *expect) {
        const char *argv[] = { g_getenv("KDBUSD"), "--session", "--nofork", arg, NULL };
        g_autofree char *err = NULL;
        int status;

        g_assert_true(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL, NULL,
                                   NULL, NULL, &err, &status, NULL));
        g_assert_false(g_spawn_check_wait_status(status, NULL));
        g_assert_nonnull(strstr(err, expect));
}

static void test_required(void) {
        struct kdbus_cmd_hello hello = { .size = sizeof(hello), .pool_size = POOL,
                                         .attach_flags_send = KDBUS_ATTACH_CREDS };
        KdbusConn *c = NULL;
        MBus b;

        mbus_start(&b, "--native-attach-required=creds,pids");
        g_assert_cmpint(connect_hello(b.native, 0, &c), ==, 0);         /* libkdbus: both */
        g_assert_cmpint(update_attach(c, KDBUS_ITEM_ATTACH_FLAGS_SEND, KDBUS_ATTACH_CREDS),
                        ==, -EINVAL);
        kdbus_conn_close(c);
        g_assert_cmpint(kdbus_conn_open(b.native, &c), ==, 0);
        g_assert_cmpint(kdbus_conn_command(c, KDBUS_CMD_HELLO, &hello, sizeof(hello), NULL, 0),
                        ==, -ECONNREFUSED);
        kdbus_conn_close(c);
        mbus_stop(&b);
        mbus_start(&b, "--native-attach-required=exe");
        c = NULL;
        g_assert_cmpint(connect_hello(b.native, 0, &c), ==, -ECONNREFUSED);
        mbus_stop(&b);
        refused_option("--native-attach-required=creds,bogus", "unknown metadata \"bogus\"");
        refused_option("--native-attach-rule=whatever", "--native-attach-rule=whatever");
}

/* Is the /proc this test sees mounted without hidepid? */
static bool proc_public(void) {
        g_autofree char *info = NULL;
        char **lines, **l;
        bool pub = false;

        g_assert_true(g_file_get_contents("/proc/self/mountinfo", &info, NULL, NULL));
        lines = g_strsplit(info, "\n", -1);
        for (l = lines; *l; ++l)
                if (strstr(*l, " /proc ") && strstr(*l, " - proc "))
                        pub = !strstr(*l, "hidepid=") || strstr(*l, "hidepid=0") ||
                              strstr(*l, "hidepid=off");
        g_strfreev(lines);
        return pub;
}

/*
 * Receiver uid 1000, sender uid 65534 (neither may ptrace the other), the sender consents
 * to what libkdbus consents to (not CMDLINE, EXE): return the receiver's view as
 * "uid=U declined=0xD cmdline=0|1".
 */
static char *two_users(const char *rule) {
        const uint64_t want = KDBUS_ATTACH_CREDS | KDBUS_ATTACH_CMDLINE | KDBUS_ATTACH_EXE;
        int rp[2], status;
        pid_t rpid, spid;
        FILE *f;
        char *line, *result;
        MBus b;
        unsigned long long rid = 0;

        mbus_start(&b, rule);
        g_assert_cmpint(pipe(rp), ==, 0);
        rpid = fork();
        g_assert_cmpint(rpid, >=, 0);
        if (rpid == 0) {
                KdbusConn *c = NULL;
                const struct kdbus_msg *m;
                FILE *out;

                (void) close(rp[0]);
                out = fdopen(rp[1], "w");
                if (!out || drop_to(1000) || connect_hello(b.native, 0, &c) ||
                    update_attach(c, KDBUS_ITEM_ATTACH_FLAGS_RECV, want))
                        _exit(2);
                fprintf(out, "%llu\n", (unsigned long long)c->id);
                fflush(out);
                if (recv_peer_msg(c, &m))
                        _exit(3);
                fprintf(out, "uid=%llu declined=0x%llx cmdline=%d\n",
                        (unsigned long long)item_u64(m, KDBUS_ITEM_CREDS),
                        (unsigned long long)(kdbus_msg_find(m, KDBUS_ITEM_ATTACH_FLAGS_SEND) ?
                                             item_u64(m, KDBUS_ITEM_ATTACH_FLAGS_SEND) : 0),
                        kdbus_msg_find(m, KDBUS_ITEM_CMDLINE) != NULL);
                fflush(out);
                _exit(0);
        }
        (void) close(rp[1]);
        f = fdopen(rp[0], "r");
        line = read_line(f);
        rid = g_ascii_strtoull(line, NULL, 10);
        g_free(line);
        g_assert_cmpuint(rid, >, 0);
        spid = fork();
        g_assert_cmpint(spid, >=, 0);
        if (spid == 0) {
                KdbusConn *c = NULL;

                if (drop_to(65534) || connect_hello(b.native, 0, &c))
                        _exit(2);
                _exit(signal_to(c, rid, 3) ? 3 : 0);
        }
        g_assert_cmpint(waitpid(spid, &status, 0), ==, spid);
        g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        result = read_line(f);
        (void) fclose(f);
        g_assert_cmpint(waitpid(rpid, &status, 0), ==, rpid);
        g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        mbus_stop(&b);
        return result;
}

static void test_kdbus_rule(void) {
        g_autofree char *opt_in = NULL, *kdbus = NULL, *expect = NULL;

        if (geteuid() != 0) {
                g_test_skip("needs root (two unprivileged uids)");
                return;
        }
        opt_in = two_users(NULL);
        g_test_message("opt-in rule: %s", opt_in);
        g_assert_cmpstr(opt_in, ==, "uid=65534 declined=0x180 cmdline=0");  /* EXE|CMDLINE */
        kdbus = two_users("--native-attach-rule=kdbus");
        g_test_message("kdbus rule: %s", kdbus);
        /* CMDLINE as anyone could read /proc/<pid>/cmdline; EXE needs ptrace access */
        expect = g_strdup(proc_public() ? "uid=65534 declined=0x80 cmdline=1" :
                                          "uid=65534 declined=0x180 cmdline=0");
        g_assert_cmpstr(kdbus, ==, expect);
}

/* One write(2), as /proc's map files want (no temporary file and rename). */
static void write_proc(const char *path, const char *text) {
        int fd = open(path, O_WRONLY | O_CLOEXEC);

        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(write(fd, text, strlen(text)), ==, (ssize_t)strlen(text));
        (void) close(fd);
}

/*
 * A receiver in its own user namespace; the test (root) writes its maps: inside uid 5000
 * is the bus's 0, inside 0 is the bus's 1000. Senders: this process (uid 0), helpers of
 * uid 1000 and 2000 (unmapped: the overflow uid).
 */
static void test_user_namespace(void) {
        static const char map[] = "5000 0 1\n0 1000 1\n";
        int rp[2], wp[2], status;
        uid_t senders[] = { 1000, 2000 };
        g_autofree char *path = NULL, *first = NULL, *result = NULL, *ids = NULL;
        KdbusConn *me = NULL;
        unsigned long long rid;
        pid_t rpid;
        unsigned i;
        FILE *f;
        MBus b;

        if (geteuid() != 0) {
                g_test_skip("needs root (writes another process's uid_map)");
                return;
        }
        mbus_start(&b, NULL);
        g_assert_cmpint(pipe(rp), ==, 0);
        g_assert_cmpint(pipe(wp), ==, 0);
        rpid = fork();
        g_assert_cmpint(rpid, >=, 0);
        if (rpid == 0) {
                KdbusConn *c = NULL;
                const struct kdbus_msg *m;
                char x;
                FILE *out;

                (void) close(rp[0]);
                (void) close(wp[1]);
                out = fdopen(rp[1], "w");
                if (!out)
                        _exit(2);
                if (unshare(CLONE_NEWUSER) < 0) {
                        fprintf(out, "skip unshare(CLONE_NEWUSER): %s\n", g_strerror(errno));
                        _exit(0);
                }
                fprintf(out, "unshared\n");
                fflush(out);
                if (read(wp[0], &x, 1) != 1)            /* the maps are written */
                        _exit(3);
                if (connect_hello(b.native, 0, &c) ||
                    update_attach(c, KDBUS_ITEM_ATTACH_FLAGS_RECV, KDBUS_ATTACH_CREDS))
                        _exit(4);
                fprintf(out, "%llu\n", (unsigned long long)c->id);
                fflush(out);
                for (i = 0; i < 3; ++i) {
                        if (recv_peer_msg(c, &m))
                                _exit(5);
                        fprintf(out, "%s%llu", i ? "," : "",
                                (unsigned long long)item_u64(m, KDBUS_ITEM_CREDS));
                        (void) kdbus_conn_free(c, kdbus_conn_offset(c, m));
                }
                fprintf(out, "\n");
                fflush(out);
                _exit(0);
        }
        (void) close(rp[1]);
        (void) close(wp[0]);
        f = fdopen(rp[0], "r");
        first = read_line(f);
        if (g_str_has_prefix(first, "skip")) {
                g_test_skip(first);
                goto out;
        }
        g_assert_cmpstr(first, ==, "unshared");
        path = g_strdup_printf("/proc/%d/uid_map", (int)rpid);
        write_proc(path, map);
        g_free(path);
        path = g_strdup_printf("/proc/%d/gid_map", (int)rpid);
        write_proc(path, map);
        g_assert_cmpint(write(wp[1], "g", 1), ==, 1);
        ids = read_line(f);
        rid = g_ascii_strtoull(ids, NULL, 10);
        g_assert_cmpuint(rid, >, 0);
        g_assert_cmpint(connect_hello(b.native, 0, &me), ==, 0);
        g_assert_cmpint(signal_to(me, rid, 1), ==, 0);
        for (i = 0; i < G_N_ELEMENTS(senders); ++i) {
                pid_t pid = fork();

                g_assert_cmpint(pid, >=, 0);
                if (pid == 0) {
                        KdbusConn *c = NULL;

                        if (drop_to(senders[i]) || connect_hello(b.native, 0, &c))
                                _exit(2);
                        _exit(signal_to(c, rid, 2) ? 3 : 0);
                }
                g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
                g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        }
        result = read_line(f);
        g_test_message("uids seen in the receiver's user namespace (senders 0, 1000, 2000): %s",
                       result);
        g_assert_cmpstr(result, ==, "5000,0,65534");
        kdbus_conn_close(me);
out:
        (void) fclose(f);
        (void) close(wp[1]);
        g_assert_cmpint(waitpid(rpid, &status, 0), ==, rpid);
        g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        mbus_stop(&b);
}

/*
 * A receiver G that is pid 1 of its own pid namespace: a sender H inside (pid 2 there) is
 * shown with pid 2, this process (outside) with pid 0; G's message to this process shows
 * G's pid in the bus's (our) namespace.
 */
static void test_pid_namespace(void) {
        int rp[2], wp[2], status;
        g_autofree char *first = NULL, *line = NULL, *h = NULL, *p = NULL;
        KdbusConn *me = NULL;
        const struct kdbus_msg *m;
        unsigned long long gid_outer, rid;
        pid_t cpid;
        FILE *f;
        char x;
        MBus b;

        if (geteuid() != 0) {
                g_test_skip("needs root (unshare(CLONE_NEWPID))");
                return;
        }
        mbus_start(&b, NULL);
        g_assert_cmpint(connect_hello(b.native, 0, &me), ==, 0);
        g_assert_cmpint(update_attach(me, KDBUS_ITEM_ATTACH_FLAGS_RECV, KDBUS_ATTACH_PIDS), ==, 0);
        g_assert_cmpint(pipe(rp), ==, 0);
        g_assert_cmpint(pipe(wp), ==, 0);
        cpid = fork();
        g_assert_cmpint(cpid, >=, 0);
        if (cpid == 0) {
                FILE *out;
                pid_t g;

                (void) close(rp[0]);
                (void) close(wp[1]);
                out = fdopen(rp[1], "w");
                if (!out)
                        _exit(2);
                if (unshare(CLONE_NEWPID) < 0) {
                        fprintf(out, "skip unshare(CLONE_NEWPID): %s\n", g_strerror(errno));
                        _exit(0);
                }
                g = fork();
                if (g < 0)
                        _exit(3);
                if (g == 0) {
                        KdbusConn *c = NULL;
                        const struct kdbus_msg *gm;
                        pid_t hpid;
                        int st;

                        if (connect_hello(b.native, 0, &c) ||
                            update_attach(c, KDBUS_ITEM_ATTACH_FLAGS_RECV, KDBUS_ATTACH_PIDS))
                                _exit(4);
                        fprintf(out, "%llu\n", (unsigned long long)c->id);
                        fflush(out);
                        hpid = fork();
                        if (hpid == 0) {
                                KdbusConn *hc = NULL;

                                if (connect_hello(b.native, 0, &hc))
                                        _exit(2);
                                _exit(signal_to(hc, c->id, 5) ? 3 : 0);
                        }
                        if (hpid < 0 || waitpid(hpid, &st, 0) != hpid || !WIFEXITED(st) ||
                            WEXITSTATUS(st) || recv_peer_msg(c, &gm))
                                _exit(5);
                        fprintf(out, "h=%llu/%d\n", (unsigned long long)item_u64(gm, KDBUS_ITEM_PIDS),
                                (int)hpid);
                        fflush(out);
                        if (read(wp[0], &x, 1) != 1 || recv_peer_msg(c, &gm))
                                _exit(6);
                        fprintf(out, "p=%llu\n", (unsigned long long)item_u64(gm, KDBUS_ITEM_PIDS));
                        fflush(out);
                        _exit(signal_to(c, me->id, 6) ? 7 : 0);
                }
                fprintf(out, "g=%d\n", (int)g);
                fflush(out);
                if (waitpid(g, &status, 0) != g)
                        _exit(8);
                _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 9);
        }
        (void) close(rp[1]);
        (void) close(wp[0]);
        f = fdopen(rp[0], "r");
        first = read_line(f);
        if (g_str_has_prefix(first, "skip")) {
                g_test_skip(first);
                goto out;
        }
        /* "g=<outer pid>" and G's id, in either order */
        line = read_line(f);
        if (g_str_has_prefix(first, "g=")) {
                gid_outer = g_ascii_strtoull(first + 2, NULL, 10);
                rid = g_ascii_strtoull(line, NULL, 10);
        } else {
                gid_outer = g_ascii_strtoull(line + 2, NULL, 10);
                rid = g_ascii_strtoull(first, NULL, 10);
        }
        g_assert_cmpuint(rid, >, 0);
        h = read_line(f);
        g_test_message("inside the pid namespace, seen/actual pid of the sender: %s", h);
        g_assert_cmpstr(h, ==, "h=2/2");
        g_assert_cmpint(signal_to(me, rid, 8), ==, 0);
        g_assert_cmpint(write(wp[1], "g", 1), ==, 1);
        p = read_line(f);
        g_assert_cmpstr(p, ==, "p=0");          /* we are outside: not visible */
        g_assert_cmpint(recv_peer_msg(me, &m), ==, 0);
        g_assert_cmpuint(item_u64(m, KDBUS_ITEM_PIDS), ==, gid_outer);
out:
        (void) fclose(f);
        (void) close(wp[1]);
        g_assert_cmpint(waitpid(cpid, &status, 0), ==, cpid);
        g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        kdbus_conn_close(me);
        mbus_stop(&b);
}

/* SECLABEL: SO_PEERSEC at connect; without a labelling LSM the kernel gives none. */
static void test_seclabel(void) {
        struct kdbus_cmd_info info = { .size = sizeof(info), .attach_flags = KDBUS_ATTACH_SECLABEL };
        g_autofree char *label = NULL;
        KdbusConn *a = NULL, *c = NULL;
        const struct kdbus_info *ki;
        const struct kdbus_item *item = NULL, *it;
        MBus b;

        mbus_start(&b, NULL);
        g_assert_cmpint(connect_hello(b.native, 0, &a), ==, 0);  /* consents to SECLABEL */
        g_assert_cmpint(connect_hello(b.native, 0, &c), ==, 0);
        info.id = a->id;
        g_assert_cmpint(kdbus_conn_command(c, KDBUS_CMD_CONN_INFO, &info, sizeof(info), NULL, 0),
                        ==, 0);
        ki = (const void *)(c->pool + info.offset);
        for (it = ki->items; (const uint8_t *)it < (const uint8_t *)ki + ki->size;
             it = KDBUS_ITEM_NEXT(it))
                if (it->type == KDBUS_ITEM_SECLABEL)
                        item = it;
        if (g_file_get_contents("/proc/self/attr/current", &label, NULL, NULL) && label[0]) {
                g_strchomp(label);
                g_assert_nonnull(item);
                g_assert_cmpstr(item->str, ==, label);
        } else {
                g_test_message("no LSM label here (/proc/self/attr/current unreadable): "
                               "SO_PEERSEC gives none and SECLABEL is missing, not declined");
                g_assert_null(item);
        }
        kdbus_conn_close(a);
        kdbus_conn_close(c);
        mbus_stop(&b);
}

/* The effective set of a CAPS item (kdbus_caps: last_cap, then 4 sets of 2 u32). */
static uint64_t caps_eff(const struct kdbus_msg *m) {
        const struct kdbus_item *item = kdbus_msg_find(m, KDBUS_ITEM_CAPS);

        if (!item)
                return UINT64_MAX;
        return item->data32[5] | (uint64_t)item->data32[6] << 32;
}

/* CapEff of /proc/self/status. */
static uint64_t own_cap_eff(void) {
        g_autofree char *status = NULL;
        const char *p;

        g_assert_true(g_file_get_contents("/proc/self/status", &status, NULL, NULL));
        p = strstr(status, "CapEff:");
        g_assert_nonnull(p);
        return g_ascii_strtoull(p + 7, NULL, 16);
}

/* Every capability this kernel has (cap_last_cap). */
static uint64_t cap_all(void) {
        g_autofree char *text = NULL;
        unsigned last;

        g_assert_true(g_file_get_contents("/proc/sys/kernel/cap_last_cap", &text, NULL, NULL));
        last = (unsigned)g_ascii_strtoull(text, NULL, 10);
        return last >= 63 ? UINT64_MAX : (UINT64_C(1) << (last + 1)) - 1;
}

/* Drop capability @bit from this process's effective set only (capset, version 3). */
static int drop_effective(unsigned bit) {
        struct { uint32_t version; int pid; } hdr = { 0x20080522, 0 };
        struct { uint32_t effective, permitted, inheritable; } data[2];

        if (syscall(SYS_capget, &hdr, data) < 0)
                return -errno;
        data[bit / 32].effective &= ~(1u << (bit % 32));
        if (syscall(SYS_capset, &hdr, data) < 0)
                return -errno;
        return 0;
}

/*
 * A sender that consents to everything: connects (per-message capture or not), with
 * @unshare_when 1 unshares its user namespace before connecting, 2 after HELLO, 0 never;
 * with @drop_bit < 64 first drops that capability from its effective set; sends one signal to
 * each of @dst (0-terminated). Exits 0 on success.
 */
static void caps_sender(const char *native, uint64_t hello_flags, int unshare_when,
                        unsigned drop_bit, const uint64_t *dst) {
        KdbusConn *c = NULL;

        if (drop_bit < 64 && drop_effective(drop_bit))
                _exit(5);
        if (unshare_when == 1 && unshare(CLONE_NEWUSER) < 0)
                _exit(2);
        if (connect_hello(native, hello_flags, &c) ||
            update_attach(c, KDBUS_ITEM_ATTACH_FLAGS_SEND, _KDBUS_ATTACH_ANY))
                _exit(3);
        if (unshare_when == 2 && unshare(CLONE_NEWUSER) < 0)
                _exit(4);
        for (; *dst; ++dst)
                if (signal_to(c, *dst, 3))
                        _exit(6);
        _exit(0);
}

static void run_caps_sender(const char *native, uint64_t hello_flags, int unshare_when,
                            unsigned drop_bit, const uint64_t *dst) {
        int status;
        pid_t pid = fork();

        g_assert_cmpint(pid, >=, 0);
        if (pid == 0)
                caps_sender(native, hello_flags, unshare_when, drop_bit, dst);
        g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
        g_assert_true(WIFEXITED(status));
        g_assert_cmpint(WEXITSTATUS(status), ==, 0);
}

/*
 * CAPS across user namespaces, as kdbus_meta_export_caps() showed them:
 * - a receiver in the bus's user namespace sees a sender of the same namespace verbatim,
 *   and nothing of a sender in a child namespace (its capabilities hold only there);
 * - a receiver in a child namespace made by uid 0 sees a root sender of the bus's
 *   namespace with every capability (the owner of a namespace has all in it), whatever
 *   that sender dropped from its effective set.
 * And a sender that unshares its user namespace after HELLO: with connect-time capture it
 * is still shown as at HELLO; per message (as kdbus, which always captured per message)
 * as it is at SEND: nothing.
 */
static void test_caps_user_namespace(void) {
        uint64_t all = cap_all(), mine = own_cap_eff(), dst[3] = { 0 };
        int rp[2], wp[2], status;
        g_autofree char *first = NULL, *line = NULL, *expect = NULL;
        const struct kdbus_msg *m;
        KdbusConn *r = NULL;
        unsigned bit;
        pid_t rpid;
        FILE *f;
        MBus b;

        if (geteuid() != 0) {
                g_test_skip("needs root (drops capabilities, makes user namespaces)");
                return;
        }
        for (bit = 0; bit < 64 && !((mine >> bit) & 1); ++bit)
                ;
        g_assert_cmpuint(bit, <, 64);
        mbus_start(&b, NULL);
        g_assert_cmpint(connect_hello(b.native, 0, &r), ==, 0);
        g_assert_cmpint(update_attach(r, KDBUS_ITEM_ATTACH_FLAGS_RECV, KDBUS_ATTACH_CAPS |
                                      KDBUS_ATTACH_CREDS), ==, 0);
        g_assert_cmpint(pipe(rp), ==, 0);
        g_assert_cmpint(pipe(wp), ==, 0);
        rpid = fork();
        g_assert_cmpint(rpid, >=, 0);
        if (rpid == 0) {
                /* the receiver in a user namespace of its own (its owner: uid 0) */
                KdbusConn *c = NULL;
                const struct kdbus_msg *cm;
                char x;
                FILE *out;

                (void) close(rp[0]);
                (void) close(wp[1]);
                out = fdopen(rp[1], "w");
                if (!out)
                        _exit(2);
                if (unshare(CLONE_NEWUSER) < 0) {
                        fprintf(out, "skip unshare(CLONE_NEWUSER): %s\n", g_strerror(errno));
                        _exit(0);
                }
                if (connect_hello(b.native, 0, &c) ||
                    update_attach(c, KDBUS_ITEM_ATTACH_FLAGS_RECV, KDBUS_ATTACH_CAPS))
                        _exit(4);
                fprintf(out, "%llu\n", (unsigned long long)c->id);
                fflush(out);
                if (read(wp[0], &x, 1) != 1 || recv_peer_msg(c, &cm))
                        _exit(5);
                fprintf(out, "%llx\n", (unsigned long long)caps_eff(cm));
                fflush(out);
                _exit(0);
        }
        (void) close(rp[1]);
        (void) close(wp[0]);
        f = fdopen(rp[0], "r");
        first = read_line(f);
        if (g_str_has_prefix(first, "skip")) {
                g_test_skip(first);
                goto out;
        }
        dst[0] = r->id;
        dst[1] = g_ascii_strtoull(first, NULL, 10);
        g_assert_cmpuint(dst[1], >, 0);
        /* a root sender without one effective capability, to both */
        run_caps_sender(b.native, 0, 0, bit, dst);
        g_assert_cmpint(write(wp[1], "g", 1), ==, 1);
        line = read_line(f);
        g_assert_cmpint(recv_peer_msg(r, &m), ==, 0);
        g_test_message("root sender without capability %u: seen %llx in the bus's user "
                       "namespace, %s in a child one made by root", bit,
                       (unsigned long long)caps_eff(m), line);
        g_assert_cmpuint(caps_eff(m), ==, mine & ~(UINT64_C(1) << bit));
        expect = g_strdup_printf("%llx", (unsigned long long)all);
        g_assert_cmpstr(line, ==, expect);
        g_assert_cmpint(kdbus_conn_free(r, kdbus_conn_offset(r, m)), ==, 0);
        /* senders in a child user namespace: nothing in the bus's */
        dst[1] = 0;
        run_caps_sender(b.native, 0, 1, 64, dst);
        g_assert_cmpint(recv_peer_msg(r, &m), ==, 0);
        g_assert_cmpuint(caps_eff(m), ==, 0);
        g_assert_cmpint(kdbus_conn_free(r, kdbus_conn_offset(r, m)), ==, 0);
        /* unshared after HELLO: connect-time capture keeps HELLO's view ... */
        run_caps_sender(b.native, 0, 2, 64, dst);
        g_assert_cmpint(recv_peer_msg(r, &m), ==, 0);
        g_assert_cmpuint(caps_eff(m), ==, mine);
        g_assert_cmpint(kdbus_conn_free(r, kdbus_conn_offset(r, m)), ==, 0);
        /* ... per-message capture follows it (its uid is still 0 for the bus) */
        run_caps_sender(b.native, KDBUS_HELLO_CAPTURE_PER_MESSAGE, 2, 64, dst);
        g_assert_cmpint(recv_peer_msg(r, &m), ==, 0);
        g_assert_cmpuint(caps_eff(m), ==, 0);
        g_assert_cmpuint(item_u64(m, KDBUS_ITEM_CREDS), ==, 0);
        g_assert_cmpint(kdbus_conn_free(r, kdbus_conn_offset(r, m)), ==, 0);
out:
        (void) fclose(f);
        (void) close(wp[1]);
        g_assert_cmpint(waitpid(rpid, &status, 0), ==, rpid);
        g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        kdbus_conn_close(r);
        mbus_stop(&b);
}

/*
 * A receiver's namespaces are those of its HELLO for the connection's life (kdbus: the
 * opener's f_cred and the HELLO task's pid namespace): one that unshares its user
 * namespace afterwards, with maps that would show uid 1000 as 0, still sees 1000.
 */
static void test_receiver_unshares_after_hello(void) {
        int rp[2], wp[2], status;
        g_autofree char *first = NULL, *path = NULL, *result = NULL;
        pid_t rpid, spid;
        FILE *f;
        MBus b;

        if (geteuid() != 0) {
                g_test_skip("needs root (writes another process's uid_map)");
                return;
        }
        mbus_start(&b, NULL);
        g_assert_cmpint(pipe(rp), ==, 0);
        g_assert_cmpint(pipe(wp), ==, 0);
        rpid = fork();
        g_assert_cmpint(rpid, >=, 0);
        if (rpid == 0) {
                KdbusConn *c = NULL;
                const struct kdbus_msg *m;
                char x;
                FILE *out;

                (void) close(rp[0]);
                (void) close(wp[1]);
                out = fdopen(rp[1], "w");
                if (!out)
                        _exit(2);
                if (connect_hello(b.native, 0, &c) ||
                    update_attach(c, KDBUS_ITEM_ATTACH_FLAGS_RECV, KDBUS_ATTACH_CREDS))
                        _exit(4);
                if (unshare(CLONE_NEWUSER) < 0) {
                        fprintf(out, "skip unshare(CLONE_NEWUSER): %s\n", g_strerror(errno));
                        _exit(0);
                }
                fprintf(out, "%llu\n", (unsigned long long)c->id);
                fflush(out);
                if (read(wp[0], &x, 1) != 1 || recv_peer_msg(c, &m))
                        _exit(5);
                fprintf(out, "%llu\n", (unsigned long long)item_u64(m, KDBUS_ITEM_CREDS));
                fflush(out);
                _exit(0);
        }
        (void) close(rp[1]);
        (void) close(wp[0]);
        f = fdopen(rp[0], "r");
        first = read_line(f);
        if (g_str_has_prefix(first, "skip")) {
                g_test_skip(first);
                goto out;
        }
        path = g_strdup_printf("/proc/%d/uid_map", (int)rpid);
        write_proc(path, "0 1000 1\n");
        spid = fork();
        g_assert_cmpint(spid, >=, 0);
        if (spid == 0) {
                KdbusConn *c = NULL;

                if (drop_to(1000) || connect_hello(b.native, 0, &c))
                        _exit(2);
                _exit(signal_to(c, g_ascii_strtoull(first, NULL, 10), 2) ? 3 : 0);
        }
        g_assert_cmpint(waitpid(spid, &status, 0), ==, spid);
        g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        g_assert_cmpint(write(wp[1], "g", 1), ==, 1);
        result = read_line(f);
        g_assert_cmpstr(result, ==, "1000");
out:
        (void) fclose(f);
        (void) close(wp[1]);
        g_assert_cmpint(waitpid(rpid, &status, 0), ==, rpid);
        g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        mbus_stop(&b);
}

/* The AUXGROUPS item as "g1,g2,..." ("-" if missing). */
static char *groups_of(const struct kdbus_msg *m) {
        const struct kdbus_item *item = kdbus_msg_find(m, KDBUS_ITEM_AUXGROUPS);
        GString *s = g_string_new(NULL);
        size_t i;

        if (!item)
                return g_string_free(s, FALSE), g_strdup("-");
        for (i = 0; i < (item->size - KDBUS_ITEM_HEADER_SIZE) / 8; ++i)
                g_string_append_printf(s, "%s%llu", i ? "," : "",
                                       (unsigned long long)item->data64[i]);
        return g_string_free(s, FALSE);
}

/*
 * AUXGROUPS and SECLABEL per message: a sender that changes its supplementary groups
 * between two sends is seen with each set (from /proc/<pid>/status through its pidfd);
 * with connect-time capture both show the groups of connect (the primary group). SECLABEL
 * comes with SCM_SECURITY: without a labelling LSM there is none, as at connect.
 */
static void test_groups_per_message(void) {
        static const gid_t first[] = { 100, 200 }, second[] = { 300 };
        uint64_t flags[2] = { KDBUS_HELLO_CAPTURE_PER_MESSAGE, 0 };
        const char *expect[2][2] = { { "100,200", "300" }, { "0", "0" } };
        g_autofree char *label = NULL;
        bool lsm;
        KdbusConn *r = NULL;
        unsigned k, i;
        MBus b;

        if (geteuid() != 0) {
                g_test_skip("needs root (setgroups)");
                return;
        }
        lsm = g_file_get_contents("/proc/self/attr/current", &label, NULL, NULL) && label[0];
        mbus_start(&b, NULL);
        g_assert_cmpint(connect_hello(b.native, 0, &r), ==, 0);
        g_assert_cmpint(update_attach(r, KDBUS_ITEM_ATTACH_FLAGS_RECV, KDBUS_ATTACH_AUXGROUPS |
                                      KDBUS_ATTACH_SECLABEL), ==, 0);
        for (k = 0; k < 2; ++k) {
                int status;
                pid_t pid = fork();

                g_assert_cmpint(pid, >=, 0);
                if (pid == 0) {
                        KdbusConn *c = NULL;

                        if (setgroups(0, NULL) < 0 || connect_hello(b.native, flags[k], &c))
                                _exit(2);
                        if (setgroups(G_N_ELEMENTS(first), first) < 0 || signal_to(c, r->id, 1))
                                _exit(3);
                        if (setgroups(G_N_ELEMENTS(second), second) < 0 ||
                            signal_to(c, r->id, 2))
                                _exit(4);
                        _exit(0);
                }
                g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
                g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
                for (i = 0; i < 2; ++i) {
                        const struct kdbus_msg *m;
                        const struct kdbus_item *sec;
                        g_autofree char *seen = NULL;

                        g_assert_cmpint(recv_peer_msg(r, &m), ==, 0);
                        seen = groups_of(m);
                        g_test_message("%s capture, send %u: AUXGROUPS %s",
                                       k ? "connect-time" : "per-message", i + 1, seen);
                        g_assert_cmpstr(seen, ==, expect[k][i]);
                        sec = kdbus_msg_find(m, KDBUS_ITEM_SECLABEL);
                        if (lsm)
                                g_assert_nonnull(sec);
                        else
                                g_assert_null(sec);
                        g_assert_cmpint(kdbus_conn_free(r, kdbus_conn_offset(r, m)), ==, 0);
                }
        }
        kdbus_conn_close(r);
        mbus_stop(&b);
}

/* kdbusd's rchar (/proc/PID/io: bytes it read(2) or recvmsg(2)ed). */
static uint64_t bus_rchar(const MBus *b) {
        g_autofree char *path = g_strdup_printf("/proc/%d/io", (int)b->pid);
        g_autofree char *io = NULL;
        const char *p;

        g_assert_true(g_file_get_contents(path, &io, NULL, NULL));
        p = strstr(io, "rchar:");
        g_assert_nonnull(p);
        return g_ascii_strtoull(p + 6, NULL, 10);
}

/*
 * Per-message capture reads only the /proc items some receiver asks for: with the one
 * receiver asking CREDS alone, a per-message sender consenting to everything costs kdbusd
 * no /proc reads beyond the pidfd check; once the receiver asks CMDLINE, CGROUP and CAPS
 * too, each SEND reads them (cmdline, cgroup, status: kilobytes more per message).
 */
static void test_per_message_reads(void) {
        uint64_t per_msg[2];
        KdbusConn *r = NULL, *s = NULL;
        unsigned k, i;
        MBus b;

        mbus_start(&b, NULL);
        g_assert_cmpint(connect_hello(b.native, 0, &r), ==, 0);
        g_assert_cmpint(connect_hello(b.native, KDBUS_HELLO_CAPTURE_PER_MESSAGE, &s), ==, 0);
        g_assert_cmpint(update_attach(s, KDBUS_ITEM_ATTACH_FLAGS_SEND, _KDBUS_ATTACH_ANY), ==, 0);
        for (k = 0; k < 2; ++k) {
                uint64_t before;

                g_assert_cmpint(update_attach(r, KDBUS_ITEM_ATTACH_FLAGS_RECV,
                                              k ? KDBUS_ATTACH_CREDS | KDBUS_ATTACH_CMDLINE |
                                                  KDBUS_ATTACH_CGROUP | KDBUS_ATTACH_CAPS :
                                                  KDBUS_ATTACH_CREDS), ==, 0);
                before = bus_rchar(&b);
                for (i = 0; i < 20; ++i) {
                        const struct kdbus_msg *m;

                        g_assert_cmpint(signal_to(s, r->id, 10 + i), ==, 0);
                        g_assert_cmpint(recv_peer_msg(r, &m), ==, 0);
                        g_assert_cmpuint(item_u64(m, KDBUS_ITEM_CREDS), ==, geteuid());
                        g_assert_true(!!kdbus_msg_find(m, KDBUS_ITEM_CMDLINE) == !!k);
                        g_assert_true(!!kdbus_msg_find(m, KDBUS_ITEM_CAPS) == !!k);
                        g_assert_cmpint(kdbus_conn_free(r, kdbus_conn_offset(r, m)), ==, 0);
                }
                per_msg[k] = (bus_rchar(&b) - before) / 20;
        }
        g_test_message("kdbusd read per SEND + RECV + FREE: %llu bytes with CREDS wanted, "
                       "%llu with CMDLINE, CGROUP, CAPS too",
                       (unsigned long long)per_msg[0], (unsigned long long)per_msg[1]);
        /* /proc/<pid>/status alone is over 1 KiB */
        g_assert_cmpuint(per_msg[1], >, per_msg[0] + 1024);
        kdbus_conn_close(r);
        kdbus_conn_close(s);
        mbus_stop(&b);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/native/meta-socket/setuid-after-connect", test_setuid_after_connect);
        g_test_add_func("/native/meta-socket/attach-required", test_required);
        g_test_add_func("/native/meta-socket/attach-rule-kdbus", test_kdbus_rule);
        g_test_add_func("/native/meta-socket/user-namespace", test_user_namespace);
        g_test_add_func("/native/meta-socket/pid-namespace", test_pid_namespace);
        g_test_add_func("/native/meta-socket/seclabel", test_seclabel);
        g_test_add_func("/native/meta-socket/caps-user-namespace", test_caps_user_namespace);
        g_test_add_func("/native/meta-socket/receiver-unshares-after-hello",
                        test_receiver_unshares_after_hello);
        g_test_add_func("/native/meta-socket/groups-per-message", test_groups_per_message);
        g_test_add_func("/native/meta-socket/per-message-reads", test_per_message_reads);
        return g_test_run();
}
