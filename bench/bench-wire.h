/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * The benchmark's own minimal D-Bus codec: it writes little-endian messages with the
 * header fields the benchmark needs and reads back only type, serials, sender and member.
 * It validates nothing beyond framing on purpose: the clients must cost as little as
 * possible so that what the benchmark measures is the bus (which validates everything).
 */
#include <stddef.h>
#include <stdint.h>

typedef struct BenchMsgSpec {
        uint8_t type;                   /* WireMsgType */
        uint8_t flags;
        uint32_t serial;
        uint32_t reply_serial;          /* 0: no field */
        const char *path;               /* NULL: no field */
        const char *interface;
        const char *member;
        const char *error_name;
        const char *destination;
        const char *signature;          /* NULL or "": no body */
        const void *body;
        uint32_t body_len;
} BenchMsgSpec;

/* What the benchmark reads of a received message; pointers point into the input buffer. */
typedef struct BenchMsg {
        uint8_t type;
        uint8_t flags;
        uint32_t serial;
        uint32_t reply_serial;
        const char *sender;             /* NULL when absent; NUL-terminated in the buffer */
        const char *member;
        const char *error_name;
        const uint8_t *body;
        uint32_t body_len;
        size_t size;                    /* the whole message */
} BenchMsg;

/*
 * bench_msg_build() - write the message @spec into @buf (with body_len but no body: only
 * the header and its padding, the caller sends the body after it)
 * Return: its size, or 0 if it does not fit into @cap bytes.
 */
size_t bench_msg_build(uint8_t *buf, size_t cap, const BenchMsgSpec *spec);

/*
 * bench_msg_frame() - size of the message starting at @data
 * Return: the size, 0 if fewer than 16 bytes are there, -EBADMSG for a big-endian or
 *         absurd header (the benchmark only reads what its buses send: little-endian).
 */
long bench_msg_frame(const uint8_t *data, size_t n);

/*
 * bench_msg_parse() - read the header of the complete message at @data (@n >= its size)
 * Return: 0 or -EBADMSG.
 */
int bench_msg_parse(const uint8_t *data, size_t n, BenchMsg *ret);

/* The serial of a message written by bench_msg_build() lives at this offset. */
#define BENCH_MSG_SERIAL_OFFSET 8u
