/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Listening sockets. Every socket is SOCK_STREAM|SOCK_CLOEXEC|SOCK_NONBLOCK; accepted
 * sockets are too (accept4). The address a listener prints is the one a client needs:
 * unix:dir= and unix:tmpdir= become unix:path=<the socket we made>, as dbus-daemon 1.14
 * prints them. A path socket we created is unlinked when the listener is freed. An existing
 * path socket that nobody listens on any more (a crashed bus's, or one a bus that dropped
 * privileges could not remove) is replaced, as dbus-daemon replaces it; one that a live bus
 * serves is not (EADDRINUSE), so two buses cannot silently steal each other's socket.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <systemd/sd-daemon.h>
#include "bridge/endpoint.h"
#include "proxy/address.h"
#include "proxy/client.h"
#include "proxy/fd-limit.h"
#include "proxy/listener.h"
#include "proxy/log.h"
#include "proxy/server.h"
#include "util/error.h"

static int listener_on_retry(LoopSource *source, uint64_t usec, void *userdata) {
        ProxyListener *l = userdata;

        (void) loop_source_set_enabled(l->io, LOOP_ON);
        return 0;
}

/* Out of fds: the pending connection stays in the backlog and the level-triggered listener
 * would fire again at once; pause accepting for a moment instead of spinning. */
static void listener_pause(ProxyListener *l) {
        uint64_t when = loop_now(l->server->loop) + 250000;
        int r;

        (void) loop_source_set_enabled(l->io, LOOP_OFF);
        if (!l->retry) {
                r = loop_add_time(l->server->loop, &l->retry, when, listener_on_retry, l);
                if (r < 0) {
                        (void) loop_source_set_enabled(l->io, LOOP_ON);
                        return;
                }
        }
        (void) loop_timer_set(l->retry, when);
}

/*
 * How many connections one wakeup accepts: one, unless the listener was ready in the
 * previous wakeup too (connections come faster than one per wakeup: a storm), then up to
 * LISTENER_ACCEPT_BURST, bounded so that a storm cannot starve the clients already
 * connected. The listener is level-triggered: what one wakeup leaves in the backlog makes
 * the next one return at once. A single connection so costs no accept4() that finds
 * EAGAIN (issue #16: connection churn).
 */
#define LISTENER_ACCEPT_BURST 32u

static unsigned listener_accept_budget(ProxyListener *l) {
        uint64_t now = loop_iteration(l->server->loop);
        bool storm = l->last_iteration && now == l->last_iteration + 1;

        l->last_iteration = now;
        return storm ? LISTENER_ACCEPT_BURST : 1;
}

static int listener_on_io(LoopSource *source, int fd, uint32_t revents, void *userdata) {
        ProxyListener *l = userdata;
        unsigned i, budget = listener_accept_budget(l);

        server_update_time(l->server);

        for (i = 0; i < budget; ++i) {
                ProxyClient *c = NULL;
                int cfd, r;

                cfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
                if (cfd < 0 && (errno == EMFILE || errno == ENFILE)) {
                        /* clients that went are torn down a slice per wakeup
                         * (server_close_some()); their fds may be the ones this needs */
                        server_close_some(l->server, UINT_MAX);
                        server_flush(l->server);
                        cfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
                }
                if (cfd < 0) {
                        int e = errno;

                        if (errno == EAGAIN || errno == EINTR || errno == ECONNABORTED)
                                return 0;
                        if (errno == EMFILE || errno == ENFILE) {
                                /* the reserve (fd-limit.h) is used up too: refuse what is
                                 * pending with the spare fd rather than leave it waiting */
                                r = fd_limit_refuse_pending(fd);
                                proxy_log_peer(LOG_WARNING, &l->log_limit,
                                               loop_now(l->server->loop), NULL,
                                               "Cannot accept a connection on %s: %s "
                                               "(RLIMIT_NOFILE %llu); %s. Raise the fd limit "
                                               "(LimitNOFILE=, ulimit -n)", l->address,
                                               strerror(e), (unsigned long long)fd_limit_get(),
                                               r >= 0 ? "closed the pending connections" :
                                               "pausing for 250 ms");
                                if (r < 0)
                                        listener_pause(l);
                                return 0;
                        }
                        if (errno == ENOBUFS || errno == ENOMEM) {
                                proxy_log_peer(LOG_WARNING, &l->log_limit,
                                               loop_now(l->server->loop), NULL,
                                               "Cannot accept a connection on %s: %s; pausing "
                                               "for 250 ms", l->address, strerror(e));
                                listener_pause(l);
                                return 0;
                        }
                        proxy_log(LOG_ERR, "accept() on %s failed: %s, ignoring", l->address,
                                  strerror(errno));
                        return 0;
                }
                r = client_new(l->server, cfd, true, &c);
                if (r < 0)
                        proxy_log(LOG_ERR, "Cannot set up a new connection on %s: %s, ignoring",
                                  l->address, strerror(-r));
                if (r < 0 || !c)
                        continue;
                if (l->endpoint)
                        bridge_conn_set_endpoint(c->conn, l->endpoint);
                client_start(c);
                server_flush(l->server);        /* may free @c */
        }
        return 0;
}

