/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Opaque payloads on the core: kdbus carried a message's payload as bytes it never looked
 * at (kdbus_msg.payload_type says what they are), and kdbus's own selftests send strings,
 * memfds with text and messages without any payload. Between native peers such a message
 * arrives as kdbus's kdbus_staging_emit() wrote it: the sender's fields and items in its
 * order (PAYLOAD_VEC as PAYLOAD_OFF, ~0 for a NULL vec, fds -1 until RECV), then the
 * payload bytes. Only a valid dbus1 message reaches a legacy peer: a unicast of anything
 * else to one is EBADMSG, broadcasts and monitors skip legacy ones (docs/native.md).
 */
#include <fcntl.h>
#include <sys/stat.h>
#include "bridge/bloom.h"
#include "bridge/match.h"
#include "bridge/monitor.h"
#include "conn-fixture.h"

/* A SEND built item by item as a kdbus program lays it out (addresses are datagram offsets
 * here: a vec's offset is fixed up in ob_send()). */
typedef struct OBuild {
        uint8_t msg[2048] __attribute__((aligned(8)));
        uint8_t data[2048];
        size_t n_data;
        struct kdbus_item *next;
} OBuild;

static struct kdbus_msg *ob_init(OBuild *b, uint64_t dst_id, uint64_t flags, uint64_t cookie) {
        struct kdbus_msg *km = (void *)b->msg;

        memset(b, 0, sizeof(*b));
        km->dst_id = dst_id;
        km->flags = flags;
        km->cookie = cookie;
        km->payload_type = KDBUS_PAYLOAD_DBUS;
        if (flags & KDBUS_MSG_EXPECT_REPLY)
                km->timeout_ns = TEST_DEADLINE_NEVER;
        b->next = km->items;
        return km;
}

static struct kdbus_item *ob_item(OBuild *b, uint64_t type, size_t payload) {
        struct kdbus_item *item = b->next;

        item->type = type;
        item->size = KDBUS_ITEM_HEADER_SIZE + payload;
        b->next = KDBUS_ITEM_NEXT(item);
        return item;
}

/* @data NULL: a NULL vec (kdbus: @len bytes of padding) */
static void ob_vec(OBuild *b, const void *data, size_t len) {
        struct kdbus_item *item = ob_item(b, KDBUS_ITEM_PAYLOAD_VEC, sizeof(struct kdbus_vec));

        item->vec.size = len;
        if (data) {
                memcpy(b->data + b->n_data, data, len);
                item->vec.offset = b->n_data + 1;       /* ob_send() adds the base */
                b->n_data += len;
        }
}

static void ob_memfd(OBuild *b, int fd_idx, uint64_t start, uint64_t size) {
        struct kdbus_item *item = ob_item(b, KDBUS_ITEM_PAYLOAD_MEMFD, sizeof(struct kdbus_memfd));

        item->memfd.fd = fd_idx;
        item->memfd.start = start;
        item->memfd.size = size;
}

static void ob_str(OBuild *b, uint64_t type, const char *s) {
        strcpy(ob_item(b, type, strlen(s) + 1)->str, s);
}

static void ob_fds(OBuild *b, const int *idx, unsigned n) {
        memcpy(ob_item(b, KDBUS_ITEM_FDS, n * sizeof(int))->fds, idx, n * sizeof(int));
}

static void ob_bloom(OBuild *b, const uint64_t *filter) {
        struct kdbus_item *item = ob_item(b, KDBUS_ITEM_BLOOM_FILTER,
                                          sizeof(struct kdbus_bloom_filter) + BUS_BLOOM_SIZE);

        memcpy(item->bloom_filter.data, filter, BUS_BLOOM_SIZE);
}

