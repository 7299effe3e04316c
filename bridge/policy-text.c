/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Policy: the canonical dump, dbus-daemon's AccessDenied texts, and binding dbs and
 * snapshots to the bus and its connections (see bridge/policy.h).
 *
 * The AccessDenied texts reproduce dbus-daemon 1.14.10's, checked by running it: e.g.
 *   Rejected send message, 2 matched rules; type="method_call", sender=":1.2" (uid=0
 *   pid=12694 comm="/usr/bin/python3 -") interface="com.x.Denied" member="M" error
 *   name="(unset)" requested_reply="0" destination="com.x.A" (uid=0 pid=12694 comm="...")
 * A peer is described by its snapshot's loginfo; the bus by "bus" (shown as "(bus)") as
 * receiver, and by "(bus)" (shown as "((bus))") as sender of a denied copy.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bridge/bus.h"
#include "bridge/conn.h"
#include "bridge/msg.h"
#include "bridge/policy-internal.h"
#include "bridge/policy.h"
#include "util/error.h"
#include "wire/protocol.h"

static const char *msg_type_to_string(unsigned type) {
        switch (type) {
        case WIRE_MSG_METHOD_CALL:      return "method_call";
        case WIRE_MSG_METHOD_RETURN:    return "method_return";
        case WIRE_MSG_ERROR:            return "error";
        case WIRE_MSG_SIGNAL:           return "signal";
        default:                        return "invalid";
        }
}

static const char *nonnull(const char *s, const char *fallback) {
        return s ? s : fallback;
}

/* ---- dump ---- */

static const char *const context_names[_POLICY_CONTEXT_N] = {
        [POLICY_CONTEXT_DEFAULT] = "default",
        [POLICY_CONTEXT_GROUP] = "group",
        [POLICY_CONTEXT_USER] = "user",
        [POLICY_CONTEXT_AT_CONSOLE] = "at_console=true",
        [POLICY_CONTEXT_NOT_AT_CONSOLE] = "at_console=false",
        [POLICY_CONTEXT_MANDATORY] = "mandatory",
};

static const char *const kind_names[_POLICY_RULE_KIND_N] = {
        [POLICY_RULE_SEND] = "send",
        [POLICY_RULE_RECEIVE] = "receive",
        [POLICY_RULE_OWN] = "own",
        [POLICY_RULE_USER] = "user",
        [POLICY_RULE_GROUP] = "group",
};

static const char *id_str(const PolicyDb *db, uint32_t id) {
        return id ? db->by_id[id]->str : NULL;
}

static void dump_rule(FILE *f, const PolicyDb *db, const PolicyRule *r) {
        static const char *const tristate[] = { "any", "false", "true" };

        fprintf(f, "  %s %s", r->allow ? "allow" : "deny", kind_names[r->kind]);
        switch (r->kind) {
        case POLICY_RULE_USER:
        case POLICY_RULE_GROUP:
                if (r->any_id)
                        fputs(" id=*", f);
                else
                        fprintf(f, " id=%u", r->id);
                break;
        case POLICY_RULE_OWN:
                fprintf(f, " name%s=%s", r->name_is_prefix ? "_prefix" : "",
                        nonnull(r->name_str, "*"));
                break;
        default:
                fprintf(f, " name%s=%s type=%s interface=%s member=%s error=%s path=%s",
                        r->name_is_prefix ? "_prefix" : "", nonnull(r->name_str, "*"),
                        r->msg_type ? msg_type_to_string(r->msg_type) : "*",
                        nonnull(id_str(db, r->interface), "*"),
                        nonnull(id_str(db, r->member), "*"), nonnull(id_str(db, r->error), "*"),
                        nonnull(id_str(db, r->path), "*"));
                if (r->kind == POLICY_RULE_SEND)
                        fprintf(f, " broadcast=%s", tristate[r->broadcast]);
                fprintf(f, " requested_reply=%d eavesdrop=%d fds=%u-%u", r->requested_reply,
                        r->eavesdrop, r->min_fds, r->max_fds);
                break;
        }
        fprintf(f, "%s\n", r->log ? " log" : "");
}

static int id_compare(const void *a, const void *b) {
        uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

        return x < y ? -1 : x > y;
}

/**
 * policy_db_dump() - canonical text of a db
 * @db:         the db
 * @ret_text:   malloc()ed, NUL-terminated
 *
 * Contexts in evaluation order (users and groups by id), rules in order, no file:line.
 *
 * Return: 0 or -ENOMEM.
 */
int policy_db_dump(const PolicyDb *db, char **ret_text) {
        _cleanup_(freep) uint32_t *ids = NULL;
        char *text = NULL;
        size_t size = 0, n_ids, i, j, c;
        FILE *f;

        ids = malloc((db->n_rules + 1) * sizeof(*ids));
        if (!ids)
                return error_origin(-ENOMEM);
        f = open_memstream(&text, &size);
        if (!f)
                return error_origin(-ENOMEM);
        for (c = 0; c < _POLICY_CONTEXT_N; ++c) {
                bool per_id = c == POLICY_CONTEXT_USER || c == POLICY_CONTEXT_GROUP;

                n_ids = 0;
                for (i = 0; i < db->n_rules; ++i)
                        if (db->rules[i].context == c)
                                ids[n_ids++] = per_id ? db->rules[i].context_id : 0;
                qsort(ids, n_ids, sizeof(*ids), id_compare);
                for (j = 0; j < n_ids; ++j) {
                        if (j > 0 && ids[j] == ids[j - 1])
                                continue;
                        if (per_id)
                                fprintf(f, "%s %u\n", context_names[c], ids[j]);
                        else
                                fprintf(f, "%s\n", context_names[c]);
                        for (i = 0; i < db->n_rules; ++i)
                                if (db->rules[i].context == c &&
                                    (!per_id || db->rules[i].context_id == ids[j]))
                                        dump_rule(f, db, &db->rules[i]);
                }
        }
        if (fclose(f) != 0 || !text) {
                free(text);
                return error_origin(-ENOMEM);
        }
        *ret_text = text;
        return 0;
}

