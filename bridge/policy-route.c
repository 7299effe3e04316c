/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Policy in bridge routing: the few calls conn.c and names.c make (see bridge/policy.h).
 * Each returns at once when the connections involved carry no snapshot, so a bus without
 * a policy pays one pointer test per message.
 *
 * As in dbus-daemon, a unicast is checked twice: the sender's send rules against the
 * receiver, then the receiver's receive rules against the sender; a denial answers the
 * sender with AccessDenied ("Rejected send message" / "Rejected receive message"). A copy
 * (broadcast, eavesdropping, the bus's own messages) gets the same two checks per receiver
 * and is dropped for a receiver that is denied, with no answer to anyone; only monitors see
 * the AccessDenied error dbus-daemon makes of it (bridge_policy_check_copy()).
 */
#include <errno.h>
#include <stdlib.h>
#include "bridge/activator.h"
#include "bridge/bus.h"
#include "bridge/conn.h"
#include "bridge/msg.h"
#include "bridge/names.h"
#include "bridge/policy-internal.h"
#include "bridge/policy.h"
#include "util/error.h"
#include "util/list.h"

static void snapshot_set_denial(PolicySnapshot *s, char *text) {
        free(s->denial);
        s->denial = text;
}

/**
 * bridge_policy_check_unicast() - send and receive checks of a unicast
 * @sender:             the sender
 * @dst:                the addressed recipient
 * @msg:                the message
 * @requested_reply:    it answers a pending call of @dst to @sender
 *
 * Return: 0, BRIDGE_E_ACCESS_DENIED (text: bridge_conn_get_denial(@sender)), or -ENOMEM.
 */
int bridge_policy_check_unicast(BridgeConn *sender, const BridgeConn *dst,
                                const BridgeMsg *msg, bool requested_reply) {
        const BridgeConn *receiver = dst;
        PolicyMsgInfo info;
        PolicyVerdict verdict;
        char *text;
        bool send = true;
        int r = 0;

        /* a name only an activator holds: checked as dbus-daemon checks an auto-start,
         * the send rules against the name (the message's DESTINATION), no receiver yet;
         * both checks again with the real owner when the message moves to it */
        if (bridge_conn_is_activator(dst))
                receiver = NULL;
        if (!sender->policy && !(receiver && receiver->policy))
                return 0;
        /* allow-all rule sets (a session bus) need no PolicyMsgInfo: policy_last_allows() */
        if ((!sender->policy || policy_last_allows(&sender->policy->rules->send, &msg->hdr,
                                                   requested_reply, false)) &&
            (!receiver || !receiver->policy ||
             policy_last_allows(&receiver->policy->rules->receive, &msg->hdr,
                                requested_reply, false)))
                return 0;
        if (sender->policy) {
                policy_msg_info_init(&info, sender->policy->db, msg);
                r = policy_check_send(sender->policy, &info, receiver, requested_reply,
                                      &verdict);
        }
        if (r == 0 && receiver && receiver->policy) {
                if (!sender->policy || info.db != dst->policy->db)
                        policy_msg_info_init(&info, dst->policy->db, msg);
                send = false;
                r = policy_check_receive(dst->policy, &info, sender, requested_reply, false,
                                         &verdict);
        }
        if (r == 0)
                return 0;
        if (sender->policy) {
                r = policy_format_denial(send, &verdict, msg, sender, receiver,
                                         requested_reply, &text);
                if (r < 0)
                        return error_trace(r);
                snapshot_set_denial(sender->policy, text);
                /* log="true" on the deciding rule: the bus's log sink gets the text */
                if (verdict.log)
                        log_sink_printf(&sender->bus->log, LOG_SINK_NOTICE, "%s", text);
        }
        return BRIDGE_E_ACCESS_DENIED;
}

/* The check of a copy: 0 or POLICY_E_ACCESS_DENIED, *ret_send: the send check denied. */
enum {
        COPY_REQUESTED_REPLY = 1u << 0,
        COPY_EAVESDROPPING = 1u << 1,
        COPY_MEMO = 1u << 7,            /* set in every memo's flags: a zeroed info has none */
};

/*
 * The send and receive checks of one copy. Without @ret_verdict the verdicts are memoized
 * in @info: a sender's send verdict where its send rules name no peer (it cannot depend on
 * the receiver then), and the last receiver's receive verdict for the next receiver with an
 * equivalent snapshot (same db, uid, groups, console state: the same rules) and the same
 * sender. So a broadcast to many receivers of one user checks the rules once.
 */
static int copy_check(PolicyMsgInfo *info, const BridgeConn *sender, const BridgeConn *receiver,
                      const BridgeMsg *msg, bool requested_reply, bool eavesdropping,
                      bool *ret_send, PolicyVerdict *ret_verdict) {
        uint8_t flags = COPY_MEMO | (requested_reply ? COPY_REQUESTED_REPLY : 0) |
                        (eavesdropping ? COPY_EAVESDROPPING : 0);
        bool denied;

        if (sender && sender->policy) {
                const PolicySnapshot *s = sender->policy;

                if (info->db != s->db || info->msg != msg)
                        policy_msg_info_init(info, s->db, msg);
                *ret_send = true;
                if (!ret_verdict && info->memo_send == s && info->memo_send_flags == flags) {
                        denied = info->memo_send_denied;
                } else {
                        denied = policy_check_send(s, info, receiver, requested_reply,
                                                   ret_verdict) != 0;
                        if (!ret_verdict && s->rules->send.peer_free) {
                                info->memo_send = s;
                                info->memo_send_flags = flags;
                                info->memo_send_denied = denied;
                        }
                }
                if (denied)
                        return POLICY_E_ACCESS_DENIED;
        }
        if (receiver->policy) {
                const PolicySnapshot *s = receiver->policy;

                if (info->db != s->db || info->msg != msg)
                        policy_msg_info_init(info, s->db, msg);
                *ret_send = false;
                if (!ret_verdict && info->memo_recv && info->memo_recv_flags == flags &&
                    info->memo_recv_sender == sender &&
                    policy_snapshots_equivalent(info->memo_recv, s)) {
                        denied = info->memo_recv_denied;
                } else {
                        denied = policy_check_receive(s, info, sender, requested_reply,
                                                      eavesdropping, ret_verdict) != 0;
                        if (!ret_verdict) {
                                info->memo_recv = s;
                                info->memo_recv_sender = sender;
                                info->memo_recv_flags = flags;
                                info->memo_recv_denied = denied;
                        }
                }
                if (denied)
                        return POLICY_E_ACCESS_DENIED;
        }
        return 0;
}

/* A copy was denied: only monitors hear of it. Out of line: the allowed copy, once per
 * receiver of every broadcast, does not pay for this frame. Return: 1 or -ENOMEM. */
static _noinline_ int copy_denied(PolicyMsgInfo *info, const BridgeConn *sender,
                                  const BridgeConn *receiver, const BridgeMsg *msg,
                                  bool requested_reply, bool eavesdropping) {
        Bus *bus = receiver->bus;
        PolicyVerdict verdict;
        _cleanup_(freep) char *text = NULL;
        bool send = false;
        int r;

        if (list_is_empty(&bus->monitors) || !bus->notify || !bus->notify->copy_denied)
                return 1;
        /* again, counting the matched rules for the text (the first check does not) */
        (void) copy_check(info, sender, receiver, msg, requested_reply, eavesdropping, &send,
                          &verdict);
        r = policy_format_denial(send, &verdict, msg, sender, receiver, requested_reply, &text);
        if (r < 0)
                return error_trace(r);
        r = bus->notify->copy_denied(bus->notify_userdata, sender, msg, text);
        return r < 0 ? error_trace(r) : 1;
}

/**
 * bridge_policy_check_copy() - may @receiver get this copy of @msg?
 * @info:               the message's facts, cached across receivers (zeroed at first)
 * @sender:             the sender, NULL: the bus
 * @receiver:           who would get it
 * @msg:                the message
 * @requested_reply:    it answers a pending call (of its addressed recipient)
 * @eavesdropping:      @receiver is not the addressed recipient of a message that has one
 *
 * dbus-daemon 1.14.10 answers nobody when it drops a copy (the sender of a broadcast, of an
 * eavesdropped message, never learns of it), but shows its monitors the AccessDenied error
 * it makes, from the bus to the sender (to "org.freedesktop.DBus" when the bus sent the
 * message), after the message itself; checked with forbidding.conf of its own tests and a
 * raw monitor. That error goes through BusNotifyOps.copy_denied, made only while there are
 * monitors: without them a denial costs nothing more than the check.
 *
 * Return: 0 (allowed), 1 (denied), or -ENOMEM.
 */
int bridge_policy_check_copy(PolicyMsgInfo *info, const BridgeConn *sender,
                             const BridgeConn *receiver, const BridgeMsg *msg,
                             bool requested_reply, bool eavesdropping) {
        bool send = false;

        if (copy_check(info, sender, receiver, msg, requested_reply, eavesdropping, &send,
                       NULL) == 0)
                return 0;
        return copy_denied(info, sender, receiver, msg, requested_reply, eavesdropping);
}

/**
 * bridge_policy_check_own() - may @conn own (or queue for) @name?
 * @conn:       the connection
 * @name:       a valid well-known name
 *
 * Return: 0, NAME_E_ACCESS_DENIED (text: bridge_conn_get_denial(@conn)), or -ENOMEM.
 */
int bridge_policy_check_own(BridgeConn *conn, const char *name) {
        char *text;
        int r;

        if (!conn->policy || policy_check_own(conn->policy, name) == 0)
                return 0;
        r = policy_format_own_denial(conn, name, &text);
        if (r < 0)
                return error_trace(r);
        snapshot_set_denial(conn->policy, text);
        return NAME_E_ACCESS_DENIED;
}

/**
 * bridge_conn_get_denial() - the text of @conn's last AccessDenied
 * @conn:       the connection
 *
 * Return: the text (valid until the next denial or the snapshot's end), or NULL.
 */
const char *bridge_conn_get_denial(const BridgeConn *conn) {
        /* a connection without XML policy can still be denied by kdbus's name policy */
        return conn->policy ? conn->policy->denial : conn->denial;
}

/**
 * bridge_policy_check_driver() - may @sender send @msg to the bus driver?
 * @sender:     the sender
 * @msg:        a message whose DESTINATION is the driver's name
 *
 * send_destination="org.freedesktop.DBus" compares with the message's DESTINATION (the bus
 * owns no name in the registry); the bus has no receive rules.
 *
 * Return: 0, BRIDGE_E_ACCESS_DENIED (text: bridge_conn_get_denial(@sender)), or -ENOMEM.
 */
int bridge_policy_check_driver(BridgeConn *sender, const BridgeMsg *msg) {
        PolicyMsgInfo info;
        PolicyVerdict verdict;
        char *text;
        int r;

        if (!sender->policy)
                return 0;
        policy_msg_info_init(&info, sender->policy->db, msg);
        if (policy_check_send(sender->policy, &info, NULL, false, &verdict) == 0)
                return 0;
        r = policy_format_denial(true, &verdict, msg, sender, NULL, false, &text);
        if (r < 0)
                return error_trace(r);
        snapshot_set_denial(sender->policy, text);
        return BRIDGE_E_ACCESS_DENIED;
}
