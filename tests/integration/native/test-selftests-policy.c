/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Conformance with kdbus's policy selftests, through a real kdbusd and libkdbus: policy
 * (policy holders: who may hold, one holder per name, a holder is no ordinary connection,
 * UPDATE replaces its entries, the entries go with it) and policy-priv (an unprivileged
 * peer, uid nobody in a child process, under the holders' OWN / TALK entries; privileged
 * peers pass; a `a.b.*` entry covers one more element). How holder entries combine with
 * the XML policy is our rule (docs/native.md "Custom endpoints and kdbus's name policy"):
 * they restrict only the names they cover. docs/kdbus-selftests.md maps each kdbus selftest to these tests.
 */
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include "kdbusd-fixture.h"

#define NOBODY 65534u
#define OTHER_UID 12345u

typedef struct Access {
        uint64_t type;          /* KDBUS_POLICY_ACCESS_* */
        uint64_t id;
        uint64_t access;        /* KDBUS_POLICY_SEE/TALK/OWN */
} Access;

/* NAME @name then one POLICY_ACCESS item per @acc into @buf at @at. Return: the new end. */
static size_t put_policy(uint8_t *buf, size_t at, const char *name, const Access *acc,
                         unsigned n) {
        struct kdbus_item *item = (void *)(buf + at);
        unsigned i;

        item->size = KDBUS_ITEM_HEADER_SIZE + strlen(name) + 1;
        item->type = KDBUS_ITEM_NAME;
        strcpy(item->str, name);
        at += KDBUS_ALIGN8(item->size);
        for (i = 0; i < n; ++i) {
                item = (void *)(buf + at);
                item->size = KDBUS_ITEM_HEADER_SIZE + sizeof(struct kdbus_policy_access);
                item->type = KDBUS_ITEM_POLICY_ACCESS;
                item->policy_access.type = acc[i].type;
                item->policy_access.access = acc[i].access;
                item->policy_access.id = acc[i].id;
                at += KDBUS_ALIGN8(item->size);
        }
        return at;
}

/* HELLO with @flags (POLICY_HOLDER or ACTIVATOR) for @name with @acc. Return: HELLO's
 * result; *ret the handle (close it). */
static int special_hello(KBus *b, uint64_t flags, const char *name, const Access *acc,
                         unsigned n, KdbusConn **ret) {
        uint8_t buf[1024] __attribute__((aligned(8))) = { 0 };
        struct kdbus_cmd_hello *hello = (void *)buf;
        KdbusConn *c = kopen(b);
        size_t end = put_policy(buf, sizeof(*hello), name, acc, n);
        int r;

        hello->size = end;
        hello->flags = flags;
        hello->pool_size = KPOOL;
        *ret = c;
        r = kdbus_conn_command(c, KDBUS_CMD_HELLO, buf, sizeof(buf), NULL, 0);
        c->id = hello->id;      /* libkdbus's kdbus_conn_hello() sets it; raw HELLO here */
        return r;
}

/* HELLO as a policy holder of @name. */
static int holder_hello(KBus *b, const char *name, const Access *acc, unsigned n,
                        KdbusConn **ret) {
        return special_hello(b, KDBUS_HELLO_POLICY_HOLDER, name, acc, n, ret);
}

/* UPDATE a holder's entries to @name / @acc. */
static int holder_update(KdbusConn *c, const char *name, const Access *acc, unsigned n) {
        uint8_t buf[1024] __attribute__((aligned(8))) = { 0 };
        struct kdbus_cmd *cmd = (void *)buf;

        cmd->size = put_policy(buf, sizeof(*cmd), name, acc, n);
        return kdbus_conn_command(c, KDBUS_CMD_UPDATE, buf, sizeof(buf), NULL, 0);
}

/*
 * In a child running as @uid: connect, HELLO, then NAME_ACQUIRE @acquire (if not NULL)
 * and a call of Ping to @call (if not NULL). Return: the two results as one number
 * (acquire * 1000 + call, each 0 or a negative errno; -9999 if the child failed).
 */
