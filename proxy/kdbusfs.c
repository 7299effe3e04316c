/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * kdbusd --kdbusfs=DIR (see proxy/kdbusfs.h): the directory and its control node; the
 * bus and endpoint nodes are made by BUS_MAKE / ENDPOINT_MAKE through the native
 * listener, in DIR, as for --native's directory.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "bridge/endpoint.h"
#include "proxy/kdbusfs.h"
#include "proxy/native-listener.h"
#include "util/error.h"

struct Kdbusfs {
        NativeListener *control;
};

/**
 * kdbusfs_new() - serve a kdbusfs view
 * @server:     kdbusd's server (the loop)
 * @dir:        the directory
 * @ret:        the view
 *
 * Return: 0, or a negative errno (reported on stderr).
 */
int kdbusfs_new(Server *server, const char *dir, Kdbusfs **ret) {
        Kdbusfs *fs;
        char path[4096];
        struct stat st;
        int r;

        if ((size_t)snprintf(path, sizeof(path), "%s/control", dir) >= sizeof(path)) {
                fprintf(stderr, "kdbusd: --kdbusfs=%s: path too long\n", dir);
                return -ENAMETOOLONG;
        }
        /* kdbus's domain directory is 0555 and root's; ours must be writable by kdbusd,
         * which makes the buses' directories in it */
        if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
                r = -errno;
                fprintf(stderr, "kdbusd: --kdbusfs=%s: cannot make the directory: %s\n", dir,
                        strerror(-r));
                return r;
        }
        if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
                fprintf(stderr, "kdbusd: --kdbusfs=%s: not a directory\n", dir);
                return -ENOTDIR;
        }
        fs = calloc(1, sizeof(*fs));
        if (!fs)
                return error_origin(-ENOMEM);
        r = native_listener_new_control(server, path, &fs->control);
        if (r < 0) {
                fprintf(stderr, "kdbusd: --kdbusfs=%s: cannot listen on %s: %s%s\n", dir, path,
                        strerror(-r), r == -EEXIST ? " (another kdbusd serving it, or a "
                        "stale socket to remove)" : "");
                free(fs);
                return r;
        }
        *ret = fs;
        return 0;
}

/**
 * kdbusfs_free() - stop serving a view
 * @fs:         the view, or NULL
 *
 * Return: NULL.
 */
Kdbusfs *kdbusfs_free(Kdbusfs *fs) {
        if (!fs)
                return NULL;
        /* the control handles own the domain's buses: they end with them */
        fs->control = native_listener_free(fs->control);
        free(fs);
        return NULL;
}
