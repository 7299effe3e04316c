/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A native (kdbus ABI) peer for the interop tests, driven line by line (interop.py): it
 * connects to kdbusd's native socket through libkdbus and says HELLO, prints
 * "ready :1.<id>", then reads commands from stdin and answers each with one "= ..." line;
 * whatever the bus delivers is printed as an event line as soon as it is there.
 *
 * usage: native-peer SOCKET [--uid UID] [--activator NAME]
 *        (--uid: drop to that uid/gid before connecting; --activator: HELLO as the
 *        activator of NAME, which receives nothing itself so that what waits in its pool
 *        moves to the service that takes the name; its commands answer as the bus does)
 *
 * Commands (tokens separated by single spaces; string arguments have no spaces):
 *   acquire NAME [queue] [allow] [replace]   NAME_ACQUIRE      = ok FLAGS | = err ERRNO
 *   release NAME                             NAME_RELEASE      = ok | = err ERRNO
 *   call DEST MEMBER [ARG]                   SEND, SYNC_REPLY  = return ARGS | = error NAME ARGS
 *                                                              | = err ERRNO
 *   signal MEMBER [ARG...]                   broadcast org.example.Test.MEMBER on /org/example
 *   match-all COOKIE | match-id COOKIE ID | match-name COOKIE NAME
 *   match-bloom COOKIE KEY=VALUE...          (KEY: member, interface, arg0 ... as bridge/bloom.c)
 *   match-notify COOKIE name-add|name-remove|name-change|id-add|id-remove
 *   echo on|off                              answer method calls with "native:" + arg0
 *   peek                                     RECV PEEK: = msg MEMBER ARGS | = err ERRNO
 *   info NAME                                CONN_INFO of a unique name (":1.<id>", as a
 *                                            kdbus program forms it) or a well-known one:
 *                                            = info :1.<ID> PID (PID "-" without a PIDS
 *                                            item) | = err ERRNO
 *   bloom-fp KEY VALUE N                     = fp S1 .. SN: strings whose bloom entries
 *                                            "arg1:S1" .. "argN:SN" set every bit of
 *                                            "KEY:VALUE" (a false positive to order)
 *   quit
 * Events:
 *   call SENDER MEMBER ARGS / served SENDER MEMBER ARGS (echo on) / signal SENDER IFACE.MEMBER
 *   ARGS / driver MEMBER ARGS / notify NAME_ADD|NAME_REMOVE|NAME_CHANGE NAME OLD NEW /
 *   notify ID_ADD|ID_REMOVE ID
 */
#include <errno.h>
#include <grp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "libkdbus/libkdbus.h"
#include "wire/message.h"
#include "wire/protocol.h"
#include "wire/writer.h"

#define POOL (1024u * 1024u)
#define MAX_TOKENS 16

static KdbusConn *conn;
static uint32_t next_serial = 1;
static bool echo;
static bool activator;

static const char *errname(int r) {
        const char *n = strerrorname_np(r < 0 ? -r : r);

        return n ? n : "E?";
}

/* A dbus1 message with string arguments @args (@n of them). */
static uint8_t *build(uint8_t type, uint32_t reply_serial, const char *dest, const char *member,
                      char **args, unsigned n, size_t *ret_size) {
        WireMsgSpec spec = { .type = type, .serial = next_serial++, .reply_serial = reply_serial,
                             .destination = dest };
        WireWriter w;
        uint8_t *data = NULL;
        unsigned i;

        if (type == WIRE_MSG_METHOD_CALL || type == WIRE_MSG_SIGNAL) {
                spec.path = "/org/example";
                spec.interface = "org.example.Test";
                spec.member = member;
        }
        wire_writer_init(&w);
        for (i = 0; i < n; ++i)
                if (wire_writer_append_basic(&w, 's', args[i]))
                        break;
        if (wire_message_build(&spec, &w, &data, ret_size))
                data = NULL;
        wire_writer_deinit(&w);
        return data;
}

static int send_msg(uint64_t dst_id, const char *dst_name, uint64_t send_flags,
                    const uint8_t *data, size_t size, struct kdbus_msg_info *reply) {
        KdbusSend s = { .dst_id = dst_id, .dst_name = dst_name, .send_flags = send_flags,
                        .memfd = -1 };
        struct timespec now;
        int r;

        /* kdbus: a call's timeout is an absolute CLOCK_MONOTONIC deadline; 10 s from now */
        (void) clock_gettime(CLOCK_MONOTONIC, &now);
        s.timeout_ns = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec +
                       10000000000ull;
        r = kdbus_send_from_dbus1(&s, data, size);

        return r ? r : kdbus_conn_send(conn, &s, data, size, reply);
}