static int as_user(KBus *b, uid_t uid, const char *acquire, const char *call) {
        int p[2], status, res[2] = { -9999, -9999 };
        pid_t pid;

        g_assert_cmpint(pipe(p), ==, 0);
        pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0) {
                KdbusConn *c = NULL;
                int out[2] = { 0, 0 };

                (void) close(p[0]);
                if (setgroups(0, NULL) || setresgid(uid, uid, uid) || setresuid(uid, uid, uid) ||
                    kdbus_conn_open(b->native, &c) || kdbus_conn_hello(c, 0, KPOOL))
                        _exit(2);
                if (acquire)
                        out[0] = kdbus_conn_name_acquire(c, acquire, 0, NULL);
                if (call)
                        out[1] = kcall(c, 0, call, 1, true, "Ping", NULL, 0, NULL);
                _exit(write(p[1], out, sizeof(out)) == sizeof(out) ? 0 : 3);
        }
        (void) close(p[1]);
        g_assert_cmpint(read(p[0], res, sizeof(res)), ==, sizeof(res));
        (void) close(p[0]);
        g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
        g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        return res[0] * 1000 + res[1];
}

#define BOTH(acquire, call) ((acquire) * 1000 + (call))

static void open_dir(KBus *b) {
        /* the unprivileged children reach the sockets */
        g_assert_cmpint(chmod(b->dir, 0755), ==, 0);
}

/* policy: policy holders */
static void test_policy(KBus *b, gconstpointer ctx) {
        const Access world_talk[] = { { KDBUS_POLICY_ACCESS_WORLD, 0, KDBUS_POLICY_TALK } };
        const Access other_talk[] = { { KDBUS_POLICY_ACCESS_USER, OTHER_UID,
                                        KDBUS_POLICY_TALK } };
        KdbusConn *h = NULL, *h2 = NULL, *owner = kpeer(b, 0);

        open_dir(b);
        g_assert_cmpint(kdbus_conn_name_acquire(owner, "org.example.Held", 0, NULL), ==, 0);
        /* nobody may talk to Held while no holder covers it (the XML policy allows) */
        g_assert_cmpint(as_user(b, NOBODY, NULL, "org.example.Held"), ==, BOTH(0, 0));
        g_assert_cmpint(holder_hello(b, "org.example.Held", other_talk, 1, &h), ==, 0);
        g_assert_cmpint(as_user(b, NOBODY, NULL, "org.example.Held"), ==, BOTH(0, -EPERM));
        /* one holder per name */
        g_assert_cmpint(holder_hello(b, "org.example.Held", world_talk, 1, &h2), ==, -EEXIST);
        h2 = kdbus_conn_close(h2);
        /* a holder is no ordinary connection */
        g_assert_cmpint(kcall(h, owner->id, NULL, 2, true, "X", NULL, 0, NULL), ==, -EOPNOTSUPP);
        g_assert_cmpint(kdbus_conn_name_acquire(h, "org.example.Other", 0, NULL), ==,
                        -EOPNOTSUPP);
        g_assert_cmpint(kcall(owner, h->id, NULL, 3, true, "X", NULL, 0, NULL), ==, -ENXIO);
        /* UPDATE replaces the entries: now the world may talk */
        g_assert_cmpint(holder_update(h, "org.example.Held", world_talk, 1), ==, 0);
        /* TALK is not OWN: EPERM (not EEXIST: the policy is asked before the registry) */
        g_assert_cmpint(as_user(b, NOBODY, "org.example.Held", "org.example.Held"), ==,
                        BOTH(-EPERM, 0));
        g_assert_cmpint(holder_update(h, "org.example.Held", other_talk, 1), ==, 0);
        g_assert_cmpint(as_user(b, NOBODY, NULL, "org.example.Held"), ==, BOTH(0, -EPERM));
        /* a holder's entries go with it (its socket closes: wait, bounded, for the bus) */
        h = kdbus_conn_close(h);
        {
                unsigned i;
                int r = -EPERM;

                for (i = 0; i < 200 && r == BOTH(0, -EPERM); ++i) {
                        r = as_user(b, NOBODY, NULL, "org.example.Held");
                        if (r == BOTH(0, -EPERM))
                                g_usleep(10000);
                }
                g_assert_cmpint(r, ==, BOTH(0, 0));
        }
        /* unprivileged peers cannot hold */
        {
                int p[2], status, r = 1;
                pid_t pid;

                g_assert_cmpint(pipe(p), ==, 0);
                pid = fork();
                g_assert_cmpint(pid, >=, 0);
                if (pid == 0) {
                        KdbusConn *c = NULL;

                        if (setgroups(0, NULL) || setresgid(NOBODY, NOBODY, NOBODY) ||
                            setresuid(NOBODY, NOBODY, NOBODY))
                                _exit(2);
                        r = holder_hello(b, "org.example.Mine", world_talk, 1, &c);
                        _exit(write(p[1], &r, sizeof(r)) == sizeof(r) ? 0 : 3);
                }
                (void) close(p[1]);
                g_assert_cmpint(read(p[0], &r, sizeof(r)), ==, sizeof(r));
                (void) close(p[0]);
                g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
                g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
                g_assert_cmpint(r, ==, -EPERM);
        }
        kdbus_conn_close(owner);
}

