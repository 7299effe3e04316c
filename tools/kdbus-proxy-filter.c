/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * kdbus-proxy's filtering proxy: the bytes (see kdbus-proxy-filter.h). Each client gets a
 * connection of its own to the bus, opened when it connects. SASL goes through untouched,
 * line by line: the bus authenticates the proxy's socket, which is the app's user (the
 * proxy runs as the app's user, as xdg-dbus-proxy does). The bus answers each SASL command
 * with one line and BEGIN with none, so once the client has said BEGIN and the bus has
 * answered every command before it, both streams carry messages, which are framed here and
 * judged whole (kdbus-proxy-judge.c). fds travel with their message in both directions.
 * Backpressure: a side is read only while the other side's output queue is under
 * PROXY_OUT_MAX, so a slow reader slows its writer down instead of growing the proxy.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include "tools/kdbus-proxy-client.h"
#include "tools/kdbus-proxy-filter.h"
#include "wire/protocol.h"

#define PROXY_OUT_MAX (4u * 1024u * 1024u)
#define PROXY_SASL_LINE_MAX 16384u
#define PROXY_READ_CHUNK 65536u
#define PROXY_IN_KEEP (1024u * 1024u)

struct ProxyFilter {
        const ProxyBusArgs *args;
        int listen_fd;
        struct sockaddr_un upstream;
        socklen_t upstream_len;
        ProxyClient *clients;
        unsigned next_id;
};

void proxy_client_log(const ProxyClient *c, const char *format, ...) {
        va_list ap;

        if (!c->args->log)
                return;
        printf("client %u: ", c->id);
        va_start(ap, format);
        vprintf(format, ap);
        va_end(ap);
        putchar('\n');
        fflush(stdout);
}

static void close_fds(int *fds, unsigned n) {
        unsigned i;

        for (i = 0; i < n; ++i)
                (void) close(fds[i]);
}

int proxy_side_queue(ProxySide *side, uint8_t *data, size_t size, int *fds, unsigned n_fds) {
        ProxyChunk *ch = calloc(1, sizeof(*ch));

        if (!ch) {
                free(data);
                close_fds(fds, n_fds);
                free(fds);
                return -ENOMEM;
        }
        *ch = (ProxyChunk){ .data = data, .size = size, .fds = fds, .n_fds = n_fds };
        if (side->out_tail)
                side->out_tail->next = ch;
        else
                side->out = ch;
        side->out_tail = ch;
        side->out_bytes += size;
        return 0;
}

static int queue_copy(ProxySide *side, const void *data, size_t size) {
        uint8_t *copy = malloc(size ? size : 1);

        if (!copy)
                return -ENOMEM;
        memcpy(copy, data, size);
        return proxy_side_queue(side, copy, size, NULL, 0);
}

static void side_deinit(ProxySide *side) {
        ProxyChunk *ch;

        while ((ch = side->out)) {
                side->out = ch->next;
                close_fds(ch->fds, ch->n_fds);
                free(ch->fds);
                free(ch->data);
                free(ch);
        }
        close_fds(side->in_fds, side->n_in_fds);
        free(side->in_fds);
        free(side->in);
        if (side->fd >= 0)
                (void) close(side->fd);
        *side = (ProxySide){ .fd = -1 };
}

/* Write what @side can take now. Return: 0 or -errno. */
static int side_flush(ProxySide *side) {
        while (side->out) {
                ProxyChunk *ch = side->out;
                struct iovec iov = { ch->data + ch->sent, ch->size - ch->sent };
                union {
                        struct cmsghdr h;
                        uint8_t buf[CMSG_SPACE(sizeof(int) * WIRE_MAX_UNIX_FDS)];
                } ctl;
                struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
                ssize_t n;

                if (ch->n_fds && !ch->sent) {
                        memset(&ctl, 0, sizeof(ctl));
                        mh.msg_control = ctl.buf;
                        mh.msg_controllen = CMSG_SPACE(sizeof(int) * ch->n_fds);
                        ctl.h.cmsg_level = SOL_SOCKET;
                        ctl.h.cmsg_type = SCM_RIGHTS;
                        ctl.h.cmsg_len = CMSG_LEN(sizeof(int) * ch->n_fds);
                        memcpy(CMSG_DATA(&ctl.h), ch->fds, sizeof(int) * ch->n_fds);
                }
                n = sendmsg(side->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (n < 0)
                        return errno == EAGAIN || errno == EINTR ? 0 : -errno;
                if (ch->n_fds) {
                        close_fds(ch->fds, ch->n_fds);
                        ch->n_fds = 0;
                }
                ch->sent += (size_t)n;
                side->out_bytes -= (size_t)n;
                if (ch->sent < ch->size)
                        return 0;
                side->out = ch->next;
                if (!side->out)
                        side->out_tail = NULL;
                free(ch->fds);
                free(ch->data);
                free(ch);
        }
        return 0;
}

/* Read what is there into @side's buffers. Return: bytes read, 0 at EOF, -EAGAIN, -errno. */
static ssize_t side_read(ProxySide *side) {
        union {
                struct cmsghdr h;
                uint8_t buf[CMSG_SPACE(sizeof(int) * WIRE_MAX_UNIX_FDS)];
        } ctl;
        struct iovec iov;
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
                             .msg_controllen = sizeof(ctl.buf) };
        struct cmsghdr *cm;
        ssize_t n;

        if (side->in_alloc - side->in_size < PROXY_READ_CHUNK) {
                size_t alloc = side->in_size + PROXY_READ_CHUNK;
                uint8_t *in = realloc(side->in, alloc);

                if (!in)
                        return -ENOMEM;
                side->in = in;
                side->in_alloc = alloc;
        }
        iov = (struct iovec){ side->in + side->in_size, side->in_alloc - side->in_size };
        n = recvmsg(side->fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
        if (n < 0)
                return errno == EAGAIN || errno == EINTR ? -EAGAIN : -errno;
        for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
                unsigned k = (unsigned)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
                int *fds;

                if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
                        continue;
                fds = realloc(side->in_fds, (side->n_in_fds + k) * sizeof(int));
                if (!fds) {
                        close_fds((int *)CMSG_DATA(cm), k);
                        return -ENOMEM;
                }
                memcpy(fds + side->n_in_fds, CMSG_DATA(cm), k * sizeof(int));
                side->in_fds = fds;
                side->n_in_fds += k;
        }
        side->in_size += (size_t)n;
        return n;
}

static void side_consume(ProxySide *side, size_t n) {
        memmove(side->in, side->in + n, side->in_size - n);
        side->in_size -= n;
        /* a large message passed: do not keep its room for the connection's life */
        if (!side->in_size && side->in_alloc > PROXY_IN_KEEP) {
                free(side->in);
                side->in = NULL;
                side->in_alloc = 0;
        }
}

/* The next whole message of @side, taken out of its buffers, with its fds. Return: 1 (one
 * is there), 0 (not yet), -EBADMSG (the stream is no D-Bus), -ENOMEM. */
static int side_take_message(ProxySide *side, uint8_t **ret, size_t *ret_size, WireHeader *hdr,
                             int **ret_fds, unsigned *ret_n_fds) {
        uint8_t *msg;
        int *fds = NULL;
        size_t size;
        int r;

        r = wire_message_frame(side->in, side->in_size, &size);
        if (r == WIRE_E_AGAIN || (!r && size > side->in_size))
                return 0;
        if (r)
                return -EBADMSG;
        r = wire_message_parse(side->in, size, side->n_in_fds, 0, hdr);
        if (r)
                return -EBADMSG;
        msg = malloc(size);
        if (!msg)
                return -ENOMEM;
        if (hdr->n_fds) {
                fds = malloc(hdr->n_fds * sizeof(int));
                if (!fds) {
                        free(msg);
                        return -ENOMEM;
                }
                memcpy(fds, side->in_fds, hdr->n_fds * sizeof(int));
                memmove(side->in_fds, side->in_fds + hdr->n_fds,
                        (side->n_in_fds - hdr->n_fds) * sizeof(int));
                side->n_in_fds -= hdr->n_fds;
        }
        memcpy(msg, side->in, size);
        side_consume(side, size);
        /* the header's strings point into the copy */
        r = wire_message_parse(msg, size, hdr->n_fds, WIRE_PARSE_SKIP_BODY, hdr);
        if (r) {
                free(msg);
                close_fds(fds, hdr->n_fds);
                free(fds);
                return -EBADMSG;
        }
        *ret = msg;
        *ret_size = size;
        *ret_fds = fds;
        *ret_n_fds = hdr->n_fds;
        return 1;
}

/* Frame and judge every whole message of @side. Return: 0 or -errno. */
static int drain_messages(ProxyClient *c, ProxySide *side, bool from_bus) {
        for (;;) {
                WireHeader hdr;
                uint8_t *msg;
                size_t size;
                int *fds;
                unsigned n_fds;
                int r = side_take_message(side, &msg, &size, &hdr, &fds, &n_fds);

                if (r <= 0)
                        return r;
                r = from_bus ? proxy_judge_from_bus(c, msg, size, &hdr, fds, n_fds) :
                               proxy_judge_from_client(c, msg, size, &hdr, fds, n_fds);
                if (r < 0)
                        return r;
        }
}

/* The client's SASL lines go up as they are; BEGIN ends them. Return: 0 or -errno. */
static int client_sasl(ProxyClient *c) {
        ProxySide *s = &c->down;

        if (!c->nul_seen && s->in_size) {
                if (s->in[0] != '\0')
                        return -EBADMSG;
                c->nul_seen = true;
                side_consume(s, 1);
                if (queue_copy(&c->up, "", 1) < 0)
                        return -ENOMEM;
        }
        while (!c->begin_sent) {
                uint8_t *nl = s->in_size ? memchr(s->in, '\n', s->in_size) : NULL;
                size_t len;
                int r;

                if (!nl)
                        return s->in_size > PROXY_SASL_LINE_MAX ? -EBADMSG : 0;
                len = (size_t)(nl - s->in) + 1;
                r = queue_copy(&c->up, s->in, len);
                if (r < 0)
                        return r;
                if (len >= 6 && !memcmp(s->in, "BEGIN", 5) && (s->in[5] == '\r' || s->in[5] == '\n'))
                        c->begin_sent = true;
                else
                        ++c->auth_pending;
                side_consume(s, len);
        }
        return 0;
}

/* The bus's SASL answers go down as they are, one per command. Return: 0 or -errno. */
static int bus_sasl(ProxyClient *c) {
        ProxySide *s = &c->up;

        while (!c->up_running) {
                uint8_t *nl;
                size_t len;
                int r;

                if (c->begin_sent && !c->auth_pending) {
                        c->up_running = true;
                        break;
                }
                nl = s->in_size ? memchr(s->in, '\n', s->in_size) : NULL;
                if (!nl)
                        return s->in_size > PROXY_SASL_LINE_MAX ? -EBADMSG : 0;
                len = (size_t)(nl - s->in) + 1;
                r = queue_copy(&c->down, s->in, len);
                if (r < 0)
                        return r;
                if (c->auth_pending)
                        --c->auth_pending;
                side_consume(s, len);
        }
        return 0;
}

/* Everything that can be done with the bytes both sides hold. Return: 0 or -errno. */
static int client_process(ProxyClient *c) {
        int r;

        if (!c->begin_sent) {
                r = client_sasl(c);
                if (r < 0)
                        return r;
        }
        if (!c->up_running) {
                r = bus_sasl(c);
                if (r < 0)
                        return r;
        }
        if (c->begin_sent) {
                r = drain_messages(c, &c->down, false);
                if (r < 0)
                        return r;
        }
        if (c->up_running) {
                r = drain_messages(c, &c->up, true);
                if (r < 0)
                        return r;
        }
        return 0;
}

static ProxyClient *client_free(ProxyClient *c) {
        if (!c)
                return NULL;
        proxy_judge_release(c);
        side_deinit(&c->down);
        side_deinit(&c->up);
        free(c);
        return NULL;
}

static int upstream_connect(const ProxyFilter *f) {
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

        if (fd < 0)
                return -errno;
        if (connect(fd, (const struct sockaddr *)&f->upstream, f->upstream_len) < 0) {
                int r = -errno;

                (void) close(fd);
                return r;
        }
        (void) fcntl(fd, F_SETFL, O_NONBLOCK);
        return fd;
}

static void filter_accept(ProxyFilter *f) {
        struct ucred cred = { 0 };
        socklen_t len = sizeof(cred);
        ProxyClient *c;
        int fd, up;

        fd = accept4(f->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0)
                return;
        up = upstream_connect(f);
        if (up < 0) {
                fprintf(stderr, "kdbus-proxy: cannot connect to the bus for a client of %s: "
                        "%s, closing it\n", f->args->path, strerror(-up));
                (void) close(fd);
                return;
        }
        c = calloc(1, sizeof(*c));
        if (!c) {
                (void) close(fd);
                (void) close(up);
                return;
        }
        (void) getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len);
        *c = (ProxyClient){ .id = ++f->next_id, .args = f->args, .pid = cred.pid,
                            .uid = cred.uid, .next_serial = 1, .fake_serial = 0x80000000u };
        c->down.fd = fd;
        c->up.fd = up;
        if (proxy_view_init(&c->view, f->args) < 0) {
                fprintf(stderr, "kdbus-proxy: the rules of %s do not load, closing a client\n",
                        f->args->path);
                client_free(c);
                return;
        }
        c->next = f->clients;
        f->clients = c;
        proxy_client_log(c, "connected (pid %d, uid %u)", (int)c->pid, (unsigned)c->uid);
}