/* " arg0 arg1 ..." of a parsed message */
static void print_args(const uint8_t *data, const WireHeader *h) {
        WireArgs a;
        unsigned i;

        if (wire_message_get_args(data, h, &a))
                return;
        for (i = 0; i < a.n_args; ++i)
                if (a.type[i] == 's' || a.type[i] == 'o')
                        printf(" %s", a.str[i]);
}

static void print_notify(const struct kdbus_msg *m) {
        const struct kdbus_item *item = m->items;

        switch (item->type) {
        case KDBUS_ITEM_NAME_ADD:
        case KDBUS_ITEM_NAME_REMOVE:
        case KDBUS_ITEM_NAME_CHANGE:
                printf("notify %s %s %llu %llu\n",
                       item->type == KDBUS_ITEM_NAME_ADD ? "NAME_ADD" :
                       item->type == KDBUS_ITEM_NAME_REMOVE ? "NAME_REMOVE" : "NAME_CHANGE",
                       item->name_change.name, (unsigned long long)item->name_change.old_id.id,
                       (unsigned long long)item->name_change.new_id.id);
                break;
        case KDBUS_ITEM_ID_ADD:
        case KDBUS_ITEM_ID_REMOVE:
                printf("notify %s %llu\n", item->type == KDBUS_ITEM_ID_ADD ? "ID_ADD" : "ID_REMOVE",
                       (unsigned long long)item->id_change.id);
                break;
        default:
                printf("notify type %llu\n", (unsigned long long)item->type);
        }
}

/* Answer an echoed call: "native:" + its first argument. */
static void answer(const struct kdbus_msg *m, const uint8_t *data, const WireHeader *h) {
        WireArgs a = { 0 };
        char *arg, *args[1];
        uint8_t *reply;
        size_t size;
        int r;

        (void) wire_message_get_args(data, h, &a);
        if (asprintf(&arg, "native:%s", a.n_args && a.type[0] == 's' ? a.str[0] : "") < 0)
                exit(1);
        args[0] = arg;
        reply = build(WIRE_MSG_METHOD_RETURN, h->serial, h->sender, NULL, args, 1, &size);
        r = reply ? send_msg(m->src_id, NULL, 0, reply, size, NULL) : -ENOMEM;
        if (r)
                printf("answer-failed %s\n", errname(r));
        free(reply);
        free(arg);
}

/* Print (and answer) everything queued now. */
static void drain(void) {
        if (activator)
                return;         /* its messages wait in its pool for the service */
        for (;;) {
                const struct kdbus_msg *m;
                const uint8_t *data;
                WireHeader h;
                size_t size;
                int r = kdbus_conn_recv(conn, 0, 0, &m, NULL);

                if (r == -EAGAIN)
                        break;
                if (r) {
                        printf("recv-failed %s\n", errname(r));
                        exit(1);
                }
                if (m->payload_type == KDBUS_PAYLOAD_KERNEL) {
                        print_notify(m);
                } else if (kdbus_msg_payload(m, &data, &size) ||
                           wire_message_parse(data, size, conn->n_recv_fds, 0, &h)) {
                        printf("bad-message\n");
                } else if (m->src_id == KDBUS_SRC_ID_KERNEL) {
                        printf("driver %s", h.member ? h.member : "?");
                        print_args(data, &h);
                        printf("\n");
                } else if (h.type == WIRE_MSG_METHOD_CALL) {
                        printf("%s %s %s", echo ? "served" : "call", h.sender, h.member);
                        print_args(data, &h);
                        printf("\n");
                        if (echo && (m->flags & KDBUS_MSG_EXPECT_REPLY))
                                answer(m, data, &h);
                } else if (h.type == WIRE_MSG_SIGNAL) {
                        printf("signal %s %s.%s", h.sender, h.interface, h.member);
                        print_args(data, &h);
                        printf("\n");
                } else {
                        printf("message type %u from %s\n", h.type, h.sender);
                }
                (void) kdbus_conn_free(conn, kdbus_conn_offset(conn, m));
        }
}