/* policy-priv: an unprivileged peer under the holders' entries */
static void test_policy_priv(KBus *b, gconstpointer ctx) {
        const Access own_nobody[] = { { KDBUS_POLICY_ACCESS_USER, NOBODY, KDBUS_POLICY_OWN } };
        const Access talk_other[] = { { KDBUS_POLICY_ACCESS_USER, OTHER_UID,
                                        KDBUS_POLICY_OWN },
                                      { KDBUS_POLICY_ACCESS_WORLD, 0, KDBUS_POLICY_SEE } };
        KdbusConn *h1 = NULL, *h2 = NULL, *root = kpeer(b, 0);

        open_dir(b);
        g_assert_cmpint(holder_hello(b, "org.example.Own", own_nobody, 1, &h1), ==, 0);
        g_assert_cmpint(holder_hello(b, "org.example.priv.*", talk_other, 2, &h2), ==, 0);
        /* OWN granted to nobody; SEE is not OWN; a name no holder covers: the XML policy */
        g_assert_cmpint(as_user(b, NOBODY, "org.example.Own", NULL), ==, BOTH(0, 0));
        g_assert_cmpint(as_user(b, NOBODY, "org.example.priv.Name", NULL), ==, BOTH(-EPERM, 0));
        g_assert_cmpint(as_user(b, NOBODY, "org.example.Free", NULL), ==, BOTH(0, 0));
        /* privileged peers own and talk regardless */
        g_assert_cmpint(kdbus_conn_name_acquire(root, "org.example.priv.Name", 0, NULL), ==, 0);
        {
                KdbusConn *root2 = kpeer(b, 0);

                g_assert_cmpint(kcall(root2, 0, "org.example.priv.Name", 4, true, "Ping", NULL,
                                      0, NULL), ==, 0);
                kdbus_conn_close(root2);
        }
        /* TALK: nobody has SEE only (the wildcard entry) */
        g_assert_cmpint(as_user(b, NOBODY, NULL, "org.example.priv.Name"), ==, BOTH(0, -EPERM));
        /* OWN implies TALK: after UPDATE granting nobody OWN on the prefix */
        {
                const Access own_all[] = { { KDBUS_POLICY_ACCESS_USER, NOBODY,
                                             KDBUS_POLICY_OWN } };

                g_assert_cmpint(holder_update(h2, "org.example.priv.*", own_all, 1), ==, 0);
                g_assert_cmpint(as_user(b, NOBODY, NULL, "org.example.priv.Name"), ==,
                                BOTH(0, 0));
                /* one element only: org.example.priv.a.b is not covered (XML policy) */
                g_assert_cmpint(holder_update(h2, "org.example.priv.*", talk_other, 2), ==, 0);
                g_assert_cmpint(as_user(b, NOBODY, "org.example.priv.Other", NULL), ==,
                                BOTH(-EPERM, 0));
                g_assert_cmpint(as_user(b, NOBODY, "org.example.priv.a.b", NULL), ==,
                                BOTH(0, 0));
        }
        kdbus_conn_close(h1);
        kdbus_conn_close(h2);
        kdbus_conn_close(root);
}

/* One write(2) to a /proc map file of @pid. */
static void write_map(pid_t pid, const char *which, const char *text) {
        g_autofree char *path = g_strdup_printf("/proc/%d/%s", (int)pid, which);
        int fd = open(path, O_WRONLY | O_CLOEXEC);

        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(write(fd, text, strlen(text)), ==, (ssize_t)strlen(text));
        (void) close(fd);
}

