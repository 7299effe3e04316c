/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * kdbus-proxy: xdg-dbus-proxy's command line (tools/kdbus-proxy-args.h), so that sandbox
 * launchers such as flatpak can run it in xdg-dbus-proxy's place unchanged.
 *
 * In front of a kdbusd it is no proxy at all: for each ADDRESS PATH it binds a listening
 * socket at PATH, hands it to kdbusd as a custom endpoint's legacy socket (ENDPOINT_MAKE
 * with KDBUS_MAKE_LEGACY_FD) with the rules of the command line (ENDPOINT_UPDATE with
 * KDBUS_ENDPOINT_POLICY_XDG), and steps out of the data path: the sandbox's clients talk to
 * kdbusd directly, and kdbusd applies the rules on its live routing state. The endpoints
 * live as long as this process (their owner handles are ours); with --fd, this process
 * lives until the other end of FD closes (xdg-dbus-proxy's sync protocol: one byte is
 * written to FD once every socket listens).
 *
 * A kdbusd is recognised by a "kernel:path=NATIVE" entry in ADDRESS, kdbus's own address
 * form (systemd's kdbus buses were "kernel:path=...;unix:path=..."): libdbus, GDBus and
 * sd-bus skip an entry of a transport they do not know, so a session whose
 * DBUS_SESSION_BUS_ADDRESS lists kdbusd's native socket first works for every client, and
 * flatpak passes that address on to us as it is.
 *
 * Any other bus (dbus-daemon, dbus-broker), or a kdbusd with --log: kdbus-proxy is itself
 * the filtering proxy (tools/kdbus-proxy-filter.h), with the rules of kdbusd's endpoints.
 * One process serves every ADDRESS PATH group of its command line, of either kind.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include "kdbus/kdbus.h"
#include "libkdbus/libkdbus.h"
#include "tools/kdbus-proxy-args.h"
#include "tools/kdbus-proxy-filter.h"

#define PROXY_CMD_MAX (256u * 1024u)

static const char meson_project_version[] = PROJECT_VERSION;

typedef struct ProxyEndpointHandle {
        KdbusConn *handle;              /* the endpoint's owner: it lives while this does */
        const char *path;               /* the socket we bound (unlinked at exit) */
} ProxyEndpointHandle;

static void usage(FILE *out) {
        fputs("usage: kdbus-proxy [OPTIONS...] [ADDRESS PATH [OPTIONS...] ...]\n\n"
              "Options:\n"
              "    --help                       Print this help\n"
              "    --version                    Print version\n"
              "    --fd=FD                      Write one byte to FD when ready, stop when it "
              "closes\n"
              "    --args=FD                    Read NUL-separated arguments from FD\n\n"
              "Proxy options:\n"
              "    --filter                     Enable filtering\n"
              "    --log                        Print each message and what became of it\n"
              "    --sloppy-names               Make every unique name visible\n"
              "    --see=NAME                   SEE NAME (NAME.* : NAME and all below it)\n"
              "    --talk=NAME                  TALK to NAME\n"
              "    --own=NAME                   OWN NAME\n"
              "    --call=NAME=RULE             Allow calls on NAME matching RULE\n"
              "    --broadcast=NAME=RULE        Receive broadcasts from NAME matching RULE\n\n"
              "RULE: [METHOD][@PATH], METHOD * | org.foo.* | org.foo.Bar.Method, PATH /a/b or "
              "/a/b/*.\n"
              "In front of a kdbusd (a kernel:path= entry in ADDRESS) PATH becomes a custom\n"
              "endpoint of the bus, enforced inside kdbusd, with no process in the data path.\n"
              "In front of any other bus, or with --log, kdbus-proxy is a filtering proxy with\n"
              "the same rules (one bus connection per client, as xdg-dbus-proxy).\n",
              out);
}

/* The NATIVE of a "kernel:path=NATIVE" entry of @address, malloc()ed, or NULL. */
static char *address_kdbus_path(const char *address) {
        const char *entry = address;

        while (entry && *entry) {
                const char *end = strchr(entry, ';');
                size_t len = end ? (size_t)(end - entry) : strlen(entry);

                if (len > 12 && strncmp(entry, "kernel:path=", 12) == 0) {
                        const char *comma = memchr(entry + 12, ',', len - 12);

                        return strndup(entry + 12, (size_t)((comma ? comma : entry + len) -
                                                            (entry + 12)));
                }
                entry = end ? end + 1 : NULL;
        }
        return NULL;
}

/* A listening socket at @path (whatever file is there is replaced: flatpak makes one with
 * mkstemp() to reserve the name). Return: the fd or -errno. */
static int listen_at(const char *path) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd;

        if (strlen(path) >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        strcpy(sa.sun_path, path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        (void) unlink(path);
        if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 128) < 0) {
                int r = -errno;

                (void) close(fd);
                return r;
        }
        return fd;
}

