/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * The process-wide state of kdbusd: the loop, the bus core and its driver, the listening
 * sockets and every client. Clients that have output to flush are on @dirty, clients with
 * complete but unprocessed input (their per-iteration budget ran out) on @ready, and
 * clients that must be closed (they hung up, were kicked by the core, or broke the
 * protocol) are flagged, served no more and put on @closing, from where they are torn
 * down in order, SERVER_CLOSE_BUDGET per wakeup (never inside a callback).
 * Every loop callback that can make clients dirty ends with server_flush(), so the writes
 * go out right after the reads that caused them, not at the end of the wakeup's batch;
 * @flush_source is the fallback for any other callback that leaves @dirty non-empty.
 */
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "proxy/client-splice.h"
#include "proxy/keyring.h"
#include "proxy/loop.h"
#include "util/list.h"
#include "util/macro.h"

typedef struct Bus Bus;
typedef struct Driver Driver;
typedef struct ProxyClient ProxyClient;

/* Messages one client may push into the bus per loop iteration (fairness). */
#define SERVER_CLIENT_BUDGET 64u
/* Clients torn down (names released, NameOwnerChanged sent, freed) per loop iteration: a
 * storm of peers closing at once delays another peer's call by at most this many
 * teardowns per wakeup (docs/loop.md, "Closing peers"). */
#define SERVER_CLOSE_BUDGET 64u
/* A client whose queue held this much gives memory back when it drains or goes. */
#define SERVER_TRIM_AFTER (8u * 1024u * 1024u)
#define SERVER_TRIM_DELAY_USEC (1000u * 1000u)

typedef struct Server {
        Loop *loop;
        Bus *bus;
        Driver *driver;
        char guid[33];                  /* the server guid (not GetId's bus id), 32 hex */
        bool allow_anonymous;           /* ANONYMOUS peers may stay after BEGIN */
        unsigned auth_mechs;            /* SaslMech offered (<auth>) */
        Keyring keyring;                /* DBUS_COOKIE_SHA1: the bus user's; set up with
                                         * the first client (after any privilege drop) */
        SaslCookieOps cookie_ops;
        struct ProxyConfig *config;     /* the running configuration (owned); NULL in tests */
        struct ProxyConfigWatch *config_watch; /* its <includedir>s watched (not owned) */

        ClientSplicePipes splice;       /* pipes for large byte arrays (client-splice.h) */
        List listeners;                 /* ProxyListener */
        List clients;                   /* ProxyClient, all */
        List dirty;                     /* ProxyClient with output pending */
        List ready;                     /* ProxyClient with buffered input left over */
        List closing;                   /* ProxyClient that must go, oldest first (by
                                         * dirty_link: nothing is written to them) */
        List hangups;                   /* ProxyClient whose EPOLLHUP this wakeup brought */
        unsigned n_clients;
        unsigned n_authenticating;

        LoopSource *flush_source;       /* defer: on while @dirty is not empty */
        LoopSource *ready_source;       /* defer: process @ready */
        LoopSource *close_source;       /* defer: on while @closing is not empty */
        LoopSource *timer;              /* bus_next_deadline() */
        LoopSource *trim_timer;         /* malloc_trim() after a flood (server_trim_later()) */
        uint64_t timer_usec;            /* when @timer fires, UINT64_MAX: off */
        LoopSource *sigterm, *sigint, *sighup;
        int exit_code;
        /* a bus instance made through a kdbusfs control node (proxy/kdbusfs.h): its
         * domain, whose nodes take no BUS_MAKE (kdbus: only control makes buses) */
        const void *kdbusfs_domain;
} Server;

typedef struct BusLimits BusLimits;
int server_new(const BusLimits *limits, Server **ret);
/* A bus instance's server on @parent's loop (proxy/bus-instance.c). */
int server_new_instance(Server *parent, uid_t owner, Server **ret);
int server_run(Server *s);
Server *server_free(Server *s);
DEFINE_CLEANUP(Server *, server_free);

/* Before calling into the core: the loop's cached time goes into bus->now_usec. */
void server_update_time(Server *s);
/* After calling into the core: re-arm the reply-timeout timer (for an earlier deadline). */
void server_rearm_timer(Server *s);
void server_mark_ready(Server *s, ProxyClient *c);
/* @c has output to write: it goes on @dirty. */
void server_mark_dirty(Server *s, ProxyClient *c);
/* A flood is over (a large queue drained or was freed): malloc_trim() in a moment. */
void server_trim_later(Server *s);
/* At the end of a loop callback: write out the dirty clients. */
void server_flush(Server *s);
/* @c must go (client_close_later()): onto @closing, torn down in turn. */
void server_mark_closing(Server *s, ProxyClient *c);
/* @c hung up: looked at after this wakeup's other io (client_hangup()). */
void server_mark_hangup(Server *s, ProxyClient *c);
/* Tear down up to @max clients of @closing (UINT_MAX: all, e.g. for their fds). */
void server_close_some(Server *s, unsigned max);