/*
 * kdbus's policy-ns case: a child that drops to @uid and unshares its user namespace, in
 * which (if @map) this test maps 0 to @uid: uid 0 inside, @uid to the bus. Then as
 * as_user(): NAME_ACQUIRE @acquire, call @call. Return: as as_user(), or 1 if the machine
 * forbids the namespace.
 */
static int as_userns_root(KBus *b, uid_t uid, bool map, const char *acquire, const char *call) {
        int p[2], go[2], status, res[3] = { -9999, -9999, -1 };
        g_autofree char *text = g_strdup_printf("0 %u 1\n", (unsigned)uid);
        char x;
        pid_t pid;

        g_assert_cmpint(pipe(p), ==, 0);
        g_assert_cmpint(pipe(go), ==, 0);
        pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0) {
                KdbusConn *c = NULL;
                int out[3] = { 0, 0, 0 };

                (void) close(p[0]);
                (void) close(go[1]);
                if (setgroups(0, NULL) || setresgid(uid, uid, uid) || setresuid(uid, uid, uid))
                        _exit(2);
                /* dropping privileges cleared "dumpable": the test could not write our
                 * maps (kdbus's test sets it again the same way) */
                if (prctl(PR_SET_DUMPABLE, 1) < 0)
                        _exit(2);
                if (unshare(CLONE_NEWUSER) < 0) {
                        out[2] = 1;
                        _exit(write(p[1], out, sizeof(out)) == sizeof(out) ? 0 : 3);
                }
                out[2] = 0;
                if (write(p[1], out, sizeof(out)) != sizeof(out) || read(go[0], &x, 1) != 1)
                        _exit(3);
                out[2] = (int)getuid();         /* 0 if mapped, the overflow uid if not */
                if (kdbus_conn_open(b->native, &c) || kdbus_conn_hello(c, 0, KPOOL))
                        _exit(4);
                if (acquire)
                        out[0] = kdbus_conn_name_acquire(c, acquire, 0, NULL);
                if (call)
                        out[1] = kcall(c, 0, call, 1, true, "Ping", NULL, 0, NULL);
                _exit(write(p[1], out, sizeof(out)) == sizeof(out) ? 0 : 3);
        }
        (void) close(p[1]);
        (void) close(go[0]);
        g_assert_cmpint(read(p[0], res, sizeof(res)), ==, sizeof(res));
        if (res[2] == 0) {
                if (map) {
                        write_map(pid, "uid_map", text);
                        write_map(pid, "gid_map", text);
                }
                g_assert_cmpint(write(go[1], "g", 1), ==, 1);
                g_assert_cmpint(read(p[0], res, sizeof(res)), ==, sizeof(res));
                g_assert_cmpint(res[2], ==, map ? 0 : 65534);
        }
        (void) close(p[0]);
        (void) close(go[1]);
        g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
        g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        return res[2] == 1 ? 1 : res[0] * 1000 + res[1];
}

/* Messages in @c's pool that are not the bus's (each freed). */
static unsigned count_peer_msgs(KdbusConn *c) {
        const struct kdbus_msg *m;
        unsigned n = 0;

        while (kdbus_conn_recv(c, 0, 0, &m, NULL) == 0) {
                n += m->src_id != KDBUS_SRC_ID_KERNEL;
                g_assert_cmpint(kdbus_conn_free(c, kdbus_conn_offset(c, m)), ==, 0);
        }
        return n;
}

/*
 * HELLO as a policy holder of @name, with one TALK entry of @type for @entry, from a
 * process in a user namespace of its own that maps 0 to 0 (the bus sees uid 0:
 * privileged) and @inner to @outer (uids and gids). Return: HELLO's result (1: the
 * machine forbids the namespace); the holder lives until userns_holder_end(*ret_hold,
 * *ret_pid).
 */
