/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A pool's free ring (include/kdbus/kdbus.h, KDBUS_WIRE_FREE_RING): FREEs the peer answered
 * itself, written into a page both sides map, done by the bus before anything looks at the
 * pool (bridge_pool_ring_reclaim() from pool.c's allocation, room check and FREE). kdbus's
 * FREE had freed the slice when it returned; this keeps that without a request per FREE.
 *
 * The page is the peer's to write: the bus keeps its own count of entries done
 * (@ring_head), takes at most one ring's worth at a time, and does each entry as a FREE
 * of the peer (an offset the peer does not hold changes nothing). The memfd is sealed
 * against resizing, so the bus's mapping cannot fault.
 */
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
#include "bridge/pool.h"
#include "util/error.h"

_Static_assert(sizeof(struct kdbus_wire_free_ring) == KDBUS_WIRE_FREE_RING_BYTES,
               "the free ring is one page");

/**
 * bridge_pool_ring_fd() - the pool's free ring, made on the first call
 * @pool:       the pool
 *
 * Return: its memfd (owned by the pool), or a negative errno.
 */
int bridge_pool_ring_fd(BridgePool *pool) {
        void *map;
        int fd;

        if (pool->ring_fd >= 0)
                return pool->ring_fd;
        fd = memfd_create("kdbus-free-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (fd < 0)
                return error_origin(-errno);
        if (ftruncate(fd, KDBUS_WIRE_FREE_RING_BYTES) < 0 ||
            fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
                int r = -errno;

                (void) close(fd);
                return error_origin(r);
        }
        map = mmap(NULL, KDBUS_WIRE_FREE_RING_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (map == MAP_FAILED) {
                int r = -errno;

                (void) close(fd);
                return error_origin(r);
        }
        pool->ring = map;
        pool->ring_fd = fd;
        pool->ring_head = 0;
        return fd;
}

/**
 * bridge_pool_ring_take() - do the FREEs written into the ring since the last call
 * @pool:       the pool (with a ring)
 */
void bridge_pool_ring_take(BridgePool *pool) {
        struct kdbus_wire_free_ring *ring = pool->ring;
        uint64_t tail = __atomic_load_n(&ring->tail, __ATOMIC_ACQUIRE), head = pool->ring_head;

        /* a tail more than a ring ahead was not written by the library: skipped */
        if (tail - head <= KDBUS_WIRE_FREE_RING_SIZE)
                for (; head != tail; ++head) {
                        uint64_t offset = __atomic_load_n(
                                &ring->offsets[head % KDBUS_WIRE_FREE_RING_SIZE], __ATOMIC_RELAXED);

                        (void) bridge_pool_free_offset_now(pool, offset);
                }
        pool->ring_head = tail;
        __atomic_store_n(&ring->head, tail, __ATOMIC_RELEASE);
}

/**
 * bridge_pool_ring_close() - unmap and close the ring, if any
 * @pool:       the pool
 */
void bridge_pool_ring_close(BridgePool *pool) {
        if (pool->ring)
                (void) munmap(pool->ring, KDBUS_WIRE_FREE_RING_BYTES);
        pool->ring = NULL;
        pool->ring_fd = fd_close(pool->ring_fd);
}
