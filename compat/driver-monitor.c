/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * org.freedesktop.DBus.Monitoring.BecomeMonitor(as rules, u flags), as dbus-daemon 1.14.10
 * answers it (checked with a raw client against it):
 *   - privileged (DriverMethod.privileged): only on /org/freedesktop/DBus, only for root or
 *     the bus's uid, both checked before the arguments;
 *   - flags != 0: InvalidArgs, checked before the rules;
 *   - each rule is parsed as AddMatch parses it (same errors); "" or no rule at all means
 *     every message; eavesdrop is implied whatever the rule says;
 *   - the reply comes first; then the caller's rules and pending replies go, and its names
 *     are released, unique name first, each with NameLost to it and NameOwnerChanged,
 *     which it sees as a monitor. From then on anything it sends disconnects it
 *     (driver_handle_message()).
 * What a monitor sees is the core's business (bridge/monitor.h).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include "bridge/bus.h"
#include "bridge/conn.h"
#include "bridge/match.h"
#include "bridge/monitor.h"
#include "compat/driver-internal.h"
#include "compat/match-rule.h"
#include "util/error.h"

typedef struct MonitorRules {
        BridgeMatchRule **rules;
        size_t n, size;
} MonitorRules;

static void monitor_rules_clear(MonitorRules *m) {
        size_t i;

        for (i = 0; i < m->n; ++i)
                bridge_match_rule_free(m->rules[i]);
        free(m->rules);
        m->rules = NULL;
        m->n = m->size = 0;
}

static int monitor_rules_push(MonitorRules *m, BridgeMatchRule *rule) {
        if (m->n == m->size) {
                size_t size = m->size ? 2 * m->size : 8;
                BridgeMatchRule **p = realloc(m->rules, size * sizeof(*p));

                if (!p) {
                        bridge_match_rule_free(rule);
                        return error_origin(-ENOMEM);
                }
                m->rules = p;
                m->size = size;
        }
        m->rules[m->n++] = rule;
        return 0;
}

/*
 * Read and parse the rules; an invalid one is answered here (*ret_answered).
 * Return: 0, -errno, BRIDGE_E_QUOTA (from the error reply).
 */
static int monitor_read_rules(Driver *driver, BridgeConn *caller, BridgeMsg *call,
                              WireReader *args, MonitorRules *m, bool *ret_answered) {
        char buf[MATCH_RULE_MAX_LEN + 1];
        int r;

        *ret_answered = false;
        r = wire_reader_enter(args, 'a', "s");
        if (r)
                return error_fold(r);
        while (wire_reader_peek(args)) {
                BridgeMatchRule *rule = NULL;
                const char *text, *error = NULL;
                BridgeMatchKeys keys;

                r = wire_reader_read_basic(args, 's', &text);
                if (r)
                        return error_fold(r);
                r = match_rule_parse(text, buf, sizeof(buf), &keys, &error);
                if (r > 0) {
                        *ret_answered = true;
                        return driver_error(driver, caller, call, COMPAT_DOMAIN_MATCH_RULE, r,
                                            error, NULL, NULL);
                }
                if (r < 0)
                        return error_trace(r);
                keys.eavesdrop = true;
                r = bridge_match_rule_new(&keys, &rule);
                if (r)
                        return error_trace(r);
                r = monitor_rules_push(m, rule);
                if (r)
                        return error_trace(r);
        }
        return error_fold(wire_reader_exit(args));
}

/**
 * driver_method_become_monitor() - Monitoring.BecomeMonitor(as match_rules, u flags)
 * @driver:     the driver
 * @caller:     the calling connection (privilege already checked)
 * @call:       the call (its signature already checked)
 * @args:       a reader at the call's first argument
 *
 * Answers the call itself, then turns @caller into a monitor. Return: 0, a negative errno,
 * or BRIDGE_E_QUOTA (the caller's queue is full).
 */
int driver_method_become_monitor(Driver *driver, BridgeConn *caller, BridgeMsg *call,
                                 WireReader *args) {
        MonitorRules m = {};
        char limit[16];
        uint32_t flags;
        bool answered;
        WireReader flags_reader = *args;
        int r;

        /* flags first, as dbus-daemon: skip the array to read them */
        r = wire_reader_skip(&flags_reader);
        if (!r)
                r = wire_reader_read_basic(&flags_reader, 'u', &flags);
        if (r)
                return error_fold(r);
        if (flags != 0)
                return driver_error(driver, caller, call, COMPAT_DOMAIN_COMPAT,
                                    COMPAT_E_MONITOR_FLAGS, NULL, NULL, NULL);

        r = monitor_read_rules(driver, caller, call, args, &m, &answered);
        if (r || answered) {
                monitor_rules_clear(&m);
                return r;
        }
        if (m.n > driver->bus->limits.max_match_rules_per_connection) {
                monitor_rules_clear(&m);
                (void) snprintf(limit, sizeof(limit), "%" PRIu32,
                                driver->bus->limits.max_match_rules_per_connection);
                return driver_error(driver, caller, call, COMPAT_DOMAIN_BRIDGE,
                                    BRIDGE_E_MATCH_QUOTA, caller->unique_name, limit, NULL);
        }

        r = driver_reply_empty(driver, caller, call);
        if (r) {
                monitor_rules_clear(&m);
                return r;
        }
        r = bridge_conn_become_monitor(caller, m.rules, m.n);
        free(m.rules);          /* the rules themselves are taken */
        if (r == BRIDGE_E_NOT_ACTIVE)
                return 0;       /* cannot happen: a monitor cannot call us */
        return r > 0 ? error_fold(r) : error_trace(r);
}