static int listener_add(Server *server, int fd, const char *unlink_path, const char *address,
                        ProxyListener **ret) {
        ProxyListener *l;
        int r;

        l = calloc(1, sizeof(*l));
        if (!l) {
                (void) close(fd);
                return error_origin(-ENOMEM);
        }
        l->server = server;
        l->fd = fd;
        list_init(&l->link);
        list_append(&server->listeners, &l->link);
        snprintf(l->address, sizeof(l->address), "%s", address);
        if (unlink_path) {
                struct stat st;

                if (stat(unlink_path, &st) == 0) {
                        l->unlink_dev = st.st_dev;
                        l->unlink_ino = st.st_ino;
                }
                l->unlink_path = strdup(unlink_path);
                if (!l->unlink_path) {
                        (void) unlink(unlink_path);
                        listener_free(l);
                        return error_origin(-ENOMEM);
                }
        }
        r = loop_add_io(server->loop, &l->io, fd, EPOLLIN, listener_on_io, l);
        if (r < 0) {
                listener_free(l);
                return error_origin(r);
        }
        if (ret)
                *ret = l;
        return 0;
}

/**
 * listener_free() - close a listener and unlink its path socket
 * @l:          the listener, or NULL
 *
 * Return: NULL.
 */
ProxyListener *listener_free(ProxyListener *l) {
        if (!l)
                return NULL;
        l->io = loop_source_free(l->io);
        l->retry = loop_source_free(l->retry);
        l->fd = fd_close(l->fd);
        if (l->unlink_path) {
                struct stat st;

                /* another bus may have replaced a path we gave up on: leave that alone */
                if (stat(l->unlink_path, &st) == 0 && st.st_dev == l->unlink_dev &&
                    st.st_ino == l->unlink_ino)
                        (void) unlink(l->unlink_path);
        }
        free(l->unlink_path);
        bus_endpoint_unref(l->endpoint);
        list_unlink(&l->link);
        free(l);
        return NULL;
}

/* Whether @sa names a socket file that no one listens on (connect() is refused). */
static bool path_socket_is_stale(const struct sockaddr_un *sa, socklen_t salen) {
        struct stat st;
        int fd, r;

        if (lstat(sa->sun_path, &st) < 0 || !S_ISSOCK(st.st_mode))
                return false;
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return false;
        r = connect(fd, (const struct sockaddr *)sa, salen) < 0 ? errno : 0;
        (void) close(fd);
        return r == ECONNREFUSED;
}