/* Parse the first unix:path= / unix:abstract= entry of @address (its %XX escapes
 * undone). Return: 0 or -EINVAL. */
static int address_parse(const char *address, struct sockaddr_un *sa, socklen_t *ret_len) {
        const char *entry = address;

        while (entry && *entry) {
                const char *end = strchr(entry, ';');
                size_t len = end ? (size_t)(end - entry) : strlen(entry);

                if (len > 5 && !strncmp(entry, "unix:", 5)) {
                        const char *kv = entry + 5, *stop = entry + len;

                        while (kv < stop) {
                                const char *comma = memchr(kv, ',', (size_t)(stop - kv));
                                const char *kend = comma ? comma : stop;
                                bool abstract = !strncmp(kv, "abstract=", 9);
                                size_t n = 0;

                                if (abstract || !strncmp(kv, "path=", 5)) {
                                        const char *p = kv + (abstract ? 9 : 5);

                                        memset(sa, 0, sizeof(*sa));
                                        sa->sun_family = AF_UNIX;
                                        if (abstract)
                                                ++n;
                                        for (; p < kend && n < sizeof(sa->sun_path) - 1; ++n) {
                                                unsigned v;

                                                if (*p == '%' && kend - p >= 3 &&
                                                    sscanf(p + 1, "%2x", &v) == 1) {
                                                        sa->sun_path[n] = (char)v;
                                                        p += 3;
                                                } else {
                                                        sa->sun_path[n] = *p++;
                                                }
                                        }
                                        if (p < kend)
                                                return -EINVAL;
                                        *ret_len = (socklen_t)(offsetof(struct sockaddr_un,
                                                                        sun_path) + n +
                                                               (abstract ? 0 : 1));
                                        return 0;
                                }
                                kv = comma ? comma + 1 : stop;
                        }
                }
                entry = end ? end + 1 : NULL;
        }
        return -EINVAL;
}

