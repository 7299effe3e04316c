/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Benchmark client connections. Everything here is blocking and single-purpose: the
 * benchmark processes each own one connection and nothing else.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>
#include "bench/bench-conn.h"
#include "wire/protocol.h"

static int write_all(int fd, const void *p, size_t n) {
        const uint8_t *b = p;

        while (n) {
                ssize_t k = write(fd, b, n);

                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                b += k;
                n -= (size_t) k;
        }
        return 0;
}

static int connect_address(const char *address) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        const char *p, *end;
        socklen_t len;
        size_t n;
        int fd, abstract = 0;

        if (!strncmp(address, "unix:path=", 10)) {
                p = address + 10;
        } else if (!strncmp(address, "unix:abstract=", 14)) {
                p = address + 14;
                abstract = 1;
        } else {
                fprintf(stderr, "bench: address '%s': only unix:path= and unix:abstract= are "
                        "supported\n", address);
                return -EINVAL;
        }
        end = strchr(p, ',');
        n = end ? (size_t) (end - p) : strlen(p);
        if (n + (size_t) abstract >= sizeof(sa.sun_path)) {
                fprintf(stderr, "bench: address '%s': path too long\n", address);
                return -ENAMETOOLONG;
        }
        memcpy(sa.sun_path + abstract, p, n);
        len = (socklen_t) (offsetof(struct sockaddr_un, sun_path) + (size_t) abstract + n +
                           (abstract ? 0 : 1));
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        if (connect(fd, (struct sockaddr *) &sa, len) < 0) {
                int r = -errno;

                fprintf(stderr, "bench: connect to '%s': %s\n", address, strerror(-r));
                (void) close(fd);
                return r;
        }
        return fd;
}

/*
 * Read the server's SASL line into @line with one read() for the whole line, as real
 * clients do (it was a read() per byte: 38 syscalls per connection in the client, twice
 * the bus's, so the connect workload measured the client). The server says nothing more
 * before our BEGIN; anything that did come stays in c->in for bench_conn_next().
 */
static int read_line(BenchConn *c, char *line, size_t cap) {
        for (;;) {
                uint8_t *p = c->in + c->in_start, *end = c->in + c->in_end;
                ssize_t k;

                for (uint8_t *q = p; q + 1 < end; q++)
                        if (q[0] == '\r' && q[1] == '\n') {
                                size_t n = (size_t) (q - p);

                                if (n + 1 > cap)
                                        return -E2BIG;
                                memcpy(line, p, n);
                                line[n] = 0;
                                c->in_start += n + 2;
                                return 0;
                        }
                if (c->in_end == c->in_cap)
                        return -E2BIG;
                k = read(c->fd, c->in + c->in_end, c->in_cap - c->in_end);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        return k < 0 ? -errno : -ECONNRESET;
                c->in_end += (size_t) k;
        }
}

/* "\0AUTH EXTERNAL <hex of our uid>\r\n" into @buf, made once (the uid does not change).
 * Return: its length, 0 if @cap is too small. */
static size_t auth_line(char *buf, size_t cap) {
        static char line[64];
        static size_t len;

        if (!len) {
                char uid[16];
                size_t i;

                (void) snprintf(uid, sizeof(uid), "%u", (unsigned) getuid());
                memcpy(line, "\0AUTH EXTERNAL ", 15);
                for (i = 0; uid[i]; i++)
                        (void) snprintf(line + 15 + 2 * i, 3, "%02x", (unsigned char) uid[i]);
                memcpy(line + 15 + 2 * i, "\r\n", 2);
                len = 15 + 2 * i + 2;
        }
        if (len > cap)
                return 0;
        memcpy(buf, line, len);
        return len;
}

