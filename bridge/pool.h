/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * The receive pool of a native (kdbus ABI) connection: a memfd the bus maps read-write and
 * the peer maps read-only. Sealed with F_SEAL_SHRINK|F_SEAL_GROW|F_SEAL_FUTURE_WRITE (and
 * F_SEAL_SEAL) before its fd leaves the bus: the bus keeps its writable mapping, nobody can
 * create another one, write(2) to it, or resize it, so the peer reads its messages in place
 * and cannot corrupt what the bus wrote.
 *
 * The pool is cut into slices (offset, size; 8-aligned). A slice is held by the receive
 * queue (@queued: a message not yet received, counted against the kdbus quota), by the
 * peer (@peer: handed out by RECV, PEEK, LIST, CONN_INFO; kdbus's ref_user), or both (a
 * PEEKed message); it goes when neither holds it any more, so a PEEKed slice stays valid
 * until the peer FREEs it even when the message is dropped meanwhile, as in kdbus.
 * Allocation is first fit over a list sorted by offset.
 *
 * Quota (kdbus's rule): the queued slices may use at most half of the pool, and one sending
 * user may hold at most a third of what of that half is still free plus what it holds
 * already; see bridge_pool_quota_allows().
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "kdbus/kdbus.h"
#include "util/list.h"
#include "util/macro.h"

enum {
        _POOL_E_SUCCESS,
        POOL_E_BAD_SIZE,                /* pool size 0, not a page multiple, or too large */
        POOL_E_NO_SPACE,                /* no free range large enough */
        POOL_E_NO_SLICE,                /* FREE of an offset that is no slice of the peer */
        _POOL_E_N,
};

/* The largest pool a peer may ask for. */
#define BRIDGE_POOL_MAX_SIZE (256u * 1024u * 1024u)

typedef struct BridgePoolSlice {
        List link;                      /* BridgePool.slices, sorted by offset */
        size_t offset;
        size_t size;
        bool queued;                    /* holds a message not yet received */
        bool peer;                      /* handed to the peer: it stays until FREE */
} BridgePoolSlice;

typedef struct BridgePool {
        int fd;                         /* the memfd, sealed; -1 after free */
        uint8_t *map;                   /* read-write mapping of the bus */
        size_t size;
        List slices;                    /* BridgePoolSlice */
        size_t used;                    /* bytes in slices */
        size_t queued;                  /* bytes in queued slices */
        BridgePoolSlice *spare;         /* the last slice released, kept for the next
                                         * alloc (one message at a time needs no malloc) */
        /* the free ring (bridge/pool-ring.c), made when the peer asks for it */
        struct kdbus_wire_free_ring *ring;      /* mapped read-write, shared with the peer */
        int ring_fd;                    /* -1: none */
        uint64_t ring_head;             /* entries done (the peer's copy is not trusted) */
} BridgePool;

/* Return: 0, -errno (memfd, mmap, seals), or POOL_E_BAD_SIZE. */
int bridge_pool_new(size_t size, BridgePool **ret);
BridgePool *bridge_pool_free(BridgePool *pool);
DEFINE_CLEANUP(BridgePool *, bridge_pool_free);

/* A slice of @size bytes (rounded up to 8), held by the queue (@queued) or else by the
 * peer. Return: 0, -ENOMEM, POOL_E_NO_SPACE. */
int bridge_pool_alloc(BridgePool *pool, size_t size, bool queued, BridgePoolSlice **ret);
/* Would bridge_pool_alloc() of @size bytes find a free range now? */
bool bridge_pool_fits(BridgePool *pool, size_t size);
/* Find the slice that starts at @offset, or NULL. */
BridgePoolSlice *bridge_pool_find(BridgePool *pool, uint64_t offset);
/* RECV: the queue hands a slice to the peer. */
void bridge_pool_publish(BridgePool *pool, BridgePoolSlice *slice);
/* PEEK: the peer holds the slice too; it stays queued. */
void bridge_pool_peek(BridgePool *pool, BridgePoolSlice *slice);
/* The queue lets go of a slice it did not hand over (DROP, a message moved or dropped):
 * released unless the peer holds it (PEEK), then it waits for FREE. */
void bridge_pool_unqueue(BridgePool *pool, BridgePoolSlice *slice);
/* Release a slice, whoever holds it. */
void bridge_pool_release(BridgePool *pool, BridgePoolSlice *slice);
/* The peer's FREE. Return: 0 (also for the pool's size: the "no slice" offset of kdbus's
 * kdbus_pool_publish_empty()) or POOL_E_NO_SLICE (no slice there the peer holds). */
int bridge_pool_free_offset(BridgePool *pool, uint64_t offset);

/* bridge/pool-ring.c: the free ring's memfd, made on the first call (owned by the pool).
 * Return: the fd, or -errno. */
int bridge_pool_ring_fd(BridgePool *pool);
/* Do the FREEs the peer wrote into the free ring (bridge_pool_ring_reclaim()). */
void bridge_pool_ring_take(BridgePool *pool);
static inline void bridge_pool_ring_reclaim(BridgePool *pool) {
        if (pool->ring && __atomic_load_n(&pool->ring->tail, __ATOMIC_ACQUIRE) != pool->ring_head)
                bridge_pool_ring_take(pool);
}
/* The ring's end, with the pool's (bridge_pool_free()). */
void bridge_pool_ring_close(BridgePool *pool);
/* The peer's FREE of @offset without a look at the ring (bridge_pool_free_offset()). */
int bridge_pool_free_offset_now(BridgePool *pool, uint64_t offset);

/* The offset kdbus reports when a command hands out nothing: the pool's size. */
static inline uint64_t bridge_pool_no_slice(const BridgePool *pool) {
        return pool->size;
}

static inline void *bridge_pool_ptr(const BridgePool *pool, const BridgePoolSlice *slice) {
        return pool->map + slice->offset;
}

/*
 * May a sending user that holds @user_bytes of queued slices add @size more? kdbus's rule:
 * queued slices live in half of the pool; of what is still free there, a user gets a third
 * (counting what it holds already), so no single sender can fill a receiver.
 */
bool bridge_pool_quota_allows(const BridgePool *pool, size_t user_bytes, size_t size);
