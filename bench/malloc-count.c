/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * LD_PRELOAD allocation counter for the benchmark (see malloc-count.h). It wraps the glibc
 * allocator entry points through glibc's exported __libc_* implementations (no dlsym, so no
 * bootstrap recursion) and increments counters in a file-backed shared page. Counting only:
 * the allocations themselves are unchanged. Single-threaded buses; relaxed atomics anyway.
 */
#include <fcntl.h>
#include <malloc.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include "bench/malloc-count.h"

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t size);
extern void *__libc_memalign(size_t align, size_t size);
extern void __libc_free(void *p);

static MallocCount dummy;
static MallocCount *counter = &dummy;

__attribute__((constructor)) static void malloc_count_init(void) {
        const char *path = getenv("BENCH_MALLOC_COUNT_FILE");
        void *p;
        int fd;

        if (!path)
                return;
        fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0)
                return;
        if (ftruncate(fd, 4096) < 0) {
                (void) close(fd);
                return;
        }
        p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        (void) close(fd);
        if (p == MAP_FAILED)
                return;
        counter = p;
        counter->magic = MALLOC_COUNT_MAGIC;
}

#define COUNT(field) __atomic_fetch_add(&counter->field, 1, __ATOMIC_RELAXED)

__attribute__((visibility("default"))) void *malloc(size_t size) {
        COUNT(n_malloc);
        return __libc_malloc(size);
}

__attribute__((visibility("default"))) void *calloc(size_t n, size_t size) {
        COUNT(n_calloc);
        return __libc_calloc(n, size);
}

__attribute__((visibility("default"))) void *realloc(void *p, size_t size) {
        COUNT(n_realloc);
        return __libc_realloc(p, size);
}

__attribute__((visibility("default"))) void *reallocarray(void *p, size_t n, size_t size) {
        size_t total;

        COUNT(n_realloc);
        if (__builtin_mul_overflow(n, size, &total))
                return NULL;
        return __libc_realloc(p, total);
}

__attribute__((visibility("default"))) void free(void *p) {
        if (p)
                COUNT(n_free);
        __libc_free(p);
}

__attribute__((visibility("default"))) void *memalign(size_t align, size_t size) {
        COUNT(n_memalign);
        return __libc_memalign(align, size);
}

__attribute__((visibility("default"))) void *aligned_alloc(size_t align, size_t size) {
        COUNT(n_memalign);
        return __libc_memalign(align, size);
}

__attribute__((visibility("default"))) int posix_memalign(void **ret, size_t align, size_t size) {
        void *p;

        COUNT(n_memalign);
        p = __libc_memalign(align, size);
        if (!p)
                return 12;              /* ENOMEM */
        *ret = p;
        return 0;
}
