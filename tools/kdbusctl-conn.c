/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * kdbusctl's client connection: address resolution, connect, SASL EXTERNAL, Hello, and
 * blocking send/receive of whole messages. Received bytes are framed with
 * wire_message_frame() and validated with wire_message_parse() before anyone looks at them;
 * the raw bytes are kept as they came (monitor --pcap writes them unchanged).
 *
 * Errors are reported here, once, naming the address, then passed up as negative errno.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include "tools/kdbusctl.h"
#include "util/hex.h"
#include "wire/protocol.h"

/**
 * ctl_msg_deinit() - free the message bytes; @m becomes CTL_MSG_NULL (idempotent)
 */
void ctl_msg_deinit(CtlMsg *m) {
        free(m->data);
        *m = (CtlMsg) CTL_MSG_NULL(*m);
}

/**
 * ctl_address_resolve() - the bus address from --address, --system or the session default
 * @ret_address: malloc()ed, never empty
 *
 * Reports what is wrong on stderr. Return: 0, -EINVAL (conflicting options, empty address),
 * -ENOENT (no session bus configured), -ENOMEM.
 */
int ctl_address_resolve(const char *address, bool session, bool system, char **ret_address) {
        const char *e;
        char *a = NULL;

        if ((address != NULL) + session + system > 1) {
                fprintf(stderr, "kdbusctl: --address, --session and --system exclude each other\n");
                return -EINVAL;
        }
        if (address) {
                a = strdup(address);
        } else if (system) {
                e = getenv("DBUS_SYSTEM_BUS_ADDRESS");
                a = strdup(e && *e ? e : "unix:path=/run/dbus/system_bus_socket");
        } else {
                e = getenv("DBUS_SESSION_BUS_ADDRESS");
                if (e && *e) {
                        a = strdup(e);
                } else {
                        e = getenv("XDG_RUNTIME_DIR");
                        if (!e || !*e) {
                                fprintf(stderr, "kdbusctl: no session bus: neither "
                                        "DBUS_SESSION_BUS_ADDRESS nor XDG_RUNTIME_DIR is set; "
                                        "use --address=ADDRESS or --system\n");
                                return -ENOENT;
                        }
                        if (asprintf(&a, "unix:path=%s/bus", e) < 0)
                                a = NULL;
                }
        }
        if (!a)
                return -ENOMEM;
        if (!a[0]) {
                fprintf(stderr, "kdbusctl: the bus address is empty (%s); use --address=unix:"
                        "path=SOCKET\n", address ? "--address=" :
                        system ? "DBUS_SYSTEM_BUS_ADDRESS" : "DBUS_SESSION_BUS_ADDRESS");
                free(a);
                return -EINVAL;
        }
        *ret_address = a;
        return 0;
}

/**
 * ctl_address_parse_entry() - the socket path of one address entry
 * @entry:      "unix:key=value,..." up to its end or a ';'
 *
 * Return: 0; CTL_ADDR_E_TRANSPORT, CTL_ADDR_E_SYNTAX, CTL_ADDR_E_NO_PATH, CTL_ADDR_E_TOO_LONG.
 */
int ctl_address_parse_entry(const char *entry, char *ret_path, size_t path_size,
                            bool *ret_abstract) {
        const char *p = entry;
        bool found = false, abstract = false;
        size_t n = 0;

        if (strncmp(p, "unix:", 5) != 0)
                return CTL_ADDR_E_TRANSPORT;
        p += 5;
        while (*p && *p != ';') {
                const char *key = p, *eq = NULL;
                bool want;

                while (*p && *p != ';' && *p != ',') {
                        if (*p == '=' && !eq)
                                eq = p;
                        ++p;
                }
                if (!eq)
                        return CTL_ADDR_E_SYNTAX;
                want = (eq - key == 4 && !strncmp(key, "path", 4)) ||
                       (eq - key == 8 && !strncmp(key, "abstract", 8));
                if (want) {
                        if (found)
                                return CTL_ADDR_E_SYNTAX;
                        found = true;
                        abstract = key[0] == 'a';
                        n = 0;
                        for (const char *v = eq + 1; v < p; ++v) {
                                int c = (unsigned char)*v;

                                if (c == '%') {
                                        int h, l;

                                        if (v + 2 >= p || (h = hex_digit(v[1])) < 0 ||
                                            (l = hex_digit(v[2])) < 0)
                                                return CTL_ADDR_E_SYNTAX;
                                        c = h * 16 + l;
                                        v += 2;
                                }
                                if (n + 1 >= path_size)
                                        return CTL_ADDR_E_TOO_LONG;
                                ret_path[n++] = (char)c;
                        }
                        if (n == 0)
                                return CTL_ADDR_E_SYNTAX;
                        ret_path[n] = 0;
                }
                if (*p == ',')
                        ++p;
        }
        if (!found)
                return CTL_ADDR_E_NO_PATH;
        *ret_abstract = abstract;
        return 0;
}