static int listener_bind_unix(Server *server, const char *path, bool abstract, bool keep_path,
                              char *err, size_t err_size) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        char address[4200];
        size_t n = strlen(path);
        socklen_t salen;
        int fd, r;

        if (n == 0 || n >= sizeof(sa.sun_path) - (abstract ? 1 : 0)) {
                snprintf(err, err_size, "Socket name \"%s\" is empty or too long", path);
                return LISTENER_E_BAD_ADDRESS;
        }
        if (abstract) {
                memcpy(sa.sun_path + 1, path, n);
                salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
        } else {
                memcpy(sa.sun_path, path, n);
                salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
        }

        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return error_origin(-errno);
        r = bind(fd, (struct sockaddr *)&sa, salen);
        if (r < 0 && errno == EADDRINUSE && !abstract && path_socket_is_stale(&sa, salen) &&
            unlink(path) == 0)
                r = bind(fd, (struct sockaddr *)&sa, salen);
        if (r < 0 || listen(fd, SOMAXCONN) < 0) {
                r = -errno;
                snprintf(err, err_size, "Failed to bind socket \"%s%s\": %s", abstract ? "@" : "",
                         path, strerror(-r));
                (void) close(fd);
                return error_origin(r);
        }
        if (!abstract)
                (void) chmod(path, 0777);       /* access is the bus's decision, not the fs's */

        snprintf(address, sizeof(address), "unix:%s=", abstract ? "abstract" : "path");
        if (address_escape_append(address, sizeof(address), path) < 0) {
                snprintf(err, err_size, "Socket name \"%s\" is too long", path);
                if (!abstract)
                        (void) unlink(path);
                (void) close(fd);
                return LISTENER_E_BAD_ADDRESS;
        }
        r = listener_add(server, fd, abstract || keep_path ? NULL : path, address, NULL);
        if (r < 0)
                snprintf(err, err_size, "Cannot listen: %s", strerror(-r));
        return r;
}

/**
 * listener_new_endpoint() - the legacy socket of a custom endpoint
 * @server:     the server
 * @path:       where (must not exist: kdbus endpoint names are unique, and a file left
 *              there is not ours to remove)
 * @ep:         the endpoint its clients come through (a reference is taken)
 * @mode:       the socket file's mode (the MAKE_ACCESS_* flags of ENDPOINT_MAKE)
 * @uid:        its owner (the endpoint's creator)
 * @gid:        its group
 * @ret:        the listener (on server->listeners)
 *
 * Return: 0, -EEXIST, -ENAMETOOLONG, or a negative errno.
 */
int listener_new_endpoint(Server *server, const char *path, BusEndpoint *ep, mode_t mode,
                          uid_t uid, gid_t gid, ProxyListener **ret) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        char address[4200] = "unix:path=";
        ProxyListener *l;
        int fd, r;

        if (strlen(path) >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        if (address_escape_append(address, sizeof(address), path) < 0)
                return -ENAMETOOLONG;
        strcpy(sa.sun_path, path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return error_origin(-errno);
        if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
                r = errno == EADDRINUSE ? -EEXIST : -errno;
                (void) close(fd);
                return r;
        }
        /* kdbus: the endpoint node belongs to its creator, mode from MAKE_ACCESS_* */
        /* a bus not running as root cannot give the file to root (a privileged creator):
         * it stays the bus's, which root can use all the same */
        if (chown(path, uid, gid) < 0 && errno != EPERM) {
                r = error_origin(-errno);
                (void) unlink(path);
                (void) close(fd);
                return r;
        }
        if (chmod(path, mode) < 0 || listen(fd, SOMAXCONN) < 0) {
                r = error_origin(-errno);
                (void) unlink(path);
                (void) close(fd);
                return r;
        }
        r = listener_add(server, fd, path, address, &l);
        if (r < 0)
                return r;
        l->endpoint = bus_endpoint_ref(ep);
        *ret = l;
        return 0;
}

/**
 * listener_new_endpoint_fd() - a custom endpoint's legacy socket, bound by its maker
 * @server:     the server
 * @fd:         a listening AF_UNIX stream socket (taken, also on failure)
 * @ep:         the endpoint its clients come through (a reference is taken)
 * @ret:        the listener (on server->listeners)
 *
 * ENDPOINT_MAKE with KDBUS_MAKE_LEGACY_FD (kdbus-proxy): the maker chose the path and
 * bound it with its own rights; the bus only accepts on it and removes nothing when the
 * endpoint goes (the file is the maker's).
 *
 * Return: 0, -ENOTSOCK / -EINVAL (@fd is no listening AF_UNIX stream socket), or a
 * negative errno.
 */