static void cmd_call(char **t, unsigned n) {
        struct kdbus_msg_info info = { 0 };
        const struct kdbus_msg *m;
        const uint8_t *data;
        uint8_t *call;
        WireHeader h;
        size_t size;
        int r;

        call = build(WIRE_MSG_METHOD_CALL, 0, t[1], t[2], t + 3, n - 3, &size);
        if (!call) {
                printf("= err EINVAL\n");
                return;
        }
        r = send_msg(t[1][0] == ':' ? strtoull(t[1] + 3, NULL, 10) : KDBUS_DST_ID_NAME,
                     t[1][0] == ':' ? NULL : t[1], KDBUS_SEND_SYNC_REPLY, call, size, &info);
        free(call);
        if (r) {
                printf("= err %s\n", errname(r));
                return;
        }
        m = (const void *)(conn->pool + info.offset);
        if (kdbus_msg_payload(m, &data, &size) || wire_message_parse(data, size, 0, 0, &h)) {
                printf("= bad-reply\n");
        } else {
                if (h.type == WIRE_MSG_ERROR)
                        printf("= error %s", h.error_name);
                else
                        printf("= return");
                print_args(data, &h);
                printf("\n");
        }
        (void) kdbus_conn_free(conn, info.offset);
}

/* CONN_INFO: who @name is, as a native program asks (by id for a unique name). */
static void cmd_info(const char *name) {
        union {
                struct kdbus_cmd_info cmd;
                uint8_t buf[sizeof(struct kdbus_cmd_info) + KDBUS_ITEM_SIZE(256)];
        } u = { 0 };
        const struct kdbus_info *info;
        const struct kdbus_item *item;
        const char *pid = "-";
        char pid_buf[24];
        size_t len = strlen(name) + 1;
        int r;

        u.cmd.size = sizeof(u.cmd);
        u.cmd.attach_flags = KDBUS_ATTACH_PIDS;
        if (name[0] == ':') {
                u.cmd.id = strtoull(name + 3, NULL, 10);
        } else if (len <= 256) {
                u.cmd.items[0].size = KDBUS_ITEM_HEADER_SIZE + len;
                u.cmd.items[0].type = KDBUS_ITEM_NAME;
                memcpy(u.cmd.items[0].str, name, len);
                u.cmd.size += KDBUS_ITEM_SIZE(len);
        }
        r = kdbus_conn_command(conn, KDBUS_CMD_CONN_INFO, &u.cmd, sizeof(u), NULL, 0);
        if (r) {
                printf("= err %s\n", errname(r));
                return;
        }
        info = (const void *)(conn->pool + u.cmd.offset);
        for (item = info->items; (const uint8_t *)item < (const uint8_t *)info + info->size;
             item = KDBUS_ITEM_NEXT(item))
                if (item->type == KDBUS_ITEM_PIDS) {
                        (void) snprintf(pid_buf, sizeof(pid_buf), "%llu",
                                        (unsigned long long)item->pids.pid);
                        pid = pid_buf;
                }
        printf("= info :1.%llu %s\n", (unsigned long long)info->id, pid);
        (void) kdbus_conn_free(conn, u.cmd.offset);
}

