/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * BridgeMsg lifetime. A message from a peer is copied exactly once, while SENDER is stamped
 * into it, into the same buffer as its struct; from then on every receiver holds a
 * reference and nobody touches the bytes. @hdr always describes @data: after stamping it is
 * derived from the validated header by shifting offsets (wire_stamp_derive_header()), not
 * parsed again. fds belong to the message and are closed with its last reference.
 *
 * Recycling (BridgeMsgCache): buffers of a few size classes go back to a per-class stack
 * of the bus when the last reference drops, up to MSG_CACHE_KEEP[class] each; a message
 * over the largest class uses plain malloc. The stacks are arrays, not links inside the
 * buffers, so a kept buffer can be poisoned whole: under ASan (ASAN_POISON_MEMORY_REGION)
 * and under valgrind (VALGRIND_MAKE_MEM_NOACCESS) a use after the last unref is still
 * reported as it would be after free(). We poison rather than disable the cache under
 * sanitizers so that the sanitizer runs exercise the recycling code that production runs.
 *
 * memfd parts (a native sender's sealed PAYLOAD_MEMFDs, bridge_msg_new_stamped_parts()):
 * kdbus passes them on, never copies them, and so do we: native receivers get the memfd
 * itself. Only a receiver that needs dbus1 bytes (a legacy socket, a monitor, a match rule
 * with arg keys, a broadcast's bloom filter) makes bridge_msg_materialize() read them, once
 * per message, and that is also when their body is validated: a native sender's body in a
 * memfd is the one thing the bus did not check at SEND (docs/native.md).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "bridge/msg.h"
#include "bridge/quota.h"
#include "util/error.h"
#include "wire/stamp.h"

#if defined(__SANITIZE_ADDRESS__)
#define MSG_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MSG_ASAN 1
#endif
#endif
#ifdef MSG_ASAN
#include <sanitizer/asan_interface.h>
#define MSG_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define MSG_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#elif defined(__has_include)
#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#define MSG_POISON(p, n) ((void) VALGRIND_MAKE_MEM_NOACCESS((p), (n)))
#define MSG_UNPOISON(p, n) ((void) VALGRIND_MAKE_MEM_UNDEFINED((p), (n)))
#endif
#endif
#ifndef MSG_POISON
#define MSG_POISON(p, n) ((void) 0)
#define MSG_UNPOISON(p, n) ((void) 0)
#endif

#define MSG_INLINE_OFFSET ALIGN8(sizeof(BridgeMsg))
#define MSG_N_CLASSES 10u
#define MSG_CACHE_MAX_KEEP 256u

/*
 * Buffer sizes (struct included) and how many of each a bus keeps: ~1.4 MiB at most. Steps
 * of at most 1.5x up to 2 KiB, where most messages are: a 190-byte signal (about 560 bytes
 * with the struct) takes 640, not 2048 -- a slow receiver's queue of small messages costs
 * about a third of the memory it did.
 */
static const size_t msg_class_size[MSG_N_CLASSES] = {
        512, 640, 768, 1024, 1536, 2048, 4096, 8192, 32768, 131072,
};
static const unsigned msg_class_keep[MSG_N_CLASSES] = {
        MSG_CACHE_MAX_KEEP, MSG_CACHE_MAX_KEEP, 128, 128, 64, 64, 32, 16, 8, 2,
};

struct BridgeMsgCache {
        unsigned n_refs;                /* the bus's, plus one per live message from here */
        bool detached;                  /* the bus is gone: keep nothing any more */
        unsigned n_kept[MSG_N_CLASSES];
        void *kept[MSG_N_CLASSES][MSG_CACHE_MAX_KEEP];
};

/**
 * bridge_msg_cache_new() - a bus's message buffer cache
 * @ret:        the cache, one reference
 *
 * Return: 0 or -ENOMEM.
 */
int bridge_msg_cache_new(BridgeMsgCache **ret) {
        BridgeMsgCache *cache;

        cache = calloc(1, sizeof(*cache));
        if (!cache)
                return error_origin(-ENOMEM);
        cache->n_refs = 1;
        *ret = cache;
        return 0;
}

static void msg_cache_flush(BridgeMsgCache *cache) {
        unsigned c;

        for (c = 0; c < MSG_N_CLASSES; ++c)
                while (cache->n_kept[c]) {
                        void *p = cache->kept[c][--cache->n_kept[c]];

                        MSG_UNPOISON(p, msg_class_size[c]);
                        free(p);
                }
}

static BridgeMsgCache *msg_cache_unref(BridgeMsgCache *cache) {
        if (cache && --cache->n_refs == 0) {
                msg_cache_flush(cache);
                free(cache);
        }
        return NULL;
}

/**
 * bridge_msg_cache_unref() - the bus lets go of its cache
 * @cache:      the cache or NULL
 *
 * The kept buffers are freed now; messages still alive free theirs when they die.
 * Return: NULL.
 */
BridgeMsgCache *bridge_msg_cache_unref(BridgeMsgCache *cache) {
        if (!cache)
                return NULL;
        cache->detached = true;
        msg_cache_flush(cache);
        return msg_cache_unref(cache);
}

/**
 * bridge_msg_cache_n_kept() - how many buffers the cache holds
 * @cache:      the cache
 *
 * Return: the number, all classes together.
 */
unsigned bridge_msg_cache_n_kept(const BridgeMsgCache *cache) {
        unsigned c, n = 0;

        for (c = 0; c < MSG_N_CLASSES; ++c)
                n += cache->n_kept[c];
        return n;
}

static BridgeMsg *bridge_msg_alloc(BridgeMsgCache *cache, size_t extra) {
        BridgeMsg *m = NULL;
        unsigned c = MSG_N_CLASSES;

        if (extra > SIZE_MAX - MSG_INLINE_OFFSET)
                return NULL;
        if (cache)
                for (c = 0; c < MSG_N_CLASSES; ++c)
                        if (MSG_INLINE_OFFSET + extra <= msg_class_size[c])
                                break;
        if (c < MSG_N_CLASSES && cache->n_kept[c]) {
                m = cache->kept[c][--cache->n_kept[c]];
                MSG_UNPOISON(m, msg_class_size[c]);
        } else {
                m = malloc(c < MSG_N_CLASSES ? msg_class_size[c] : MSG_INLINE_OFFSET + extra);
                if (!m)
                        return NULL;
        }
        memset(m, 0, sizeof(*m));
        m->n_refs = 1;
        if (c < MSG_N_CLASSES) {
                m->cache = cache;
                m->size_class = c;
                ++cache->n_refs;
        }
        return m;
}

/* The last reference is gone: back to the cache, or free. */
static void bridge_msg_release(BridgeMsg *m) {
        BridgeMsgCache *cache = m->cache;
        unsigned c = m->size_class;

        if (!cache) {
                free(m);
                return;
        }
        if (!cache->detached && cache->n_kept[c] < msg_class_keep[c]) {
                MSG_POISON(m, msg_class_size[c]);
                cache->kept[c][cache->n_kept[c]++] = m;
        } else
                free(m);
        msg_cache_unref(cache);
}

/*
 * A new message with room for the whole message @whole describes, stamped, and @src
 * (@src_hdr: the whole message or its head) stamped into it (copied as it is without
 * @sender). *ret_size: the bytes written. Return: 0 or -ENOMEM.
 */
static int msg_new_stamping(BridgeMsgCache *cache, const WireHeader *whole, const void *src,
                            const WireHeader *src_hdr, const char *sender, uint64_t sender_id,
                            BridgeMsg **ret, size_t *ret_size) {
        BridgeMsg *m;

        m = bridge_msg_alloc(cache, sender ? wire_stamp_size_bound(whole, strlen(sender))
                                           : whole->total_size);
        if (!m)
                return error_origin(-ENOMEM);
        m->data = (uint8_t *)m + MSG_INLINE_OFFSET;
        m->sender_id = sender_id;
        m->quota_account = BRIDGE_QUOTA_ACCOUNT_BUS;
        if (sender) {
                (void) wire_message_stamp(src, src_hdr, sender, m->data, ret_size);
        } else {
                *ret_size = src_hdr->total_size;
                memcpy(m->data, src, *ret_size);
        }
        *ret = m;
        return 0;
}

/**
 * bridge_msg_new_stamped_cached() - copy a received message into a new BridgeMsg, stamping SENDER
 * @cache:      where to take the buffer from and give it back to; NULL: malloc
 * @src:        the received message as validated by wire_message_parse()
 * @src_hdr:    its parsed header
 * @sender:     the sender's unique name, or NULL to copy the message unchanged
 * @sender_id:  the sender's connection id (0: the bus)
 * @ret:        the new message, one reference, no fds (see bridge_msg_take_fds())
 *
 * Return: 0, -ENOMEM, or WIRE_E_TOO_LARGE (stamping pushed it over the size limit).
 */
int bridge_msg_new_stamped_cached(BridgeMsgCache *cache, const void *src,
                                  const WireHeader *src_hdr, const char *sender,
                                  uint64_t sender_id, BridgeMsg **ret) {
        _cleanup_(bridge_msg_unrefp) BridgeMsg *m = NULL;
        size_t n, size;
        int r;

        if (!sender) {
                r = msg_new_stamping(cache, src_hdr, src, src_hdr, NULL, sender_id, &m, &size);
                if (r < 0)
                        return r;
                m->size = size;
                r = wire_stamp_derive_header(src, src_hdr, NULL, m->data, size, &m->hdr);
                if (r)
                        return r;       /* WIRE_E_TOO_LARGE */
                *ret = steal_ptr(&m);
                return 0;
        }

        /* the common case in one pass: stamp and derive with the sender's length known */
        n = strlen(sender);
        m = bridge_msg_alloc(cache, wire_stamp_size_bound(src_hdr, n));
        if (!m)
                return error_origin(-ENOMEM);
        m->data = (uint8_t *)m + MSG_INLINE_OFFSET;
        m->sender_id = sender_id;
        m->quota_account = BRIDGE_QUOTA_ACCOUNT_BUS;
        r = wire_message_stamp_derive(src, src_hdr, sender, n, m->data, &m->hdr);
        if (r)
                return r;       /* WIRE_E_TOO_LARGE */
        m->size = m->hdr.total_size;
        *ret = steal_ptr(&m);
        return 0;
}

/**
 * bridge_msg_new_stamped() - bridge_msg_new_stamped_cached() without a cache
 * @src:        the received message as validated by wire_message_parse()
 * @src_hdr:    its parsed header
 * @sender:     the sender's unique name, or NULL to copy the message unchanged
 * @sender_id:  the sender's connection id (0: the bus)
 * @ret:        the new message, one reference, no fds
 *
 * Return: 0, -ENOMEM, or WIRE_E_TOO_LARGE.
 */
int bridge_msg_new_stamped(const void *src, const WireHeader *src_hdr, const char *sender,
                           uint64_t sender_id, BridgeMsg **ret) {
        return bridge_msg_new_stamped_cached(NULL, src, src_hdr, sender, sender_id, ret);
}

/**
 * bridge_msg_new_incoming() - begin a large message whose body is read into it in place
 * @cache:      where to take the buffer from (NULL: malloc; large ones use malloc anyway)
 * @head:       the received bytes so far: the whole header, maybe some of the body
 * @head_size:  their number (less than the whole message)
 * @head_hdr:   @head parsed with WIRE_PARSE_HEADER_ONLY
 * @sender:     the sender's unique name, or NULL to keep the header as it is
 * @sender_id:  the sender's connection id
 * @ret:        the message, one reference, m->size its whole stamped size
 * @ret_filled: how many of its bytes are written (the stamped header, the body bytes of
 *              @head); the caller reads the rest to m->data + *ret_filled
 *
 * The one copy of the body a bus must make (socket to memory) then goes straight to where
 * the message lives; only the body bytes that came with the header are copied here.
 * Return: 0, -ENOMEM, WIRE_E_TOO_LARGE.
 */
int bridge_msg_new_incoming(BridgeMsgCache *cache, const void *head, size_t head_size,
                            const WireHeader *head_hdr, const char *sender, uint64_t sender_id,
                            BridgeMsg **ret, size_t *ret_filled) {
        _cleanup_(bridge_msg_unrefp) BridgeMsg *m = NULL;
        WireHeader hh = *head_hdr;
        size_t filled, body_offset;
        int r;

        /* stamp the head as if it were the whole message (as bridge_msg_new_stamped_parts()):
         * the fixed header keeps the declared body length, only the field array changes */
        hh.body_size = (uint32_t)(head_size - head_hdr->body_offset);
        hh.total_size = (uint32_t)head_size;
        r = msg_new_stamping(cache, head_hdr, head, &hh, sender, sender_id, &m, &filled);
        if (r < 0)
                return r;
        body_offset = filled - hh.body_size;
        if ((uint64_t)body_offset + head_hdr->body_size > WIRE_MAX_MESSAGE_SIZE)
                return WIRE_E_TOO_LARGE;
        m->size = body_offset + head_hdr->body_size;
        *ret_filled = filled;
        *ret = steal_ptr(&m);
        return 0;
}

/**
 * bridge_msg_incoming_done() - the body of an incoming message is complete: check it
 * @m:          from bridge_msg_new_incoming(), m->size bytes written
 * @n_fds:      the fds that arrived for it
 *
 * A full parse of the stamped bytes: the header again (a few dozen bytes; SENDER is ours
 * now, the client's was checked by the caller's header parse) and the body, as the parse
 * of the whole original message would have checked them.
 * Return: 0, or a WIRE_E_* code.
 */
int bridge_msg_incoming_done(BridgeMsg *m, size_t n_fds) {
        return wire_message_parse(m->data, m->size, n_fds, 0, &m->hdr);
}

/**
 * bridge_msg_incoming_done_bytes() - bridge_msg_incoming_done() without the array's contents
 * @m:          from bridge_msg_new_incoming(), its body one byte array (signature "ay")
 * @n_fds:      the fds that arrived for it
 * @in_memory:  how many of its bytes are written: at least up to the array's length word
 *
 * The same verdict as bridge_msg_incoming_done() on the whole message (the header parsed
 * again, the body by wire_byte_array_body_check()), for a message whose contents the
 * caller passes on without reading them (proxy/client-splice.c). m->hdr describes it.
 * Return: 0, or a WIRE_E_* code.
 */
int bridge_msg_incoming_done_bytes(BridgeMsg *m, size_t n_fds, size_t in_memory) {
        WireHeader h;
        int r;

        r = wire_message_parse(m->data, in_memory, n_fds, WIRE_PARSE_HEADER_ONLY, &h);
        if (r)
                return r;
        assert(wire_body_is_byte_array(&h) && h.total_size == m->size &&
               in_memory >= h.body_offset + MIN(h.body_size, 4u));
        r = wire_byte_array_body_check(&h, m->data + h.body_offset);
        if (r)
                return r;
        m->hdr = h;
        return 0;
}

static void msg_parts_free(BridgeMsgPart *parts, unsigned n_parts) {
        unsigned i;

        for (i = 0; i < n_parts; ++i)
                if (parts[i].memfd >= 0)
                        (void) close(parts[i].memfd);
        free(parts);
}

uint64_t bridge_msg_memfd_bytes_read;

/**
 * bridge_msg_new_stamped_parts() - a message whose body continues in memfd parts
 * @cache:      where to take the buffer from (NULL: malloc)
 * @head:       the inline bytes: the whole header and the body bytes before the first part
 * @head_size:  their number
 * @head_hdr:   @head parsed with WIRE_PARSE_HEADER_ONLY (total_size: the whole message's)
 * @sender:     the sender's unique name, or NULL to copy @head unchanged
 * @sender_id:  the sender's connection id
 * @parts:      the parts after @head, malloc()ed, their memfds owned: taken, also on failure
 * @n_parts:    their number (> 0)
 * @tail:       the inline parts' bytes (malloc()ed or NULL): taken, also on failure
 * @ret:        the new message, one reference, @data NULL (bridge_msg_materialize())
 *
 * Only @head is copied (and stamped); the parts' sizes must add up to the rest of what
 * the header declares (the caller checked). Return: 0, -ENOMEM, WIRE_E_TOO_LARGE.
 */
int bridge_msg_new_stamped_parts(BridgeMsgCache *cache, const void *head, size_t head_size,
                                 const WireHeader *head_hdr, const char *sender,
                                 uint64_t sender_id, BridgeMsgPart *parts, unsigned n_parts,
                                 uint8_t *tail, BridgeMsg **ret) {
        _cleanup_(bridge_msg_unrefp) BridgeMsg *m = NULL;
        WireHeader hh = *head_hdr;
        uint8_t *buf;
        size_t size;
        int r;

        /* stamp the head as if it were the whole message: the fixed header keeps the
         * declared body length, only the field array changes */
        hh.body_size = (uint32_t)(head_size - head_hdr->body_offset);
        hh.total_size = (uint32_t)head_size;
        m = bridge_msg_alloc(cache, sender ? wire_stamp_size_bound(&hh, strlen(sender)) : head_size);
        if (!m) {
                msg_parts_free(parts, n_parts);
                free(tail);
                return error_origin(-ENOMEM);
        }
        m->parts = parts;
        m->n_parts = n_parts;
        m->tail = tail;
        m->sender_id = sender_id;
        m->quota_account = BRIDGE_QUOTA_ACCOUNT_BUS;
        buf = (uint8_t *)m + MSG_INLINE_OFFSET;
        if (sender) {
                r = wire_message_stamp(head, &hh, sender, buf, &size);
                if (r)
                        return error_fold(r);
        } else {
                size = head_size;
                memcpy(buf, head, size);
        }
        r = wire_stamp_derive_header(head, &hh, sender, buf, size, &m->hdr);
        if (r)
                return r;
        m->head = buf;
        m->head_size = size;
        m->hdr.body_size = head_hdr->body_size;
        if ((uint64_t)m->hdr.body_offset + head_hdr->body_size > WIRE_MAX_MESSAGE_SIZE)
                return WIRE_E_TOO_LARGE;
        m->hdr.total_size = m->hdr.body_offset + head_hdr->body_size;
        *ret = steal_ptr(&m);
        return 0;
}

/**
 * bridge_msg_new_opaque() - a message whose payload is no dbus1 message
 * @cache:      where to take the buffer from (NULL: malloc)
 * @hdr:        what routes it: type, flags, serial, reply_serial, n_fds, destination
 *              (copied; NULL for a broadcast)
 * @sender:     the sender's unique name (copied)
 * @sender_id:  the sender's connection id
 * @opaque_size: the room the caller fills (m->opaque) before it routes the message
 * @parts:      memfd parts, malloc()ed, memfds owned (or NULL): taken, also on failure
 * @n_parts:    their number
 * @ret:        the new message, one reference
 *
 * See bridge/msg.h. Return: 0 or -ENOMEM.
 */
int bridge_msg_new_opaque(BridgeMsgCache *cache, const WireHeader *hdr, const char *sender,
                          uint64_t sender_id, size_t opaque_size, BridgeMsgPart *parts,
                          unsigned n_parts, BridgeMsg **ret) {
        size_t dst_len = hdr->destination ? strlen(hdr->destination) + 1 : 0;
        size_t sender_len = strlen(sender) + 1;
        BridgeMsg *m;
        uint8_t *buf;

        if (opaque_size > SIZE_MAX / 2)
                m = NULL;
        else
                m = bridge_msg_alloc(cache, ALIGN8(opaque_size) + dst_len + sender_len);
        if (!m) {
                msg_parts_free(parts, n_parts);
                return error_origin(-ENOMEM);
        }
        buf = (uint8_t *)m + MSG_INLINE_OFFSET;
        m->sender_id = sender_id;
        m->quota_account = BRIDGE_QUOTA_ACCOUNT_BUS;
        m->parts = parts;
        m->n_parts = n_parts;
        m->opaque = buf;
        m->opaque_size = opaque_size;
        m->body_error = WIRE_E_NOT_DBUS;
        m->hdr = (WireHeader){
                .type = hdr->type,
                .flags = hdr->flags,
                .serial = hdr->serial,
                .reply_serial = hdr->reply_serial,
                .n_fds = hdr->n_fds,
                .total_size = opaque_size > UINT32_MAX ? UINT32_MAX : (uint32_t)opaque_size,
                .signature = "",
        };
        buf += ALIGN8(opaque_size);
        if (hdr->destination) {
                memcpy(buf, hdr->destination, dst_len);
                m->hdr.destination = (const char *)buf;
                buf += dst_len;
        }
        memcpy(buf, sender, sender_len);
        m->hdr.sender = (const char *)buf;
        *ret = m;
        return 0;
}

/**
 * bridge_msg_footprint() - the memory a message holds in the bus
 * @m:          the message
 *
 * Its buffer (the size class, struct included, or the struct and the bytes it holds), a
 * separate copy of the bytes, its fd and part arrays; memfd parts not counted (they are the
 * sender's memory). This, not the wire size, is what queues are charged (bridge/conn.c).
 * Return: bytes.
 */
size_t bridge_msg_footprint(const BridgeMsg *m) {
        size_t n;

        if (m->cache)
                n = msg_class_size[m->size_class];
        else
                n = MSG_INLINE_OFFSET + bridge_msg_inline_size(m);
        if (m->cache && m->data_separate)
                n += m->size;
        return n + m->n_fds * sizeof(int) + m->n_parts * sizeof(BridgeMsgPart);
}

/**
 * bridge_msg_inline_size() - the bytes the bus holds for a message
 * @m:          the message
 *
 * Return: its size (an opaque payload's), memfd parts not counted (they are the sender's
 * memory).
 */
size_t bridge_msg_inline_size(const BridgeMsg *m) {
        size_t n = m->head_size;
        unsigned i;

        if (m->opaque)
                return m->opaque_size;
        if (!m->n_parts)
                return m->size;
        for (i = 0; i < m->n_parts; ++i)
                if (m->parts[i].memfd < 0)
                        n += m->parts[i].size;
        return n;
}

/* Read @size bytes at @offset of @fd into @buf. Return: 0 or -EIO. */
static int msg_read_memfd(int fd, uint64_t offset, uint8_t *buf, uint64_t size) {
        while (size > 0) {
                ssize_t n = pread(fd, buf, size, (off_t)offset);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return error_origin(-EIO);      /* sealed against shrinking: cannot happen */
                bridge_msg_memfd_bytes_read += (uint64_t)n;
                buf += n;
                offset += (uint64_t)n;
                size -= (uint64_t)n;
        }
        return 0;
}

/**
 * bridge_msg_materialize() - the complete dbus1 bytes of a message with memfd parts
 * @m:          the message
 *
 * Reads the parts once into @m->data and validates the whole message as the bus validates
 * a legacy peer's (wire_message_parse()). An invalid body is remembered: the message
 * stays without bytes for good (its receivers that need them do not get it).
 *
 * Return: 0, -ENOMEM, -EIO, or a WIRE_E_* code (the body is invalid).
 */
int bridge_msg_materialize(BridgeMsg *m) {
        WireHeader h;
        uint8_t *buf;
        uint64_t at;
        unsigned i;
        int r;

        if (m->data)
                return 0;
        if (m->body_error)              /* an opaque payload's too */
                return m->body_error;
        if (!m->n_parts)
                return 0;
        buf = malloc(m->hdr.total_size);
        if (!buf)
                return error_origin(-ENOMEM);
        memcpy(buf, m->head, m->head_size);
        at = m->head_size;
        for (i = 0; i < m->n_parts; ++i) {
                const BridgeMsgPart *p = &m->parts[i];

                if (p->size > m->hdr.total_size - at) {
                        free(buf);
                        return error_origin(-EIO);      /* the sender's sizes were checked */
                }
                if (p->memfd >= 0) {
                        r = msg_read_memfd(p->memfd, p->offset, buf + at, p->size);
                        if (r) {
                                free(buf);
                                return error_trace(r);
                        }
                } else
                        memcpy(buf + at, m->tail + p->offset, p->size);
                at += p->size;
        }
        r = at == m->hdr.total_size ? wire_message_parse(buf, at, m->n_fds, 0, &h) : WIRE_E_TRUNCATED;
        if (r) {
                free(buf);
                m->body_error = r;
                return r;
        }
        m->data = buf;
        m->size = at;
        m->data_separate = true;
        return 0;
}

/**
 * bridge_msg_refuse_bytes() - the memfd parts of @m are never to be read
 * @m:          a message with memfd parts, not materialized
 * @error:      the WIRE_E_* code reading it fails with from now on
 */
void bridge_msg_refuse_bytes(BridgeMsg *m, int error) {
        if (m->n_parts && !m->data)
                m->body_error = error;
}

/**
 * bridge_msg_get_args() - the leading body arguments as match rules see them
 * @m:          the message (materialized if it has memfd parts)
 * @ret:        the arguments; none when the body cannot be had
 *
 * Return: 0, or what bridge_msg_materialize() failed with.
 */
int bridge_msg_get_args(BridgeMsg *m, WireArgs *ret) {
        int r = bridge_msg_materialize(m);

        if (r) {
                memset(ret, 0, sizeof(*ret));
                return r;
        }
        (void) wire_message_get_args(m->data, &m->hdr, ret);
        return 0;
}

/**
 * bridge_msg_new_take() - wrap a message the bus built
 * @data:       a complete message from wire_message_build(), malloc()ed; taken on success
 * @size:       its size
 * @sender_id:  normally 0 (the bus)
 * @ret:        the new message, one reference
 *
 * Return: 0, -ENOMEM, or -EINVAL if @data does not parse.
 */
int bridge_msg_new_take(uint8_t *data, size_t size, uint64_t sender_id, BridgeMsg **ret) {
        _cleanup_(bridge_msg_unrefp) BridgeMsg *m = NULL;
        int r;

        m = bridge_msg_alloc(NULL, 0);
        if (!m)
                return error_origin(-ENOMEM);
        m->sender_id = sender_id;
        m->quota_account = BRIDGE_QUOTA_ACCOUNT_BUS;

        /* the builder declares the fds it will attach: accept any UNIX_FDS; it checked the
         * header's strings and the signature, and the body's values as it wrote them */
        r = wire_message_parse(data, size, WIRE_MAX_UNIX_FDS,
                               WIRE_PARSE_SKIP_BODY | WIRE_PARSE_BUILT, &m->hdr);
        if (r)
                return error_origin(-EINVAL);

        m->data = data;
        m->size = size;
        m->data_separate = true;
        *ret = steal_ptr(&m);
        return 0;
}

/**
 * bridge_msg_take_fds() - attach fds to a message
 * @m:          the message
 * @fds:        malloc()ed array, taken (closed and freed with the message)
 * @n_fds:      its length
 */
void bridge_msg_take_fds(BridgeMsg *m, int *fds, unsigned n_fds) {
        unsigned i;

        for (i = 0; i < m->n_fds; ++i)
                (void) fd_close(m->fds[i]);
        free(m->fds);
        m->fds = fds;
        m->n_fds = fds ? n_fds : 0;
}

/**
 * bridge_msg_free_last() - the last reference to @m is gone: close its fds, free everything
 * @m:          the message (bridge_msg_unref() calls this)
 *
 * What a small message of a classic peer has none of is not even passed to free(): four
 * calls of free(NULL) per message were a tenth of its release.
 */
void bridge_msg_free_last(BridgeMsg *m) {
        if (m->fds)
                bridge_msg_take_fds(m, NULL, 0);
        if (m->parts)
                msg_parts_free(m->parts, m->n_parts);
        if (m->tail)
                free(m->tail);
        if (m->data_separate)
                free(m->data);
        if (m->sender_meta_free)
                m->sender_meta_free(m->sender_meta);
        if (m->bloom_ext)
                free(m->bloom_ext);
        bridge_msg_release(m);
}
