/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * Stamping: the bus sets the SENDER header field on every message it forwards. The stamper
 * copies the fixed header and the field array, drops any SENDER the client put there,
 * appends the bus's SENDER, re-pads to 8 and writes the body after it: the body bytes are
 * copied once and never re-encoded. Byte order is the message's own.
 */
#include <stddef.h>
#include <stdint.h>
#include "wire/message.h"

/* Upper bound of the stamped size: the caller allocates this much for @dst. */
size_t wire_stamp_size_bound(const WireHeader *hdr, size_t sender_len);

/**
 * wire_message_stamp() - write @src with SENDER=@sender into @dst
 * @src:        a message parsed into @hdr
 * @hdr:        its header
 * @sender:     the sender's unique name (valid, NUL-terminated)
 * @dst:        at least wire_stamp_size_bound() bytes, may not overlap @src
 * @ret_size:   the stamped message's size
 *
 * Return: 0 (the inputs were validated; nothing can fail). Note: a message within a few
 * bytes of WIRE_MAX_MESSAGE_SIZE can exceed it once stamped (and would no longer parse);
 * a caller that forwards such sizes checks *ret_size.
 */
int wire_message_stamp(const void *src, const WireHeader *hdr, const char *sender,
                       void *dst, size_t *ret_size);

/**
 * wire_stamp_derive_header() - the header of a stamped message, without parsing it
 * @src:        the message wire_message_stamp() read
 * @hdr:        its header (from wire_message_parse())
 * @sender:     the SENDER that was stamped, or NULL for a plain copy of @src
 * @dst:        the stamped message (or the copy)
 * @dst_size:   its size
 * @ret:        what wire_message_parse(@dst, WIRE_PARSE_SKIP_BODY) would return
 *
 * Offsets and pointers are shifted by where the SENDER field went; the test
 * tests/unit/wire/test-stamp.c compares the result with a parse for many messages.
 * Return: 0, or WIRE_E_TOO_LARGE if @dst_size exceeds WIRE_MAX_MESSAGE_SIZE.
 */
int wire_stamp_derive_header(const void *src, const WireHeader *hdr, const char *sender,
                             const void *dst, size_t dst_size, WireHeader *ret);

/*
 * wire_message_stamp() and wire_stamp_derive_header() in one, with the sender's length
 * known: what the bus does with every small message a classic peer sends (issue #16).
 * @ret may not be @hdr; its total_size is the stamped size. Return: 0, or WIRE_E_TOO_LARGE
 * (the stamped message exceeds WIRE_MAX_MESSAGE_SIZE).
 */
int wire_message_stamp_derive(const void *src, const WireHeader *hdr, const char *sender,
                              size_t sender_len, void *dst, WireHeader *ret);
