/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bus instances (see proxy/bus-instance.h). The directory is made with mkdir(2) (EEXIST
 * for a name that exists: the bus is taken, or a stale directory is left that is not ours
 * to remove), then given to the creator before the sockets are bound in it.
 *
 * As kdbus_cmd_bus_make() with KDBUS_USER_MAX_BUSES, one uid has at most
 * NATIVE_MAX_BUSES_PER_USER live instances (EMFILE past that, after the name was found
 * free, as kdbus counted after linking the node); the count is per domain: a kdbusfs
 * directory's (proxy/kdbusfs.h), as each kdbusfs mount was one, and otherwise the whole
 * process; a bus stops counting when its maker's handle goes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "bridge/bus.h"
#include "bridge/limits.h"
#include "native/busmake.h"
#include "kdbus/kdbus.h"
#include "proxy/bus-instance.h"
#include "proxy/listener.h"
#include "proxy/native-listener.h"
#include "proxy/server.h"
#include "util/error.h"
#include "util/list.h"

struct BusInstance {
        Server *server;                 /* its own bus, driver and legacy listener */
        NativeListener *native;
        char *dir;                      /* removed at free */
        uid_t uid;                      /* the maker */
        const void *domain;             /* its kdbusfs domain, NULL: kdbusd's --native */
        List link;                      /* bus_instances, once made */
};

/* Every live instance of the process (one thread), for the per-uid limit. */
static List bus_instances = LIST_INIT(bus_instances);

/* How many live instances @uid made in @domain. */
static unsigned bus_instance_count(uid_t uid, const void *domain) {
        unsigned n = 0;
        List *pos;

        list_for_each(pos, &bus_instances) {
                const BusInstance *bi = container_of(pos, BusInstance, link);

                n += bi->uid == uid && bi->domain == domain;
        }
        return n;
}

/**
 * bus_instance_new() - make a bus instance with its sockets
 * @parent:     the server whose loop it runs on (its limits are copied)
 * @dir:        the directory of the socket the handle came through
 * @mk:         the checked BUS_MAKE request
 * @uid:        the creator
 * @gid:        its group
 * @pid:        its pid (at connect), for BUS_CREATOR_INFO
 * @domain:     the kdbusfs domain it is made in (its control node), or NULL
 * @ret:        the instance
 *
 * Return: 0, -EEXIST, -EMFILE (@uid has NATIVE_MAX_BUSES_PER_USER instances), -ENAMETOOLONG,
 * or a negative errno.
 */
int bus_instance_new(Server *parent, const char *dir, const NativeBusMake *mk, uid_t uid,
                     gid_t gid, pid_t pid, const void *domain, BusInstance **ret) {
        ProxyListener *legacy;
        BusInstance *bi;
        mode_t mode = 0600, dmode = 0700;
        char path[4096];
        int r;

        if (mk->access & (KDBUS_MAKE_ACCESS_GROUP | KDBUS_MAKE_ACCESS_WORLD)) {
                mode |= 0060;
                dmode |= 0050;
        }
        if (mk->access & KDBUS_MAKE_ACCESS_WORLD) {
                mode |= 0006;
                dmode |= 0005;
        }
        if ((size_t)snprintf(path, sizeof(path), "%s/%s/%s", dir, mk->name,
                             BUS_INSTANCE_LEGACY) >= sizeof(path))
                return -ENAMETOOLONG;
        bi = calloc(1, sizeof(*bi));
        if (!bi)
                return error_origin(-ENOMEM);
        list_init(&bi->link);
        bi->uid = uid;
        bi->domain = domain;
        bi->dir = malloc(strlen(dir) + 1 + strlen(mk->name) + 1);
        if (!bi->dir) {
                free(bi);
                return error_origin(-ENOMEM);
        }
        (void) sprintf(bi->dir, "%s/%s", dir, mk->name);
        if (mkdir(bi->dir, dmode) < 0) {
                r = -errno;
                free(bi->dir);
                free(bi);
                return r;
        }
        /* mkdir's mode went through the umask: set it, and give it to the creator (a bus
         * not running as root cannot: EPERM, then it stays the bus's, as endpoints do) */
        if (bus_instance_count(uid, domain) >= NATIVE_MAX_BUSES_PER_USER) {
                r = -EMFILE;
                goto fail;
        }
        if (chmod(bi->dir, dmode) < 0 || (chown(bi->dir, uid, gid) < 0 && errno != EPERM)) {
                r = error_origin(-errno);
                goto fail;
        }
        r = server_new_instance(parent, uid, &bi->server);
        if (r < 0)
                goto fail;
        (void) snprintf(bi->server->bus->make_name, sizeof(bi->server->bus->make_name), "%s",
                        mk->name);
        bi->server->bus->creator_uid = uid;
        bi->server->kdbusfs_domain = domain;
        bi->server->bus->bus_flags = mk->access;
        /* kdbus's bus: no XML policy, kdbus's default for names no entry covers */
        bi->server->bus->kdbus_default_deny = true;
        /* and kdbus's rule for ENDPOINT_MAKE: its owner or CAP_IPC_OWNER */
        bi->server->bus->endpoints_privileged_only = true;
        /* the maker's required metadata; the attach rule and what /proc shows as kdbusd's */
        bi->server->bus->attach_flags_req = mk->attach_req;
        bi->server->bus->attach_flags_owner = mk->attach_owner;
        /* the maker's bloom parameters (checked by native_bus_make_parse()) */
        bi->server->bus->bloom.size = mk->bloom_size;
        bi->server->bus->bloom.n_hash = mk->bloom_n_hash;
        bi->server->bus->attach_rule = parent->bus->attach_rule;
        bi->server->bus->proc_public = parent->bus->proc_public;
        bi->server->bus->creator_gid = gid;
        bi->server->bus->creator_pid = pid;
        r = listener_new_endpoint(bi->server, path, NULL, mode, uid, gid, &legacy);
        if (r < 0)
                goto fail;
        (void) snprintf(path, sizeof(path), "%s/%s", bi->dir, BUS_INSTANCE_NATIVE);
        r = native_listener_new_endpoint(bi->server, path, NULL, mode, uid, gid, &bi->native);
        if (r < 0)
                goto fail;
        list_append(&bus_instances, &bi->link);
        *ret = bi;
        return 0;
fail:
        bus_instance_free(bi);
        return r;
}

/* The instance's bus. */
Bus *bus_instance_bus(const BusInstance *bi) {
        return bi->server->bus;
}

/**
 * bus_instance_free() - the creator's handle is gone: end the bus
 * @bi:         the instance, or NULL
 *
 * Native clients first (their listener), then the server: its legacy clients, its legacy
 * listener (the socket file goes), its driver and bus; then the directory.
 *
 * Return: NULL.
 */
BusInstance *bus_instance_free(BusInstance *bi) {
        if (!bi)
                return NULL;
        list_unlink(&bi->link);
        bi->native = native_listener_free(bi->native);
        bi->server = server_free(bi->server);
        if (bi->dir)
                (void) rmdir(bi->dir);
        free(bi->dir);
        free(bi);
        return NULL;
}
