/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * One process-wide log target, chosen once from the command line. Lines about a peer carry
 * its unique name, pid and uid both in the text (stderr) and as journal fields, and are
 * rate-limited per peer: after PROXY_LOG_BURST lines in a window, further lines are counted
 * and the count is reported with the next line that passes.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>
#include <systemd/sd-journal.h>
#include "proxy/log.h"

static ProxyLogTarget log_target = PROXY_LOG_STDERR;
static int log_max_level = LOG_INFO;
static bool log_use_syslog;     /* no journal on this machine: syslog(3) instead */

void proxy_log_set_target(ProxyLogTarget target) {
        log_target = target;
        /* like dbus-daemon, "the system log" is the journal where there is one, else syslog */
        log_use_syslog = (target == PROXY_LOG_JOURNAL || target == PROXY_LOG_JOURNAL_ONLY) &&
                         access("/run/systemd/journal/socket", F_OK) < 0;
        if (log_use_syslog)
                openlog("kdbusd", LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

void proxy_log_set_max_level(int level) {
        log_max_level = level;
}

static void log_write(int level, const ProxyLogPeer *peer, const char *text) {
        char pidbuf[32] = "", uidbuf[32] = "", namebuf[64] = "";
        char prefix[192] = "";

        if (peer) {
                snprintf(prefix, sizeof(prefix), "[%s%spid=%d uid=%ld] ",
                         peer->unique_name && peer->unique_name[0] ? peer->unique_name : "",
                         peer->unique_name && peer->unique_name[0] ? " " : "",
                         (int)peer->pid, peer->uid == (uid_t)-1 ? -1L : (long)peer->uid);
        }
        if (log_use_syslog) {
                syslog(level, "%s%s", prefix, text);
                if (log_target == PROXY_LOG_JOURNAL_ONLY)
                        return;
        } else if (log_target == PROXY_LOG_JOURNAL || log_target == PROXY_LOG_JOURNAL_ONLY) {
                if (peer) {
                        snprintf(pidbuf, sizeof(pidbuf), "PEER_PID=%d", (int)peer->pid);
                        snprintf(uidbuf, sizeof(uidbuf), "PEER_UID=%ld",
                                 peer->uid == (uid_t)-1 ? -1L : (long)peer->uid);
                        snprintf(namebuf, sizeof(namebuf), "UNIQUE_NAME=%s",
                                 peer->unique_name ? peer->unique_name : "");
                        (void) sd_journal_send("MESSAGE=%s%s", prefix, text, "PRIORITY=%d", level,
                                               "%s", pidbuf, "%s", uidbuf, "%s", namebuf, NULL);
                } else {
                        (void) sd_journal_send("MESSAGE=%s", text, "PRIORITY=%d", level, NULL);
                }
                if (log_target == PROXY_LOG_JOURNAL_ONLY)
                        return;
        }
        if (log_target == PROXY_LOG_NONE)
                return;
        fprintf(stderr, "kdbusd[%d]: %s%s\n", (int)getpid(), prefix, text);
}

static void log_vformat(int level, const ProxyLogPeer *peer, const char *fmt, va_list ap) {
        char text[2048];

        vsnprintf(text, sizeof(text), fmt, ap);
        log_write(level, peer, text);
}

/**
 * proxy_log() - log a line that is about no particular peer
 * @level:      LOG_ERR ... LOG_DEBUG
 * @fmt:        printf format
 */
void proxy_log(int level, const char *fmt, ...) {
        va_list ap;

        if (level > log_max_level)
                return;
        va_start(ap, fmt);
        log_vformat(level, NULL, fmt, ap);
        va_end(ap);
}

/**
 * proxy_log_peer() - log a line about @peer, rate-limited through @limit
 * @level:      LOG_ERR ... LOG_DEBUG
 * @limit:      the peer's rate-limit state, or NULL for no limit
 * @now_usec:   CLOCK_MONOTONIC now
 * @peer:       who the line is about
 * @fmt:        printf format
 */
void proxy_log_peer(int level, ProxyLogLimit *limit, uint64_t now_usec, const ProxyLogPeer *peer,
                    const char *fmt, ...) {
        va_list ap;

        if (level > log_max_level)
                return;
        if (limit) {
                if (now_usec - limit->window_start >= PROXY_LOG_INTERVAL_USEC ||
                    limit->window_start == 0) {
                        if (limit->n_suppressed)
                                log_write(LOG_NOTICE, peer, "(further log lines about this peer "
                                          "were suppressed)");
                        limit->window_start = now_usec ? now_usec : 1;
                        limit->n = 0;
                        limit->n_suppressed = 0;
                }
                if (limit->n >= PROXY_LOG_BURST) {
                        ++limit->n_suppressed;
                        return;
                }
                ++limit->n;
        }
        va_start(ap, fmt);
        log_vformat(level, peer, fmt, ap);
        va_end(ap);
}

static void log_sink_write(void *userdata, int level, const char *fmt, va_list ap) {
        if (level > log_max_level)
                return;
        log_vformat(level, NULL, fmt, ap);
}

const LogSink proxy_log_sink = {
        .write = log_sink_write,
        .userdata = NULL,
};
