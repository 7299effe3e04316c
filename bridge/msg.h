/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * BridgeMsg: one message as the core carries it. Received once, stamped once, then shared
 * by reference among every receiver (unicast, broadcast, monitors); nobody copies the body.
 * The bytes are a complete dbus1 message (header with SENDER, padding, body); @hdr
 * describes them. The bloom filter is computed on first need (broadcast routing).
 *
 * BridgeMsgCache: received messages are recycled, so a steady flow allocates nothing. A
 * message and its bytes are one buffer of a size class; the last unref puts the buffer
 * back on its bus's free list for that class, up to a bound per class (at most about
 * 1.4 MiB in all), so memory returns to malloc after a burst. Larger messages use malloc.
 * The cache outlives its bus while messages from it live (it is reference-counted).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "bridge/limits.h"
#include "util/macro.h"
#include "wire/message.h"

typedef struct BridgeMsgCache BridgeMsgCache;

/*
 * A part of a native sender's payload after the inline head (kdbus's PAYLOAD_MEMFD is
 * passed on, never copied): a range of a sealed memfd, or inline bytes (PAYLOAD_VEC parts
 * after a memfd) kept in BridgeMsg.tail.
 */
typedef struct BridgeMsgPart {
        int memfd;                      /* owned (closed with the message), or -1: inline */
        uint64_t offset;                /* memfd: start in the file; inline: offset in tail */
        uint64_t size;
} BridgeMsgPart;

typedef struct BridgeMsg {
        unsigned n_refs;
        BridgeMsgCache *cache;          /* where the buffer goes back (a reference); NULL: free() */
        unsigned size_class;            /* with @cache: its class */
        uint64_t sender_id;             /* 0: the bus itself (driver) */
        uint64_t quota_account;         /* whose quota its copies count against (set when
                                         * routed: bridge/quota.h); the bus's until then */
        WireHeader hdr;                 /* describes @data (@head with parts) */
        uint8_t *data;                  /* the stamped message; with @parts: NULL until
                                         * bridge_msg_materialize() read them */
        size_t size;
        /* with memfd parts (native/send.c): the message is @head (the stamped
         * header and the body bytes before the first memfd) followed by @parts */
        const uint8_t *head;
        size_t head_size;
        BridgeMsgPart *parts;           /* owned */
        unsigned n_parts;
        uint8_t *tail;                  /* owned: the inline parts' bytes */
        /* a payload that is no dbus1 message (bridge_msg_new_opaque()): @opaque_size bytes
         * in the transport's own layout, in the message's buffer; NULL otherwise */
        uint8_t *opaque;
        size_t opaque_size;
        int body_error;                 /* WIRE_E_*: materializing found the body invalid */
        int *fds;                       /* owned; closed on last unref */
        unsigned n_fds;
        int64_t priority;               /* kdbus priority a native sender gave; 0 otherwise */
        void *sender_meta;              /* the sender's metadata captured with this message
                                         * (a native KDBUS_HELLO_CAPTURE_PER_MESSAGE sender:
                                         * NativeMsgMeta), or NULL: its connection's */
        void (*sender_meta_free)(void *sender_meta);
        uint64_t reply_deadline_usec;   /* a native call's own deadline (kdbus_msg.timeout_ns,
                                         * CLOCK_MONOTONIC); 0: only the bus's reply timeout */
        bool has_bloom;
        bool data_separate;             /* @data is its own allocation (bridge_msg_new_take) */
        bool monitored;                 /* held for activation: monitors saw it when it was
                                         * sent, not again when it is delivered */
        bool bloom_seeded;              /* @bloom holds a native sender's BLOOM_FILTER */
        uint64_t bloom_generation;      /* that filter's generation (kdbus); 0 otherwise */
        uint64_t *bloom_ext;            /* owned: the filter when the bus's is larger than
                                         * @bloom (bridge_msg_bloom()) */
        uint64_t bloom[BUS_BLOOM_WORDS];
} BridgeMsg;

/* The message's filter (valid once has_bloom or bloom_seeded; the bus's geometry). */
static inline const uint64_t *bridge_msg_bloom(const BridgeMsg *m) {
        return m->bloom_ext ? m->bloom_ext : m->bloom;
}