static int write_all(int fd, const void *data, size_t size) {
        const uint8_t *p = data;

        while (size > 0) {
                ssize_t k = send(fd, p, size, MSG_NOSIGNAL);

                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                p += k;
                size -= (size_t)k;
        }
        return 0;
}

/*
 * @sigmask: NULL, or the mask to wait with (ppoll): a caller that blocks its stop signals
 * and passes the unblocked mask here gets -EINTR for a signal that arrives at any moment,
 * without the race of checking a flag before poll().
 */
static int wait_readable(int fd, int timeout_ms, const sigset_t *sigmask) {
        struct pollfd pfd = { .fd = fd, .events = POLLIN };
        struct timespec ts = {
                .tv_sec = timeout_ms / 1000,
                .tv_nsec = (long)(timeout_ms % 1000) * 1000000L,
        };
        int k;

        k = ppoll(&pfd, 1, timeout_ms < 0 ? NULL : &ts, sigmask);
        if (k < 0)
                return -errno;
        if (k == 0)
                return -ETIMEDOUT;
        return 0;
}

/* One SASL line without the "\r\n", read byte by byte: nothing after it may be consumed. */
static int read_line(int fd, char *buf, size_t size) {
        size_t n = 0;

        for (;;) {
                ssize_t k;
                int r = wait_readable(fd, CTL_DEFAULT_TIMEOUT_MS, NULL);

                if (r < 0)
                        return r;
                k = read(fd, buf + n, 1);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                if (k == 0)
                        return -ECONNRESET;
                if (++n >= 2 && buf[n - 2] == '\r' && buf[n - 1] == '\n') {
                        buf[n - 2] = 0;
                        return 0;
                }
                if (n + 1 >= size)
                        return -EPROTO;
        }
}

static int connect_entry(const char *entry, int *ret_fd) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        bool abstract;
        socklen_t len;
        int fd, r;

        r = ctl_address_parse_entry(entry, sa.sun_path + 0, sizeof(sa.sun_path) - 1, &abstract);
        if (r)
                return r;
        if (abstract) {
                size_t n = strlen(sa.sun_path);

                memmove(sa.sun_path + 1, sa.sun_path, n);
                sa.sun_path[0] = 0;
                len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
        } else {
                len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(sa.sun_path) + 1);
        }
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        if (connect(fd, (struct sockaddr *)&sa, len) < 0) {
                r = -errno;
                (void) close(fd);
                return r;
        }
        *ret_fd = fd;
        return 0;
}

static const char *addr_strerror(int r) {
        switch (r) {
        case CTL_ADDR_E_TRANSPORT: return "unsupported transport (only unix: is supported)";
        case CTL_ADDR_E_SYNTAX: return "malformed address entry";
        case CTL_ADDR_E_NO_PATH: return "no path= or abstract= key";
        case CTL_ADDR_E_TOO_LONG: return "socket path too long";
        default: return strerror(-r);
        }
}

static int conn_auth(CtlConn *c) {
        char line[512], cmd[128], uid[32];
        size_t n;
        int r;

        n = (size_t)snprintf(uid, sizeof(uid), "%u", (unsigned)getuid());
        r = snprintf(cmd, sizeof(cmd), "%cAUTH EXTERNAL ", 0);
        for (size_t i = 0; i < n; ++i)
                r += snprintf(cmd + r, sizeof(cmd) - (size_t)r, "%02x", (unsigned char)uid[i]);
        r += snprintf(cmd + r, sizeof(cmd) - (size_t)r, "\r\n");
        r = write_all(c->fd, cmd, (size_t)r);
        if (r < 0)
                return r;
        r = read_line(c->fd, line, sizeof(line));
        if (r < 0)
                return r;
        if (strncmp(line, "OK ", 3) != 0) {
                fprintf(stderr, "kdbusctl: %s: authentication rejected: \"%s\"\n", c->address,
                        line);
                return -EACCES;
        }
        return write_all(c->fd, "BEGIN\r\n", 7);
}

/**
 * ctl_conn_open() - connect to the first entry of @address that accepts, authenticate
 * (EXTERNAL with our uid) and say Hello
 *
 * Reports failures on stderr, naming the address entry. Return: 0, -EACCES (rejected),
 * -EINVAL (no usable entry), -EPROTO (Hello failed), or another negative errno.
 */