int listener_new_endpoint_fd(Server *server, int fd, BusEndpoint *ep, ProxyListener **ret) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        socklen_t salen = sizeof(sa), len = sizeof(int);
        char address[4200] = "unix:path=";
        int domain = 0, type = 0, listening = 0, flags, r = 0;
        ProxyListener *l;

        if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) < 0 ||
            getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0 ||
            getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) < 0)
                r = errno == ENOTSOCK ? -ENOTSOCK : error_origin(-errno);
        else if (domain != AF_UNIX || type != SOCK_STREAM || !listening)
                r = -EINVAL;
        else if (getsockname(fd, (struct sockaddr *)&sa, &salen) < 0)
                r = error_origin(-errno);
        else if ((flags = fcntl(fd, F_GETFL)) < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
                r = error_origin(-errno);
        if (r < 0) {
                (void) close(fd);
                return r;
        }
        if (salen > offsetof(struct sockaddr_un, sun_path) && sa.sun_path[0] &&
            address_escape_append(address, sizeof(address), sa.sun_path) < 0)
                address[strlen("unix:path=")] = '\0';
        r = listener_add(server, fd, NULL, address, &l);        /* takes @fd */
        if (r < 0)
                return r;
        l->endpoint = bus_endpoint_ref(ep);
        *ret = l;
        return 0;
}

/* unix:dir= and unix:tmpdir=: a fresh random name, retried on collision. */
static int listener_bind_dir(Server *server, const char *dir, char *err, size_t err_size) {
        static const char letters[] =
                "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        unsigned attempt;
        int r = -EADDRINUSE;

        for (attempt = 0; attempt < 16; ++attempt) {
                char path[108];
                uint8_t rnd[10];
                unsigned i;
                int ufd;

                ufd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
                if (ufd < 0 || read(ufd, rnd, sizeof(rnd)) != (ssize_t)sizeof(rnd)) {
                        ufd = fd_close(ufd);
                        return error_origin(-EIO);
                }
                ufd = fd_close(ufd);
                if ((size_t)snprintf(path, sizeof(path), "%s/dbus-", dir) >= sizeof(path) - 11) {
                        snprintf(err, err_size, "Directory name \"%s\" is too long", dir);
                        return LISTENER_E_BAD_ADDRESS;
                }
                for (i = 0; i < sizeof(rnd); ++i) {
                        char s[2] = { letters[rnd[i] % (sizeof(letters) - 1)], '\0' };

                        strcat(path, s);
                }
                r = listener_bind_unix(server, path, false, false, err, err_size);
                if (r != -EADDRINUSE)
                        return r;
        }
        return r;
}

/**
 * listener_new_from_address() - listen on one address entry
 * @server:     the server
 * @e:          the parsed entry
 * @err:        receives a message for the user on failure
 * @err_size:   its size
 *
 * Return: 0, a negative errno, or LISTENER_E_UNSUPPORTED, LISTENER_E_BAD_ADDRESS,
 * LISTENER_E_NO_RUNTIME_DIR.
 */
