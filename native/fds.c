/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The fd numbers of a received message (kdbus-compat's KDBUS_WIRE_FDS, for
 * libkdbus-preload.so). kdbus installed a message's fds into the receiver at RECV and
 * wrote their numbers into the slice (the FDS item's ints, each PAYLOAD_MEMFD item's fd),
 * where programs read them. Through kdbusd's socket the fds come with the RECV reply and
 * the bus cannot know the numbers they get; the peer tells it, and the bus writes them into
 * the slice the peer holds (the pool is read-only for the peer).
 */
#include <errno.h>
#include "bridge/pool.h"
#include "kdbus/kdbus.h"
#include "native/conn.h"

/**
 * native_conn_fds_publish() - write a received message's fd numbers into its slice
 * @nc:         the receiver
 * @offset:     the message's slice (RECV's msg.offset, a SYNC_REPLY's reply.offset)
 * @fds:        the numbers, in the RECV reply's order: the FDS item's (for a receiver
 *              with ACCEPT_FD: without it they were not passed), then one per
 *              PAYLOAD_MEMFD item
 * @n:          their number
 *
 * Return: 0, -ENXIO (no slice the peer holds at @offset), -EINVAL (@n is not the
 * message's count of fds, or the slice holds no message).
 */
int native_conn_fds_publish(NativeConn *nc, uint64_t offset, const int32_t *fds, size_t n) {
        BridgePoolSlice *slice = bridge_pool_find(nc->pool, offset);
        struct kdbus_msg *km;
        struct kdbus_item *item;
        bool accept = nc->hello_flags & KDBUS_HELLO_ACCEPT_FD;
        size_t want = 0, n_fds_item = 0, at_fds = 0, at_memfds = 0, k;

        if (!slice || !slice->peer)
                return -ENXIO;
        km = bridge_pool_ptr(nc->pool, slice);
        if (slice->size < sizeof(*km) || km->size < sizeof(*km) || km->size > slice->size)
                return -EINVAL;
        /* count first: all or nothing */
        for (k = 0; k < 2; k++) {
                for (item = km->items;
                     (uint8_t *)item + KDBUS_ITEM_HEADER_SIZE <= (uint8_t *)km + km->size &&
                     item->size >= KDBUS_ITEM_HEADER_SIZE;
                     item = KDBUS_ITEM_NEXT(item)) {
                        if (item->type == KDBUS_ITEM_FDS && accept) {
                                size_t c = (item->size - KDBUS_ITEM_HEADER_SIZE) / sizeof(int);

                                for (size_t i = 0; i < c; i++) {
                                        if (k == 1)
                                                item->fds[i] = fds[at_fds++];
                                        else
                                                want++;
                                }
                                if (k == 0)
                                        n_fds_item += c;
                        } else if (item->type == KDBUS_ITEM_PAYLOAD_MEMFD) {
                                /* the memfds come after all of the FDS item's, wherever
                                 * the items are (an opaque message keeps the sender's
                                 * item order) */
                                if (k == 1)
                                        item->memfd.fd = fds[n_fds_item + at_memfds++];
                                else
                                        want++;
                        }
                }
                if (k == 0 && want != n)
                        return -EINVAL;
        }
        return 0;
}