/* Append an item; Return: the new offset, or 0 when @cap is exceeded. */
static size_t put_item(uint8_t *buf, size_t at, size_t cap, uint64_t type, const void *a,
                       size_t alen) {
        struct kdbus_item *item = (void *)(buf + at);

        if (at + KDBUS_ITEM_SIZE(alen) > cap)
                return 0;
        item->size = KDBUS_ITEM_HEADER_SIZE + alen;
        item->type = type;
        memcpy(item->data, a, alen);
        return at + KDBUS_ALIGN8(item->size);
}

/* ENDPOINT_UPDATE with the rules of @b. Return: 0 or -errno. */
static int endpoint_update(KdbusConn *c, const ProxyBusArgs *b) {
        static uint8_t buf[PROXY_CMD_MAX] __attribute__((aligned(8)));
        struct kdbus_cmd *cmd = (void *)buf;
        size_t size;
        int r;

        memset(buf, 0, sizeof(buf));
        cmd->flags = KDBUS_ENDPOINT_POLICY_XDG;
        if (b->sloppy_names)
                cmd->flags |= KDBUS_ENDPOINT_SLOPPY_NAMES;
        if (!b->filter)
                cmd->flags |= KDBUS_ENDPOINT_UNFILTERED;
        r = proxy_bus_args_policy_items(b, buf + sizeof(*cmd), sizeof(buf) - sizeof(*cmd), &size);
        if (r < 0)
                return r;
        cmd->size = sizeof(*cmd) + size;
        return kdbus_conn_command(c, KDBUS_CMD_ENDPOINT_UPDATE, cmd, cmd->size, NULL, 0);
}

/* Make the endpoint of @b on the kdbusd whose native socket is @native. */
static int endpoint_open(const ProxyBusArgs *b, const char *native, unsigned index,
                         ProxyEndpointHandle *ret) {
        uint8_t buf[512] __attribute__((aligned(8))) = { 0 };
        struct kdbus_cmd *cmd = (void *)buf;
        KdbusConn *c = NULL;
        char name[128];
        int fd, r;

        r = kdbus_conn_open(native, &c);
        if (r < 0) {
                fprintf(stderr, "kdbus-proxy: cannot connect to kdbusd's native socket %s "
                        "(from \"%s\"): %s\n", native, b->address, strerror(-r));
                return r;
        }
        fd = listen_at(b->path);
        if (fd < 0) {
                fprintf(stderr, "kdbus-proxy: cannot listen at %s: %s\n", b->path,
                        strerror(-fd));
                kdbus_conn_close(c);
                return fd;
        }
        (void) snprintf(name, sizeof(name), "%u-kdbus-proxy-%u-%u", (unsigned)geteuid(),
                        (unsigned)getpid(), index);
        cmd->flags = KDBUS_MAKE_LEGACY_FD;
        cmd->size = put_item(buf, sizeof(*cmd), sizeof(buf), KDBUS_ITEM_MAKE_NAME, name,
                             strlen(name) + 1);
        r = kdbus_conn_command(c, KDBUS_CMD_ENDPOINT_MAKE, cmd, cmd->size, &fd, 1);
        (void) close(fd);               /* kdbusd has its own copy now */
        if (r < 0) {
                fprintf(stderr, "kdbus-proxy: kdbusd at %s refused the endpoint for %s: %s%s\n",
                        native, b->path, strerror(-r),
                        r == -EMFILE ? " (your user holds as many endpoints on this bus as it "
                        "may)" : r == -EPERM ? " (only the bus's owner and CAP_IPC_OWNER may "
                        "make endpoints on this bus: kdbusd --native-endpoint-makers)" : "");
                goto fail;
        }
        r = endpoint_update(c, b);
        if (r < 0) {
                fprintf(stderr, "kdbus-proxy: kdbusd at %s refused the rules for %s: %s%s\n",
                        native, b->path, strerror(-r),
                        r == -E2BIG ? " (too many rules)" :
                        r == -EEXIST ? " (a name given twice with different forms?)" : "");
                goto fail;
        }
        ret->handle = c;
        ret->path = b->path;
        return 0;
fail:
        (void) unlink(b->path);
        kdbus_conn_close(c);
        return r;
}

/* Room for the poll set: signals, sync fd, endpoint owners, and every filter's fds. */
static struct pollfd *poll_set(struct pollfd *pfd, size_t *alloc, size_t want) {
        struct pollfd *grown;

        if (want <= *alloc)
                return pfd;
        grown = realloc(pfd, want * sizeof(*grown));
        if (grown)
                *alloc = want;
        return grown;
}

