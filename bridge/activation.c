/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The core's activation state (see activation.h). Names are few (one per .service file),
 * so they live on a list; lookups are linear, and the order is the order they were set,
 * which is what ListActivatableNames reports.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "bridge/activation.h"
#include "bridge/bus.h"
#include "bridge/conn.h"
#include "bridge/msg.h"
#include "util/error.h"

static BusActivationName *activation_find(const BusActivation *a, const char *name) {
        List *l;

        list_for_each(l, &a->names) {
                BusActivationName *n = list_entry(l, BusActivationName, link);

                if (strcmp(n->name, name) == 0)
                        return n;
        }
        return NULL;
}

/**
 * bus_activation_entry_free() - release a waiting entry
 * @e:          the entry (unlinked or linked), or NULL
 *
 * Return: NULL.
 */
BusActivationEntry *bus_activation_entry_free(BusActivationEntry *e) {
        if (!e)
                return NULL;
        if (list_is_linked(&e->link))
                list_unlink(&e->link);
        bridge_conn_unref(e->sender);
        bridge_msg_unref(e->msg);
        free(e);
        return NULL;
}

static void activation_name_free(BusActivation *a, BusActivationName *n) {
        List *l, *t;

        list_for_each_safe(l, t, &n->pending)
                bus_activation_entry_free(list_entry(l, BusActivationEntry, link));
        if (n->starting)
                --a->n_starting;
        if (n->listed)
                --a->n_names;
        list_unlink(&n->link);
        free(n->name);
        free(n);
}

/* A name no longer in the set goes once nothing waits for it and its start ended. */
static void activation_name_gc(BusActivation *a, BusActivationName *n) {
        if (!n->listed && !n->starting && n->n_pending == 0)
                activation_name_free(a, n);
}

/**
 * bus_activation_new() - empty activation state for @bus
 * @bus:        the bus (its limits are read at each start)
 * @ret:        the new state
 *
 * Return: 0 or -ENOMEM.
 */
int bus_activation_new(Bus *bus, BusActivation **ret) {
        BusActivation *a;

        a = calloc(1, sizeof(*a));
        if (!a)
                return error_origin(-ENOMEM);
        a->bus = bus;
        list_init(&a->names);
        *ret = a;
        return 0;
}

/**
 * bus_activation_free() - free the state and every waiting entry
 * @a:          the state, or NULL
 *
 * Return: NULL.
 */
BusActivation *bus_activation_free(BusActivation *a) {
        List *l, *t;

        if (!a)
                return NULL;
        list_for_each_safe(l, t, &a->names)
                activation_name_free(a, list_entry(l, BusActivationName, link));
        free(a);
        return NULL;
}

/**
 * bus_activation_set_names() - replace the set of activatable names
 * @a:          the state
 * @names:      the names, in the order to list them (duplicates are listed once)
 * @n_names:    how many
 *
 * Return: 0 or -ENOMEM (then nothing changed).
 */
int bus_activation_set_names(BusActivation *a, const char *const *names, size_t n_names) {
        List fresh = LIST_INIT(fresh), *l, *t;
        size_t i;

        /* allocate first, so that a failure leaves the old set alone */
        for (i = 0; i < n_names; ++i) {
                BusActivationName *n;

                if (activation_find(a, names[i]))
                        continue;
                list_for_each(l, &fresh)
                        if (strcmp(list_entry(l, BusActivationName, link)->name, names[i]) == 0)
                                break;
                if (l != &fresh)
                        continue;
                n = calloc(1, sizeof(*n));
                if (n)
                        n->name = strdup(names[i]);
                if (!n || !n->name) {
                        free(n);
                        list_for_each_safe(l, t, &fresh) {
                                BusActivationName *f = list_entry(l, BusActivationName, link);

                                list_unlink(l);
                                free(f->name);
                                free(f);
                        }
                        return error_origin(-ENOMEM);
                }
                list_init(&n->pending);
                list_append(&fresh, &n->link);
        }

        list_for_each(l, &a->names) {
                BusActivationName *n = list_entry(l, BusActivationName, link);

                if (n->listed)
                        --a->n_names;
                n->listed = false;
        }
        list_for_each_safe(l, t, &fresh) {
                list_unlink(l);
                list_append(&a->names, l);
        }
        /* put the set in the order given: move each listed name to the end in turn */
        for (i = 0; i < n_names; ++i) {
                BusActivationName *n = activation_find(a, names[i]);

                if (n->listed)
                        continue;
                n->listed = true;
                ++a->n_names;
                list_unlink(&n->link);
                list_append(&a->names, &n->link);
        }
        list_for_each_safe(l, t, &a->names)
                activation_name_gc(a, list_entry(l, BusActivationName, link));
        return 0;
}

