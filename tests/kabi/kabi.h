/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * What kabi-test's cases share (kabi.c): written only against the kdbus kernel interface,
 * as the cases are. CHECK() fails a case: it prints the expression and errno, records the
 * line and returns -1 from the case.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "kdbus/kdbus.h"

#define POOL (1024u * 1024u)

extern const char *root;        /* --root DIR */
extern int failed_line;

#define CHECK(x) do { if (!(x)) { fprintf(stderr, "  %s:%d: %s (errno %d %s)\n", __FILE__, \
                        __LINE__, #x, errno, strerror(errno)); failed_line = __LINE__; \
                        return -1; } } while (0)


typedef struct Bus {
        int control;
        char path[600];         /* DIR/<uid>-<name>/bus */
        char dir[512];
} Bus;

typedef struct Conn {
        int fd;
        uint64_t id;
        const uint8_t *pool;
} Conn;

/* ---- a minimal dbus1 writer: header fields PATH, INTERFACE, MEMBER, DESTINATION,
 * REPLY_SERIAL, SIGNATURE; an optional string body ---- */
typedef struct W {
        uint8_t b[1024];
        size_t n;
} W;

/* A received message's dbus1 bytes (its PAYLOAD_OFF items, joined) read back: the type,
 * MEMBER and a leading string argument (NULL if none). Return: 0 or -1. */
typedef struct R {
        uint8_t type;
        uint32_t serial;
        char member[128];
        char arg[256];
        bool has_arg;
} R;

int kio(int fd, unsigned long cmd, void *arg);
int bus_make(Bus *b, const char *name, uint64_t access);
int hello_flags(const char *path, uint64_t flags, Conn *c);
int hello(const char *path, Conn *c);
void conn_close(Conn *c);
void w_pad(W *w, size_t a);
void w_u32(W *w, uint32_t v);
void w_str(W *w, const char *s);
void w_field(W *w, uint8_t code, char sig, const char *s, uint32_t u);
size_t dbus1_full(W *w, uint8_t type, uint32_t serial, uint32_t reply_serial,
                  const char *path, const char *iface, const char *dest,
                  const char *member, const char *arg, uint32_t n_fds);
size_t dbus1_fds(W *w, uint8_t type, uint32_t serial, uint32_t reply_serial,
                 const char *dest, const char *member, const char *arg,
                 uint32_t n_fds);
size_t dbus1(W *w, uint8_t type, uint32_t serial, uint32_t reply_serial,
             const char *dest, const char *member, const char *arg);
int dbus1_read(const struct kdbus_msg *m, R *r);
int send_raw(Conn *c, uint64_t dst, uint64_t cookie, uint64_t cookie_reply,
             uint64_t msg_flags, int64_t priority, uint64_t vec_addr, size_t size,
             uint64_t send_flags, int64_t timeout_ns, const int *fds, unsigned n_fds,
             struct kdbus_cmd_send *ret);
/* A SYNC_REPLY call of @a to @c ("Ping", cookie @cookie, deadline @timeout_ns away). */
int sync_call(Conn *a, const Conn *c, uint64_t cookie, int64_t timeout_ns,
              struct kdbus_cmd_send *ret);
int call_noreply(Conn *c, const Conn *dst, uint64_t cookie, int64_t prio);
int recv_msg(Conn *c, uint64_t flags, int64_t prio, const struct kdbus_msg **ret);
int free_at(Conn *c, const void *p);
/* SEND of @size opaque bytes at @p from @c to @dst (a native receiver takes them as they
 * are). */
int send_opaque(Conn *c, uint64_t dst, uint64_t cookie, const void *p, size_t size);
short poll1(int fd, short events, int timeout);
/* A match of @fd that takes every broadcast. Return: 0 or -errno. */
int match_all(int fd);
/* A broadcast signal of @c: @size bytes at @p of @payload_type, a bloom filter of 64.
 * Return: 0 or -errno. */
int send_broadcast(Conn *c, uint64_t cookie, uint64_t payload_type, const void *p, size_t size);
/* A broadcast signal of @c with 8 KiB of opaque payload. Return: 0 or -errno. */
int send_big_broadcast(Conn *c);
/* In a child as uid/gid 65534 (keeping CAP_IPC_OWNER effective if @cap): @fn(@ctx, res)
 * fills two results. Return: them as one number (res[0] * 1000 + res[1], errnos positive;
 * 99 for a step that did not run), or -1. */
int as_nobody(bool cap, void (*fn)(const void *ctx, int res[2]), const void *ctx);

/* tests/kabi/kabi-threads.c: one connection from several threads and processes, and what
 * poll() brings with its wakeup */
int t_threads(void);
int t_threads_sync(void);
int t_fork(void);
int t_held(void);
int t_held_free(void);
int t_joined(void);

/* tests/kabi/kabi-pool.c: the pool without a queue in front of it, FREE as kdbus did it */
int t_pool_full(void);
int t_free_room(void);

/* tests/kabi/kabi-kept.c: a message the library keeps behaves as one in kdbus's queue */
int t_kept_drop(void);
int t_kept_prio(void);
int t_kept_count(void);