int bench_conn_open(BenchConn *c, const char *address, const BenchConnOpts *opts) {
        char auth[64], line[256];
        BenchMsgSpec hello = {
                .type = WIRE_MSG_METHOD_CALL,
                .path = "/org/freedesktop/DBus",
                .interface = "org.freedesktop.DBus",
                .member = "Hello",
                .destination = "org.freedesktop.DBus",
        };
        BenchMsg reply;
        int r;

        *c = (BenchConn) {
                .fd = -1,
                .in_cap = opts && opts->in_cap ? opts->in_cap : BENCH_CONN_IN,
                .out_cap = opts && opts->out_cap ? opts->out_cap : BENCH_CONN_OUT,
                .wait_poll = opts && opts->wait_poll,
        };
        c->in = malloc(c->in_cap);
        c->out = malloc(c->out_cap);
        if (!c->in || !c->out)
                return -ENOMEM;
        r = connect_address(address);
        if (r < 0)
                return r;
        c->fd = r;
        if (opts && opts->relay_role)
                return write_all(c->fd, &opts->relay_role, 1);

        r = write_all(c->fd, auth, auth_line(auth, sizeof(auth)));
        if (r < 0)
                return r;
        r = read_line(c, line, sizeof(line));
        if (r < 0 || strncmp(line, "OK ", 3)) {
                fprintf(stderr, "bench: %s: authentication failed: '%s'\n", address,
                        r < 0 ? strerror(-r) : line);
                return r < 0 ? r : -EACCES;
        }
        /* BEGIN and the Hello in one write, as libdbus and sd-bus send them */
        memcpy(c->out, "BEGIN\r\n", 7);
        c->out_len = 7;
        r = bench_conn_call(c, &hello, &reply);
        if (r < 0)
                return r;
        if (reply.body_len < 5 || reply.body_len - 5 >= sizeof(c->unique_name))
                return -EBADMSG;
        memcpy(c->unique_name, reply.body + 4, reply.body_len - 4);
        return 0;
}

void bench_conn_close(BenchConn *c) {
        if (c->fd >= 0)
                (void) close(c->fd);
        c->fd = -1;
        free(c->in);
        free(c->out);
        c->in = c->out = NULL;
}

int bench_conn_next(BenchConn *c, bool block, BenchMsg *ret) {
        for (;;) {
                size_t avail = c->in_end - c->in_start;
                long size = bench_msg_frame(c->in + c->in_start, avail);
                ssize_t k;

                if (size < 0) {
                        fprintf(stderr, "bench: unreadable message from the bus\n");
                        return (int) size;
                }
                if (size > 0 && (size_t) size > c->in_cap) {
                        fprintf(stderr, "bench: a %ld-byte message does not fit the %zu-byte "
                                "input buffer\n", size, c->in_cap);
                        return -E2BIG;
                }
                if (size > 0 && (size_t) size <= avail) {
                        int r = bench_msg_parse(c->in + c->in_start, avail, ret);

                        if (r < 0)
                                return r;
                        c->in_start += (size_t) size;
                        return 1;
                }
                if (!block)
                        return 0;
                if (c->in_start) {
                        memmove(c->in, c->in + c->in_start, avail);
                        c->in_start = 0;
                        c->in_end = avail;
                }
                if (c->wait_poll && !avail) {
                        struct pollfd p = { .fd = c->fd, .events = POLLIN };

                        if (poll(&p, 1, -1) < 0 && errno != EINTR)
                                return -errno;
                }
                k = read(c->fd, c->in + c->in_end, c->in_cap - c->in_end);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                if (k == 0) {
                        fprintf(stderr, "bench: the bus closed the connection\n");
                        return -ECONNRESET;
                }
                c->in_end += (size_t) k;
        }
}

int bench_conn_flush(BenchConn *c) {
        int r;

        if (!c->out_len)
                return 0;
        r = write_all(c->fd, c->out, c->out_len);
        c->out_len = 0;
        return r;
}

static uint32_t next_serial(BenchConn *c) {
        if (!++c->serial)
                ++c->serial;
        return c->serial;
}

int64_t bench_conn_queue_raw(BenchConn *c, uint8_t *msg, size_t size) {
        uint32_t serial;
        int r;

        if (size > c->out_cap / 2) {
                r = bench_conn_flush(c);
                if (r < 0)
                        return r;
                serial = next_serial(c);
                memcpy(msg + BENCH_MSG_SERIAL_OFFSET, &serial, 4);
                r = write_all(c->fd, msg, size);
                return r < 0 ? (int64_t) r : (int64_t) serial;
        }
        if (c->out_len + size > c->out_cap) {
                r = bench_conn_flush(c);
                if (r < 0)
                        return r;
        }
        serial = next_serial(c);
        memcpy(c->out + c->out_len, msg, size);
        memcpy(c->out + c->out_len + BENCH_MSG_SERIAL_OFFSET, &serial, 4);
        c->out_len += size;
        return serial;
}