int ctl_conn_open(const char *address, CtlConn **ret_conn) {
        _cleanup_(ctl_conn_freep) CtlConn *c = NULL;
        CtlMsg reply = CTL_MSG_NULL(reply);
        WireReader rd;
        const char *p = address, *name;
        int r = CTL_ADDR_E_NO_PATH;

        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->fd = -1;
        while (*p) {
                const char *end = strchrnul(p, ';');

                free(c->address);
                c->address = strndup(p, (size_t)(end - p));
                if (!c->address)
                        return -ENOMEM;
                r = connect_entry(c->address, &c->fd);
                if (r == 0)
                        break;
                p = *end ? end + 1 : end;
        }
        if (c->fd < 0) {
                fprintf(stderr, "kdbusctl: cannot connect to bus at \"%s\": %s\n",
                        c->address ? c->address : address, addr_strerror(r));
                return r > 0 ? -EINVAL : r;
        }
        r = conn_auth(c);
        if (r < 0) {
                if (r != -EACCES)
                        fprintf(stderr, "kdbusctl: %s: authentication failed: %s\n", c->address,
                                strerror(-r));
                return r;
        }
        r = ctl_conn_call(c, WIRE_DRIVER_NAME, WIRE_DRIVER_PATH, WIRE_DRIVER_INTERFACE, "Hello",
                          NULL, CTL_DEFAULT_TIMEOUT_MS, &reply);
        if (r < 0)
                return r;
        wire_reader_init(&rd, reply.data, &reply.hdr);
        if (reply.hdr.type != WIRE_MSG_METHOD_RETURN ||
            wire_reader_read_basic(&rd, 's', &name) != 0) {
                fprintf(stderr, "kdbusctl: %s: Hello failed: %s\n", c->address,
                        ctl_msg_error_text(&reply));
                ctl_msg_deinit(&reply);
                return -EPROTO;
        }
        c->unique_name = strdup(name);
        ctl_msg_deinit(&reply);
        if (!c->unique_name)
                return -ENOMEM;
        *ret_conn = steal_ptr(&c);
        return 0;
}

/**
 * ctl_conn_free() - close and free; accepts NULL. Return: NULL.
 */
CtlConn *ctl_conn_free(CtlConn *c) {
        if (!c)
                return NULL;
        if (c->fd >= 0)
                (void) close(c->fd);
        free(c->address);
        free(c->unique_name);
        free(c->in);
        free(c);
        return NULL;
}

/**
 * ctl_conn_send() - assign the next serial to @spec, build the message and write it whole
 * Return: 0, -EINVAL (the writer or spec is invalid), or negative errno (reported).
 */
int ctl_conn_send(CtlConn *c, WireMsgSpec *spec, const WireWriter *body) {
        uint8_t *data = NULL;
        size_t size;
        int r;

        spec->serial = ++c->serial;
        r = wire_message_build(spec, body, &data, &size);
        if (r) {
                fprintf(stderr, "kdbusctl: cannot build the message for %s: %s\n",
                        spec->member ? spec->member : "(reply)",
                        r < 0 ? strerror(-r) : wire_strerror(r));
                return r < 0 ? r : -EINVAL;
        }
        r = write_all(c->fd, data, size);
        free(data);
        if (r < 0)
                fprintf(stderr, "kdbusctl: %s: cannot send: %s\n", c->address, strerror(-r));
        return r;
}

/**
 * ctl_conn_recv() - the next complete, validated message from the bus
 * Return: 0, -ETIMEDOUT, -EINTR (only with a sigmask set), -ECONNRESET (hang-up),
 * -EBADMSG (malformed, reported), -ENOMEM, or another negative errno (reported).
 */