static int ob_send_flags(TestPeer *p, OBuild *b, uint64_t send_flags, const int *fds,
                         unsigned n_fds) {
        struct kdbus_msg *km = (void *)b->msg;
        size_t base, total, reply_size;
        struct kdbus_cmd_send *cmd;
        struct kdbus_item *item;
        uint8_t *buf;
        int *rfds, r;
        unsigned n_rfds;

        km->size = (uint64_t)((uint8_t *)b->next - b->msg);
        base = sizeof(*cmd) + km->size;
        total = base + b->n_data;
        buf = g_malloc0(total);
        cmd = (void *)buf;
        cmd->size = sizeof(*cmd);
        cmd->flags = send_flags;
        cmd->msg_address = sizeof(*cmd);
        memcpy(buf + sizeof(*cmd), km, km->size);
        KDBUS_ITEMS_FOREACH(item, ((struct kdbus_msg *)(buf + sizeof(*cmd)))->items,
                            km->size - sizeof(*km))
                if (item->type == KDBUS_ITEM_PAYLOAD_VEC && item->vec.offset)
                        item->vec.offset += base - 1;
        memcpy(buf + base, b->data, b->n_data);
        r = native_conn_command(p->nc, KDBUS_CMD_SEND, buf, total, fds, n_fds, &reply_size,
                                &rfds, &n_rfds);
        g_assert_cmpuint(n_rfds, ==, 0);
        g_free(buf);
        return r;
}

static int ob_send(TestPeer *p, OBuild *b) {
        return ob_send_flags(p, b, 0, NULL, 0);
}

static const struct kdbus_item *item_at(const struct kdbus_msg *km, unsigned i) {
        const struct kdbus_item *item = km->items;

        while (i--)
                item = KDBUS_ITEM_NEXT(item);
        g_assert_cmpuint((const uint8_t *)item - (const uint8_t *)km, <, km->size);
        return item;
}

