/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * Custom endpoints (kdbus.endpoint(7)) and kdbus's name policy on the bus.
 *
 * An endpoint is a second entrance to the bus with its own policy (bridge/name-acl.h):
 * a connection that came through it (BridgeConn.endpoint) sees, talks to and owns only what
 * that policy grants, on top of everything else (the XML policy still applies): kdbus's
 * default for a custom endpoint is "nothing visible". Replies to calls it made still pass
 * (they go through a reply slot). Its name is "<uid>-<name>", uid being its creator's.
 * It lives until its owner closes it (bus_endpoint_close(): every connection that came
 * through it is disconnected), and its memory while connections still point at it.
 *
 * The bus's own kdbus policy (Bus.holder_policy) comes from policy-holder connections
 * (HELLO with KDBUS_HELLO_POLICY_HOLDER); it covers only the names it has entries for, so
 * the XML policy alone decides for every other name (kdbus instead denies OWN and TALK to
 * another user's names without an entry: that would break every dbus-daemon configuration).
 * For a covered name both must allow.
 *
 * Privileged (kdbus_ep_is_owner(): the bus owner's uid, Bus.owner_uid, or CAP_IPC_OWNER in
 * the bus's user namespace, captured at connect; never through a custom endpoint): may
 * create policy holders, and endpoints beyond BUS_ENDPOINT_MAX_PER_USER, and the holder
 * policy does not restrict it. Who else may create endpoints is the bus's
 * (Bus.endpoints_privileged_only): nobody on a bus instance, as in kdbus; anybody on
 * kdbusd's own bus unless configured otherwise: an endpoint only narrows.
 *
 * The checks (kdbus's rules, see kdbus.policy(7)):
 *  - see a name: on a custom endpoint, SEE for it; elsewhere always.
 *  - see a connection: itself, or (custom endpoint) SEE for one of its names.
 *  - talk to @dst: endpoint: TALK for one of @dst's names; then privileged, same uid, a
 *    @dst without names covered by the holder policy, or TALK for one of them.
 *  - own @name: endpoint: OWN; then privileged, or no holder entry, or OWN from it.
 *  - a broadcast (or unicast signal) reaches a receiver only if the receiver could talk to
 *    its sender; the bus's NameOwnerChanged only if the receiver sees arg0 (a unique name:
 *    never on a custom endpoint, as kdbus hides ID_ADD/ID_REMOVE there).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "util/list.h"
#include "util/macro.h"

typedef struct Bus Bus;
typedef struct BridgeConn BridgeConn;
typedef struct BridgeCreds BridgeCreds;
typedef struct BridgeMsg BridgeMsg;
typedef struct NameAclDb NameAclDb;
struct kdbus_item;

/* Endpoints one unprivileged user may hold on a bus at a time (as KDBUS_USER_MAX_BUSES
 * for bus instances): each is an account of its own for max_connections_per_user. */
#define BUS_ENDPOINT_MAX_PER_USER 16u

/* kdbus's limit for the name of a bus node (KDBUS_SYSNAME_MAX_LEN). */
#define BUS_ENDPOINT_NAME_MAX 63u

/* kdbus_item_validate_name()'s rule: 1 to BUS_ENDPOINT_NAME_MAX of [A-Za-z0-9_], and '-' and
 * '.' when neither first nor last. Node names and connection descriptions. */
bool bus_sysname_is_valid(const char *name);

/* "<uid>-" then more, the whole valid by bus_sysname_is_valid(): endpoints and bus
 * instances (native/busmake.c). */
bool bus_node_name_is_valid(uid_t uid, const char *name);

typedef struct BusEndpoint {
        unsigned n_refs;
        Bus *bus;                       /* NULL once closed */
        List link;                      /* Bus.endpoints, while open */
        char *name;                     /* "<uid>-<name>" */
        uid_t uid;                      /* its creator's */
        uint32_t id;                    /* unique on its bus (quota accounts) */
        NameAclDb *policy;         /* empty: nothing visible */
        bool sloppy_names;              /* xdg-dbus-proxy --sloppy-names: every unique name
                                         * is visible */
        bool unfiltered;                /* xdg-dbus-proxy without --filter: the policy
                                         * restricts nothing */
        struct BridgeUser *user;        /* the account its connections are charged to */
} BusEndpoint;

/*
 * A new endpoint @name ("<uid>-<something>", the uid being @uid) on @bus.
 * Return: 0, -EINVAL (bad name or wrong uid prefix), -EEXIST (the bus has one of that
 * name), -ENOMEM.
 */
int bus_endpoint_new(Bus *bus, uid_t uid, const char *name, BusEndpoint **ret);
BusEndpoint *bus_endpoint_ref(BusEndpoint *ep);
BusEndpoint *bus_endpoint_unref(BusEndpoint *ep);
DEFINE_CLEANUP(BusEndpoint *, bus_endpoint_unref);
/* Unlink from the bus and disconnect every connection that came through it (idempotent). */
void bus_endpoint_close(BusEndpoint *ep);
/* ENDPOINT_UPDATE: replace the policy by @items. Return: 0 or name_acl_db_set()'s errno. */
int bus_endpoint_update(BusEndpoint *ep, const struct kdbus_item *items, size_t items_size);
/* Flags of ENDPOINT_UPDATE (kdbus-compat's extension, kdbus/kdbus.h). */
enum {
        BUS_ENDPOINT_POLICY_XDG = 1u << 0,      /* the name ACL's xdg-dbus-proxy mode */
        BUS_ENDPOINT_SLOPPY_NAMES = 1u << 1,    /* every unique name visible */
        BUS_ENDPOINT_UNFILTERED = 1u << 2,      /* no restriction at all */
};
/* The same with BUS_ENDPOINT_* @flags; the flags change only if the policy does. */
int bus_endpoint_update_flags(BusEndpoint *ep, unsigned flags, const struct kdbus_item *items,
                              size_t items_size);
/* How many active connections came through @ep. */
unsigned bus_endpoint_count_conns(const BusEndpoint *ep);
/* How many open endpoints @uid made on @bus. */
unsigned bus_count_endpoints(const Bus *bus, uid_t uid);
/* The open endpoint of that name, or NULL. */
BusEndpoint *bus_find_endpoint(Bus *bus, const char *name);

/* @conn comes through @ep (a reference is taken). Call before bridge_conn_hello(). */
void bridge_conn_set_endpoint(BridgeConn *conn, BusEndpoint *ep);

/* Is any kdbus name policy in force on @bus (an endpoint or a holder entry)? */
bool bus_has_name_policy(const Bus *bus);
/* Is @creds' peer privileged on @bus: its owner's uid or CAP_IPC_OWNER (kdbus)? Not
 * looking at custom endpoints (bridge_conn_is_privileged() does). */
bool bus_creds_privileged(const Bus *bus, const BridgeCreds *creds);
bool bridge_conn_is_privileged(const BridgeConn *conn);
bool bridge_conn_can_see_name(const BridgeConn *conn, const char *name);
bool bridge_conn_can_see_conn(const BridgeConn *conn, const BridgeConn *whom);
bool bridge_conn_can_talk(const BridgeConn *conn, const BridgeConn *dst);
bool bridge_conn_can_own(const BridgeConn *conn, const char *name);
/* May @conn start the well-known name @name (@msg NULL: StartServiceByName; TALK, a rule
 * counting) or send @msg to it while nobody owns it (auto-start: TALK or a --call rule
 * matching @msg)? xdg-dbus-proxy asks TALK there, SEE is not enough. */
bool bridge_conn_may_send_name(const BridgeConn *conn, const char *name, const BridgeMsg *msg);
/* May @receiver get a copy of @msg from @sender (NULL: the bus), as far as kdbus's name policy
 * goes? @arg0: the message's first string argument or NULL. */
bool bridge_conn_may_receive(const BridgeConn *receiver, const BridgeConn *sender,
                             const BridgeMsg *msg, const char *arg0);
/* As bridge_conn_can_talk() for one message (a call or unicast signal): xdg --call rules
 * count, and a signal may go to a peer that called @conn. */
bool bridge_conn_may_send(const BridgeConn *conn, const BridgeConn *dst, const BridgeMsg *msg);

/* Callers of a sandboxed connection (bridge/endpoint-callers.c): visible to it while both
 * are connected, on an endpoint with xdg-dbus-proxy's rules. */
int bridge_conn_note_caller(BridgeConn *callee, BridgeConn *caller);
bool bridge_conn_has_caller(const BridgeConn *callee, const BridgeConn *caller);
const BridgeConn *bridge_conn_find_caller(const BridgeConn *callee, const char *unique);
void bridge_conn_forget_callers(BridgeConn *conn);

/* Set the text of @conn's last AccessDenied (taken; see bridge_conn_get_denial()). */
void bridge_conn_set_denial(BridgeConn *conn, char *text);