int proxy_filter_new(const ProxyBusArgs *b, const char *address, ProxyFilter **ret) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        ProxyFilter *f;
        int r;

        f = calloc(1, sizeof(*f));
        if (!f)
                return -ENOMEM;
        f->args = b;
        f->listen_fd = -1;
        if (address_parse(address, &f->upstream, &f->upstream_len) < 0) {
                fprintf(stderr, "kdbus-proxy: \"%s\" has no unix:path= or unix:abstract= entry "
                        "to connect to\n", address);
                proxy_filter_free(f);
                return -EINVAL;
        }
        r = -ENAMETOOLONG;
        if (strlen(b->path) < sizeof(sa.sun_path)) {
                strcpy(sa.sun_path, b->path);
                f->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
                (void) unlink(b->path);         /* flatpak reserved the name with mkstemp() */
                r = f->listen_fd >= 0 &&
                    bind(f->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
                    listen(f->listen_fd, 128) == 0 ? 0 : -errno;
        }
        if (r < 0) {
                fprintf(stderr, "kdbus-proxy: cannot listen at %s: %s\n", b->path, strerror(-r));
                proxy_filter_free(f);
                return r;
        }
        *ret = f;
        return 0;
}

ProxyFilter *proxy_filter_free(ProxyFilter *f) {
        if (!f)
                return NULL;
        while (f->clients) {
                ProxyClient *c = f->clients;

                f->clients = c->next;
                client_free(c);
        }
        if (f->listen_fd >= 0) {
                (void) close(f->listen_fd);
                (void) unlink(f->args->path);
        }
        free(f);
        return NULL;
}

