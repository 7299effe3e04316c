/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * One client of kdbus-proxy's filtering proxy (tools/kdbus-proxy-filter.h) and its own
 * connection to the bus. kdbus-proxy-filter.c moves the bytes (sockets, SASL relay,
 * framing, fds, output queues); kdbus-proxy-judge.c decides on each whole message.
 *
 * Serials: the proxy sends calls of its own on the client's connection (the owners it
 * tracks), so every message the client sends goes up with a serial of the proxy's, and a
 * reply coming down gets the client's serial back (ProxyCall).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "tools/kdbus-proxy-args.h"
#include "tools/kdbus-proxy-view.h"
#include "wire/message.h"

/* Output not yet written to a socket: whole messages (or SASL lines), each with its fds. */
typedef struct ProxyChunk {
        struct ProxyChunk *next;
        uint8_t *data;
        size_t size;
        size_t sent;
        int *fds;                       /* owned; sent with the chunk's first byte */
        unsigned n_fds;
} ProxyChunk;

typedef struct ProxySide {
        int fd;
        uint8_t *in;                    /* bytes read, not yet a whole message */
        size_t in_size;
        size_t in_alloc;
        int *in_fds;                    /* fds read, not yet taken by a message */
        unsigned n_in_fds;
        ProxyChunk *out;                /* queue */
        ProxyChunk *out_tail;
        size_t out_bytes;
} ProxySide;

/* What a call the proxy sent up is, so that its reply is handled when it comes. */
typedef enum ProxyCallKind {
        PROXY_CALL_CLIENT,              /* the client's: the reply goes down as it is */
        PROXY_CALL_CLIENT_HELLO,        /* the client's Hello: we learn its unique name */
        PROXY_CALL_CLIENT_NAMES,        /* ListNames: visible names only */
        PROXY_CALL_CLIENT_ACTIVATABLE,  /* ListActivatableNames: visible names only */
        PROXY_CALL_CLIENT_UNIQUES,      /* ListQueuedOwners: visible unique names only */
        PROXY_CALL_CLIENT_CREDS,        /* GetConnectionCredentials of itself: its own pid */
        PROXY_CALL_OWN_IGNORE,          /* ours: AddMatch for NameOwnerChanged */
        PROXY_CALL_OWN_NAMES,           /* ours: ListNames, to learn the covered names */
        PROXY_CALL_OWN_OWNER,           /* ours: GetNameOwner(name) */
} ProxyCallKind;

typedef struct ProxyCall {
        uint32_t up_serial;
        uint32_t client_serial;
        ProxyCallKind kind;
        char *name;                     /* PROXY_CALL_OWN_OWNER's name */
} ProxyCall;

/* A call made to the client that it may answer once. */
typedef struct ProxyIncoming {
        char *sender;
        uint32_t serial;
} ProxyIncoming;

typedef struct ProxyClient {
        struct ProxyClient *next;
        unsigned id;                    /* for the log */
        const ProxyBusArgs *args;
        ProxySide down;                 /* the app */
        ProxySide up;                   /* the bus */
        pid_t pid;                      /* the app's, from SO_PEERCRED */
        uid_t uid;
        bool nul_seen;                  /* the SASL exchange's leading NUL byte */
        bool begin_sent;                /* the client said BEGIN: messages from now on */
        bool up_running;                /* the bus's side is past SASL */
        unsigned auth_pending;          /* SASL commands the bus has not answered yet */
        bool hello_seen;
        unsigned snapshot_pending;      /* our calls the view waits for; 0: complete */
        bool snapshot_started;
        ProxyChunk *held;               /* the client's messages while the view is built */
        ProxyChunk *held_tail;
        ProxyView view;
        ProxyCall *calls;
        size_t n_calls;
        ProxyIncoming *incoming;
        size_t n_incoming;
        char **matches;                 /* the client's AddMatch rules, as given */
        size_t n_matches;
        uint32_t next_serial;           /* upstream serials */
        uint32_t fake_serial;           /* serials of answers the proxy makes up */
        bool dead;
} ProxyClient;

/* kdbus-proxy-filter.c: queue @data (taken) with @fds (taken) for @side. */
int proxy_side_queue(ProxySide *side, uint8_t *data, size_t size, int *fds, unsigned n_fds);
/* kdbus-proxy-filter.c: print a --log line for @c. */
void proxy_client_log(const ProxyClient *c, const char *format, ...)
        __attribute__((format(printf, 2, 3)));

/*
 * kdbus-proxy-judge.c: a whole message from the client (@up false) or from the bus (@up
 * true), @size bytes (taken), parsed into @hdr, with its @fds (taken). It is forwarded,
 * answered, held or dropped. Return: 0, or -errno (the client is closed).
 */
int proxy_judge_from_client(ProxyClient *c, uint8_t *data, size_t size, const WireHeader *hdr,
                            int *fds, unsigned n_fds);
int proxy_judge_from_bus(ProxyClient *c, uint8_t *data, size_t size, const WireHeader *hdr,
                         int *fds, unsigned n_fds);
void proxy_judge_release(ProxyClient *c);
