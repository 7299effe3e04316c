/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * The configuration's directories watched as dbus-daemon 1.14 watches them: the directory of
 * every <includedir> (inotify: a file closed after writing, moved in or out, deleted). A
 * change reloads the whole configuration as SIGHUP does (and the service directories with
 * it), once per loop iteration however many events came in it: a package that drops five
 * policy files reloads once or a few times, never once per event. The watched set follows
 * the running configuration: it is set again after every reload that took effect, whatever
 * started it (a change here, SIGHUP, ReloadConfig).
 */
#include "util/macro.h"

typedef struct ProxyConfigWatch ProxyConfigWatch;
typedef struct Server Server;

/* Watch the <includedir>s of @s->config (none without a configuration). 0 or -errno. */
int proxy_config_watch_new(Server *s, ProxyConfigWatch **ret);
/* The running configuration changed: watch its directories (logs what it cannot watch). */
void proxy_config_watch_update(ProxyConfigWatch *w);
ProxyConfigWatch *proxy_config_watch_free(ProxyConfigWatch *w);
DEFINE_CLEANUP(ProxyConfigWatch *, proxy_config_watch_free);
