/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * PAYLOAD_MEMFD end to end through a real kdbusd (docs/native.md, "memfd payloads"): the
 * header inline, the body of 1 MiB / 16 MiB in a sealed memfd.
 *
 * - native to native: the receiver gets a PAYLOAD_MEMFD item and an fd of the very file
 *   the sender sealed (same st_dev/st_ino), content intact, and kdbusd read none of it:
 *   its rchar (/proc/PID/io: every byte it read(2)/pread(2)/recvmsg(2)ed) grows by less
 *   than 64 KiB while the message passes;
 * - native to legacy: a dbus-python service gets the bytes (it answers their SHA-256), and
 *   kdbusd's rchar grows by at least the body: it read the memfd for that receiver;
 * - an invalid body (an array longer than the body) is EBADMSG toward a legacy receiver,
 *   which stays unharmed, but passes to a native one, which the bus never validates for;
 * - the header must be inline (EBADMSG when it lies in the memfd).
 */
#include <sys/stat.h>
#include "kdbusd-fixture.h"
#include "wire/endian.h"

#define BLOB_MEMBER "Blob"

/* kdbusd's rchar. */
static uint64_t bus_rchar(KBus *b) {
        g_autofree char *path = g_strdup_printf("/proc/%d/io", (int)b->pid);
        g_autofree char *text = NULL;
        const char *p;

        g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
        p = strstr(text, "rchar: ");
        g_assert_nonnull(p);
        return g_ascii_strtoull(p + 7, NULL, 10);
}

static uint8_t blob_byte(size_t i) {
        return (uint8_t)(i * 7 + 13 + (i >> 12));
}

/*
 * A method call @BLOB_MEMBER to @dest whose body is "ay" of @n pattern bytes, split: its
 * header (no body) in *ret_head, the body (u32 length, bytes) in a new memfd, sealed with
 * kdbus's four seals. @bad_len: the array's length word claims 100 bytes more than there
 * are (the body then is invalid for its signature). Return: the memfd.
 */
