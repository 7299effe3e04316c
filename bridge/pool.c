/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Receive pools. The memfd is created, sized and mapped read-write here, then sealed so
 * that no further writable mapping or write(2) is possible (F_SEAL_FUTURE_WRITE keeps the
 * mapping made before the seal working). The bus writes each message once into a slice;
 * the peer reads it through its read-only mapping and returns the slice with FREE.
 *
 * Slices are kept in offset order; allocation walks the gaps (first fit). Pools hold few
 * slices at a time (received messages are freed quickly), so the walk stays short.
 */
#include <assert.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include "bridge/pool.h"
#include "util/error.h"

/**
 * bridge_pool_new() - a new sealed memfd pool, mapped read-write by the bus
 * @size:       bytes; a positive multiple of the page size, at most BRIDGE_POOL_MAX_SIZE
 * @ret:        the pool
 *
 * Return: 0, a negative errno, or POOL_E_BAD_SIZE.
 */
int bridge_pool_new(size_t size, BridgePool **ret) {
        _cleanup_(bridge_pool_freep) BridgePool *pool = NULL;
        long page = sysconf(_SC_PAGESIZE);
        void *map;

        if (size == 0 || size > BRIDGE_POOL_MAX_SIZE || page <= 0 || size % (size_t)page)
                return POOL_E_BAD_SIZE;

        pool = calloc(1, sizeof(*pool));
        if (!pool)
                return error_origin(-ENOMEM);
        pool->fd = -1;
        pool->map = MAP_FAILED;
        pool->ring_fd = -1;
        list_init(&pool->slices);

        pool->fd = memfd_create("kdbus-pool", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (pool->fd < 0)
                return error_origin(-errno);
        if (ftruncate(pool->fd, (off_t)size) < 0)
                return error_origin(-errno);
        map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, pool->fd, 0);
        if (map == MAP_FAILED)
                return error_origin(-errno);
        pool->map = map;
        pool->size = size;
        if (fcntl(pool->fd, F_ADD_SEALS,
                  F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE | F_SEAL_SEAL) < 0)
                return error_origin(-errno);

        *ret = steal_ptr(&pool);
        return 0;
}

/**
 * bridge_pool_free() - unmap, close, free every slice
 * @pool:       the pool or NULL
 *
 * Return: NULL.
 */
BridgePool *bridge_pool_free(BridgePool *pool) {
        BridgePoolSlice *s;

        if (!pool)
                return NULL;
        while ((s = list_first_entry(&pool->slices, BridgePoolSlice, link))) {
                list_unlink(&s->link);
                free(s);
        }
        free(pool->spare);
        if (pool->map != MAP_FAILED && pool->map)
                (void) munmap(pool->map, pool->size);
        bridge_pool_ring_close(pool);
        pool->fd = fd_close(pool->fd);
        free(pool);
        return NULL;
}

/*
 * First fit: the start of the first free range of @size bytes (8-aligned, > 0) and the
 * slice it lies before (&pool->slices: the end). Return: 0 or POOL_E_NO_SPACE.
 */
static int pool_first_fit(const BridgePool *pool, size_t size, size_t *ret_start,
                          List **ret_before) {
        size_t start = 0;
        List *pos;

        if (size == 0 || size > pool->size || size > pool->size - pool->used)
                return POOL_E_NO_SPACE;
        list_for_each(pos, &pool->slices) {
                BridgePoolSlice *s = container_of(pos, BridgePoolSlice, link);

                if (s->offset - start >= size) {
                        *ret_before = pos;
                        *ret_start = start;
                        return 0;
                }
                start = s->offset + s->size;
        }
        if (pool->size - start < size)
                return POOL_E_NO_SPACE;
        *ret_before = (List *)&pool->slices;
        *ret_start = start;
        return 0;
}

/**
 * bridge_pool_fits() - would bridge_pool_alloc() of @size bytes find room now?
 * @pool:       the pool
 * @size:       bytes wanted, rounded up to 8
 *
 * Return: true if a free range is large enough.
 */
bool bridge_pool_fits(BridgePool *pool, size_t size) {
        size_t start;
        List *before;

        bridge_pool_ring_reclaim(pool);
        return pool_first_fit(pool, ALIGN8(size), &start, &before) == 0;
}

/**
 * bridge_pool_alloc() - cut a slice (first fit)
 * @pool:       the pool
 * @size:       bytes wanted (> 0), rounded up to 8
 * @queued:     the slice holds a message not yet received (counted for the quota)
 * @ret:        the slice
 *
 * Return: 0, -ENOMEM, or POOL_E_NO_SPACE.
 */
int bridge_pool_alloc(BridgePool *pool, size_t size, bool queued, BridgePoolSlice **ret) {
        BridgePoolSlice *slice;
        size_t start = 0;
        List *before = &pool->slices;
        int r;

        if (size == 0)
                return POOL_E_NO_SPACE;
        bridge_pool_ring_reclaim(pool);
        size = ALIGN8(size);
        r = pool_first_fit(pool, size, &start, &before);
        if (r)
                return r;
        slice = pool->spare;
        pool->spare = NULL;
        if (!slice) {
                slice = calloc(1, sizeof(*slice));
                if (!slice)
                        return error_origin(-ENOMEM);
        }
        slice->offset = start;
        slice->size = size;
        slice->queued = queued;
        slice->peer = !queued;
        list_append(before, &slice->link);      /* appending to a node inserts before it */
        pool->used += size;
        if (queued)
                pool->queued += size;
        *ret = slice;
        return 0;
}

