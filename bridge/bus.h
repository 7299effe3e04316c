/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * The bus: the core's root object. It owns the connection table (by 64-bit id), the name
 * registry, the match registry, pending replies and the limits. It is passive: callers
 * drive it like a syscall interface and it reports events through BusNotifyOps, which the
 * layer above (compat's driver) turns into NameOwnerChanged, NameAcquired, NameLost and
 * error replies, and through BusObserver, which the native front end turns into kdbus
 * notification items.
 *
 * Time never comes from a clock in here: the caller sets bus->now_usec (its loop's cached
 * monotonic time) before each call, so the core is deterministic under test.
 */
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "bridge/bloom.h"
#include "bridge/limits.h"
#include "bridge/match-index.h"
#include "util/hash-table.h"
#include "util/list.h"
#include "util/log-sink.h"
#include "util/macro.h"

typedef struct Bus Bus;
typedef struct BridgeConn BridgeConn;
typedef struct BridgeMsg BridgeMsg;
typedef struct BridgeMsgCache BridgeMsgCache;
typedef struct BridgeReply BridgeReply;

/* How many freed BridgeReply a bus keeps for reuse (Bus.free_replies). */
#define BUS_MAX_FREE_REPLIES 256u

typedef struct BusNotifyOps {
        /* @conn said hello: it has its id and unique name now. */
        int (*conn_added)(void *userdata, BridgeConn *conn);
        /* @conn left; its names were released (each reported through name_changed) first;
         * the calls it owes are failed (reply_lost) after this returns. */
        int (*conn_removed)(void *userdata, BridgeConn *conn);
        /*
         * The primary owner of @name changed from @old_owner to @new_owner (either may be
         * NULL). Called once per change, in the order the changes happen.
         */
        int (*name_changed)(void *userdata, const char *name, BridgeConn *old_owner,
                            BridgeConn *new_owner);
        /*
         * A method call @caller sent with @serial will never be answered: @timed_out, or the
         * callee (whose unique name is @callee_name) disconnected first.
         */
        int (*reply_lost)(void *userdata, BridgeConn *caller, uint32_t serial, bool timed_out,
                          const char *callee_name);
        /*
         * The policy denied a copy of @msg from @sender (NULL: the bus) to one receiver (a
         * broadcast, an eavesdropped message, a message of the bus), with the AccessDenied
         * @text dbus-daemon would give. Called only while the bus has monitors: they are to
         * see that error (from the bus, answering @msg, to the sender), nobody else.
         */
        int (*copy_denied)(void *userdata, const BridgeConn *sender, const BridgeMsg *msg,
                           const char *text);
        /* A native activator came or went: the activatable names changed
         * (ActivatableServicesChanged). */
        int (*activatable_changed)(void *userdata);
} BusNotifyOps;

/*
 * A front end's view of the bus's events, beside BusNotifyOps (the driver's): the native
 * front end (native/notify.c) turns them into kdbus's notification items. Each hook may be
 * NULL; all registered observers see every event, before the notify handler.
 */
typedef struct BusObserver {
        /* @conn said hello (@added) or left; activators too (bridge/activator.h). */
        void (*conn_changed)(Bus *bus, BridgeConn *conn, bool added);
        /* As BusNotifyOps.name_changed, with both owners' BRIDGE_NAME_* flags. */
        void (*name_changed)(Bus *bus, const char *name, BridgeConn *old_owner,
                             unsigned old_flags, BridgeConn *new_owner, unsigned new_flags);
        /* The activator @conn took (@added) or gave up @name while no owner has it. */
        void (*activator_changed)(Bus *bus, const char *name, BridgeConn *conn, bool added);
} BusObserver;

/*
 * How a bus numbers unique names: one numbering per bus, the same for every peer, so that a
 * unique name means one connection whoever reads it, also inside a message body (a service
 * that passes its caller's name on, GetConnectionUnixProcessID about a name another peer
 * gave). Connection ids start at 1 either way (0 is the bus, and "addressed by name" in the
 * kdbus ABI).
 */
typedef enum BusNaming {
        BUS_NAMING_DBUS_DAEMON,         /* ":1.<id - 1>", the first connection ":1.0", as
                                         * dbus-daemon (and tests comparing with it) have it:
                                         * a bus without native peers (the default) */
        BUS_NAMING_KDBUS,               /* ":1.<id>", as kdbus and its native peers (sd-bus,
                                         * libkdbus) form a name from an id: a bus with a
                                         * native front end, on every side (proxy/) */
} BusNaming;

/* How many observers a bus takes: one per front end beside the driver. */
#define BUS_MAX_OBSERVERS 2u

struct Bus {
        uint8_t id[16];                 /* random; GetId prints it as 32 hex digits */
        uint64_t now_usec;              /* set by the caller: CLOCK_MONOTONIC, microseconds */
        uint64_t next_conn_id;          /* ids are never reused */
        BusNaming naming;               /* unique names (bus_set_naming()); fixed once a
                                         * connection has one */
        BusLimits limits;
        struct PolicyDb *policy;        /* NULL: no policy, no checks (bridge/policy.h) */
        LogSink log;
        const BusNotifyOps *notify;
        void *notify_userdata;
        const BusObserver *observers[BUS_MAX_OBSERVERS];
        unsigned n_observers;
        const struct BridgeProcReader *proc; /* reads /proc for metadata (bridge/meta.h);
                                              * NULL: nothing is captured */

        HashTable conns_by_id;          /* active BridgeConn, by id */
        List conns;                     /* every BridgeConn, active or not */
        HashTable names;                /* BridgeName, by name */
        uint64_t dest_gen;              /* changes when a name or an active connection goes:
                                         * BridgeConn.dest_* older than it are stale */
        List match_conns;               /* BridgeConn with at least one match rule, in the
                                         * order of BridgeConn.match_seq */
        unsigned n_match_conns;
        uint64_t next_match_seq;
        MatchIndex match_index;         /* their rules without eavesdrop (match-index.h) */
        MatchIndex match_index_eavesdrop; /* ... with eavesdrop='true' */
        /* broadcast routing's receivers (conn.c), room for one per indexed rule */
        BridgeConn **route_buf;
        size_t route_cap;
        bool route_busy;                /* a routing uses route_buf (a nested one allocates) */
        uint64_t route_epoch;           /* BridgeConn.route_mark of the current routing */
        unsigned n_native_conns;        /* NativeConn on this bus (native-conn.c) */
        HashTable replies;              /* BridgeReply, by (caller id, serial), once indexed */
        List replies_unindexed;         /* BridgeReply not yet in @replies (reply.c) */
        List reply_timeouts;            /* BridgeReply, earliest deadline first (reply.c) */
        List free_entries;              /* recycled BridgeQueueEntry: no malloc per delivery */
        size_t n_free_entries;
        BridgeMsgCache *msg_cache;      /* recycled message buffers (bridge/msg.h) */
        BridgeReply *free_replies[BUS_MAX_FREE_REPLIES]; /* recycled, see reply.c */
        unsigned n_free_replies;
        HashTable users;                /* BridgeUser, by uid: per-user accounting */
        unsigned n_eavesdrop_rules;     /* rules with eavesdrop=true, over all connections */

        /* statistics (Debug.Stats) */
        uint64_t n_messages_routed;
        uint64_t n_broadcasts;
        unsigned n_match_rules;         /* match rules of all connections, monitors' too */
        unsigned peak_match_rules;
        unsigned peak_match_rules_per_conn;
        unsigned n_name_owners;         /* owner entries (primary or queued) of well-known names */
        unsigned peak_names;            /* unique names + n_name_owners at once */
        unsigned peak_names_per_conn;

        List monitors;                  /* BridgeConn with BRIDGE_CONN_MONITOR (bridge/monitor.h) */

        /* kdbus's privileged connections (monitors, activators, policy holders, endpoint
         * makers) need this uid or CAP_IPC_OWNER (bus_creds_privileged()): kdbusd's euid
         * (bus_new, before any <user> drop), or a bus instance's creator */
        uid_t owner_uid;
        /* ENDPOINT_MAKE only for the privileged (kdbus_ep_is_owner(): bus instances, and
         * kdbusd's own bus with --native-endpoint-makers=privileged); false: any user, up
         * to BUS_ENDPOINT_MAX_PER_USER at a time (an endpoint only narrows; issue #15) */
        bool endpoints_privileged_only;

        /* kdbus's name policy (bridge/endpoint.h) */
        List endpoints;                 /* BusEndpoint, open */
        uint32_t next_endpoint_id;      /* BusEndpoint.id: never reused */
        struct NameAclDb *holder_policy; /* policy holders' entries; NULL: none yet */
        /* kdbus's default where no entry speaks (a bus instance: it has no XML policy):
         * the unprivileged own only names an entry grants them, and talk to another user
         * only through an entry; false: such names are the XML policy's */
        bool kdbus_default_deny;
        List activators;                /* BridgeActivator (bridge/activator.h) */

        /* a bus instance's maker (BUS_MAKE, proxy/bus-instance.c), for BUS_CREATOR_INFO;
         * make_name "": kdbusd's own bus, whose creator is kdbusd's process */
        char make_name[64];
        uint64_t bus_flags;             /* BUS_MAKE's flags (KDBUS_MAKE_ACCESS_*): HELLO's
                                         * bus_flags, BUS_CREATOR_INFO's flags (kdbus) */
        uid_t creator_uid;
        gid_t creator_gid;
        pid_t creator_pid;

        /* Native peers' metadata (native/meta.c, bridge/meta.h; kdbusd --native-attach-*) */
        unsigned attach_rule;           /* BUS_ATTACH_*: what a native receiver gets */
        uint64_t attach_flags_req;      /* KDBUS_ATTACH_* every native sender must consent
                                         * to (kdbus's bus attach_flags_req): HELLO
                                         * ECONNREFUSED, UPDATE EINVAL without them */
        bool proc_public;               /* the bus's /proc has no hidepid: anyone may read
                                         * another user's comm, cmdline, status, cgroup */
        unsigned native_recv_attach[64]; /* per KDBUS_ATTACH_* bit: native connections
                                         * whose attach_flags_recv has it (per-message
                                         * capture reads only what someone may get) */
        uint64_t attach_flags_owner;    /* BUS_MAKE's ATTACH_FLAGS_SEND: what the maker
                                         * offers of itself in BUS_CREATOR_INFO (kdbus) */
        struct BridgeMeta *creator_meta; /* the maker's /proc items, read at BUS_MAKE as
                                          * far as it offers them; NULL: none */
        gid_t *creator_groups;          /* the maker's AUXGROUPS and SECLABEL as its handle */
        unsigned n_creator_groups;      /* was captured at connect (as a connection's at */
        char *creator_seclabel;         /* HELLO), if offered (native_bus_make_capture()) */

        /* bloom filter geometry of broadcasts and match masks (bridge/bloom.h): kdbusd
         * --native-bloom=, a bus instance's BUS_MAKE; set before anyone connects */
        BloomParams bloom;
};

/* Bus.attach_rule */
enum {
        BUS_ATTACH_OPT_IN,              /* receiver's mask ∩ sender's consent (default) */
        BUS_ATTACH_KDBUS,               /* kdbus's final rule: receiver's mask ∩ (consent ∪
                                         * basic credentials ∪ what the receiver could read
                                         * in /proc about the sender anyway) */
};

int bus_new(const BusLimits *limits, Bus **ret);
Bus *bus_free(Bus *bus);
DEFINE_CLEANUP(Bus *, bus_free);

void bus_set_notify(Bus *bus, const BusNotifyOps *ops, void *userdata);
/* Register @obs (idempotent; at most BUS_MAX_OBSERVERS different ones). */
void bus_add_observer(Bus *bus, const BusObserver *obs);
/* The /proc reader the bus's metadata capture goes through (proxy/ provides it). */
void bus_set_proc_reader(Bus *bus, const struct BridgeProcReader *proc);

/* Active connection by id, or NULL. */
BridgeConn *bus_find_conn(Bus *bus, uint64_t id);
/*
 * The hash of Bus.conns_by_id. Its keys are ids the bus hands out in sequence; no peer
 * chooses one, so none can be picked to collide and no keyed hash (SipHash, 140
 * instructions, for each reply's destination) is needed: multiplying by an odd constant is a
 * bijection on the low bits the buckets use, so consecutive ids fill distinct buckets.
 * A peer picks only what it looks up (a destination ":1.N"), which walks one chain.
 */
static inline uint64_t bus_conn_id_hash(uint64_t id) {
        return id * UINT64_C(0x9e3779b97f4a7c15);
}

/*
 * Choose how the bus numbers unique names (Bus.naming), before any connection has one: 0,
 * also when @naming is the bus's already; -EBUSY when names were given in another one.
 */
int bus_set_naming(Bus *bus, BusNaming naming);
/*
 * The unique name of connection @id in the bus's numbering (Bus.naming): ":1.<id - 1>"
 * (dbus-daemon's) or ":1.<id>" (kdbus's). @buf has BRIDGE_UNIQUE_NAME_MAX bytes
 * (bridge/conn.h).
 */
void bus_format_unique_name(const Bus *bus, uint64_t id, char *buf);
/* The id a unique name (as bus_format_unique_name() writes it on @bus) stands for, or 0. */
uint64_t bus_parse_unique_name(const Bus *bus, const char *name);
/*
 * Active connection by name: a unique name (bus_parse_unique_name()) or the primary owner of
 * a well-known name. NULL when nobody has it.
 */
BridgeConn *bus_find_conn_by_name(Bus *bus, const char *name);
/* The same for a message @sender sends, through its last names' cache (BridgeConn.dest_*). */
BridgeConn *bus_find_conn_by_name_from(BridgeConn *sender, const char *name);

/* Free what the bus keeps for reuse (recycled queue entries): after a flood drained, before
 * the transport gives free memory back to the system (malloc_trim()). */
void bus_trim(Bus *bus);

/* Earliest pending deadline (reply timeouts): true and *ret_usec, or false if none. */
bool bus_next_deadline(Bus *bus, uint64_t *ret_usec);
/* Expire every pending reply whose deadline is <= bus->now_usec (reply_lost, timed_out). */
int bus_dispatch_timeouts(Bus *bus);
