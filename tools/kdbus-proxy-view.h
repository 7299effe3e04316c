/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * What one client of kdbus-proxy's filtering proxy (tools/kdbus-proxy-filter.c) may see and
 * reach on a classic bus, with the rules of kdbusd's endpoints (bridge/endpoint.h,
 * docs/native.md): the rules are an xdg-mode name ACL of the core (bridge/name-acl.h,
 * built from the same items kdbusd's endpoint gets), and every decision reads the bus's
 * current primary owners of the names the rules cover, as the proxy learns them from the
 * client's own upstream connection (NameOwnerChanged, in the order the bus sent them), so
 * nothing is sticky:
 *
 *  - a well-known name is visible with SEE (a rule counting as TALK);
 *  - a unique name is visible if it is the client's own, owns a visible name, called the
 *    client and is still connected, or with --sloppy-names;
 *  - a call or unicast signal passes with TALK for one of the receiver's names or a --call
 *    rule of one of them matching it (a signal also to a peer that called the client);
 *  - a broadcast reaches the client from a sender with TALK or a matching --broadcast rule;
 *    a unicast signal from a sender it may talk to.
 *
 * No sockets here: tests/unit/tools/test-kdbus-proxy-view.c drives it directly.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "bridge/name-acl.h"
#include "tools/kdbus-proxy-args.h"

typedef struct NameAclDb NameAclDb;

typedef struct ProxyOwner {
        char *name;                     /* a well-known name the rules cover */
        char *unique;                   /* its primary owner */
} ProxyOwner;

typedef struct ProxyView {
        NameAclDb *db;
        bool filter;                    /* --filter: without it nothing is restricted */
        bool sloppy_names;
        char *self;                     /* the client's unique name, once Hello answered */
        ProxyOwner *owners;
        size_t n_owners;
        char **callers;                 /* unique names that called the client, while
                                         * connected */
        size_t n_callers;
} ProxyView;

#define PROXY_VIEW_NULL { 0 }

/* Outcomes of proxy_view_may_send(). */
enum {
        _PROXY_VIEW_E_SUCCESS,
        PROXY_VIEW_E_HIDDEN,            /* the receiver does not exist for the client */
        PROXY_VIEW_E_DENIED,            /* visible, but the rules do not let it pass */
        _PROXY_VIEW_E_N,
};

/* The rules of @b. Return: 0, -E2BIG (too many rules), -EINVAL, -ENOMEM. */
int proxy_view_init(ProxyView *v, const ProxyBusArgs *b);
void proxy_view_deinit(ProxyView *v);

/* Does any rule mention @name (its owner must be tracked)? */
bool proxy_view_covers(const ProxyView *v, const char *name);
/* @name's primary owner is now @unique (NULL or "": none). Return: 0 or -ENOMEM. */
int proxy_view_set_owner(ProxyView *v, const char *name, const char *unique);
/* The primary owner of @name as last learnt, or NULL. */
const char *proxy_view_owner(const ProxyView *v, const char *name);
/* @unique called the client: visible while connected. Return: 0 or -ENOMEM. */
int proxy_view_add_caller(ProxyView *v, const char *unique);
bool proxy_view_is_caller(const ProxyView *v, const char *unique);
/* @unique left the bus: no longer a caller, owns nothing. */
void proxy_view_forget_unique(ProxyView *v, const char *unique);

/* The NAME_ACL_* level the rules give @name (NAME_ACL_NONE: none), a rule counting as TALK. */
unsigned proxy_view_level(const ProxyView *v, const char *name);
bool proxy_view_can_see_name(const ProxyView *v, const char *name);
bool proxy_view_can_see_unique(const ProxyView *v, const char *unique);
/* May the client send a message of @type with these headers to @destination (a unique or
 * well-known name, not the bus's)? Return: 0 or PROXY_VIEW_E_*. */
int proxy_view_may_send(const ProxyView *v, const char *destination, uint8_t type,
                        const char *path, const char *interface, const char *member);
/* May the client receive this message from @sender (a unique name)? @broadcast: it has no
 * destination. */
bool proxy_view_may_receive(const ProxyView *v, const char *sender, bool broadcast,
                            const char *path, const char *interface, const char *member);