/**
 * bridge_msg_new_stamped() - copy a received message into a new BridgeMsg, stamping SENDER
 * @src:        the received message as validated by wire_message_parse()
 * @src_hdr:    its parsed header
 * @sender:     the sender's unique name, or NULL to keep the message as it is
 * @sender_id:  the sender's connection id (0: bus)
 * @ret:        the new message (one reference)
 *
 * One allocation holds the struct and the bytes. @hdr is derived from @src_hdr (offsets
 * shifted, see wire_stamp_derive_header()); neither header nor body is parsed again.
 * Return: 0, -ENOMEM, or WIRE_E_TOO_LARGE if stamping pushed the message over the size limit.
 */
int bridge_msg_new_stamped(const void *src, const WireHeader *src_hdr, const char *sender,
                           uint64_t sender_id, BridgeMsg **ret);
/* The same with the buffer taken from @cache (NULL: malloc) and given back there. */
int bridge_msg_new_stamped_cached(BridgeMsgCache *cache, const void *src,
                                  const WireHeader *src_hdr, const char *sender,
                                  uint64_t sender_id, BridgeMsg **ret);

/*
 * A large message read straight into its own buffer (zero-copy ingress, proxy/client.c):
 * bridge_msg_new_incoming() stamps the header of a message whose body is still arriving
 * and copies the body bytes that came with it; the caller reads the rest of the body
 * directly to m->data + *ret_filled up to m->size, then bridge_msg_incoming_done()
 * validates the whole message as wire_message_parse() of the original would have (the
 * header was checked here already, with WIRE_PARSE_HEADER_ONLY) and describes it in
 * m->hdr. Until then the message is nobody's but the caller's: m->hdr is not set.
 * @head:       the received bytes: at least the header up to the body's start
 * @head_hdr:   @head parsed with WIRE_PARSE_HEADER_ONLY (total_size: the whole message's)
 * Return: 0, -ENOMEM, WIRE_E_TOO_LARGE (stamping pushed it over the size limit).
 */
int bridge_msg_new_incoming(BridgeMsgCache *cache, const void *head, size_t head_size,
                            const WireHeader *head_hdr, const char *sender, uint64_t sender_id,
                            BridgeMsg **ret, size_t *ret_filled);
/* @n_fds: the fds that arrived for it (the UNIX_FDS field may not claim more).
 * Return: 0 or the WIRE_E_* code of an invalid body or fd count. */
int bridge_msg_incoming_done(BridgeMsg *m, size_t n_fds);
/* The same verdict for a message whose body is one byte array ("ay") of which only the
 * first @in_memory bytes of the message (up to the array's length word at least) are in
 * m->data: the contents need no check (wire_byte_array_body_check()). */
int bridge_msg_incoming_done_bytes(BridgeMsg *m, size_t n_fds, size_t in_memory);

/* A bus's cache (one reference). Return: 0 or -ENOMEM. */
int bridge_msg_cache_new(BridgeMsgCache **ret);
/* Drop the bus's reference: frees the kept buffers; live messages keep the rest. */
BridgeMsgCache *bridge_msg_cache_unref(BridgeMsgCache *cache);
/* How many buffers it keeps now (tests). */
unsigned bridge_msg_cache_n_kept(const BridgeMsgCache *cache);

/* Wrap a message the bus built (wire_message_build()); takes @data (malloc()ed) on success
 * only. Return: 0, -ENOMEM, or -EINVAL if @data does not parse (a bug of the builder). */
int bridge_msg_new_take(uint8_t *data, size_t size, uint64_t sender_id, BridgeMsg **ret);

/*
 * A message whose body continues in memfd parts: stamp @head (@head_size bytes: the whole
 * header and the body bytes before the first part, parsed into @head_hdr with
 * WIRE_PARSE_HEADER_ONLY) and keep the parts. @parts (malloc()ed, memfds owned) and @tail
 * are taken, also on failure. hdr.total_size is the whole stamped message's.
 * Return: 0, -ENOMEM, WIRE_E_TOO_LARGE.
 */