static int blob_new(uint32_t serial, const char *dest, size_t n, bool bad_len,
                    uint8_t **ret_head, size_t *ret_head_size) {
        WireMsgSpec spec = { .type = WIRE_MSG_METHOD_CALL, .serial = serial, .path = "/org/example",
                             .interface = "org.example.Blob", .member = BLOB_MEMBER,
                             .destination = dest };
        uint8_t one = 0, *data = NULL, *map;
        WireWriter w;
        WireHeader h;
        size_t size, i;
        int fd;

        if (!dest || dest[0] == ':')
                spec.flags = WIRE_FLAG_NO_REPLY_EXPECTED;
        wire_writer_init(&w);
        g_assert_cmpint(wire_writer_open(&w, 'a', "y"), ==, 0);
        g_assert_cmpint(wire_writer_append_basic(&w, 'y', &one), ==, 0);
        g_assert_cmpint(wire_writer_close(&w), ==, 0);
        g_assert_cmpint(wire_message_build(&spec, &w, &data, &size), ==, 0);
        wire_writer_deinit(&w);
        g_assert_cmpint(wire_message_parse(data, size, 0, 0, &h), ==, 0);
        /* the same header declaring the big body */
        wire_store32(data + 4, h.big_endian, (uint32_t)(4 + n));
        *ret_head = data;
        *ret_head_size = h.body_offset;

        fd = memfd_create("blob", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(ftruncate(fd, (off_t)(4 + n)), ==, 0);
        map = mmap(NULL, 4 + n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        g_assert_true(map != MAP_FAILED);
        wire_store32(map, h.big_endian, (uint32_t)(bad_len ? n + 100 : n));
        for (i = 0; i < n; ++i)
                map[4 + i] = blob_byte(i);
        g_assert_cmpint(munmap(map, 4 + n), ==, 0);
        g_assert_cmpint(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE |
                                               F_SEAL_SEAL), ==, 0);
        return fd;
}

static int blob_send(KdbusConn *a, uint64_t dst_id, const char *dst_name, uint64_t send_flags,
                     const uint8_t *head, size_t head_size, int fd, size_t n,
                     struct kdbus_msg_info *ret_reply) {
        KdbusSend s = { .dst_id = dst_id, .dst_name = dst_name, .send_flags = send_flags,
                        .memfd = fd, .memfd_start = 0, .memfd_size = 4 + n };

        g_assert_cmpint(kdbus_send_from_dbus1(&s, head, head_size), ==, 0);
        if (s.msg_flags & KDBUS_MSG_EXPECT_REPLY)
                s.timeout_ns = LIBKDBUS_DEADLINE_NEVER;  /* the bus's reply timeout */
        return kdbus_conn_send(a, &s, head, head_size, ret_reply);
}

static const struct kdbus_msg *recv_wait(KdbusConn *c) {
        const struct kdbus_msg *m = NULL;
        int r;

        while ((r = kdbus_conn_recv(c, 0, 0, &m, NULL)) == -EAGAIN)
                g_assert_cmpint(kdbus_conn_wait(c, 10000), ==, 0);
        g_assert_cmpint(r, ==, 0);
        return m;
}

static void native_to_native(KBus *b, size_t n) {
        KdbusConn *a = kpeer(b, 0), *c = kpeer(b, 0);
        g_autofree char *dest = g_strdup_printf(":1.%llu", (unsigned long long)c->id);
        const struct kdbus_msg *m;
        KdbusPart parts[4];
        struct stat st_sent, st_got;
        uint8_t *head, *map, *whole;
        size_t head_size, size, i;
        g_autofree char *sender = g_strdup_printf(":1.%llu", (unsigned long long)a->id);
        uint64_t rchar;
        WireHeader h;
        int fd, k;

        fd = blob_new(7, dest, n, false, &head, &head_size);
        g_assert_cmpint(fstat(fd, &st_sent), ==, 0);
        rchar = bus_rchar(b);
        g_assert_cmpint(blob_send(a, c->id, NULL, 0, head, head_size, fd, n, NULL), ==, 0);
        m = recv_wait(c);
        /* the bus read the SEND and RECV datagrams, not the memfd */
        g_test_message("kdbusd read %" G_GUINT64_FORMAT " bytes for a %zu-byte memfd body",
                       bus_rchar(b) - rchar, n + 4);
        g_assert_cmpuint(bus_rchar(b) - rchar, <, 64 * 1024);

        k = kdbus_msg_parts(c, m, parts, G_N_ELEMENTS(parts));
        g_assert_cmpint(k, ==, 2);
        g_assert_nonnull(parts[0].data);               /* the stamped header, in the pool */
        g_assert_null(parts[1].data);
        g_assert_cmpuint(parts[1].start, ==, 0);
        g_assert_cmpuint(parts[1].size, ==, n + 4);
        g_assert_cmpuint(c->n_recv_fds, ==, 1);
        g_assert_cmpint(fstat(parts[1].memfd, &st_got), ==, 0);
        g_assert_cmpuint(st_got.st_dev, ==, st_sent.st_dev);
        g_assert_cmpuint(st_got.st_ino, ==, st_sent.st_ino);
        map = mmap(NULL, n + 4, PROT_READ, MAP_SHARED, parts[1].memfd, 0);
        g_assert_true(map != MAP_FAILED);
        for (i = 0; i < n; ++i)
                if (map[4 + i] != blob_byte(i))
                        g_error("byte %zu of the memfd differs", i);
        g_assert_cmpint(munmap(map, n + 4), ==, 0);
        /* header and memfd make one valid dbus1 message, SENDER stamped */
        g_assert_cmpint(kdbus_msg_copy_payload(c, m, &whole, &size), ==, 0);
        g_assert_cmpuint(size, ==, parts[0].size + n + 4);
        g_assert_cmpint(wire_message_parse(whole, size, 0, 0, &h), ==, 0);
        g_assert_cmpstr(h.sender, ==, sender);
        g_assert_cmpstr(h.member, ==, BLOB_MEMBER);
        free(whole);
        g_assert_cmpint(kdbus_conn_free(c, kdbus_conn_offset(c, m)), ==, 0);
        (void) close(fd);
        free(head);
        kdbus_conn_close(a);
        kdbus_conn_close(c);
}

static void test_native_1m(KBus *b, gconstpointer ctx) {
        native_to_native(b, 1u << 20);
}

static void test_native_16m(KBus *b, gconstpointer ctx) {
        native_to_native(b, 16u << 20);
}

/* answers Blob(ay) with "<length> <sha256>"; quits 200 ms after the last of argv[2] calls */
static const char blob_service[] =
        "import sys, hashlib, dbus, dbus.service, dbus.mainloop.glib\n"
        "from gi.repository import GLib\n"
        "dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)\n"
        "bus = dbus.bus.BusConnection(sys.argv[1])\n"
        "loop = GLib.MainLoop()\n"
        "left = [int(sys.argv[2])]\n"
        "class S(dbus.service.Object):\n"
        "    @dbus.service.method('org.example.Blob', in_signature='ay', out_signature='s',\n"
        "                         byte_arrays=True)\n"
        "    def Blob(self, data):\n"
        "        left[0] -= 1\n"
        "        if left[0] == 0:\n"
        "            GLib.timeout_add(200, loop.quit)\n"
        "        return '%d %s' % (len(data), hashlib.sha256(bytes(data)).hexdigest())\n"
        "name = dbus.service.BusName('org.example.Blob', bus)\n"
        "S(bus, '/org/example')\n"
        "print('ready', flush=True)\n"
        "loop.run()\n";

static GPid blob_service_start(KBus *b, unsigned n_calls) {
        g_autofree char *addr = g_strdup_printf("unix:path=%s", b->legacy);
        g_autofree char *count = g_strdup_printf("%u", n_calls);
        const char *argv[] = { "/usr/bin/python3", "-c", blob_service, addr, count, NULL };
        char line[16] = "";
        GPid pid;
        int out;

        g_assert_true(g_spawn_async_with_pipes(NULL, (char **)argv, NULL,
                                               G_SPAWN_DO_NOT_REAP_CHILD, kbus_child_setup, NULL,
                                               &pid, NULL, &out, NULL, NULL));
        for (size_t got = 0; got < 6;) {
                ssize_t k = read(out, line + got, 6 - got);

                g_assert_cmpint(k, >, 0);
                got += (size_t)k;
        }
        g_assert_cmpstr(line, ==, "ready\n");
        (void) close(out);
        return pid;
}

static void blob_service_wait(GPid pid) {
        int status;

        g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
        g_assert_true(WIFEXITED(status));
        g_assert_cmpint(WEXITSTATUS(status), ==, 0);
        g_spawn_close_pid(pid);
}

/* A SYNC_REPLY Blob call to the legacy service; its answer, or "" on an error. */
static char *blob_call(KBus *b, KdbusConn *a, uint32_t serial, size_t n, bool bad_len, int *ret) {
        struct kdbus_msg_info info = { 0 };
        const struct kdbus_msg *m;
        const uint8_t *data;
        uint8_t *head;
        size_t head_size, size;
        WireHeader h;
        WireArgs args;
        char *answer;
        int fd;

        fd = blob_new(serial, "org.example.Blob", n, bad_len, &head, &head_size);
        *ret = blob_send(a, KDBUS_DST_ID_NAME, "org.example.Blob", KDBUS_SEND_SYNC_REPLY, head,
                         head_size, fd, n, &info);
        (void) close(fd);
        free(head);
        if (*ret)
                return g_strdup("");
        m = (const void *)(a->pool + info.offset);
        g_assert_cmpint(kdbus_msg_payload(m, &data, &size), ==, 0);
        g_assert_cmpint(wire_message_parse(data, size, 0, 0, &h), ==, 0);
        g_assert_cmpint(h.type, ==, WIRE_MSG_METHOD_RETURN);
        g_assert_cmpint(wire_message_get_args(data, &h, &args), ==, 0);
        answer = g_strdup(args.str[0]);
        g_assert_cmpint(kdbus_conn_free(a, info.offset), ==, 0);
        return answer;
}

static char *blob_expected(size_t n) {
        GChecksum *sum = g_checksum_new(G_CHECKSUM_SHA256);
        uint8_t buf[4096];
        size_t i, j;
        char *s;

        for (i = 0; i < n; i += sizeof(buf)) {
                size_t k = MIN(sizeof(buf), n - i);

                for (j = 0; j < k; ++j)
                        buf[j] = blob_byte(i + j);
                g_checksum_update(sum, buf, k);
        }
        s = g_strdup_printf("%zu %s", n, g_checksum_get_string(sum));
        g_checksum_free(sum);
        return s;
}

static void test_legacy(KBus *b, gconstpointer ctx) {
        static const size_t sizes[] = { 1u << 20, 16u << 20 };
        KdbusConn *a;
        GPid pid;
        unsigned i;
        int r;

        if (!g_file_test("/usr/bin/python3", G_FILE_TEST_IS_EXECUTABLE)) {
                g_test_skip("no /usr/bin/python3 (python3-dbus)");
                return;
        }
        pid = blob_service_start(b, 3);
        a = kpeer(b, 0);
        for (i = 0; i < G_N_ELEMENTS(sizes); ++i) {
                g_autofree char *expected = blob_expected(sizes[i]), *got = NULL;
                uint64_t rchar = bus_rchar(b);

                got = blob_call(b, a, 10 + i, sizes[i], false, &r);
                g_assert_cmpint(r, ==, 0);
                g_assert_cmpstr(got, ==, expected);
                /* the legacy receiver needed the bytes: the bus read the memfd */
                g_test_message("kdbusd read %" G_GUINT64_FORMAT " bytes for a %zu-byte memfd "
                               "body to a legacy receiver", bus_rchar(b) - rchar, sizes[i] + 4);
                g_assert_cmpuint(bus_rchar(b) - rchar, >=, sizes[i] + 4);
        }

        /* an invalid body toward the legacy receiver: the sender learns it, the receiver
         * gets nothing and answers the next call */
        g_free(blob_call(b, a, 20, 4096, true, &r));
        g_assert_cmpint(r, ==, -EBADMSG);
        {
                g_autofree char *expected = blob_expected(4096);
                g_autofree char *got = blob_call(b, a, 21, 4096, false, &r);

                g_assert_cmpint(r, ==, 0);
                g_assert_cmpstr(got, ==, expected);
        }
        kdbus_conn_close(a);
        blob_service_wait(pid);
}

static void test_invalid_to_native(KBus *b, gconstpointer ctx) {
        KdbusConn *a = kpeer(b, 0), *c = kpeer(b, 0);
        g_autofree char *dest = g_strdup_printf(":1.%llu", (unsigned long long)c->id);
        const struct kdbus_msg *m;
        KdbusPart parts[4];
        uint8_t *head;
        size_t head_size;
        int fd;

        /* the bus does not read it for a native receiver, so it does not validate it either:
         * as with kdbus, the receiver validates what it maps */
        fd = blob_new(8, dest, 4096, true, &head, &head_size);
        g_assert_cmpint(blob_send(a, c->id, NULL, 0, head, head_size, fd, 4096, NULL), ==, 0);
        m = recv_wait(c);
        g_assert_cmpint(kdbus_msg_parts(c, m, parts, G_N_ELEMENTS(parts)), ==, 2);
        g_assert_cmpint(parts[1].memfd, >=, 0);

        /* the header not inline, or a body shorter than the header declares: no dbus1
         * message the bus can route, so the payload is carried opaque (as kdbus carried
         * every payload) and the native receiver gets the sender's items as they were */
        {
                KdbusSend s = { .dst_id = c->id, .memfd = fd, .memfd_size = 4096 + 4 };

                g_assert_cmpint(kdbus_send_from_dbus1(&s, head, head_size), ==, 0);
                g_assert_cmpint(kdbus_conn_send(a, &s, NULL, 0, NULL), ==, 0);
                m = recv_wait(c);
                g_assert_cmpuint(m->items[0].type, ==, KDBUS_ITEM_PAYLOAD_MEMFD);
                g_assert_cmpuint(m->items[0].memfd.size, ==, 4096 + 4);
                s.memfd_size = 4096;
                g_assert_cmpint(kdbus_conn_send(a, &s, head, head_size, NULL), ==, 0);
                m = recv_wait(c);
                g_assert_cmpuint(m->items[0].type, ==, KDBUS_ITEM_PAYLOAD_OFF);
                g_assert_cmpuint(m->items[0].vec.size, ==, head_size);
                /* a range past the memfd's end: EFAULT (kdbus_get_memfd()) */
                s.memfd_size = 4096 + 5;
                g_assert_cmpint(kdbus_conn_send(a, &s, head, head_size, NULL), ==, -EFAULT);
        }
        (void) close(fd);
        free(head);
        kdbus_conn_close(a);
        kdbus_conn_close(c);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        signal(SIGPIPE, SIG_IGN);
#define ADD(path, fn) g_test_add("/native/socket-memfd/" path, KBus, NULL, kbus_setup, fn, kbus_teardown)
        ADD("native-1m", test_native_1m);
        ADD("native-16m", test_native_16m);
        ADD("legacy-1m-16m-invalid", test_legacy);
        ADD("invalid-to-native-header-inline", test_invalid_to_native);
        return g_test_run();
}