static void cmd_match(char **t, unsigned n) {
        uint64_t cookie = strtoull(t[1], NULL, 10);
        int r = -EINVAL;

        if (!strcmp(t[0], "match-all") && n == 2) {
                r = kdbus_conn_match_add(conn, cookie, 0, NULL, KDBUS_MATCH_ID_ANY);
        } else if (!strcmp(t[0], "match-id") && n == 3) {
                r = kdbus_conn_match_add(conn, cookie, 0, NULL, strtoull(t[2], NULL, 10));
        } else if (!strcmp(t[0], "match-bloom") && n >= 3) {
                uint64_t mask[64] = { 0 };
                unsigned i;

                for (i = 2; i < n; ++i) {
                        char *eq = strchr(t[i], '=');

                        if (!eq || conn->bloom_size > sizeof(mask))
                                break;
                        *eq = '\0';
                        kdbus_bloom_add(mask, conn->bloom_size, conn->bloom_n_hash, t[i], eq + 1);
                }
                if (i == n)
                        r = kdbus_conn_match_add(conn, cookie, 0, mask, KDBUS_MATCH_ID_ANY);
        } else if ((!strcmp(t[0], "match-name") || !strcmp(t[0], "match-notify")) && n == 3) {
                uint8_t buf[512] __attribute__((aligned(8))) = { 0 };
                struct kdbus_cmd_match *cmd = (void *)buf;
                struct kdbus_item *item = cmd->items;

                cmd->cookie = cookie;
                if (!strcmp(t[0], "match-name")) {
                        item->size = KDBUS_ITEM_HEADER_SIZE + strlen(t[2]) + 1;
                        item->type = KDBUS_ITEM_NAME;
                        strcpy(item->str, t[2]);
                } else if (!strncmp(t[2], "id-", 3)) {
                        item->size = KDBUS_ITEM_HEADER_SIZE + sizeof(struct kdbus_notify_id_change);
                        item->type = !strcmp(t[2], "id-add") ? KDBUS_ITEM_ID_ADD :
                                                               KDBUS_ITEM_ID_REMOVE;
                        item->id_change.id = KDBUS_MATCH_ID_ANY;
                } else {
                        item->size = KDBUS_ITEM_HEADER_SIZE +
                                     sizeof(struct kdbus_notify_name_change);
                        item->type = !strcmp(t[2], "name-add") ? KDBUS_ITEM_NAME_ADD :
                                     !strcmp(t[2], "name-remove") ? KDBUS_ITEM_NAME_REMOVE :
                                                                    KDBUS_ITEM_NAME_CHANGE;
                        item->name_change.old_id.id = KDBUS_MATCH_ID_ANY;
                        item->name_change.new_id.id = KDBUS_MATCH_ID_ANY;
                }
                cmd->size = sizeof(*cmd) + KDBUS_ALIGN8(item->size);
                r = kdbus_conn_command(conn, KDBUS_CMD_MATCH_ADD, cmd, sizeof(buf), NULL, 0);
        }
        if (r)
                printf("= err %s\n", errname(r));
        else
                printf("= ok\n");
}

/* A deterministic search (the same strings every run) for a bloom false positive. */
static void cmd_bloom_fp(char **t) {
        uint64_t want[64] = { 0 }, have[64];
        unsigned n = (unsigned)strtoul(t[3], NULL, 10), words = conn->bloom_size / 8, i, w;
        unsigned long tries;
        char vals[64][32];

        if (n < 1 || n > 63 || conn->bloom_size > sizeof(want)) {
                printf("= err EINVAL\n");
                return;
        }
        kdbus_bloom_add(want, conn->bloom_size, conn->bloom_n_hash, t[1], t[2]);
        for (tries = 0; tries < 10000000ul; ++tries) {
                memset(have, 0, sizeof(have));
                for (i = 1; i <= n; ++i) {
                        char key[16];

                        (void) snprintf(vals[i], sizeof(vals[i]), "fp%lu-%u", tries, i);
                        (void) snprintf(key, sizeof(key), "arg%u", i);
                        kdbus_bloom_add(have, conn->bloom_size, conn->bloom_n_hash, key, vals[i]);
                }
                for (w = 0; w < words && !(want[w] & ~have[w]); ++w)
                        ;
                if (w == words) {
                        printf("= fp");
                        for (i = 1; i <= n; ++i)
                                printf(" %s", vals[i]);
                        printf("\n");
                        return;
                }
        }
        printf("= err ENOENT\n");
}