int ctl_conn_recv(CtlConn *c, int timeout_ms, CtlMsg *ret) {
        size_t need;
        int r;

        for (;;) {
                r = wire_message_frame(c->in, c->in_size, &need);
                if (r == 0 && c->in_size >= need) {
                        CtlMsg m = { .size = need };

                        m.data = malloc(need ? need : 1);
                        if (!m.data)
                                return -ENOMEM;
                        memcpy(m.data, c->in, need);
                        memmove(c->in, c->in + need, c->in_size - need);
                        c->in_size -= need;
                        r = wire_message_parse(m.data, m.size,
                                               c->lenient_fds ? WIRE_MAX_UNIX_FDS : 0, 0, &m.hdr);
                        if (r) {
                                fprintf(stderr, "kdbusctl: %s: the bus sent a malformed message: "
                                        "%s\n", c->address, wire_strerror(r));
                                free(m.data);
                                return -EBADMSG;
                        }
                        *ret = m;
                        return 0;
                }
                if (r != 0 && r != WIRE_E_AGAIN) {
                        fprintf(stderr, "kdbusctl: %s: the bus sent a malformed message: %s\n",
                                c->address, wire_strerror(r));
                        return -EBADMSG;
                }
                if (r == 0 && need > c->in_alloc) {
                        uint8_t *n = realloc(c->in, need);

                        if (!n)
                                return -ENOMEM;
                        c->in = n;
                        c->in_alloc = need;
                } else if (c->in_alloc - c->in_size < 4096) {
                        size_t a = c->in_alloc ? c->in_alloc * 2 : 65536;
                        uint8_t *n = realloc(c->in, a);

                        if (!n)
                                return -ENOMEM;
                        c->in = n;
                        c->in_alloc = a;
                }
                r = wait_readable(c->fd, timeout_ms, c->has_sigmask ? &c->sigmask : NULL);
                if (r == -EINTR && !c->has_sigmask)
                        continue;
                if (r < 0)
                        return r;
                {
                        ssize_t k = read(c->fd, c->in + c->in_size, c->in_alloc - c->in_size);

                        if (k < 0 && (errno == EINTR || errno == EAGAIN))
                                continue;
                        if (k < 0) {
                                r = -errno;
                                if (r == -ECONNRESET)
                                        return r;
                                fprintf(stderr, "kdbusctl: %s: read failed: %s\n", c->address,
                                        strerror(-r));
                                return r;
                        }
                        if (k == 0)
                                return -ECONNRESET;
                        c->in_size += (size_t)k;
                }
        }
}

/**
 * ctl_conn_wait_reply() - the method return or error answering @call
 * Return: 0 (@ret may be an error message), or negative errno as ctl_conn_recv(), reported.
 */
int ctl_conn_wait_reply(CtlConn *c, const WireMsgSpec *call, int timeout_ms, CtlMsg *ret) {
        int r;

        for (;;) {
                CtlMsg m = CTL_MSG_NULL(m);

                r = ctl_conn_recv(c, timeout_ms, &m);
                if (r == -ETIMEDOUT) {
                        fprintf(stderr, "kdbusctl: %s: no reply from %s to %s.%s within %d ms\n",
                                c->address, call->destination ? call->destination
                                                              : "(no destination)",
                                call->interface ? call->interface : "", call->member,
                                timeout_ms);
                        return r;
                }
                if (r == -ECONNRESET) {
                        fprintf(stderr, "kdbusctl: %s: the bus closed the connection while "
                                "waiting for the reply to %s\n", c->address, call->member);
                        return r;
                }
                if (r < 0)
                        return r;
                if ((m.hdr.type == WIRE_MSG_METHOD_RETURN || m.hdr.type == WIRE_MSG_ERROR) &&
                    m.hdr.reply_serial == call->serial) {
                        *ret = m;
                        return 0;
                }
                ctl_msg_deinit(&m);
        }
}

/**
 * ctl_conn_call() - send a method call and wait for its reply
 * Return: 0 (@ret may be an error message) or negative errno, reported.
 */
int ctl_conn_call(CtlConn *c, const char *dest, const char *path, const char *iface,
                  const char *member, const WireWriter *body, int timeout_ms, CtlMsg *ret) {
        WireMsgSpec spec = {
                .type = WIRE_MSG_METHOD_CALL,
                .path = path,
                .interface = iface,
                .member = member,
                .destination = dest,
        };
        int r;

        r = ctl_conn_send(c, &spec, body);
        if (r < 0)
                return r;
        return ctl_conn_wait_reply(c, &spec, timeout_ms, ret);
}

/**
 * ctl_conn_call_driver() - call org.freedesktop.DBus with no argument or one string
 * Return: as ctl_conn_call().
 */
int ctl_conn_call_driver(CtlConn *c, const char *iface, const char *member, const char *arg,
                         CtlMsg *ret) {
        WireWriter w;
        int r;

        wire_writer_init(&w);
        if (arg)
                (void) wire_writer_append_basic(&w, 's', arg);
        r = ctl_conn_call(c, WIRE_DRIVER_NAME, WIRE_DRIVER_PATH, iface, member, &w,
                          CTL_DEFAULT_TIMEOUT_MS, ret);
        wire_writer_deinit(&w);
        return r;
}

/**
 * ctl_msg_error_text() - "ErrorName: message" of an error reply, in a static buffer
 */
const char *ctl_msg_error_text(const CtlMsg *m) {
        static char buf[1024];
        WireReader rd;
        const char *text = NULL;

        if (m->hdr.type != WIRE_MSG_ERROR)
                return "not an error";
        wire_reader_init(&rd, m->data, &m->hdr);
        if (wire_reader_peek(&rd) == 's')
                (void) wire_reader_read_basic(&rd, 's', &text);
        snprintf(buf, sizeof(buf), "%s%s%s", m->hdr.error_name, text ? ": " : "",
                 text ? text : "");
        return buf;
}