size_t proxy_filter_poll_count(const ProxyFilter *f) {
        const ProxyClient *c;
        size_t n = 1;

        for (c = f->clients; c; c = c->next)
                n += 2;
        return n;
}

void proxy_filter_poll_fill(const ProxyFilter *f, struct pollfd *pfd) {
        const ProxyClient *c;

        *pfd++ = (struct pollfd){ .fd = f->listen_fd, .events = POLLIN };
        for (c = f->clients; c; c = c->next) {
                pfd[0] = (struct pollfd){ .fd = c->down.fd };
                pfd[1] = (struct pollfd){ .fd = c->up.fd };
                if (c->up.out_bytes < PROXY_OUT_MAX)
                        pfd[0].events |= POLLIN;
                if (c->down.out_bytes < PROXY_OUT_MAX)
                        pfd[1].events |= POLLIN;
                if (c->down.out)
                        pfd[0].events |= POLLOUT;
                if (c->up.out)
                        pfd[1].events |= POLLOUT;
                pfd += 2;
        }
}

/* One side's events. Return: 0, or -errno / -ECONNRESET (the client is done). */
static int side_dispatch(ProxyClient *c, ProxySide *side, short revents) {
        int r;

        if (revents & POLLOUT) {
                r = side_flush(side);
                if (r < 0)
                        return r;
        }
        if (revents & (POLLIN | POLLHUP | POLLERR)) {
                ssize_t n = side_read(side);

                if (n == 0)
                        return -ECONNRESET;
                if (n < 0 && n != -EAGAIN)
                        return (int)n;
        }
        return 0;
}

void proxy_filter_poll_dispatch(ProxyFilter *f, const struct pollfd *pfd) {
        ProxyClient **pp = &f->clients, *c;
        const struct pollfd *p = pfd + 1;

        /* clients first (the list as it was filled), then new ones at its head */
        while ((c = *pp)) {
                int r = side_dispatch(c, &c->down, p[0].revents);

                if (!r)
                        r = side_dispatch(c, &c->up, p[1].revents);
                if (!r)
                        r = client_process(c);
                if (!r)
                        r = side_flush(&c->up);
                if (!r)
                        r = side_flush(&c->down);
                if (r < 0) {
                        /* what the bus said last (an error, NameLost) still reaches the app */
                        (void) side_flush(&c->down);
                        proxy_client_log(c, "disconnected (%s)", r == -ECONNRESET ?
                                         "end of stream" : strerror(-r));
                        *pp = c->next;
                        client_free(c);
                } else {
                        pp = &c->next;
                }
                p += 2;
        }
        if (pfd[0].revents & POLLIN)
                filter_accept(f);
}