static void command(char *line) {
        char *t[MAX_TOKENS], *save = NULL, *tok;
        unsigned n = 0;
        int r;

        for (tok = strtok_r(line, " \n", &save); tok && n < MAX_TOKENS;
             tok = strtok_r(NULL, " \n", &save))
                t[n++] = tok;
        if (!n)
                return;
        if (!strcmp(t[0], "acquire") && n >= 2) {
                uint64_t flags = 0, rf = 0;
                unsigned i;

                for (i = 2; i < n; ++i)
                        flags |= !strcmp(t[i], "queue") ? KDBUS_NAME_QUEUE :
                                 !strcmp(t[i], "allow") ? KDBUS_NAME_ALLOW_REPLACEMENT :
                                 !strcmp(t[i], "replace") ? KDBUS_NAME_REPLACE_EXISTING : 0;
                r = kdbus_conn_name_acquire(conn, t[1], flags, &rf);
                if (r)
                        printf("= err %s\n", errname(r));
                else
                        printf("= ok %llx\n", (unsigned long long)rf);
        } else if (!strcmp(t[0], "peek") && n == 1) {
                const struct kdbus_msg *m;
                const uint8_t *data;
                WireHeader h;
                size_t size;

                /* the first waiting message, left in place (an activator's) */
                r = kdbus_conn_recv(conn, KDBUS_RECV_PEEK, 0, &m, NULL);
                if (r) {
                        printf("= err %s\n", errname(r));
                } else if (kdbus_msg_payload(m, &data, &size) ||
                           wire_message_parse(data, size, 0, 0, &h)) {
                        printf("= bad-message\n");
                } else {
                        printf("= msg %s", h.member ? h.member : "?");
                        print_args(data, &h);
                        printf("\n");
                }
        } else if (!strcmp(t[0], "release") && n == 2) {
                r = kdbus_conn_name_release(conn, t[1]);
                if (r)
                        printf("= err %s\n", errname(r));
                else
                        printf("= ok\n");
        } else if (!strcmp(t[0], "call") && n >= 3) {
                cmd_call(t, n);
        } else if (!strcmp(t[0], "signal") && n >= 2) {
                size_t size;
                uint8_t *sig = build(WIRE_MSG_SIGNAL, 0, NULL, t[1], t + 2, n - 2, &size);

                r = sig ? send_msg(KDBUS_DST_ID_BROADCAST, NULL, 0, sig, size, NULL) : -EINVAL;
                free(sig);
                if (r)
                        printf("= err %s\n", errname(r));
                else
                        printf("= ok\n");
        } else if (!strncmp(t[0], "match-", 6) && n >= 2) {
                cmd_match(t, n);
        } else if (!strcmp(t[0], "info") && n == 2) {
                cmd_info(t[1]);
        } else if (!strcmp(t[0], "bloom-fp") && n == 4) {
                cmd_bloom_fp(t);
        } else if (!strcmp(t[0], "echo") && n == 2) {
                echo = !strcmp(t[1], "on");
                printf("= ok\n");
        } else if (!strcmp(t[0], "quit")) {
                exit(0);
        } else {
                printf("= unknown-command %s\n", t[0]);
        }
}

int main(int argc, char **argv) {
        const char *uid_arg = NULL, *activator_name = NULL;
        char buf[4096];
        size_t have = 0;
        int i, r;

        setvbuf(stdout, NULL, _IOLBF, 0);
        for (i = 2; i + 1 < argc; i += 2) {
                if (!strcmp(argv[i], "--uid"))
                        uid_arg = argv[i + 1];
                else if (!strcmp(argv[i], "--activator"))
                        activator_name = argv[i + 1];
                else
                        break;
        }
        if (argc < 2 || i != argc) {
                fprintf(stderr, "usage: %s SOCKET [--uid UID] [--activator NAME]\n", argv[0]);
                return 2;
        }
        if (uid_arg) {
                uid_t uid = (uid_t)strtoul(uid_arg, NULL, 10);

                if (setgroups(0, NULL) || setresgid(uid, uid, uid) || setresuid(uid, uid, uid)) {
                        fprintf(stderr, "native-peer: cannot become uid %u: %m\n", uid);
                        return 1;
                }
        }
        activator = activator_name != NULL;
        r = kdbus_conn_open(argv[1], &conn);
        if (!r)
                r = kdbus_conn_hello_name(conn, activator ? KDBUS_HELLO_ACTIVATOR :
                                                            KDBUS_HELLO_ACCEPT_FD,
                                          POOL, activator_name);
        if (r) {
                fprintf(stderr, "native-peer: %s: connect/HELLO failed: %s\n", argv[1],
                        strerror(-r));
                return 1;
        }
        printf("ready :1.%llu\n", (unsigned long long)conn->id);
        for (;;) {
                struct pollfd p[2] = { { .fd = 0, .events = POLLIN },
                                       { .fd = conn->wake_fd, .events = POLLIN } };

                drain();
                if (poll(p, 2, -1) < 0 && errno != EINTR)
                        return 1;
                if (p[1].revents)
                        (void) kdbus_conn_wait(conn, 0);        /* reset the eventfd */
                if (p[0].revents) {
                        ssize_t k = read(0, buf + have, sizeof(buf) - 1 - have);
                        char *nl;

                        if (k <= 0)
                                return 0;       /* stdin closed: done */
                        have += (size_t)k;
                        buf[have] = '\0';
                        /* every complete line, in order (the next may be half read) */
                        while ((nl = strchr(buf, '\n'))) {
                                *nl = '\0';
                                command(buf);
                                drain();
                                have -= (size_t)(nl + 1 - buf);
                                memmove(buf, nl + 1, have + 1);
                        }
                        if (have == sizeof(buf) - 1)
                                return 1;       /* a line too long */
                }
        }
}