/* Native to native: what arrives is what the sender wrote, laid out as kdbus laid it out. */
static void test_unicast_layout(NFixture *n, gconstpointer ctx) {
        static const char ref1[] = "0123456789_0";     /* 13 bytes with its NUL */
        const uint64_t cookie = 0x1234abcd5678eeffull;
        uint8_t dirt[1024];
        uint64_t at;
        const struct kdbus_msg *km;
        const struct kdbus_item *item;
        const uint8_t *payload;
        int fds[2], p[2];
        struct stat st;
        OBuild b;
        struct kdbus_msg *sm;

        peer_hello(&n->f, &n->a, KDBUS_HELLO_ACCEPT_FD);
        peer_hello(&n->f, &n->b, KDBUS_HELLO_ACCEPT_FD);
        g_assert_cmpint(peer_name(&n->b, KDBUS_CMD_NAME_ACQUIRE, "org.example.B", 0, NULL), ==, 0);
        /* messages of 0xa5 bytes first, received and freed: the next ones' pool slices and
         * their buffers in the bus (the message cache's, per size class) held these bytes,
         * so every gap and zero byte below is one the bus wrote */
        memset(dirt, 0xa5, sizeof(dirt));
        for (at = 8; at <= sizeof(dirt); at *= 2) {
                ob_init(&b, n->b.id, 0, 1)->payload_type = 0x5644534d;
                ob_vec(&b, dirt, at);
                g_assert_cmpint(ob_send(&n->a, &b), ==, 0);
                g_assert_cmpint(peer_recv(&n->b, 0, 0, &km, NULL), ==, 0);
                g_assert_cmpint(peer_free_offset(&n->b, (uint64_t)((const uint8_t *)km -
                                                                   n->b.pool)), ==, 0);
        }
        /* 3 bytes: 5 of padding to the slice's end */
        ob_init(&b, n->b.id, 0, 2)->payload_type = 0x5644534d;
        ob_vec(&b, "xyz", 3);
        g_assert_cmpint(ob_send(&n->a, &b), ==, 0);
        g_assert_cmpint(peer_recv(&n->b, 0, 0, &km, NULL), ==, 0);
        payload = (const uint8_t *)km + item_at(km, 0)->vec.offset;
        g_assert_cmpmem(payload, 8, "xyz\0\0\0\0\0", 8);
        for (at = km->size; (const uint8_t *)km + at < payload; ++at)
                g_assert_cmpuint(((const uint8_t *)km)[at], ==, 0);
        g_assert_cmpint(peer_free_offset(&n->b, (uint64_t)((const uint8_t *)km - n->b.pool)), ==, 0);
        g_assert_cmpint(pipe2(p, O_CLOEXEC), ==, 0);
        fds[0] = p[0];
        fds[1] = memfd_create("t", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        g_assert_cmpint(write(fds[1], "kdbus memfd 1234567", 19), ==, 19);
        g_assert_cmpint(fcntl(fds[1], F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE |
                                                   F_SEAL_SEAL), ==, 0);

        sm = ob_init(&b, n->b.id, 0, cookie);
        sm->priority = -7;
        sm->payload_type = 0x5644534d;          /* another kind: opaque without looking */
        ob_str(&b, KDBUS_ITEM_DST_NAME, "org.example.B");
        ob_vec(&b, ref1, sizeof(ref1));
        ob_vec(&b, NULL, 3);                    /* padding: 3 zero bytes */
        ob_vec(&b, "abc", 3);
        ob_memfd(&b, 1, 2, 5);
        ob_fds(&b, (const int[]){ 0 }, 1);
        ob_vec(&b, NULL, 16);                   /* padding of 16: no bytes */
        g_assert_cmpint(ob_send_flags(&n->a, &b, 0, fds, 2), ==, 0);

        g_assert_cmpint(peer_recv(&n->b, 0, 0, &km, NULL), ==, 0);
        g_assert_cmpuint(km->cookie, ==, cookie);
        g_assert_cmpuint(km->payload_type, ==, 0x5644534d);
        g_assert_cmpint(km->priority, ==, -7);
        g_assert_cmpuint(km->src_id, ==, n->a.id);
        g_assert_cmpuint(km->dst_id, ==, n->b.id);     /* as the sender wrote it */
        g_assert_cmpuint(km->flags, ==, 0);
        /* the sender's items in its order */
        item = item_at(km, 0);
        g_assert_cmpuint(item->type, ==, KDBUS_ITEM_DST_NAME);
        g_assert_cmpstr(item->str, ==, "org.example.B");
        item = item_at(km, 1);
        g_assert_cmpuint(item->type, ==, KDBUS_ITEM_PAYLOAD_OFF);
        g_assert_cmpuint(item->vec.size, ==, sizeof(ref1));
        g_assert_cmpuint(item->vec.offset % 8, ==, 0);
        g_assert_cmpuint(item->vec.offset, >=, KDBUS_ALIGN8(km->size));
        payload = (const uint8_t *)km + item->vec.offset;
        g_assert_cmpmem(payload, sizeof(ref1), ref1, sizeof(ref1));
        item = item_at(km, 2);
        g_assert_cmpuint(item->type, ==, KDBUS_ITEM_PAYLOAD_OFF);
        g_assert_cmpuint(item->vec.offset, ==, UINT64_MAX);
        g_assert_cmpuint(item->vec.size, ==, 3);
        g_assert_cmpmem(payload + sizeof(ref1), 3, "\0\0\0", 3);
        item = item_at(km, 3);
        g_assert_cmpuint(item->type, ==, KDBUS_ITEM_PAYLOAD_OFF);
        g_assert_cmpuint(item->vec.offset, ==, item_at(km, 1)->vec.offset + sizeof(ref1) + 3);
        g_assert_cmpmem((const uint8_t *)km + item->vec.offset, 3, "abc", 3);
        item = item_at(km, 4);
        g_assert_cmpuint(item->type, ==, KDBUS_ITEM_PAYLOAD_MEMFD);
        g_assert_cmpuint(item->memfd.start, ==, 2);
        g_assert_cmpuint(item->memfd.size, ==, 5);
        g_assert_cmpint(item->memfd.fd, ==, -1);
        item = item_at(km, 5);
        g_assert_cmpuint(item->type, ==, KDBUS_ITEM_FDS);
        g_assert_cmpint(item->fds[0], ==, -1);
        item = item_at(km, 6);
        g_assert_cmpuint(item->type, ==, KDBUS_ITEM_PAYLOAD_OFF);
        g_assert_cmpuint(item->vec.offset, ==, UINT64_MAX);
        /* the memfd's 5 % 8 bytes of padding follow "abc" in the payload */
        g_assert_cmpmem(payload + sizeof(ref1) + 6, 5, "\0\0\0\0\0", 5);
        /* zeros between the items and the payload */
        for (at = km->size; (const uint8_t *)km + at < payload; ++at)
                g_assert_cmpuint(((const uint8_t *)km)[at], ==, 0);
        /* fds: the FDS item's, then the memfd (the sender's very file) */
        g_assert_cmpuint(n->b.n_fds, ==, 2);
        g_assert_cmpint(fstat(n->b.fds[0], &st), ==, 0);
        g_assert_true(S_ISFIFO(st.st_mode));
        g_assert_cmpint(fcntl(n->b.fds[1], F_GET_SEALS), >, 0);
        /* the numbers the receiver's process gave them (KDBUS_WIRE_FDS): the FDS item's
         * first, whatever the item order */
        g_assert_cmpint(native_conn_fds_publish(n->b.nc, (uint64_t)((const uint8_t *)km -
                                                n->b.pool), (const int32_t[]){ 100, 200 }, 2),
                        ==, 0);
        g_assert_cmpint(item_at(km, 5)->fds[0], ==, 100);
        g_assert_cmpint(item_at(km, 4)->memfd.fd, ==, 200);
        g_assert_cmpint(peer_recv(&n->b, 0, 0, NULL, NULL), ==, -EAGAIN);

        /* no payload at all */
        ob_init(&b, n->b.id, 0, 5);
        g_assert_cmpint(ob_send(&n->a, &b), ==, 0);
        g_assert_cmpint(peer_recv(&n->b, 0, 0, &km, NULL), ==, 0);
        g_assert_cmpuint(km->cookie, ==, 5);
        g_assert_cmpuint(km->payload_type, ==, KDBUS_PAYLOAD_DBUS);
        (void) close(p[0]);
        (void) close(p[1]);
        (void) close(fds[1]);
}

/* Calls and replies: the reply slot of an opaque call takes an opaque answer, with the
 * whole 64-bit cookies; an answer nobody asked for is EBADSLT. */
static void test_call_reply(NFixture *n, gconstpointer ctx) {
        const uint64_t cookie = 0x500000007ull;
        const struct kdbus_msg *km;
        OBuild b;
        struct kdbus_msg *sm;

        peer_hello(&n->f, &n->a, 0);
        peer_hello(&n->f, &n->b, 0);
        ob_init(&b, n->b.id, KDBUS_MSG_EXPECT_REPLY, cookie);
        ob_vec(&b, "ping", 4);
        g_assert_cmpint(ob_send(&n->a, &b), ==, 0);
        g_assert_cmpint(peer_recv(&n->b, 0, 0, &km, NULL), ==, 0);
        g_assert_cmpuint(km->flags, ==, KDBUS_MSG_EXPECT_REPLY);
        g_assert_cmpuint(km->cookie, ==, cookie);
        /* an answer to another cookie: no slot */
        sm = ob_init(&b, n->a.id, 0, 1);
        sm->cookie_reply = cookie + 1;
        ob_vec(&b, "pong", 4);
        g_assert_cmpint(ob_send(&n->b, &b), ==, -EBADSLT);
        sm->cookie_reply = cookie;
        g_assert_cmpint(ob_send(&n->b, &b), ==, 0);
        g_assert_cmpint(ob_send(&n->b, &b), ==, -EBADSLT);     /* the slot is used up */
        g_assert_cmpint(peer_recv(&n->a, 0, 0, &km, NULL), ==, 0);
        g_assert_cmpuint(km->cookie_reply, ==, cookie);
        g_assert_cmpmem((const uint8_t *)km + km->items[0].vec.offset, 4, "pong", 4);

        /* SYNC_REPLY: the answer comes with the SEND */
        ob_init(&b, n->b.id, KDBUS_MSG_EXPECT_REPLY, cookie + 2);
        ob_vec(&b, "ping", 4);
        g_assert_cmpint(ob_send_flags(&n->a, &b, KDBUS_SEND_SYNC_REPLY, NULL, 0), ==, 1);
        g_assert_cmpint(n->a.sync_error, ==, 1);
        g_assert_cmpint(peer_recv(&n->b, 0, 0, &km, NULL), ==, 0);
        sm = ob_init(&b, n->a.id, 0, 2);
        sm->cookie_reply = cookie + 2;
        g_assert_cmpint(ob_send(&n->b, &b), ==, 0);
        g_assert_cmpint(n->a.sync_error, ==, 0);
        km = (const void *)(n->a.pool + n->a.sync_offset);
        g_assert_cmpuint(km->cookie_reply, ==, cookie + 2);
        g_assert_cmpint(peer_recv(&n->a, 0, 0, NULL, NULL), ==, -EAGAIN);
}

/* Legacy peers get valid dbus1 messages only: a unicast of anything else to one fails
 * EBADMSG (whatever its payload_type), a broadcast skips it, and so does a legacy monitor,
 * while native receivers and monitors get it. */
static void test_legacy(NFixture *n, gconstpointer ctx) {
        BridgeConn *legacy = fixture_conn(&n->f, 0);            /* :1.1 */
        BridgeConn *mon = fixture_conn(&n->f, 1);               /* :1.2 */
        uint64_t filter[BUS_BLOOM_WORDS] = { 0 };
        BridgeMatchKeys all = { .type = WIRE_MSG_SIGNAL };
        BridgeMatchRule *rule;
        const struct kdbus_msg *km;
        TestPeer nmon;
        OBuild b;
        struct kdbus_msg *sm;

        g_assert_cmpint(bridge_conn_become_monitor(mon, NULL, 0), ==, 0);
        peer_hello(&n->f, &n->a, 0);                            /* :1.3 */
        peer_hello(&n->f, &n->b, 0);                            /* :1.4 */
        g_assert_cmpint(peer_hello_full(&n->f, &nmon, KDBUS_HELLO_MONITOR, TEST_POOL_SIZE, 0),
                        ==, 0);                         /* root: may monitor */
        g_assert_cmpint(bridge_match_rule_new(&all, &rule), ==, 0);
        g_assert_cmpint(bridge_conn_add_match(legacy, rule), ==, 0);   /* every signal */
        /* an empty match entry: every broadcast */
        g_assert_cmpint(peer_cmd(&n->b, KDBUS_CMD_MATCH_ADD,
                                 &(struct kdbus_cmd_match){ .size = sizeof(struct kdbus_cmd_match) },
                                 sizeof(struct kdbus_cmd_match)), ==, 0);

        ob_init(&b, legacy->id, 0, 9);
        ob_vec(&b, "hello", 5);
        g_assert_cmpint(ob_send(&n->a, &b), ==, -EBADMSG);
        sm = ob_init(&b, legacy->id, 0, 9);
        sm->payload_type = 0x1234;
        g_assert_cmpint(ob_send(&n->a, &b), ==, -EBADMSG);
        g_assert_null(bridge_conn_queue_peek(legacy));
        g_assert_null(bridge_conn_queue_peek(mon));

        filter[0] = 1;
        ob_init(&b, KDBUS_DST_ID_BROADCAST, KDBUS_MSG_SIGNAL, 10);
        ob_vec(&b, "hello", 5);
        ob_bloom(&b, filter);
        g_assert_cmpint(ob_send(&n->a, &b), ==, 0);
        g_assert_null(bridge_conn_queue_peek(legacy));
        g_assert_null(bridge_conn_queue_peek(mon));
        g_assert_cmpint(peer_recv(&n->b, 0, 0, &km, NULL), ==, 0);
        g_assert_cmpuint(km->cookie, ==, 10);
        g_assert_cmpuint(km->dst_id, ==, KDBUS_DST_ID_BROADCAST);
        g_assert_cmpuint(item_at(km, 1)->type, ==, KDBUS_ITEM_BLOOM_FILTER);
        g_assert_cmpuint(item_at(km, 1)->bloom_filter.data[0], ==, 1);
        /* the native monitor saw the failed unicasts (copied before routing) and this */
        g_assert_cmpint(peer_recv(&nmon, 0, 0, &km, NULL), ==, 0);
        g_assert_cmpuint(km->cookie, ==, 9);
        g_assert_cmpint(peer_recv(&nmon, 0, 0, &km, NULL), ==, 0);
        g_assert_cmpint(peer_recv(&nmon, 0, 0, &km, NULL), ==, 0);
        g_assert_cmpuint(km->cookie, ==, 10);
        peer_free(&nmon);
}

/* kdbus_msg_examine(): a bloom filter iff a signal (the bus makes none of bytes it cannot
 * read); a receiver's bloom mask is matched against the sender's filter alone. */
static void test_bloom(NFixture *n, gconstpointer ctx) {
        uint8_t buf[256] __attribute__((aligned(8))) = { 0 };
        struct kdbus_cmd_match *cmd = (void *)buf;
        uint64_t filter[BUS_BLOOM_WORDS] = { 0 };
        const struct kdbus_msg *km;
        OBuild b;

        peer_hello(&n->f, &n->a, 0);
        peer_hello(&n->f, &n->b, 0);
        ob_init(&b, KDBUS_DST_ID_BROADCAST, KDBUS_MSG_SIGNAL, 1);
        ob_vec(&b, "x", 1);
        g_assert_cmpint(ob_send(&n->a, &b), ==, -EBADMSG);
        ob_init(&b, n->b.id, KDBUS_MSG_SIGNAL, 1);
        g_assert_cmpint(ob_send(&n->a, &b), ==, -EBADMSG);

        /* b wants the bits 0x3 of the first word */
        cmd->cookie = 1;
        cmd->items[0].type = KDBUS_ITEM_BLOOM_MASK;
        cmd->items[0].size = KDBUS_ITEM_HEADER_SIZE + BUS_BLOOM_SIZE;
        memcpy(cmd->items[0].data, &(uint64_t){ 3 }, sizeof(uint64_t));
        cmd->size = sizeof(*cmd) + KDBUS_ITEM_SIZE(BUS_BLOOM_SIZE);
        g_assert_cmpint(peer_cmd(&n->b, KDBUS_CMD_MATCH_ADD, cmd, cmd->size), ==, 0);
        filter[0] = 1;
        ob_init(&b, KDBUS_DST_ID_BROADCAST, KDBUS_MSG_SIGNAL, 2);
        ob_bloom(&b, filter);
        g_assert_cmpint(ob_send(&n->a, &b), ==, 0);
        g_assert_cmpint(peer_recv(&n->b, 0, 0, NULL, NULL), ==, -EAGAIN);
        filter[0] = 7;
        ob_init(&b, KDBUS_DST_ID_BROADCAST, KDBUS_MSG_SIGNAL, 3);
        ob_bloom(&b, filter);
        g_assert_cmpint(ob_send(&n->a, &b), ==, 0);
        g_assert_cmpint(peer_recv(&n->b, 0, 0, &km, NULL), ==, 0);
        g_assert_cmpuint(km->cookie, ==, 3);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
#define ADD(path, fn) g_test_add("/native/opaque/" path, NFixture, NULL, nsetup, fn, nteardown)
        ADD("unicast-layout", test_unicast_layout);
        ADD("call-reply", test_call_reply);
        ADD("legacy", test_legacy);
        ADD("bloom", test_bloom);
        return g_test_run();
}