/**
 * bus_activation_is_activatable() - does a .service file provide @name?
 * @a:          the state
 * @name:       a bus name
 *
 * Return: true if @name is in the set.
 */
bool bus_activation_is_activatable(const BusActivation *a, const char *name) {
        const BusActivationName *n = activation_find(a, name);

        return n && n->listed;
}

/**
 * bus_activation_is_starting() - is a start of @name in progress?
 * @a:          the state
 * @name:       a bus name
 *
 * Return: true while a start asked for has not ended.
 */
bool bus_activation_is_starting(const BusActivation *a, const char *name) {
        const BusActivationName *n = activation_find(a, name);

        return n && n->starting;
}

/**
 * bus_activation_queue() - @msg from @sender waits for @name
 * @a:                  the state
 * @name:               an activatable name
 * @sender:             who sent @msg (referenced)
 * @msg:                the message (referenced)
 * @start_request:      @msg is a StartServiceByName call, to be answered when @name appears
 * @ret_start_needed:   true if the caller must start the service now
 *
 * Return: 0, -ENOMEM, BUS_ACTIVATION_E_NOT_ACTIVATABLE, or BUS_ACTIVATION_E_LIMIT.
 */
int bus_activation_queue(BusActivation *a, const char *name, BridgeConn *sender, BridgeMsg *msg,
                         bool start_request, bool *ret_start_needed) {
        BusActivationName *n = activation_find(a, name);
        BusActivationEntry *e;
        bool start;

        if (!n || (!n->listed && !n->starting))
                return BUS_ACTIVATION_E_NOT_ACTIVATABLE;
        start = !n->starting;
        if (start && a->n_starting >= a->bus->limits.max_pending_service_starts)
                return BUS_ACTIVATION_E_LIMIT;

        e = calloc(1, sizeof(*e));
        if (!e)
                return error_origin(-ENOMEM);
        e->sender = bridge_conn_ref(sender);
        e->msg = bridge_msg_ref(msg);
        e->start_request = start_request;
        list_append(&n->pending, &e->link);
        ++n->n_pending;
        if (start) {
                n->starting = true;
                ++a->n_starting;
        }
        *ret_start_needed = start;
        return 0;
}

/**
 * bus_activation_end() - the start of @name ended (owner appeared, or failure)
 * @a:          the state
 * @name:       the name
 *
 * Return: true if @name was starting or has entries to hand on (bus_activation_pop()).
 */
bool bus_activation_end(BusActivation *a, const char *name) {
        BusActivationName *n = activation_find(a, name);
        bool was;

        if (!n)
                return false;
        was = n->starting || n->n_pending > 0;
        if (n->starting) {
                n->starting = false;
                --a->n_starting;
        }
        activation_name_gc(a, n);
        return was;
}

/**
 * bus_activation_pop() - the oldest entry waiting for @name
 * @a:          the state
 * @name:       the name
 *
 * Return: the entry, unlinked (bus_activation_entry_free() it), or NULL.
 */
BusActivationEntry *bus_activation_pop(BusActivation *a, const char *name) {
        BusActivationName *n = activation_find(a, name);
        BusActivationEntry *e;

        if (!n || list_is_empty(&n->pending))
                return NULL;
        e = list_entry(list_first(&n->pending), BusActivationEntry, link);
        list_unlink(&e->link);
        --n->n_pending;
        activation_name_gc(a, n);
        return e;
}

/**
 * bus_activation_conn_removed() - @conn left: drop what it was waiting with
 * @a:          the state
 * @conn:       the connection
 */
void bus_activation_conn_removed(BusActivation *a, BridgeConn *conn) {
        List *l, *t, *el, *et;

        list_for_each_safe(l, t, &a->names) {
                BusActivationName *n = list_entry(l, BusActivationName, link);

                list_for_each_safe(el, et, &n->pending) {
                        BusActivationEntry *e = list_entry(el, BusActivationEntry, link);

                        if (e->sender == conn) {
                                bus_activation_entry_free(e);
                                --n->n_pending;
                        }
                }
                activation_name_gc(a, n);
        }
}
