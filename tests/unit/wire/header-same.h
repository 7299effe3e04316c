/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * Two parses of the same bytes gave the same WireHeader: every value, every string at the
 * same place (the signature by its text: an absent one is a literal ""). For the tests and
 * the fuzz target that compare wire_message_parse_memo() with wire_message_parse().
 */
#include <stdbool.h>
#include <string.h>
#include "wire/message.h"

static inline bool wire_header_same(const WireHeader *a, const WireHeader *b) {
        return a->big_endian == b->big_endian && a->type == b->type && a->flags == b->flags &&
               a->body_size == b->body_size && a->serial == b->serial &&
               a->reply_serial == b->reply_serial && a->n_fds == b->n_fds &&
               a->fields_size == b->fields_size && a->body_offset == b->body_offset &&
               a->total_size == b->total_size &&
               a->sender_field_offset == b->sender_field_offset &&
               a->sender_field_size == b->sender_field_size &&
               a->has_unknown_fields == b->has_unknown_fields &&
               a->path == b->path && a->interface == b->interface && a->member == b->member &&
               a->error_name == b->error_name && a->destination == b->destination &&
               a->sender == b->sender && strcmp(a->signature, b->signature) == 0;
}
