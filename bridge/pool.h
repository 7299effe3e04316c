/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * The receive pool of a native (kdbus ABI) connection: a memfd the bus maps read-write and
 * the peer maps read-only. Sealed with F_SEAL_SHRINK|F_SEAL_GROW|F_SEAL_FUTURE_WRITE (and
 * F_SEAL_SEAL) before its fd leaves the bus: the bus keeps its writable mapping, nobody can
 * create another one, write(2) to it, or resize it, so the peer reads its messages in place
 * and cannot corrupt what the bus wrote.
 *
 * The pool is cut into slices (offset, size; 8-aligned). A slice is either @queued (it holds
 * a message not yet received: counted against the kdbus quota) or handed to the peer (it
 * stays until the peer FREEs it). Allocation is first fit over a list sorted by offset.
 *
 * Quota (kdbus's rule): the queued slices may use at most half of the pool, and one sending
 * user may hold at most a third of what of that half is still free plus what it holds
 * already; see bridge_pool_quota_allows().
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
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
} BridgePoolSlice;

typedef struct BridgePool {
        int fd;                         /* the memfd, sealed; -1 after free */
        uint8_t *map;                   /* read-write mapping of the bus */
        size_t size;
        List slices;                    /* BridgePoolSlice */
        size_t used;                    /* bytes in slices */
        size_t queued;                  /* bytes in queued slices */
} BridgePool;

/* Return: 0, -errno (memfd, mmap, seals), or POOL_E_BAD_SIZE. */
int bridge_pool_new(size_t size, BridgePool **ret);
BridgePool *bridge_pool_free(BridgePool *pool);
DEFINE_CLEANUP(BridgePool *, bridge_pool_free);

/* A slice of @size bytes (rounded up to 8). Return: 0, -ENOMEM, POOL_E_NO_SPACE. */
int bridge_pool_alloc(BridgePool *pool, size_t size, bool queued, BridgePoolSlice **ret);
/* Find the slice that starts at @offset, or NULL. */
BridgePoolSlice *bridge_pool_find(BridgePool *pool, uint64_t offset);
/* Mark a queued slice as handed to the peer (RECV). */
void bridge_pool_publish(BridgePool *pool, BridgePoolSlice *slice);
/* Release a slice. */
void bridge_pool_release(BridgePool *pool, BridgePoolSlice *slice);
/* The peer's FREE: Return: 0 or POOL_E_NO_SLICE (no slice there, or one still queued). */
int bridge_pool_free_offset(BridgePool *pool, uint64_t offset);

static inline void *bridge_pool_ptr(const BridgePool *pool, const BridgePoolSlice *slice) {
        return pool->map + slice->offset;
}

/*
 * May a sending user that holds @user_bytes of queued slices add @size more? kdbus's rule:
 * queued slices live in half of the pool; of what is still free there, a user gets a third
 * (counting what it holds already), so no single sender can fill a receiver.
 */
bool bridge_pool_quota_allows(const BridgePool *pool, size_t user_bytes, size_t size);
