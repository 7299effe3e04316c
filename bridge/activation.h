/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * Activation in the core: which well-known names can be started on demand, and the
 * messages (and StartServiceByName calls) that wait for such a name to get an owner.
 * The core only decides and keeps the queue; it never starts anything. The layer above
 * asks for a start when bus_activation_queue() says one is needed, and hands every waiting
 * entry on (bus_activation_pop()) once the name has an owner or the start failed.
 *
 * A waiting entry holds a reference on its sender's connection and on its message, in the
 * order they arrived; a sender that leaves loses its entries (bus_activation_conn_removed()).
 * Starts in progress are capped by limits.max_pending_service_starts.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "util/list.h"
#include "util/macro.h"

typedef struct Bus Bus;
typedef struct BridgeConn BridgeConn;
typedef struct BridgeMsg BridgeMsg;

enum {
        _BUS_ACTIVATION_E_SUCCESS,
        BUS_ACTIVATION_E_NOT_ACTIVATABLE,       /* no .service file provides the name */
        BUS_ACTIVATION_E_LIMIT,                 /* max_pending_service_starts reached */
        _BUS_ACTIVATION_E_N,
};

/* A message (or a StartServiceByName call) waiting for its name. */
typedef struct BusActivationEntry {
        List link;                      /* BusActivationName.pending, FIFO */
        BridgeConn *sender;             /* referenced */
        BridgeMsg *msg;                 /* referenced */
        bool start_request;             /* StartServiceByName: answer 1 (SUCCESS), not route */
} BusActivationEntry;

typedef struct BusActivationName {
        List link;                      /* BusActivation.names */
        char *name;
        bool listed;                    /* in the set; false: kept only for its start/queue */
        bool starting;                  /* a start was asked for and has not ended */
        List pending;                   /* BusActivationEntry */
        unsigned n_pending;
} BusActivationName;

typedef struct BusActivation {
        Bus *bus;
        List names;                     /* BusActivationName, in the order they were set */
        unsigned n_names;
        unsigned n_starting;
} BusActivation;

int bus_activation_new(Bus *bus, BusActivation **ret);
/* Drops every waiting entry (references released, nothing answered). */
BusActivation *bus_activation_free(BusActivation *a);
DEFINE_CLEANUP(BusActivation *, bus_activation_free);

/*
 * Replace the set of activatable names with @names. A name that goes away while messages
 * wait for it keeps them (its start still ends in success or failure); it is then dropped.
 * Return: 0 or -ENOMEM (then nothing changed).
 */
int bus_activation_set_names(BusActivation *a, const char *const *names, size_t n_names);
bool bus_activation_is_activatable(const BusActivation *a, const char *name);
/* The names, in the order set (skip those with !listed); for listing. */
#define bus_activation_for_each(n, a) \
        for ((n) = list_entry((a)->names.next, BusActivationName, link); \
             &(n)->link != &(a)->names; \
             (n) = list_entry((n)->link.next, BusActivationName, link))

/**
 * bus_activation_queue() - @msg from @sender waits for @name
 *
 * *@ret_start_needed says whether the caller must now start the service (the first entry
 * of a name that is not being started). Return: 0, -ENOMEM, BUS_ACTIVATION_E_NOT_ACTIVATABLE,
 * or BUS_ACTIVATION_E_LIMIT (a new start would exceed max_pending_service_starts).
 */
int bus_activation_queue(BusActivation *a, const char *name, BridgeConn *sender, BridgeMsg *msg,
                         bool start_request, bool *ret_start_needed);

/*
 * The start of @name ended (the name got an owner, or the start failed): the name is no
 * longer starting; take its waiting entries with bus_activation_pop(), oldest first.
 * Return: true if the name was starting or had waiting entries.
 */
bool bus_activation_end(BusActivation *a, const char *name);
/* The oldest waiting entry of @name, unlinked (free it), or NULL. */
BusActivationEntry *bus_activation_pop(BusActivation *a, const char *name);
BusActivationEntry *bus_activation_entry_free(BusActivationEntry *e);
DEFINE_CLEANUP(BusActivationEntry *, bus_activation_entry_free);

bool bus_activation_is_starting(const BusActivation *a, const char *name);
/* @conn left: its waiting entries are dropped. */
void bus_activation_conn_removed(BusActivation *a, BridgeConn *conn);
