/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bridge/pool: slices, FREE, the quota rule, and the seals: whoever gets the pool's fd (the
 * peer) can map it read-only only, cannot write(2) to it, cannot resize it, cannot remove
 * a seal, while the bus's own mapping stays writable.
 */
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <glib.h>
#include "bridge/pool.h"

#define PAGE ((size_t)sysconf(_SC_PAGESIZE))

static void test_bad_size(void) {
        BridgePool *p = NULL;

        g_assert_cmpint(bridge_pool_new(0, &p), ==, POOL_E_BAD_SIZE);
        g_assert_cmpint(bridge_pool_new(PAGE + 1, &p), ==, POOL_E_BAD_SIZE);
        g_assert_cmpint(bridge_pool_new(BRIDGE_POOL_MAX_SIZE + PAGE, &p), ==, POOL_E_BAD_SIZE);
        g_assert_null(p);
}

static void test_seals(void) {
        _cleanup_(bridge_pool_freep) BridgePool *p = NULL;
        BridgePoolSlice *s;
        const char *ro;
        void *rw;
        int fd, seals;

        g_assert_cmpint(bridge_pool_new(4 * PAGE, &p), ==, 0);
        /* what the peer gets: a duplicate of the same open file, as SCM_RIGHTS gives */
        fd = fcntl(p->fd, F_DUPFD_CLOEXEC, 3);
        g_assert_cmpint(fd, >=, 0);

        seals = fcntl(fd, F_GET_SEALS);
        g_assert_cmpint(seals & (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE | F_SEAL_SEAL),
                        ==, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE | F_SEAL_SEAL);

        rw = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        g_assert_true(rw == MAP_FAILED);
        g_assert_cmpint(errno, ==, EPERM);
        g_assert_cmpint(write(fd, "x", 1), ==, -1);
        g_assert_cmpint(errno, ==, EPERM);
        g_assert_cmpint(pwrite(fd, "x", 1, 100), ==, -1);
        g_assert_cmpint(ftruncate(fd, 0), ==, -1);
        g_assert_cmpint(ftruncate(fd, 8 * PAGE), ==, -1);
        g_assert_cmpint(fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE), ==, -1);
        /* an mprotect() of a read-only shared mapping to writable is refused too */
        ro = mmap(NULL, 4 * PAGE, PROT_READ, MAP_SHARED, fd, 0);
        g_assert_true(ro != MAP_FAILED);
        g_assert_cmpint(mprotect((void *)ro, PAGE, PROT_READ | PROT_WRITE), ==, -1);

        /* the bus writes through its own mapping; the peer reads in place */
        g_assert_cmpint(bridge_pool_alloc(p, 5, true, &s), ==, 0);
        memcpy(bridge_pool_ptr(p, s), "hello", 5);
        g_assert_cmpmem(ro + s->offset, 5, "hello", 5);

        g_assert_cmpint(munmap((void *)ro, 4 * PAGE), ==, 0);
        (void) close(fd);
}

static void test_slices(void) {
        _cleanup_(bridge_pool_freep) BridgePool *p = NULL;
        BridgePoolSlice *a, *b, *c, *d;

        g_assert_cmpint(bridge_pool_new(PAGE, &p), ==, 0);
        g_assert_cmpint(bridge_pool_alloc(p, 100, false, &a), ==, 0);
        g_assert_cmpint(bridge_pool_alloc(p, 1, false, &b), ==, 0);
        g_assert_cmpint(bridge_pool_alloc(p, 64, true, &c), ==, 0);
        g_assert_cmpuint(a->offset, ==, 0);
        g_assert_cmpuint(a->size, ==, 104);
        g_assert_cmpuint(b->offset, ==, 104);
        g_assert_cmpuint(c->offset, ==, 112);
        g_assert_cmpuint(p->used, ==, 104 + 8 + 64);
        g_assert_cmpuint(p->queued, ==, 64);

        /* FREE: only the start of a slice the peer holds */
        g_assert_cmpint(bridge_pool_free_offset(p, 8), ==, POOL_E_NO_SLICE);
        g_assert_cmpint(bridge_pool_free_offset(p, 112), ==, POOL_E_NO_SLICE);  /* queued */
        g_assert_cmpint(bridge_pool_free_offset(p, 0), ==, 0);
        g_assert_cmpint(bridge_pool_free_offset(p, 0), ==, POOL_E_NO_SLICE);    /* twice */

        /* the freed gap is reused first fit; a larger request goes behind */
        g_assert_cmpint(bridge_pool_alloc(p, 200, false, &d), ==, 0);
        g_assert_cmpuint(d->offset, ==, 176);
        g_assert_cmpint(bridge_pool_alloc(p, 96, false, &d), ==, 0);
        g_assert_cmpuint(d->offset, ==, 0);
        g_assert_cmpint(bridge_pool_alloc(p, PAGE, false, &d), ==, POOL_E_NO_SPACE);
        g_assert_cmpint(bridge_pool_alloc(p, 0, false, &d), ==, POOL_E_NO_SPACE);

        bridge_pool_publish(p, c);
        g_assert_cmpuint(p->queued, ==, 0);
        g_assert_cmpint(bridge_pool_free_offset(p, 112), ==, 0);
}

static void test_fill(void) {
        _cleanup_(bridge_pool_freep) BridgePool *p = NULL;
        BridgePoolSlice *s;
        size_t n = 0;

        g_assert_cmpint(bridge_pool_new(PAGE, &p), ==, 0);
        while (bridge_pool_alloc(p, 8, false, &s) == 0)
                ++n;
        g_assert_cmpuint(n, ==, PAGE / 8);
        g_assert_cmpuint(p->used, ==, PAGE);
}

static void test_quota(void) {
        _cleanup_(bridge_pool_freep) BridgePool *p = NULL;
        BridgePoolSlice *s;
        size_t half = 4 * PAGE / 2, user = 0;

        g_assert_cmpint(bridge_pool_new(4 * PAGE, &p), ==, 0);
        /* one user alone: a third of the free half */
        g_assert_true(bridge_pool_quota_allows(p, 0, half / 3 - 8));
        g_assert_false(bridge_pool_quota_allows(p, 0, half / 3 + 8));
        /* a user that fills its share is refused, another user still gets some */
        while (bridge_pool_quota_allows(p, user, 64)) {
                g_assert_cmpint(bridge_pool_alloc(p, 64, true, &s), ==, 0);
                user += 64;
        }
        g_assert_cmpuint(user, <=, half / 3);
        g_assert_cmpuint(user, >, half / 3 - 128);
        g_assert_true(bridge_pool_quota_allows(p, 0, 64));
        /* slices handed to the peer do not count against the queued half */
        g_assert_cmpint(bridge_pool_alloc(p, half, false, &s), ==, 0);
        g_assert_true(bridge_pool_quota_allows(p, 0, 64));
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/native/pool/bad-size", test_bad_size);
        g_test_add_func("/native/pool/seals", test_seals);
        g_test_add_func("/native/pool/slices", test_slices);
        g_test_add_func("/native/pool/fill", test_fill);
        g_test_add_func("/native/pool/quota", test_quota);
        return g_test_run();
}