int64_t bench_conn_queue(BenchConn *c, const BenchMsgSpec *spec) {
        size_t size;
        int r;

        for (;;) {
                size = bench_msg_build(c->out + c->out_len, c->out_cap - c->out_len, spec);
                if (size)
                        break;
                if (!c->out_len)
                        return -E2BIG;
                r = bench_conn_flush(c);
                if (r < 0)
                        return r;
        }
        /* built in place: take it back out through the raw path to assign the serial */
        c->out_len += size;
        (void) next_serial(c);
        memcpy(c->out + c->out_len - size + BENCH_MSG_SERIAL_OFFSET, &c->serial, 4);
        return c->serial;
}

int64_t bench_conn_send_direct(BenchConn *c, const BenchMsgSpec *spec) {
        BenchMsgSpec head = *spec;
        uint8_t hdr[1024];
        struct iovec iov[2];
        size_t n, done = 0;
        int r;

        r = bench_conn_flush(c);
        if (r < 0)
                return r;
        head.body = NULL;               /* the header and the padding before the body */
        head.serial = next_serial(c);
        n = bench_msg_build(hdr, sizeof(hdr), &head);
        if (!n)
                return -E2BIG;
        iov[0] = (struct iovec) { .iov_base = hdr, .iov_len = n };
        iov[1] = (struct iovec) { .iov_base = (void *) spec->body, .iov_len = spec->body_len };
        while (done < n + spec->body_len) {
                ssize_t k;
                struct iovec v[2];
                unsigned nv = 0;

                if (done < n)
                        v[nv++] = (struct iovec) { hdr + done, n - done };
                v[nv++] = done < n ? iov[1] : (struct iovec) {
                        (uint8_t *) spec->body + (done - n), spec->body_len - (done - n) };
                k = writev(c->fd, v, (int) nv);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                done += (size_t) k;
        }
        return head.serial;
}

int bench_conn_call(BenchConn *c, const BenchMsgSpec *spec, BenchMsg *ret) {
        int64_t serial;
        int r;

        serial = bench_conn_queue(c, spec);
        if (serial < 0)
                return (int) serial;
        r = bench_conn_flush(c);
        if (r < 0)
                return r;
        for (;;) {
                BenchMsg m;

                r = bench_conn_next(c, true, &m);
                if (r < 0)
                        return r;
                if (m.reply_serial != (uint32_t) serial ||
                    (m.type != WIRE_MSG_METHOD_RETURN && m.type != WIRE_MSG_ERROR))
                        continue;
                if (m.type == WIRE_MSG_ERROR) {
                        fprintf(stderr, "bench: %s failed: %s\n", spec->member,
                                m.error_name ? m.error_name : "(error without name)");
                        return -EREMOTEIO;
                }
                *ret = m;
                return 0;
        }
}

size_t bench_body_string(uint8_t *buf, size_t cap, const char *s, bool with_u32, uint32_t u) {
        uint32_t n = (uint32_t) strlen(s);
        size_t size = 4 + n + 1;

        if (with_u32)
                size = ((size + 3) & ~(size_t) 3) + 4;
        if (size > cap)
                return 0;
        memset(buf, 0, size);
        memcpy(buf, &n, 4);
        memcpy(buf + 4, s, n + 1);
        if (with_u32)
                memcpy(buf + size - 4, &u, 4);
        return size;
}

int bench_conn_call_driver(BenchConn *c, const char *member, const char *signature,
                           const void *body, uint32_t body_len, BenchMsg *ret) {
        BenchMsgSpec spec = {
                .type = WIRE_MSG_METHOD_CALL,
                .path = "/org/freedesktop/DBus",
                .interface = "org.freedesktop.DBus",
                .member = member,
                .destination = "org.freedesktop.DBus",
                .signature = signature,
                .body = body,
                .body_len = body_len,
        };

        return bench_conn_call(c, &spec, ret);
}
