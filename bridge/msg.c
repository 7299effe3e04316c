/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * BridgeMsg lifetime. A message from a peer is copied exactly once, while SENDER is stamped
 * into it, into the same allocation as its struct; from then on every receiver holds a
 * reference and nobody touches the bytes. @hdr always describes @data: after stamping the
 * header is parsed again (header only: the body is the one already validated).
 * fds belong to the message and are closed with its last reference.
 */
#include <stdlib.h>
#include <string.h>
#include "bridge/msg.h"
#include "util/error.h"
#include "wire/stamp.h"

#define MSG_INLINE_OFFSET ALIGN8(sizeof(BridgeMsg))

static BridgeMsg *bridge_msg_alloc(size_t extra) {
        BridgeMsg *m;

        if (extra > SIZE_MAX - MSG_INLINE_OFFSET)
                return NULL;
        m = malloc(MSG_INLINE_OFFSET + extra);
        if (!m)
                return NULL;
        memset(m, 0, sizeof(*m));
        m->n_refs = 1;
        return m;
}

/**
 * bridge_msg_new_stamped() - copy a received message into a new BridgeMsg, stamping SENDER
 * @src:        the received message as validated by wire_message_parse()
 * @src_hdr:    its parsed header
 * @sender:     the sender's unique name, or NULL to copy the message unchanged
 * @sender_id:  the sender's connection id (0: the bus)
 * @ret:        the new message, one reference, no fds (see bridge_msg_take_fds())
 *
 * Return: 0, -ENOMEM, or WIRE_E_TOO_LARGE (stamping pushed it over the size limit).
 */
int bridge_msg_new_stamped(const void *src, const WireHeader *src_hdr, const char *sender,
                           uint64_t sender_id, BridgeMsg **ret) {
        _cleanup_(bridge_msg_unrefp) BridgeMsg *m = NULL;
        size_t bound, size;
        int r;

        bound = sender ? wire_stamp_size_bound(src_hdr, strlen(sender)) : src_hdr->total_size;
        m = bridge_msg_alloc(bound);
        if (!m)
                return error_origin(-ENOMEM);
        m->data = (uint8_t *)m + MSG_INLINE_OFFSET;
        m->sender_id = sender_id;

        if (sender) {
                r = wire_message_stamp(src, src_hdr, sender, m->data, &size);
                if (r)
                        return error_fold(r);
        } else {
                size = src_hdr->total_size;
                memcpy(m->data, src, size);
        }
        m->size = size;

        r = wire_message_parse(m->data, size, src_hdr->n_fds, WIRE_PARSE_SKIP_BODY, &m->hdr);
        if (r == WIRE_E_TOO_LARGE)
                return r;
        if (r)
                return error_fold(r);   /* the stamper wrote something the parser refuses */

        *ret = steal_ptr(&m);
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

        m = bridge_msg_alloc(0);
        if (!m)
                return error_origin(-ENOMEM);
        m->sender_id = sender_id;

        /* the builder declares the fds it will attach: accept any UNIX_FDS */
        r = wire_message_parse(data, size, WIRE_MAX_UNIX_FDS, WIRE_PARSE_SKIP_BODY, &m->hdr);
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
 * bridge_msg_ref() - take a reference
 * @m:          the message or NULL
 *
 * Return: @m.
 */
BridgeMsg *bridge_msg_ref(BridgeMsg *m) {
        if (m)
                ++m->n_refs;
        return m;
}

/**
 * bridge_msg_unref() - drop a reference; the last one closes the fds and frees everything
 * @m:          the message or NULL
 *
 * Return: NULL.
 */
BridgeMsg *bridge_msg_unref(BridgeMsg *m) {
        if (!m || --m->n_refs > 0)
                return NULL;
        bridge_msg_take_fds(m, NULL, 0);
        if (m->data_separate)
                free(m->data);
        free(m);
        return NULL;
}
