/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * The call both kdbus-ABI benchmarks send (kdbus-native-bench through libkdbus,
 * kdbus-kabi-bench through ioctl()): org.kdbus.Bench.Ping with one `ay` body, built with
 * wire/, and the sealed memfd that carries a large body by reference.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * A little-endian call to @destination with body "ay" of @n bytes (0x00). @inline_body:
 * the body follows the header; else the message ends after the header, whose body length
 * still says 4 + @n (the body goes in a memfd, bench_kmsg_memfd()). The serial is 1:
 * patch it at offset 8. Return: malloc()ed bytes (NULL: out of memory), their size and
 * where the body starts.
 */
uint8_t *bench_kmsg_call(const char *destination, size_t n, bool inline_body, size_t *ret_size,
                         size_t *ret_body_offset);
/* A sealed memfd holding the body "ay" of @n bytes 0x5a (its 4-byte length first).
 * Return: the fd or -errno. */
int bench_kmsg_memfd(size_t n);
