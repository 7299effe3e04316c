/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * The counter page of bench/malloc-count.so: a process that runs with it preloaded and
 * BENCH_MALLOC_COUNT_FILE=PATH counts its allocation calls in PATH (a shared mapping), so
 * another process (kdbus-bench --alloc-file PATH) can read the counts while it runs.
 */
#include <stdint.h>

#define MALLOC_COUNT_MAGIC UINT64_C(0x746e756f63636c6d)      /* "mlccount" */

typedef struct MallocCount {
        uint64_t magic;
        uint64_t n_malloc;
        uint64_t n_calloc;
        uint64_t n_realloc;
        uint64_t n_memalign;            /* memalign, posix_memalign, aligned_alloc */
        uint64_t n_free;                /* free() of non-NULL pointers */
} MallocCount;
