/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libsystemd's sd_notify() finds the socket only through $NOTIFY_SOCKET. kdbusd is single-
 * threaded, so each message puts the saved address back for the one call and takes it out
 * again (unset_environment=1): nothing spawned in between can see it.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include "proxy/log.h"
#include "proxy/notify.h"

static char *notify_socket;

/** proxy_notify_init() - take NOTIFY_SOCKET out of the environment, keep its value */
void proxy_notify_init(void) {
        const char *e = getenv("NOTIFY_SOCKET");

        if (e && e[0] && !notify_socket)
                notify_socket = strdup(e);
        (void) unsetenv("NOTIFY_SOCKET");
}

/**
 * proxy_notify() - send a state change to the service manager, if there is one
 * @fmt:        printf format of the newline-separated assignments ("READY=1")
 *
 * Failures are logged at debug level only: without systemd there is nobody to tell.
 */
void proxy_notify(const char *fmt, ...) {
        char text[512];
        va_list ap;
        int r;

        if (!notify_socket)
                return;
        va_start(ap, fmt);
        vsnprintf(text, sizeof(text), fmt, ap);
        va_end(ap);
        if (setenv("NOTIFY_SOCKET", notify_socket, 1) < 0)
                return;
        r = sd_notify(1, text);
        if (r < 0)
                proxy_log(LOG_DEBUG, "Cannot tell the service manager \"%s\" on %s: %s", text,
                          notify_socket, strerror(-r));
}