/**
 * bridge_pool_find() - the slice starting at @offset
 * @pool:       the pool
 * @offset:     an offset the peer gave
 *
 * Return: the slice, or NULL.
 */
BridgePoolSlice *bridge_pool_find(BridgePool *pool, uint64_t offset) {
        List *pos;

        list_for_each(pos, &pool->slices) {
                BridgePoolSlice *s = container_of(pos, BridgePoolSlice, link);

                if (s->offset == offset)
                        return s;
                if (s->offset > offset)
                        break;
        }
        return NULL;
}

/**
 * bridge_pool_publish() - a queued slice now belongs to the peer (it received it)
 * @pool:       the pool
 * @slice:      one of its slices
 */
void bridge_pool_publish(BridgePool *pool, BridgePoolSlice *slice) {
        assert(!slice->queued || pool->queued >= slice->size);
        if (slice->queued) {
                pool->queued -= slice->size;
                slice->queued = false;
        }
        slice->peer = true;
}

/**
 * bridge_pool_peek() - the peer was shown a queued slice (RECV with PEEK)
 * @pool:       the pool
 * @slice:      one of its queued slices
 *
 * It stays queued; the peer may FREE it (its hold only) and it outlives the message's
 * DROP until then, as kdbus's ref_user does.
 */
void bridge_pool_peek(BridgePool *pool, BridgePoolSlice *slice) {
        assert(slice->queued);
        slice->peer = true;
}

/**
 * bridge_pool_unqueue() - the queue lets go of a slice it did not hand over
 * @pool:       the pool
 * @slice:      one of its queued slices
 *
 * Released, unless the peer PEEKed it: then it is the peer's until FREE.
 */
void bridge_pool_unqueue(BridgePool *pool, BridgePoolSlice *slice) {
        assert(slice->queued);
        if (!slice->peer) {
                bridge_pool_release(pool, slice);
                return;
        }
        if (slice->queued) {
                pool->queued -= slice->size;
                slice->queued = false;
        }
}

/**
 * bridge_pool_release() - give a slice's range back
 * @pool:       the pool
 * @slice:      one of its slices (freed)
 */
void bridge_pool_release(BridgePool *pool, BridgePoolSlice *slice) {
        /* what the pool counts is exactly its slices: used all of them, queued those the
         * queue holds; a slice the peer holds is released only by its FREE */
        assert(!slice->peer);
        assert(pool->used >= slice->size);
        assert(!slice->queued || pool->queued >= slice->size);
        if (slice->queued)
                pool->queued -= slice->size;
        pool->used -= slice->size;
        list_unlink(&slice->link);
        if (!pool->spare)
                pool->spare = slice;
        else
                free(slice);
}

/**
 * bridge_pool_free_offset() - the peer's FREE
 * @pool:       the pool
 * @offset:     the offset RECV, LIST or CONN_INFO returned
 *
 * Ends the peer's hold: the slice goes unless the queue still holds it (a PEEKed message
 * not received yet). The pool's size is the "no slice" offset of commands that handed out
 * nothing (EAGAIN, DROP, an empty LIST): FREE of it succeeds, as in kdbus.
 *
 * Return: 0 or POOL_E_NO_SLICE (no slice there that the peer holds).
 */
int bridge_pool_free_offset(BridgePool *pool, uint64_t offset) {
        /* what the peer freed through the ring came first (a second FREE: ENXIO) */
        bridge_pool_ring_reclaim(pool);
        return bridge_pool_free_offset_now(pool, offset);
}

int bridge_pool_free_offset_now(BridgePool *pool, uint64_t offset) {
        BridgePoolSlice *s;

        if (offset == bridge_pool_no_slice(pool))
                return 0;
        s = bridge_pool_find(pool, offset);
        if (!s || !s->peer)
                return POOL_E_NO_SLICE;
        s->peer = false;
        if (!s->queued)
                bridge_pool_release(pool, s);
        return 0;
}

/**
 * bridge_pool_quota_allows() - kdbus's per-user pool quota
 * @pool:       the receiver's pool
 * @user_bytes: what the sending user holds in queued slices of this pool now
 * @size:       the new message's slice size
 *
 * Queued slices may fill at most half the pool; of the part of that half still free, the
 * sending user may take a third, counting what it holds already.
 *
 * Return: true if the slice may be queued.
 */
bool bridge_pool_quota_allows(const BridgePool *pool, size_t user_bytes, size_t size) {
        size_t half = pool->size / 2, avail;

        if (pool->queued >= half)
                return false;
        avail = half - pool->queued;
        size = ALIGN8(size);
        if (size > avail)
                return false;
        return user_bytes + size <= (avail + user_bytes) / 3;
}
