/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * <includedir> watching (see config-watch.h). One inotify descriptor for the watch's life;
 * a reload adds and removes directories on it (proxy_config_watch_update()). The
 * events are only a trigger: the reload reads everything again, so their content is not
 * looked at, and a burst of them is drained in one go and answered by one deferred reload.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <unistd.h>
#include "compat/driver.h"
#include "policy-xml/config.h"
#include "proxy/config-watch.h"
#include "proxy/config.h"
#include "proxy/log.h"
#include "proxy/loop.h"
#include "proxy/server.h"
#include "util/error.h"

struct ProxyConfigWatch {
        Server *server;
        int fd;                         /* inotify, for the life of the watch */
        LoopSource *io;                 /* @fd readable */
        LoopSource *reload;             /* defer: the reload the events asked for */
        int *wds;                       /* the watch descriptors of the running set */
        size_t n_wds;
};

/* dbus-daemon's mask: a file counts once it is complete (closed after writing, or moved
 * in), never while it is being written */
#define WATCH_MASK (IN_CLOSE_WRITE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ONLYDIR)

static int on_events(LoopSource *src, int fd, uint32_t revents, void *userdata) {
        ProxyConfigWatch *w = userdata;
        char buf[4096];

        while (read(fd, buf, sizeof(buf)) > 0)
                ;
        (void) loop_source_set_enabled(w->reload, LOOP_ONESHOT);
        return 0;
}

static int on_reload(LoopSource *src, void *userdata) {
        ProxyConfigWatch *w = userdata;
        bool not_found = false;
        char msg[1024];

        (void) loop_source_set_enabled(w->reload, LOOP_OFF);
        proxy_log(LOG_INFO, "A configuration directory changed: reloading the configuration");
        /* what SIGHUP does; the reload logs its outcome and, when it took effect, sets the
         * watched directories again (config.c) */
        server_update_time(w->server);
        (void) driver_reload(w->server->driver, &not_found, msg, sizeof(msg));
        server_flush(w->server);
        return 0;
}

static bool has_wd(const int *wds, size_t n, int wd) {
        for (size_t i = 0; i < n; ++i)
                if (wds[i] == wd)
                        return true;
        return false;
}

/**
 * proxy_config_watch_update() - watch the <includedir>s of the running configuration
 * @w:          the watch (NULL: nothing to do)
 *
 * One inotify descriptor for the life of the watch: a directory watched already keeps its
 * watch (inotify_add_watch() gives its descriptor again), so no event is lost while a
 * reload runs; a directory no longer included is no longer watched. A directory that does
 * not exist (or cannot be watched) is not watched, as in dbus-daemon; the reason is logged
 * unless it is simply missing.
 */
void proxy_config_watch_update(ProxyConfigWatch *w) {
        const Config *tree;
        size_t i, n = 0;
        int *wds = NULL;

        if (!w || w->fd < 0)
                return;
        tree = w->server->config ? w->server->config->tree : NULL;
        if (tree && tree->n_includedirs) {
                wds = calloc(tree->n_includedirs, sizeof(*wds));
                if (!wds) {
                        proxy_log(LOG_WARNING, "Cannot watch the configuration's directories: "
                                  "%s; keeping the watched set", strerror(ENOMEM));
                        return;
                }
        }
        for (i = 0; tree && i < tree->n_includedirs; ++i) {
                const ConfigString *d = &tree->includedirs[i];
                int wd = inotify_add_watch(w->fd, d->value, WATCH_MASK);

                if (wd >= 0) {
                        if (!has_wd(wds, n, wd))
                                wds[n++] = wd;
                } else if (errno != ENOENT && errno != ENOTDIR) {
                        proxy_log(LOG_WARNING, "%s:%u: cannot watch <includedir> \"%s\": %m; "
                                  "changes there take effect on SIGHUP or ReloadConfig",
                                  d->loc.file ? d->loc.file : "?", d->loc.line, d->value);
                }
        }
        for (i = 0; i < w->n_wds; ++i)
                if (!has_wd(wds, n, w->wds[i]))
                        (void) inotify_rm_watch(w->fd, w->wds[i]);
        free(w->wds);
        w->wds = wds;
        w->n_wds = n;
}

/**
 * proxy_config_watch_new() - start watching @s's configuration directories
 * @s:          the server, its configuration loaded
 * @ret:        the watch; @s->config_watch points to it until it is freed
 *
 * Return: 0, -ENOMEM or -errno of inotify_init1().
 */
int proxy_config_watch_new(Server *s, ProxyConfigWatch **ret) {
        _cleanup_(proxy_config_watch_freep) ProxyConfigWatch *w = NULL;
        int r;

        w = calloc(1, sizeof(*w));
        if (!w)
                return error_origin(-ENOMEM);
        w->server = s;
        w->fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
        if (w->fd < 0)
                return error_origin(-errno);
        r = loop_add_io(s->loop, &w->io, w->fd, EPOLLIN, on_events, w);
        if (r >= 0)
                r = loop_add_defer(s->loop, &w->reload, on_reload, w);
        if (r >= 0)
                r = loop_source_set_enabled(w->reload, LOOP_OFF);
        if (r < 0)
                return error_trace(r);
        proxy_config_watch_update(w);
        s->config_watch = w;
        *ret = steal_ptr(&w);
        return 0;
}

ProxyConfigWatch *proxy_config_watch_free(ProxyConfigWatch *w) {
        if (!w)
                return NULL;
        if (w->server && w->server->config_watch == w)
                w->server->config_watch = NULL;
        w->io = loop_source_free(w->io);
        if (w->fd >= 0)
                (void) close(w->fd);
        w->reload = loop_source_free(w->reload);
        free(w->wds);
        free(w);
        return NULL;
}