static int userns_holder(KBus *b, const char *name, uint64_t type, uint32_t entry,
                         uint32_t inner, uint32_t outer, int *ret_hold, pid_t *ret_pid) {
        int p[2], go[2], r = -9999;
        g_autofree char *text = g_strdup_printf("0 0 1\n%u %u 1\n", inner, outer);
        char x;
        pid_t pid;

        g_assert_cmpint(pipe(p), ==, 0);
        g_assert_cmpint(pipe(go), ==, 0);
        pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0) {
                const Access acc[] = { { type, entry, KDBUS_POLICY_TALK } };
                KdbusConn *c = NULL;

                (void) close(p[0]);
                (void) close(go[1]);
                r = unshare(CLONE_NEWUSER) < 0 ? 1 : 0;
                if (write(p[1], &r, sizeof(r)) != sizeof(r) || r || read(go[0], &x, 1) != 1)
                        _exit(r == 1 ? 0 : 2);
                r = holder_hello(b, name, acc, 1, &c);
                if (write(p[1], &r, sizeof(r)) != sizeof(r))
                        _exit(3);
                (void) read(go[0], &x, 1);      /* hold it until the test closes go[1] */
                _exit(0);
        }
        (void) close(p[1]);
        (void) close(go[0]);
        g_assert_cmpint(read(p[0], &r, sizeof(r)), ==, sizeof(r));
        if (r == 0) {
                write_map(pid, "uid_map", text);
                write_map(pid, "gid_map", text);
                g_assert_cmpint(write(go[1], "g", 1), ==, 1);
                g_assert_cmpint(read(p[0], &r, sizeof(r)), ==, sizeof(r));
        }
        (void) close(p[0]);
        *ret_hold = go[1];
        *ret_pid = pid;
        return r;
}