/* ---- AccessDenied texts ---- */

static const char *conn_loginfo(const BridgeConn *conn, char *buf, size_t size) {
        if (!conn)
                return "bus";
        if (conn->policy)
                return policy_snapshot_get_loginfo(conn->policy);
        (void) snprintf(buf, size, "uid=%lu pid=%lu", (unsigned long)conn->creds.uid,
                        (unsigned long)conn->creds.pid);
        return buf;
}

/**
 * policy_format_denial() - dbus-daemon's AccessDenied text for a denied send or receive
 * @send:               the send check denied (else the receive check)
 * @verdict:            what the check reported
 * @msg:                the message
 * @sender:             its sender, NULL: the bus
 * @receiver:           the receiver it was denied for, NULL: the bus
 * @requested_reply:    as passed to the check
 * @ret_text:           malloc()ed
 *
 * Return: 0 or -ENOMEM.
 */
int policy_format_denial(bool send, const PolicyVerdict *verdict, const BridgeMsg *msg,
                         const BridgeConn *sender, const BridgeConn *receiver,
                         bool requested_reply, char **ret_text) {
        const WireHeader *h = &msg->hdr;
        char sbuf[64], rbuf[64], *text;

        if (asprintf(&text,
                     "Rejected %s message, %u matched rules; type=\"%s\", sender=\"%s\" (%s) "
                     "interface=\"%s\" member=\"%s\" error name=\"%s\" requested_reply=\"%d\" "
                     "destination=\"%s\" (%s)",
                     send ? "send" : "receive", verdict->n_matched,
                     msg_type_to_string(h->type),
                     /* dbus-daemon checks the bus's messages before it stamps SENDER */
                     sender ? sender->unique_name : "(unset)",
                     /* the bus as sender is "((bus))", as receiver "(bus)" in dbus-daemon */
                     sender ? conn_loginfo(sender, sbuf, sizeof(sbuf)) : "(bus)",
                     nonnull(h->interface, "(unset)"), nonnull(h->member, "(unset)"),
                     nonnull(h->error_name, "(unset)"), requested_reply,
                     /* dbus-daemon's text for a message without destination */
                     nonnull(h->destination, WIRE_DRIVER_NAME),
                     conn_loginfo(receiver, rbuf, sizeof(rbuf))) < 0)
                return error_origin(-ENOMEM);
        *ret_text = text;
        return 0;
}

/**
 * policy_format_own_denial() - dbus-daemon's AccessDenied text for RequestName
 * @conn:       the connection that asked
 * @name:       the name
 * @ret_text:   malloc()ed
 *
 * Return: 0 or -ENOMEM.
 */
int policy_format_own_denial(const BridgeConn *conn, const char *name, char **ret_text) {
        char *text;

        if (asprintf(&text, "Connection \"%s\" is not allowed to own the service \"%s\" due "
                     "to security policies in the configuration file", conn->unique_name,
                     name) < 0)
                return error_origin(-ENOMEM);
        *ret_text = text;
        return 0;
}

/* ---- binding ---- */

/**
 * bridge_conn_set_policy() - give a connection its snapshot
 * @conn:       the connection
 * @snapshot:   taken (NULL: no checks for this connection); the previous one is freed
 */
void bridge_conn_set_policy(BridgeConn *conn, PolicySnapshot *snapshot) {
        policy_snapshot_free(conn->policy);
        conn->policy = snapshot;
}

/**
 * bus_set_policy() - install a db and re-resolve every connection against it
 * @bus:        the bus
 * @db:         sealed; a reference is taken. NULL: no policy (snapshots are dropped)
 *
 * All or nothing: every new snapshot is built before anything changes. Connections
 * without a snapshot get none (the front end attaches one at connect).
 *
 * Return: 0 or -ENOMEM.
 */
int bus_set_policy(Bus *bus, PolicyDb *db) {
        PolicySnapshot **fresh = NULL;
        size_t n = 0, i;
        List *pos;
        int r = 0;

        list_for_each(pos, &bus->conns)
                ++n;
        if (db && n) {
                fresh = calloc(n, sizeof(*fresh));
                if (!fresh)
                        return error_origin(-ENOMEM);
                i = 0;
                list_for_each(pos, &bus->conns) {
                        BridgeConn *conn = container_of(pos, BridgeConn, bus_link);

                        if (conn->policy) {
                                r = policy_snapshot_rebase(conn->policy, db, &fresh[i]);
                                if (r < 0)
                                        break;
                        }
                        ++i;
                }
                if (r < 0) {
                        for (i = 0; i < n; ++i)
                                policy_snapshot_free(fresh[i]);
                        free(fresh);
                        return error_trace(r);
                }
        }
        i = 0;
        list_for_each(pos, &bus->conns) {
                BridgeConn *conn = container_of(pos, BridgeConn, bus_link);

                bridge_conn_set_policy(conn, fresh ? fresh[i] : NULL);
                ++i;
        }
        free(fresh);
        policy_db_unref(bus->policy);
        bus->policy = policy_db_ref(db);
        return 0;
}
