/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * One benchmark client connection: blocking unix socket, SASL EXTERNAL, Hello, a large
 * input buffer read in big chunks, and an output buffer written with one write() per
 * flush, so a client costs a few syscalls per batch and no allocation per message.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "bench/bench-wire.h"

#define BENCH_CONN_IN (256u * 1024u)
#define BENCH_CONN_OUT (256u * 1024u)

/* How to connect; bench_conn_open() with NULL: a D-Bus client with the default buffers. */
typedef struct BenchConnOpts {
        char relay_role;                /* 0: a bus (SASL, Hello); else bench/kdbus-relay,
                                         * whose first byte is this role ('c' the hub) */
        size_t in_cap, out_cap;         /* 0: BENCH_CONN_IN / BENCH_CONN_OUT */
        bool wait_poll;                 /* wait for input in poll(), not in read() (below) */
} BenchConnOpts;

typedef struct BenchConn {
        int fd;
        uint8_t *in;
        size_t in_cap;
        size_t in_start;                /* first unconsumed byte */
        size_t in_end;
        uint8_t *out;
        size_t out_cap;
        size_t out_len;
        uint32_t serial;                /* last serial used */
        bool wait_poll;
        char unique_name[256];
} BenchConn;

/*
 * bench_conn_open() - connect to @address (unix:path=... or unix:abstract=...), authenticate,
 * say Hello and wait for its reply (to a relay: only say the role, see BenchConnOpts).
 * Return: 0 or a negative errno (a message on stderr says what failed).
 */
int bench_conn_open(BenchConn *c, const char *address, const BenchConnOpts *opts);
void bench_conn_close(BenchConn *c);

/*
 * bench_conn_next() - the next received message. With @block it reads until one is
 * complete; without, it returns only what is already buffered. Pointers in @ret stay valid
 * until the next call that may read (a blocking one). With wait_poll it waits in poll()
 * before a read into an empty buffer, as sd-bus and libdbus wait: a reader asleep in
 * read() is woken whenever the bus reads what it wrote (the socket's write-space wakeup
 * wakes every sleeper; poll() and epoll ask for POLLIN only), a wakeup the bus pays for.
 * Return: 1 with a message, 0 if none is buffered (non-blocking only), negative errno.
 */
int bench_conn_next(BenchConn *c, bool block, BenchMsg *ret);

/*
 * bench_conn_queue() - append a message to the output buffer with the next serial
 * (spec->serial is ignored). Flushes first when the buffer is full.
 * Return: the serial used, or a negative errno.
 */
int64_t bench_conn_queue(BenchConn *c, const BenchMsgSpec *spec);

/* Append a prebuilt message (its serial is patched); see bench_conn_queue(). A message
 * larger than half the output buffer is written at once from @msg itself, its serial
 * patched in place (no copy: large-message workloads measure the bus, not the client). */
int64_t bench_conn_queue_raw(BenchConn *c, uint8_t *msg, size_t size);

/* Write @spec now, after what is queued: the header built, the body written from
 * spec->body itself with one writev (large replies without a copy). Return: the serial. */
int64_t bench_conn_send_direct(BenchConn *c, const BenchMsgSpec *spec);

/* bench_conn_flush() - write the whole output buffer. Return: 0 or negative errno. */
int bench_conn_flush(BenchConn *c);

/*
 * bench_conn_call() - queue @spec, flush, and wait for its reply (other messages on the way
 * are dropped). A D-Bus error reply is printed and gives -EREMOTEIO.
 * Return: 0 with the reply in @ret, or a negative errno.
 */
int bench_conn_call(BenchConn *c, const BenchMsgSpec *spec, BenchMsg *ret);

/* A call to the driver org.freedesktop.DBus with one string argument (RequestName: "su"). */
int bench_conn_call_driver(BenchConn *c, const char *member, const char *signature,
                           const void *body, uint32_t body_len, BenchMsg *ret);

/* Serialize a string (plus optional u32) body for bench_conn_call_driver(). */
size_t bench_body_string(uint8_t *buf, size_t cap, const char *s, bool with_u32, uint32_t u);
