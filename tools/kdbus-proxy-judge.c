/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * kdbus-proxy's filtering proxy: the decision on each whole message (see
 * kdbus-proxy-client.h), giving the answers kdbusd gives a peer of an xdg-mode endpoint
 * (compat/driver.c, bridge/name-policy.c; tests/integration/sandbox compares both):
 *
 * From the client:
 *  - Hello goes up; then, before any other message of the client, the proxy learns the
 *    primary owners of every name the rules cover (AddMatch for the NameOwnerChanged of
 *    each name of the rules, ListNames, GetNameOwner per covered name, on the client's own
 *    connection so that every later NameOwnerChanged arrives in the bus's order); the
 *    client's messages wait until the answers are in. A caller's unique name gets a match
 *    too, so that the proxy learns when it leaves.
 *  - the driver: what tells about the whole bus or is privileged (Debug.Stats, ReloadConfig,
 *    UpdateActivationEnvironment, BecomeMonitor, Verbose) and eavesdropping match rules:
 *    AccessDenied; a query about a hidden name is answered as for a name nobody owns;
 *    ListNames / ListActivatableNames / ListQueuedOwners answers hold visible names only;
 *    RequestName needs OWN, StartServiceByName TALK; the client's own pid in
 *    GetConnectionUnixProcessID / GetConnectionCredentials of itself is the app's, not the
 *    proxy's.
 *  - a call or unicast signal needs proxy_view_may_send(): hidden receivers do not exist
 *    (ServiceUnknown, NameHasNoOwner with NO_AUTO_START), visible ones answer AccessDenied;
 *    denied signals and no-reply calls are dropped without an answer. Broadcasts go up.
 *  - a reply only to a call the bus delivered to the client and it has not answered.
 * From the bus: replies to the client's calls (their serial put back), calls to the client
 * (the caller becomes visible while connected), signals as proxy_view_may_receive() says,
 * NameOwnerChanged only for visible names and only if one of the client's own match rules
 * asks for it (the proxy's rule would otherwise show it).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "compat/match-rule.h"
#include "kdbus/kdbus.h"
#include "tools/kdbus-proxy-client.h"
#include "wire/endian.h"
#include "wire/protocol.h"
#include "wire/reader.h"
#include "wire/writer.h"

#define DRIVER "org.freedesktop.DBus"
#define DRIVER_PATH "/org/freedesktop/DBus"
#define E_PREFIX "org.freedesktop.DBus.Error."
#define NOC_RULE "type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus'," \
                 "member='NameOwnerChanged'"

/* AddMatch / RemoveMatch of our own for the NameOwnerChanged of @name (@subtree: it and
 * every name below it, arg0namespace) on the client's connection. Return: 0 or -errno. */
static int call_driver(ProxyClient *c, const char *member, const char *arg, ProxyCallKind kind);
static int watch_owner(ProxyClient *c, const char *member, const char *name, bool subtree) {
        char rule[512];

        if (snprintf(rule, sizeof(rule), "%s,%s='%s'", NOC_RULE,
                     subtree ? "arg0namespace" : "arg0", name) >= (int)sizeof(rule))
                return -ENAMETOOLONG;
        return call_driver(c, member, rule, PROXY_CALL_OWN_IGNORE);
}

/* The NameOwnerChanged the view needs, and only those (as xdg-dbus-proxy, one match per
 * name of the rules; a bus's every connect and disconnect would otherwise wake the proxy
 * once per sandboxed client). Return: 0 or -errno. */
static int watch_rule_names(ProxyClient *c) {
        const ProxyBusArgs *b = c->args;
        size_t i, j;
        int r;

        for (i = 0; i < b->n_rules; ++i) {
                for (j = 0; j < i; ++j)
                        if (b->rules[j].subtree == b->rules[i].subtree &&
                            !strcmp(b->rules[j].name, b->rules[i].name))
                                break;
                if (j < i)
                        continue;       /* one match per name is enough */
                r = watch_owner(c, "AddMatch", b->rules[i].name, b->rules[i].subtree);
                if (r < 0)
                        return r;
        }
        return 0;
}

static bool streq0(const char *a, const char *b) {
        return a && b && !strcmp(a, b);
}

static void close_fds(int *fds, unsigned n) {
        unsigned i;

        for (i = 0; i < n; ++i)
                (void) close(fds[i]);
        free(fds);
}

static const char *type_name(uint8_t type) {
        switch (type) {
        case WIRE_MSG_METHOD_CALL: return "call";
        case WIRE_MSG_METHOD_RETURN: return "return";
        case WIRE_MSG_ERROR: return "error";
        case WIRE_MSG_SIGNAL: return "signal";
        default: return "message";
        }
}

/* One --log line for a message and what became of it (xdg-dbus-proxy's --log: C for the
 * client's messages, B for the bus's, by serial; here with the verdict and its reason). */
static void log_msg(const ProxyClient *c, bool from_bus, const WireHeader *h, const char *what) {
        const char *peer = from_bus ? (h->sender ?: "(no sender)") :
                                      (h->destination ?: "(no destination)");

        if (!c->args->log)
                return;
        if (h->type == WIRE_MSG_METHOD_CALL || h->type == WIRE_MSG_SIGNAL)
                proxy_client_log(c, "%s%u: %s %s %s %s%s%s at %s: %s", from_bus ? "B" : "C",
                                 h->serial, from_bus ? "<-" : "->", peer, type_name(h->type),
                                 h->interface ?: "", h->interface ? "." : "", h->member ?: "",
                                 h->path ?: "-", what);
        else
                proxy_client_log(c, "%s%u: %s %s %s%s%s for serial %u: %s", from_bus ? "B" : "C",
                                 h->serial, from_bus ? "<-" : "->", peer, type_name(h->type),
                                 h->error_name ? " " : "", h->error_name ?: "", h->reply_serial,
                                 what);
}

/* The offset of the REPLY_SERIAL value in @m's header fields, or 0. The fields were
 * validated: each is a byte code, a one-type signature and the value at its alignment. */
static size_t reply_serial_offset(const uint8_t *m, const WireHeader *h) {
        size_t o = 16, end = 16 + h->fields_size;

        while (o + 4 <= end) {
                uint8_t code = m[o], siglen = m[o + 1];
                char t = siglen == 1 ? (char)m[o + 2] : 0;
                size_t v = o + 3 + siglen;

                if (t == 'u' || t == 'i') {
                        v = (v + 3) & ~(size_t)3;
                        if (code == WIRE_FIELD_REPLY_SERIAL)
                                return v;
                        v += 4;
                } else if (t == 's' || t == 'o') {
                        v = (v + 3) & ~(size_t)3;
                        v += 4 + wire_load32(m + v, h->big_endian) + 1;
                } else if (t == 'g') {
                        v += 1 + m[v] + 1;
                } else if (t == 'y') {
                        v += 1;
                } else {
                        return 0;       /* a field of a type no defined field has */
                }
                o = (v + 7) & ~(size_t)7;
        }
        return 0;
}

/* Send @msg (taken) with @fds (taken) to the bus under a serial of ours; remember a call's
 * reply as @kind. Return: 0 or -errno. */
static int forward_up(ProxyClient *c, uint8_t *msg, size_t size, const WireHeader *h, int *fds,
                      unsigned n_fds, ProxyCallKind kind, const char *name) {
        uint32_t serial = c->next_serial++;

        if (!c->next_serial)
                c->next_serial = 1;
        wire_store32(msg + 8, h->big_endian, serial);
        if (h->type == WIRE_MSG_METHOD_CALL && !(h->flags & WIRE_FLAG_NO_REPLY_EXPECTED)) {
                ProxyCall *calls = realloc(c->calls, (c->n_calls + 1) * sizeof(*calls));

                if (!calls) {
                        free(msg);
                        close_fds(fds, n_fds);
                        return -ENOMEM;
                }
                c->calls = calls;
                calls[c->n_calls] = (ProxyCall){ .up_serial = serial, .client_serial = h->serial,
                                                 .kind = kind };
                if (name && !(calls[c->n_calls].name = strdup(name))) {
                        free(msg);
                        close_fds(fds, n_fds);
                        return -ENOMEM;
                }
                ++c->n_calls;
        }
        return proxy_side_queue(&c->up, msg, size, fds, n_fds);
}

/* A call of the proxy's own to the bus driver, with one string argument or none. */
static int call_driver(ProxyClient *c, const char *member, const char *arg, ProxyCallKind kind) {
        WireMsgSpec spec = { .type = WIRE_MSG_METHOD_CALL, .path = DRIVER_PATH,
                             .interface = DRIVER, .member = member, .destination = DRIVER,
                             .serial = 1 };
        WireWriter w;
        WireHeader h = { .type = WIRE_MSG_METHOD_CALL, .big_endian = false };
        uint8_t *msg;
        size_t size;
        int r;

        wire_writer_init(&w);
        if (arg)
                (void) wire_writer_append_basic(&w, 's', arg);
        r = wire_message_build(&spec, &w, &msg, &size);
        wire_writer_deinit(&w);
        if (r)
                return r < 0 ? r : -EINVAL;
        return forward_up(c, msg, size, &h, NULL, 0, kind, kind == PROXY_CALL_OWN_OWNER ? arg : NULL);
}

/* Queue an answer to the client's call @h as if the bus gave it: an error @error (with
 * @text), or a return whose body @w holds (NULL: empty). A no-reply call gets nothing. */
static int answer(ProxyClient *c, const WireHeader *h, const char *error, const char *text,
                  const WireWriter *w) {
        WireMsgSpec spec = { .type = error ? WIRE_MSG_ERROR : WIRE_MSG_METHOD_RETURN,
                             .flags = WIRE_FLAG_NO_REPLY_EXPECTED, .serial = c->fake_serial++,
                             .reply_serial = h->serial, .error_name = error,
                             .destination = c->view.self, .sender = DRIVER };
        WireWriter ew;
        uint8_t *msg;
        size_t size;
        int r;

        if (h->type != WIRE_MSG_METHOD_CALL || (h->flags & WIRE_FLAG_NO_REPLY_EXPECTED))
                return 0;
        if (!c->fake_serial)
                c->fake_serial = 0x80000000u;
        wire_writer_init(&ew);
        if (error)
                (void) wire_writer_append_basic(&ew, 's', text);
        r = wire_message_build(&spec, error ? &ew : w, &msg, &size);
        wire_writer_deinit(&ew);
        if (r)
                return r < 0 ? r : -EINVAL;
        return proxy_side_queue(&c->down, msg, size, NULL, 0);
}

static int answer_u(ProxyClient *c, const WireHeader *h, char type, uint32_t v) {
        WireWriter w;
        int r;

        wire_writer_init(&w);
        (void) wire_writer_append_basic(&w, type, &v);
        r = answer(c, h, NULL, NULL, &w);
        wire_writer_deinit(&w);
        return r;
}

/* The first string argument of @msg, or NULL. */
static const char *arg0(const uint8_t *msg, const WireHeader *h) {
        WireReader rd;
        const char *s;

        if (!h->signature || h->signature[0] != 's')
                return NULL;
        wire_reader_init(&rd, msg, h);
        return wire_reader_read_basic(&rd, 's', &s) ? NULL : s;
}

static bool name_visible(const ProxyClient *c, const char *name) {
        if (!strcmp(name, DRIVER))
                return true;
        return name[0] == ':' ? proxy_view_can_see_unique(&c->view, name) :
                                proxy_view_can_see_name(&c->view, name);
}

/* Is @name the client itself (its unique name, or a name it is the primary owner of)? */
static bool name_is_self(const ProxyClient *c, const char *name) {
        const char *owner = name[0] == ':' ? name : proxy_view_owner(&c->view, name);

        return owner && c->view.self && !strcmp(owner, c->view.self);
}

/* The driver methods a sandbox may not call: they tell about the whole bus or need
 * privilege (kdbusd: bus_wide / privileged, always AccessDenied through an endpoint). */
static bool driver_method_refused(const char *iface, const char *member) {
        static const char *const dbus[] = { "ReloadConfig", "UpdateActivationEnvironment", NULL };
        static const char *const any[] = { "GetStats", "GetConnectionStats", "GetAllMatchRules",
                                           "BecomeMonitor", NULL };
        size_t i;

        if (iface && (!strcmp(iface, DRIVER ".Debug.Stats") ||
                      !strcmp(iface, DRIVER ".Monitoring") || !strcmp(iface, DRIVER ".Verbose")))
                return true;
        if (!iface || !strcmp(iface, DRIVER))
                for (i = 0; dbus[i]; ++i)
                        if (!strcmp(member, dbus[i]))
                                return true;
        if (!iface)
                for (i = 0; any[i]; ++i)
                        if (!strcmp(member, any[i]))
                                return true;
        return false;
}

/* Where a call to the bus driver may go: the methods of org.freedesktop.DBus the
 * specification, dbus-daemon and dbus-broker have (a method a newer bus adds could tell
 * about hidden peers: it is answered UnknownMethod, as a bus without it answers), and the
 * harmless standard interfaces (the bus's own Peer, Introspectable, Properties). */
static bool driver_method_known(const char *iface, const char *member) {
        static const char *const dbus[] = {
                "Hello", "RequestName", "ReleaseName", "StartServiceByName", "NameHasOwner",
                "ListNames", "ListActivatableNames", "AddMatch", "RemoveMatch", "GetNameOwner",
                "ListQueuedOwners", "GetConnectionUnixUser", "GetConnectionUnixProcessID",
                "GetConnectionUnixProcessFD", "GetAdtAuditSessionData",
                "GetConnectionSELinuxSecurityContext", "GetConnectionCredentials", "GetId",
                NULL,
        };
        static const char *const other[] = { "Ping", "GetMachineId", "Introspect", "Get",
                                             "GetAll", NULL };
        size_t i;

        if (iface && (!strcmp(iface, DRIVER ".Peer") ||
                      !strcmp(iface, "org.freedesktop.DBus.Introspectable") ||
                      !strcmp(iface, "org.freedesktop.DBus.Properties")))
                return true;
        if (iface && strcmp(iface, DRIVER))
                return false;
        for (i = 0; dbus[i]; ++i)
                if (!strcmp(member, dbus[i]))
                        return true;
        for (i = 0; !iface && other[i]; ++i)
                if (!strcmp(member, other[i]))
                        return true;
        return false;
}

/* The driver methods whose first argument names a peer, asked about: a hidden one does
 * not exist. */
static bool driver_method_asks_about_name(const char *member) {
        static const char *const m[] = {
                "GetNameOwner", "GetConnectionUnixUser", "GetConnectionUnixProcessID",
                "GetConnectionCredentials", "GetConnectionSELinuxSecurityContext",
                "GetAdtAuditSessionData", "ListQueuedOwners", "GetConnectionUnixProcessFD", NULL,
        };
        size_t i;

        for (i = 0; m[i]; ++i)
                if (!strcmp(member, m[i]))
                        return true;
        return false;
}

static int match_add(ProxyClient *c, const char *rule) {
        char **m = realloc(c->matches, (c->n_matches + 1) * sizeof(*m));

        if (!m)
                return -ENOMEM;
        c->matches = m;
        m[c->n_matches] = strdup(rule);
        if (!m[c->n_matches])
                return -ENOMEM;
        ++c->n_matches;
        return 0;
}

static void match_remove(ProxyClient *c, const char *rule) {
        BridgeMatchKeys want, have;
        const char *err;
        char *buf = malloc(MATCH_RULE_MAX_LEN + 1), *buf2 = malloc(MATCH_RULE_MAX_LEN + 1);
        size_t i;

        if (buf && buf2 && !match_rule_parse(rule, buf, MATCH_RULE_MAX_LEN + 1, &want, &err))
                for (i = 0; i < c->n_matches; ++i)
                        if (!match_rule_parse(c->matches[i], buf2, MATCH_RULE_MAX_LEN + 1, &have,
                                              &err) &&
                            bridge_match_keys_equal(&want, &have)) {
                                free(c->matches[i]);
                                c->matches[i] = c->matches[--c->n_matches];
                                break;
                        }
        free(buf);
        free(buf2);
}

/* Does the string match-rule value @key say yes to the string argument @v (argN /
 * argNpath, as the specification reads them)? */
static bool arg_matches(uint8_t kind, const char *key, const char *v) {
        size_t kl, vl;

        if (kind != BRIDGE_MATCH_ARG_PATH)
                return !strcmp(key, v);
        kl = strlen(key);
        vl = strlen(v);
        return !strcmp(key, v) || (kl && key[kl - 1] == '/' && !strncmp(key, v, kl)) ||
               (vl && v[vl - 1] == '/' && !strncmp(v, key, vl));
}

/* Is @path @ns or below it (path_namespace='/' covers every path)? */
static bool path_in_namespace(const char *path, const char *ns) {
        size_t n = strlen(ns);

        return !strcmp(ns, "/") || (!strncmp(path, ns, n) && (!path[n] || path[n] == '/'));
}

/* Did the client ask for NameOwnerChanged(@a[0], @a[1], @a[2])? */
static bool client_wants_noc(const ProxyClient *c, const char *const a[3]) {
        char *buf = malloc(MATCH_RULE_MAX_LEN + 1);
        bool yes = false;
        size_t i, n;

        for (i = 0; buf && i < c->n_matches && !yes; ++i) {
                BridgeMatchKeys k;
                const char *err;

                if (match_rule_parse(c->matches[i], buf, MATCH_RULE_MAX_LEN + 1, &k, &err))
                        continue;
                if ((k.type && k.type != WIRE_MSG_SIGNAL) || (k.sender && strcmp(k.sender, DRIVER)) ||
                    (k.interface && strcmp(k.interface, DRIVER)) ||
                    (k.member && strcmp(k.member, "NameOwnerChanged")) ||
                    (k.path && strcmp(k.path, DRIVER_PATH)) || k.destination)
                        continue;
                if (k.path_namespace && !path_in_namespace(DRIVER_PATH, k.path_namespace))
                        continue;
                if (k.arg0namespace) {
                        n = strlen(k.arg0namespace);
                        if (strncmp(a[0], k.arg0namespace, n) || (a[0][n] && a[0][n] != '.'))
                                continue;
                }
                yes = true;
                for (n = 0; n < WIRE_MAX_MATCH_ARGS && yes; ++n)
                        if (k.arg[n] && (n > 2 || !arg_matches(k.arg_kind[n], k.arg[n], a[n])))
                                yes = false;
        }
        free(buf);
        return yes;
}

/* The client's call to the driver. Return: 0 or -errno. */
static int from_client_to_driver(ProxyClient *c, uint8_t *msg, size_t size, const WireHeader *h,
                                 int *fds, unsigned n_fds) {
        const char *iface = h->interface, *member = h->member ?: "", *name = arg0(msg, h);
        bool dbus_iface = !iface || !strcmp(iface, DRIVER);
        ProxyCallKind kind = PROXY_CALL_CLIENT;
        char text[512];
        int r;

        if (!c->view.filter)
                goto forward;
        if (driver_method_refused(iface, member)) {
                log_msg(c, false, h, "DENIED (tells about the whole bus, or privileged)");
                (void) snprintf(text, sizeof(text), "%s%s%s is not available through the "
                                "filtered socket %s", iface ?: "", iface ? "." : "", member,
                                c->args->path);
                r = answer(c, h, E_PREFIX "AccessDenied", text, NULL);
                goto drop;
        }
        if (!driver_method_known(iface, member)) {
                log_msg(c, false, h, "DENIED (a bus driver method the proxy does not know)");
                (void) snprintf(text, sizeof(text), "Method \"%s\" on interface \"%s\" "
                                "doesn't exist (kdbus-proxy)", member, iface ?: "(null)");
                r = answer(c, h, iface && strcmp(iface, DRIVER) ?
                           E_PREFIX "UnknownInterface" : E_PREFIX "UnknownMethod", text, NULL);
                goto drop;
        }
        if (!dbus_iface)
                goto forward;
        if (!strcmp(member, "Hello")) {
                kind = PROXY_CALL_CLIENT_HELLO;
        } else if (!strcmp(member, "ListNames")) {
                kind = PROXY_CALL_CLIENT_NAMES;
        } else if (!strcmp(member, "ListActivatableNames")) {
                kind = PROXY_CALL_CLIENT_ACTIVATABLE;
        } else if (!strcmp(member, "AddMatch") && name) {
                BridgeMatchKeys k;
                const char *err;
                char *buf = malloc(strlen(name) + 1);

                if (!buf) {
                        r = -ENOMEM;
                        goto drop;
                }
                r = match_rule_parse(name, buf, strlen(name) + 1, &k, &err);
                free(buf);
                if (!r && k.eavesdrop) {
                        log_msg(c, false, h, "DENIED (eavesdropping)");
                        r = answer(c, h, E_PREFIX "AccessDenied", "Eavesdropping is not "
                                   "available through a filtered socket", NULL);
                        goto drop;
                }
                if (!r && match_add(c, name) < 0) {
                        r = -ENOMEM;
                        goto drop;
                }
        } else if (!strcmp(member, "RemoveMatch") && name) {
                match_remove(c, name);
        } else if (!strcmp(member, "RequestName") && name) {
                if (proxy_view_level(&c->view, name) < NAME_ACL_OWN) {
                        log_msg(c, false, h, "DENIED (no OWN)");
                        (void) snprintf(text, sizeof(text), "Connection is not allowed to own "
                                        "the service \"%s\" through the filtered socket %s",
                                        name, c->args->path);
                        r = answer(c, h, E_PREFIX "AccessDenied", text, NULL);
                        goto drop;
                }
        } else if (!strcmp(member, "ReleaseName") && name && name[0] != ':') {
                if (!name_visible(c, name)) {
                        log_msg(c, false, h, "HIDDEN (answered NON_EXISTENT)");
                        r = answer_u(c, h, 'u', 2);     /* DBUS_RELEASE_NAME_REPLY_NON_EXISTENT */
                        goto drop;
                }
        } else if (!strcmp(member, "StartServiceByName") && name && name[0] != ':' &&
                   strcmp(name, DRIVER)) {
                if (!name_visible(c, name)) {
                        log_msg(c, false, h, "HIDDEN");
                        (void) snprintf(text, sizeof(text), "The name %s was not provided by "
                                        "any .service files", name);
                        r = answer(c, h, E_PREFIX "ServiceUnknown", text, NULL);
                        goto drop;
                }
                if (proxy_view_level(&c->view, name) < NAME_ACL_TALK) {
                        log_msg(c, false, h, "DENIED (SEE only: starting needs TALK)");
                        (void) snprintf(text, sizeof(text), "\"%s\" may be seen but not started "
                                        "through the filtered socket %s", name, c->args->path);
                        r = answer(c, h, E_PREFIX "AccessDenied", text, NULL);
                        goto drop;
                }
        } else if (!strcmp(member, "NameHasOwner") && name) {
                if (!name_visible(c, name)) {
                        log_msg(c, false, h, "HIDDEN (answered false)");
                        r = answer_u(c, h, 'b', 0);
                        goto drop;
                }
        } else if (driver_method_asks_about_name(member) && name) {
                if (!name_visible(c, name)) {
                        log_msg(c, false, h, "HIDDEN (answered NameHasNoOwner)");
                        (void) snprintf(text, sizeof(text), "Could not get owner of name "
                                        "'%s': no such name", name);
                        r = answer(c, h, E_PREFIX "NameHasNoOwner", text, NULL);
                        goto drop;
                }
                /* the app's own pid, not the proxy's, as far as the app asks about itself */
                if (!strcmp(member, "GetConnectionUnixProcessID") && name_is_self(c, name) &&
                    c->pid > 0) {
                        log_msg(c, false, h, "answered (its own pid)");
                        r = answer_u(c, h, 'u', (uint32_t)c->pid);
                        goto drop;
                }
                if (!strcmp(member, "GetConnectionCredentials") && name_is_self(c, name))
                        kind = PROXY_CALL_CLIENT_CREDS;
                if (!strcmp(member, "ListQueuedOwners"))
                        kind = PROXY_CALL_CLIENT_UNIQUES;
        }
forward:
        log_msg(c, false, h, "allowed");
        return forward_up(c, msg, size, h, fds, n_fds, kind, NULL);
drop:
        free(msg);
        close_fds(fds, n_fds);
        return r < 0 ? r : 0;
}

/* Is the client's reply to @h's destination one for a call it got? (Forgets it.) */
static bool take_incoming(ProxyClient *c, const WireHeader *h) {
        size_t i;

        for (i = 0; i < c->n_incoming; ++i)
                if (c->incoming[i].serial == h->reply_serial &&
                    streq0(c->incoming[i].sender, h->destination)) {
                        free(c->incoming[i].sender);
                        c->incoming[i] = c->incoming[--c->n_incoming];
                        return true;
                }
        return false;
}

/* A message of the client, once its view is complete. */
static int judge_client(ProxyClient *c, uint8_t *msg, size_t size, const WireHeader *h,
                        int *fds, unsigned n_fds) {
        const char *why = NULL;
        char text[512];
        int r = 0, v;

        if (h->type == WIRE_MSG_METHOD_RETURN || h->type == WIRE_MSG_ERROR) {
                if (!c->view.filter || take_incoming(c, h))
                        goto forward;
                log_msg(c, false, h, "DROPPED (a reply to no call it got)");
                goto drop;
        }
        if (h->type == WIRE_MSG_METHOD_CALL &&
            (!h->destination || !strcmp(h->destination, DRIVER)))
                return from_client_to_driver(c, msg, size, h, fds, n_fds);
        if (!h->destination || (h->type != WIRE_MSG_METHOD_CALL && h->type != WIRE_MSG_SIGNAL))
                goto forward;           /* a broadcast of its own */
        if (!strcmp(h->destination, DRIVER))
                goto forward;           /* a signal to the bus: it drops it */
        v = proxy_view_may_send(&c->view, h->destination, h->type, h->path, h->interface,
                                h->member);
        if (!v)
                goto forward;
        if (v == PROXY_VIEW_E_HIDDEN) {
                bool unique = h->destination[0] == ':';

                why = "HIDDEN";
                if (h->flags & WIRE_FLAG_NO_AUTO_START)
                        (void) snprintf(text, sizeof(text), "Could not get owner of name '%s': "
                                        "no such name", h->destination);
                else
                        (void) snprintf(text, sizeof(text), "The name %s was not provided by any "
                                        ".service files", h->destination);
                log_msg(c, false, h, why);
                r = answer(c, h, (h->flags & WIRE_FLAG_NO_AUTO_START) && !unique ?
                           E_PREFIX "NameHasNoOwner" : E_PREFIX "ServiceUnknown", text, NULL);
                goto drop;
        }
        log_msg(c, false, h, "DENIED (no TALK or matching --call rule for the receiver's names)");
        (void) snprintf(text, sizeof(text), "Rejected send message: the filtered socket %s "
                        "does not let it talk to \"%s\" (interface=\"%s\" member=\"%s\" "
                        "path=\"%s\")", c->args->path, h->destination, h->interface ?: "(unset)",
                        h->member ?: "(unset)", h->path ?: "(unset)");
        r = answer(c, h, E_PREFIX "AccessDenied", text, NULL);
        goto drop;
forward:
        log_msg(c, false, h, "allowed");
        return forward_up(c, msg, size, h, fds, n_fds, PROXY_CALL_CLIENT, NULL);
drop:
        free(msg);
        close_fds(fds, n_fds);
        return r < 0 ? r : 0;
}

/* The view is complete: the messages the client sent meanwhile go on. */
static int release_held(ProxyClient *c) {
        while (c->held) {
                ProxyChunk *ch = c->held;
                WireHeader h;
                int r;

                c->held = ch->next;
                if (!c->held)
                        c->held_tail = NULL;
                r = wire_message_parse(ch->data, ch->size, ch->n_fds, WIRE_PARSE_SKIP_BODY, &h);
                r = r ? -EBADMSG : judge_client(c, ch->data, ch->size, &h, ch->fds, ch->n_fds);
                free(ch);
                if (r < 0)
                        return r;
        }
        return 0;
}

int proxy_judge_from_client(ProxyClient *c, uint8_t *msg, size_t size, const WireHeader *h,
                            int *fds, unsigned n_fds) {
        int r;

        if (!c->hello_seen) {
                /* the bus refuses anything before Hello itself; the view starts after it */
                c->hello_seen = true;
                r = judge_client(c, msg, size, h, fds, n_fds);
                if (r < 0 || !c->view.filter)
                        return r;
                c->snapshot_started = true;
                c->snapshot_pending = 1;
                r = watch_rule_names(c);
                return r < 0 ? r : call_driver(c, "ListNames", NULL, PROXY_CALL_OWN_NAMES);
        }
        if (c->snapshot_pending || c->held) {
                ProxyChunk *ch = calloc(1, sizeof(*ch));

                if (!ch) {
                        free(msg);
                        close_fds(fds, n_fds);
                        return -ENOMEM;
                }
                *ch = (ProxyChunk){ .data = msg, .size = size, .fds = fds, .n_fds = n_fds };
                if (c->held_tail)
                        c->held_tail->next = ch;
                else
                        c->held = ch;
                c->held_tail = ch;
                return c->snapshot_pending ? 0 : release_held(c);
        }
        return judge_client(c, msg, size, h, fds, n_fds);
}

/* Copy the string array of @msg's body keeping what @keep says, as a reply to the
 * client's serial. Return: 0 or -errno. */
static int answer_filtered_list(ProxyClient *c, const uint8_t *msg, const WireHeader *h,
                                uint32_t client_serial) {
        WireHeader call = { .type = WIRE_MSG_METHOD_CALL, .serial = client_serial };
        WireReader rd;
        WireWriter w;
        const char *s;
        int r;

        wire_reader_init(&rd, msg, h);
        wire_writer_init(&w);
        (void) wire_writer_open(&w, 'a', "s");
        r = wire_reader_enter(&rd, 'a', "s");
        while (!r && wire_reader_peek(&rd) == 's') {
                r = wire_reader_read_basic(&rd, 's', &s);
                if (!r && name_visible(c, s))
                        (void) wire_writer_append_basic(&w, 's', s);
        }
        (void) wire_writer_close(&w);
        r = r ? -EBADMSG : answer(c, &call, NULL, NULL, &w);
        wire_writer_deinit(&w);
        return r;
}

/* GetConnectionCredentials of the client itself: the same dict with the app's pid. */
static int answer_own_creds(ProxyClient *c, const uint8_t *msg, const WireHeader *h,
                            uint32_t client_serial) {
        WireHeader call = { .type = WIRE_MSG_METHOD_CALL, .serial = client_serial };
        WireReader rd;
        WireWriter w;
        int r;

        wire_reader_init(&rd, msg, h);
        wire_writer_init(&w);
        (void) wire_writer_open(&w, 'a', "{sv}");
        r = wire_reader_enter(&rd, 'a', "{sv}");
        while (!r && wire_reader_peek(&rd) == '{') {
                const char *key;
                uint32_t u;
                char t;

                r = wire_reader_enter(&rd, '{', NULL);
                if (!r)
                        r = wire_reader_read_basic(&rd, 's', &key);
                if (!r)
                        r = wire_reader_enter(&rd, 'v', NULL);
                if (r)
                        break;
                t = wire_reader_peek(&rd);
                /* the keys dbus-daemon 1.14 and dbus-broker send are copied, the pid
                 * replaced; anything else is left out */
                if (t == 'u' && (!strcmp(key, "UnixUserID") || !strcmp(key, "ProcessID"))) {
                        r = wire_reader_read_basic(&rd, 'u', &u);
                        if (!strcmp(key, "ProcessID") && c->pid > 0)
                                u = (uint32_t)c->pid;
                        (void) wire_writer_open(&w, '{', NULL);
                        (void) wire_writer_append_basic(&w, 's', key);
                        (void) wire_writer_open(&w, 'v', "u");
                        (void) wire_writer_append_basic(&w, 'u', &u);
                } else if (t == 'a' && (!strcmp(key, "UnixGroupIDs") ||
                                        !strcmp(key, "LinuxSecurityLabel"))) {
                        bool groups = key[0] == 'U';

                        (void) wire_writer_open(&w, '{', NULL);
                        (void) wire_writer_append_basic(&w, 's', key);
                        (void) wire_writer_open(&w, 'v', groups ? "au" : "ay");
                        (void) wire_writer_open(&w, 'a', groups ? "u" : "y");
                        r = wire_reader_enter(&rd, 'a', groups ? "u" : "y");
                        while (!r && wire_reader_peek(&rd)) {
                                uint8_t y;

                                if (groups) {
                                        r = wire_reader_read_basic(&rd, 'u', &u);
                                        (void) wire_writer_append_basic(&w, 'u', &u);
                                } else {
                                        r = wire_reader_read_basic(&rd, 'y', &y);
                                        (void) wire_writer_append_basic(&w, 'y', &y);
                                }
                        }
                        if (!r)
                                r = wire_reader_exit(&rd);
                        (void) wire_writer_close(&w);
                } else {
                        r = wire_reader_skip(&rd);
                        if (!r)
                                r = wire_reader_exit(&rd);
                        if (!r)
                                r = wire_reader_exit(&rd);
                        continue;
                }
                (void) wire_writer_close(&w);
                (void) wire_writer_close(&w);
                if (!r)
                        r = wire_reader_exit(&rd);
                if (!r)
                        r = wire_reader_exit(&rd);
        }
        (void) wire_writer_close(&w);
        r = r ? -EBADMSG : answer(c, &call, NULL, NULL, &w);
        wire_writer_deinit(&w);
        return r;
}

/* The answer to one of our own calls. Return: 0 or -errno. */
static int own_reply(ProxyClient *c, const ProxyCall *call, const uint8_t *msg,
                     const WireHeader *h) {
        WireReader rd;
        const char *s;
        int r = 0;

        if (call->kind == PROXY_CALL_OWN_NAMES && h->type == WIRE_MSG_METHOD_RETURN) {
                wire_reader_init(&rd, msg, h);
                r = wire_reader_enter(&rd, 'a', "s");
                while (!r && wire_reader_peek(&rd) == 's') {
                        r = wire_reader_read_basic(&rd, 's', &s);
                        if (!r && proxy_view_covers(&c->view, s)) {
                                r = call_driver(c, "GetNameOwner", s, PROXY_CALL_OWN_OWNER);
                                if (r < 0)
                                        return r;
                                ++c->snapshot_pending;
                        }
                }
        } else if (call->kind == PROXY_CALL_OWN_OWNER && h->type == WIRE_MSG_METHOD_RETURN) {
                wire_reader_init(&rd, msg, h);
                if (!wire_reader_read_basic(&rd, 's', &s))
                        r = proxy_view_set_owner(&c->view, call->name, s);
        }
        if (r < 0)
                return r;
        if (call->kind != PROXY_CALL_OWN_IGNORE && c->snapshot_pending &&
            !--c->snapshot_pending) {
                proxy_client_log(c, "view complete: %zu covered names owned",
                                 c->view.n_owners);
                return release_held(c);
        }
        return 0;
}

/* A reply from the bus. Return: 0 or -errno. */
static int judge_reply(ProxyClient *c, uint8_t *msg, size_t size, const WireHeader *h,
                       int *fds, unsigned n_fds) {
        ProxyCall call;
        size_t i, off;
        WireReader rd;
        const char *s;
        int r;

        for (i = 0; i < c->n_calls && c->calls[i].up_serial != h->reply_serial; ++i)
                ;
        if (i == c->n_calls) {
                log_msg(c, true, h, "DROPPED (a reply to no call of the client)");
                goto drop;
        }
        call = c->calls[i];
        /* our own calls and the answers we filter went to the driver: only it answers them
         * (a bus lets nobody else answer a call it did not get; not trusted blindly) */
        if (call.kind != PROXY_CALL_CLIENT && !streq0(h->sender, DRIVER)) {
                log_msg(c, true, h, "DROPPED (an answer to a call to the bus, not from it)");
                goto drop;
        }
        c->calls[i] = c->calls[--c->n_calls];
        if (call.kind >= PROXY_CALL_OWN_IGNORE) {
                r = own_reply(c, &call, msg, h);
                free(call.name);
                free(msg);
                close_fds(fds, n_fds);
                return r;
        }
        if (call.kind == PROXY_CALL_CLIENT_HELLO && h->type == WIRE_MSG_METHOD_RETURN) {
                wire_reader_init(&rd, msg, h);
                if (!wire_reader_read_basic(&rd, 's', &s) && !c->view.self) {
                        c->view.self = strdup(s);
                        if (!c->view.self) {
                                r = -ENOMEM;
                                goto drop;
                        }
                }
        }
        if (h->type == WIRE_MSG_METHOD_RETURN && c->view.filter &&
            call.kind != PROXY_CALL_CLIENT && call.kind != PROXY_CALL_CLIENT_HELLO) {
                log_msg(c, true, h, "filtered");
                r = call.kind == PROXY_CALL_CLIENT_CREDS ?
                    answer_own_creds(c, msg, h, call.client_serial) :
                    answer_filtered_list(c, msg, h, call.client_serial);
                goto drop;
        }
        off = reply_serial_offset(msg, h);
        if (!off) {
                log_msg(c, true, h, "DROPPED (a header field the proxy cannot read)");
                goto drop;
        }
        wire_store32(msg + off, h->big_endian, call.client_serial);
        log_msg(c, true, h, "allowed");
        return proxy_side_queue(&c->down, msg, size, fds, n_fds);
drop:
        free(msg);
        close_fds(fds, n_fds);
        return 0;
}

/* NameOwnerChanged from the bus: the view follows; the client sees it if it asked and may
 * see the name. Return: 0 or -errno. */
static int judge_noc(ProxyClient *c, uint8_t *msg, size_t size, const WireHeader *h,
                     int *fds, unsigned n_fds) {
        const char *a[3] = { NULL, NULL, NULL };
        WireReader rd;
        bool show;
        int i, r = 0;

        wire_reader_init(&rd, msg, h);
        for (i = 0; i < 3 && !r; ++i)
                r = wire_reader_read_basic(&rd, 's', &a[i]);
        if (r)
                goto drop;
        if (!c->view.filter) {
                show = true;    /* no rule of ours was added */
        } else {
                show = client_wants_noc(c, a) &&
                       (a[0][0] == ':' ? c->view.sloppy_names || proxy_view_is_caller(&c->view, a[0]) ||
                                         (c->view.self && !strcmp(a[0], c->view.self)) :
                                         proxy_view_can_see_name(&c->view, a[0]));
                if (a[0][0] == ':' && !a[2][0] && proxy_view_is_caller(&c->view, a[0]))
                        r = watch_owner(c, "RemoveMatch", a[0], false);
                if (a[0][0] == ':' && !a[2][0])
                        proxy_view_forget_unique(&c->view, a[0]);
                else if (a[0][0] != ':' && proxy_view_covers(&c->view, a[0]))
                        r = proxy_view_set_owner(&c->view, a[0], a[2]);
                for (i = 0; a[0][0] == ':' && !a[2][0] && (size_t)i < c->n_incoming;)
                        if (!strcmp(c->incoming[i].sender, a[0])) {
                                free(c->incoming[i].sender);
                                c->incoming[i] = c->incoming[--c->n_incoming];
                        } else {
                                ++i;
                        }
                if (r < 0)
                        goto drop;
        }
        proxy_client_log(c, "B%u: <- org.freedesktop.DBus NameOwnerChanged of %s: %s", h->serial,
                         a[0], show ? "allowed" : "FILTERED (not asked for, or not visible)");
        if (show)
                return proxy_side_queue(&c->down, msg, size, fds, n_fds);
drop:
        free(msg);
        close_fds(fds, n_fds);
        return r < 0 ? r : 0;
}

int proxy_judge_from_bus(ProxyClient *c, uint8_t *msg, size_t size, const WireHeader *h,
                         int *fds, unsigned n_fds) {
        int r;

        if (h->type == WIRE_MSG_METHOD_RETURN || h->type == WIRE_MSG_ERROR)
                return judge_reply(c, msg, size, h, fds, n_fds);
        if (h->type == WIRE_MSG_METHOD_CALL && h->sender && c->view.filter) {
                /* the caller becomes visible while it is connected (we learn when it leaves);
                 * it may be answered */
                bool known = proxy_view_is_caller(&c->view, h->sender);

                r = proxy_view_add_caller(&c->view, h->sender);
                if (!r && !known && h->sender[0] == ':')
                        r = watch_owner(c, "AddMatch", h->sender, false);
                if (!r && !(h->flags & WIRE_FLAG_NO_REPLY_EXPECTED)) {
                        ProxyIncoming *in = realloc(c->incoming,
                                                    (c->n_incoming + 1) * sizeof(*in));

                        r = -ENOMEM;
                        if (in) {
                                c->incoming = in;
                                in[c->n_incoming].serial = h->serial;
                                in[c->n_incoming].sender = strdup(h->sender);
                                if (in[c->n_incoming].sender) {
                                        ++c->n_incoming;
                                        r = 0;
                                }
                        }
                }
                if (r < 0) {
                        free(msg);
                        close_fds(fds, n_fds);
                        return r;
                }
        }
        if (h->type == WIRE_MSG_SIGNAL && streq0(h->sender, DRIVER)) {
                if (streq0(h->member, "NameOwnerChanged") && streq0(h->interface, DRIVER) &&
                    !h->destination)
                        return judge_noc(c, msg, size, h, fds, n_fds);
        } else if (h->type == WIRE_MSG_SIGNAL && h->sender &&
                   !proxy_view_may_receive(&c->view, h->sender, !h->destination, h->path,
                                           h->interface, h->member)) {
                log_msg(c, true, h, "FILTERED (no TALK or matching --broadcast rule for the "
                        "sender's names)");
                free(msg);
                close_fds(fds, n_fds);
                return 0;
        }
        log_msg(c, true, h, "allowed");
        return proxy_side_queue(&c->down, msg, size, fds, n_fds);
}

void proxy_judge_release(ProxyClient *c) {
        size_t i;

        while (c->held) {
                ProxyChunk *ch = c->held;

                c->held = ch->next;
                close_fds(ch->fds, ch->n_fds);
                free(ch->data);
                free(ch);
        }
        for (i = 0; i < c->n_calls; ++i)
                free(c->calls[i].name);
        free(c->calls);
        for (i = 0; i < c->n_incoming; ++i)
                free(c->incoming[i].sender);
        free(c->incoming);
        for (i = 0; i < c->n_matches; ++i)
                free(c->matches[i]);
        free(c->matches);
        proxy_view_deinit(&c->view);
}
