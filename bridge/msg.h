/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * BridgeMsg: one message as the core carries it. Received once, stamped once, then shared
 * by reference among every receiver (unicast, broadcast, monitors); nobody copies the body.
 * The bytes are a complete dbus1 message (header with SENDER, padding, body); @hdr
 * describes them. The bloom filter is computed on first need (broadcast routing).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "bridge/limits.h"
#include "util/macro.h"
#include "wire/message.h"

typedef struct BridgeMsg {
        unsigned n_refs;
        uint64_t sender_id;             /* 0: the bus itself (driver) */
        WireHeader hdr;                 /* describes @data */
        uint8_t *data;                  /* the stamped message */
        size_t size;
        int *fds;                       /* owned; closed on last unref */
        unsigned n_fds;
        int64_t priority;               /* kdbus priority a native sender gave; 0 otherwise */
        bool has_bloom;
        bool data_separate;             /* @data is its own allocation (bridge_msg_new_take) */
        uint64_t bloom[BUS_BLOOM_WORDS];
} BridgeMsg;

/**
 * bridge_msg_new_stamped() - copy a received message into a new BridgeMsg, stamping SENDER
 * @src:        the received message as validated by wire_message_parse()
 * @src_hdr:    its parsed header
 * @sender:     the sender's unique name, or NULL to keep the message as it is
 * @sender_id:  the sender's connection id (0: bus)
 * @ret:        the new message (one reference)
 *
 * One allocation holds the struct and the bytes. The header is re-read from the new bytes
 * (so @hdr points into them); the body is not checked again.
 * Return: 0, -ENOMEM, or WIRE_E_TOO_LARGE if stamping pushed the message over the size limit.
 */
int bridge_msg_new_stamped(const void *src, const WireHeader *src_hdr, const char *sender,
                           uint64_t sender_id, BridgeMsg **ret);

/* Wrap a message the bus built (wire_message_build()); takes @data (malloc()ed) on success
 * only. Return: 0, -ENOMEM, or -EINVAL if @data does not parse (a bug of the builder). */
int bridge_msg_new_take(uint8_t *data, size_t size, uint64_t sender_id, BridgeMsg **ret);

/* Attach @fds (taken: closed when the message dies, also on failure). */
void bridge_msg_take_fds(BridgeMsg *m, int *fds, unsigned n_fds);

BridgeMsg *bridge_msg_ref(BridgeMsg *m);
BridgeMsg *bridge_msg_unref(BridgeMsg *m);
DEFINE_CLEANUP(BridgeMsg *, bridge_msg_unref);
