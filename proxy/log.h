/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * Logging of kdbusd. stderr by default ("kdbusd[pid]: message"), the journal with --syslog
 * (fields UNIQUE_NAME=, UID=, PID= when a peer is named). Messages about a peer go through
 * proxy_log_peer(), which is rate-limited per peer (a ProxyLogLimit embedded in the client),
 * so one misbehaving client cannot flood the log. The core's LogSink lands here too.
 */
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <syslog.h>
#include "util/log-sink.h"
#include "util/macro.h"

typedef enum ProxyLogTarget {
        PROXY_LOG_STDERR,
        PROXY_LOG_JOURNAL,              /* --syslog: journal and stderr */
        PROXY_LOG_JOURNAL_ONLY,         /* --syslog-only */
        PROXY_LOG_NONE,
} ProxyLogTarget;

/* Per-peer rate limit: at most PROXY_LOG_BURST lines per PROXY_LOG_INTERVAL_USEC. */
#define PROXY_LOG_BURST 10u
#define PROXY_LOG_INTERVAL_USEC (10u * 1000u * 1000u)

typedef struct ProxyLogLimit {
        uint64_t window_start;
        unsigned n;
        unsigned n_suppressed;
} ProxyLogLimit;

#define PROXY_LOG_LIMIT_NULL(l) { .window_start = 0, .n = 0, .n_suppressed = 0 }

/* Who a line is about; any field may be unknown (NULL / 0 / (uid_t)-1). */
typedef struct ProxyLogPeer {
        const char *unique_name;
        pid_t pid;
        uid_t uid;
} ProxyLogPeer;

void proxy_log_set_target(ProxyLogTarget target);
void proxy_log_set_max_level(int level);
_printf_(2, 3) void proxy_log(int level, const char *fmt, ...);
_printf_(5, 6) void proxy_log_peer(int level, ProxyLogLimit *limit, uint64_t now_usec,
                                   const ProxyLogPeer *peer, const char *fmt, ...);

/* A LogSink (util/log-sink.h) that writes through proxy_log(), for the core and driver. */
extern const LogSink proxy_log_sink;
