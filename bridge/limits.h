/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * Every limit of the core in one place (HACKING.md, Memory and ownership). BusLimits carries the values a
 * configuration may change (dbus-daemon's <limit> names in the comments); the defaults
 * below are dbus-daemon's session-bus defaults unless said otherwise.
 */
#include <stdint.h>

/* Bloom filter geometry of a bus (kdbus: bloom_size in bytes, a multiple of 8; n_hash). */
#define BUS_BLOOM_SIZE 64u
#define BUS_BLOOM_WORDS (BUS_BLOOM_SIZE / 8u)
#define BUS_BLOOM_N_HASH 8u
/* A native match entry's BLOOM_MASK items together (kdbus's bound on a whole command,
 * KDBUS_CMD_MAX_SIZE; EMSGSIZE), and the masks of all entries of one native connection
 * (EMFILE): 256 entries of the largest filter, kdbus's KDBUS_MATCH_MAX of 4096 bytes;
 * masks are the peer's memory in the bus that no other limit counts. */
#define NATIVE_MATCH_MASK_MAX (32u * 1024u)
#define NATIVE_MATCH_MASKS_PER_CONN_MAX (1024u * 1024u)
/* Bus instances (BUS_MAKE) one uid may have at once in this kdbusd, kdbus's
 * KDBUS_USER_MAX_BUSES per user and domain: the next BUS_MAKE is EMFILE. */
#define NATIVE_MAX_BUSES_PER_USER 16u

/* A native connection's calls waiting for a reply (kdbus's KDBUS_CONN_MAX_REQUESTS_PENDING,
 * EMLINK): the lower of this and max_replies_per_connection applies to native callers. */
#define NATIVE_MAX_REQUESTS_PENDING 128u

typedef struct BusLimits {
        uint64_t max_incoming_bytes;            /* max_incoming_bytes: a sender's unread input */
        uint64_t max_outgoing_bytes;            /* max_outgoing_bytes: a receiver's queued bytes */
        uint32_t max_outgoing_unix_fds;         /* max_outgoing_unix_fds */
        uint32_t max_message_size;              /* max_message_size */
        uint32_t max_message_unix_fds;          /* max_message_unix_fds */
        uint32_t max_connections_per_user;      /* max_connections_per_user */
        uint32_t max_completed_connections;     /* max_completed_connections */
        uint32_t max_names_per_connection;      /* max_names_per_connection */
        uint32_t max_match_rules_per_connection;/* max_match_rules_per_connection */
        uint32_t max_replies_per_connection;    /* max_replies_per_connection (native
                                                 * callers: at most
                                                 * NATIVE_MAX_REQUESTS_PENDING) */
        uint64_t reply_timeout_usec;            /* reply_timeout; 0: never */
        uint64_t auth_timeout_usec;             /* auth_timeout */
        uint32_t max_incomplete_connections;    /* max_incomplete_connections */
        /* Kept for what uses them later (activation, issue #5) or met by construction;
         * see README.md "Configuration" for each: */
        uint32_t max_incoming_unix_fds;         /* max_incoming_unix_fds */
        uint32_t max_pending_service_starts;    /* max_pending_service_starts */
        uint64_t service_start_timeout_usec;    /* service_start_timeout */
        uint64_t pending_fd_timeout_usec;       /* pending_fd_timeout */
} BusLimits;

/* Fills @l with dbus-daemon's built-in defaults for a session bus. */
void bus_limits_init_session(BusLimits *l);
/* Fills @l with the values Debian's system.conf sets on top of the built-in defaults. */
void bus_limits_init_system(BusLimits *l);