int main(int argc, char **argv) {
        ProxyArgs args = PROXY_ARGS_NULL;
        ProxyEndpointHandle *eps = NULL;
        ProxyFilter **filters = NULL;
        struct pollfd *pfd = NULL;
        char err[512];
        sigset_t mask;
        size_t i, n = 0, n_filters = 0, alloc = 0;
        int r, sfd = -1, status = EXIT_FAILURE;

        if (argc == 1) {
                usage(stderr);
                return EXIT_FAILURE;
        }
        r = proxy_args_parse(&args, argc, argv, err, sizeof(err));
        if (r < 0) {
                fprintf(stderr, "kdbus-proxy: %s\n", err);
                goto out;
        }
        if (args.help || args.version) {
                if (args.help)
                        usage(stdout);
                else
                        printf("kdbus-proxy (kdbus-compat) %s\n", meson_project_version);
                status = EXIT_SUCCESS;
                goto out;
        }

        /* the signals that end us, taken before any socket exists */
        sigemptyset(&mask);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGHUP);
        sigprocmask(SIG_BLOCK, &mask, NULL);
        signal(SIGPIPE, SIG_IGN);       /* the sync fd's reader may be gone */
        sfd = signalfd(-1, &mask, SFD_CLOEXEC);
        eps = calloc(args.n_buses, sizeof(*eps));
        filters = calloc(args.n_buses, sizeof(*filters));
        if (sfd < 0 || !eps || !filters) {
                fprintf(stderr, "kdbus-proxy: %s\n", sfd < 0 ? strerror(errno) : "out of memory");
                goto out;
        }
        for (i = 0; i < args.n_buses; ++i) {
                char *native = address_kdbus_path(args.buses[i].address);

                /* a kdbusd gets an endpoint, unless --log asks to see each message: then,
                 * as for any other bus, a proxy process in the path does */
                if (native && !args.buses[i].log) {
                        r = endpoint_open(&args.buses[i], native, (unsigned)i, &eps[n]);
                        free(native);
                        if (r < 0)
                                goto out;
                        ++n;
                        continue;
                }
                free(native);
                r = proxy_filter_new(&args.buses[i], args.buses[i].address, &filters[n_filters]);
                if (r < 0)
                        goto out;
                ++n_filters;
        }

        if (args.sync_fd >= 0) {
                ssize_t w;

                do
                        w = write(args.sync_fd, "x", 1);
                while (w < 0 && errno == EINTR);
                if (w != 1)
                        fprintf(stderr, "kdbus-proxy: cannot write to the sync fd %d: %s\n",
                                args.sync_fd, w < 0 ? strerror(errno) : "short write");
        }

        /* hold the endpoints and run the filters: until a signal, the sync fd's other end
         * closing (POLLERR / POLLHUP on either end of a pipe or socket), or a kdbusd going
         * away */
        for (;;) {
                size_t want = 2 + n, at;

                for (i = 0; i < n_filters; ++i)
                        want += proxy_filter_poll_count(filters[i]);
                pfd = poll_set(pfd, &alloc, want);
                if (!pfd) {
                        fprintf(stderr, "kdbus-proxy: out of memory\n");
                        goto out;
                }
                pfd[0] = (struct pollfd){ .fd = sfd, .events = POLLIN };
                pfd[1] = (struct pollfd){ .fd = args.sync_fd, .events = 0 };
                for (i = 0; i < n; ++i)
                        pfd[2 + i] = (struct pollfd){ .fd = eps[i].handle->fd, .events = POLLIN };
                for (i = 0, at = 2 + n; i < n_filters; ++i) {
                        proxy_filter_poll_fill(filters[i], pfd + at);
                        at += proxy_filter_poll_count(filters[i]);
                }
                if (poll(pfd, want, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        break;
                }
                if (pfd[0].revents || pfd[1].revents)
                        break;
                for (i = 0; i < n && !pfd[2 + i].revents; ++i)
                        ;
                if (i < n) {
                        fprintf(stderr, "kdbus-proxy: the kdbusd of %s went away\n",
                                eps[i].path);
                        break;
                }
                for (i = 0, at = 2 + n; i < n_filters; ++i) {
                        size_t count = proxy_filter_poll_count(filters[i]);

                        proxy_filter_poll_dispatch(filters[i], pfd + at);
                        at += count;
                }
        }
        status = EXIT_SUCCESS;
out:
        for (i = 0; i < n; ++i) {
                (void) unlink(eps[i].path);
                kdbus_conn_close(eps[i].handle);
        }
        for (i = 0; i < n_filters; ++i)
                proxy_filter_free(filters[i]);
        free(filters);
        free(eps);
        free(pfd);
        if (sfd >= 0)
                (void) close(sfd);
        proxy_args_deinit(&args);
        return status;
}