int listener_new_from_address(Server *server, const AddressEntry *e, char *err, size_t err_size) {
        const char *path, *abstract, *dir, *tmpdir, *runtime;
        unsigned n_keys = 0;
        size_t i;

        if (strcmp(e->transport, "systemd") == 0) {
                int r = listener_new_from_systemd(server, err, err_size);

                if (r == 0) {
                        snprintf(err, err_size, "The \"systemd:\" address needs sockets passed "
                                 "by systemd (LISTEN_FDS), but there are none");
                        return LISTENER_E_BAD_ADDRESS;
                }
                return r < 0 ? r : 0;
        }
        if (strcmp(e->transport, "unix") != 0) {
                snprintf(err, err_size, "Unsupported address transport \"%s\" (only unix: and "
                         "systemd: are served)", e->transport);
                return LISTENER_E_UNSUPPORTED;
        }
        for (i = 0; i < e->n_pairs; ++i) {
                const char *k = e->pairs[i].key;

                if (strcmp(k, "guid") == 0)
                        continue;
                if (strcmp(k, "path") && strcmp(k, "abstract") && strcmp(k, "dir") &&
                    strcmp(k, "tmpdir") && strcmp(k, "runtime")) {
                        snprintf(err, err_size, "Unsupported key \"%s\" in a unix: address", k);
                        return LISTENER_E_UNSUPPORTED;
                }
                ++n_keys;
        }
        if (n_keys != 1) {
                snprintf(err, err_size, "A unix: address needs exactly one of path=, abstract=, "
                         "dir=, tmpdir=, runtime=yes");
                return LISTENER_E_BAD_ADDRESS;
        }
        path = address_entry_get(e, "path");
        abstract = address_entry_get(e, "abstract");
        dir = address_entry_get(e, "dir");
        tmpdir = address_entry_get(e, "tmpdir");
        runtime = address_entry_get(e, "runtime");

        if (path)
                return listener_bind_unix(server, path, false, false, err, err_size);
        if (abstract)
                return listener_bind_unix(server, abstract, true, false, err, err_size);
        if (dir || tmpdir)
                return listener_bind_dir(server, dir ? dir : tmpdir, err, err_size);
        if (strcmp(runtime, "yes") != 0) {
                snprintf(err, err_size, "unix:runtime= only takes \"yes\"");
                return LISTENER_E_BAD_ADDRESS;
        } else {
                const char *xdg = getenv("XDG_RUNTIME_DIR");
                char p[4200];

                if (!xdg || xdg[0] != '/') {
                        snprintf(err, err_size, "\"XDG_RUNTIME_DIR\" is not set");
                        return LISTENER_E_NO_RUNTIME_DIR;
                }
                snprintf(p, sizeof(p), "%s/bus", xdg);
                return listener_bind_unix(server, p, false, false, err, err_size);
        }
}

/**
 * listener_new_from_systemd() - adopt the sockets systemd passed (LISTEN_FDS)
 * @server:     the server
 * @err:        receives a message on failure
 * @err_size:   its size
 *
 * Return: the number of listeners added (0 when nothing was passed), or a negative errno.
 */
int listener_new_from_systemd(Server *server, char *err, size_t err_size) {
        int n, i, r;

        n = sd_listen_fds(1);
        if (n < 0) {
                snprintf(err, err_size, "Cannot take the sockets systemd passed: %s",
                         strerror(-n));
                return error_origin(n);
        }
        for (i = 0; i < n; ++i) {
                int fd = SD_LISTEN_FDS_START + i;
                struct sockaddr_un sa = { 0 };
                socklen_t salen = sizeof(sa);
                char address[4200] = "";
                int flags;

                if (sd_is_socket(fd, AF_UNIX, SOCK_STREAM, 1) <= 0) {
                        snprintf(err, err_size, "Passed fd %d is not a listening unix stream "
                                 "socket", fd);
                        return error_origin(-EINVAL);
                }
                flags = fcntl(fd, F_GETFL);
                if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0 ||
                    fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
                        return error_origin(-errno);
                if (getsockname(fd, (struct sockaddr *)&sa, &salen) == 0 &&
                    salen > offsetof(struct sockaddr_un, sun_path) + 1) {
                        if (sa.sun_path[0]) {
                                strcpy(address, "unix:path=");
                                (void) address_escape_append(address, sizeof(address), sa.sun_path);
                        } else {
                                char name[sizeof(sa.sun_path)] = "";

                                memcpy(name, sa.sun_path + 1,
                                       salen - offsetof(struct sockaddr_un, sun_path) - 1);
                                strcpy(address, "unix:abstract=");
                                (void) address_escape_append(address, sizeof(address), name);
                        }
                }
                r = listener_add(server, fd, NULL, address, NULL);
                if (r < 0)
                        return r;
        }
        return n;
}
