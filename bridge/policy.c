/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Policy database, per-connection snapshots and the checks (see bridge/policy.h).
 *
 * STATUS: API only. Every function that would decide returns -EOPNOTSUPP until the
 * implementation lands; nothing here fakes a decision.
 */
#include <errno.h>
#include <stdlib.h>
#include "bridge/conn.h"
#include "bridge/policy.h"
#include "util/error.h"

int policy_db_new(PolicyDb **ret) { return error_origin(-EOPNOTSUPP); }
PolicyDb *policy_db_ref(PolicyDb *db) { return db; }
PolicyDb *policy_db_unref(PolicyDb *db) { return NULL; }
int policy_db_add_rule(PolicyDb *db, PolicyContext context, uint32_t context_id,
                       const PolicyRuleSpec *spec) { return error_origin(-EOPNOTSUPP); }
int policy_db_seal(PolicyDb *db) { return error_origin(-EOPNOTSUPP); }
size_t policy_db_count_rules(const PolicyDb *db) { return 0; }
int policy_db_dump(const PolicyDb *db, char **ret_text) { return error_origin(-EOPNOTSUPP); }
int policy_db_check_connect(const PolicyDb *db, uid_t uid, const gid_t *gids, size_t n_gids,
                            uid_t bus_uid) { return error_origin(-EOPNOTSUPP); }
int policy_snapshot_new(PolicyDb *db, const PolicyPeer *peer, PolicySnapshot **ret) {
        return error_origin(-EOPNOTSUPP);
}
PolicySnapshot *policy_snapshot_free(PolicySnapshot *snapshot) { return NULL; }
const PolicyDb *policy_snapshot_get_db(const PolicySnapshot *snapshot) { return NULL; }
const char *policy_snapshot_get_loginfo(const PolicySnapshot *snapshot) { return ""; }
int policy_check_own(const PolicySnapshot *snapshot, const char *name) {
        return error_origin(-EOPNOTSUPP);
}
void policy_msg_info_init(PolicyMsgInfo *info, const PolicyDb *db, const BridgeMsg *msg) {
        *info = (PolicyMsgInfo){ .db = db, .msg = msg };
}
int policy_check_send(const PolicySnapshot *sender_policy, const PolicyMsgInfo *info,
                      const BridgeConn *receiver, bool requested_reply,
                      PolicyVerdict *ret_verdict) { return error_origin(-EOPNOTSUPP); }
int policy_check_receive(const PolicySnapshot *receiver_policy, const PolicyMsgInfo *info,
                         const BridgeConn *sender, bool requested_reply, bool eavesdropping,
                         PolicyVerdict *ret_verdict) { return error_origin(-EOPNOTSUPP); }
int policy_format_denial(bool send, const PolicyVerdict *verdict, const BridgeMsg *msg,
                         const BridgeConn *sender, const BridgeConn *receiver,
                         bool requested_reply, char **ret_text) {
        return error_origin(-EOPNOTSUPP);
}
int policy_format_own_denial(const BridgeConn *conn, const char *name, char **ret_text) {
        return error_origin(-EOPNOTSUPP);
}
void bridge_conn_set_policy(BridgeConn *conn, PolicySnapshot *snapshot) {
        (void) policy_snapshot_free(snapshot);
}
int bus_set_policy(Bus *bus, PolicyDb *db) { return error_origin(-EOPNOTSUPP); }