int bridge_msg_new_stamped_parts(BridgeMsgCache *cache, const void *head, size_t head_size,
                                 const WireHeader *head_hdr, const char *sender,
                                 uint64_t sender_id, BridgeMsgPart *parts, unsigned n_parts,
                                 uint8_t *tail, BridgeMsg **ret);

/*
 * A message whose payload is no dbus1 message: kdbus carried payloads as opaque bytes
 * (kdbus_msg.payload_type), and native receivers get them as the sender gave them. @hdr
 * (type, flags, serial, reply_serial, n_fds, destination; nothing else is read) is made from
 * the sender's kdbus fields and routes it like any message: reply slots, policy, matches,
 * monitors. There are no dbus1 bytes: bridge_msg_materialize() fails with WIRE_E_NOT_DBUS,
 * so a receiver that needs them (a legacy peer or monitor) never gets it (a unicast to one
 * fails BRIDGE_E_BAD_BODY). m->opaque is room for @opaque_size bytes in the message's
 * buffer, for the caller to fill before it routes the message. @parts (memfds only,
 * malloc()ed, owned) are taken, also on failure.
 * Return: 0 or -ENOMEM.
 */
int bridge_msg_new_opaque(BridgeMsgCache *cache, const WireHeader *hdr, const char *sender,
                          uint64_t sender_id, size_t opaque_size, BridgeMsgPart *parts,
                          unsigned n_parts, BridgeMsg **ret);

/* The inline bytes of @m (@data, or @head with parts) and their size. */
static inline const uint8_t *bridge_msg_head(const BridgeMsg *m, size_t *ret_size) {
        *ret_size = m->n_parts ? m->head_size : m->size;
        return m->n_parts ? m->head : m->data;
}

/* The memory @m holds: its buffer (struct included) and arrays, memfd parts not counted. */
size_t bridge_msg_footprint(const BridgeMsg *m);
/* The bytes the bus itself holds for @m: all of it, except memfd parts. */
size_t bridge_msg_inline_size(const BridgeMsg *m);

/*
 * Make @m->data the complete dbus1 message (legacy receivers, monitors, match rules with
 * arg keys and bloom filters need the bytes): read its memfd parts once into one buffer and
 * validate the body, as for any message from a legacy peer. Nothing to do without parts.
 * The result is kept: later calls cost nothing. Return: 0, -ENOMEM, -EIO (a memfd read
 * failed), or the WIRE_E_* code of an invalid body (then @data stays NULL, for good).
 */
int bridge_msg_materialize(BridgeMsg *m);
/* Mark a message with memfd parts as one whose bytes must never be read (@error, a
 * WIRE_E_* code: bridge_msg_materialize() and bridge_msg_get_args() fail with it). */
void bridge_msg_refuse_bytes(BridgeMsg *m, int error);

/* The leading body arguments as match rules see them; none if the body cannot be had
 * (bridge_msg_materialize() failed). Return: 0 or what bridge_msg_materialize() returned. */
int bridge_msg_get_args(BridgeMsg *m, WireArgs *ret);

/* Bytes read from memfd parts by this process (tests: native-to-native reads none). */
extern uint64_t bridge_msg_memfd_bytes_read;

/* Attach @fds (taken: closed when the message dies, also on failure). */
void bridge_msg_take_fds(BridgeMsg *m, int *fds, unsigned n_fds);

void bridge_msg_free_last(BridgeMsg *m);

/* Take a reference to @m (or NULL). Return: @m. Inline: several per message routed. */
static inline BridgeMsg *bridge_msg_ref(BridgeMsg *m) {
        if (m)
                ++m->n_refs;
        return m;
}

/* Drop a reference to @m (or NULL); the last one closes the fds and frees everything.
 * Return: NULL. */
static inline BridgeMsg *bridge_msg_unref(BridgeMsg *m) {
        if (m && --m->n_refs == 0)
                bridge_msg_free_last(m);
        return NULL;
}
DEFINE_CLEANUP(BridgeMsg *, bridge_msg_unref);
