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
#include <grp.h>
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

/* HELLO as a policy holder of @name. Return: HELLO's result; *ret the handle (close it). */
static int holder_hello(KBus *b, const char *name, const Access *acc, unsigned n,
                        KdbusConn **ret) {
        uint8_t buf[1024] __attribute__((aligned(8))) = { 0 };
        struct kdbus_cmd_hello *hello = (void *)buf;
        KdbusConn *c = kopen(b);
        size_t end = put_policy(buf, sizeof(*hello), name, acc, n);
        int r;

        hello->size = end;
        hello->flags = KDBUS_HELLO_POLICY_HOLDER;
        hello->pool_size = KPOOL;
        *ret = c;
        r = kdbus_conn_command(c, KDBUS_CMD_HELLO, buf, sizeof(buf), NULL, 0);
        c->id = hello->id;      /* libkdbus's kdbus_conn_hello() sets it; raw HELLO here */
        return r;
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

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        signal(SIGPIPE, SIG_IGN);
#define ADD(path, fn) g_test_add("/selftests/" path, KBus, kbus_open_conf, kbus_setup, fn, \
                                 kbus_teardown)
        ADD("policy", test_policy);
        ADD("policy-priv", test_policy_priv);
        return g_test_run();
}
