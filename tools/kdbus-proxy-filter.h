/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * kdbus-proxy's filtering proxy, for a bus that is no kdbusd (dbus-daemon, dbus-broker),
 * or a kdbusd with --log: a socket at PATH; each client that connects gets its own
 * connection to the bus (as xdg-dbus-proxy does), its SASL exchange relayed line by line,
 * then every message in both directions judged by the client's ProxyView
 * (tools/kdbus-proxy-view.h: the rules of kdbusd's endpoints, on the bus's current owners).
 * The design and every answer are listed in docs/native.md ("kdbus-proxy in front of
 * another bus").
 *
 * The caller runs the loop: it polls the fds proxy_filter_poll_fill() lists and hands the
 * results to proxy_filter_poll_dispatch().
 */
#include <poll.h>
#include <stddef.h>
#include "tools/kdbus-proxy-args.h"

typedef struct ProxyFilter ProxyFilter;

/*
 * Listen at @b->path for clients of the bus at @address (its first unix:path= or
 * unix:abstract= entry is used). Return: 0, -EINVAL (no usable entry in @address), or the
 * -errno of bind() / listen(); the error is written to stderr.
 */
int proxy_filter_new(const ProxyBusArgs *b, const char *address, ProxyFilter **ret);
/* Close every client and the socket (its file is removed). */
ProxyFilter *proxy_filter_free(ProxyFilter *f);

/* How many pollfds proxy_filter_poll_fill() writes. */
size_t proxy_filter_poll_count(const ProxyFilter *f);
void proxy_filter_poll_fill(const ProxyFilter *f, struct pollfd *pfd);
/* Act on @pfd as filled by the last proxy_filter_poll_fill() (after poll()). */
void proxy_filter_poll_dispatch(ProxyFilter *f, const struct pollfd *pfd);