static void userns_holder_end(int hold, pid_t pid) {
        int status;

        (void) close(hold);
        g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
        g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/*
 * policy-ns: kdbus's name policy across user namespaces. As kdbus's test: a holder gives
 * OWN to uid 0 and TALK to the world; a process that is uid 0 only inside a user namespace
 * of its own (mapped from nobody, kdbus's "0 65534 1", or not mapped at all) is nobody to
 * the bus: it may talk while the world may, not own, and once TALK is uid 0's alone its
 * call fails EPERM and the owner gets nothing. Ours on top: a holder in a user namespace
 * names ids of that namespace, which the bus takes through its uid_map / gid_map (kdbus:
 * make_kuid(current_user_ns())); an id it does not map: EINVAL.
 */
static void test_policy_ns(KBus *b, gconstpointer ctx) {
        const Access own_root_talk_world[] = { { KDBUS_POLICY_ACCESS_USER, 0, KDBUS_POLICY_OWN },
                                               { KDBUS_POLICY_ACCESS_WORLD, 0,
                                                 KDBUS_POLICY_TALK } };
        const Access talk_root[] = { { KDBUS_POLICY_ACCESS_USER, 0, KDBUS_POLICY_TALK } };
        const char *name = "foo.test.policy-ns";
        KdbusConn *h = NULL, *h2 = NULL, *owner = kpeer(b, 0);
        pid_t upid;
        int r;

        open_dir(b);
        g_assert_cmpint(holder_hello(b, name, own_root_talk_world, 2, &h), ==, 0);
        /* kdbus's kdbus_policy_set() made an entry of an activator's NAME (with or without
         * access items): an activator for the held name is EEXIST, though it (root) may
         * own the name; one for a name under the holder's wildcard is not */
        {
                const char *wild = "foo.test.policy-ns-wild.*";
                KdbusConn *act = NULL;

                g_assert_cmpint(special_hello(b, KDBUS_HELLO_ACTIVATOR, name, NULL, 0, &act),
                                ==, -EEXIST);
                act = kdbus_conn_close(act);
                g_assert_cmpint(special_hello(b, KDBUS_HELLO_ACTIVATOR, name, talk_root, 1,
                                              &act), ==, -EEXIST);
                act = kdbus_conn_close(act);
                g_assert_cmpint(holder_hello(b, wild, NULL, 0, &h2), ==, 0);
                g_assert_cmpint(special_hello(b, KDBUS_HELLO_ACTIVATOR,
                                              "foo.test.policy-ns-wild.a", NULL, 0, &act), ==, 0);
                /* the other way: a holder for the exact name an activator holds */
                g_assert_cmpint(holder_update(h2, "foo.test.policy-ns-wild.a", NULL, 0), ==,
                                -EEXIST);
                act = kdbus_conn_close(act);
                h2 = kdbus_conn_close(h2);
        }
        g_assert_cmpint(kdbus_conn_name_acquire(owner, name, 0, NULL), ==, 0);
        (void) count_peer_msgs(owner);
        r = as_userns_root(b, NOBODY, true, name, name);
        if (r == 1) {
                g_test_skip("unshare(CLONE_NEWUSER) refused for uid nobody here");
                goto out;
        }
        /* root inside, nobody to the bus: TALK (world) yes, OWN (uid 0's) no */
        g_assert_cmpint(r, ==, BOTH(-EPERM, 0));
        g_assert_cmpuint(count_peer_msgs(owner), ==, 1);
        g_assert_cmpint(as_userns_root(b, NOBODY, false, name, name), ==, BOTH(-EPERM, 0));
        g_assert_cmpuint(count_peer_msgs(owner), ==, 1);
        /* TALK for uid 0 only: the namespace's root is refused, the owner hears nothing */
        g_assert_cmpint(holder_update(h, name, talk_root, 1), ==, 0);
        g_assert_cmpint(as_userns_root(b, NOBODY, true, NULL, name), ==, BOTH(0, -EPERM));
        g_assert_cmpint(as_userns_root(b, NOBODY, false, NULL, name), ==, BOTH(0, -EPERM));
        g_assert_cmpuint(count_peer_msgs(owner), ==, 0);
        h = kdbus_conn_close(h);

        /* a holder in a user namespace mapping its 1000 to the bus's OTHER_UID: TALK for
         * its USER 1000 is the bus's OTHER_UID, not the bus's 1000 */
        {
                const char *held = "foo.test.policy-ns-holder";
                unsigned i;
                int hold;

                g_assert_cmpint(kdbus_conn_name_acquire(owner, held, 0, NULL), ==, 0);
                r = userns_holder(b, held, KDBUS_POLICY_ACCESS_USER, 1000, 1000, OTHER_UID,
                                  &hold, &upid);
                if (r == 1) {
                        userns_holder_end(hold, upid);
                        g_test_skip("unshare(CLONE_NEWUSER) refused here");
                        goto out;
                }
                g_assert_cmpint(r, ==, 0);
                (void) count_peer_msgs(owner);
                g_assert_cmpint(as_user(b, OTHER_UID, NULL, held), ==, BOTH(0, 0));
                g_assert_cmpint(as_user(b, 1000, NULL, held), ==, BOTH(0, -EPERM));
                g_assert_cmpuint(count_peer_msgs(owner), ==, 1);
                userns_holder_end(hold, upid);
                /* its entries went with it (bounded wait for the bus to see the close) */
                for (i = 0; i < 200 && as_user(b, 1000, NULL, held) != BOTH(0, 0); ++i)
                        g_usleep(10000);
                g_assert_cmpuint(i, <, 200);
                /* an id its namespace does not map: EINVAL, as kdbus's make_kuid(); a
                 * group id goes through its gid_map alike */
                r = userns_holder(b, held, KDBUS_POLICY_ACCESS_USER, 4242, 1000, OTHER_UID,
                                  &hold, &upid);
                g_assert_cmpint(r, ==, -EINVAL);
                userns_holder_end(hold, upid);
                r = userns_holder(b, held, KDBUS_POLICY_ACCESS_GROUP, 4242, 1000, OTHER_UID,
                                  &hold, &upid);
                g_assert_cmpint(r, ==, -EINVAL);
                userns_holder_end(hold, upid);
                r = userns_holder(b, held, KDBUS_POLICY_ACCESS_GROUP, 1000, 1000, OTHER_UID,
                                  &hold, &upid);
                g_assert_cmpint(r, ==, 0);
                g_assert_cmpint(as_user(b, OTHER_UID, NULL, held), ==, BOTH(0, 0));
                g_assert_cmpint(as_user(b, 1000, NULL, held), ==, BOTH(0, -EPERM));
                userns_holder_end(hold, upid);
        }
out:
        kdbus_conn_close(h);
        kdbus_conn_close(owner);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        signal(SIGPIPE, SIG_IGN);
#define ADD(path, fn) g_test_add("/selftests/" path, KBus, kbus_open_conf, kbus_setup, fn, \
                                 kbus_teardown)
        ADD("policy", test_policy);
        ADD("policy-priv", test_policy_priv);
        ADD("policy-ns", test_policy_ns);
        return g_test_run();
}
